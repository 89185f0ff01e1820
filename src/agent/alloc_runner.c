/* alloc_runner: one allocation on this node, from its directory to its
 * last status report.  Its thread runs the tasks in Nomad's lifecycle
 * order:
 *
 *   prestart hooks                 all at once; the non-sidecar ones must
 *                                  end with exit 0 before anything else
 *                                  starts (a failure fails the allocation:
 *                                  main tasks never start); sidecar
 *                                  prestarts keep running alongside
 *   main tasks                     until every main task is dead (once
 *                                  the leader task is dead, the others
 *                                  are stopped: stop_for_leader)
 *   poststart hooks                once every main task is running
 *   (then sidecars and whatever hooks still run are stopped)
 *   poststop hooks                 after the main tasks ended, also when
 *                                  they failed, a prestart failed or the
 *                                  allocation was stopped
 *
 * and reports task states and client_status whenever something changed
 * through the client's status sync, which persists them first (state.c,
 * one transaction for many allocations' changes) and sends them after
 * (status_sync.h: batched PUT /v1/node/:id/allocations/status).
 * Each task runs on a thread of its own (task_runner.c), but for a group
 * of one main task and nothing else (most batch jobs), which runs on the
 * allocation's thread (run_single).  These threads come from a pool that
 * keeps a few for the next runner (runner_thread.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/checker.h"
#include "agent/client-int.h"
#include "agent/cores.h"
#include "agent/sticky_disk.h"
#include "agent/log.h"
#include "agent/status_sync.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/docker.h"
#include "spec/spec.h"

void alloc_runner_mark_dirty(struct alloc_runner *ar)
{
	pthread_mutex_lock(&ar->lock);
	ar->dirty = true;
	pthread_cond_broadcast(&ar->cond);
	pthread_mutex_unlock(&ar->lock);
}

struct alloc_runner *alloc_runner_new(struct client *c, json_t *alloc)
{
	struct alloc_runner *ar = xcalloc(1, sizeof(*ar));
	const char *id = json_string_value(json_object_get(alloc, "id"));

	json_t *job = json_object_get(alloc, "job");

	ar->c = c;
	ar->alloc = alloc;
	/* A server that sends allocations with their job (?include=job)
	 * saves the fetch; it is taken only when it is the version the
	 * allocation runs, and leaves the allocation so that state.db keeps
	 * one copy of it (the runner's job). */
	if (job) {
		json_t *v = json_object_get(job, "version"), *av = json_object_get(alloc, "job_version");
		if (json_is_object(job) && json_is_integer(v) && json_is_integer(av) &&
		    json_integer_value(v) == json_integer_value(av))
			ar->job_json = json_incref(job);
		json_object_del(alloc, "job");
	}
	snprintf(ar->id, sizeof(ar->id), "%s", id ? id : "");
	ar->dir = xasprintf("%s/%s", c->cfg->client.alloc_dir, ar->id);
	snprintf(ar->client_status, sizeof(ar->client_status), "pending");
	pthread_mutex_init(&ar->lock, NULL);
	pthread_cond_init(&ar->cond, NULL);
	runner_thread_init(&ar->thread);
	return ar;
}

void alloc_runner_stop(struct alloc_runner *ar)
{
	pthread_mutex_lock(&ar->lock);
	if (!ar->stop_requested && !ar->done)
		log_info("client: alloc %.8s: stopping", ar->id);
	ar->stop_requested = true;
	pthread_cond_broadcast(&ar->cond);
	pthread_mutex_unlock(&ar->lock);
}

/* The job version the allocation runs, when not saved with the state:
 * from the client's job cache, else from the server (job_cache.c). */
static json_t *fetch_job(struct alloc_runner *ar, struct herd_err *err)
{
	const char *job_id = json_string_value(json_object_get(ar->alloc, "job_id"));
	const char *ns = json_string_value(json_object_get(ar->alloc, "namespace"));
	json_int_t version = json_integer_value(json_object_get(ar->alloc, "job_version"));

	return client_job_version(ar->c, ns ? ns : "default", job_id ? job_id : "", version, err);
}

