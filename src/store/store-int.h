/* store-int.h: what a store backend implements; private to src/store.
 *
 * store.c does everything backends share: it checks keys, reads the lookup
 * columns out of objects, writes the canonical JSON text (canon.h), turns
 * stored text back into objects with create_index/modify_index, keeps the
 * cache of decoded records (record_cache.h), and publishes the index after
 * a commit.  A backend stores rows and runs transactions, and tells which
 * rows it read from committed state (store_found.committed). */
#ifndef HERD_STORE_INT_H
#define HERD_STORE_INT_H

#include "common/strbuf.h"
#include "store/record_cache.h"
#include "store/store.h"

/* Which columns a kind's table has (beyond create_index, modify_index,
 * body, and id which every table has). */
enum {
	STORE_COL_NS = 1,      /* namespace */
	STORE_COL_VERSION = 2, /* version (job versions) */
	STORE_COL_JOB = 4,     /* job_id */
	STORE_COL_NODE = 8,    /* node_id */
};

struct store_kind_desc {
	enum store_kind kind;
	const char *name;      /* "job": for messages */
	const char *table;     /* "jobs" */
	const char *id_field;  /* the object field that holds the id: "id" or "name" */
	unsigned key_cols;     /* STORE_COL_NS | STORE_COL_VERSION: part of the key */
	unsigned cols;         /* every column besides id (key_cols included) */
};

extern const struct store_kind_desc store_kinds[STORE_KIND_COUNT];

/* One write, checked and ready for a backend.  Strings point into the
 * object of the batch (put) or the batch itself (delete). */
struct store_row {
	enum store_op op;
	const struct store_kind_desc *kd;
	struct store_key key;
	const char *job_id;  /* put of a kind with STORE_COL_JOB */
	const char *node_id; /* put of a kind with STORE_COL_NODE */
	char *body;          /* put: canonical JSON, owned by store.c */
	size_t body_len;
	json_t *canon;       /* put: the object body encodes (canon.h), or NULL; owned */
	bool report;         /* put: keeps an allocation's alloc_modify_index */
	uint64_t create_index; /* put, set by the backend's commit: the record's */
};

/* One row a read found, as the backend hands it over: every pointer is
 * valid only during the store_row_fn call. */
struct store_found {
	struct store_key key;    /* the row's key (fields its kind does not key on: unset) */
	uint64_t create_index, modify_index;
	const char *body;        /* canonical JSON text, NUL-terminated */
	size_t body_len;
	/* read from committed state (a reader connection), not inside a
	 * commit's transaction, whose changes may yet be rolled back and
	 * their index reused: only such rows may be cached (record_cache.h) */
	bool committed;
};

/* Called for the row a get finds, or each row a list finds, in key order.
 * Non-zero stops the list and is returned by it. */
typedef int store_row_fn(const struct store_found *row, void *arg, struct herd_err *err);

struct store_ops {
	const char *name;
	void (*close)(struct store *s);
	/* The global index as stored. */
	int (*index)(struct store *s, uint64_t *out, struct herd_err *err);
	/* Reads one row and calls fn with it (row->key is key); -ENOENT when
	 * absent, else what fn returns. */
	int (*get)(struct store *s, const struct store_kind_desc *kd, const struct store_key *key,
		   store_row_fn *fn, void *arg, struct herd_err *err);
	/* A row's modify_index without its body; -ENOENT when absent. */
	int (*get_index)(struct store *s, const struct store_kind_desc *kd,
			 const struct store_key *key, uint64_t *modify_index, struct herd_err *err);
	/* Rows that pass filter and have modify_index > after (with
	 * server_changes, allocations only: alloc_modify_index > after). */
	int (*list)(struct store *s, const struct store_kind_desc *kd,
		    const struct store_filter *filter, uint64_t after, bool server_changes,
		    store_row_fn *fn, void *arg, struct herd_err *err);
	/* The index of a group (see store_group_*); 0 when never bumped. */
	int (*group_index)(struct store *s, const char *group, uint64_t *out,
			   struct herd_err *err);
	/* One transaction: bump the index, check conds and then check(), apply
	 * rows (bumping the groups each row touches; an allocation's
	 * alloc_modify_index to the index unless the row is a report of an
	 * existing one; each put row's create_index set), commit. */
	int (*commit)(struct store *s, struct store_row *rows, size_t nrows,
		      const struct store_cond *conds, size_t nconds, store_check_fn *check,
		      void *check_arg, uint64_t *out_index, struct herd_err *err);
	int (*view)(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err);
	/* A consistent copy of the whole store into the new file dest
	 * (store_snapshot). */
	int (*snapshot)(struct store *s, const char *dest, struct herd_err *err);
};

