/* routes_allocs: allocations (read, the status agents report, a user's
 * stop), evaluations (read), and what the agent says about itself. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/acl.h"
#include "common/xalloc.h"
#include "server/depends.h"
#include "server/server-int.h"

#define STATUS_ATTEMPTS 20
#define STOP_ATTEMPTS 20

static int get_list(struct http_request *req, struct http_response *resp, struct server *srv,
		    enum store_kind kind)
{
	const char *ns = req_namespace(req);
	struct store_filter f = { strcmp(ns, "*") ? ns : NULL, NULL, NULL };
	json_t *list = NULL;
	int rc = store_list(srv->store, kind, &f, &list, NULL);
	if (rc < 0)
		return rc;
	acl_filter_list(req, list);
	http_reply(resp, 200, list);
	return 0;
}

/* The level ?acl= asks of the token on the record's namespace: read (the
 * default), or submit for a node's client API that authorizes a change
 * (client_http.c: restart, signal) by asking this route.  -1 for anything
 * else. */
static int acl_query_level(const struct http_request *req)
{
	const char *v = http_query(req, "acl");
	if (!v || !strcmp(v, "read"))
		return ACL_READ;
	return !strcmp(v, "submit") ? ACL_SUBMIT : -1;
}

static int get_one(struct http_request *req, struct http_response *resp, struct server *srv,
		   enum store_kind kind, const char *code, const char *what)
{
	struct store_key key = { NULL, http_param(req, "id"), 0 };
	json_t *obj = NULL;
	int rc, acl_level = acl_query_level(req);
	if (acl_level < 0)
		return http_error(resp, 400, "invalid_argument", "acl must be read or submit");
	if (!valid_id(key.id))
		return http_error(resp, 404, code, "no %s %s", what, key.id);
	rc = store_get(srv->store, kind, &key, &obj, NULL);
	/* one answer whether it is absent or in a namespace the token may
	 * not read: nothing about other teams leaks through ids.  An agent's
	 * node token reads any allocation, as it reads job versions
	 * (ephemeral_disk { migrate } reads the one replaced, and the old
	 * node checks the one that replaces it). */
	if (rc == 0 && !acl_allows_ns(req, jstr(obj, "namespace", "default"), ACL_READ) &&
	    !(kind == STORE_ALLOC && acl_level == ACL_READ && acl_allows(req, "node", ACL_WRITE))) {
		json_decref(obj);
		rc = -ENOENT;
	}
	if (rc == -ENOENT)
		return http_error(resp, 404, code, "no %s %s", what, key.id);
	if (rc < 0)
		return rc;
	if (acl_level > ACL_READ && !acl_allows_ns(req, jstr(obj, "namespace", "default"), acl_level)) {
		json_decref(obj);
		return acl_deny(resp);
	}
	if (kind == STORE_ALLOC) {
		/* Where the allocation's logs are served (the node's client
		 * API): a reader of the namespace may lack node read. */
		struct store_key nk = { NULL, jstr(obj, "node_id", ""), 0 };
		json_t *node = NULL;
		if (*nk.id && store_get(srv->store, STORE_NODE, &nk, &node, NULL) == 0)
			json_object_set_new(obj, "node_http_addr",
					    json_string(jstr(node, "http_addr", "")));
		json_decref(node);
	}
	http_reply(resp, 200, obj);
	return 0;
}

static int get_allocs(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_list(req, resp, ctx, STORE_ALLOC);
}

static int get_alloc(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_one(req, resp, ctx, STORE_ALLOC, "alloc_not_found", "allocation");
}

static int get_evals(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_list(req, resp, ctx, STORE_EVAL);
}

static int get_eval(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_one(req, resp, ctx, STORE_EVAL, "eval_not_found", "evaluation");
}

/* One allocation's status change, prepared against the allocation as read
 * from the store: the writes are queued on a batch, and what must happen
 * once that batch is committed is kept here.  The single route and the
 * batch route share it, so both change allocations and make evaluations
 * the same way. */
struct status_change {
	json_t *alloc;  /* the allocation as it will be stored (owned) */
	json_t *eval;   /* an evaluation to enqueue after the commit, or NULL (owned) */
	bool freed;     /* it turned terminal: capacity freed */
};

