/* Unit tests of the HCL reader: syntax, values, positions, every error
 * message, recovery with several errors, and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "hcl_test_helpers.h"
#include "spec/hcl-int.h"

#define EXPR_MSG "expressions are not supported; write the value (or use \"${...}\" for run-time interpolation)"

static struct hcl_body *must_parse(const char *text)
{
	char *errs;
	struct hcl_body *b = parse_hcl(text, &errs);
	if (!b) {
		fprintf(stderr, "unexpected errors:\n%s", errs);
		free(errs);
		fail();
	}
	return b;
}

static const char *str_of(const struct hcl_body *b, const char *name)
{
	const struct hcl_expr *e = attr_value(b, name);
	assert_int_equal(e->kind, HCL_STRING);
	return e->u.str.s;
}

static void test_blocks_and_labels(void **state)
{
	struct hcl_body *b = must_parse(
		"job \"example\" {\n"
		"  type = \"batch\"\n"
		"  group cache {\n"
		"    task \"redis\" {}\n"
		"  }\n"
		"  network \"a\" \"b\" { mode = \"host\" }\n"
		"}\n");
	const struct hcl_block *job, *grp, *task, *net;

	assert_int_equal(b->n, 1);
	assert_int_equal(b->items[0].kind, HCL_ITEM_BLOCK);
	job = &b->items[0].u.block;
	assert_string_equal(job->type, "job");
	assert_int_equal(job->nlabels, 1);
	assert_string_equal(job->labels[0], "example");
	assert_null(job->labels[1]);
	assert_int_equal(job->pos.line, 1);
	assert_int_equal(job->pos.col, 1);
	assert_int_equal(job->label_pos[0].col, 5);
	assert_int_equal(job->body->open_pos.line, 1);
	assert_int_equal(job->body->open_pos.col, 15);
	assert_int_equal(job->body->n, 3);
	assert_string_equal(str_of(job->body, "type"), "batch");
	grp = &job->body->items[1].u.block;
	assert_string_equal(grp->type, "group");
	assert_int_equal(grp->nlabels, 1);
	assert_string_equal(grp->labels[0], "cache"); /* a bare label */
	assert_int_equal(grp->pos.line, 3);
	assert_int_equal(grp->pos.col, 3);
	task = &grp->body->items[0].u.block;
	assert_string_equal(task->labels[0], "redis");
	assert_int_equal(task->body->n, 0);
	net = &job->body->items[2].u.block;
	assert_int_equal(net->nlabels, 2);
	assert_string_equal(net->labels[1], "b");
	assert_string_equal(str_of(net->body, "mode"), "host");
	hcl_body_free(b);
}

static void test_attribute_positions(void **state)
{
	struct hcl_body *b = must_parse("# comment\n\n  count =   3\nname=\"x\"\n");
	const struct hcl_attribute *a = hcl_body_attr(b, "count");
	assert_non_null(a);
	assert_int_equal(a->pos.line, 3);
	assert_int_equal(a->pos.col, 3);
	assert_int_equal(a->value->pos.line, 3);
	assert_int_equal(a->value->pos.col, 13);
	a = hcl_body_attr(b, "name");
	assert_int_equal(a->pos.line, 4);
	assert_int_equal(a->value->pos.col, 6);
	assert_null(hcl_body_attr(b, "absent"));
	hcl_body_free(b);
}

static void test_strings_and_escapes(void **state)
{
	struct hcl_body *b = must_parse(
		"a = \"tab\\tnl\\ncr\\rq\\\"bs\\\\\"\n"
		"u = \"\\u00e9\\U0001F600\"\n"
		"z = \"a\\u0000b\"\n"
		"utf = \"h\xc3\xa9llo\"\n"
		"empty = \"\"\n");
	const struct hcl_expr *z;
	assert_string_equal(str_of(b, "a"), "tab\tnl\ncr\rq\"bs\\");
	assert_string_equal(str_of(b, "u"), "\xc3\xa9\xf0\x9f\x98\x80");
	z = attr_value(b, "z");
	assert_int_equal(z->u.str.len, 3);
	assert_memory_equal(z->u.str.s, "a\0b", 3);
	assert_false(z->u.str.heredoc);
	assert_string_equal(str_of(b, "utf"), "h\xc3\xa9llo");
	assert_string_equal(str_of(b, "empty"), "");
	hcl_body_free(b);
}

