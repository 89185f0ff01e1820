/* test_drain: the pure half of node drains (server/drain.h): how many of a
 * group's allocations a drain lets migrate now (drain_pace), and what an
 * allocation's record says of its health for the pacing
 * (drain_alloc_health).  Records in, decisions out: no server, no I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/drain.h"

#define S 1000000000LL

static const struct drain_pace_alloc HEALTHY_DRAINING = { true, true, false, DRAIN_HEALTH_HEALTHY };
static const struct drain_pace_alloc HEALTHY_ELSEWHERE = { true, false, false, DRAIN_HEALTH_HEALTHY };
static const struct drain_pace_alloc PENDING_ELSEWHERE = { true, false, false, DRAIN_HEALTH_PENDING };
static const struct drain_pace_alloc MARKED_DRAINING = { true, true, true, DRAIN_HEALTH_HEALTHY };

/* count 3, max_parallel 1, all three on the draining node and healthy:
 * one goes, the first in order. */
static void test_pace_first_of_three(void **state)
{
	struct drain_pace_alloc a[3] = { HEALTHY_DRAINING, HEALTHY_DRAINING, HEALTHY_DRAINING };
	bool take[3];
	(void)state;
	assert_int_equal(drain_pace(3, 1, a, 3, take), 1);
	assert_true(take[0]);
	assert_false(take[1]);
	assert_false(take[2]);
}

/* The first is marked (on its way out), its replacement not yet healthy:
 * nothing more goes. */
static void test_pace_waits_for_replacement(void **state)
{
	struct drain_pace_alloc a[4] = { MARKED_DRAINING, HEALTHY_DRAINING, HEALTHY_DRAINING,
					 PENDING_ELSEWHERE };
	bool take[4];
	(void)state;
	assert_int_equal(drain_pace(3, 1, a, 4, take), 0);
	for (int i = 0; i < 4; i++)
		assert_false(take[i]);
}

/* The replacement became healthy (the first one stopped, so no longer
 * live): the next goes. */
static void test_pace_next_once_healthy(void **state)
{
	struct drain_pace_alloc a[3] = { HEALTHY_ELSEWHERE, HEALTHY_DRAINING, HEALTHY_DRAINING };
	bool take[3];
	(void)state;
	assert_int_equal(drain_pace(3, 1, a, 3, take), 1);
	assert_false(take[0]);
	assert_true(take[1]);
	assert_false(take[2]);
}

/* A replacement that cannot be placed leaves its slot empty: two healthy
 * of three, nothing more goes. */
static void test_pace_unplaced_counts(void **state)
{
	struct drain_pace_alloc a[2] = { HEALTHY_DRAINING, HEALTHY_DRAINING };
	bool take[2];
	(void)state;
	assert_int_equal(drain_pace(3, 1, a, 2, take), 0);
}

/* max_parallel 2: two at once; and never more than are drainable. */
static void test_pace_max_parallel(void **state)
{
	struct drain_pace_alloc a[4] = { HEALTHY_DRAINING, HEALTHY_ELSEWHERE, HEALTHY_DRAINING,
					 HEALTHY_DRAINING };
	bool take[4];
	(void)state;
	assert_int_equal(drain_pace(4, 2, a, 4, take), 2);
	assert_true(take[0]);
	assert_false(take[1]);
	assert_true(take[2]);
	assert_false(take[3]);
	assert_int_equal(drain_pace(4, 10, a, 4, take), 3);
}

/* An unhealthy allocation does not count as healthy; max_parallel 0 lets
 * nothing go before the deadline. */
static void test_pace_unhealthy_and_zero(void **state)
{
	struct drain_pace_alloc a[3] = { HEALTHY_DRAINING, HEALTHY_DRAINING, HEALTHY_DRAINING };
	bool take[3];
	(void)state;
	a[2].health = DRAIN_HEALTH_UNHEALTHY;
	assert_int_equal(drain_pace(3, 1, a, 3, take), 0);
	a[2].health = DRAIN_HEALTH_HEALTHY;
	assert_int_equal(drain_pace(3, 0, a, 3, take), 0);
}

/* ---- health ----------------------------------------------------------------- */

