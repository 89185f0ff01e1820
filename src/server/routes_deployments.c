/* routes_deployments: the deployments of rolling updates (deployment.c;
 * docs/api.md, "Deployments").  A deployment lives in the record of the
 * job version it deploys, so these routes read job version records:
 *
 *   GET  /v1/job/:id/deployment    the job's latest deployment (null: none)
 *   GET  /v1/job/:id/deployments   the job's deployments, newest first
 *   GET  /v1/deployments           every deployment of ?namespace= ("*": all)
 *   GET  /v1/deployment/:id        one deployment
 *   POST /v1/deployment/:id/fail   fails a running deployment (auto_revert
 *                                  then re-registers the latest stable version)
 *   POST /v1/deployment/:id/promote  promotes the canaries of a running
 *                                  deployment (all groups, or those named)
 *
 * A deployment by id is found by scanning the version records of the
 * namespaces the token may read: deployments are few (one per version of
 * a rolling service), and this keeps the store without a kind of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"

static int newest_first(const void *a, const void *b)
{
	int64_t x = jint(*(json_t *const *)a, "create_time", 0);
	int64_t y = jint(*(json_t *const *)b, "create_time", 0);
	return x > y ? -1 : x < y;
}

/* The deployments of the version records in versions (a new array, newest
 * first). */
static json_t *deployments_of(const json_t *versions)
{
	json_t *out = json_array(), *v, **tmp;
	size_t i, n = 0;

	tmp = xcalloc(json_array_size(versions) + 1, sizeof(*tmp));
	json_array_foreach(versions, i, v)
		if (json_is_object(json_object_get(v, "deployment")))
			tmp[n++] = json_object_get(v, "deployment");
	qsort(tmp, n, sizeof(*tmp), newest_first);
	for (i = 0; i < n; i++)
		json_array_append_new(out, json_deep_copy(tmp[i]));
	free(tmp);
	return out;
}

/* The deployments of job :id (a new array) after checking that the job
 * exists; 1 when resp was answered (404). */
static int job_deployments(struct server *srv, struct http_request *req,
			   struct http_response *resp, json_t **out)
{
	struct store_key key = { req_namespace(req), http_param(req, "id"), 0 };
	struct store_filter f = { key.ns, key.id, NULL };
	json_t *versions = NULL;
	int rc;

	if (!valid_id(key.id))
		return http_error(resp, 404, "job_not_found", "no job %s", key.id), 1;
	rc = store_get_index(srv->store, STORE_JOB, &key, &(uint64_t){ 0 }, NULL);
	if (rc == -ENOENT)
		return http_error(resp, 404, "job_not_found", "no job %s in namespace %s", key.id,
				  key.ns), 1;
	if (rc == 0)
		rc = store_list_shared(srv->store, STORE_JOB_VERSION, &f, &versions, NULL);
	if (rc < 0)
		return rc;
	*out = deployments_of(versions);
	json_decref(versions);
	return 0;
}

static int get_job_deployment(struct http_request *req, struct http_response *resp, void *ctx)
{
	json_t *list = NULL;
	int rc = job_deployments(ctx, req, resp, &list);
	if (rc)
		return rc > 0 ? 0 : rc;
	http_reply(resp, 200, json_array_size(list) ? json_incref(json_array_get(list, 0))
						    : json_null());
	json_decref(list);
	return 0;
}

static int get_job_deployments(struct http_request *req, struct http_response *resp, void *ctx)
{
	json_t *list = NULL;
	int rc = job_deployments(ctx, req, resp, &list);
	if (rc)
		return rc > 0 ? 0 : rc;
	http_reply(resp, 200, list);
	return 0;
}

static int get_deployments(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *ns = req_namespace(req);
	struct store_filter f = { strcmp(ns, "*") ? ns : NULL, NULL, NULL };
	json_t *versions = NULL, *out;
	int rc = store_list_shared(srv->store, STORE_JOB_VERSION, &f, &versions, NULL);

	if (rc < 0)
		return rc;
	out = deployments_of(versions);
	json_decref(versions);
	acl_filter_list(req, out);
	http_reply(resp, 200, out);
	return 0;
}

