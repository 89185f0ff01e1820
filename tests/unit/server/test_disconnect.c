/* disconnect { } on the server (disconnect.h): the pure decisions (what a
 * down node's allocation becomes, what reconcile does with an unknown one
 * as time passes, which of original and replacement is kept), and a real
 * server: a silent node's allocation turns unknown and is replaced, stays
 * so across a server restart and turns lost at unknown_since + lost_after;
 * a node back in time keeps the one reconcile { } says. */
#include "server_fx.h"
#include "server/disconnect.h"
#include "server/server-int.h" /* heartbeat_check */

/* ---- pure --------------------------------------------------------------- */

static void test_on_down(void **state)
{
	struct job_disconnect d = { .lost_after = 10 * SEC, .replace = true };
	(void)state;
	assert_int_equal(disconnect_on_down(NULL, false), DISCONNECT_DOWN_LOST);
	assert_int_equal(disconnect_on_down(&d, false), DISCONNECT_DOWN_UNKNOWN);
	assert_int_equal(disconnect_on_down(&d, true), DISCONNECT_DOWN_LOST); /* a gang's */
	d.lost_after = 0; /* only stop_on_client_after, say */
	assert_int_equal(disconnect_on_down(&d, false), DISCONNECT_DOWN_LOST);
}

static void test_unknown_steps(void **state)
{
	struct job_disconnect d = { .lost_after = 10 * SEC, .replace = true };
	json_t *al = json_pack("{s:s, s:I}", "client_status", "unknown", "unknown_since",
			       (json_int_t)(100 * SEC));
	int64_t wake;
	(void)state;
	/* within lost_after: a replacement, then only waiting once placed */
	assert_int_equal(disconnect_unknown_step(&d, al, false, 101 * SEC, &wake), DISCONNECT_REPLACE);
	assert_int_equal(wake, 110 * SEC);
	assert_int_equal(disconnect_unknown_step(&d, al, true, 109 * SEC, &wake), DISCONNECT_WAIT);
	assert_int_equal(wake, 110 * SEC);
	d.replace = false;
	assert_int_equal(disconnect_unknown_step(&d, al, false, 105 * SEC, &wake), DISCONNECT_WAIT);
	/* from the stored time, whatever the server's own start: lost at
	 * unknown_since + lost_after */
	assert_int_equal(disconnect_unknown_step(&d, al, false, 110 * SEC, &wake), DISCONNECT_LOST);
	assert_int_equal(wake, 0);
	/* the block removed since: lost now */
	assert_int_equal(disconnect_unknown_step(NULL, al, false, 101 * SEC, &wake), DISCONNECT_LOST);
	assert_int_equal(disconnect_lost_at(&d, al, 1), 110 * SEC);
	json_decref(al);
}

static void test_replace_at(void **state)
{
	struct job_disconnect d = { .stop_on_client_after = 60 * SEC };
	json_t *al = json_pack("{s:s, s:I}", "client_status", "lost", "end_time", (json_int_t)(100 * SEC));
	(void)state;
	assert_int_equal(disconnect_replace_at(&d, al, 120 * SEC), 160 * SEC);
	assert_int_equal(disconnect_replace_at(NULL, al, 120 * SEC), 120 * SEC);
	d.stop_on_client_after = 0;
	assert_int_equal(disconnect_replace_at(&d, al, 120 * SEC), 120 * SEC);
	json_decref(al);
}

static json_t *running(int64_t started, double score)
{
	return json_pack("{s:s, s:f, s:{s:{s:s, s:I}}}", "client_status", "running", "score", score,
			 "task_states", "t", "state", "running", "started_at", (json_int_t)started);
}

