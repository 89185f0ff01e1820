/* server_list: the rotation of a client's servers (server_list.h): round
 * robin on failure, one move for threads that fail together, back off
 * only once every server failed, an answer ends the run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "agent/server_list.h"

static const char *const three[] = { "10.0.0.1:4646", "10.0.0.2:4646", "10.0.0.3:4646" };

static uint64_t current(struct server_list *l, const char *want)
{
	char buf[SERVER_ADDR_MAX];
	uint64_t gen = server_list_current(l, buf, sizeof(buf));
	assert_string_equal(buf, want);
	return gen;
}

static void test_first_is_current(void **state)
{
	struct server_list *l = server_list_new(three, 3);
	assert_int_equal(server_list_size(l), 3);
	current(l, "10.0.0.1:4646");
	server_list_free(l);
	server_list_free(NULL);
}

/* each failure moves on to the next, and from the last back to the first */
static void test_round_robin(void **state)
{
	struct server_list *l = server_list_new(three, 3);
	struct server_move mv;
	uint64_t gen = current(l, "10.0.0.1:4646");

	server_list_failed(l, gen, &mv);
	assert_true(mv.moved);
	assert_string_equal(mv.from, "10.0.0.1:4646");
	assert_string_equal(mv.to, "10.0.0.2:4646");
	assert_false(mv.all_failed);
	assert_false(mv.in_outage);
	gen = current(l, "10.0.0.2:4646");
	/* the new one answers: it stays current */
	assert_false(server_list_answered(l, gen));
	current(l, "10.0.0.2:4646");
	server_list_failed(l, gen, &mv);
	gen = current(l, "10.0.0.3:4646");
	server_list_failed(l, gen, &mv);
	assert_string_equal(mv.to, "10.0.0.1:4646");
	/* two failures since the answer: not yet every server */
	assert_false(mv.all_failed);
	current(l, "10.0.0.1:4646");
	server_list_free(l);
}

/* threads that failed on the same server move the client once */
static void test_stale_failure_moves_nothing(void **state)
{
	struct server_list *l = server_list_new(three, 3);
	struct server_move mv;
	uint64_t gen = current(l, "10.0.0.1:4646");

	server_list_failed(l, gen, &mv);
	assert_true(mv.moved);
	server_list_failed(l, gen, &mv);   /* a second thread, same server */
	assert_false(mv.moved);
	assert_false(mv.all_failed);
	current(l, "10.0.0.2:4646");
	server_list_free(l);
}

/* every server failed in a row: back off; said once per outage; an answer
 * ends it and is reported as the end of the outage */
static void test_all_failed(void **state)
{
	struct server_list *l = server_list_new(three, 3);
	struct server_move mv;
	uint64_t gen;

	for (int i = 0; i < 3; i++) {
		gen = server_list_current(l, (char[SERVER_ADDR_MAX]){ 0 }, SERVER_ADDR_MAX);
		server_list_failed(l, gen, &mv);
		assert_int_equal(mv.all_failed, i == 2);
		assert_int_equal(mv.first_all_failed, i == 2);
		assert_false(mv.in_outage);
	}
	gen = current(l, "10.0.0.1:4646");
	server_list_failed(l, gen, &mv);
	assert_true(mv.all_failed);
	assert_false(mv.first_all_failed);
	assert_true(mv.in_outage);   /* the move is not news */
	assert_true(mv.moved);
	gen = current(l, "10.0.0.2:4646");
	assert_true(server_list_answered(l, gen));
	assert_false(server_list_answered(l, gen));
	/* a fresh run: one failure is not all */
	server_list_failed(l, gen, &mv);
	assert_false(mv.all_failed);
	assert_false(mv.in_outage);
	server_list_free(l);
}

/* one server: failures move nowhere, and every failure is "all" */
static void test_single(void **state)
{
	static const char *const one[] = { "127.0.0.1:4646" };
	struct server_list *l = server_list_new(one, 1);
	struct server_move mv;
	uint64_t gen = current(l, "127.0.0.1:4646");

	server_list_failed(l, gen, &mv);
	assert_false(mv.moved);
	assert_true(mv.all_failed);
	assert_true(mv.first_all_failed);
	/* a thread that failed with the older generation tries once more */
	server_list_failed(l, gen, &mv);
	assert_false(mv.all_failed);
	gen = current(l, "127.0.0.1:4646");
	server_list_failed(l, gen, &mv);
	assert_true(mv.all_failed);
	assert_false(mv.first_all_failed);
	server_list_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_is_current),
		cmocka_unit_test(test_round_robin),
		cmocka_unit_test(test_stale_failure_moves_nothing),
		cmocka_unit_test(test_all_failed),
		cmocka_unit_test(test_single),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
