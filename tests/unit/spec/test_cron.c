/* Cron expressions: what parses (and the column of what does not), and the
 * next time an expression fires, as a table of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spec/cron.h"

/* Unix seconds of a UTC date and time. */
static int64_t utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi };
	return (int64_t)timegm(&tm);
}

static void test_parse_fields(void **state)
{
	struct cron c;
	char err[256];

	(void)state;
	assert_int_equal(cron_parse("* * * * *", &c, err, sizeof(err)), 0);
	assert_true(c.minutes == (1ull << 60) - 1);
	assert_true(c.mday_star && c.wday_star);
	assert_int_equal(cron_parse("0,30 9-17/4 1,15 jan-MAR mon-fri", &c, err, sizeof(err)), 0);
	assert_true(c.minutes == (1ull | 1ull << 30));
	assert_true(c.hours == (1u << 9 | 1u << 13 | 1u << 17));
	assert_true(c.mdays == (1u << 1 | 1u << 15));
	assert_true(c.months == (1u << 1 | 1u << 2 | 1u << 3));
	assert_true(c.wdays == 0x3e);
	assert_false(c.mday_star || c.wday_star);
	/* 7 is Sunday; a/n runs to the end of the field */
	assert_int_equal(cron_parse("*/15 5/6 * * 7", &c, err, sizeof(err)), 0);
	assert_true(c.minutes == (1ull | 1ull << 15 | 1ull << 30 | 1ull << 45));
	assert_true(c.hours == (1u << 5 | 1u << 11 | 1u << 17 | 1u << 23));
	assert_true(c.wdays == 1);
	assert_int_equal(cron_parse("  @Daily ", &c, err, sizeof(err)), 0);
	assert_true(c.minutes == 1 && c.hours == 1 && c.mday_star);
	assert_int_equal(cron_parse("@weekly", &c, err, sizeof(err)), 0);
	assert_true(c.wdays == 1 && !c.wday_star);
	assert_int_equal(cron_parse("@yearly", &c, err, sizeof(err)), 0);
	assert_true(c.months == 2 && c.mdays == 2);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *expr, *err;
	} cases[] = {
		{ "", "column 1: minute field is missing: an expression has 5 fields "
		      "(minute hour day-of-month month day-of-week)" },
		{ "* * * *", "column 8: day of week field is missing: an expression has 5 fields "
			     "(minute hour day-of-month month day-of-week)" },
		{ "* * * * * *", "column 11: more than 5 fields" },
		{ "60 * * * *", "column 1 (minute): 60 is out of range 0-59" },
		{ "* 24 * * *", "column 3 (hour): 24 is out of range 0-23" },
		{ "* * 0 * *", "column 5 (day of month): 0 is out of range 1-31" },
		{ "* * * 13 *", "column 7 (month): 13 is out of range 1-12" },
		{ "* * * * 8", "column 9 (day of week): 8 is out of range 0-7" },
		{ "* 5-2 * * *", "column 5 (hour): range ends before it starts" },
		{ "*/0 * * * *", "column 3 (minute): step out of range 1-59" },
		{ "*/x * * * *", "column 3 (minute): a step is a number" },
		{ "1,,2 * * * *", "column 3 (minute): unexpected \",\"" },
		{ "* * * foo *", "column 7 (month): unexpected \"f\"" },
		{ "* * * * mon-", "column 13 (day of week): a value is missing" },
		{ "1x * * * *", "column 2 (minute): unexpected \"x\"" },
		{ "@daily 5", "column 8: nothing may follow @daily" },
		{ "@often", "column 1: unknown descriptor \"@often\" (@yearly @annually @monthly "
			    "@weekly @daily @midnight @hourly)" },
	};
	struct cron c;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_int_equal(cron_parse(cases[i].expr, &c, err, sizeof(err)), -1);
		if (strcmp(err, cases[i].err))
			fail_msg("\"%s\": got \"%s\", want \"%s\"", cases[i].expr, err, cases[i].err);
	}
}