static json_t *task_states_json(struct alloc_runner *ar)
{
	json_t *o = json_object();

	for (size_t i = 0; i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		json_object_set_new(o, tr->task->name,
				    json_pack("{s:s,s:b,s:i,s:I,s:I,s:i,s:O}", "state", tr->state,
					      "failed", tr->failed, "restarts", tr->restarts,
					      "started_at", (json_int_t)tr->started_at,
					      "finished_at", (json_int_t)tr->finished_at,
					      "exit_code", tr->exit_code, "events", tr->events));
	}
	return o;
}

/* Persists and reports when dirty: the row of the state store and the
 * status go to the client's status sync together, which writes the row
 * (in one transaction with the other allocations' changes) before it
 * sends the status (batched too, retried while the server is away).
 * Handed over under ar->lock, so that there is no instant at which a
 * change is neither dirty nor the sync's (collect_runners frees a runner
 * with nothing left to report). */
static void report(struct alloc_runner *ar)
{
	json_t *state;

	pthread_mutex_lock(&ar->lock);
	if (!ar->dirty) {
		pthread_mutex_unlock(&ar->lock);
		return;
	}
	ar->dirty = false;
	state = json_pack("{s:s,s:s,s:o}", "client_status", ar->client_status,
			  "client_description", ar->client_description, "task_states",
			  task_states_json(ar));
	/* what the service registry shows of it (services.c on the server) */
	if (ar->svc)
		json_object_set_new(state, "services", svc_set_json(ar->svc));
	/* the limit and whether it ended the allocation (time_limit.c) */
	if (ar->group && ar->group->time_limit > 0)
		json_object_set_new(state, "time_limit", time_limit_json(ar));
	status_sync_put(ar->c->sync, ar->id, state, ar->tasks ? state_row_of(ar) : NULL);
	pthread_mutex_unlock(&ar->lock);
}

/* The description of a failed allocation: "a task failed", or what
 * killed a failed task when that was its GPU memory over its share
 * (gpu_watch.c). */
static const char *failed_text(struct alloc_runner *ar, char *buf, size_t size)
{
	snprintf(buf, size, "a task failed");
	pthread_mutex_lock(&ar->lock);
	for (size_t i = 0; i < ar->ntasks; i++)
		if (ar->tasks[i].failed && ar->tasks[i].gpu_killed) {
			snprintf(buf, size, "task %s killed: GPU memory over its share (%s)",
				 ar->tasks[i].task->name, ar->tasks[i].gpu_kill_why);
			break;
		}
	pthread_mutex_unlock(&ar->lock);
	return buf;
}

static void set_status(struct alloc_runner *ar, const char *status, const char *desc)
{
	pthread_mutex_lock(&ar->lock);
	if (strcmp(ar->client_status, status))
		log_info("client: alloc %.8s (%s): %s%s%s", ar->id,
			 json_string_value(json_object_get(ar->alloc, "name")) ?: "", status,
			 *desc ? ": " : "", desc);
	snprintf(ar->client_status, sizeof(ar->client_status), "%s", status);
	snprintf(ar->client_description, sizeof(ar->client_description), "%s", desc);
	ar->dirty = true;
	pthread_cond_broadcast(&ar->cond);
	pthread_mutex_unlock(&ar->lock);
}

static void *task_thread(void *arg)
{
	struct alloc_runner *ar = ((struct task_runner *)arg)->ar;
	bool last;

	task_runner_run(arg);
	alloc_runner_mark_dirty(ar);
	/* The runner sees the task dead from inside task_runner_run, so it
	 * may have made its last report before this thread got here: then
	 * nobody else reports this change, and a runner left dirty is never
	 * collected (its dir never GC'd, its row kept). */
	pthread_mutex_lock(&ar->lock);
	last = ar->done && !ar->detach;
	pthread_mutex_unlock(&ar->lock);
	if (last)
		report(ar);
	return NULL;
}

static void start_task(struct task_runner *tr)
{
	if (tr->thread_started)
		return;
	if (runner_thread_start(&tr->thread, task_thread, tr) < 0)
		abort();   /* no threads left: nothing sensible remains */
	tr->thread_started = true;
}

