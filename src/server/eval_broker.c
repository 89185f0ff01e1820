/* eval_broker: the in-memory queue of evaluations between the routes that
 * create them and the workers that process them.
 *
 * The store is the truth (every evaluation is a record, pending until a
 * worker finishes it); the broker only orders the work, and is rebuilt
 * from the store at start.  Three lists: ready (FIFO), delayed (a
 * reschedule waiting for its delay), blocked (could not place; waits for
 * capacity).  At most one evaluation per job is in progress at a time, so
 * that two workers never reconcile the same job against each other (the
 * plan applier's conditions would catch it, at the cost of a retry). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/server-int.h"

static void item_free(struct broker_item *it)
{
	free(it->id);
	free(it->ns);
	free(it->job_id);
	memset(it, 0, sizeof(*it));
}

static void free_list(struct broker_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		item_free(&v[i]);
	free(v);
}

void broker_init(struct eval_broker *b)
{
	pthread_condattr_t ca;
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
}

void broker_release(struct eval_broker *b)
{
	free_list(b->ready, b->nready);
	free_list(b->delayed, b->ndelayed);
	free_list(b->blocked, b->nblocked);
	for (size_t i = 0; i < b->ninflight; i++)
		free(b->inflight[i]);
	free(b->inflight);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
}

static char *job_key(const char *ns, const char *job_id)
{
	return xasprintf("%s\x1f%s", ns, job_id);
}

static void push(struct broker_item **v, size_t *n, size_t *a, const struct broker_item *it)
{
	ALLOC_GROW(*v, *n + 1, *a);
	(*v)[(*n)++] = *it;
}

void broker_enqueue(struct eval_broker *b, const char *id, const char *ns, const char *job_id,
		    int64_t wait_until)
{
	struct broker_item it = { xstrdup(id), xstrdup(ns), xstrdup(job_id), wait_until, 0 };
	pthread_mutex_lock(&b->lock);
	if (wait_until > now_ns())
		push(&b->delayed, &b->ndelayed, &b->adelayed, &it);
	else
		push(&b->ready, &b->nready, &b->aready, &it);
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static bool job_inflight(const struct eval_broker *b, const char *ns, const char *job_id)
{
	size_t nl = strlen(ns);
	for (size_t i = 0; i < b->ninflight; i++) {
		const char *k = b->inflight[i];
		if (!strncmp(k, ns, nl) && k[nl] == '\x1f' && !strcmp(k + nl + 1, job_id))
			return true;
	}
	return false;
}

/* Moves delayed items that are due to ready; returns the earliest still
 * delayed (unix ns) or 0. */
static int64_t promote_due(struct eval_broker *b)
{
	int64_t now = now_ns(), next = 0;
	size_t j = 0;
	for (size_t i = 0; i < b->ndelayed; i++) {
		struct broker_item *it = &b->delayed[i];
		if (it->wait_until <= now) {
			push(&b->ready, &b->nready, &b->aready, it);
		} else {
			if (!next || it->wait_until < next)
				next = it->wait_until;
			b->delayed[j++] = *it;
		}
	}
	b->ndelayed = j;
	return next;
}

int broker_dequeue(struct eval_broker *b, struct broker_item *out)
{
	pthread_mutex_lock(&b->lock);
	for (;;) {
		int64_t next;
		struct timespec ts;
		if (b->stopping) {
			pthread_mutex_unlock(&b->lock);
			return -ECANCELED;
		}
		next = promote_due(b);
		for (size_t i = 0; i < b->nready; i++) {
			struct broker_item *it = &b->ready[i];
			if (job_inflight(b, it->ns, it->job_id))
				continue;
			*out = *it;
			memmove(&b->ready[i], &b->ready[i + 1], (b->nready - i - 1) * sizeof(*it));
			b->nready--;
			out->gen = b->gen;
			ALLOC_GROW(b->inflight, b->ninflight + 1, b->ainflight);
			b->inflight[b->ninflight++] = job_key(out->ns, out->job_id);
			pthread_mutex_unlock(&b->lock);
			return 0;
		}
		if (next) {
			int64_t d = next - now_ns();
			ts = deadline_after(CLOCK_MONOTONIC, d < 1000000 ? 1000000 : d);
		} else {
			/* a periodic look at nothing costs little */
			ts = deadline_after(CLOCK_MONOTONIC, NS_PER_SEC);
		}
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
	}
}

