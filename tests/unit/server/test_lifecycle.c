/* Lifecycle of jobs and nodes through the API: drain, eligibility, stop
 * and purge, a down node coming back, the plan endpoint, changed jobs,
 * scaling, and what happens to ended allocations of batch jobs and
 * services. */
#include "server_fx.h"

#define GPU1 "{\"name\": \"nvidia/gpu\", \"count\": 1}"

static void test_drain_moves_allocations(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *node, *r, *old;
	char *first;
	(void)state;
	fx_node(f, "d1", 1, "H100", "exclusive", NULL);
	fx_node(f, "d2", 1, "H100", "exclusive", NULL);
	fx_submit(f, "svc", "service", 1, GPU1, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	first = strdup(fx_s(al, "node_id"));
	json_decref(al);

	{
		char path[128];
		snprintf(path, sizeof(path), "/v1/node/%s/drain", first);
		r = fx_ok(f, "POST", path, "{\"enable\": true}");
		assert_int_equal(json_array_size(json_object_get(r, "eval_ids")), 1);
		json_decref(r);
	}
	fx_idle(f);
	node = fx_get(f, "/v1/node/%s", first);
	assert_true(json_is_true(json_object_get(node, "drain")));
	assert_string_equal(fx_s(node, "eligibility"), "ineligible");
	json_decref(node);
	/* the replacement runs on the other node; the old one is told to stop */
	al = fx_the_alloc(f, "svc");
	assert_string_not_equal(fx_s(al, "node_id"), first);
	old = fx_get(f, "/v1/allocation/%s", fx_s(al, "previous_allocation"));
	assert_string_equal(fx_s(old, "node_id"), first);
	assert_string_equal(fx_s(old, "desired_status"), "stop");
	assert_non_null(strstr(fx_s(old, "desired_description"), "drain"));
	json_decref(old);
	json_decref(al);
	/* a new job never lands on the drained node */
	fx_submit(f, "later", "service", 1, NULL, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "later");
	assert_string_not_equal(fx_s(al, "node_id"), first);
	json_decref(al);
	free(first);
	fx_free(f);
}

static void test_drain_without_room_blocks(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *ev, *r;
	char *old_id;
	(void)state;
	fx_node(f, "only", 1, "H100", "exclusive", NULL);
	fx_node(f, "cpu", 0, "none", "exclusive", NULL);
	fx_submit(f, "svc", "service", 1, GPU1, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	assert_string_equal(fx_s(al, "node_id"), "only");
	old_id = strdup(fx_s(al, "id"));
	json_decref(al);
	json_decref(fx_ok(f, "POST", "/v1/node/only/drain", "{\"enable\": true}"));
	fx_idle(f);
	/* the drained allocation is stopped; its replacement waits */
	r = fx_running(f, "svc");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	al = fx_get(f, "/v1/allocation/%s", old_id);
	assert_string_equal(fx_s(al, "desired_status"), "stop");
	json_decref(al);
	ev = fx_evals(f, "svc", "blocked");
	assert_int_equal(json_array_size(ev), 1);
	assert_non_null(json_object_get(json_object_get(json_array_get(ev, 0), "failed_placements"), "g"));
	json_decref(ev);
	/* the old task ends; the drain is lifted: the replacement goes back */
	al = fx_get(f, "/v1/allocation/%s", old_id);
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	json_decref(fx_ok(f, "POST", "/v1/node/only/drain", "{\"enable\": false}"));
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	assert_string_equal(fx_s(al, "node_id"), "only");
	assert_string_equal(fx_s(al, "previous_allocation"), old_id);
	json_decref(al);
	al = fx_get(f, "/v1/node/%s", "only");
	assert_string_equal(fx_s(al, "eligibility"), "eligible");
	json_decref(al);
	free(old_id);
	fx_free(f);
}

static void test_eligibility(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *ev, *r;
	(void)state;
	fx_node(f, "e1", 1, "H100", "exclusive", NULL);
	fx_submit(f, "first", "service", 1, GPU1, NULL);
	fx_idle(f);
	json_decref(fx_ok(f, "POST", "/v1/node/e1/eligibility", "{\"eligible\": false}"));
	fx_idle(f);
	/* what runs there stays; nothing new comes */
	al = fx_the_alloc(f, "first");
	assert_string_equal(fx_s(al, "node_id"), "e1");
	fx_alloc_status(f, al, "running");
	json_decref(al);
	r = fx_get(f, "/v1/node/%s", "e1");
	assert_string_equal(fx_s(r, "eligibility"), "ineligible");
	assert_false(json_is_true(json_object_get(r, "drain")));
	json_decref(r);
	fx_submit(f, "cpu", "service", 1, NULL, NULL);
	fx_idle(f);
	r = fx_running(f, "cpu");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	ev = fx_evals(f, "cpu", "blocked");
	assert_int_equal(json_array_size(ev), 1);
	json_decref(ev);
	/* eligible again: the blocked evaluation runs at once */
	json_decref(fx_ok(f, "POST", "/v1/node/e1/eligibility", "{\"eligible\": true}"));
	fx_idle(f);
	al = fx_the_alloc(f, "cpu");
	assert_string_equal(fx_s(al, "node_id"), "e1");
	json_decref(al);
	ev = fx_evals(f, "cpu", "blocked");
	assert_int_equal(json_array_size(ev), 0);
	json_decref(ev);
	/* bad bodies and unknown nodes */
	assert_int_equal(fx_status(f, "POST", "/v1/node/e1/eligibility", "{\"eligible\": 1}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/node/ghost/eligibility", "{\"eligible\": true}"), 404);
	assert_int_equal(fx_status(f, "POST", "/v1/node/ghost/drain", "{\"enable\": true}"), 404);
	fx_free(f);
}

static void test_stop_and_purge(void **state)
{
	struct fx *f = fx_new();
	json_t *r, *x;
	size_t i;
	(void)state;
	fx_node(f, "n", 2, "H100", "exclusive", NULL);
	fx_submit(f, "svc", "service", 2, GPU1, NULL);
	fx_idle(f);
	r = fx_running(f, "svc");
	assert_int_equal(json_array_size(r), 2);
	json_array_foreach(r, i, x)
		fx_alloc_status(f, x, "running");
	json_decref(r);

	json_decref(fx_ok(f, "DELETE", "/v1/job/svc", NULL));
	fx_idle(f);
	r = fx_get(f, "/v1/job/%s", "svc");
	assert_true(json_is_true(json_object_get(r, "stop")));
	assert_string_equal(fx_s(r, "status"), "dead");
	json_decref(r);
	r = fx_job_allocs(f, "svc");
	assert_int_equal(json_array_size(r), 2);
	json_array_foreach(r, i, x) {
		assert_string_equal(fx_s(x, "desired_status"), "stop");
		assert_string_equal(fx_s(x, "desired_description"), "job stopped");
	}
	json_decref(r);
	/* a stopped job that is submitted again runs again */
	fx_submit(f, "svc", "service", 2, GPU1, NULL);
	fx_idle(f);
	r = fx_running(f, "svc");
	/* the GPUs are still held by the stopping tasks: nothing fits yet */
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	r = fx_job_allocs(f, "svc");
	json_array_foreach(r, i, x)
		fx_alloc_status(f, x, "complete");
	json_decref(r);
	r = fx_wait_running(f, "svc", 2);
	json_decref(r);

	json_decref(fx_ok(f, "DELETE", "/v1/job/svc?purge=true", NULL));
	fx_idle(f);
	assert_int_equal(fx_status(f, "GET", "/v1/job/svc", NULL), 404);
	assert_int_equal(fx_status(f, "GET", "/v1/job/svc/versions", NULL), 404);
	assert_int_equal(fx_status(f, "GET", "/v1/job/svc/allocations", NULL), 404);
	assert_int_equal(fx_status(f, "DELETE", "/v1/job/svc", NULL), 404);
	r = fx_ok(f, "GET", "/v1/jobs", NULL);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	/* the purged job's allocations are told to stop */
	r = fx_ok(f, "GET", "/v1/allocations", NULL);
	json_array_foreach(r, i, x)
		assert_string_equal(fx_s(x, "desired_status"), "stop");
	json_decref(r);
	fx_free(f);
}

static void test_down_node_returns(void **state)
{
	struct server_config cfg = { .heartbeat_ttl_ns = SEC / 2 };
	struct fx *f = fx_new_cfg(&cfg);
	json_t *al, *r, *x;
	char *first, *first_alloc, *other;
	size_t i;
	(void)state;
	fx_node(f, "h1", 1, "H100", "exclusive", NULL);
	fx_node(f, "h2", 1, "H100", "exclusive", NULL);
	fx_submit(f, "svc", "service", 1, GPU1, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	fx_alloc_status(f, al, "running");
	first = strdup(fx_s(al, "node_id"));
	first_alloc = strdup(fx_s(al, "id"));
	other = strdup(strcmp(first, "h1") ? "h1" : "h2");
	json_decref(al);
	for (int k = 0; k < 15; k++) {
		fx_heartbeat(f, other);
		usleep(100000);
	}
	fx_idle(f);
	r = fx_get(f, "/v1/node/%s", first);
	assert_string_equal(fx_s(r, "status"), "down");
	json_decref(r);
	al = fx_the_alloc(f, "svc");
	assert_string_equal(fx_s(al, "node_id"), other);
	json_decref(al);

	/* the node comes back: ready again, and the allocation placed
	 * elsewhere meanwhile is desired stop there (its agent stops it) */
	fx_heartbeat(f, first);
	fx_idle(f);
	r = fx_get(f, "/v1/node/%s", first);
	assert_string_equal(fx_s(r, "status"), "ready");
	json_decref(r);
	r = fx_get(f, "/v1/node/%s/allocations", first);
	assert_int_equal(json_array_size(r), 1);
	x = json_array_get(r, 0);
	assert_string_equal(fx_s(x, "id"), first_alloc);
	assert_string_equal(fx_s(x, "desired_status"), "stop");
	assert_string_equal(fx_s(x, "client_status"), "lost");
	json_decref(r);
	/* its agent reports the task still running, then stopped: the job
	 * keeps exactly one allocation to run, on the other node */
	al = fx_get(f, "/v1/allocation/%s", first_alloc);
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	assert_string_equal(fx_s(al, "node_id"), other);
	json_decref(al);
	r = fx_job_allocs(f, "svc");
	assert_int_equal(json_array_size(r), 2);
	json_array_foreach(r, i, x)
		if (!strcmp(fx_s(x, "id"), first_alloc))
			assert_string_equal(fx_s(x, "desired_status"), "stop");
	json_decref(r);
	/* re-registering (an agent restart) keeps it ready and schedulable */
	fx_node(f, first, 1, "H100", "exclusive", NULL);
	fx_submit(f, "next", "service", 1, GPU1, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "next");
	assert_string_equal(fx_s(al, "node_id"), first);
	json_decref(al);
	free(first);
	free(first_alloc);
	free(other);
	fx_free(f);
}

static void test_plan_is_a_dry_run(void **state)
{
	struct fx *f = fx_new();
	json_t *r, *pl, *fp;
	long long before, after, mid;
	long st;
	char *t;
	(void)state;
	fx_node(f, "p1", 2, "H100", "exclusive", NULL);
	json_decref(fx_call_index(f, "GET", "/v1/jobs", NULL, &st, &before));
	assert_true(before > 0);

	t = fx_job("pj", "service", 3, GPU1, NULL, NULL);
	r = fx_ok(f, "POST", "/v1/job/pj/plan", t);
	pl = json_object_get(r, "placements");
	assert_int_equal(json_array_size(pl), 2);
	assert_string_equal(fx_s(json_array_get(pl, 0), "node_id"), "p1");
	fp = json_object_get(json_object_get(r, "failed_placements"), "g");
	assert_non_null(fp);
	assert_int_equal(fx_i(fp, "missing"), 1);
	assert_true(strlen(fx_s(fp, "explanation")) > 0);
	assert_int_equal(fx_i(json_object_get(r, "changes"), "create"), 2);
	json_decref(r);
	fx_idle(f);
	/* nothing stored, the index did not move */
	json_decref(fx_call_index(f, "GET", "/v1/jobs", NULL, &st, &after));
	assert_int_equal(after, before);
	assert_int_equal(fx_status(f, "GET", "/v1/job/pj", NULL), 404);
	r = fx_ok(f, "GET", "/v1/allocations", NULL);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	r = fx_ok(f, "GET", "/v1/evaluations", NULL);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);

	/* for a stored job, the plan of a change shows what it replaces */
	fx_submit(f, "pj", "service", 2, GPU1, NULL);
	fx_idle(f);
	json_decref(fx_call_index(f, "GET", "/v1/jobs", NULL, &st, &mid));
	free(t);
	t = fx_job("pj", "service", 2, GPU1, NULL, "/bin/false");
	r = fx_ok(f, "POST", "/v1/job/pj/plan", t);
	assert_int_equal(fx_i(json_object_get(r, "changes"), "destroy"), 2);
	json_decref(r);
	/* the path names the job planned */
	assert_int_equal(fx_status(f, "POST", "/v1/job/other/plan", t), 400);
	json_decref(fx_call_index(f, "GET", "/v1/jobs", NULL, &st, &after));
	assert_int_equal(after, mid);
	r = fx_get(f, "/v1/job/%s/versions", "pj");
	assert_int_equal(json_array_size(r), 1);
	json_decref(r);
	free(t);
	fx_free(f);
}

/* A job of two groups "a" and "b"; cmd_b is b's command. */
static char *two_groups(const char *cmd_b)
{
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"two\", \"groups\": ["
		"{\"name\": \"a\", \"count\": 2, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"cpu\": 100, \"memory\": 64}}]},"
		"{\"name\": \"b\", \"count\": 1, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"%s\"}, \"resources\": {\"cpu\": 100, \"memory\": 64}}]}]}}",
		cmd_b) > 0);
	return s;
}

