/* shutdown_delay: the delays between a stop's removal of an allocation's
 * services and the kill of its tasks (group and task `shutdown_delay`,
 * Nomad's semantics).  When the allocation is stopped (job stop, a new
 * version, alloc stop, drain, scale down: the server's desired stop), each
 * running task's runner, before it sends the kill signal:
 *
 *   1. removes the group's services (whichever task carries them) and
 *      waits until the group's delay has passed since the stop began (once
 *      for the allocation: every task counts from the same instant);
 *   2. removes its own services and waits its own delay;
 *   3. kills the task (kill_signal, kill_timeout: task_runner.c).
 *
 * The task keeps running meanwhile: its runner waits on it in slices on
 * its own thread (no thread of the client, nor of other allocations, is
 * held), reporting as it goes, and an event says what it waits for.  A task
 * that ends meanwhile is not killed.  No delay when the task ends by
 * itself, restarts, is stopped by its group's time limit, its leader or a
 * disconnect's stop_on_client_after, when the server's stop says so
 * (job stop / alloc stop -no-shutdown-delay: the allocation's
 * desired_transition.no_shutdown_delay, shutdown_delay_skip; the services
 * are removed all the same, by the kill), or
 * when the client shuts down stopping its tasks (alloc_runner_stop_now);
 * a client that shuts down leaving tasks running detaches at once, and the
 * instant the stop began is saved with the tasks' state, so the next
 * client goes on with the delay rather than starting it again. */
#include <stdlib.h>
#include <string.h>

#include "agent/checker.h"
#include "agent/client-int.h"
#include "common/units.h"

#define SLICE_MS 100

static int64_t positive(int64_t v)
{
	return v > 0 ? v : 0;   /* a stored job from before decodes it unset */
}

/* How a wait ended: the delay is over, the task ended (ex filled), the
 * client detaches. */
enum wait_end { WAIT_OVER = 0, WAIT_ENDED = 1, WAIT_DETACH = -1 };

/* Waits on tr's task until end (unix ns), reporting what changes. */
static int wait_until(struct task_runner *tr, const struct driver_ops *d, int64_t end,
		      struct driver_exit *ex)
{
	struct alloc_runner *ar = tr->ar;

	for (;;) {
		struct herd_err err = { 0, "" };
		int64_t left = end - now_unix_ns();
		bool detach, now;
		int rc;

		if (left <= 0)
			return WAIT_OVER;
		rc = d->wait(tr->handle, left / 1000000 + 1 < SLICE_MS ? (int)(left / 1000000 + 1)
								 : SLICE_MS, ex, &err);
		if (rc == 1)
			return WAIT_ENDED;
		if (rc < 0) {
			ex->lost = true;
			ex->exit_code = -1;
			return WAIT_ENDED;
		}
		pthread_mutex_lock(&ar->lock);
		detach = ar->detach;
		now = ar->stop_now || ar->no_shutdown_delay;
		pthread_mutex_unlock(&ar->lock);
		if (detach)
			return WAIT_DETACH;
		if (now)
			return WAIT_OVER;
		if (ar->svc && svc_set_take_changed(ar->svc))
			alloc_runner_mark_dirty(ar);
		if (tr->on_runner_thread)
			alloc_runner_progress(ar);
	}
}

/* The event that says what tr waits for: whose delay, how long, and what
 * is left of it when an earlier client began it. */
static void delay_event(struct task_runner *tr, const char *whose, int64_t delay, int64_t left)
{
	if (left < delay - NS_PER_SEC / 10)
		task_event(tr, "Waiting Shutdown Delay", "waiting %sshutdown_delay %gs (%.1fs left)",
			   whose, (double)delay / 1e9, (double)left / 1e9);
	else
		task_event(tr, "Waiting Shutdown Delay", "waiting %sshutdown_delay %gs", whose,
			   (double)delay / 1e9);
}

int shutdown_delay_wait(struct task_runner *tr, const struct driver_ops *d,
			struct driver_exit *ex)
{
	struct alloc_runner *ar = tr->ar;
	int64_t group = positive(ar->group->shutdown_delay);
	int64_t own = positive(tr->task->shutdown_delay);
	int64_t since, now = now_unix_ns();
	bool applies, first = false;
	int rc;

	if (!group && !own)
		return 0;   /* nothing to wait for: the kill as ever */
	pthread_mutex_lock(&ar->lock);
	/* a stop of the server's: not the time limit's, nor a disconnected
	 * client's own (its allocation is lost to the server) */
	applies = ar->stop_requested && !ar->stop_now && !ar->time_limited &&
		  !ar->disconnect_stopped && !ar->no_shutdown_delay;
	if (applies && !ar->shutdown_since) {
		ar->shutdown_since = now;
		first = true;
	}
	since = ar->shutdown_since;
	pthread_mutex_unlock(&ar->lock);
	if (!applies)
		return 0;
	if (first)
		alloc_runner_mark_dirty(ar);   /* saved: a restarted client goes on from here */
	if (ar->svc) {
		svc_set_deregister_group(ar->svc);
		if (group > 0 && since + group > now) {
			alloc_runner_mark_dirty(ar);   /* the removal, reported now */
			if (tr->on_runner_thread)
				alloc_runner_progress(ar);
		}
	}
	if (since + group > now) {
		delay_event(tr, "group ", group, since + group - now);
		if ((rc = wait_until(tr, d, since + group, ex)) != WAIT_OVER)
			return rc;
	}
	if (ar->svc)
		svc_task_stopped(tr);
	now = now_unix_ns();
	if (since + group + own > now) {
		alloc_runner_mark_dirty(ar);
		if (tr->on_runner_thread)
			alloc_runner_progress(ar);
		delay_event(tr, "", own, since + group + own - now);
		if ((rc = wait_until(tr, d, since + group + own, ex)) != WAIT_OVER)
			return rc;
	}
	return 0;
}

bool shutdown_delay_begun(struct alloc_runner *ar)
{
	bool begun;
	pthread_mutex_lock(&ar->lock);
	begun = ar->shutdown_since != 0;
	pthread_mutex_unlock(&ar->lock);
	return begun;
}

void shutdown_delay_save(const struct task_runner *tr, json_t *t)
{
	if (tr->ar->shutdown_since)
		json_object_set_new(t, "shutdown_since", json_integer(tr->ar->shutdown_since));
}

void shutdown_delay_recover(struct alloc_runner *ar, const json_t *saved)
{
	int64_t s = json_integer_value(json_object_get(saved, "shutdown_since"));
	if (s > 0 && (!ar->shutdown_since || s < ar->shutdown_since))
		ar->shutdown_since = s;
}

void shutdown_delay_skip(struct alloc_runner *ar)
{
	pthread_mutex_lock(&ar->lock);
	ar->no_shutdown_delay = true;
	pthread_mutex_unlock(&ar->lock);
}

void alloc_runner_stop_now(struct alloc_runner *ar)
{
	pthread_mutex_lock(&ar->lock);
	ar->stop_now = true;
	pthread_mutex_unlock(&ar->lock);
	alloc_runner_stop(ar);
}
