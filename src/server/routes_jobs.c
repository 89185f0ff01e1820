/* routes_jobs: register, parse, plan, read, stop and purge jobs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"
#include "spec/spec.h"

#define REGISTER_ATTEMPTS 10

static int invalid_job(struct http_response *resp, const struct diag_list *dl, const char *fallback)
{
	http_reply(resp, 400, job_error_body(dl, fallback));
	return 0;
}

/* Decodes {"job": {...}} into the model; NULL with resp filled on error. */
static struct job *decode_job(struct http_request *req, struct http_response *resp,
			      struct diag_list *dl)
{
	json_t *eb = NULL;
	struct job *job = job_from_request(req->body, dl, &eb);
	if (!job)
		http_reply(resp, 400, eb);
	return job;
}

/* The canonical job canon (job_to_json_sorted) as stored, with the
 * server's fields: a new object sharing canon's values, its keys in
 * canon's order with the server's merged in, so that a canon with sorted
 * keys gives a stored job with sorted keys, which the store keeps without
 * copying it (store_batch_put_owned). */
static json_t *stored_from_canon(const json_t *canon, int64_t version)
{
	/* the server's fields, sorted */
	static const char *const keys[] = { "status", "stop", "submit_time", "version" };
	json_t *vals[] = { json_string("pending"), json_false(), json_integer(now_ns()),
			   json_integer(version) };
	const size_t nk = sizeof(keys) / sizeof(keys[0]);
	json_t *o = json_object(), *v;
	const char *k;
	size_t e = 0;

	json_object_foreach((json_t *)canon, k, v) {
		int c = 1;
		while (e < nk && (c = strcmp(keys[e], k)) < 0)
			json_object_set_new_nocheck(o, keys[e], vals[e]), e++;
		if (e < nk && c == 0) /* the server's own field wins */
			json_object_set_new_nocheck(o, keys[e], vals[e]), e++;
		else
			json_object_set_nocheck(o, k, v);
	}
	for (; e < nk; e++)
		json_object_set_new_nocheck(o, keys[e], vals[e]);
	return o;
}

/* Whether a stored job holds the same canonical job (and is not stopped). */
static bool same_job(const json_t *old, const json_t *canon)
{
	json_t *a = json_copy((json_t *)old);
	static const char *const fields[] = { "version", "stop", "status", "submit_time",
					      "create_index", "modify_index", "job_modify_index", NULL };
	bool same;
	for (int i = 0; fields[i]; i++)
		json_object_del(a, fields[i]);
	same = json_equal(a, (json_t *)canon) && !jbool(old, "stop", false);
	json_decref(a);
	return same;
}

/* What a registration reads before it writes, in one read transaction
 * (one reader and one BEGIN for both): that its namespace exists (its
 * index) and the job as stored. */
struct register_read {
	const char *ns, *id;
	uint64_t ns_index;   /* 0: no such namespace */
	json_t *old;         /* the job as stored (shared: only read), or NULL */
};

static int read_for_register(struct store *s, void *arg, struct herd_err *err)
{
	struct register_read *a = arg;
	struct store_key nk = { NULL, a->ns, 0 }, key = { a->ns, a->id, 0 };
	int rc = store_get_index(s, STORE_NAMESPACE, &nk, &a->ns_index, err);
	if (rc == -ENOENT)
		return 0;
	if (rc == 0)
		rc = store_get_shared(s, STORE_JOB, &key, &a->old, err);
	return rc == -ENOENT ? 0 : rc;
}

