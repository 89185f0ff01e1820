/* routes_nodes: what agents call (register, heartbeat, their allocations)
 * and what operators call (nodes, drain, eligibility, GPUs). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/disconnect.h"
#include "server/drain.h"
#include "server/idle_gpu.h"
#include "server/reservation.h"
#include "server/server-int.h"

#define NODE_ATTEMPTS 20

static int load_node(struct server *srv, const char *id, struct http_response *resp, json_t **node)
{
	struct store_key key = { NULL, id, 0 };
	int rc;
	if (!valid_id(id))
		return http_error(resp, 404, "node_not_found", "no node %s", id), 1;
	rc = store_get(srv->store, STORE_NODE, &key, node, NULL);
	if (rc == -ENOENT)
		return http_error(resp, 404, "node_not_found", "no node %s", id), 1;
	return rc;
}

static int post_register(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct herd_err err = { 0 };
	json_t *node = NULL, *evals = NULL;
	uint64_t idx = 0;
	int rc = node_from_request(req->body, &node, &err);

	if (rc < 0)
		return http_error(resp, 400, "invalid_node", "%s", err.msg);
	for (int attempt = 0; attempt < NODE_ATTEMPTS; attempt++) {
		struct store_key key = { NULL, jstr(node, "id", ""), 0 };
		struct store_batch b = STORE_BATCH_INIT;
		json_t *old = NULL;
		rc = store_get(srv->store, STORE_NODE, &key, &old, &err);
		if (rc < 0 && rc != -ENOENT)
			break;
		json_decref(evals);
		evals = json_array();
		json_object_set_new(node, "status", json_string("ready"));
		json_object_set_new(node, "status_description", json_string(""));
		json_object_set_new(node, "eligibility",
				    json_string(old ? jstr(old, "eligibility", "eligible") : "eligible"));
		json_object_set_new(node, "drain", json_boolean(old ? jbool(old, "drain", false) : false));
		/* a drain under way goes on through the agent's registration */
		if (old && json_object_get(old, "drain_strategy"))
			json_object_set(node, "drain_strategy", json_object_get(old, "drain_strategy"));
		if (old && json_object_get(old, "last_drain"))
			json_object_set(node, "last_drain", json_object_get(old, "last_drain"));
		store_batch_init(&b);
		store_batch_put(&b, STORE_NODE, node);
		store_batch_require_index(&b, STORE_NODE, &key, old ? (uint64_t)jint(old, "modify_index", 0) : 0);
		/* back from down: its unknown allocations too (disconnect.h) */
		rc = 0;
		if (old && !strcmp(jstr(old, "status", ""), "down"))
			rc = disconnect_node_up(srv->store, jstr(node, "id", ""), &b, evals, now_ns());
		/* joined, back, or its attributes changed: system jobs look again */
		if (rc >= 0)
			rc = system_node_evals(srv->store, jstr(node, "id", ""), &b, evals, &err);
		if (rc >= 0)
			rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		json_decref(old);
		if (rc != -ESTALE)
			break;
	}
	if (rc == 0) {
		json_t *devs = json_object_get(json_object_get(req->body, "node"), "devices");
		server_queue_evals(srv, evals);
		heartbeat_touch(srv, jstr(node, "id", ""), json_is_array(devs) ? devs : NULL);
		broker_unblock_all(&srv->broker); /* capacity may have appeared */
		reply_written(resp, idx, json_pack("{s:s, s:I, s:I}", "node_id", jstr(node, "id", ""),
						   "heartbeat_ttl", (json_int_t)srv->ttl_ns, "index",
						   (json_int_t)idx));
	} else if (rc == -ESTALE) {
		rc = http_error(resp, 409, "conflict", "node kept changing; try again");
	}
	json_decref(node);
	json_decref(evals);
	return rc;
}

/* Copies health from a heartbeat's devices into the stored node; returns
 * whether anything changed. */
static bool merge_health(json_t *node, const json_t *devices)
{
	bool changed = false;
	size_t i, j;
	json_t *hd, *nd;
	json_array_foreach(devices, i, hd) {
		json_t *h = json_object_get(hd, "healthy"), *r = json_object_get(hd, "health_reason");
		json_array_foreach(json_object_get(node, "devices"), j, nd) {
			if (strcmp(jstr(nd, "id", ""), jstr(hd, "id", "\x01")))
				continue;
			if (json_is_boolean(h) && !json_equal(h, json_object_get(nd, "healthy"))) {
				json_object_set(nd, "healthy", h);
				changed = true;
			}
			if (json_is_string(r) && json_string_length(r) <= 4096 &&
			    !json_equal(r, json_object_get(nd, "health_reason"))) {
				json_object_set(nd, "health_reason", r);
				changed = true;
			}
		}
	}
	return changed;
}

