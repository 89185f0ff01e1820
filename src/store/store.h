/* store: herd's durable state (namespaces, jobs and their versions,
 * evaluations, allocations, nodes).
 *
 * Objects go in and come out as jansson objects.  The store keeps each one
 * as its canonical JSON text (compact, keys sorted) plus the few columns it
 * needs for lookups, which it reads from the object's own fields:
 *
 *   kind         key fields                 lookup fields
 *   namespace    name                       -
 *   node         id                         -
 *   job          namespace, id              -
 *   job_version  namespace, id, version     -
 *   evaluation   id                         namespace, job_id
 *   allocation   id                         namespace, job_id, node_id
 *   quota        name                       -
 *   acl_policy   name                       -
 *   acl_token    id (the secret's hash)     -
 *   usage        namespace, job_id, version -   (version: the UTC hour
 *                                               the GPU-time fell in, unix
 *                                               seconds; server/teams.h)
 *   variable     namespace, path            -   (server/vars.h)
 *
 * String fields must be 1..STORE_MAX_KEY bytes without NUL; version is an
 * integer >= 0.  An object lacking a field its kind needs is refused
 * (-EINVAL), and nothing is written.
 *
 * The index.  One global counter, bumped once by every committed change (a
 * single put or delete, or a whole batch).  Each record carries the index
 * that created it and the one that last modified it; objects read back carry
 * them as "create_index" and "modify_index" (those two fields of an object
 * given to put are ignored).  Besides the global index the store keeps the
 * index of the last change of each kind, and of the allocations of each node
 * and of each job: a scheduler that read a node's allocations at index N
 * commits its plan on condition that this index has not moved (optimistic
 * concurrency, see store_batch_require_node_allocs).  After each commit the
 * new index is published on store_watch(), for blocking queries.
 *
 * Backends are ops tables (store-int.h): SQLite (store_open_sqlite) and
 * PostgreSQL (store_open_postgres).  A store may be used from several
 * threads at once; reads outside a commit do not wait for commits (sqlite.c,
 * postgres.c: readers).
 * Errors: -errno and a message in err; nothing is changed on failure. */
#ifndef HERD_STORE_STORE_H
#define HERD_STORE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "store/index_watch.h"

#define STORE_MAX_KEY 256
/* The schema version this code writes and reads.  A store written by a
 * newer herd (higher version) is refused with -EPROTONOSUPPORT. */
#define STORE_SCHEMA_VERSION 5 /* 2: quotas, acl_policies, acl_tokens; 3: usage_ledger;
				   * 4: allocations' alloc_modify_index; 5: variables */

enum store_kind {
	STORE_NAMESPACE,
	STORE_NODE,
	STORE_JOB,
	STORE_JOB_VERSION,
	STORE_EVAL,
	STORE_ALLOC,
	STORE_QUOTA,
	STORE_ACL_POLICY,
	STORE_ACL_TOKEN,
	STORE_USAGE, /* the GPU-time of collected allocations (server/teams.h) */
	STORE_VAR,   /* variables: a namespace's key/value items (server/vars.h) */
	STORE_KIND_COUNT
};

/* The kind's name as it appears in messages ("job", "allocation", ...). */
const char *store_kind_name(enum store_kind kind);

/* Identifies one record.  Fields a kind does not key on are ignored:
 * namespace, quota, acl_policy: id = the name; node, evaluation, allocation,
 * acl_token: id;
 * job: ns + id; job_version, usage: ns + id (the job's) + version;
 * variable: ns + id (the path). */
struct store_key {
	const char *ns;
	const char *id;
	int64_t version;
};

/* Narrows a list; NULL fields do not filter.  Which fields a kind accepts:
 * job, variable: ns; job_version, usage: ns, job_id (ns required with job_id);
 * evaluation: ns, job_id; allocation: ns, job_id, node_id.  Any other
 * field set is -EINVAL. */
struct store_filter {
	const char *ns;
	const char *job_id;
	const char *node_id;
};

struct store;

/* Opens (creating when absent) the SQLite store at path, in WAL mode with
 * synchronous=FULL (sqlite.c explains why that makes every acknowledged
 * change survive kill -9 and power loss).  Refuses a file whose schema is
 * newer than STORE_SCHEMA_VERSION (-EPROTONOSUPPORT).  On success *out owns
 * the store; free it with store_close. */
