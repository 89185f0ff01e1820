/* alloc_gc: what happens to a terminal allocation's directory.
 *
 * A client that runs allocations for months must not fill its disk with
 * their directories, so terminal ones are garbage-collected (Nomad's
 * client options, same names and meaning: docs/agent-config.md):
 *
 *   gc_max_allocs             at most this many terminal allocations keep
 *                             their directory; the oldest go first, as soon
 *                             as one more ends
 *   gc_interval               how often the alloc dir's filesystem is
 *                             looked at: while it is fuller than
 *   gc_disk_usage_threshold   (percent of blocks) or
 *   gc_inode_usage_threshold  (percent of inodes), the oldest terminal
 *                             allocations go, one at a time, until it is not
 *
 * A terminal allocation is one whose runner the client freed (done, and
 * its last status report taken by the server: client.c collect_runners),
 * or, after an agent restart, a directory under alloc_dir that no
 * recovered allocation owns.  A running allocation's directory is never
 * one: the allocation runner claims its id (alloc_gc_claim, from
 * alloc_dir_build) before it uses the directory, which takes the id out of
 * the queue or waits for a collection under way to end.
 *
 * Collecting one first renames <alloc_dir>/<id> into <alloc_dir>/.pool (so
 * from then on nothing finds it by its id), then either scrubs it back to
 * the bare skeleton (alloc_dir_scrub) and keeps it in the pool, at most
 * ALLOC_POOL_MAX, for alloc_dir_build to rename into place for a new
 * allocation with as many tasks; or removes it (alloc_dir_remove).  Why:
 * on ext4 without a journal, a new inode costs a scan past every inode
 * deleted in the last minutes, and a fresh directory tree is 9 of them;
 * a recycled one is renames.  The pool is in-memory bookkeeping of
 * directories on disk; at start the collector removes whatever an earlier
 * life left in .pool.
 *
 * The collector is one thread per client; its state is shared with
 * alloc_dir_build and the log API through a registry keyed by the alloc
 * dir path (they know only paths).  One collector per alloc dir; a second
 * client on the same dir in one process (tests) runs without one. */
#ifndef HERD_AGENT_ALLOC_GC_H
#define HERD_AGENT_ALLOC_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define ALLOC_POOL_MAX 64
#define ALLOC_POOL_DIR ".pool"

struct alloc_gc;
struct client;
struct alloc_runner;

struct alloc_gc_options {
	int64_t interval_ns;      /* > 0 */
	int64_t max_allocs;       /* >= 1 */
	int64_t disk_pct;         /* 1..100; 100: never for blocks */
	int64_t inode_pct;        /* 1..100; 100: never for inodes */
};

/* Starts the collector of the alloc dir root.  keep[0..nkeep) are the ids
 * whose allocations run (recovered runners); every other directory under
 * root (names not starting with '.') is queued as terminal, oldest
 * modification first.  Returns the collector (alloc_gc_stop frees it), or
 * NULL with err when root cannot be read or another collector has root. */
struct alloc_gc *alloc_gc_start(const char *root, const struct alloc_gc_options *o,
				const char *const *keep, size_t nkeep, struct herd_err *err);

/* Stops the thread (a collection under way finishes first) and frees gc;
 * accepts NULL.  What the pool holds stays on disk for the next start to
 * remove. */
void alloc_gc_stop(struct alloc_gc *gc);

/* Queues the terminal allocation id as the newest.  recyclable: its
 * directory may be scrubbed and reused (alloc_gc_client_note says when).
 * gc NULL: nothing. */
void alloc_gc_add(struct alloc_gc *gc, const char *id, bool recyclable);

/* client.c's hook: queues the runner's allocation, which is terminal and
 * about to be freed; recyclable when every task ran with raw_exec or exec
 * (see alloc_dir.c for why those and not docker). */
void alloc_gc_client_note(struct client *c, const struct alloc_runner *ar);

/* alloc_dir_build: the allocation id under root is about to be used:
 * takes it out of the queue, waiting while it is being collected.  No
 * collector for root: returns at once. */
void alloc_gc_claim(const char *root, const char *id);
/* ephemeral_disk (sticky_disk.c, migrate_serve.c): a terminal
 * allocation's directory is read or moved from: alloc_gc_claim, and
 * whether it was queued; alloc_gc_unclaim queues it again (as the newest,
 * to be removed, not recycled) when it was. */
bool alloc_gc_claim_queued(const char *root, const char *id);
void alloc_gc_unclaim(const char *root, const char *id, bool queued);

/* alloc_dir_build: takes a pool directory with ntasks task dirs, if any.
 * Returns 1 with *path (<root>/.pool/<name>) and *tasks (its ntasks task
 * dir names), both the caller's to free (alloc_gc_free_names), 0 when
 * there is none. */
int alloc_gc_pool_take(const char *root, size_t ntasks, char **path, char ***tasks);
void alloc_gc_free_names(char **names, size_t n);

/* Whether this process's collector of root removed (or recycled) the
 * directory of id since it started: the log API's "collected" answer. */
bool alloc_gc_collected(const char *root, const char *id);

/* alloc_dir.c: removing and scrubbing, relative to the directory open at
 * parent (never following a symbolic link, never crossing into another
 * mount: openat2 RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS).
 *
 * alloc_dir_remove: removes the tree name.  0, or -errno of the first
 * failure (-EXDEV: a mount point inside; it is left there).
 *
 * alloc_dir_scrub: empties the allocation directory name back to its
 * skeleton (alloc/{logs,tmp,data}, <task>/{local,secrets,tmp} and an
 * empty <task>.exit file) with the agent's owner and the skeleton's modes.
 * Returns 0 with *tasks (the *ntasks task dir names; free with
 * alloc_gc_free_names), 1 when the directory is not the shape of one
 * (the caller removes it instead), -errno on failure. */
int alloc_dir_remove(int parent, const char *name);
int alloc_dir_scrub(int parent, const char *name, char ***tasks, size_t *ntasks);

#endif
