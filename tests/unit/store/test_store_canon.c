/* Unit tests of canon.c: the canonical object of a record is what
 * json_loads makes of its text, and canon_encode writes the very text
 * json_dumps(JSON_COMPACT | JSON_SORT_KEYS) writes, for fixed edge cases
 * and for random trees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/canon.h"

/* What the store wrote before canon.c: jansson's text of v without the
 * top-level indexes. */
static char *jansson_text(json_t *v)
{
	json_t *c = json_is_object(v) ? json_copy(v) : json_incref(v);
	char *t;
	if (json_is_object(c)) {
		json_object_del(c, "create_index");
		json_object_del(c, "modify_index");
	}
	t = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(c);
	return t;
}

/* canon_copy + canon_encode of v give jansson's text, and the copy is what
 * json_loads makes of it, keys in the same order. */
static void assert_canon(json_t *v)
{
	json_t *c = canon_copy(v, true), *back;
	char *want = jansson_text(v), *got, *a, *b;
	size_t len = 0;

	assert_non_null(want);
	assert_non_null(c);
	got = canon_encode(c, &len);
	assert_non_null(got);
	assert_string_equal(got, want);
	assert_int_equal(len, strlen(want));
	/* the copy is canonical: the checked encoder takes it as it is */
	a = canon_encode_canonical(c, &len);
	assert_non_null(a);
	assert_string_equal(a, want);
	assert_int_equal(len, strlen(want));
	free(a);
	/* v itself only when it already is: then the same text */
	a = canon_encode_canonical(v, NULL);
	if (a)
		assert_string_equal(a, want);
	free(a);
	back = json_loads(got, JSON_DECODE_ANY, NULL);
	assert_non_null(back);
	a = json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY);
	b = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_string_equal(a, b);
	free(a);
	free(b);
	json_decref(back);
	free(got);
	free(want);
	json_decref(c);
}

static void test_edge_cases(void **state)
{
	char ctl[40];
	json_t *o, *c;
	(void)state;

	for (int i = 1; i < 0x20; i++)
		ctl[i - 1] = (char)i;
	memcpy(ctl + 31, "\"\\/\x7f", 5);
	o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:b, s:b, s:n,"
		      " s:[], s:{}, s:[[], {}, [[]]], s:s}",
		      "ctl", ctl, "utf8", "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x91", "", "empty key",
		      "min", (json_int_t)INT64_MIN, "max", (json_int_t)INT64_MAX, "zero", (json_int_t)0,
		      "neg", (json_int_t)-1, "tenth", 0.1, "big", 1e300, "negzero", -0.0, "one", 1.0,
		      "tiny", 5e-324, "t", 1, "f", 0, "n", "ea", "eo", "nest", "b", "x");
	/* keys that sort by bytes, a prefix first, beyond ASCII last */
	json_object_set_new(o, "a", json_integer(1));
	json_object_set_new(o, "ab", json_integer(2));
	json_object_set_new(o, "a\x01", json_integer(3));
	json_object_set_new(o, "A", json_integer(4));
	json_object_set_new(o, "\xc3\xa9t\xc3\xa9", json_integer(5));
	json_object_set_new(o, "key \"quoted\"\n", json_integer(6));
	/* the store's indexes go */
	json_object_set_new(o, "create_index", json_integer(7));
	json_object_set_new(o, "modify_index", json_integer(8));
	assert_canon(o);
	c = canon_copy(o, true);
	assert_null(json_object_get(c, "modify_index"));
	assert_null(json_object_get(c, "create_index"));
	json_decref(c);
	json_decref(o);
}

/* Deeper than a record is, a loop, a string holding NUL: no canonical
 * object (the store then encodes with jansson and caches nothing). */
static void test_declined(void **state)
{
	json_t *deep = json_array(), *loop = json_object(), *nul;
	char *t;
	(void)state;

	for (int i = 0; i < 300; i++) {
		json_t *a = json_array();
		json_array_append_new(a, deep);
		deep = a;
	}
	assert_null(canon_copy(deep, true));
	assert_null(canon_encode(deep, NULL));
	json_decref(deep);

	/* jansson refuses an object inside itself, not one level down */
	json_object_set_new(loop, "inner", json_object());
	assert_int_equal(json_object_set(json_object_get(loop, "inner"), "outer", loop), 0);
	assert_null(canon_copy(loop, true));
	assert_null(canon_encode(loop, NULL));
	json_object_del(json_object_get(loop, "inner"), "outer");
	json_decref(loop);

	nul = json_pack("{s:s%}", "s", "a\0b", (size_t)3);
	assert_null(canon_copy(nul, true));
	/* encoded as jansson would, though */
	t = canon_encode(nul, NULL);
	assert_string_equal(t, "{\"s\":\"a\\u0000b\"}");
	free(t);
	json_decref(nul);

	/* not UTF-8, and a NaN: not encodable, as with jansson */
	nul = json_stringn_nocheck("\xff\xfe", 2);
	assert_null(canon_encode(nul, NULL));
	assert_null(json_dumps(nul, JSON_ENCODE_ANY));
	json_decref(nul);
}

