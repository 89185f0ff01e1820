/* A template's change_script inside its task; see change_script.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/change_script.h"
#include "common/units.h"
#include "drivers/task_exec.h"

#define POLL_MS 100
/* How long a killed docker exec's stream may take to end. */
#define KILL_WAIT_NS (5 * NS_PER_SEC)

bool change_script_failed(const struct change_script_result *r)
{
	return !r->started || r->timed_out || r->cancelled || r->signal || r->exit_code != 0;
}

/* Keeps the last CHANGE_SCRIPT_TAIL bytes of what the command wrote. */
static void keep_tail(struct change_script_result *r, const char *data, size_t len)
{
	size_t have = strlen(r->tail);

	if (len >= CHANGE_SCRIPT_TAIL) {
		memcpy(r->tail, data + len - CHANGE_SCRIPT_TAIL, CHANGE_SCRIPT_TAIL);
		r->tail[CHANGE_SCRIPT_TAIL] = '\0';
		return;
	}
	if (have + len > CHANGE_SCRIPT_TAIL) {
		size_t drop = have + len - CHANGE_SCRIPT_TAIL;
		memmove(r->tail, r->tail + drop, have - drop);
		have -= drop;
	}
	memcpy(r->tail + have, data, len);
	r->tail[have + len] = '\0';
}

/* The tail without the line end (or blanks) it ends with: the event's
 * message ends there. */
static void trim_tail(struct change_script_result *r)
{
	size_t n = strlen(r->tail);
	while (n && (r->tail[n - 1] == '\n' || r->tail[n - 1] == '\r' || r->tail[n - 1] == ' ' ||
		     r->tail[n - 1] == '\t'))
		r->tail[--n] = '\0';
}

static void docker_output(void *arg, int stream, const char *data, size_t len)
{
	(void)stream;
	keep_tail(arg, data, len);
}

/* Why the wait ends early: the deadline passed, the task ended, cancel. */
static bool should_end(struct change_script_result *r, int64_t deadline, int task_fd,
		       bool (*cancel)(void *), void *arg)
{
	if (mono_ns() >= deadline) {
		r->timed_out = true;
		return true;
	}
	if (task_fd >= 0) {
		struct pollfd p = { task_fd, POLLIN, 0 };
		if (poll(&p, 1, 0) > 0) {
			r->cancelled = true;
			return true;
		}
	}
	if (cancel && cancel(arg)) {
		r->cancelled = true;
		return true;
	}
	return false;
}

static void run_docker(const struct driver_env *env, const struct driver_state *st,
		       const char *const *argv, int64_t deadline, bool (*cancel)(void *),
		       void *arg, struct change_script_result *r)
{
	struct herd_err err = { 0, "" };
	struct docker_exec *x = NULL;
	bool killed = false;
	int64_t killed_at = 0;
	int fd, code;

	if (docker_exec_start(env, st, argv, false, 0, 0, docker_output, r, &x, &fd, &err) < 0) {
		snprintf(r->why, sizeof(r->why), "%s", err.msg);
		return;
	}
	r->started = true;
	shutdown(fd, SHUT_WR);   /* an empty stdin */
	for (;;) {
		ssize_t n = 1;
		if (docker_exec_pending(x)) {
			n = docker_exec_read(x);
		} else {
			struct pollfd p = { fd, POLLIN, 0 };
			if (poll(&p, 1, POLL_MS) > 0)
				n = docker_exec_read(x);
		}
		if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR))
			break;
		/* killed: its stream ends with it; an engine that keeps it open
		 * is not waited for long */
		if (killed && mono_ns() - killed_at > KILL_WAIT_NS)
			break;
		if (!killed && should_end(r, deadline, -1, cancel, arg)) {
			docker_exec_kill(x);
			killed = true;
			killed_at = mono_ns();
		}
	}
	code = docker_exec_exit_code(x);
	if (!killed)
		r->exit_code = code;
	docker_exec_free(x);
}

void change_script_run(const struct driver_env *env, const struct driver_state *st,
		       const char *task_dir, const char *const *argv, int64_t timeout_ns,
		       bool (*cancel)(void *arg), void *arg, struct change_script_result *r)
{
	struct task_exec x = { .argv = argv, .task_dir = task_dir };
	struct herd_err err = { 0, "" };
	struct task_exec_proc proc;
	int64_t deadline = mono_ns() + timeout_ns;
	int out[2] = { -1, -1 }, null_fd = -1, child_fd = -1, status = 0, rc;
	bool exited = false, killed = false, reaped = false;

	memset(r, 0, sizeof(*r));
	r->exit_code = -1;
	if (!strcmp(st->driver, "docker")) {
		run_docker(env, st, argv, deadline, cancel, arg, r);
		trim_tail(r);
		return;
	}
	if ((null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0) {
		snprintf(r->why, sizeof(r->why), "cannot make its pipes: %s", strerror(errno));
		goto out;
	}
	x.fds[0] = null_fd;
	x.fds[1] = x.fds[2] = out[1];
	rc = task_exec_start(env, st, &x, &proc, &err);
	close(out[1]);   /* the command holds its end now */
	out[1] = -1;
	if (rc < 0) {
		snprintf(r->why, sizeof(r->why), "%s", err.msg);
		goto out;
	}
	r->started = true;
	/* the command is our unreaped child: its pid cannot be reused */
	child_fd = (int)syscall(SYS_pidfd_open, proc.pid, 0);
	fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
	while (!exited) {
		struct pollfd p[2] = { { out[0], POLLIN, 0 }, { child_fd, POLLIN, 0 } };
		char buf[4096];
		if (poll(p, 2, POLL_MS) > 0) {
			if (p[0].revents) {
				ssize_t n = read(out[0], buf, sizeof(buf));
				if (n > 0)
					keep_tail(r, buf, (size_t)n);
				else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
					close(out[0]);
					out[0] = -1;
				}
			}
			if (p[1].revents)
				exited = true;
		}
		if (child_fd < 0 && waitpid(proc.pid, &status, WNOHANG) == proc.pid) {
			exited = reaped = true;   /* no pidfd: asked each round instead */
			break;
		}
		if (!exited && !killed && should_end(r, deadline, proc.task_fd, cancel, arg)) {
			kill(-proc.pid, proc.stop_signal);
			killed = true;
		}
	}
	/* what it wrote just before its end; a bounded drain, as a process it
	 * left in the background may hold the pipe and write on */
	for (int i = 0; out[0] >= 0 && i < 16; i++) {
		char buf[4096];
		ssize_t n = read(out[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		keep_tail(r, buf, (size_t)n);
	}
	/* what it left behind in its process group goes with it */
	kill(-proc.pid, proc.stop_signal);
	if (!reaped)
		while (waitpid(proc.pid, &status, 0) < 0 && errno == EINTR)
			;
	if (!killed && WIFEXITED(status))
		r->exit_code = WEXITSTATUS(status);
	else if (!killed && WIFSIGNALED(status))
		r->signal = WTERMSIG(status);
	if (child_fd >= 0)
		close(child_fd);
	if (proc.task_fd >= 0)
		close(proc.task_fd);
out:
	trim_tail(r);
	if (null_fd >= 0)
		close(null_fd);
	if (out[0] >= 0)
		close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
}