static int post_jobs(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct diag_list dl;
	struct job *job;
	struct herd_err err = { 0 };
	json_t *canon = NULL;
	int rc = 0;

	diag_list_init(&dl);
	job = decode_job(req, resp, &dl);
	if (!job)
		goto out;
	if (!acl_allows_ns(req, job->namespace, ACL_SUBMIT)) {
		acl_deny(resp);
		goto out;
	}
	canon = job_to_json_sorted(job);
	for (int attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
		struct store_key key = { job->namespace, job->id, 0 };
		struct store_key nk = { NULL, job->namespace, 0 };
		struct store_batch b = STORE_BATCH_INIT;
		struct register_read rd = { job->namespace, job->id, 0, NULL };
		json_t *old, *stored, *eval;
		uint64_t idx = 0;

		rc = store_view(srv->store, read_for_register, &rd, &err);
		if (rc < 0)
			goto out;
		old = rd.old;
		if (!rd.ns_index) {
			json_decref(old);
			rc = http_error(resp, 400, "namespace_not_found",
					"namespace %s does not exist; create it with herd namespace apply %s",
					job->namespace, job->namespace);
			goto out;
		}
		if (old && same_job(old, canon)) {
			http_reply(resp, 200, json_pack("{s:s, s:I, s:I, s:o}", "eval_id", "",
							"job_modify_index", (json_int_t)jint(old, "modify_index", 0),
							"index", (json_int_t)req->index, "warnings", job_warnings(&dl)));
			json_decref(old);
			rc = 0;
			goto out;
		}
		stored = stored_from_canon(canon, old ? jint(old, "version", 0) + 1 : 0);
		eval = eval_new(job->namespace, job->id, "job-register", NULL);
		store_batch_init(&b);
		/* the batch takes stored's references and one of eval's: the
		 * store keeps them as they are (both are in canonical order) */
		store_batch_put_owned(&b, STORE_JOB, json_incref(stored));
		store_batch_put_owned(&b, STORE_JOB_VERSION, stored);
		store_batch_put_owned(&b, STORE_EVAL, json_incref(eval));
		store_batch_require_index(&b, STORE_JOB, &key, old ? (uint64_t)jint(old, "modify_index", 0) : 0);
		/* the namespace as read: one deleted meanwhile (its delete checks
		 * for jobs inside its own commit) fails this, and the retry says so */
		store_batch_require_index(&b, STORE_NAMESPACE, &nk, rd.ns_index);
		rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		json_decref(old);
		if (rc == 0) {
			/* eval is the store's cached record now: only read */
			broker_enqueue(&srv->broker, jstr(eval, "id", ""), job->namespace, job->id, 0);
			reply_written(resp, idx,
				      json_pack("{s:s, s:I, s:I, s:o}", "eval_id", jstr(eval, "id", ""),
						"job_modify_index", (json_int_t)idx, "index", (json_int_t)idx,
						"warnings", job_warnings(&dl)));
		}
		json_decref(eval);
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		rc = http_error(resp, 409, "conflict", "job %s kept changing; try again", job->id);
out:
	if (rc < 0)
		server_log(srv, "error", "register job: %s", err.msg);
	json_decref(canon);
	job_free(job);
	diag_list_release(&dl);
	return rc;
}

static int post_parse(struct http_request *req, struct http_response *resp, void *ctx)
{
	const char *hcl = json_string_value(json_object_get(req->body, "job_hcl"));
	struct diag_list dl;
	struct job *job;

	(void)ctx;
	diag_list_init(&dl);
	if (!hcl) {
		invalid_job(resp, &dl, "body must be {\"job_hcl\": \"...\"}");
	} else {
		job = spec_load(hcl, strlen(hcl), &dl);
		if (job)
			http_reply(resp, 200, job_to_json(job));
		else
			invalid_job(resp, &dl, NULL);
		job_free(job);
	}
	diag_list_release(&dl);
	return 0;
}

static int post_plan(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id");
	struct diag_list dl;
	struct herd_err err = { 0 };
	struct sched_view v;
	struct plan p;
	struct job *job;
	json_t *cand;
	int rc;

	diag_list_init(&dl);
	job = decode_job(req, resp, &dl);
	if (!job) {
		diag_list_release(&dl);
		return 0;
	}
	if (!acl_allows_ns(req, job->namespace, ACL_SUBMIT)) {
		rc = acl_deny(resp);
		goto out_job;
	}
	if (strcmp(job->id, id)) {
		rc = http_error(resp, 400, "invalid_job", "job id \"%s\" does not match the path's \"%s\"", job->id, id);
		goto out_job;
	}
	rc = sched_view_read(srv->store, &srv->view_cache, job->namespace, job->id, &v, &err);
	if (rc < 0)
		goto out_job;
	cand = job_to_json(job);
	if (v.job && same_job(v.job, cand)) {
		/* unchanged: the plan shows what a new evaluation would do */
		json_decref(cand);
		cand = json_incref(v.job);
	} else {
		json_t *st = stored_from_canon(cand, v.job ? jint(v.job, "version", 0) + 1 : 0);
		json_decref(cand);
		cand = st;
	}
	plan_init(&p);
	rc = plan_compute(srv, &v, cand, "", &p, &err);
	if (rc == 0)
		http_reply(resp, 200, json_pack("{s:O, s:O, s:{s:i, s:i, s:i, s:i}, s:o}", "placements",
						p.placements, "failed_placements", p.failed, "changes",
						"create", p.create, "destroy", p.destroy, "update", p.update,
						"ignore", p.ignore, "warnings", job_warnings(&dl)));
	plan_release(&p);
	json_decref(cand);
	sched_view_release(&v);
out_job:
	job_free(job);
	diag_list_release(&dl);
	return rc;
}

/* One job's line of GET /v1/jobs, its status derived from allocs (an
 * array of the job's allocations, or NULL: none). */
static json_t *job_line(const json_t *x, const json_t *a)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:b, s:I, s:o, s:I, s:I}",
		"id", jstr(x, "id", ""), "namespace", jstr(x, "namespace", ""),
		"type", jstr(x, "type", ""), "priority", (json_int_t)jint(x, "priority", 50),
		"status", job_status(x, a), "version", (json_int_t)jint(x, "version", 0),
		"stop", jbool(x, "stop", false), "submit_time", (json_int_t)jint(x, "submit_time", 0),
		"summary", job_summary(x, a), "create_index", (json_int_t)jint(x, "create_index", 0),
		"modify_index", (json_int_t)jint(x, "modify_index", 0));
}

