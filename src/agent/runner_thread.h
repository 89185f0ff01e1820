/* runner_thread: the threads allocation and task runners run on.
 *
 * A runner's thread used to be created for it and joined when it was
 * freed: at hundreds of short batch allocations a second, each paid a
 * clone, the faults of a fresh stack and its release at exit (glibc gives
 * an ended thread's stack pages back with madvise).  Here a thread whose
 * runner returned parks, at most RUNNER_THREADS_IDLE_MAX of them, for the
 * next runner; a parked thread that gets no work for
 * RUNNER_THREADS_IDLE_NS ends, so an idle agent keeps none.
 *
 * The struct runner_thread is the runner's (embedded in it); the pool's
 * threads are detached and own nothing of the runner once its function
 * returned: runner_thread_join returns only after that, and the caller may
 * then free the struct. */
#ifndef HERD_AGENT_RUNNER_THREAD_H
#define HERD_AGENT_RUNNER_THREAD_H

#include <pthread.h>
#include <stdbool.h>

#define RUNNER_THREADS_IDLE_MAX 16
#define RUNNER_THREADS_IDLE_NS (10 * 1000000000LL)

struct runner_thread {
	pthread_cond_t cond;   /* with the pool's lock: fn returned */
	bool running;          /* started, fn not returned yet */
};

/* Before any other call; nothing runs. */
void runner_thread_init(struct runner_thread *rt);

/* Runs fn(arg) on a parked thread, else a new one (512 KiB of stack).
 * 0, or -errno when no thread could be made (rt is then not running). */
int runner_thread_start(struct runner_thread *rt, void *(*fn)(void *), void *arg);

/* Waits until the fn of the last start returned; at once when none was
 * started (or it returned already). */
void runner_thread_join(struct runner_thread *rt);

/* After runner_thread_join (or without a start). */
void runner_thread_destroy(struct runner_thread *rt);

/* How many threads are parked now (tests). */
unsigned runner_thread_idle(void);

#endif
