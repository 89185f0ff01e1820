/* routes_quotas: quota specifications (apply, read, status, delete) and
 * the fair queue's state. */
#include <errno.h>
#include <string.h>

#include "server/acl.h"
#include "server/server-int.h"
#include "server/teams.h"

static int post_quotas(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const json_t *in = json_object_get(req->body, "quota");
	struct herd_err err = { 0 };
	json_t *spec;
	int rc;
	if (!json_is_object(in))
		in = req->body;
	spec = quota_spec_check(in, &err);
	if (!spec)
		return http_error(resp, 400, "invalid_quota", "%s", err.msg);
	rc = named_put(srv, STORE_QUOTA, "quota", spec, resp);
	if (rc == 0)
		broker_unblock_all(&srv->broker); /* a larger quota lets queued work go */
	json_decref(spec);
	return rc;
}

static int get_quotas(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_reply_list(ctx, STORE_QUOTA, req, resp, NULL);
}

static int get_quota(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_reply_get(ctx, STORE_QUOTA, "quota", http_param(req, "name"), resp);
}

/* The namespaces that use quota `name`, in an array. */
static int users_of(struct server *srv, const char *name, json_t **out)
{
	json_t *list = NULL, *x;
	size_t i;
	int rc = store_list(srv->store, STORE_NAMESPACE, NULL, &list, NULL);
	if (rc < 0)
		return rc;
	*out = json_array();
	json_array_foreach(list, i, x)
		if (!strcmp(jstr(x, "quota", ""), name))
			json_array_append_new(*out, json_string(jstr(x, "name", "")));
	json_decref(list);
	return 0;
}

/* GET /v1/quota/:name/status: used and limit per resource, per namespace
 * that carries the quota (each namespace has the quota's limits to itself). */
static int get_quota_status(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *q = NULL, *users = NULL, *out, *nss, *n;
	size_t i;
	int rc = named_get(srv, STORE_QUOTA, "quota", http_param(req, "name"), resp, &q);
	if (rc)
		return rc > 0 ? 0 : rc;
	rc = users_of(srv, jstr(q, "name", ""), &users);
	if (rc < 0) {
		json_decref(q);
		return rc;
	}
	nss = json_array();
	json_array_foreach(users, i, n) {
		struct quota_state st;
		if (!acl_allows_ns(req, json_string_value(n), ACL_READ))
			continue;
		rc = quota_state_read(srv->store, json_string_value(n), &st, NULL);
		if (rc < 0)
			break;
		json_array_append_new(nss, quota_status_json(&st));
		quota_state_release(&st);
	}
	out = json_pack("{s:O, s:o}", "quota", q, "namespaces", nss);
	json_decref(q);
	json_decref(users);
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	http_reply(resp, 200, out);
	return 0;
}

static int delete_quota(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_key k = { NULL, http_param(req, "name"), 0 };
	json_t *q = NULL, *users = NULL;
	int rc = named_get(srv, STORE_QUOTA, "quota", k.id, resp, &q);
	if (rc)
		return rc > 0 ? 0 : rc;
	json_decref(q);
	rc = users_of(srv, k.id, &users);
	if (rc < 0)
		return rc;
	if (json_array_size(users)) {
		char *list = json_dumps(users, JSON_COMPACT);
		rc = http_error(resp, 409, "quota_in_use",
				"quota %s is attached to namespace(s) %s; detach it first "
				"(herd namespace apply NAME -quota \"\")", k.id, list);
		free(list);
		json_decref(users);
		return rc;
	}
	json_decref(users);
	return named_delete(srv, STORE_QUOTA, "quota", k.id, resp);
}

static int get_queue(struct http_request *req, struct http_response *resp, void *ctx)
{
	(void)req;
	http_reply(resp, 200, fair_queue_status(ctx));
	return 0;
}

int routes_quotas(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/quotas", get_quotas, HTTP_ROUTE_BLOCKING, ACL_NEED_QUOTA_READ },
		{ "POST", "/v1/quotas", post_quotas, HTTP_ROUTE_BODY, ACL_NEED_QUOTA_WRITE },
		{ "GET", "/v1/quotas/queue", get_queue, HTTP_ROUTE_BLOCKING | HTTP_ROUTE_MEMORY,
		  ACL_NEED_MANAGEMENT },
		{ "GET", "/v1/quota/:name", get_quota, HTTP_ROUTE_BLOCKING, ACL_NEED_QUOTA_READ },
		{ "GET", "/v1/quota/:name/status", get_quota_status, HTTP_ROUTE_BLOCKING, ACL_NEED_QUOTA_READ },
		{ "DELETE", "/v1/quota/:name", delete_quota, 0, ACL_NEED_QUOTA_WRITE },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