static void status_change_release(struct status_change *ch)
{
	json_decref(ch->alloc);
	json_decref(ch->eval);
	ch->alloc = ch->eval = NULL;
	ch->freed = false;
}

/* The allocation a status change starts from: the caller's own object
 * (the change sets its top-level fields), a shallow copy of the shared
 * record, which costs neither a parse nor a deep copy once the record was
 * read before (the agent's allocation watch, the scheduler's view). */
static int read_alloc(struct server *srv, const struct store_key *key, json_t **out,
		      struct herd_err *err)
{
	json_t *shared = NULL;
	int rc = store_get_shared(srv->store, STORE_ALLOC, key, &shared, err);
	if (rc < 0)
		return rc;
	*out = json_copy(shared);
	json_decref(shared);
	return 0;
}

/* Applies st to alloc (read_alloc's: the change sets only top-level
 * fields, and takes the reference) and queues its writes on b: the allocation, on condition
 * that it has not changed since it was read, and for a failure (or a
 * service that ended) an alloc-failure evaluation that reschedules it per
 * the group's policy.  Returns 0, or -EEXIST with err when the transition
 * is refused (a finished allocation cannot go back; a lost one can): then
 * nothing is queued and alloc is released. */
static int status_change_prepare(struct server *srv, json_t *alloc, const struct alloc_status *st,
				 struct store_batch *b, struct status_change *ch,
				 struct herd_err *err)
{
	struct store_key key = { NULL, jstr(alloc, "id", ""), 0 };
	bool was_terminal = alloc_client_terminal(alloc), now_terminal;
	const char *cs = jstr(alloc, "client_status", "");

	memset(ch, 0, sizeof(*ch));
	if (was_terminal && strcmp(cs, "lost") && strcmp(cs, st->client_status)) {
		herd_errf(err, -EEXIST, "allocation %s is %s already", key.id, cs);
		json_decref(alloc);
		return -EEXIST;
	}
	ch->alloc = alloc;
	json_object_set_new(alloc, "client_status", json_string(st->client_status));
	json_object_set_new(alloc, "client_description", json_string(st->client_description));
	if (st->task_states)
		json_object_set(alloc, "task_states", (json_t *)st->task_states);
	json_object_set_new(alloc, "modify_time", json_integer(now_ns()));
	now_terminal = alloc_client_terminal(alloc);
	/* the service registry (services.c): what the agent registered, gone
	 * with the allocation's end */
	if (now_terminal)
		json_object_del(alloc, "services");
	else if (st->services)
		json_object_set(alloc, "services", (json_t *)st->services);
	/* the group's time limit as the agent counts it; reached: reconcile
	 * does not reschedule it */
	if (st->time_limit)
		json_object_set(alloc, "time_limit", (json_t *)st->time_limit);
	/* GPU-hours count from the task's start to its end (routes_usage) */
	if (!strcmp(st->client_status, "running") && !json_object_get(alloc, "start_time"))
		json_object_set_new(alloc, "start_time", json_integer(now_ns()));
	if (now_terminal && !was_terminal)
		json_object_set_new(alloc, "end_time", json_integer(now_ns()));
	/* an allocation of a rolling deployment that became ready: the
	 * deployment looks again (deployment.c decides when it is healthy) */
	bool ready = deploy_alloc_report(alloc, now_ns());
	/* the agent's own report: its allocation watch is not sent it back
	 * (alloc_modify_index stays) */
	store_batch_put_report(b, STORE_ALLOC, alloc);
	store_batch_require_index(b, STORE_ALLOC, &key, (uint64_t)jint(alloc, "modify_index", 0));
	ch->freed = now_terminal && !was_terminal;
	if (ch->freed && !strcmp(jstr(alloc, "desired_status", ""), "run")) {
		struct store_key jk = { jstr(alloc, "namespace", "default"), jstr(alloc, "job_id", ""), 0 };
		json_t *job = NULL;
		bool batch = false;
		if (store_get_shared(srv->store, STORE_JOB, &jk, &job, NULL) == 0)
			batch = !strcmp(jstr(job, "type", ""), "batch");
		if (job && (!strcmp(st->client_status, "failed") || !batch)) {
			ch->eval = eval_new(jk.ns, jk.id, "alloc-failure", NULL);
			store_batch_put(b, STORE_EVAL, ch->eval);
		}
		json_decref(job);
	}
	if (ready && !ch->eval) {
		ch->eval = eval_new(jstr(alloc, "namespace", "default"), jstr(alloc, "job_id", ""),
				    "deployment-watcher", NULL);
		store_batch_put(b, STORE_EVAL, ch->eval);
	}
	return 0;
}

