/* Failed allocations and the group's reschedule policy: the delay (a
 * delayed follow-up evaluation), attempts within interval, unlimited, and
 * the delay functions constant, exponential and fibonacci with max_delay. */
#include "server_fx.h"

/* Submits service job id (count 1, no device) with reschedule policy. */
static void submit_policy(struct fx *f, const char *id, const char *policy)
{
	char extra[512];
	snprintf(extra, sizeof(extra), ", \"reschedule\": %s", policy);
	fx_submit(f, id, "service", 1, NULL, extra);
	fx_idle(f);
}

/* Waits until the job's allocation to run is a pending one with this many
 * reschedule attempts; returns it. */
static json_t *wait_attempt(struct fx *f, const char *job, long long attempts)
{
	for (int i = 0; i < 300; i++) {
		json_t *al = fx_running(f, job), *one = json_array_get(al, 0);
		if (json_array_size(al) == 1 && !strcmp(fx_s(one, "client_status"), "pending") &&
		    fx_i(one, "reschedule_attempts") == attempts) {
			json_incref(one);
			json_decref(al);
			return one;
		}
		json_decref(al);
		usleep(20000);
	}
	fail_msg("job %s: no replacement with %lld attempts", job, attempts);
	return NULL;
}

/* Fails alloc (running, then failed) and returns it as stored after. */
static json_t *fail_alloc(struct fx *f, json_t *al)
{
	json_t *now;
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, "failed");
	now = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
	json_decref(al);
	return now;
}

/* The follow-up ("reschedule") evaluation due after the failure of
 * alloc: its wait_until minus the failed allocation's modify_time, or -1
 * when there is none. */
static long long followup_delay(struct fx *f, const char *job, const json_t *failed)
{
	json_t *evs = fx_evals(f, job, NULL), *e;
	long long best = -1, best_create = -1;
	size_t i;
	json_array_foreach(evs, i, e) {
		if (strcmp(fx_s(e, "triggered_by"), "reschedule") ||
		    fx_i(e, "create_time") < fx_i(failed, "modify_time") ||
		    (best_create >= 0 && fx_i(e, "create_time") > best_create))
			continue;
		best_create = fx_i(e, "create_time");
		best = fx_i(e, "wait_until") - fx_i(failed, "modify_time");
	}
	json_decref(evs);
	return best;
}

static void test_delayed_followup(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *evs, *r;
	char *first;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	submit_policy(f, "d", "{\"attempts\": 3, \"interval\": \"1h\", \"delay\": \"1s\","
			      " \"delay_function\": \"constant\", \"unlimited\": false}");
	al = fail_alloc(f, fx_the_alloc(f, "d"));
	first = strdup(fx_s(al, "id"));
	fx_idle(f);
	/* not yet: the failed one is still the slot's, a follow-up is due */
	r = fx_the_alloc(f, "d");
	assert_string_equal(fx_s(r, "id"), first);
	json_decref(r);
	evs = fx_evals(f, "d", "pending");
	assert_int_equal(json_array_size(evs), 1);
	assert_string_equal(fx_s(json_array_get(evs, 0), "triggered_by"), "reschedule");
	json_decref(evs);
	assert_int_equal(followup_delay(f, "d", al), SEC);
	json_decref(al);
	usleep(1200000);
	al = wait_attempt(f, "d", 1);
	assert_string_equal(fx_s(al, "previous_allocation"), first);
	assert_int_equal(json_array_size(json_object_get(al, "reschedule_events")), 1);
	json_decref(al);
	r = fx_get(f, "/v1/allocation/%s", first);
	assert_string_equal(fx_s(r, "desired_status"), "stop");
	json_decref(r);
	free(first);
	fx_free(f);
}

