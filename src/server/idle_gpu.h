/* idle_gpu: reclaiming GPUs that allocations hold but do not use (the
 * idle_gpu block of a quota or of a group, docs/teams.md "Idle GPUs").
 *
 * Two halves:
 *  - idle_track.c, pure (no I/O, no locks, no clock): the policy block's
 *    check, the stricter-wins merge of two policies, what one round of
 *    utilization samples says about an allocation, and the per-allocation
 *    clocks (struct idle_tracker).  Unit-tested with samples in, decisions
 *    out.
 *  - idle_gpu.c, the server's side: heartbeats feed it samples
 *    (idle_gpu_observe), a thread of its own runs a round every second on
 *    the leader (idle_gpu_start/stop) and acts (an allocation event for
 *    "warn", a job stop for "stop"); GET /v1/gpus and GET /v1/metrics read
 *    its memory (idle_gpu_decorate, idle_gpu_stats).
 *
 * Everything lives in the server's memory: a restarted server, or a
 * standby that becomes the leader, starts every clock again at its first
 * sample (conservative: it reclaims later, never earlier). */
#ifndef HERD_SERVER_IDLE_GPU_H
#define HERD_SERVER_IDLE_GPU_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define IDLE_MIN_AFTER_NS 1000000000LL                  /* 1s */
#define IDLE_MAX_AFTER_NS (366LL * 24 * 3600 * 1000000000LL) /* a year */

enum idle_action { IDLE_ACTION_WARN = 0, IDLE_ACTION_STOP = 1 };

/* An idle_gpu block.  below == 0: no policy. */
struct idle_policy {
	int below;         /* percent, 1..100: a GPU under it counts as idle */
	int64_t after_ns;  /* how long every GPU of an allocation must stay idle */
	enum idle_action action;
};

/* ---- the block (idle_track.c) --------------------------------------------
 * JSON: {"utilization_below": 1..100 (integer, default 5), "after": a
 * duration string of at least 1s ("2h", "90m", "3s"), required, "action":
 * "warn" (default) or "stop"}. */

/* Checks block (`where` names it in errors, "idle_gpu") and returns a
 * normalised copy (every field present, after written as format_duration
 * writes it) as a new reference; NULL with err naming the field. */
json_t *idle_policy_check(const json_t *block, const char *where, struct herd_err *err);
/* Reads a block idle_policy_check accepted into *p; false (and *p a
 * policy with below 0) when block is NULL or not such a block. */
bool idle_policy_from_json(const json_t *block, struct idle_policy *p);
/* Merges b into a, the stricter winning field by field: the higher
 * threshold, the shorter `after`, stop over warn.  A side with below 0
 * (no policy) gives nothing. */
void idle_policy_merge(struct idle_policy *a, const struct idle_policy *b);
/* "warn" or "stop". */
const char *idle_action_name(enum idle_action a);

/* ---- one round of samples --------------------------------------------- */

/* The utilization samples of one device since the previous round. */
struct idle_window {
	int n;             /* samples; 0: none since the previous round */
	bool unknown;      /* some sample had no utilization (MIG, NVML error) */
	double max_util;   /* the highest, in percent */
	int64_t first_at;  /* when the first arrived (server clock, unix ns) */
};

/* One device an allocation holds: its window (NULL: no sample since the
 * previous round) and whether it is a MIG instance. */
struct idle_dev {
	const struct idle_window *w;
	bool mig;
};

enum idle_obs {
	IDLE_OBS_NONE, /* nothing new: the clock stays as it is */
	IDLE_OBS_BUSY, /* a sample at or above the threshold, or one the rule cannot judge */
	IDLE_OBS_IDLE, /* every device sampled, every sample below the threshold */
};

/* What devs (one allocation's devices) say this round against threshold
 * `below`.  BUSY when there is no device, any is a MIG instance (NVML has
 * no utilization per instance), any sample lacked a value or was at or
 * above `below`; IDLE when every device has samples and all are below,
 * *first_at then the latest of the devices' first samples; else NONE. */
enum idle_obs idle_observe(const struct idle_dev *devs, size_t n, int below, int64_t *first_at);

/* ---- per-allocation clocks ----------------------------------------------- */

struct idle_state {
	int64_t idle_since; /* the first sample of this idle period (unix ns); 0: not idle */
	bool acted;         /* the action of this idle period was taken */
};

enum idle_decision { IDLE_NOTHING = 0, IDLE_DO_WARN, IDLE_DO_STOP };

/* Advances st by one round's observation at `now` under policy p: BUSY
 * ends an idle period, IDLE starts one at first_at (or keeps the one
 * running), NONE changes nothing.  Returns the action once per idle period,
 * when it has lasted p->after_ns. */
enum idle_decision idle_step(struct idle_state *st, enum idle_obs obs, int64_t first_at,
			     const struct idle_policy *p, int64_t now);

/* The clocks of the allocations seen in the latest round, by id. */
struct idle_entry {
	char *alloc_id, *ns;
	int64_t gpu_milli;  /* the GPU share it holds (teams.h, alloc_gpu_milli) */
	struct idle_state st;
	bool seen;          /* touched in the round under way */
};

struct idle_tracker {
	struct idle_entry *e;
	size_t n, alloc;
	size_t nsorted;     /* e[0..nsorted) is sorted by alloc_id */
};

void idle_tracker_init(struct idle_tracker *t);
void idle_tracker_release(struct idle_tracker *t);
/* Starts a round: every entry unseen until idle_tracker_end. */
void idle_tracker_begin(struct idle_tracker *t);
/* The entry of alloc_id, created (not idle, ns copied) when new, marked
 * seen; valid until the next begin, touch or end. */
struct idle_entry *idle_tracker_touch(struct idle_tracker *t, const char *alloc_id, const char *ns);
/* Ends a round: entries not touched since begin go (the allocation ended
 * or left the policy). */
void idle_tracker_end(struct idle_tracker *t);
/* The entry of alloc_id, or NULL; outside a round. */
const struct idle_entry *idle_tracker_find(const struct idle_tracker *t, const char *alloc_id);

/* ---- the server's side (idle_gpu.c) -------------------------------------- */

struct server;

/* Starts and stops the round thread (srv->idle); 0 or -errno with err. */
int idle_gpu_start(struct server *srv, struct herd_err *err);
void idle_gpu_stop(struct server *srv);
/* A heartbeat of node_id arrived with devices [{"id", "stats":
 * {"utilization_gpu"}}]: each device's window takes a sample stamped now.
 * Does nothing before idle_gpu_start. */
void idle_gpu_observe(struct server *srv, const char *node_id, const json_t *devices);
/* GET /v1/gpus: each holder of gpus (gpus_list's entries) that has been
 * idle gets "idle_since" (unix ns), and an entry whose every holder has,
 * the latest of theirs. */
void idle_gpu_decorate(struct server *srv, json_t *gpus);
/* For GET /v1/metrics: {"held": {"<ns>": GPUs idle now (shares)},
 * "actions": {"<ns>": {"warn": n, "stop": n}}} (counted since the server
 * started); a new reference. */
json_t *idle_gpu_stats(struct server *srv);
/* One round now (the thread's work; tests call it directly). */
void idle_gpu_round(struct server *srv);

#endif