/* What follows a committed change: its evaluation goes to the broker.
 * (Blocked evaluations are woken once per commit by the caller.) */
static void status_change_committed(struct server *srv, const struct status_change *ch)
{
	if (ch->eval)
		broker_enqueue(&srv->broker, jstr(ch->eval, "id", ""), jstr(ch->eval, "namespace", ""),
			       jstr(ch->eval, "job_id", ""), 0);
	/* the job may have ended: jobs that depend on it look again */
	if (ch->freed)
		depends_job_changed(srv, jstr(ch->alloc, "namespace", "default"),
				    jstr(ch->alloc, "job_id", ""));
}

/* PUT /v1/allocation/:id/status.  A terminal status frees capacity
 * (blocked evaluations retry); a failure, or a service that ended, gets an
 * evaluation that reschedules it per the group's policy. */
static int put_alloc_status(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct alloc_status st;
	struct herd_err err = { 0 };
	int rc = alloc_status_from_request(req->body, &st, &err);

	if (rc < 0)
		return http_error(resp, 400, "invalid_argument", "%s", err.msg);
	for (int attempt = 0; attempt < STATUS_ATTEMPTS; attempt++) {
		struct store_key key = { NULL, http_param(req, "id"), 0 };
		struct store_batch b = STORE_BATCH_INIT;
		struct status_change ch;
		json_t *alloc = NULL;
		uint64_t idx = 0;

		if (!valid_id(key.id))
			return http_error(resp, 404, "alloc_not_found", "no allocation %s", key.id);
		rc = read_alloc(srv, &key, &alloc, &err);
		if (rc == -ENOENT)
			return http_error(resp, 404, "alloc_not_found", "no allocation %s", key.id);
		if (rc < 0)
			return rc;
		store_batch_init(&b);
		if (status_change_prepare(srv, alloc, &st, &b, &ch, &err) < 0) {
			store_batch_release(&b);
			return http_error(resp, 409, "invalid_transition", "%s", err.msg);
		}
		rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			status_change_committed(srv, &ch);
			if (ch.freed)
				broker_unblock_all(&srv->broker);
			reply_written(resp, idx, NULL);
		}
		status_change_release(&ch);
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict", "allocation kept changing; try again");
	return rc;
}

/* The answer of one entry of a batch that was refused. */
static json_t *entry_error(const char *id, const char *code, const char *msg)
{
	return json_pack("{s:s, s:{s:s, s:s}}", "id", id, "error", "code", code, "message", msg);
}

/* PUT /v1/node/:id/allocations/status: the statuses an agent has to
 * report, many allocations in one request and one store commit (an agent
 * running many short tasks would otherwise pay a request and a commit per
 * change).  Each entry is checked and refused on its own (unknown,
 * malformed, not on this node, a refused transition); the others are
 * written together.  When an allocation changed between the read and the
 * commit, the whole set is read and prepared again. */