static void test_templates_verbatim(void **state)
{
	struct hcl_body *b = must_parse(
		"a = \"${meta[\"x\"]}\"\n"
		"b = \"gpu ${attr.kernel.name} and %{ if x }y%{ endif }\"\n"
		"c = \"$${literal} %%{also}\"\n"
		"d = \"${ {a = \"}\"} }\"\n"
		"e = \"${x[\"${y[\"z\"]}\"]}\"\n"
		"f = \"cost $5 and 100%\"\n");
	assert_string_equal(str_of(b, "a"), "${meta[\"x\"]}");
	assert_string_equal(str_of(b, "b"), "gpu ${attr.kernel.name} and %{ if x }y%{ endif }");
	assert_string_equal(str_of(b, "c"), "$${literal} %%{also}");
	assert_string_equal(str_of(b, "d"), "${ {a = \"}\"} }");
	assert_string_equal(str_of(b, "e"), "${x[\"${y[\"z\"]}\"]}");
	assert_string_equal(str_of(b, "f"), "cost $5 and 100%");
	hcl_body_free(b);
}

static void test_heredocs(void **state)
{
	struct hcl_body *b = must_parse(
		"a = <<EOF\n"
		"line one\n"
		"  ${NOMAD_ALLOC_DIR} \\n stays\n"
		"EOF\n"
		"b = <<-EOT\n"
		"    if x; then\n"
		"      y\n"
		"\n"
		"    fi\n"
		"    EOT\n"
		"c = <<EOF\n"
		"EOF\n"
		"d = <<EOF\r\n"
		"win\r\n"
		"  EOF  \n"
		"after = 1\n");
	const struct hcl_expr *a = attr_value(b, "a");
	assert_true(a->u.str.heredoc);
	assert_int_equal(a->pos.line, 1);
	assert_int_equal(a->pos.col, 5);
	assert_string_equal(a->u.str.s, "line one\n  ${NOMAD_ALLOC_DIR} \\n stays\n");
	assert_string_equal(str_of(b, "b"), "if x; then\n  y\n\nfi\n");
	assert_string_equal(str_of(b, "c"), "");
	assert_string_equal(str_of(b, "d"), "win\r\n");
	assert_int_equal(hcl_body_attr(b, "after")->pos.line, 16);
	hcl_body_free(b);
}

static void test_heredoc_variants(void **state)
{
	struct hcl_body *b = must_parse(
		"a = <<EOF\n"
		"EOFX is not the end\n"
		"  EOF is the end (indented marker)\n"
		"  EOF\n"
		"l = [<<X\n"
		"one\n"
		"X\n"
		", \"two\"]\n"
		"t = <<-T\n"
		"\t\tx\n"
		"\t  y\n"
		"\tT\n"
		"u = <<-U\n"
		"  keep\n"
		"    deeper\n"
		"\n"
		"U\n"
		"last = <<E\n"
		"no newline after the marker\n"
		"E");
	const struct hcl_expr *l;
	assert_string_equal(str_of(b, "a"), "EOFX is not the end\n  EOF is the end (indented marker)\n");
	l = attr_value(b, "l");
	assert_int_equal(l->u.list.n, 2);
	assert_string_equal(l->u.list.v[0]->u.str.s, "one\n");
	assert_true(l->u.list.v[0]->u.str.heredoc);
	assert_string_equal(str_of(b, "t"), "x\n y\n"); /* the marker line does not count */
	assert_string_equal(str_of(b, "u"), "keep\n  deeper\n\n");
	assert_string_equal(str_of(b, "last"), "no newline after the marker\n");
	hcl_body_free(b);
}