static int put_heartbeat(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id");
	json_t *devs = json_object_get(req->body, "devices");
	struct herd_err err = { 0 };
	uint64_t idx = req->index;
	int rc = 0;

	if (devs && !json_is_array(devs) && !json_is_null(devs))
		return http_error(resp, 400, "invalid_argument", "devices must be an array");
	for (int attempt = 0; attempt < NODE_ATTEMPTS; attempt++) {
		struct store_key key = { NULL, id, 0 };
		json_t *node = NULL, *evals = json_array();
		bool was_down, changed;
		rc = load_node(srv, id, resp, &node);
		if (rc) {
			json_decref(evals);
			return rc > 0 ? 0 : rc;
		}
		was_down = strcmp(jstr(node, "status", ""), "ready") != 0;
		changed = merge_health(node, devs);
		if (was_down || changed) {
			struct store_batch b = STORE_BATCH_INIT;
			json_object_set_new(node, "status", json_string("ready"));
			json_object_set_new(node, "status_description", json_string(""));
			store_batch_init(&b);
			store_batch_put(&b, STORE_NODE, node);
			store_batch_require_index(&b, STORE_NODE, &key, (uint64_t)jint(node, "modify_index", 0));
			/* back from down: its unknown allocations too (disconnect.h) */
			if (was_down)
				rc = disconnect_node_up(srv->store, id, &b, evals, now_ns());
			/* back, or a device's health changed: its system jobs look
			 * again (one whose GPU turned unhealthy stops there) */
			if (rc >= 0)
				rc = system_node_evals(srv->store, id, &b, evals, &err);
			if (rc >= 0)
				rc = store_commit(srv->store, &b, &idx, &err);
			store_batch_release(&b);
		}
		json_decref(node);
		if (rc == 0) {
			server_queue_evals(srv, evals);
			heartbeat_touch(srv, id, json_is_array(devs) ? devs : NULL);
			if (was_down || changed)
				broker_unblock_all(&srv->broker);
		}
		json_decref(evals);
		if (rc != -ESTALE)
			break;
	}
	if (rc < 0)
		return rc == -ESTALE ? http_error(resp, 409, "conflict", "node kept changing") : rc;
	return reply_written(resp, idx, json_pack("{s:I, s:I}", "heartbeat_ttl", (json_int_t)srv->ttl_ns,
						  "index", (json_int_t)idx));
}

/* Whether an agent may start alloc (so needs its job): it is to run and
 * has not ended (the agent's reconcile starts only those). */
static bool alloc_startable(const json_t *alloc)
{
	const char *cs = jstr(alloc, "client_status", "");
	return !strcmp(jstr(alloc, "desired_status", ""), "run") &&
	       (!strcmp(cs, "pending") || !strcmp(cs, "running"));
}

/* Adds "job" (the job version it runs, as GET /v1/job/:id/version/:v
 * answers it) to each allocation of list that the agent has not seen
 * (created after since; every one when since is 0) and may start.  Each
 * distinct job version is read once per answer, whatever the number of
 * its allocations.  An allocation whose version cannot be read (purged)
 * goes without: the agent falls back to asking for it.  The job goes only
 * to a token that could read it through GET /v1/job/:id/version/:v (node
 * write, an agent's, or read on the namespace): node read alone does not
 * reveal job specs. */
static int attach_jobs(struct server *srv, const struct http_request *req, json_t *list,
		       int64_t since)
{
	json_t *seen = json_object(), *al;
	bool node_write = acl_allows(req, "node", ACL_WRITE);
	size_t i;
	int rc = 0;

	json_array_foreach(list, i, al) {
		struct store_key key = { jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
					 jint(al, "job_version", -1) };
		json_t *job;
		char *k;
		if ((since && jint(al, "create_index", 0) <= since) || !alloc_startable(al) ||
		    key.version < 0 || !*key.id ||
		    (!node_write && !acl_allows_ns(req, key.ns, ACL_READ)))
			continue;
		k = xasprintf("%s\x1f%s\x1f%lld", key.ns, key.id, (long long)key.version);
		job = json_object_get(seen, k);
		if (!job) {
			int r = store_get_shared(srv->store, STORE_JOB_VERSION, &key, &job, NULL);
			if (r < 0 && r != -ENOENT) {
				free(k);
				rc = r;
				break;
			}
			/* null: looked for and absent, not looked for again */
			json_object_set_new(seen, k, r == 0 ? job : json_null());
		}
		if (job && json_is_object(job)) {
			/* al is a shared record: the answer's own shallow copy
			 * carries the job */
			json_t *own = json_copy(al);
			json_object_set(own, "job", job);
			json_array_set_new(list, i, own);
		}
		free(k);
	}
	json_decref(seen);
	return rc;
}