/* One record as a backend stores it, every column (the PostgreSQL
 * backend's snapshot and restore move rows between backends). */
struct store_raw_row {
	const char *id, *ns;      /* ns: NULL for kinds without one */
	int64_t version;          /* kinds keyed on a version */
	const char *job_id, *node_id; /* kinds with those columns, else NULL */
	uint64_t create_index, modify_index, alloc_modify_index;
	const char *body;         /* canonical JSON text */
};

/* sqlite.c: a new SQLite store file written from raw rows, in one
 * transaction (the PostgreSQL backend's snapshot: one backup format for
 * both backends).  begin creates dest (0600; -EEXIST when it exists) with
 * the schema; end with keep commits the file at index and closes it, or
 * else (keep false, or any failure) removes it.  end frees im. */
struct sqlite_import;
int sqlite_import_begin(const char *dest, struct sqlite_import **out, struct herd_err *err);
int sqlite_import_row(struct sqlite_import *im, const struct store_kind_desc *kd,
		      const struct store_raw_row *r, struct herd_err *err);
int sqlite_import_group(struct sqlite_import *im, const char *name, uint64_t idx,
			struct herd_err *err);
int sqlite_import_end(struct sqlite_import *im, uint64_t index, bool keep, struct herd_err *err);

/* sqlite.c: reads every raw row of a store file that is not in use (a
 * snapshot), in one read transaction: row_fn for each record, group_fn
 * for each group index; *index gets the file's index.  Non-zero from a
 * callback stops and is returned.  The file must be a herd store of this
 * herd's schema version (store_snapshot_inspect checks it first). */
typedef int store_raw_row_fn(const struct store_kind_desc *kd, const struct store_raw_row *r,
			     void *arg, struct herd_err *err);
typedef int store_raw_group_fn(const char *name, uint64_t idx, void *arg, struct herd_err *err);
int sqlite_export(const char *path, store_raw_row_fn *row_fn, store_raw_group_fn *group_fn,
		  void *arg, uint64_t *index, struct herd_err *err);

/* sqlite.c: a copy of the store file src, upgraded to this herd's schema
 * (store_open_sqlite's migrations), in a new file of TMPDIR (or /tmp);
 * *path (the caller frees it, and removes the file with
 * sqlite_remove_copy) names it. */
int sqlite_upgraded_copy(const char *src, char **path, struct herd_err *err);
void sqlite_remove_copy(char *path);

/* "herd" in ASCII: marks an SQLite file as a herd store (PRAGMA
 * application_id). */
#define HERD_APPLICATION_ID 0x68657264

/* Every backend's struct begins with this. */
struct store {
	const struct store_ops *ops;
	struct index_watch watch;
	struct record_cache cache; /* decoded records (store.c, record_cache.h) */
	/* HERD_STORE_CACHE_CHECK=1: every cache hit is compared with the row's
	 * text, and a shared object a reader changed is an error (tests) */
	bool cache_check;
	/* group index rows written by committed changes since open (backends
	 * add with __atomic_fetch_add; store_group_writes) */
	uint64_t group_writes;
};

/* Sets up the part common to every backend, reading the index from ops. */
int store_base_init(struct store *s, const struct store_ops *ops, struct herd_err *err);
void store_base_release(struct store *s);

/* Group names: the keys under which the store records the index of the last
 * change of a set of records.  Keys hold no control characters, so '\n'
 * separates parts unambiguously. */
void store_group_kind(struct strbuf *sb, const struct store_kind_desc *kd);
void store_group_node_allocs(struct strbuf *sb, const char *node_id);
void store_group_job_allocs(struct strbuf *sb, const char *ns, const char *job_id);

#endif
