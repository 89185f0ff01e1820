/* Unit tests of the control plane: a real server (store, HTTP, workers,
 * heartbeat timer) on 127.0.0.1, an ephemeral port and a temporary data
 * dir, driven with libcurl the way agents and the CLI drive it. */
#include <pthread.h>

#include "server/server-int.h"   /* heartbeat_check */
#include "server_fx.h"

static struct fx *srv_new(unsigned workers, int64_t ttl, size_t max_body, const char *policy)
{
	struct server_config cfg = { .workers = workers, .heartbeat_ttl_ns = ttl,
				     .max_body = max_body, .policy = policy };
	return fx_new_cfg(&cfg);
}

static const char *anode(const json_t *alloc)
{
	return json_string_value(json_object_get(alloc, "node_id"));
}

static json_t *adevs(const json_t *alloc)
{
	return json_object_get(json_object_get(alloc, "resources"), "devices");
}

/* ---- tests --------------------------------------------------------------- */

static void test_gpu_job_placed(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	json_t *al;
	const char *dev;
	fx_node(f, "n1", 2, "NVIDIA H100 80GB HBM3", "exclusive", NULL);
	fx_submit(f, "one", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}", NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "one");
	assert_string_equal(anode(al), "n1");
	assert_int_equal(json_array_size(adevs(al)), 1);
	dev = json_string_value(json_object_get(json_array_get(adevs(al), 0), "id"));
	assert_true(!strcmp(dev, "GPU-n1-0") || !strcmp(dev, "GPU-n1-1"));
	assert_string_equal(json_string_value(json_object_get(al, "name")), "one.g[0]");
	json_decref(al);
	fx_free(f);
}

static void test_two_gpus_where_free(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	json_t *al;
	fx_node(f, "a", 1, "H100", "exclusive", NULL);
	fx_node(f, "b", 2, "H100", "exclusive", NULL);
	fx_node(f, "c", 3, "H100", "exclusive", NULL);
	/* take two of c's three first */
	fx_submit(f, "pre", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 2}",
	       ", \"constraints\": [{\"attribute\": \"${node.unique.name}\", \"operator\": \"=\", \"value\": \"c\"}]");
	fx_idle(f);
	al = fx_the_alloc(f, "pre");
	assert_string_equal(anode(al), "c");
	json_decref(al);
	fx_submit(f, "two", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 2}", NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "two");
	assert_string_equal(anode(al), "b");
	assert_int_equal(json_array_size(adevs(al)), 2);
	json_decref(al);
	fx_free(f);
}

static void test_model_constraint_and_affinity(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	fx_node(f, "t4", 4, "Tesla T4", "exclusive", "r1");
	fx_node(f, "h100", 4, "NVIDIA H100 80GB HBM3", "exclusive", "r2");
	fx_node(f, "h100b", 4, "NVIDIA H100 80GB HBM3", "exclusive", "r3");
	for (int i = 0; i < 3; i++) {
		char id[32];
		json_t *al;
		snprintf(id, sizeof(id), "m%d", i);
		fx_submit(f, id, "service", 1,
		       "{\"name\": \"nvidia/gpu\", \"count\": 1, \"constraints\": [{\"attribute\": "
		       "\"${device.model}\", \"operator\": \"=\", \"value\": \"Tesla T4\"}]}", NULL);
		fx_idle(f);
		al = fx_the_alloc(f, id);
		assert_string_equal(anode(al), "t4");
		json_decref(al);
	}
	for (int i = 0; i < 3; i++) {
		char id[32];
		json_t *al;
		snprintf(id, sizeof(id), "aff%d", i);
		fx_submit(f, id, "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}",
		       ", \"affinities\": [{\"attribute\": \"${meta.rack}\", \"operator\": \"=\", \"value\": \"r3\", \"weight\": 100}]");
		fx_idle(f);
		al = fx_the_alloc(f, id);
		assert_string_equal(anode(al), "h100b");
		json_decref(al);
	}
	fx_free(f);
}

