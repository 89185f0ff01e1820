/* Quotas, the fair queue, borrowing and preemption on a real server. */
#include "server_fx.h"

#include "common/xalloc.h"
#include "server/teams.h"

static void put_quota(struct fx *f, const char *name, double gpus, const char *extra)
{
	char *b = NULL;
	assert_true(asprintf(&b, "{\"quota\": {\"name\": \"%s\", %s \"limits\": [{\"region\": \"global\","
			     " \"region_limit\": {\"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %g}]}}]}}",
			     name, extra ? extra : "", gpus) > 0);
	json_decref(fx_ok(f, "POST", "/v1/quotas", b));
	free(b);
}

static void put_ns(struct fx *f, const char *name, const char *quota)
{
	char b[256];
	snprintf(b, sizeof(b), "{\"namespace\": {\"name\": \"%s\", \"quota\": \"%s\"}}", name, quota ? quota : "");
	json_decref(fx_ok(f, "POST", "/v1/namespaces", b));
}

static const char *js(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* A quota of 2 GPUs: the third job queues with a status naming the limit,
 * and starts by itself when the first completes. */
static void test_quota_queue(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	json_t *e, *st, *d;
	(void)state;
	node_add(f, "n1", 4, "H100");
	put_quota(f, "team-a", 2, NULL);
	put_ns(f, "team-a", "team-a");
	submit_gpu(f, "team-a", "j1", 1, 50);
	fx_idle(f);
	submit_gpu(f, "team-a", "j2", 1, 50);
	fx_idle(f);
	submit_gpu(f, "team-a", "j3", 1, 50);
	fx_idle(f);
	assert_int_equal(nlive(f, "team-a", "j1"), 1);
	assert_int_equal(nlive(f, "team-a", "j2"), 1);
	assert_int_equal(nlive(f, "team-a", "j3"), 0);
	e = last_eval(f, "team-a", "j3");
	assert_string_equal(js(e, "status"), "queued");
	assert_string_equal(js(e, "status_description"), "queued: quota team-a: nvidia/gpu 2/2");
	json_decref(e);
	st = fx_ok(f, "GET", "/v1/quota/team-a/status", NULL);
	d = json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(st, "namespaces"), 0),
							    "devices"), "nvidia/gpu"), "used");
	assert_string_equal(json_string_value(d), "2");
	json_decref(st);
	/* the same job in another namespace without a quota is not held */
	submit_gpu(f, "default", "j3", 1, 50);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "j3"), 1);
	finish(f, "team-a", "j1", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "team-a", "j3"), 1);
	e = last_eval(f, "team-a", "j3");
	assert_string_equal(js(e, "status"), "complete");
	json_decref(e);
	fx_free(f);
}

/* Two namespaces of equal weight share freed GPUs: while both wait, the
 * one holding fewer GPUs gets the next. */
static void test_fair_share(void **state)
{
	struct fx *f = fx_new_teams(SERVER_PREEMPT_NONE, 0);
	(void)state;
	node_add(f, "n1", 2, "H100");
	put_ns(f, "a", NULL);
	put_ns(f, "b", NULL);
	for (int i = 1; i <= 4; i++) {
		char id[8];
		snprintf(id, sizeof(id), "a%d", i);
		submit_gpu(f, "a", id, 1, 50);
		fx_idle(f);
	}
	submit_gpu(f, "b", "b1", 1, 50);
	fx_idle(f);
	submit_gpu(f, "b", "b2", 1, 50);
	fx_idle(f);
	assert_int_equal(nlive(f, "a", "a1") + nlive(f, "a", "a2"), 2);
	assert_int_equal(nlive(f, "a", "a3") + nlive(f, "a", "a4") + nlive(f, "b", "b1") + nlive(f, "b", "b2"), 0);
	finish(f, "a", "a1", "complete");
	fx_idle(f);
	/* a holds 1, b 0: b's first job goes, not a3 (which came earlier) */
	assert_int_equal(nlive(f, "b", "b1"), 1);
	assert_int_equal(nlive(f, "a", "a3"), 0);
	finish(f, "a", "a2", "complete");
	fx_idle(f);
	/* a 0, b 1: a's next */
	assert_int_equal(nlive(f, "a", "a3"), 1);
	assert_int_equal(nlive(f, "b", "b2"), 0);
	fx_free(f);
}

/* A priority-80 job asking 2 GPUs on a full node of four 1-GPU jobs of
 * priorities 10..40 stops exactly the two lowest, and starts when they end. */
