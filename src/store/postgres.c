/* postgres.c: the PostgreSQL backend of the store (store.h:
 * store_open_postgres), through libpq.
 *
 * Tables.  The same tables and columns as the SQLite store (sqlite.c:
 * meta, group_index, one table per kind), with every key column text
 * COLLATE "C", so that lists come in byte order as SQLite's do whatever
 * the database's collation, plus `leader`, one row: who holds the store
 * (the holder string and the backend pid of its commit connection).  They
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
 * (thread_conn).
 *
 * Group commit: commit_queue.h, as in sqlite.c; one transaction per group,
 * a SAVEPOINT per change.
 *
 * Close-on-exec.  libpq opens its socket without SOCK_CLOEXEC (and has no
 * option for it), and herd spawns tasks: a task that inherited the socket
 * would keep the session, hence the leadership lock, alive after the
 * server died, and could speak on it.  Every connection gets FD_CLOEXEC on
 * PQsocket() right after PQconnectdbParams returns (conn_open), the
 * shortest window libpq allows; the agent's spawns (drivers, checks, MPS)
 * also close every fd above 2 in the child (closefrom), which covers a
 * spawn inside that window. */
#include "store/store-int.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/commit_queue.h"

/* The advisory lock's key (two int4): "herd" in ASCII, and 1. */
#define PG_LOCK_CLASS "1751478884"
#define PG_LOCK_OBJ "1"

/* Readers opened at most (see sqlite.c's SQLITE_READERS_MAX). */
#define PG_READERS_MAX 4

/* PostgreSQL's type oids (pg_type.dat), for parameters. */
#define TEXTOID 25
#define INT8OID 20
#define BOOLOID 16
#define TEXTARRAYOID 1009

/* Per kind: a write is one statement and one round trip (PG_PUT,
 * PG_DELETE), which answers with what the commit must know of the row it
 * replaced: a round trip (~50 us on a local socket) costs more than the
 * SQL, and a plan writes many rows. */
enum pg_slot {
	PG_GET,
	PG_PUT,
	PG_DELETE,
	PG_MODIFY_INDEX,
	PG_INSERT_RAW, /* a restore's rows, indexes as given */
	PG_SLOTS_PER_KIND
};

enum pg_global {
	PG_READ_INDEX,
	PG_READ_GROUP,
	PG_BUMP_GROUP,
	PG_BUMP_GROUPS,
	PG_GLOBALS
};

#define PG_LIST_SHAPES 32
#define PG_STMTS (PG_GLOBALS + STORE_KIND_COUNT * (PG_SLOTS_PER_KIND + PG_LIST_SHAPES))

/* One connection and which statements it has prepared (named "s<n>"). */
struct pg_conn {
	PGconn *db;
	bool prepared[PG_STMTS];
	struct pg_conn *next; /* readers: the free list */
};

struct pg_store {
	struct store base;
	char *conninfo;
	char *holder;
	struct pg_conn w;     /* commits, and reads inside them; holds the lock */
	pthread_mutex_t lock; /* guards w (recursive: a check reads on w) */

	/* readers: guarded by r_lock */
	pthread_mutex_t r_lock;
	pthread_cond_t r_free;
	struct pg_conn *r_idle;
	int r_open;

	struct commit_queue queue;

	/* fencing and the monitor: guarded by m_lock */
	pthread_mutex_t m_lock;
	pthread_cond_t m_wake;
	pthread_t monitor;
	bool monitor_started, stopping;
	atomic_bool fenced;   /* w is lost: no commit any more */
	bool lost_pending;    /* lost to be called by the monitor */
	char why[256];
	void (*lost)(const char *why, void *arg);
	void *arg;
};

/* The connection whose transaction this thread runs, and its store (see
 * sqlite.c). */
static _Thread_local struct pg_conn *thread_conn;
static _Thread_local struct pg_store *thread_store;

static struct pg_store *ps_of(struct store *s)
{
	return (struct pg_store *)s;
}

/* --- errors ----------------------------------------------------------- */

/* libpq's message, one line (its messages end in newlines). */
static void one_line(char *buf, size_t size, const char *msg)
{
	size_t n = 0;
	for (const char *p = msg ? msg : ""; *p && n + 1 < size; p++)
		buf[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

static void fence(struct pg_store *ps, const char *why);

/* The error of a failed command on c: -ENOTCONN when the connection is
 * gone (and, for w, the store fenced), else by SQLSTATE. */
static int pg_err(struct pg_store *ps, struct pg_conn *c, const PGresult *res, const char *what,
		  struct herd_err *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char msg[400];
	int e = -EIO;

	one_line(msg, sizeof(msg),
		 res && *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
						   : PQerrorMessage(c->db));
	if (PQstatus(c->db) != CONNECTION_OK || (state && !strncmp(state, "08", 2)) ||
	    (state && !strncmp(state, "57P", 3))) {
		e = -ENOTCONN;
		if (c == &ps->w)
			fence(ps, msg);
	} else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") ||
			     !strcmp(state, "55P03"))) {
		e = -EBUSY;
	} else if (state && !strcmp(state, "53100")) {
		e = -ENOSPC;
	} else if (state && !strcmp(state, "42501")) {
		e = -EACCES;
	}
	return herd_errf(err, e, "store: %s: %s", what, msg);
}

/* --- statements ------------------------------------------------------- */

/* The key's WHERE clause with the kind statements' parameters ($1 id,
 * $2 namespace, $3 version). */
static void add_key_where(struct strbuf *sb, const struct store_kind_desc *kd)
{
	strbuf_adds(sb, " WHERE ");
	if (kd->key_cols & STORE_COL_NS)
		strbuf_adds(sb, "namespace=$2 AND ");
	if (kd->key_cols & STORE_COL_VERSION)
		strbuf_adds(sb, "version=$3 AND ");
	strbuf_adds(sb, "id=$1");
}

/* The kind statements' parameters, always all ten (unused ones are typed,
 * so PostgreSQL accepts them). */
enum { KP_ID, KP_NS, KP_VERSION, KP_JOB, KP_NODE, KP_CI, KP_MI, KP_AMI, KP_BODY, KP_REPORT,
       KP_COUNT };
static const Oid kind_param_types[KP_COUNT] = { TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID,
						INT8OID, INT8OID, INT8OID, TEXTOID, BOOLOID };

