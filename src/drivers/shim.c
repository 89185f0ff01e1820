/* The task shim; see shim.h for its command line and protocol. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cpulist.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/drivers-int.h"
#include "drivers/isolate.h"
#include "drivers/logrot.h"
#include "drivers/shim.h"

extern char **environ;

struct shim_args {
	const char *task, *log_dir, *exit_file, *cwd;
	int64_t max_files, max_size;
	char **argv;   /* COMMAND ARG... */
	bool isolate;  /* -root given: the exec driver's isolation (isolate.h) */
	const char *cpus; /* -cpus LIST: the task's cores; NULL: anywhere */
	bool no_logs;     /* -logs off: stdout and stderr to /dev/null, no files */
	struct isolate_spec iso;
};

/* Appends v to a repeated flag's list. */
static int add_list(const char **list, size_t *n, const char *v)
{
	if (*n >= ISOLATE_MAX_LIST)
		return -1;
	list[(*n)++] = v;
	return 0;
}

static void status_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void status_line(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	ssize_t w = write(TASK_SHIM_STATUS_FD, buf, (size_t)n);
	(void)w;
	close(TASK_SHIM_STATUS_FD);
}

static int parse_args(int argc, char **argv, struct shim_args *a)
{
	memset(a, 0, sizeof(*a));
	int i;
	for (i = 1; i < argc; i++) {
		const char *f = argv[i];
		if (!strcmp(f, "--")) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			return -1;
		const char *v = argv[++i];
		if (!strcmp(f, "-task"))
			a->task = v;
		else if (!strcmp(f, "-log-dir"))
			a->log_dir = v;
		else if (!strcmp(f, "-exit-file"))
			a->exit_file = v;
		else if (!strcmp(f, "-cwd"))
			a->cwd = v;
		else if (!strcmp(f, "-cpus"))
			a->cpus = v;
		else if (!strcmp(f, "-logs")) {
			if (strcmp(v, "off") && strcmp(v, "on"))
				return -1;
			a->no_logs = !strcmp(v, "off");
		}
		else if (!strcmp(f, "-root")) {
			a->iso.root = v;
			a->isolate = true;
		} else if (!strcmp(f, "-alloc-dir"))
			a->iso.alloc_dir = v;
		else if (!strcmp(f, "-hostname"))
			a->iso.hostname = v;
		else if (!strcmp(f, "-ro")) {
			if (add_list(a->iso.ro, &a->iso.nr_ro, v) < 0)
				return -1;
		} else if (!strcmp(f, "-dev")) {
			if (add_list(a->iso.devices, &a->iso.nr_devices, v) < 0)
				return -1;
		} else if (!strcmp(f, "-vol")) {
			/* a host volume: -vol SRC -vol-at DST -vol-mode ro|rw */
			if (a->iso.nr_volumes >= ISOLATE_MAX_LIST)
				return -1;
			a->iso.volumes[a->iso.nr_volumes++] = (struct isolate_volume){ v, NULL, false };
		} else if (!strcmp(f, "-vol-at") || !strcmp(f, "-vol-mode")) {
			struct isolate_volume *iv;
			if (!a->iso.nr_volumes)
				return -1;
			iv = &a->iso.volumes[a->iso.nr_volumes - 1];
			if (f[5] == 'a')
				iv->dst = v;
			else if (!strcmp(v, "ro") || !strcmp(v, "rw"))
				iv->read_only = v[1] == 'o';
			else
				return -1;
		} else if (!strcmp(f, "-cgroup-procs")) {
			if (add_list(a->iso.procs, &a->iso.nr_procs, v) < 0)
				return -1;
		} else if (!strcmp(f, "-uid") || !strcmp(f, "-gid")) {
			int64_t id;
			if (parse_int64(v, 0, UINT32_MAX - 1, &id, NULL) < 0)
				return -1;
			if (f[1] == 'u')
				a->iso.uid = (uid_t)id;
			else
				a->iso.gid = (gid_t)id;
		}
		else if (!strcmp(f, "-max-files")) {
			if (parse_int64(v, 1, 100000, &a->max_files, NULL) < 0)
				return -1;
		} else if (!strcmp(f, "-max-size")) {
			if (parse_int64(v, 1, INT64_MAX, &a->max_size, NULL) < 0)
				return -1;
		} else
			return -1;
	}
	if (i >= argc || !a->task || !a->log_dir || !a->exit_file || !a->cwd ||
	    !a->max_files || !a->max_size)
		return -1;
	for (size_t k = 0; k < a->iso.nr_volumes; k++)
		if (!a->iso.volumes[k].dst || a->iso.volumes[k].dst[0] != '/')
			return -1;
	a->argv = &argv[i];
	return 0;
}

