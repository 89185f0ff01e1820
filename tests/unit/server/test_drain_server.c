/* Node drains through the API of a real server (server/drain.h): the
 * pacing of a service's migrations with the agents' reports driven by
 * hand, a replacement that cannot be placed holding the next ones back, a
 * force, the drain's end, the strategy kept through an agent's
 * registration, bad bodies.  Rounds of the drainer are run by the test
 * (drain_round) where it waits for one; the server's own thread may run
 * more, which decide the same. */
#include "server_fx.h"

#include "server/drain.h"
#include "server/server-int.h" /* the store, to mark an allocation by hand */

#define GPU1 "{\"name\": \"nvidia/gpu\", \"count\": 1}"
#define MIGRATE ", \"migrate\": {\"max_parallel\": 1, \"min_healthy_time\": \"0s\"}"

static bool marked(const json_t *a)
{
	return json_is_true(json_object_get(json_object_get(a, "desired_transition"), "migrate"));
}

/* The job's allocations on node that were told to migrate. */
static size_t count_marked(struct fx *f, const char *job, const char *node)
{
	json_t *all = fx_job_allocs(f, job), *a;
	size_t i, n = 0;
	json_array_foreach(all, i, a)
		n += marked(a) && !strcmp(fx_s(a, "node_id"), node);
	json_decref(all);
	return n;
}

/* The allocation of job with instance index idx whose desired status is
 * want ("run" or "stop") on node (NULL: any); a new reference or NULL. */
static json_t *alloc_of(struct fx *f, const char *job, int idx, const char *want, const char *node)
{
	json_t *all = fx_job_allocs(f, job), *a, *out = NULL;
	size_t i;
	json_array_foreach(all, i, a)
		if (fx_i(a, "index") == idx && !strcmp(fx_s(a, "desired_status"), want) &&
		    (!node || !strcmp(fx_s(a, "node_id"), node)))
			out = json_incref(a);
	json_decref(all);
	return out;
}

static void round_and_idle(struct fx *f)
{
	drain_round(f->srv);
	fx_idle(f);
}

static void test_paced_and_blocked(void **state)
{
	struct fx *f = fx_new();
	json_t *r, *a, *repl, *n, *all;
	size_t i;
	(void)state;
	fx_node(f, "d1", 3, "H100", "exclusive", NULL);
	fx_node(f, "d2", 1, "H100", "exclusive", NULL); /* room for one replacement */
	json_decref(fx_ok(f, "POST", "/v1/node/d2/eligibility", "{\"eligible\": false}"));
	fx_submit(f, "svc", "service", 3, GPU1, MIGRATE);
	fx_idle(f);
	r = fx_running(f, "svc");
	assert_int_equal(json_array_size(r), 3);
	json_array_foreach(r, i, a) {
		assert_string_equal(fx_s(a, "node_id"), "d1");
		fx_alloc_status(f, a, "running");
	}
	json_decref(r);
	json_decref(fx_ok(f, "POST", "/v1/node/d2/eligibility", "{\"eligible\": true}"));
	fx_idle(f);

	/* the drain's first step: one instance (index 0) goes, in the commit
	 * that started the drain */
	r = fx_ok(f, "POST", "/v1/node/d1/drain", "{\"drain_spec\": {\"deadline\": 3600000000000}}");
	assert_int_equal(json_array_size(json_object_get(r, "eval_ids")), 1);
	json_decref(r);
	fx_idle(f);
	assert_int_equal(count_marked(f, "svc", "d1"), 1);
	a = alloc_of(f, "svc", 0, "stop", "d1");
	assert_non_null(a);
	assert_true(marked(a));
	n = fx_get(f, "/v1/node/%s", "d1");
	assert_true(json_is_true(json_object_get(n, "drain")));
	assert_string_equal(fx_s(n, "eligibility"), "ineligible");
	assert_int_equal(fx_i(json_object_get(n, "drain_strategy"), "deadline"), 3600 * SEC);
	assert_string_equal(fx_s(json_object_get(n, "last_drain"), "status"), "draining");
	json_decref(n);
	/* its replacement on d2 is not running yet: nothing more goes */
	repl = alloc_of(f, "svc", 0, "run", "d2");
	assert_non_null(repl);
	assert_true(json_is_true(json_object_get(repl, "drain_migration")));
	round_and_idle(f);
	assert_int_equal(count_marked(f, "svc", "d1"), 1);

	/* the old one ended, the replacement runs (healthy: min_healthy_time
	 * 0): the next goes */
	fx_alloc_status(f, a, "complete");
	fx_alloc_status(f, repl, "running");
	json_decref(a);
	json_decref(repl);
	repl = alloc_of(f, "svc", 0, "run", "d2");
	assert_non_null(json_object_get(json_object_get(repl, "deployment_status"), "ready_since"));
	json_decref(repl);
	round_and_idle(f);
	assert_int_equal(count_marked(f, "svc", "d1"), 2);
	a = alloc_of(f, "svc", 1, "stop", "d1");
	assert_non_null(a);
	fx_alloc_status(f, a, "complete");
	json_decref(a);

	/* its replacement has nowhere to go (d2 is full): it counts as
	 * migrating, the third stays */
	round_and_idle(f);
	round_and_idle(f);
	assert_int_equal(count_marked(f, "svc", "d1"), 2);
	a = alloc_of(f, "svc", 2, "run", "d1");
	assert_non_null(a);
	assert_false(marked(a));
	json_decref(a);

	/* a force (the deadline now): everything left goes */
	json_decref(fx_ok(f, "POST", "/v1/node/d1/drain", "{\"drain_spec\": {\"deadline\": 0}}"));
	fx_idle(f);
	assert_int_equal(count_marked(f, "svc", "d1"), 3);
	n = fx_get(f, "/v1/node/%s", "d1");
	assert_string_equal(fx_s(json_object_get(n, "last_drain"), "status"), "draining");
	json_decref(n);

	/* once nothing runs there, the drain is complete; the node stays
	 * ineligible */
	all = fx_job_allocs(f, "svc");
	json_array_foreach(all, i, a)
		if (!strcmp(fx_s(a, "node_id"), "d1") && strcmp(fx_s(a, "client_status"), "complete"))
			fx_alloc_status(f, a, "complete");
	json_decref(all);
	round_and_idle(f);
	n = fx_get(f, "/v1/node/%s", "d1");
	assert_false(json_is_true(json_object_get(n, "drain")));
	assert_null(json_object_get(n, "drain_strategy"));
	assert_string_equal(fx_s(n, "eligibility"), "ineligible");
	assert_string_equal(fx_s(json_object_get(n, "last_drain"), "status"), "complete");
	assert_true(fx_i(json_object_get(n, "last_drain"), "ended_at") >=
		    fx_i(json_object_get(n, "last_drain"), "started_at"));
	json_decref(n);
	fx_free(f);
}