static bool is_dead(struct alloc_runner *ar, struct task_runner *tr)
{
	bool dead;
	pthread_mutex_lock(&ar->lock);
	dead = !strcmp(tr->state, "dead");
	pthread_mutex_unlock(&ar->lock);
	return dead;
}

/* The end of each round of wait_tasks and wait_running: reports what
 * changed; then 1 when every task waited for is there (all), 0 once the
 * client detaches, else waits up to a second for the next change and -1
 * (look again). */
static int report_then_wait(struct alloc_runner *ar, bool all)
{
	struct timespec until;

	report(ar);
	if (all)
		return 1;
	pthread_mutex_lock(&ar->lock);
	if (ar->detach) {
		pthread_mutex_unlock(&ar->lock);
		return 0;
	}
	until = deadline_after(CLOCK_REALTIME, NS_PER_SEC);
	if (!ar->dirty)
		pthread_cond_timedwait(&ar->cond, &ar->lock, &until);
	pthread_mutex_unlock(&ar->lock);
	return -1;
}

/* The alloc is running once every main task has started.  Called on the
 * runner's thread (the only writer of client_status). */
static void note_running(struct alloc_runner *ar)
{
	bool running = false, any = false;

	if (strcmp(ar->client_status, "pending"))
		return;
	for (size_t i = 0; i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		if (tr->phase != PHASE_MAIN || tr->sidecar)
			continue;
		any = true;
		pthread_mutex_lock(&ar->lock);
		running = !strcmp(tr->state, "running") ||
			  (!strcmp(tr->state, "dead") && !tr->failed);
		pthread_mutex_unlock(&ar->lock);
		if (!running)
			break;
	}
	if (any && running)
		set_status(ar, "running", "tasks are running");
}

void alloc_runner_progress(struct alloc_runner *ar)
{
	note_running(ar);
	report(ar);
}

static bool pick_main(const struct task_runner *tr);

/* Once the group's leader task (`leader = true`) has ended for good, the
 * other main tasks are stopped as a stop does (their kill_signal and
 * kill_timeout, Nomad's leader semantics); they end as stopped, not
 * failed, so the allocation ends with the leader's outcome. */
static void stop_for_leader(struct alloc_runner *ar)
{
	struct task_runner *leader = NULL, *stop[64];
	size_t n = 0;

	pthread_mutex_lock(&ar->lock);
	for (size_t i = 0; i < ar->ntasks && !leader; i++)
		if (ar->tasks[i].phase == PHASE_MAIN && ar->tasks[i].task->leader &&
		    !strcmp(ar->tasks[i].state, "dead"))
			leader = &ar->tasks[i];
	for (size_t i = 0; leader && i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		if (tr == leader || tr->phase != PHASE_MAIN || tr->kill || !strcmp(tr->state, "dead"))
			continue;
		tr->kill = true;
		if (n < sizeof(stop) / sizeof(stop[0]))
			stop[n++] = tr;
	}
	pthread_mutex_unlock(&ar->lock);
	for (size_t i = 0; i < n; i++)
		task_event(stop[i], "Leader Task Dead", "leader task \"%s\" has ended",
			   leader->task->name);
}

/* Waits (reporting as things change) until every task matched by pick is
 * dead, or the client detaches.  Returns false on detach. */
static bool wait_tasks(struct alloc_runner *ar, bool (*pick)(const struct task_runner *))
{
	for (;;) {
		bool all = true;
		if (pick == pick_main)
			stop_for_leader(ar);
		for (size_t i = 0; i < ar->ntasks; i++)
			if (pick(&ar->tasks[i]) && ar->tasks[i].thread_started &&
			    !is_dead(ar, &ar->tasks[i]))
				all = false;
		note_running(ar);
		int done = report_then_wait(ar, all);
		if (done >= 0)
			return done;
	}
}

static bool pick_prestart(const struct task_runner *tr)
{
	return tr->phase == PHASE_PRESTART && !tr->sidecar;
}

static bool pick_prestart_any(const struct task_runner *tr)
{
	return tr->phase == PHASE_PRESTART;
}

static bool pick_main(const struct task_runner *tr)
{
	return tr->phase == PHASE_MAIN;
}