static void test_blocked_then_placed(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	json_t *r, *ev, *fp;
	const char *expl;
	fx_node(f, "small", 2, "H100", "exclusive", NULL);
	fx_submit(f, "big", "batch", 1, "{\"name\": \"nvidia/gpu\", \"count\": 4}", NULL);
	fx_idle(f);
	r = fx_job_allocs(f, "big");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	r = fx_ok(f, "GET", "/v1/job/big/evaluations", NULL);
	assert_int_equal(json_array_size(r), 1);
	ev = json_array_get(r, 0);
	assert_string_equal(json_string_value(json_object_get(ev, "status")), "blocked");
	fp = json_object_get(json_object_get(ev, "failed_placements"), "g");
	assert_non_null(fp);
	expl = json_string_value(json_object_get(fp, "explanation"));
	assert_non_null(strstr(expl, "no node fits"));
	assert_int_equal(json_integer_value(json_object_get(fp, "missing")), 1);
	json_decref(r);
	r = fx_ok(f, "GET", "/v1/job/big", NULL);
	assert_string_equal(json_string_value(json_object_get(r, "status")), "pending");
	json_decref(r);

	fx_node(f, "large", 4, "H100", "exclusive", NULL);
	fx_idle(f);
	r = fx_the_alloc(f, "big");
	assert_string_equal(anode(r), "large");
	assert_int_equal(json_array_size(adevs(r)), 4);
	json_decref(r);
	fx_free(f);
}

static void test_fractional_shares(void **state)
{
	struct fx *f = srv_new(1, 0, 0, "binpack");
	const char *first_dev = NULL;
	json_t *al, *keep = NULL;
	fx_node(f, "m1", 1, "H100", "mps", NULL);
	fx_node(f, "m2", 1, "H100", "mps", NULL);
	for (int i = 0; i < 5; i++) {
		char id[32];
		const char *dev;
		snprintf(id, sizeof(id), "frac%d", i);
		fx_submit(f, id, "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1, \"compute\": 25}", NULL);
		fx_idle(f);
		al = fx_the_alloc(f, id);
		dev = json_string_value(json_object_get(json_array_get(adevs(al), 0), "id"));
		assert_int_equal(json_integer_value(json_object_get(json_array_get(adevs(al), 0), "compute_milli")), 250);
		if (i == 0) {
			keep = json_incref(al);
			first_dev = dev;
		} else if (i < 4) {
			assert_string_equal(dev, first_dev);
		} else {
			assert_string_not_equal(dev, first_dev);
		}
		json_decref(al);
	}
	json_decref(keep);
	fx_free(f);
}

struct submitter {
	struct fx *f;
	int first, n;
};

static void *submit_many(void *arg)
{
	struct submitter *s = arg;
	for (int i = s->first; i < s->first + s->n; i++) {
		char id[32];
		snprintf(id, sizeof(id), "c%03d", i);
		fx_submit(s->f, id, "service", 1, i % 3 ? "{\"name\": \"nvidia/gpu\", \"count\": 1}"
			: "{\"name\": \"nvidia/gpu\", \"count\": 1, \"compute\": 40}", NULL);
	}
	return NULL;
}

static void test_concurrent_never_overcommit(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	struct submitter s[4];
	pthread_t th[4];
	json_t *allocs, *al, *use = json_object(), *ten = json_object();
	size_t i, placed = 0;
	const char *k;
	json_t *v;

	fx_node(f, "x1", 2, "H100", "exclusive", NULL);
	fx_node(f, "x2", 2, "H100", "mps", NULL);
	fx_node(f, "x3", 2, "H100", "exclusive", NULL);
	for (int t = 0; t < 4; t++) {
		s[t].f = f;
		s[t].first = t * 10;
		s[t].n = 10;
		pthread_create(&th[t], NULL, submit_many, &s[t]);
	}
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	fx_idle(f);
	allocs = fx_ok(f, "GET", "/v1/allocations", NULL);
	json_array_foreach(allocs, i, al) {
		size_t j;
		json_t *d;
		if (strcmp(json_string_value(json_object_get(al, "desired_status")), "run"))
			continue;
		placed++;
		json_array_foreach(adevs(al), j, d) {
			const char *id = json_string_value(json_object_get(d, "id"));
			json_int_t c = json_integer_value(json_object_get(d, "compute_milli"));
			json_object_set_new(use, id, json_integer(json_integer_value(json_object_get(use, id)) + c));
			json_object_set_new(ten, id, json_integer(json_integer_value(json_object_get(ten, id)) + 1));
			if (json_is_false(json_object_get(d, "whole")) == 0)
				assert_int_equal(c, 1000);
		}
	}
	json_object_foreach(use, k, v) {
		assert_true(json_integer_value(v) <= 1000);
		/* exclusive devices hold one tenant */
		if (strncmp(k, "GPU-x2", 6))
			assert_int_equal(json_integer_value(json_object_get(ten, k)), 1);
	}
	/* 4 exclusive GPUs + the mps ones: whole asks may take an mps GPU too,
	 * so at least 4 and at most 4 + 2*2 (40% shares) placements. */
	assert_true(placed >= 5 && placed <= 10);
	json_decref(allocs);
	json_decref(use);
	json_decref(ten);
	fx_free(f);
}

