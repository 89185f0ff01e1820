/* The driver registry, persisted task state and signal names; see driver.h. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/driver.h"

extern const struct driver_ops raw_exec_ops;
extern const struct driver_ops docker_ops;
extern const struct driver_ops exec_ops;

const struct driver_ops *const driver_all[] = { &raw_exec_ops, &exec_ops, &docker_ops, NULL };

const struct driver_ops *driver_find(const char *name)
{
	for (size_t i = 0; driver_all[i]; i++)
		if (!strcmp(driver_all[i]->name, name))
			return driver_all[i];
	return NULL;
}

char *driver_state_to_json(const struct driver_state *s)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s}",
			      "driver", s->driver,
			      "shim_pid", (json_int_t)s->shim_pid,
			      "shim_start_time", (json_int_t)s->shim_start_time,
			      "task_pid", (json_int_t)s->task_pid,
			      "task_start_time", (json_int_t)s->task_start_time,
			      "exit_file", s->exit_file);
	if (s->container_id[0])
		json_object_set_new(o, "container_id", json_string(s->container_id));
	if (s->cgroup[0])
		json_object_set_new(o, "cgroup", json_string(s->cgroup));
	char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	char *out = xstrdup(text);
	free(text);
	return out;
}

int driver_state_from_json(const char *text, struct driver_state *out, struct herd_err *err)
{
	json_error_t je;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return herd_errf(err, -EINVAL, "task state: %s at %d:%d", je.text, je.line, je.column);
	const char *driver, *exit_file, *container_id = "", *cgroup = "";
	json_int_t shim_pid, shim_start, task_pid, task_start;
	int rc = json_unpack_ex(o, &je, JSON_STRICT, "{s:s, s:I, s:I, s:I, s:I, s:s, s?s, s?s}",
				"driver", &driver, "shim_pid", &shim_pid,
				"shim_start_time", &shim_start, "task_pid", &task_pid,
				"task_start_time", &task_start, "exit_file", &exit_file,
				"container_id", &container_id, "cgroup", &cgroup);
	if (rc < 0) {
		rc = herd_errf(err, -EINVAL, "task state: %s", je.text);
		goto out;
	}
	/* Pids are 0 for drivers without a shim (docker); each driver's
	 * recover checks what it needs. */
	if (strlen(driver) >= DRIVER_NAME_MAX || strlen(exit_file) >= DRIVER_PATH_MAX ||
	    strlen(container_id) >= DRIVER_ID_MAX || strlen(cgroup) >= DRIVER_CGROUP_MAX ||
	    shim_pid < 0 || task_pid < 0 || shim_pid > INT32_MAX || task_pid > INT32_MAX ||
	    shim_start < 0 || task_start < 0) {
		rc = herd_errf(err, -EINVAL, "task state: a value is out of range");
		goto out;
	}
	struct driver_state s = { 0 };
	snprintf(s.driver, sizeof(s.driver), "%s", driver);
	snprintf(s.exit_file, sizeof(s.exit_file), "%s", exit_file);
	snprintf(s.container_id, sizeof(s.container_id), "%s", container_id);
	snprintf(s.cgroup, sizeof(s.cgroup), "%s", cgroup);
	s.shim_pid = (pid_t)shim_pid;
	s.shim_start_time = (uint64_t)shim_start;
	s.task_pid = (pid_t)task_pid;
	s.task_start_time = (uint64_t)task_start;
	*out = s;
	rc = 0;
out:
	json_decref(o);
	return rc;
}

/* The names a signal is written with, "SIG" left out; the first of two
 * names of one number (IO, POLL) is the one driver_signal_name gives. */
static const struct { const char *name; int sig; } signal_names[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "ILL", SIGILL },
	{ "TRAP", SIGTRAP }, { "ABRT", SIGABRT }, { "BUS", SIGBUS }, { "FPE", SIGFPE },
	{ "KILL", SIGKILL }, { "USR1", SIGUSR1 }, { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "CHLD", SIGCHLD },
	{ "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "TTIN", SIGTTIN },
	{ "TTOU", SIGTTOU }, { "URG", SIGURG }, { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },
	{ "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH }, { "IO", SIGIO },
	{ "POLL", SIGPOLL }, { "PWR", SIGPWR }, { "SYS", SIGSYS },
};

int driver_signal_parse(const char *s)
{
	int64_t v;
	if (!s || !*s)
		return -EINVAL;
	if (parse_int64(s, 1, NSIG - 1, &v, NULL) == 0)
		return (int)v;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
		if (!strcasecmp(s, signal_names[i].name))
			return signal_names[i].sig;
	return -EINVAL;
}

const char *driver_signal_name(int sig, char buf[DRIVER_SIGNAL_NAME_MAX])
{
	for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++)
		if (signal_names[i].sig == sig) {
			snprintf(buf, DRIVER_SIGNAL_NAME_MAX, "SIG%s", signal_names[i].name);
			return buf;
		}
	snprintf(buf, DRIVER_SIGNAL_NAME_MAX, "signal %d", sig);
	return buf;
}

double driver_stats_cpu_percent(const struct driver_stats *prev, const struct driver_stats *cur)
{
	if (prev->cpu_total_ns < 0 || cur->cpu_total_ns < prev->cpu_total_ns ||
	    cur->sampled_at_ns <= prev->sampled_at_ns)
		return -1;
	return (double)(cur->cpu_total_ns - prev->cpu_total_ns) * 100.0 /
	       (double)(cur->sampled_at_ns - prev->sampled_at_ns);
}

/* How long a stop waits after SIGKILL before giving up (a process stuck
 * in uninterruptible sleep cannot be killed sooner). */
#define STOP_SIGKILL_WAIT_MS 10000

int driver_stop_escalate(struct driver_handle *h, const struct driver_stop_steps *steps,
			 int kill_signal, int64_t kill_timeout_ns, const char *what,
			 struct driver_exit *exit, struct herd_err *err)
{
	int64_t ms = kill_timeout_ns / 1000000;
	int rc;
	if (kill_signal <= 0 || kill_signal >= NSIG)
		kill_signal = SIGTERM;
	steps->signal(h, kill_signal);
	rc = steps->wait(h, ms > INT32_MAX ? INT32_MAX : (int)ms, exit, err);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (steps->before_sigkill)
		steps->before_sigkill(h);
	steps->signal(h, SIGKILL);
	rc = steps->wait(h, STOP_SIGKILL_WAIT_MS, exit, err);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	return herd_errf(err, -ETIMEDOUT, "%s survived SIGKILL for %d s", what,
			 STOP_SIGKILL_WAIT_MS / 1000);
}