/* INSERT INTO table (columns) VALUES (parameters) of a row of kd. */
static void insert_sql(struct strbuf *sql, const struct store_kind_desc *kd)
{
	bool ns = kd->cols & STORE_COL_NS, ver = kd->cols & STORE_COL_VERSION,
	     job = kd->cols & STORE_COL_JOB, node = kd->cols & STORE_COL_NODE;
	strbuf_addf(sql, "INSERT INTO %s (id, %s%s%s%s%screate_index, modify_index, body)"
		    " VALUES ($1, %s%s%s%s%s$6, $7, $9)",
		    kd->table, ns ? "namespace, " : "", ver ? "version, " : "",
		    job ? "job_id, " : "", node ? "node_id, " : "",
		    node ? "alloc_modify_index, " : "", ns ? "$2, " : "", ver ? "$3, " : "",
		    job ? "$4, " : "", node ? "$5, " : "", node ? "$8, " : "");
}

static void kind_sql(struct strbuf *sql, const struct store_kind_desc *kd, enum pg_slot slot)
{
	bool ns = kd->cols & STORE_COL_NS, job = kd->cols & STORE_COL_JOB,
	     node = kd->cols & STORE_COL_NODE;
	switch (slot) {
	case PG_GET:
		strbuf_addf(sql, "SELECT create_index, modify_index, body FROM %s", kd->table);
		add_key_where(sql, kd);
		break;
	case PG_PUT:
		/* Insert, or update keeping create_index; answers the record's
		 * create_index.  An allocation also keeps alloc_modify_index
		 * on a report ($10), and answers the namespace, job and node
		 * it had before, whose groups a move changes too: every part
		 * of a WITH query sees the state before it, so old is the row
		 * as it was. */
		if (!node) {
			insert_sql(sql, kd);
			strbuf_addf(sql, " ON CONFLICT (%sid%s) DO UPDATE SET %s%s"
				    "modify_index=excluded.modify_index, body=excluded.body"
				    " RETURNING create_index",
				    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
				    kd->key_cols & STORE_COL_VERSION ? ", version" : "",
				    ns && !(kd->key_cols & STORE_COL_NS)
					    ? "namespace=excluded.namespace, " : "",
				    job ? "job_id=excluded.job_id, " : "");
			break;
		}
		strbuf_addf(sql, "WITH old AS (SELECT namespace, job_id, node_id FROM %s",
			    kd->table);
		add_key_where(sql, kd);
		strbuf_adds(sql, "), up AS (");
		insert_sql(sql, kd);
		strbuf_addf(sql, " ON CONFLICT (id) DO UPDATE SET namespace=excluded.namespace,"
			    " job_id=excluded.job_id, node_id=excluded.node_id,"
			    " alloc_modify_index = CASE WHEN $10 THEN %s.alloc_modify_index"
			    " ELSE excluded.alloc_modify_index END,"
			    " modify_index=excluded.modify_index, body=excluded.body"
			    " RETURNING create_index) SELECT up.create_index, old.namespace,"
			    " old.job_id, old.node_id FROM up LEFT JOIN old ON true",
			    kd->table);
		break;
	case PG_DELETE:
		strbuf_addf(sql, "DELETE FROM %s", kd->table);
		add_key_where(sql, kd);
		strbuf_addf(sql, " RETURNING create_index, %s, %s, %s",
			    ns ? "namespace" : "NULL::text", job ? "job_id" : "NULL::text",
			    node ? "node_id" : "NULL::text");
		break;
	case PG_MODIFY_INDEX:
		strbuf_addf(sql, "SELECT modify_index FROM %s", kd->table);
		add_key_where(sql, kd);
		break;
	case PG_INSERT_RAW:
		insert_sql(sql, kd);
		break;
	case PG_SLOTS_PER_KIND:
		break;
	}
}

/* Prepares statement n ("s<n>") on c once, from sql. */
static int prepare_stmt(struct pg_store *ps, struct pg_conn *c, int n, const char *what,
			const char *sql, int nparams, const Oid *types, struct herd_err *err)
{
	char name[16];
	PGresult *res;
	int rc = 0;

	if (c->prepared[n])
		return 0;
	snprintf(name, sizeof(name), "s%d", n);
	res = PQprepare(c->db, name, sql, nparams, types);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_err(ps, c, res, what, err);
	else
		c->prepared[n] = true;
	PQclear(res);
	return rc;
}

/* Runs statement n on c with params (text), preparing it on first use from
 * sql.  On success *out is the result (PQclear it). */
static int run_stmt(struct pg_store *ps, struct pg_conn *c, int n, const char *what,
		    const char *sql, int nparams, const Oid *types, const char *const *values,
		    PGresult **out, struct herd_err *err)
{
	char name[16];
	PGresult *res;
	ExecStatusType st;
	int rc;

	if ((rc = prepare_stmt(ps, c, n, what, sql, nparams, types, err)))
		return rc;
	snprintf(name, sizeof(name), "s%d", n);
	res = PQexecPrepared(c->db, name, nparams, values, NULL, NULL, 0);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		rc = pg_err(ps, c, res, what, err);
		PQclear(res);
		return rc;
	}
	*out = res;
	return 0;
}

struct kparams {
	char version[24], ci[24], mi[24], ami[24];
	const char *v[KP_COUNT];
};

static void kparams_key(struct kparams *p, const struct store_key *key)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->version, sizeof(p->version), "%lld", (long long)key->version);
	p->v[KP_ID] = key->id;
	p->v[KP_NS] = key->ns;
	p->v[KP_VERSION] = p->version;
}

static void kparams_int(struct kparams *p, int which, char *buf, size_t size, uint64_t v)
{
	snprintf(buf, size, "%llu", (unsigned long long)v);
	p->v[which] = buf;
}

static int kind_stmt_number(const struct store_kind_desc *kd, enum pg_slot slot)
{
	return PG_GLOBALS + (int)kd->kind * PG_SLOTS_PER_KIND + (int)slot;
}

static int kind_prepare(struct pg_store *ps, struct pg_conn *c, const struct store_kind_desc *kd,
			enum pg_slot slot, struct herd_err *err)
{
	struct strbuf sql = STRBUF_INIT;
	int n = kind_stmt_number(kd, slot);
	int rc;
	if (c->prepared[n])
		return 0;
	kind_sql(&sql, kd, slot);
	rc = prepare_stmt(ps, c, n, kd->table, sql.buf, KP_COUNT, kind_param_types, err);
	strbuf_release(&sql);
	return rc;
}

