/* reservation: GPUs held for the job at the head of the fair queue, so
 * that a large job cannot starve behind a stream of small ones that keep
 * starting around it (backfill), while the GPUs still do not idle
 * needlessly (docs/teams.md, "Reservations").
 *
 * When the job whose turn it is has waited for GPUs longer than the
 * server's reserve_after and still does not fit, the server estimates
 * where it could start soonest: every allocation on a node ends at its
 * start plus its group's time_limit (one without a limit never ends for
 * the estimate), and the engine is asked, node by node, on the node as it
 * would be once the allocations ending by each of those times are gone.
 * The earliest node wins; ties go to the one whose chosen GPUs hold the
 * fewest allocations (least work in the way).  Those GPUs are then
 * reserved: the snapshot of every request that may not backfill shows
 * them as taken (sched_device_spec.reserved), so the placement engine and
 * preemption need no rule of their own.  A request may use them when it
 * is the reserved job's, or batch work whose time limit ends before the
 * estimated start (backfill, as Slurm's).
 *
 * A reservation whose start is unknown or has passed is estimated again,
 * on its node alone, each time its job tries and does not fit.
 *
 * At most one reservation exists at a time (the first job whose turn came
 * after waiting too long; a job ahead of it in its own namespace's order
 * that waited too long takes it over); it lives in the fair queue (under its lock), in
 * memory only, and ends when its job leaves the queue (placed, stopped,
 * held by its own quota, failed), when its job changes, or when its node
 * is no longer schedulable; then the next head that waits too long gets
 * one.  After a restart the queue is rebuilt as queued evaluations run,
 * and so is the reservation once the wait passes the threshold again. */
#ifndef HERD_SERVER_RESERVATION_H
#define HERD_SERVER_RESERVATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "sched/sched.h"

#define RESV_NEVER INT64_MAX /* an end (or start) that cannot be estimated */
#define RESV_MAX_DEVS SCHED_MAX_DEVS_PER_ASK
#define RESV_MAX_TIMES 64    /* end times tried per node (the earliest) */

struct resv {
	char *ns, *job_id;
	int64_t job_version;     /* the job's version it was made for */
	char *node_id;
	char *devs[RESV_MAX_DEVS];
	size_t ndevs;
	int64_t start;           /* estimated start, unix ns; RESV_NEVER: unknown */
	int64_t made;            /* unix ns */
	size_t disturbed;        /* allocations on the reserved GPUs when made */
};

struct server;
struct sched_view;
struct group_ask;
struct job;
struct job_group;
struct fair_queue;

/* A deep copy (NULL for NULL); resv_free accepts NULL. */
struct resv *resv_copy(const struct resv *r);
void resv_free(struct resv *r);

/* Whether device dev_id of node node_id is one r holds. */
bool resv_has_device(const struct resv *r, const char *node_id, const char *dev_id);

/* When alloc (an allocation record) is expected to end, unix ns: the
 * start its agent reported (time_limit.started_at; now when it has not
 * started) plus its limit (the record's time_limit.limit, else
 * group_limit, the limit of its group; <= 0: none), never before now.
 * RESV_NEVER when it has no limit. */
int64_t resv_alloc_end(const json_t *alloc, int64_t group_limit, int64_t now);

/* The backfill rule: whether work of job (ns, job_id) of type `type`
 * with time limit `time_limit` (ns, <= 0: none) placed at `now` may take
 * r's GPUs: it is r's job, or batch work that ends (now + limit) no later
 * than r's estimated start (never when the start is unknown). */
bool resv_may_use(const struct resv *r, const char *ns, const char *job_id, const char *type,
		  int64_t time_limit, int64_t now);
/* The same for the request of ask (its job and group). */
bool resv_may_use_ask(const struct resv *r, const struct group_ask *ask, int64_t now);

/* An allocation that holds capacity on node v->nodes[node]: its
 * resources as the view counts them and when it ends (resv_alloc_end). */
struct resv_holder {
	size_t node;
	const json_t *resources;
	int64_t end;
};

