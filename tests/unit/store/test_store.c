/* Unit tests of the store (SQLite, and PostgreSQL as store_pg): CRUD, the
 * index, batches and their conditions, reopening, the schema check,
 * close-on-exec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "test_store_util.h"

static void test_put_get_roundtrip(void **state)
{
	struct tmpstore *t = *state;
	struct store_key key = { "default", "web", 0 };
	struct herd_err err = { 0 };
	uint64_t idx = 0;
	json_t *job = json_pack("{s:s, s:s, s:i, s:s}", "namespace", "default", "id", "web",
				"priority", 50, "type", "service");
	json_t *got = NULL;

	assert_int_equal(store_index(t->s), 0);
	assert_int_equal(store_put(t->s, STORE_JOB, job, &idx, &err), 0);
	assert_int_equal(idx, 1);
	assert_int_equal(store_index(t->s), 1);
	assert_int_equal(store_get(t->s, STORE_JOB, &key, &got, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(got, "priority")), 50);
	assert_int_equal(json_integer_value(json_object_get(got, "create_index")), 1);
	assert_int_equal(json_integer_value(json_object_get(got, "modify_index")), 1);
	json_decref(got);

	/* an update keeps create_index and moves modify_index */
	json_object_set_new(job, "priority", json_integer(70));
	json_object_set_new(job, "create_index", json_integer(999)); /* ignored */
	assert_int_equal(store_put(t->s, STORE_JOB, job, &idx, &err), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(store_get(t->s, STORE_JOB, &key, &got, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(got, "priority")), 70);
	assert_int_equal(json_integer_value(json_object_get(got, "create_index")), 1);
	assert_int_equal(json_integer_value(json_object_get(got, "modify_index")), 2);
	json_decref(got);
	json_decref(job);
}