static void test_changed_job(void **state)
{
	struct fx *f = fx_new();
	char *v0 = two_groups("/bin/true"), *v1 = two_groups("/bin/sleep"), *eval;
	json_t *before, *after, *x, *r;
	size_t i, nevals;
	(void)state;
	fx_node(f, "c1", 0, "none", "exclusive", NULL);
	eval = fx_submit_text(f, v0);
	free(eval);
	fx_idle(f);
	before = fx_running(f, "two");
	assert_int_equal(json_array_size(before), 3);

	/* unchanged: no version, no evaluation */
	r = fx_evals(f, "two", NULL);
	nevals = json_array_size(r);
	json_decref(r);
	eval = fx_submit_text(f, v0);
	assert_string_equal(eval, "");
	free(eval);
	fx_idle(f);
	r = fx_evals(f, "two", NULL);
	assert_int_equal(json_array_size(r), nevals);
	json_decref(r);
	r = fx_get(f, "/v1/job/%s/versions", "two");
	assert_int_equal(json_array_size(r), 1);
	json_decref(r);

	/* group b changed: b replaced, a kept (moved to the new version) */
	eval = fx_submit_text(f, v1);
	assert_true(strlen(eval) > 0);
	free(eval);
	fx_idle(f);
	r = fx_get(f, "/v1/job/%s", "two");
	assert_int_equal(fx_i(r, "version"), 1);
	json_decref(r);
	r = fx_get(f, "/v1/job/%s/versions", "two");
	assert_int_equal(json_array_size(r), 2);
	json_decref(r);
	after = fx_running(f, "two");
	assert_int_equal(json_array_size(after), 3);
	json_array_foreach(after, i, x) {
		size_t j;
		json_t *y;
		bool kept = false;
		assert_int_equal(fx_i(x, "job_version"), 1);
		json_array_foreach(before, j, y)
			if (!strcmp(fx_s(x, "id"), fx_s(y, "id")))
				kept = true;
		assert_int_equal(kept, !strcmp(fx_s(x, "task_group"), "a"));
	}
	json_decref(after);
	r = fx_job_allocs(f, "two");
	assert_int_equal(json_array_size(r), 4);
	json_array_foreach(r, i, x)
		if (!strcmp(fx_s(x, "desired_status"), "stop")) {
			assert_string_equal(fx_s(x, "task_group"), "b");
			assert_int_equal(fx_i(x, "job_version"), 0);
		}
	json_decref(r);
	json_decref(before);
	free(v0);
	free(v1);
	fx_free(f);
}

