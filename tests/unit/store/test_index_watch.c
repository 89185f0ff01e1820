/* Unit tests of index_watch: waits, timeouts, listeners, and the store
 * publishing its index after each commit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "test_store_util.h"

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void test_wait_returns_at_once_when_passed(void **state)
{
	struct index_watch w;
	uint64_t seen = 0;
	index_watch_init(&w, 7);
	assert_int_equal(index_watch_wait(&w, 6, 0, &seen), 0);
	assert_int_equal(seen, 7);
	assert_int_equal(index_watch_wait(&w, 7, 0, &seen), -ETIMEDOUT);
	index_watch_publish(&w, 5); /* never goes back */
	assert_int_equal(index_watch_current(&w), 7);
	index_watch_release(&w);
	index_watch_release(NULL);
}

static void test_wait_times_out(void **state)
{
	struct index_watch w;
	index_watch_init(&w, 1);
	int64_t t0 = now_ns();
	assert_int_equal(index_watch_wait(&w, 1, 100 * 1000000LL, NULL), -ETIMEDOUT);
	int64_t took = now_ns() - t0;
	assert_true(took >= 100 * 1000000LL);
	assert_true(took < 2000 * 1000000LL);
	index_watch_release(&w);
}

struct bumper {
	struct store *s;
	struct index_watch *w;
};

static void *bump_later(void *arg)
{
	struct bumper *b = arg;
	struct timespec ts = { 0, 50 * 1000000L };
	nanosleep(&ts, NULL);
	if (b->s)
		put_ok(b->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	else
		index_watch_publish(b->w, 2);
	return NULL;
}

static void test_wait_wakes_on_publish(void **state)
{
	struct index_watch w;
	struct bumper b = { NULL, &w };
	pthread_t th;
	uint64_t seen;
	index_watch_init(&w, 1);
	pthread_create(&th, NULL, bump_later, &b);
	int64_t t0 = now_ns();
	assert_int_equal(index_watch_wait(&w, 1, 10 * 1000000000LL, &seen), 0);
	assert_true(now_ns() - t0 < 5 * 1000000000LL);
	assert_int_equal(seen, 2);
	pthread_join(th, NULL);
	index_watch_release(&w);
}

static void test_store_publishes_commits(void **state)
{
	struct tmpstore *t = *state;
	struct bumper b = { t->s, NULL };
	pthread_t th;
	uint64_t seen;
	pthread_create(&th, NULL, bump_later, &b);
	assert_int_equal(index_watch_wait(store_watch(t->s), 0, 10 * 1000000000LL, &seen), 0);
	assert_int_equal(seen, 1);
	pthread_join(th, NULL);
}

static void record(uint64_t index, void *arg)
{
	uint64_t *last = arg;
	*last = index;
}

static void test_listeners(void **state)
{
	struct index_watch w;
	uint64_t a = 0, b = 0;
	index_watch_init(&w, 0);
	assert_int_equal(index_watch_listen(&w, record, &a), 0);
	assert_int_equal(index_watch_listen(&w, record, &b), 0);
	index_watch_publish(&w, 3);
	assert_int_equal(a, 3);
	assert_int_equal(b, 3);
	index_watch_publish(&w, 3); /* not raised: no call */
	index_watch_unlisten(&w, record, &a);
	index_watch_publish(&w, 4);
	assert_int_equal(a, 3);
	assert_int_equal(b, 4);
	for (int i = 0; i < INDEX_WATCH_MAX_LISTENERS - 1; i++)
		assert_int_equal(index_watch_listen(&w, record, &a), 0);
	assert_int_equal(index_watch_listen(&w, record, &a), -ENOSPC);
	index_watch_release(&w);
}

/* A poke ends the waits that watch pokes and calls the listeners with
 * the index as it is; the index does not move and plain waits go on. */
static void test_poke(void **state)
{
	struct index_watch w;
	uint64_t seen = 0, pokes;

	index_watch_init(&w, 7);
	assert_int_equal(index_watch_listen(&w, record, &seen), 0);
	pokes = index_watch_pokes(&w);
	assert_int_equal(index_watch_wait_poked(&w, 7, pokes, 0, NULL), -ETIMEDOUT);
	index_watch_poke(&w);
	assert_int_equal(seen, 7);
	assert_int_equal(index_watch_current(&w), 7);
	assert_int_equal(index_watch_pokes(&w), pokes + 1);
	assert_int_equal(index_watch_wait_poked(&w, 7, pokes, 1000000, &seen), 0);
	assert_int_equal(seen, 7);
	assert_int_equal(index_watch_wait(&w, 7, 0, NULL), -ETIMEDOUT);
	/* the index passing ends a poked wait too */
	index_watch_publish(&w, 8);
	assert_int_equal(index_watch_wait_poked(&w, 7, pokes + 1, 0, NULL), 0);
	index_watch_unlisten(&w, record, &seen);
	index_watch_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_returns_at_once_when_passed),
		cmocka_unit_test(test_wait_times_out),
		cmocka_unit_test(test_wait_wakes_on_publish),
		cmocka_unit_test_setup_teardown(test_store_publishes_commits, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test(test_listeners),
		cmocka_unit_test(test_poke),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
