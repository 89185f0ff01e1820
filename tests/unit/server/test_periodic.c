/* Periodic jobs: the parent is never placed; POST /v1/job/:id/periodic/force
 * and the launcher (driven here with a clock of the test's own through
 * periodic_tick) register children that are placed like any batch job;
 * prohibit_overlap refuses or skips a launch while a child is not dead; a
 * stopped parent launches nothing. */
#include <time.h>

#include "server_fx.h"
#include "server/server-int.h"

/* A server whose launcher moves only when a test calls periodic_tick. */
static struct fx *fx_manual(void)
{
	struct server_config cfg = { .periodic_manual = true };
	return fx_new_cfg(&cfg);
}

/* fx_job's batch job with a periodic block (caller frees). */
static char *periodic_job(const char *id, const char *periodic)
{
	char *t = fx_job(id, "batch", 1, NULL, NULL, NULL), *out = NULL;
	size_t n = strlen(t);

	/* t ends with the job's and the body's closing braces */
	assert_true(n > 2 && !strcmp(t + n - 2, "}}"));
	t[n - 2] = '\0';
	assert_true(asprintf(&out, "%s, \"periodic\": %s}}", t, periodic) > 0);
	free(t);
	return out;
}

/* The jobs whose parent_id is parent (a new array of their ids). */
static json_t *children(struct fx *f, const char *parent)
{
	json_t *jobs = fx_get(f, "/v1/jobs%s", ""), *out = json_array(), *x;
	size_t i;
	json_array_foreach(jobs, i, x)
		if (!strcmp(json_string_value(json_object_get(x, "parent_id")) ?: "", parent))
			json_array_append(out, json_object_get(x, "id"));
	json_decref(jobs);
	return out;
}

static void test_force_launches_a_child_and_overlap_is_refused(void **state)
{
	struct fx *f = fx_manual();
	char *t = periodic_job("nightly", "{\"crons\": [\"* * * * *\"], \"prohibit_overlap\": true}");
	json_t *r, *j, *kids, *alloc;
	long status;
	int64_t now = (int64_t)time(NULL);
	char *child;

	(void)state;
	fx_node(f, "n1", 2, "H100", "exclusive", NULL);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	/* the parent is not placed; it runs while it launches */
	r = fx_job_allocs(f, "nightly");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	j = fx_get(f, "/v1/job/%s", "nightly");
	assert_string_equal(fx_s(j, "status"), "running");
	r = json_object_get(j, "periodic");
	assert_true(fx_i(r, "next_launch") > now);
	assert_true(fx_i(r, "next_launch") <= now + 60);
	assert_int_equal(fx_i(r, "next_launch") % 60, 0);
	json_decref(j);

	/* force: a child named by its launch, placed like any batch job */
	r = fx_ok(f, "POST", "/v1/job/nightly/periodic/force", NULL);
	assert_true(strlen(fx_s(r, "eval_id")) > 0);
	assert_true(fx_i(r, "index") > 0);
	assert_true(!strncmp(fx_s(r, "job_id"), "nightly-periodic-", 17));
	child = strdup(fx_s(r, "job_id"));
	json_decref(r);
	fx_idle(f);
	alloc = fx_the_alloc(f, child);
	j = fx_get(f, "/v1/job/%s", child);
	assert_string_equal(fx_s(j, "parent_id"), "nightly");
	assert_string_equal(fx_s(j, "type"), "batch");
	assert_true(json_is_null(json_object_get(j, "periodic")));
	json_decref(j);
	kids = children(f, "nightly");
	assert_int_equal(json_array_size(kids), 1);
	json_decref(kids);

	/* overlap prohibited: a second force is refused while the child runs */
	fx_alloc_status(f, alloc, "running");
	r = fx_call(f, "POST", "/v1/job/nightly/periodic/force", NULL, &status);
	assert_int_equal(status, 409);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "periodic_overlap");
	json_decref(r);
	kids = children(f, "nightly");
	assert_int_equal(json_array_size(kids), 1);
	json_decref(kids);

	/* the launcher skips (and records) a launch due meanwhile */
	periodic_tick(f->srv, now);
	periodic_tick(f->srv, now + 120);
	j = fx_get(f, "/v1/job/%s", "nightly");
	assert_true(fx_i(json_object_get(j, "periodic"), "last_skipped") > now);
	json_decref(j);
	kids = children(f, "nightly");
	assert_int_equal(json_array_size(kids), 1);
	json_decref(kids);

	/* once the child completes, the next launch happens */
	fx_alloc_status(f, alloc, "complete");
	json_decref(alloc);
	assert_true(periodic_tick(f->srv, now + 240) > now + 240);
	fx_idle(f);
	kids = children(f, "nightly");
	assert_int_equal(json_array_size(kids), 2);
	json_decref(kids);

	/* a stopped parent launches nothing, and cannot be forced */
	json_decref(fx_ok(f, "DELETE", "/v1/job/nightly", NULL));
	assert_int_equal(periodic_tick(f->srv, now + 600), -1);
	assert_int_equal(fx_status(f, "POST", "/v1/job/nightly/periodic/force", NULL), 409);
	kids = children(f, "nightly");
	assert_int_equal(json_array_size(kids), 2);
	json_decref(kids);
	j = fx_get(f, "/v1/job/%s", "nightly");
	assert_true(json_is_null(json_object_get(json_object_get(j, "periodic"), "next_launch")));
	json_decref(j);
	free(child);
	fx_free(f);
}