static void test_heartbeat_expiry_reschedules(void **state)
{
	struct fx *f = srv_new(2, SEC / 2, 0, NULL);
	json_t *al, *r;
	char *first = NULL;
	fx_node(f, "h1", 1, "H100", "exclusive", NULL);
	fx_node(f, "h2", 1, "H100", "exclusive", NULL);
	fx_submit(f, "svc", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}", NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "svc");
	first = strdup(anode(al));
	json_decref(al);
	/* the other node keeps beating; the first goes silent */
	for (int i = 0; i < 30; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/v1/node/%s/heartbeat", strcmp(first, "h1") ? "h1" : "h2");
		json_decref(fx_ok(f, "PUT", path, "{}"));
		usleep(100000);
	}
	fx_idle(f);
	{
		char path[64];
		snprintf(path, sizeof(path), "/v1/node/%s", first);
		r = fx_ok(f, "GET", path, NULL);
		assert_string_equal(json_string_value(json_object_get(r, "status")), "down");
		json_decref(r);
	}
	al = fx_the_alloc(f, "svc");
	assert_string_not_equal(anode(al), first);
	assert_true(strlen(json_string_value(json_object_get(al, "previous_allocation"))) > 0);
	json_decref(al);
	/* the old one is lost and stopped */
	r = fx_job_allocs(f, "svc");
	assert_int_equal(json_array_size(r), 2);
	json_decref(r);
	free(first);
	fx_free(f);
}

static const char *node_status(struct fx *f, const char *id)
{
	static char st[32];
	json_t *n = fx_get(f, "/v1/node/%s", id);
	snprintf(st, sizeof(st), "%s", fx_s(n, "status"));
	json_decref(n);
	return st;
}

/* A server that starts (a restart, or a standby that became the leader of
 * a shared store: server_start runs once it holds the store) gives every
 * node it finds ready a full TTL from its start: a silence before it led
 * (agents failing over to it) is not held against the node.  Its own
 * silence afterwards is. */
static void test_start_gives_nodes_a_fresh_ttl(void **state)
{
	struct fx *f = srv_new(2, SEC, 0, NULL);

	fx_node(f, "quiet", 1, "H100", "exclusive", NULL);
	assert_string_equal(node_status(f, "quiet"), "ready");
	server_stop(f->srv);
	usleep(1500 * 1000);   /* longer than the TTL since its last heartbeat */
	fx_start(f);
	heartbeat_check(f->srv);
	assert_string_equal(node_status(f, "quiet"), "ready");
	/* a heartbeat to the new server keeps it so */
	fx_heartbeat(f, "quiet");
	heartbeat_check(f->srv);
	assert_string_equal(node_status(f, "quiet"), "ready");
	/* silent for a TTL under this server: down */
	usleep(1500 * 1000);
	heartbeat_check(f->srv);
	assert_string_equal(node_status(f, "quiet"), "down");
	fx_free(f);
}

