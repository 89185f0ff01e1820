/* postgres-int.h: what the files of the PostgreSQL backend share; private
 * to src/store (postgres.c: open, close, leadership and fencing;
 * postgres_conn.c: connections and statements; postgres_rw.c: reads,
 * writes and group commit; postgres_backup.c: snapshot and restore).
 * postgres.c's comment says how the backend works. */
#ifndef HERD_STORE_POSTGRES_INT_H
#define HERD_STORE_POSTGRES_INT_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "store/commit_queue.h"
#include "store/store-int.h"

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

/* Statements prepared on every connection, numbered: these first, then
 * each kind's slots, then each kind's lists by shape of filter (bits:
 * namespace, job, node, after, after on alloc_modify_index). */
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

/* The kind statements' parameters, always all ten (unused ones are typed,
 * so PostgreSQL accepts them). */
enum { KP_ID, KP_NS, KP_VERSION, KP_JOB, KP_NODE, KP_CI, KP_MI, KP_AMI, KP_BODY, KP_REPORT,
       KP_COUNT };
/* A kind statement's parameter values (text), with room for the numbers. */
struct kparams {
	char version[24], ci[24], mi[24], ami[24];
	const char *v[KP_COUNT];
};

/* The connection whose transaction this thread runs, and its store (see
 * sqlite.c): postgres_conn.c's pg_conn_get reads on it. */
extern _Thread_local struct pg_conn *pg_thread_conn;
extern _Thread_local struct pg_store *pg_thread_store;

static inline struct pg_store *pg_of(struct store *s)
{
	return (struct pg_store *)s;
}

/* postgres_conn.c */
void pg_one_line(char *buf, size_t size, const char *msg);
/* The error of a failed command on c: -ENOTCONN when the connection is
 * gone (and, for w, the store fenced), else by SQLSTATE. */
int pg_err(struct pg_store *ps, struct pg_conn *c, const PGresult *res, const char *what,
	   struct herd_err *err);
/* Prepares statement n ("s<n>") on c once, from sql. */
int pg_prepare(struct pg_store *ps, struct pg_conn *c, int n, const char *what, const char *sql,
	       int nparams, const Oid *types, struct herd_err *err);
/* Runs statement n on c (prepared from sql on first use); *out: the result. */
int pg_run(struct pg_store *ps, struct pg_conn *c, int n, const char *what, const char *sql,
	   int nparams, const Oid *types, const char *const *values, PGresult **out,
	   struct herd_err *err);
void pg_kparams_key(struct kparams *p, const struct store_key *key);
void pg_kparams_int(struct kparams *p, int which, char *buf, size_t size, uint64_t v);
uint64_t pg_value_u64(const PGresult *res, int row, int col);
/* A statement without parameters (transaction control). */
int pg_exec(struct pg_store *ps, struct pg_conn *c, const char *sql, struct herd_err *err);
int pg_conn_open(const char *conninfo, bool reader, struct pg_conn *c, struct herd_err *err);
void pg_conn_close(struct pg_conn *c);
/* The connection a read runs on (this thread's transaction's, else a
 * reader); give it back with pg_conn_put.  NULL with err on failure. */
struct pg_conn *pg_conn_get(struct pg_store *ps, struct herd_err *err);
void pg_conn_put(struct pg_store *ps, struct pg_conn *c);
void pg_close_readers(struct pg_store *ps);

/* postgres_rw.c: the ops, and what open and restore use */
int pg_kind_run(struct pg_store *ps, struct pg_conn *c, const struct store_kind_desc *kd,
		enum pg_slot slot, const struct kparams *p, PGresult **out, struct herd_err *err);
int pg_bump_group(struct pg_store *ps, const char *group, uint64_t idx, struct herd_err *err);
void pg_commit_group(void *backend, struct commit_req *group);
int pg_index(struct store *s, uint64_t *out, struct herd_err *err);
int pg_get(struct store *s, const struct store_kind_desc *kd, const struct store_key *key,
	   store_row_fn *fn, void *arg, struct herd_err *err);
int pg_get_index(struct store *s, const struct store_kind_desc *kd, const struct store_key *key,
		 uint64_t *mi, struct herd_err *err);
int pg_list(struct store *s, const struct store_kind_desc *kd, const struct store_filter *f,
	    uint64_t after, bool server_changes, store_row_fn *fn, void *arg,
	    struct herd_err *err);
int pg_group_index(struct store *s, const char *group, uint64_t *out, struct herd_err *err);
int pg_commit(struct store *s, struct store_row *rows, size_t nrows,
	      const struct store_cond *conds, size_t nconds, store_check_fn *check,
	      void *check_arg, uint64_t *out_index, struct herd_err *err);
int pg_view(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err);

/* postgres.c: w is lost; no commit any more, and the monitor calls lost */
void pg_fence(struct pg_store *ps, const char *why);

/* postgres_backup.c */
int pg_snapshot(struct store *s, const char *dest, struct herd_err *err);

#endif