static void test_get_missing_and_delete(void **state)
{
	struct tmpstore *t = *state;
	struct store_key key = { NULL, "n1", 0 };
	struct herd_err err = { 0 };
	json_t *got = NULL;
	uint64_t idx;

	uint64_t mi = 77;

	assert_int_equal(store_get(t->s, STORE_NODE, &key, &got, &err), -ENOENT);
	assert_null(got);
	assert_non_null(strstr(err.msg, "n1"));
	assert_int_equal(store_get_index(t->s, STORE_NODE, &key, &mi, &err), -ENOENT);
	assert_int_equal(mi, 77); /* untouched on failure */
	put_ok(t->s, STORE_NODE, json_pack("{s:s, s:s}", "id", "n1", "name", "gpu-01"));
	assert_int_equal(store_get(t->s, STORE_NODE, &key, &got, &err), 0);
	assert_string_equal(json_string_value(json_object_get(got, "name")), "gpu-01");
	assert_int_equal(store_get_index(t->s, STORE_NODE, &key, &mi, &err), 0);
	assert_int_equal(mi, json_integer_value(json_object_get(got, "modify_index")));
	json_decref(got);
	assert_int_equal(store_delete(t->s, STORE_NODE, &key, &idx, &err), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(store_get(t->s, STORE_NODE, &key, &got, &err), -ENOENT);
	assert_int_equal(store_get_index(t->s, STORE_NODE, &key, &mi, &err), -ENOENT);
	/* deleting what is not there changes nothing, index included */
	assert_int_equal(store_delete(t->s, STORE_NODE, &key, &idx, &err), -ENOENT);
	assert_int_equal(store_index(t->s), 2);
}

static void test_every_kind(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	json_t *got;
	struct {
		enum store_kind kind;
		const char *json;
		struct store_key key;
	} cases[] = {
		{ STORE_NAMESPACE, "{\"name\": \"prod\"}", { NULL, "prod", 0 } },
		{ STORE_NODE, "{\"id\": \"n1\"}", { NULL, "n1", 0 } },
		{ STORE_JOB, "{\"namespace\": \"prod\", \"id\": \"j\"}", { "prod", "j", 0 } },
		{ STORE_JOB_VERSION, "{\"namespace\": \"prod\", \"id\": \"j\", \"version\": 3}",
		  { "prod", "j", 3 } },
		{ STORE_EVAL, "{\"id\": \"e1\", \"namespace\": \"prod\", \"job_id\": \"j\"}",
		  { NULL, "e1", 0 } },
		{ STORE_ALLOC,
		  "{\"id\": \"a1\", \"namespace\": \"prod\", \"job_id\": \"j\", \"node_id\": \"n1\"}",
		  { NULL, "a1", 0 } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_ok(t->s, cases[i].kind, json_loads(cases[i].json, 0, NULL));
		assert_int_equal(store_get(t->s, cases[i].kind, &cases[i].key, &got, &err), 0);
		assert_int_equal(json_integer_value(json_object_get(got, "modify_index")), i + 1);
		json_decref(got);
	}
	/* the same job id in another version, namespace: other records */
	struct store_key other = { "prod", "j", 4 };
	assert_int_equal(store_get(t->s, STORE_JOB_VERSION, &other, &got, &err), -ENOENT);
	other.ns = "dev";
	other.version = 0;
	assert_int_equal(store_get(t->s, STORE_JOB, &other, &got, &err), -ENOENT);
}

static void test_bad_objects_change_nothing(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	const char *bad[] = {
		"{\"namespace\": \"default\"}",                       /* no id */
		"{\"namespace\": \"default\", \"id\": 7}",            /* id not a string */
		"{\"namespace\": \"default\", \"id\": \"\"}",         /* empty id */
		"{\"namespace\": \"default\", \"id\": \"a\\nb\"}",    /* control character */
		"{\"namespace\": \"default\", \"id\": \"a\\u0000b\"}", /* NUL inside */
		"{\"id\": \"web\"}",                                  /* job without namespace */
		"[1, 2]",                                             /* not an object */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *o = json_loads(bad[i], JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
		assert_non_null(o);
		err.msg[0] = '\0';
		assert_int_equal(store_put(t->s, STORE_JOB, o, NULL, &err), -EINVAL);
		assert_true(err.msg[0] != '\0');
		json_decref(o);
	}
	char longid[STORE_MAX_KEY + 2];
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	json_t *o = json_pack("{s:s, s:s}", "namespace", "default", "id", longid);
	assert_int_equal(store_put(t->s, STORE_JOB, o, NULL, &err), -EINVAL);
	json_decref(o);
	o = json_pack("{s:s, s:s, s:i}", "namespace", "d", "id", "j", "version", -1);
	assert_int_equal(store_put(t->s, STORE_JOB_VERSION, o, NULL, &err), -EINVAL);
	json_decref(o);
	o = json_pack("{s:s, s:s, s:s}", "id", "a", "namespace", "d", "job_id", "j");
	assert_int_equal(store_put(t->s, STORE_ALLOC, o, NULL, &err), -EINVAL); /* no node */
	json_decref(o);
	assert_int_equal(store_index(t->s), 0);
	json_t *all;
	assert_int_equal(store_list(t->s, STORE_JOB, NULL, &all, &err), 0);
	assert_int_equal(json_array_size(all), 0);
	json_decref(all);
}

static json_t *alloc(const char *id, const char *ns, const char *job, const char *node)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "id", id, "namespace", ns, "job_id", job,
			 "node_id", node);
}

static void assert_ids(json_t *arr, const char *want)
{
	struct strbuf_like {
		char buf[256];
		size_t len;
	} got = { "", 0 };
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) {
		got.len += (size_t)snprintf(got.buf + got.len, sizeof(got.buf) - got.len, "%s%s",
					    i ? "," : "",
					    json_string_value(json_object_get(v, "id")));
	}
	assert_string_equal(got.buf, want);
}