static bool pick_poststart(const struct task_runner *tr)
{
	return tr->phase == PHASE_POSTSTART;
}

/* What still runs beside the main tasks once they ended. */
static bool pick_helper(const struct task_runner *tr)
{
	return tr->phase == PHASE_PRESTART || tr->phase == PHASE_POSTSTART;
}

/* Waits until every started task matched by pick runs (or has ended).
 * Returns false on detach. */
static bool wait_running(struct alloc_runner *ar, bool (*pick)(const struct task_runner *))
{
	for (;;) {
		bool all = true;
		/* a leader that ended before the others ran (one of them waiting
		 * for a restart, say) stops them now, not once they run */
		if (pick == pick_main)
			stop_for_leader(ar);
		pthread_mutex_lock(&ar->lock);
		for (size_t i = 0; i < ar->ntasks; i++) {
			struct task_runner *tr = &ar->tasks[i];
			if (pick(tr) && tr->thread_started && strcmp(tr->state, "running") &&
			    strcmp(tr->state, "dead"))
				all = false;
		}
		pthread_mutex_unlock(&ar->lock);
		int done = report_then_wait(ar, all);
		if (done >= 0)
			return done;
	}
}

static bool pick_poststop(const struct task_runner *tr)
{
	return tr->phase == PHASE_POSTSTOP;
}

/* Sets up the task runners from the job, with what was saved before a
 * restart (states, events, handles to recover). */
static void setup_tasks(struct alloc_runner *ar)
{
	const struct job_group *g = ar->group;

	ar->tasks = xcalloc(g->ntasks ? g->ntasks : 1, sizeof(*ar->tasks));
	ar->ntasks = g->ntasks;
	for (size_t i = 0; i < g->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		const struct job_task *t = &g->tasks[i];
		json_t *saved = json_object_get(ar->saved, t->name);
		tr->ar = ar;
		tr->task = t;
		runner_thread_init(&tr->thread);
		tr->dir = xasprintf("%s/%s", ar->dir, t->name);
		tr->events = json_array();
		snprintf(tr->state, sizeof(tr->state), "pending");
		tr->phase = PHASE_MAIN;
		if (t->lifecycle && t->lifecycle->hook) {
			if (!strcmp(t->lifecycle->hook, "prestart"))
				tr->phase = PHASE_PRESTART;
			else if (!strcmp(t->lifecycle->hook, "poststart"))
				tr->phase = PHASE_POSTSTART;
			else if (!strcmp(t->lifecycle->hook, "poststop"))
				tr->phase = PHASE_POSTSTOP;
			tr->sidecar = t->lifecycle->sidecar && tr->phase != PHASE_POSTSTOP;
		}
		if (saved) {
			const char *st = json_string_value(json_object_get(saved, "state"));
			const char *hs = json_string_value(json_object_get(saved, "handle"));
			snprintf(tr->state, sizeof(tr->state), "%s", st ? st : "pending");
			tr->failed = json_is_true(json_object_get(saved, "failed"));
			tr->restarts = (int)json_integer_value(json_object_get(saved, "restarts"));
			tr->started_at = json_integer_value(json_object_get(saved, "started_at"));
			tr->finished_at = json_integer_value(json_object_get(saved, "finished_at"));
			tr->exit_code = (int)json_integer_value(json_object_get(saved, "exit_code"));
			tr->window_start = json_integer_value(json_object_get(saved, "window_start"));
			tr->window_restarts =
				(int)json_integer_value(json_object_get(saved, "window_restarts"));
			if (g->time_limit > 0)
				time_limit_recover(tr, saved);
			shutdown_delay_recover(ar, saved);
			if (json_is_array(json_object_get(saved, "events"))) {
				json_decref(tr->events);
				tr->events = json_deep_copy(json_object_get(saved, "events"));
			}
			if (hs && !strcmp(tr->state, "running")) {
				struct driver_state ds;
				struct herd_err err = { 0, "" };
				const struct driver_ops *d = driver_find(t->driver);
				int rc = d ? driver_state_from_json(hs, &ds, &err) : -ENOENT;
				if (rc == 0) {
					struct driver_env denv;
					struct docker_config dc;
					const char *caps[TASK_MAX_CAPS];
					task_driver_env(ar->c, &denv, &dc, caps);
					rc = d->recover(&denv, &ds, &tr->handle, &err);
				}
				if (tr->handle) {
					log_info("client: alloc %.8s: task %s recovered%s", ar->id,
						 t->name, rc == -ESRCH ? " (it has ended)" : "");
				} else {
					log_warn("client: alloc %.8s: task %s not recovered: %s",
						 ar->id, t->name, err.msg);
					snprintf(tr->state, sizeof(tr->state), "pending");
				}
			}
		}
	}
}

