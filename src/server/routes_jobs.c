/* routes_jobs: register, parse, plan, read, revert, scale, stop and purge
 * jobs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/random.h>

#include "common/base64.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/autoscale.h"
#include "server/depends.h"
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
static json_t *stored_from_canon(const json_t *canon, int64_t version, const char *parent_id,
				 const char *payload)
{
	/* the server's fields, sorted; parent_id only on a periodic or
	 * dispatched job's child, payload only on a dispatched child that
	 * carries one (base64) */
	const char *keys[6];
	json_t *vals[6];
	size_t nk = 0;

	if (parent_id)
		keys[nk] = "parent_id", vals[nk++] = json_string(parent_id);
	if (payload)
		keys[nk] = "payload", vals[nk++] = json_string(payload);
	keys[nk] = "status", vals[nk++] = json_string("pending");
	keys[nk] = "stop", vals[nk++] = json_false();
	keys[nk] = "submit_time", vals[nk++] = json_integer(now_ns());
	keys[nk] = "version", vals[nk++] = json_integer(version);
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

/* The fields the server adds to a stored job (stored_from_canon, the
 * store's indexes): without them a stored job is its canonical job. */
static const char *const server_fields[] = { "version", "stop", "status", "submit_time",
					     "create_index", "modify_index", "job_modify_index",
					     "parent_id", "payload", "stop_reason",
					     "deployment", "stable", NULL };

/* A copy of a stored job without the server's fields (new reference). */
static json_t *canon_of_stored(const json_t *stored)
{
	json_t *a = json_deep_copy(stored);
	for (int i = 0; server_fields[i]; i++)
		json_object_del(a, server_fields[i]);
	return a;
}

