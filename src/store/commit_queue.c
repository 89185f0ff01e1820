/* commit_queue.c: group commit (see commit_queue.h). */
#include "store/commit_queue.h"

void commit_queue_init(struct commit_queue *q, commit_group_fn *fn, void *backend)
{
	pthread_mutex_init(&q->lock, NULL);
	q->head = NULL;
	q->tail = &q->head;
	q->leading = false;
	q->groups = q->changes = 0;
	q->commit_group = fn;
	q->backend = backend;
}

void commit_queue_release(struct commit_queue *q)
{
	pthread_mutex_destroy(&q->lock);
}

int commit_queue_submit(struct commit_queue *q, struct store_row *rows, size_t nrows,
			const struct store_cond *conds, size_t nconds, store_check_fn *check,
			void *check_arg, uint64_t *out_index, struct herd_err *err)
{
	struct herd_err scratch = { 0 };
	struct commit_req req = { rows, nrows, conds, nconds, check, check_arg,
				  err ? err : &scratch, 0, 0, false, PTHREAD_COND_INITIALIZER,
				  NULL };

	pthread_mutex_lock(&q->lock);
	*q->tail = &req;
	q->tail = &req.next;
	while (!req.done) {
		struct commit_req *group, *r;
		size_t n = 0;
		if (q->leading) {
			pthread_cond_wait(&req.wake, &q->lock);
			continue;
		}
		/* lead: take everything queued (this writer's change among it) */
		q->leading = true;
		group = q->head;
		q->head = NULL;
		q->tail = &q->head;
		pthread_mutex_unlock(&q->lock);
		q->commit_group(q->backend, group);
		pthread_mutex_lock(&q->lock);
		/* Wakes the group's writers (each returns once it has the lock,
		 * after we let go: its condition, on its stack, is not touched
		 * after that) and the first of those queued meanwhile, which
		 * leads the next group.  next is read before done is set: once
		 * done, a writer may return and its request go away. */
		for (r = group; r; n++) {
			struct commit_req *next = r->next;
			r->done = true;
			if (r != &req)
				pthread_cond_signal(&r->wake);
			r = next;
		}
		q->groups++;
		q->changes += n;
		q->leading = false;
		if (q->head)
			pthread_cond_signal(&q->head->wake);
	}
	pthread_mutex_unlock(&q->lock);
	pthread_cond_destroy(&req.wake);
	if (req.rc == 0)
		*out_index = req.index;
	return req.rc;
}
