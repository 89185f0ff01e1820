/* sqlite.c: the SQLite backend of the store.
 *
 * Durability.  The database runs in WAL mode with synchronous=FULL.  A
 * change is one transaction; COMMIT appends the transaction's pages and a
 * commit record to the -wal file and, with synchronous=FULL, fsyncs the WAL
 * before sqlite3_step returns (with NORMAL it would fsync only at
 * checkpoints).  store_commit returns, and herd acknowledges, only after
 * that.  So:
 *   - kill -9 of the process at any instant: every committed transaction is
 *     in the WAL file (already in the kernel after write(2), fsynced too);
 *     the next open replays the WAL up to its last valid commit record, and
 *     a transaction cut short has no commit record, so it vanishes whole.
 *   - power loss or kernel crash: the fsync before COMMIT returns puts the
 *     commit record on disk, so the same holds.
 * Checkpoints copy WAL pages into the main file with their own fsyncs and
 * never drop a committed frame before it is in the main file.  A new
 * database file's directory entry is fsynced by SQLite when it creates the
 * WAL/journal (unix VFS, SQLITE_DISABLE_DIRSYNC not set in Debian's build).
 *
 * Close-on-exec.  SQLite's unix VFS opens every file (database, -wal, -shm,
 * directory for fsync) through robust_open(), which ORs O_CLOEXEC into the
 * flags (os_unix.c, since 3.8.x; Debian 12 ships 3.40).  The unit tests
 * check it: after opening a store, every fd of the test process has
 * FD_CLOEXEC.  SQLITE_OPEN_EXRESCODE gives extended result codes, so errors
 * say e.g. SQLITE_IOERR_FSYNC rather than SQLITE_IOERR.
 *
 * Threads.  One writer connection, serialised by a recursive mutex:
 * recursive so that a batch's check can call the read functions while its
 * transaction holds it.  Every other read, and every view, runs on one of
 * up to SQLITE_READERS_MAX reader connections (opened on first need, kept
 * idle on a free list): WAL lets them read beside the writer, so a read
 * does not wait for a group commit's fsync, nor a commit for a read.  A
 * reader sees only what a COMMIT made durable: SQLite publishes a WAL
 * commit to other connections (the wal-index header) only after the
 * fsync that synchronous=FULL asks for, so nothing read was ever
 * unacknowledgeable.  A thread inside a commit's check or a view reads on
 * that transaction's connection (thread_conn), so it sees that state.
 *
 * Group commit (commit_queue.h).  The fsync of COMMIT costs 1-3 ms on an
 * ordinary disk, far more than the SQL of a change, so writers queue their
 * changes and one leader commits everything queued in one transaction,
 * each change inside its own SAVEPOINT: a change whose conditions or check
 * fail is rolled back to its savepoint alone and answered with its own
 * error, the others go on.  Each change still bumps the index by one (its
 * own index, in queue order).  One COMMIT, one fsync, then every writer of
 * the group is answered: no change is acknowledged before the COMMIT that
 * carries it has returned, so the durability argument above holds
 * unchanged. */
#include "store/store-int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/commit_queue.h"

enum stmt_slot {
	SQL_GET,
	SQL_EXISTING,
	SQL_UPSERT,
	SQL_DELETE,
	SQL_MODIFY_INDEX,
	SQL_UPDATE,
	SQL_UPDATE_SERVER,
	SQL_SLOTS_PER_KIND
};

/* One connection and its prepared statements. */
struct sqlite_conn {
	sqlite3 *db;
	sqlite3_stmt *kind_stmts[STORE_KIND_COUNT][SQL_SLOTS_PER_KIND];
	sqlite3_stmt *bump_index, *read_index, *read_group, *bump_group;
	sqlite3_stmt *savepoint, *release, *rollback_to;
	/* transaction control, prepared once: sqlite3_exec would parse the
	 * text again for every commit and view */
	sqlite3_stmt *begin_immediate, *begin_deferred, *commit, *rollback;
	/* lists by kind and filter shape (ns, job, node, after, after on
	 * alloc_modify_index: bits 0-4) */
	sqlite3_stmt *list_stmts[STORE_KIND_COUNT][32];
	struct sqlite_conn *next; /* readers: the free list */
};

/* Readers opened at most; a reader beyond them waits for one to be free.
 * Two cores serve herd today: more would only queue in the kernel. */
#define SQLITE_READERS_MAX 4

struct sqlite_store {
	struct store base;
	char *path;
	struct sqlite_conn w;  /* the writer: commits, and reads inside them */
	pthread_mutex_t lock;  /* guards w */
	int in_txn;   /* a commit is running on w */

	/* read-only connections for reads outside a commit: guarded by r_lock */
	pthread_mutex_t r_lock;
	pthread_cond_t r_free;
	struct sqlite_conn *r_idle;
	int r_open;

	struct commit_queue queue; /* group commit (commit_queue.h) */
};

/* The connection whose transaction this thread runs (a commit's on the
 * writer, a view's on a reader), and its store: reads from inside go to
 * it, so that they see that transaction; a write from inside would wait
 * for itself. */
static _Thread_local struct sqlite_conn *thread_conn;
static _Thread_local struct sqlite_store *thread_store;

/* Tables added by schema version 2 (teams: quotas and ACL); also the
 * migration of a version 1 file. */
#define SCHEMA_V2_SQL \
	"CREATE TABLE quotas (id TEXT PRIMARY KEY," \
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n" \
	"CREATE TABLE acl_policies (id TEXT PRIMARY KEY," \
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n" \
	"CREATE TABLE acl_tokens (id TEXT PRIMARY KEY," \
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n"

/* Added by schema version 3: the usage ledger, GPU-time per job and UTC
 * hour that outlives the allocations it came from (server/gc.c). */
#define SCHEMA_V3_SQL \
	"CREATE TABLE usage_ledger (namespace TEXT NOT NULL, id TEXT NOT NULL," \
	" version INTEGER NOT NULL," \
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL," \
	" PRIMARY KEY (namespace, id, version));\n"

/* Added by schema version 4: each allocation's alloc_modify_index, the
 * index of its last change that was not its agent's report (a plan, a
 * stop, lost, ...), which the node allocations long poll filters on so
 * that an agent is not sent back its own status reports.  Existing rows
 * start at their modify_index: an agent that asked since an older index
 * misses nothing. */
#define SCHEMA_V4_SQL \
	"ALTER TABLE allocations ADD COLUMN alloc_modify_index INTEGER NOT NULL DEFAULT 0;\n" \
	"UPDATE allocations SET alloc_modify_index = modify_index;\n" \
	"CREATE INDEX allocations_by_node_server_change" \
	" ON allocations (node_id, alloc_modify_index);\n"

/* Added by schema version 5: variables, keyed by namespace and path
 * (server/vars.h).  IF NOT EXISTS: a file taken back to an older version
 * by hand (tests) may keep the table. */
#define SCHEMA_V5_SQL \
	"CREATE TABLE IF NOT EXISTS variables (namespace TEXT NOT NULL, id TEXT NOT NULL," \
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL," \
	" PRIMARY KEY (namespace, id));\n"

