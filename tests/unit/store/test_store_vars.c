/* Variables in the store (kind STORE_VAR): round trip, keys by namespace
 * and path, lists by namespace, check-and-set through a batch's condition,
 * and the index each write bumps.  Runs on SQLite and on PostgreSQL
 * (store_vars_pg). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test_store_util.h"

static json_t *var(const char *ns, const char *path, const char *value)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:I, s:I}", "namespace", ns, "path", path, "items",
			 "password", value, "create_time", (json_int_t)1, "modify_time",
			 (json_int_t)2);
}

static void test_round_trip(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_key k = { "default", "db/creds", 0 }, other = { "team-a", "db/creds", 0 };
	json_t *got = NULL;
	uint64_t idx = 0, before = store_index(t->s);

	got = var("default", "db/creds", "s3cret");
	assert_int_equal(store_put(t->s, STORE_VAR, got, &idx, &err), 0);
	json_decref(got);
	assert_true(idx > before);
	assert_int_equal(store_get(t->s, STORE_VAR, &k, &got, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(got, "items"),
							      "password")), "s3cret");
	assert_int_equal(json_integer_value(json_object_get(got, "modify_index")), idx);
	json_decref(got);
	/* the same path in another namespace is another variable */
	assert_int_equal(store_get(t->s, STORE_VAR, &other, &got, &err), -ENOENT);
	/* survives a reopen */
	tmpstore_reopen(t);
	assert_int_equal(store_get(t->s, STORE_VAR, &k, &got, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(got, "create_index")), idx);
	json_decref(got);
	/* a variable without a path or namespace: refused, nothing written */
	before = store_index(t->s);
	got = json_pack("{s:s, s:{}}", "namespace", "default", "items");
	assert_int_equal(store_put(t->s, STORE_VAR, got, NULL, &err), -EINVAL);
	json_decref(got);
	assert_int_equal(store_index(t->s), before);
	assert_int_equal(store_delete(t->s, STORE_VAR, &k, &idx, &err), 0);
	assert_int_equal(store_get(t->s, STORE_VAR, &k, &got, &err), -ENOENT);
}

static void test_list_by_namespace(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_filter f = { "team-a", NULL, NULL };
	json_t *list = NULL;

	put_ok(t->s, STORE_VAR, var("team-a", "db/b", "1"));
	put_ok(t->s, STORE_VAR, var("team-a", "db/a", "2"));
	put_ok(t->s, STORE_VAR, var("team-b", "db/a", "3"));
	assert_int_equal(store_list(t->s, STORE_VAR, &f, &list, &err), 0);
	assert_int_equal(json_array_size(list), 2);
	/* key order: by path */
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "path")),
			    "db/a");
	json_decref(list);
	assert_int_equal(store_list(t->s, STORE_VAR, NULL, &list, &err), 0);
	assert_int_equal(json_array_size(list), 3);
	json_decref(list);
}

/* What PUT /v1/var/:path?cas=N does: a put on condition of the record's
 * modify_index (0: absent). */
static int cas_put(struct store *s, json_t *v, uint64_t cas, uint64_t *idx)
{
	struct store_batch b = STORE_BATCH_INIT;
	struct store_key k = { json_string_value(json_object_get(v, "namespace")),
			       json_string_value(json_object_get(v, "path")), 0 };
	struct herd_err err = { 0 };
	int rc;
	store_batch_require_index(&b, STORE_VAR, &k, cas);
	store_batch_put(&b, STORE_VAR, v);
	rc = store_commit(s, &b, idx, &err);
	store_batch_release(&b);
	json_decref(v);
	return rc;
}

static void test_cas(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_key k = { "default", "app/cfg", 0 };
	uint64_t first = 0, second = 0, idx = 0;
	json_t *got = NULL;

	assert_int_equal(cas_put(t->s, var("default", "app/cfg", "v1"), 0, &first), 0);
	/* cas 0 again: it exists now */
	idx = store_index(t->s);
	assert_int_equal(cas_put(t->s, var("default", "app/cfg", "v2"), 0, NULL), -ESTALE);
	assert_int_equal(store_index(t->s), idx);
	/* the right index: written; the old one again: refused */
	assert_int_equal(cas_put(t->s, var("default", "app/cfg", "v2"), first, &second), 0);
	assert_true(second > first);
	assert_int_equal(cas_put(t->s, var("default", "app/cfg", "v3"), first, NULL), -ESTALE);
	assert_int_equal(store_get(t->s, STORE_VAR, &k, &got, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(got, "items"),
							      "password")), "v2");
	assert_int_equal(json_integer_value(json_object_get(got, "create_index")), first);
	json_decref(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tmpstore_setup, tmpstore_teardown)
		T(test_round_trip),
		T(test_list_by_namespace),
		T(test_cas),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
