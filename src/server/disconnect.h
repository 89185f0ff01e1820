/* disconnect: a group's disconnect block on the server (docs/jobspec.md,
 * "disconnect"; docs/architecture.md, "Nodes that go away").
 *
 * A node that misses its heartbeats is marked down (heartbeat.c).  Its
 * allocations of groups with disconnect { lost_after } turn "unknown"
 * instead of "lost": they keep their devices (the node may still run
 * them), stay wanted, and carry unknown_since (unix ns, stored with the
 * allocation), from which every later decision is derived, so that a
 * restarted server, which gives every node a full TTL again, decides the
 * same.  reconcile.c then asks the functions below:
 *   - while unknown: place a replacement (replace = true) and look again
 *     at unknown_since + lost_after;
 *   - at unknown_since + lost_after: the allocation is lost (stopped, with
 *     a replacement unless one was placed already);
 *   - the node back in time (routes_nodes.c: the allocation turns back to
 *     the status it had, still marked by unknown_since): with no
 *     replacement it simply runs on; with one, reconcile { } says which of
 *     the two keeps running and the other is stopped (its agent stops its
 *     tasks as for any stop).
 * The pure parts are here for tests; the store's parts take a batch. */
#ifndef HERD_SERVER_DISCONNECT_H
#define HERD_SERVER_DISCONNECT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "spec/job.h"

struct store;
struct store_batch;

/* What becomes of an allocation of a node marked down, under d (the
 * group's block; NULL: none). */
enum disconnect_down {
	DISCONNECT_DOWN_LOST,     /* lost at once (no lost_after, or a gang's) */
	DISCONNECT_DOWN_UNKNOWN,  /* unknown for lost_after */
};
enum disconnect_down disconnect_on_down(const struct job_disconnect *d, bool gang);

/* What reconcile does now with an unknown allocation (its group's block d,
 * NULL when the block was removed since), given whether a replacement of
 * it was placed already (an allocation names it previous_allocation). */
enum disconnect_step {
	DISCONNECT_WAIT,          /* keep it; look again at *wake_at */
	DISCONNECT_REPLACE,       /* keep it, place a replacement; look again at *wake_at */
	DISCONNECT_LOST,          /* lost now: stop it (replace it unless replaced) */
};
enum disconnect_step disconnect_unknown_step(const struct job_disconnect *d, const json_t *alloc,
					     bool replaced, int64_t now, int64_t *wake_at);

/* When an unknown allocation is lost under d (unknown_since + lost_after;
 * no block, or no unknown_since: now). */
int64_t disconnect_lost_at(const struct job_disconnect *d, const json_t *alloc, int64_t now);

/* When a lost allocation of a group with stop_on_client_after may be
 * replaced: once its node, which it was lost with (end_time), stopped it
 * itself, so that the two never run at once; now for other groups. */
int64_t disconnect_replace_at(const struct job_disconnect *d, const json_t *alloc, int64_t now);

/* Whether the original allocation (back with its node) keeps running
 * rather than its replacement, by reconcile (keep_original,
 * keep_replacement, best_score: the higher placement score, longest_running:
 * the one whose running tasks started earliest; ties keep the original).
 * An original that is no longer live (it ended while away) never does. */
bool disconnect_keep_original(const char *reconcile, const json_t *original,
			      const json_t *replacement);

/* The time since which an allocation's running tasks run without a
 * restart (the latest start among them), or INT64_MAX when none runs. */
int64_t disconnect_running_since(const json_t *alloc);

/* The group `group` of a stored job's JSON decoded just enough: its
 * disconnect block into *d (reconcile a static string), and whether it
 * is a gang.  Returns false when the group has no block (or the job no
 * such group). */
bool disconnect_of_stored(const json_t *job, const char *group, struct job_disconnect *d,
			  bool *gang);

/* heartbeat.c: marks alloc (a copy the caller puts) unknown when its
 * group's block says so; jobs caches the stored jobs read (an object the
 * caller owns).  Returns true when it did; false: lost as before. */
bool disconnect_mark_down(struct store *s, json_t *jobs, json_t *alloc, int64_t now);

/* routes_nodes.c: the node `node_id`, back from down, turns each of its
 * unknown allocations back into what it was, in batch b (to which it adds
 * the requirement that the node's allocations are unchanged), and adds a
 * "node-update" evaluation to evals (to queue once committed) for each
 * job with an allocation there still to be decided (unknown_since).
 * Returns 0 or -errno. */
int disconnect_node_up(struct store *s, const char *node_id, struct store_batch *b,
		       json_t *evals, int64_t now);

#endif