static int kind_run(struct pg_store *ps, struct pg_conn *c, const struct store_kind_desc *kd,
		    enum pg_slot slot, const struct kparams *p, PGresult **out,
		    struct herd_err *err)
{
	int rc = kind_prepare(ps, c, kd, slot, err);
	/* prepared now: run_stmt needs no SQL */
	return rc ? rc : run_stmt(ps, c, kind_stmt_number(kd, slot), kd->table, "", KP_COUNT,
				  kind_param_types, p->v, out, err);
}

static uint64_t value_u64(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? 0
					  : (uint64_t)strtoull(PQgetvalue(res, row, col), NULL, 10);
}

/* Runs a statement without parameters nor prepared form (transaction
 * control). */
static int exec_cmd(struct pg_store *ps, struct pg_conn *c, const char *sql, struct herd_err *err)
{
	PGresult *res = PQexec(c->db, sql);
	int rc = 0;
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = pg_err(ps, c, res, sql, err);
	PQclear(res);
	return rc;
}

/* --- connections ------------------------------------------------------ */

/* Connects to conninfo.  The defaults here come before conninfo, which may
 * override them: libpq's keepalives and tcp_user_timeout find a silent
 * network in about ten seconds rather than the kernel's two hours.
 * client_encoding comes after: bodies are UTF-8. */
static int conn_open(const char *conninfo, bool reader, struct pg_conn *c, struct herd_err *err)
{
	static const char *const keys[] = { "connect_timeout", "keepalives", "keepalives_idle",
					    "keepalives_interval", "keepalives_count",
					    "tcp_user_timeout", "application_name", "dbname",
					    "client_encoding", NULL };
	const char *values[] = { "10", "1", "5", "2", "3", "10000", "herd", conninfo, "UTF8",
				 NULL };
	char msg[400];
	const char *enc;
	int fd, flags, rc;

	memset(c, 0, sizeof(*c));
	c->db = PQconnectdbParams(keys, values, 1);
	if (!c->db)
		return herd_errf(err, -ENOMEM, "store: out of memory connecting to PostgreSQL");
	/* First thing, before any other call can give a spawn time to
	 * inherit it (the file comment says why). */
	fd = PQsocket(c->db);
	if (fd >= 0 && ((flags = fcntl(fd, F_GETFD)) < 0 ||
			fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)) {
		rc = herd_errf(err, -errno, "store: setting close-on-exec on the PostgreSQL socket: %s",
			       strerror(errno));
		goto fail;
	}
	if (PQstatus(c->db) != CONNECTION_OK) {
		one_line(msg, sizeof(msg), PQerrorMessage(c->db));
		rc = herd_errf(err, -ECONNREFUSED, "store: cannot connect to PostgreSQL: %s", msg);
		goto fail;
	}
	enc = PQparameterStatus(c->db, "server_encoding");
	if (!enc || (strcmp(enc, "UTF8") && strcmp(enc, "SQL_ASCII"))) {
		rc = herd_errf(err, -EINVAL,
			       "store: the PostgreSQL database has encoding %s; herd needs UTF8 "
			       "(CREATE DATABASE ... ENCODING 'UTF8')", enc ? enc : "(unknown)");
		goto fail;
	}
	/* w: durability is PostgreSQL's (file comment); readers: read only.
	 * Both: no idle_session_timeout (PostgreSQL 14+), which would end a
	 * reader resting in the pool, or w between the monitor's checks. */
	PGresult *res = PQexec(c->db, reader
		? "SET default_transaction_read_only = on;"
		  " SELECT set_config('idle_session_timeout', '0', false) FROM pg_settings"
		  " WHERE name = 'idle_session_timeout'"
		: "SET synchronous_commit = on;"
		  " SELECT set_config('idle_session_timeout', '0', false) FROM pg_settings"
		  " WHERE name = 'idle_session_timeout'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		one_line(msg, sizeof(msg), PQerrorMessage(c->db));
		PQclear(res);
		rc = herd_errf(err, -EIO, "store: configuring the PostgreSQL session: %s", msg);
		goto fail;
	}
	PQclear(res);
	return 0;
fail:
	PQfinish(c->db);
	c->db = NULL;
	return rc;
}

static void conn_close(struct pg_conn *c)
{
	if (c->db)
		PQfinish(c->db);
	memset(c, 0, sizeof(*c));
}

/* Whether an idle reader is still good: anything that arrived while it
 * rested says it is not (its session was ended: a FATAL message, then
 * EOF; a server's notice to an idle session is rare enough to cost a new
 * connection).  One poll, no round trip; a reader lost without a word
 * fails its next read once, and is replaced after it (conn_put). */
static bool idle_reader_ok(struct pg_conn *c)
{
	struct pollfd p = { PQsocket(c->db), POLLIN, 0 };
	return PQstatus(c->db) == CONNECTION_OK && poll(&p, 1, 0) == 0;
}

/* See sqlite.c's conn_get: this thread's transaction's connection, else
 * an idle reader, else a new one (up to PG_READERS_MAX), else wait. */
static struct pg_conn *conn_get(struct pg_store *ps, struct herd_err *err)
{
	struct pg_conn *c;
	int rc;
	if (thread_store == ps && thread_conn) {
		if (thread_conn == &ps->w)
			pthread_mutex_lock(&ps->lock); /* held: recursive */
		return thread_conn;
	}
	pthread_mutex_lock(&ps->r_lock);
	for (;;) {
		while (!ps->r_idle && ps->r_open >= PG_READERS_MAX)
			pthread_cond_wait(&ps->r_free, &ps->r_lock);
		c = ps->r_idle;
		if (!c)
			break;
		ps->r_idle = c->next;
		if (idle_reader_ok(c)) {
			pthread_mutex_unlock(&ps->r_lock);
			return c;
		}
		/* the database restarted, or the session was ended */
		conn_close(c);
		free(c);
		ps->r_open--;
	}
	ps->r_open++;
	pthread_mutex_unlock(&ps->r_lock);
	c = xcalloc(1, sizeof(*c));
	if ((rc = conn_open(ps->conninfo, true, c, err))) {
		free(c);
		pthread_mutex_lock(&ps->r_lock);
		ps->r_open--;
		pthread_cond_signal(&ps->r_free);
		pthread_mutex_unlock(&ps->r_lock);
		return NULL;
	}
	return c;
}

static void conn_put(struct pg_store *ps, struct pg_conn *c)
{
	if (c == &ps->w) {
		pthread_mutex_unlock(&ps->lock);
		return;
	}
	if (thread_store == ps && thread_conn == c)
		return; /* the view's: it gives it back when it ends */
	pthread_mutex_lock(&ps->r_lock);
	if (PQstatus(c->db) != CONNECTION_OK) {
		/* broken (the database restarted): a new one next time */
		conn_close(c);
		free(c);
		ps->r_open--;
	} else {
		c->next = ps->r_idle;
		ps->r_idle = c;
	}
	pthread_cond_signal(&ps->r_free);
	pthread_mutex_unlock(&ps->r_lock);
}

