/* task_runner: one task from start to its end through the driver,
 * restarted per the group's restart policy:
 *
 *   before each start: environment, artifacts, templates, ${...} in the
 *   config (task_prepare.c); a failure there fails the task at once with
 *   an event that says why (no restart: the same inputs fail again);
 *   a batch task (or a prestart/poststop hook) that exits 0 is done;
 *   any other exit counts as a failure; up to `attempts` restarts within
 *   `interval` (counted from the first failure of the window), `delay`
 *   apart; then mode "fail" fails the task and mode "delay" waits out the
 *   interval and starts a new window.  The window is part of the persisted
 *   state: an agent restart does not grant new attempts.
 *
 * A user's request (tr->req: herd alloc signal | restart, through the
 * client API) is carried out here, on the one thread that uses the task's
 * handle, at the next wait slice: a signal through the driver; a restart
 * stops the task as a stop does and starts it again at once, counted in
 * `restarts` but not in the restart policy's window.
 *
 * Events (Nomad's names): Received, Task Setup, Downloading Artifacts,
 * Failed Artifact Download, Setup Failure, Driver (progress such as
 * "Downloading Image"), Started, Terminated, Restarting, Not Restarting,
 * Killing, Killed, Driver Failure, Signaling, Restart Signaled. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "agent/cores.h"
#include "agent/log.h"
#include "agent/logs.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/docker.h"

#define WAIT_SLICE_MS 100

/* Whether the task is to stop: killed, the allocation stopped, or its
 * time limit reached (checked here, in the slices every runner waits in
 * anyway, and while a restart's setup downloads: only a group with a
 * limit pays for it: time_limit.c). */
bool task_runner_should_stop(struct task_runner *tr)
{
	struct alloc_runner *ar = tr->ar;
	bool s, limited = false;

	pthread_mutex_lock(&ar->lock);
	if (ar->group->time_limit > 0)
		limited = time_limit_check(ar, now_unix_ns());
	if (ar->group->disconnect) /* it may request the stop (disconnect_stop.c) */
		disconnect_stop_check(ar);
	s = tr->kill || ((ar->stop_requested || limited) && tr->phase != PHASE_POSTSTOP);
	pthread_mutex_unlock(&ar->lock);
	return s;
}

static bool should_stop(struct task_runner *tr)
{
	return task_runner_should_stop(tr);
}

