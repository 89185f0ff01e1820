/* The autoscaler's pure half (autoscale_rule.h): a device's utilization
 * samples (kept for a window, averaged from a time on) and the
 * target-value rule (round up, within the bounds, nothing inside the
 * tolerance). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server/autoscale_rule.h"

#define SEC 1000000000LL

static void test_series(void **state)
{
	struct util_series s = { 0 };
	double m = -1;
	(void)state;
	assert_false(util_series_mean(&s, 0, &m));
	assert_int_equal(util_series_first(&s), 0);
	for (int i = 0; i < 100; i++) /* one sample a second, 0..99 */
		util_series_add(&s, (int64_t)i * SEC, (double)i, 10 * SEC);
	/* only the last 10 s (and the sample at the edge) are kept */
	assert_int_equal(util_series_first(&s), 89 * SEC);
	assert_int_equal(s.n, 11);
	assert_true(util_series_mean(&s, 95 * SEC, &m));
	assert_true(m == 97.0); /* 95..99 */
	assert_true(util_series_mean(&s, 0, &m));
	assert_true(m == 94.0); /* 89..99 */
	assert_false(util_series_mean(&s, 100 * SEC, &m));
	util_series_release(&s);
	assert_int_equal(s.n, 0);
}

static int64_t desired(int64_t count, int64_t min, int64_t max, int target, int tolerance,
		       double mean)
{
	struct autoscale_input in = { count, min, max, target, tolerance, mean };
	return autoscale_desired(&in);
}

static void test_rule(void **state)
{
	(void)state;
	/* inside the tolerance: nothing moves (70 +- 10% of 70) */
	assert_int_equal(desired(2, 1, 8, 70, 10, 70.0), 2);
	assert_int_equal(desired(2, 1, 8, 70, 10, 76.9), 2);
	assert_int_equal(desired(2, 1, 8, 70, 10, 63.1), 2);
	/* above: count x mean / target, rounded up */
	assert_int_equal(desired(2, 1, 8, 70, 10, 80.0), 3);  /* 2.29 */
	assert_int_equal(desired(1, 1, 8, 50, 10, 90.0), 2);  /* 1.8 */
	assert_int_equal(desired(2, 1, 8, 50, 10, 100.0), 4); /* exactly 4: not 5 */
	assert_int_equal(desired(3, 1, 8, 25, 0, 100.0), 8);  /* 12, held at max */
	/* below: fewer, never under min */
	assert_int_equal(desired(4, 1, 8, 70, 10, 30.0), 2);  /* 1.71 */
	assert_int_equal(desired(4, 2, 8, 70, 10, 0.0), 2);
	assert_int_equal(desired(3, 1, 8, 50, 10, 0.0), 1);
	/* no tolerance: the smallest move counts */
	assert_int_equal(desired(2, 1, 8, 70, 0, 70.5), 3);
	assert_int_equal(desired(2, 1, 8, 70, 0, 70.0), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