static void test_launches_follow_the_clock(void **state)
{
	struct fx *f = fx_manual();
	char *t = periodic_job("hourly", "{\"cron\": \"@hourly\"}");
	int64_t now = (int64_t)time(NULL), next, after;
	json_t *kids;
	char want[64];

	(void)state;
	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	free(fx_submit_text(f, t));
	free(t);
	/* the first pass only computes: nothing was due */
	next = periodic_tick(f->srv, now);
	assert_true(next > now && next % 3600 == 0);
	kids = children(f, "hourly");
	assert_int_equal(json_array_size(kids), 0);
	json_decref(kids);
	/* hours later: one launch, named by its time; the missed ones are not
	 * made up */
	after = periodic_tick(f->srv, next + 3 * 3600 + 5);
	assert_int_equal(after, next + 4 * 3600);
	fx_idle(f);
	kids = children(f, "hourly");
	assert_int_equal(json_array_size(kids), 1);
	snprintf(want, sizeof(want), "hourly-periodic-%lld", (long long)next);
	assert_string_equal(json_string_value(json_array_get(kids, 0)), want);
	json_decref(kids);
	/* a child is an ordinary batch job: placed */
	json_decref(fx_wait_running(f, want, 1));
	fx_free(f);
}

static void test_force_refusals(void **state)
{
	struct fx *f = fx_new();
	json_t *r;
	long status;

	(void)state;
	fx_submit(f, "plain", "batch", 1, NULL, NULL);
	r = fx_call(f, "POST", "/v1/job/plain/periodic/force", NULL, &status);
	assert_int_equal(status, 400);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "not_periodic");
	json_decref(r);
	assert_int_equal(fx_status(f, "POST", "/v1/job/nope/periodic/force", NULL), 404);
	/* a service cannot be periodic: refused, nothing stored */
	{
		char *t = fx_job("svc", "service", 1, NULL, NULL, NULL);
		size_t n = strlen(t);
		char *b = NULL;
		t[n - 2] = '\0';
		assert_true(asprintf(&b, "%s, \"periodic\": {\"cron\": \"@daily\"}}}", t) > 0);
		assert_int_equal(fx_status(f, "POST", "/v1/jobs", b), 400);
		assert_int_equal(fx_status(f, "GET", "/v1/job/svc", NULL), 404);
		free(b);
		free(t);
	}
	fx_free(f);
}

fx_main(cmocka_unit_test(test_force_launches_a_child_and_overlap_is_refused),
	cmocka_unit_test(test_launches_follow_the_clock),
	cmocka_unit_test(test_force_refusals))
