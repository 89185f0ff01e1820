/* The threads runners run on, kept for the next runner; see runner_thread.h. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "agent/runner_thread.h"
#include "common/xalloc.h"

/* The stack of a runner's thread.  These threads need far less than
 * glibc's 8 MiB default: JSON, libcurl for artifacts, the driver's
 * spawn. */
#define RUNNER_STACK_SIZE (512 * 1024)

/* One thread of the pool: its next work, and its place among the idle. */
struct pool_thread {
	pthread_cond_t wake;          /* CLOCK_MONOTONIC; with pool_lock */
	void *(*fn)(void *);          /* NULL: none (idle) */
	void *arg;
	struct runner_thread *rt;
	struct pool_thread *next;     /* in idle */
};

/* One lock for the pool and every runner_thread's running flag: the
 * operations under it are a few assignments. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_thread *idle;
static unsigned nidle;

void runner_thread_init(struct runner_thread *rt)
{
	pthread_cond_init(&rt->cond, NULL);
	rt->running = false;
}

void runner_thread_destroy(struct runner_thread *rt)
{
	pthread_cond_destroy(&rt->cond);
}

/* Takes pt out of the idle list; called locked. */
static void unlink_idle(struct pool_thread *pt)
{
	for (struct pool_thread **p = &idle; *p; p = &(*p)->next)
		if (*p == pt) {
			*p = pt->next;
			nidle--;
			return;
		}
}

static void *pool_main(void *arg)
{
	struct pool_thread *pt = arg;

	pthread_mutex_lock(&pool_lock);
	for (;;) {
		void *(*fn)(void *) = pt->fn;
		void *fn_arg = pt->arg;
		struct runner_thread *rt = pt->rt;

		pthread_mutex_unlock(&pool_lock);
		fn(fn_arg);
		pthread_mutex_lock(&pool_lock);
		/* From here on rt is its owner's again (join may free it
		 * once this thread lets go of the lock). */
		rt->running = false;
		pthread_cond_broadcast(&rt->cond);
		pt->fn = NULL;
		pt->rt = NULL;
		if (nidle >= RUNNER_THREADS_IDLE_MAX)
			break;
		pt->next = idle;
		idle = pt;
		nidle++;
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += RUNNER_THREADS_IDLE_NS / 1000000000LL;
		while (!pt->fn && pthread_cond_timedwait(&pt->wake, &pool_lock, &until) != ETIMEDOUT)
			;
		if (!pt->fn) {
			unlink_idle(pt);   /* no work for a while: end */
			break;
		}
	}
	pthread_mutex_unlock(&pool_lock);
	pthread_cond_destroy(&pt->wake);
	free(pt);
	return NULL;
}

int runner_thread_start(struct runner_thread *rt, void *(*fn)(void *), void *arg)
{
	struct pool_thread *pt;

	pthread_mutex_lock(&pool_lock);
	rt->running = true;
	if ((pt = idle)) {
		idle = pt->next;
		nidle--;
		pt->fn = fn;
		pt->arg = arg;
		pt->rt = rt;
		pthread_cond_signal(&pt->wake);
		pthread_mutex_unlock(&pool_lock);
		return 0;
	}
	pthread_mutex_unlock(&pool_lock);

	pthread_condattr_t ca;
	pthread_attr_t a;
	pthread_t t;
	int rc;

	pt = xcalloc(1, sizeof(*pt));
	pt->fn = fn;
	pt->arg = arg;
	pt->rt = rt;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pt->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, RUNNER_STACK_SIZE);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, pool_main, pt);
	pthread_attr_destroy(&a);
	if (rc) {
		pthread_cond_destroy(&pt->wake);
		free(pt);
		pthread_mutex_lock(&pool_lock);
		rt->running = false;
		pthread_mutex_unlock(&pool_lock);
		return -rc;
	}
	return 0;
}

void runner_thread_join(struct runner_thread *rt)
{
	pthread_mutex_lock(&pool_lock);
	while (rt->running)
		pthread_cond_wait(&rt->cond, &pool_lock);
	pthread_mutex_unlock(&pool_lock);
}

unsigned runner_thread_idle(void)
{
	unsigned n;

	pthread_mutex_lock(&pool_lock);
	n = nidle;
	pthread_mutex_unlock(&pool_lock);
	return n;
}