static void test_numbers(void **state)
{
	struct hcl_body *b = must_parse(
		"i = 42\n"
		"neg = -7\n"
		"dec = 0.5\n"
		"exp = 1e3\n"
		"exp2 = 2.5E-2\n"
		"big = 9223372036854775807\n"
		"huge = 9223372036854775808\n"
		"zero = 0\n"
		"d18 = 999999999999999999\n"
		"n18 = -99999999999999999\n"
		"d19 = 1000000000000000000\n"
		"nzero = -0\n");
	const struct hcl_expr *e = attr_value(b, "i");
	assert_int_equal(e->kind, HCL_NUMBER);
	assert_true(e->u.num.is_int);
	assert_int_equal(e->u.num.i, 42);
	e = attr_value(b, "neg");
	assert_true(e->u.num.is_int);
	assert_int_equal(e->u.num.i, -7);
	e = attr_value(b, "dec");
	assert_false(e->u.num.is_int);
	assert_true(e->u.num.value == 0.5);
	e = attr_value(b, "exp");
	assert_false(e->u.num.is_int); /* written with an exponent */
	assert_true(e->u.num.value == 1000.0);
	e = attr_value(b, "exp2");
	assert_true(e->u.num.value > 0.0249 && e->u.num.value < 0.0251);
	e = attr_value(b, "big");
	assert_true(e->u.num.is_int);
	assert_true(e->u.num.i == INT64_MAX);
	e = attr_value(b, "huge");
	assert_false(e->u.num.is_int);
	assert_true(e->u.num.value > 9.2e18);
	e = attr_value(b, "zero");
	assert_true(e->u.num.is_int);
	assert_int_equal(e->u.num.i, 0);
	/* either side of the length read without strtod: the same values */
	e = attr_value(b, "d18");
	assert_true(e->u.num.is_int && e->u.num.i == 999999999999999999LL);
	assert_true(e->u.num.value == strtod("999999999999999999", NULL));
	e = attr_value(b, "n18");
	assert_true(e->u.num.is_int && e->u.num.i == -99999999999999999LL);
	assert_true(e->u.num.value == -99999999999999999.0);
	e = attr_value(b, "d19");
	assert_true(e->u.num.is_int && e->u.num.i == 1000000000000000000LL);
	assert_true(e->u.num.value == 1e18);
	e = attr_value(b, "nzero");
	assert_true(e->u.num.is_int && e->u.num.i == 0);
	assert_true(e->u.num.value == 0 && signbit(e->u.num.value));
	hcl_body_free(b);
}

static void test_literals_lists_objects(void **state)
{
	struct hcl_body *b = must_parse(
		"t = true\n"
		"f = false\n"
		"n = null\n"
		"l = [\"a\", 1,\n"
		"  [true],\n"
		"]\n"
		"empty = []\n"
		"o = {\n"
		"  key = \"v\"\n"
		"  \"quoted.key\": 2, other = 3\n"
		"  nested = { x = [] }\n"
		"}\n"
		"eo = {}\n");
	const struct hcl_expr *e;
	assert_int_equal(attr_value(b, "t")->kind, HCL_BOOL);
	assert_true(attr_value(b, "t")->u.boolean);
	assert_false(attr_value(b, "f")->u.boolean);
	assert_int_equal(attr_value(b, "n")->kind, HCL_NULL);
	e = attr_value(b, "l");
	assert_int_equal(e->kind, HCL_LIST);
	assert_int_equal(e->u.list.n, 3);
	assert_int_equal(e->u.list.v[2]->kind, HCL_LIST);
	assert_int_equal(e->u.list.v[2]->pos.line, 5);
	assert_int_equal(e->u.list.v[2]->pos.col, 3);
	assert_int_equal(attr_value(b, "empty")->u.list.n, 0);
	e = attr_value(b, "o");
	assert_int_equal(e->kind, HCL_OBJECT);
	assert_int_equal(e->u.object.n, 4);
	assert_string_equal(e->u.object.v[0].key, "key");
	assert_string_equal(e->u.object.v[1].key, "quoted.key");
	assert_int_equal(e->u.object.v[1].key_pos.line, 10);
	assert_int_equal(e->u.object.v[1].key_pos.col, 3);
	assert_string_equal(e->u.object.v[2].key, "other");
	assert_int_equal(e->u.object.v[3].value->kind, HCL_OBJECT);
	assert_int_equal(attr_value(b, "eo")->u.object.n, 0);
	assert_string_equal(hcl_kind_name(HCL_OBJECT), "object");
	assert_string_equal(hcl_kind_name(HCL_STRING), "string");
	hcl_body_free(b);
}

