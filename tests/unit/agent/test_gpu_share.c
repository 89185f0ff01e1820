/* The over-share rule of timeslice GPU memory (agent/gpu_share.h): the
 * grace in consecutive samples, one action per exceedance, a sample within
 * the share starting over, no share nothing to check; and the figures of
 * its messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/gpu_share.h"

static void test_grace_then_once(void **state)
{
	struct gpu_share_track t = GPU_SHARE_TRACK_INIT;
	(void)state;
	/* within (equal counts as within) */
	assert_int_equal(gpu_share_step(&t, 2048, 2048, 3), GPU_SHARE_WITHIN);
	/* over: two samples of grace, the third acts, then no more */
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 3), GPU_SHARE_OVER);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 3), GPU_SHARE_OVER);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 3), GPU_SHARE_ACT);
	for (int i = 0; i < 10; i++)
		assert_int_equal(gpu_share_step(&t, 9000, 2048, 3), GPU_SHARE_OVER);
	/* back within: the next exceedance is a new one, with its own grace */
	assert_int_equal(gpu_share_step(&t, 100, 2048, 3), GPU_SHARE_WITHIN);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 3), GPU_SHARE_OVER);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 3), GPU_SHARE_OVER);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 3), GPU_SHARE_ACT);
}

static void test_interrupted_grace(void **state)
{
	struct gpu_share_track t = GPU_SHARE_TRACK_INIT;
	(void)state;
	/* a sample within the share in the middle of the grace starts it over */
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 2), GPU_SHARE_OVER);
	assert_int_equal(gpu_share_step(&t, 1000, 2048, 2), GPU_SHARE_WITHIN);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 2), GPU_SHARE_OVER);
	assert_int_equal(gpu_share_step(&t, 3000, 2048, 2), GPU_SHARE_ACT);
	/* grace 1: the first sample over acts */
	t = (struct gpu_share_track)GPU_SHARE_TRACK_INIT;
	assert_int_equal(gpu_share_step(&t, 2049, 2048, 1), GPU_SHARE_ACT);
	assert_int_equal(gpu_share_step(&t, 2049, 2048, 1), GPU_SHARE_OVER);
}

static void test_no_share(void **state)
{
	struct gpu_share_track t = GPU_SHARE_TRACK_INIT;
	(void)state;
	/* no memory ask: nothing to check, whatever is used */
	for (int i = 0; i < 5; i++)
		assert_int_equal(gpu_share_step(&t, 50000, 0, 1), GPU_SHARE_WITHIN);
	assert_int_equal(t.over, 0);
	assert_false(t.acted);
}

static void test_mib_text(void **state)
{
	char buf[32];
	(void)state;
	assert_string_equal(gpu_share_mib_text(8192, buf, sizeof(buf)), "8 GiB");
	assert_string_equal(gpu_share_mib_text(9318, buf, sizeof(buf)), "9.1 GiB");
	assert_string_equal(gpu_share_mib_text(512, buf, sizeof(buf)), "512 MiB");
	assert_string_equal(gpu_share_mib_text(0, buf, sizeof(buf)), "0 MiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grace_then_once),
		cmocka_unit_test(test_interrupted_grace),
		cmocka_unit_test(test_no_share),
		cmocka_unit_test(test_mib_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
