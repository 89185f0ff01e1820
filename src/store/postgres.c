/* postgres.c: the PostgreSQL backend of the store (store.h:
 * store_open_postgres), through libpq.
 *
 * Tables.  The same tables and columns as the SQLite store (sqlite.c:
 * meta, group_index, one table per kind), with every key column text
 * COLLATE "C", so that lists come in byte order as SQLite's do whatever
 * the database's collation, plus `leader`, one row: who holds the store
 * (the holder string, its advertised address, and the backend pid of its
 * commit connection; a row whose pid does not hold the lock is stale and
 * read as no leader, read_holder; standbys read it while they wait).  They
 * are created when absent, in one transaction, after the leadership lock
 * is taken, so two servers starting at once on an empty database do not
 * both create them.  Bodies are canonical JSON text (store.c), stored as
 * text: JSON text never holds a NUL byte, which text cannot hold.  Every
 * value goes through a parameter of a prepared statement; the SQL text
 * holds only table and column names of our own.
 *
 * Leadership and fencing.  The lock is a session-level advisory lock
 * (pg_try_advisory_lock(PG_LOCK_CLASS, PG_LOCK_OBJ)) held by the one
 * connection that commits (w).  PostgreSQL releases it when that session
 * ends, whatever the cause, and this backend never opens w again: once w
 * is lost, the store is fenced (every commit fails with -ENOTCONN) and
 * opts->lost is called once from the store's monitor thread.  Since every
 * commit runs on w, a commit reaches the database only while its session,
 * hence the lock, lives: a deposed leader cannot write behind its
 * successor.  The monitor runs a round trip on w at least twice a second
 * when no commit does, so that a lost session is found while idle too;
 * TCP keepalives and tcp_user_timeout (defaults below, which a conninfo
 * may override) bound how long a silent network can hide it.
 *
 * Durability.  synchronous_commit is set on for w's session (whatever the
 * database's or role's default): COMMIT returns only after PostgreSQL has
 * flushed the commit record to its WAL (and, with synchronous standbys
 * configured, to them as the server's synchronous_standby_names says), so
 * a change herd acknowledges survives a crash of the database server.
 * store_commit acknowledges only after COMMIT returned.  A COMMIT whose
 * answer is lost with the connection may or may not have happened; it is
 * answered -ENOTCONN (the store is fenced then anyway).
 *
 * Readers.  Reads outside a commit run on one of up to PG_READERS_MAX
 * reader connections (opened on first need, read only), so they neither
 * wait for a commit nor hold one up; they see committed state only, so
 * their rows may be cached (store_found.committed).  A view is a
 * REPEATABLE READ READ ONLY transaction on a reader.  A reader whose
 * connection broke is dropped and a new one opened on the next need:
 * readers take no lock, so reconnecting them is safe.  A thread inside a
 * commit's check or a view reads on that transaction's connection
 * (pg_thread_conn).
 *
 * Group commit: commit_queue.h, as in sqlite.c; one transaction per group,
 * a SAVEPOINT per change.
 *
 * Close-on-exec.  libpq opens its socket without SOCK_CLOEXEC (and has no
 * option for it), and herd spawns tasks: a task that inherited the socket
 * would keep the session, hence the leadership lock, alive after the
 * server died, and could speak on it.  Every connection gets FD_CLOEXEC on
 * PQsocket() right after PQconnectdbParams returns (pg_conn_open), the
 * shortest window libpq allows; the agent's spawns (drivers, checks, MPS)
 * also close every fd above 2 in the child (closefrom), which covers a
 * spawn inside that window.
 *
 * Files: this one opens and closes the store, takes the lock, creates the
 * tables and runs the monitor; postgres_conn.c the connections and
 * statements; postgres_rw.c reads, writes and group commit;
 * postgres_backup.c snapshot and restore; postgres-int.h what they
 * share. */
#include "store/postgres-int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"
#include "common/xalloc.h"

/* --- fencing and the monitor ------------------------------------------ */

/* w is lost: no commit any more; the monitor calls lost. */
void pg_fence(struct pg_store *ps, const char *why)
{
	pthread_mutex_lock(&ps->m_lock);
	if (!atomic_load(&ps->fenced)) {
		snprintf(ps->why, sizeof(ps->why), "%s", why && *why ? why : "connection lost");
		atomic_store(&ps->fenced, true);
		ps->lost_pending = true;
		pthread_cond_signal(&ps->m_wake);
	}
	pthread_mutex_unlock(&ps->m_lock);
}

/* A round trip on w when no commit holds it (a commit is a check of its
 * own).  Failing for want of the connection fences the store. */
