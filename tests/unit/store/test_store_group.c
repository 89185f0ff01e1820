/* Unit tests of group commit (sqlite.c): changes from many threads share
 * transactions, yet each keeps its own conditions, its own error and its
 * own index; and of group indexes: each change writes each group it
 * touches once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "test_store_util.h"

#define THREADS 8
#define PER_THREAD 60

struct writer {
	struct store *s;
	int t;
	uint64_t idx[PER_THREAD];
	int rc[PER_THREAD];
};

/* Every fourth change carries a condition that cannot hold (a record that
 * does not exist must be at index 7); the others are plain puts, and every
 * seventh also deletes a record that does not exist (-ENOENT). */
static void *write_many(void *arg)
{
	struct writer *w = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		struct store_batch b = STORE_BATCH_INIT;
		struct herd_err err = { 0 };
		char id[64];
		snprintf(id, sizeof(id), "n-%d-%d", w->t, i);
		json_t *o = json_pack("{s:s, s:i}", "id", id, "i", i);
		store_batch_put(&b, STORE_NODE, o);
		json_decref(o);
		if (i % 4 == 3) {
			struct store_key k = { NULL, "never-there", 0 };
			store_batch_require_index(&b, STORE_NODE, &k, 7);
		} else if (i % 7 == 6) {
			struct store_key k = { NULL, "absent", 0 };
			store_batch_delete(&b, STORE_NODE, &k);
		}
		w->idx[i] = 0;
		w->rc[i] = store_commit(w->s, &b, &w->idx[i], &err);
		if (w->rc[i] == -ESTALE && !strstr(err.msg, "never-there"))
			w->rc[i] = -999; /* the message must be this change's own */
		store_batch_release(&b);
	}
	return NULL;
}

static int expected_rc(int i)
{
	if (i % 4 == 3)
		return -ESTALE;
	if (i % 7 == 6)
		return -ENOENT;
	return 0;
}

static void test_group_commit_isolates_changes(void **state)
{
	struct tmpstore *t = *state;
	struct writer w[THREADS];
	pthread_t th[THREADS];
	uint8_t *seen;
	uint64_t ok = 0, top = 0;

	for (int i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].s = t->s;
		w[i].t = i;
		assert_int_equal(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	seen = calloc(THREADS * PER_THREAD + 1, 1);
	for (int i = 0; i < THREADS; i++) {
		for (int j = 0; j < PER_THREAD; j++) {
			char id[64];
			struct store_key k = { NULL, id, 0 };
			struct herd_err err = { 0 };
			json_t *got = NULL;
			int grc;
			assert_int_equal(w[i].rc[j], expected_rc(j));
			snprintf(id, sizeof(id), "n-%d-%d", i, j);
			grc = store_get(t->s, STORE_NODE, &k, &got, &err);
			if (w[i].rc[j] == 0) {
				/* acknowledged: present, at the index it was given,
				 * an index no other change got */
				assert_int_equal(grc, 0);
				assert_int_equal(json_integer_value(json_object_get(got, "modify_index")),
						 w[i].idx[j]);
				assert_true(w[i].idx[j] >= 1 && w[i].idx[j] <= THREADS * PER_THREAD);
				assert_int_equal(seen[w[i].idx[j]], 0);
				seen[w[i].idx[j]] = 1;
				if (w[i].idx[j] > top)
					top = w[i].idx[j];
				ok++;
				json_decref(got);
			} else {
				/* failed: nothing of it written */
				assert_int_equal(grc, -ENOENT);
			}
		}
	}
	/* failed changes used no index: the successes count 1..ok */
	assert_int_equal(top, ok);
	assert_int_equal(store_index(t->s), ok);
	free(seen);
}

/* A check that writes would wait for its own group: refused. */
static int writing_check(struct store *s, void *arg, struct herd_err *err)
{
	json_t *o = json_pack("{s:s}", "id", "inner");
	int rc = store_put(s, STORE_NODE, o, NULL, err);
	json_decref(o);
	*(int *)arg = rc;
	return 0;
}

static void test_write_inside_check_refused(void **state)
{
	struct tmpstore *t = *state;
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0 };
	int inner = 0;
	json_t *o = json_pack("{s:s}", "id", "outer");
	store_batch_put(&b, STORE_NODE, o);
	json_decref(o);
	store_batch_check(&b, writing_check, &inner);
	assert_int_equal(store_commit(t->s, &b, NULL, &err), 0);
	assert_int_equal(inner, -EDEADLK);
	store_batch_release(&b);
	assert_int_equal(store_index(t->s), 1);
}