static void test_attempts_within_interval(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *evs;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	submit_policy(f, "a", "{\"attempts\": 1, \"interval\": \"1s\", \"delay\": \"0s\","
			      " \"delay_function\": \"constant\", \"unlimited\": false}");
	al = fail_alloc(f, fx_the_alloc(f, "a"));
	json_decref(al);
	al = wait_attempt(f, "a", 1);
	/* the last attempt is older than interval: allowed again */
	usleep(1200000);
	al = fail_alloc(f, al);
	json_decref(al);
	al = wait_attempt(f, "a", 2);
	/* within interval of the last: exhausted, the slot stays failed */
	al = fail_alloc(f, al);
	fx_idle(f);
	usleep(200000);
	fx_idle(f);
	json_decref(al);
	al = fx_the_alloc(f, "a");
	assert_string_equal(fx_s(al, "client_status"), "failed");
	assert_int_equal(fx_i(al, "reschedule_attempts"), 2);
	json_decref(al);
	evs = fx_evals(f, "a", "pending");
	assert_int_equal(json_array_size(evs), 0);
	json_decref(evs);
	fx_free(f);
}

static void test_unlimited(void **state)
{
	struct fx *f = fx_new();
	json_t *al;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	submit_policy(f, "u", "{\"attempts\": 0, \"delay\": \"0s\", \"delay_function\": \"constant\","
			      " \"unlimited\": true}");
	al = fx_the_alloc(f, "u");
	for (int k = 1; k <= 5; k++) {
		al = fail_alloc(f, al);
		json_decref(al);
		al = wait_attempt(f, "u", k);
	}
	assert_int_equal(json_array_size(json_object_get(al, "reschedule_events")), 5);
	json_decref(al);
	al = fx_job_allocs(f, "u");
	assert_int_equal(json_array_size(al), 6);
	json_decref(al);
	fx_free(f);
}

/* Fails the job's allocation n times and checks each follow-up's delay. */
static void check_delays(struct fx *f, const char *job, const long long *want, int n)
{
	json_t *al = fx_the_alloc(f, job);
	for (int k = 0; k < n; k++) {
		long long d = -1;
		al = fail_alloc(f, al);
		for (int w = 0; w < 100 && d < 0; w++) {
			fx_idle(f);
			d = followup_delay(f, job, al);
			if (d < 0)
				usleep(10000);
		}
		if (d != want[k])
			fail_msg("%s failure %d: delay %lld ms, expected %lld ms", job, k, d / MS,
				 want[k] / MS);
		json_decref(al);
		al = wait_attempt(f, job, k + 1);
	}
	json_decref(al);
}

static void test_delay_functions(void **state)
{
	struct fx *f = fx_new();
	static const long long constant[] = { 100 * MS, 100 * MS, 100 * MS };
	static const long long exponential[] = { 100 * MS, 200 * MS, 300 * MS, 300 * MS };
	static const long long fibonacci[] = { 100 * MS, 100 * MS, 200 * MS, 300 * MS, 400 * MS };
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	submit_policy(f, "c", "{\"delay\": \"100ms\", \"delay_function\": \"constant\", \"unlimited\": true}");
	submit_policy(f, "e", "{\"delay\": \"100ms\", \"delay_function\": \"exponential\","
			      " \"max_delay\": \"300ms\", \"unlimited\": true}");
	submit_policy(f, "fib", "{\"delay\": \"100ms\", \"delay_function\": \"fibonacci\","
				" \"max_delay\": \"400ms\", \"unlimited\": true}");
	check_delays(f, "c", constant, 3);
	check_delays(f, "e", exponential, 4);
	check_delays(f, "fib", fibonacci, 5);
	fx_free(f);
}

static void test_batch_default_policy(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *evs;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	/* batch: one attempt in 24h, 5s constant delay (Nomad's defaults) */
	fx_submit(f, "b", "batch", 1, NULL, NULL);
	fx_idle(f);
	al = fail_alloc(f, fx_the_alloc(f, "b"));
	fx_idle(f);
	assert_int_equal(followup_delay(f, "b", al), 5 * SEC);
	json_decref(al);
	evs = fx_evals(f, "b", "pending");
	assert_int_equal(json_array_size(evs), 1);
	json_decref(evs);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_delayed_followup),
	cmocka_unit_test(test_attempts_within_interval),
	cmocka_unit_test(test_unlimited),
	cmocka_unit_test(test_delay_functions),
	cmocka_unit_test(test_batch_default_policy))
