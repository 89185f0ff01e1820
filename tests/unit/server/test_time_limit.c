/* An allocation that its agent reports failed by the group's time limit
 * (time_limit.reached) is not rescheduled, whatever the reschedule policy
 * allows; the same failure without the marker is.  The server keeps the
 * report's time_limit with the allocation and refuses a malformed one. */
#include "server_fx.h"

#define POLICY ", \"time_limit\": \"1h\", \"reschedule\": {\"attempts\": 3, \"interval\": \"1h\"," \
	" \"delay\": \"0s\", \"delay_function\": \"constant\", \"unlimited\": false}"

/* Reports alloc running, then failed with body's extra fields. */
static void fail_with(struct fx *f, const json_t *al, const char *extra)
{
	char path[256], body[512];

	fx_alloc_status(f, al, "running");
	snprintf(path, sizeof(path), "/v1/allocation/%s/status", fx_s(al, "id"));
	snprintf(body, sizeof(body), "{\"client_status\": \"failed\", \"client_description\": "
		 "\"time limit 1h reached\"%s}", extra);
	json_decref(fx_ok(f, "PUT", path, body));
}

/* Lets the evaluations the failure made run to their end. */
static void settle(struct fx *f)
{
	fx_idle(f);
	usleep(200000);
	fx_idle(f);
}

static void test_time_limit_end_is_final(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *all, *tl;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "tl", "batch", 1, NULL, POLICY);
	fx_idle(f);
	al = fx_the_alloc(f, "tl");
	fail_with(f, al, ", \"time_limit\": {\"limit\": 3600000000000, \"started_at\": 1, "
		  "\"reached\": true}");
	json_decref(al);
	settle(f);
	all = fx_job_allocs(f, "tl");
	assert_int_equal(json_array_size(all), 1); /* no replacement */
	al = json_array_get(all, 0);
	assert_string_equal(fx_s(al, "client_status"), "failed");
	assert_string_equal(fx_s(al, "desired_status"), "run");
	assert_string_equal(fx_s(al, "client_description"), "time limit 1h reached");
	tl = json_object_get(al, "time_limit");
	assert_true(json_is_true(json_object_get(tl, "reached")));
	assert_int_equal(json_integer_value(json_object_get(tl, "limit")), 3600000000000LL);
	json_decref(all);
	fx_free(f);
}

/* The control: the same policy reschedules a failure whose limit was not
 * reached (reached false, or no time_limit at all). */
static void test_other_failures_rescheduled(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *all;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "tl", "batch", 1, NULL, POLICY);
	fx_idle(f);
	al = fx_the_alloc(f, "tl");
	fail_with(f, al, ", \"time_limit\": {\"limit\": 3600000000000, \"started_at\": 1, "
		  "\"reached\": false}");
	json_decref(al);
	json_decref(fx_wait_running(f, "tl", 1));
	all = fx_job_allocs(f, "tl");
	assert_int_equal(json_array_size(all), 2);
	json_decref(all);
	al = fx_the_alloc(f, "tl");
	assert_int_equal(fx_i(al, "reschedule_attempts"), 1);
	fail_with(f, al, "");
	json_decref(al);
	json_decref(fx_wait_running(f, "tl", 1));
	all = fx_job_allocs(f, "tl");
	assert_int_equal(json_array_size(all), 3);
	json_decref(all);
	fx_free(f);
}

/* A gang member ended by the limit ends the gang: nothing is placed again. */
static void test_gang_member_time_limit(void **state)
{
	struct fx *f = fx_new();
	json_t *all, *al;
	size_t i, failed = 0;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "g", "batch", 2, NULL, ", \"gang\": true" POLICY);
	all = fx_wait_running(f, "g", 2);
	fail_with(f, json_array_get(all, 0), ", \"time_limit\": {\"limit\": 3600000000000, "
		  "\"started_at\": 1, \"reached\": true}");
	json_decref(all);
	settle(f);
	all = fx_job_allocs(f, "g");
	assert_int_equal(json_array_size(all), 2);
	json_array_foreach(all, i, al)
		failed += !strcmp(fx_s(al, "client_status"), "failed");
	assert_int_equal(failed, 1);
	json_decref(all);
	/* its peer was stopped, not replaced: the failed one is all that runs */
	al = fx_the_alloc(f, "g");
	assert_string_equal(fx_s(al, "client_status"), "failed");
	json_decref(al);
	fx_free(f);
}

static void test_bad_time_limit_refused(void **state)
{
	struct fx *f = fx_new();
	json_t *al;
	char path[256];
	static const char *const bad[] = {
		"{\"client_status\": \"running\", \"time_limit\": 5}",
		"{\"client_status\": \"running\", \"time_limit\": {\"limit\": 0, \"started_at\": 0, "
		"\"reached\": false}}",
		"{\"client_status\": \"running\", \"time_limit\": {\"limit\": 1, \"started_at\": 0, "
		"\"reached\": \"yes\"}}",
		"{\"client_status\": \"running\", \"time_limit\": {\"limit\": 1, \"reached\": true}}",
	};
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "tl", "batch", 1, NULL, POLICY);
	fx_idle(f);
	al = fx_the_alloc(f, "tl");
	snprintf(path, sizeof(path), "/v1/allocation/%s/status", fx_s(al, "id"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fx_status(f, "PUT", path, bad[i]), 400);
	json_decref(al);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_limit_end_is_final),
		cmocka_unit_test(test_other_failures_rescheduled),
		cmocka_unit_test(test_gang_member_time_limit),
		cmocka_unit_test(test_bad_time_limit_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
