/* Unit tests of the store's cache of decoded records (record_cache.c and
 * the shared reads of store.c): a record read again at the same
 * modify_index is the cached object, one changed since is read anew, the
 * bounds hold, deletes and rewrites drop entries, a view still reads its
 * own state, and readers beside writers always get the record that goes
 * with the modify_index they see. */
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

static json_t *job(const char *id, int v)
{
	return json_pack("{s:s, s:s, s:i, s:{s:[i, i]}}", "namespace", "default", "id", id, "v", v,
			 "spec", "list", v, v + 1);
}

static json_t *get_shared_ok(struct store *s, enum store_kind kind, const char *ns,
			     const char *id)
{
	struct store_key k = { ns, id, 0 };
	struct herd_err err = { 0 };
	json_t *o = NULL;
	if (store_get_shared(s, kind, &k, &o, &err))
		fail_msg("get_shared %s: %s", id, err.msg);
	return o;
}

static struct store_cache_stats stats(struct store *s)
{
	struct store_cache_stats st;
	store_cache_stats(s, &st);
	return st;
}

static void test_hit_is_the_same_object(void **state)
{
	struct tmpstore *t = *state;
	json_t *a, *b;

	put_ok(t->s, STORE_JOB, job("j", 1));
	/* the commit cached what it wrote */
	assert_int_equal(stats(t->s).entries, 1);
	a = get_shared_ok(t->s, STORE_JOB, "default", "j");
	b = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_ptr_equal(a, b);
	assert_int_equal(stats(t->s).hits, 2);
	assert_int_equal(stats(t->s).misses, 0);
	assert_int_equal(json_integer_value(json_object_get(b, "v")), 1);
	assert_true(json_integer_value(json_object_get(b, "modify_index")) > 0);
	json_decref(a);
	json_decref(b);

	/* read into the cache by a shared read after a restart */
	tmpstore_reopen(t);
	assert_int_equal(stats(t->s).entries, 0);
	a = get_shared_ok(t->s, STORE_JOB, "default", "j");
	b = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_ptr_equal(a, b);
	assert_int_equal(stats(t->s).misses, 1);
	assert_int_equal(stats(t->s).hits, 1);
	json_decref(a);
	json_decref(b);
}

/* store_get's contract stands: the caller's own object, equal to the
 * cached one and free to change without touching it. */
static void test_plain_get_is_a_copy(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k = { "default", "j", 0 };
	json_t *shared, *own = NULL, *again;

	put_ok(t->s, STORE_JOB, job("j", 1));
	shared = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_int_equal(store_get(t->s, STORE_JOB, &k, &own, NULL), 0);
	assert_ptr_not_equal(own, shared);
	assert_true(json_equal(own, shared));
	assert_int_equal(stats(t->s).hits, 2);
	json_object_set_new(own, "v", json_integer(99));
	json_array_append_new(json_object_get(json_object_get(own, "spec"), "list"),
			      json_integer(7));
	again = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_ptr_equal(again, shared);
	assert_int_equal(json_integer_value(json_object_get(again, "v")), 1);
	assert_int_equal(json_array_size(json_object_get(json_object_get(again, "spec"), "list")), 2);
	json_decref(own);
	json_decref(shared);
	json_decref(again);
}