/* Batch allocations stay until the deadline; a drain under way survives
 * its agent registering again; -disable cancels and, with mark_eligible,
 * makes the node eligible. */
static void test_batch_stays_and_cancel(void **state)
{
	struct fx *f = fx_new();
	json_t *n, *a, *st;
	(void)state;
	fx_node(f, "b1", 1, "H100", "exclusive", NULL);
	fx_submit(f, "train", "batch", 1, GPU1, NULL);
	fx_idle(f);
	a = fx_the_alloc(f, "train");
	fx_alloc_status(f, a, "running");
	json_decref(a);
	json_decref(fx_ok(f, "POST", "/v1/node/b1/drain",
			  "{\"drain_spec\": {\"deadline\": 3600000000000, \"ignore_system_jobs\": true}}"));
	round_and_idle(f);
	a = fx_the_alloc(f, "train");
	assert_false(marked(a));
	assert_string_equal(fx_s(a, "node_id"), "b1");
	json_decref(a);
	n = fx_get(f, "/v1/node/%s", "b1");
	st = json_deep_copy(json_object_get(n, "drain_strategy"));
	assert_true(json_is_true(json_object_get(st, "ignore_system_jobs")));
	json_decref(n);
	/* the agent registers again (a restart): the drain goes on */
	fx_node(f, "b1", 1, "H100", "exclusive", NULL);
	n = fx_get(f, "/v1/node/%s", "b1");
	assert_true(json_is_true(json_object_get(n, "drain")));
	assert_true(json_equal(json_object_get(n, "drain_strategy"), st));
	json_decref(n);
	json_decref(st);
	/* told to migrate without an evaluation yet (as between the drainer's
	 * commit and the scheduler's): a cancel tells it no more */
	{
		struct store_batch b = STORE_BATCH_INIT;
		json_t *c = fx_the_alloc(f, "train");
		struct store_key key = { NULL, fx_s(c, "id"), 0 };
		store_batch_init(&b);
		store_batch_require_index(&b, STORE_ALLOC, &key, (uint64_t)fx_i(c, "modify_index"));
		json_object_set_new(c, "desired_transition", json_pack("{s:b}", "migrate", 1));
		store_batch_put(&b, STORE_ALLOC, c);
		assert_int_equal(store_commit(f->srv->store, &b, NULL, NULL), 0);
		store_batch_release(&b);
		json_decref(c);
	}
	/* canceled, eligible again */
	json_decref(fx_ok(f, "POST", "/v1/node/b1/drain", "{\"drain_spec\": null, \"mark_eligible\": true}"));
	n = fx_get(f, "/v1/node/%s", "b1");
	assert_false(json_is_true(json_object_get(n, "drain")));
	assert_null(json_object_get(n, "drain_strategy"));
	assert_string_equal(fx_s(n, "eligibility"), "eligible");
	assert_string_equal(fx_s(json_object_get(n, "last_drain"), "status"), "canceled");
	json_decref(n);
	fx_idle(f);
	a = fx_the_alloc(f, "train");
	assert_false(marked(a));
	assert_string_equal(fx_s(a, "node_id"), "b1");
	json_decref(a);
	fx_free(f);
}

static void test_bad_bodies(void **state)
{
	struct fx *f = fx_new();
	long st;
	json_t *r;
	(void)state;
	fx_node(f, "x1", 0, "none", "exclusive", NULL);
	assert_int_equal(fx_status(f, "POST", "/v1/node/x1/drain", "{}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/node/x1/drain", "{\"drain_spec\": 3}"), 400);
	r = fx_call(f, "POST", "/v1/node/x1/drain", "{\"drain_spec\": {\"deadline\": \"1h\"}}", &st);
	assert_int_equal(st, 400);
	assert_non_null(strstr(fx_s(json_object_get(r, "error"), "message"), "drain_spec.deadline"));
	json_decref(r);
	assert_int_equal(fx_status(f, "POST", "/v1/node/x1/drain",
				   "{\"drain_spec\": {\"ignore_system_jobs\": 1}}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/node/x1/drain",
				   "{\"drain_spec\": null, \"mark_eligible\": \"yes\"}"), 400);
	assert_int_equal(fx_status(f, "POST", "/v1/node/ghost/drain", "{\"drain_spec\": {}}"), 404);
	/* nothing changed */
	r = fx_get(f, "/v1/node/%s", "x1");
	assert_false(json_is_true(json_object_get(r, "drain")));
	assert_null(json_object_get(r, "last_drain"));
	json_decref(r);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_paced_and_blocked), cmocka_unit_test(test_batch_stays_and_cancel),
	cmocka_unit_test(test_bad_bodies))
