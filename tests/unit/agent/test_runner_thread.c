/* runner_thread: a start runs its function, a join returns only after it
 * returned (and at once without a start), an ended runner's thread serves
 * the next one, and more runners than the pool keeps all run at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "agent/runner_thread.h"

struct work {
	pthread_t self;
	atomic_bool ran;
	atomic_bool release;   /* the function returns once set */
	atomic_int *inside;    /* running at the same time */
	int max_inside;
};

static void *fn(void *arg)
{
	struct work *w = arg;
	w->self = pthread_self();
	if (w->inside)
		atomic_fetch_add(w->inside, 1);
	while (!atomic_load(&w->release)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	/* slow enough that a join that did not wait would be seen */
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	atomic_store(&w->ran, true);
	return NULL;
}

static void test_join_waits(void **state)
{
	struct runner_thread rt;
	struct work w = { 0 };

	(void)state;
	runner_thread_init(&rt);
	runner_thread_join(&rt);   /* never started: at once */
	atomic_store(&w.release, true);
	assert_int_equal(runner_thread_start(&rt, fn, &w), 0);
	runner_thread_join(&rt);
	assert_true(atomic_load(&w.ran));
	runner_thread_join(&rt);   /* twice is fine */
	runner_thread_destroy(&rt);
}

static void test_thread_reused(void **state)
{
	struct runner_thread a, b;
	struct work wa = { 0 }, wb = { 0 };

	(void)state;
	runner_thread_init(&a);
	runner_thread_init(&b);
	atomic_store(&wa.release, true);
	atomic_store(&wb.release, true);
	unsigned parked = runner_thread_idle();
	assert_int_equal(runner_thread_start(&a, fn, &wa), 0);
	runner_thread_join(&a);
	/* a's thread parks (on top of the idle ones) just after its runner
	 * returned, which is what the join saw: wait for it */
	for (int tries = 0; runner_thread_idle() < (parked ? parked : 1) && tries < 10000; tries++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(runner_thread_start(&b, fn, &wb), 0);
	runner_thread_join(&b);
	assert_true(pthread_equal(wa.self, wb.self));
	runner_thread_destroy(&a);
	runner_thread_destroy(&b);
}

#define MANY (RUNNER_THREADS_IDLE_MAX * 2 + 3)

static void test_many_at_once(void **state)
{
	static struct runner_thread rt[MANY];
	static struct work w[MANY];
	atomic_int inside = 0;

	(void)state;
	for (int i = 0; i < MANY; i++) {
		runner_thread_init(&rt[i]);
		w[i].inside = &inside;
		assert_int_equal(runner_thread_start(&rt[i], fn, &w[i]), 0);
	}
	/* every runner holds its thread until released: all run at once */
	for (int tries = 0; atomic_load(&inside) < MANY && tries < 5000; tries++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(atomic_load(&inside), MANY);
	for (int i = 0; i < MANY; i++)
		atomic_store(&w[i].release, true);
	for (int i = 0; i < MANY; i++) {
		runner_thread_join(&rt[i]);
		assert_true(atomic_load(&w[i].ran));
		runner_thread_destroy(&rt[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_waits),
		cmocka_unit_test(test_thread_reused),
		cmocka_unit_test(test_many_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