/* Whether the allocation's time limit stopped it (time_limit.c). */
static bool time_limited(struct task_runner *tr)
{
	bool l;
	pthread_mutex_lock(&tr->ar->lock);
	l = tr->ar->time_limited;
	pthread_mutex_unlock(&tr->ar->lock);
	return l;
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

/* What a runner waiting on this task's thread would report at once: a
 * task on the runner's own thread reports it itself.  Not at the task's
 * end: the runner reports that with the allocation's. */
static void progress(struct task_runner *tr)
{
	if (tr->on_runner_thread)
		alloc_runner_progress(tr->ar);
}

void task_driver_env(const struct client *c, struct driver_env *env, struct docker_config *dc,
		     const char **caps)
{
	const struct agent_config *cfg = c->cfg;
	size_t n = 0;

	*env = c->driver_env;
	memset(dc, 0, sizeof(*dc));
	dc->socket = cfg->docker.socket;
	dc->allow_privileged = cfg->docker.allow_privileged;
	dc->volumes_enabled = cfg->docker.volumes_enabled;
	if (cfg->docker.allow_caps) {
		for (; n < cfg->docker.nr_allow_caps && n + 1 < TASK_MAX_CAPS; n++)
			caps[n] = cfg->docker.allow_caps[n];
		caps[n] = NULL;
		dc->allow_caps = caps;
	}
	dc->pull_timeout_ns = cfg->docker.pull_timeout_ns;
	dc->keep_containers = !cfg->docker.gc_container;
	dc->gc_dangling_images = cfg->docker.gc_image;
	env->docker = dc;
	/* plugin "exec" (or client chroot_env / cgroup_parent); NULL: the
	 * driver's defaults. */
	if (cfg->exec.chroot_env)
		env->chroot_env = (const char *const *)cfg->exec.chroot_env;
	if (cfg->exec.cgroup_parent)
		env->cgroup_parent = cfg->exec.cgroup_parent;
}

static void driver_event(void *arg, const char *type, const char *message)
{
	task_event(arg, type, "%s", message);
	progress(arg);   /* a start that takes long (an image pull) says why */
}

/* Everything before the driver's start; 0 or -errno with the event made. */
static int prepare(struct task_runner *tr, struct herd_err *err)
{
	int rc;

	task_event(tr, "Task Setup", "building task directory and environment");
	if ((rc = task_identity_refresh(tr, err)) < 0 || (rc = task_prepare_env(tr, err)) < 0) {
		task_event(tr, "Setup Failure", "%s", err->msg);
		return rc;
	}
	if (tr->task->nartifacts) {
		task_event(tr, "Downloading Artifacts", "client is downloading %zu artifact%s",
			   tr->task->nartifacts, tr->task->nartifacts == 1 ? "" : "s");
		progress(tr);
		if ((rc = task_fetch_artifacts(tr, err)) < 0) {
			if (rc != -ECANCELED) /* abandoned: the stop says why */
				task_event(tr, "Failed Artifact Download", "%s", err->msg);
			return rc;
		}
	}
	/* before templates, as Nomad does: a template may read the payload */
	if ((rc = task_write_payload(tr, err)) < 0) {
		task_event(tr, "Setup Failure", "dispatch payload: %s", err->msg);
		return rc;
	}
	if ((rc = task_render_templates(tr, err)) < 0) {
		task_event(tr, "Setup Failure", "template: %s", err->msg);
		return rc;
	}
	/* raw_exec has no mount namespace: a relative destination is a link */
	if (!strcmp(tr->task->driver, "raw_exec") && (rc = task_link_volumes(tr, err)) < 0) {
		task_event(tr, "Setup Failure", "host volume: %s", err->msg);
		return rc;
	}
	return 0;
}

static int64_t mib_or_zero(int64_t v)
{
	return v > 0 ? v : 0;
}

static int start(struct task_runner *tr, const struct driver_ops *d, struct herd_err *err)
{
	struct alloc_runner *ar = tr->ar;
	bool docker = !strcmp(d->name, "docker");
	json_t *cfg = NULL;
	const char *command;
	const json_t *jargs;
	const char **args = NULL;
	const char **gpus = NULL;
	char **devices = NULL;
	char *log_dir = xasprintf("%s/alloc/logs", ar->dir);
	char *alloc_dir = xasprintf("%s/alloc", ar->dir);
	const json_t *jports = json_object_get(json_object_get(ar->alloc, "resources"), "ports");
	struct driver_port *ports = xcalloc(json_array_size(jports) + 1, sizeof(*ports));
	struct driver_task dt;
	struct driver_volume *vols = NULL;
	struct cores_plan cores = { 0 };
	size_t i, n = 0, ngpus, nvols = 0;
	json_t *v;
	int rc;

	if ((rc = task_interpolate_config(tr, &cfg, err)) < 0) {
		task_event(tr, "Setup Failure", "config: %s", err->msg);
		goto out;
	}
	if ((rc = task_volumes(tr, &vols, &nvols, err)) < 0) {
		task_event(tr, "Setup Failure", "%s", err->msg);
		goto out;
	}
	command = json_string_value(json_object_get(cfg, "command"));
	jargs = json_object_get(cfg, "args");
	args = xcalloc(json_array_size(jargs) + 1, sizeof(*args));
	json_array_foreach(jargs, i, v)
		if (json_is_string(v))
			args[n++] = json_string_value(v);
	json_array_foreach(jports, i, v) {
		ports[i].label = json_string_value(json_object_get(v, "label"));
		ports[i].host_port = (int)json_integer_value(json_object_get(v, "value"));
		ports[i].to = (int)json_integer_value(json_object_get(v, "to"));
	}
	gpus = task_gpu_ids(ar, tr->task->name, &ngpus);
	memset(&dt, 0, sizeof(dt));
	dt.name = tr->task->name;
	dt.command = command ? command : "";
	dt.args = args;
	dt.env = taskenv_envp(tr->te);
	dt.task_dir = tr->dir;
	dt.log_dir = log_dir;
	dt.state_dir = tr->dir;
	dt.log_max_files = tr->task->logs.max_files > 0 ? (int)tr->task->logs.max_files : 10;
	dt.log_max_file_size = (tr->task->logs.max_file_size > 0 ? tr->task->logs.max_file_size : 10) *
			       1024 * 1024;
	dt.logs_disabled = tr->task->logs.disabled;
	if (dt.logs_disabled) {
		/* for `herd alloc logs`, which then says why there is nothing */
		char *mark = xasprintf("%s/%s" LOGS_DISABLED_SUFFIX, log_dir, tr->task->name);
		int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd >= 0)
			close(fd);
		free(mark);
	}
	dt.config = cfg;
	dt.alloc_id = ar->id;
	dt.alloc_dir = alloc_dir;
	dt.memory_mb = mib_or_zero(tr->task->resources.memory);
	dt.memory_max_mb = mib_or_zero(tr->task->resources.memory_max);
	dt.cpu_mhz = mib_or_zero(tr->task->resources.cpu);
	dt.gpu_ids = gpus;
	dt.ports = ports;
	dt.nports = json_array_size(jports);
	dt.event = driver_event;
	dt.event_arg = tr;
	dt.volumes = vols;
	dt.nvolumes = nvols;
	/* exec: the task's user and the device nodes of its GPUs only. */
	dt.user = tr->task->user && *tr->task->user ? tr->task->user
						    : ar->c->cfg->exec.default_user;
	devices = task_device_paths(ar, tr->task->name);
	dt.devices = (const char *const *)devices;
	/* its reserved cores, or the shared ones (cores.h) */
	task_cores_plan(tr, &cores);
	dt.cpuset_cpus = cores.cpus;
	dt.cpuset_mems = cores.mems;
	/* docker takes its command from config { image command args }. */
	if (!command && !docker) {
		rc = herd_errf(err, -EINVAL, "config { command } is not set");
	} else {
		struct driver_handle *h = NULL;
		struct driver_env denv;
		struct docker_config dc;
		const char *caps[TASK_MAX_CAPS];
		task_driver_env(ar->c, &denv, &dc, caps);
		rc = d->start(&denv, &dt, &h, err);
		pthread_mutex_lock(&ar->lock);
		tr->handle = h;
		pthread_mutex_unlock(&ar->lock);
	}
	if (rc < 0)
		task_event(tr, "Driver Failure", "%s", err->msg);
	else if (cores.env)   /* its cores are no longer the shared tasks' */
		client_shared_cores_update(ar->c);
out:
	cores_plan_release(&cores);
	json_decref(cfg);
	free(vols);
	free(args);
	free(gpus);
	for (i = 0; devices && devices[i]; i++)
		free(devices[i]);
	free(devices);
	free(ports);
	free(log_dir);
	free(alloc_dir);
	return rc;
}

