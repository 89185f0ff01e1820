/* routes_allocs: allocations (read, and the status agents report),
 * evaluations (read), and what the agent says about itself. */
#include <errno.h>
#include <string.h>

#include "server/acl.h"
#include "server/server-int.h"

#define STATUS_ATTEMPTS 20

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

static int get_one(struct http_request *req, struct http_response *resp, struct server *srv,
		   enum store_kind kind, const char *code, const char *what)
{
	struct store_key key = { NULL, http_param(req, "id"), 0 };
	json_t *obj = NULL;
	int rc;
	if (!valid_id(key.id))
		return http_error(resp, 404, code, "no %s %s", what, key.id);
	rc = store_get(srv->store, kind, &key, &obj, NULL);
	/* one answer whether it is absent or in a namespace the token may
	 * not read: nothing about other teams leaks through ids */
	if (rc == 0 && !acl_allows_ns(req, jstr(obj, "namespace", "default"), ACL_READ)) {
		json_decref(obj);
		rc = -ENOENT;
	}
	if (rc == -ENOENT)
		return http_error(resp, 404, code, "no %s %s", what, key.id);
	if (rc < 0)
		return rc;
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
		json_t *alloc = NULL, *eval = NULL, *job = NULL;
		bool was_terminal, now_terminal;
		uint64_t idx = 0;

		if (!valid_id(key.id))
			return http_error(resp, 404, "alloc_not_found", "no allocation %s", key.id);
		rc = store_get(srv->store, STORE_ALLOC, &key, &alloc, &err);
		if (rc == -ENOENT)
			return http_error(resp, 404, "alloc_not_found", "no allocation %s", key.id);
		if (rc < 0)
			return rc;
		was_terminal = alloc_client_terminal(alloc);
		if (was_terminal && strcmp(jstr(alloc, "client_status", ""), "lost") &&
		    strcmp(jstr(alloc, "client_status", ""), st.client_status)) {
			rc = http_error(resp, 409, "invalid_transition", "allocation %s is %s already",
					key.id, jstr(alloc, "client_status", ""));
			json_decref(alloc);
			return rc;
		}
		json_object_set_new(alloc, "client_status", json_string(st.client_status));
		json_object_set_new(alloc, "client_description", json_string(st.client_description));
		if (st.task_states)
			json_object_set(alloc, "task_states", (json_t *)st.task_states);
		json_object_set_new(alloc, "modify_time", json_integer(now_ns()));
		now_terminal = alloc_client_terminal(alloc);
		/* GPU-hours count from the task's start to its end (routes_usage) */
		if (!strcmp(st.client_status, "running") && !json_object_get(alloc, "start_time"))
			json_object_set_new(alloc, "start_time", json_integer(now_ns()));
		if (now_terminal && !was_terminal)
			json_object_set_new(alloc, "end_time", json_integer(now_ns()));
		store_batch_init(&b);
		store_batch_put(&b, STORE_ALLOC, alloc);
		store_batch_require_index(&b, STORE_ALLOC, &key, (uint64_t)jint(alloc, "modify_index", 0));
		if (now_terminal && !was_terminal && !strcmp(jstr(alloc, "desired_status", ""), "run")) {
			struct store_key jk = { jstr(alloc, "namespace", "default"), jstr(alloc, "job_id", ""), 0 };
			bool batch = false;
			if (store_get(srv->store, STORE_JOB, &jk, &job, NULL) == 0)
				batch = !strcmp(jstr(job, "type", ""), "batch");
			if (job && (!strcmp(st.client_status, "failed") || !batch)) {
				eval = eval_new(jk.ns, jk.id, "alloc-failure", NULL);
				store_batch_put(&b, STORE_EVAL, eval);
			}
		}
		rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			if (eval)
				broker_enqueue(&srv->broker, jstr(eval, "id", ""), jstr(eval, "namespace", ""),
					       jstr(eval, "job_id", ""), 0);
			if (now_terminal && !was_terminal)
				broker_unblock_all(&srv->broker);
			reply_written(resp, idx, NULL);
		}
		json_decref(alloc);
		json_decref(eval);
		json_decref(job);
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
		{ "GET", "/v1/evaluations", get_evals, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/evaluation/:id", get_eval, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "GET", "/v1/agent/self", get_self, 0, ACL_NEED_AGENT_READ },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