#define CONN_GET(ps, c, err)                                                 \
	do {                                                                 \
		if (!((c) = conn_get((ps), (err))))                          \
			return (err) && (err)->code ? (err)->code : -ENOTCONN; \
	} while (0)

/* --- reads ------------------------------------------------------------ */

static int read_group_on(struct pg_store *ps, struct pg_conn *c, const char *group,
			 uint64_t *out, struct herd_err *err)
{
	static const Oid types[] = { TEXTOID };
	const char *v[] = { group };
	PGresult *res;
	int rc = run_stmt(ps, c, PG_READ_GROUP, "read group index", "SELECT idx FROM group_index WHERE name=$1", 1,
			  types, v, &res, err);
	if (rc)
		return rc;
	*out = PQntuples(res) > 0 ? value_u64(res, 0, 0) : 0;
	PQclear(res);
	return 0;
}

static int pg_group_index(struct store *s, const char *group, uint64_t *out,
			  struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);
	struct pg_conn *c;
	int rc;
	CONN_GET(ps, c, err);
	rc = read_group_on(ps, c, group, out, err);
	conn_put(ps, c);
	return rc;
}

static int pg_index(struct store *s, uint64_t *out, struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);
	struct pg_conn *c;
	PGresult *res;
	int rc;
	CONN_GET(ps, c, err);
	rc = run_stmt(ps, c, PG_READ_INDEX, "read index", "SELECT value FROM meta WHERE key='index'", 0, NULL,
		      NULL, &res, err);
	if (rc == 0) {
		if (PQntuples(res) == 1)
			*out = value_u64(res, 0, 0);
		else
			rc = herd_errf(err, -EIO, "store: meta table has no index");
		PQclear(res);
	}
	conn_put(ps, c);
	return rc;
}

/* Row r of res (columns 0-2: create_index, modify_index, body). */
static void found_fill(struct store_found *row, const PGresult *res, int r, bool committed)
{
	row->create_index = value_u64(res, r, 0);
	row->modify_index = value_u64(res, r, 1);
	row->body = PQgetvalue(res, r, 2);
	row->body_len = (size_t)PQgetlength(res, r, 2);
	row->committed = committed;
}

static int pg_get(struct store *s, const struct store_kind_desc *kd, const struct store_key *key,
		  store_row_fn *fn, void *arg, struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);
	struct pg_conn *c;
	struct kparams p;
	PGresult *res;
	int rc;

	CONN_GET(ps, c, err);
	kparams_key(&p, key);
	if ((rc = kind_run(ps, c, kd, PG_GET, &p, &res, err)))
		goto out;
	if (PQntuples(res) > 0) {
		struct store_found row;
		row.key = *key;
		found_fill(&row, res, 0, c != &ps->w);
		rc = fn(&row, arg, err);
	} else {
		rc = herd_errf(err, -ENOENT, "store: no %s \"%s\"", kd->name, key->id);
	}
	PQclear(res);
out:
	conn_put(ps, c);
	return rc;
}

static int pg_get_index(struct store *s, const struct store_kind_desc *kd,
			const struct store_key *key, uint64_t *mi, struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);
	struct pg_conn *c;
	struct kparams p;
	PGresult *res;
	int rc;

	CONN_GET(ps, c, err);
	kparams_key(&p, key);
	if ((rc = kind_run(ps, c, kd, PG_MODIFY_INDEX, &p, &res, err)))
		goto out;
	if (PQntuples(res) > 0)
		*mi = value_u64(res, 0, 0);
	else
		rc = herd_errf(err, -ENOENT, "store: no %s \"%s\"", kd->name, key->id);
	PQclear(res);
out:
	conn_put(ps, c);
	return rc;
}

static int pg_list(struct store *s, const struct store_kind_desc *kd, const struct store_filter *f,
		   uint64_t after, bool server_changes, store_row_fn *fn, void *arg,
		   struct herd_err *err)
{
	static const Oid types[] = { TEXTOID, TEXTOID, TEXTOID, INT8OID };
	struct pg_store *ps = ps_of(s);
	struct strbuf sql = STRBUF_INIT;
	const char *sep = " WHERE ";
	bool by_ami = server_changes && (kd->cols & STORE_COL_NODE);
	unsigned shape = (f->ns ? 1u : 0) | (f->job_id ? 2u : 0) | (f->node_id ? 4u : 0) |
			 (after ? 8u : 0) | (after && by_ami ? 16u : 0);
	int n = PG_GLOBALS + STORE_KIND_COUNT * PG_SLOTS_PER_KIND +
		(int)kd->kind * PG_LIST_SHAPES + (int)shape;
	char after_s[24];
	const char *v[4] = { f->ns, f->job_id, f->node_id, after_s };
	struct pg_conn *c;
	PGresult *res;
	int rc;

	CONN_GET(ps, c, err);
	snprintf(after_s, sizeof(after_s), "%llu", (unsigned long long)after);
	if (!c->prepared[n]) {
		/* the key columns too: the store caches decoded records by key */
		strbuf_addf(&sql, "SELECT create_index, modify_index, body, id, %s, %s FROM %s",
			    kd->key_cols & STORE_COL_NS ? "namespace" : "NULL::text",
			    kd->key_cols & STORE_COL_VERSION ? "version" : "0", kd->table);
		if (f->ns) {
			strbuf_addf(&sql, "%snamespace=$1", sep);
			sep = " AND ";
		}
		if (f->job_id) {
			/* a job version's or usage record's id is its job's id */
			strbuf_addf(&sql, "%s%s=$2", sep,
				    kd->key_cols & STORE_COL_VERSION ? "id" : "job_id");
			sep = " AND ";
		}
		if (f->node_id) {
			strbuf_addf(&sql, "%snode_id=$3", sep);
			sep = " AND ";
		}
		if (after)
			strbuf_addf(&sql, "%s%smodify_index>$4", sep, by_ami ? "alloc_" : "");
		strbuf_addf(&sql, " ORDER BY %sid%s",
			    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
			    kd->key_cols & STORE_COL_VERSION ? ", version" : "");
	}
	rc = run_stmt(ps, c, n, "list", sql.buf ? sql.buf : "", 4, types, v, &res, err);
	strbuf_release(&sql);
	if (rc)
		goto out;
	for (int r = 0; r < PQntuples(res) && rc == 0; r++) {
		struct store_found row;
		row.key.id = PQgetvalue(res, r, 3);
		row.key.ns = PQgetisnull(res, r, 4) ? NULL : PQgetvalue(res, r, 4);
		row.key.version = (int64_t)strtoll(PQgetvalue(res, r, 5), NULL, 10);
		found_fill(&row, res, r, c != &ps->w);
		rc = fn(&row, arg, err);
	}
	PQclear(res);
out:
	conn_put(ps, c);
	return rc;
}