static void test_list_filters(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_filter f = { 0 };
	json_t *arr;

	put_ok(t->s, STORE_ALLOC, alloc("a3", "prod", "web", "n1"));
	put_ok(t->s, STORE_ALLOC, alloc("a1", "prod", "web", "n2"));
	put_ok(t->s, STORE_ALLOC, alloc("a2", "prod", "db", "n1"));
	put_ok(t->s, STORE_ALLOC, alloc("a4", "dev", "web", "n1"));

	assert_int_equal(store_list(t->s, STORE_ALLOC, NULL, &arr, &err), 0);
	assert_ids(arr, "a1,a2,a3,a4");
	json_decref(arr);
	f.node_id = "n1";
	assert_int_equal(store_list(t->s, STORE_ALLOC, &f, &arr, &err), 0);
	assert_ids(arr, "a2,a3,a4");
	json_decref(arr);
	f.node_id = NULL;
	f.ns = "prod";
	f.job_id = "web";
	assert_int_equal(store_list(t->s, STORE_ALLOC, &f, &arr, &err), 0);
	assert_ids(arr, "a1,a3");
	json_decref(arr);
	f.node_id = "n1";
	assert_int_equal(store_list(t->s, STORE_ALLOC, &f, &arr, &err), 0);
	assert_ids(arr, "a3");
	json_decref(arr);
	f.node_id = "nowhere";
	assert_int_equal(store_list(t->s, STORE_ALLOC, &f, &arr, &err), 0);
	assert_ids(arr, "");
	json_decref(arr);

	/* filters a kind does not have are refused */
	struct store_filter bynode = { NULL, NULL, "n1" };
	assert_int_equal(store_list(t->s, STORE_JOB, &bynode, &arr, &err), -EINVAL);
	struct store_filter byns = { "prod", NULL, NULL };
	assert_int_equal(store_list(t->s, STORE_NODE, &byns, &arr, &err), -EINVAL);
}

static void test_job_versions_by_job(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_filter f = { "prod", "web", NULL };
	json_t *arr;

	for (int v = 2; v >= 0; v--)
		put_ok(t->s, STORE_JOB_VERSION,
		       json_pack("{s:s, s:s, s:i}", "namespace", "prod", "id", "web", "version", v));
	put_ok(t->s, STORE_JOB_VERSION,
	       json_pack("{s:s, s:s, s:i}", "namespace", "prod", "id", "db", "version", 0));
	assert_int_equal(store_list(t->s, STORE_JOB_VERSION, &f, &arr, &err), 0);
	assert_int_equal(json_array_size(arr), 3);
	for (int v = 0; v < 3; v++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, v),
								    "version")), v);
	json_decref(arr);
	f.ns = NULL;
	assert_int_equal(store_list(t->s, STORE_JOB_VERSION, &f, &arr, &err), -EINVAL);
}

static void test_group_indexes(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	uint64_t v;

	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));       /* 1 */
	put_ok(t->s, STORE_ALLOC, alloc("a1", "prod", "web", "n1"));    /* 2 */
	put_ok(t->s, STORE_ALLOC, alloc("a2", "prod", "db", "n2"));     /* 3 */
	assert_int_equal(store_kind_index(t->s, STORE_NODE, &v, &err), 0);
	assert_int_equal(v, 1);
	assert_int_equal(store_kind_index(t->s, STORE_ALLOC, &v, &err), 0);
	assert_int_equal(v, 3);
	assert_int_equal(store_kind_index(t->s, STORE_JOB, &v, &err), 0);
	assert_int_equal(v, 0);
	assert_int_equal(store_node_allocs_index(t->s, "n1", &v, &err), 0);
	assert_int_equal(v, 2);
	assert_int_equal(store_job_allocs_index(t->s, "prod", "db", &v, &err), 0);
	assert_int_equal(v, 3);
	/* moving a1 from n1 to n2 changes both nodes' sets */
	put_ok(t->s, STORE_ALLOC, alloc("a1", "prod", "web", "n2"));    /* 4 */
	assert_int_equal(store_node_allocs_index(t->s, "n1", &v, &err), 0);
	assert_int_equal(v, 4);
	assert_int_equal(store_node_allocs_index(t->s, "n2", &v, &err), 0);
	assert_int_equal(v, 4);
	/* deleting a2 changes n2's set and db's */
	struct store_key k = { NULL, "a2", 0 };
	assert_int_equal(store_delete(t->s, STORE_ALLOC, &k, NULL, &err), 0); /* 5 */
	assert_int_equal(store_node_allocs_index(t->s, "n2", &v, &err), 0);
	assert_int_equal(v, 5);
	assert_int_equal(store_job_allocs_index(t->s, "prod", "db", &v, &err), 0);
	assert_int_equal(v, 5);
	assert_int_equal(store_node_allocs_index(t->s, "n1", &v, &err), 0);
	assert_int_equal(v, 4);
	assert_int_equal(store_node_allocs_index(t->s, "never", &v, &err), 0);
	assert_int_equal(v, 0);
}