/* canon_encode_canonical takes only objects in canonical order, without
 * the store's indexes at the top, with no string holding NUL. */
static void test_canonical_check(void **state)
{
	json_t *o;
	char *t;
	(void)state;

	o = json_pack("{s:i, s:{s:i, s:i}, s:i, s:i}", "a", 1, "b", "create_index", 1, "x", 2,
		      "b\x01", 3, "ba", 4);
	t = canon_encode_canonical(o, NULL);
	assert_string_equal(t, "{\"a\":1,\"b\":{\"create_index\":1,\"x\":2},\"b\\u0001\":3,\"ba\":4}");
	free(t);
	json_decref(o);

	/* a key out of order, at the top or inside */
	o = json_pack("{s:i, s:i}", "ab", 1, "a", 2);
	assert_null(canon_encode_canonical(o, NULL));
	json_decref(o);
	o = json_pack("{s:[{s:i, s:i}]}", "a", "z", 1, "y", 2);
	assert_null(canon_encode_canonical(o, NULL));
	json_decref(o);
	/* the store's indexes at the top, even in order */
	o = json_pack("{s:i, s:i}", "a", 1, "create_index", 2);
	assert_null(canon_encode_canonical(o, NULL));
	json_decref(o);
	o = json_pack("{s:i, s:i}", "modify_index", 1, "z", 2);
	assert_null(canon_encode_canonical(o, NULL));
	json_decref(o);
	/* a NUL in a string, which a read could not decode */
	o = json_pack("{s:s%}", "s", "a\0b", (size_t)3);
	assert_null(canon_encode_canonical(o, NULL));
	json_decref(o);
	/* not an object */
	o = json_array();
	assert_null(canon_encode_canonical(o, NULL));
	json_decref(o);
}

static uint64_t rng = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void random_text(char *buf, size_t max)
{
	static const char *const pieces[] = { "a", "b", "Z", "_", "0", "\"", "\\", "/", "\n", "\t",
					      "\x01", "\x1f", " ", "\xc3\xa9", "\xe2\x82\xac", "~",
					      "\x7f", "ab", "id", "" };
	size_t n = rnd(8), len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))];
		size_t l = strlen(p);
		if (len + l + 1 >= max)
			break;
		memcpy(buf + len, p, l + 1);
		len += l;
	}
}

static json_t *random_value(int depth)
{
	char text[64];
	unsigned k = rnd(depth > 4 ? 6 : 8);
	switch (k) {
	case 0: random_text(text, sizeof(text)); return json_string(text);
	case 1: return json_integer((json_int_t)(rng >> rnd(64)) * (rnd(2) ? 1 : -1));
	case 2: return json_real((double)(int)rnd(100000) / (double)(1 + rnd(1000)));
	case 3: return json_boolean(rnd(2));
	case 4: return json_null();
	case 5: return json_integer(rnd(10));
	case 6: {
		json_t *a = json_array();
		for (unsigned i = rnd(5); i > 0; i--)
			json_array_append_new(a, random_value(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (unsigned i = rnd(7); i > 0; i--) {
			random_text(text, sizeof(text));
			json_object_set_new(o, text, random_value(depth + 1));
		}
		return o;
	}
	}
}

static void test_random_trees(void **state)
{
	(void)state;
	for (int i = 0; i < 3000; i++) {
		json_t *o = json_object();
		for (unsigned j = rnd(12); j > 0; j--) {
			char key[64];
			random_text(key, sizeof(key));
			json_object_set_new(o, key, random_value(0));
		}
		assert_canon(o);
		json_decref(o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edge_cases),
		cmocka_unit_test(test_declined),
		cmocka_unit_test(test_canonical_check),
		cmocka_unit_test(test_random_trees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
