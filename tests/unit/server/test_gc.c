/* Garbage collection: old records of ended jobs, evaluations and
 * allocations leave the store; live ones and recent ones stay. */
#include "server_fx.h"

static struct fx *gc_server(int64_t job_th, int64_t eval_th, int64_t interval)
{
	struct server_config cfg = { .job_gc_threshold_ns = job_th, .eval_gc_threshold_ns = eval_th,
				     .gc_interval_ns = interval };
	return fx_new_cfg(&cfg);
}

static json_t *gc_now(struct fx *f)
{
	return fx_ok(f, "POST", "/v1/system/gc", NULL);
}

static size_t count(struct fx *f, const char *path)
{
	json_t *r = fx_ok(f, "GET", path, NULL);
	size_t n = json_array_size(r);
	json_decref(r);
	return n;
}

static void test_stopped_and_dead_jobs_go(void **state)
{
	struct fx *f = gc_server(MS, MS, 3600 * SEC);
	json_t *al, *r, *x;
	size_t i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "svc", "service", 1, NULL, NULL);
	fx_submit(f, "bat", "batch", 2, NULL, NULL);
	fx_idle(f);
	/* running things stay */
	al = fx_the_alloc(f, "svc");
	fx_alloc_status(f, al, "running");
	usleep(5000);
	r = gc_now(f);
	assert_int_equal(fx_i(r, "jobs"), 0);
	assert_int_equal(fx_i(r, "allocations"), 0);
	json_decref(r);
	/* stopped, but its task still runs: stays */
	json_decref(fx_ok(f, "DELETE", "/v1/job/svc", NULL));
	fx_idle(f);
	usleep(5000);
	json_decref(gc_now(f));
	assert_int_equal(fx_status(f, "GET", "/v1/job/svc", NULL), 200);
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	/* the batch job completes: dead */
	r = fx_running(f, "bat");
	json_array_foreach(r, i, x)
		fx_alloc_status(f, x, "complete");
	json_decref(r);
	fx_idle(f);
	usleep(5000);
	r = gc_now(f);
	assert_int_equal(fx_i(r, "jobs"), 2);
	assert_int_equal(fx_i(r, "allocations"), 3);
	/* the stopped job's register evaluation went in the run before (not
	 * its latest, and old): its deregister one and the batch job's remain */
	assert_int_equal(fx_i(r, "evaluations"), 2);
	json_decref(r);
	assert_int_equal(fx_status(f, "GET", "/v1/job/svc", NULL), 404);
	assert_int_equal(fx_status(f, "GET", "/v1/job/bat", NULL), 404);
	assert_int_equal(count(f, "/v1/allocations"), 0);
	assert_int_equal(count(f, "/v1/evaluations"), 0);
	assert_int_equal(count(f, "/v1/jobs"), 0);
	/* the name can be used again from scratch */
	fx_submit(f, "svc", "service", 1, NULL, NULL);
	fx_idle(f);
	r = fx_get(f, "/v1/job/%s", "svc");
	assert_int_equal(fx_i(r, "version"), 0);
	json_decref(r);
	fx_free(f);
}

static void test_live_job_keeps_what_matters(void **state)
{
	struct fx *f = gc_server(MS, MS, 3600 * SEC);
	json_t *al, *r, *evs;
	char *keep;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "svc", "service", 1, NULL,
		  ", \"reschedule\": {\"delay\": \"0s\", \"delay_function\": \"constant\", \"unlimited\": true}");
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, "failed");
	json_decref(al);
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	keep = strdup(fx_s(al, "id"));
	fx_alloc_status(f, al, "running");
	json_decref(al);
	assert_int_equal(count(f, "/v1/job/svc/allocations"), 2);
	evs = fx_evals(f, "svc", NULL);
	assert_int_equal(json_array_size(evs), 2);
	json_decref(evs);
	usleep(5000);
	r = gc_now(f);
	assert_int_equal(fx_i(r, "jobs"), 0);
	assert_int_equal(fx_i(r, "allocations"), 1);
	assert_int_equal(fx_i(r, "evaluations"), 1);
	json_decref(r);
	/* the running replacement and the latest evaluation stay */
	al = fx_the_alloc(f, "svc");
	assert_string_equal(fx_s(al, "id"), keep);
	json_decref(al);
	assert_int_equal(count(f, "/v1/job/svc/allocations"), 1);
	evs = fx_evals(f, "svc", NULL);
	assert_int_equal(json_array_size(evs), 1);
	assert_string_equal(fx_s(json_array_get(evs, 0), "triggered_by"), "alloc-failure");
	json_decref(evs);
	free(keep);
	fx_free(f);
}

static void test_purged_job_records(void **state)
{
	struct fx *f = gc_server(3600 * SEC, MS, 3600 * SEC);
	json_t *al, *r;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "p", "service", 1, NULL, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "p");
	fx_alloc_status(f, al, "running");
	json_decref(fx_ok(f, "DELETE", "/v1/job/p?purge=true", NULL));
	fx_idle(f);
	usleep(5000);
	r = gc_now(f);
	assert_int_equal(fx_i(r, "allocations"), 0); /* still running */
	assert_int_equal(fx_i(r, "evaluations"), 1); /* the register one: not the latest */
	json_decref(r);
	assert_int_equal(count(f, "/v1/allocations"), 1);
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	usleep(5000);
	r = gc_now(f);
	assert_int_equal(fx_i(r, "allocations"), 1);
	assert_int_equal(fx_i(r, "evaluations"), 1);
	json_decref(r);
	assert_int_equal(count(f, "/v1/allocations"), 0);
	assert_int_equal(count(f, "/v1/evaluations"), 0);
	fx_free(f);
}

static void test_recent_records_stay(void **state)
{
	struct fx *f = fx_new(); /* the defaults: 4 h and 1 h */
	json_t *r, *al;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "s", "service", 1, NULL, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "s");
	json_decref(fx_ok(f, "DELETE", "/v1/job/s", NULL));
	fx_idle(f);
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	r = gc_now(f);
	assert_int_equal(fx_i(r, "jobs") + fx_i(r, "allocations") + fx_i(r, "evaluations"), 0);
	json_decref(r);
	assert_int_equal(fx_status(f, "GET", "/v1/job/s", NULL), 200);
	assert_int_equal(fx_status(f, "GET", "/v1/system/gc", NULL), 405);
	fx_free(f);
}

static void test_periodic(void **state)
{
	struct fx *f = gc_server(MS, MS, 100 * MS);
	json_t *al;
	int i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "s", "service", 1, NULL, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "s");
	json_decref(fx_ok(f, "DELETE", "/v1/job/s", NULL));
	fx_idle(f);
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	for (i = 0; i < 100 && fx_status(f, "GET", "/v1/job/s", NULL) == 200; i++)
		usleep(50000);
	assert_int_equal(fx_status(f, "GET", "/v1/job/s", NULL), 404);
	assert_int_equal(count(f, "/v1/allocations"), 0);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_stopped_and_dead_jobs_go),
	cmocka_unit_test(test_live_job_keeps_what_matters),
	cmocka_unit_test(test_purged_job_records),
	cmocka_unit_test(test_recent_records_stay),
	cmocka_unit_test(test_periodic))