/* The version record holding deployment id (a private copy), among the
 * namespaces the request may read at level; 1 when resp was answered. */
static int find_deployment(struct server *srv, struct http_request *req,
			   struct http_response *resp, const char *id, enum acl_level level,
			   json_t **out)
{
	json_t *versions = NULL, *v, *found = NULL;
	size_t i;
	int rc;

	if (!valid_id(id))
		return http_error(resp, 404, "deployment_not_found", "no deployment %s", id), 1;
	rc = store_list_shared(srv->store, STORE_JOB_VERSION, NULL, &versions, NULL);
	if (rc < 0)
		return rc;
	json_array_foreach(versions, i, v)
		if (!strcmp(jstr(json_object_get(v, "deployment"), "id", ""), id))
			found = v;
	if (found && !acl_allows_ns(req, jstr(found, "namespace", "default"), ACL_READ))
		found = NULL; /* not to be told apart from one that does not exist */
	if (!found) {
		json_decref(versions);
		return http_error(resp, 404, "deployment_not_found", "no deployment %s", id), 1;
	}
	if (!acl_allows_ns(req, jstr(found, "namespace", "default"), level)) {
		json_decref(versions);
		return acl_deny(resp), 1;
	}
	*out = json_deep_copy(found);
	json_decref(versions);
	return 0;
}

static int get_deployment(struct http_request *req, struct http_response *resp, void *ctx)
{
	json_t *v = NULL;
	int rc = find_deployment(ctx, req, resp, http_param(req, "id"), ACL_READ, &v);
	if (rc)
		return rc > 0 ? 0 : rc;
	http_reply(resp, 200, json_incref(json_object_get(v, "deployment")));
	json_decref(v);
	return 0;
}

/* The latest stable version of job (ns, id) before `before`, or -1. */
static int64_t latest_stable(struct server *srv, const char *ns, const char *id, int64_t before)
{
	struct store_filter f = { ns, id, NULL };
	json_t *versions = NULL, *v;
	int64_t best = -1;
	size_t i;

	if (store_list_shared(srv->store, STORE_JOB_VERSION, &f, &versions, NULL) < 0)
		return -1;
	json_array_foreach(versions, i, v)
		if (jbool(v, "stable", false) && jint(v, "version", 0) < before &&
		    jint(v, "version", 0) > best)
			best = jint(v, "version", 0);
	json_decref(versions);
	return best;
}

static bool dep_auto_revert(const json_t *dep)
{
	const char *k;
	json_t *g;
	json_object_foreach(json_object_get(dep, "groups"), k, g)
		if (jbool(g, "auto_revert", false))
			return true;
	return false;
}

/* Writes v, a job version record whose deployment the caller changed, if
 * nobody changed it since it was read, with eval (an evaluation of the job,
 * so that it acts on the change), and queues eval.  0 (*idx set), 1 after a
 * 409 answer (changed meanwhile), or a negative errno. */
static int commit_deployment_change(struct server *srv, struct http_response *resp,
				    const char *id, json_t *v, json_t *eval, uint64_t *idx,
				    struct herd_err *err)
{
	const char *ns = jstr(v, "namespace", "default"), *job_id = jstr(v, "id", "");
	struct store_batch b = STORE_BATCH_INIT;
	int rc;

	store_batch_init(&b);
	store_batch_put(&b, STORE_JOB_VERSION, v);
	store_batch_require_index(&b, STORE_JOB_VERSION,
				  &(struct store_key){ ns, job_id, jint(v, "version", 0) },
				  (uint64_t)jint(v, "modify_index", 0));
	store_batch_put(&b, STORE_EVAL, eval);
	rc = store_commit(srv->store, &b, idx, err);
	store_batch_release(&b);
	if (rc == -ESTALE) {
		http_error(resp, 409, "conflict", "deployment %s changed meanwhile; try again", id);
		return 1;
	}
	if (rc < 0)
		return rc;
	broker_enqueue(&srv->broker, jstr(eval, "id", ""), ns, job_id, 0);
	return 0;
}

/* POST /v1/deployment/:id/fail: a running deployment fails now, as if its
 * allocations were unhealthy: no more are replaced, and with auto_revert
 * the latest stable version is registered again. */