/* --- writes ----------------------------------------------------------- */

/* The groups one change touches, each once: bumped together at the end
 * of the change, in one statement (a plan of 64 allocations on 64 nodes
 * touches 66 groups). */
struct groups {
	char **v;
	size_t n, a;
};

static void groups_add(struct groups *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->v[i], name))
			return;
	if (g->n == g->a) {
		g->a = g->a ? 2 * g->a : 8;
		g->v = xreallocarray(g->v, g->a, sizeof(*g->v));
	}
	g->v[g->n++] = xstrdup(name);
}

static void groups_add_alloc(struct groups *g, const char *ns, const char *job_id,
			     const char *node_id)
{
	struct strbuf sb = STRBUF_INIT;
	store_group_node_allocs(&sb, node_id);
	groups_add(g, sb.buf);
	store_group_job_allocs(&sb, ns, job_id);
	groups_add(g, sb.buf);
	strbuf_release(&sb);
}

static void groups_release(struct groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i]);
	free(g->v);
	memset(g, 0, sizeof(*g));
}

/* Sets every group of g to idx: one parameter, a text[] in PostgreSQL's
 * array syntax (each element quoted, '"' and '\' escaped). */
static int groups_bump(struct pg_store *ps, const struct groups *g, uint64_t idx,
		       struct herd_err *err)
{
	static const Oid types[] = { TEXTARRAYOID, INT8OID };
	struct strbuf arr = STRBUF_INIT;
	char idx_s[24];
	const char *v[] = { NULL, idx_s };
	PGresult *res;
	int rc;

	if (g->n == 0)
		return 0;
	strbuf_addch(&arr, '{');
	for (size_t i = 0; i < g->n; i++) {
		if (i)
			strbuf_addch(&arr, ',');
		strbuf_addch(&arr, '"');
		for (const char *p = g->v[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				strbuf_addch(&arr, '\\');
			strbuf_addch(&arr, *p);
		}
		strbuf_addch(&arr, '"');
	}
	strbuf_addch(&arr, '}');
	v[0] = arr.buf;
	snprintf(idx_s, sizeof(idx_s), "%llu", (unsigned long long)idx);
	rc = run_stmt(ps, &ps->w, PG_BUMP_GROUPS, "bump group indexes",
		      "INSERT INTO group_index (name, idx) SELECT unnest($1::text[]), $2"
		      " ON CONFLICT (name) DO UPDATE SET idx = excluded.idx",
		      2, types, v, &res, err);
	if (rc == 0)
		PQclear(res);
	strbuf_release(&arr);
	return rc;
}

/* One group set to idx (a restore's). */
static int bump_group(struct pg_store *ps, const char *group, uint64_t idx, struct herd_err *err)
{
	static const Oid types[] = { TEXTOID, INT8OID };
	char idx_s[24];
	const char *v[] = { group, idx_s };
	PGresult *res;
	int rc;
	snprintf(idx_s, sizeof(idx_s), "%llu", (unsigned long long)idx);
	rc = run_stmt(ps, &ps->w, PG_BUMP_GROUP, "bump group index",
		      "INSERT INTO group_index (name, idx) VALUES ($1, $2)"
		      " ON CONFLICT (name) DO UPDATE SET idx = excluded.idx",
		      2, types, v, &res, err);
	if (rc == 0)
		PQclear(res);
	return rc;
}

/* The parameters of a row's statement (PG_PUT or PG_DELETE) at idx. */
static void row_params(struct kparams *p, const struct store_row *row, uint64_t idx)
{
	kparams_key(p, &row->key);
	p->v[KP_JOB] = row->job_id;
	p->v[KP_NODE] = row->node_id;
	kparams_int(p, KP_CI, p->ci, sizeof(p->ci), idx);
	kparams_int(p, KP_MI, p->mi, sizeof(p->mi), idx);
	kparams_int(p, KP_AMI, p->ami, sizeof(p->ami), idx);
	p->v[KP_BODY] = row->op == STORE_OP_PUT ? row->body : NULL;
	p->v[KP_REPORT] = row->report ? "t" : "f";
}

static enum pg_slot row_slot(const struct store_row *row)
{
	return row->op == STORE_OP_PUT ? PG_PUT : PG_DELETE;
}

/* What a row's statement answered: the record's create_index, and the
 * groups the row touches into g (as sqlite.c's apply_row bumps them: its
 * kind; an allocation's node and job, and those it had before when it
 * moved or went away). */
static int row_result(struct pg_store *ps, struct store_row *row, const PGresult *res,
		      struct groups *g, struct herd_err *err)
{
	const struct store_kind_desc *kd = row->kd;
	struct strbuf sb = STRBUF_INIT;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_err(ps, &ps->w, res, kd->table, err);
	if (PQntuples(res) == 0) /* only a delete finds nothing */
		return herd_errf(err, -ENOENT, "store: no %s \"%s\" to delete", kd->name,
				 row->key.id);
	row->create_index = value_u64(res, 0, 0);
	if ((kd->cols & STORE_COL_NODE) && !PQgetisnull(res, 0, 3))
		groups_add_alloc(g, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2),
				 PQgetvalue(res, 0, 3));
	store_group_kind(&sb, kd);
	groups_add(g, sb.buf);
	strbuf_release(&sb);
	if (row->op == STORE_OP_PUT && row->node_id)
		groups_add_alloc(g, row->key.ns, row->job_id, row->node_id);
	return 0;
}

/* One row: one statement, one round trip. */
static int apply_row(struct pg_store *ps, struct store_row *row, uint64_t idx, struct groups *g,
		     struct herd_err *err)
{
	struct kparams p;
	PGresult *res = NULL;
	int rc;

	row_params(&p, row, idx);
	if ((rc = kind_run(ps, &ps->w, row->kd, row_slot(row), &p, &res, err)))
		return rc;
	rc = row_result(ps, row, res, g, err);
	PQclear(res);
	return rc;
}