int store_open_sqlite(const char *path, struct store **out, struct herd_err *err);

/* The PostgreSQL backend (postgres.c; docs/operations.md, "High
 * availability").  Several herd servers may name one database; exactly one
 * of them, the leader, holds the store open at a time, and the others wait
 * in store_open_postgres (standbys) until the leader goes.
 *
 * Leadership is PostgreSQL's session-level advisory lock, taken on the one
 * connection that commits: a server that loses that connection (its
 * process died, the network or the database went away) loses the lock with
 * it, and no commit can ever reach the database without holding it, so a
 * deposed leader cannot write behind its successor's back (fencing).  The
 * backend never reconnects that connection: once it is lost, the store is
 * fenced, every later commit fails with -ENOTCONN, and opts->lost is
 * called once, from a thread of the store's own, so the server can stop
 * (and be started again as a standby).  The store checks the connection
 * at least once a second even when nothing commits. */
struct store_pg_options {
	/* Who this server is (its advertised address, "10.0.0.5:4646"),
	 * recorded for standbys' messages; NULL: "". */
	const char *holder;
	/* How long to wait for the lock: < 0 forever, 0 try once (-EBUSY
	 * when another server holds it). */
	int64_t lock_wait_ns;
	/* Called once, before waiting, when another server holds the lock,
	 * with that server's holder string ("" when unknown).  May be NULL. */
	void (*waiting)(const char *holder, void *arg);
	/* Called while waiting whenever who leads changes, as read from the
	 * store's leader row each time the lock is asked for again (every
	 * 200 ms): that leader's holder string, or "" while none is known
	 * (no row, or a stale one: its session no longer holds the lock).
	 * First called before waiting.  Its own argument, leader_arg, so
	 * that a server can watch the leader while its caller keeps arg.
	 * May be NULL (then the row is read once, for waiting). */
	void (*leader)(const char *holder, void *leader_arg);
	void *leader_arg;
	/* Polled (at least every 500 ms) while waiting; true ends the wait
	 * with -ECANCELED.  May be NULL. */
	bool (*cancelled)(void *arg);
	/* Called once when the store has lost the lock; why names the cause.
	 * It runs on the store's thread, which store_close waits for: it must
	 * not close the store itself (tell another thread to).  May be NULL. */
	void (*lost)(const char *why, void *arg);
	void *arg;
};

/* Opens the store in the PostgreSQL database that conninfo names (a libpq
 * connection string or URI; passwords through PGPASSWORD, ~/.pgpass or
 * PGPASSFILE as libpq reads them), creating herd's tables when absent and
 * refusing a schema newer than STORE_SCHEMA_VERSION (-EPROTONOSUPPORT), after
 * taking the leadership lock as opts says (opts may be NULL: wait forever,
 * no callbacks).  Every semantic of store.h holds as for SQLite; durability
 * is PostgreSQL's (synchronous_commit on: a change is acknowledged after
 * the database flushed its commit record).  store_snapshot writes an
 * SQLite store file (the same backup format for both backends).  On success
 * *out owns the store; free it with store_close (which gives the lock up). */
int store_open_postgres(const char *conninfo, const struct store_pg_options *opts,
			struct store **out, struct herd_err *err);

/* Restores a snapshot (a file store_snapshot wrote, of either backend)
 * into the PostgreSQL database that conninfo names: in one transaction,
 * every record, group index and the index of the file replace what the
 * database held (tables are created when absent).  Refused with -EBUSY,
 * changing nothing, while a server holds the leadership lock, which the
 * restore holds meanwhile.  keep (may be NULL): a new file where the state
 * it replaces is saved first, as a snapshot.  The file must pass
 * store_snapshot_inspect (a file of an older schema is upgraded on the way,
 * as opening it would; a newer one is -EPROTONOSUPPORT).  On success
 * *index (may be NULL) gets the restored index. */
int store_restore_postgres(const char *conninfo, const char *file, const char *keep,
			   uint64_t *index, struct herd_err *err);

/* Backups (docs/operations.md, "Backups and restore").  store_snapshot
 * writes a consistent copy of the whole store, as it was at one index, to
 * dest, a file that must not exist yet (-EEXIST), while commits go on; the
 * copy is a store file of its own (SQLite), compacted.  On failure dest is
 * removed.  store_snapshot_inspect reads such a file (or any store file
 * not in use) without changing it: it must be a herd store of a schema this
 * herd knows and pass SQLite's integrity check (-EINVAL otherwise, with
 * the reason); info gets its index, schema version and records per kind
 * (kinds its schema predates count 0). */
