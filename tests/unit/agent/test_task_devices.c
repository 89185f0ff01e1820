/* task_devices: the MIG capability minors read from a mig-minors table
 * (the format of /proc/driver/nvidia-caps/mig-minors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "agent/client-int.h"

static FILE *table(const char *text)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	fputs(text, f);
	fflush(f);
	return f;
}

static void test_gi_and_ci_minors(void **state)
{
	(void)state;
	FILE *f = table("config 1\nmonitor 2\n"
			"gpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n"
			"gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu0/gi1/ci1/access 14\n"
			"gpu1/gi1/access 147\ngpu1/gi1/ci0/access 148\n"
			"gpu1/gi11/access 255\ngpu1/gi11/ci0/access 256\n");
	assert_int_equal(mig_cap_minor(f, 0, 1, -1), 12);
	assert_int_equal(mig_cap_minor(f, 0, 1, 1), 14);
	assert_int_equal(mig_cap_minor(f, 1, 1, -1), 147);
	assert_int_equal(mig_cap_minor(f, 1, 1, 0), 148);
	/* gi1 is not a prefix match for gi11, nor gpu1 for gpu10 */
	assert_int_equal(mig_cap_minor(f, 1, 11, 0), 256);
	assert_int_equal(mig_cap_minor(f, 10, 1, -1), -1);
	/* absent instances, no instance id */
	assert_int_equal(mig_cap_minor(f, 0, 5, -1), -1);
	assert_int_equal(mig_cap_minor(f, 0, 1, 6), -1);
	assert_int_equal(mig_cap_minor(f, 0, -1, -1), -1);
	fclose(f);
}

static void test_malformed_lines(void **state)
{
	(void)state;
	FILE *f = table("gpu0/gi1/access\ngpu0/gi2/access x\ngpu0/gi3/access 7 8\n"
			"gpu0/gi4/access -3\ngpu0/gi5/access 9");
	assert_int_equal(mig_cap_minor(f, 0, 1, -1), -1);
	assert_int_equal(mig_cap_minor(f, 0, 2, -1), -1);
	assert_int_equal(mig_cap_minor(f, 0, 3, -1), -1);
	assert_int_equal(mig_cap_minor(f, 0, 4, -1), -1);
	assert_int_equal(mig_cap_minor(f, 0, 5, -1), 9);   /* no final newline */
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gi_and_ci_minors),
		cmocka_unit_test(test_malformed_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