/* Several rows in one round trip (libpq's pipeline mode): no row's
 * statement depends on another's answer.  The first error is the change's;
 * PostgreSQL skips the statements after it (the change is rolled back to
 * its savepoint anyway). */
static int apply_rows(struct pg_store *ps, struct store_row *rows, size_t n, uint64_t idx,
		      struct groups *g, struct herd_err *err)
{
	PGconn *db = ps->w.db;
	struct kparams *p;
	PGresult *res;
	size_t sent = 0;
	int rc = 0;

	if (n == 1)
		return apply_row(ps, &rows[0], idx, g, err);
	for (size_t i = 0; i < n; i++)
		if ((rc = kind_prepare(ps, &ps->w, rows[i].kd, row_slot(&rows[i]), err)))
			return rc;
	if (!PQenterPipelineMode(db))
		return pg_err(ps, &ps->w, NULL, "enter pipeline mode", err);
	p = xcalloc(n, sizeof(*p));
	for (; sent < n; sent++) {
		char name[16];
		snprintf(name, sizeof(name), "s%d", kind_stmt_number(rows[sent].kd,
								     row_slot(&rows[sent])));
		row_params(&p[sent], &rows[sent], idx);
		if (!PQsendQueryPrepared(db, name, KP_COUNT, p[sent].v, NULL, NULL, 0)) {
			rc = pg_err(ps, &ps->w, NULL, rows[sent].kd->table, err);
			break;
		}
	}
	if (!PQpipelineSync(db) && rc == 0)
		rc = pg_err(ps, &ps->w, NULL, "pipeline sync", err);
	/* each statement's results end with a NULL; then the sync's */
	for (size_t i = 0; i < sent; i++) {
		bool first = true;
		while ((res = PQgetResult(db))) {
			if (first && rc == 0)
				rc = row_result(ps, &rows[i], res, g, err);
			first = false;
			PQclear(res);
		}
		if (first && rc == 0) /* no result at all: the connection is gone */
			rc = pg_err(ps, &ps->w, NULL, rows[i].kd->table, err);
		if (PQstatus(db) != CONNECTION_OK)
			break;
	}
	while (PQstatus(db) == CONNECTION_OK && (res = PQgetResult(db))) {
		ExecStatusType st = PQresultStatus(res);
		PQclear(res);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	if (!PQexitPipelineMode(db) && rc == 0)
		rc = pg_err(ps, &ps->w, NULL, "leave pipeline mode", err);
	free(p);
	return rc;
}

static int check_cond(struct pg_store *ps, const struct store_cond *c, struct herd_err *err)
{
	struct strbuf g = STRBUF_INIT;
	uint64_t have = 0;
	int rc;

	if (c->type == STORE_COND_MODIFY_INDEX) {
		const struct store_kind_desc *kd = &store_kinds[c->kind];
		struct store_key key = { c->ns, c->id, c->version };
		struct kparams p;
		PGresult *res;
		kparams_key(&p, &key);
		if ((rc = kind_run(ps, &ps->w, kd, PG_MODIFY_INDEX, &p, &res, err)))
			return rc;
		if (PQntuples(res) > 0)
			have = value_u64(res, 0, 0);
		PQclear(res);
		if (have != c->index)
			return herd_errf(err, -ESTALE,
					 "store: %s \"%s\" is at index %llu, expected %llu",
					 kd->name, c->id, (unsigned long long)have,
					 (unsigned long long)c->index);
		return 0;
	}
	if (c->type == STORE_COND_NODE_ALLOCS)
		store_group_node_allocs(&g, c->id);
	else
		store_group_job_allocs(&g, c->ns, c->id);
	rc = read_group_on(ps, &ps->w, g.buf, &have, err);
	strbuf_release(&g);
	if (rc)
		return rc;
	if (have > c->index)
		return herd_errf(err, -ESTALE,
				 "store: allocations of %s \"%s\" changed at index %llu, after %llu",
				 c->type == STORE_COND_NODE_ALLOCS ? "node" : "job", c->id,
				 (unsigned long long)have, (unsigned long long)c->index);
	return 0;
}

/* One change of a group in its own savepoint (see sqlite.c): bump the
 * index, check, write, bump the groups. */
static int apply_change(struct pg_store *ps, struct commit_req *r)
{
	struct herd_err *err = r->err;
	struct groups g = { 0 };
	PGresult *res;
	uint64_t idx = 0;
	int rc = 0;

	/* one round trip for both (no parameters: the simple protocol takes
	 * several statements and answers the last) */
	res = PQexec(ps->w.db, "SAVEPOINT change;"
			       " UPDATE meta SET value = value + 1 WHERE key = 'index' RETURNING value");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		rc = pg_err(ps, &ps->w, res, "bump index", err);
		PQclear(res);
		goto rollback;
	}
	idx = value_u64(res, 0, 0);
	PQclear(res);
	for (size_t i = 0; i < r->nconds; i++)
		if ((rc = check_cond(ps, &r->conds[i], err)))
			goto rollback;
	if (r->check && (rc = r->check(&ps->base, r->check_arg, err)))
		goto rollback;
	if ((rc = apply_rows(ps, r->rows, r->nrows, idx, &g, err)) ||
	    (rc = groups_bump(ps, &g, idx, err)) ||
	    (rc = exec_cmd(ps, &ps->w, "RELEASE SAVEPOINT change", err)))
		goto rollback;
	groups_release(&g);
	r->index = idx;
	return 0;
rollback:
	groups_release(&g);
	/* short of a broken connection these cannot fail; then COMMIT fails
	 * too and answers everyone (a failed SAVEPOINT leaves nothing to
	 * roll back to: the group's ROLLBACK covers it) */
	(void)exec_cmd(ps, &ps->w, "ROLLBACK TO SAVEPOINT change", NULL);
	(void)exec_cmd(ps, &ps->w, "RELEASE SAVEPOINT change", NULL);
	return rc > 0 ? -EIO : rc;
}

static int fenced_err(struct pg_store *ps, struct herd_err *err)
{
	char why[256];
	pthread_mutex_lock(&ps->m_lock);
	memcpy(why, ps->why, sizeof(why));
	pthread_mutex_unlock(&ps->m_lock);
	return herd_errf(err, -ENOTCONN,
			 "store: this server lost its PostgreSQL connection, and the leadership "
			 "with it (%s): no more commits", why);
}