static void test_restart_keeps_state(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	json_t *al, *al2;
	json_t *w;
	fx_node(f, "r1", 1, "H100", "exclusive", NULL);
	/* one after the other: submitted together, two workers evaluate both
	 * at once and either may take the only GPU (neither waits yet, so the
	 * fair queue has no order to keep); the test is about the restart */
	fx_submit(f, "keep", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}", NULL);
	fx_idle(f);
	fx_submit(f, "wait", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}", NULL);
	fx_idle(f);
	w = fx_job_allocs(f, "wait");
	assert_int_equal(json_array_size(w), 0);
	json_decref(w);
	al = fx_the_alloc(f, "keep");
	server_stop(f->srv);
	fx_start(f);
	al2 = fx_the_alloc(f, "keep");
	assert_string_equal(json_string_value(json_object_get(al, "id")),
			    json_string_value(json_object_get(al2, "id")));
	json_decref(al);
	json_decref(al2);
	/* the blocked one is still waiting (its evaluation ran again at the
	 * start and placed nothing twice), and is placed when room appears */
	fx_idle(f);
	w = fx_job_allocs(f, "wait");
	assert_int_equal(json_array_size(w), 0);
	json_decref(w);
	fx_node(f, "r2", 1, "H100", "exclusive", NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "wait");
	assert_string_equal(anode(al), "r2");
	json_decref(al);
	json_decref(fx_the_alloc(f, "keep"));
	fx_free(f);
}

/* Each device of an allocation names the task that owns it, and
 * resources.tasks lists every task's devices (none for a task that asked
 * none): two tasks of one GPU each get different GPUs. */
static void test_devices_per_task(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	const char *task = "{\"name\": \"%s\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
			   " \"resources\": {\"cpu\": 100, \"memory\": 64 %s}}";
	const char *gpu = ", \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1}]";
	char *ta = NULL, *tb = NULL, *tc = NULL, *body = NULL;
	json_t *al, *tasks, *d;
	const char *da, *db;
	size_t i;
	fx_node(f, "n1", 4, "H100", "exclusive", NULL);
	assert_true(asprintf(&ta, task, "a", gpu) > 0);
	assert_true(asprintf(&tb, task, "b", gpu) > 0);
	assert_true(asprintf(&tc, task, "c", "") > 0);
	assert_true(asprintf(&body, "{\"job\": {\"id\": \"pt\", \"type\": \"service\", \"groups\":"
			     " [{\"name\": \"g\", \"count\": 1, \"tasks\": [%s, %s, %s]}]}}", ta, tb, tc) > 0);
	json_decref(fx_ok(f, "POST", "/v1/jobs", body));
	fx_idle(f);
	al = fx_the_alloc(f, "pt");
	assert_int_equal(json_array_size(adevs(al)), 2);
	json_array_foreach(adevs(al), i, d)
		assert_string_equal(json_string_value(json_object_get(d, "task")), i == 0 ? "a" : "b");
	tasks = json_object_get(json_object_get(al, "resources"), "tasks");
	assert_int_equal(json_object_size(tasks), 3);
	assert_int_equal(json_array_size(json_object_get(json_object_get(tasks, "a"), "devices")), 1);
	assert_int_equal(json_array_size(json_object_get(json_object_get(tasks, "b"), "devices")), 1);
	assert_int_equal(json_array_size(json_object_get(json_object_get(tasks, "c"), "devices")), 0);
	da = json_string_value(json_array_get(json_object_get(json_object_get(tasks, "a"), "devices"), 0));
	db = json_string_value(json_array_get(json_object_get(json_object_get(tasks, "b"), "devices"), 0));
	assert_string_not_equal(da, db);
	assert_string_equal(da, json_string_value(json_object_get(json_array_get(adevs(al), 0), "id")));
	assert_string_equal(db, json_string_value(json_object_get(json_array_get(adevs(al), 1), "id")));
	json_decref(al);
	free(ta);
	free(tb);
	free(tc);
	free(body);
	fx_free(f);
}