static void test_comments(void **state)
{
	struct hcl_body *b = must_parse(
		"# hash\n"
		"// slashes\n"
		"/* block\n"
		"   comment */ a = 1 # trailing\n"
		"b = /* inline */ 2 // trailing\n"
		"c = \"# not a comment\"\n");
	assert_int_equal(attr_value(b, "a")->pos.line, 4);
	assert_int_equal(attr_value(b, "b")->u.num.i, 2);
	assert_string_equal(str_of(b, "c"), "# not a comment");
	hcl_body_free(b);
}

static void test_empty_inputs(void **state)
{
	struct diag_list dl;
	struct hcl_body *b;
	diag_list_init(&dl);
	b = hcl_parse("", 0, &dl);
	assert_non_null(b);
	assert_int_equal(b->n, 0);
	assert_int_equal(b->open_pos.line, 1);
	hcl_body_free(b);
	b = hcl_parse(NULL, 0, &dl);
	assert_non_null(b);
	hcl_body_free(b);
	b = must_parse("\n\n  # only a comment\n");
	assert_int_equal(b->n, 0);
	hcl_body_free(b);
	/* a text without a final newline, and not NUL-terminated */
	b = hcl_parse("a = 1xyz", 5, &dl);
	assert_non_null(b);
	assert_int_equal(attr_value(b, "a")->u.num.i, 1);
	hcl_body_free(b);
	assert_int_equal(dl.n, 0);
	diag_list_release(&dl);
	hcl_body_free(NULL);
	hcl_expr_free(NULL);
}

static void test_syntax_errors(void **state)
{
	assert_hcl_errors("count 3\n", "1:7: expected \"=\" or \"{\" after \"count\"\n");
	assert_hcl_errors("a = \"x\n", "1:5: unterminated string\n");
	assert_hcl_errors("count = 1\ncount = 2\n", "2:1: attribute \"count\" is already set at line 1\n");
	assert_hcl_errors("m = {\n  x = 1\n  x = 2\n}\n",
			  "3:3: duplicate key \"x\" in object (first at line 2)\n");
	assert_hcl_errors("a = \n", "1:5: expected a value for \"a\", found newline\n");
	assert_hcl_errors("a = 1 2\n", "1:7: expected a newline after the value of \"a\", found a number\n");
	assert_hcl_errors("= 1\n", "1:1: expected an attribute name or a block type, found \"=\"\n");
	assert_hcl_errors("\"job\" {}\n",
			  "1:1: expected an attribute name or a block type, found a string\n");
	assert_hcl_errors("job \"a\"\n{\n}\n", "1:8: expected \"{\" on the same line as block \"job\"\n");
	assert_hcl_errors("job \"a\"\nx = 1\n", "1:8: expected \"{\" on the same line as block \"job\"\n");
	assert_hcl_errors("job \"a\" \"b\" \"c\" {}\n", "1:13: block \"job\" has more than 2 labels\n");
	assert_hcl_errors("job \"a\" = 1\n",
			  "1:9: expected \"{\" after the labels of block \"job\", found \"=\"\n");
	assert_hcl_errors("job {\n  a = 1\n", "3:1: expected \"}\" to close block \"job\" (opened at line 1)\n");
	assert_hcl_errors("}\n", "1:1: unexpected \"}\"; no block is open\n");
	assert_hcl_errors("a {} b = 1\n", "1:6: expected a newline after the \"}\" of block \"a\", found \"b\"\n");
	assert_hcl_errors("l = [1 2]\n", "1:8: expected \",\" or \"]\" after a list element, found a number\n");
	assert_hcl_errors("l = [,]\n", "1:6: expected a value, found \",\"\n");
	assert_hcl_errors("o = { a 1 }\n", "1:9: expected \"=\" or \":\" after key \"a\", found a number\n");
	assert_hcl_errors("o = { 1 = 2 }\n",
			  "1:7: expected a key (a name or a quoted string) in object, found a number\n");
	assert_hcl_errors("o = { a = 1 b = 2 }\n",
			  "1:13: expected \",\", a newline or \"}\" after an object value, found \"b\"\n");
	assert_hcl_errors("a = @\n", "1:5: unexpected character \"@\"\n");
	assert_hcl_errors("a = 'x'\n", "1:5: unexpected character \"'\"; strings are written in double quotes\n");
	assert_hcl_errors("a = \"\x01\" \x02\n", "1:9: unexpected byte 0x02\n");
	assert_hcl_errors("a = \xc3\xa9\n", "1:5: unexpected character \"\xc3\xa9\"\n");
	assert_hcl_errors("/* open\n\n", "1:1: unterminated comment; expected \"*/\"\n");
	assert_hcl_errors("a = \"${x\"\n",
			  "1:5: unterminated string; an interpolation \"${\" is not closed by \"}\"\n");
	assert_hcl_errors("o = { \"a\\u0000\" = 1 }\n", "1:7: key contains a NUL character\n");
	assert_hcl_errors("b \"x\\u0000\" {}\n", "1:3: label of block \"b\" contains a NUL character\n");
	assert_hcl_errors("b <<EOF\nx\nEOF\n",
			  "1:3: expected a quoted label or \"{\" after block \"b\", found a heredoc\n");
}