/* The task's restart policy: its own (merged over the group's by
 * job_validate), else the group's. */
static const struct job_restart *restart_policy(const struct task_runner *tr)
{
	return tr->task->restart ? tr->task->restart : &tr->ar->group->restart;
}

/* The restart policy's verdict on one more failure: the delay before the
 * next try, or -1 to give up.  The window opens at the first failure and
 * lasts `interval`; within it at most `attempts` restarts. */
static int64_t next_restart(struct task_runner *tr)
{
	const struct job_restart *rp = restart_policy(tr);
	int64_t now = now_unix_ns(), delay = -1;

	pthread_mutex_lock(&tr->ar->lock);
	if (tr->window_start == 0 || now - tr->window_start > rp->interval) {
		tr->window_start = now;
		tr->window_restarts = 0;
	}
	if (tr->window_restarts < rp->attempts) {
		tr->window_restarts++;
		delay = rp->delay;
	} else if (rp->mode && !strcmp(rp->mode, "delay")) {
		int64_t wait = rp->interval - (now - tr->window_start);
		delay = wait > rp->delay ? wait : rp->delay;
		/* The next failure after this wait opens a new window. */
		tr->window_start = 0;
		tr->window_restarts = 0;
	}
	pthread_mutex_unlock(&tr->ar->lock);
	return delay;
}

/* Sets the task dead, failed or not. */
static void set_dead(struct task_runner *tr, bool failed)
{
	pthread_mutex_lock(&tr->ar->lock);
	if (failed)
		tr->failed = true;
	if (!tr->finished_at)
		tr->finished_at = now_unix_ns();
	pthread_mutex_unlock(&tr->ar->lock);
	set_state(tr, "dead");
}