static const char schema_sql[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);\n"
	"CREATE TABLE group_index (name TEXT PRIMARY KEY, idx INTEGER NOT NULL);\n"
	"CREATE TABLE namespaces (id TEXT PRIMARY KEY,"
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n"
	"CREATE TABLE nodes (id TEXT PRIMARY KEY,"
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n"
	"CREATE TABLE jobs (namespace TEXT NOT NULL, id TEXT NOT NULL,"
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL,"
	" PRIMARY KEY (namespace, id));\n"
	"CREATE TABLE job_versions (namespace TEXT NOT NULL, id TEXT NOT NULL,"
	" version INTEGER NOT NULL,"
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL,"
	" PRIMARY KEY (namespace, id, version));\n"
	"CREATE TABLE evaluations (id TEXT PRIMARY KEY, namespace TEXT NOT NULL,"
	" job_id TEXT NOT NULL,"
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n"
	"CREATE INDEX evaluations_by_job ON evaluations (namespace, job_id);\n"
	"CREATE TABLE allocations (id TEXT PRIMARY KEY, namespace TEXT NOT NULL,"
	" job_id TEXT NOT NULL, node_id TEXT NOT NULL,"
	" create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL, body TEXT NOT NULL);\n"
	"CREATE INDEX allocations_by_job ON allocations (namespace, job_id);\n"
	"CREATE INDEX allocations_by_node ON allocations (node_id);\n"
	SCHEMA_V2_SQL SCHEMA_V3_SQL SCHEMA_V4_SQL SCHEMA_V5_SQL;

static struct sqlite_store *ss_of(struct store *s)
{
	return (struct sqlite_store *)s;
}

static int sql_err(struct sqlite_conn *ss, int rc, const char *what, struct herd_err *err)
{
	int e = -EIO;
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED || (rc & 0xff) == SQLITE_BUSY)
		e = -EBUSY;
	else if ((rc & 0xff) == SQLITE_FULL)
		e = -ENOSPC;
	else if ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_PERM ||
		 (rc & 0xff) == SQLITE_CANTOPEN)
		e = (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : -EACCES;
	return herd_errf(err, e, "store: %s: %s (%s)", what,
			 ss && ss->db ? sqlite3_errmsg(ss->db) : sqlite3_errstr(rc),
			 sqlite3_errstr(rc));
}

