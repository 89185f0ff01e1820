/* The usage ledger: GET /v1/usage answers the same before and after
 * garbage collection deleted the allocations it counts (teams.h, "Usage
 * ledger"), for a whole GPU, a 25% share, and a job with two allocations. */
#include "server_fx.h"

#include <math.h>
#include <time.h>

static json_t *usage_job(const json_t *u, const char *ns, const char *job)
{
	json_t *n, *j;
	size_t i, k;
	json_array_foreach(json_object_get(u, "namespaces"), i, n) {
		if (strcmp(json_string_value(json_object_get(n, "namespace")), ns))
			continue;
		json_array_foreach(json_object_get(n, "jobs"), k, j)
			if (!strcmp(json_string_value(json_object_get(j, "job_id")), job))
				return j;
	}
	return NULL;
}

/* Same GPU-hours (to rounding) and allocation counts for every job of a. */
static void assert_same_usage(const json_t *a, const json_t *b)
{
	json_t *n, *j;
	size_t i, k;
	json_array_foreach(json_object_get(a, "namespaces"), i, n) {
		const char *ns = json_string_value(json_object_get(n, "namespace"));
		json_array_foreach(json_object_get(n, "jobs"), k, j) {
			const char *id = json_string_value(json_object_get(j, "job_id"));
			json_t *o = usage_job(b, ns, id);
			double ha = json_real_value(json_object_get(j, "gpu_hours"));
			assert_non_null(o);
			assert_true(ha > 0);
			assert_true(fabs(ha - json_real_value(json_object_get(o, "gpu_hours"))) < 1e-9 * ha);
			assert_int_equal(fx_i(j, "allocations"), fx_i(o, "allocations"));
		}
	}
}

static void quarter_job(struct fx *f, const char *id)
{
	char *t = NULL;
	assert_true(asprintf(&t,
		"{\"job\": {\"id\": \"%s\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\", \"count\": 1,"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1,"
		" \"compute\": 25}]}}]}]}}", id) > 0);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
}

static void test_usage_survives_gc(void **state)
{
	struct server_config cfg = { .job_gc_threshold_ns = MS, .eval_gc_threshold_ns = MS,
				     .gc_interval_ns = 3600 * SEC };
	struct fx *f = fx_new_cfg(&cfg);
	json_t *before, *after, *r, *win0, *win1;
	char path[128];
	(void)state;
	node_add(f, "n1", 2, "H100");
	node_add_sharing(f, "m1", 1, "H100", "mps");
	submit_gpu(f, "default", "two", 2, 50);
	quarter_job(f, "quarter");
	fx_idle(f);
	finish(f, "default", "two", "running");
	finish(f, "default", "quarter", "running");
	usleep(300000);
	finish(f, "default", "two", "complete");
	finish(f, "default", "quarter", "complete");
	/* a second run of "quarter" under the same name: two allocations */
	usleep(5000);
	assert_int_equal(fx_i(r = fx_ok(f, "POST", "/v1/system/gc", NULL), "jobs"), 2);
	json_decref(r);
	quarter_job(f, "quarter");
	fx_idle(f);
	finish(f, "default", "quarter", "running");
	usleep(200000);
	finish(f, "default", "quarter", "complete");
	fx_idle(f);

	before = fx_ok(f, "GET", "/v1/usage", NULL);
	/* a window of whole hours around now: the same as no window */
	snprintf(path, sizeof(path), "/v1/usage?since=%lld&until=%lld", (long long)time(NULL) - 7200,
		 (long long)time(NULL) + 1);
	win0 = fx_ok(f, "GET", path, NULL);
	usleep(5000);
	r = fx_ok(f, "POST", "/v1/system/gc", NULL);
	assert_int_equal(fx_i(r, "allocations"), 1); /* the second run's */
	json_decref(r);
	assert_int_equal(json_array_size(r = fx_ok(f, "GET", "/v1/allocations", NULL)), 0);
	json_decref(r);
	after = fx_ok(f, "GET", "/v1/usage", NULL);
	win1 = fx_ok(f, "GET", path, NULL);

	/* 2 GPUs x 0.3 s; the share 0.25 x (0.3 s + 0.2 s), in two allocations */
	assert_true(json_real_value(json_object_get(usage_job(after, "default", "two"), "gpu_hours")) >=
		    2 * 0.3 / 3600);
	assert_true(json_real_value(json_object_get(usage_job(after, "default", "quarter"), "gpu_hours")) >=
		    0.25 * 0.5 / 3600);
	assert_int_equal(fx_i(usage_job(after, "default", "quarter"), "allocations"), 2);
	assert_int_equal(fx_i(usage_job(after, "default", "two"), "allocations"), 1);
	assert_same_usage(before, after);
	assert_same_usage(after, before);
	assert_same_usage(win0, win1);
	assert_same_usage(before, win1);
	/* a window that ended before the jobs ran counts none of the ledger */
	r = fx_ok(f, "GET", "/v1/usage?until=2001-01-01T00:00:00Z", NULL);
	assert_null(usage_job(r, "default", "two"));
	json_decref(r);
	json_decref(before);
	json_decref(after);
	json_decref(win0);
	json_decref(win1);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usage_survives_gc),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
