/* commit_queue: group commit, shared by the store's backends (sqlite.c,
 * postgres.c).
 *
 * A commit's durable flush (SQLite's fsync of the WAL, PostgreSQL's flush
 * of its commit record) costs far more than the SQL of a change, so one
 * transaction per change caps a store at a few hundred changes per second
 * however many threads write.  Writers therefore queue their changes; the
 * first writer that finds no commit in progress becomes the leader and
 * hands everything queued to the backend's commit_group, which commits the
 * group in one transaction (each change inside its own SAVEPOINT, so that
 * a failing change rolls back alone and gets its own error).  Every writer
 * of the group is answered only after commit_group returned, so no change
 * is acknowledged before the COMMIT that carries it.  While the leader
 * commits, new writers queue up for the next group; a writer alone commits
 * at once, paying no extra latency.  Each waiting writer sleeps on a
 * condition of its own: a commit wakes its group and the first writer
 * queued since (who leads next), not every writer waiting. */
#ifndef HERD_STORE_COMMIT_QUEUE_H
#define HERD_STORE_COMMIT_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store-int.h"

/* One writer's change.  The backend's commit_group sets rc (0 or -errno,
 * with the message in *err) and, on success, index. */
struct commit_req {
	struct store_row *rows;
	size_t nrows;
	const struct store_cond *conds;
	size_t nconds;
	store_check_fn *check;
	void *check_arg;
	struct herd_err *err; /* never NULL */
	uint64_t index;
	int rc;
	/* private to commit_queue.c */
	bool done;
	/* signalled when done, or when this writer is first in the queue and
	 * the group before has committed (it leads next) */
	pthread_cond_t wake;
	struct commit_req *next; /* the group, in queue order, for commit_group */
};

/* Commits a group (a list linked by next, in queue order): sets each
 * request's rc and index.  Called on the leader's thread, without the
 * queue's lock. */
typedef void commit_group_fn(void *backend, struct commit_req *group);

struct commit_queue {
	pthread_mutex_t lock;
	struct commit_req *head, **tail;
	bool leading;             /* a leader is committing a group */
	uint64_t groups, changes; /* counters for benchmarks */
	commit_group_fn *commit_group;
	void *backend;
};

void commit_queue_init(struct commit_queue *q, commit_group_fn *fn, void *backend);
void commit_queue_release(struct commit_queue *q);

/* Queues one change and returns when its group has committed (or failed):
 * req's rc.  On success *out_index is the change's index.  err may be
 * NULL. */
int commit_queue_submit(struct commit_queue *q, struct store_row *rows, size_t nrows,
			const struct store_cond *conds, size_t nconds, store_check_fn *check,
			void *check_arg, uint64_t *out_index, struct herd_err *err);

#endif
