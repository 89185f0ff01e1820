/* Unit tests of what only the PostgreSQL backend has (postgres.c): the
 * leadership lock (a second store waits, gets the holder's name, takes
 * over when the first closes), fencing (a leader whose connection is
 * killed is told once, commits nothing more, and a standby takes over),
 * tables created by one of two servers starting at once, the schema
 * check, and concurrent conditional writers (no lost update).  Needs
 * HERD_TEST_PG (run through with-pg). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "test_store_util.h"

#define SEC 1000000000LL

/* What the callbacks saw, guarded by lock. */
struct seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int waiting_calls, lost_calls, cancel_polls, opened;
	int cancel_after; /* cancelled() answers true from this poll on (0: never) */
	char holder[256], why[256];
	int leader_calls; /* the leader callback: how often, and the last holder */
	char leader[256];
};

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
}

static void seen_release(struct seen *s)
{
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
}

static void on_waiting(const char *holder, void *arg)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->lock);
	s->waiting_calls++;
	snprintf(s->holder, sizeof(s->holder), "%s", holder);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void on_leader(const char *holder, void *arg)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->lock);
	s->leader_calls++;
	snprintf(s->leader, sizeof(s->leader), "%s", holder);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static bool on_cancelled(void *arg)
{
	struct seen *s = arg;
	bool yes;
	pthread_mutex_lock(&s->lock);
	s->cancel_polls++;
	yes = s->cancel_after && s->cancel_polls >= s->cancel_after;
	pthread_mutex_unlock(&s->lock);
	return yes;
}

static void on_lost(const char *why, void *arg)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->lock);
	s->lost_calls++;
	snprintf(s->why, sizeof(s->why), "%s", why);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Waits until *counter is at least n; a safety bound of 60 s against a
 * hang only (a slow machine passes). */
static void wait_for(struct seen *s, int *counter, int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&s->lock);
	while (*counter < n)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until)) {
			pthread_mutex_unlock(&s->lock);
			fail_msg("callback not called within 60 s");
		}
	pthread_mutex_unlock(&s->lock);
}

static struct store_pg_options opts_of(const char *holder, int64_t wait, struct seen *seen)
{
	struct store_pg_options o = { .holder = holder, .lock_wait_ns = wait,
				      .waiting = on_waiting, .cancelled = on_cancelled,
				      .lost = on_lost, .arg = seen };
	return o;
}

/* A standby opening in a thread of its own. */
struct standby {
	struct tmpstore *t;
	struct store_pg_options opts;
	struct store *s;
	struct herd_err err;
	int rc;
};

static void *open_standby(void *arg)
{
	struct standby *b = arg;
	struct seen *seen = b->opts.arg;
	struct store *s = NULL;
	int rc = tmpstore_open(b->t, &b->opts, &s, &b->err);
	pthread_mutex_lock(&seen->lock);
	b->rc = rc;
	b->s = s;
	seen->opened++;
	pthread_cond_broadcast(&seen->cond);
	pthread_mutex_unlock(&seen->lock);
	return NULL;
}

/* The store of the setup (t->s) opened with no holder: reopen it as
 * "leader-a" with callbacks. */
static void reopen_as(struct tmpstore *t, const char *holder, struct seen *seen)
{
	struct store_pg_options o = opts_of(holder, 0, seen);
	struct herd_err err = { 0 };
	store_close(t->s);
	t->s = NULL;
	if (tmpstore_open(t, &o, &t->s, &err))
		fail_msg("open as %s: %s", holder, err.msg);
}

