/* Job versions through the API: POST /v1/job/:id/revert registers an
 * earlier version again as a new one, POST /v1/job/:id/scale changes one
 * group's count; every refusal stores nothing. */
#include "server_fx.h"

/* Two groups, "a" and "b", so that a scale can be seen to touch one. */
#define TWO_GROUPS                                                                          \
	"{\"job\": {\"id\": \"two\", \"type\": \"service\", \"groups\": ["                  \
	"{\"name\": \"a\", \"count\": 1, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\"," \
	" \"config\": {\"command\": \"/bin/true\"}}]},"                                     \
	"{\"name\": \"b\", \"count\": 2, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\"," \
	" \"config\": {\"command\": \"/bin/sleep\"}}]}]}}"

/* A stored job or version without the server's fields: its canonical job. */
static json_t *canon(json_t *stored)
{
	static const char *const server[] = { "version", "stop", "status", "submit_time",
					      "create_index", "modify_index", "job_modify_index",
					      NULL };
	for (int i = 0; server[i]; i++)
		json_object_del(stored, server[i]);
	return stored;
}

static size_t nversions(struct fx *f, const char *id)
{
	json_t *v = fx_get(f, "/v1/job/%s/versions", id);
	size_t n = json_array_size(v);
	json_decref(v);
	return n;
}

static long long job_version(struct fx *f, const char *id)
{
	json_t *j = fx_get(f, "/v1/job/%s", id);
	long long v = fx_i(j, "version");
	json_decref(j);
	return v;
}

/* v0 runs /bin/true, v1 /bin/false: a service in two versions. */
static struct fx *two_versions(void)
{
	struct fx *f = fx_new();
	char *t = fx_job("svc", "service", 1, NULL, NULL, "/bin/true");
	free(fx_submit_text(f, t));
	free(t);
	t = fx_job("svc", "service", 1, NULL, NULL, "/bin/false");
	free(fx_submit_text(f, t));
	free(t);
	assert_int_equal(job_version(f, "svc"), 1);
	return f;
}

static void test_revert_registers_old_spec_as_new_version(void **state)
{
	struct fx *f = two_versions();
	json_t *r, *v0, *v2, *ev;
	(void)state;
	r = fx_ok(f, "POST", "/v1/job/svc/revert", "{\"version\": 0}");
	assert_true(strlen(fx_s(r, "eval_id")) > 0);
	assert_true(fx_i(r, "job_modify_index") > 0);
	assert_int_equal(fx_i(r, "index"), fx_i(r, "job_modify_index"));
	assert_int_equal(job_version(f, "svc"), 2);
	assert_int_equal(nversions(f, "svc"), 3);
	v0 = canon(fx_get(f, "/v1/job/svc/version/%s", "0"));
	v2 = canon(fx_get(f, "/v1/job/svc/version/%s", "2"));
	assert_true(json_equal(v0, v2));
	json_decref(v0);
	json_decref(v2);
	/* the evaluation says what made it */
	ev = fx_get(f, "/v1/evaluation/%s", fx_s(r, "eval_id"));
	assert_string_equal(fx_s(ev, "triggered_by"), "job-revert");
	assert_string_equal(fx_s(ev, "job_id"), "svc");
	json_decref(ev);
	json_decref(r);
	/* reverting to the spec that is current: nothing new */
	r = fx_ok(f, "POST", "/v1/job/svc/revert", "{\"version\": 0}");
	assert_string_equal(fx_s(r, "eval_id"), "");
	json_decref(r);
	assert_int_equal(nversions(f, "svc"), 3);
	fx_idle(f);
	fx_free(f);
}

static void test_revert_enforce_prior_version(void **state)
{
	struct fx *f = two_versions();
	json_t *r;
	long status = 0;
	(void)state;
	r = fx_call(f, "POST", "/v1/job/svc/revert",
		    "{\"version\": 0, \"enforce_prior_version\": 0}", &status);
	assert_int_equal(status, 409);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "version_mismatch");
	json_decref(r);
	assert_int_equal(nversions(f, "svc"), 2);
	assert_int_equal(job_version(f, "svc"), 1);
	/* the right one goes through */
	r = fx_ok(f, "POST", "/v1/job/svc/revert", "{\"version\": 0, \"enforce_prior_version\": 1}");
	assert_true(strlen(fx_s(r, "eval_id")) > 0);
	json_decref(r);
	assert_int_equal(job_version(f, "svc"), 2);
	fx_idle(f);
	fx_free(f);
}

