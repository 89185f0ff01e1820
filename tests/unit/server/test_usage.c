/* GPU-hours of a known schedule: a 2-GPU job and a 25% share that run over
 * the same interval. */
#include "server_fx.h"

#include <time.h>

static double hours_of(const json_t *u, const char *ns, const char *job)
{
	json_t *n, *j;
	size_t i, k;
	json_array_foreach(json_object_get(u, "namespaces"), i, n) {
		if (strcmp(json_string_value(json_object_get(n, "namespace")), ns))
			continue;
		if (!job)
			return json_real_value(json_object_get(n, "gpu_hours"));
		json_array_foreach(json_object_get(n, "jobs"), k, j)
			if (!strcmp(json_string_value(json_object_get(j, "job_id")), job))
				return json_real_value(json_object_get(j, "gpu_hours"));
	}
	return -1;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_known_schedule(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	json_t *u;
	double t0, t1, whole, frac, elapsed;
	(void)state;
	node_add(f, "n1", 2, "H100");
	node_add_sharing(f, "m1", 1, "H100", "mps");
	submit_gpu(f, "default", "two", 2, 50);
	json_decref(fx_ok(f, "POST", "/v1/jobs",
		"{\"job\": {\"id\": \"quarter\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\", \"count\": 1,"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1,"
		" \"compute\": 25}]}}]}]}}"));
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "two"), 1);
	assert_int_equal(nlive(f, "default", "quarter"), 1);
	t0 = mono_s();
	finish(f, "default", "two", "running");
	finish(f, "default", "quarter", "running");
	usleep(1500000);
	finish(f, "default", "two", "complete");
	finish(f, "default", "quarter", "complete");
	t1 = mono_s();
	elapsed = t1 - t0;
	u = fx_ok(f, "GET", "/v1/usage", NULL);
	whole = hours_of(u, "default", "two");
	frac = hours_of(u, "default", "quarter");
	/* 2 GPUs for ~1.5 s; the statuses bracket the run within the test's clock */
	assert_true(whole > 2 * 1.4 / 3600 && whole <= 2 * elapsed / 3600);
	assert_true(frac > 0.25 * 1.4 / 3600 && frac <= 0.25 * elapsed / 3600);
	assert_true(hours_of(u, "default", NULL) > whole + frac - 1e-9 &&
		    hours_of(u, "default", NULL) < whole + frac + 1e-9);
	json_decref(u);
	/* a window after the end counts nothing; a bad time is refused */
	u = fx_ok(f, "GET", "/v1/usage?since=2100-01-01T00:00:00Z", NULL);
	assert_true(hours_of(u, "default", "two") == 0);
	json_decref(u);
	{
		long st;
		json_decref(fx_call(f, "GET", "/v1/usage?since=yesterday", NULL, &st));
		assert_int_equal(st, 400);
	}
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_schedule),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
