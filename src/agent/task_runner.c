/* task_runner: one task from start to its end through the driver,
 * restarted per the group's restart policy:
 *
 *   a batch task (or a prestart/poststop hook) that exits 0 is done;
 *   any other exit counts as a failure; up to `attempts` restarts within
 *   `interval`, `delay` apart; then mode "fail" fails the task and mode
 *   "delay" waits out the interval and goes on. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define WAIT_SLICE_MS 100

static bool should_stop(struct task_runner *tr)
{
	struct alloc_runner *ar = tr->ar;
	bool s;

	pthread_mutex_lock(&ar->lock);
	s = tr->kill || (ar->stop_requested && tr->phase != PHASE_POSTSTOP);
	pthread_mutex_unlock(&ar->lock);
	return s;
}

static bool should_detach(struct task_runner *tr)
{
	bool d;
	pthread_mutex_lock(&tr->ar->lock);
	d = tr->ar->detach;
	pthread_mutex_unlock(&tr->ar->lock);
	return d;
}

/* Sleeps ns unless the task is to stop; true when it is. */
static bool pause_ns(struct task_runner *tr, int64_t ns)
{
	int64_t end = now_unix_ns() + ns;
	while (now_unix_ns() < end) {
		if (should_stop(tr) || should_detach(tr))
			return true;
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return should_stop(tr) || should_detach(tr);
}

static void set_state(struct task_runner *tr, const char *state)
{
	pthread_mutex_lock(&tr->ar->lock);
	snprintf(tr->state, sizeof(tr->state), "%s", state);
	pthread_mutex_unlock(&tr->ar->lock);
	alloc_runner_mark_dirty(tr->ar);
}

static int start(struct task_runner *tr, const struct driver_ops *d, struct herd_err *err)
{
	struct alloc_runner *ar = tr->ar;
	const json_t *cfg = tr->task->config;
	const char *command = json_string_value(json_object_get(cfg, "command"));
	const json_t *jargs = json_object_get(cfg, "args");
	const char **args = xcalloc(json_array_size(jargs) + 1, sizeof(*args));
	char *log_dir = xasprintf("%s/alloc/logs", ar->dir);
	struct driver_task dt;
	size_t i, n = 0;
	json_t *v;
	int rc;

	json_array_foreach(jargs, i, v)
		if (json_is_string(v))
			args[n++] = json_string_value(v);
	strv_free(tr->env);
	tr->env = alloc_task_env(ar, tr);
	memset(&dt, 0, sizeof(dt));
	dt.name = tr->task->name;
	dt.command = command ? command : "";
	dt.args = args;
	dt.env = (const char *const *)tr->env;
	dt.task_dir = tr->dir;
	dt.log_dir = log_dir;
	dt.state_dir = tr->dir;
	dt.log_max_files = tr->task->logs.max_files > 0 ? (int)tr->task->logs.max_files : 10;
	dt.log_max_file_size = (tr->task->logs.max_file_size > 0 ? tr->task->logs.max_file_size : 10) *
			       1024 * 1024;
	if (!command)
		rc = herd_errf(err, -EINVAL, "config { command } is not set");
	else
	{
		struct driver_handle *h = NULL;
		rc = d->start(&ar->c->driver_env, &dt, &h, err);
		pthread_mutex_lock(&ar->lock);
		tr->handle = h;
		pthread_mutex_unlock(&ar->lock);
	}
	free(args);
	free(log_dir);
	return rc;
}

/* The restart policy's verdict on one more failure: the delay before the
 * next try, or -1 to give up. */
static int64_t next_restart(struct task_runner *tr, int64_t *window_start, int *in_window)
{
	const struct job_restart *rp = &tr->ar->group->restart;
	int64_t now = now_unix_ns();

	if (*window_start == 0 || now - *window_start > rp->interval) {
		*window_start = now;
		*in_window = 0;
	}
	if (*in_window < rp->attempts) {
		(*in_window)++;
		return rp->delay;
	}
	if (rp->mode && !strcmp(rp->mode, "delay")) {
		int64_t wait = rp->interval - (now - *window_start);
		*window_start = 0;
		return wait > rp->delay ? wait : rp->delay;
	}
	return -1;
}

void task_runner_run(struct task_runner *tr)
{
	struct alloc_runner *ar = tr->ar;
	const struct driver_ops *d = driver_find(tr->task->driver);
	bool batch = !strcmp(ar->job->type, "batch") || !strcmp(ar->job->type, "sysbatch");
	bool run_once = (batch || tr->phase != PHASE_MAIN) && !tr->sidecar;
	int64_t window_start = 0;
	int in_window = 0;

	if (!d) {
		task_event(tr, "Driver Failure", "driver \"%s\" is not available", tr->task->driver);
		pthread_mutex_lock(&ar->lock);
		tr->failed = true;
		snprintf(tr->state, sizeof(tr->state), "dead");
		pthread_mutex_unlock(&ar->lock);
		alloc_runner_mark_dirty(ar);
		return;
	}
	for (;;) {
		struct herd_err err = { 0, "" };
		struct driver_exit ex;
		bool stopped = false, ok;
		int rc;

		if (!tr->handle) {
			if (should_stop(tr)) {
				set_state(tr, "dead");
				return;
			}
			rc = start(tr, d, &err);
			if (rc < 0) {
				task_event(tr, "Driver Failure", "%s", err.msg);
				log_warn("client: alloc %.8s: task %s: %s", ar->id, tr->task->name,
					 err.msg);
				memset(&ex, 0, sizeof(ex));
				ex.exit_code = -1;
				goto ended;
			}
			pthread_mutex_lock(&ar->lock);
			tr->started_at = now_unix_ns();
			pthread_mutex_unlock(&ar->lock);
			task_event(tr, "Started", "task started by the client");
			log_debug("client: alloc %.8s: task %s started", ar->id, tr->task->name);
			set_state(tr, "running");
		}
		memset(&ex, 0, sizeof(ex));
		for (;;) {
			rc = d->wait(tr->handle, WAIT_SLICE_MS, &ex, &err);
			if (rc == 1)
				break;
			if (rc < 0) {
				ex.lost = true;
				ex.exit_code = -1;
				break;
			}
			if (should_detach(tr))
				return;   /* the handle stays; the next client recovers it */
			if (should_stop(tr)) {
				int sig = driver_signal_parse(tr->task->kill_signal ? tr->task->kill_signal
										     : "SIGINT");
				int64_t kt = tr->task->kill_timeout;
				if (ar->c->cfg->client.max_kill_timeout_ns > 0 &&
				    kt > ar->c->cfg->client.max_kill_timeout_ns)
					kt = ar->c->cfg->client.max_kill_timeout_ns;
				task_event(tr, "Killing", "sent %s, kill timeout %llds",
					   tr->task->kill_signal ? tr->task->kill_signal : "SIGINT",
					   (long long)(kt / 1000000000LL));
				if (d->stop(tr->handle, sig < 0 ? SIGINT : sig, kt, &ex, &err) < 0) {
					log_warn("client: alloc %.8s: task %s: stop: %s", ar->id,
						 tr->task->name, err.msg);
					ex.exit_code = -1;
				}
				stopped = true;
				break;
			}
		}
		pthread_mutex_lock(&ar->lock);
		d->destroy(tr->handle);
		tr->handle = NULL;
		pthread_mutex_unlock(&ar->lock);
ended:
		pthread_mutex_lock(&ar->lock);
		tr->finished_at = ex.finished_ns ? ex.finished_ns : now_unix_ns();
		tr->exit_code = ex.exit_code;
		pthread_mutex_unlock(&ar->lock);
		if (ex.lost)
			task_event(tr, "Terminated", "the task was lost (its supervisor vanished)");
		else if (ex.signal)
			task_event(tr, "Terminated", "killed by signal %d", ex.signal);
		else
			task_event(tr, "Terminated", "exit code %d", ex.exit_code);
		log_debug("client: alloc %.8s: task %s ended (exit %d, signal %d)", ar->id,
			  tr->task->name, ex.exit_code, ex.signal);
		if (stopped) {
			task_event(tr, "Killed", "task stopped");
			set_state(tr, "dead");
			return;
		}
		ok = !ex.lost && !ex.signal && ex.exit_code == 0;
		if (ok && run_once) {
			set_state(tr, "dead");
			return;
		}
		{
			int64_t delay = next_restart(tr, &window_start, &in_window);
			if (delay < 0) {
				task_event(tr, "Not Restarting", "restart attempts exhausted");
				pthread_mutex_lock(&ar->lock);
				tr->failed = true;
				pthread_mutex_unlock(&ar->lock);
				set_state(tr, "dead");
				return;
			}
			task_event(tr, "Restarting", "task restarts in %lldms",
				   (long long)(delay / 1000000));
			pthread_mutex_lock(&ar->lock);
			tr->restarts++;
			pthread_mutex_unlock(&ar->lock);
			set_state(tr, "pending");
			if (pause_ns(tr, delay)) {
				if (should_detach(tr))
					return;
				set_state(tr, "dead");
				return;
			}
		}
	}
}

void task_event(struct task_runner *tr, const char *type, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&tr->ar->lock);
	/* Keep the last events only: a crash-looping task must not grow
	 * its state without bound. */
	if (json_array_size(tr->events) >= 10)
		json_array_remove(tr->events, 0);
	json_array_append_new(tr->events, json_pack("{s:s,s:I,s:s}", "type", type, "time",
						    (json_int_t)now_unix_ns(), "message", sb.buf));
	pthread_mutex_unlock(&tr->ar->lock);
	strbuf_release(&sb);
	alloc_runner_mark_dirty(tr->ar);
}