/* Writes "<code> <signal> <ns>\n".  One write() of a few bytes, and the
 * agent reads the file only once this process has ended (its pidfd says
 * so), so no reader sees half of it: no temporary name and rename needed.
 * A shim killed between the open and the write leaves it empty, which
 * reads as "lost", as a missing file does.
 *
 * Not fsynced, on purpose: the file serves an agent that restarts on a
 * machine that kept running (kill -9, upgrade), and the page cache serves
 * it then.  After a machine crash the task is gone too, and so may be what
 * it wrote and its logs (never synced): a missing or empty exit file then
 * makes the agent report the task as lost, which is the truth.  The sync
 * cost a journal commit per task.
 *
 * The file usually exists already, empty: the driver empties the one a
 * previous run (or, in a recycled alloc dir, a previous allocation) left
 * rather than deleting it (raw_exec.c clear_exit_file), and the shim
 * writes into that inode instead of allocating one per task.  Not O_TRUNC:
 * ext4 takes a truncate to zero followed by a write as a file being
 * replaced and allocates its block at close (auto_da_alloc), which the
 * collector's truncate then frees again; a plain write stays in the page
 * cache.  A longer leftover (a driver that did not empty the file) is cut
 * after the write.  O_NOFOLLOW: the file lies in the task dir, where a task
 * could plant a link. */
static void write_exit_file(const char *path, int code, int sig)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "%d %d %lld\n", code, sig,
			 (long long)ts.tv_sec * NS_PER_SEC + ts.tv_nsec);
	struct stat st;
	bool ok = write(fd, buf, (size_t)n) == n && fstat(fd, &st) == 0 &&
		  (st.st_size <= n || ftruncate(fd, n) == 0);
	close(fd);
	if (!ok)
		unlink(path);
}

/* Reads what is in fd into lr; returns 0 at EOF, 1 when more may come. */
static int pump(int fd, struct logrot *lr)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 1 : 0;
		if (n == 0)
			return 0;
		/* A full disk must not block the task: drop what cannot be
		 * written and keep draining. */
		logrot_write(lr, buf, (size_t)n);
		if ((size_t)n < sizeof(buf))
			return 1;
	}
}

