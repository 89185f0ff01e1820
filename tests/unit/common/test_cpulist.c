#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpulist.h"

/* Parses and formats again: the canonical form, or "ERR: message". */
static char *roundtrip(const char *in)
{
	struct cpulist s;
	struct herd_err err = { 0, "" };
	if (cpulist_parse(in, &s, &err) < 0) {
		size_t n = strlen(err.msg) + 6;
		char *out = malloc(n);
		snprintf(out, n, "ERR: %s", err.msg);
		return out;
	}
	return cpulist_str(&s);
}

static void test_parse_format(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "", "" },
		{ "\n", "" },
		{ "0", "0" },
		{ "0-1", "0-1" },
		{ "0,1", "0-1" },
		{ "0-3,8,10-11\n", "0-3,8,10-11" },
		{ " 3,1,2 ", "1-3" },
		{ "5,5,5-5", "5" },
		{ "0-55,56-111", "0-111" },
		{ "4095", "4095" },
		{ "63-65,127-128", "63-65,127-128" },
		{ "5-3", "ERR: reversed range 5-3" },
		{ "4096", "ERR: core 4096 is above 4095" },
		{ "1,,2", "ERR: unexpected ',': expected a core id" },
		{ "1,", "ERR: a core id is missing after ','" },
		{ "1-", "ERR: a core id is missing at the end" },
		{ "a", "ERR: unexpected 'a': expected a core id" },
		{ "1 2", "ERR: unexpected ' ': expected ',' or '-'" },
		{ "-1", "ERR: unexpected '-': expected a core id" },
		{ "1;2", "ERR: unexpected ';': expected ',' or '-'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = roundtrip(cases[i].in);
		if (strcmp(got, cases[i].out))
			fail_msg("'%s': got '%s', want '%s'", cases[i].in, got, cases[i].out);
		free(got);
	}
}

static void test_untouched_on_error(void **state)
{
	struct cpulist s = CPULIST_INIT;
	cpulist_add(&s, 7);
	assert_int_equal(cpulist_parse("1-x", &s, NULL), -EINVAL);
	assert_true(cpulist_has(&s, 7));
	assert_int_equal(cpulist_count(&s), 1);
}

static void test_set_ops(void **state)
{
	struct cpulist a, b;
	assert_int_equal(cpulist_parse("0-7", &a, NULL), 0);
	assert_int_equal(cpulist_parse("2,4-5,100", &b, NULL), 0);
	assert_int_equal(cpulist_count(&a), 8);
	struct cpulist c = a;
	cpulist_andnot(&c, &b);
	char buf[64];
	cpulist_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "0-1,3,6-7");
	c = a;
	cpulist_and(&c, &b);
	cpulist_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "2,4-5");
	cpulist_or(&c, &b);
	cpulist_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "2,4-5,100");
	assert_int_equal(cpulist_next(&c, 0), 2);
	assert_int_equal(cpulist_next(&c, 3), 4);
	assert_int_equal(cpulist_next(&c, 6), 100);
	assert_int_equal(cpulist_next(&c, 101), -1);
	assert_false(cpulist_empty(&c));
	assert_false(cpulist_add(&c, 4096));
	assert_false(cpulist_add(&c, -1));
	cpulist_del(&c, 100);
	assert_true(cpulist_equal(&c, &(struct cpulist){ .w = { (1 << 2) | (1 << 4) | (1 << 5) } }));
	/* the mask handed to sched_setaffinity covers the highest id */
	assert_int_equal(cpulist_bytes(&c), 8);
	cpulist_add(&c, 64);
	assert_int_equal(cpulist_bytes(&c), 16);
}

static void test_format_truncates(void **state)
{
	struct cpulist s;
	char buf[6];
	assert_int_equal(cpulist_parse("0-3,8,10-11", &s, NULL), 0);
	assert_int_equal(cpulist_format(&s, buf, sizeof(buf)), strlen("0-3,8,10-11"));
	assert_string_equal(buf, "0-3,8");
	assert_int_equal(cpulist_format(&s, NULL, 0), 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_untouched_on_error),
		cmocka_unit_test(test_set_ops),
		cmocka_unit_test(test_format_truncates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