static int exec(struct sqlite_conn *ss, const char *sql, struct herd_err *err)
{
	int rc = sqlite3_exec(ss->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : sql_err(ss, rc, sql, err);
}

/* Prepares (once) and resets a cached statement. */
static int cached(struct sqlite_conn *ss, sqlite3_stmt **slot, const char *sql,
		  struct herd_err *err)
{
	int rc;
	if (*slot) {
		sqlite3_reset(*slot);
		sqlite3_clear_bindings(*slot);
		return 0;
	}
	rc = sqlite3_prepare_v3(ss->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL);
	return rc == SQLITE_OK ? 0 : sql_err(ss, rc, "prepare", err);
}

/* " WHERE namespace=:ns AND id=:id ..." for a kind's key. */
static void add_key_where(struct strbuf *sb, const struct store_kind_desc *kd)
{
	strbuf_adds(sb, " WHERE ");
	if (kd->key_cols & STORE_COL_NS)
		strbuf_adds(sb, "namespace=:ns AND ");
	if (kd->key_cols & STORE_COL_VERSION)
		strbuf_adds(sb, "version=:version AND ");
	strbuf_adds(sb, "id=:id");
}

static void bind_text(sqlite3_stmt *st, const char *name, const char *v)
{
	int i = sqlite3_bind_parameter_index(st, name);
	if (i > 0)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
}

static void bind_int(sqlite3_stmt *st, const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(st, name);
	if (i > 0)
		sqlite3_bind_int64(st, i, v);
}

static void bind_key(sqlite3_stmt *st, const struct store_key *key)
{
	bind_text(st, ":ns", key->ns);
	bind_text(st, ":id", key->id);
	bind_int(st, ":version", key->version);
}

/* The statement of slot for kind kd, prepared on first use. */
static int kind_stmt(struct sqlite_conn *ss, const struct store_kind_desc *kd,
		     enum stmt_slot slot, sqlite3_stmt **out, struct herd_err *err)
{
	sqlite3_stmt **p = &ss->kind_stmts[kd->kind][slot];
	struct strbuf sql = STRBUF_INIT;
	int rc;

	if (*p) {
		sqlite3_reset(*p);
		sqlite3_clear_bindings(*p);
		*out = *p;
		return 0;
	}
	switch (slot) {
	case SQL_GET:
		strbuf_addf(&sql, "SELECT create_index, modify_index, body FROM %s", kd->table);
		add_key_where(&sql, kd);
		break;
	case SQL_EXISTING:
		/* what a put or delete must know of the row it replaces
		 * (tables with node_id, allocations, keep alloc_modify_index) */
		strbuf_addf(&sql, "SELECT create_index, %s, %s, %s, %s FROM %s",
			    kd->cols & STORE_COL_NS ? "namespace" : "NULL",
			    kd->cols & STORE_COL_JOB ? "job_id" : "NULL",
			    kd->cols & STORE_COL_NODE ? "node_id" : "NULL",
			    kd->cols & STORE_COL_NODE ? "alloc_modify_index" : "NULL", kd->table);
		add_key_where(&sql, kd);
		break;
	case SQL_UPSERT:
		strbuf_addf(&sql, "INSERT OR REPLACE INTO %s (id, %s%s%s%s%s"
			    "create_index, modify_index, body) VALUES (:id, %s%s%s%s%s"
			    ":ci, :mi, :body)", kd->table,
			    kd->cols & STORE_COL_NS ? "namespace, " : "",
			    kd->cols & STORE_COL_VERSION ? "version, " : "",
			    kd->cols & STORE_COL_JOB ? "job_id, " : "",
			    kd->cols & STORE_COL_NODE ? "node_id, " : "",
			    kd->cols & STORE_COL_NODE ? "alloc_modify_index, " : "",
			    kd->cols & STORE_COL_NS ? ":ns, " : "",
			    kd->cols & STORE_COL_VERSION ? ":version, " : "",
			    kd->cols & STORE_COL_JOB ? ":job_id, " : "",
			    kd->cols & STORE_COL_NODE ? ":node_id, " : "",
			    kd->cols & STORE_COL_NODE ? ":ami, " : "");
		break;
	case SQL_DELETE:
		strbuf_addf(&sql, "DELETE FROM %s", kd->table);
		add_key_where(&sql, kd);
		break;
	case SQL_MODIFY_INDEX:
		strbuf_addf(&sql, "SELECT modify_index FROM %s", kd->table);
		add_key_where(&sql, kd);
		break;
	case SQL_UPDATE:
		/* a record whose lookup columns stay: SQLite rewrites only the
		 * indexes on the columns set here (allocations_by_node_change),
		 * and the row keeps its rowid and its place, where INSERT OR
		 * REPLACE would delete it from the table and every index and
		 * insert it again at the table's end */
		strbuf_addf(&sql, "UPDATE %s SET modify_index=:mi, body=:body", kd->table);
		add_key_where(&sql, kd);
		break;
	case SQL_UPDATE_SERVER:
		/* the same, for a change that is not an agent's report of an
		 * allocation (tables with node_id) */
		strbuf_addf(&sql, "UPDATE %s SET modify_index=:mi, alloc_modify_index=:ami,"
			    " body=:body", kd->table);
		add_key_where(&sql, kd);
		break;
	case SQL_SLOTS_PER_KIND:
		break;
	}
	rc = cached(ss, p, sql.buf, err);
	strbuf_release(&sql);
	if (rc == 0)
		*out = *p;
	return rc;
}

static int step_cached(struct sqlite_conn *ss, sqlite3_stmt **slot, const char *sql,
		       struct herd_err *err);

/* --- connections ------------------------------------------------------ */

static void conn_close(struct sqlite_conn *c)
{
	for (int k = 0; k < STORE_KIND_COUNT; k++) {
		for (int i = 0; i < SQL_SLOTS_PER_KIND; i++)
			sqlite3_finalize(c->kind_stmts[k][i]);
		for (int i = 0; i < 32; i++)
			sqlite3_finalize(c->list_stmts[k][i]);
	}
	sqlite3_finalize(c->bump_index);
	sqlite3_finalize(c->read_index);
	sqlite3_finalize(c->read_group);
	sqlite3_finalize(c->bump_group);
	sqlite3_finalize(c->savepoint);
	sqlite3_finalize(c->release);
	sqlite3_finalize(c->rollback_to);
	sqlite3_finalize(c->begin_immediate);
	sqlite3_finalize(c->begin_deferred);
	sqlite3_finalize(c->commit);
	sqlite3_finalize(c->rollback);
	sqlite3_close(c->db);
	memset(c, 0, sizeof(*c));
}

/* A new reader on the store's file: a connection that only reads (WAL lets
 * it read committed state while the writer writes and fsyncs). */
static struct sqlite_conn *reader_open(struct sqlite_store *ss, struct herd_err *err)
{
	struct sqlite_conn *c = xcalloc(1, sizeof(*c));
	int rc = sqlite3_open_v2(ss->path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_FULLMUTEX,
				 NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(c->db, 5000);
		rc = sqlite3_exec(c->db, "PRAGMA query_only=ON; PRAGMA trusted_schema=OFF", NULL,
				  NULL, NULL);
	}
	if (rc != SQLITE_OK) {
		sql_err(c, rc, "open a reader", err);
		conn_close(c);
		free(c);
		return NULL;
	}
	return c;
}

/* The connection a read runs on: the one of this thread's transaction
 * (inside a commit's check or a view: the state that transaction sees),
 * else an idle reader, opened when none is idle and fewer than
 * SQLITE_READERS_MAX are open, else waited for.  NULL with err when a
 * reader cannot be opened.  Give it back with conn_put. */
static struct sqlite_conn *conn_get(struct sqlite_store *ss, struct herd_err *err)
{
	struct sqlite_conn *c;
	if (thread_store == ss && thread_conn) {
		if (thread_conn == &ss->w)
			pthread_mutex_lock(&ss->lock); /* held: recursive */
		return thread_conn;
	}
	pthread_mutex_lock(&ss->r_lock);
	while (!ss->r_idle && ss->r_open >= SQLITE_READERS_MAX)
		pthread_cond_wait(&ss->r_free, &ss->r_lock);
	c = ss->r_idle;
	if (c) {
		ss->r_idle = c->next;
		pthread_mutex_unlock(&ss->r_lock);
		return c;
	}
	ss->r_open++;
	pthread_mutex_unlock(&ss->r_lock);
	c = reader_open(ss, err);
	if (!c) {
		pthread_mutex_lock(&ss->r_lock);
		ss->r_open--;
		pthread_cond_signal(&ss->r_free);
		pthread_mutex_unlock(&ss->r_lock);
	}
	return c;
}

static void conn_put(struct sqlite_store *ss, struct sqlite_conn *c)
{
	if (c == &ss->w) {
		pthread_mutex_unlock(&ss->lock);
		return;
	}
	if (thread_store == ss && thread_conn == c)
		return; /* the view's: it gives it back when it ends */
	pthread_mutex_lock(&ss->r_lock);
	c->next = ss->r_idle;
	ss->r_idle = c;
	pthread_cond_signal(&ss->r_free);
	pthread_mutex_unlock(&ss->r_lock);
}

/* --- reads ------------------------------------------------------------ */

static int read_group_locked(struct sqlite_conn *ss, const char *group, uint64_t *out,
			     struct herd_err *err)
{
	int rc = cached(ss, &ss->read_group, "SELECT idx FROM group_index WHERE name=?1", err);
	if (rc)
		return rc;
	sqlite3_bind_text(ss->read_group, 1, group, -1, SQLITE_STATIC);
	rc = sqlite3_step(ss->read_group);
	if (rc == SQLITE_ROW)
		*out = (uint64_t)sqlite3_column_int64(ss->read_group, 0);
	else if (rc == SQLITE_DONE)
		*out = 0;
	else
		return sql_err(ss, rc, "read group index", err);
	sqlite3_reset(ss->read_group);
	return 0;
}

static int sqlite_group_index(struct store *s, const char *group, uint64_t *out,
			      struct herd_err *err)
{
	struct sqlite_store *ss = ss_of(s);
	struct sqlite_conn *c = conn_get(ss, err);
	int rc;
	if (!c)
		return err && err->code ? err->code : -EIO;
	rc = read_group_locked(c, group, out, err);
	conn_put(ss, c);
	return rc;
}

static int read_index_locked(struct sqlite_conn *ss, uint64_t *out, struct herd_err *err)
{
	int rc = cached(ss, &ss->read_index, "SELECT value FROM meta WHERE key='index'", err);
	if (rc)
		return rc;
	rc = sqlite3_step(ss->read_index);
	if (rc != SQLITE_ROW) {
		rc = rc == SQLITE_DONE ? herd_errf(err, -EIO, "store: meta table has no index")
				       : sql_err(ss, rc, "read index", err);
		sqlite3_reset(ss->read_index);
		return rc;
	}
	*out = (uint64_t)sqlite3_column_int64(ss->read_index, 0);
	sqlite3_reset(ss->read_index);
	return 0;
}

static int sqlite_index(struct store *s, uint64_t *out, struct herd_err *err)
{
	struct sqlite_store *ss = ss_of(s);
	struct sqlite_conn *c = conn_get(ss, err);
	int rc;
	if (!c)
		return err && err->code ? err->code : -EIO;
	rc = read_index_locked(c, out, err);
	conn_put(ss, c);
	return rc;
}

/* The indexes and body of the row st is on (columns 0-2: create_index,
 * modify_index, body).  The text is the statement's, valid until its next
 * step or reset.  committed: read on a reader (see store_found). */
static void found_fill(struct store_found *row, sqlite3_stmt *st, bool committed)
{
	row->create_index = (uint64_t)sqlite3_column_int64(st, 0);
	row->modify_index = (uint64_t)sqlite3_column_int64(st, 1);
	row->body = (const char *)sqlite3_column_text(st, 2);
	/* after column_text, as SQLite asks: the length of that text */
	row->body_len = (size_t)sqlite3_column_bytes(st, 2);
	row->committed = committed;
}

/* One record by key: its indexes and body (SQL_GET), handed to fn while
 * the statement holds them (no copy of the text). */
static int sqlite_get(struct store *s, const struct store_kind_desc *kd,
		      const struct store_key *key, store_row_fn *fn, void *arg,
		      struct herd_err *err)
{
	struct sqlite_store *sto = ss_of(s);
	struct sqlite_conn *ss = conn_get(sto, err);
	sqlite3_stmt *st;
	int rc;

	if (!ss)
		return err && err->code ? err->code : -EIO;
	if ((rc = kind_stmt(ss, kd, SQL_GET, &st, err)))
		goto out;
	bind_key(st, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		struct store_found row;
		row.key = *key;
		found_fill(&row, st, ss != &sto->w);
		rc = fn(&row, arg, err);
	} else if (rc == SQLITE_DONE) {
		rc = herd_errf(err, -ENOENT, "store: no %s \"%s\"", kd->name, key->id);
	} else {
		rc = sql_err(ss, rc, "get", err);
	}
	sqlite3_reset(st);
out:
	conn_put(sto, ss);
	return rc;
}

/* A record's modify_index alone (SQL_MODIFY_INDEX: no body read). */
static int sqlite_get_index(struct store *s, const struct store_kind_desc *kd,
			    const struct store_key *key, uint64_t *mi, struct herd_err *err)
{
	struct sqlite_store *sto = ss_of(s);
	struct sqlite_conn *ss = conn_get(sto, err);
	sqlite3_stmt *st;
	int rc;

	if (!ss)
		return err && err->code ? err->code : -EIO;
	if ((rc = kind_stmt(ss, kd, SQL_MODIFY_INDEX, &st, err)))
		goto out;
	bind_key(st, key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*mi = (uint64_t)sqlite3_column_int64(st, 0);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = herd_errf(err, -ENOENT, "store: no %s \"%s\"", kd->name, key->id);
	} else {
		rc = sql_err(ss, rc, "get index", err);
	}
	sqlite3_reset(st);
out:
	conn_put(sto, ss);
	return rc;
}

static int sqlite_list(struct store *s, const struct store_kind_desc *kd,
		       const struct store_filter *f, uint64_t after, bool server_changes,
		       store_row_fn *fn, void *arg, struct herd_err *err)
{
	struct sqlite_store *sto = ss_of(s);
	struct sqlite_conn *ss;
	struct strbuf sql = STRBUF_INIT;
	const char *sep = " WHERE ";
	sqlite3_stmt *st;
	bool by_ami = server_changes && (kd->cols & STORE_COL_NODE);
	unsigned shape = (f->ns ? 1u : 0) | (f->job_id ? 2u : 0) | (f->node_id ? 4u : 0) |
			 (after ? 8u : 0) | (after && by_ami ? 16u : 0);
	sqlite3_stmt **slot;
	int rc;

	if (!(ss = conn_get(sto, err)))
		return err && err->code ? err->code : -EIO;
	slot = &ss->list_stmts[kd->kind][shape];
	if (*slot)
		goto prepared;
	/* the key columns too: the store caches decoded records by key */
	strbuf_addf(&sql, "SELECT create_index, modify_index, body, id, %s, %s FROM %s",
		    kd->key_cols & STORE_COL_NS ? "namespace" : "NULL",
		    kd->key_cols & STORE_COL_VERSION ? "version" : "0", kd->table);
	if (f->ns) {
		strbuf_addf(&sql, "%snamespace=:ns", sep);
		sep = " AND ";
	}
	if (f->job_id) {
		/* a job version's or usage record's id is its job's id */
		strbuf_addf(&sql, "%s%s=:job", sep, kd->key_cols & STORE_COL_VERSION ? "id" : "job_id");
		sep = " AND ";
	}
	if (f->node_id) {
		strbuf_addf(&sql, "%snode_id=:node", sep);
		sep = " AND ";
	}
	if (after)
		strbuf_addf(&sql, "%s%smodify_index>:after", sep, by_ami ? "alloc_" : "");
	strbuf_addf(&sql, " ORDER BY %s%sid", kd->key_cols & STORE_COL_NS ? "namespace, " : "",
		    "");
	if (kd->key_cols & STORE_COL_VERSION)
		strbuf_adds(&sql, ", version");

	/* one statement per kind and shape of filter, prepared once */
	rc = sqlite3_prepare_v3(ss->db, sql.buf, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL);
	if (rc != SQLITE_OK) {
		rc = sql_err(ss, rc, "list", err);
		goto out;
	}
prepared:
	st = *slot;
	bind_text(st, ":ns", f->ns);
	bind_text(st, ":job", f->job_id);
	bind_text(st, ":node", f->node_id);
	bind_int(st, ":after", (int64_t)after);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_found row;
		row.key.ns = (const char *)sqlite3_column_text(st, 4);
		row.key.id = (const char *)sqlite3_column_text(st, 3);
		row.key.version = sqlite3_column_int64(st, 5);
		found_fill(&row, st, ss != &sto->w);
		if ((rc = fn(&row, arg, err)))
			goto out;
	}
	rc = rc == SQLITE_DONE ? 0 : sql_err(ss, rc, "list", err);
out:
	if (*slot) {
		sqlite3_reset(*slot);
		sqlite3_clear_bindings(*slot);
	}
	conn_put(sto, ss);
	strbuf_release(&sql);
	return rc;
}