static void test_index_monotonic(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	uint64_t last = 0, idx;
	char id[32];

	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof(id), "n%d", i % 7);
		json_t *n = json_pack("{s:s, s:i}", "id", id, "i", i);
		if (i % 5 == 4) {
			struct store_key k = { NULL, id, 0 };
			int rc = store_delete(t->s, STORE_NODE, &k, &idx, &err);
			if (rc == -ENOENT) { /* a failed change leaves the index alone */
				assert_int_equal(store_index(t->s), last);
				json_decref(n);
				continue;
			}
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(store_put(t->s, STORE_NODE, n, &idx, &err), 0);
		}
		json_decref(n);
		assert_int_equal(idx, last + 1);
		assert_int_equal(store_index(t->s), idx);
		last = idx;
	}
}

struct count_check {
	const char *node;
	size_t max_allocs; /* capacity: refuse a plan that exceeds it */
	int calls;
};

/* A plan applier's re-check: count the node's allocations inside the
 * transaction, as they would be after the batch's writes are... not yet
 * made: so count current plus planned. */
static int capacity_check(struct store *s, void *arg, struct herd_err *err)
{
	struct count_check *c = arg;
	struct store_filter f = { NULL, NULL, c->node };
	json_t *arr;
	int rc = store_list(s, STORE_ALLOC, &f, &arr, err);
	c->calls++;
	if (rc)
		return rc;
	size_t have = json_array_size(arr);
	json_decref(arr);
	if (have + 2 > c->max_allocs)
		return herd_errf(err, -ESTALE, "node %s is full", c->node);
	return 0;
}