static void test_second_store_waits_and_takes_over(void **state)
{
	struct tmpstore *t = *state;
	struct seen a, b;
	struct store_pg_options o;
	struct store *s2 = NULL;
	struct herd_err err = { 0 };
	struct standby sb;
	pthread_t th;
	uint64_t idx = 0;

	seen_init(&a);
	seen_init(&b);
	reopen_as(t, "10.0.0.5:4646", &a);
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));

	/* try once: busy, the holder named in the message, not waited */
	o = opts_of("10.0.0.6:4646", 0, &b);
	assert_int_equal(tmpstore_open(t, &o, &s2, &err), -EBUSY);
	assert_null(s2);
	assert_non_null(strstr(err.msg, "10.0.0.5:4646"));
	assert_int_equal(b.waiting_calls, 0);

	/* a short wait: waiting told who holds it, once; then busy */
	o = opts_of("10.0.0.6:4646", SEC / 2, &b);
	assert_int_equal(tmpstore_open(t, &o, &s2, &err), -EBUSY);
	assert_int_equal(b.waiting_calls, 1);
	assert_string_equal(b.holder, "10.0.0.5:4646");

	/* cancelled while waiting */
	b.cancel_after = 2;
	o = opts_of("10.0.0.6:4646", -1, &b);
	assert_int_equal(tmpstore_open(t, &o, &s2, &err), -ECANCELED);
	assert_true(b.cancel_polls >= 2);
	b.cancel_after = 0;

	/* waits forever, and gets it when the leader closes */
	memset(&sb, 0, sizeof(sb));
	sb.t = t;
	sb.opts = opts_of("10.0.0.6:4646", -1, &b);
	assert_int_equal(pthread_create(&th, NULL, open_standby, &sb), 0);
	wait_for(&b, &b.waiting_calls, 3);
	store_close(t->s);
	t->s = NULL;
	pthread_join(th, NULL);
	if (sb.rc)
		fail_msg("standby: %s", sb.err.msg);
	t->s = sb.s;
	/* the same data, and the index goes on */
	assert_int_equal(store_get_index(t->s, STORE_NODE, &(struct store_key){ NULL, "n1", 0 },
					 &idx, &err),
			 0);
	assert_int_equal(idx, 1);
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n2"));
	assert_int_equal(store_index(t->s), 2);
	assert_int_equal(a.lost_calls, 0); /* closing is not losing */
	seen_release(&a);
	seen_release(&b);
}

static void test_killed_connection_fences(void **state)
{
	struct tmpstore *t = *state;
	struct seen a, b;
	struct standby sb;
	struct herd_err err = { 0 };
	pthread_t th;
	char pid[32], sql[128], killed[16];
	json_t *o;

	seen_init(&a);
	seen_init(&b);
	reopen_as(t, "leader-a", &a);
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));

	memset(&sb, 0, sizeof(sb));
	sb.t = t;
	sb.opts = opts_of("leader-b", -1, &b);
	assert_int_equal(pthread_create(&th, NULL, open_standby, &sb), 0);
	wait_for(&b, &b.waiting_calls, 1);
	assert_string_equal(b.holder, "leader-a");

	/* the leader's commit connection is the one its row names */
	pg_sql(t->conninfo, "SELECT pid FROM leader", pid, sizeof(pid));
	assert_true(strlen(pid) > 0);
	snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%ld)", strtol(pid, NULL, 10));
	pg_sql(t->conninfo, sql, killed, sizeof(killed));
	assert_string_equal(killed, "t");

	/* told once, from the store's thread, without any commit */
	wait_for(&a, &a.lost_calls, 1);
	assert_true(strlen(a.why) > 0);

	/* fenced: no commit any more */
	o = json_pack("{s:s}", "id", "n2");
	assert_int_equal(store_put(t->s, STORE_NODE, o, NULL, &err), -ENOTCONN);
	assert_int_equal(store_put(t->s, STORE_NODE, o, NULL, &err), -ENOTCONN);
	json_decref(o);

	/* the standby took over */
	pthread_join(th, NULL);
	if (sb.rc)
		fail_msg("standby: %s", sb.err.msg);
	put_ok(sb.s, STORE_NODE, json_pack("{s:s}", "id", "n3"));
	assert_int_equal(store_index(sb.s), 2);
	pg_sql(t->conninfo, "SELECT holder FROM leader", pid, sizeof(pid));
	assert_string_equal(pid, "leader-b");

	store_close(t->s); /* a fenced store closes cleanly */
	t->s = sb.s;
	assert_int_equal(a.lost_calls, 1);
	assert_int_equal(b.lost_calls, 0);
	seen_release(&a);
	seen_release(&b);
}