static void test_scale_up_and_down(void **state)
{
	struct fx *f = fx_new();
	json_t *r, *x, *first;
	size_t i;
	(void)state;
	fx_node(f, "s1", 0, "none", "exclusive", NULL);
	fx_submit(f, "sc", "service", 3, NULL, NULL);
	fx_idle(f);
	first = fx_running(f, "sc");
	assert_int_equal(json_array_size(first), 3);
	fx_submit(f, "sc", "service", 5, NULL, NULL);
	fx_idle(f);
	r = fx_running(f, "sc");
	assert_int_equal(json_array_size(r), 5);
	json_decref(r);
	/* the first three were kept */
	r = fx_job_allocs(f, "sc");
	assert_int_equal(json_array_size(r), 5);
	json_decref(r);

	fx_submit(f, "sc", "service", 2, NULL, NULL);
	fx_idle(f);
	r = fx_running(f, "sc");
	assert_int_equal(json_array_size(r), 2);
	json_array_foreach(r, i, x)
		assert_true(fx_i(x, "index") < 2);
	json_decref(r);
	r = fx_job_allocs(f, "sc");
	assert_int_equal(json_array_size(r), 5);
	json_array_foreach(r, i, x)
		if (fx_i(x, "index") >= 2) {
			assert_string_equal(fx_s(x, "desired_status"), "stop");
		} else {
			size_t j;
			json_t *y;
			bool kept = false;
			json_array_foreach(first, j, y)
				kept = kept || !strcmp(fx_s(x, "id"), fx_s(y, "id"));
			assert_true(kept);
		}
	json_decref(r);
	json_decref(first);
	fx_free(f);
}

