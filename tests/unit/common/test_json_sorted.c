/* Unit tests of json_sorted.c: the copy's keys are in JSON_SORT_KEYS's
 * order at every level (so that json_dumps of the copy writes what
 * json_dumps(v, JSON_SORT_KEYS) writes), arrays keep their order, the copy
 * shares nothing mutable with the input, and the rules refuse or drop
 * exactly what they say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/json_sorted.h"

struct key {
	const char *s;
	size_t len;
};

/* The keys in the order they must come out: bytewise, a prefix first,
 * bytes above 0x7f after ASCII (unsigned), a NUL inside a key ordered by
 * its byte, not taken for the key's end. */
static const struct key sorted_keys[] = {
	{ "", 0 },
	{ "A", 1 },
	{ "Z", 1 },
	{ "a", 1 },
	{ "a\0", 2 },
	{ "a\x01", 2 },
	{ "a b", 3 },
	{ "aa", 2 },
	{ "ab", 2 },
	{ "abc", 3 },
	{ "b", 1 },
	{ "\x7f", 1 },
	{ "\xc3\xa9", 2 },
	{ "\xc3\xa9t\xc3\xa9", 5 },
	{ "\xe2\x82\xac", 3 },
	{ "\xf0\x9f\x90\x91", 4 },
};
#define NKEYS (sizeof(sorted_keys) / sizeof(sorted_keys[0]))

/* v's keys are exactly sorted_keys, in that order. */
static void assert_sorted_keys(json_t *v)
{
	const char *k;
	size_t klen, i = 0;
	json_t *x;

	assert_true(json_is_object(v));
	assert_int_equal(json_object_size(v), NKEYS);
	json_object_keylen_foreach(v, k, klen, x) {
		assert_true(i < NKEYS);
		assert_int_equal(klen, sorted_keys[i].len);
		assert_memory_equal(k, sorted_keys[i].s, klen);
		i++;
	}
	assert_int_equal(i, NKEYS);
}

/* An object holding sorted_keys inserted in a scrambled order; values
 * (made by mk) tell the keys apart. */
static json_t *scrambled(json_t *(*mk)(size_t i))
{
	json_t *o = json_object();
	/* a fixed permutation (7 is prime to NKEYS, 16) that puts "a\0"
	 * before "a", so that a sort taking "a\0" for "a" (strcmp) keeps
	 * them the wrong way round */
	for (size_t j = 0; j < NKEYS; j++) {
		size_t i = (j * 7 + 1) % NKEYS;
		assert_int_equal(json_object_setn_new(o, sorted_keys[i].s, sorted_keys[i].len, mk(i)),
				 0);
	}
	return o;
}

static json_t *mk_int(size_t i)
{
	return json_integer((json_int_t)i);
}

static void test_key_order(void **state)
{
	json_t *o = scrambled(mk_int), *c;
	char *want, *got;
	(void)state;

	/* the input really is out of order, or the test would prove nothing */
	assert_int_not_equal(json_object_iter_key_len(json_object_iter(o)), sorted_keys[0].len);
	c = json_sorted_copy(o, NULL);
	assert_non_null(c);
	assert_sorted_keys(c);
	/* each key kept its own value */
	for (size_t i = 0; i < NKEYS; i++)
		assert_int_equal(json_integer_value(json_object_getn(c, sorted_keys[i].s,
								     sorted_keys[i].len)),
				 (json_int_t)i);
	/* the copy in its own order is jansson's sorted text */
	want = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	got = json_dumps(c, JSON_COMPACT);
	assert_non_null(want);
	assert_string_equal(got, want);
	free(want);
	free(got);
	json_decref(c);
	json_decref(o);
}

static json_t *mk_nested(size_t i)
{
	switch (i % 4) {
	case 0:
		return scrambled(mk_int);
	case 1: /* an array: its order stays, its objects' keys sort */
		return json_pack("[i, o, [o], s, i]", 3, scrambled(mk_int), scrambled(mk_int),
				 "z", 1);
	case 2:
		return json_pack("{s:{s:[{s:n, s:b}]}, s:f}", "y", "x", "b", "a", 1, "a", 0.5);
	default:
		return json_stringn("v\xc3\xa9", 3);
	}
}