static int post_deployment_fail(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id");
	struct herd_err err = { 0 };
	json_t *v = NULL, *dep, *eval = NULL;
	int rc = find_deployment(srv, req, resp, id, ACL_SUBMIT, &v);
	const char *ns, *job_id;
	int64_t to = -1, version;
	uint64_t idx = 0;
	char *desc;

	if (rc)
		return rc > 0 ? 0 : rc;
	dep = json_object_get(v, "deployment");
	ns = jstr(v, "namespace", "default");
	job_id = jstr(v, "id", "");
	version = jint(v, "version", 0);
	if (strcmp(jstr(dep, "status", ""), "running")) {
		rc = http_error(resp, 409, "deployment_not_running", "deployment %s is %s, not running",
				id, jstr(dep, "status", "?"));
		goto out;
	}
	if (dep_auto_revert(dep))
		to = latest_stable(srv, ns, job_id, version);
	desc = to >= 0 ? xasprintf("Deployment marked as failed - rolling back to job version %lld",
				   (long long)to)
		       : xstrdup("Deployment marked as failed");
	json_object_set_new(dep, "status", json_string("failed"));
	json_object_set_new(dep, "status_description", json_string(desc));
	json_object_set_new(dep, "modify_time", json_integer(now_ns()));
	free(desc);
	/* the job looks again: the canaries of a failed deployment stop */
	eval = eval_new(ns, job_id, "deployment-failed", NULL);
	rc = commit_deployment_change(srv, resp, id, v, eval, &idx, &err);
	if (rc) {
		rc = rc > 0 ? 0 : rc;
		goto out;
	}
	if (to >= 0) {
		struct http_response r2 = { 0 };
		rc = job_revert_to(srv, ns, job_id, to, version, "deployment-revert", &r2, &err);
		if (rc == 0 && r2.status != 200)
			server_log(srv, "info", "job %s: revert to version %lld not done: %s", job_id,
				   (long long)to,
				   jstr(json_object_get(r2.body, "error"), "message", "refused"));
		if (r2.status == 200)
			idx = (uint64_t)jint(r2.body, "index", (int64_t)idx);
		http_response_release(&r2);
		if (rc < 0)
			goto out;
	}
	rc = reply_written(resp, idx, json_pack("{s:I, s:o*}", "index", (json_int_t)idx,
						  "revert_to", to >= 0 ? json_integer(to) : NULL));
out:
	json_decref(eval);
	json_decref(v);
	return rc;
}

/* The groups a promote body names (borrowed; NULL: every group with
 * canaries): {"groups": [..]}, {"all": true} or no body; 1 after a 400. */
static int promote_body(const json_t *body, struct http_response *resp, const json_t **groups)
{
	const json_t *g, *x;
	const char *k;
	size_t i;

	*groups = NULL;
	if (!body || json_is_null(body))
		return 0;
	if (!json_is_object(body))
		return http_error(resp, 400, "invalid_argument", "the body must be a JSON object"), 1;
	json_object_foreach((json_t *)body, k, x)
		if (strcmp(k, "all") && strcmp(k, "groups"))
			return http_error(resp, 400, "invalid_argument", "unknown field \"%s\"", k), 1;
	x = json_object_get(body, "all");
	if (x && !json_is_boolean(x))
		return http_error(resp, 400, "invalid_argument", "all must be true or false"), 1;
	g = json_object_get(body, "groups");
	if (g && !json_is_null(g)) {
		if (!json_is_array(g))
			return http_error(resp, 400, "invalid_argument",
					  "groups must be a list of group names"), 1;
		json_array_foreach(g, i, x)
			if (!json_is_string(x))
				return http_error(resp, 400, "invalid_argument",
						  "groups must be a list of group names"), 1;
		if (json_array_size(g) && json_is_true(json_object_get(body, "all")))
			return http_error(resp, 400, "invalid_argument",
					  "give all or groups, not both"), 1;
		if (json_array_size(g))
			*groups = g;
	}
	if (!*groups && json_is_false(json_object_get(body, "all")))
		return http_error(resp, 400, "invalid_argument",
				  "name the groups to promote, or all"), 1;
	return 0;
}