static void test_batch_complete_and_service_failure(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *r, *x;
	size_t i;
	(void)state;
	fx_node(f, "b1", 0, "none", "exclusive", NULL);
	fx_submit(f, "bj", "batch", 2, NULL, NULL);
	fx_submit(f, "sv", "service", 1, NULL,
		  ", \"reschedule\": {\"delay\": \"0s\", \"delay_function\": \"constant\", \"unlimited\": true}");
	fx_idle(f);
	r = fx_running(f, "bj");
	assert_int_equal(json_array_size(r), 2);
	json_array_foreach(r, i, x) {
		fx_alloc_status(f, x, "running");
		fx_alloc_status(f, x, "complete");
	}
	json_decref(r);
	fx_idle(f);
	r = fx_job_allocs(f, "bj");
	assert_int_equal(json_array_size(r), 2); /* not replaced */
	json_decref(r);
	r = fx_get(f, "/v1/job/%s", "bj");
	assert_string_equal(fx_s(r, "status"), "dead");
	json_decref(r);

	/* a service allocation that fails is replaced; one that completes too */
	al = fx_the_alloc(f, "sv");
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, "failed");
	json_decref(al);
	fx_idle(f);
	al = fx_the_alloc(f, "sv");
	assert_string_equal(fx_s(al, "client_status"), "pending");
	assert_int_equal(fx_i(al, "reschedule_attempts"), 1);
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	fx_idle(f);
	al = fx_the_alloc(f, "sv");
	assert_string_equal(fx_s(al, "client_status"), "pending");
	json_decref(al);
	r = fx_job_allocs(f, "sv");
	assert_int_equal(json_array_size(r), 3);
	json_decref(r);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_drain_moves_allocations),
	cmocka_unit_test(test_drain_without_room_blocks),
	cmocka_unit_test(test_eligibility),
	cmocka_unit_test(test_stop_and_purge),
	cmocka_unit_test(test_down_node_returns),
	cmocka_unit_test(test_plan_is_a_dry_run),
	cmocka_unit_test(test_changed_job),
	cmocka_unit_test(test_scale_up_and_down),
	cmocka_unit_test(test_batch_complete_and_service_failure))