/* What GET /v1/jobs?since=N reads, in one view. */
struct jobs_since {
	const char *ns;  /* NULL: every namespace */
	uint64_t since;
	json_t *out;     /* the lines */
};

/* The jobs whose record or allocations changed after a->since, each with
 * all its allocations (its status needs them): work in proportion to what
 * changed, not to every job the store holds.  Every record is a shared one
 * (store_get_shared): a line only reads them, and a job polled again
 * costs no parse. */
static int read_jobs_since(struct store *s, void *arg, struct herd_err *err)
{
	struct jobs_since *a = arg;
	struct store_filter f = { a->ns, NULL, NULL };
	json_t *jobs = NULL, *allocs = NULL, *seen = json_object(), *x;
	size_t i;
	int rc = store_list_changed_shared(s, STORE_JOB, &f, a->since, &jobs, err);
	if (rc == 0)
		rc = store_list_changed_shared(s, STORE_ALLOC, &f, a->since, &allocs, err);
	/* the changed jobs first, then those only their allocations name */
	json_array_foreach(jobs, i, x) {
		char *k = xasprintf("%s\x1f%s", jstr(x, "namespace", ""), jstr(x, "id", ""));
		json_object_set(seen, k, x);
		free(k);
	}
	for (i = 0; rc == 0 && i < json_array_size(allocs); i++) {
		const json_t *al = json_array_get(allocs, i);
		struct store_key key = { jstr(al, "namespace", ""), jstr(al, "job_id", ""), 0 };
		char *k = xasprintf("%s\x1f%s", key.ns, key.id);
		json_t *job = NULL;
		if (!json_object_get(seen, k)) {
			rc = store_get_shared(s, STORE_JOB, &key, &job, err);
			if (rc == 0) {
				json_array_append(jobs, job);
				json_object_set_new(seen, k, job);
			} else if (rc == -ENOENT) {
				rc = 0; /* purged: not listed (see docs/api.md) */
				json_object_set_new(seen, k, json_null());
			}
		}
		free(k);
	}
	json_array_foreach(jobs, i, x) {
		struct store_filter jf = { jstr(x, "namespace", ""), jstr(x, "id", ""), NULL };
		json_t *ja = NULL;
		if (rc < 0 || (rc = store_list_shared(s, STORE_ALLOC, &jf, &ja, err)) < 0)
			break;
		json_array_append_new(a->out, job_line(x, json_array_size(ja) ? ja : NULL));
		json_decref(ja);
	}
	json_decref(jobs);
	json_decref(allocs);
	json_decref(seen);
	return rc;
}