static void test_preempt_minimal(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	const char *ids[] = { "p10", "p20", "p30", "p40" };
	json_t *a, *x;
	size_t i;
	int stopped = 0;
	(void)state;
	node_add(f, "n1", 4, "H100");
	for (int k = 0; k < 4; k++) {
		submit_gpu(f, "default", ids[k], 1, 10 * (k + 1));
		fx_idle(f);
		assert_int_equal(nlive(f, "default", ids[k]), 1);
	}
	submit_gpu(f, "default", "high", 2, 80);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "high"), 0);
	a = fx_ok(f, "GET", "/v1/allocations", NULL);
	json_array_foreach(a, i, x) {
		if (!strcmp(js(x, "desired_status"), "stop")) {
			stopped++;
			assert_true(!strcmp(js(x, "job_id"), "p10") || !strcmp(js(x, "job_id"), "p20"));
			assert_string_equal(js(x, "desired_description"), "preempted by job high (priority 80)");
		}
	}
	json_decref(a);
	assert_int_equal(stopped, 2);
	/* asking again does not stop more while those two are stopping */
	submit_gpu(f, "default", "high", 2, 80);
	fx_idle(f);
	finish(f, "default", "p10", "complete");
	finish(f, "default", "p20", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "high"), 1);
	assert_int_equal(nlive(f, "default", "p30") + nlive(f, "default", "p40"), 2);
	fx_free(f);
}

/* A job whose group asks two device blocks (two tasks, one GPU each)
 * preempts for both blocks at once: the two lowest of four 1-GPU jobs,
 * not one per round. */
static void test_preempt_all_device_blocks(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	const char *ids[] = { "p10", "p20", "p30", "p40" };
	const char *task = "{\"name\": \"%s\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
			   " \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1}]}}";
	char *ta = NULL, *tb = NULL, *body = NULL;
	json_t *a, *x;
	size_t i;
	int stopped = 0;
	(void)state;
	node_add(f, "n1", 4, "H100");
	for (int k = 0; k < 4; k++) {
		submit_gpu(f, "default", ids[k], 1, 10 * (k + 1));
		fx_idle(f);
		assert_int_equal(nlive(f, "default", ids[k]), 1);
	}
	assert_true(asprintf(&ta, task, "a") > 0);
	assert_true(asprintf(&tb, task, "b") > 0);
	assert_true(asprintf(&body, "{\"job\": {\"id\": \"two\", \"type\": \"batch\", \"priority\": 80, \"groups\":"
			     " [{\"name\": \"g\", \"count\": 1, \"tasks\": [%s, %s]}]}}", ta, tb) > 0);
	json_decref(fx_ok(f, "POST", "/v1/jobs", body));
	fx_idle(f);
	a = fx_ok(f, "GET", "/v1/allocations", NULL);
	json_array_foreach(a, i, x) {
		if (!strcmp(js(x, "desired_status"), "stop")) {
			stopped++;
			assert_true(!strcmp(js(x, "job_id"), "p10") || !strcmp(js(x, "job_id"), "p20"));
		}
	}
	json_decref(a);
	assert_int_equal(stopped, 2);
	finish(f, "default", "p10", "complete");
	finish(f, "default", "p20", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "two"), 1);
	assert_int_equal(nlive(f, "default", "p30") + nlive(f, "default", "p40"), 2);
	free(ta);
	free(tb);
	free(body);
	fx_free(f);
}

/* Preemption is off for services by default. */
static void test_preempt_off_for_service(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	(void)state;
	node_add(f, "n1", 1, "H100");
	submit_gpu(f, "default", "low", 1, 10);
	fx_idle(f);
	json_decref(fx_ok(f, "POST", "/v1/jobs",
		"{\"job\": {\"id\": \"svc\", \"type\": \"service\", \"priority\": 90, \"groups\": [{\"name\": \"g\","
		" \"count\": 1, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1}]}}]}]}}"));
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "low"), 1);
	assert_int_equal(nlive(f, "default", "svc"), 0);
	fx_free(f);
}

/* A team with borrow = true takes idle GPUs beyond its quota; the lender
 * gets one back by preempting exactly one borrowed allocation. */
static void test_borrow_and_reclaim(void **state)
{
	struct fx *f = fx_new_teams(SERVER_PREEMPT_NONE, 0);
	json_t *a, *x;
	size_t i;
	int borrowed = 0, stopped = 0;
	(void)state;
	node_add(f, "n1", 4, "H100");
	put_quota(f, "qa", 2, "\"borrow\": true,");
	put_quota(f, "qb", 2, NULL);
	put_ns(f, "a", "qa");
	put_ns(f, "b", "qb");
	for (int k = 1; k <= 4; k++) {
		char id[8];
		snprintf(id, sizeof(id), "a%d", k);
		submit_gpu(f, "a", id, 1, 50);
		fx_idle(f);
		assert_int_equal(nlive(f, "a", id), 1);
	}
	a = fx_ok(f, "GET", "/v1/allocations?namespace=a", NULL);
	json_array_foreach(a, i, x)
		borrowed += json_is_true(json_object_get(x, "borrowed"));
	json_decref(a);
	assert_int_equal(borrowed, 2);
	submit_gpu(f, "b", "b1", 1, 50);
	fx_idle(f);
	a = fx_ok(f, "GET", "/v1/allocations?namespace=a", NULL);
	json_array_foreach(a, i, x) {
		if (!strcmp(js(x, "desired_status"), "stop")) {
			char path[128];
			stopped++;
			assert_true(json_is_true(json_object_get(x, "borrowed")));
			snprintf(path, sizeof(path), "/v1/allocation/%s/status", js(x, "id"));
			json_decref(fx_ok(f, "PUT", path, "{\"client_status\": \"complete\"}"));
		}
	}
	json_decref(a);
	assert_int_equal(stopped, 1);
	fx_idle(f);
	assert_int_equal(nlive(f, "b", "b1"), 1);
	fx_free(f);
}

