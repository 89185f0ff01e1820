/* state: the client's local state, so that a client restarted after any
 * end (kill -9 included) finds its allocations and tasks again.
 *
 * One SQLite database per node, <state_dir>/state.db, one row per
 * allocation the client runs:
 *
 *     allocs(id, alloc, job, done, tasks)
 *       alloc  the allocation as first seen (JSON text)
 *       job    the job version it runs (JSON text)
 *       done   1 once the runner's work is over
 *       tasks  {"<name>": {"state","failed","restarts","started_at",
 *               "finished_at","exit_code","events":[...],
 *               "window_start","window_restarts" (restart policy window),
 *               "handle": <driver state JSON text or null>}}
 *
 * Durability: WAL with synchronous=NORMAL, so a change costs a write()
 * into the WAL (no file created, no fsync); see state.c for why that is
 * enough.  Older clients kept one file per allocation,
 * <state_dir>/allocs/<id>.json: state_open moves those into the database
 * once. */
#ifndef HERD_AGENT_STATE_H
#define HERD_AGENT_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/err.h"

struct state_store;
struct alloc_runner;

/* Opens (making it when absent) <state_dir>/state.db, and moves the
 * allocation files of an older client into it.  The store is safe to use
 * from every thread.  0 with *out, or -errno with err. */
int state_open(const char *state_dir, struct state_store **out, struct herd_err *err);
/* Closes the store; accepts NULL. */
void state_close(struct state_store *s);

/* Writes the allocation's row: everything the first time, then only what
 * changes (done, tasks).  Called with ar->lock held; the store is
 * ar->c->state.  0 or -errno with err. */
int state_save_alloc(struct alloc_runner *ar, struct herd_err *err);
/* Every saved allocation: a new array of {"alloc", "job", "done",
 * "tasks"} objects (empty when none or on a read error). */
json_t *state_load_allocs(struct state_store *s);
/* Removes the allocation's row (best effort). */
void state_remove_alloc(struct state_store *s, const char *id);

/* For readers outside the client's threads (client_http.c): the row of
 * allocation id as {"done", "tasks"}, read through a connection of their
 * own, or NULL when the allocation has no state (never saved, or removed
 * once over). */
json_t *state_read_alloc(const char *state_dir, const char *id);

/* Writes data to path atomically (temp, fsync, rename): for the few files
 * written once (the node id). */
int state_write_file(const char *path, const char *data, size_t len, struct herd_err *err);

#endif