static void test_batch_atomic(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_batch b = STORE_BATCH_INIT;
	json_t *arr, *got;
	uint64_t seen, idx;

	put_ok(t->s, STORE_ALLOC, alloc("a0", "prod", "web", "n1")); /* 1 */
	assert_int_equal(store_node_allocs_index(t->s, "n1", &seen, &err), 0);

	/* a plan of two allocations plus an eval update: one index */
	json_t *a1 = alloc("a1", "prod", "web", "n1"), *a2 = alloc("a2", "prod", "web", "n1");
	json_t *ev = json_pack("{s:s, s:s, s:s, s:s}", "id", "e1", "namespace", "prod", "job_id",
			       "web", "status", "complete");
	store_batch_put(&b, STORE_ALLOC, a1);
	store_batch_put(&b, STORE_ALLOC, a2);
	store_batch_put(&b, STORE_EVAL, ev);
	json_decref(a1);
	json_decref(a2);
	json_decref(ev);
	store_batch_require_node_allocs(&b, "n1", seen);
	struct count_check cc = { "n1", 3, 0 };
	store_batch_check(&b, capacity_check, &cc);
	assert_int_equal(store_commit(t->s, &b, &idx, &err), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(cc.calls, 1);
	struct store_key k = { NULL, "e1", 0 };
	assert_int_equal(store_get(t->s, STORE_EVAL, &k, &got, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(got, "modify_index")), 2);
	json_decref(got);
	struct store_filter f = { NULL, NULL, "n1" };
	assert_int_equal(store_list(t->s, STORE_ALLOC, &f, &arr, &err), 0);
	assert_int_equal(json_array_size(arr), 3);
	json_t *v;
	size_t i;
	json_array_foreach(arr, i, v) {
		uint64_t mi = json_integer_value(json_object_get(v, "modify_index"));
		assert_true(mi == 1 || mi == 2);
	}
	json_decref(arr);
	store_batch_release(&b);
	store_batch_release(NULL);
}

static void test_batch_stale_precondition_writes_nothing(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_batch b = STORE_BATCH_INIT;
	uint64_t seen, idx = 12345;
	json_t *arr;

	assert_int_equal(store_node_allocs_index(t->s, "n1", &seen, &err), 0); /* 0 */
	/* another scheduler places on n1 after our snapshot */
	put_ok(t->s, STORE_ALLOC, alloc("other", "prod", "db", "n1"));         /* 1 */

	json_t *a1 = alloc("a1", "prod", "web", "n1");
	json_t *n2 = alloc("a2", "prod", "web", "n2");
	store_batch_put(&b, STORE_ALLOC, n2); /* a write that would succeed alone */
	store_batch_put(&b, STORE_ALLOC, a1);
	json_decref(a1);
	json_decref(n2);
	store_batch_require_node_allocs(&b, "n2", 0);
	store_batch_require_node_allocs(&b, "n1", seen);
	assert_int_equal(store_commit(t->s, &b, &idx, &err), -ESTALE);
	assert_int_equal(idx, 12345); /* output untouched on failure */
	assert_non_null(strstr(err.msg, "n1"));
	assert_int_equal(store_index(t->s), 1);
	assert_int_equal(store_list(t->s, STORE_ALLOC, NULL, &arr, &err), 0);
	assert_ids(arr, "other");
	json_decref(arr);
	uint64_t v;
	assert_int_equal(store_node_allocs_index(t->s, "n2", &v, &err), 0);
	assert_int_equal(v, 0);
	/* a later put commits at the next index: the failed batch used none */
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n2"));
	assert_int_equal(store_index(t->s), 2);
	store_batch_release(&b);
}

static void test_batch_check_failure_and_bad_row_roll_back(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_batch b = STORE_BATCH_INIT;
	json_t *arr;

	put_ok(t->s, STORE_ALLOC, alloc("a0", "prod", "web", "n1")); /* 1 */
	put_ok(t->s, STORE_ALLOC, alloc("a9", "prod", "web", "n1")); /* 2 */
	json_t *a1 = alloc("a1", "prod", "web", "n1");
	store_batch_put(&b, STORE_ALLOC, a1);
	json_decref(a1);
	struct count_check cc = { "n1", 3, 0 }; /* 2 there + 2 planned > 3 */
	store_batch_check(&b, capacity_check, &cc);
	assert_int_equal(store_commit(t->s, &b, NULL, &err), -ESTALE);
	assert_string_equal(err.msg, "node n1 is full");
	store_batch_release(&b);

	/* a delete of a missing record, after a valid put, fails the batch */
	json_t *n = json_pack("{s:s}", "id", "n5");
	struct store_key missing = { NULL, "ghost", 0 };
	store_batch_put(&b, STORE_NODE, n);
	store_batch_delete(&b, STORE_NODE, &missing);
	json_decref(n);
	assert_int_equal(store_commit(t->s, &b, NULL, &err), -ENOENT);
	store_batch_release(&b);

	/* check-and-set on a record */
	struct store_key a0 = { NULL, "a0", 0 };
	a1 = alloc("a0", "prod", "web", "n2");
	store_batch_put(&b, STORE_ALLOC, a1);
	json_decref(a1);
	store_batch_require_index(&b, STORE_ALLOC, &a0, 2); /* a0 is at 1 */
	assert_int_equal(store_commit(t->s, &b, NULL, &err), -ESTALE);
	store_batch_release(&b);

	assert_int_equal(store_index(t->s), 2);
	assert_int_equal(store_list(t->s, STORE_ALLOC, NULL, &arr, &err), 0);
	assert_ids(arr, "a0,a9");
	json_decref(arr);
	assert_int_equal(store_list(t->s, STORE_NODE, NULL, &arr, &err), 0);
	assert_int_equal(json_array_size(arr), 0);
	json_decref(arr);

	/* the same check-and-set with the right index passes; 0 means absent */
	a1 = alloc("a0", "prod", "web", "n2");
	store_batch_put(&b, STORE_ALLOC, a1);
	json_decref(a1);
	store_batch_require_index(&b, STORE_ALLOC, &a0, 1);
	struct store_key fresh = { NULL, "fresh", 0 };
	store_batch_require_index(&b, STORE_NODE, &fresh, 0);
	assert_int_equal(store_commit(t->s, &b, NULL, &err), 0);
	store_batch_release(&b);
	/* an empty batch is refused */
	assert_int_equal(store_commit(t->s, &b, NULL, &err), -EINVAL);
}

static int write_in_check(struct store *s, void *arg, struct herd_err *err)
{
	return store_put(s, STORE_NODE, arg, NULL, err);
}

static void test_write_inside_check_refused(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	json_t *n = json_pack("{s:s}", "id", "n1");
	assert_int_equal(store_view(t->s, write_in_check, n, &err), -EDEADLK);
	assert_int_equal(store_index(t->s), 0);
	json_decref(n);
}

static void test_reopen_keeps_data(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_key k = { "default", "web", 0 };
	json_t *got;
	uint64_t v;

	put_ok(t->s, STORE_JOB, json_pack("{s:s, s:s, s:s}", "namespace", "default", "id", "web",
					  "note", "caf\xc3\xa9 \xe2\x9c\x93"));
	put_ok(t->s, STORE_ALLOC, alloc("a1", "default", "web", "n1"));
	tmpstore_reopen(t);
	assert_int_equal(store_index(t->s), 2);
	assert_int_equal(index_watch_current(store_watch(t->s)), 2);
	assert_int_equal(store_get(t->s, STORE_JOB, &k, &got, &err), 0);
	assert_string_equal(json_string_value(json_object_get(got, "note")),
			    "caf\xc3\xa9 \xe2\x9c\x93");
	json_decref(got);
	assert_int_equal(store_node_allocs_index(t->s, "n1", &v, &err), 0);
	assert_int_equal(v, 2);
	uint64_t idx;
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	idx = store_index(t->s);
	assert_int_equal(idx, 3);
}

static void test_newer_schema_refused(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store *s2 = NULL;
	sqlite3 *db;

	store_close(t->s);
	t->s = NULL;
	assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE meta SET value = 99 WHERE key='schema_version'",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open_sqlite(t->path, &s2, &err), -EPROTONOSUPPORT);
	assert_null(s2);
	assert_non_null(strstr(err.msg, "schema version 99"));
}

/* Reads meta's schema_version straight from the file. */
static int file_schema_version(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int v;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'",
					    -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* Turns the file back into a version 3 one (no alloc_modify_index). */
#define SCHEMA_BACK_TO_V3 \
	"DROP INDEX allocations_by_node_server_change;" \
	"ALTER TABLE allocations DROP COLUMN alloc_modify_index;"

/* A version 2 file (no usage ledger) is migrated in place to the current
 * version: its records stay and usage records can be written. */
static void test_v2_migrates(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store *s2 = NULL;
	sqlite3 *db;
	json_t *rec = json_pack("{s:s, s:s}", "name", "team-a", "x", "y"), *got = NULL;
	json_t *u = json_pack("{s:s, s:s, s:I, s:f, s:I}", "namespace", "team-a", "job_id", "train",
			      "version", (json_int_t)3600, "gpu_seconds", 1.5, "allocations", 1);
	struct store_key nk = { NULL, "team-a", 0 }, uk = { "team-a", "train", 3600 };

	assert_int_equal(store_put(t->s, STORE_NAMESPACE, rec, NULL, &err), 0);
	store_close(t->s);
	t->s = NULL;
	assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, SCHEMA_BACK_TO_V3 "DROP TABLE usage_ledger;"
				      "UPDATE meta SET value = 2 WHERE key='schema_version'",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open_sqlite(t->path, &s2, &err), 0);
	assert_int_equal(store_get(s2, STORE_NAMESPACE, &nk, &got, &err), 0);
	json_decref(got);
	assert_int_equal(store_put(s2, STORE_USAGE, u, NULL, &err), 0);
	assert_int_equal(store_get(s2, STORE_USAGE, &uk, &got, &err), 0);
	assert_true(json_real_value(json_object_get(got, "gpu_seconds")) == 1.5);
	json_decref(got);
	store_close(s2);
	assert_int_equal(file_schema_version(t->path), STORE_SCHEMA_VERSION);
	json_decref(rec);
	json_decref(u);
}

/* The ids in a list of allocations, comma-separated, in list order. */
static const char *alloc_ids(json_t *arr, char *buf, size_t len)
{
	size_t i, used = 0;
	json_t *v;
	buf[0] = '\0';
	json_array_foreach(arr, i, v)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
					 json_string_value(json_object_get(v, "id")));
	return buf;
}