static void check_leadership(struct pg_store *ps)
{
	if (pthread_mutex_trylock(&ps->lock) != 0)
		return;
	if (!atomic_load(&ps->fenced)) {
		PGresult *res = PQexec(ps->w.db, "SELECT 1");
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			(void)pg_err(ps, &ps->w, res, "checking the leadership connection", NULL);
		PQclear(res);
		/* an error that left the connection up (none expected) is
		 * not a loss: the next check tries again */
	}
	pthread_mutex_unlock(&ps->lock);
}

/* The store's own thread: checks w twice a second, and calls lost once. */
static void *monitor_main(void *arg)
{
	struct pg_store *ps = arg;
	pthread_mutex_lock(&ps->m_lock);
	while (!ps->stopping) {
		struct timespec until;
		if (ps->lost_pending) {
			char why[256];
			ps->lost_pending = false;
			memcpy(why, ps->why, sizeof(why));
			pthread_mutex_unlock(&ps->m_lock);
			if (ps->lost)
				ps->lost(why, ps->arg);
			pthread_mutex_lock(&ps->m_lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 500 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ps->m_wake, &ps->m_lock, &until);
		if (ps->stopping || ps->lost_pending || atomic_load(&ps->fenced))
			continue;
		pthread_mutex_unlock(&ps->m_lock);
		check_leadership(ps);
		pthread_mutex_lock(&ps->m_lock);
	}
	pthread_mutex_unlock(&ps->m_lock);
	return NULL;
}

/* --- open and close --------------------------------------------------- */

static void pg_free(struct pg_store *ps)
{
	pg_close_readers(ps);
	pg_conn_close(&ps->w);
	pthread_mutex_destroy(&ps->lock);
	pthread_mutex_destroy(&ps->r_lock);
	pthread_cond_destroy(&ps->r_free);
	pthread_mutex_destroy(&ps->m_lock);
	pthread_cond_destroy(&ps->m_wake);
	commit_queue_release(&ps->queue);
	free(ps->conninfo);
	free(ps->holder);
	free(ps);
}

static void pg_close(struct store *s)
{
	struct pg_store *ps = pg_of(s);
	if (ps->monitor_started) {
		pthread_mutex_lock(&ps->m_lock);
		ps->stopping = true;
		pthread_cond_signal(&ps->m_wake);
		pthread_mutex_unlock(&ps->m_lock);
		pthread_join(ps->monitor, NULL);
	}
	/* Given up explicitly, so that a standby gets it as soon as this
	 * returns (the backend ends its session, and drops the lock, only a
	 * little after the connection closes). */
	if (!atomic_load(&ps->fenced) && PQstatus(ps->w.db) == CONNECTION_OK) {
		PGresult *res = PQexec(ps->w.db, "SELECT pg_advisory_unlock(" PG_LOCK_CLASS ", "
						 PG_LOCK_OBJ ")");
		PQclear(res);
	}
	store_base_release(s);
	pg_free(ps);
}

static const struct store_ops pg_ops = {
	.name = "postgres",
	.close = pg_close,
	.index = pg_index,
	.get = pg_get,
	.get_index = pg_get_index,
	.list = pg_list,
	.group_index = pg_group_index,
	.commit = pg_commit,
	.view = pg_view,
	.snapshot = pg_snapshot,
};

/* Who holds the lock now: the holder string the leader recorded, when the
 * session that recorded it is the one holding the lock ("" otherwise, or
 * when there are no tables yet). */
static void read_holder(struct pg_conn *c, char *out, size_t size)
{
	static const char sql[] =
		"SELECT l.holder FROM leader l JOIN pg_locks k ON k.pid = l.pid"
		" WHERE k.locktype = 'advisory' AND k.granted"
		" AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
		" AND k.classid = $1::int8::oid AND k.objid = $2::int8::oid AND k.objsubid = 2";
	const char *v[] = { PG_LOCK_CLASS, PG_LOCK_OBJ };
	PGresult *res = PQexec(c->db, "SELECT to_regclass('leader') IS NOT NULL");
	bool have = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		    !strcmp(PQgetvalue(res, 0, 0), "t");
	out[0] = '\0';
	PQclear(res);
	if (!have)
		return;
	res = PQexecParams(c->db, sql, 2, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0)
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Takes the leadership lock on w as opts says (store.h). */
static int take_lock(struct pg_store *ps, const struct store_pg_options *opts,
		     struct herd_err *err)
{
	const char *v[] = { PG_LOCK_CLASS, PG_LOCK_OBJ };
	int64_t wait = opts ? opts->lock_wait_ns : -1;
	int64_t deadline = wait > 0 ? now_ns() + wait : 0;
	bool told = false;
	char holder[256] = "";

	for (;;) {
		PGresult *res = PQexecParams(ps->w.db,
					     "SELECT pg_try_advisory_lock($1::int4, $2::int4)", 2,
					     NULL, v, NULL, NULL, 0);
		bool got;
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			int rc = pg_err(ps, &ps->w, res, "taking the leadership lock", err);
			PQclear(res);
			return rc;
		}
		got = !strcmp(PQgetvalue(res, 0, 0), "t");
		PQclear(res);
		if (got)
			return 0;
		if (!told || (wait != 0 && opts && opts->leader)) {
			char was[sizeof(holder)];
			snprintf(was, sizeof(was), "%s", holder);
			read_holder(&ps->w, holder, sizeof(holder));
			if (!told && wait != 0 && opts && opts->waiting)
				opts->waiting(holder, opts->arg);
			/* who leads changes while we wait (a third server
			 * took over): standbys redirect to the current one */
			if (wait != 0 && opts && opts->leader && (!told || strcmp(was, holder)))
				opts->leader(holder, opts->leader_arg);
			told = true;
		}
		if (wait == 0 || (wait > 0 && now_ns() >= deadline))
			return herd_errf(err, -EBUSY,
					 "store: another herd server (%s) holds the PostgreSQL "
					 "store's leadership lock",
					 *holder ? holder : "holder unknown");
		if (opts && opts->cancelled && opts->cancelled(opts->arg))
			return herd_errf(err, -ECANCELED,
					 "store: waiting for the leadership lock was cancelled");
		/* 200 ms between tries: cancelled is polled as often */
		struct timespec nap = { 0, 200 * 1000000L };
		if (wait > 0 && deadline - now_ns() < 200 * 1000000L) {
			int64_t left = deadline - now_ns();
			nap.tv_nsec = left > 0 ? (long)left : 0;
		}
		nanosleep(&nap, NULL);
	}
}

/* CREATE TABLE for kind kd: the columns of sqlite.c's tables; keys in
 * byte order (COLLATE "C"). */
static void kind_table_sql(struct strbuf *sql, const struct store_kind_desc *kd)
{
	strbuf_addf(sql, "CREATE TABLE %s (id text COLLATE \"C\" NOT NULL, ", kd->table);
	if (kd->cols & STORE_COL_NS)
		strbuf_adds(sql, "namespace text COLLATE \"C\" NOT NULL, ");
	if (kd->cols & STORE_COL_VERSION)
		strbuf_adds(sql, "version bigint NOT NULL, ");
	if (kd->cols & STORE_COL_JOB)
		strbuf_adds(sql, "job_id text COLLATE \"C\" NOT NULL, ");
	if (kd->cols & STORE_COL_NODE)
		strbuf_adds(sql, "node_id text COLLATE \"C\" NOT NULL, "
				 "alloc_modify_index bigint NOT NULL DEFAULT 0, ");
	strbuf_addf(sql, "create_index bigint NOT NULL, modify_index bigint NOT NULL, "
			 "body text NOT NULL, PRIMARY KEY (%sid%s));\n",
		    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
		    kd->key_cols & STORE_COL_VERSION ? ", version" : "");
}

static int query_one(struct pg_store *ps, const char *sql, int nparams, const char *const *v,
		     char *out, size_t size, struct herd_err *err)
{
	PGresult *res = PQexecParams(ps->w.db, sql, nparams, NULL, v, NULL, NULL, 0);
	int rc = 0;
	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_err(ps, &ps->w, res, sql, err);
	else if (out)
		snprintf(out, size, "%s",
			 PQntuples(res) > 0 && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
	return rc;
}

/* Creates the tables when absent, or checks their schema version; records
 * this server as the holder.  One transaction, under the lock. */
static int check_schema(struct pg_store *ps, struct herd_err *err)
{
	struct strbuf sql = STRBUF_INIT;
	char have[32], version[32];
	char sv[16];
	const char *v1[] = { sv };
	const char *vh[] = { ps->holder };
	int rc;

	snprintf(sv, sizeof(sv), "%d", STORE_SCHEMA_VERSION);
	if ((rc = pg_exec(ps, &ps->w, "BEGIN", err)))
		return rc;
	if ((rc = query_one(ps, "SELECT to_regclass('meta') IS NOT NULL", 0, NULL, have,
			    sizeof(have), err)))
		goto out;
	if (strcmp(have, "t") != 0) {
		strbuf_adds(&sql, "CREATE TABLE meta (key text COLLATE \"C\" PRIMARY KEY,"
				  " value bigint NOT NULL);\n"
				  "CREATE TABLE group_index (name text COLLATE \"C\" PRIMARY KEY,"
				  " idx bigint NOT NULL);\n"
				  "CREATE TABLE leader (id int PRIMARY KEY CHECK (id = 1),"
				  " holder text NOT NULL, pid int NOT NULL,"
				  " since timestamptz NOT NULL);\n");
		for (int k = 0; k < STORE_KIND_COUNT; k++)
			kind_table_sql(&sql, &store_kinds[k]);
		strbuf_adds(&sql,
			    "CREATE INDEX evaluations_by_job ON evaluations (namespace, job_id);\n"
			    "CREATE INDEX allocations_by_job ON allocations (namespace, job_id);\n"
			    "CREATE INDEX allocations_by_node ON allocations (node_id);\n"
			    "CREATE INDEX allocations_by_node_change"
			    " ON allocations (node_id, modify_index);\n"
			    "CREATE INDEX allocations_by_node_server_change"
			    " ON allocations (node_id, alloc_modify_index);\n");
		if ((rc = pg_exec(ps, &ps->w, sql.buf, err)) ||
		    (rc = query_one(ps, "INSERT INTO meta VALUES ('schema_version', $1::bigint),"
					" ('index', 0)", 1, v1, NULL, 0, err)))
			goto out;
	}
	if ((rc = query_one(ps, "SELECT value FROM meta WHERE key = 'schema_version'", 0, NULL,
			    version, sizeof(version), err)))
		goto out;
	if (strtoll(version, NULL, 10) > STORE_SCHEMA_VERSION) {
		rc = herd_errf(err, -EPROTONOSUPPORT,
			       "store: the PostgreSQL store has schema version %s, newer than the "
			       "%d this herd knows; use a newer herd", version,
			       STORE_SCHEMA_VERSION);
		goto out;
	}
	/* migration in place: version 4 lacks only the variables table */
	if (strtoll(version, NULL, 10) == 4) {
		strbuf_reset(&sql);
		kind_table_sql(&sql, &store_kinds[STORE_VAR]);
		strbuf_addf(&sql, "UPDATE meta SET value = %d WHERE key = 'schema_version';",
			    STORE_SCHEMA_VERSION);
		if ((rc = pg_exec(ps, &ps->w, sql.buf, err)))
			goto out;
		snprintf(version, sizeof(version), "%d", STORE_SCHEMA_VERSION);
	}
	if (strtoll(version, NULL, 10) != STORE_SCHEMA_VERSION) {
		rc = herd_errf(err, -EINVAL, "store: the PostgreSQL store has a bad schema version "
					     "\"%s\"", version);
		goto out;
	}
	rc = query_one(ps, "INSERT INTO leader VALUES (1, $1, pg_backend_pid(), now())"
			   " ON CONFLICT (id) DO UPDATE SET holder = excluded.holder,"
			   " pid = excluded.pid, since = excluded.since",
		       1, vh, NULL, 0, err);
out:
	strbuf_release(&sql);
	if (rc == 0 && (rc = pg_exec(ps, &ps->w, "COMMIT", err)) == 0)
		return 0;
	(void)pg_exec(ps, &ps->w, "ROLLBACK", NULL);
	return rc;
}

int store_open_postgres(const char *conninfo, const struct store_pg_options *opts,
			struct store **out, struct herd_err *err)
{
	struct pg_store *ps;
	pthread_mutexattr_t attr;
	char *perr = NULL;
	PQconninfoOption *parsed;
	int rc;

	if (!conninfo)
		return herd_errf(err, -EINVAL, "store: no PostgreSQL connection string given");
	/* a malformed string is the caller's to fix, not a connection error */
	if (!(parsed = PQconninfoParse(conninfo, &perr))) {
		char msg[300];
		pg_one_line(msg, sizeof(msg), perr ? perr : "out of memory");
		PQfreemem(perr);
		return herd_errf(err, -EINVAL, "store: bad PostgreSQL connection string: %s", msg);
	}
	PQconninfoFree(parsed);

	ps = xcalloc(1, sizeof(*ps));
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ps->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_mutex_init(&ps->r_lock, NULL);
	pthread_cond_init(&ps->r_free, NULL);
	pthread_mutex_init(&ps->m_lock, NULL);
	pthread_condattr_t cattr;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&ps->m_wake, &cattr);
	pthread_condattr_destroy(&cattr);
	commit_queue_init(&ps->queue, pg_commit_group, ps);
	ps->conninfo = xstrdup(conninfo);
	ps->holder = xstrdup(opts && opts->holder ? opts->holder : "");
	ps->lost = opts ? opts->lost : NULL;
	ps->arg = opts ? opts->arg : NULL;

	if ((rc = pg_conn_open(conninfo, false, &ps->w, err)) || (rc = take_lock(ps, opts, err)) ||
	    (rc = check_schema(ps, err)) || (rc = store_base_init(&ps->base, &pg_ops, err)))
		goto fail;
	if ((rc = pthread_create(&ps->monitor, NULL, monitor_main, ps))) {
		store_base_release(&ps->base);
		rc = herd_errf(err, -rc, "store: starting the PostgreSQL monitor: %s", strerror(rc));
		goto fail;
	}
	ps->monitor_started = true;
	*out = &ps->base;
	return 0;
fail:
	pg_free(ps);
	return rc;
}