/* --- writes ----------------------------------------------------------- */

/* The groups one change has bumped already: every row of the change sets
 * them to the same index, so a second bump would rewrite a row to the value
 * it holds (a plan of 64 allocations of one job on one node bumped the
 * node's and the job's groups 64 times each).  Each group is written once
 * per change, as the PostgreSQL backend does (postgres_rw.c, struct
 * groups). */
struct bumped {
	unsigned kinds;       /* bit per enum store_kind */
	char **groups;        /* node and job allocation groups */
	size_t n, a;
	uint64_t writes;      /* group rows written */
};

static void bumped_release(struct bumped *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->groups[i]);
	free(b->groups);
	memset(b, 0, sizeof(*b));
}

static int bump_group(struct sqlite_conn *ss, const char *group, uint64_t idx,
		      struct herd_err *err)
{
	int rc = cached(ss, &ss->bump_group,
			"INSERT INTO group_index (name, idx) VALUES (?1, ?2)"
			" ON CONFLICT (name) DO UPDATE SET idx = excluded.idx",
			err);
	if (rc)
		return rc;
	sqlite3_bind_text(ss->bump_group, 1, group, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ss->bump_group, 2, (sqlite3_int64)idx);
	rc = sqlite3_step(ss->bump_group);
	sqlite3_reset(ss->bump_group);
	return rc == SQLITE_DONE ? 0 : sql_err(ss, rc, "bump group index", err);
}

/* Bumps group unless this change did already. */
static int bump_once(struct sqlite_conn *ss, struct bumped *done, const char *group,
		     uint64_t idx, struct herd_err *err)
{
	int rc;

	/* most changes touch a node or two: a list beats a hash here */
	for (size_t i = 0; i < done->n; i++)
		if (!strcmp(done->groups[i], group))
			return 0;
	if ((rc = bump_group(ss, group, idx, err)))
		return rc;
	ALLOC_GROW(done->groups, done->n + 1, done->a);
	done->groups[done->n++] = xstrdup(group);
	done->writes++;
	return 0;
}

/* Bumps the groups an allocation belongs to (its node, its job), each
 * once per change. */
static int bump_alloc_groups(struct sqlite_conn *ss, struct bumped *done, const char *ns,
			     const char *job_id, const char *node_id, uint64_t idx,
			     struct herd_err *err)
{
	struct strbuf g = STRBUF_INIT;
	int rc;

	store_group_node_allocs(&g, node_id);
	rc = bump_once(ss, done, g.buf, idx, err);
	if (rc == 0) {
		store_group_job_allocs(&g, ns, job_id);
		rc = bump_once(ss, done, g.buf, idx, err);
	}
	strbuf_release(&g);
	return rc;
}

static bool same_text(const unsigned char *stored, const char *v)
{
	return stored && v && strcmp((const char *)stored, v) == 0;
}

static int apply_row(struct sqlite_conn *ss, struct store_row *row, uint64_t idx,
		     struct bumped *done, struct herd_err *err)
{
	const struct store_kind_desc *kd = row->kd;
	char *old_ns = NULL, *old_job = NULL, *old_node = NULL;
	uint64_t ci = idx, ami = idx;
	bool found = false, in_place = false;
	int rc;
	sqlite3_stmt *st;