static void test_revert_refusals_store_nothing(void **state)
{
	struct fx *f = two_versions();
	(void)state;
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert", "{\"version\": 7}"), 404);
	assert_int_equal(fx_status(f, "POST", "/v1/job/nope/revert", "{\"version\": 0}"), 404);
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert", "{\"version\": -1}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert", "{\"version\": \"0\"}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert", "{}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert", "[0]"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert",
				   "{\"version\": 0, \"extra\": 1}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/svc/revert",
				   "{\"version\": 0, \"enforce_prior_version\": -2}"), 400);
	assert_int_equal(nversions(f, "svc"), 2);
	assert_int_equal(job_version(f, "svc"), 1);
	fx_idle(f);
	fx_free(f);
}

static void test_scale_changes_only_that_group(void **state)
{
	struct fx *f = fx_new();
	json_t *before, *after, *r, *ev;
	(void)state;
	free(fx_submit_text(f, TWO_GROUPS));
	before = canon(fx_get(f, "/v1/job/%s", "two"));
	r = fx_ok(f, "POST", "/v1/job/two/scale", "{\"group\": \"b\", \"count\": 5}");
	assert_true(strlen(fx_s(r, "eval_id")) > 0);
	ev = fx_get(f, "/v1/evaluation/%s", fx_s(r, "eval_id"));
	assert_string_equal(fx_s(ev, "triggered_by"), "job-scaling");
	json_decref(ev);
	json_decref(r);
	assert_int_equal(job_version(f, "two"), 1);
	after = canon(fx_get(f, "/v1/job/%s", "two"));
	assert_int_equal(fx_i(json_array_get(json_object_get(after, "groups"), 1), "count"), 5);
	assert_int_equal(fx_i(json_array_get(json_object_get(after, "groups"), 0), "count"), 1);
	/* with b's count put back, nothing else differs */
	json_object_set_new(json_array_get(json_object_get(after, "groups"), 1), "count",
			    json_integer(2));
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
	/* the same count again: no new version */
	r = fx_ok(f, "POST", "/v1/job/two/scale", "{\"group\": \"b\", \"count\": 5}");
	assert_string_equal(fx_s(r, "eval_id"), "");
	json_decref(r);
	assert_int_equal(nversions(f, "two"), 2);
	fx_idle(f);
	fx_free(f);
}

static void test_scale_only_group_and_zero(void **state)
{
	struct fx *f = fx_new();
	json_t *j;
	char *t = fx_job("one", "service", 1, NULL, NULL, NULL);
	(void)state;
	free(fx_submit_text(f, t));
	free(t);
	json_decref(fx_ok(f, "POST", "/v1/job/one/scale", "{\"count\": 0}"));
	j = fx_get(f, "/v1/job/%s", "one");
	assert_int_equal(fx_i(json_array_get(json_object_get(j, "groups"), 0), "count"), 0);
	assert_int_equal(fx_i(j, "version"), 1);
	json_decref(j);
	fx_idle(f);
	fx_free(f);
}

