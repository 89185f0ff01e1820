/* Parameterized jobs: the parent is never placed; POST /v1/job/:id/dispatch
 * registers a child (the parent's job with the dispatch's meta merged in
 * and its payload kept) that is placed like any batch job; a dispatch the
 * parent's parameterized block refuses stores nothing; submit on the
 * namespace is needed. */
#include "server_fx.h"
#include "server/server-int.h"

/* fx_job's batch job with a parameterized block (caller frees). */
static char *param_job(const char *id, const char *parameterized)
{
	char *t = fx_job(id, "batch", 1, NULL, NULL, NULL), *out = NULL;
	size_t n = strlen(t);

	/* t ends with the job's and the body's closing braces */
	assert_true(n > 2 && !strcmp(t + n - 2, "}}"));
	t[n - 2] = '\0';
	assert_true(asprintf(&out, "%s, \"meta\": {\"team\": \"ml\"}, \"parameterized\": %s}}", t,
			     parameterized) > 0);
	free(t);
	return out;
}

/* How many jobs the server holds (the parent and its children). */
static size_t njobs(struct fx *f)
{
	json_t *jobs = fx_get(f, "/v1/jobs%s", "");
	size_t n = json_array_size(jobs);
	json_decref(jobs);
	return n;
}

/* The code of a refused request's error; status must be want. */
static void expect_refused(struct fx *f, const char *path, const char *body, long want,
			   const char *code)
{
	long status;
	json_t *r = fx_call(f, "POST", path, body, &status);
	assert_int_equal(status, want);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), code);
	json_decref(r);
}

static void test_dispatch_places_a_child(void **state)
{
	struct fx *f = fx_new();
	char *t = param_job("render", "{\"payload\": \"optional\", \"meta_required\": [\"user\"],"
				      " \"meta_optional\": [\"quality\"]}");
	json_t *r, *j, *stored, *alloc;
	char *child, path[512];

	(void)state;
	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	/* the parent is not placed; it runs while it can be dispatched */
	r = fx_job_allocs(f, "render");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	j = fx_get(f, "/v1/job/%s", "render");
	assert_string_equal(fx_s(j, "status"), "running");
	assert_null(json_object_get(j, "payload"));
	json_decref(j);
	r = fx_get(f, "/v1/jobs%s", "");
	assert_true(json_is_true(json_object_get(json_array_get(r, 0), "parameterized")));
	json_decref(r);

	/* "hello\n" */
	r = fx_ok(f, "POST", "/v1/job/render/dispatch",
		  "{\"payload\": \"aGVsbG8K\", \"meta\": {\"user\": \"alice\"}}");
	assert_true(strlen(fx_s(r, "eval_id")) > 0);
	assert_true(fx_i(r, "index") > 0);
	assert_true(!strncmp(fx_s(r, "dispatched_job_id"), "render-dispatch-", 16));
	/* <unix seconds>-<8 hex> */
	assert_int_equal(strlen(strrchr(fx_s(r, "dispatched_job_id"), '-')), 9);
	child = strdup(fx_s(r, "dispatched_job_id"));
	json_decref(r);
	fx_idle(f);
	alloc = fx_the_alloc(f, child);
	json_decref(alloc);
	j = fx_get(f, "/v1/job/%s", child);
	assert_string_equal(fx_s(j, "parent_id"), "render");
	assert_string_equal(fx_s(j, "type"), "batch");
	assert_true(json_is_null(json_object_get(j, "parameterized")));
	/* the job's meta and the dispatch's, merged */
	assert_string_equal(fx_s(json_object_get(j, "meta"), "user"), "alice");
	assert_string_equal(fx_s(json_object_get(j, "meta"), "team"), "ml");
	/* readers see the payload's size, not the payload */
	assert_null(json_object_get(j, "payload"));
	assert_int_equal(fx_i(j, "payload_size"), 6);
	/* the client reads it with the job version it fetches */
	snprintf(path, sizeof(path), "/v1/job/%s/version/%lld", child, fx_i(j, "version"));
	json_decref(j);
	stored = fx_ok(f, "GET", path, NULL);
	assert_string_equal(fx_s(stored, "payload"), "aGVsbG8K");
	json_decref(stored);
	/* a dispatch without a payload: the child carries none */
	r = fx_ok(f, "POST", "/v1/job/render/dispatch", "{\"meta\": {\"user\": \"bob\"}}");
	j = fx_get(f, "/v1/job/%s", fx_s(r, "dispatched_job_id"));
	assert_null(json_object_get(j, "payload_size"));
	json_decref(j);
	json_decref(r);
	assert_int_equal(njobs(f), 3);
	fx_idle(f);
	free(child);
	fx_free(f);
}