/* A 25% share counts 0.25 GPU: a 1-GPU quota takes four of them, the
 * fifth queues; status shows the fractions. */
static void test_fractions_count_by_share(void **state)
{
	struct fx *f = fx_new_teams(SERVER_PREEMPT_NONE, 0);
	json_t *st, *e;
	(void)state;
	node_add_sharing(f, "m1", 2, "H100", "mps");
	put_quota(f, "q1", 1, NULL);
	put_ns(f, "t", "q1");
	for (int k = 0; k < 5; k++) {
		char b[512];
		snprintf(b, sizeof(b),
			 "{\"job\": {\"id\": \"f%d\", \"namespace\": \"t\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
			 " \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
			 " \"resources\": {\"cpu\": 10, \"memory\": 16, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1,"
			 " \"compute\": 25}]}}]}]}}", k);
		json_decref(fx_ok(f, "POST", "/v1/jobs", b));
		fx_idle(f);
	}
	for (int k = 0; k < 4; k++) {
		char id[8];
		snprintf(id, sizeof(id), "f%d", k);
		assert_int_equal(nlive(f, "t", id), 1);
	}
	assert_int_equal(nlive(f, "t", "f4"), 0);
	e = last_eval(f, "t", "f4");
	assert_string_equal(js(e, "status_description"), "queued: quota q1: nvidia/gpu 1/1");
	json_decref(e);
	finish(f, "t", "f0", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "t", "f4"), 1);
	st = fx_ok(f, "GET", "/v1/quota/q1/status", NULL);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(st, "namespaces"), 0),
							      "gpu_used")), "1");
	json_decref(st);
	finish(f, "t", "f1", "complete");
	st = fx_ok(f, "GET", "/v1/quota/q1/status", NULL);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(st, "namespaces"), 0),
							      "gpu_used")), "0.75");
	json_decref(st);
	fx_free(f);
}

/* A batch job of one group asking gpus whole GPUs of a model (device
 * name "nvidia/gpu/<model>"), in namespace ns. */
static void submit_model(struct fx *f, const char *ns, const char *id, int gpus, const char *model, int priority)
{
	char *t = NULL;
	assert_true(asprintf(&t,
		"{\"job\": {\"id\": \"%s\", \"namespace\": \"%s\", \"type\": \"batch\", \"priority\": %d,"
		" \"groups\": [{\"name\": \"g\", \"count\": 1, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}, \"resources\":"
		" {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu/%s\", \"count\": %d}]}}]}]}}",
		id, ns, priority, model, gpus) > 0);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
}

/* Head of line: a job that fits nowhere (too many GPUs, or a model the
 * cluster lacks) does not hold jobs behind it that fit; when capacity
 * appears, the queue's order decides who gets it. */
static void test_unplaceable_does_not_block(void **state)
{
	struct fx *f = fx_new_teams(SERVER_PREEMPT_NONE, 0);
	(void)state;
	node_add(f, "n1", 2, "H100");
	submit_gpu(f, "default", "huge", 8, 90);
	fx_idle(f);
	submit_model(f, "default", "b200", 1, "B200", 80);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "huge") + nlive(f, "default", "b200"), 0);
	submit_gpu(f, "default", "s1", 1, 50);
	fx_idle(f);
	submit_gpu(f, "default", "s2", 1, 50);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "s1"), 1);
	assert_int_equal(nlive(f, "default", "s2"), 1);
	/* the node is full: s3 (earlier, higher priority) and s4 wait */
	submit_gpu(f, "default", "s3", 1, 60);
	fx_idle(f);
	submit_gpu(f, "default", "s4", 1, 50);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "s3") + nlive(f, "default", "s4"), 0);
	/* a GPU frees: the next in the queue's order that fits takes it */
	finish(f, "default", "s1", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "s3"), 1);
	assert_int_equal(nlive(f, "default", "s4"), 0);
	finish(f, "default", "s2", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "s4"), 1);
	assert_int_equal(nlive(f, "default", "huge") + nlive(f, "default", "b200"), 0);
	fx_free(f);
}