/* Whether group name is among groups (NULL: every group). */
static bool promote_named(const json_t *groups, const char *name)
{
	size_t i;
	json_t *x;
	if (!groups)
		return true;
	json_array_foreach(groups, i, x)
		if (!strcmp(json_string_value(x), name))
			return true;
	return false;
}

/* Why the canaries of the groups to promote (promote: {"<group>": true})
 * are not all healthy, from the allocations of deployment v (NULL: they
 * are); a new string. */
static char *canaries_unhealthy(struct server *srv, const json_t *v, const json_t *promote)
{
	const json_t *dep = json_object_get(v, "deployment");
	struct store_filter f = { jstr(v, "namespace", "default"), jstr(v, "id", ""), NULL };
	struct strbuf sb = STRBUF_INIT;
	json_t *allocs = NULL, *count = json_object(), *a, *c;
	const char *g;
	size_t i;

	if (store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL) < 0) {
		json_decref(count);
		return xstrdup("the deployment's allocations could not be read");
	}
	json_array_foreach(allocs, i, a) {
		const json_t *ds = json_object_get(a, "deployment_status");
		const char *h;
		if (strcmp(jstr(a, "deployment_id", ""), jstr(dep, "id", "")) ||
		    !jbool(ds, "canary", false) || strcmp(jstr(a, "desired_status", ""), "run"))
			continue;
		c = json_object_get(count, jstr(a, "task_group", ""));
		if (!c) {
			c = json_pack("{s:I, s:I, s:I}", "healthy", 0, "unhealthy", 0, "pending", 0);
			json_object_set_new(count, jstr(a, "task_group", ""), c);
		}
		h = json_is_true(json_object_get(ds, "healthy"))	  ? "healthy"
		    : json_is_false(json_object_get(ds, "healthy")) ? "unhealthy"
								      : "pending";
		json_object_set_new(c, h, json_integer(jint(c, h, 0) + 1));
	}
	json_decref(allocs);
	json_object_foreach((json_t *)promote, g, a) {
		int64_t want = jint(json_object_get(json_object_get(dep, "groups"), g),
				    "desired_canaries", 0);
		c = json_object_get(count, g);
		if (jint(c, "healthy", 0) >= want)
			continue;
		strbuf_addf(&sb, "%sgroup %s: %lld of %lld canaries not healthy (%lld unhealthy, %lld "
			    "not yet healthy)", sb.len ? "; " : "", g,
			    (long long)(want - jint(c, "healthy", 0)), (long long)want,
			    (long long)jint(c, "unhealthy", 0),
			    (long long)(want - jint(c, "healthy", 0) - jint(c, "unhealthy", 0)));
	}
	json_decref(count);
	if (!sb.len)
		return NULL;
	return strbuf_detach(&sb, NULL);
}

/* Marks the groups of promote promoted in v's deployment. */
static void promote_mark(json_t *v, const json_t *promote)
{
	json_t *dep = json_object_get(v, "deployment"), *x;
	int64_t now = now_ns();
	const char *g;

	json_object_foreach((json_t *)promote, g, x) {
		json_t *rec = json_object_get(json_object_get(dep, "groups"), g);
		json_object_set_new(rec, "promoted", json_true());
		json_object_set_new(rec, "promote_time", json_integer(now));
	}
	json_object_set_new(dep, "status_description", json_string("Deployment is running"));
	json_object_set_new(dep, "modify_time", json_integer(now));
}

/* Which groups of deployment dep a promotion of groups (NULL: all) takes
 * ({"<group>": true}, a new object), or NULL after answering why not. */