/* Duplicates are found past the first few keys too (the key set switches
 * from a linear search to a hash table). */
static void test_duplicates_in_large_bodies(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char want[512];
	for (int i = 0; i < 40; i++)
		strbuf_addf(&sb, "k%d = %d\n", i, i);
	strbuf_adds(&sb, "k3 = 0\nk29 = 0\no = {\n");
	for (int i = 0; i < 40; i++)
		strbuf_addf(&sb, "  x%d = %d\n", i, i);
	strbuf_adds(&sb, "  x0 = 1, x39 = 2\n}\n");
	snprintf(want, sizeof(want),
		 "41:1: attribute \"k3\" is already set at line 4\n"
		 "42:1: attribute \"k29\" is already set at line 30\n"
		 "84:3: duplicate key \"x0\" in object (first at line 44)\n"
		 "84:11: duplicate key \"x39\" in object (first at line 83)\n");
	assert_hcl_errors(sb.buf, want);
	strbuf_release(&sb);
}

static void test_string_errors(void **state)
{
	assert_hcl_errors("a = \"C:\\dir\"\n",
			  "1:8: invalid escape \"\\d\" in string; write \"\\\\\" for a backslash\n");
	assert_hcl_errors("a = \"\\u12\"\n", "1:6: invalid escape \"\\u12\" in string; expected 4 hex digits\n");
	assert_hcl_errors("a = \"\\U0001F6\"\n",
			  "1:6: invalid escape \"\\U0001F6\" in string; expected 8 hex digits\n");
	assert_hcl_errors("a = \"\\uD800\"\n",
			  "1:6: invalid escape \"\\uD800\" in string: not a unicode character\n");
	assert_hcl_errors("a = \"\\U00110000\"\n",
			  "1:6: invalid escape \"\\U00110000\" in string: not a unicode character\n");
	assert_hcl_errors("a = \"\xff\"\n", "1:5: invalid utf-8 in string\n");
	assert_hcl_errors("a = \"\xc0\xaf\"\n", "1:5: invalid utf-8 in string\n"); /* overlong */
	assert_hcl_errors("a = \"\xed\xa0\x80\"\n", "1:5: invalid utf-8 in string\n"); /* surrogate */
	assert_hcl_errors("a = <<EOF\n\xff\nEOF\n", "1:5: invalid utf-8 in heredoc\n");
	assert_hcl_errors("a = <<EOF\nno end\n", "1:5: unterminated heredoc; expected a line \"EOF\"\n");
	assert_hcl_errors("a = <<EOF", "1:5: unterminated heredoc; expected a line \"EOF\"\n");
	assert_hcl_errors("a = << EOF\nx\nEOF\n",
			  "1:5: expected a name after \"<<\" to start a heredoc\n");
	assert_hcl_errors("a = <<EOF x\ny\nEOF\n",
			  "1:5: expected a newline after heredoc marker \"EOF\"\n");
}