static int get_jobs(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *ns = req_namespace(req), *since_arg = http_query(req, "since");
	struct store_filter f = { strcmp(ns, "*") ? ns : NULL, NULL, NULL };
	json_t *jobs = NULL, *allocs = NULL, *byjob = NULL, *out = json_array(), *x;
	int64_t since = 0;
	size_t i;
	int rc;

	if (since_arg && parse_int64(since_arg, 0, INT64_MAX, &since, NULL) < 0) {
		json_decref(out);
		return http_error(resp, 400, "invalid_argument",
				  "since must be an index (an integer >= 0)");
	}
	if (since > 0) {
		struct jobs_since a = { f.ns, (uint64_t)since, out };
		rc = store_view(srv->store, read_jobs_since, &a, NULL);
		if (rc < 0)
			goto out;
		goto reply;
	}
	/* shared records, only read (job_line) */
	rc = store_list_shared(srv->store, STORE_JOB, &f, &jobs, NULL);
	if (!rc)
		rc = store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL);
	if (rc < 0)
		goto out;
	byjob = allocs_by_job(allocs);
	json_array_foreach(jobs, i, x)
		json_array_append_new(out, job_line(x, job_allocs_of(byjob, x)));
reply:
	acl_filter_list(req, out);
	resp->nothing_new = since > 0 && json_array_size(out) == 0 &&
			    req->wait_index >= (uint64_t)since;
	http_reply(resp, 200, out);
	out = NULL;
out:
	json_decref(out);
	json_decref(jobs);
	json_decref(allocs);
	json_decref(byjob);
	return rc;
}

static int load_job(struct server *srv, struct http_request *req, struct http_response *resp,
		    json_t **job)
{
	struct store_key key = { req_namespace(req), http_param(req, "id"), 0 };
	int rc;
	if (!valid_id(key.id))
		return http_error(resp, 404, "job_not_found", "no job %s", key.id), 1;
	rc = store_get(srv->store, STORE_JOB, &key, job, NULL);
	if (rc == -ENOENT)
		return http_error(resp, 404, "job_not_found", "no job %s in namespace %s", key.id, key.ns), 1;
	return rc;
}

static int get_job(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *job = NULL, *out;
	int rc = load_job(srv, req, resp, &job);
	if (rc)
		return rc > 0 ? 0 : rc;
	out = job_for_reader(srv, job, NULL);
	json_decref(job);
	if (!out)
		return -EIO;
	http_reply(resp, 200, out);
	return 0;
}

/* GET /v1/job/:id/{versions,allocations,evaluations}: lists of one job. */
static int get_job_list(struct http_request *req, struct http_response *resp, void *ctx,
			enum store_kind kind)
{
	struct server *srv = ctx;
	struct store_filter f = { req_namespace(req), http_param(req, "id"), NULL };
	json_t *job = NULL, *list = NULL;
	int rc = load_job(srv, req, resp, &job);
	if (rc)
		return rc > 0 ? 0 : rc;
	json_decref(job);
	rc = store_list(srv->store, kind, &f, &list, NULL);
	if (rc < 0)
		return rc;
	http_reply(resp, 200, list);
	return 0;
}

static int get_job_versions(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_job_list(req, resp, ctx, STORE_JOB_VERSION);
}

/* GET /v1/job/:id/version/:version: one version of the job, what an agent
 * needs to run an allocation (the list above grows with every version). */
static int get_job_version(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *v = http_param(req, "version");
	struct store_key key = { req_namespace(req), http_param(req, "id"), 0 };
	json_t *job = NULL;
	char *end = NULL;
	int rc;

	if (!valid_id(key.id))
		return http_error(resp, 404, "job_not_found", "no job %s", key.id);
	errno = 0;
	key.version = v ? strtoll(v, &end, 10) : -1;
	if (!v || !*v || *end || errno || key.version < 0)
		return http_error(resp, 400, "invalid_argument", "version \"%s\" is not a number",
				  v ? v : "");
	rc = store_get(srv->store, STORE_JOB_VERSION, &key, &job, NULL);
	if (rc == -ENOENT)
		return http_error(resp, 404, "job_not_found", "no version %lld of job %s in namespace %s",
				  (long long)key.version, key.id, key.ns);
	if (rc < 0)
		return rc;
	http_reply(resp, 200, job);
	return 0;
}