int task_shim_main(int argc, char **argv)
{
	struct shim_args a;
	struct logrot out = { .fd = -1, .dirfd = -1 }, errlog = { .fd = -1, .dirfd = -1 };
	struct herd_err err = { 0 };
	int pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	int devnull = -1, rc = 127, stfd = -1;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	pid_t pid;

	/* `herd alloc exec` into an exec-driver task (shim_enter.c) */
	if (argc > 1 && !strcmp(argv[1], "-enter"))
		return task_shim_enter_main(argc - 1, argv + 1);
	/* Nothing the agent may have leaked goes further than here. */
	fcntl(TASK_SHIM_STATUS_FD, F_SETFD, FD_CLOEXEC);
	syscall(SYS_close_range, TASK_SHIM_STATUS_FD + 1, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
	signal(SIGPIPE, SIG_IGN);

	if (parse_args(argc, argv, &a) < 0) {
		status_line("err %d task shim: bad command line\n", EINVAL);
		return 2;
	}
	char *base = xasprintf("%s.stdout", a.task);
	int r = a.no_logs ? 0 : logrot_open(&out, a.log_dir, base, (int)a.max_files, a.max_size, &err);
	free(base);
	if (r == 0 && !a.no_logs) {
		base = xasprintf("%s.stderr", a.task);
		r = logrot_open(&errlog, a.log_dir, base, (int)a.max_files, a.max_size, &err);
		free(base);
	}
	if (r < 0) {
		status_line("err %d %s\n", -r, err.msg);
		goto out;
	}
	/* Pinned before the task exists, so that it and all it starts
	 * inherit the mask (exec's isolated init included). */
	if (a.cpus) {
		struct cpulist set;
		if (cpulist_parse(a.cpus, &set, &err) < 0 || cpulist_empty(&set)) {
			status_line("err %d cores '%s': %s\n", EINVAL, a.cpus,
				    err.msg[0] ? err.msg : "an empty list");
			goto out;
		}
		if (sched_setaffinity(0, cpulist_bytes(&set), (cpu_set_t *)(void *)set.w) < 0) {
			status_line("err %d pinning to cores %s: %s\n", errno, a.cpus,
				    strerror(errno));
			goto out;
		}
	}
	if (chdir(a.cwd) < 0) {
		status_line("err %d task dir %s: %s\n", errno, a.cwd, strerror(errno));
		goto out;
	}
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (a.no_logs) {
		/* nothing to pump: the task writes straight into /dev/null */
		pout[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
		perr[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (devnull < 0 || pout[1] < 0 || perr[1] < 0) {
			status_line("err %d /dev/null: %s\n", errno, strerror(errno));
			goto out;
		}
	} else if (devnull < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		status_line("err %d pipes: %s\n", errno, strerror(errno));
		goto out;
	}
	if (a.isolate) {
		char msg[900];
		r = isolate_spawn(&a.iso, a.argv, devnull, pout[1], perr[1], &pid, &stfd, msg,
				  sizeof(msg));
		close(pout[1]);
		close(perr[1]);
		close(devnull);
		devnull = -1;
		if (r != 0) {
			status_line("err %d %s\n", r, msg);
			goto out;
		}
		goto started;
	}
	/* dup2 onto 0-2 clears close-on-exec there only; every other fd of
	 * this process is close-on-exec, so the task gets exactly 0, 1, 2. */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, devnull, 0);
	posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
	posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	/* The agent started us with every signal at its default; SIGPIPE is
	 * the one we ignore, and the only disposition exec would pass on (it
	 * resets handled ones itself).  Naming only it spares the child a
	 * sigaction call for each of the 64 signals. */
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	/* posix_spawn returns the exec error itself (glibc and musl both
	 * spawn with CLONE_VFORK and pass errno back), so a failed exec is
	 * reported as such.  posix_spawnp searches the PATH of our (the task's) env. */
	r = posix_spawnp(&pid, a.argv[0], &fa, &attr, a.argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(pout[1]);
	close(perr[1]);
	close(devnull);
	devnull = -1;
	if (r != 0) {
		status_line("err %d exec %s: %s\n", r, a.argv[0], strerror(r));
		goto out;
	}
started:;
	uint64_t start = 0;
	proc_start_time(pid, &start);
	status_line("ok %d %" PRIu64 "\n", (int)pid, start);

	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	bool out_open = !a.no_logs, err_open = !a.no_logs, exited = false;
	int status = 0;
	while (!exited) {
		struct pollfd pfd[3] = {
			{ out_open ? pout[0] : -1, POLLIN, 0 },
			{ err_open ? perr[0] : -1, POLLIN, 0 },
			{ pidfd, POLLIN, 0 },
		};
		/* Without a pidfd (old kernel) fall back to a 100 ms poll. */
		int n = poll(pfd, 3, pidfd >= 0 ? -1 : 100);
		if (n < 0 && errno != EINTR)
			break;
		if (out_open && (pfd[0].revents & (POLLIN | POLLHUP)))
			out_open = pump(pout[0], &out);
		if (err_open && (pfd[1].revents & (POLLIN | POLLHUP)))
			err_open = pump(perr[0], &errlog);
		if (pidfd < 0 || (pfd[2].revents & POLLIN)) {
			pid_t w = waitpid(pid, &status, pidfd >= 0 ? 0 : WNOHANG);
			if (w == pid)
				exited = true;
			else if (w < 0 && errno != EINTR)
				break;
		}
	}
	/* What the task wrote before it ended is in the pipes: drain it.
	 * Descendants that keep the pipes open are not waited for. */
	if (out_open)
		pump(pout[0], &out);
	if (err_open)
		pump(perr[0], &errlog);
	if (pidfd >= 0)
		close(pidfd);
	/* Isolated: pid is the namespace's init; the task's own status
	 * comes through stfd (absent when the init was killed: then the
	 * init's status, SIGKILL, is the task's fate too). */
	if (exited && stfd >= 0) {
		int task_status;
		if (read(stfd, &task_status, sizeof(task_status)) == (ssize_t)sizeof(task_status))
			status = task_status;
	}
	if (exited) {
		if (WIFSIGNALED(status))
			write_exit_file(a.exit_file, -1, WTERMSIG(status));
		else
			write_exit_file(a.exit_file, WEXITSTATUS(status), 0);
		rc = 0;
	}
out:
	if (stfd >= 0)
		close(stfd);
	if (devnull >= 0)
		close(devnull);
	if (pout[0] >= 0)
		close(pout[0]);
	if (perr[0] >= 0)
		close(perr[0]);
	logrot_close(&out);
	logrot_close(&errlog);
	return rc;
}