static bool any_failed(struct alloc_runner *ar, bool (*pick)(const struct task_runner *))
{
	bool f = false;
	pthread_mutex_lock(&ar->lock);
	for (size_t i = 0; i < ar->ntasks; i++)
		if (pick(&ar->tasks[i]) && ar->tasks[i].failed)
			f = true;
	pthread_mutex_unlock(&ar->lock);
	return f;
}

static bool stop_requested(struct alloc_runner *ar)
{
	bool s;
	pthread_mutex_lock(&ar->lock);
	s = ar->stop_requested;
	pthread_mutex_unlock(&ar->lock);
	return s;
}

/* Whether the group is one main task and nothing else: it then runs on
 * the runner's own thread (run_single). */
static bool single_main(const struct alloc_runner *ar)
{
	return ar->ntasks == 1 && ar->tasks[0].phase == PHASE_MAIN && !ar->tasks[0].sidecar;
}

/* Runs the group's only task on this thread: no task thread to start,
 * hand over to and join, no round of waiting per change (a thread and a
 * few context switches per allocation).  The task reports its own changes
 * as it goes (alloc_runner_progress); nothing is reported before it
 * starts, as there is nothing to recover before then (the server still
 * says pending, and a restarted client starts it).  Returns false when the
 * client detached, leaving the task running. */
static bool run_single(struct alloc_runner *ar, bool *failed)
{
	struct task_runner *tr = &ar->tasks[0];

	/* after a stop, still a task recovered running: it is stopped as a
	 * stop does (shutdown_delay, kill_signal), not left behind */
	if ((!stop_requested(ar) || tr->handle) && !is_dead(ar, tr)) {
		tr->on_runner_thread = true;
		/* A recovered task that runs: say so now, it makes no start
		 * of its own that would */
		if (tr->handle)
			alloc_runner_progress(ar);
		task_runner_run(tr);
		/* it returns with the task dead, or on detach */
		if (!is_dead(ar, tr))
			return false;
	}
	*failed = any_failed(ar, pick_main);
	return true;
}

