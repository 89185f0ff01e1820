/* autoscale: herd's own autoscaler of service groups on the GPU
 * utilization of their allocations (a group's scaling { policy {
 * gpu_utilization window cooldown tolerance } }, docs/jobspec.md
 * "scaling").
 *
 * Heartbeats feed it samples (autoscale_observe), kept only for the GPUs
 * that allocations of autoscaled groups hold, for the longest window in
 * use.  A thread of its own runs a round every second on the leader: for
 * each group whose every allocation runs the job's current version, has
 * run for the whole window and holds GPUs with samples over it, the mean
 * utilization goes through the target-value rule (autoscale_rule.h); a new
 * count is applied as POST /v1/job/:id/scale does (a new job version,
 * evaluation trigger "autoscaler"), no sooner than the policy's cooldown
 * after the job's last change.  Each change is kept as an event of the
 * group (GET /v1/job/:id/scale, `herd job status`) and counted for the
 * metrics.  MIG slices report no utilization: a group holding them is not
 * autoscaled.
 *
 * Samples and events live in the server's memory: a restarted server, or a
 * standby that becomes the leader, waits a whole window again before it
 * acts (it scales later, never on less data). */
#ifndef HERD_SERVER_AUTOSCALE_H
#define HERD_SERVER_AUTOSCALE_H

#include <jansson.h>

#include "common/err.h"

struct server;

int autoscale_start(struct server *srv, struct herd_err *err);
void autoscale_stop(struct server *srv);

/* A node's heartbeat: devices as the node sent them ([{"id", "stats":
 * {"utilization_gpu"}}]). */
void autoscale_observe(struct server *srv, const char *node_id, const json_t *devices);

/* One round now (the thread's, and tests'). */
void autoscale_round(struct server *srv);

/* For GET /v1/job/:id/scale: what the autoscaler knows of group `group` of
 * job (ns, id) as of its last round: {"gpu_utilization": the mean over the
 * window, or null, "waiting": why it does not act now ("" when it may),
 * "events": [{"time", "from", "to", "message"}], newest last, at most
 * AUTOSCALE_EVENTS}.  A new reference ({"events": []} when it knows
 * nothing). */
json_t *autoscale_group_status(struct server *srv, const char *ns, const char *id,
			       const char *group);

#define AUTOSCALE_EVENTS 10

/* For the metrics: {"<namespace>": {"up": n, "down": n}} of the changes
 * made since the server started.  A new reference. */
json_t *autoscale_stats(struct server *srv);

#endif
