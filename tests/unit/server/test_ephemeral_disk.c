/* ephemeral_disk and prevent_reschedule_on_lost on a real server: a sticky
 * group's new versions are placed on the node of the allocation they
 * replace (previous_allocation links them) and record their size; an
 * allocation of a group with prevent_reschedule_on_lost that is lost with
 * its node is not replaced (a group without it is), and beside a
 * disconnect block it is neither replaced while unknown nor once lost. */
#include "server_fx.h"
#include "server/server-int.h" /* heartbeat_check */

#define SEC 1000000000LL

static struct fx *two_nodes(void)
{
	struct server_config cfg = { .workers = 2, .heartbeat_ttl_ns = SEC };
	struct fx *f = fx_new_cfg(&cfg);
	fx_node(f, "a", 0, "none", "exclusive", NULL);
	fx_node(f, "b", 0, "none", "exclusive", NULL);
	return f;
}

static void silent_for(struct fx *f, const char *keep, int ms)
{
	for (int t = 0; t < ms; t += 100) {
		fx_heartbeat(f, keep);
		usleep(100 * 1000);
	}
}

/* The one allocation of job id that is wanted (desired run). */
static json_t *wanted(struct fx *f, const char *id)
{
	json_t *all = fx_running(f, id), *one;
	assert_int_equal(json_array_size(all), 1);
	one = json_incref(json_array_get(all, 0));
	json_decref(all);
	return one;
}

static void sticky_versions(bool sticky, const char *first_node, bool *moved)
{
	struct fx *f = two_nodes();
	char extra[512];
	json_t *prev, *cur;
	const char *disk = sticky ? ", \"ephemeral_disk\": {\"sticky\": true, \"size\": 64}" : "";

	/* the first version on first_node; the later ones may go anywhere */
	snprintf(extra, sizeof(extra), "%s, \"constraints\": [{\"attribute\": "
		 "\"${node.unique.id}\", \"value\": \"%s\"}]", disk, first_node);
	fx_submit(f, "st", "service", 1, NULL, extra);
	fx_idle(f);
	prev = wanted(f, "st");
	fx_alloc_status(f, prev, "running");
	assert_string_equal(fx_s(prev, "node_id"), first_node);
	if (sticky)
		assert_int_equal(fx_i(json_object_get(prev, "resources"), "disk_mib"), 64);
	*moved = false;
	for (int v = 1; v <= 4; v++) {
		snprintf(extra, sizeof(extra), "%s, \"meta\": {\"v\": \"%d\"}", disk, v);
		fx_submit(f, "st", "service", 1, NULL, extra);
		fx_idle(f);
		cur = wanted(f, "st");
		assert_string_not_equal(fx_s(cur, "id"), fx_s(prev, "id"));
		assert_string_equal(fx_s(cur, "previous_allocation"), fx_s(prev, "id"));
		if (strcmp(fx_s(cur, "node_id"), fx_s(prev, "node_id")))
			*moved = true;
		fx_alloc_status(f, cur, "running");
		json_decref(prev);
		prev = cur;
	}
	json_decref(prev);
	fx_free(f);
}

static void test_sticky_versions_stay_on_the_node(void **state)
{
	bool moved_a, moved_b;
	(void)state;
	for (int i = 0; i < 2; i++) {
		const char *node = i ? "b" : "a";
		sticky_versions(true, node, &moved_a);
		assert_false(moved_a);
		/* the control: without sticky, from one of the two nodes the
		 * versions move (the policy has its own favourite) */
		sticky_versions(false, node, i ? &moved_b : &moved_a);
	}
	assert_true(moved_a || moved_b);
}

/* Places job id with extra, silences its node until it is marked down,
 * and returns how many allocations the job has then. */
static size_t lose_node(struct fx *f, const char *id, const char *extra, json_t **orig)
{
	json_t *all;
	size_t n;
	const char *victim;

	fx_submit(f, id, "service", 1, NULL, extra);
	fx_idle(f);
	*orig = wanted(f, id);
	fx_alloc_status(f, *orig, "running");
	victim = fx_s(*orig, "node_id");
	silent_for(f, !strcmp(victim, "a") ? "b" : "a", 1500);
	heartbeat_check(f->srv);
	fx_idle(f);
	all = fx_job_allocs(f, id);
	n = json_array_size(all);
	json_decref(all);
	return n;
}

static void test_lost_not_replaced(void **state)
{
	struct fx *f = two_nodes();
	json_t *al, *now;
	(void)state;
	/* the control: without the field the lost allocation is replaced */
	assert_int_equal(lose_node(f, "plain", NULL, &al), 2);
	json_decref(al);
	fx_free(f);

	f = two_nodes();
	assert_int_equal(lose_node(f, "kept", ", \"prevent_reschedule_on_lost\": true", &al), 1);
	now = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "lost");
	assert_string_equal(fx_s(now, "desired_status"), "run");
	json_decref(now);
	json_decref(al);
	fx_free(f);
}

static void test_with_disconnect_neither_while_unknown_nor_lost(void **state)
{
	struct fx *f = two_nodes();
	json_t *al, *now, *all;
	(void)state;
	assert_int_equal(lose_node(f, "d", ", \"prevent_reschedule_on_lost\": true, \"disconnect\": "
				   "{\"lost_after\": \"2s\"}, \"reschedule\": {\"delay\": \"0s\", "
				   "\"delay_function\": \"constant\"}", &al), 1);
	now = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "unknown");
	json_decref(now);
	silent_for(f, !strcmp(fx_s(al, "node_id"), "a") ? "b" : "a", 2500);
	fx_idle(f);
	now = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
	assert_string_equal(fx_s(now, "client_status"), "lost");
	json_decref(now);
	all = fx_job_allocs(f, "d");
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
	json_decref(al);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sticky_versions_stay_on_the_node),
		cmocka_unit_test(test_lost_not_replaced),
		cmocka_unit_test(test_with_disconnect_neither_while_unknown_nor_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