static void test_keep_original(void **state)
{
	json_t *old = running(10, 0.2), *young = running(50, 0.9), *failed;
	(void)state;
	assert_true(disconnect_keep_original("keep_original", old, young));
	assert_false(disconnect_keep_original("keep_replacement", old, young));
	assert_true(disconnect_keep_original("longest_running", old, young));
	assert_false(disconnect_keep_original("longest_running", young, old));
	assert_false(disconnect_keep_original("best_score", old, young));
	assert_true(disconnect_keep_original("best_score", young, old));
	/* ties keep the original */
	assert_true(disconnect_keep_original("best_score", old, old));
	assert_true(disconnect_keep_original("longest_running", old, old));
	/* an original that ended while away is never kept, whatever the rule */
	failed = json_pack("{s:s}", "client_status", "failed");
	assert_false(disconnect_keep_original("keep_original", failed, young));
	assert_int_equal(disconnect_running_since(failed), INT64_MAX);
	assert_int_equal(disconnect_running_since(old), 10);
	json_decref(old);
	json_decref(young);
	json_decref(failed);
}

static void test_of_stored(void **state)
{
	json_t *job = json_pack("{s:[{s:s}, {s:s, s:b, s:{s:I, s:b, s:s, s:I}}]}", "groups",
				"name", "plain", "name", "g", "gang", 0, "disconnect", "lost_after",
				(json_int_t)(5 * SEC), "replace", 0, "reconcile", "keep_replacement",
				"stop_on_client_after", (json_int_t)0);
	struct job_disconnect d;
	bool gang;
	(void)state;
	assert_false(disconnect_of_stored(job, "plain", &d, &gang));
	assert_false(disconnect_of_stored(job, "nope", &d, &gang));
	assert_true(disconnect_of_stored(job, "g", &d, &gang));
	assert_int_equal(d.lost_after, 5 * SEC);
	assert_false(d.replace);
	assert_string_equal(d.reconcile, "keep_replacement");
	assert_false(gang);
	json_decref(job);
}

/* ---- a real server ------------------------------------------------------- */

#define BLOCK(reconcile) \
	", \"disconnect\": {\"lost_after\": \"3s\", \"replace\": true, \"reconcile\": \"" \
	reconcile "\"}"

static struct fx *two_nodes(void)
{
	struct server_config cfg = { .workers = 2, .heartbeat_ttl_ns = SEC };
	struct fx *f = fx_new_cfg(&cfg);
	fx_node(f, "a", 0, "none", "exclusive", NULL);
	fx_node(f, "b", 0, "none", "exclusive", NULL);
	return f;
}

/* Keeps node `keep` alive for ms while the other stays silent. */
static void silent_for(struct fx *f, const char *keep, int ms)
{
	for (int t = 0; t < ms; t += 100) {
		fx_heartbeat(f, keep);
		usleep(100 * 1000);
	}
}

static json_t *alloc_get(struct fx *f, const char *id)
{
	return fx_get(f, "/v1/allocation/%s", id);
}

/* Places job "web" with block, sets it running and silences its node until
 * the allocation is unknown and replaced on the other node.  *victim gets
 * the silent node; returns the original (caller frees) and *repl. */
static json_t *cut_off(struct fx *f, const char *block, const char **victim, json_t **repl)
{
	json_t *al, *all, *x;
	const char *other;
	size_t i;

	fx_submit(f, "web", "service", 1, NULL, block);
	fx_idle(f);
	al = fx_the_alloc(f, "web");
	fx_alloc_status(f, al, "running");
	*victim = !strcmp(fx_s(al, "node_id"), "a") ? "a" : "b";
	other = !strcmp(*victim, "a") ? "b" : "a";
	silent_for(f, other, 1500);
	heartbeat_check(f->srv);
	fx_idle(f);
	json_decref(al);
	all = fx_job_allocs(f, "web");
	*repl = NULL;
	al = NULL;
	json_array_foreach(all, i, x) {
		if (!strcmp(fx_s(x, "node_id"), *victim))
			al = json_incref(x);
		else
			*repl = json_incref(x);
	}
	json_decref(all);
	assert_non_null(al);
	assert_non_null(*repl);
	assert_string_equal(fx_s(al, "client_status"), "unknown");
	assert_string_equal(fx_s(al, "desired_status"), "run");
	assert_true(fx_i(al, "unknown_since") > 0);
	assert_string_equal(fx_s(*repl, "desired_status"), "run");
	assert_string_equal(fx_s(*repl, "previous_allocation"), fx_s(al, "id"));
	return al;
}