/* Standbys watch who leads (store_pg_options.leader, what a standby
 * redirects to): the leader's holder; "" once the row is stale (its pid
 * does not hold the lock); the next leader's holder after a takeover. */
static void test_standbys_follow_the_leader(void **state)
{
	struct tmpstore *t = *state;
	struct seen a, sn[2];
	struct standby sb[2];
	pthread_t th[2];
	const char *names[2] = { "10.0.0.6:4646", "10.0.0.7:4646" };
	int win = -1;

	seen_init(&a);
	reopen_as(t, "10.0.0.5:4646", &a);
	for (int i = 0; i < 2; i++) {
		seen_init(&sn[i]);
		memset(&sb[i], 0, sizeof(sb[i]));
		sb[i].t = t;
		sb[i].opts = opts_of(names[i], -1, &sn[i]);
		sb[i].opts.leader = on_leader;
		sb[i].opts.leader_arg = &sn[i];
		assert_int_equal(pthread_create(&th[i], NULL, open_standby, &sb[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		wait_for(&sn[i], &sn[i].leader_calls, 1);
		pthread_mutex_lock(&sn[i].lock);
		assert_string_equal(sn[i].leader, "10.0.0.5:4646");
		pthread_mutex_unlock(&sn[i].lock);
	}
	/* a row whose session does not hold the lock names nobody */
	pg_sql(t->conninfo, "UPDATE leader SET pid = pg_backend_pid()", NULL, 0);
	for (int i = 0; i < 2; i++) {
		wait_for(&sn[i], &sn[i].leader_calls, 2);
		pthread_mutex_lock(&sn[i].lock);
		assert_string_equal(sn[i].leader, "");
		pthread_mutex_unlock(&sn[i].lock);
	}
	/* the leader goes: one standby takes over, the other names it */
	store_close(t->s);
	t->s = NULL;
	while (win < 0) {
		struct timespec nap = { 0, 20 * 1000000L };
		for (int i = 0; i < 2 && win < 0; i++) {
			pthread_mutex_lock(&sn[i].lock);
			if (sn[i].opened)
				win = i;
			pthread_mutex_unlock(&sn[i].lock);
		}
		if (win < 0)
			nanosleep(&nap, NULL);
	}
	if (sb[win].rc)
		fail_msg("standby: %s", sb[win].err.msg);
	wait_for(&sn[!win], &sn[!win].leader_calls, 3);
	pthread_mutex_lock(&sn[!win].lock);
	assert_string_equal(sn[!win].leader, names[win]);
	pthread_mutex_unlock(&sn[!win].lock);
	/* and the other one leads next */
	store_close(sb[win].s);
	pthread_join(th[win], NULL);
	pthread_join(th[!win], NULL);
	if (sb[!win].rc)
		fail_msg("standby: %s", sb[!win].err.msg);
	t->s = sb[!win].s;
	seen_release(&a);
	seen_release(&sn[0]);
	seen_release(&sn[1]);
}

/* Two servers starting at once on an empty database: one creates the
 * tables, the other waits and then finds them. */
static void test_two_opens_on_an_empty_database(void **state)
{
	struct tmpstore *t = *state;
	struct standby sb[2];
	pthread_t th[2];
	struct seen s;

	seen_init(&s);
	store_close(t->s);
	t->s = NULL;
	pg_sql(t->conninfo, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public", NULL, 0);
	for (int i = 0; i < 2; i++) {
		memset(&sb[i], 0, sizeof(sb[i]));
		sb[i].t = t;
		sb[i].opts = opts_of(i ? "b" : "a", -1, &s);
		assert_int_equal(pthread_create(&th[i], NULL, open_standby, &sb[i]), 0);
	}
	/* one opens (and creates the tables); the other waits until it
	 * closes, then opens on the tables the first made */
	for (int round = 1; round <= 2; round++) {
		struct store *s2 = NULL;
		int i;
		wait_for(&s, &s.opened, round);
		pthread_mutex_lock(&s.lock);
		for (i = 0; i < 2 && !s2; i++)
			if (sb[i].s && sb[i].rc == 0)
				s2 = sb[i].s;
		i--;
		sb[i].rc = sb[i].rc == 0 ? 1 : sb[i].rc; /* done with */
		pthread_mutex_unlock(&s.lock);
		if (!s2)
			fail_msg("open: %s / %s", sb[0].err.msg, sb[1].err.msg);
		put_ok(s2, STORE_NODE, json_pack("{s:s}", "id", i ? "from-b" : "from-a"));
		store_close(s2);
		pthread_join(th[i], NULL);
	}
	assert_int_equal(sb[0].rc, 1);
	assert_int_equal(sb[1].rc, 1);
	reopen_as(t, "c", &s);
	assert_int_equal(store_index(t->s), 2);
	seen_release(&s);
}

static void test_newer_schema_refused(void **state)
{
	struct tmpstore *t = *state;
	struct store *s2 = NULL;
	struct herd_err err = { 0 };

	store_close(t->s);
	t->s = NULL;
	pg_sql(t->conninfo, "UPDATE meta SET value = 99 WHERE key = 'schema_version'", NULL, 0);
	assert_int_equal(tmpstore_open(t, NULL, &s2, &err), -EPROTONOSUPPORT);
	assert_null(s2);
	assert_non_null(strstr(err.msg, "99"));
	/* the lock was given back: the version restored, it opens */
	pg_sql(t->conninfo, "UPDATE meta SET value = 5 WHERE key = 'schema_version'", NULL, 0);
	tmpstore_reopen(t);
}

static void test_bad_conninfo(void **state)
{
	struct store *s2 = NULL;
	struct herd_err err = { 0 };
	(void)state;
	assert_int_equal(store_open_postgres("host=", NULL, &s2, &err) < 0, 1);
	assert_int_equal(store_open_postgres("nonsense with no equals", NULL, &s2, &err), -EINVAL);
	assert_int_equal(store_open_postgres("host=/nonexistent-dir port=1", NULL, &s2, &err),
			 -ECONNREFUSED);
	assert_null(s2);
}

/* Counter increments by read, then commit on condition that the record
 * did not move; -ESTALE: read again.  No increment may be lost. */
#define INC_THREADS 6
#define INCS 40

static void *increment(void *arg)
{
	struct store *s = arg;
	struct store_key k = { NULL, "counter", 0 };
	for (int i = 0; i < INCS; i++) {
		for (;;) {
			struct herd_err err = { 0 };
			struct store_batch b = STORE_BATCH_INIT;
			json_t *o = NULL;
			int rc;
			if (store_get(s, STORE_NODE, &k, &o, &err))
				return (void *)1;
			uint64_t mi = (uint64_t)json_integer_value(json_object_get(o, "modify_index"));
			json_object_set_new(o, "n", json_integer(json_integer_value(json_object_get(o, "n")) + 1));
			store_batch_put(&b, STORE_NODE, o);
			store_batch_require_index(&b, STORE_NODE, &k, mi);
			json_decref(o);
			rc = store_commit(s, &b, NULL, &err);
			store_batch_release(&b);
			if (rc == 0)
				break;
			if (rc != -ESTALE || !strstr(err.msg, "counter"))
				return (void *)2;
		}
	}
	return NULL;
}

static void test_no_lost_updates(void **state)
{
	struct tmpstore *t = *state;
	struct store_key k = { NULL, "counter", 0 };
	struct herd_err err = { 0 };
	pthread_t th[INC_THREADS];
	json_t *o = NULL;

	put_ok(t->s, STORE_NODE, json_pack("{s:s, s:i}", "id", "counter", "n", 0));
	for (int i = 0; i < INC_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, increment, t->s), 0);
	for (int i = 0; i < INC_THREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		assert_null(ret);
	}
	assert_int_equal(store_get(t->s, STORE_NODE, &k, &o, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(o, "n")), INC_THREADS * INCS);
	/* every commit that passed bumped the index once */
	assert_int_equal(json_integer_value(json_object_get(o, "modify_index")),
			 1 + INC_THREADS * INCS);
	json_decref(o);
}

/* A view reads one snapshot while commits go on. */
static void *put_during_view(void *arg)
{
	struct store *s = arg;
	json_t *o = json_pack("{s:s}", "id", "during-view");
	intptr_t rc = store_put(s, STORE_NODE, o, NULL, NULL);
	json_decref(o);
	return (void *)rc;
}

static int view_twice(struct store *s, void *arg, struct herd_err *err)
{
	uint64_t before, after;
	pthread_t th;
	void *ret;
	int rc;
	(void)arg;
	if ((rc = store_read_index(s, &before, err)))
		return rc;
	/* a commit from another thread (this one would be refused: a write
	 * inside a view), finished before the view reads again */
	pthread_create(&th, NULL, put_during_view, s);
	pthread_join(th, &ret);
	if (ret)
		return herd_errf(err, -EIO, "put during the view: %ld", (long)(intptr_t)ret);
	if ((rc = store_read_index(s, &after, err)))
		return rc;
	return before == after ? 0 : herd_errf(err, -EIO, "view saw %llu then %llu",
					       (unsigned long long)before,
					       (unsigned long long)after);
}

static void test_view_is_one_snapshot(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	uint64_t idx;
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	if (store_view(t->s, view_twice, NULL, &err))
		fail_msg("view: %s", err.msg);
	assert_int_equal(store_read_index(t->s, &idx, &err), 0);
	assert_int_equal(idx, 2);
}

/* Keys come back in byte order whatever the database's collation. */
static void test_byte_order(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	json_t *l = NULL;
	const char *ids[] = { "b", "B", "a", "_x", "a-b", "ab" };
	const char *want[] = { "B", "_x", "a", "a-b", "ab", "b" };
	for (size_t i = 0; i < 6; i++)
		put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", ids[i]));
	assert_int_equal(store_list(t->s, STORE_NODE, NULL, &l, &err), 0);
	assert_int_equal(json_array_size(l), 6);
	for (size_t i = 0; i < 6; i++)
		assert_string_equal(json_string_value(json_object_get(json_array_get(l, i), "id")),
				    want[i]);
	json_decref(l);
}

/* Group names travel as one text[] parameter: quotes, backslashes, braces
 * and commas in keys stay what they are. */
static void test_odd_group_names(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	const char *nodes[] = { "we\"ird", "back\\slash", "{brace}", "a,b", "NULL", " sp " };
	uint64_t v = 0;
	for (int i = 0; i < 6; i++) {
		char id[16];
		snprintf(id, sizeof(id), "a%d", i);
		put_ok(t->s, STORE_ALLOC, json_pack("{s:s, s:s, s:s, s:s}", "id", id, "namespace",
						    "n\"s", "job_id", "j{1}", "node_id", nodes[i]));
	}
	for (int i = 0; i < 6; i++) {
		assert_int_equal(store_node_allocs_index(t->s, nodes[i], &v, &err), 0);
		assert_int_equal(v, (uint64_t)i + 1);
	}
	assert_int_equal(store_job_allocs_index(t->s, "n\"s", "j{1}", &v, &err), 0);
	assert_int_equal(v, 6);
	assert_int_equal(store_node_allocs_index(t->s, "we", &v, &err), 0);
	assert_int_equal(v, 0);
}

/* A snapshot of the PostgreSQL store is an SQLite store file; restored,
 * it replaces what the database holds (refused while a server holds the
 * lock), indexes included, and what it replaced is kept. */
static void test_snapshot_and_restore(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_snapshot_info info;
	struct store_key ka = { NULL, "a1", 0 };
	char snap[4300], keep[4300], sqlite_path[4300];
	uint64_t idx = 0, ami = 0;
	json_t *l = NULL, *a = NULL;
	struct store *sq = NULL;

	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	put_ok(t->s, STORE_ALLOC, json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", "a1", "namespace",
					    "default", "job_id", "j", "node_id", "n1", "s", "pending"));
	/* a report: modify_index moves, alloc_modify_index stays */
	{
		struct store_batch b = STORE_BATCH_INIT;
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", "a1", "namespace",
				      "default", "job_id", "j", "node_id", "n1", "s", "running");
		store_batch_put_report(&b, STORE_ALLOC, o);
		json_decref(o);
		assert_int_equal(store_commit(t->s, &b, NULL, &err), 0);
		store_batch_release(&b);
	}
	snprintf(snap, sizeof(snap), "%s/snap.db", t->dir);
	assert_int_equal(store_snapshot(t->s, snap, &err), 0);
	assert_int_equal(store_snapshot_inspect(snap, &info, &err), 0);
	assert_int_equal(info.index, 3);
	assert_int_equal(info.records[STORE_NODE], 1);
	assert_int_equal(info.records[STORE_ALLOC], 1);

	/* the copy is a store like any SQLite one, groups and all */
	snprintf(sqlite_path, sizeof(sqlite_path), "%s/copy.db", t->dir);
	assert_int_equal(rename(snap, sqlite_path), 0);
	assert_int_equal(store_open_sqlite(sqlite_path, &sq, &err), 0);
	assert_int_equal(store_node_allocs_index(sq, "n1", &idx, &err), 0);
	assert_int_equal(idx, 3);
	assert_int_equal(store_list_allocs_server_changed(sq, NULL, 2, &l, &err), 0);
	assert_int_equal(json_array_size(l), 0); /* the report is not a server change */
	json_decref(l);
	assert_int_equal(store_snapshot(sq, snap, &err), 0); /* the SQLite way: same format */
	store_close(sq);

	/* changes after it */
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n2"));
	assert_int_equal(store_delete(t->s, STORE_NODE, &(struct store_key){ NULL, "n1", 0 }, NULL,
				      &err),
			 0);
	/* refused while a server holds the lock */
	assert_int_equal(store_restore_postgres(t->conninfo, snap, NULL, NULL, &err), -EBUSY);
	store_close(t->s);
	t->s = NULL;
	snprintf(keep, sizeof(keep), "%s/replaced.db", t->dir);
	if (store_restore_postgres(t->conninfo, snap, keep, &idx, &err))
		fail_msg("restore: %s", err.msg);
	assert_int_equal(idx, 3);
	/* what it replaced: index 5, nodes n2 only */
	assert_int_equal(store_snapshot_inspect(keep, &info, &err), 0);
	assert_int_equal(info.index, 5);
	assert_int_equal(info.records[STORE_NODE], 1);

	tmpstore_reopen(t);
	assert_int_equal(store_index(t->s), 3);
	assert_int_equal(store_list(t->s, STORE_NODE, NULL, &l, &err), 0);
	assert_int_equal(json_array_size(l), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(l, 0), "id")), "n1");
	json_decref(l);
	assert_int_equal(store_get(t->s, STORE_ALLOC, &ka, &a, &err), 0);
	assert_string_equal(json_string_value(json_object_get(a, "s")), "running");
	assert_int_equal(json_integer_value(json_object_get(a, "create_index")), 2);
	json_decref(a);
	assert_int_equal(store_list_allocs_server_changed(t->s, NULL, 2, &l, &err), 0);
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
	assert_int_equal(store_node_allocs_index(t->s, "n1", &ami, &err), 0);
	assert_int_equal(ami, 3);
	/* and the index goes on from the restored one */
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n3"));
	assert_int_equal(store_index(t->s), 4);
}