static void test_invalid_job_and_unknown(void **state)
{
	struct fx *f = srv_new(1, 0, 0, NULL);
	long st;
	json_t *r = fx_call(f, "POST", "/v1/jobs",
			 "{\"job\": {\"id\": \"bad\", \"groups\": [{\"name\": \"g\", \"count\": -3, \"tasks\": []}]}}", &st);
	json_t *e = json_object_get(r, "error"), *d;
	assert_int_equal(st, 400);
	assert_string_equal(json_string_value(json_object_get(e, "code")), "invalid_job");
	d = json_object_get(e, "diagnostics");
	assert_true(json_array_size(d) >= 1);
	assert_true(strlen(json_string_value(json_object_get(json_array_get(d, 0), "path"))) > 0);
	json_decref(r);
	r = fx_ok(f, "GET", "/v1/jobs", NULL);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	r = fx_call(f, "GET", "/v1/job/nope", NULL, &st);
	assert_int_equal(st, 404);
	json_decref(r);
	r = fx_call(f, "DELETE", "/v1/job/nope", NULL, &st);
	assert_int_equal(st, 404);
	json_decref(r);
	r = fx_call(f, "PUT", "/v1/node/ghost/heartbeat", "{}", &st);
	assert_int_equal(st, 404);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")), "node_not_found");
	json_decref(r);
	fx_free(f);
}

static void test_oversize_body(void **state)
{
	struct fx *f = srv_new(1, 0, 1024, NULL);
	char *big = malloc(4096);
	long st;
	json_t *r;
	memset(big, ' ', 4095);
	big[0] = '{';
	big[4093] = '}';
	big[4094] = 0;
	r = fx_call(f, "POST", "/v1/jobs", big, &st);
	assert_int_equal(st, 413);
	json_decref(r);
	free(big);
	fx_free(f);
}

static void test_resubmit_stop_and_batch_complete(void **state)
{
	struct fx *f = srv_new(2, 0, 0, NULL);
	char *t = fx_job("b1", "batch", 1, NULL, NULL, NULL);
	json_t *r, *al;
	char path[128];
	fx_node(f, "w1", 0, "none", "exclusive", NULL);
	fx_submit(f, "b1", "batch", 1, NULL, NULL);
	fx_idle(f);
	r = fx_ok(f, "POST", "/v1/jobs", t); /* unchanged: no new version, no eval */
	assert_string_equal(json_string_value(json_object_get(r, "eval_id")), "");
	json_decref(r);
	al = fx_the_alloc(f, "b1");
	snprintf(path, sizeof(path), "/v1/allocation/%s/status",
		 json_string_value(json_object_get(al, "id")));
	json_decref(fx_ok(f, "PUT", path, "{\"client_status\": \"running\"}"));
	r = fx_ok(f, "GET", "/v1/job/b1", NULL);
	assert_string_equal(json_string_value(json_object_get(r, "status")), "running");
	json_decref(r);
	json_decref(fx_ok(f, "PUT", path, "{\"client_status\": \"complete\"}"));
	fx_idle(f);
	r = fx_ok(f, "GET", "/v1/job/b1", NULL);
	assert_string_equal(json_string_value(json_object_get(r, "status")), "dead");
	json_decref(r);
	r = fx_job_allocs(f, "b1");
	assert_int_equal(json_array_size(r), 1); /* a complete batch alloc is not replaced */
	json_decref(r);
	json_decref(al);
	/* a service stopped: its allocation is desired stop */
	fx_submit(f, "s1", "service", 1, NULL, NULL);
	fx_idle(f);
	json_decref(fx_ok(f, "DELETE", "/v1/job/s1", NULL));
	fx_idle(f);
	r = fx_job_allocs(f, "s1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "desired_status")), "stop");
	json_decref(r);
	free(t);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_job_placed),
		cmocka_unit_test(test_two_gpus_where_free),
		cmocka_unit_test(test_model_constraint_and_affinity),
		cmocka_unit_test(test_blocked_then_placed),
		cmocka_unit_test(test_fractional_shares),
		cmocka_unit_test(test_concurrent_never_overcommit),
		cmocka_unit_test(test_heartbeat_expiry_reschedules),
		cmocka_unit_test(test_restart_keeps_state),
		cmocka_unit_test(test_start_gives_nodes_a_fresh_ttl),
		cmocka_unit_test(test_devices_per_task),
		cmocka_unit_test(test_invalid_job_and_unknown),
		cmocka_unit_test(test_oversize_body),
		cmocka_unit_test(test_resubmit_stop_and_batch_complete),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
