/* Unit tests of the lexer shared by the HCL and JSON readers (hcl-int.h):
 * token kinds, positions, line counting through comments and heredocs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/hcl-int.h"

struct tok_seen {
	enum hcl_tok kind;
	int line, col;
};

/* Lexes text and checks the kinds and positions of its tokens (up to and
 * including EOF) against want. */
static void check_tokens(const char *text, bool json, const struct tok_seen *want, size_t n)
{
	struct hcl_lexer lx;
	struct hcl_token tok = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	hcl_lexer_init(&lx, text, strlen(text), json, &dl);
	for (size_t i = 0; i < n; i++) {
		hcl_lex_next(&lx, &tok);
		if (tok.kind != want[i].kind || tok.pos.line != want[i].line ||
		    tok.pos.col != want[i].col)
			fail_msg("token %zu: got kind %d at %d:%d, want kind %d at %d:%d", i, tok.kind,
				 tok.pos.line, tok.pos.col, want[i].kind, want[i].line, want[i].col);
		hcl_token_release(&tok);
	}
	assert_int_equal(dl.n, 0);
	diag_list_release(&dl);
}

#define CHECK(text, json, ...)                                                    \
	do {                                                                      \
		const struct tok_seen want_[] = { __VA_ARGS__ };                  \
		check_tokens(text, json, want_, sizeof(want_) / sizeof(want_[0])); \
	} while (0)

static void test_hcl_tokens(void **state)
{
	CHECK("job \"a\" {\n  n = -1.5e3 # c\n}", false,
	      { HCL_T_IDENT, 1, 1 }, { HCL_T_STRING, 1, 5 }, { HCL_T_LBRACE, 1, 9 },
	      { HCL_T_NEWLINE, 1, 10 }, { HCL_T_IDENT, 2, 3 }, { HCL_T_EQ, 2, 5 },
	      { HCL_T_NUMBER, 2, 7 }, { HCL_T_NEWLINE, 2, 17 }, { HCL_T_RBRACE, 3, 1 },
	      { HCL_T_EOF, 3, 2 });
	CHECK("[a, b]: () == => + - . ? !", false,
	      { HCL_T_LBRACK, 1, 1 }, { HCL_T_IDENT, 1, 2 }, { HCL_T_COMMA, 1, 3 },
	      { HCL_T_IDENT, 1, 5 }, { HCL_T_RBRACK, 1, 6 }, { HCL_T_COLON, 1, 7 },
	      { HCL_T_LPAREN, 1, 9 }, { HCL_T_RPAREN, 1, 10 }, { HCL_T_OPERATOR, 1, 12 },
	      { HCL_T_OPERATOR, 1, 15 }, { HCL_T_OPERATOR, 1, 18 }, { HCL_T_OPERATOR, 1, 20 },
	      { HCL_T_OPERATOR, 1, 22 }, { HCL_T_OPERATOR, 1, 24 }, { HCL_T_OPERATOR, 1, 26 },
	      { HCL_T_EOF, 1, 27 });
	/* block comments and heredocs advance the line count */
	CHECK("/* a\nb */ x <<EOF\n1\n2\nEOF\ny", false,
	      { HCL_T_IDENT, 2, 6 }, { HCL_T_STRING, 2, 8 }, { HCL_T_NEWLINE, 5, 4 },
	      { HCL_T_IDENT, 6, 1 }, { HCL_T_EOF, 6, 2 });
	/* identifiers may hold dashes; a dash before a digit starts a number */
	CHECK("max-parallel -3 a-1", false,
	      { HCL_T_IDENT, 1, 1 }, { HCL_T_NUMBER, 1, 14 }, { HCL_T_IDENT, 1, 17 },
	      { HCL_T_EOF, 1, 20 });
	/* tabs and CR count one column; a leading BOM counts its bytes */
	CHECK("\xEF\xBB\xBF\t\ta\r\n", false,
	      { HCL_T_IDENT, 1, 6 }, { HCL_T_NEWLINE, 1, 8 }, { HCL_T_EOF, 2, 1 });
}