static void test_unknown_then_lost_across_restart(void **state)
{
	struct fx *f = two_nodes();
	const char *victim;
	json_t *repl, *al = cut_off(f, BLOCK("best_score"), &victim, &repl), *now;
	const char *other = !strcmp(victim, "a") ? "b" : "a";
	(void)state;
	/* a restarted server decides from the stored unknown_since */
	server_stop(f->srv);
	fx_start(f);
	now = alloc_get(f, fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "unknown");
	json_decref(now);
	silent_for(f, other, 3200);
	fx_idle(f);
	now = alloc_get(f, fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "lost");
	assert_string_equal(fx_s(now, "desired_status"), "stop");
	json_decref(now);
	/* replaced once, not again */
	now = fx_job_allocs(f, "web");
	assert_int_equal(json_array_size(now), 2);
	json_decref(now);
	now = alloc_get(f, fx_s(repl, "id"));
	assert_string_equal(fx_s(now, "desired_status"), "run");
	json_decref(now);
	json_decref(al);
	json_decref(repl);
	fx_free(f);
}

static void reconnect(const char *rule, bool original_kept)
{
	struct fx *f = two_nodes();
	const char *victim;
	char block[256];
	json_t *repl, *al, *o, *r;

	snprintf(block, sizeof(block), BLOCK("%s"), rule);
	al = cut_off(f, block, &victim, &repl);
	fx_alloc_status(f, repl, "running");
	fx_heartbeat(f, victim); /* back within lost_after */
	fx_idle(f);
	o = alloc_get(f, fx_s(al, "id"));
	r = alloc_get(f, fx_s(repl, "id"));
	assert_string_equal(fx_s(o, "client_status"), "running");
	assert_string_equal(fx_s(o, "desired_status"), original_kept ? "run" : "stop");
	assert_string_equal(fx_s(r, "desired_status"), original_kept ? "stop" : "run");
	if (original_kept)
		assert_null(json_object_get(o, "unknown_since")); /* decided */
	json_decref(o);
	json_decref(r);
	json_decref(al);
	json_decref(repl);
	fx_free(f);
}

static void test_reconnect_keep_original(void **state)
{
	(void)state;
	reconnect("keep_original", true);
}

static void test_reconnect_keep_replacement(void **state)
{
	(void)state;
	reconnect("keep_replacement", false);
}

/* Without the block a silent node's allocation is lost and replaced at
 * once, as before. */
static void test_no_block_lost_at_once(void **state)
{
	struct fx *f = two_nodes();
	json_t *al, *now;
	const char *victim;
	(void)state;
	fx_submit(f, "old", "service", 1, NULL, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "old");
	victim = !strcmp(fx_s(al, "node_id"), "a") ? "a" : "b";
	silent_for(f, !strcmp(victim, "a") ? "b" : "a", 1500);
	heartbeat_check(f->srv);
	fx_idle(f);
	now = alloc_get(f, fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "lost");
	assert_null(json_object_get(now, "unknown_since"));
	json_decref(now);
	json_decref(al);
	fx_free(f);
}


/* A namespace at its GPU quota still gets the replacement: the unknown
 * allocation's GPU is on a node nobody reaches, and the quota counts the
 * replacement instead (docs/jobspec.md, "disconnect"). */
