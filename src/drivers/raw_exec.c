/* raw_exec: a plain process as the agent's user, through the task shim.
 * No isolation beyond its own session and process group (docs/drivers.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/drivers-int.h"
#include "drivers/shim.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

extern const struct driver_ops raw_exec_ops;

bool driver_valid_task_name(const char *s)
{
	if (!s || !*s || strlen(s) > 128 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

static void raw_exec_fingerprint(const struct driver_env *env, struct driver_fingerprint *out)
{
	memset(out, 0, sizeof(*out));
	if (!env->raw_exec_enabled) {
		snprintf(out->reason, sizeof(out->reason), "disabled in the client configuration");
		return;
	}
	out->detected = true;
	if (!env->shim_argv || !env->shim_argv[0] || access(env->shim_argv[0], X_OK) < 0) {
		snprintf(out->reason, sizeof(out->reason), "task shim %s is not executable",
			 env->shim_argv && env->shim_argv[0] ? env->shim_argv[0] : "(none)");
		return;
	}
	out->healthy = true;
}

/* Reads the shim's one status line (until EOF). */
static int read_status(int fd, struct strbuf *sb)
{
	char buf[1024];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (sb->len < 4096)
			strbuf_add(sb, buf, (size_t)n);
	}
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int raw_exec_start(const struct driver_env *env, const struct driver_task *task,
			  struct driver_handle **out, struct herd_err *err)
{
	if (!env->raw_exec_enabled)
		return herd_errf(err, -EPERM, "raw_exec is disabled on this node: enable it with "
				 "plugin \"raw_exec\" { config { enabled = true } }");
	return shim_launch(&raw_exec_ops, env, task, NULL, out, err);
}

/* The task's session (the shim made the task its leader, so its pid is
 * the session id): RSS and CPU time summed over its processes.  No limit
 * (raw_exec sets none); the peak is the task process's own VmHWM, and
 * only when it is alone in its session (no tree-wide high-water mark is
 * kept without a cgroup). */
static int raw_exec_stats(const struct driver_env *env, const struct driver_state *state,
			  struct driver_stats *out, struct herd_err *err)
{
	struct proc_usage u;
	uint64_t start;
	int rc;

	(void)env;
	if (state->task_pid <= 0)
		return herd_errf(err, -EINVAL, "task state: no task pid");
	/* A reused pid is another process: the task has ended. */
	rc = proc_start_time(state->task_pid, &start);
	if (rc == -ESRCH || (rc == 0 && start != state->task_start_time))
		return herd_errf(err, -ESRCH, "task pid %d is not running", (int)state->task_pid);
	if (rc < 0)
		return herd_errf(err, rc, "task pid %d: %s", (int)state->task_pid, strerror(-rc));
	rc = proc_session_usage(NULL, state->task_pid, &u);
	if (rc < 0)
		return herd_errf(err, rc, "task pid %d: reading /proc: %s", (int)state->task_pid,
				 strerror(-rc));
	*out = (struct driver_stats){
		.memory_bytes = u.rss_bytes,
		.memory_peak_bytes = u.nprocs == 1 ? u.leader_hwm_bytes : -1,
		.memory_limit_bytes = -1,
		.cpu_total_ns = u.cpu_ns,
		.cpu_percent = -1,
		.sampled_at_ns = driver_realtime_ns(),
	};
	return 0;
}

/* Makes the exit file exist, empty, before the shim starts: what a
 * previous run left there (a restarted task's, or in a recycled alloc dir
 * a previous allocation's: agent/alloc_dir.c) must never be read as this
 * run's exit.  Emptied rather than unlinked, and made here rather than by
 * the shim: one inode per task dir for good, which the shim
 * writes into (a new inode costs a scan past recently deleted ones on
 * ext4), and the name is taken by an agent-owned file in a sticky dir
 * while the task runs, so an exec task cannot plant a file or link there.
 * Anything but a regular file with one link (a link or fifo planted
 * there) is removed, never followed or truncated through.  0, or -1 with
 * errno. */
