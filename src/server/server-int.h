/* server-int.h: the parts of the control plane, private to src/server.
 *
 *   routes_*.c   HTTP handlers (decode, check, write through the store)
 *   eval_broker  the in-memory queue of evaluations (ready, delayed, blocked)
 *   worker       takes an evaluation, snapshots, reconciles, places, applies
 *   reconcile    what a job needs: allocations to place, to stop
 *   snapshot_build  nodes and what existing allocations take -> sched snapshot
 *   plan_apply   commits a plan with conditions that catch concurrent plans
 *   gang         a gang group: members placed together or taken back together
 *   heartbeat    node liveness (in memory) and the TTL timer
 *   objects      small helpers on the JSON objects (ids, time, fields)
 */
#ifndef HERD_SERVER_SERVER_INT_H
#define HERD_SERVER_SERVER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strbuf.h"
#include "common/units.h"   /* mono_ns */
#include "sched/sched.h"
#include "server/http.h"
#include "server/reservation.h" /* enum resv_end */
#include "server/server.h"
#include "server/jwt_keys.h"
#include "server/vars_keyring.h"
#include "spec/job.h"
#include "store/store.h"

/* ---- objects.c ---------------------------------------------------------- */

#define ID_LEN 37
/* A new random UUID, lower case, into id. */
void new_id(char id[ID_LEN]);
/* Wall clock in unix nanoseconds. */
int64_t now_ns(void);
/* Field readers that tolerate absence and wrong types. */
const char *jstr(const json_t *o, const char *key, const char *dflt);
int64_t jint(const json_t *o, const char *key, int64_t dflt);
bool jbool(const json_t *o, const char *key, bool dflt);
/* Whether s is a plausible object id for a path (1..STORE_MAX_KEY bytes,
 * printable ASCII without '/'). */
bool valid_id(const char *s);
/* The namespace a request names (?namespace=), default "default". */
const char *req_namespace(const struct http_request *req);
/* Allocation predicates. */
bool alloc_client_terminal(const json_t *alloc); /* complete, failed, lost */
bool alloc_takes_capacity(const json_t *alloc);  /* client pending or running */
/* Decodes a stored job (canonical JSON plus server fields) into the model;
 * NULL if it does not decode (a store written by another version). */
struct job *job_from_stored(const json_t *stored);
/* Answers a store failure: 500 for anything but -ENOENT (404 code_404). */
int reply_store_error(struct http_response *resp, int rc, const char *what);
/* Answers a write: X-Herd-Index idx and body (taken), or {"index": idx}
 * when body is NULL.  Returns 0. */
int reply_written(struct http_response *resp, uint64_t idx, json_t *body);

/* ---- routes_named.c: records stored by name (namespaces, quotas, ACL) --- */

/* Answers with every record of kind, each passed through pick (a new
 * reference, or NULL to leave it out) when pick is not NULL.  Returns 0 or
 * the store's error. */
int named_reply_list(struct server *srv, enum store_kind kind, struct http_request *req,
		     struct http_response *resp, json_t *(*pick)(struct http_request *req, json_t *rec));
/* Reads record name of kind into *out (caller releases).  Returns 0; 1
 * after answering 404 "<what>_not_found" (an invalid name or no such
 * record); or the store's error. */
int named_get(struct server *srv, enum store_kind kind, const char *what, const char *name,
	      struct http_response *resp, json_t **out);
/* Answers with record name of kind, or the 404 of named_get. */
int named_reply_get(struct server *srv, enum store_kind kind, const char *what, const char *name,
		    struct http_response *resp);
/* Stores rec (borrowed) and answers {"<what>": rec, "index": N}.  Returns
 * store_put's result (nothing answered on failure). */
int named_put(struct server *srv, enum store_kind kind, const char *what, json_t *rec,
	      struct http_response *resp);
/* Deletes record name of kind and answers {"index": N}, or the 404 of
 * named_get.  Returns 0 or the store's error. */
int named_delete(struct server *srv, enum store_kind kind, const char *what, const char *name,
		 struct http_response *resp);

/* ---- decode.c ------------------------------------------------------------ */

/* Checks a node registration body {"node": {...}} and returns the node as
 * it will be stored (defaults filled, server fields and device stats
 * removed): a new reference in *out.  -EINVAL with err naming the field. */
int node_from_request(const json_t *body, json_t **out, struct herd_err *err);

struct alloc_status {
	const char *client_status;      /* pending | running | complete | failed */
	const char *client_description; /* "" when absent */
	const json_t *task_states;      /* an object, or NULL when absent */
	const json_t *services;         /* an array (services.c), or NULL when absent */
	/* {"limit","started_at","reached"} of a group with a time_limit, or
	 * NULL when absent; reached: the limit ended it (never rescheduled) */
	const json_t *time_limit;
};

/* Checks an allocation status body; out points into body.  -EINVAL with err. */
int alloc_status_from_request(const json_t *body, struct alloc_status *out, struct herd_err *err);

/* The most allocations one PUT /v1/node/:id/allocations/status carries. */
#define ALLOC_STATUS_BATCH_MAX 1024

/* One entry of a batch of allocation statuses.  id and st point into the
 * body; err.code is 0 for an entry that decoded, else -EINVAL with the
 * reason (such an entry is refused on its own, the others go on). */
struct alloc_status_entry {
	const char *id;
	struct alloc_status st;
	struct herd_err err;
};

/* Checks a batch body {"allocations": [{"id": "...", <a status body>},
 * ...]} of at most ALLOC_STATUS_BATCH_MAX entries.  The envelope must hold
 * (an object, an array, every entry an object with a string id) or the
 * whole body is refused: -EINVAL with err, nothing in *out.  A bad status
 * inside an entry, or an id already seen earlier in the batch, is that
 * entry's err.  On success *out (the caller frees the array; may be NULL
 * when *n is 0) holds *n entries in body order. */
int alloc_status_batch_from_request(const json_t *body, struct alloc_status_entry **out,
				    size_t *n, struct herd_err *err);

/* Decodes a job register or plan body {"job": {...}}.  Returns the
 * validated job (free with job_free; warnings stay in dl), or NULL with
 * *error_body set to the 400 answer (invalid_job with diagnostics). */
struct job *job_from_request(const json_t *body, struct diag_list *dl, json_t **error_body);
/* {"error": {"code": "invalid_job", "message", "diagnostics"}} for dl;
 * fallback is the message when dl holds no error. */
json_t *job_error_body(const struct diag_list *dl, const char *fallback);
/* The warnings of dl as an array of strings. */
json_t *job_warnings(const struct diag_list *dl);

/* ---- eval_broker.c ------------------------------------------------------ */

struct broker_item {
	char *id, *ns, *job_id;
	int64_t wait_until; /* unix ns; 0: now */
	uint64_t gen;       /* unblock generation when dequeued */
};

struct eval_broker {
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* CLOCK_MONOTONIC; signalled on any change */
	struct broker_item *ready; size_t nready, aready;
	struct broker_item *delayed; size_t ndelayed, adelayed;
	struct broker_item *blocked; size_t nblocked, ablocked;
	char **inflight; size_t ninflight, ainflight; /* "ns\x1fjob" keys */
	uint64_t gen;
	bool stopping;
	void (*on_unblock)(void *arg); /* called (unlocked) by broker_unblock_all */
	void *on_unblock_arg;
};