/* GET /v1/node/:id/allocations[?since=N][&include=job]: with since, only
 * the allocations the server changed after index N (placed, stopped,
 * lost, moved, updated: their alloc_modify_index, which the agent's own
 * status reports do not move), so that an agent long-polling with
 * ?index=N&since=N receives what it must act on, not its whole history
 * nor its own reports back.  X-Herd-Index is the index published before
 * the list is read, and every change up to it is in the list: a next
 * ?since=<that index> misses nothing.  With include=job, each allocation
 * the agent has not seen and may start carries its job version in "job"
 * (attach_jobs), which saves the agent a request per allocation. */
static int get_node_allocs(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id"), *since_arg = http_query(req, "since");
	const char *include = http_query(req, "include");
	struct store_filter f = { NULL, NULL, id };
	json_t *list = NULL;
	int64_t since = 0;
	int rc;
	if (since_arg && parse_int64(since_arg, 0, INT64_MAX, &since, NULL) < 0)
		return http_error(resp, 400, "invalid_argument",
				  "since must be an index (an integer >= 0)");
	if (include && *include && strcmp(include, "job"))
		return http_error(resp, 400, "invalid_argument",
				  "include must be \"job\" (got \"%.64s\")", include);
	{
		/* that the node exists: its index, not its record, which an
		 * agent's long poll would decode on every answer */
		struct store_key key = { NULL, id, 0 };
		uint64_t mi = 0;
		if (!valid_id(id))
			return http_error(resp, 404, "node_not_found", "no node %s", id);
		rc = store_get_index(srv->store, STORE_NODE, &key, &mi, NULL);
		if (rc == -ENOENT)
			return http_error(resp, 404, "node_not_found", "no node %s", id);
		if (rc < 0)
			return rc;
	}
	/* shared records: the answer only encodes them (attach_jobs copies
	 * the ones it adds to) */
	rc = store_list_allocs_server_changed_shared(srv->store, &f, (uint64_t)since, &list, NULL);
	if (rc == 0 && include && !strcmp(include, "job"))
		rc = attach_jobs(srv, req, list, since);
	if (rc < 0) {
		json_decref(list);
		return rc;
	}
	/* a client waiting past what it has (index >= since) waits for news;
	 * index=0 asks for an answer now */
	resp->nothing_new = since_arg && json_array_size(list) == 0 &&
			    req->wait_index >= (uint64_t)since;
	http_reply(resp, 200, list);
	return 0;
}

static int get_nodes(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *list = NULL, *n;
	size_t i;
	int rc = store_list(srv->store, STORE_NODE, NULL, &list, NULL);
	if (rc < 0)
		return rc;
	json_array_foreach(list, i, n)
		heartbeat_decorate(srv, n);
	http_reply(resp, 200, list);
	return 0;
}

static int get_node(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *node = NULL;
	int rc = load_node(srv, http_param(req, "id"), resp, &node);
	if (rc)
		return rc > 0 ? 0 : rc;
	heartbeat_decorate(srv, node);
	resv_decorate_node(srv, node);
	http_reply(resp, 200, node);
	return 0;
}