static int clear_exit_file(const char *path)
{
	for (int tries = 0; tries < 2; tries++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
		if (fd >= 0) {
			struct stat st;
			/* empty already (the collector's scrub empties it
			 * in a recycled dir): no truncate, which would
			 * dirty the inode for nothing */
			bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
				  (st.st_size == 0 || ftruncate(fd, 0) == 0);
			close(fd);
			if (ok)
				return 0;
		}
		if (unlink(path) < 0 && errno != ENOENT)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

int shim_launch(const struct driver_ops *ops, const struct driver_env *env,
		const struct driver_task *task, const char *const *extra,
		struct driver_handle **out, struct herd_err *err)
{
	struct strbuf status = STRBUF_INIT;
	char max_files[24], max_size[24];
	int sp[2] = { -1, -1 };
	int rc;

	if (!driver_valid_task_name(task->name))
		return herd_errf(err, -EINVAL, "task name '%s': expected letters, digits, '_', '-', '.'",
				 task->name ? task->name : "");
	if (!task->command || !*task->command)
		return herd_errf(err, -EINVAL, "task %s: no command", task->name);
	if (!task->task_dir || !task->log_dir || !task->state_dir || !task->env)
		return herd_errf(err, -EINVAL, "task %s: task_dir, log_dir, state_dir and env are required",
				 task->name);
	if (task->log_max_files < 1 || task->log_max_file_size < 1)
		return herd_errf(err, -EINVAL, "task %s: logs need max_files >= 1 and max_file_size >= 1",
				 task->name);
	if (!env->shim_argv || !env->shim_argv[0])
		return herd_errf(err, -EINVAL, "no task shim configured");

	struct driver_handle *h = xcalloc(1, sizeof(*h));
	h->ops = ops;
	h->pidfd = -1;
	snprintf(h->state.driver, sizeof(h->state.driver), "%s", ops->name);
	if ((size_t)snprintf(h->state.exit_file, sizeof(h->state.exit_file), "%s/%s.exit",
			     task->state_dir, task->name) >= sizeof(h->state.exit_file)) {
		free(h);
		return herd_errf(err, -ENAMETOOLONG, "task %s: state dir path too long", task->name);
	}
	if (clear_exit_file(h->state.exit_file) < 0) {
		int e = errno;
		herd_errf(err, -e, "task %s: cannot clear the exit file %s: %s", task->name,
			  h->state.exit_file, strerror(e));
		free(h);
		return -e;
	}

	/* argv: shim prefix, shim flags, --, command, args. */
	size_t nprefix = 0, nargs = 0, nextra = 0;
	while (env->shim_argv[nprefix])
		nprefix++;
	while (task->args && task->args[nargs])
		nargs++;
	while (extra && extra[nextra])
		nextra++;
	const char **argv = xcalloc(nprefix + 18 + nextra + nargs + 2, sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; i < nprefix; i++)
		argv[n++] = env->shim_argv[i];
	snprintf(max_files, sizeof(max_files), "%d", task->log_max_files);
	snprintf(max_size, sizeof(max_size), "%lld", (long long)task->log_max_file_size);
	const char *flags[] = { "-task", task->name, "-log-dir", task->log_dir,
		"-exit-file", h->state.exit_file, "-cwd", task->task_dir,
		"-max-files", max_files, "-max-size", max_size };
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		argv[n++] = flags[i];
	if (task->cpuset_cpus && *task->cpuset_cpus) {
		argv[n++] = "-cpus";
		argv[n++] = task->cpuset_cpus;
	}
	if (task->logs_disabled) {
		argv[n++] = "-logs";
		argv[n++] = "off";
	}
	for (size_t i = 0; i < nextra; i++)
		argv[n++] = extra[i];
	argv[n++] = "--";
	argv[n++] = task->command;
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = task->args[i];
	argv[n] = NULL;

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid;
	if (pipe2(sp, O_CLOEXEC) < 0) {
		rc = herd_errf(err, -errno, "task %s: status pipe: %s", task->name, strerror(errno));
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	/* one lookup of /dev/null in the child, not three */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_adddup2(&fa, 0, 1);
	posix_spawn_file_actions_adddup2(&fa, 0, 2);
	posix_spawn_file_actions_adddup2(&fa, sp[1], TASK_SHIM_STATUS_FD);
	/* the shim (and so the task) gets 0-2 and its status fd only: every
	 * fd herd opens is close-on-exec, libraries' are not all (libcurl
	 * 7.88's internal socket pair) */
	posix_spawn_file_actions_addclosefrom_np(&fa, TASK_SHIM_STATUS_FD + 1);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	/* Its own session: the agent's terminal and process group signals
	 * (Ctrl-C on `herd agent -dev`) do not reach the shim or the task. */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	int r = posix_spawn(&pid, argv[0], &fa, &attr, (char *const *)argv,
			    (char *const *)task->env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(sp[1]);
	sp[1] = -1;
	if (r != 0) {
		rc = herd_errf(err, -r, "task %s: cannot start the task shim %s: %s", task->name,
			       argv[0], strerror(r));
		goto fail;
	}
	/* The shim is our child and not reaped before reap() below, so its
	 * pid names it until then: the pidfd needs no start-time check, and
	 * the start time is read once, even after the shim has ended (a
	 * zombie keeps its /proc/<pid>/stat). */
	h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int pidfd_errno = errno;
	rc = read_status(sp[0], &status);
	int code = 0, tpid = 0, off = 0;
	uint64_t tstart = 0;
	if (rc == 0 && sscanf(status.buf, "ok %d %" SCNu64, &tpid, &tstart) == 2 && tpid > 0) {
		if (h->pidfd < 0) {
			/* Out of fds: a task that cannot be watched is not
			 * left running. */
			kill(-tpid, SIGKILL);
			reap(pid);
			rc = herd_errf(err, -pidfd_errno, "task %s: pidfd of the task shim: %s",
				       task->name, strerror(pidfd_errno));
			goto fail;
		}
		h->state.shim_pid = pid;
		h->state.task_pid = tpid;
		h->state.task_start_time = tstart;
		proc_start_time(pid, &h->state.shim_start_time);
		rc = 0;
		*out = h;
		goto done;
	}
	if (h->pidfd >= 0)
		close(h->pidfd);
	reap(pid);
	if (rc == 0 && sscanf(status.buf, "err %d %n", &code, &off) == 1 && code > 0 && off > 0) {
		strbuf_setlen(&status, strcspn(status.buf, "\n"));
		rc = herd_errf(err, -code, "%s", status.buf + off);
	} else {
		rc = herd_errf(err, rc < 0 ? rc : -EIO, "task %s: the task shim %s ended without "
			       "saying whether the task started", task->name, argv[0]);
	}
fail:
	free(h);
done:
	if (sp[0] >= 0)
		close(sp[0]);
	free(argv);
	strbuf_release(&status);
	return rc;
}

int shim_wait(struct driver_handle *h, int timeout_ms, struct driver_exit *exit,
	      struct herd_err *err)
{
	if (h->done) {
		*exit = h->exit;
		return 1;
	}
	struct pollfd p = { h->pidfd, POLLIN, 0 };
	int n;
	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return herd_errf(err, -errno, "waiting for task pid %d: %s", (int)h->state.task_pid,
				 strerror(errno));
	if (n == 0)
		return 0;
	/* Reap the shim when it is our child (ECHILD when a recovered one
	 * belongs to init: nothing to reap). */
	siginfo_t si;
	while (waitid(P_PIDFD, (id_t)h->pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
	close(h->pidfd);
	h->pidfd = -1;
	h->done = true;
	if (shim_read_exit_file(h->state.exit_file, &h->exit) < 0)
		h->exit = (struct driver_exit){ .exit_code = -1, .lost = true };
	*exit = h->exit;
	return 1;
}

int shim_signal(struct driver_handle *h, int sig)
{
	/* While the shim lives, the task's pid (its process group id) is the
	 * task's: the shim has not reaped it, or has only just. */
	if (h->done)
		return -ESRCH;
	if (kill(-h->state.task_pid, sig) < 0)
		return -errno;
	return 0;
}

static int raw_exec_stop(struct driver_handle *h, int kill_signal, int64_t kill_timeout_ns,
			 struct driver_exit *exit, struct herd_err *err)
{
	static const struct driver_stop_steps steps = { shim_signal, shim_wait, NULL };
	if (!h->done) {
		char what[48];
		snprintf(what, sizeof(what), "task pid %d", (int)h->state.task_pid);
		int rc = driver_stop_escalate(h, &steps, kill_signal, kill_timeout_ns, what, exit, err);
		if (rc < 0)
			return rc;
	}
	/* The main process has ended; what it left behind in its process
	 * group goes too (the group cannot have been reused while members
	 * remain). */
	kill(-h->state.task_pid, SIGKILL);
	*exit = h->exit;
	return 0;
}

void shim_handle_free(struct driver_handle *h)
{
	if (!h)
		return;
	if (h->pidfd >= 0)
		close(h->pidfd);
	free(h);
}

static int raw_exec_recover(const struct driver_env *env, const struct driver_state *state,
			    struct driver_handle **out, struct herd_err *err)
{
	return shim_recover(&raw_exec_ops, state, out, err);
}

int shim_recover(const struct driver_ops *ops, const struct driver_state *state,
		 struct driver_handle **out, struct herd_err *err)
{
	if (strcmp(state->driver, ops->name))
		return herd_errf(err, -EINVAL, "task state is for driver '%s', not %s",
				 state->driver, ops->name);
	if (state->shim_pid <= 0 || state->task_pid <= 0 || !state->exit_file[0])
		return herd_errf(err, -EINVAL, "task state: missing pids or exit file");
	struct driver_handle *h = xcalloc(1, sizeof(*h));
	h->ops = ops;
	h->state = *state;
	h->pidfd = proc_pidfd_checked(state->shim_pid, state->shim_start_time);
	if (h->pidfd >= 0) {
		*out = h;
		return 0;
	}
	int rc = h->pidfd;
	h->pidfd = -1;
	if (rc != -ESRCH) {
		free(h);
		return herd_errf(err, rc, "task shim pid %d: %s", (int)state->shim_pid, strerror(-rc));
	}
	/* Ended while no agent watched: its exit file says how, if it could. */
	h->done = true;
	if (shim_read_exit_file(state->exit_file, &h->exit) < 0)
		h->exit = (struct driver_exit){ .exit_code = -1, .lost = true };
	*out = h;
	return herd_errf(err, -ESRCH, "task shim pid %d has ended", (int)state->shim_pid);
}

int shim_set_cores(const struct driver_env *env, const struct driver_state *state,
		   const char *cpus, struct herd_err *err)
{
	uint64_t start;
	(void)env;
	if (state->task_pid <= 0)
		return herd_errf(err, -EINVAL, "task state: no task pid");
	int rc = proc_start_time(state->task_pid, &start);
	if (rc == -ESRCH || (rc == 0 && start != state->task_start_time))
		return herd_errf(err, -ESRCH, "task pid %d is not running", (int)state->task_pid);
	rc = proc_session_set_affinity(NULL, state->task_pid, cpus);
	if (rc < 0)
		return herd_errf(err, rc, "task pid %d: cores %s: %s", (int)state->task_pid,
				 cpus ? cpus : "(all)", strerror(-rc));
	return 0;
}

/* The task's processes: its own, its descendants (also one that left the
 * session with setsid) and its session's (also one whose parent ended). */
static bool raw_exec_owns(const struct driver_state *state, const struct driver_proc *p)
{
	return state->task_pid > 1 &&
	       (p->session == state->task_pid || proc_is_or_descends(p, state->task_pid));
}

const struct driver_ops raw_exec_ops = {
	.name = "raw_exec",
	.fingerprint = raw_exec_fingerprint,
	.start = raw_exec_start,
	.wait = shim_wait,
	.signal = shim_signal,
	.stop = raw_exec_stop,
	.destroy = shim_handle_free,
	.recover = raw_exec_recover,
	.stats = raw_exec_stats,
	.set_cores = shim_set_cores,
	.owns = raw_exec_owns,
};

const struct driver_state *driver_handle_state(const struct driver_handle *h)
{
	return &h->state;
}

int driver_handle_fd(const struct driver_handle *h)
{
	return h->pidfd;
}
