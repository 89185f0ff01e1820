/* routes_vars: variables (docs/api.md, "Variables"): list, read, write
 * with check-and-set, delete.  Records and limits: vars.h; who may do
 * what: acl_allows_var (acl.c). */
#include <errno.h>
#include <string.h>

#include "common/units.h"
#include "server/acl.h"
#include "server/server-int.h"
#include "server/vars.h"
#include "server/vars_keyring.h"

/* The fields a put's body may hold: items, and what a variable read back
 * carries (so that a get piped into a put works); namespace and path, when
 * given, must be the request's. */
static const char *const put_fields[] = { "items", "namespace", "path", "create_index",
					  "modify_index", "create_time", "modify_time", NULL };

/* ?cas=N into *cas (-1: none); 1 after answering 400. */
static int read_cas(struct http_request *req, struct http_response *resp, int64_t *cas)
{
	const char *v = http_query(req, "cas");
	struct herd_err err = { 0 };
	*cas = -1;
	if (v && parse_int64(v, 0, INT64_MAX, cas, &err))
		return http_error(resp, 400, "invalid_argument", "cas: %s", err.msg), 1;
	return 0;
}

/* The path parameter checked; 1 after answering 400. */
static int read_path(struct http_request *req, struct http_response *resp, const char **path)
{
	struct herd_err err = { 0 };
	*path = http_param(req, "path");
	if (vars_check_path(*path, &err))
		return http_error(resp, 400, "invalid_variable", "%s", err.msg), 1;
	return 0;
}

/* 409: the check-and-set index did not match; the body carries the
 * current variable's metadata ("conflict": null when there is none). */
static int reply_conflict(struct server *srv, const struct store_key *k, int64_t cas,
			  struct http_response *resp)
{
	json_t *cur = NULL;
	int rc = store_get(srv->store, STORE_VAR, k, &cur, NULL);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	http_error(resp, 409, "cas_conflict",
		   "variable %s in namespace %s is at index %lld, not %lld", k->id, k->ns,
		   (long long)(cur ? jint(cur, "modify_index", 0) : 0), (long long)cas);
	json_object_set_new(resp->body, "conflict", cur ? vars_metadata(cur) : json_null());
	json_decref(cur);
	return 0;
}

static int get_vars(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *ns = req_namespace(req), *prefix = http_query(req, "prefix");
	struct store_filter f = { strcmp(ns, "*") ? ns : NULL, NULL, NULL };
	json_t *list = NULL, *out, *v;
	size_t i;
	int rc;

	if (!prefix)
		prefix = "";
	if (!vars_prefix_valid(prefix))
		return http_error(resp, 400, "invalid_argument",
				  "prefix: at most %d bytes of A-Z a-z 0-9 _ . - ~ /", VARS_MAX_PATH);
	if ((rc = store_list_shared(srv->store, STORE_VAR, &f, &list, NULL)) < 0)
		return rc;
	out = json_array();
	json_array_foreach(list, i, v) {
		const char *path = jstr(v, "path", "");
		if (strncmp(path, prefix, strlen(prefix)) ||
		    !acl_allows_var(req, jstr(v, "namespace", ""), path, ACL_VAR_LIST))
			continue;
		json_array_append_new(out, vars_metadata(v)); /* never the items */
	}
	json_decref(list);
	http_reply(resp, 200, out);
	return 0;
}

/* The variable as the API shows it: its items opened (a new reference);
 * NULL after answering 500 with why (another key, damaged data). */
static json_t *opened(struct server *srv, json_t *var, struct http_response *resp)
{
	struct herd_err err = { 0 };
	json_t *items = vars_keyring_unseal(&srv->vars_ring, jstr(var, "namespace", ""),
					    jstr(var, "path", ""),
					    json_object_get(var, "items_sealed"), &err), *out;
	if (!items)
		return http_error(resp, 500, "variable_sealed", "%s", err.msg), NULL;
	out = vars_metadata(var);
	json_object_set_new(out, "items", items);
	return out;
}

static int get_var(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_key k = { req_namespace(req), NULL, 0 };
	json_t *var = NULL;
	int rc;

	if (read_path(req, resp, &k.id))
		return 0;
	if (!acl_allows_var(req, k.ns, k.id, ACL_VAR_READ))
		return acl_deny(resp);
	rc = store_get(srv->store, STORE_VAR, &k, &var, NULL);
	if (rc == -ENOENT)
		return http_error(resp, 404, "variable_not_found", "no variable %s in namespace %s",
				  k.id, k.ns);
	if (rc < 0)
		return rc;
	json_t *out = opened(srv, var, resp);
	json_decref(var);
	if (out)
		http_reply(resp, 200, out);
	return 0;
}

/* The items of a put's body, checked against the request; NULL after
 * answering 400. */
static const json_t *put_items(struct http_request *req, const struct store_key *k,
			       struct http_response *resp)
{
	struct herd_err err = { 0 };
	const json_t *items = json_object_get(req->body, "items");
	const char *f;
	json_t *v;

	if (!json_is_object(req->body))
		return http_error(resp, 400, "invalid_variable", "the body must be an object"), NULL;
	json_object_foreach(req->body, f, v) {
		bool known = false;
		for (size_t i = 0; put_fields[i]; i++)
			known = known || !strcmp(put_fields[i], f);
		if (!known)
			return http_error(resp, 400, "invalid_variable",
					  "unknown field \"%.64s\" (a variable is {\"items\": "
					  "{\"key\": \"value\"}})", f), NULL;
	}
	if ((json_object_get(req->body, "namespace") &&
	     strcmp(jstr(req->body, "namespace", ""), k->ns)) ||
	    (json_object_get(req->body, "path") && strcmp(jstr(req->body, "path", ""), k->id)))
		return http_error(resp, 400, "invalid_variable",
				  "the body's namespace and path must be the request's (%s, %s)",
				  k->ns, k->id), NULL;
	if (vars_check_items(items, &err))
		return http_error(resp, 400, "invalid_variable", "%s", err.msg), NULL;
	return items;
}