/* Whether a stored job holds the same canonical job (and is not stopped). */
static bool same_job(const json_t *old, const json_t *canon)
{
	json_t *a = json_copy((json_t *)old);
	bool same;
	for (int i = 0; server_fields[i]; i++)
		json_object_del(a, server_fields[i]);
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

/* A registration: what POST /v1/jobs, revert and scale share.  build
 * makes the canonical job to store from the job as stored now (old, NULL
 * when there is none; only read): a new reference, or NULL after it
 * answered resp (a refusal: nothing is stored).  It runs again on every
 * attempt, so that a job changed meanwhile is built from afresh. */
struct registration {
	const char *ns, *id;
	const char *trigger;             /* the evaluation's triggered_by */
	json_t *(*build)(const json_t *old, void *arg, struct http_response *resp);
	void *arg;
	const struct diag_list *dl;      /* the warnings the answer carries */
	const char *parent_id;           /* a periodic or dispatched job's child: its parent */
	const char *payload;             /* a dispatched child's payload (base64); else NULL */
};

/* The warnings of an answer: dl's, or none (NULL: no job was decoded). */
static json_t *answer_warnings(const struct diag_list *dl)
{
	return dl ? job_warnings(dl) : json_array();
}

/* Stores rg's job as a new version with an evaluation, on condition that
 * the job and its namespace did not change since they were read (else
 * reads and builds again); an unchanged job stores nothing.  Answers resp
 * ({"eval_id", "job_modify_index", "index", "warnings"}).  0 (resp
 * answered) or -errno with err. */
static int register_job(struct server *srv, struct http_request *req, struct http_response *resp,
			const struct registration *rg, struct herd_err *err)
{
	int rc = 0;

	for (int attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
		struct store_key key = { rg->ns, rg->id, 0 };
		struct store_key nk = { NULL, rg->ns, 0 };
		struct store_batch b = STORE_BATCH_INIT;
		struct register_read rd = { rg->ns, rg->id, 0, NULL };
		json_t *old, *stored, *eval, *canon, *deps_req = NULL, *deps;
		uint64_t idx = 0;

		rc = store_view(srv->store, read_for_register, &rd, err);
		if (rc < 0)
			return rc;
		old = rd.old;
		if (!rd.ns_index) {
			json_decref(old);
			return http_error(resp, 400, "namespace_not_found",
					  "namespace %s does not exist; create it with herd namespace apply %s",
					  rg->ns, rg->ns);
		}
		canon = rg->build(old, rg->arg, resp);
		if (!canon) {
			json_decref(old);
			return 0;
		}
		rc = depends_check_register(srv, rg->ns, canon, &deps_req, resp, err);
		if (rc) {
			json_decref(old);
			json_decref(canon);
			return rc > 0 ? 0 : rc;
		}
		if (old && same_job(old, canon)) {
			json_decref(deps_req);
			http_reply(resp, 200, json_pack("{s:s, s:I, s:I, s:o}", "eval_id", "",
							"job_modify_index", (json_int_t)jint(old, "modify_index", 0),
							"index", (json_int_t)req->index, "warnings", answer_warnings(rg->dl)));
			json_decref(old);
			json_decref(canon);
			return 0;
		}
		/* the launcher reads periodic jobs again when one changes */
		bool periodic = job_is_periodic(canon) || job_is_periodic(old);
		deps = json_incref(json_object_get(canon, "depends_on"));
		stored = stored_from_canon(canon, old ? jint(old, "version", 0) + 1 : 0,
					   rg->parent_id, rg->payload);
		json_decref(canon);
		eval = eval_new(rg->ns, rg->id, rg->trigger, NULL);
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
		/* the jobs it depends on still there at the commit */
		depends_require(&b, rg->ns, deps_req);
		rc = store_commit(srv->store, &b, &idx, err);
		store_batch_release(&b);
		json_decref(old);
		json_decref(deps_req);
		if (rc == 0)
			depends_note_job(srv, rg->ns, rg->id, deps);
		json_decref(deps);
		if (rc == 0) {
			/* eval is the store's cached record now: only read */
			broker_enqueue(&srv->broker, jstr(eval, "id", ""), rg->ns, rg->id, 0);
			if (periodic)
				periodic_wake(srv);
			reply_written(resp, idx,
				      json_pack("{s:s, s:I, s:I, s:o}", "eval_id", jstr(eval, "id", ""),
						"job_modify_index", (json_int_t)idx, "index", (json_int_t)idx,
						"warnings", answer_warnings(rg->dl)));
		}
		json_decref(eval);
		if (rc != -ESTALE)
			return rc;
	}
	return http_error(resp, 409, "conflict", "job %s kept changing; try again", rg->id);
}

static json_t *canon_revalidated(const json_t *canon, struct http_response *resp);

/* POST /v1/jobs: the job of the body, whatever is stored; with
 * preserve_counts, each group the stored job has too keeps its count there
 * (what `herd job scale` or the autoscaler set), checked again against the
 * new file's bounds. */
struct submitted {
	const json_t *canon;
	bool preserve_counts;
};

static json_t *build_submitted(const json_t *old, void *arg, struct http_response *resp)
{
	const struct submitted *sub = arg;
	json_t *canon, *g, *og, *out;
	size_t i, k;

	if (!sub->preserve_counts || !old)
		return json_incref((json_t *)sub->canon);
	canon = json_deep_copy(sub->canon);
	json_array_foreach(json_object_get(canon, "groups"), i, g)
		json_array_foreach(json_object_get(old, "groups"), k, og)
			if (!strcmp(jstr(g, "name", ""), jstr(og, "name", "")))
				json_object_set(g, "count", json_object_get(og, "count"));
	out = canon_revalidated(canon, resp);
	json_decref(canon);
	return out;
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
	const json_t *pc = json_object_get(req->body, "preserve_counts");
	if (pc && !json_is_boolean(pc)) {
		http_error(resp, 400, "invalid_argument", "preserve_counts must be true or false");
		goto out;
	}
	canon = job_to_json_sorted(job);
	struct submitted sub = { canon, json_is_true(pc) };
	struct registration rg = { job->namespace, job->id, "job-register", build_submitted,
				   &sub, &dl, NULL, NULL };
	rc = register_job(srv, req, resp, &rg, &err);
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
		json_t *st = stored_from_canon(cand, v.job ? jint(v.job, "version", 0) + 1 : 0,
					       NULL, NULL);
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

static json_t *job_line_base(const json_t *x, const json_t *a);

/* One job's line of GET /v1/jobs, its status derived from allocs (an
 * array of the job's allocations, or NULL: none). */
static json_t *job_line(const json_t *x, const json_t *a)
{
	json_t *line = job_line_base(x, a);
	/* a periodic parent says so; its children name it */
	json_object_set_new(line, "periodic", json_boolean(job_is_periodic(x)));
	json_object_set_new(line, "parameterized", json_boolean(job_is_parameterized(x)));
	if (json_is_string(json_object_get(x, "parent_id")))
		json_object_set(line, "parent_id", json_object_get(x, "parent_id"));
	return line;
}

static json_t *job_line_base(const json_t *x, const json_t *a)
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

/* A periodic parent as readers see it: its periodic block with the next
 * launch (unix seconds; null when stopped, disabled or never) and the last
 * launch skipped under prohibit_overlap (0: none). */
static void periodic_decorate(struct server *srv, json_t *job)
{
	json_t *p = json_object_get(job, "periodic");
	int64_t next = -1;

	if (!json_is_object(p))
		return;
	if (!jbool(job, "stop", false) && jbool(p, "enabled", true))
		next = periodic_next_launch(job, (int64_t)time(NULL));
	json_object_set_new(p, "next_launch", next >= 0 ? json_integer(next) : json_null());
	json_object_set_new(p, "last_skipped",
			    json_integer(periodic_last_skipped(srv, jstr(job, "namespace", ""),
							       jstr(job, "id", ""))));
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
	periodic_decorate(srv, out);
	/* a dispatched child's payload is the client's to write, not the
	 * reader's to see: its size stands for it */
	if (json_is_string(json_object_get(out, "payload"))) {
		json_object_set_new(out, "payload_size", json_integer((json_int_t)base64_decoded_len(
			json_string_value(json_object_get(out, "payload")))));
		json_object_del(out, "payload");
	}
	http_reply(resp, 200, out);
	return 0;
}

/* GET /v1/job/:id/scale: each group's count, what of it runs, its scaling
 * block and what the autoscaler knows (autoscale.h). */
static int get_job_scale(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_filter f = { req_namespace(req), http_param(req, "id"), NULL };
	json_t *job = NULL, *allocs = NULL, *groups = json_object(), *g, *al;
	size_t i, k;
	int rc = load_job(srv, req, resp, &job);

	if (rc) {
		json_decref(groups);
		return rc > 0 ? 0 : rc;
	}
	if ((rc = store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL)) < 0) {
		json_decref(groups);
		json_decref(job);
		return rc;
	}
	json_array_foreach(json_object_get(job, "groups"), i, g) {
		const char *name = jstr(g, "name", "");
		json_t *sc = json_object_get(g, "scaling");
		json_t *st = autoscale_group_status(srv, f.ns, f.job_id, name);
		int64_t running = 0;
		json_array_foreach(allocs, k, al)
			running += !strcmp(jstr(al, "task_group", ""), name) &&
				   !strcmp(jstr(al, "desired_status", ""), "run") &&
				   !strcmp(jstr(al, "client_status", ""), "running");
		json_object_set_new(st, "count", json_integer(jint(g, "count", 0)));
		json_object_set_new(st, "running", json_integer(running));
		json_object_set(st, "scaling", sc ? sc : json_null());
		json_object_set_new(groups, name, st);
	}
	http_reply(resp, 200, json_pack("{s:s, s:s, s:I, s:o}", "job_id", f.job_id, "namespace",
					f.ns, "version", (json_int_t)jint(job, "version", 0),
					"groups", groups));
	json_decref(allocs);
	json_decref(job);
	return 0;
}

/* GET /v1/job/:id/actions: the action blocks of the job's tasks (its
 * latest version), [{"name", "group", "task", "command", "args"}] in the
 * job's order.  An allocation runs the actions of its own version: the
 * node resolves the name there (client_http.c). */
static int get_job_actions(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *job = NULL, *out, *g, *t, *a;
	size_t i, j, k;
	int rc = load_job(srv, req, resp, &job);

	if (rc)
		return rc > 0 ? 0 : rc;
	out = json_array();
	json_array_foreach(json_object_get(job, "groups"), i, g)
		json_array_foreach(json_object_get(g, "tasks"), j, t)
			json_array_foreach(json_object_get(t, "actions"), k, a) {
				json_t *args = json_object_get(a, "args");
				json_array_append_new(out, json_pack(
					"{s:s, s:s, s:s, s:s, s:o}", "name", jstr(a, "name", ""),
					"group", jstr(g, "name", ""), "task", jstr(t, "name", ""),
					"command", jstr(a, "command", ""), "args",
					json_is_array(args) ? json_incref(args) : json_array()));
			}
	json_decref(job);
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
	/* what agents fetch to run an allocation: the job as submitted, not
	 * its rolling update's state (an agent from before deployments
	 * would not decode it); GET /v1/job/:id/versions shows that */
	json_object_del(job, "deployment");
	json_object_del(job, "stable");
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

/* Whether every key of body is one of known (NULL-terminated); else
 * answers 400 naming the first unknown one.  A body that is no object is
 * refused too. */
static bool body_keys_known(const json_t *body, const char *const *known,
			    struct http_response *resp)
{
	const char *k;
	json_t *v;

	if (!json_is_object(body)) {
		http_error(resp, 400, "invalid_argument", "the body must be a JSON object");
		return false;
	}
	json_object_foreach((json_t *)body, k, v) {
		int i = 0;
		while (known[i] && strcmp(known[i], k))
			i++;
		if (!known[i]) {
			http_error(resp, 400, "invalid_argument", "unknown field \"%s\"", k);
			return false;
		}
	}
	return true;
}

/* The integer field key of body into *out (absent or null: *out = dflt),
 * or false after a 400 when it is not an integer >= 0. */
static bool body_index(const json_t *body, const char *key, int64_t dflt, int64_t *out,
		       struct http_response *resp)
{
	const json_t *v = json_object_get(body, key);
	*out = dflt;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		http_error(resp, 400, "invalid_argument", "%s must be an integer >= 0", key);
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

/* The canonical job a stored job (a version, or the job with a change
 * made) holds, decoded and validated again as a submitted one: a new
 * reference, or NULL after a 400 invalid_job with its diagnostics (say,
 * a count past the schema's bounds). */
static json_t *canon_revalidated(const json_t *canon, struct http_response *resp)
{
	struct diag_list dl;
	struct job *job;
	json_t *out = NULL;

	diag_list_init(&dl);
	job = job_from_json(canon, NULL, &dl);
	if (job)
		out = job_to_json_sorted(job);
	else
		invalid_job(resp, &dl, NULL);
	job_free(job);
	diag_list_release(&dl);
	return out;
}

/* POST /v1/job/:id/revert: version's canonical job, checked against the
 * job as stored now (enforce >= 0: its version must be that). */
struct revert {
	const char *id;
	json_t *canon;    /* the version's canonical job (owned) */
	int64_t enforce;  /* -1: no check */
};

static json_t *build_revert(const json_t *old, void *arg, struct http_response *resp)
{
	struct revert *rv = arg;
	if (!old) { /* purged since the version was read */
		http_error(resp, 404, "job_not_found", "no job %s", rv->id);
		return NULL;
	}
	if (rv->enforce >= 0 && jint(old, "version", 0) != rv->enforce) {
		http_error(resp, 409, "version_mismatch",
			   "job %s is at version %lld, not %lld (enforce_prior_version)", rv->id,
			   (long long)jint(old, "version", 0), (long long)rv->enforce);
		return NULL;
	}
	return json_incref(rv->canon);
}

int job_revert_to(struct server *srv, const char *ns, const char *id, int64_t version,
		  int64_t enforce, const char *trigger, struct http_response *resp,
		  struct herd_err *err)
{
	struct store_key key = { ns, id, version };
	struct revert rv = { id, NULL, enforce };
	json_t *stored = NULL, *canon;
	int rc = store_get(srv->store, STORE_JOB_VERSION, &key, &stored, err);

	if (rc == -ENOENT)
		return http_error(resp, 404, "job_not_found", "no version %lld of job %s in namespace %s",
				  (long long)version, id, ns);
	if (rc < 0)
		return rc;
	canon = canon_of_stored(stored);
	json_decref(stored);
	rv.canon = canon_revalidated(canon, resp);
	json_decref(canon);
	if (!rv.canon)
		return 0;
	struct registration rg = { ns, id, trigger, build_revert, &rv, NULL, NULL, NULL };
	rc = register_job(srv, &(struct http_request){ 0 }, resp, &rg, err);
	json_decref(rv.canon);
	return rc;
}

static int post_job_revert(struct http_request *req, struct http_response *resp, void *ctx)
{
	static const char *const known[] = { "version", "enforce_prior_version", NULL };
	struct server *srv = ctx;
	struct store_key key = { req_namespace(req), http_param(req, "id"), 0 };
	struct revert rv = { key.id, NULL, -1 };
	struct herd_err err = { 0 };
	json_t *stored = NULL, *canon;
	int rc;

	if (!acl_allows_ns(req, key.ns, ACL_SUBMIT))
		return acl_deny(resp);
	if (!body_keys_known(req->body, known, resp) ||
	    !body_index(req->body, "enforce_prior_version", -1, &rv.enforce, resp) ||
	    !body_index(req->body, "version", -1, &key.version, resp))
		return 0;
	if (key.version < 0)
		return http_error(resp, 400, "invalid_argument",
				  "body must be {\"version\": N[, \"enforce_prior_version\": M]}");
	if (!valid_id(key.id))
		return http_error(resp, 404, "job_not_found", "no job %s", key.id);
	rc = store_get(srv->store, STORE_JOB_VERSION, &key, &stored, &err);
	if (rc == -ENOENT)
		return http_error(resp, 404, "job_not_found", "no version %lld of job %s in namespace %s",
				  (long long)key.version, key.id, key.ns);
	if (rc < 0)
		return rc;
	canon = canon_of_stored(stored);
	json_decref(stored);
	rv.canon = canon_revalidated(canon, resp);
	json_decref(canon);
	if (!rv.canon)
		return 0;
	struct registration rg = { key.ns, key.id, "job-revert", build_revert, &rv, NULL, NULL,
				   NULL };
	rc = register_job(srv, req, resp, &rg, &err);
	if (rc < 0)
		server_log(srv, "error", "revert job: %s", err.msg);
	json_decref(rv.canon);
	return rc;
}

/* POST /v1/job/:id/scale: the job as stored now with one group's count
 * changed. */
struct scale {
	const char *id;
	const char *group;  /* NULL: the job's only group */
	int64_t count;
};

/* The group of job named name (NULL: the only one), or NULL after a 404
 * (no such group) or a 400 (no name, and more than one group). */
static json_t *scale_group(const json_t *job, const struct scale *sc, struct http_response *resp)
{
	json_t *groups = json_object_get(job, "groups"), *g;
	size_t i;

	if (!sc->group) {
		if (json_array_size(groups) == 1)
			return json_array_get(groups, 0);
		http_error(resp, 400, "invalid_argument",
			   "job %s has %zu groups: name the one to scale (\"group\")", sc->id,
			   json_array_size(groups));
		return NULL;
	}
	json_array_foreach(groups, i, g)
		if (!strcmp(jstr(g, "name", ""), sc->group))
			return g;
	http_error(resp, 404, "group_not_found", "job %s has no group \"%s\"", sc->id, sc->group);
	return NULL;
}

static json_t *build_scale(const json_t *old, void *arg, struct http_response *resp)
{
	struct scale *sc = arg;
	json_t *canon, *g, *out = NULL;

	if (!old) {
		http_error(resp, 404, "job_not_found", "no job %s", sc->id);
		return NULL;
	}
	/* scaling a stopped job would start it again: that is a run's or a
	 * revert's to do */
	if (jbool(old, "stop", false)) {
		http_error(resp, 409, "job_stopped", "job %s is stopped; run it to start it again",
			   sc->id);
		return NULL;
	}
	canon = canon_of_stored(old);
	g = scale_group(canon, sc, resp);
	if (g) {
		json_object_set_new(g, "count", json_integer(sc->count));
		/* the spec's own checks: the count's bounds (job_schema.c) and
		 * whatever depends on it */
		out = canon_revalidated(canon, resp);
	}
	json_decref(canon);
	return out;
}

static int post_job_scale(struct http_request *req, struct http_response *resp, void *ctx)
{
	static const char *const known[] = { "group", "count", NULL };
	struct server *srv = ctx;
	const char *ns = req_namespace(req);
	const json_t *count, *group;
	struct scale sc = { http_param(req, "id"), NULL, 0 };
	struct herd_err err = { 0 };
	int rc;

	if (!acl_allows_ns(req, ns, ACL_SUBMIT))
		return acl_deny(resp);
	if (!body_keys_known(req->body, known, resp))
		return 0;
	count = json_object_get(req->body, "count");
	group = json_object_get(req->body, "group");
	if (!json_is_integer(count))
		return http_error(resp, 400, "invalid_argument",
				  "body must be {\"count\": N[, \"group\": \"name\"]}");
	if (group && !json_is_null(group) && !json_is_string(group))
		return http_error(resp, 400, "invalid_argument", "group must be a string");
	sc.count = json_integer_value(count);
	sc.group = json_string_value(group);
	if (!valid_id(sc.id))
		return http_error(resp, 404, "job_not_found", "no job %s", sc.id);
	struct registration rg = { ns, sc.id, "job-scaling", build_scale, &sc, NULL, NULL,
				   NULL };
	rc = register_job(srv, req, resp, &rg, &err);
	if (rc < 0)
		server_log(srv, "error", "scale job: %s", err.msg);
	return rc;
}

int job_scale_to(struct server *srv, const char *ns, const char *id, const char *group,
		 int64_t count, const char *trigger, struct http_response *resp,
		 struct herd_err *err)
{
	struct scale sc = { id, group, count };
	struct registration rg = { ns, id, trigger, build_scale, &sc, NULL, NULL, NULL };
	return register_job(srv, &(struct http_request){ 0 }, resp, &rg, err);
}

/* With the stop of job (no_shutdown_delay=true), in the same batch: its
 * allocations that have not ended are marked to stop without their
 * shutdown_delay (alloc_set_no_shutdown_delay); the evaluation's stop
 * keeps the mark.  Each must be unchanged at commit (else the caller's
 * -ESTALE retry reads them again). */
static int mark_no_shutdown_delay(struct server *srv, const struct store_key *job,
				  struct store_batch *b, struct herd_err *err)
{
	struct store_filter f = { job->ns, job->id, NULL };
	json_t *allocs = NULL, *a;
	size_t i;
	int rc = store_list(srv->store, STORE_ALLOC, &f, &allocs, err);

	json_array_foreach(allocs, i, a) {
		struct store_key ak = { NULL, jstr(a, "id", ""), 0 };
		json_t *c;
		if (alloc_client_terminal(a))
			continue;
		c = json_deep_copy(a);
		alloc_set_no_shutdown_delay(c);
		store_batch_require_index(b, STORE_ALLOC, &ak, (uint64_t)jint(a, "modify_index", 0));
		store_batch_put(b, STORE_ALLOC, c);
		json_decref(c);
	}
	json_decref(allocs);
	return rc;
}

/* DELETE /v1/job/:id[?purge=true][&no_shutdown_delay=true]: stop (the job
 * stays, marked stopped) or purge (the job and its versions go); either
 * way an evaluation stops the allocations, whose records stay until their
 * clients report them ended.  no_shutdown_delay: they stop without their
 * shutdown_delay (mark_no_shutdown_delay). */
static int delete_job(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *purge_arg = http_query(req, "purge");
	bool purge = purge_arg && (!strcmp(purge_arg, "true") || !strcmp(purge_arg, "1"));
	const char *nd = http_query(req, "no_shutdown_delay");
	bool no_delay = nd && (!strcmp(nd, "true") || !strcmp(nd, "1"));
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
		if (rc == 0 && no_delay)
			rc = mark_no_shutdown_delay(srv, &key, &b, &err);
		if (rc == 0)
			rc = store_commit(srv->store, &b, &idx, &err);
		store_batch_release(&b);
		if (rc == 0) {
			broker_enqueue(&srv->broker, jstr(eval, "id", ""), key.ns, key.id, 0);
			reply_written(resp, idx, json_pack("{s:s, s:I}", "eval_id", jstr(eval, "id", ""),
							   "index", (json_int_t)idx));
			/* a stopped or purged parent launches nothing more */
			if (job_is_periodic(job))
				periodic_wake(srv);
			/* jobs waiting for this one learn that it ended */
			depends_job_changed(srv, key.ns, key.id);
			if (purge)
				depends_forget_job(srv, key.ns, key.id);
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

/* --- periodic jobs: children and POST /v1/job/:id/periodic/force --- */

/* Whether a child of parent is not dead, in one view: its jobs are the
 * namespace's jobs whose parent_id is parent's id.  *child gets the first
 * such child's id (borrowed from buf). */
struct children_read {
	const char *ns, *parent;
	char busy[160];  /* the id of a child that is not dead; "" none */
};

static int read_children(struct store *s, void *arg, struct herd_err *err)
{
	struct children_read *a = arg;
	struct store_filter f = { a->ns, NULL, NULL };
	json_t *jobs = NULL, *x;
	size_t i;
	int rc = store_list_shared(s, STORE_JOB, &f, &jobs, err);

	json_array_foreach(jobs, i, x) {
		struct store_filter jf = { a->ns, jstr(x, "id", ""), NULL };
		json_t *allocs = NULL;
		if (rc < 0)
			break;
		if (strcmp(jstr(x, "parent_id", ""), a->parent))
			continue;
		rc = store_list_shared(s, STORE_ALLOC, &jf, &allocs, err);
		if (rc == 0 && strcmp(job_status(x, json_array_size(allocs) ? allocs : NULL), "dead")) {
			snprintf(a->busy, sizeof(a->busy), "%s", jstr(x, "id", ""));
			json_decref(allocs);
			break;
		}
		json_decref(allocs);
	}
	json_decref(jobs);
	return rc;
}

/* The child's canonical job: the parent's without periodic, named by the
 * child's id, validated again as a submitted job. */
static json_t *build_child(const json_t *old, void *arg, struct http_response *resp)
{
	json_t *canon = arg;
	(void)old;
	(void)resp;
	return json_incref(canon);
}

/* Registers child_id, a child of the stored parent (a periodic or
 * parameterized job): the parent's job without its periodic and
 * parameterized blocks, meta (an object, or NULL) merged over its meta,
 * validated again as a submitted job, stored with parent_id and payload
 * (base64, or NULL).  resp gets {"eval_id", "index"} or the refusal. */
static int register_child(struct server *srv, struct http_request *req, const json_t *parent,
			  const char *child_id, const char *trigger, const json_t *meta,
			  const char *payload, struct http_response *resp, struct herd_err *err)
{
	json_t *canon = canon_of_stored(parent), *child, *m;
	int rc;

	json_object_set_new(canon, "periodic", json_null());
	json_object_set_new(canon, "parameterized", json_null());
	json_object_set_new(canon, "id", json_string(child_id));
	json_object_set_new(canon, "name", json_string(child_id));
	if (meta && json_object_size(meta)) {
		m = json_object_get(canon, "meta");
		if (!json_is_object(m))
			json_object_set_new(canon, "meta", m = json_object());
		json_object_update(m, (json_t *)meta);
	}
	child = canon_revalidated(canon, resp);
	json_decref(canon);
	if (!child)
		return 0;
	struct registration rg = { jstr(parent, "namespace", "default"), child_id, trigger,
				   build_child, child, NULL, jstr(parent, "id", ""), payload };
	rc = register_job(srv, req, resp, &rg, err);
	json_decref(child);
	if (rc == 0 && resp->status == 200 && json_is_object(resp->body)) {
		json_object_del(resp->body, "warnings");
		json_object_del(resp->body, "job_modify_index");
	}
	return rc;
}

int periodic_launch(struct server *srv, const json_t *parent, int64_t t, bool check_overlap,
		    struct http_response *resp, struct herd_err *err)
{
	const char *ns = jstr(parent, "namespace", "default"), *pid = jstr(parent, "id", "");
	char *child_id = xasprintf("%s-periodic-%lld", pid, (long long)t);
	int rc = 0;

	if (check_overlap) {
		struct children_read cr = { ns, pid, "" };
		rc = store_view(srv->store, read_children, &cr, err);
		if (rc < 0)
			goto out;
		if (cr.busy[0]) {
			rc = http_error(resp, 409, "periodic_overlap",
					"job %s prohibits overlap and its child %s is not dead", pid,
					cr.busy);
			goto out;
		}
	}
	rc = register_child(srv, &(struct http_request){ 0 }, parent, child_id, "periodic-job",
			    NULL, NULL, resp, err);
	if (rc == 0 && resp->status == 200 && json_is_object(resp->body))
		json_object_set_new(resp->body, "job_id", json_string(child_id));
out:
	free(child_id);
	return rc;
}

static int post_job_periodic_force(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *ns = req_namespace(req);
	struct herd_err err = { 0 };
	json_t *job = NULL;
	int rc;

	if (!acl_allows_ns(req, ns, ACL_SUBMIT))
		return acl_deny(resp);
	rc = load_job(srv, req, resp, &job);
	if (rc)
		return rc > 0 ? 0 : rc;
	if (!job_is_periodic(job)) {
		rc = http_error(resp, 400, "not_periodic", "job %s is not periodic",
				jstr(job, "id", ""));
	} else if (jbool(job, "stop", false)) {
		rc = http_error(resp, 409, "job_stopped",
				"job %s is stopped; run it again to launch children", jstr(job, "id", ""));
	} else {
		bool overlap = jbool(json_object_get(job, "periodic"), "prohibit_overlap", false);
		rc = periodic_launch(srv, job, (int64_t)time(NULL), overlap, resp, &err);
		if (rc < 0)
			server_log(srv, "error", "force periodic job: %s", err.msg);
	}
	json_decref(job);
	return rc;
}

/* --- parameterized jobs: POST /v1/job/:id/dispatch --- */

/* Nomad's limit on a dispatched payload, decoded. */
#define DISPATCH_PAYLOAD_MAX (16 * 1024)

/* Whether key is in the string array list. */
static bool listed(const json_t *list, const char *key)
{
	size_t i;
	json_t *x;
	json_array_foreach(list, i, x)
		if (json_is_string(x) && !strcmp(json_string_value(x), key))
			return true;
	return false;
}

/* Checks a dispatch's payload (base64 string or absent) and meta (object
 * of strings or absent) against the parent's parameterized block; false
 * after answering 400. */
static bool dispatch_valid(const json_t *job, const json_t *payload, const json_t *meta,
			   struct http_response *resp)
{
	const json_t *p = json_object_get(job, "parameterized"), *x;
	const char *mode = jstr(p, "payload", "optional"), *id = jstr(job, "id", ""), *k;
	bool has = payload && !json_is_null(payload);
	size_t i, n = 0;
	unsigned char *bytes;

	if (has && !json_is_string(payload))
		return http_error(resp, 400, "invalid_argument", "payload must be a base64 string"), false;
	if (has && !(bytes = base64_decode(json_string_value(payload), &n)))
		return http_error(resp, 400, "invalid_argument", "payload is not valid base64"), false;
	if (has)
		free(bytes);
	if (has && n > DISPATCH_PAYLOAD_MAX)
		return http_error(resp, 400, "payload_too_large",
				  "payload is %zu bytes; a dispatched payload is at most %d bytes "
				  "(16 KiB) once decoded", n, DISPATCH_PAYLOAD_MAX), false;
	if (!has && !strcmp(mode, "required"))
		return http_error(resp, 400, "payload_required", "job %s requires a payload", id),
		       false;
	if (has && !strcmp(mode, "forbidden"))
		return http_error(resp, 400, "payload_forbidden", "job %s forbids a payload", id),
		       false;
	if (meta && !json_is_null(meta) && !json_is_object(meta))
		return http_error(resp, 400, "invalid_argument", "meta must be an object of strings"),
		       false;
	json_object_foreach((json_t *)meta, k, x) {
		if (!json_is_string(x))
			return http_error(resp, 400, "invalid_argument", "meta \"%s\" must be a string",
					  k), false;
		if (!listed(json_object_get(p, "meta_required"), k) &&
		    !listed(json_object_get(p, "meta_optional"), k))
			return http_error(resp, 400, "meta_unknown",
					  "meta key \"%s\" is neither required nor optional in job %s",
					  k, id), false;
	}
	json_array_foreach(json_object_get(p, "meta_required"), i, x)
		if (!json_object_get(meta, json_string_value(x)))
			return http_error(resp, 400, "meta_required",
					  "job %s requires meta key \"%s\"", id, json_string_value(x)),
			       false;
	return true;
}

static int post_job_dispatch(struct http_request *req, struct http_response *resp, void *ctx)
{
	static const char *const known[] = { "payload", "meta", NULL };
	struct server *srv = ctx;
	const char *ns = req_namespace(req);
	const json_t *payload = json_object_get(req->body, "payload");
	const json_t *meta = json_object_get(req->body, "meta");
	struct herd_err err = { 0 };
	json_t *job = NULL;
	uint32_t rnd;
	char *child_id;
	int rc;

	if (!acl_allows_ns(req, ns, ACL_SUBMIT))
		return acl_deny(resp);
	/* an empty body is a dispatch with neither payload nor meta */
	if (req->body && !body_keys_known(req->body, known, resp))
		return 0;
	rc = load_job(srv, req, resp, &job);
	if (rc)
		return rc > 0 ? 0 : rc;
	if (!job_is_parameterized(job)) {
		rc = http_error(resp, 400, "not_parameterized", "job %s is not parameterized",
				jstr(job, "id", ""));
	} else if (jbool(job, "stop", false)) {
		rc = http_error(resp, 409, "job_stopped",
				"job %s is stopped; run it again to dispatch it", jstr(job, "id", ""));
	} else if (dispatch_valid(job, payload, meta, resp)) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)now_ns();
		child_id = xasprintf("%s-dispatch-%lld-%08x", jstr(job, "id", ""),
				     (long long)time(NULL), (unsigned)rnd);
		rc = register_child(srv, req, job, child_id, "job-dispatch",
				    json_is_object(meta) ? meta : NULL,
				    json_is_string(payload) && *json_string_value(payload)
					    ? json_string_value(payload) : NULL, resp, &err);
		if (rc == 0 && resp->status == 200 && json_is_object(resp->body))
			json_object_set_new(resp->body, "dispatched_job_id", json_string(child_id));
		if (rc < 0)
			server_log(srv, "error", "dispatch job: %s", err.msg);
		free(child_id);
	}
	json_decref(job);
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
		{ "POST", "/v1/job/:id/revert", post_job_revert, HTTP_ROUTE_BODY, ACL_NEED_NS_SUBMIT },
		{ "POST", "/v1/job/:id/scale", post_job_scale, HTTP_ROUTE_BODY, ACL_NEED_NS_SUBMIT },
		{ "POST", "/v1/job/:id/periodic/force", post_job_periodic_force, 0,
		  ACL_NEED_NS_SUBMIT },
		{ "POST", "/v1/job/:id/dispatch", post_job_dispatch, HTTP_ROUTE_BODY,
		  ACL_NEED_NS_SUBMIT },
		{ "GET", "/v1/job/:id/versions", get_job_versions, 0, ACL_NEED_NS_READ_OR_NODE_WRITE },
		{ "GET", "/v1/job/:id/version/:version", get_job_version, 0,
		  ACL_NEED_NS_READ_OR_NODE_WRITE },
		{ "GET", "/v1/job/:id/allocations", get_job_allocs, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/job/:id/evaluations", get_job_evals, 0, ACL_NEED_NS_READ },
		{ "GET", "/v1/job/:id/scale", get_job_scale, 0, ACL_NEED_NS_READ },
		{ "GET", "/v1/job/:id/actions", get_job_actions, 0, ACL_NEED_NS_READ },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