/* Shares, spec parsing with positions, limits. */
static void test_shares_and_specs(void **state)
{
	struct diag_list dl;
	json_t *d, *q;
	const char *bad = "name = \"x\"\nlimit {\n  region_limit {\n    device \"nvidia/gpu\" { cnt = 1 }\n  }\n}\n";
	const char *good = "name = \"team-a\"\nlimit {\n  region = \"global\"\n  region_limit {\n    cpu = 2500\n"
			   "    memory = 1000\n    device \"nvidia/gpu\" { count = 4 }\n"
			   "    device \"nvidia/gpu/NVIDIA H100 80GB HBM3\" { count = 1 }\n  }\n}\n";
	int64_t m;
	char buf[32];
	(void)state;
	d = json_pack("{s:b, s:i}", "whole", 0, "compute_milli", 250);
	assert_int_equal(alloc_device_gpu_milli(d), 250);
	json_decref(d);
	d = json_pack("{s:b, s:s}", "whole", 1, "mig_profile", "3g.40gb");
	assert_int_equal(alloc_device_gpu_milli(d), 429);
	json_decref(d);
	d = json_pack("{s:b}", "whole", 1);
	assert_int_equal(alloc_device_gpu_milli(d), 1000);
	json_decref(d);
	assert_string_equal(gpu_milli_format(250, buf, sizeof(buf)), "0.25");
	assert_string_equal(gpu_milli_format(4000, buf, sizeof(buf)), "4");
	assert_string_equal(gpu_milli_format(1500, buf, sizeof(buf)), "1.5");
	diag_list_init(&dl);
	assert_null(quota_spec_from_hcl(bad, strlen(bad), &dl));
	assert_true(dl.errors >= 1);
	assert_int_equal(dl.v[0].line, 4);
	diag_list_release(&dl);
	diag_list_init(&dl);
	q = quota_spec_from_hcl(good, strlen(good), &dl);
	assert_non_null(q);
	assert_int_equal(quota_device_limits(q), 2);
	assert_string_equal(quota_device_limit(q, 1, &m), "nvidia/gpu/NVIDIA H100 80GB HBM3");
	assert_int_equal(m, 1000);
	assert_int_equal(quota_gpu_limit(q), 4000);
	assert_true(quota_name_matches("nvidia/gpu", "nvidia/gpu/T4"));
	assert_false(quota_name_matches("nvidia/gpu/T4", "nvidia/gpu/T40"));
	json_decref(q);
	diag_list_release(&dl);
}

/* A batch job id in namespace "scratch" (caller frees). */
static char *scratch_job(const char *id)
{
	return xasprintf("{\"job\": {\"id\": \"%s\", \"namespace\": \"scratch\", \"type\": \"batch\","
			 " \"groups\": [{\"name\": \"g\", \"tasks\": [{\"name\": \"t\","
			 " \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}}]}]}}", id);
}

/* A namespace is deleted only without jobs (checked inside the delete's
 * commit), and a job cannot be registered into one that is gone. */
static void test_namespace_delete(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	long st = 0;
	json_t *r;
	char *job;
	(void)state;
	put_ns(f, "scratch", NULL);
	job = scratch_job("keep");
	json_decref(fx_ok(f, "POST", "/v1/jobs", job));
	free(job);
	r = fx_call(f, "DELETE", "/v1/namespace/scratch", NULL, &st);
	assert_int_equal(st, 409);
	assert_string_equal(js(json_object_get(r, "error"), "code"), "namespace_not_empty");
	assert_non_null(strstr(js(json_object_get(r, "error"), "message"), "keep"));
	json_decref(r);
	/* still there */
	assert_int_equal(fx_status(f, "GET", "/v1/namespace/scratch", NULL), 200);
	json_decref(fx_ok(f, "DELETE", "/v1/job/keep?namespace=scratch&purge=true", NULL));
	fx_idle(f);
	json_decref(fx_ok(f, "DELETE", "/v1/namespace/scratch", NULL));
	assert_int_equal(fx_status(f, "DELETE", "/v1/namespace/scratch", NULL), 404);
	job = scratch_job("late");
	r = fx_call(f, "POST", "/v1/jobs", job, &st);
	free(job);
	assert_int_equal(st, 400);
	assert_string_equal(js(json_object_get(r, "error"), "code"), "namespace_not_found");
	json_decref(r);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares_and_specs),
		cmocka_unit_test(test_namespace_delete),
		cmocka_unit_test(test_quota_queue),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_fractions_count_by_share),
		cmocka_unit_test(test_preempt_minimal),
		cmocka_unit_test(test_preempt_all_device_blocks),
		cmocka_unit_test(test_preempt_off_for_service),
		cmocka_unit_test(test_borrow_and_reclaim),
		cmocka_unit_test(test_unplaceable_does_not_block),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