static void test_number_errors(void **state)
{
	assert_hcl_errors("t = 5m\n",
			  "1:5: invalid number \"5m\"; durations and sizes are strings: write \"5m\"\n");
	assert_hcl_errors("t = 1.\n", "1:5: invalid number \"1.\"\n");
	assert_hcl_errors("t = 1.2.3\n", "1:5: invalid number \"1.2.3\"\n");
	assert_hcl_errors("t = 1e999\n", "1:5: number \"1e999\" is out of range\n");
	{
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "t = ");
		for (int i = 0; i < 300; i++)
			strbuf_addch(&sb, '1');
		strbuf_addch(&sb, '\n');
		assert_hcl_errors(sb.buf, "1:5: number is longer than 256 characters\n");
		strbuf_release(&sb);
	}
}

static void test_expressions_refused(void **state)
{
	assert_hcl_errors("a = 1 + 2\n", "1:7: " EXPR_MSG "\n");
	assert_hcl_errors("a = file(\"x\")\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = var.x\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = local.y\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = [for x in y: x]\n", "1:6: " EXPR_MSG "\n");
	assert_hcl_errors("a = true ? 1 : 2\n", "1:10: " EXPR_MSG "\n");
	assert_hcl_errors("a = x.*.id\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = !true\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = -x\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = (1)\n", "1:5: " EXPR_MSG "\n");
	assert_hcl_errors("a = [1][0]\n", "1:8: " EXPR_MSG "\n");
	assert_hcl_errors("a = \"x\" == \"y\"\n", "1:9: " EXPR_MSG "\n");
	assert_hcl_errors("a = [1, 2 * 3]\n", "1:11: " EXPR_MSG "\n");
	assert_hcl_errors("a = { (k) = 1 }\n", "1:7: " EXPR_MSG "\n");
	assert_hcl_errors("a = { k = v }\n", "1:11: " EXPR_MSG "\n");
}

/* Three mistakes in different places give three diagnostics, and the good
 * items between them are still read (no cascade). */
static void test_recovery(void **state)
{
	assert_hcl_errors(
		"job \"x\" {\n"
		"  count 3\n"
		"  group \"g\" {\n"
		"    args = [\"a\", file(\"b\"),\n"
		"      \"c\"]\n"
		"    ok = 1\n"
		"    path = \"C:\\x\"\n"
		"  }\n"
		"  meta = { a = 1 + 2\n"
		"    b = 3 }\n"
		"  ok = 2\n"
		"}\n",
		"2:9: expected \"=\" or \"{\" after \"count\"\n"
		"4:18: " EXPR_MSG "\n"
		"7:15: invalid escape \"\\x\" in string; write \"\\\\\" for a backslash\n"
		"9:18: " EXPR_MSG "\n");
	/* a missing "]" is closed by the block's "}" */
	assert_hcl_errors(
		"a {\n"
		"  l = [1, 2\n"
		"  x = 1\n"
		"}\n"
		"b = 1 +\n"
		"c = 2\n"
		"c = 3\n",
		"3:3: expected \",\" or \"]\" after a list element, found \"x\"\n"
		"5:7: " EXPR_MSG "\n"
		"7:1: attribute \"c\" is already set at line 6\n");
	/* errors inside nested blocks, then the parse goes on outside */
	assert_hcl_errors(
		"a {\n b {\n  c = ?\n }\n d = \n}\ne = 1 1\n",
		"3:7: " EXPR_MSG "\n"
		"5:6: expected a value for \"d\", found newline\n"
		"7:7: expected a newline after the value of \"e\", found a number\n");
}