static void test_nesting_and_arrays(void **state)
{
	json_t *o = scrambled(mk_nested), *c, *a, *deep;
	char *want, *got;
	(void)state;

	c = json_sorted_copy(o, NULL);
	assert_non_null(c);
	assert_sorted_keys(c);
	assert_sorted_keys(json_object_getn(c, sorted_keys[0].s, sorted_keys[0].len));
	a = json_object_getn(c, sorted_keys[1].s, sorted_keys[1].len);
	assert_int_equal(json_array_size(a), 5);
	assert_int_equal(json_integer_value(json_array_get(a, 0)), 3);
	assert_sorted_keys(json_array_get(a, 1));
	assert_sorted_keys(json_array_get(json_array_get(a, 2), 0));
	assert_string_equal(json_string_value(json_array_get(a, 3)), "z");
	assert_int_equal(json_integer_value(json_array_get(a, 4)), 1);
	/* {"a":0.5,"y":{"x":[{"a":true,"b":null}]}} */
	deep = json_object_getn(c, sorted_keys[2].s, sorted_keys[2].len);
	got = json_dumps(deep, JSON_COMPACT);
	assert_string_equal(got, "{\"a\":0.5,\"y\":{\"x\":[{\"a\":true,\"b\":null}]}}");
	free(got);
	want = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	got = json_dumps(c, JSON_COMPACT);
	assert_string_equal(got, want);
	free(want);
	free(got);
	json_decref(c);
	json_decref(o);
}

/* Walks v and c together: same shape and values, no node in common but
 * jansson's constants. */
static void assert_apart(json_t *v, json_t *c)
{
	const char *k;
	size_t klen, i;
	json_t *x;

	assert_int_equal(json_typeof(v), json_typeof(c));
	/* json_equal looks keys up by strlen: the walk below compares
	 * containers, key "a\0" included */
	if (!json_is_object(v) && !json_is_array(v))
		assert_true(json_equal(v, c));
	switch (json_typeof(v)) {
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		assert_ptr_equal(v, c); /* immutable: nothing to share */
		return;
	default:
		assert_ptr_not_equal(v, c);
	}
	if (json_is_object(v)) {
		assert_int_equal(json_object_size(v), json_object_size(c));
		json_object_keylen_foreach(v, k, klen, x) {
			json_t *y = json_object_getn(c, k, klen);
			assert_non_null(y);
			assert_apart(x, y);
		}
	} else if (json_is_array(v)) {
		assert_int_equal(json_array_size(v), json_array_size(c));
		json_array_foreach(v, i, x)
			assert_apart(x, json_array_get(c, i));
	} else if (json_is_string(v))
		assert_ptr_not_equal(json_string_value(v), json_string_value(c));
}

static void test_shares_nothing(void **state)
{
	json_t *o = scrambled(mk_nested), *c, *a;
	char *before, *after;
	(void)state;

	json_object_set_new(o, "t", json_pack("[b, b, n, I, f, s]", 1, 0, (json_int_t)-7, 2.5, "s"));
	before = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	c = json_sorted_copy(o, NULL);
	assert_non_null(c);
	assert_apart(o, c);
	/* the input's own references are untouched: one decref frees each */
	assert_int_equal(o->refcount, 1);
	assert_int_equal(json_object_get(o, "t")->refcount, 1);

	/* changing the copy everywhere leaves the input as it was */
	a = json_object_get(c, "t");
	json_integer_set(json_array_get(a, 3), 99);
	json_real_set(json_array_get(a, 4), 9.5);
	json_string_set(json_array_get(a, 5), "changed");
	json_array_append_new(a, json_true());
	json_object_set_new(json_object_getn(c, "", 0), "new", json_null());
	json_object_clear(json_object_getn(c, sorted_keys[2].s, sorted_keys[2].len));
	after = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(after, before);
	free(after);

	/* and the input freed, the copy still stands on its own */
	json_decref(o);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(c, "t"), 3)), 99);
	assert_sorted_keys(json_object_getn(c, sorted_keys[4].s, sorted_keys[4].len));
	json_decref(c);
	free(before);
}

static json_t *chain(int levels)
{
	json_t *v = json_integer(0);
	for (int i = 0; i < levels; i++)
		v = i % 2 ? json_pack("[o]", v) : json_pack("{s:o}", "k", v);
	return v;
}