static json_t *alloc(const char *text)
{
	json_error_t je;
	json_t *a = json_loads(text, 0, &je);
	if (!a)
		fail_msg("%s: %s", text, je.text);
	return a;
}

static const struct job_migrate M = { .max_parallel = 1, .health_check = (char *)"checks",
				      .min_healthy_time = 10 * S, .healthy_deadline = 300 * S };

/* A replacement of a migrated allocation: healthy min_healthy_time after
 * it was stamped ready, not before; unhealthy past healthy_deadline. */
static void test_health_replacement(void **state)
{
	json_t *a = alloc("{\"desired_status\": \"run\", \"client_status\": \"running\", "
			  "\"drain_migration\": true, \"create_time\": 1000000000000, "
			  "\"deployment_status\": {\"ready_since\": 1000000000000}}");
	(void)state;
	assert_int_equal(drain_alloc_health(a, &M, 1000 * S + 9 * S), DRAIN_HEALTH_PENDING);
	assert_int_equal(drain_alloc_health(a, &M, 1000 * S + 10 * S), DRAIN_HEALTH_HEALTHY);
	json_object_set_new(a, "deployment_status", json_object());
	assert_int_equal(drain_alloc_health(a, &M, 1000 * S + 299 * S), DRAIN_HEALTH_PENDING);
	assert_int_equal(drain_alloc_health(a, &M, 1000 * S + 300 * S), DRAIN_HEALTH_UNHEALTHY);
	json_decref(a);
}

/* An allocation that ran before the drain: healthy while ready (running,
 * its task running, its checks passing). */
static void test_health_original(void **state)
{
	json_t *a = alloc("{\"desired_status\": \"run\", \"client_status\": \"running\", "
			  "\"task_states\": {\"t\": {\"state\": \"running\"}}}");
	json_t *p = alloc("{\"desired_status\": \"run\", \"client_status\": \"pending\"}");
	json_t *c = alloc("{\"desired_status\": \"run\", \"client_status\": \"running\", "
			  "\"task_states\": {\"t\": {\"state\": \"running\"}}, \"services\": "
			  "[{\"checks\": [{\"status\": \"critical\"}]}]}");
	(void)state;
	assert_int_equal(drain_alloc_health(a, &M, S), DRAIN_HEALTH_HEALTHY);
	assert_int_equal(drain_alloc_health(p, &M, S), DRAIN_HEALTH_PENDING);
	assert_int_equal(drain_alloc_health(c, &M, S), DRAIN_HEALTH_PENDING);
	json_decref(a);
	json_decref(p);
	json_decref(c);
}

/* What a deployment decided stands; a stopped or ended one is unhealthy. */
static void test_health_decided(void **state)
{
	json_t *a = alloc("{\"desired_status\": \"run\", \"client_status\": \"running\", "
			  "\"deployment_status\": {\"healthy\": false}}");
	json_t *s = alloc("{\"desired_status\": \"stop\", \"client_status\": \"running\"}");
	(void)state;
	assert_int_equal(drain_alloc_health(a, &M, S), DRAIN_HEALTH_UNHEALTHY);
	json_object_set_new(a, "deployment_status", json_pack("{s:b}", "healthy", 1));
	assert_int_equal(drain_alloc_health(a, &M, S), DRAIN_HEALTH_HEALTHY);
	assert_int_equal(drain_alloc_health(s, &M, S), DRAIN_HEALTH_UNHEALTHY);
	json_decref(a);
	json_decref(s);
}

static void test_marked(void **state)
{
	json_t *a = alloc("{\"desired_transition\": {\"migrate\": true}}");
	json_t *b = alloc("{\"desired_transition\": {\"no_shutdown_delay\": true}}");
	(void)state;
	assert_true(drain_marked(a));
	assert_false(drain_marked(b));
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pace_first_of_three),
		cmocka_unit_test(test_pace_waits_for_replacement),
		cmocka_unit_test(test_pace_next_once_healthy),
		cmocka_unit_test(test_pace_unplaced_counts),
		cmocka_unit_test(test_pace_max_parallel),
		cmocka_unit_test(test_pace_unhealthy_and_zero),
		cmocka_unit_test(test_health_replacement),
		cmocka_unit_test(test_health_original),
		cmocka_unit_test(test_health_decided),
		cmocka_unit_test(test_marked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