void broker_init(struct eval_broker *b);
void broker_release(struct eval_broker *b);
/* Queues an evaluation (copies the strings); wait_until > now delays it. */
void broker_enqueue(struct eval_broker *b, const char *id, const char *ns, const char *job_id,
		    int64_t wait_until);
/* Takes the next ready evaluation whose job has none in progress; waits.
 * Returns 0 and fills *out (release with broker_done), or -ECANCELED when
 * the broker stops. */
int broker_dequeue(struct eval_broker *b, struct broker_item *out);
/* Like broker_dequeue, then takes without waiting up to max - 1 more ready
 * evaluations (of other jobs) into out[1..]: *n in all, each to end with
 * broker_done.  The in-flight list is searched linearly, so keep max small
 * (tens). */
int broker_dequeue_batch(struct eval_broker *b, struct broker_item *out, size_t max, size_t *n);
/* Ends an evaluation taken by broker_dequeue and frees *it. */
void broker_done(struct eval_broker *b, struct broker_item *it);
/* Parks a blocked evaluation until capacity appears; if capacity appeared
 * since it was dequeued (generation moved), it is queued again at once. */
void broker_block(struct eval_broker *b, const struct broker_item *it);
/* Capacity appeared: every blocked evaluation is queued again. */
void broker_unblock_all(struct eval_broker *b);
/* Waits until nothing is ready or in progress; 0 or -ETIMEDOUT. */
int broker_wait_idle(struct eval_broker *b, int64_t timeout_ns);
/* How many evaluations the broker holds now, by list (GET /v1/metrics). */
struct broker_counts {
	size_t ready, delayed, blocked, in_progress;
};
void broker_counts(struct eval_broker *b, struct broker_counts *out);
void broker_stop(struct eval_broker *b);

/* ---- usage / snapshot_build.c ------------------------------------------ */

struct dev_usage {
	char *id;
	int32_t compute;
	int64_t memory;
	int tenants;
};

/* What the non-terminal allocations of one node take. */
struct node_usage {
	int64_t cpu, memory;
	int64_t disk; /* ephemeral_disk MiB */
	struct dev_usage *devs; size_t ndevs, adevs;
	int *ports; size_t nports, aports;
	/* reserved core ids (resources.tasks.<task>.cores), each once per
	 * allocation holding it */
	int *cores; size_t ncores, acores;
};

void node_usage_release(struct node_usage *u);
void node_usage_copy(struct node_usage *dst, const struct node_usage *src);
/* Adds (sign 1) or removes (sign -1) what alloc takes. */
void node_usage_add_alloc(struct node_usage *u, const json_t *alloc, int sign);
bool node_usage_port_used(const struct node_usage *u, int port);

/* One node in a worker's view: its record and what it has taken. */
struct view_node {
	json_t *node;          /* owned reference */
	const char *id;
	bool schedulable;      /* ready, eligible, not draining */
	struct node_usage use;
	/* {"<alloc id>": resources} of the allocations use counts, as read
	 * (shared with the view cache, never changed); NULL when the view was
	 * read without a cache.  The plan applier's capacity re-check. */
	json_t *counted;
};

/* A consistent read of what one evaluation needs. */
struct sched_view {
	uint64_t index;        /* the store's index when read */
	json_t *job;           /* stored job or NULL (purged) */
	json_t *job_allocs;    /* array */
	json_t *evals_blocked; /* unused for now */
	struct view_node *nodes; size_t nnodes;
	/* Bumped whenever a plan takes something in a node's use: a snapshot
	 * built at another value misses it. */
	uint64_t use_gen;
	/* The engine snapshot the last placement gave back for reuse
	 * (view_snapshot_take / _put), NULL when none; owned by the view. */
	struct view_snap *snap;
	/* {"<namespace>": true} for namespaces a plan against this view found
	 * without a quota: the plans after it in a batch take that answer
	 * instead of reading the namespace again */
	json_t *no_quota;
	/* The reservation as of resv_now (reservation.h: resv_view), owned;
	 * NULL: none.  snapshot_build shows its GPUs as reserved to requests
	 * that may not use them. */
	struct resv *resv;
	int64_t resv_now;
};

/* What views read last, reused while the store says it has not changed:
 * the node list (by the node kind's index) and each node's usage (by the
 * node's allocation index).  Without it every evaluation would parse every
 * allocation record of the cluster. */
struct view_cache_node {
	char *id;
	uint64_t allocs_index;
	struct node_usage use;
	json_t *counted;       /* {"<alloc id>": its resources} for what use counts */
};

struct view_cache {
	pthread_mutex_t lock;
	uint64_t nodes_index;  /* 0: nothing cached */
	json_t *nodes;
	struct view_cache_node *v; size_t n, a;
};

void view_cache_init(struct view_cache *c);
void view_cache_release(struct view_cache *c);

/* Reads a view for job (ns, job_id) in one read transaction; cache may be
 * NULL.  The view's records (job, allocations, nodes, and the batch's
 * evaluations) are shared read-only store records (store_get_shared):
 * copy one before changing it. */
int sched_view_read(struct store *s, struct view_cache *cache, const char *ns,
		    const char *job_id, struct sched_view *v, struct herd_err *err);
/* One view for several jobs, read in one read transaction: the nodes and
 * their usage once, and for each i < n the evaluation eval_ids[i] (NULL in
 * evals[i] when it is gone), the job (ns[i], job_ids[i]) (NULL when gone)
 * and its allocations, each a new reference for the caller.  v->job and
 * v->job_allocs are left NULL: the caller puts each job's in turn. */
int sched_view_read_batch(struct store *s, struct view_cache *cache, size_t n,
			  char *const *eval_ids, char *const *ns, char *const *job_ids,
			  struct sched_view *v, json_t **evals, json_t **jobs, json_t **allocs,
			  struct herd_err *err);
void sched_view_release(struct sched_view *v);
struct view_node *sched_view_node(struct sched_view *v, const char *id);

/* What a task group asks of one node: translated once per group. */
struct group_ask {
	struct sched_request req;
	struct sched_device_request dev;
	struct sched_constraint *cons; size_t ncons;
	struct sched_affinity *affs; size_t naffs;
	struct sched_constraint *dcons; size_t ndcons;
	struct sched_affinity *daffs; size_t ndaffs;
	struct sched_volume *vols;  /* the group's host volumes, by source */
	bool distinct_hosts;
	int ndevice_asks;      /* device blocks of the group's tasks */
	/* the device blocks after the first, placed on the same node as it
	 * (multi_device.c) */
	struct group_device_ask *extra; size_t nextra;
	/* distinct_property constraints (distinct_property.c) */
	struct group_distinct_prop *dprops; size_t ndprops;
	/* the job's and the group's spreads and their counts (spread.c);
	 * NULL when neither has one */
	struct group_spreads *spreads;
	/* tasks that reserve cores (sched_request.cores), and the cpu they
	 * count at herd's nominal 1000 per core: the least they take, for the
	 * quota's first check (a node's cores count its cpu_milli / online
	 * cores each) */
	struct sched_core_request *cores;
	int64_t cores_cpu;
	const struct job *job;
	const struct job_group *group;
};