static void test_quota_counts_the_replacement(void **state)
{
	struct server_config cfg = { .workers = 2, .heartbeat_ttl_ns = SEC };
	struct fx *f = fx_new_cfg(&cfg);
	json_t *al, *all, *x;
	const char *victim;
	size_t i, placed = 0;
	(void)state;
	fx_node(f, "a", 1, "H100", "exclusive", NULL);
	fx_node(f, "b", 1, "H100", "exclusive", NULL);
	json_decref(fx_ok(f, "POST", "/v1/quotas", "{\"quota\": {\"name\": \"q\", \"limits\": "
			  "[{\"region\": \"global\", \"region_limit\": {\"devices\": [{\"name\": "
			  "\"nvidia/gpu\", \"count\": 1}]}}]}}"));
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"team\", "
			  "\"quota\": \"q\"}}"));
	json_decref(fx_ok(f, "POST", "/v1/jobs", "{\"job\": {\"id\": \"gpu\", \"namespace\": "
			  "\"team\", \"groups\": [{\"name\": \"g\", \"disconnect\": {\"lost_after\": "
			  "\"1h\"}, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", "
			  "\"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"devices\": "
			  "[{\"name\": \"nvidia/gpu\", \"count\": 1}]}}]}]}}"));
	fx_idle(f);
	al = fx_ok(f, "GET", "/v1/job/gpu/allocations?namespace=team", NULL);
	assert_int_equal(json_array_size(al), 1);
	victim = !strcmp(fx_s(json_array_get(al, 0), "node_id"), "a") ? "a" : "b";
	fx_alloc_status(f, json_array_get(al, 0), "running");
	silent_for(f, !strcmp(victim, "a") ? "b" : "a", 1500);
	heartbeat_check(f->srv);
	fx_idle(f);
	all = fx_ok(f, "GET", "/v1/job/gpu/allocations?namespace=team", NULL);
	json_array_foreach(all, i, x)
		if (strcmp(fx_s(x, "node_id"), victim) && !strcmp(fx_s(x, "desired_status"), "run"))
			placed++;
		else
			assert_string_equal(fx_s(x, "client_status"), "unknown");
	assert_int_equal(placed, 1);
	json_decref(all);
	json_decref(al);
	fx_free(f);
}


/* replace = false: nothing placed while unknown; once lost_after passed
 * it is lost and replaced as the reschedule policy says: no attempt left,
 * the slot stays lost; an attempt left, a replacement. */
static void lost_by_policy(const char *policy, bool replaced)
{
	struct fx *f = two_nodes();
	char extra[512];
	json_t *al, *all, *now;
	const char *victim, *other;

	snprintf(extra, sizeof(extra), ", \"disconnect\": {\"lost_after\": \"2s\", "
		 "\"replace\": false}, \"reschedule\": %s", policy);
	fx_submit(f, "calm", "service", 1, NULL, extra);
	fx_idle(f);
	al = fx_the_alloc(f, "calm");
	fx_alloc_status(f, al, "running");
	victim = !strcmp(fx_s(al, "node_id"), "a") ? "a" : "b";
	other = !strcmp(victim, "a") ? "b" : "a";
	silent_for(f, other, 1500);
	heartbeat_check(f->srv);
	fx_idle(f);
	all = fx_job_allocs(f, "calm");
	assert_int_equal(json_array_size(all), 1); /* unknown, not replaced */
	assert_string_equal(fx_s(json_array_get(all, 0), "client_status"), "unknown");
	json_decref(all);
	silent_for(f, other, 2500);
	fx_idle(f);
	now = alloc_get(f, fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "lost");
	assert_string_equal(fx_s(now, "desired_status"), replaced ? "stop" : "run");
	json_decref(now);
	all = fx_job_allocs(f, "calm");
	assert_int_equal(json_array_size(all), replaced ? 2 : 1);
	json_decref(all);
	json_decref(al);
	fx_free(f);
}

static void test_lost_then_rescheduled(void **state)
{
	(void)state;
	lost_by_policy("{\"delay\": \"0s\", \"delay_function\": \"constant\"}", true);
}

static void test_lost_no_attempt_left(void **state)
{
	(void)state;
	lost_by_policy("{\"attempts\": 0, \"unlimited\": false}", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_on_down),
		cmocka_unit_test(test_unknown_steps),
		cmocka_unit_test(test_replace_at),
		cmocka_unit_test(test_keep_original),
		cmocka_unit_test(test_of_stored),
		cmocka_unit_test(test_unknown_then_lost_across_restart),
		cmocka_unit_test(test_reconnect_keep_original),
		cmocka_unit_test(test_reconnect_keep_replacement),
		cmocka_unit_test(test_no_block_lost_at_once),
		cmocka_unit_test(test_quota_counts_the_replacement),
		cmocka_unit_test(test_lost_then_rescheduled),
		cmocka_unit_test(test_lost_no_attempt_left),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
