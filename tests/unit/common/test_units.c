#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/httpc.h"
#include "common/units.h"

static void test_hex_digit(void **state)
{
	const char *digits = "0123456789abcdef", *upper = "ABCDEF";
	for (int i = 0; i < 16; i++)
		assert_int_equal(hex_digit(digits[i]), i);
	for (int i = 0; i < 6; i++)
		assert_int_equal(hex_digit(upper[i]), 10 + i);
	for (int c = 0; c < 256; c++)
		if (!strchr("0123456789abcdefABCDEF", c) || c == 0)
			assert_int_equal(hex_digit(c), -1);
}

/* Decodes s with httpc_unescape; "ERR" when it refuses. */
static char *unescaped(const char *s, bool strict)
{
	char *out = NULL;
	if (httpc_unescape(s, strlen(s), strict, &out) < 0)
		return strdup("ERR");
	return out;
}

static void test_unescape(void **state)
{
	static const struct { const char *in, *lenient, *strict; } cases[] = {
		{ "plain", "plain", "plain" },
		{ "a%20b%2Fc%2f", "a b/c/", "a b/c/" },
		{ "%e2%82%AC", "\xe2\x82\xac", "\xe2\x82\xac" },
		{ "100%", "100%", "ERR" },         /* '%' at the end */
		{ "%4", "%4", "ERR" },             /* one digit */
		{ "%4g", "%4g", "ERR" },           /* second not hex */
		{ "% 4x", "% 4x", "ERR" },         /* no skipping of spaces */
		{ "x%00y", "x", "ERR" },           /* NUL: cut lenient, refused strict */
		{ "%%41", "%A", "ERR" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *l = unescaped(cases[i].in, false), *st = unescaped(cases[i].in, true);
		assert_string_equal(l, cases[i].lenient);
		assert_string_equal(st, cases[i].strict);
		free(l);
		free(st);
	}
	/* only the first len bytes count */
	char *out = NULL;
	assert_int_equal(httpc_unescape("ab%41cd", 5, true, &out), 0);
	assert_string_equal(out, "abA");
	free(out);
}

static void test_durations(void **state)
{
	static const struct { const char *in; int64_t ns; } ok[] = {
		{ "30s", 30 * NS_PER_SEC }, { "5m", 300 * NS_PER_SEC },
		{ "1h30m", 5400 * NS_PER_SEC }, { "250ms", 250000000 },
		{ "1.5h", 5400 * NS_PER_SEC }, { "0", 0 }, { "10us", 10000 },
		{ "-2s", -2 * NS_PER_SEC }, { "1m0.5s", 60500000000LL },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ns = -1;
		assert_int_equal(parse_duration(ok[i].in, &ns, NULL), 0);
		assert_int_equal(ns, ok[i].ns);
	}
}

static void test_bad_durations(void **state)
{
	static const char *bad[] = { "", "s", "30", "30x", "5 m", "1h-3m", "abc", "." };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct herd_err err = { 0 };
		int64_t ns = 77;
		assert_int_equal(parse_duration(bad[i], &ns, &err), -EINVAL);
		assert_int_equal(ns, 77); /* untouched on failure */
		assert_non_null(strstr(err.msg, "expected a duration"));
	}
	int64_t ns;
	assert_int_equal(parse_duration("99999999999h", &ns, NULL), -ERANGE);
}

static void test_sizes(void **state)
{
	static const struct { const char *in; int64_t b; } ok[] = {
		{ "512MB", 512000000 }, { "2 GiB", 2147483648LL }, { "100", 100 },
		{ "1.5KiB", 1536 }, { "10gb", 10000000000LL }, { "1 TiB", 1099511627776LL },
		{ "0", 0 }, { "3k", 3000 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t b = -1;
		assert_int_equal(parse_size(ok[i].in, &b, NULL), 0);
		assert_int_equal(b, ok[i].b);
	}
	static const char *bad[] = { "", "GB", "-1GB", "5 parsecs", "1e999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t b = 5;
		assert_true(parse_size(bad[i], &b, NULL) < 0);
		assert_int_equal(b, 5);
	}
}

static void test_int64(void **state)
{
	int64_t v = 0;
	struct herd_err err;
	assert_int_equal(parse_int64("42", 0, 100, &v, NULL), 0);
	assert_int_equal(v, 42);
	assert_int_equal(parse_int64("101", 0, 100, &v, &err), -ERANGE);
	assert_string_equal(err.msg, "101 is out of range (0..100)");
	assert_int_equal(parse_int64("4x", 0, 100, &v, NULL), -EINVAL);
	assert_int_equal(parse_int64(" 4", 0, 100, &v, NULL), -EINVAL);
	assert_int_equal(parse_int64("99999999999999999999", INT64_MIN, INT64_MAX, &v, NULL), -ERANGE);
	assert_int_equal(v, 42);
}

static void test_format_duration(void **state)
{
	char buf[64];
	assert_string_equal(format_duration(0, buf, sizeof(buf)), "0s");
	assert_string_equal(format_duration(5400 * NS_PER_SEC, buf, sizeof(buf)), "1h30m");
	assert_string_equal(format_duration(250000000, buf, sizeof(buf)), "250ms");
	assert_string_equal(format_duration(-2 * NS_PER_SEC, buf, sizeof(buf)), "-2s");
	/* what format writes, parse reads back */
	int64_t ns;
	assert_int_equal(parse_duration(format_duration(3723004005006LL, buf, sizeof(buf)), &ns, NULL), 0);
	assert_int_equal(ns, 3723004005006LL);
}

static int64_t ts_ns(struct timespec t)
{
	return (int64_t)t.tv_sec * NS_PER_SEC + t.tv_nsec;
}

static void test_deadline_after(void **state)
{
	(void)state;
	/* the nanoseconds always normalised, the distance from now kept */
	const int64_t cases[] = { 0, 1, 999999999, NS_PER_SEC, 1500000000LL, 3 * NS_PER_SEC - 1 };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct timespec before, d, after;
		clock_gettime(CLOCK_MONOTONIC, &before);
		d = deadline_after(CLOCK_MONOTONIC, cases[i]);
		clock_gettime(CLOCK_MONOTONIC, &after);
		assert_true(d.tv_nsec >= 0 && d.tv_nsec < NS_PER_SEC);
		assert_true(ts_ns(d) >= ts_ns(before) + cases[i]);
		assert_true(ts_ns(d) <= ts_ns(after) + cases[i]);
	}
	/* a negative distance is now */
	struct timespec before, d;
	clock_gettime(CLOCK_REALTIME, &before);
	d = deadline_after(CLOCK_REALTIME, -5 * NS_PER_SEC);
	assert_true(ts_ns(d) >= ts_ns(before));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hex_digit),
		cmocka_unit_test(test_unescape),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_bad_durations),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_int64),
		cmocka_unit_test(test_format_duration),
		cmocka_unit_test(test_deadline_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