/* Translates rules r to the scheduler's constraints (appended to *cv, *cn)
 * or, for affinities, to *av, *an.  With a, distinct_hosts and
 * distinct_property constraints go to a; without (an extra device
 * block's rules) they are refused like any operator the scheduler lacks:
 * -EINVAL with err. */
int group_ask_add_rules(struct group_ask *a, const struct job_rules *r, bool affinity,
			struct sched_constraint **cv, size_t *cn, struct sched_affinity **av,
			size_t *an, struct herd_err *err);
/* Translates the job's constraints, affinities and resources for group g.
 * -EINVAL with err for what the engine cannot express. */
int group_ask_init(struct group_ask *a, const struct job *job, const struct job_group *g,
		   struct herd_err *err);
void group_ask_release(struct group_ask *a);

/* ---- multi_device.c: several device blocks per group ------------------- */

/* One device block after the group's first, with its own rules. */
struct group_device_ask {
	struct sched_device_request dev;
	struct sched_constraint *cons; size_t ncons;
	struct sched_affinity *affs; size_t naffs;
};

/* Translates every device block of g's tasks after the first into
 * a->extra.  -EINVAL with err for a rule the engine cannot express. */
int group_ask_extra_devices(struct group_ask *a, const struct job_group *g, struct herd_err *err);
/* Frees a->extra (group_ask_release calls it). */
void group_ask_extra_release(struct group_ask *a);
/* Places one instance of a: with one device block, sched_place; with
 * several, the first block picks a node and the others are placed on that
 * node in turn against the same snapshot; a node where they do not all fit
 * is excluded and the next one tried.  On success *out holds the node, the
 * cpu and memory, and every block's devices in order; the snapshot is as
 * it was (take it with group_ask_apply).  -ENOSPC with why filled when no
 * node takes them all; -EINVAL with err for a malformed request. */
int group_ask_place(struct sched_snapshot *snap, const struct group_ask *a,
		    const struct sched_options *opt, struct sched_placement *out,
		    struct sched_explain *why, struct herd_err *err);
/* Takes what group_ask_place chose in the snapshot (block by block, so
 * that two shares of one GPU count twice).  0 or -EINVAL. */
int group_ask_apply(struct sched_snapshot *snap, const struct group_ask *a,
		    const struct sched_placement *pl);

/* ---- distinct_property.c ------------------------------------------------ */

struct group_distinct_prop {
	const char *attribute; /* "${meta.rack}" (borrowed from the job) */
	int64_t limit;         /* allocations per value, >= 1 */
	bool job_level;        /* counts the job's every group, else this group's */
};

/* Records a distinct_property constraint c of the job (job_level) or of the
 * group or its tasks. */
void group_ask_add_distinct_property(struct group_ask *a, const struct job_constraint *c,
				     bool job_level);
/* What the job's live allocations (those that count for a) take of each
 * property value: {"<attribute>\x1f<value>": count}.  NULL when a has no
 * distinct_property.  Free with json_decref. */
json_t *distinct_property_counts(struct sched_view *v, const struct group_ask *a,
				 const json_t *live);
/* Whether node vn may take one more allocation under every
 * distinct_property of a, given counts (NULL: no rule).  A node without the
 * property cannot. */
bool distinct_property_allows(const json_t *counts, const struct group_ask *a,
			      const struct view_node *vn);

/* The value of attribute (a ${...} node reference or a literal) on node
 * (a node record); a new string, or NULL when the node does not have it. */
char *node_property(const json_t *node, const char *attribute);

/* ---- spread.c ----------------------------------------------------------- */

/* Gives a->req the spreads of a's group and job (group_ask_init calls it),
 * with the group's count as the desired count; frees them
 * (group_ask_release calls it). */
void group_ask_spreads_init(struct group_ask *a);
void group_ask_spreads_release(struct group_ask *a);
/* Sets the spreads' counts: the allocations of live of a's group that run
 * or will (desired status run, not stopped by changed: the plan's stops),
 * per value of each attribute on their node in v. */
void spread_counts_init(struct group_ask *a, struct sched_view *v, const json_t *live,
			const json_t *changed);
/* One more allocation of a's group on node vn. */
void spread_counts_add(struct group_ask *a, const struct view_node *vn);

/* ---- placement_notes.c -------------------------------------------------- */

/* Why no node was even evaluated for a job in view v, for the evaluation's
 * explanation ("no nodes registered yet ..."); a new string. */
char *no_candidates_reason(const struct sched_view *v);

/* Builds the engine's snapshot of the nodes of v that may take ask (pool,
 * datacenter, static ports, distinct_hosts), with what they have taken.
 * map[i] receives the view index of snapshot node i (map has v->nnodes
 * slots).  The caller frees the snapshot. */
struct sched_snapshot *snapshot_build(struct sched_view *v, const struct group_ask *ask,
				      const json_t *job_allocs_live, int *map,
				      struct herd_err *err);

/* A snapshot for ask, whose node set depends only on the job's pool and
 * datacenters (no ports, distinct_hosts or distinct_property: the caller
 * builds those with snapshot_build each time), and in *map (v->nnodes
 * slots) the view index of each of its nodes.  The one the view holds
 * when it was built for the same pool and datacenters and v->use_gen has
 * not moved since it was given back, else a new one.  The caller owns both
 * until view_snapshot_put.  A batch of evaluations planned against one
 * view then builds one snapshot, not one per evaluation. */
struct sched_snapshot *view_snapshot_take(struct sched_view *v, const struct group_ask *ask,
					  const json_t *job_allocs_live, int **map,
					  struct herd_err *err);
/* Gives snap and map back to v: kept for the next view_snapshot_take when
 * reusable (everything it took since it was built is in v's use, counted
 * in v->use_gen, and it holds no device placement: a rebuilt snapshot
 * starts with no hosted classes), freed otherwise. */
void view_snapshot_put(struct sched_view *v, const struct group_ask *ask,
		       struct sched_snapshot *snap, int *map, bool reusable);

/* ---- reconcile.c -------------------------------------------------------- */

struct place_need {
	int group;            /* index into job->groups */
	int slot;             /* instance index */
	json_t *previous;     /* the allocation replaced, or NULL (owned ref) */
	int reschedule_attempts;
	bool canary;          /* a canary of the deployment (deployment.c): beside the slot's */
	char *node_id;        /* a system job's: on this node only (owned); NULL: any node */
};

struct reconcile_result {
	json_t *stops;        /* array of allocation objects, desired stop set */
	json_t *updates;      /* other changed allocations (in-place) */
	struct place_need *place; size_t nplace, aplace;
	int64_t followup_at;  /* a delayed reschedule is due then; 0 none */
	int ignore;           /* allocations left as they are */
	bool job_dead;        /* nothing of the job runs nor will */
	/* rolling updates (deployment.c): job version records to write (a
	 * deployment's progress; NULL: none), the deployment that new
	 * allocations of rolling groups join (NULL: none), and a stable
	 * version to re-register when revert (a deployment just failed) */
	json_t *versions;
	char *deployment_id;
	bool revert;
	int64_t revert_to;
};