int store_snapshot(struct store *s, const char *dest, struct herd_err *err);
struct store_snapshot_info {
	uint64_t index;
	int schema_version;
	uint64_t records[STORE_KIND_COUNT];
};
int store_snapshot_inspect(const char *path, struct store_snapshot_info *info,
			   struct herd_err *err);

/* Takes the data dir's lock (dir/server.lock, flock) for as long as the
 * returned *fd stays open: one server per data dir, and no restore under a
 * running one.  -EBUSY, with the holder's pid in the message, when another
 * process holds it. */
int store_dir_lock(const char *dir, int *fd, struct herd_err *err);

/* Closes the store; no call may be in progress.  Accepts NULL. */
void store_close(struct store *s);

/* The backend's name ("sqlite" or "postgres"). */
const char *store_backend(const struct store *s);

/* The global index of the last committed change (0 for a new store). */
uint64_t store_index(struct store *s);

/* The index as the store holds it now, read from the backend: inside a
 * store_view, the index of the state that view reads (store_index may lag
 * it briefly: it is published after the commit's writers are answered).
 * A scheduler conditions its plan on this one. */
int store_read_index(struct store *s, uint64_t *out, struct herd_err *err);

/* The watch on which the store publishes its index after each commit.
 * Owned by the store; valid until store_close. */
struct index_watch *store_watch(struct store *s);

/* Reads one record.  On success *out is a new object of the caller's own
 * (json_decref it; change it freely).  -ENOENT when there is no such
 * record. */
int store_get(struct store *s, enum store_kind kind, const struct store_key *key,
	      json_t **out, struct herd_err *err);

/* The modify_index of one record, without reading or decoding the record:
 * whether it exists, or whether a copy read before is still current.
 * -ENOENT when there is no such record. */
int store_get_index(struct store *s, enum store_kind kind, const struct store_key *key,
		    uint64_t *out, struct herd_err *err);

/* Lists the records of a kind that pass filter (may be NULL), in key order.
 * On success *out is a new JSON array (possibly empty). */
int store_list(struct store *s, enum store_kind kind, const struct store_filter *filter,
	       json_t **out, struct herd_err *err);

/* Like store_list, but only the records whose modify_index is above
 * `after` (0: all): what changed since a reader last looked, e.g. an
 * agent's allocations since the index of its previous answer.  Deleted
 * records do not show (allocations are never deleted today). */
int store_list_changed(struct store *s, enum store_kind kind, const struct store_filter *filter,
		       uint64_t after, json_t **out, struct herd_err *err);

/* Like store_list_changed for allocations, but `after` is compared with
 * each allocation's alloc_modify_index, the index of its last change that
 * was not a report (store_batch_put_report), rather than modify_index:
 * what the server changed for an agent (placed, stopped, lost, moved,
 * updated), without the agent's own status reports coming back to it. */
int store_list_allocs_server_changed(struct store *s, const struct store_filter *filter,
				     uint64_t after, json_t **out, struct herd_err *err);

/* Shared reads: like store_get, store_list, store_list_changed and
 * store_list_allocs_server_changed, but each record is a shared, read-only
 * object out of the store's cache of decoded records, so that reading a
 * record whose (kind, key, modify_index) was decoded before costs no JSON
 * parse.  The store still reads each row's modify_index in the caller's
 * transaction (a view, a commit's check, or a read of its own) and answers
 * with the record as that transaction sees it, never a stale one.
 *
 * A shared record MUST NOT be modified, nor anything inside it: other
 * threads read the very same object.  json_deep_copy it to change it
 * (json_copy, shallow, is enough to set or delete top-level fields of the
 * copy, since those only replace the copy's references).  Holding it,
 * json_decref'ing it, and putting it inside another object or array
 * (json_object_set, json_array_append) are fine, as long as nothing
 * changes it there either.  The arrays the list functions return are the
 * caller's own (append, remove, sort at will); only their elements are
 * shared.  The records of the other read functions are each the caller's
 * own (a deep copy of the cached object when there is one: cheaper than a
 * parse, still a copy).  With HERD_STORE_CACHE_CHECK=1 in the environment
 * at open, every cache hit is compared with the stored text (decoded, key
 * order included), and a shared record found changed fails the read with
 * -EIO (for tests). */
