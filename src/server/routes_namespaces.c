/* routes_namespaces: namespaces (create or update, read, delete).  A
 * namespace names a team's jobs, allocations and evaluations, and may carry
 * a quota and a fair-share weight (docs/teams.md). */
#include <errno.h>
#include <string.h>

#include "common/strbuf.h"
#include "server/acl.h"
#include "server/server-int.h"
#include "server/teams.h"

int namespace_default_ensure(struct server *srv, struct herd_err *err)
{
	struct store_key k = { NULL, "default", 0 };
	json_t *rec = NULL;
	int rc = store_get(srv->store, STORE_NAMESPACE, &k, &rec, err);
	if (rc == 0) {
		json_decref(rec);
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	rec = json_pack("{s:s, s:s, s:s}", "name", "default", "description", "the default namespace",
			"quota", "");
	rc = store_put(srv->store, STORE_NAMESPACE, rec, NULL, err);
	json_decref(rec);
	return rc;
}

/* The namespace as stored from a request body ({"namespace": {...}} or
 * the object itself); name_from_path overrides. */
static json_t *namespace_from_body(struct server *srv, const json_t *body, const char *name_from_path,
				   struct http_response *resp)
{
	const json_t *o = json_object_get(body, "namespace");
	const char *name, *desc, *quota;
	json_t *w, *v;
	const char *k;
	if (!json_is_object(o))
		o = body;
	if (!json_is_object(o)) {
		http_error(resp, 400, "invalid_argument", "body must be {\"namespace\": {\"name\": ...}}");
		return NULL;
	}
	json_object_foreach((json_t *)o, k, v) {
		(void)v;
		if (strcmp(k, "name") && strcmp(k, "description") && strcmp(k, "quota") && strcmp(k, "weight") &&
		    strcmp(k, "create_index") && strcmp(k, "modify_index")) {
			http_error(resp, 400, "invalid_argument", "unknown namespace field \"%.64s\"", k);
			return NULL;
		}
	}
	name = name_from_path ? name_from_path : jstr(o, "name", NULL);
	desc = jstr(o, "description", "");
	quota = jstr(o, "quota", "");
	w = json_object_get(o, "weight");
	if (!teams_valid_name(name)) {
		http_error(resp, 400, "invalid_argument",
			   "namespace name must be 1..%d characters of A-Z a-z 0-9 _ . -", TEAMS_MAX_NAME);
		return NULL;
	}
	if (name_from_path && json_object_get(o, "name") && strcmp(jstr(o, "name", ""), name_from_path)) {
		http_error(resp, 400, "invalid_argument", "namespace name in the body differs from the path's");
		return NULL;
	}
	if (strlen(desc) > TEAMS_MAX_DESCRIPTION) {
		http_error(resp, 400, "invalid_argument", "description is longer than %d bytes", TEAMS_MAX_DESCRIPTION);
		return NULL;
	}
	if (w && !json_is_null(w) && (!json_is_number(w) || !(json_number_value(w) > 0) || json_number_value(w) > 1e6)) {
		http_error(resp, 400, "invalid_argument", "weight must be a number of GPUs above 0");
		return NULL;
	}
	if (*quota) {
		struct store_key qk = { NULL, quota, 0 };
		json_t *q = NULL;
		if (!teams_valid_name(quota) || store_get(srv->store, STORE_QUOTA, &qk, &q, NULL) < 0) {
			http_error(resp, 400, "invalid_argument", "no quota %.128s; apply it first", quota);
			return NULL;
		}
		json_decref(q);
	}
	v = json_pack("{s:s, s:s, s:s}", "name", name, "description", desc, "quota", quota);
	if (w && json_is_number(w))
		json_object_set_new(v, "weight", json_real(json_number_value(w)));
	return v;
}

static int apply_namespace(struct http_request *req, struct http_response *resp, struct server *srv,
			   const char *name)
{
	json_t *ns = namespace_from_body(srv, req->body, name, resp);
	int rc;
	if (!ns)
		return 0;
	if (!acl_allows_ns(req, jstr(ns, "name", ""), ACL_ADMIN)) {
		json_decref(ns);
		return acl_deny(resp);
	}
	rc = named_put(srv, STORE_NAMESPACE, "namespace", ns, resp);
	if (rc == 0)
		broker_unblock_all(&srv->broker); /* a new quota or weight may let work go */
	json_decref(ns);
	return rc;
}

static int post_namespaces(struct http_request *req, struct http_response *resp, void *ctx)
{
	return apply_namespace(req, resp, ctx, NULL);
}

static int post_namespace(struct http_request *req, struct http_response *resp, void *ctx)
{
	return apply_namespace(req, resp, ctx, http_param(req, "name"));
}

/* Lists show the namespaces the caller may read. */
static json_t *namespace_listed(struct http_request *req, json_t *rec)
{
	return acl_allows_ns(req, jstr(rec, "name", ""), ACL_READ) ? json_incref(rec) : NULL;
}

static int get_namespaces(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_reply_list(ctx, STORE_NAMESPACE, req, resp, namespace_listed);
}

static int get_namespace(struct http_request *req, struct http_response *resp, void *ctx)
{
	const char *name = http_param(req, "name");
	if (!acl_allows_ns(req, name, ACL_READ))
		return acl_deny(resp);
	return named_reply_get(ctx, STORE_NAMESPACE, "namespace", name, resp);
}

/* The check of a namespace's delete, inside its transaction: the
 * namespace holds no job.  Checked there rather than before the commit, so
 * that a job registered meanwhile (POST /v1/jobs requires the namespace's
 * record as it read it) cannot be left in a deleted namespace. */
/* A namespace's variables go before it (their secrets would outlive it,
 * readable again by whoever makes a namespace of that name). */
static int check_no_variables(struct store *s, const char *ns, struct herd_err *err)
{
	struct store_filter f = { .ns = ns };
	json_t *vars = NULL;
	int rc = store_list(s, STORE_VAR, &f, &vars, err);
	if (rc == 0 && json_array_size(vars))
		rc = herd_errf(err, -ENOTEMPTY,
			       "namespace %s still has %zu variable(s) (%s, ...); purge them first "
			       "(herd var purge -namespace %s PATH)", ns, json_array_size(vars),
			       jstr(json_array_get(vars, 0), "path", ""), ns);
	json_decref(vars);
	return rc;
}

static int check_namespace_empty(struct store *s, void *arg, struct herd_err *err)
{
	const char *ns = arg;
	struct store_filter f = { .ns = ns };
	struct strbuf sb = STRBUF_INIT;
	json_t *jobs = NULL, *x;
	size_t i;
	int rc = store_list(s, STORE_JOB, &f, &jobs, err);

	if (rc < 0 || json_array_size(jobs) == 0) {
		json_decref(jobs);
		return rc < 0 ? rc : check_no_variables(s, ns, err);
	}
	json_array_foreach(jobs, i, x) {
		if (i == 5) {
			strbuf_adds(&sb, ", ...");
			break;
		}
		strbuf_addf(&sb, "%s%s", i ? ", " : "", jstr(x, "id", ""));
	}
	rc = herd_errf(err, -ENOTEMPTY,
		       "namespace %s still has %zu job(s) (%s); stop and purge them first "
		       "(herd job stop -purge -namespace %s ID)",
		       ns, json_array_size(jobs), sb.buf, ns);
	strbuf_release(&sb);
	json_decref(jobs);
	return rc;
}

static int delete_namespace(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_key k = { NULL, http_param(req, "name"), 0 };
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0, "" };
	uint64_t idx = 0;
	int rc;

	if (!acl_allows_ns(req, k.id, ACL_ADMIN))
		return acl_deny(resp);
	if (!teams_valid_name(k.id))
		return http_error(resp, 404, "namespace_not_found", "no namespace %.128s", k.id);
	if (!strcmp(k.id, "default"))
		return http_error(resp, 400, "invalid_argument", "the default namespace cannot be deleted");
	store_batch_init(&b);
	store_batch_delete(&b, STORE_NAMESPACE, &k);
	store_batch_check(&b, check_namespace_empty, (void *)k.id);
	rc = store_commit(srv->store, &b, &idx, &err);
	store_batch_release(&b);
	if (rc == -ENOTEMPTY)
		return http_error(resp, 409, "namespace_not_empty", "%s", err.msg);
	if (rc == -ENOENT)
		return http_error(resp, 404, "namespace_not_found", "no namespace %.128s", k.id);
	if (rc < 0)
		return rc;
	return reply_written(resp, idx, NULL);
}

int routes_namespaces(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/namespaces", get_namespaces, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "POST", "/v1/namespaces", post_namespaces, HTTP_ROUTE_BODY, ACL_NEED_TOKEN },
		{ "GET", "/v1/namespace/:name", get_namespace, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "POST", "/v1/namespace/:name", post_namespace, HTTP_ROUTE_BODY, ACL_NEED_TOKEN },
		{ "DELETE", "/v1/namespace/:name", delete_namespace, 0, ACL_NEED_TOKEN },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
