/* Unit tests of the JSON reader (hcl_parse_json): values, positions,
 * strictness (RFC 8259) and every error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "hcl_test_helpers.h"

static struct hcl_expr *must_json(const char *text)
{
	struct diag_list dl;
	struct hcl_expr *e;
	diag_list_init(&dl);
	e = hcl_parse_json(text, strlen(text), &dl);
	if (!e) {
		char *errs = diags_text(&dl);
		fprintf(stderr, "unexpected errors:\n%s", errs);
		free(errs);
		fail();
	}
	assert_int_equal(dl.n, 0);
	diag_list_release(&dl);
	return e;
}

static void test_document(void **state)
{
	struct hcl_expr *e = must_json(
		"{\n"
		"  \"Job\": {\"ID\": \"x\", \"Count\": 3,\n"
		"    \"Ratio\": -0.25, \"Big\": 1E2, \"On\": true, \"Off\": false, \"None\": null,\n"
		"    \"List\": [1, [], {}, \"s\"]}\n"
		"}\n");
	const struct hcl_expr *job, *v;

	assert_int_equal(e->kind, HCL_OBJECT);
	assert_int_equal(e->pos.line, 1);
	assert_int_equal(e->pos.col, 1);
	assert_int_equal(e->u.object.n, 1);
	assert_string_equal(e->u.object.v[0].key, "Job");
	assert_int_equal(e->u.object.v[0].key_pos.line, 2);
	assert_int_equal(e->u.object.v[0].key_pos.col, 3);
	job = e->u.object.v[0].value;
	assert_int_equal(job->u.object.n, 8);
	v = job->u.object.v[1].value;
	assert_int_equal(v->kind, HCL_NUMBER);
	assert_true(v->u.num.is_int);
	assert_int_equal(v->u.num.i, 3);
	assert_int_equal(v->pos.line, 2);
	assert_int_equal(v->pos.col, 31);
	v = job->u.object.v[2].value;
	assert_false(v->u.num.is_int);
	assert_true(v->u.num.value == -0.25);
	v = job->u.object.v[3].value;
	assert_false(v->u.num.is_int);
	assert_true(v->u.num.value == 100.0);
	assert_true(job->u.object.v[4].value->u.boolean);
	assert_false(job->u.object.v[5].value->u.boolean);
	assert_int_equal(job->u.object.v[6].value->kind, HCL_NULL);
	v = job->u.object.v[7].value;
	assert_int_equal(v->kind, HCL_LIST);
	assert_int_equal(v->u.list.n, 4);
	assert_int_equal(v->u.list.v[3]->pos.line, 4);
	assert_int_equal(v->u.list.v[3]->pos.col, 25);
	hcl_expr_free(e);
}

static void test_scalars_and_strings(void **state)
{
	struct hcl_expr *e = must_json(" 42 ");
	assert_true(e->u.num.is_int);
	assert_int_equal(e->u.num.i, 42);
	hcl_expr_free(e);
	e = must_json("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00 ${x}\"");
	assert_string_equal(e->u.str.s, "\" \\ / \b \f \n \r \t \xc3\xa9 \xf0\x9f\x98\x80 ${x}");
	hcl_expr_free(e);
	e = must_json("\"a\\u0000b\"");
	assert_int_equal(e->u.str.len, 3);
	hcl_expr_free(e);
	e = must_json("-0");
	assert_true(e->u.num.is_int);
	hcl_expr_free(e);
	e = must_json("\xEF\xBB\xBF[]"); /* a byte order mark is skipped */
	assert_int_equal(e->kind, HCL_LIST);
	hcl_expr_free(e);
}