static void test_scale_refusals_store_nothing(void **state)
{
	struct fx *f = fx_new();
	json_t *r;
	long status = 0;
	(void)state;
	free(fx_submit_text(f, TWO_GROUPS));
	r = fx_call(f, "POST", "/v1/job/two/scale", "{\"group\": \"zz\", \"count\": 1}", &status);
	assert_int_equal(status, 404);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "group_not_found");
	json_decref(r);
	r = fx_call(f, "POST", "/v1/job/two/scale", "{\"group\": \"a\", \"count\": -1}", &status);
	assert_int_equal(status, 400);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "invalid_job");
	assert_non_null(strstr(fx_s(json_object_get(r, "error"), "message"), "count"));
	json_decref(r);
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale",
				   "{\"group\": \"a\", \"count\": 100001}"), 400);
	/* two groups: one must be named */
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale", "{\"count\": 3}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale", "{\"group\": \"a\"}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale",
				   "{\"group\": \"a\", \"count\": 1.5}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale",
				   "{\"group\": 1, \"count\": 1}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale",
				   "{\"group\": \"a\", \"count\": 1, \"x\": 0}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/job/nope/scale", "{\"count\": 1}"), 404);
	assert_int_equal(nversions(f, "two"), 1);
	assert_int_equal(job_version(f, "two"), 0);
	/* a stopped job is not started again by a scale */
	json_decref(fx_ok(f, "DELETE", "/v1/job/two", NULL));
	assert_int_equal(fx_status(f, "POST", "/v1/job/two/scale",
				   "{\"group\": \"a\", \"count\": 2}"), 409);
	assert_int_equal(nversions(f, "two"), 1);
	fx_idle(f);
	fx_free(f);
}

/* revert and scale need submit on the job's namespace, as a registration
 * does: a reader of it, and a team that cannot see it, get 403 and change
 * nothing. */
static void test_acl_needs_submit(void **state)
{
	struct fx *f = fx_new_teams(0, 1);
	json_t *r;
	char *mgmt, *reader, *other, *writer;
	(void)state;
	r = fx_ok(f, "POST", "/v1/acl/bootstrap", NULL);
	mgmt = strdup(fx_s(r, "secret_id"));
	json_decref(r);
	f->token = mgmt;
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"a\"}}"));
	reader = fx_token(f, "reader", "{\"namespace\": {\"a\": \"read\"}}");
	other = fx_token(f, "other", "{\"namespace\": {\"b\": \"submit\"}}");
	writer = fx_token(f, "writer", "{\"namespace\": {\"a\": \"submit\"}}");
	f->token = writer;
	json_decref(fx_ok(f, "POST", "/v1/jobs?namespace=a",
		"{\"job\": {\"id\": \"j\", \"namespace\": \"a\", \"type\": \"service\", \"groups\": "
		"[{\"name\": \"g\", \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}}]}]}}"));
	json_decref(fx_ok(f, "POST", "/v1/job/j/scale?namespace=a", "{\"count\": 2}"));
	for (int i = 0; i < 2; i++) {
		f->token = i ? other : reader;
		assert_int_equal(fx_status(f, "POST", "/v1/job/j/revert?namespace=a",
					   "{\"version\": 0}"), 403);
		assert_int_equal(fx_status(f, "POST", "/v1/job/j/scale?namespace=a",
					   "{\"count\": 3}"), 403);
		assert_int_equal(fx_status(f, "POST", "/v1/job/none/scale?namespace=a",
					   "{\"count\": 3}"), 403);
	}
	f->token = writer;
	assert_int_equal(fx_status(f, "GET", "/v1/job/j/version/2?namespace=a", NULL), 404);
	r = fx_ok(f, "POST", "/v1/job/j/revert?namespace=a", "{\"version\": 0}");
	assert_true(strlen(fx_s(r, "eval_id")) > 0);
	json_decref(r);
	r = fx_get(f, "/v1/job/j?namespace=%s", "a");
	assert_int_equal(fx_i(r, "version"), 2);
	assert_int_equal(fx_i(json_array_get(json_object_get(r, "groups"), 0), "count"), 1);
	json_decref(r);
	fx_idle(f);
	f->token = NULL;
	free(mgmt);
	free(reader);
	free(other);
	free(writer);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_revert_registers_old_spec_as_new_version),
	cmocka_unit_test(test_revert_enforce_prior_version),
	cmocka_unit_test(test_revert_refusals_store_nothing),
	cmocka_unit_test(test_scale_changes_only_that_group),
	cmocka_unit_test(test_scale_only_group_and_zero),
	cmocka_unit_test(test_scale_refusals_store_nothing),
	cmocka_unit_test(test_acl_needs_submit))