static json_t *promote_which(const json_t *dep, const json_t *groups, struct http_response *resp)
{
	json_t *out = json_object(), *x;
	const char *g;
	bool any = false, named;
	size_t i;

	json_array_foreach(groups, i, x) {
		const json_t *rec = json_object_get(json_object_get(dep, "groups"),
						    json_string_value(x));
		if (jint(rec, "desired_canaries", 0) <= 0) {
			http_error(resp, 400, "invalid_argument", "group %s has no canaries in deployment %s",
				   json_string_value(x), jstr(dep, "id", ""));
			json_decref(out);
			return NULL;
		}
	}
	json_object_foreach(json_object_get(dep, "groups"), g, x) {
		named = promote_named(groups, g);
		if (jint(x, "desired_canaries", 0) <= 0 || !named)
			continue;
		any = true;
		if (!jbool(x, "promoted", false))
			json_object_set_new(out, g, json_true());
	}
	if (!any) {
		http_error(resp, 400, "no_canaries", "deployment %s has no canaries to promote",
			   jstr(dep, "id", ""));
	} else if (!json_object_size(out)) {
		http_error(resp, 409, "already_promoted", "deployment %s is promoted already",
			   jstr(dep, "id", ""));
	} else {
		return out;
	}
	json_decref(out);
	return NULL;
}

/* POST /v1/deployment/:id/promote: the canaries of a running deployment
 * are promoted (the groups named, or all), once all of them are healthy;
 * the job's evaluation then replaces the rest as a rolling update. */
static int post_deployment_promote(struct http_request *req, struct http_response *resp,
				   void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id");
	struct herd_err err = { 0 };
	json_t *v = NULL, *dep, *promote = NULL, *eval = NULL, *job = NULL;
	const json_t *groups;
	const char *ns, *job_id;
	int64_t version;
	uint64_t idx = 0;
	char *why;
	int rc = find_deployment(srv, req, resp, id, ACL_SUBMIT, &v);

	if (rc)
		return rc > 0 ? 0 : rc;
	rc = 0;
	dep = json_object_get(v, "deployment");
	ns = jstr(v, "namespace", "default");
	job_id = jstr(v, "id", "");
	version = jint(v, "version", 0);
	if (promote_body(req->body, resp, &groups))
		goto out;
	if (strcmp(jstr(dep, "status", ""), "running")) {
		rc = http_error(resp, 409, "deployment_not_running", "deployment %s is %s, not running",
				id, jstr(dep, "status", "?"));
		goto out;
	}
	promote = promote_which(dep, groups, resp);
	if (!promote)
		goto out;
	rc = store_get_shared(srv->store, STORE_JOB, &(struct store_key){ ns, job_id, 0 }, &job,
			      NULL);
	if (rc < 0 && rc != -ENOENT)
		goto out;
	if (!job || jint(job, "version", -1) != version || jbool(job, "stop", false)) {
		rc = http_error(resp, 409, "deployment_not_current",
				"deployment %s is of job version %lld, which the job no longer runs",
				id, (long long)version);
		goto out;
	}
	why = canaries_unhealthy(srv, v, promote);
	if (why) {
		rc = http_error(resp, 409, "canaries_unhealthy", "deployment %s cannot be promoted: %s",
				id, why);
		free(why);
		goto out;
	}
	promote_mark(v, promote);
	eval = eval_new(ns, job_id, "deployment-promotion", NULL);
	rc = commit_deployment_change(srv, resp, id, v, eval, &idx, &err);
	if (rc) {
		rc = rc > 0 ? 0 : rc;
		goto out;
	}
	rc = reply_written(resp, idx, json_pack("{s:I, s:s, s:O}", "index", (json_int_t)idx,
						  "eval_id", jstr(eval, "id", ""), "promoted",
						  promote));
out:
	json_decref(job);
	json_decref(eval);
	json_decref(promote);
	json_decref(v);
	return rc;
}

int routes_deployments(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/job/:id/deployment", get_job_deployment, HTTP_ROUTE_BLOCKING,
		  ACL_NEED_NS_READ },
		{ "GET", "/v1/job/:id/deployments", get_job_deployments, HTTP_ROUTE_BLOCKING,
		  ACL_NEED_NS_READ },
		{ "GET", "/v1/deployments", get_deployments, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/deployment/:id", get_deployment, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
		{ "POST", "/v1/deployment/:id/fail", post_deployment_fail, 0, ACL_NEED_TOKEN },
		{ "POST", "/v1/deployment/:id/promote", post_deployment_promote, 0, ACL_NEED_TOKEN },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