static void test_json_tokens(void **state)
{
	CHECK("{\n \"a\" : [true, -0.5e-1]\r\n}", true,
	      { HCL_T_LBRACE, 1, 1 }, { HCL_T_STRING, 2, 2 }, { HCL_T_COLON, 2, 6 },
	      { HCL_T_LBRACK, 2, 8 }, { HCL_T_IDENT, 2, 9 }, { HCL_T_COMMA, 2, 13 },
	      { HCL_T_NUMBER, 2, 15 }, { HCL_T_RBRACK, 2, 22 }, { HCL_T_RBRACE, 3, 1 },
	      { HCL_T_EOF, 3, 2 });
}

static void test_token_values(void **state)
{
	struct hcl_lexer lx;
	struct hcl_token tok = { 0 };
	struct diag_list dl;
	char buf[HCL_QUOTE_MAX];
	size_t len;
	char *s;
	const char *text = "\"a\\tb\" 7 x \"plain\"";
	struct hcl_arena *arena = hcl_arena_new();

	diag_list_init(&dl);
	hcl_lexer_init(&lx, text, strlen(text), false, &dl);
	hcl_lex_next(&lx, &tok);
	assert_int_equal(tok.raw_len, 6);
	assert_string_equal(hcl_token_describe(&tok, buf, sizeof(buf)), "a string");
	s = hcl_token_take_string(&tok, arena, &len);
	assert_string_equal(s, "a\tb");
	assert_int_equal(len, 3);
	assert_null(tok.s);
	hcl_lex_next(&lx, &tok);
	assert_true(tok.is_int);
	assert_int_equal(tok.i, 7);
	hcl_lex_next(&lx, &tok);
	assert_string_equal(hcl_token_describe(&tok, buf, sizeof(buf)), "\"x\"");
	/* a plain string is not copied until taken, then copied whole */
	hcl_lex_next(&lx, &tok);
	assert_int_equal(tok.kind, HCL_T_STRING);
	assert_null(tok.s);
	s = hcl_token_take_string(&tok, arena, &len);
	assert_string_equal(s, "plain");
	assert_int_equal(len, 5);
	/* taking twice gives the empty string */
	s = hcl_token_take_string(&tok, arena, &len);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	hcl_arena_free(arena);
	diag_list_release(&dl);
}

/* The arena behind every tree: aligned nodes, unaligned strings, blocks
 * larger than a chunk, many chunks; ASan checks the bounds. */
static void test_arena(void **state)
{
	struct hcl_arena *a = hcl_arena_new();
	char big[5000];
	char *s, *b;

	memset(big, 'b', sizeof(big));
	s = hcl_arena_strndup(a, "abc", 3);
	for (int i = 0; i < 20000; i++) {
		double *d = hcl_arena_alloc(a, sizeof(double) * (size_t)(i % 5 + 1));
		char *t = hcl_arena_strndup(a, "xyz", (size_t)(i % 3));
		assert_int_equal((uintptr_t)d % 8, 0);
		d[i % 5] = i;
		assert_int_equal(strlen(t), i % 3);
		if (i % 1000 == 0) {
			b = hcl_arena_dup(a, big, sizeof(big));
			assert_memory_equal(b, big, sizeof(big));
		}
	}
	assert_string_equal(s, "abc");
	assert_null(hcl_arena_dup(a, big, 0));
	b = hcl_arena_zalloc(a, 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(b[i], 0);
	hcl_arena_free(a);
	hcl_arena_free(NULL);
	/* a first request larger than a chunk */
	a = hcl_arena_new();
	b = hcl_arena_dup(a, big, sizeof(big));
	s = hcl_arena_strndup(a, "q", 1);
	assert_memory_equal(b, big, sizeof(big));
	assert_string_equal(s, "q");
	hcl_arena_free(a);
}

static void test_msg_quote(void **state)
{
	char buf[HCL_QUOTE_MAX];
	char longname[200];
	assert_string_equal(hcl_msg_quote("a\"b\\c\n\xff", 7, buf, sizeof(buf)),
			    "\"a\\\"b\\\\c\\x0a\\xff\"");
	memset(longname, 'n', sizeof(longname));
	hcl_msg_quote(longname, sizeof(longname), buf, sizeof(buf));
	assert_int_equal(strlen(buf), 48 + 5);
	assert_string_equal(buf + 49, "...\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hcl_tokens),
		cmocka_unit_test(test_json_tokens),
		cmocka_unit_test(test_token_values),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_msg_quote),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