void reconcile_result_release(struct reconcile_result *r);
/* The desired_description of an allocation a user stopped. */
#define RECONCILE_USER_STOP "stopped by user; replaced"
/* alloc as a user's stop (POST /v1/allocation/:id/stop) leaves it: desired
 * status stop with RECONCILE_USER_STOP, waiting for a replacement with the
 * reschedule attempts it had (a stop is no failure: the group's reschedule
 * policy is not used up).  reconcile then finds its slot empty and places
 * the replacement, whose previous_allocation names it.  A new object. */
json_t *reconcile_user_stop(const json_t *alloc, int64_t now);
/* Marks alloc (changed in place) to be stopped without its group's and
 * tasks' shutdown_delay (job stop / alloc stop -no-shutdown-delay): its
 * desired_transition's no_shutdown_delay, which the agent reads when it
 * stops the allocation.  A record without it stops with the delays. */
void alloc_set_no_shutdown_delay(json_t *alloc);
/* Decides what job needs given its allocations and the nodes of v.
 * job_model is NULL when the job is gone or stopped: then every allocation
 * stops. */
int reconcile(struct store *s, const json_t *job, const struct job *job_model,
	      struct sched_view *v, int64_t now, struct reconcile_result *out,
	      struct herd_err *err);
/* Whether a failed allocation of group g (or a service's that ended) is
 * due a replacement under the group's reschedule policy, now or later. */
bool reconcile_reschedules(const struct job_group *g, const json_t *alloc, int64_t now);
/* Whether the group of alloc changed between its job version and job
 * (what decides where it runs and what it runs): it must be replaced. */
bool reconcile_group_changed(struct store *s, const json_t *job, const json_t *alloc);

/* ---- reconcile_system.c, system_jobs.c: system and sysbatch jobs ------- */

/* Whether alloc's group changed in the job being reconciled. */
typedef bool (*reconcile_changed_fn)(void *ctx, const json_t *alloc);
struct deploy;
/* What reconcile_system_decide asks beyond its view. */
struct system_hooks {
	reconcile_changed_fn changed;
	/* Why schedulable node vn no longer takes alloc, a live allocation
	 * of group g whose group did not change (system_unfit), or NULL; a
	 * new string.  NULL hook: every node still takes what it runs. */
	char *(*unfit)(void *ctx, int g, const json_t *alloc, const struct view_node *vn);
	void *ctx;
	/* The deployment of rolling groups (deploy_begin; the caller ends
	 * it with deploy_end); NULL: no group rolls, a new version replaces
	 * every node's allocation at once. */
	struct deploy *dep;
};
/* reconcile for a system or sysbatch job (spec/job_system.h): one
 * allocation per group on every schedulable node of v, each need pinned
 * (place_need.node_id); the rules are in reconcile_system.c.  job is the
 * stored job (version, modify_index).  Pure but for h.  0; *out as
 * reconcile's. */
int reconcile_system_decide(const json_t *job, const struct job *model, struct sched_view *v,
			    int64_t now, const struct system_hooks *h, struct reconcile_result *out);
/* reconcile_system_decide with the stored job versions of s. */
int reconcile_system(struct store *s, const json_t *job, const struct job *model,
		     struct sched_view *v, int64_t now, struct reconcile_result *out);
/* A snapshot of node node_id of v alone, for ask (as snapshot_build: empty
 * when the node does not take ask or is gone); map[0] gets its index in v. */
struct sched_snapshot *system_snapshot(struct sched_view *v, const struct group_ask *ask,
				       const json_t *job_allocs_live, int *map, const char *node_id,
				       struct herd_err *err);
/* Whether the engine's answer why (for a one-node system_snapshot) says
 * that the node is not the job's (pool, datacenter, constraints, volumes,
 * device asks), rather than that it lacks room: then it is left out, no
 * failure. */
bool system_ineligible(const struct sched_explain *why);
/* Why node vn no longer takes alloc, a live allocation of ask's group on
 * it, or NULL when it still does: a device alloc holds is gone from the
 * node or unhealthy, or (vn schedulable) a one-node placement of ask that
 * leaves alloc's own usage out finds the node not the job's
 * (system_ineligible: pool, datacenter, constraints, volumes, device
 * asks).  A node that matches but lacks room keeps the allocation.  A new
 * string, "node no longer matches the job: <why>" (caller frees). */
char *system_unfit(const struct sched_view *v, const struct group_ask *ask, const json_t *alloc,
		   const struct view_node *vn);
/* Records in failed (a plan's failed_placements) that group's instance
 * for node node_id of v did not fit: "nodes": {"<node name>": why},
 * "missing" and "nodes_evaluated" counted, "explanation" naming every node
 * so far.  why and req are the engine's; reason, when not NULL, is said
 * instead. */
void system_note_failure(json_t *failed, struct sched_view *v, const char *group, const char *node_id,
			 const struct sched_explain *why, const struct sched_request *req,
			 const char *reason);
/* Puts into b (and appends to evals, to queue once committed) a
 * "node-update" evaluation of every system job that is not stopped: a
 * node joined, came back or became eligible, and may now take one.  0 or
 * -errno with err. */
int system_node_evals(struct store *s, const char *node_id, struct store_batch *b, json_t *evals,
		      struct herd_err *err);

/* ---- deployment.c: rolling updates of service and system groups ---------
 *
 * A deployment moves a service or system job's rolling groups (update {
 * max_parallel > 0 }, not gangs) to the job's current version a few
 * allocations at a time.  Its record lives in the record of the job version it deploys
 * ("deployment"; a version whose deployment succeeded is "stable"): no
 * store kind of its own (docs/architecture.md, "Deployments").  reconcile
 * drives it: deploy_begin, deploy_note for every allocation of the job,
 * deploy_defer for each live allocation whose group changed (instead of
 * replacing it), deploy_budget per group (how many of the deferred to
 * replace now), deploy_end (status, follow-up, writes into r). */
/* Whether group g rolls (update with max_parallel > 0, not a gang). */
bool deploy_group_rolls(const struct job_group *g);
/* The job's deployment state for one reconcile, or NULL when no group of
 * job rolls (a batch or sysbatch job, no update block, max_parallel 0).
 * s may be NULL (unit tests): no version record, read or written. */
struct deploy *deploy_begin(struct store *s, const json_t *job, const struct job *model,
			    int64_t now);
void deploy_note(struct deploy *d, int g, const json_t *alloc);
void deploy_defer(struct deploy *d, int g, const json_t *alloc);
/* What reconcile does with a live allocation of group g flagged canary
 * ("deployment_status": {"canary": true}) and not yet marked promoted:
 * NONE, an ordinary allocation (not a canary, or one promoted); KEEP, a
 * canary of the running deployment (or of a promoted group), outside the
 * slot count; STOP, a canary of another deployment or of one that ended
 * before its promotion.  d may be NULL (no deployment: STOP). */