static void *alloc_main(void *arg)
{
	struct alloc_runner *ar = arg;
	struct herd_err err = { 0, "" };
	struct diag_list dl;
	const char *group_name = json_string_value(json_object_get(ar->alloc, "task_group"));
	int64_t backoff = 100 * 1000000LL;
	bool failed, limited;
	char why[256];   /* the final description (client_description's size) */

	/* The job: saved, else from the server (retrying while it is away). */
	while (!ar->job_json) {
		ar->job_json = fetch_job(ar, &err);
		if (ar->job_json)
			break;
		log_warn("client: alloc %.8s: cannot read its job: %s", ar->id, err.msg);
		if (stop_requested(ar) || client_sleep(ar->c, backoff)) {
			set_status(ar, "failed", "the job could not be read");
			report(ar);
			goto out;
		}
		backoff = backoff * 2 > 2000000000LL ? 2000000000LL : backoff * 2;
	}
	diag_list_init(&dl);
	{
		/* The stored job carries server fields the job decoder does
		 * not know: leave them out. */
		static const char *const server_fields[] = {
			"version", "stop", "status", "submit_time", "create_index",
			"modify_index", "job_modify_index", "status_description", "parent_id",
			"payload", "deployment", "stable", NULL };
		json_t *copy = json_copy(ar->job_json);
		for (size_t k = 0; server_fields[k]; k++)
			json_object_del(copy, server_fields[k]);
		job_stored_upgrade(copy);   /* a job an earlier server stored */
		ar->job = job_from_json(copy, NULL, &dl);
		json_decref(copy);
	}
	if (!ar->job && dl.n)
		log_warn("client: alloc %.8s: its job does not decode: %s", ar->id,
			 dl.v[0].msg);
	diag_list_release(&dl);
	for (size_t g = 0; ar->job && g < ar->job->ngroups; g++)
		if (group_name && !strcmp(ar->job->groups[g].name, group_name))
			ar->group = &ar->job->groups[g];
	if (!ar->group) {
		set_status(ar, "failed", "the job has no such group");
		report(ar);
		goto out;
	}
	if (alloc_dir_build(ar->dir, ar->group, &err) < 0) {
		set_status(ar, "failed", err.msg);
		report(ar);
		goto out;
	}
	/* The client's fingerprint, not one of its own (client_shared.c). */
	if (!ar->fp && !(ar->fp = client_fp_get(ar->c)))
		log_warn("client: alloc %.8s: no node fingerprint for ${attr.*}", ar->id);
	/* only a job with services pays for them */
	if (alloc_has_services(ar->group))
		ar->svc = svc_set_new(ar->id);
	pthread_mutex_lock(&ar->lock);
	setup_tasks(ar);
	pthread_mutex_unlock(&ar->lock);
	/* recovered tasks without cores: back onto the shared cores, which
	 * the node's recovered allocations define (task_cores.c) */
	if (ar->recovered)
		client_shared_cores_update(ar->c);
	ar->tmpl = tmpl_watch_new(ar);   /* only a group with templates */
	for (size_t i = 0; i < ar->ntasks; i++)
		if (!json_array_size(ar->tasks[i].events))
			task_event(&ar->tasks[i], "Received", "task received by client");
	alloc_runner_mark_dirty(ar);
	if (!sticky_disk_take(ar)) /* ephemeral_disk { sticky } */
		goto out;

	if (single_main(ar)) {
		if (!run_single(ar, &failed))
			goto out;
		goto finish;
	}
	/* Prestart hooks, sidecars among them. */
	for (size_t i = 0; i < ar->ntasks; i++)
		if (pick_prestart_any(&ar->tasks[i]) && !is_dead(ar, &ar->tasks[i]))
			start_task(&ar->tasks[i]);
	if (!wait_tasks(ar, pick_prestart))
		goto out;
	failed = any_failed(ar, pick_prestart);
	/* Main tasks, then poststart hooks once they run.  After a stop, only
	 * main tasks recovered running: stopped as a stop does (shutdown_delay,
	 * kill_signal), not left behind. */
	if (!failed) {
		bool stopping = stop_requested(ar);
		for (size_t i = 0; i < ar->ntasks; i++)
			if (pick_main(&ar->tasks[i]) && !is_dead(ar, &ar->tasks[i]) &&
			    (!stopping || ar->tasks[i].handle))
				start_task(&ar->tasks[i]);
		if (!wait_running(ar, pick_main))
			goto out;
		for (size_t i = 0; i < ar->ntasks && !stopping; i++)
			if (pick_poststart(&ar->tasks[i]) && !is_dead(ar, &ar->tasks[i]))
				start_task(&ar->tasks[i]);
		if (!wait_tasks(ar, pick_main))
			goto out;
		failed = any_failed(ar, pick_main);
	}
	/* Sidecars (and hooks still running) end with the main tasks. */
	pthread_mutex_lock(&ar->lock);
	for (size_t i = 0; i < ar->ntasks; i++)
		if (pick_helper(&ar->tasks[i]))
			ar->tasks[i].kill = true;
	pthread_mutex_unlock(&ar->lock);
	if (!wait_tasks(ar, pick_helper))
		goto out;
	/* A non-sidecar poststart that failed fails the allocation too. */
	pthread_mutex_lock(&ar->lock);
	for (size_t i = 0; i < ar->ntasks; i++)
		if (ar->tasks[i].phase == PHASE_POSTSTART && !ar->tasks[i].sidecar &&
		    ar->tasks[i].failed)
			failed = true;
	pthread_mutex_unlock(&ar->lock);
	/* Poststop hooks, also after a stop. */
	for (size_t i = 0; i < ar->ntasks; i++)
		if (pick_poststop(&ar->tasks[i]) && !is_dead(ar, &ar->tasks[i]))
			start_task(&ar->tasks[i]);
	if (!wait_tasks(ar, pick_poststop))
		goto out;
finish:
	/* Tasks that never started (a failed prestart, a stop) are dead too. */
	pthread_mutex_lock(&ar->lock);
	for (size_t i = 0; i < ar->ntasks; i++)
		snprintf(ar->tasks[i].state, sizeof(ar->tasks[i].state), "dead");
	limited = ar->time_limited;
	pthread_mutex_unlock(&ar->lock);
	if (limited)
		set_status(ar, "failed", time_limit_text(ar, why, sizeof(why)));
	else if (stop_requested(ar) && !failed)
		set_status(ar, "complete", disconnect_stop_text(ar, why, sizeof(why)));
	else if (failed)
		set_status(ar, "failed", failed_text(ar, why, sizeof(why)));
	else
		set_status(ar, "complete", "all tasks completed");
	/* Done only once the last status is dirty: collect_runners must not
	 * see done with nothing left to report before it is queued.  The
	 * last report must arrive: the status sync retries it while the
	 * server is away, and the runner is not freed before it arrived.
	 * Its state file says done, so a restarted agent reports it again
	 * rather than running the tasks. */
	pthread_mutex_lock(&ar->lock);
	ar->done = true;
	pthread_mutex_unlock(&ar->lock);
	report(ar);
out:
	tmpl_watch_stop(ar->tmpl);   /* its tasks ended, or the client detached */
	pthread_mutex_lock(&ar->lock);
	bool detached = ar->detach;
	ar->done = true;
	pthread_mutex_unlock(&ar->lock);
	/* its cores are free again for the tasks without cores */
	struct cpulist held = CPULIST_INIT;
	cores_of_alloc(ar->alloc, &held);
	if (!detached && !cpulist_empty(&held))
		client_shared_cores_update(ar->c);
	alloc_runner_finished(ar->c, ar);
	return NULL;
}