static void test_dispatch_refusals_store_nothing(void **state)
{
	struct fx *f = fx_new();
	char *t, *big, *b64;
	size_t n = 16 * 1024 + 3;

	(void)state;
	t = param_job("req", "{\"payload\": \"required\", \"meta_required\": [\"user\"]}");
	free(fx_submit_text(f, t));
	free(t);
	t = param_job("none", "{\"payload\": \"forbidden\"}");
	free(fx_submit_text(f, t));
	free(t);
	fx_submit(f, "plain", "batch", 1, NULL, NULL);
	fx_idle(f);
	assert_int_equal(njobs(f), 3);

	expect_refused(f, "/v1/job/req/dispatch", "{\"meta\": {\"user\": \"a\"}}", 400,
		       "payload_required");
	expect_refused(f, "/v1/job/none/dispatch", "{\"payload\": \"aGk=\"}", 400,
		       "payload_forbidden");
	expect_refused(f, "/v1/job/req/dispatch", "{\"payload\": \"aGk=\"}", 400, "meta_required");
	expect_refused(f, "/v1/job/req/dispatch",
		       "{\"payload\": \"aGk=\", \"meta\": {\"user\": \"a\", \"color\": \"red\"}}", 400,
		       "meta_unknown");
	expect_refused(f, "/v1/job/req/dispatch", "{\"payload\": \"not base64!\"}", 400,
		       "invalid_argument");
	expect_refused(f, "/v1/job/req/dispatch", "{\"bogus\": 1}", 400, "invalid_argument");
	expect_refused(f, "/v1/job/plain/dispatch", "{}", 400, "not_parameterized");
	assert_int_equal(fx_status(f, "POST", "/v1/job/nope/dispatch", "{}"), 404);
	/* a payload past 16 KiB once decoded */
	big = calloc(n, 1);
	memset(big, 'x', n);
	{
		/* base64 of n 'x' bytes, built by hand: "eHh4" per 3 bytes */
		size_t groups = n / 3;
		b64 = calloc(groups * 4 + 1, 1);
		for (size_t i = 0; i < groups; i++)
			memcpy(b64 + 4 * i, "eHh4", 4);
	}
	assert_true(asprintf(&t, "{\"payload\": \"%s\", \"meta\": {\"user\": \"a\"}}", b64) > 0);
	{
		long status;
		json_t *r = fx_call(f, "POST", "/v1/job/req/dispatch", t, &status);
		assert_int_equal(status, 400);
		assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "payload_too_large");
		assert_non_null(strstr(fx_s(json_object_get(r, "error"), "message"), "16 KiB"));
		json_decref(r);
	}
	free(t);
	free(b64);
	free(big);
	/* a stopped parent */
	json_decref(fx_ok(f, "DELETE", "/v1/job/req", NULL));
	expect_refused(f, "/v1/job/req/dispatch", "{\"payload\": \"aGk=\", \"meta\": {\"user\": \"a\"}}",
		       409, "job_stopped");
	assert_int_equal(njobs(f), 3);
	/* a service cannot be parameterized: refused, nothing stored */
	{
		char *s = fx_job("svc", "service", 1, NULL, NULL, NULL), *b = NULL;
		s[strlen(s) - 2] = '\0';
		assert_true(asprintf(&b, "%s, \"parameterized\": {}}}", s) > 0);
		assert_int_equal(fx_status(f, "POST", "/v1/jobs", b), 400);
		assert_int_equal(fx_status(f, "GET", "/v1/job/svc", NULL), 404);
		free(b);
		free(s);
	}
	assert_int_equal(njobs(f), 3);
	fx_idle(f);
	fx_free(f);
}

/* dispatch needs submit on the namespace: a reader gets 403 and nothing
 * is stored. */
static void test_acl_needs_submit(void **state)
{
	struct fx *f = fx_new_teams(0, 1);
	json_t *r;
	char *mgmt, *reader, *writer;
	(void)state;
	r = fx_ok(f, "POST", "/v1/acl/bootstrap", NULL);
	mgmt = strdup(fx_s(r, "secret_id"));
	json_decref(r);
	f->token = mgmt;
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"a\"}}"));
	reader = fx_token(f, "reader", "{\"namespace\": {\"a\": \"read\"}}");
	writer = fx_token(f, "writer", "{\"namespace\": {\"a\": \"submit\"}}");
	f->token = writer;
	json_decref(fx_ok(f, "POST", "/v1/jobs?namespace=a",
		"{\"job\": {\"id\": \"d\", \"namespace\": \"a\", \"type\": \"batch\", "
		"\"parameterized\": {}, \"groups\": "
		"[{\"name\": \"g\", \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}}]}]}}"));
	f->token = reader;
	assert_int_equal(fx_status(f, "POST", "/v1/job/d/dispatch?namespace=a", "{}"), 403);
	r = fx_get(f, "/v1/jobs?namespace=%s", "a");
	assert_int_equal(json_array_size(r), 1);
	json_decref(r);
	f->token = writer;
	r = fx_ok(f, "POST", "/v1/job/d/dispatch?namespace=a", "{}");
	assert_true(strlen(fx_s(r, "dispatched_job_id")) > 0);
	json_decref(r);
	fx_idle(f);
	f->token = NULL;
	free(mgmt);
	free(reader);
	free(writer);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_dispatch_places_a_child),
	cmocka_unit_test(test_dispatch_refusals_store_nothing),
	cmocka_unit_test(test_acl_needs_submit))