enum deploy_canary { DEPLOY_CANARY_NONE, DEPLOY_CANARY_KEEP, DEPLOY_CANARY_STOP };
enum deploy_canary deploy_canary(const struct deploy *d, int g, const json_t *alloc);
/* After every deploy_note and deploy_defer, before deploy_budget: the
 * canaries' part.  Decides auto_promote, marks the canaries of promoted
 * groups (r->updates) and takes the old allocations they replace out of
 * the deferred ones (deploy_superseded: the caller stops them, with no
 * replacement), and the instance indexes new canaries take now
 * (deploy_canary_slots: the caller places them, canary set).  Both
 * arrays are d's (borrowed). */
void deploy_canaries(struct deploy *d, struct reconcile_result *r);
const json_t *deploy_superseded(const struct deploy *d, int g);
const json_t *deploy_canary_slots(const struct deploy *d, int g);
/* A stopped job (the stored one): its current version's running
 * deployment, if any, is cancelled (the record into r->versions).  Reads
 * nothing for a job without an update block. */
void deploy_cancel_stopped(struct store *s, const json_t *job, int64_t now,
			   struct reconcile_result *r);
/* A job version that makes no deployment of its own (deploy_begin gave
 * NULL): the running deployment of an older version, if any, is cancelled
 * ("superseded"; the record into r->versions).  Reads versions only when
 * some allocation of allocs (the job's, any status) joined a deployment. */
void deploy_cancel_superseded(struct store *s, const json_t *job, const json_t *allocs,
			      int64_t now, struct reconcile_result *r);
/* Whether the version's deployment failed (nothing more rolls). */
bool deploy_failed(const struct deploy *d);
/* After every deploy_note: whether alloc joined d's deployment and that
 * deployment failed, or fails at this reconcile (an allocation of it is
 * unhealthy).  d may be NULL (false). */
bool deploy_alloc_halted(const struct deploy *d, const json_t *alloc);
/* How many of group g's deferred allocations reconcile replaces now, and
 * the k-th of them (slot order). */
size_t deploy_budget(struct deploy *d, int g, const struct reconcile_result *r);
/* deploy_budget, at most cap (a system group's stagger holds the rest). */
size_t deploy_budget_capped(struct deploy *d, int g, const struct reconcile_result *r, size_t cap);
/* The allocations group g should have (its record's desired_total): a
 * system group's nodes; by default its count. */
void deploy_set_total(struct deploy *d, int g, int64_t n);
const json_t *deploy_deferred(struct deploy *d, int g, size_t k);
/* Decides the deployment's status, queues its writes and follow-up in r
 * and frees d (accepts NULL). */
void deploy_end(struct deploy *d, struct reconcile_result *r);
/* An agent's report on alloc (the record to store, top-level fields
 * changed in place): notes when an allocation of a deployment, or the
 * replacement of one a drain migrated ("drain_migration", drain.h), became
 * ready (its tasks run and, with health_check "checks", its checks pass),
 * the server's clock, in "deployment_status": {"ready_since"}.  true when
 * an allocation of a deployment became ready now (an evaluation must look
 * at the deployment). */
bool deploy_alloc_report(json_t *alloc, int64_t now);
/* Whether alloc is ready as deployments judge it now: client running,
 * every task running (or a prestart ended well), its checks passing. */
bool deploy_alloc_ready(const json_t *alloc);
/* Whether a check of status (passing, warning, critical) lets its
 * allocation be ready for its deployment, by the check's on_update
 * (NULL: require_healthy): require_healthy wants passing, ignore_warnings
 * passing or warning, ignore anything. */
bool deploy_check_ready(const char *status, const char *on_update);
/* A new allocation of rolling group g joins deployment id: its
 * "deployment_id", the checks its health waits for, and for a canary
 * "deployment_status": {"canary": true}. */
void deploy_join(json_t *alloc, const struct job_group *g, const char *id, bool canary);
/* After a commit whose deployment failed with auto_revert: re-registers
 * version `to` of job (the stored job the plan read), unless the job
 * changed meantime; what fails is logged. */
void deploy_revert(struct server *srv, const json_t *job, int64_t to);
/* routes_deployments.c */
int routes_deployments(struct server *srv, struct herd_err *err);
/* routes_jobs.c: re-registers version of job (ns, id) as a new version,
 * as POST /v1/job/:id/revert does, on condition that the job is at
 * version enforce (>= 0; else 409 and nothing is changed).  resp gets the
 * answer; 0 or -errno with err. */
int job_revert_to(struct server *srv, const char *ns, const char *id, int64_t version,
		  int64_t enforce, const char *trigger, struct http_response *resp,
		  struct herd_err *err);
/* Changes the count of group (NULL: the job's only one) of job (ns, id) as
 * POST /v1/job/:id/scale does, the evaluation triggered by trigger: a new
 * version, within the group's scaling bounds.  0 with resp answered (200,
 * or a refusal: resp's status and error say why), or -errno with err. */
int job_scale_to(struct server *srv, const char *ns, const char *id, const char *group,
		 int64_t count, const char *trigger, struct http_response *resp,
		 struct herd_err *err);

/* ---- placement: worker.c / plan_apply.c ------------------------------- */

struct plan {
	json_t *allocs;            /* new and changed allocations to put */
	json_t *extra_evals;       /* evaluations to put and queue with the plan (preempted jobs) */
	json_t *preempted;         /* allocations of other jobs stopped by preemption */
	char *queued;              /* why the job waits in the queue (quota, fair share); NULL: it does not */
	bool reserve;              /* the job preempted: the queue keeps its place first */
	bool quota_held;           /* some instance waits for its own namespace's quota */
	bool needs_gpus;           /* the job has instances to place that ask devices */
	bool fq_held;              /* the fair queue holds the job: another goes first */
	bool gang_probe;           /* a gang's quota probe: every placement is taken back */
	struct quota_state *quota; /* the namespace's quota as the plan counted it; NULL: none */
	json_t *failed;            /* {"<group>": {"explanation","nodes_evaluated","missing"}} */
	json_t *placements;        /* for the plan endpoint; NULL: not kept */
	int create, destroy, update, ignore;
	int64_t followup_at;
	/* rolling updates (deployment.c): as reconcile_result's */
	json_t *versions;          /* job version records to write; NULL: none */
	char *deployment_id;       /* the deployment new allocations of rolling groups join */
	bool revert;               /* after the commit, re-register version revert_to */
	int64_t revert_to;
	/* the dependency gate (depends.c): why the job waits, and for which
	 * jobs (ids); or why it never will run (the worker stops it) */
	char *dep_waiting, *dep_never;
	json_t *dep_waiting_for;
	char **nodes; size_t nnodes, anodes; /* nodes receiving new allocations */
};

void plan_init(struct plan *p);
/* Leaves p->placements NULL: a plan that is committed, not shown. */
void plan_no_placements(struct plan *p);
void plan_release(struct plan *p);

/* Computes the plan of one evaluation against view v: reconcile, then place
 * each missing instance with the engine.  eval_id names the evaluation the
 * new allocations carry ("" for a dry run). */