static const char *server_changed(struct store *s, const char *node, uint64_t after, char *buf,
				  size_t len)
{
	struct store_filter f = { NULL, NULL, node };
	struct herd_err err = { 0 };
	json_t *arr = NULL;
	assert_int_equal(store_list_allocs_server_changed(s, &f, after, &arr, &err), 0);
	alloc_ids(arr, buf, len);
	json_decref(arr);
	return buf;
}

/* A report (store_batch_put_report) moves modify_index and the group
 * indexes but not alloc_modify_index; any other put moves both. */
static void test_alloc_server_changes(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_batch b = STORE_BATCH_INIT;
	struct store_filter f = { NULL, NULL, "n1" };
	json_t *a1 = alloc("a1", "prod", "web", "n1"), *a2 = alloc("a2", "prod", "web", "n1");
	json_t *arr = NULL;
	uint64_t placed, reported, stopped, gi = 0;
	char buf[128];

	/* placed: a server change */
	store_batch_put(&b, STORE_ALLOC, a1);
	store_batch_put(&b, STORE_ALLOC, a2);
	assert_int_equal(store_commit(t->s, &b, &placed, &err), 0);
	store_batch_release(&b);
	assert_string_equal(server_changed(t->s, "n1", 0, buf, sizeof(buf)), "a1,a2");
	assert_string_equal(server_changed(t->s, "n1", placed - 1, buf, sizeof(buf)), "a1,a2");
	assert_string_equal(server_changed(t->s, "n1", placed, buf, sizeof(buf)), "");

	/* a1 reported running by its agent: not a server change */
	json_object_set_new(a1, "client_status", json_string("running"));
	store_batch_put_report(&b, STORE_ALLOC, a1);
	assert_int_equal(store_commit(t->s, &b, &reported, &err), 0);
	store_batch_release(&b);
	assert_true(reported > placed);
	assert_string_equal(server_changed(t->s, "n1", placed, buf, sizeof(buf)), "");
	/* ... but a change all the same: modify_index, the node's group */
	assert_int_equal(store_list_changed(t->s, STORE_ALLOC, &f, placed, &arr, &err), 0);
	assert_string_equal(alloc_ids(arr, buf, sizeof(buf)), "a1");
	json_decref(arr);
	assert_int_equal(store_node_allocs_index(t->s, "n1", &gi, &err), 0);
	assert_int_equal(gi, reported);
	/* and a lister from before the placement still gets it */
	assert_string_equal(server_changed(t->s, "n1", placed - 1, buf, sizeof(buf)), "a1,a2");

	/* stopped by the server: a server change again */
	json_object_set_new(a1, "desired_status", json_string("stop"));
	store_batch_put(&b, STORE_ALLOC, a1);
	assert_int_equal(store_commit(t->s, &b, &stopped, &err), 0);
	store_batch_release(&b);
	assert_string_equal(server_changed(t->s, "n1", reported, buf, sizeof(buf)), "a1");
	assert_string_equal(server_changed(t->s, "n1", stopped, buf, sizeof(buf)), "");

	/* a report of an allocation the store did not have counts as new */
	json_t *a3 = alloc("a3", "prod", "web", "n1");
	store_batch_put_report(&b, STORE_ALLOC, a3);
	assert_int_equal(store_commit(t->s, &b, NULL, &err), 0);
	store_batch_release(&b);
	assert_string_equal(server_changed(t->s, "n1", stopped, buf, sizeof(buf)), "a3");
	/* other nodes are not listed */
	assert_string_equal(server_changed(t->s, "n2", 0, buf, sizeof(buf)), "");
	json_decref(a1);
	json_decref(a2);
	json_decref(a3);
}

