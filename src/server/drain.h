/* drain: a node drain with a deadline, and the migrate block of service
 * groups (docs/operations.md, "Draining and eligibility"; docs/jobspec.md,
 * "migrate").
 *
 * A draining node carries, in its stored record,
 *   "drain": true, "eligibility": "ineligible",
 *   "drain_strategy": {"deadline": ns (0: force, -1: none),
 *                      "force_deadline": unix ns (0: none),
 *                      "ignore_system_jobs": bool, "started_at": unix ns},
 *   "last_drain": {"status": "draining"|"complete"|"canceled",
 *                  "started_at": unix ns, "ended_at": unix ns (0: not yet)}.
 * Everything the drainer decides is derived from that record and the
 * allocations' records, so a server restart or a new leader goes on with
 * the same deadline.
 *
 * The drainer does not stop anything itself: it marks the allocations
 * that are to leave ("desired_transition": {"migrate": true}) and queues
 * an evaluation of their jobs; the reconciler (reconcile.c) stops a marked
 * allocation of a draining node and places its replacement in one plan,
 * as for any move.  What it marks, per node:
 *   - before the deadline: allocations of service groups, paced per group
 *     by the migrate block (drain_pace: at most max_parallel of a group
 *     not healthy at a time, the group's replacements judged healthy as
 *     deployments judge theirs);
 *   - batch allocations: none (they run until they end);
 *   - at the deadline (force_deadline passed; at once for a force): every
 *     allocation still on the node but system ones;
 *   - system/sysbatch allocations: once nothing else is left on the node,
 *     never with ignore_system_jobs.
 * When nothing but ignored system allocations is left, the drain is
 * complete: drain false, no drain_strategy, last_drain complete, the node
 * still ineligible.
 *
 * drain_pace and drain_alloc_health are pure (no clock, no store): unit
 * tests drive them with records in, decisions out.  The rest runs on the
 * leader: a thread with a round each second (drain_start/stop), and the
 * first step of a drain inside the POST that starts it. */
#ifndef HERD_SERVER_DRAIN_H
#define HERD_SERVER_DRAIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "spec/job.h"

#define DRAIN_DEFAULT_DEADLINE_NS (3600LL * 1000000000LL) /* 1h, Nomad's */

/* ---- pure ----------------------------------------------------------------- */

enum drain_health {
	DRAIN_HEALTH_PENDING,   /* not (yet) healthy */
	DRAIN_HEALTH_HEALTHY,
	DRAIN_HEALTH_UNHEALTHY, /* ended, failed, or past healthy_deadline */
};

/* The health of allocation alloc for a drain's pacing, at now, under the
 * group's migrate block m: a health its deployment decided
 * (deployment_status.healthy); for the replacement of a migrated
 * allocation ("drain_migration"), healthy once ready
 * (deployment_status.ready_since, stamped as deployments' are) for
 * min_healthy_time, unhealthy past healthy_deadline from its creation;
 * for any other allocation, healthy while it is ready (running, its
 * checks passing: it ran before the drain). */
enum drain_health drain_alloc_health(const json_t *alloc, const struct job_migrate *m,
				     int64_t now);

/* One allocation of a group, as the pacing sees it. */
struct drain_pace_alloc {
	bool live;      /* desired run, client pending or running */
	bool draining;  /* on a draining node */
	bool marked;    /* told to migrate already (desired_transition.migrate) */
	enum drain_health health;
};

/* How many more of a group's allocations to mark for migration now:
 * Nomad's rule, healthy - (count - max_parallel), where healthy counts the
 * live, unmarked, healthy allocations (a marked one is on its way out;
 * a replacement not placed or not yet healthy counts as nothing, so no
 * more of a group that has nowhere to go are stopped), at most the number
 * of live unmarked allocations on draining nodes, at least 0.  Sets
 * take[i] for the ones to mark, the first such in a's order (the caller
 * orders a by instance index). */
size_t drain_pace(int64_t count, int64_t max_parallel, const struct drain_pace_alloc *a, size_t n,
		  bool *take);

/* Whether alloc was told to migrate (desired_transition.migrate). */
bool drain_marked(const json_t *alloc);

/* ---- the server's side (drain.c) --------------------------------------- */

struct server;
struct store_batch;

/* Starts and stops the drainer's thread (srv->drainer); 0 or -errno. */
int drain_start(struct server *srv, struct herd_err *err);
void drain_stop(struct server *srv);
/* A drain was started: the thread looks at once. */
void drain_wake(struct server *srv);
/* One round now (the thread's work; tests may call it). */
void drain_round(struct server *srv);

/* The node's drain step as of now, into batch b: marks what is to leave
 * now (on condition that each allocation is unchanged) and adds a
 * "node-drain" evaluation per job concerned to evals (to queue once
 * committed); node is the record as it will be written (it carries the
 * strategy).  With complete (may be NULL), says whether nothing that
 * must leave is left on the node.  Returns the number of allocations
 * marked, or -errno. */
int drain_node_step(struct server *srv, const json_t *node, int64_t now, struct store_batch *b,
		    json_t *evals, bool *complete);

/* The node's drain is canceled: each of its allocations told to migrate
 * and not stopped yet is told no more (into b, on condition that it is
 * unchanged), so that it stays.  0 or -errno. */
int drain_node_cancel(struct server *srv, const char *node_id, struct store_batch *b);

/* plan.c: a replacement of previous, placed for group g: marked
 * "drain_migration" (its health is watched for the drain's pacing) when
 * previous was told to migrate, with the checks its migrate block's
 * health_check expects. */
void drain_join(json_t *alloc, const struct job_group *g, const json_t *previous);

#endif