static void test_errors(void **state)
{
	assert_json_errors("", "1:1: expected a JSON value, found end of file\n");
	assert_json_errors("{\"a\": 1,}", "1:9: expected a string key in object, found \"}\"\n");
	assert_json_errors("[1,]", "1:4: expected a JSON value, found \"]\"\n");
	assert_json_errors("[1 2]", "1:4: expected \",\" or \"]\" in array, found a number\n");
	assert_json_errors("{\"a\" 1}", "1:6: expected \":\" after key \"a\", found a number\n");
	assert_json_errors("{\"a\": 1 \"b\": 2}", "1:9: expected \",\" or \"}\" in object, found a string\n");
	assert_json_errors("{a: 1}", "1:2: expected a string key in object, found \"a\"\n");
	assert_json_errors("{\"a\": 1, \"a\": 2}", "1:10: duplicate key \"a\" in object (first at line 1)\n");
	assert_json_errors("nul", "1:1: invalid literal \"nul\"; expected true, false or null\n");
	assert_json_errors("True", "1:1: invalid literal \"True\"; expected true, false or null\n");
	assert_json_errors("1 2", "1:3: expected the end of input after the JSON value, found a number\n");
	assert_json_errors("01", "1:1: invalid number \"01\"\n");
	assert_json_errors("-", "1:1: invalid number \"-\"\n");
	assert_json_errors("1.", "1:1: invalid number \"1.\"\n");
	assert_json_errors(".5", "1:1: unexpected character \".\"\n");
	assert_json_errors("+1", "1:1: unexpected character \"+\"\n");
	assert_json_errors("1e999", "1:1: number \"1e999\" is out of range\n");
	assert_json_errors("[1] // c", "1:5: unexpected character \"/\"; JSON has no comments\n");
	assert_json_errors("\"a\tb\"", "1:3: control character 0x09 in string; write it as an escape\n");
	assert_json_errors("\"a\nb\"", "1:1: unterminated string\n");
	assert_json_errors("\"\\x\"", "1:2: invalid escape \"\\x\" in string\n");
	assert_json_errors("\"\\U0001F600\"", "1:2: invalid escape \"\\U\" in string\n");
	assert_json_errors("\"\\ud800\"", "1:2: invalid escape \"\\ud800\" in string: unpaired surrogate\n");
	assert_json_errors("\"\\udc00\"", "1:2: invalid escape \"\\udc00\" in string: not a unicode character\n");
	assert_json_errors("\"\\u12\"", "1:2: invalid escape \"\\u12\" in string; expected 4 hex digits\n");
	assert_json_errors("\"\xff\"", "1:1: invalid utf-8 in string\n");
	assert_json_errors("{\"\\u0000\": 1}", "1:2: key contains a NUL character\n");
	assert_json_errors("\n\n  [1, 2,\n", "4:1: expected a JSON value, found end of file\n");
	/* non-fatal errors are all reported */
	assert_json_errors("{\"a\": \"\\q\", \"b\": 1e999, \"a\": 1}",
			   "1:8: invalid escape \"\\q\" in string\n"
			   "1:18: number \"1e999\" is out of range\n"
			   "1:25: duplicate key \"a\" in object (first at line 1)\n");
	/* the HCL-only syntax is refused */
	assert_json_errors("{\"a\" = 1}", "1:6: unexpected character \"=\"\n");
	assert_json_errors("'a'", "1:1: unexpected character \"'\"\n");
}

static void test_limits(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct diag_list dl;
	struct hcl_expr *e;

	for (int i = 0; i < HCL_MAX_DEPTH; i++)
		strbuf_addch(&sb, '[');
	for (int i = 0; i < HCL_MAX_DEPTH; i++)
		strbuf_addch(&sb, ']');
	e = must_json(sb.buf);
	hcl_expr_free(e);
	strbuf_reset(&sb);
	for (int i = 0; i < 100000; i++)
		strbuf_adds(&sb, "{\"a\":");
	assert_json_errors(sb.buf, "1:321: nesting deeper than 64 levels\n");

	strbuf_reset(&sb);
	strbuf_addch(&sb, '[');
	for (int i = 0; i <= HCL_MAX_ITEMS; i++)
		strbuf_adds(&sb, "0,");
	strbuf_adds(&sb, "0]");
	assert_json_errors(sb.buf, "1:200002: array has more than 100000 elements\n");

	strbuf_reset(&sb);
	strbuf_addch(&sb, '"');
	for (size_t i = 0; i <= HCL_MAX_STRING; i++)
		strbuf_addch(&sb, 'x');
	strbuf_addch(&sb, '"');
	assert_json_errors(sb.buf, "1:1: string is longer than the limit of 1048576 bytes\n");

	diag_list_init(&dl);
	assert_null(hcl_parse_json("", HCL_MAX_INPUT + 1, &dl));
	assert_string_equal(dl.v[0].msg, "file is larger than the limit of 8388608 bytes");
	diag_list_release(&dl);
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_scalars_and_strings),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