/* The leader's work: one transaction for the group, one COMMIT. */
static void commit_group(void *backend, struct commit_req *group)
{
	struct pg_store *ps = backend;
	struct herd_err berr = { 0 };
	struct commit_req *r;
	uint64_t top = 0;
	int rc, ok = 0;

	pthread_mutex_lock(&ps->lock);
	thread_conn = &ps->w;
	thread_store = ps;
	if (atomic_load(&ps->fenced))
		rc = fenced_err(ps, &berr);
	else
		/* READ COMMITTED whatever the role's default: the only writer
		 * needs no more, and a stricter level could only fail it */
		rc = exec_cmd(ps, &ps->w, "BEGIN ISOLATION LEVEL READ COMMITTED", &berr);
	if (rc == 0) {
		for (r = group; r; r = r->next) {
			r->rc = apply_change(ps, r);
			ok += r->rc == 0;
		}
		rc = exec_cmd(ps, &ps->w, ok ? "COMMIT" : "ROLLBACK", &berr);
		if (rc == -ENOTCONN)
			herd_errf(&berr, -ENOTCONN,
				  "store: the PostgreSQL connection broke at COMMIT, which may or "
				  "may not have happened; this server is no longer the leader (%s)",
				  berr.msg);
		else if (rc)
			(void)exec_cmd(ps, &ps->w, "ROLLBACK", NULL);
	}
	thread_conn = NULL;
	thread_store = NULL;
	pthread_mutex_unlock(&ps->lock);
	for (r = group; r; r = r->next) {
		if (rc && r->rc == 0)
			r->rc = herd_errf(r->err, rc, "%s", berr.msg);
		else if (r->rc == 0 && r->index > top)
			top = r->index;
	}
	if (top)
		index_watch_publish(&ps->base.watch, top);
}

static int pg_commit(struct store *s, struct store_row *rows, size_t nrows,
		     const struct store_cond *conds, size_t nconds, store_check_fn *check,
		     void *check_arg, uint64_t *out_index, struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);

	if (thread_conn)
		return herd_errf(err, -EDEADLK, "store: a write inside a check or view");
	if (atomic_load(&ps->fenced))
		return fenced_err(ps, err);
	return commit_queue_submit(&ps->queue, rows, nrows, conds, nconds, check, check_arg,
				   out_index, err);
}

