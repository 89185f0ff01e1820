/* state: the client's local state, so that a client restarted after any
 * end (kill -9 included) finds its allocations and tasks again.
 *
 * One SQLite database per node, <state_dir>/state.db, two rows per
 * allocation the client runs, what never changes apart from what does:
 *
 *     alloc_specs(id, alloc, job)      written once
 *       alloc  the allocation as first seen (JSON text)
 *       job    the job version it runs (JSON text)
 *     alloc_tasks(id, done, tasks)     written again at each change
 *       done   1 once the runner's work is over
 *       tasks  {"<name>": {"state","failed","restarts","started_at",
 *               "finished_at","exit_code","events":[...],
 *               "window_start","window_restarts" (restart policy window),
 *               "first_started_at","time_limit_reached" (a group with a
 *               time_limit only: time_limit.c),
 *               "handle": <driver state JSON text or null>}}
 *
 * Durability: WAL with synchronous=NORMAL, so a change costs a write()
 * into the WAL (no file created, no fsync); see state.c for why that is
 * enough.  The changes of many allocations share a transaction: the
 * status sync writes every row handed to it since its last write at once
 * (state_write), before it sends any of their statuses; the removals of
 * finished allocations' rows go with them.  The process that has the
 * store open holds the database's lock for as long (one agent per state
 * dir; no lock call per transaction).  Older clients
 * kept one file per allocation, <state_dir>/allocs/<id>.json, then one
 * table allocs(id, alloc, job, done, tasks): state_open moves either into
 * the two tables once. */
#ifndef HERD_AGENT_STATE_H
#define HERD_AGENT_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/err.h"

struct state_store;
struct alloc_runner;

/* One allocation's row to write: JSON texts, owned.  Or, with remove,
 * the removal of its rows (state_row_removal): every other field NULL. */
struct state_row {
	char *id;
	char *alloc;      /* NULL: its spec row is written already */
	char *job;        /* NULL when alloc is, or when the job is unknown */
	bool done;
	bool remove;
	char *tasks;
};

/* Opens (making it when absent) <state_dir>/state.db, and moves the
 * allocation files of an older client into it.  The store is safe to use
 * from every thread.  0 with *out, or -errno with err. */
int state_open(const char *state_dir, struct state_store **out, struct herd_err *err);
/* Closes the store; accepts NULL. */
void state_close(struct state_store *s);

/* The row of ar's state now, to hand to state_write (through the status
 * sync): the task states always, the allocation and its job the first
 * time only (ar->state_saved is set).  Called with ar->lock held.  Never
 * fails; free with state_row_free. */
struct state_row *state_row_of(struct alloc_runner *ar);
/* The removal of allocation id's rows, to hand to state_write with the
 * other rows (one transaction): for an allocation whose work is over and
 * whose last status the server took. */
struct state_row *state_row_removal(const char *id);
/* Makes newer, a later row of the same allocation, also carry what older
 * had still to write (the spec), and frees older. */
void state_row_merge(struct state_row *newer, struct state_row *older);
void state_row_free(struct state_row *r);     /* accepts NULL */
/* Writes rows (and removals) in one transaction: all of them or none.
 * 0 or -errno with err (the caller keeps the rows to write again). */
int state_write(struct state_store *s, struct state_row *const *rows, size_t n,
		struct herd_err *err);
/* Every saved allocation: a new array of {"alloc", "job", "done",
 * "tasks"} objects (empty when none or on a read error). */
json_t *state_load_allocs(struct state_store *s);
/* For readers outside the client's threads (client_http.c): the row of
 * allocation id as {"done", "tasks"}, or NULL when the allocation has no
 * state (never saved, or removed once over).  Read through the store this
 * process has open on state_dir (it holds the database's lock: see
 * state.c), else through a connection of its own. */
json_t *state_read_alloc(const char *state_dir, const char *id);
/* The same for what never changes: {"alloc", "job"} (the allocation as
 * first seen and the job version it runs; no "job" when the client did
 * not know it), or NULL when the allocation has no state. */
json_t *state_read_alloc_spec(const char *state_dir, const char *id);

/* Writes data to path atomically (temp, fsync, rename): for the few files
 * written once (the node id). */
int state_write_file(const char *path, const char *data, size_t len, struct herd_err *err);

#endif
