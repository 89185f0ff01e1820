#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"

static void test_sorted_print(void **state)
{
	struct diag_list dl;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;

	diag_list_init(&dl);
	diag_error(&dl, 9, 2, "late %s", "error");
	diag_warn(&dl, 3, 5, "early warning");
	diag_error(&dl, 3, 1, "first");
	diag_sort(&dl);
	assert_int_equal(dl.errors, 2);
	assert_int_equal(dl.warnings, 1);
	f = open_memstream(&out, &outlen);
	diag_print(&dl, "job.hcl", f);
	fclose(f);
	assert_string_equal(out, "job.hcl:3:1: first\n"
				 "job.hcl:3:5: warning: early warning\n"
				 "job.hcl:9:2: late error\n");
	free(out);
	diag_list_release(&dl);
}

static void test_truncates(void **state)
{
	struct diag_list dl;
	diag_list_init(&dl);
	for (int i = 0; i < DIAG_MAX + 50; i++)
		diag_error(&dl, i + 1, 1, "e%d", i);
	assert_int_equal(dl.n, DIAG_MAX + 1);
	assert_int_equal(dl.errors, DIAG_MAX + 50);
	assert_string_equal(dl.v[DIAG_MAX].msg, "too many errors; stopping here");
	diag_sort(&dl);
	assert_int_equal(dl.v[DIAG_MAX].line, 0); /* stays last */
	diag_list_release(&dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sorted_print),
		cmocka_unit_test(test_truncates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