static char *nested(const char *open, const char *close, int depth, const char *prefix)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, prefix);
	for (int i = 0; i < depth; i++)
		strbuf_adds(&sb, open);
	for (int i = 0; i < depth; i++)
		strbuf_adds(&sb, close);
	strbuf_addch(&sb, '\n');
	return strbuf_detach(&sb, NULL);
}

static void test_depth_limit(void **state)
{
	char *text, *errs;
	struct hcl_body *b;

	text = nested("[", "]", HCL_MAX_DEPTH, "a = ");
	b = parse_hcl(text, &errs);
	assert_non_null(b);
	hcl_body_free(b);
	free(text);

	text = nested("[", "]", HCL_MAX_DEPTH + 1, "a = ");
	assert_hcl_errors(text, "1:69: nesting deeper than 64 levels\n");
	free(text);

	text = nested("{a=", "}", HCL_MAX_DEPTH + 1, "a = ");
	errs = hcl_errors(text);
	assert_non_null(errs);
	assert_non_null(strstr(errs, "nesting deeper than 64 levels"));
	free(errs);
	free(text);

	text = nested("b {\n", "}\n", HCL_MAX_DEPTH, "");
	b = parse_hcl(text, &errs);
	assert_non_null(b);
	hcl_body_free(b);
	free(text);

	text = nested("b {\n", "}\n", HCL_MAX_DEPTH + 1, "");
	assert_hcl_errors(text, "65:3: nesting deeper than 64 levels\n");
	free(text);

	/* a very deep input is an error, not a stack overflow */
	text = nested("[", "]", 200000, "a = ");
	assert_hcl_errors(text, "1:69: nesting deeper than 64 levels\n");
	free(text);
	text = nested("[", "", 200000, "a = ");
	errs = hcl_errors(text);
	assert_non_null(errs);
	free(errs);
	free(text);
}

static void test_size_limits(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct diag_list dl;
	struct hcl_body *b;
	char *errs;

	/* a string of exactly the limit is fine, one byte more is not */
	strbuf_adds(&sb, "a = \"");
	for (size_t i = 0; i < HCL_MAX_STRING; i++)
		strbuf_addch(&sb, 'x');
	strbuf_adds(&sb, "\"\n");
	b = parse_hcl(sb.buf, &errs);
	assert_non_null(b);
	assert_int_equal(attr_value(b, "a")->u.str.len, HCL_MAX_STRING);
	hcl_body_free(b);
	strbuf_setlen(&sb, sb.len - 2);
	strbuf_adds(&sb, "y\"\nb = 1\n");
	assert_hcl_errors(sb.buf, "1:5: string is longer than the limit of 1048576 bytes\n");

	/* a list of the limit is fine, one element more is not */
	strbuf_reset(&sb);
	strbuf_adds(&sb, "l = [");
	for (int i = 0; i < HCL_MAX_ITEMS; i++)
		strbuf_adds(&sb, "1,");
	strbuf_adds(&sb, "]\n");
	b = parse_hcl(sb.buf, &errs);
	assert_non_null(b);
	assert_int_equal(attr_value(b, "l")->u.list.n, HCL_MAX_ITEMS);
	hcl_body_free(b);
	strbuf_setlen(&sb, sb.len - 2);
	strbuf_adds(&sb, "2]\n");
	assert_hcl_errors(sb.buf, "1:200006: list has more than 100000 elements\n");

	/* a whole file over the limit */
	diag_list_init(&dl);
	assert_null(hcl_parse("", HCL_MAX_INPUT + 1, &dl));
	assert_int_equal(dl.n, 1);
	assert_int_equal(dl.v[0].line, 0);
	assert_string_equal(dl.v[0].msg, "file is larger than the limit of 8388608 bytes");
	diag_list_release(&dl);
	strbuf_release(&sb);
}