int plan_compute(struct server *srv, struct sched_view *v, const json_t *job,
		 const char *eval_id, struct plan *p, struct herd_err *err);

/* Commits plan p (and eval, the evaluation's final record, and extra, an
 * array of more records: follow-up evaluations) on condition that the
 * allocations of the job and of every node receiving one are as v saw
 * them.  -ESTALE when they are not. */
int plan_apply(struct server *srv, const struct sched_view *v, const struct plan *p,
	       json_t *eval, json_t *extra_evals, uint64_t *out_index, struct herd_err *err);

/* One plan of a batch commit: the plan, the stored job it read (NULL when
 * gone), the evaluation's final record and more evaluations to put. */
struct plan_commit {
	const struct plan *p;
	const json_t *job;
	json_t *eval;
	json_t *extra_evals;
};

/* Commits n plans computed one after another against view v (each
 * seeing the allocations of those before it) in one transaction, on the
 * conditions of plan_apply for each.  Plans that check a quota must not
 * share a batch with another plan of their namespace (each counted the
 * quota without the other's allocations).  -ESTALE when any condition
 * fails: then nothing is written. */
int plan_apply_batch(struct server *srv, const struct sched_view *v, const struct plan_commit *pc,
		     size_t n, uint64_t *out_index, struct herd_err *err);

/* ---- gang.c: groups placed all or nothing ----------------------------- */

/* Where a plan stood before a gang's first member was placed. */
struct gang_mark {
	size_t allocs, live, placements, nnodes;
	int create;
};

void gang_mark(struct gang_mark *m, const struct plan *p, const json_t *live);
/* Takes back everything placed since m: the allocations leave p (and
 * live), what they took leaves the view's node usage and the plan's
 * quota count.  The caller drops any snapshot that took them. */
void gang_undo(struct sched_view *v, struct plan *p, json_t *live, const struct gang_mark *m);
/* Writes on every allocation placed since m (the whole gang of group g,
 * or the members a restart placed again beside those it kept: batch
 * members that completed, read from v->job_allocs) its "gang": {"size",
 * "rank", "members": [{"rank", "alloc_id", "node_id", "node_name",
 * "address", "ports"}] in rank order}, kept members listed too. */
void gang_annotate(struct sched_view *v, struct plan *p, const struct gang_mark *m,
		   const struct job_group *g);
/* Rewrites the group's failure for a gang of n of which fit members fit:
 * "gang of n: fit of n members fit; <the first member's reason>", all n
 * missing. */
void gang_explain(struct plan *p, const char *group, size_t fit, size_t n);
/* The host part of a node record's http_addr ("10.0.0.7" of
 * "10.0.0.7:4646", "::1" of "[::1]:4646"); "" when it has none.  A new
 * string. */
char *gang_node_host(const json_t *node);

/* The worker thread: takes evaluations until the broker stops. */
void *worker_main(void *srv);

/* ---- teams: quota.c, fair_queue.c, preempt.c ---------------------------- */

/* What one namespace takes and may take (quota.c). */
struct quota_state {
	char *ns;
	json_t *spec;              /* the quota attached to the namespace; NULL: none */
	int64_t cpu_limit, mem_limit; /* 0: none */
	int64_t cpu, mem;          /* used by allocations that hold capacity */
	int64_t gpu_milli;         /* all GPUs used, thousandths */
	int64_t borrowed_milli;    /* of which by borrowed allocations */
	json_t *by_group;          /* {"<device group>": milli} */
	int64_t base_cpu, base_mem, base_gpu; /* as read, before a plan added to it */
};

/* Reads the quota of namespace ns and what its allocations take, in the
 * store's current state (callable inside a store_view or check).  A
 * namespace without a quota gets spec NULL and zero usage (not counted:
 * nothing reads usage without a quota, and counting parses every
 * allocation of the namespace). */
int quota_state_read(struct store *s, const char *ns, struct quota_state *q, struct herd_err *err);
/* The state of namespace ns without a quota (what quota_state_read gives
 * such a namespace). */
void quota_state_none(struct quota_state *q, const char *ns);
void quota_state_release(struct quota_state *q);
/* Adds (sign 1) or removes (-1) what alloc takes. */
void quota_state_add(struct quota_state *q, const json_t *alloc, int sign);
/* Whether taking cpu, mem and the devices devs (an array of {group,
 * gpu_milli}; or, when devs is NULL, gpu_lower thousandths of any GPU)
 * stays within the quota.  Returns NULL when it does; else a new string
 * naming the limit that holds ("quota team-a: nvidia/gpu 4/4"), and sets
 * *gpu_only when only device limits are exceeded (borrowing may apply). */
char *quota_exceeds(const struct quota_state *q, int64_t cpu, int64_t mem, const json_t *devs,
		    int64_t gpu_lower, bool *gpu_only);
/* Whether q allows borrowing extra thousandths of GPU beyond its limits. */
bool quota_may_borrow(const struct quota_state *q, int64_t extra_milli);
/* Usage of spec's namespace as {"cpu": {"used","limit"}, ...} for readers. */
json_t *quota_status_json(const struct quota_state *q);
/* A store check (see store_check_fn): the plan's namespace has not grown
 * its usage since the plan counted it.  arg: the plan. */
int quota_commit_check(struct store *s, void *arg, struct herd_err *err);

/* The fair queue of jobs waiting for GPUs (fair_queue.c; docs/teams.md,
 * "Queue order").  In memory; rebuilt as queued evaluations run again. */
struct fq_entry {
	char *ns, *job_id;
	int64_t priority, submit;
	bool reserved;           /* preempted for: goes first */
	char *eval_id;           /* its evaluation, parked until its turn; NULL: none */
	int64_t ask_milli;       /* GPU thousandths one instance asks at least */
	char *shape;             /* what it asks but the GPU count (plan.c's ask_shape); NULL: not comparable */
	uint64_t failed_gen;     /* capacity generation at which it last failed to fit; UINT64_MAX: never */
	int64_t since;           /* unix ns it entered the queue (reservation.h) */
	bool resv;               /* holds the reservation: goes first after those that preempted */
	uint64_t resv_never_nodes; /* node kind index at which no node could ever take it; 0: none */
};

struct fair_queue {
	pthread_mutex_t lock;
	struct fq_entry *v; size_t n, a;
	uint64_t gen;            /* capacity generation: bumped by fair_queue_wake */
	uint64_t usage_index;    /* allocation kind index of the cached usage */
	json_t *usage;           /* {"<ns>": GPU milli} */
	uint64_t weights_ns_index, weights_quota_index; /* of the cached weights */
	json_t *weights;         /* {"<ns>": GPU milli} */
	struct resv *resv;       /* reservation.h; NULL: none */
	int resv_held;           /* resv != NULL, read without the lock (atomic builtins) */
	/* Reservations made and ended (by enum resv_end) since the server
	 * started, for GET /v1/metrics; under lock. */
	uint64_t resv_made, resv_ended[RESV_END_N];
	/* Poked when the reservation is made, moves or ends, so blocking
	 * reads that show it wake (http.h, HTTP_ROUTE_MEMORY); borrowed from
	 * the store; NULL: none (set once the store is open). */
	struct index_watch *watch;
};