int alloc_runner_start(struct alloc_runner *ar)
{
	if (ar->saved == NULL && ar->job_json == NULL)
		log_info("client: alloc %.8s (%s): received", ar->id,
			 json_string_value(json_object_get(ar->alloc, "name")) ?: "");
	if (runner_thread_start(&ar->thread, alloc_main, ar) < 0)
		return -EAGAIN;
	return 0;
}

void alloc_runner_free(struct alloc_runner *ar, bool detach)
{
	if (!ar)
		return;
	pthread_mutex_lock(&ar->lock);
	ar->detach = detach;
	pthread_cond_broadcast(&ar->cond);
	pthread_mutex_unlock(&ar->lock);
	runner_thread_join(&ar->thread);
	for (size_t i = 0; i < ar->ntasks; i++)
		runner_thread_join(&ar->tasks[i].thread);
	/* Its latest state, written by the status sync before it stops
	 * (client_stop), after every row handed over before. */
	if (detach && ar->tasks) {
		pthread_mutex_lock(&ar->lock);
		status_sync_put(ar->c->sync, ar->id, NULL, state_row_of(ar));
		pthread_mutex_unlock(&ar->lock);
	}
	for (size_t i = 0; i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		const struct driver_ops *d = driver_find(tr->task->driver);
		if (tr->handle && d)
			d->destroy(tr->handle);   /* never kills */
		taskenv_free(tr->te);
		task_identity_release(tr);
		free(tr->dir);
		json_decref(tr->events);
		runner_thread_destroy(&tr->thread);
	}
	svc_set_free(ar->svc);
	tmpl_watch_free(ar->tmpl);
	free(ar->tasks);
	job_free(ar->job);
	json_decref(ar->job_json);
	json_decref(ar->saved);
	json_decref(ar->alloc);
	client_fp_put(ar->c, ar->fp);
	free(ar->dir);
	pthread_mutex_destroy(&ar->lock);
	pthread_cond_destroy(&ar->cond);
	runner_thread_destroy(&ar->thread);
	free(ar);
}