	if ((rc = kind_stmt(ss, kd, SQL_EXISTING, &st, err)))
		return rc;
	bind_key(st, &row->key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		found = true;
		ci = (uint64_t)sqlite3_column_int64(st, 0);
		/* a put that keeps the lookup columns updates the row in
		 * place; key columns are equal by the lookup itself */
		in_place = row->op == STORE_OP_PUT &&
			   (!(kd->cols & STORE_COL_NS) || (kd->key_cols & STORE_COL_NS) ||
			    same_text(sqlite3_column_text(st, 1), row->key.ns)) &&
			   (!(kd->cols & STORE_COL_JOB) ||
			    same_text(sqlite3_column_text(st, 2), row->job_id)) &&
			   (!(kd->cols & STORE_COL_NODE) ||
			    same_text(sqlite3_column_text(st, 3), row->node_id));
		/* an allocation that moves or goes away changes its old
		 * node's and job's sets too */
		if ((kd->cols & STORE_COL_NODE) && !in_place) {
			old_ns = xstrdup((const char *)sqlite3_column_text(st, 1));
			old_job = xstrdup((const char *)sqlite3_column_text(st, 2));
			old_node = xstrdup((const char *)sqlite3_column_text(st, 3));
		}
		/* a report leaves the last server change where it was */
		if ((kd->cols & STORE_COL_NODE) && row->report)
			ami = (uint64_t)sqlite3_column_int64(st, 4);
	} else if (rc != SQLITE_DONE) {
		sqlite3_reset(st);
		return sql_err(ss, rc, "read existing record", err);
	}
	sqlite3_reset(st);
	row->create_index = ci;

	if (row->op == STORE_OP_DELETE) {
		if (!found) {
			rc = herd_errf(err, -ENOENT, "store: no %s \"%s\" to delete", kd->name,
				       row->key.id);
			goto out;
		}
		if ((rc = kind_stmt(ss, kd, SQL_DELETE, &st, err)))
			goto out;
		bind_key(st, &row->key);
	} else if (in_place) {
		/* a report does not set alloc_modify_index, so its index
		 * (allocations_by_node_server_change) is not touched */
		bool server = (kd->cols & STORE_COL_NODE) && !row->report;
		if ((rc = kind_stmt(ss, kd, server ? SQL_UPDATE_SERVER : SQL_UPDATE, &st, err)))
			goto out;
		bind_key(st, &row->key);
		bind_int(st, ":mi", (int64_t)idx);
		bind_int(st, ":ami", (int64_t)ami);
		bind_text(st, ":body", row->body);
	} else {
		if ((rc = kind_stmt(ss, kd, SQL_UPSERT, &st, err)))
			goto out;
		bind_key(st, &row->key);
		bind_text(st, ":job_id", row->job_id);
		bind_text(st, ":node_id", row->node_id);
		bind_int(st, ":ci", (int64_t)ci);
		bind_int(st, ":mi", (int64_t)idx);
		bind_int(st, ":ami", (int64_t)ami);
		bind_text(st, ":body", row->body);
	}
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		rc = sql_err(ss, rc, row->op == STORE_OP_DELETE ? "delete" : "put", err);
		goto out;
	}
	rc = 0;
	if (!(done->kinds & (1u << kd->kind))) {
		struct strbuf g = STRBUF_INIT;
		store_group_kind(&g, kd);
		rc = bump_group(ss, g.buf, idx, err);
		strbuf_release(&g);
		if (rc)
			goto out;
		done->kinds |= 1u << kd->kind;
		done->writes++;
	}
	if (old_node &&
	    (rc = bump_alloc_groups(ss, done, old_ns, old_job, old_node, idx, err)))
		goto out;
	if (row->op == STORE_OP_PUT && row->node_id)
		rc = bump_alloc_groups(ss, done, row->key.ns, row->job_id, row->node_id, idx, err);
out:
	free(old_ns);
	free(old_job);
	free(old_node);
	return rc;
}

static int check_cond_locked(struct sqlite_conn *ss, const struct store_cond *c,
			     struct herd_err *err)
{
	struct strbuf g = STRBUF_INIT;
	uint64_t have = 0;
	int rc;