/* A version 3 file's allocations get alloc_modify_index = modify_index:
 * an agent that listed since an older index misses none of them. */
static void test_v3_migrates_alloc_modify_index(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store *s2 = NULL;
	json_t *a1 = alloc("a1", "prod", "web", "n1");
	uint64_t i1 = 0, i2 = 0;
	sqlite3 *db;
	char buf[64];

	assert_int_equal(store_put(t->s, STORE_ALLOC, a1, &i1, &err), 0);
	json_object_set_new(a1, "client_status", json_string("running"));
	assert_int_equal(store_put(t->s, STORE_ALLOC, a1, &i2, &err), 0);
	store_close(t->s);
	t->s = NULL;
	assert_int_equal(sqlite3_open(t->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, SCHEMA_BACK_TO_V3
				      "UPDATE meta SET value = 3 WHERE key='schema_version'",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open_sqlite(t->path, &s2, &err), 0);
	assert_string_equal(server_changed(s2, "n1", i1, buf, sizeof(buf)), "a1");
	assert_string_equal(server_changed(s2, "n1", i2, buf, sizeof(buf)), "");
	store_close(s2);
	assert_int_equal(file_schema_version(t->path), STORE_SCHEMA_VERSION);
	json_decref(a1);
}

static void test_foreign_sqlite_file_refused(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store *s2 = NULL;
	char path[4200];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s.other", t->path);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open_sqlite(path, &s2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a herd store"));
	unlink(path);
	/* a directory that does not exist */
	assert_int_equal(store_open_sqlite("/nonexistent-dir/x/state.db", &s2, &err) < 0, 1);
	assert_null(s2);
}

