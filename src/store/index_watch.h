/* index_watch: the store's global index, published for waiters.
 *
 * Every committed change bumps the store's index; the store publishes the new
 * value here after the commit is durable.  Readers learn the current value,
 * block until it passes a value they have seen (blocking queries), or
 * register a listener that is called after each publish (so that an event
 * loop can wake suspended requests without a thread per waiter).
 *
 * The index only grows: publishing a value not above the current one is
 * ignored.  All functions are thread-safe.  Nothing here fails except the
 * timed wait, which reports a timeout. */
#ifndef HERD_STORE_INDEX_WATCH_H
#define HERD_STORE_INDEX_WATCH_H

#include <pthread.h>
#include <stdint.h>

/* Called with the new index after each publish that raised it, and with
 * the index as it is after each poke, from the publishing (poking)
 * thread, with the index unlocked (so it may read the index) but the
 * listener list locked.  Must not block, publish, poke or (un)listen. */
typedef void index_listen_fn(uint64_t index, void *arg);

#define INDEX_WATCH_MAX_LISTENERS 8

struct index_watch {
	pthread_mutex_t lock;        /* guards index */
	pthread_mutex_t listen_lock; /* guards listeners, held while they run */
	pthread_cond_t changed; /* CLOCK_MONOTONIC */
	uint64_t index;
	uint64_t pokes; /* index_watch_poke calls so far */
	struct {
		index_listen_fn *fn;
		void *arg;
	} listeners[INDEX_WATCH_MAX_LISTENERS];
	int nlisteners;
};

/* Prepares w with the given current index. */
void index_watch_init(struct index_watch *w, uint64_t index);
/* Releases w; no thread may be waiting on it.  Accepts NULL. */
void index_watch_release(struct index_watch *w);

/* The current index. */
uint64_t index_watch_current(struct index_watch *w);

/* Raises the index to `index` (if it is higher), wakes every waiter and calls
 * the listeners. */
void index_watch_publish(struct index_watch *w, uint64_t index);

/* State that is not in the store but that some reads answer changed (the
 * server's reservations, which live in memory): counts a poke, wakes every
 * waiter and calls the listeners, without raising the index (nothing was
 * stored, so X-Herd-Index stays).  Waits that watch pokes end; the others
 * go on waiting. */
void index_watch_poke(struct index_watch *w);
/* The pokes so far: read before looking at the state, then handed to
 * index_watch_wait_poked. */
uint64_t index_watch_pokes(struct index_watch *w);

/* Waits until the index is above `after` or `timeout_ns` nanoseconds have
 * passed (0: do not wait).  Returns 0 when the index passed `after`,
 * -ETIMEDOUT otherwise; *out (may be NULL) receives the index seen last. */
int index_watch_wait(struct index_watch *w, uint64_t after, int64_t timeout_ns, uint64_t *out);
/* The same, ending also when the pokes are no longer `pokes` (returns 0
 * then too). */
int index_watch_wait_poked(struct index_watch *w, uint64_t after, uint64_t pokes,
			   int64_t timeout_ns, uint64_t *out);

/* Adds a listener; returns 0, or -ENOSPC when INDEX_WATCH_MAX_LISTENERS are
 * registered already.  index_watch_unlisten removes the pair (fn, arg); after
 * it returns, fn is not running and will not be called again for arg. */
int index_watch_listen(struct index_watch *w, index_listen_fn *fn, void *arg);
void index_watch_unlisten(struct index_watch *w, index_listen_fn *fn, void *arg);

#endif