/* Sets a task that was stopped dead: failed when the allocation's time
 * limit stopped it (it did not finish its work). */
static void set_stopped(struct task_runner *tr)
{
	set_dead(tr, time_limited(tr));
}

/* The event of a task the time limit stops (before it is killed). */
static void time_limit_event(struct task_runner *tr)
{
	char buf[64];

	if (!time_limited(tr))
		return;
	pthread_mutex_lock(&tr->ar->lock);
	time_limit_text(tr->ar, buf, sizeof(buf));
	pthread_mutex_unlock(&tr->ar->lock);
	task_event(tr, "Time limit reached", "%s", buf);
}

/* The Terminated event's message. */
static void terminated_event(struct task_runner *tr, const struct driver_exit *ex)
{
	if (ex->lost)
		task_event(tr, "Terminated", "the task was lost (its supervisor vanished)");
	else if (ex->oom_killed)
		task_event(tr, "Terminated", "OOM Killed: the task ran out of memory (exit code %d%s%s)",
			   ex->exit_code, ex->signal ? ", signal " : "",
			   ex->signal ? strsignal(ex->signal) : "");
	else if (ex->signal)
		task_event(tr, "Terminated", "killed by signal %d (%s)", ex->signal,
			   strsignal(ex->signal));
	else
		task_event(tr, "Terminated", "exit code %d", ex->exit_code);
}

/* Stops the running task per kill_signal / kill_timeout. */
static void kill_task(struct task_runner *tr, const struct driver_ops *d, struct driver_exit *ex)
{
	struct alloc_runner *ar = tr->ar;
	struct herd_err err = { 0, "" };
	const char *signame = tr->task->kill_signal ? tr->task->kill_signal : "SIGINT";
	int sig = driver_signal_parse(signame);
	int64_t kt = tr->task->kill_timeout;

	if (ar->c->cfg->client.max_kill_timeout_ns > 0 && kt > ar->c->cfg->client.max_kill_timeout_ns)
		kt = ar->c->cfg->client.max_kill_timeout_ns;
	task_event(tr, "Killing", "sent %s, kill timeout %llds", signame,
		   (long long)(kt / 1000000000LL));
	if (d->stop(tr->handle, sig < 0 ? SIGINT : sig, kt, ex, &err) < 0) {
		log_warn("client: alloc %.8s: task %s: stop: %s", ar->id, tr->task->name, err.msg);
		ex->exit_code = -1;
	}
}

/* Answers the user's request, if one is waiting, with rc (and why). */
static void answer_request(struct task_runner *tr, int rc, const char *why)
{
	struct alloc_runner *ar = tr->ar;
	pthread_mutex_lock(&ar->lock);
	if (tr->req.kind != TASK_REQ_NONE && !tr->req.done) {
		tr->req.done = true;
		tr->req.rc = rc;
		snprintf(tr->req.msg, sizeof(tr->req.msg), "%s", why ? why : "");
		pthread_cond_broadcast(&ar->cond);
	}
	pthread_mutex_unlock(&ar->lock);
}

/* The driver's refusal of a user's signal, in words. */
static const char *signal_refusal(const struct driver_ops *d, int rc, char *buf, size_t size)
{
	if (rc == -ESRCH)
		snprintf(buf, size, "the task has ended");
	else if (rc == -ENOTSUP)
		snprintf(buf, size, "the %s driver cannot deliver this signal to the task%s", d->name,
			 strcmp(d->name, "exec") ? ""
			 : " (its init passes on only TERM, INT, HUP, QUIT, USR1, USR2, WINCH, ALRM; KILL ends it)");
	else if (!strcmp(d->name, "docker"))
		snprintf(buf, size, "the docker engine did not deliver it (its kill refused the "
			 "signal, or the engine cannot be reached): %s", strerror(-rc));
	else
		snprintf(buf, size, "the %s driver could not send it: %s", d->name, strerror(-rc));
	return buf;
}

/* Carries out a user's request waiting for this running task: a signal is
 * sent and answered; a restart is answered (accepted) and true returned,
 * the caller then stops and starts the task again. */