static int put_node_allocs_status(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *node_id = http_param(req, "id");
	struct alloc_status_entry *v = NULL;
	struct status_change *ch = NULL;
	struct herd_err err = { 0 };
	json_t *results = NULL;
	size_t n = 0;
	int rc;

	if (!valid_id(node_id))
		return http_error(resp, 404, "node_not_found", "no node %s", node_id);
	rc = alloc_status_batch_from_request(req->body, &v, &n, &err);
	if (rc < 0)
		return http_error(resp, 400, "invalid_argument", "%s", err.msg);
	{
		/* that the node exists: its index, not its record */
		struct store_key nk = { NULL, node_id, 0 };
		uint64_t mi = 0;
		rc = store_get_index(srv->store, STORE_NODE, &nk, &mi, NULL);
		if (rc == -ENOENT) {
			free(v);
			return http_error(resp, 404, "node_not_found", "no node %s", node_id);
		}
		if (rc < 0)
			goto out;
	}
	ch = n ? xcalloc(n, sizeof(*ch)) : NULL;
	for (int attempt = 0; attempt < STATUS_ATTEMPTS; attempt++) {
		struct store_batch b = STORE_BATCH_INIT;
		uint64_t idx = store_index(srv->store);
		bool freed = false, any = false;

		json_decref(results);
		results = json_array();
		store_batch_init(&b);
		rc = 0;
		for (size_t i = 0; i < n && rc == 0; i++) {
			struct store_key key = { NULL, v[i].id, 0 };
			json_t *alloc = NULL;
			struct herd_err e = { 0 };
			int r;

			if (v[i].err.code) {
				json_array_append_new(results, entry_error(v[i].id, "invalid_argument",
									   v[i].err.msg));
				continue;
			}
			r = valid_id(key.id) ? read_alloc(srv, &key, &alloc, &e) : -ENOENT;
			/* an agent reports only what runs on its own node */
			if (r == 0 && strcmp(jstr(alloc, "node_id", ""), node_id)) {
				char msg[320];
				snprintf(msg, sizeof(msg), "allocation %s is not placed on node %s",
					 key.id, node_id);
				json_decref(alloc);
				json_array_append_new(results,
						      entry_error(v[i].id, "alloc_not_on_node", msg));
				continue;
			}
			if (r == -ENOENT) {
				char msg[320];
				snprintf(msg, sizeof(msg), "no allocation %s", key.id);
				json_array_append_new(results, entry_error(v[i].id, "alloc_not_found", msg));
				continue;
			}
			if (r < 0) {
				rc = r;
				break;
			}
			if (status_change_prepare(srv, alloc, &v[i].st, &b, &ch[i], &e) < 0) {
				json_array_append_new(results,
						      entry_error(v[i].id, "invalid_transition", e.msg));
				continue;
			}
			json_array_append_new(results, json_pack("{s:s}", "id", v[i].id));
			freed |= ch[i].freed;
			any = true;
		}
		if (rc == 0 && any)
			rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			for (size_t i = 0; i < n; i++)
				status_change_committed(srv, &ch[i]);
			if (freed)
				broker_unblock_all(&srv->broker);
			reply_written(resp, idx, json_pack("{s:I, s:O}", "index", (json_int_t)idx,
							   "results", results));
		}
		for (size_t i = 0; i < n; i++)
			status_change_release(&ch[i]);
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		rc = http_error(resp, 409, "conflict", "allocations kept changing; try again");
out:
	json_decref(results);
	free(ch);
	free(v);
	return rc;
}

/* Whether s has the shape of an allocation id: a UUID as new_id writes it
 * (36 characters, hex digits and dashes at 8, 13, 18, 23). */
static bool alloc_id_shaped(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++) {
		bool dash = n == 8 || n == 13 || n == 18 || n == 23;
		if (n >= ID_LEN - 1 || (dash ? s[n] != '-' : !strchr("0123456789abcdefABCDEF", s[n])))
			return false;
	}
	return n == ID_LEN - 1;
}

/* Why alloc cannot be stopped by a user (a message into why), or NULL
 * when it can: it must still be meant to run and not have ended. */
static const char *stop_refusal(const json_t *alloc, char *why, size_t size)
{
	const char *id = jstr(alloc, "id", "");
	if (strcmp(jstr(alloc, "desired_status", "run"), "run")) {
		snprintf(why, size, "allocation %s is being stopped already (%s): nothing to stop", id,
			 jstr(alloc, "desired_description", "stop"));
		return why;
	}
	if (alloc_client_terminal(alloc)) {
		snprintf(why, size, "allocation %s is %s already: nothing to stop", id,
			 jstr(alloc, "client_status", ""));
		return why;
	}
	return NULL;
}