static void test_next_utc(void **state)
{
	static const struct {
		const char *expr;
		int from[5], want[5]; /* y mo d h mi */
	} cases[] = {
		{ "* * * * *", { 2026, 1, 1, 0, 0 }, { 2026, 1, 1, 0, 1 } },
		{ "0 3 * * *", { 2026, 1, 1, 3, 0 }, { 2026, 1, 2, 3, 0 } },
		{ "0 3 * * *", { 2026, 1, 1, 2, 59 }, { 2026, 1, 1, 3, 0 } },
		{ "@hourly", { 2026, 12, 31, 23, 30 }, { 2027, 1, 1, 0, 0 } },
		/* month ends: the 31st skips the months without one */
		{ "0 0 31 * *", { 2026, 1, 31, 0, 0 }, { 2026, 3, 31, 0, 0 } },
		{ "0 0 31 * *", { 2026, 4, 1, 0, 0 }, { 2026, 5, 31, 0, 0 } },
		/* leap years: Feb 29th comes every four years (2100 is none) */
		{ "0 12 29 2 *", { 2026, 3, 1, 0, 0 }, { 2028, 2, 29, 12, 0 } },
		{ "0 12 29 2 *", { 2096, 3, 1, 0, 0 }, { 2104, 2, 29, 12, 0 } },
		/* both day fields restricted: either matches (the 13th, or a Friday) */
		{ "0 0 13 * fri", { 2026, 11, 1, 0, 0 }, { 2026, 11, 6, 0, 0 } },
		{ "0 0 13 * fri", { 2026, 11, 6, 0, 0 }, { 2026, 11, 13, 0, 0 } },
		{ "0 0 13 * fri", { 2026, 11, 13, 0, 0 }, { 2026, 11, 20, 0, 0 } },
		{ "0 0 13 * fri", { 2026, 12, 11, 0, 0 }, { 2026, 12, 13, 0, 0 } },
		/* only one restricted: that one decides */
		{ "0 0 * * fri", { 2026, 11, 13, 0, 0 }, { 2026, 11, 20, 0, 0 } },
		{ "0 0 13 * *", { 2026, 11, 13, 0, 0 }, { 2026, 12, 13, 0, 0 } },
		{ "0 0 */10 * *", { 2026, 1, 31, 0, 0 }, { 2026, 2, 1, 0, 0 } },
		{ "30 2 * * 0", { 2026, 11, 21, 18, 0 }, { 2026, 11, 22, 2, 30 } },
		{ "@yearly", { 2026, 6, 1, 0, 0 }, { 2027, 1, 1, 0, 0 } },
		{ "@monthly", { 2026, 12, 15, 0, 0 }, { 2027, 1, 1, 0, 0 } },
		{ "@weekly", { 2026, 11, 21, 0, 0 }, { 2026, 11, 22, 0, 0 } },
		{ "*/20 9-10 * * mon-fri", { 2026, 11, 20, 10, 40 }, { 2026, 11, 23, 9, 0 } },
	};
	struct cron c;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const int *f = cases[i].from, *w = cases[i].want;
		int64_t from = utc(f[0], f[1], f[2], f[3], f[4]), want = utc(w[0], w[1], w[2], w[3], w[4]);
		int64_t got;
		assert_int_equal(cron_parse(cases[i].expr, &c, err, sizeof(err)), 0);
		got = cron_next(&c, from, false);
		if (got != want)
			fail_msg("case %zu \"%s\": got %lld, want %lld", i, cases[i].expr,
				 (long long)got, (long long)want);
		/* from any second inside the minute before, the same */
		assert_int_equal(cron_next(&c, want - 1, false), want);
	}
}

static void test_next_never(void **state)
{
	struct cron c;
	char err[256];

	(void)state;
	assert_int_equal(cron_parse("0 0 30 2 *", &c, err, sizeof(err)), 0);
	assert_int_equal(cron_next(&c, utc(2026, 1, 1, 0, 0), false), -1);
	/* Feb 30th or a Monday: Mondays only */
	assert_int_equal(cron_parse("0 0 30 2 mon", &c, err, sizeof(err)), 0);
	assert_int_equal(cron_next(&c, utc(2026, 1, 1, 0, 0), false), utc(2026, 2, 2, 0, 0));
}

static void test_next_local(void **state)
{
	struct cron c;
	char err[256];
	int64_t t;

	(void)state;
	/* a zone an hour ahead of UTC all year: 03:00 local is 02:00 UTC */
	setenv("TZ", "XXX-1", 1);
	tzset();
	assert_int_equal(cron_parse("0 3 * * *", &c, err, sizeof(err)), 0);
	t = cron_next(&c, utc(2026, 1, 1, 0, 0), true);
	assert_int_equal(t, utc(2026, 1, 1, 2, 0));
	setenv("TZ", "UTC", 1);
	tzset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_next_utc),
		cmocka_unit_test(test_next_never),
		cmocka_unit_test(test_next_local),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