int broker_dequeue_batch(struct eval_broker *b, struct broker_item *out, size_t max, size_t *n)
{
	int rc = broker_dequeue(b, &out[0]);
	if (rc < 0)
		return rc;
	*n = 1;
	pthread_mutex_lock(&b->lock);
	/* The rest without waiting: whatever is ready now, one per job (each
	 * taken is in flight, so a second of its job is passed over). */
	for (size_t i = 0; i < b->nready && *n < max;) {
		struct broker_item *it = &b->ready[i];
		if (job_inflight(b, it->ns, it->job_id)) {
			i++;
			continue;
		}
		out[*n] = *it;
		memmove(&b->ready[i], &b->ready[i + 1], (b->nready - i - 1) * sizeof(*it));
		b->nready--;
		out[*n].gen = b->gen;
		ALLOC_GROW(b->inflight, b->ninflight + 1, b->ainflight);
		b->inflight[b->ninflight++] = job_key(out[*n].ns, out[*n].job_id);
		(*n)++;
	}
	pthread_mutex_unlock(&b->lock);
	return 0;
}

void broker_done(struct eval_broker *b, struct broker_item *it)
{
	char *key = job_key(it->ns, it->job_id);
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->ninflight; i++) {
		if (!strcmp(b->inflight[i], key)) {
			free(b->inflight[i]);
			b->inflight[i] = b->inflight[--b->ninflight];
			break;
		}
	}
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	free(key);
	item_free(it);
}

void broker_block(struct eval_broker *b, const struct broker_item *it)
{
	struct broker_item copy = { xstrdup(it->id), xstrdup(it->ns), xstrdup(it->job_id), 0, 0 };
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->nblocked; i++) {
		if (!strcmp(b->blocked[i].id, it->id)) {
			item_free(&copy);
			pthread_mutex_unlock(&b->lock);
			return;
		}
	}
	if (b->gen != it->gen) /* capacity appeared while it was being placed */
		push(&b->ready, &b->nready, &b->aready, &copy);
	else
		push(&b->blocked, &b->nblocked, &b->ablocked, &copy);
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void broker_unblock_all(struct eval_broker *b)
{
	pthread_mutex_lock(&b->lock);
	b->gen++;
	for (size_t i = 0; i < b->nblocked; i++)
		push(&b->ready, &b->nready, &b->aready, &b->blocked[i]);
	b->nblocked = 0;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (b->on_unblock)
		b->on_unblock(b->on_unblock_arg);
}

int broker_wait_idle(struct eval_broker *b, int64_t timeout_ns)
{
	int64_t end = mono_ns() + timeout_ns;
	int rc = 0;
	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct timespec ts;
		int64_t left;
		promote_due(b);
		if ((b->nready == 0 && b->ninflight == 0) || b->stopping)
			break;
		left = end - mono_ns();
		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (left > 50000000)
			left = 50000000;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += left;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&b->cond, &b->lock, &ts);
	}
	pthread_mutex_unlock(&b->lock);
	return rc;
}

void broker_counts(struct eval_broker *b, struct broker_counts *out)
{
	int64_t now = now_ns();
	size_t due = 0;

	pthread_mutex_lock(&b->lock);
	/* a delay that has passed counts as ready, as the next worker to look
	 * would find it (looking moves nothing: a reader changes no list) */
	for (size_t i = 0; i < b->ndelayed; i++)
		due += b->delayed[i].wait_until <= now;
	out->ready = b->nready + due;
	out->delayed = b->ndelayed - due;
	out->blocked = b->nblocked;
	out->in_progress = b->ninflight;
	pthread_mutex_unlock(&b->lock);
}

void broker_stop(struct eval_broker *b)
{
	pthread_mutex_lock(&b->lock);
	b->stopping = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}