static void test_changed_record_is_read_anew(void **state)
{
	struct tmpstore *t = *state;
	json_t *a, *b, *c;

	put_ok(t->s, STORE_JOB, job("j", 1));
	a = get_shared_ok(t->s, STORE_JOB, "default", "j");
	put_ok(t->s, STORE_JOB, job("j", 2));
	/* the rewrite replaced the entry; the old object lives on for whoever
	 * holds it */
	assert_int_equal(stats(t->s).entries, 1);
	b = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_ptr_not_equal(a, b);
	assert_int_equal(json_integer_value(json_object_get(a, "v")), 1);
	assert_int_equal(json_integer_value(json_object_get(b, "v")), 2);
	assert_true(json_integer_value(json_object_get(b, "modify_index")) >
		    json_integer_value(json_object_get(a, "modify_index")));
	assert_int_equal(json_integer_value(json_object_get(b, "create_index")),
			 json_integer_value(json_object_get(a, "create_index")));
	/* an entry at another index is a miss: the row's text is decoded */
	store_cache_limit(t->s, 0, 0);
	store_cache_limit(t->s, STORE_CACHE_ENTRIES, STORE_CACHE_BYTES);
	c = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_ptr_not_equal(c, b);
	assert_true(json_equal(c, b));
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

/* Plain reads use the cache but do not fill it (a scan of a whole kind
 * must not push out what the hot paths read). */
static void test_plain_reads_do_not_fill(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k = { "default", "j", 0 };
	json_t *o = NULL, *list = NULL;

	put_ok(t->s, STORE_JOB, job("j", 1));
	put_ok(t->s, STORE_JOB, job("k", 1));
	tmpstore_reopen(t);
	assert_int_equal(store_get(t->s, STORE_JOB, &k, &o, NULL), 0);
	json_decref(o);
	assert_int_equal(store_list(t->s, STORE_JOB, NULL, &list, NULL), 0);
	assert_int_equal(json_array_size(list), 2);
	json_decref(list);
	assert_int_equal(stats(t->s).entries, 0);
	assert_int_equal(stats(t->s).misses, 3);
}

/* What a commit caches is what a read of its text decodes, keys in the
 * same order; a batch that writes a key twice leaves the last write. */
static void test_commit_caches_what_it_wrote(void **state)
{
	struct tmpstore *t = *state;
	struct store_batch b = STORE_BATCH_INIT;
	struct store_key k = { "default", "w", 0 };
	json_t *o, *cached, *fresh = NULL;
	uint64_t misses;
	char *x, *y;

	/* out of order, nested, every type, the store's own fields given */
	o = json_pack("{s:s, s:s, s:{s:[i, f, b, n, s], s:{s:s, s:i}}, s:f, s:s, s:i, s:i, s:I}",
		      "namespace", "default", "id", "w", "zeta", "b", 1, 2.5, 1, "s\"q\\\n\u00e9",
		      "a", "y", "x", "nested", 3, "alpha", 0.1, "Beta", "tab\there",
		      "create_index", 777, "modify_index", 888, "big", (json_int_t)1 << 60);
	put_ok(t->s, STORE_JOB, o);
	cached = get_shared_ok(t->s, STORE_JOB, "default", "w");
	assert_int_equal(stats(t->s).misses, 0);
	store_cache_limit(t->s, 0, 0);
	store_cache_limit(t->s, STORE_CACHE_ENTRIES, STORE_CACHE_BYTES);
	assert_int_equal(store_get(t->s, STORE_JOB, &k, &fresh, NULL), 0);
	x = json_dumps(cached, JSON_COMPACT);
	y = json_dumps(fresh, JSON_COMPACT);
	assert_string_equal(x, y);
	assert_true(json_integer_value(json_object_get(cached, "modify_index")) < 100);
	free(x);
	free(y);
	json_decref(cached);
	json_decref(fresh);

	store_batch_put(&b, STORE_JOB, o = job("twice", 1));
	json_decref(o);
	store_batch_put(&b, STORE_JOB, o = job("twice", 2));
	json_decref(o);
	assert_int_equal(store_commit(t->s, &b, NULL, NULL), 0);
	store_batch_release(&b);
	misses = stats(t->s).misses;
	cached = get_shared_ok(t->s, STORE_JOB, "default", "twice");
	assert_int_equal(json_integer_value(json_object_get(cached, "v")), 2);
	assert_int_equal(stats(t->s).misses, misses);
	json_decref(cached);
}

/* An owned put of a canonical object: the store keeps that very object
 * (its indexes added), and writes the text a plain put writes; one not in
 * order is copied as usual. */
static void test_owned_put(void **state)
{
	struct tmpstore *t = *state;
	struct store_batch b = STORE_BATCH_INIT;
	struct store_key k = { "default", "own", 0 }, vk = { "default", "own", 0 };
	json_t *o, *v, *cached, *fresh = NULL, *plain;
	char *x, *y;

	o = json_pack("{s:s, s:{s:[i, s], s:s}, s:s, s:i}", "id", "own", "m", "a", 1, "x", "b",
		      "y", "namespace", "default", "version", 0);
	store_batch_put_owned(&b, STORE_JOB, json_incref(o));
	store_batch_put_owned(&b, STORE_JOB_VERSION, json_incref(o));
	assert_int_equal(store_commit(t->s, &b, NULL, NULL), 0);
	store_batch_release(&b);
	cached = get_shared_ok(t->s, STORE_JOB, "default", "own");
	assert_ptr_equal(cached, o);
	assert_true(json_integer_value(json_object_get(o, "modify_index")) > 0);
	json_decref(cached);
	/* the version has its own top level (its own create_index) */
	assert_int_equal(store_get_shared(t->s, STORE_JOB_VERSION, &vk, &v, NULL), 0);
	assert_ptr_not_equal(v, o);
	assert_ptr_equal(json_object_get(v, "m"), json_object_get(o, "m"));
	json_decref(v);
	/* what is stored reads back the same, as the cache holds it */
	store_cache_limit(t->s, 0, 0);
	store_cache_limit(t->s, STORE_CACHE_ENTRIES, STORE_CACHE_BYTES);
	assert_int_equal(store_get(t->s, STORE_JOB, &k, &fresh, NULL), 0);
	x = json_dumps(o, JSON_COMPACT);
	y = json_dumps(fresh, JSON_COMPACT);
	assert_string_equal(x, y);
	free(x);
	free(y);
	json_decref(fresh);
	json_decref(o);

	/* out of order: a copy is cached, the text is a plain put's */
	o = json_pack("{s:s, s:s, s:{s:i, s:i}}", "namespace", "default", "id", "own",
		      "m", "z", 1, "a", 2);
	plain = json_deep_copy(o);
	store_batch_put_owned(&b, STORE_JOB, json_incref(o));
	assert_int_equal(store_commit(t->s, &b, NULL, NULL), 0);
	store_batch_release(&b);
	cached = get_shared_ok(t->s, STORE_JOB, "default", "own");
	assert_ptr_not_equal(cached, o);
	assert_null(json_object_get(o, "modify_index"));
	x = json_dumps(cached, JSON_COMPACT | JSON_SORT_KEYS);
	json_object_set_new(plain, "create_index", json_incref(json_object_get(cached, "create_index")));
	json_object_set_new(plain, "modify_index", json_incref(json_object_get(cached, "modify_index")));
	y = json_dumps(plain, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(x, y);
	free(x);
	free(y);
	json_decref(cached);
	json_decref(plain);
	json_decref(o);
}

/* A string with NUL is stored as \u0000, which the store's decoder
 * refuses: the commit does not cache an object a read could not make. */
static void test_undecodable_not_cached(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k = { "default", "nul", 0 };
	json_t *o = job("nul", 1), *got = NULL;

	json_object_set_new(o, "s", json_stringn("a\0b", 3));
	put_ok(t->s, STORE_JOB, o);
	assert_int_equal(stats(t->s).entries, 0);
	assert_int_equal(store_get_shared(t->s, STORE_JOB, &k, &got, NULL), -EIO);
}

static void test_list_shared(void **state)
{
	struct tmpstore *t = *state;
	struct store_filter f = { "default", NULL, NULL };
	json_t *l1 = NULL, *l2 = NULL, *l3 = NULL, *j;
	uint64_t idx = 0;

	put_ok(t->s, STORE_JOB, job("a", 1));
	put_ok(t->s, STORE_JOB, job("b", 1));
	assert_int_equal(store_list_shared(t->s, STORE_JOB, &f, &l1, NULL), 0);
	assert_int_equal(store_list_shared(t->s, STORE_JOB, &f, &l2, NULL), 0);
	assert_int_equal(json_array_size(l2), 2);
	assert_ptr_equal(json_array_get(l1, 0), json_array_get(l2, 0));
	assert_ptr_equal(json_array_get(l1, 1), json_array_get(l2, 1));
	/* the array is the caller's own */
	json_array_remove(l2, 0);
	assert_int_equal(json_array_size(l1), 2);
	/* only what changed after idx; the one a get read is the same object */
	j = job("b", 2);
	assert_int_equal(store_put(t->s, STORE_JOB, j, &idx, NULL), 0);
	json_decref(j);
	assert_int_equal(store_list_changed_shared(t->s, STORE_JOB, &f, idx - 1, &l3, NULL), 0);
	assert_int_equal(json_array_size(l3), 1);
	j = get_shared_ok(t->s, STORE_JOB, "default", "b");
	assert_ptr_equal(j, json_array_get(l3, 0));
	assert_int_equal(json_integer_value(json_object_get(j, "v")), 2);
	json_decref(j);
	json_decref(l1);
	json_decref(l2);
	json_decref(l3);
}

static void test_bounds(void **state)
{
	struct tmpstore *t = *state;
	struct store_cache_stats st;
	json_t *o;
	char id[32];

	store_cache_limit(t->s, 8, 1 << 20);
	for (int i = 0; i < 20; i++) {
		snprintf(id, sizeof(id), "n%02d", i);
		put_ok(t->s, STORE_NODE, json_pack("{s:s, s:i}", "id", id, "i", i));
		json_decref(get_shared_ok(t->s, STORE_NODE, NULL, id));
	}
	st = stats(t->s);
	assert_int_equal(st.entries, 8);
	assert_int_equal(st.evictions, 12);
	/* the least recently used went: n00 is read anew, n19 is a hit */
	o = get_shared_ok(t->s, STORE_NODE, NULL, "n00");
	assert_int_equal(json_integer_value(json_object_get(o, "i")), 0);
	json_decref(o);
	assert_int_equal(stats(t->s).misses, st.misses + 1);
	json_decref(get_shared_ok(t->s, STORE_NODE, NULL, "n19"));
	assert_int_equal(stats(t->s).hits, st.hits + 1);

	/* the byte bound: each record's text is ~20 bytes */
	store_cache_limit(t->s, 100, 70);
	st = stats(t->s);
	assert_true(st.bytes <= 70);
	assert_true(st.entries >= 2 && st.entries <= 3);
	for (int i = 0; i < 20; i++) {
		snprintf(id, sizeof(id), "n%02d", i);
		json_decref(get_shared_ok(t->s, STORE_NODE, NULL, id));
		assert_true(stats(t->s).bytes <= 70);
	}
	/* off: nothing kept, reads still right */
	store_cache_limit(t->s, 0, 0);
	assert_int_equal(stats(t->s).entries, 0);
	o = get_shared_ok(t->s, STORE_NODE, NULL, "n05");
	assert_int_equal(json_integer_value(json_object_get(o, "i")), 5);
	json_decref(o);
	assert_int_equal(stats(t->s).entries, 0);
}

static void test_delete_drops(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k = { "default", "j", 0 };
	json_t *a, *b = NULL;

	put_ok(t->s, STORE_JOB, job("j", 1));
	a = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_int_equal(stats(t->s).entries, 1);
	assert_int_equal(store_delete(t->s, STORE_JOB, &k, NULL, NULL), 0);
	assert_int_equal(stats(t->s).entries, 0);
	assert_int_equal(store_get_shared(t->s, STORE_JOB, &k, &b, NULL), -ENOENT);
	assert_int_equal(json_integer_value(json_object_get(a, "v")), 1);
	put_ok(t->s, STORE_JOB, job("j", 3));
	b = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_int_equal(json_integer_value(json_object_get(b, "v")), 3);
	json_decref(a);
	json_decref(b);
}

/* Keys of kinds with a namespace and a version are told apart. */
static void test_keys_distinct(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k0 = { "default", "j", 0 }, k1 = { "default", "j", 1 };
	json_t *a = NULL, *b = NULL, *c, *d;

	put_ok(t->s, STORE_JOB_VERSION, json_pack("{s:s, s:s, s:i}", "namespace", "default",
						  "id", "j", "version", 0));
	put_ok(t->s, STORE_JOB_VERSION, json_pack("{s:s, s:s, s:i}", "namespace", "default",
						  "id", "j", "version", 1));
	put_ok(t->s, STORE_JOB, job("j", 5));
	put_ok(t->s, STORE_JOB, json_pack("{s:s, s:s, s:i}", "namespace", "other", "id", "j",
					  "v", 6));
	assert_int_equal(store_get_shared(t->s, STORE_JOB_VERSION, &k0, &a, NULL), 0);
	assert_int_equal(store_get_shared(t->s, STORE_JOB_VERSION, &k1, &b, NULL), 0);
	c = get_shared_ok(t->s, STORE_JOB, "default", "j");
	d = get_shared_ok(t->s, STORE_JOB, "other", "j");
	assert_int_equal(json_integer_value(json_object_get(a, "version")), 0);
	assert_int_equal(json_integer_value(json_object_get(b, "version")), 1);
	assert_int_equal(json_integer_value(json_object_get(c, "v")), 5);
	assert_int_equal(json_integer_value(json_object_get(d, "v")), 6);
	assert_int_equal(stats(t->s).entries, 4);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
}

/* A view reads the state it began with, though the cache has a newer
 * object of the same record by then. */
struct view_race {
	struct store *s;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int step; /* 1: the view read v1; 2: the writer wrote v2 and read it */
	int v_before, v_after;
};

static void *write_v2(void *arg)
{
	struct view_race *r = arg;
	pthread_mutex_lock(&r->lock);
	while (r->step < 1)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	put_ok(r->s, STORE_JOB, job("j", 2));
	json_decref(get_shared_ok(r->s, STORE_JOB, "default", "j"));
	pthread_mutex_lock(&r->lock);
	r->step = 2;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static int view_fn(struct store *s, void *arg, struct herd_err *err)
{
	struct view_race *r = arg;
	json_t *o = NULL;
	struct store_key k = { "default", "j", 0 };
	int rc = store_get_shared(s, STORE_JOB, &k, &o, err);
	if (rc)
		return rc;
	r->v_before = (int)json_integer_value(json_object_get(o, "v"));
	json_decref(o);
	pthread_mutex_lock(&r->lock);
	r->step = 1;
	pthread_cond_broadcast(&r->cond);
	while (r->step < 2)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	if ((rc = store_get_shared(s, STORE_JOB, &k, &o, err)))
		return rc;
	r->v_after = (int)json_integer_value(json_object_get(o, "v"));
	json_decref(o);
	return 0;
}

static void test_view_reads_its_own_state(void **state)
{
	struct tmpstore *t = *state;
	struct view_race r = { t->s, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
	struct herd_err err = { 0 };
	pthread_t th;
	json_t *o;

	put_ok(t->s, STORE_JOB, job("j", 1));
	assert_int_equal(pthread_create(&th, NULL, write_v2, &r), 0);
	if (store_view(t->s, view_fn, &r, &err))
		fail_msg("view: %s", err.msg);
	pthread_join(th, NULL);
	assert_int_equal(r.v_before, 1);
	assert_int_equal(r.v_after, 1);
	o = get_shared_ok(t->s, STORE_JOB, "default", "j");
	assert_int_equal(json_integer_value(json_object_get(o, "v")), 2);
	json_decref(o);
}

/* Reads inside a commit's transaction do not fill the cache: that
 * transaction's changes (of earlier changes of its group) may yet roll
 * back and their index be used again. */
static int check_reads(struct store *s, void *arg, struct herd_err *err)
{
	json_t **out = arg;
	struct store_key k = { "default", "j", 0 };
	return store_get_shared(s, STORE_JOB, &k, out, err);
}

static void test_commit_reads_do_not_fill(void **state)
{
	struct tmpstore *t = *state;
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0 };
	json_t *seen = NULL, *o = json_pack("{s:s}", "id", "n");

	put_ok(t->s, STORE_JOB, job("j", 1));
	tmpstore_reopen(t);
	store_batch_put(&b, STORE_NODE, o);
	json_decref(o);
	store_batch_check(&b, check_reads, &seen);
	if (store_commit(t->s, &b, NULL, &err))
		fail_msg("commit: %s", err.msg);
	store_batch_release(&b);
	assert_non_null(seen);
	assert_int_equal(json_integer_value(json_object_get(seen, "v")), 1);
	json_decref(seen);
	/* the node it wrote, not the job its check read */
	assert_int_equal(stats(t->s).entries, 1);
	json_decref(get_shared_ok(t->s, STORE_NODE, NULL, "n"));
	assert_int_equal(stats(t->s).hits, 1);
}

/* HERD_STORE_CACHE_CHECK=1: a reader that changed a shared record is
 * caught at the next hit. */
static void test_check_mode_catches_a_change(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k = { "default", "j", 0 };
	struct herd_err err = { 0 };
	json_t *a, *b = NULL;

	setenv("HERD_STORE_CACHE_CHECK", "1", 1);
	tmpstore_reopen(t);
	unsetenv("HERD_STORE_CACHE_CHECK");
	put_ok(t->s, STORE_JOB, job("j", 1));
	a = get_shared_ok(t->s, STORE_JOB, "default", "j");
	json_decref(get_shared_ok(t->s, STORE_JOB, "default", "j")); /* a hit, unchanged */
	json_object_set_new(a, "v", json_integer(5)); /* what a reader must never do */
	assert_int_equal(store_get_shared(t->s, STORE_JOB, &k, &b, &err), -EIO);
	assert_non_null(strstr(err.msg, "changed by a reader"));
	json_decref(a);
}

/* Readers beside writers: every record read, shared or not, is the one
 * that was written at the modify_index it carries. */
#define RACE_RECORDS 4
#define RACE_WRITES 300
#define RACE_READERS 4

struct race {
	struct store *s;
	int64_t v_at[RACE_WRITES * 2 + 64]; /* modify_index -> v written then */
	pthread_mutex_t lock;
	int done;
	int bad;
	uint64_t reads;
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	for (int i = 1; i <= RACE_WRITES; i++) {
		char id[8];
		uint64_t idx = 0;
		snprintf(id, sizeof(id), "r%d", i % RACE_RECORDS);
		json_t *o = job(id, i);
		pthread_mutex_lock(&r->lock);
		/* written before the commit so that no reader sees the index
		 * before its value is known */
		if (store_put(r->s, STORE_JOB, o, &idx, NULL) == 0 &&
		    idx < sizeof(r->v_at) / sizeof(r->v_at[0]))
			r->v_at[idx] = i;
		else
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&r->lock);
		json_decref(o);
	}
	pthread_mutex_lock(&r->lock);
	r->done = 1;
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static bool race_ok(struct race *r, json_t *o)
{
	uint64_t mi = (uint64_t)json_integer_value(json_object_get(o, "modify_index"));
	int64_t v = json_integer_value(json_object_get(o, "v"));
	json_t *l = json_object_get(json_object_get(o, "spec"), "list");
	bool ok;
	pthread_mutex_lock(&r->lock);
	ok = mi < sizeof(r->v_at) / sizeof(r->v_at[0]) && r->v_at[mi] == v &&
	     json_integer_value(json_array_get(l, 1)) == v + 1;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	for (int n = 0;; n++) {
		struct store_filter f = { "default", NULL, NULL };
		json_t *l = NULL, *o;
		size_t i;
		int done;
		char id[8];
		struct store_key k = { "default", id, 0 };
		snprintf(id, sizeof(id), "r%d", n % RACE_RECORDS);
		pthread_mutex_lock(&r->lock);
		done = r->done;
		pthread_mutex_unlock(&r->lock);
		if (done)
			break;
		if (store_list_shared(r->s, STORE_JOB, &f, &l, NULL) == 0) {
			json_array_foreach(l, i, o)
				if (!race_ok(r, o))
					__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
			json_decref(l);
		}
		o = NULL;
		if ((n % 2 ? store_get(r->s, STORE_JOB, &k, &o, NULL)
			   : store_get_shared(r->s, STORE_JOB, &k, &o, NULL)) == 0) {
			if (!race_ok(r, o))
				__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
			json_decref(o);
		}
		__atomic_add_fetch(&r->reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_concurrent_readers(void **state)
{
	struct tmpstore *t = *state;
	struct race *r = calloc(1, sizeof(*r));
	pthread_t w, rd[RACE_READERS];

	r->s = t->s;
	pthread_mutex_init(&r->lock, NULL);
	/* one entry short of the records: entries are evicted (and dropped
	 * when rewritten) while other readers hold their objects */
	store_cache_limit(t->s, RACE_RECORDS - 1, 1 << 20);
	for (int i = 0; i < RACE_READERS; i++)
		assert_int_equal(pthread_create(&rd[i], NULL, race_reader, r), 0);
	assert_int_equal(pthread_create(&w, NULL, race_writer, r), 0);
	pthread_join(w, NULL);
	for (int i = 0; i < RACE_READERS; i++)
		pthread_join(rd[i], NULL);
	assert_int_equal(r->bad, 0);
	assert_true(r->reads > 0);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hit_is_the_same_object, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_plain_get_is_a_copy, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_changed_record_is_read_anew, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_plain_reads_do_not_fill, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_commit_caches_what_it_wrote, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_owned_put, tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_undecodable_not_cached, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_list_shared, tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_bounds, tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_delete_drops, tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_keys_distinct, tmpstore_setup, tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_view_reads_its_own_state, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_commit_reads_do_not_fill, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_check_mode_catches_a_change, tmpstore_setup,
						tmpstore_teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_readers, tmpstore_setup,
						tmpstore_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