int store_get_shared(struct store *s, enum store_kind kind, const struct store_key *key,
		     json_t **out, struct herd_err *err);
int store_list_shared(struct store *s, enum store_kind kind, const struct store_filter *filter,
		      json_t **out, struct herd_err *err);
int store_list_changed_shared(struct store *s, enum store_kind kind,
			      const struct store_filter *filter, uint64_t after, json_t **out,
			      struct herd_err *err);
int store_list_allocs_server_changed_shared(struct store *s, const struct store_filter *filter,
					    uint64_t after, json_t **out, struct herd_err *err);

/* The cache of decoded records.  A commit puts in each record it wrote (a
 * copy of the object, as its stored text decodes) and takes out those it
 * deleted; a shared read of committed state (not inside a commit's own
 * transaction) adds what it had to decode; every read looks in it first.
 * It holds at most STORE_CACHE_ENTRIES records and STORE_CACHE_BYTES bytes
 * of their stored text (jansson takes about ten times the text's size for
 * the decoded object: ~40 MiB at the bound), dropping the least recently
 * used beyond either. */
#define STORE_CACHE_ENTRIES 4096
#define STORE_CACHE_BYTES (4u << 20)

struct store_cache_stats {
	size_t entries, bytes;            /* held now; bytes of stored text */
	uint64_t hits, misses, evictions; /* since open */
};

/* Sets the cache's bounds (0 entries: no caching), dropping what exceeds
 * them. */
void store_cache_limit(struct store *s, size_t max_entries, size_t max_bytes);
void store_cache_stats(struct store *s, struct store_cache_stats *out);

/* How many group index rows (the indexes below) committed changes wrote
 * since the store was opened: a change writes each group it touches once,
 * however many of its rows touch it, in either backend. */
uint64_t store_group_writes(struct store *s);

/* Index of the last change to any record of kind (0: none yet). */
int store_kind_index(struct store *s, enum store_kind kind, uint64_t *out, struct herd_err *err);
/* Index of the last change to the allocations placed on node_id (an
 * allocation put there, moved away or deleted); 0 when none ever was. */
int store_node_allocs_index(struct store *s, const char *node_id, uint64_t *out,
			    struct herd_err *err);
/* Index of the last change to the allocations of job (ns, job_id). */
int store_job_allocs_index(struct store *s, const char *ns, const char *job_id, uint64_t *out,
			   struct herd_err *err);

/* Writes obj (a JSON object; the store keeps its own copy) as a record of
 * kind, replacing any record with the same key, in one transaction that
 * bumps the index.  *out_index (may be NULL) receives the new index. */
int store_put(struct store *s, enum store_kind kind, json_t *obj, uint64_t *out_index,
	      struct herd_err *err);

/* Deletes one record in one transaction that bumps the index; -ENOENT (and
 * no change) when there is no such record. */
int store_delete(struct store *s, enum store_kind kind, const struct store_key *key,
		 uint64_t *out_index, struct herd_err *err);

/* A caller-supplied check run inside a commit's transaction, after the
 * declared conditions pass and before any write.  It sees the state as of
 * that transaction and may call store_get, store_list and the *_index
 * functions on s (never a write).  Return 0 to go on, or -errno (with a
 * message in err) to roll the whole batch back; -ESTALE is the convention
 * for "the state moved under the plan". */
typedef int store_check_fn(struct store *s, void *arg, struct herd_err *err);

enum store_op { STORE_OP_PUT, STORE_OP_DELETE };
enum store_cond_type {
	STORE_COND_MODIFY_INDEX, /* record's modify_index == index (0: absent) */
	STORE_COND_NODE_ALLOCS,  /* store_node_allocs_index(id) <= index */
	STORE_COND_JOB_ALLOCS,   /* store_job_allocs_index(ns, id) <= index */
};

struct store_write {
	enum store_op op;
	enum store_kind kind;
	json_t *obj;          /* put: a reference owned by the batch */
	char *ns, *id;        /* delete: the key, owned by the batch */
	int64_t version;
	bool report;          /* put: a report, not a server change (store_batch_put_report) */
	bool owned;           /* put: the store may keep obj itself (store_batch_put_owned) */
};