void fair_queue_init(struct fair_queue *q);
void fair_queue_release(struct fair_queue *q);
/* Enters the job (or updates its entry; ask_milli < 0 keeps its ask and
 * shape) and says whether it may try to place now (see fair_queue.c).
 * shape (copied; NULL: none) names everything the job asks except the GPU
 * count: only a job of the same shape and no smaller ask is known to fail
 * where another failed.  When not, *ahead receives "ns/job" of the one
 * whose turn it is (free it). */
bool fair_queue_admit(struct server *srv, const char *ns, const char *job_id, int64_t priority,
		      int64_t submit, bool reserved, int64_t ask_milli, const char *shape,
		      char **ahead);
/* Parks the evaluation of a job in the queue that could not place (failed:
 * it tried and did not fit; else the queue held it): it runs again only
 * when its turn comes (fair_queue_wake), not on every change of capacity.
 * Then wakes whoever's turn it is now (the next, when this one failed).
 * gen_seen is fair_queue_gen() from before the evaluation read its
 * snapshot: a failure counts for that capacity only, so capacity that
 * appeared while the evaluation ran makes the job eligible again at once.
 * false (nothing parked) when the job has no entry. */
bool fair_queue_park(struct server *srv, const char *ns, const char *job_id, const char *eval_id,
		     bool failed, uint64_t gen_seen);
/* The capacity generation now (bumped by fair_queue_wake). */
uint64_t fair_queue_gen(struct server *srv);
/* Capacity changed: a new generation (everyone may try again) and the
 * parked evaluation whose turn it is is queued.  The broker calls it on
 * broker_unblock_all. */
void fair_queue_wake(void *srv);
/* Removes the job's entry; true when it had one (others may go now). */
bool fair_queue_remove(struct fair_queue *q, const char *ns, const char *job_id);
/* The jobs in the queue per namespace, {"<ns>": count} (a new object),
 * and in *parked how many evaluations it holds parked until their turn
 * (GET /v1/metrics).  Reads the queue only: no store. */
json_t *fair_queue_waiting(struct fair_queue *q, size_t *parked);
/* The namespaces' weights and GPU usage as the queue orders them, for
 * GET /v1/quotas/queue: [{"namespace","weight","gpu_used","waiting"}]. */
json_t *fair_queue_status(struct server *srv);

/* Preemption (preempt.c).  Finds the smallest set of allocations of lower
 * priority (or borrowed ones, when the job's namespace is within its
 * quota) whose end would let ask fit on one node of snap.  On success
 * (0) appends the victims, marked to stop, to p->preempted and p->allocs,
 * an evaluation per victim's job to p->extra_evals, and sets p->reserve.
 * -ENOSPC when no such set exists; 1 when earlier victims of this job are
 * still stopping (wait for them). */
int preempt_for(struct server *srv, struct sched_view *v, struct sched_snapshot *snap,
		const int *map, const struct group_ask *ask, const json_t *job,
		const struct quota_state *q, const struct sched_options *opt, struct plan *p,
		int64_t now);
/* Whether jobs of this type may preempt (server configuration). */
bool preempt_enabled(const struct server *srv, const char *job_type);

/* ---- heartbeat.c -------------------------------------------------------- */

struct node_live {
	char *id;
	int64_t last_mono;     /* monotonic ns of the last heartbeat */
	int64_t last_wall;     /* unix ns */
	json_t *stats;         /* {"<device id>": stats}, owned */
};

int heartbeat_start(struct server *srv, struct herd_err *err);
void heartbeat_stop(struct server *srv);
/* One look of the timer: marks down the nodes whose last heartbeat (or,
 * for a node not heard of since this server started, the start) is older
 * than the TTL.  The timer's work; tests call it to know that it ran. */
void heartbeat_check(struct server *srv);
/* Records a heartbeat of node id now (stats may be NULL: a device array). */
void heartbeat_touch(struct server *srv, const char *id, const json_t *devices);
/* Fills last_heartbeat, heartbeat_ttl and device stats into a node for a reader. */
void heartbeat_decorate(struct server *srv, json_t *node);
/* Marks node `id` down now: its allocations lost, node-update evaluations
 * for their jobs.  Used by the timer; returns 0 or -errno. */
int node_mark_down(struct server *srv, const char *id, struct herd_err *err);

/* ---- server.c ----------------------------------------------------------- */

struct server {
	struct server_config cfg;
	char *data_dir, *bind_addr;
	json_t *self_config;
	char *self_node_id;
	enum sched_policy policy;
	int64_t ttl_ns;
	struct store *store;
	int lock_fd;   /* the data dir's lock (store_dir_lock); -1: not taken */
	struct http_router *router;
	struct http_server *http;
	struct eval_broker broker;
	struct view_cache view_cache;
	/* Held by a worker from the view it plans on to the commit of its
	 * plans: planners of one cluster would mostly place on the same nodes
	 * and undo each other's work (worker.c). */
	pthread_mutex_t plan_lock;
	pthread_t *workers; unsigned nworkers;
	pthread_t hb_thread; bool hb_running;
	pthread_mutex_t hb_lock;
	pthread_cond_t hb_cond;
	bool hb_stop;
	struct node_live *live; size_t nlive, alive;
	pthread_mutex_t lock;  /* guards self_node_id, advertise */
	/* The advertised API address with the real port (standby.h;
	 * GET /v1/status/leader), and while a standby waits for the shared
	 * store, its listener (handed to http at the takeover). */
	char *advertise;
	struct standby *standby;
	uint64_t seed;
	struct fair_queue fq;
	bool acl_enabled;
	/* the keys variables' items are sealed with (vars_keyring.h), opened
	 * by routes_vars at start */
	struct vars_keyring vars_ring;
	/* the RSA keys derived from it that sign workload identities' tokens
	 * (jwt_keys.h), opened by routes_oidc at start; the tokens' iss as
	 * configured (NULL: oidc_issuer() derives it) */
	struct jwt_keys jwt_keys;
	char *oidc_issuer;
	char *region;          /* the tokens' sub starts with it */
	void **guards; size_t nguards, aguards; /* acl.c's route wrappers */
	struct gc *gc;         /* gc.c's timer */
	struct periodic *periodic; /* periodic.c's launcher */
	struct metrics_seen *metrics_seen; /* routes_metrics.c's memory of its counters */
	struct depends *deps;  /* depends.c's index of dependents */
	struct idle_gpu *idle; /* idle_gpu.c's clocks of idle GPUs */
	struct autoscale *autoscale; /* autoscale.c's samples and events */
	struct drainer *drainer; /* drain.c's rounds of draining nodes */
};