static void test_rules(void **state)
{
	static const char *const drop[] = { "create_index", "modify_index", NULL };
	struct json_sorted_rules r = { .drop_top = drop };
	json_t *o, *c, *v;
	char *t;
	(void)state;

	assert_null(json_sorted_copy(NULL, NULL));
	assert_null(json_sorted_copy(NULL, &r));

	/* dropped at the top only */
	o = json_pack("{s:i, s:i, s:i, s:{s:i, s:i}}", "modify_index", 1, "b", 2, "create_index", 3,
		      "a", "create_index", 4, "modify_index", 5);
	c = json_sorted_copy(o, &r);
	t = json_dumps(c, JSON_COMPACT);
	assert_string_equal(t, "{\"a\":{\"create_index\":4,\"modify_index\":5},\"b\":2}");
	free(t);
	json_decref(c);
	/* and not without the rule */
	c = json_sorted_copy(o, NULL);
	assert_int_equal(json_object_size(c), 4);
	json_decref(c);
	json_decref(o);

	/* max_depth: v itself is depth 0, the chain's integer depth `levels` */
	r = (struct json_sorted_rules){ .max_depth = 10 };
	v = chain(10);
	c = json_sorted_copy(v, &r);
	assert_non_null(c);
	assert_true(json_equal(c, v));
	json_decref(c);
	json_decref(v);
	v = chain(11);
	assert_null(json_sorted_copy(v, &r));
	json_decref(v);
	/* 0: no limit */
	v = chain(1000);
	c = json_sorted_copy(v, NULL);
	assert_non_null(c);
	assert_true(json_equal(c, v));
	json_decref(c);
	json_decref(v);

	/* refuse_nul: a NUL in any string value refuses the whole */
	o = json_pack("{s:[s, s%]}", "a", "ok", "x\0y", (size_t)3);
	r = (struct json_sorted_rules){ .refuse_nul = true };
	assert_null(json_sorted_copy(o, &r));
	/* without it, the string is copied whole, its NUL included */
	c = json_sorted_copy(o, NULL);
	v = json_array_get(json_object_get(c, "a"), 1);
	assert_int_equal(json_string_length(v), 3);
	assert_memory_equal(json_string_value(v), "x\0y", 3);
	json_decref(c);
	json_decref(o);

	/* a scalar is copied as it is */
	v = json_real(-0.25);
	c = json_sorted_copy(v, &r);
	assert_ptr_not_equal(c, v);
	assert_true(json_real_value(c) == -0.25);
	json_decref(c);
	json_decref(v);
}

/* Random trees (a fixed seed): the copy's own text is jansson's sorted
 * text, and json_equal to the input. */
static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)(rng >> 33) % n;
}

static json_t *random_tree(int depth)
{
	/* pieces that make prefixes of each other and bytes either side of 0x80 */
	static const char *const piece[] = { "a", "b", "A", "_", "\x7f", "\xc3\xa9", "\xe2\x82\xac" };
	unsigned kind = depth > 4 ? rnd(3) : rnd(6);
	json_t *v;

	switch (kind) {
	case 0:
		return json_integer((json_int_t)rnd(1000) - 500);
	case 1:
		return rnd(2) ? json_real(rnd(1000) / 8.0) : json_null();
	case 2:
		return json_string(piece[rnd(7)]);
	case 3:
		v = json_array();
		for (unsigned i = rnd(5); i; i--)
			json_array_append_new(v, random_tree(depth + 1));
		return v;
	default:
		v = json_object();
		/* a big one at the top, past the copy's keys on the stack */
		for (unsigned i = rnd(depth ? 6 : 60); i; i--) {
			char key[32];
			size_t len = 0;
			for (unsigned j = rnd(4); j; j--) {
				const char *p = piece[rnd(7)];
				memcpy(key + len, p, strlen(p));
				len += strlen(p);
			}
			key[len] = '\0';
			json_object_set_new(v, key, random_tree(depth + 1));
		}
		return v;
	}
}

static void test_random_trees(void **state)
{
	(void)state;
	for (int n = 0; n < 300; n++) {
		json_t *v = random_tree(0), *c = json_sorted_copy(v, NULL);
		char *want = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		char *got = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
		assert_non_null(c);
		assert_true(json_equal(v, c));
		assert_string_equal(got, want);
		free(want);
		free(got);
		json_decref(c);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_order),
		cmocka_unit_test(test_nesting_and_arrays),
		cmocka_unit_test(test_shares_nothing),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_random_trees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