static void test_fds_close_on_exec(void **state)
{
	struct tmpstore *t = *state;
	DIR *d;
	struct dirent *e;
	int checked = 0;

	/* make sure the WAL and shm files are open too */
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	d = opendir("/proc/self/fd");
	assert_non_null(d);
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (e->d_name[0] == '.' || *end || fd <= 2 || fd == dirfd(d))
			continue;
		char link[64], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		/* the store's: its files, or on PostgreSQL its sockets (libpq's
		 * are not close-on-exec unless the store makes them so) */
		if (!strstr(target, t->dir) && !(t->pg && !strncmp(target, "socket:", 7)))
			continue; /* not the store's (cmocka, the test harness) */
		int flags = fcntl((int)fd, F_GETFD);
		if (!(flags & FD_CLOEXEC))
			fail_msg("fd %ld (%s) lacks FD_CLOEXEC", fd, target);
		checked++;
	}
	closedir(d);
	/* database, -wal, -shm; PostgreSQL: the commit connection and a
	 * reader */
	assert_true(checked >= (t->pg ? 2 : 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tmpstore_setup, tmpstore_teardown)
		T(test_put_get_roundtrip),
		T(test_get_missing_and_delete),
		T(test_every_kind),
		T(test_bad_objects_change_nothing),
		T(test_list_filters),
		T(test_job_versions_by_job),
		T(test_group_indexes),
		T(test_index_monotonic),
		T(test_batch_atomic),
		T(test_batch_stale_precondition_writes_nothing),
		T(test_batch_check_failure_and_bad_row_roll_back),
		T(test_write_inside_check_refused),
		T(test_reopen_keeps_data),
		T(test_alloc_server_changes),
		T(test_fds_close_on_exec),
		/* SQLite files only (test_store_postgres.c has PostgreSQL's
		 * schema check): not run on PostgreSQL */
		T(test_newer_schema_refused),
		T(test_v2_migrates),
		T(test_v3_migrates_alloc_modify_index),
		T(test_foreign_sqlite_file_refused),
	};
	const char *pg = getenv("HERD_TEST_PG");
	size_t n = sizeof(tests) / sizeof(tests[0]);
	return _cmocka_run_group_tests("tests", tests, pg && *pg ? n - 4 : n, NULL, NULL);
}
