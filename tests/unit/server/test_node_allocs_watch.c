/* GET /v1/node/:id/allocations?since=N&include=job, an agent's watch:
 * since filters on the server's own changes (placement, stop), not on
 * the agent's status reports; include=job gives each allocation the agent
 * has not seen and may start its job version, read once per version. */
#include <time.h>

#include "server_fx.h"

static json_t *watch(struct fx *f, const char *node, long long since, const char *extra,
		     long long *index)
{
	char path[160];
	long st = 0;
	json_t *r;
	snprintf(path, sizeof(path), "/v1/node/%s/allocations?since=%lld%s", node, since, extra);
	r = fx_call_index(f, "GET", path, NULL, &st, index);
	assert_int_equal(st, 200);
	assert_true(json_is_array(r));
	return r;
}

static void test_watch_job_and_server_changes(void **state)
{
	struct fx *f = fx_new();
	long long idx0 = 0, idx1 = 0;
	json_t *r, *a, *job, *x;
	size_t i;
	(void)state;

	fx_node(f, "n1", 0, NULL, NULL, NULL);
	fx_submit(f, "a", "batch", 2, NULL, NULL);
	json_decref(fx_wait_running(f, "a", 2));
	fx_idle(f);

	/* new allocations come with their job version, when asked */
	r = watch(f, "n1", 0, "&include=job", &idx0);
	assert_int_equal(json_array_size(r), 2);
	json_array_foreach(r, i, x) {
		job = json_object_get(x, "job");
		assert_true(json_is_object(job));
		assert_string_equal(fx_s(job, "id"), "a");
		assert_int_equal(fx_i(job, "version"), fx_i(x, "job_version"));
		assert_non_null(json_object_get(job, "groups"));
	}
	assert_true(json_equal(json_object_get(json_array_get(r, 0), "job"),
			       json_object_get(json_array_get(r, 1), "job")));
	json_decref(r);
	r = watch(f, "n1", 0, "", NULL);
	assert_int_equal(json_array_size(r), 2);
	assert_null(json_object_get(json_array_get(r, 0), "job"));
	json_decref(r);

	/* the agent's own reports are not sent back to it ... */
	a = fx_running(f, "a");
	fx_alloc_status(f, json_array_get(a, 0), "running");
	fx_alloc_status(f, json_array_get(a, 1), "complete");
	r = watch(f, "n1", idx0, "&include=job", &idx1);
	assert_int_equal(json_array_size(r), 0);
	assert_true(idx1 > idx0);
	json_decref(r);
	/* a long poll for news (index at since) is not answered by the
	 * reports, which have nothing for the agent: [] only when the wait
	 * ends; index=0 asks for the answer now */
	{
		char extra[96];
		struct timespec t0, t1;
		snprintf(extra, sizeof(extra), "&index=%lld&wait=600ms", idx0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = watch(f, "n1", idx0, extra, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_int_equal(json_array_size(r), 0);
		assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >=
			    550);
		json_decref(r);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = watch(f, "n1", idx0, "&index=0&wait=20s", NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_int_equal(json_array_size(r), 0);
		assert_true(t1.tv_sec - t0.tv_sec < 15);
		json_decref(r);
	}
	/* ... though the allocations did change */
	r = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(a, 0), "id"));
	assert_string_equal(fx_s(r, "client_status"), "running");
	json_decref(r);

	/* a stop is the server's change: it is sent, without a job (the agent
	 * knows the allocation already and will not start it) */
	json_decref(fx_ok(f, "DELETE", "/v1/job/a", NULL));
	fx_idle(f);
	r = watch(f, "n1", idx0, "&include=job", NULL);
	assert_true(json_array_size(r) >= 1);
	json_array_foreach(r, i, x) {
		assert_null(json_object_get(x, "job"));
		if (!strcmp(fx_s(x, "id"), fx_s(json_array_get(a, 0), "id")))
			assert_string_equal(fx_s(x, "desired_status"), "stop");
	}
	json_decref(r);
	json_decref(a);

	assert_int_equal(fx_status(f, "GET", "/v1/node/n1/allocations?include=jobs", NULL), 400);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_watch_job_and_server_changes));