/* A change bumps each group it touches once, however many of its rows
 * touch it: a plan of 24 allocations of one job on 12 nodes writes the
 * allocation kind's group, the job's and each node's, 14 rows; moving 12
 * of them to other nodes and deleting 6 more, in one change, writes the
 * same 14 again.  Every group reads the change's
 * index afterwards, and untouched ones keep theirs. */
static void test_group_bumped_once_per_change(void **state)
{
	struct tmpstore *t = *state;
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0 };
	uint64_t idx1 = 0, idx2 = 0, before, v;
	char id[32], node[32];

	put_ok(t->s, STORE_ALLOC, json_pack("{s:s, s:s, s:s, s:s}", "id", "other", "namespace",
					    "prod", "job_id", "db", "node_id", "n-far"));
	before = store_group_writes(t->s);
	for (int i = 0; i < 24; i++) {
		snprintf(id, sizeof(id), "a%02d", i);
		snprintf(node, sizeof(node), "n%02d", i % 12);
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", id, "namespace", "prod",
				      "job_id", "train", "node_id", node);
		store_batch_put(&b, STORE_ALLOC, o);
		json_decref(o);
	}
	assert_int_equal(store_commit(t->s, &b, &idx1, &err), 0);
	store_batch_release(&b);
	assert_int_equal(store_group_writes(t->s) - before, 1 + 1 + 12);
	assert_int_equal(store_job_allocs_index(t->s, "prod", "train", &v, &err), 0);
	assert_int_equal(v, idx1);
	for (int i = 0; i < 12; i++) {
		snprintf(node, sizeof(node), "n%02d", i);
		assert_int_equal(store_node_allocs_index(t->s, node, &v, &err), 0);
		assert_int_equal(v, idx1);
	}

	/* a0..a11 move one node on (from n00..n11 to n01..n11, n00);
	 * a12..a17 (on n00..n05) go away */
	before = store_group_writes(t->s);
	store_batch_init(&b);
	for (int i = 0; i < 12; i++) {
		snprintf(id, sizeof(id), "a%02d", i);
		snprintf(node, sizeof(node), "n%02d", (i + 1) % 12);
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", id, "namespace", "prod",
				      "job_id", "train", "node_id", node);
		store_batch_put(&b, STORE_ALLOC, o);
		json_decref(o);
	}
	for (int i = 12; i < 18; i++) {
		snprintf(id, sizeof(id), "a%02d", i);
		struct store_key k = { NULL, id, 0 };
		store_batch_delete(&b, STORE_ALLOC, &k);
	}
	assert_int_equal(store_commit(t->s, &b, &idx2, &err), 0);
	store_batch_release(&b);
	assert_true(idx2 > idx1);
	assert_int_equal(store_group_writes(t->s) - before, 1 + 1 + 12);
	assert_int_equal(store_job_allocs_index(t->s, "prod", "train", &v, &err), 0);
	assert_int_equal(v, idx2);
	for (int i = 0; i < 12; i++) {
		snprintf(node, sizeof(node), "n%02d", i);
		assert_int_equal(store_node_allocs_index(t->s, node, &v, &err), 0);
		assert_int_equal(v, idx2);
	}
	/* untouched groups keep their index */
	assert_int_equal(store_job_allocs_index(t->s, "prod", "db", &v, &err), 0);
	assert_true(v > 0 && v < idx1);
	assert_int_equal(store_node_allocs_index(t->s, "n-far", &v, &err), 0);
	assert_true(v > 0 && v < idx1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_commit_isolates_changes, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_write_inside_check_refused, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_group_bumped_once_per_change, tmpstore_setup,
						tmpstore_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