static int pg_view(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);
	struct pg_conn *c;
	int rc;

	if (thread_store == ps && thread_conn)
		return fn(s, arg, err); /* nested in a check or view */
	CONN_GET(ps, c, err);
	/* one snapshot for every read of fn; committed state only */
	if ((rc = exec_cmd(ps, c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		goto out;
	thread_conn = c;
	thread_store = ps;
	rc = fn(s, arg, err);
	thread_conn = NULL;
	thread_store = NULL;
	if (exec_cmd(ps, c, "COMMIT", NULL))
		(void)exec_cmd(ps, c, "ROLLBACK", NULL);
out:
	conn_put(ps, c);
	return rc;
}

/* --- fencing and the monitor ------------------------------------------ */

/* w is lost: no commit any more; the monitor calls lost. */
static void fence(struct pg_store *ps, const char *why)
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

static void close_readers(struct pg_store *ps)
{
	while (ps->r_idle) {
		struct pg_conn *c = ps->r_idle;
		ps->r_idle = c->next;
		conn_close(c);
		free(c);
	}
}

static void pg_free(struct pg_store *ps)
{
	close_readers(ps);
	conn_close(&ps->w);
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
	struct pg_store *ps = ps_of(s);
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

/* --- snapshot --------------------------------------------------------- */

/* Runs sql (no parameters) on c in single-row mode, so that a big table
 * is never held in memory whole, calling fn for each row. */
static int each_row(struct pg_store *ps, struct pg_conn *c, const char *sql,
		    int (*fn)(const PGresult *res, void *arg, struct herd_err *err), void *arg,
		    struct herd_err *err)
{
	PGresult *res;
	int rc = 0;

	if (!PQsendQuery(c->db, sql) || !PQsetSingleRowMode(c->db))
		return pg_err(ps, c, NULL, sql, err);
	while ((res = PQgetResult(c->db))) {
		ExecStatusType st = PQresultStatus(res);
		if (rc == 0 && st == PGRES_SINGLE_TUPLE)
			rc = fn(res, arg, err);
		else if (rc == 0 && st != PGRES_TUPLES_OK)
			rc = pg_err(ps, c, res, sql, err);
		PQclear(res); /* every result is read, even after a failure */
	}
	return rc;
}

struct snap_arg {
	struct sqlite_import *im;
	const struct store_kind_desc *kd;
};

static int snap_row(const PGresult *res, void *arg, struct herd_err *err)
{
	struct snap_arg *a = arg;
	struct store_raw_row r = {
		PQgetvalue(res, 0, 0),
		PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1),
		(int64_t)strtoll(PQgetvalue(res, 0, 2), NULL, 10),
		PQgetisnull(res, 0, 3) ? NULL : PQgetvalue(res, 0, 3),
		PQgetisnull(res, 0, 4) ? NULL : PQgetvalue(res, 0, 4),
		value_u64(res, 0, 6),
		value_u64(res, 0, 7),
		value_u64(res, 0, 5),
		PQgetvalue(res, 0, 8),
	};
	return sqlite_import_row(a->im, a->kd, &r, err);
}

static int snap_group(const PGresult *res, void *arg, struct herd_err *err)
{
	struct snap_arg *a = arg;
	return sqlite_import_group(a->im, PQgetvalue(res, 0, 0), value_u64(res, 0, 1), err);
}

/* store_snapshot: one REPEATABLE READ transaction on a reader, so the copy
 * is the store at one index while commits go on, written as an SQLite
 * store file (the backup format of both backends). */
static int pg_snapshot(struct store *s, const char *dest, struct herd_err *err)
{
	struct pg_store *ps = ps_of(s);
	struct strbuf sql = STRBUF_INIT;
	struct snap_arg a = { NULL, NULL };
	struct pg_conn *c;
	PGresult *res = NULL;
	uint64_t index = 0;
	int rc;

	if ((rc = sqlite_import_begin(dest, &a.im, err)))
		return rc;
	if (!(c = conn_get(ps, err))) {
		sqlite_import_end(a.im, 0, false, NULL);
		return err && err->code ? err->code : -ENOTCONN;
	}
	if ((rc = exec_cmd(ps, c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		goto out;
	res = PQexec(c->db, "SELECT value FROM meta WHERE key = 'index'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = pg_err(ps, c, res, "snapshot: read index", err);
	else
		index = value_u64(res, 0, 0);
	PQclear(res);
	for (int k = 0; k < STORE_KIND_COUNT && rc == 0; k++) {
		const struct store_kind_desc *kd = &store_kinds[k];
		a.kd = kd;
		strbuf_reset(&sql);
		strbuf_addf(&sql, "SELECT id, %s, %s, %s, %s, %s, create_index, modify_index, body"
			    " FROM %s ORDER BY %sid%s",
			    kd->cols & STORE_COL_NS ? "namespace" : "NULL::text",
			    kd->cols & STORE_COL_VERSION ? "version" : "0",
			    kd->cols & STORE_COL_JOB ? "job_id" : "NULL::text",
			    kd->cols & STORE_COL_NODE ? "node_id" : "NULL::text",
			    kd->cols & STORE_COL_NODE ? "alloc_modify_index" : "0", kd->table,
			    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
			    kd->key_cols & STORE_COL_VERSION ? ", version" : "");
		rc = each_row(ps, c, sql.buf, snap_row, &a, err);
	}
	if (rc == 0)
		rc = each_row(ps, c, "SELECT name, idx FROM group_index ORDER BY name", snap_group,
			      &a, err);
	if (exec_cmd(ps, c, "COMMIT", NULL))
		(void)exec_cmd(ps, c, "ROLLBACK", NULL);
out:
	conn_put(ps, c);
	strbuf_release(&sql);
	if (rc) {
		sqlite_import_end(a.im, 0, false, NULL);
		return rc;
	}
	return sqlite_import_end(a.im, index, true, err);
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
		if (!told) {
			read_holder(&ps->w, holder, sizeof(holder));
			if (wait != 0 && opts && opts->waiting)
				opts->waiting(holder, opts->arg);
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
	if ((rc = exec_cmd(ps, &ps->w, "BEGIN", err)))
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
		if ((rc = exec_cmd(ps, &ps->w, sql.buf, err)) ||
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
	if (rc == 0 && (rc = exec_cmd(ps, &ps->w, "COMMIT", err)) == 0)
		return 0;
	(void)exec_cmd(ps, &ps->w, "ROLLBACK", NULL);
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
		one_line(msg, sizeof(msg), perr ? perr : "out of memory");
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
	commit_queue_init(&ps->queue, commit_group, ps);
	ps->conninfo = xstrdup(conninfo);
	ps->holder = xstrdup(opts && opts->holder ? opts->holder : "");
	ps->lost = opts ? opts->lost : NULL;
	ps->arg = opts ? opts->arg : NULL;

	if ((rc = conn_open(conninfo, false, &ps->w, err)) || (rc = take_lock(ps, opts, err)) ||
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

/* --- restore ---------------------------------------------------------- */

static int restore_row(const struct store_kind_desc *kd, const struct store_raw_row *r,
		       void *arg, struct herd_err *err)
{
	struct pg_store *ps = arg;
	struct store_key key = { r->ns, r->id, r->version };
	struct kparams p;
	PGresult *res;
	int rc;

	kparams_key(&p, &key);
	p.v[KP_JOB] = r->job_id;
	p.v[KP_NODE] = r->node_id;
	kparams_int(&p, KP_CI, p.ci, sizeof(p.ci), r->create_index);
	kparams_int(&p, KP_MI, p.mi, sizeof(p.mi), r->modify_index);
	kparams_int(&p, KP_AMI, p.ami, sizeof(p.ami), r->alloc_modify_index);
	p.v[KP_BODY] = r->body;
	p.v[KP_REPORT] = "f";
	if ((rc = kind_run(ps, &ps->w, kd, PG_INSERT_RAW, &p, &res, err)))
		return rc;
	PQclear(res);
	return 0;
}

static int restore_group(const char *name, uint64_t idx, void *arg, struct herd_err *err)
{
	return bump_group(arg, name, idx, err);
}

/* Everything of the file in place of what the tables hold: one
 * transaction on w, which holds the lock. */
static int restore_rows(struct pg_store *ps, const char *file, uint64_t *index,
			struct herd_err *err)
{
	static const Oid types[] = { INT8OID };
	struct strbuf sql = STRBUF_INIT;
	char idx_s[24];
	const char *v[] = { idx_s };
	PGresult *res;
	int rc;

	strbuf_adds(&sql, "TRUNCATE group_index");
	for (int k = 0; k < STORE_KIND_COUNT; k++)
		strbuf_addf(&sql, ", %s", store_kinds[k].table);
	pthread_mutex_lock(&ps->lock);
	if ((rc = exec_cmd(ps, &ps->w, "BEGIN", err)))
		goto out;
	if ((rc = exec_cmd(ps, &ps->w, sql.buf, err)) ||
	    (rc = sqlite_export(file, restore_row, restore_group, ps, index, err)))
		goto rollback;
	snprintf(idx_s, sizeof(idx_s), "%llu", (unsigned long long)*index);
	res = PQexecParams(ps->w.db, "UPDATE meta SET value = $1 WHERE key = 'index'", 1, types, v,
			   NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_err(ps, &ps->w, res, "restore: set the index", err);
	PQclear(res);
	if (rc == 0 && (rc = exec_cmd(ps, &ps->w, "COMMIT", err)) == 0)
		goto out;
rollback:
	(void)exec_cmd(ps, &ps->w, "ROLLBACK", NULL);
out:
	pthread_mutex_unlock(&ps->lock);
	strbuf_release(&sql);
	return rc;
}

int store_restore_postgres(const char *conninfo, const char *file, const char *keep,
			   uint64_t *index, struct herd_err *err)
{
	struct store_pg_options opts = { "herd operator snapshot restore", 0, NULL, NULL, NULL,
					 NULL };
	struct store_snapshot_info info;
	struct store *s = NULL;
	uint64_t idx = 0;
	char *upgraded = NULL;
	int rc;

	/* checked, and of a newer herd refused, here */
	if ((rc = store_snapshot_inspect(file, &info, err)))
		return rc;
	/* an older schema: a copy upgraded as a server would on opening it */
	if (info.schema_version < STORE_SCHEMA_VERSION &&
	    (rc = sqlite_upgraded_copy(file, &upgraded, err)))
		return rc;
	if ((rc = store_open_postgres(conninfo, &opts, &s, err)))
		goto out;
	if (keep && (rc = pg_snapshot(s, keep, err)))
		herd_err_prefix(err, "saving the state it would replace");
	if (rc == 0)
		rc = restore_rows(ps_of(s), upgraded ? upgraded : file, &idx, err);
	store_close(s);
out:
	sqlite_remove_copy(upgraded);
	if (rc == 0 && index)
		*index = idx;
	return rc;
}