struct store_cond {
	enum store_cond_type type;
	enum store_kind kind; /* STORE_COND_MODIFY_INDEX */
	char *ns, *id;        /* owned by the batch */
	int64_t version;
	uint64_t index;
};

/* A batch: several writes committed atomically with one index bump, on
 * condition that every declared condition and the check hold inside the
 * transaction.  This is how the plan applier commits a plan: put every new
 * or changed allocation, require that the allocations of each node the plan
 * touches are still at the index the scheduler saw, and let the check
 * re-count capacity. */
struct store_batch {
	struct store_write *w;
	size_t nw, aw;
	struct store_cond *c;
	size_t nc, ac;
	store_check_fn *check;
	void *check_arg;
};

#define STORE_BATCH_INIT { NULL, 0, 0, NULL, 0, 0, NULL, NULL }
void store_batch_init(struct store_batch *b);
/* Frees what the batch owns and leaves it empty.  Accepts NULL. */
void store_batch_release(struct store_batch *b);
/* Queues a put; the batch takes a new reference to obj.  For an
 * allocation this is a server change: its alloc_modify_index becomes the
 * commit's index (see store_filter.server_changes). */
void store_batch_put(struct store_batch *b, enum store_kind kind, json_t *obj);
/* Queues a put of an object nobody changes any more: the batch takes over
 * the caller's reference (the caller keeps none unless it took one more).
 * When every object in it already has its keys in the store's canonical
 * order (sorted as JSON_SORT_KEYS sorts; job_to_json_sorted writes jobs so)
 * and it holds no create_index or modify_index at the top, the store keeps
 * obj itself as the record it caches, adding those two indexes to it at
 * commit, instead of a sorted copy: the caller may read obj after the
 * commit but never change it or anything in it.  Otherwise the same as
 * store_batch_put.  One object may be put owned twice only in consecutive
 * puts (a job and its version). */
void store_batch_put_owned(struct store_batch *b, enum store_kind kind, json_t *obj);
/* Queues a put that records what an allocation's agent reported (its
 * client status): like store_batch_put (modify_index and every group index
 * move as usual, so schedulers see freed capacity) except that an existing
 * allocation keeps its alloc_modify_index, so the agent is not sent its own
 * report back.  For other kinds the same as store_batch_put. */
void store_batch_put_report(struct store_batch *b, enum store_kind kind, json_t *obj);
/* Queues a delete; a record that is absent at commit fails the batch. */
void store_batch_delete(struct store_batch *b, enum store_kind kind, const struct store_key *key);
/* Requires that the record's modify_index equals index (0: that it does not
 * exist): check-and-set for job registration. */
void store_batch_require_index(struct store_batch *b, enum store_kind kind,
			       const struct store_key *key, uint64_t index);
/* Requires that the allocations of node_id have not changed after index. */
void store_batch_require_node_allocs(struct store_batch *b, const char *node_id, uint64_t index);
/* Requires that the allocations of job (ns, job_id) have not changed after index. */
void store_batch_require_job_allocs(struct store_batch *b, const char *ns, const char *job_id,
				    uint64_t index);
/* Sets the check run inside the transaction (see store_check_fn). */
void store_batch_check(struct store_batch *b, store_check_fn *fn, void *arg);

/* Commits the batch in one transaction: conditions, then the check, then the
 * writes, then one index bump.  A failed condition is -ESTALE with a message
 * naming it; an invalid object -EINVAL; a delete of an absent record -ENOENT;
 * an empty batch -EINVAL.  On any failure nothing is written.  On success
 * *out_index (may be NULL) receives the new index.  The batch is left as it
 * was (release it). */
int store_commit(struct store *s, const struct store_batch *b, uint64_t *out_index,
		 struct herd_err *err);

/* Runs fn inside one read transaction, so that several reads see one
 * consistent state (a scheduler's snapshot).  fn may call the read functions
 * on s, never a write.  Returns what fn returns, or -errno if the
 * transaction could not start.  In the SQLite backend the view runs on a
 * reader connection: writers go on meanwhile (the view does not see them),
 * but the view holds one of a few readers: keep fn short.  Called inside a
 * commit's check, fn reads that commit's transaction. */
int store_view(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err);

#endif
