/* The task shim's enter mode: a command inside a running exec-driver
 * task, for `herd alloc exec` (task_exec.h; shim.h has the command line).
 *
 * Why a process of its own: setns() into a mount namespace refuses a
 * multi-threaded caller, and the agent has many threads.  Why fork()
 * rather than posix_spawn: a process only enters a PID namespace through
 * its children, and that child must become a session leader with the
 * pty as its controlling terminal (TIOCSCTTY) and drop to the task's user
 * before it execs, which posix_spawn cannot do inside another root.  This
 * process is single-threaded and small, so fork is cheap and safe here. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drivers/drivers-int.h"
#include "drivers/isolate.h"
#include "drivers/shim.h"

struct enter_args {
	pid_t pid;                 /* the task's init (PID 1 of its namespace) */
	uid_t uid;
	gid_t gid;
	bool tty;
	const char *procs[ISOLATE_MAX_LIST];
	size_t nr_procs;
	char **argv;
};

static volatile sig_atomic_t child_pid;

static int parse_num(const char *s, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse(int argc, char **argv, struct enter_args *a)
{
	long v;
	int i;

	memset(a, 0, sizeof(*a));
	a->pid = -1;
	for (i = 1; i < argc; i++) {
		const char *f = argv[i];
		if (!strcmp(f, "--")) {
			i++;
			break;
		}
		if (!strcmp(f, "-tty")) {
			a->tty = true;
			continue;
		}
		if (i + 1 >= argc)
			return -1;
		const char *val = argv[++i];
		if (!strcmp(f, "-pid") && parse_num(val, 1L << 22, &v) == 0 && v > 0)
			a->pid = (pid_t)v;
		else if (!strcmp(f, "-uid") && parse_num(val, 0xfffffffeL, &v) == 0)
			a->uid = (uid_t)v;
		else if (!strcmp(f, "-gid") && parse_num(val, 0xfffffffeL, &v) == 0)
			a->gid = (gid_t)v;
		else if (!strcmp(f, "-cgroup-procs") && a->nr_procs < ISOLATE_MAX_LIST)
			a->procs[a->nr_procs++] = val;
		else
			return -1;
	}
	if (a->pid <= 0 || i >= argc)
		return -1;
	a->argv = &argv[i];
	return 0;
}

/* Moves this process into the task's cgroup(s): host paths, so before
 * the mount namespace changes; the child is born inside. */
static int join_cgroups(const struct enter_args *a)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	for (size_t i = 0; i < a->nr_procs; i++) {
		int fd = open(a->procs[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, buf, (size_t)n) != n) {
			fprintf(stderr, "exec: joining the task's cgroup %s: %s\n", a->procs[i],
				strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

/* Enters the init's IPC, UTS, PID (for children) and mount namespaces and
 * its root. */
static int enter(pid_t pid)
{
	static const struct { const char *name; int type; } ns[] = {
		{ "ipc", CLONE_NEWIPC }, { "uts", CLONE_NEWUTS }, { "pid", CLONE_NEWPID },
		{ "mnt", CLONE_NEWNS },
	};
	int fds[4], root;
	char path[64];

	/* every fd first: after the mount namespace changes, /proc/<pid>
	 * may no longer be what it was */
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if ((root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "exec: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns[i].name);
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			fprintf(stderr, "exec: %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	for (size_t i = 0; i < 4; i++) {
		if (setns(fds[i], ns[i].type) < 0) {
			fprintf(stderr, "exec: entering the task's %s namespace: %s\n", ns[i].name,
				strerror(errno));
			return -1;
		}
		close(fds[i]);
	}
	if (fchdir(root) < 0 || chroot(".") < 0 || chdir("/") < 0) {
		fprintf(stderr, "exec: entering the task's root: %s\n", strerror(errno));
		return -1;
	}
	close(root);
	return 0;
}

/* In the child: a session of its own (the pty its terminal), the task's
 * user, then the command; exits 126/127 when it cannot run. */
static void run_child(const struct enter_args *a)
{
	if (setsid() < 0 || (a->tty && ioctl(0, TIOCSCTTY, 0) < 0)) {
		fprintf(stderr, "exec: the terminal: %s\n", strerror(errno));
		_exit(126);
	}
	if (setgroups(0, NULL) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0) {
		fprintf(stderr, "exec: becoming the task's user: %s\n", strerror(errno));
		_exit(126);
	}
	/* after setuid, which clears it: die with this process */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(126);
	execvp(a->argv[0], a->argv);
	int e = errno;
	fprintf(stderr, "exec %s: %s\n", a->argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* The agent stops a session with SIGTERM: the command's whole process
 * group goes. */
static void on_term(int sig)
{
	(void)sig;
	if (child_pid > 0)
		kill(-child_pid, SIGKILL);
	_exit(128 + SIGKILL);
}

int task_shim_enter_main(int argc, char **argv)
{
	struct enter_args a;
	int status;
	pid_t pid;

	if (parse(argc, argv, &a) < 0) {
		fprintf(stderr, "exec: task shim: bad command line\n");
		return 2;
	}
	if (join_cgroups(&a) < 0)
		return 126;
	if (enter(a.pid) < 0)
		_exit(126);
	/* held until child_pid is known: a stop that came between the fork
	 * and then would leave the child running */
	sigset_t stops, old;
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &old);
	signal(SIGTERM, on_term);
	signal(SIGHUP, on_term);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "exec: fork: %s\n", strerror(errno));
		_exit(126);
	}
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		run_child(&a);
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* only the command's output may reach the caller from here on */
	/* _exit, not return: inside the task's root and /proc, exit-time
	 * work (a sanitizer's leak check reads /proc/self) has nothing to
	 * find, and there is nothing to flush */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			_exit(126);
	kill(-pid, SIGKILL);   /* what it left in its process group */
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WEXITSTATUS(status));
}
