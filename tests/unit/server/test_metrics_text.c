/* The metrics writer (metrics_text.h): names, numbers, the text
 * exposition format byte for byte (HELP and TYPE lines, escapes, order,
 * samples that add up) and the JSON form of the same model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics_text.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(metrics_name_valid("herd_gpu_info", false));
	assert_true(metrics_name_valid("a:b_c9", false));
	assert_true(metrics_name_valid("_x", false));
	assert_false(metrics_name_valid("9a", false));
	assert_false(metrics_name_valid("", false));
	assert_false(metrics_name_valid(NULL, false));
	assert_false(metrics_name_valid("a-b", false));
	assert_false(metrics_name_valid("a b", false));
	assert_true(metrics_name_valid("node_id", true));
	assert_false(metrics_name_valid("a:b", true));    /* no colon in a label */
	assert_false(metrics_name_valid("__name__", true)); /* Prometheus's own */
	assert_false(metrics_name_valid("1x", true));
}

static const char *fmt(double v)
{
	static char buf[32];
	metrics_format_value(v, buf);
	return buf;
}

static void test_numbers(void **state)
{
	(void)state;
	assert_string_equal(fmt(0), "0");
	assert_string_equal(fmt(-0.0), "0");
	assert_string_equal(fmt(3), "3");
	assert_string_equal(fmt(-2), "-2");
	assert_string_equal(fmt(85520809984.0), "85520809984");     /* bytes: no exponent */
	assert_string_equal(fmt(1710000000.0), "1710000000");
	assert_string_equal(fmt(0.25), "0.25");
	assert_string_equal(fmt(0.1), "0.1");                     /* shortest, not 0.1000...01 */
	assert_string_equal(fmt(0.97), "0.97");
	assert_string_equal(fmt(1e-05), "1e-05");
	assert_string_equal(fmt(12.5), "12.5");
	assert_string_equal(fmt(1.0 / 3.0), "0.33333333333333331"); /* needs 17 digits */
	assert_true(strtod(fmt(1.0 / 3.0), NULL) == 1.0 / 3.0);
	assert_string_equal(fmt(9007199254740992.0), "9007199254740992"); /* 2^53 */
	assert_string_equal(fmt(1e20), "1e+20");
	assert_string_equal(fmt(NAN), "NaN");
	assert_string_equal(fmt(INFINITY), "+Inf");
	assert_string_equal(fmt(-INFINITY), "-Inf");
}

/* The model the two form tests write: families declared out of name
 * order, samples out of label order, a sample given twice, label values
 * and help with every character that needs an escape, and a family with
 * no sample. */
static struct metrics *model(void)
{
	struct metrics *m = metrics_new();
	struct metrics_family *g, *c, *e;

	g = metrics_family(m, "herd_gpu_holder_compute_ratio", METRICS_GAUGE,
			   "Share of a GPU \"held\", in C:\\ terms\nsecond line.");
	c = metrics_family(m, "herd_gpu_seconds_total", METRICS_COUNTER, "GPU-seconds.");
	e = metrics_family(m, "herd_gpu_memory_used_bytes", METRICS_GAUGE, "Unknown: none.");
	assert_non_null(g);
	assert_non_null(c);
	assert_non_null(e);
	assert_int_equal(metrics_add(g, 0.25, "job_id", "b", "alloc_id", "2", NULL), 0);
	assert_int_equal(metrics_add(g, 0.5, "job_id", "a\\\"q\"\nz", "alloc_id", "1", NULL), 0);
	/* the same series again adds up: 0.25 + 0.25 */
	assert_int_equal(metrics_add(g, 0.25, "job_id", "b", "alloc_id", "2", NULL), 0);
	assert_int_equal(metrics_add(c, 7200, "namespace", "team-b", NULL), 0);
	assert_int_equal(metrics_add(c, 1.5, "namespace", "default", NULL), 0);
	return m;
}

static void test_text_form(void **state)
{
	struct metrics *m = model();
	struct strbuf sb;
	static const char want[] =
		"# HELP herd_gpu_holder_compute_ratio Share of a GPU \"held\", in C:\\\\ terms\\nsecond line.\n"
		"# TYPE herd_gpu_holder_compute_ratio gauge\n"
		"herd_gpu_holder_compute_ratio{job_id=\"a\\\\\\\"q\\\"\\nz\",alloc_id=\"1\"} 0.5\n"
		"herd_gpu_holder_compute_ratio{job_id=\"b\",alloc_id=\"2\"} 0.5\n"
		"# HELP herd_gpu_memory_used_bytes Unknown: none.\n"
		"# TYPE herd_gpu_memory_used_bytes gauge\n"
		"# HELP herd_gpu_seconds_total GPU-seconds.\n"
		"# TYPE herd_gpu_seconds_total counter\n"
		"herd_gpu_seconds_total{namespace=\"default\"} 1.5\n"
		"herd_gpu_seconds_total{namespace=\"team-b\"} 7200\n";

	(void)state;
	strbuf_init(&sb, 0);
	metrics_write_text(m, &sb);
	assert_string_equal(sb.buf, want);
	/* written again: the same bytes (sorting twice changes nothing) */
	strbuf_reset(&sb);
	metrics_write_text(m, &sb);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
	metrics_free(m);
}