/* Eligibility: change the node; eligible again is capacity. */
static int set_node_flags(struct http_request *req, struct http_response *resp, struct server *srv)
{
	json_t *flag = json_object_get(req->body, "eligible");
	const char *id = http_param(req, "id");
	struct herd_err err = { 0 };
	int rc = 0;

	if (!json_is_boolean(flag))
		return http_error(resp, 400, "invalid_argument", "body must be {\"eligible\": true|false}");
	for (int attempt = 0; attempt < NODE_ATTEMPTS; attempt++) {
		struct store_key key = { NULL, id, 0 };
		struct store_batch b = STORE_BATCH_INIT;
		json_t *node = NULL, *evals;
		uint64_t idx = 0;

		rc = load_node(srv, id, resp, &node);
		if (rc)
			return rc > 0 ? 0 : rc;
		evals = json_array();
		json_object_set_new(node, "eligibility", json_string(json_is_true(flag) ? "eligible" : "ineligible"));
		store_batch_init(&b);
		store_batch_put(&b, STORE_NODE, node);
		store_batch_require_index(&b, STORE_NODE, &key, (uint64_t)jint(node, "modify_index", 0));
		if (json_is_true(flag)) /* eligible again: system jobs may place there */
			rc = system_node_evals(srv->store, id, &b, evals, &err);
		if (rc == 0)
			rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		json_decref(node);
		if (rc == 0)
			server_queue_evals(srv, evals);
		json_decref(evals);
		if (rc == 0) {
			if (json_is_true(flag))
				broker_unblock_all(&srv->broker);
			reply_written(resp, idx, json_pack("{s:I, s:[]}", "index", (json_int_t)idx, "eval_ids"));
		}
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict", "node kept changing; try again");
	return rc;
}

/* What POST /v1/node/:id/drain asks (drain.h): a drain with a strategy,
 * or its end. */
struct drain_ask {
	bool enable;
	int64_t deadline;      /* ns; 0: force, -1: none */
	bool ignore_system;
	bool mark_eligible;    /* on disable: eligible again */
};

/* Reads the body: {"drain_spec": {"deadline": ns, "ignore_system_jobs":
 * bool} | null, "mark_eligible": bool}, or the older {"enable": bool}
 * (true: everything stops now, as before deadlines; false: the drain
 * ends and the node is eligible again). */
static int drain_ask_read(const json_t *body, struct drain_ask *a, struct herd_err *err)
{
	const json_t *spec = json_object_get(body, "drain_spec"), *en = json_object_get(body, "enable");
	const json_t *me = json_object_get(body, "mark_eligible"), *dl, *is;

	memset(a, 0, sizeof(*a));
	if (me && !json_is_boolean(me))
		return herd_errf(err, -EINVAL, "mark_eligible must be a boolean");
	if (!spec && !json_is_boolean(en))
		return herd_errf(err, -EINVAL, "body must be {\"drain_spec\": {\"deadline\": ns, "
				 "\"ignore_system_jobs\": bool} | null, \"mark_eligible\": bool} "
				 "or {\"enable\": true|false}");
	if (!spec) {
		a->enable = json_is_true(en);
		a->mark_eligible = me ? json_is_true(me) : !a->enable;
		return 0;
	}
	if (json_is_null(spec)) {
		a->mark_eligible = json_is_true(me);
		return 0;
	}
	if (!json_is_object(spec))
		return herd_errf(err, -EINVAL, "drain_spec must be an object or null");
	dl = json_object_get(spec, "deadline");
	is = json_object_get(spec, "ignore_system_jobs");
	if (dl && !json_is_integer(dl))
		return herd_errf(err, -EINVAL, "drain_spec.deadline must be an integer of ns "
				 "(0: stop everything now, -1: no deadline)");
	if (is && !json_is_boolean(is))
		return herd_errf(err, -EINVAL, "drain_spec.ignore_system_jobs must be a boolean");
	a->enable = true;
	a->deadline = dl ? json_integer_value(dl) : DRAIN_DEFAULT_DEADLINE_NS;
	if (a->deadline < 0)
		a->deadline = -1;
	if (a->deadline > 10 * 366LL * 86400 * NS_PER_SEC)
		return herd_errf(err, -EINVAL, "drain_spec.deadline is more than ten years");
	a->ignore_system = json_is_true(is);
	return 0;
}

/* node (its own copy) as the drain ask leaves it, at now. */
static void drain_apply(json_t *node, const struct drain_ask *a, int64_t now)
{
	const json_t *old = json_object_get(node, "drain_strategy");
	bool was = jbool(node, "drain", false);
	int64_t started = was && json_is_object(old) ? jint(old, "started_at", now) : now;
	json_t *last;

	if (a->enable) {
		json_object_set_new(node, "drain", json_true());
		json_object_set_new(node, "eligibility", json_string("ineligible"));
		json_object_set_new(node, "drain_strategy",
			json_pack("{s:I, s:I, s:b, s:I}", "deadline", (json_int_t)a->deadline,
				  "force_deadline", (json_int_t)(a->deadline < 0 ? 0 : now + a->deadline),
				  "ignore_system_jobs", a->ignore_system, "started_at",
				  (json_int_t)started));
		json_object_set_new(node, "last_drain", json_pack("{s:s, s:I, s:I}", "status", "draining",
				    "started_at", (json_int_t)started, "ended_at", (json_int_t)0));
		return;
	}
	if (was) {
		last = json_deep_copy(json_object_get(node, "last_drain"));
		if (!json_is_object(last)) {
			json_decref(last);
			last = json_pack("{s:I}", "started_at", (json_int_t)started);
		}
		json_object_set_new(last, "status", json_string("canceled"));
		json_object_set_new(last, "ended_at", json_integer(now));
		json_object_set_new(node, "last_drain", last);
	}
	json_object_set_new(node, "drain", json_false());
	json_object_del(node, "drain_strategy");
	if (a->mark_eligible)
		json_object_set_new(node, "eligibility", json_string("eligible"));
}

/* POST /v1/node/:id/drain: starts (or changes) a drain, whose first step
 * (what may leave at once) goes in the same commit, or ends one. */
static int post_drain(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id");
	struct herd_err err = { 0 };
	struct drain_ask a;
	int rc = drain_ask_read(req->body, &a, &err);

	if (rc < 0)
		return http_error(resp, 400, "invalid_argument", "%s", err.msg);
	for (int attempt = 0; attempt < NODE_ATTEMPTS; attempt++) {
		struct store_key key = { NULL, id, 0 };
		struct store_batch b = STORE_BATCH_INIT;
		json_t *node = NULL, *evals = json_array(), *ids, *e;
		int64_t now = now_ns();
		uint64_t idx = 0;
		size_t i;

		rc = load_node(srv, id, resp, &node);
		if (rc) {
			json_decref(evals);
			return rc > 0 ? 0 : rc;
		}
		drain_apply(node, &a, now);
		store_batch_init(&b);
		store_batch_put(&b, STORE_NODE, node);
		store_batch_require_index(&b, STORE_NODE, &key, (uint64_t)jint(node, "modify_index", 0));
		rc = a.enable ? drain_node_step(srv, node, now, &b, evals, NULL)
			      : drain_node_cancel(srv, id, &b);
		if (rc >= 0 && !a.enable && a.mark_eligible) /* eligible again: system jobs */
			rc = system_node_evals(srv->store, id, &b, evals, &err);
		if (rc >= 0)
			rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			server_queue_evals(srv, evals);
			if (a.enable)
				drain_wake(srv);
			else if (a.mark_eligible) /* eligible again: capacity */
				broker_unblock_all(&srv->broker);
			ids = json_array();
			json_array_foreach(evals, i, e)
				json_array_append_new(ids, json_string(jstr(e, "id", "")));
			reply_written(resp, idx, json_pack("{s:I, s:o}", "index", (json_int_t)idx, "eval_ids", ids));
		}
		json_decref(node);
		json_decref(evals);
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict", "node kept changing; try again");
	return rc;
}

static int post_eligibility(struct http_request *req, struct http_response *resp, void *ctx)
{
	return set_node_flags(req, resp, ctx);
}

/* What the node's last heartbeat measured of holder h's tasks on device d
 * (its stats' task_memory, from the agent's GPU watch): tasks [{task,
 * gpu_memory_used_mib}] and their sum gpu_memory_used_mib; nothing when
 * the heartbeat carried none. */
static void holder_gpu_memory(const json_t *d, json_t *h)
{
	const json_t *tm = json_object_get(json_object_get(d, "stats"), "task_memory"), *t;
	json_t *tasks;
	int64_t sum = 0;
	size_t i;

	if (!json_is_array(tm))
		return;
	tasks = json_array();
	json_array_foreach(tm, i, t) {
		if (strcmp(jstr(t, "alloc_id", ""), jstr(h, "alloc_id", "")))
			continue;
		sum += jint(t, "memory_mib", 0);
		json_array_append_new(tasks, json_pack("{s:s, s:I}", "task", jstr(t, "task", ""),
						       "gpu_memory_used_mib",
						       (json_int_t)jint(t, "memory_mib", 0)));
	}
	json_object_set_new(h, "gpu_memory_used_mib", json_integer(sum));
	json_object_set_new(h, "tasks", tasks);
}

/* One entry of GET /v1/gpus: device d of node n and who holds it among
 * allocs. */
static json_t *gpu_entry(const json_t *n, json_t *d, const json_t *allocs)
{
	json_t *holders = json_array(), *al, *out;
	const json_t *foreign;
	int64_t compute = 0, mem = 0;
	size_t k;

	json_array_foreach(allocs, k, al) {
		size_t m;
		json_t *ad;
		if (!alloc_takes_capacity(al) || strcmp(jstr(al, "node_id", ""), jstr(n, "id", "")))
			continue;
		json_array_foreach(json_object_get(json_object_get(al, "resources"), "devices"), m, ad) {
			if (strcmp(jstr(ad, "id", ""), jstr(d, "id", "")))
				continue;
			compute += jint(ad, "compute_milli", 0);
			mem += jint(ad, "memory_mib", 0);
			json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:b}",
				"alloc_id", jstr(al, "id", ""), "job_id", jstr(al, "job_id", ""),
				"namespace", jstr(al, "namespace", ""), "task_group", jstr(al, "task_group", ""),
				"compute_milli", (json_int_t)jint(ad, "compute_milli", 0), "memory_mib",
				(json_int_t)jint(ad, "memory_mib", 0), "whole", jbool(ad, "whole", false));
			holder_gpu_memory(d, h);
			json_array_append_new(holders, h);
		}
	}
	foreign = json_object_get(json_object_get(d, "stats"), "foreign_memory_mib");
	/* sharing and replicas (most tenants at once, 0: no
	 * limit) repeated from the device next to the counts. */
	out = json_pack("{s:s, s:s, s:s, s:O, s:o, s:I, s:I, s:I, s:s, s:I}",
		"node_id", jstr(n, "id", ""), "node_name", jstr(n, "name", ""),
		"node_status", jstr(n, "status", ""), "device", d, "allocations", holders,
		"compute_used_milli", (json_int_t)compute, "memory_used_mib", (json_int_t)mem,
		"tenants", (json_int_t)json_array_size(holders),
		"sharing", jstr(d, "sharing", "exclusive"),
		"replicas", (json_int_t)jint(d, "replicas", 1));
	if (json_is_integer(foreign))
		json_object_set_new(out, "foreign_memory_mib", json_integer(json_integer_value(foreign)));
	return out;
}