static int get_job_allocs(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_job_list(req, resp, ctx, STORE_ALLOC);
}

static int get_job_evals(struct http_request *req, struct http_response *resp, void *ctx)
{
	return get_job_list(req, resp, ctx, STORE_EVAL);
}

/* DELETE /v1/job/:id[?purge=true]: stop (the job stays, marked stopped) or
 * purge (the job and its versions go); either way an evaluation stops the
 * allocations, whose records stay until their clients report them ended. */
static int delete_job(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *purge_arg = http_query(req, "purge");
	bool purge = purge_arg && (!strcmp(purge_arg, "true") || !strcmp(purge_arg, "1"));
	struct herd_err err = { 0 };
	int rc = 0;

	for (int attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
		struct store_batch b = STORE_BATCH_INIT;
		json_t *job = NULL, *eval, *versions = NULL, *x;
		uint64_t idx = 0;
		size_t i;
		rc = load_job(srv, req, resp, &job);
		if (rc)
			return rc > 0 ? 0 : rc;
		struct store_key key = { jstr(job, "namespace", "default"), jstr(job, "id", ""), 0 };
		eval = eval_new(key.ns, key.id, "job-deregister", NULL);
		store_batch_init(&b);
		store_batch_require_index(&b, STORE_JOB, &key, (uint64_t)jint(job, "modify_index", 0));
		if (purge) {
			struct store_filter f = { key.ns, key.id, NULL };
			rc = store_list(srv->store, STORE_JOB_VERSION, &f, &versions, &err);
			store_batch_delete(&b, STORE_JOB, &key);
			json_array_foreach(versions, i, x) {
				struct store_key vk = { key.ns, key.id, jint(x, "version", 0) };
				store_batch_delete(&b, STORE_JOB_VERSION, &vk);
			}
		} else {
			json_object_set_new(job, "stop", json_true());
			store_batch_put(&b, STORE_JOB, job);
		}
		store_batch_put(&b, STORE_EVAL, eval);
		if (rc == 0)
			rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			broker_enqueue(&srv->broker, jstr(eval, "id", ""), key.ns, key.id, 0);
			reply_written(resp, idx, json_pack("{s:s, s:I}", "eval_id", jstr(eval, "id", ""),
							   "index", (json_int_t)idx));
		}
		json_decref(eval);
		json_decref(versions);
		json_decref(job);
		if (rc != -ESTALE)
			break;
	}
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict", "job kept changing; try again");
	return rc;
}

int routes_jobs(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "POST", "/v1/jobs", post_jobs, HTTP_ROUTE_BODY, ACL_NEED_TOKEN },
		{ "GET", "/v1/jobs", get_jobs, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "POST", "/v1/jobs/parse", post_parse, HTTP_ROUTE_BODY, ACL_NEED_TOKEN },
		{ "POST", "/v1/job/:id/plan", post_plan, HTTP_ROUTE_BODY, ACL_NEED_TOKEN },
		/* clients fetch the job of an allocation with their node token */
		{ "GET", "/v1/job/:id", get_job, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ_OR_NODE_WRITE },
		{ "DELETE", "/v1/job/:id", delete_job, 0, ACL_NEED_NS_SUBMIT },
		{ "GET", "/v1/job/:id/versions", get_job_versions, 0, ACL_NEED_NS_READ_OR_NODE_WRITE },
		{ "GET", "/v1/job/:id/version/:version", get_job_version, 0,
		  ACL_NEED_NS_READ_OR_NODE_WRITE },
		{ "GET", "/v1/job/:id/allocations", get_job_allocs, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/job/:id/evaluations", get_job_evals, 0, ACL_NEED_NS_READ },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