static void test_json_form(void **state)
{
	struct metrics *m = model();
	struct metrics_family *f = metrics_family(m, "odd", METRICS_GAUGE, "");
	json_t *got, *want;

	(void)state;
	metrics_add(f, NAN, NULL);
	metrics_add(f, INFINITY, "k", "p", NULL);
	metrics_add(f, -INFINITY, "k", "q", NULL);
	got = metrics_to_json(m);
	want = json_pack(
		"{s:[{s:s, s:s, s:s, s:[{s:{s:s, s:s}, s:f}, {s:{s:s, s:s}, s:f}]},"
		"    {s:s, s:s, s:s, s:[]},"
		"    {s:s, s:s, s:s, s:[{s:{s:s}, s:f}, {s:{s:s}, s:I}]},"
		"    {s:s, s:s, s:s, s:[{s:{}, s:s}, {s:{s:s}, s:s}, {s:{s:s}, s:s}]}]}",
		"metrics",
		"name", "herd_gpu_holder_compute_ratio", "type", "gauge", "help",
		"Share of a GPU \"held\", in C:\\ terms\nsecond line.", "samples",
		"labels", "job_id", "a\\\"q\"\nz", "alloc_id", "1", "value", 0.5,
		"labels", "job_id", "b", "alloc_id", "2", "value", 0.5,
		"name", "herd_gpu_memory_used_bytes", "type", "gauge", "help", "Unknown: none.",
		"samples",
		"name", "herd_gpu_seconds_total", "type", "counter", "help", "GPU-seconds.",
		"samples", "labels", "namespace", "default", "value", 1.5,
		"labels", "namespace", "team-b", "value", (json_int_t)7200,
		"name", "odd", "type", "gauge", "help", "", "samples",
		"labels", "value", "NaN", "labels", "k", "p", "value", "+Inf",
		"labels", "k", "q", "value", "-Inf");
	assert_non_null(want);
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_INDENT(1));
		fail_msg("got %s", s);
	}
	/* an integer is a JSON integer, a fraction a real */
	json_t *c = json_array_get(json_object_get(got, "metrics"), 2);
	json_t *samples = json_object_get(c, "samples");
	assert_true(json_is_real(json_object_get(json_array_get(samples, 0), "value")));
	assert_true(json_is_integer(json_object_get(json_array_get(samples, 1), "value")));
	json_decref(got);
	json_decref(want);
	metrics_free(m);
}

static void test_refusals(void **state)
{
	struct metrics *m = metrics_new();
	struct metrics_family *f;
	const char *many[34];

	(void)state;
	assert_null(metrics_family(m, "bad-name", METRICS_GAUGE, ""));
	f = metrics_family(m, "a", METRICS_GAUGE, "first");
	assert_ptr_equal(metrics_family(m, "a", METRICS_GAUGE, "again"), f);
	assert_null(metrics_family(m, "a", METRICS_COUNTER, "other type"));
	assert_int_equal(metrics_add(NULL, 1, NULL), -EINVAL);
	assert_int_equal(metrics_add(f, 1, "bad-label", "x", NULL), -EINVAL);
	assert_int_equal(metrics_add(f, 1, "__name__", "x", NULL), -EINVAL);
	assert_int_equal(metrics_add(f, 1, "k", "x", "k", "y", NULL), -EINVAL);
	for (int i = 0; i < 34; i += 2) {
		static char names[17][8];
		snprintf(names[i / 2], sizeof(names[0]), "l%d", i / 2);
		many[i] = names[i / 2];
		many[i + 1] = "v";
	}
	assert_int_equal(metrics_addv(f, 1, many, 17), -EINVAL);
	assert_int_equal(metrics_addv(f, 1, many, 16), 0);
	assert_int_equal(metrics_add(f, 2, "k", NULL, NULL), 0); /* NULL value: "" */
	struct strbuf sb;
	strbuf_init(&sb, 0);
	metrics_write_text(m, &sb);
	assert_non_null(strstr(sb.buf, "\na{k=\"\"} 2\n"));
	assert_null(strstr(sb.buf, "bad"));
	assert_null(strstr(sb.buf, "__name__"));
	assert_non_null(strstr(sb.buf, "# HELP a first\n# TYPE a gauge\n"));
	strbuf_release(&sb);
	metrics_free(m);
	metrics_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_text_form),
		cmocka_unit_test(test_json_form),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