/* The estimate (pure: no store, no clock).  Finds the node of v and the
 * GPUs where ask (one instance; live as for snapshot_build) could start
 * soonest once holders (every allocation counted in the nodes' usage)
 * end, asking the engine with opt; ties go to the fewest allocations on
 * the chosen GPUs, then to the earlier node of v.  On success (0) fills
 * out's node_id, devs, start (RESV_NEVER when only allocations without a
 * time limit are in the way) and disturbed (strings are new); -ENOSPC
 * when no node could ever take it. */
int resv_estimate(const struct sched_view *v, const struct group_ask *ask, const json_t *live,
		  const struct resv_holder *h, size_t nh, const struct sched_options *opt,
		  int64_t now, struct resv *out);

/* ---- the server's side -------------------------------------------------- */

/* Puts a copy of the current reservation into v (v->resv, for
 * snapshot_build) as of now; drops the reservation first when its node is
 * no longer schedulable in v.  Cheap when there is none. */
void resv_view(struct server *srv, struct sched_view *v, int64_t now);

/* Called when the job (stored `job`, decoded `model`) tried to place
 * group gi in its turn and did not fit everything (placed_some: some
 * instances did): makes a reservation for it when reservations are on,
 * none is held, and it has waited longer than the server's
 * reserve_after; first drops its own reservation when the job changed
 * since or placed_some (the next instance needs an estimate of its own).
 * Store reads only; errors leave things as they were. */
void resv_consider(struct server *srv, struct sched_view *v, const json_t *job,
		   const struct job *model, int gi, const json_t *live, bool placed_some,
		   int64_t now);

/* Whether queue entry a comes before b in the order of their namespace,
 * the reservation aside (higher priority, then earlier submission); false
 * across namespaces.  Such an a takes b's reservation over when it tries
 * and does not fit, so the queue lets it try (fair_queue.c). */
struct fq_entry;
bool resv_precedes(const struct fq_entry *a, const struct fq_entry *b);

/* Why a reservation ended (counted for GET /v1/metrics,
 * herd_reservations_ended_total{reason}): a fixed set, so the label stays
 * bounded. */
enum resv_end {
	RESV_END_LEFT_QUEUE,         /* its job left the queue: placed, stopped, held, failed */
	RESV_END_JOB_CHANGED,        /* its job has a new version */
	RESV_END_INSTANCE_PLACED,    /* an instance started: the next needs its own */
	RESV_END_NODE_UNSCHEDULABLE, /* its node is down, ineligible or gone */
	RESV_END_NO_FIT,             /* estimated again, its job no longer fits its node */
	RESV_END_TAKEN_OVER,         /* a job ahead of it in its namespace took it */
	RESV_END_N
};
/* The reason's label value ("left_queue", ...). */
const char *resv_end_name(enum resv_end why);

/* Drops q's reservation when it is job (ns, job_id)'s (q->lock held),
 * counting it ended for why. */
void resv_drop_locked(struct fair_queue *q, const char *ns, const char *job_id,
		      enum resv_end why);

/* The reservation for GET /v1/metrics: whether one is held, its
 * namespace (copied into ns, truncated), the devices it holds, how long
 * its job has waited in the queue (ns; 0 when its entry is gone) and the
 * counts made and ended since the server started. */
struct resv_stats {
	bool held;
	char ns[256];
	size_t ndevs;
	int64_t waited;
	uint64_t made, ended[RESV_END_N];
};
void resv_stats(struct server *srv, int64_t now, struct resv_stats *out);

/* The reservation as JSON for readers, or NULL when none (q->lock held):
 * {"namespace", "job_id", "node_id", "devices": [...], "estimated_start":
 * unix ns or null (unknown), "create_time"}. */
json_t *resv_json_locked(const struct fair_queue *q);

/* Adds "reserved_for" (job id), "reserved_namespace" and
 * "reserved_start" (unix ns, 0: unknown) to the devices r holds: each
 * entry of GET /v1/gpus (gpus: its array) or the devices of a node. */
void resv_decorate_gpus(struct server *srv, json_t *gpus);
void resv_decorate_node(struct server *srv, json_t *node);

#endif