	if (c->type == STORE_COND_MODIFY_INDEX) {
		const struct store_kind_desc *kd = &store_kinds[c->kind];
		struct store_key key = { c->ns, c->id, c->version };
		sqlite3_stmt *st;
		if ((rc = kind_stmt(ss, kd, SQL_MODIFY_INDEX, &st, err)))
			return rc;
		bind_key(st, &key);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			have = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return sql_err(ss, rc, "check condition", err);
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
	rc = read_group_locked(ss, g.buf, &have, err);
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

/* Runs one statement that returns no rows through a cached slot. */
static int step_cached(struct sqlite_conn *ss, sqlite3_stmt **slot, const char *sql,
		       struct herd_err *err)
{
	int rc = cached(ss, slot, sql, err);
	if (rc)
		return rc;
	rc = sqlite3_step(*slot);
	sqlite3_reset(*slot);
	return rc == SQLITE_DONE ? 0 : sql_err(ss, rc, sql, err);
}

/* One change of a group, inside the open transaction and its own
 * savepoint: bump the index, check, write.  On failure the savepoint is
 * rolled back, so the transaction holds exactly the changes that passed. */
static int apply_change(struct sqlite_store *sto, struct commit_req *r)
{
	struct sqlite_conn *ss = &sto->w;
	struct herd_err *err = r->err;
	struct bumped done = { 0 };
	uint64_t idx = 0;
	int rc;

	if ((rc = step_cached(ss, &ss->savepoint, "SAVEPOINT change", err)))
		return rc;
	rc = cached(ss, &ss->bump_index,
		    "UPDATE meta SET value = value + 1 WHERE key='index' RETURNING value", err);
	if (rc)
		goto rollback;
	rc = sqlite3_step(ss->bump_index);
	if (rc == SQLITE_ROW)
		idx = (uint64_t)sqlite3_column_int64(ss->bump_index, 0);
	while (rc == SQLITE_ROW)
		rc = sqlite3_step(ss->bump_index);
	sqlite3_reset(ss->bump_index);
	if (rc != SQLITE_DONE || idx == 0) {
		rc = sql_err(ss, rc, "bump index", err);
		goto rollback;
	}
	for (size_t i = 0; i < r->nconds; i++)
		if ((rc = check_cond_locked(ss, &r->conds[i], err)))
			goto rollback;
	if (r->check && (rc = r->check(&sto->base, r->check_arg, err)))
		goto rollback;
	for (size_t i = 0; i < r->nrows; i++)
		if ((rc = apply_row(ss, &r->rows[i], idx, &done, err)))
			goto rollback;
	if ((rc = step_cached(ss, &ss->release, "RELEASE change", err)))
		goto rollback;
	__atomic_fetch_add(&sto->base.group_writes, done.writes, __ATOMIC_RELAXED);
	bumped_release(&done);
	r->index = idx;
	return 0;
rollback:
	bumped_release(&done);
	/* the savepoint's own statements cannot fail short of a broken
	 * connection; then COMMIT fails too and answers everyone */
	(void)step_cached(ss, &ss->rollback_to, "ROLLBACK TO change", NULL);
	(void)step_cached(ss, &ss->release, "RELEASE change", NULL);
	return rc > 0 ? -EIO : rc;
}

/* The leader's work: one transaction for the group, one COMMIT. */
static void commit_group(void *backend, struct commit_req *group)
{
	struct sqlite_store *ss = backend;
	struct herd_err berr = { 0 };
	struct commit_req *r;
	uint64_t top = 0;
	int rc, ok = 0;

	pthread_mutex_lock(&ss->lock);
	thread_conn = &ss->w;
	thread_store = ss;
	/* IMMEDIATE: take the write lock now, so that no other process's
	 * writer can make this transaction fail halfway with SQLITE_BUSY. */
	rc = step_cached(&ss->w, &ss->w.begin_immediate, "BEGIN IMMEDIATE", &berr);
	if (rc == 0) {
		ss->in_txn = 1;
		for (r = group; r; r = r->next) {
			r->rc = apply_change(ss, r);
			ok += r->rc == 0;
		}
		/* nothing to make durable when every change failed */
		if (ok)
			rc = step_cached(&ss->w, &ss->w.commit, "COMMIT", &berr);
		else
			rc = step_cached(&ss->w, &ss->w.rollback, "ROLLBACK", &berr);
		if (rc)
			/* a failed COMMIT may already have rolled back; ROLLBACK
			 * then fails harmlessly */
			(void)step_cached(&ss->w, &ss->w.rollback, "ROLLBACK", NULL);
		ss->in_txn = 0;
	}
	thread_conn = NULL;
	thread_store = NULL;
	pthread_mutex_unlock(&ss->lock);
	for (r = group; r; r = r->next) {
		if (rc && r->rc == 0)
			r->rc = herd_errf(r->err, rc, "%s", berr.msg);
		else if (r->rc == 0 && r->index > top)
			top = r->index;
	}
	/* durable now: publish at once rather than when the last writer of
	 * the group gets to run */
	if (top)
		index_watch_publish(&ss->base.watch, top);
}

static int sqlite_commit(struct store *s, struct store_row *rows, size_t nrows,
			 const struct store_cond *conds, size_t nconds, store_check_fn *check,
			 void *check_arg, uint64_t *out_index, struct herd_err *err)
{
	struct sqlite_store *ss = ss_of(s);

	if (thread_conn)
		return herd_errf(err, -EDEADLK, "store: a write inside a check or view");
	return commit_queue_submit(&ss->queue, rows, nrows, conds, nconds, check, check_arg,
				   out_index, err);
}

static int sqlite_view(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err)
{
	struct sqlite_store *ss = ss_of(s);
	struct sqlite_conn *c;
	int rc;

	if (thread_store == ss && thread_conn)
		/* nested in a check or view: already consistent */
		return fn(s, arg, err);
	/* a reader: the view sees the last commit made durable before it
	 * began (WAL shows readers a commit only once it is fsynced) and
	 * neither waits for the writer nor holds it up */
	if (!(c = conn_get(ss, err)))
		return err && err->code ? err->code : -EIO;
	if ((rc = step_cached(c, &c->begin_deferred, "BEGIN DEFERRED", err)))
		goto out;
	thread_conn = c;
	thread_store = ss;
	rc = fn(s, arg, err);
	thread_conn = NULL;
	thread_store = NULL;
	/* nothing was written: COMMIT just ends the read transaction */
	if (step_cached(c, &c->commit, "COMMIT", NULL))
		(void)step_cached(c, &c->rollback, "ROLLBACK", NULL);
out:
	conn_put(ss, c);
	return rc;
}

/* --- open and close --------------------------------------------------- */

/* Closes the idle reader connections (every one is idle when the store
 * closes or fails to open). */
static void close_readers(struct sqlite_store *ss)
{
	while (ss->r_idle) {
		struct sqlite_conn *c = ss->r_idle;
		ss->r_idle = c->next;
		conn_close(c);
		free(c);
	}
}

static void sqlite_close(struct store *s)
{
	struct sqlite_store *ss = ss_of(s);
	close_readers(ss);
	conn_close(&ss->w);
	pthread_mutex_destroy(&ss->lock);
	pthread_mutex_destroy(&ss->r_lock);
	pthread_cond_destroy(&ss->r_free);
	commit_queue_release(&ss->queue);
	store_base_release(s);
	free(ss->path);
	free(ss);
}

/* VACUUM INTO on a connection of its own: one read transaction, so the
 * copy is the store at one index, and commits go on meanwhile (WAL).  dest
 * is made first, empty and 0600 (the store holds token hashes), which
 * VACUUM INTO accepts and which refuses a dest that exists. */
static int sqlite_snapshot(struct store *s, const char *dest, struct herd_err *err)
{
	struct sqlite_store *sto = ss_of(s);
	struct sqlite_conn c = { 0 };
	sqlite3_stmt *st = NULL;
	int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc;

	if (fd < 0)
		return herd_errf(err, -errno, "snapshot: %s: %s", dest, strerror(errno));
	close(fd);
	rc = sqlite3_open_v2(sto->path, &c.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(c.db, 5000);
		rc = sqlite3_prepare_v2(c.db, "VACUUM INTO ?", -1, &st, NULL);
	}
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, dest, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK) {
		rc = herd_errf(err, -EIO, "snapshot: copying %s to %s: %s", sto->path, dest,
			       c.db ? sqlite3_errmsg(c.db) : sqlite3_errstr(rc));
		unlink(dest);
	}
	sqlite3_finalize(st);
	sqlite3_close(c.db);
	return rc;
}

static const struct store_ops sqlite_ops = {
	.name = "sqlite",
	.close = sqlite_close,
	.index = sqlite_index,
	.get = sqlite_get,
	.get_index = sqlite_get_index,
	.list = sqlite_list,
	.group_index = sqlite_group_index,
	.commit = sqlite_commit,
	.view = sqlite_view,
	.snapshot = sqlite_snapshot,
};

static int pragma_int(struct sqlite_conn *ss, const char *sql, int64_t *out,
		      struct herd_err *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(ss->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_err(ss, rc, sql, err);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : sql_err(ss, rc, sql, err);
}

/* Sets the durability pragmas and checks that they took. */
static int configure(struct sqlite_conn *ss, const char *path, struct herd_err *err)
{
	sqlite3_stmt *st;
	int64_t sync = -1;
	int rc, wal = 0;

	sqlite3_busy_timeout(ss->db, 5000);
	rc = sqlite3_prepare_v2(ss->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_err(ss, rc, "set WAL mode", err);
	if (sqlite3_step(st) == SQLITE_ROW)
		wal = sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
	sqlite3_finalize(st);
	if (!wal)
		return herd_errf(err, -ENOTSUP, "store: %s: cannot use WAL mode there", path);
	if ((rc = exec(ss, "PRAGMA synchronous=FULL", err)) ||
	    (rc = pragma_int(ss, "PRAGMA synchronous", &sync, err)))
		return rc;
	if (sync != 2)
		return herd_errf(err, -EIO, "store: synchronous=FULL did not take (%lld)",
				 (long long)sync);
	/* The schema is ours: no SQL functions from it run with our rights. */
	if ((rc = exec(ss, "PRAGMA trusted_schema=OFF", err)))
		return rc;
	/* Each change of a group runs in a SAVEPOINT, whose statement journal
	 * (the pages as they were before the change, for ROLLBACK TO) SQLite
	 * spills to a temporary file past 64 KiB: a plan of 64 allocations
	 * wrote and read back a file per commit.  In memory it is a copy.  It
	 * is not part of what makes a commit durable (the WAL is), so this
	 * changes nothing that survives a crash. */
	return exec(ss, "PRAGMA temp_store=MEMORY", err);
}

/* Creates the schema in a new file, or checks an existing one. */
static int check_schema(struct sqlite_conn *ss, const char *path, struct herd_err *err)
{
	int64_t tables = 0, app = 0, version = 0;
	struct strbuf sql = STRBUF_INIT;
	int rc;

	if ((rc = exec(ss, "BEGIN IMMEDIATE", err)))
		return rc;
	if ((rc = pragma_int(ss, "SELECT count(*) FROM sqlite_schema", &tables, err)) ||
	    (rc = pragma_int(ss, "PRAGMA application_id", &app, err)))
		goto out;
	if (tables == 0) {
		strbuf_addf(&sql, "%sPRAGMA application_id=%d;"
			    "INSERT INTO meta VALUES ('schema_version', %d), ('index', 0);",
			    schema_sql, HERD_APPLICATION_ID, STORE_SCHEMA_VERSION);
		rc = exec(ss, sql.buf, err);
		goto out;
	}
	if (app != HERD_APPLICATION_ID) {
		rc = herd_errf(err, -EINVAL, "store: %s is an SQLite file but not a herd store",
			       path);
		goto out;
	}
	if ((rc = pragma_int(ss, "SELECT value FROM meta WHERE key='schema_version'", &version,
			     err)))
		goto out;
	if (version > STORE_SCHEMA_VERSION)
		rc = herd_errf(err, -EPROTONOSUPPORT,
			       "store: %s has schema version %lld, newer than the %d this herd "
			       "knows; use a newer herd", path, (long long)version,
			       STORE_SCHEMA_VERSION);
	else if (version < 1)
		rc = herd_errf(err, -EINVAL, "store: %s has a bad schema version %lld", path,
			       (long long)version);
	/* migrations in place, one version at a time, in this transaction */
	if (rc == 0 && version == 1 &&
	    (rc = exec(ss, SCHEMA_V2_SQL "UPDATE meta SET value=2 WHERE key='schema_version';", err)) == 0)
		version = 2;
	if (rc == 0 && version == 2 &&
	    (rc = exec(ss, SCHEMA_V3_SQL "UPDATE meta SET value=3 WHERE key='schema_version';", err)) == 0)
		version = 3;
	if (rc == 0 && version == 3 &&
	    (rc = exec(ss, SCHEMA_V4_SQL "UPDATE meta SET value=4 WHERE key='schema_version';", err)) == 0)
		version = 4;
	if (rc == 0 && version == 4)
		rc = exec(ss, SCHEMA_V5_SQL "UPDATE meta SET value=5 WHERE key='schema_version';", err);
out:
	/* An agent asks for what changed on its node since index N: without
	 * this index that reads every allocation the node ever had.  Added to
	 * files of any version (older herds ignore it). */
	if (rc == 0)
		rc = exec(ss, "CREATE INDEX IF NOT EXISTS allocations_by_node_change"
			  " ON allocations (node_id, modify_index)", err);
	strbuf_release(&sql);
	if (rc == 0 && (rc = exec(ss, "COMMIT", err)) == 0)
		return 0;
	sqlite3_exec(ss->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int store_open_sqlite(const char *path, struct store **out, struct herd_err *err)
{
	struct sqlite_store *ss = xcalloc(1, sizeof(*ss));
	pthread_mutexattr_t attr;
	int rc;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ss->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_mutex_init(&ss->r_lock, NULL);
	pthread_cond_init(&ss->r_free, NULL);
	commit_queue_init(&ss->queue, commit_group, ss);
	rc = sqlite3_open_v2(path, &ss->w.db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXRESCODE |
				     SQLITE_OPEN_FULLMUTEX,
			     NULL);
	if (rc != SQLITE_OK) {
		rc = herd_errf(err, rc == SQLITE_CANTOPEN ? -ENOENT : -EIO,
			       "store: cannot open %s: %s", path,
			       ss->w.db ? sqlite3_errmsg(ss->w.db) : sqlite3_errstr(rc));
		goto fail;
	}
	if ((rc = configure(&ss->w, path, err)) || (rc = check_schema(&ss->w, path, err)))
		goto fail;
	/* readers open the file the writer did, by its full name (the
	 * process may change directory later) */
	ss->path = xstrdup(sqlite3_db_filename(ss->w.db, "main"));
	if ((rc = store_base_init(&ss->base, &sqlite_ops, err)))
		goto fail;
	*out = &ss->base;
	return 0;
fail:
	close_readers(ss);
	conn_close(&ss->w);
	free(ss->path);
	pthread_mutex_destroy(&ss->lock);
	pthread_mutex_destroy(&ss->r_lock);
	pthread_cond_destroy(&ss->r_free);
	commit_queue_release(&ss->queue);
	free(ss);
	return rc;
}

/* --- import and export of raw rows (store-int.h) ---------------------- */

struct sqlite_import {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *insert[STORE_KIND_COUNT];
	sqlite3_stmt *group;
};

static int import_err(struct sqlite_import *im, int rc, const char *what, struct herd_err *err)
{
	return herd_errf(err, (rc & 0xff) == SQLITE_FULL ? -ENOSPC : -EIO, "snapshot: %s: %s: %s",
			 im->path, what, im->db ? sqlite3_errmsg(im->db) : sqlite3_errstr(rc));
}

int sqlite_import_begin(const char *dest, struct sqlite_import **out, struct herd_err *err)
{
	struct sqlite_import *im;
	struct strbuf sql = STRBUF_INIT;
	/* made first, empty and 0600 (the store holds token hashes); O_EXCL
	 * refuses a dest that exists */
	int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc;

	if (fd < 0)
		return herd_errf(err, -errno, "snapshot: %s: %s", dest, strerror(errno));
	close(fd);
	im = xcalloc(1, sizeof(*im));
	im->path = xstrdup(dest);
	rc = sqlite3_open_v2(dest, &im->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_EXRESCODE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(im->db, "PRAGMA trusted_schema=OFF; BEGIN", NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		strbuf_addf(&sql, "%sCREATE INDEX allocations_by_node_change"
			    " ON allocations (node_id, modify_index);"
			    "PRAGMA application_id=%d;"
			    "INSERT INTO meta VALUES ('schema_version', %d), ('index', 0);",
			    schema_sql, HERD_APPLICATION_ID, STORE_SCHEMA_VERSION);
		rc = sqlite3_exec(im->db, sql.buf, NULL, NULL, NULL);
		strbuf_release(&sql);
	}
	if (rc != SQLITE_OK) {
		rc = import_err(im, rc, "creating the schema", err);
		sqlite_import_end(im, 0, false, NULL);
		return rc;
	}
	*out = im;
	return 0;
}

int sqlite_import_row(struct sqlite_import *im, const struct store_kind_desc *kd,
		      const struct store_raw_row *r, struct herd_err *err)
{
	sqlite3_stmt **st = &im->insert[kd->kind];
	int rc;

	if (!*st) {
		struct strbuf sql = STRBUF_INIT;
		/* one parameter layout for every kind: ?2-?6 where it has
		 * those columns */
		strbuf_addf(&sql, "INSERT INTO %s (id, %s%s%s%s%screate_index, modify_index, body)"
			    " VALUES (?1, %s%s%s%s%s?7, ?8, ?9)", kd->table,
			    kd->cols & STORE_COL_NS ? "namespace, " : "",
			    kd->cols & STORE_COL_VERSION ? "version, " : "",
			    kd->cols & STORE_COL_JOB ? "job_id, " : "",
			    kd->cols & STORE_COL_NODE ? "node_id, " : "",
			    kd->cols & STORE_COL_NODE ? "alloc_modify_index, " : "",
			    kd->cols & STORE_COL_NS ? "?2, " : "",
			    kd->cols & STORE_COL_VERSION ? "?3, " : "",
			    kd->cols & STORE_COL_JOB ? "?4, " : "",
			    kd->cols & STORE_COL_NODE ? "?5, " : "",
			    kd->cols & STORE_COL_NODE ? "?6, " : "");
		rc = sqlite3_prepare_v2(im->db, sql.buf, -1, st, NULL);
		strbuf_release(&sql);
		if (rc != SQLITE_OK)
			return import_err(im, rc, kd->table, err);
	}
	sqlite3_reset(*st);
	sqlite3_clear_bindings(*st);
	sqlite3_bind_text(*st, 1, r->id, -1, SQLITE_STATIC);
	if (kd->cols & STORE_COL_NS)
		sqlite3_bind_text(*st, 2, r->ns, -1, SQLITE_STATIC);
	if (kd->cols & STORE_COL_VERSION)
		sqlite3_bind_int64(*st, 3, r->version);
	if (kd->cols & STORE_COL_JOB)
		sqlite3_bind_text(*st, 4, r->job_id, -1, SQLITE_STATIC);
	if (kd->cols & STORE_COL_NODE) {
		sqlite3_bind_text(*st, 5, r->node_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(*st, 6, (sqlite3_int64)r->alloc_modify_index);
	}
	sqlite3_bind_int64(*st, 7, (sqlite3_int64)r->create_index);
	sqlite3_bind_int64(*st, 8, (sqlite3_int64)r->modify_index);
	sqlite3_bind_text(*st, 9, r->body, -1, SQLITE_STATIC);
	rc = sqlite3_step(*st);
	sqlite3_reset(*st);
	return rc == SQLITE_DONE ? 0 : import_err(im, rc, kd->table, err);
}

int sqlite_import_group(struct sqlite_import *im, const char *name, uint64_t idx,
			struct herd_err *err)
{
	int rc;
	if (!im->group &&
	    (rc = sqlite3_prepare_v2(im->db, "INSERT INTO group_index (name, idx) VALUES (?1, ?2)",
				     -1, &im->group, NULL)) != SQLITE_OK)
		return import_err(im, rc, "group_index", err);
	sqlite3_reset(im->group);
	sqlite3_bind_text(im->group, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(im->group, 2, (sqlite3_int64)idx);
	rc = sqlite3_step(im->group);
	sqlite3_reset(im->group);
	return rc == SQLITE_DONE ? 0 : import_err(im, rc, "group_index", err);
}

int sqlite_import_end(struct sqlite_import *im, uint64_t index, bool keep, struct herd_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	if (keep) {
		rc = sqlite3_prepare_v2(im->db, "UPDATE meta SET value=?1 WHERE key='index'", -1,
					&st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, (sqlite3_int64)index);
			rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(im->db);
		}
		sqlite3_finalize(st);
		/* COMMIT in the default rollback-journal mode with
		 * synchronous=FULL: the file is on disk when this returns */
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(im->db, "COMMIT", NULL, NULL, NULL);
		rc = rc == SQLITE_OK ? 0 : import_err(im, rc, "commit", err);
	}
	for (int k = 0; k < STORE_KIND_COUNT; k++)
		sqlite3_finalize(im->insert[k]);
	sqlite3_finalize(im->group);
	sqlite3_close(im->db);
	if (!keep || rc)
		unlink(im->path);
	free(im->path);
	free(im);
	return rc;
}

/* Steps st, calling fn for each raw row of kd (columns: id, namespace,
 * version, job_id, node_id, alloc_modify_index, create_index,
 * modify_index, body). */
static int export_rows(sqlite3 *db, sqlite3_stmt *st, const struct store_kind_desc *kd,
		       store_raw_row_fn *fn, void *arg, const char *path, struct herd_err *err)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_raw_row r = {
			(const char *)sqlite3_column_text(st, 0),
			(const char *)sqlite3_column_text(st, 1),
			sqlite3_column_int64(st, 2),
			(const char *)sqlite3_column_text(st, 3),
			(const char *)sqlite3_column_text(st, 4),
			(uint64_t)sqlite3_column_int64(st, 6),
			(uint64_t)sqlite3_column_int64(st, 7),
			(uint64_t)sqlite3_column_int64(st, 5),
			(const char *)sqlite3_column_text(st, 8),
		};
		if ((rc = fn(kd, &r, arg, err)))
			return rc;
	}
	return rc == SQLITE_DONE ? 0
				 : herd_errf(err, -EIO, "%s: reading %s: %s", path, kd->table,
					     sqlite3_errmsg(db));
}

int sqlite_export(const char *path, store_raw_row_fn *row_fn, store_raw_group_fn *group_fn,
		  void *arg, uint64_t *index, struct herd_err *err)
{
	struct strbuf sql = STRBUF_INIT;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, NULL);

	if (rc != SQLITE_OK) {
		rc = herd_errf(err, -EIO, "%s: cannot open: %s", path,
			       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto out;
	}
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = herd_errf(err, -EIO, "%s: %s", path, sqlite3_errmsg(db));
		goto out;
	}
	for (int k = 0; k < STORE_KIND_COUNT && rc == 0; k++) {
		const struct store_kind_desc *kd = &store_kinds[k];
		strbuf_reset(&sql);
		strbuf_addf(&sql, "SELECT id, %s, %s, %s, %s, %s, create_index, modify_index, body"
			    " FROM %s", kd->cols & STORE_COL_NS ? "namespace" : "NULL",
			    kd->cols & STORE_COL_VERSION ? "version" : "0",
			    kd->cols & STORE_COL_JOB ? "job_id" : "NULL",
			    kd->cols & STORE_COL_NODE ? "node_id" : "NULL",
			    kd->cols & STORE_COL_NODE ? "alloc_modify_index" : "0", kd->table);
		if (sqlite3_prepare_v2(db, sql.buf, -1, &st, NULL) != SQLITE_OK) {
			rc = herd_errf(err, -EINVAL, "%s: reading %s: %s", path, kd->table,
				       sqlite3_errmsg(db));
			break;
		}
		rc = export_rows(db, st, kd, row_fn, arg, path, err);
		sqlite3_finalize(st);
		st = NULL;
	}
	if (rc == 0 &&
	    sqlite3_prepare_v2(db, "SELECT name, idx FROM group_index", -1, &st, NULL) == SQLITE_OK) {
		while (rc == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
			rc = group_fn((const char *)sqlite3_column_text(st, 0),
				      (uint64_t)sqlite3_column_int64(st, 1), arg, err);
		if (rc == SQLITE_DONE)
			rc = 0;
		else if (rc > 0)
			rc = herd_errf(err, -EIO, "%s: reading group_index: %s", path,
				       sqlite3_errmsg(db));
		sqlite3_finalize(st);
		st = NULL;
	} else if (rc == 0) {
		rc = herd_errf(err, -EINVAL, "%s: no group_index: %s", path, sqlite3_errmsg(db));
	}
	if (rc == 0 &&
	    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='index'", -1, &st, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		*index = (uint64_t)sqlite3_column_int64(st, 0);
	else if (rc == 0)
		rc = herd_errf(err, -EINVAL, "%s: no index in meta", path);
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	strbuf_release(&sql);
	return rc;
}

int sqlite_upgraded_copy(const char *src, char **path, struct herd_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char *p = xasprintf("%s/herd-upgrade-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct store *s = NULL;
	int fd = mkostemp(p, O_CLOEXEC); /* 0600, empty: VACUUM INTO takes it */
	int rc;

	if (fd < 0) {
		rc = herd_errf(err, -errno, "%s: %s", p, strerror(errno));
		free(p);
		return rc;
	}
	close(fd);
	rc = sqlite3_open_v2(src, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "VACUUM INTO ?", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, p, -1, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
	}
	if (rc != SQLITE_OK)
		rc = herd_errf(err, -EIO, "%s: copying to %s: %s", src, p,
			       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	sqlite3_finalize(st);
	sqlite3_close(db);
	/* opening migrates it in place, one version at a time */
	if (rc == 0 && (rc = store_open_sqlite(p, &s, err)) == 0)
		store_close(s);
	if (rc) {
		sqlite_remove_copy(p);
		return rc;
	}
	*path = p;
	return 0;
}

void sqlite_remove_copy(char *path)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	for (size_t i = 0; path && i < 3; i++) {
		char *f = xasprintf("%s%s", path, suffixes[i]);
		unlink(f);
		free(f);
	}
	free(path);
}