/* POST /v1/allocation/:id/stop[?no_shutdown_delay=true]: stops one
 * allocation and has it replaced ("migrate"): its desired status becomes
 * stop (reconcile_user_stop; no_shutdown_delay: alloc_set_no_shutdown_delay) and
 * an alloc-stop evaluation places the replacement, on any node that fits.
 * One that ended or is being stopped already is refused (409) rather than
 * answered as a no-op: a caller that meant to move a running instance
 * learns that nothing moved. */
static int post_alloc_stop(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *nd = http_query(req, "no_shutdown_delay");
	bool no_delay = nd && (!strcmp(nd, "true") || !strcmp(nd, "1"));
	struct herd_err err = { 0 };
	int rc = 0;

	if (!alloc_id_shaped(http_param(req, "id")))
		return http_error(resp, 400, "invalid_argument",
				  "\"%.64s\" is not an allocation id (a UUID)", http_param(req, "id"));
	for (int attempt = 0; attempt < STOP_ATTEMPTS; attempt++) {
		struct store_key key = { NULL, http_param(req, "id"), 0 };
		struct store_batch b = STORE_BATCH_INIT;
		json_t *alloc = NULL, *stopped, *eval;
		const char *ns;
		char why[320];
		uint64_t idx = 0;

		rc = store_get(srv->store, STORE_ALLOC, &key, &alloc, &err);
		/* as the reads: one answer whether absent or not readable */
		if (rc == 0 && !acl_allows_ns(req, jstr(alloc, "namespace", "default"), ACL_READ)) {
			json_decref(alloc);
			rc = -ENOENT;
		}
		if (rc == -ENOENT)
			return http_error(resp, 404, "alloc_not_found", "no allocation %s", key.id);
		if (rc < 0)
			return rc;
		ns = jstr(alloc, "namespace", "default");
		if (!acl_allows_ns(req, ns, ACL_SUBMIT)) {
			json_decref(alloc);
			return acl_deny(resp);
		}
		if (stop_refusal(alloc, why, sizeof(why))) {
			json_decref(alloc);
			return http_error(resp, 409, "invalid_transition", "%s", why);
		}
		stopped = reconcile_user_stop(alloc, now_ns());
		if (no_delay)
			alloc_set_no_shutdown_delay(stopped);
		eval = eval_new(ns, jstr(alloc, "job_id", ""), "alloc-stop", NULL);
		store_batch_init(&b);
		/* a server-side change: the node's watch hears of it */
		store_batch_put(&b, STORE_ALLOC, stopped);
		store_batch_require_index(&b, STORE_ALLOC, &key, (uint64_t)jint(alloc, "modify_index", 0));
		store_batch_put(&b, STORE_EVAL, eval);
		rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			broker_enqueue(&srv->broker, jstr(eval, "id", ""), ns, jstr(eval, "job_id", ""), 0);
			reply_written(resp, idx, json_pack("{s:s, s:I}", "eval_id", jstr(eval, "id", ""),
							   "index", (json_int_t)idx));
		}
		json_decref(eval);
		json_decref(stopped);
		json_decref(alloc);
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict", "allocation kept changing; try again");
	return rc;
}

static int get_self(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *body;
	(void)req;
	pthread_mutex_lock(&srv->lock);
	body = json_pack("{s:O, s:s, s:s, s:b, s:b}", "config", srv->self_config, "node_id",
			 srv->self_node_id, "version", HERD_VERSION_STRING, "server", 1, "client",
			 srv->cfg.client_enabled);
	pthread_mutex_unlock(&srv->lock);
	http_reply(resp, 200, body);
	return 0;
}

int routes_allocs(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/allocations", get_allocs, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/allocation/:id", get_alloc, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "PUT", "/v1/allocation/:id/status", put_alloc_status, HTTP_ROUTE_BODY, ACL_NEED_NODE_WRITE },
		{ "POST", "/v1/allocation/:id/stop", post_alloc_stop, 0, ACL_NEED_TOKEN },
		{ "PUT", "/v1/node/:id/allocations/status", put_node_allocs_status, HTTP_ROUTE_BODY,
		  ACL_NEED_NODE_WRITE },
		{ "GET", "/v1/evaluations", get_evals, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/evaluation/:id", get_eval, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "GET", "/v1/agent/self", get_self, 0, ACL_NEED_AGENT_READ },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