void server_log(struct server *srv, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Creates an evaluation record for job (ns, job_id) with trigger; the
 * caller puts it (usually in a batch) and then calls server_queue_eval. */
json_t *eval_new(const char *ns, const char *job_id, const char *trigger, const char *node_id);
/* Queues stored evaluations (an array) with the broker. */
void server_queue_evals(struct server *srv, const json_t *evals);
/* Job status derived from its allocations. */
const char *job_status(const json_t *job, const json_t *allocs);
json_t *job_summary(const json_t *job, const json_t *allocs);
/* allocs (an array) grouped by job: {"<ns>\x1f<job id>": [allocations]}, a
 * new object holding references to allocs' elements; job_allocs_of reads
 * it for a job record (NULL: the job has none). */
json_t *allocs_by_job(const json_t *allocs);
json_t *job_allocs_of(const json_t *byjob, const json_t *job);
/* Job JSON as readers see it: stored fields with status derived. */
json_t *job_for_reader(struct server *srv, const json_t *stored, struct herd_err *err);

/* ---- gc.c --------------------------------------------------------------- */

struct gc_counts {
	size_t jobs, evals, allocs;
};

/* Removes from the store what is old and ended (docs/operations.md,
 * "Garbage collection"), as of now (unix ns), each job's records in one
 * conditional commit (a record that changed meanwhile stays until the next
 * run).  Adds what it removed to *out.  0 or -errno with err. */
int gc_run(struct server *srv, int64_t now, struct gc_counts *out, struct herd_err *err);
/* Starts and stops the periodic collector (srv->gc). */
int gc_start(struct server *srv, struct herd_err *err);
void gc_stop(struct server *srv);

/* ---- periodic.c: the launcher of periodic jobs ---------------------------- */

/* Whether a stored job is a periodic parent (has a periodic block). */
bool job_is_periodic(const json_t *job);
/* objects.c: whether a stored job is a parameterized parent (has a
 * parameterized block; dispatched, never placed itself), and whether it
 * is either kind of parent: a job that places nothing itself, its
 * children run instead. */
bool job_is_parameterized(const json_t *job);
bool job_is_parent(const json_t *job);
/* The first launch of a stored periodic job strictly after t (unix
 * seconds), the earliest over its crons in its time zone; -1 when none
 * (never, or not periodic).  Pure: reads neither clock nor store. */
int64_t periodic_next_launch(const json_t *job, int64_t t);
/* The launcher: one thread, asleep until the earliest next launch of any
 * enabled, running periodic job; periodic_wake makes it read the jobs
 * again (a periodic job registered, changed, stopped or purged).  At
 * start it computes next launches from now: launches missed while the
 * server was down are not run. */
int periodic_start(struct server *srv, struct herd_err *err);
void periodic_stop(struct server *srv);
void periodic_wake(struct server *srv);
/* One pass of the launcher as of now (unix seconds): launches what is
 * due, skips a launch of a prohibit_overlap job whose earlier child is not
 * dead.  Returns the earliest next launch, or -1 when none.  Exposed so
 * that tests can drive it with a clock of their own. */
int64_t periodic_tick(struct server *srv, int64_t now);
/* The time of the last launch of job (ns, id) the launcher skipped
 * (prohibit_overlap), or 0. */
int64_t periodic_last_skipped(struct server *srv, const char *ns, const char *id);

/* routes_jobs.c: launches a child of the stored periodic job parent for
 * launch time t (unix seconds): id "<parent>-periodic-<t>", the parent's
 * job without periodic, registered as POST /v1/jobs registers (an
 * evaluation, placement, quotas).  With check_overlap, answers 409
 * periodic_overlap (nothing registered) while an earlier child is not
 * dead.  resp gets {"eval_id", "job_id", "index"} or the refusal; 0 or
 * -errno with err. */
int periodic_launch(struct server *srv, const json_t *parent, int64_t t, bool check_overlap,
		    struct http_response *resp, struct herd_err *err);

/* ---- routes ------------------------------------------------------------- */

/* The entries of GET /v1/gpus (routes_nodes.c): every device of every node
 * of nodes (node records of the caller's own, decorated here with their
 * heartbeats' stats), each with who holds it among allocs (only read:
 * shared records will do).  A new array. */
json_t *gpus_list(struct server *srv, json_t *nodes, const json_t *allocs);

int routes_jobs(struct server *srv, struct herd_err *err);
int routes_nodes(struct server *srv, struct herd_err *err);
int routes_allocs(struct server *srv, struct herd_err *err);
/* services.c: the service registry, kept in the allocations' records.
 * services_report_check checks the "services" of a status report (-EINVAL
 * with err); services_health is a reported service's health, the worst of
 * its checks' statuses ("passing" without checks). */
int routes_services(struct server *srv, struct herd_err *err);
int services_report_check(const json_t *services, struct herd_err *err);
const char *services_health(const json_t *service);
/* Whether s is an on_update value: require_healthy, ignore_warnings or
 * ignore. */
bool services_on_update_ok(const char *s);
/* Whether alloc is a canary of its deployment not yet promoted. */
bool services_alloc_canary(const json_t *alloc);
/* The tags and meta an instance of reported service svc of alloc lists
 * now (borrowed from svc; may be NULL when it has none): its canary_tags
 * and canary_meta, each when not empty, while alloc is an unpromoted
 * canary; else its tags and meta. */
void services_current_labels(const json_t *alloc, const json_t *svc, const json_t **tags,
			     const json_t **meta);
int routes_namespaces(struct server *srv, struct herd_err *err);
int routes_quotas(struct server *srv, struct herd_err *err);
int routes_acl(struct server *srv, struct herd_err *err);
int routes_usage(struct server *srv, struct herd_err *err);
int routes_vars(struct server *srv, struct herd_err *err); /* GET|PUT|DELETE /v1/var(s) */
int routes_keyring(struct server *srv, struct herd_err *err); /* /v1/operator/keyring/... */
/* workload_identity.c: POST /v1/allocation/:id/identity, and for acl.c the
 * variables rules of a workload token (a signed JWT of a task's default
 * identity, or the previous build's "wi.<alloc>.<task>.<secret>"):
 * {"<ns>": {"<path>": ACL_VAR_* bits}}, a new reference, or NULL when token
 * is not one, does not verify, has expired, or its allocation has ended. */
int routes_identity(struct server *srv, struct herd_err *err);
/* routes_oidc.c: GET /.well-known/jwks.json (and under /v1/), GET
 * /.well-known/openid-configuration; opens srv->jwt_keys. */
int routes_oidc(struct server *srv, struct herd_err *err);
/* The tokens' issuer: the configured one, else http(s)://<advertised
 * address> (a heap string). */
char *oidc_issuer(struct server *srv);
json_t *workload_identity_vars(struct server *srv, const char *token);
int routes_system(struct server *srv, struct herd_err *err); /* gc.c */
/* GET /v1/operator/snapshot (routes_operator.c). */
int routes_operator(struct server *srv, struct herd_err *err);
/* GET /v1/metrics (routes_metrics.c); routes_metrics_release frees what
 * it keeps between scrapes (at server stop). */
int routes_metrics(struct server *srv, struct herd_err *err);
void routes_metrics_release(struct server *srv);
/* Adds the process_* families of this process, read from /proc/self
 * (metrics_process.c); what cannot be read is left out. */
struct metrics;
void metrics_add_process(struct metrics *m);
/* Creates the namespace "default" when the store has none. */
int namespace_default_ensure(struct server *srv, struct herd_err *err);

#endif