/* A snapshot of an older schema (here version 3, before
 * alloc_modify_index) is upgraded on the way into PostgreSQL, as opening
 * it would upgrade it; the file itself is left as it was. */
static void test_restore_upgrades_an_older_snapshot(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_snapshot_info info;
	struct store *sq = NULL;
	sqlite3 *db = NULL;
	char path[4300];
	json_t *l = NULL;
	uint64_t idx = 0;

	snprintf(path, sizeof(path), "%s/old.db", t->dir);
	assert_int_equal(store_open_sqlite(path, &sq, &err), 0);
	put_ok(sq, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	put_ok(sq, STORE_ALLOC, json_pack("{s:s, s:s, s:s, s:s}", "id", "a1", "namespace",
					  "default", "job_id", "j", "node_id", "n1"));
	store_close(sq);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "DROP INDEX allocations_by_node_server_change;"
				      "ALTER TABLE allocations DROP COLUMN alloc_modify_index;"
				      "UPDATE meta SET value = 3 WHERE key='schema_version'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);

	store_close(t->s);
	t->s = NULL;
	if (store_restore_postgres(t->conninfo, path, NULL, &idx, &err))
		fail_msg("restore: %s", err.msg);
	assert_int_equal(idx, 2);
	assert_int_equal(store_snapshot_inspect(path, &info, &err), 0);
	assert_int_equal(info.schema_version, 3); /* the file is as it was */
	tmpstore_reopen(t);
	/* the migration's alloc_modify_index: the allocation's modify_index */
	assert_int_equal(store_list_allocs_server_changed(t->s, NULL, 1, &l, &err), 0);
	assert_int_equal(json_array_size(l), 1);
	json_decref(l);
	assert_int_equal(store_list_allocs_server_changed(t->s, NULL, 2, &l, &err), 0);
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
}

/* Readers are not the leadership: when their sessions end (a database
 * restart, an administrator), the next reads get new ones, without an
 * error, and the leader goes on. */
static void test_readers_come_back(void **state)
{
	struct tmpstore *t = *state;
	struct herd_err err = { 0 };
	struct store_key k = { NULL, "n1", 0 };
	struct seen a;
	char n[32];
	json_t *o = NULL;

	seen_init(&a);
	reopen_as(t, "leader-a", &a);
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n1"));
	assert_int_equal(store_get(t->s, STORE_NODE, &k, &o, &err), 0); /* a reader */
	json_decref(o);
	pg_sql(t->conninfo,
	       "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
	       " WHERE application_name = 'herd' AND pid <> (SELECT pid FROM leader)",
	       n, sizeof(n));
	assert_true(strtol(n, NULL, 10) >= 1);
	/* until they are gone (a bound against a hang only) */
	for (int i = 0; i < 3000; i++) {
		struct timespec nap = { 0, 10 * 1000000L };
		pg_sql(t->conninfo,
		       "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'herd'", n,
		       sizeof(n));
		if (strtol(n, NULL, 10) == 1)
			break;
		nanosleep(&nap, NULL);
	}
	assert_int_equal(strtol(n, NULL, 10), 1); /* the leader's */
	for (int i = 0; i < 8; i++) {
		if (store_get(t->s, STORE_NODE, &k, &o, &err))
			fail_msg("read %d after the readers were ended: %s", i, err.msg);
		json_decref(o);
	}
	put_ok(t->s, STORE_NODE, json_pack("{s:s}", "id", "n2"));
	assert_int_equal(a.lost_calls, 0);
	seen_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tmpstore_setup, tmpstore_teardown)
		T(test_second_store_waits_and_takes_over),
		T(test_standbys_follow_the_leader),
		T(test_killed_connection_fences),
		T(test_two_opens_on_an_empty_database),
		T(test_newer_schema_refused),
		T(test_bad_conninfo),
		T(test_no_lost_updates),
		T(test_view_is_one_snapshot),
		T(test_byte_order),
		T(test_snapshot_and_restore),
		T(test_odd_group_names),
		T(test_restore_upgrades_an_older_snapshot),
		T(test_readers_come_back),
	};
	const char *pg = getenv("HERD_TEST_PG");
	if (!pg || !*pg) {
		/* run through with-pg; alone it cannot test anything */
		printf("Bail out! HERD_TEST_PG is not set: run through tests/unit/store/with-pg\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