json_t *gpus_list(struct server *srv, json_t *nodes, const json_t *allocs)
{
	json_t *out = json_array(), *n, *d;
	size_t i, j;

	json_array_foreach(nodes, i, n) {
		heartbeat_decorate(srv, n);
		json_array_foreach(json_object_get(n, "devices"), j, d)
			json_array_append_new(out, gpu_entry(n, d, allocs));
	}
	resv_decorate_gpus(srv, out);
	idle_gpu_decorate(srv, out);
	return out;
}

/* GET /v1/gpus: every device of every node, who holds it and how much. */
static int get_gpus(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *nodes = NULL, *allocs = NULL;
	int rc = store_list(srv->store, STORE_NODE, NULL, &nodes, NULL);
	if (!rc)
		rc = store_list(srv->store, STORE_ALLOC, NULL, &allocs, NULL);
	if (!rc)
		http_reply(resp, 200, gpus_list(srv, nodes, allocs));
	json_decref(nodes);
	json_decref(allocs);
	return rc;
}

int routes_nodes(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "POST", "/v1/node/register", post_register, HTTP_ROUTE_BODY, ACL_NEED_NODE_WRITE },
		{ "PUT", "/v1/node/:id/heartbeat", put_heartbeat, 0, ACL_NEED_NODE_WRITE },
		{ "GET", "/v1/node/:id/allocations", get_node_allocs, HTTP_ROUTE_BLOCKING, ACL_NEED_NODE_READ },
		{ "GET", "/v1/nodes", get_nodes, HTTP_ROUTE_BLOCKING, ACL_NEED_NODE_READ },
		{ "GET", "/v1/node/:id", get_node, HTTP_ROUTE_BLOCKING | HTTP_ROUTE_MEMORY, ACL_NEED_NODE_READ },
		{ "POST", "/v1/node/:id/drain", post_drain, HTTP_ROUTE_BODY, ACL_NEED_NODE_WRITE },
		{ "POST", "/v1/node/:id/eligibility", post_eligibility, HTTP_ROUTE_BODY, ACL_NEED_NODE_WRITE },
		{ "GET", "/v1/gpus", get_gpus, HTTP_ROUTE_BLOCKING | HTTP_ROUTE_MEMORY, ACL_NEED_NODE_READ },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