static bool serve_request(struct task_runner *tr, const struct driver_ops *d)
{
	struct alloc_runner *ar = tr->ar;
	enum task_request_kind kind;
	char name[DRIVER_SIGNAL_NAME_MAX], why[256];
	int sig, rc;

	pthread_mutex_lock(&ar->lock);
	kind = tr->req.done ? TASK_REQ_NONE : tr->req.kind;
	sig = tr->req.sig;
	pthread_mutex_unlock(&ar->lock);
	if (kind == TASK_REQ_RESTART) {
		answer_request(tr, 0, NULL);
		task_event(tr, "Restart Signaled", "restarted by user");
		return true;
	}
	if (kind != TASK_REQ_SIGNAL)
		return false;
	driver_signal_name(sig, name);
	rc = tr->handle ? d->signal(tr->handle, sig) : -ESRCH;
	if (rc == 0)
		task_event(tr, "Signaling", "task being sent %s by user", name);
	answer_request(tr, rc, rc ? signal_refusal(d, rc, why, sizeof(why)) : NULL);
	progress(tr);
	return false;
}

void task_runner_run(struct task_runner *tr)
{
	struct alloc_runner *ar = tr->ar;
	const struct driver_ops *d = driver_find(tr->task->driver);
	bool batch = !strcmp(ar->job->type, "batch") || !strcmp(ar->job->type, "sysbatch");
	bool run_once = (batch || tr->phase != PHASE_MAIN) && !tr->sidecar;

	if (!d) {
		task_event(tr, "Driver Failure", "driver \"%s\" is not available", tr->task->driver);
		set_dead(tr, true);
		return;
	}
	for (;;) {
		struct herd_err err = { 0, "" };
		struct driver_exit ex;
		bool stopped = false, restart = false, ok, check_restart = false;
		bool script_failed = false;
		bool started_here = false, gpu_killed = false;
		const char *restart_by = "user";
		char why[256];
		int rc;

		memset(&ex, 0, sizeof(ex));
		if (!tr->handle) {
			if (should_stop(tr)) {
				time_limit_event(tr);
				set_stopped(tr);
				return;
			}
			rc = prepare(tr, &err);
			/* a restart's setup takes its time (artifacts): a stop,
			 * or the time limit, that came meanwhile ends the task
			 * here rather than with a start after it */
			if (should_stop(tr)) {
				time_limit_event(tr);
				set_stopped(tr);
				return;
			}
			if (rc < 0) {
				log_warn("client: alloc %.8s: task %s: %s", ar->id, tr->task->name,
					 err.msg);
				task_event(tr, "Not Restarting", "the task's setup failed");
				set_dead(tr, true);
				return;
			}
			rc = start(tr, d, &err);
			if (rc < 0) {
				log_warn("client: alloc %.8s: task %s: %s", ar->id, tr->task->name,
					 err.msg);
				ex.exit_code = -1;
				goto ended;
			}
			pthread_mutex_lock(&ar->lock);
			tr->started_at = now_unix_ns();
			tr->finished_at = 0;
			/* a kill asked for as the last run ended is not this run's */
			atomic_store(&tr->gpu_kill, false);
			tr->gpu_killed = false;
			if (ar->group->time_limit > 0)
				time_limit_started(tr, tr->started_at);
			pthread_mutex_unlock(&ar->lock);
			task_event(tr, "Started", "task started by the client");
			started_here = true;
			log_debug("client: alloc %.8s: task %s started", ar->id, tr->task->name);
			set_state(tr, "running");
			progress(tr);
		}
		if (ar->svc)
			svc_task_started(tr);   /* started, or recovered running */
		if (ar->tmpl)
			tmpl_task_started(tr, !started_here);
		if (!started_here)   /* recovered running: its tokens' renewals */
			task_identity_recovered(tr);
		for (;;) {
			rc = d->wait(tr->handle, WAIT_SLICE_MS, &ex, &err);
			if (rc == 1)
				break;
			if (rc < 0) {
				ex.lost = true;
				ex.exit_code = -1;
				break;
			}
			if (should_detach(tr)) {
				answer_request(tr, -ESRCH, "the client is shutting down");
				return;   /* the handle stays; the next client recovers it */
			}
			/* a check's change to report; check_restart's verdict */
			if (ar->svc && svc_task_poll(tr, why, sizeof(why))) {
				task_event(tr, "Restart Signaled", "healthcheck: %s", why);
				kill_task(tr, d, &ex);
				check_restart = true;
				break;
			}
			progress(tr);   /* what changed meanwhile (events) */
			if (should_stop(tr)) {
				time_limit_event(tr);
				/* a stop's shutdown_delay first (the task runs on) */
				rc = shutdown_delay_wait(tr, d, &ex);
				if (rc < 0) {
					answer_request(tr, -ESRCH, "the client is shutting down");
					return;   /* the next client goes on with the delay */
				}
				if (rc == 0)
					kill_task(tr, d, &ex);
				stopped = true;
				break;
			}
			if (serve_request(tr, d)) {
				kill_task(tr, d, &ex);
				restart = true;
				break;
			}
			/* GPU memory over its timeslice share (gpu_watch.c): killed
			 * like an out-of-memory kill, a failure */
			if (gpu_watch_kill_poll(tr, why, sizeof(why))) {
				kill_task(tr, d, &ex);
				gpu_killed = true;
				pthread_mutex_lock(&ar->lock);
				tr->gpu_killed = true;
				pthread_mutex_unlock(&ar->lock);
				break;
			}
			/* a workload token renewed, change_mode restart */
			if (task_identity_poll(tr, d)) {
				kill_task(tr, d, &ex);
				restart = true;
				restart_by = "a workload identity's renewal";
				break;
			}
			/* a template rendered again (template_watch.c) */
			if (ar->tmpl) {
				enum tmpl_poll tp = tmpl_task_poll(tr, d);
				if (tp != TMPL_POLL_NONE) {
					kill_task(tr, d, &ex);
					restart = tp == TMPL_POLL_RESTART;
					if (restart)
						restart_by = "a template change";
					script_failed = tp == TMPL_POLL_FAIL;
					break;
				}
			}
		}
		if (ar->svc)
			svc_task_stopped(tr);
		if (ar->tmpl)
			tmpl_task_stopped(tr);
		/* a request that came as the task ended finds nothing to act on */
		answer_request(tr, -ESRCH, "the task has ended");
		pthread_mutex_lock(&ar->lock);
		d->destroy(tr->handle);
		tr->handle = NULL;
		pthread_mutex_unlock(&ar->lock);
		pthread_mutex_lock(&ar->lock);
		tr->finished_at = ex.finished_ns ? ex.finished_ns : now_unix_ns();
		tr->exit_code = ex.exit_code;
		pthread_mutex_unlock(&ar->lock);
		if (gpu_killed)
			task_event(tr, "Terminated", "killed: GPU memory over its share (%s)", why);
		else
			terminated_event(tr, &ex);
ended:
		log_debug("client: alloc %.8s: task %s ended (exit %d, signal %d)", ar->id,
			  tr->task->name, ex.exit_code, ex.signal);
		if (stopped) {
			task_event(tr, "Killed", "task stopped");
			set_stopped(tr);
			return;
		}
		if (restart) {
			/* not next_restart: the policy's window is for failures */
			task_event(tr, "Restarting", "restarted by %s (not counted against the "
				   "restart policy)", restart_by);
			pthread_mutex_lock(&ar->lock);
			tr->restarts++;
			pthread_mutex_unlock(&ar->lock);
			set_state(tr, "pending");
			progress(tr);
			continue;
		}
		/* a restart for failing checks counts against the restart
		 * policy however the task ended (Nomad does the same) */
		/* so does a change_script's failure with fail_on_error, and a kill
		 * for GPU memory over the task's share */
		ok = !ex.lost && !ex.signal && !ex.oom_killed && ex.exit_code == 0 && !check_restart &&
		     !script_failed && !gpu_killed;
		if (ok && run_once) {
			set_dead(tr, false);
			return;
		}
		{
			int64_t delay = next_restart(tr);
			if (delay < 0) {
				task_event(tr, "Not Restarting",
					   "exceeded allowed attempts %lld in interval %llds and mode is \"fail\"",
					   (long long)restart_policy(tr)->attempts,
					   (long long)(restart_policy(tr)->interval / 1000000000LL));
				set_dead(tr, true);
				return;
			}
			task_event(tr, "Restarting", "task restarting in %.3gs",
				   (double)delay / 1e9);
			pthread_mutex_lock(&ar->lock);
			tr->restarts++;
			pthread_mutex_unlock(&ar->lock);
			set_state(tr, "pending");
			progress(tr);
			if (pause_ns(tr, delay)) {
				if (should_detach(tr))
					return;
				time_limit_event(tr);
				set_stopped(tr);
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
