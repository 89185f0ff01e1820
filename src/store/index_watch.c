#include "store/index_watch.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "common/units.h"

void index_watch_init(struct index_watch *w, uint64_t index)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->listen_lock, NULL);
	/* A monotonic clock, so that a jump of the wall clock neither ends
	 * waits early nor stretches them. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->changed, &attr);
	pthread_condattr_destroy(&attr);
	w->index = index;
	w->pokes = 0;
	w->nlisteners = 0;
}

void index_watch_release(struct index_watch *w)
{
	if (!w)
		return;
	pthread_cond_destroy(&w->changed);
	pthread_mutex_destroy(&w->listen_lock);
	pthread_mutex_destroy(&w->lock);
}

uint64_t index_watch_current(struct index_watch *w)
{
	uint64_t v;
	pthread_mutex_lock(&w->lock);
	v = w->index;
	pthread_mutex_unlock(&w->lock);
	return v;
}

void index_watch_publish(struct index_watch *w, uint64_t index)
{
	int raised = 0;

	pthread_mutex_lock(&w->lock);
	if (index > w->index) {
		w->index = index;
		raised = 1;
		pthread_cond_broadcast(&w->changed);
	}
	pthread_mutex_unlock(&w->lock);
	if (!raised)
		return;
	pthread_mutex_lock(&w->listen_lock);
	for (int i = 0; i < w->nlisteners; i++)
		w->listeners[i].fn(index, w->listeners[i].arg);
	pthread_mutex_unlock(&w->listen_lock);
}

/* Waits until the index passes after or, when watch_pokes, the pokes are
 * no longer pokes. */
static int wait_for(struct index_watch *w, uint64_t after, bool watch_pokes, uint64_t pokes,
		    int64_t timeout_ns, uint64_t *out)
{
	int rc = 0;

	if (timeout_ns < 0)
		timeout_ns = 0;
	struct timespec deadline = deadline_after(CLOCK_MONOTONIC, timeout_ns);
	pthread_mutex_lock(&w->lock);
	while (w->index <= after && !(watch_pokes && w->pokes != pokes)) {
		int e = timeout_ns ? pthread_cond_timedwait(&w->changed, &w->lock, &deadline)
				   : ETIMEDOUT;
		if (e == ETIMEDOUT) {
			rc = w->index > after || (watch_pokes && w->pokes != pokes) ? 0 : -ETIMEDOUT;
			break;
		}
	}
	if (out)
		*out = w->index;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int index_watch_wait(struct index_watch *w, uint64_t after, int64_t timeout_ns, uint64_t *out)
{
	return wait_for(w, after, false, 0, timeout_ns, out);
}

int index_watch_wait_poked(struct index_watch *w, uint64_t after, uint64_t pokes,
			   int64_t timeout_ns, uint64_t *out)
{
	return wait_for(w, after, true, pokes, timeout_ns, out);
}

void index_watch_poke(struct index_watch *w)
{
	uint64_t index;

	pthread_mutex_lock(&w->lock);
	w->pokes++;
	index = w->index;
	pthread_cond_broadcast(&w->changed);
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_lock(&w->listen_lock);
	for (int i = 0; i < w->nlisteners; i++)
		w->listeners[i].fn(index, w->listeners[i].arg);
	pthread_mutex_unlock(&w->listen_lock);
}

uint64_t index_watch_pokes(struct index_watch *w)
{
	uint64_t v;
	pthread_mutex_lock(&w->lock);
	v = w->pokes;
	pthread_mutex_unlock(&w->lock);
	return v;
}

int index_watch_listen(struct index_watch *w, index_listen_fn *fn, void *arg)
{
	int rc = 0;
	pthread_mutex_lock(&w->listen_lock);
	if (w->nlisteners == INDEX_WATCH_MAX_LISTENERS) {
		rc = -ENOSPC;
	} else {
		w->listeners[w->nlisteners].fn = fn;
		w->listeners[w->nlisteners].arg = arg;
		w->nlisteners++;
	}
	pthread_mutex_unlock(&w->listen_lock);
	return rc;
}

void index_watch_unlisten(struct index_watch *w, index_listen_fn *fn, void *arg)
{
	pthread_mutex_lock(&w->listen_lock);
	for (int i = 0; i < w->nlisteners; i++) {
		if (w->listeners[i].fn == fn && w->listeners[i].arg == arg) {
			w->listeners[i] = w->listeners[w->nlisteners - 1];
			w->nlisteners--;
			break;
		}
	}
	pthread_mutex_unlock(&w->listen_lock);
}