/* One try of a put: reads the namespace's and the variable's indexes,
 * commits on condition that neither moved (with cas >= 0: that the
 * variable is at cas).  0 after answering; -ESTALE when a condition
 * failed (nothing answered); another -errno, or 0 after answering 400. */
static int put_once(struct server *srv, const struct store_key *k, const json_t *items,
		    int64_t cas, struct http_response *resp)
{
	struct store_key nk = { NULL, k->ns, 0 };
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0 };
	json_t *old = NULL, *rec, *sealed;
	uint64_t ns_index = 0, idx = 0;
	int rc = store_get_index(srv->store, STORE_NAMESPACE, &nk, &ns_index, NULL);

	if (rc == -ENOENT)
		return http_error(resp, 400, "namespace_not_found",
				  "namespace %s does not exist; create it with herd namespace apply %s",
				  k->ns, k->ns);
	if (rc < 0)
		return rc;
	rc = store_get(srv->store, STORE_VAR, k, &old, NULL);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!(sealed = vars_keyring_seal(&srv->vars_ring, k->ns, k->id, items, &err))) {
		json_decref(old);
		return herd_errf(&err, -EIO, "%s", err.msg);
	}
	rec = vars_record(k->ns, k->id, items, old, now_ns());
	/* the store gets the items sealed only; the answer, as written */
	json_object_del(rec, "items");
	json_object_set_new(rec, "items_sealed", sealed);
	/* the namespace still there, and with ?cas= the variable as asked;
	 * without, the variable as read (its create_time kept right) */
	store_batch_require_index(&b, STORE_NAMESPACE, &nk, ns_index);
	store_batch_require_index(&b, STORE_VAR, k,
				  cas >= 0 ? (uint64_t)cas
					   : (uint64_t)(old ? jint(old, "modify_index", 0) : 0));
	store_batch_put(&b, STORE_VAR, rec);
	rc = store_commit(srv->store, &b, &idx, NULL);
	store_batch_release(&b);
	if (rc == 0) {
		json_object_set_new(rec, "create_index",
				    json_integer(old ? jint(old, "create_index", 0) : (json_int_t)idx));
		json_object_set_new(rec, "modify_index", json_integer((json_int_t)idx));
		json_object_del(rec, "items_sealed");
		json_object_set(rec, "items", (json_t *)items);
		reply_written(resp, idx, json_incref(rec));
	}
	json_decref(rec);
	json_decref(old);
	return rc;
}

static int put_var(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_key k = { req_namespace(req), NULL, 0 };
	const json_t *items;
	int64_t cas;
	int rc;

	if (read_path(req, resp, &k.id) || read_cas(req, resp, &cas))
		return 0;
	if (!acl_allows_var(req, k.ns, k.id, ACL_VAR_WRITE))
		return acl_deny(resp);
	if (!(items = put_items(req, &k, resp)))
		return 0;
	/* without ?cas= the last writer wins: a write between the read and
	 * the commit only makes it read again */
	for (int attempt = 0;; attempt++) {
		rc = put_once(srv, &k, items, cas, resp);
		if (rc != -ESTALE || cas >= 0 || attempt == 4)
			break;
	}
	if (rc == -ESTALE && cas >= 0)
		return reply_conflict(srv, &k, cas, resp);
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict",
				  "variable %s kept changing while being written; try again", k.id);
	return rc;
}

static int delete_var(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_key k = { req_namespace(req), NULL, 0 };
	struct store_batch b = STORE_BATCH_INIT;
	uint64_t idx = 0;
	int64_t cas;
	int rc;

	if (read_path(req, resp, &k.id) || read_cas(req, resp, &cas))
		return 0;
	if (!acl_allows_var(req, k.ns, k.id, ACL_VAR_DESTROY))
		return acl_deny(resp);
	if (cas == 0) /* only if absent: nothing to delete */
		return reply_conflict(srv, &k, cas, resp);
	if (cas > 0)
		store_batch_require_index(&b, STORE_VAR, &k, (uint64_t)cas);
	store_batch_delete(&b, STORE_VAR, &k);
	rc = store_commit(srv->store, &b, &idx, NULL);
	store_batch_release(&b);
	if (rc == -ESTALE)
		return reply_conflict(srv, &k, cas, resp);
	if (rc == -ENOENT)
		return http_error(resp, 404, "variable_not_found", "no variable %s in namespace %s",
				  k.id, k.ns);
	if (rc < 0)
		return rc;
	return reply_written(resp, idx, NULL);
}

int routes_vars(struct server *srv, struct herd_err *err)
{
	/* the key at start: a data dir whose key cannot be read stops the
	 * server here, not at the first variable */
	int rc = vars_keyring_open(&srv->vars_ring, srv->data_dir, err);
	if (rc < 0)
		return rc;
	/* ACL: each handler asks acl_allows_var for the path's capability */
	static const struct server_route routes[] = {
		{ "GET", "/v1/vars", get_vars, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "GET", "/v1/var/*path", get_var, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "PUT", "/v1/var/*path", put_var, HTTP_ROUTE_BODY, ACL_NEED_TOKEN },
		{ "DELETE", "/v1/var/*path", delete_var, 0, ACL_NEED_TOKEN },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