/* Past DIAG_MAX errors the list says "too many errors" and the parse
 * stops (the result is NULL all the same). */
static void test_many_errors(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct diag_list dl;
	for (int i = 0; i < 1000; i++)
		strbuf_adds(&sb, "count 3\n");
	diag_list_init(&dl);
	assert_null(hcl_parse(sb.buf, sb.len, &dl));
	assert_int_equal(dl.n, DIAG_MAX + 1);
	assert_true(dl.errors > DIAG_MAX && dl.errors < 1000);
	assert_int_equal(dl.v[DIAG_MAX - 1].line, DIAG_MAX);
	assert_string_equal(dl.v[DIAG_MAX].msg, "too many errors; stopping here");
	diag_list_release(&dl);
	/* errors already in the list do not stop a later parse early, and
	 * a parse with no error of its own still fails only on its errors */
	diag_list_init(&dl);
	for (int i = 0; i < DIAG_MAX + 5; i++)
		diag_error(&dl, 1, 1, "earlier");
	{
		struct hcl_body *b = hcl_parse("a = 1\n", 6, &dl);
		assert_non_null(b);
		hcl_body_free(b);
	}
	diag_list_release(&dl);
	strbuf_release(&sb);
}

/* Linear work on pathological 1 MiB inputs, checked without a clock (timed
 * tests fail on loaded machines): the lexer must cut each input into
 * tokens that only move forward and never overlap, at most one per byte,
 * so no byte is consumed twice; and the parser must get through the same
 * input, reporting at most DIAG_MAX errors.  The time of the parse itself is
 * guarded by meson's timeout for this suite (120 s): a quadratic pass over
 * 1 MiB takes hours even without sanitizers. */
static void test_linear_work(void **state)
{
	const char *units[] = { "a = \"${", "/*", "x = [[[[", "\"", "k = {a=1,b=2,c=3}\n", "<<EOF\n",
				"@", "count 3\n", "a = \"\\q\"\n", "a {\n", "}", "a = <<X\n",
				"a = \"${x} $${y} \\u00e9\"\n" };
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		struct strbuf sb = STRBUF_INIT;
		struct diag_list dl;
		struct hcl_lexer lx;
		struct hcl_token tok = { 0 };
		const char *done;
		size_t tokens = 0;

		while (sb.len < (1u << 20))
			strbuf_adds(&sb, units[u]);
		diag_list_init(&dl);
		hcl_lexer_init(&lx, sb.buf, sb.len, false, &dl);
		done = sb.buf;
		for (;;) {
			hcl_lex_next(&lx, &tok);
			if (tok.kind == HCL_T_EOF)
				break;
			assert_true(tok.raw >= done);
			assert_true(tok.raw_len >= 1);
			done = tok.raw + tok.raw_len;
			assert_true(done <= sb.buf + sb.len);
			hcl_token_release(&tok);
			tokens++;
		}
		assert_true(tokens <= sb.len);
		diag_list_release(&dl);

		diag_list_init(&dl);
		hcl_body_free(hcl_parse(sb.buf, sb.len, &dl));
		assert_true(dl.n <= DIAG_MAX + 1);
		diag_list_release(&dl);
		strbuf_release(&sb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_and_labels),
		cmocka_unit_test(test_attribute_positions),
		cmocka_unit_test(test_strings_and_escapes),
		cmocka_unit_test(test_templates_verbatim),
		cmocka_unit_test(test_heredocs),
		cmocka_unit_test(test_heredoc_variants),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_literals_lists_objects),
		cmocka_unit_test(test_comments),
		cmocka_unit_test(test_empty_inputs),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_duplicates_in_large_bodies),
		cmocka_unit_test(test_string_errors),
		cmocka_unit_test(test_number_errors),
		cmocka_unit_test(test_expressions_refused),
		cmocka_unit_test(test_recovery),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_size_limits),
		cmocka_unit_test(test_many_errors),
		cmocka_unit_test(test_linear_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
