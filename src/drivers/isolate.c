/* Namespaces, the task's root and its init; see isolate.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drivers/isolate.h"

extern char **environ;

/* Signals the init passes on to the task. */
static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				 SIGWINCH, SIGALRM };

bool isolate_forwards(int sig)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (forwarded[i] == sig)
			return true;
	return false;
}

/* Reports a setup failure through the pipe and ends the init. */
static void __attribute__((noreturn, format(printf, 3, 4)))
die(int rep, int code, const char *fmt, ...)
{
	char buf[900];
	int n = snprintf(buf, sizeof(buf), "err %d ", code);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	ssize_t w = write(rep, buf, len);
	(void)w;
	_exit(127);
}

/* mkdir -p, inside the new root (paths are absolute host-side paths). */
static int mkdirs(const char *path, mode_t mode)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + 1; ; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = c;
		if (!c)
			return 0;
	}
}

static void join(char *buf, size_t len, const char *a, const char *b)
{
	snprintf(buf, len, "%s%s", a, b);
}

/* Binds host path src at root+src, read-only unless rw; a symlink is
 * recreated as the same symlink. */
static void bind_one(int rep, const char *root, const char *src, const char *dst, bool rw,
		     unsigned long extra)
{
	char target[4096];
	join(target, sizeof(target), root, dst);
	struct stat st;
	if (lstat(src, &st) < 0) {
		if (errno == ENOENT)
			return;   /* /lib32 and friends need not exist */
		die(rep, errno, "bind %s: %s", src, strerror(errno));
	}
	if (S_ISLNK(st.st_mode)) {
		char link[4096];
		ssize_t n = readlink(src, link, sizeof(link) - 1);
		if (n < 0)
			die(rep, errno, "readlink %s: %s", src, strerror(errno));
		link[n] = '\0';
		char *slash = strrchr(target, '/');
		*slash = '\0';
		mkdirs(target, 0755);
		*slash = '/';
		unlink(target);
		if (symlink(link, target) < 0)
			die(rep, errno, "symlink %s: %s", target, strerror(errno));
		return;
	}
	int rc;
	if (S_ISDIR(st.st_mode)) {
		rc = mkdirs(target, 0755);
	} else {
		char *slash = strrchr(target, '/');
		*slash = '\0';
		rc = mkdirs(target, 0755);
		*slash = '/';
		int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0)
			close(fd);
		else
			rc = -errno;
	}
	if (rc < 0)
		die(rep, -rc, "mount point %s: %s", target, strerror(-rc));
	if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		die(rep, errno, "bind %s: %s", src, strerror(errno));
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | extra | (rw ? 0 : MS_RDONLY);
	if (mount(NULL, target, NULL, flags, NULL) < 0)
		die(rep, errno, "remount %s: %s", target, strerror(errno));
}

/* Binds a host volume at root+dst: a directory, never a link; a mount
 * point that is a link (a task of an earlier run could have planted one in
 * its root) is refused rather than followed.  Read-only through a remount
 * of the bind (a bind mount takes MS_RDONLY only then); no MS_REC, so that
 * the flags hold for everything the task sees there. */
static void bind_volume(int rep, const char *root, const struct isolate_volume *v)
{
	char target[4096];
	struct stat st;

	join(target, sizeof(target), root, v->dst);
	if (stat(v->src, &st) < 0)
		die(rep, errno, "host volume %s: %s", v->src, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		die(rep, ENOTDIR, "host volume %s: not a directory", v->src);
	int rc = mkdirs(target, 0755);
	if (rc < 0)
		die(rep, -rc, "mount point %s for host volume %s: %s", v->dst, v->src,
		    strerror(-rc));
	if (lstat(target, &st) < 0 || !S_ISDIR(st.st_mode))
		die(rep, ENOTDIR, "mount point %s for host volume %s: not a directory", v->dst,
		    v->src);
	if (mount(v->src, target, NULL, MS_BIND, NULL) < 0)
		die(rep, errno, "bind host volume %s at %s: %s", v->src, v->dst, strerror(errno));
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV |
			      (v->read_only ? MS_RDONLY : 0);
	if (mount(NULL, target, NULL, flags, NULL) < 0)
		die(rep, errno, "remount host volume %s at %s: %s", v->src, v->dst, strerror(errno));
}

static void build_dev(int rep, const struct isolate_spec *s)
{
	static const char *const std_devs[] = { "/dev/null", "/dev/zero", "/dev/full",
		"/dev/random", "/dev/urandom", "/dev/tty" };
	char p[4096], q[4096];
	join(p, sizeof(p), s->root, "/dev");
	if (mkdirs(p, 0755) < 0 ||
	    mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536k") < 0)
		die(rep, errno, "/dev: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(std_devs) / sizeof(std_devs[0]); i++)
		bind_one(rep, s->root, std_devs[i], std_devs[i], true, 0);
	for (size_t i = 0; i < s->nr_devices; i++)
		bind_one(rep, s->root, s->devices[i], s->devices[i], true, 0);
	join(p, sizeof(p), s->root, "/dev/pts");
	mkdirs(p, 0755);
	if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") == 0) {
		join(q, sizeof(q), s->root, "/dev/ptmx");
		symlink("pts/ptmx", q);
	}
	join(p, sizeof(p), s->root, "/dev/shm");
	mkdirs(p, 0755);
	if (mount("shm", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=65536k") < 0)
		die(rep, errno, "/dev/shm: %s", strerror(errno));
	static const char *const links[][2] = { { "/proc/self/fd", "/dev/fd" },
		{ "/proc/self/fd/0", "/dev/stdin" }, { "/proc/self/fd/1", "/dev/stdout" },
		{ "/proc/self/fd/2", "/dev/stderr" } };
	for (size_t i = 0; i < 4; i++) {
		join(q, sizeof(q), s->root, links[i][1]);
		symlink(links[i][0], q);
	}
}

/* The owner hand_over_tree gives (nftw passes no argument; the init is
 * single-threaded). */
static uid_t tree_uid;
static gid_t tree_gid;

static int chown_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	/* lchown: a symlink itself, never what it points to */
	if (st->st_uid != tree_uid || st->st_gid != tree_gid)
		if (lchown(path, tree_uid, tree_gid) < 0)
			return 0;
	return 0;
}

/* The task's own directories become the task user's.  secrets/ and local/
 * with what the agent put there (templates, artifacts, written as root
 * before the start): a template with perms 0600 in secrets/ must be
 * readable by a `nobody` task.  Walked without following symlinks, inside
 * the task's new root: nothing outside it can be reached. */
static void hand_over(const struct isolate_spec *s)
{
	static const char *const own[] = { "local", "secrets", "tmp", "alloc/data", "alloc/tmp" };
	static const char *const trees[] = { "local", "secrets" };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		struct stat st;
		if (lstat(own[i], &st) == 0 && S_ISDIR(st.st_mode))
			if (lchown(own[i], s->uid, s->gid) < 0)
				continue;
	}
	tree_uid = s->uid;
	tree_gid = s->gid;
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		struct stat st;
		if (lstat(trees[i], &st) == 0 && S_ISDIR(st.st_mode))
			nftw(trees[i], chown_entry, 8, FTW_PHYS | FTW_MOUNT);
	}
	struct stat st;
	if (lstat("tmp", &st) < 0)
		mkdir("tmp", 01777);
	else if (S_ISDIR(st.st_mode))
		chmod("tmp", 01777);
}

static void noop(int sig) { (void)sig; }

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every fd except keep[0..n): clone3 is no exec, so the init
 * would otherwise hold the shim's fds (the status pipe among them: the
 * agent would never see it end). */
static void close_others(int *keep, size_t n)
{
	qsort(keep, n, sizeof(int), cmp_int);
	unsigned from = 0;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < from)
			continue;
		if ((unsigned)keep[i] > from)
			syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
		from = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0);
}

static void __attribute__((noreturn))
init_main(const struct isolate_spec *s, char *const *argv, int in, int out, int err,
	  int rep, int stw, int joined)
{
	int keep[] = { in, out, err, rep, stw, joined };
	close_others(keep, sizeof(keep) / sizeof(keep[0]));
	setsid();
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die(rep, errno, "private mounts: %s", strerror(errno));
	if (mount(s->root, s->root, NULL, MS_BIND, NULL) < 0)
		die(rep, errno, "bind task dir %s: %s", s->root, strerror(errno));
	for (size_t i = 0; i < s->nr_ro; i++)
		bind_one(rep, s->root, s->ro[i], s->ro[i], false, 0);
	if (s->alloc_dir)
		bind_one(rep, s->root, s->alloc_dir, "/alloc", true, MS_NODEV);
	for (size_t i = 0; i < s->nr_volumes; i++)
		bind_volume(rep, s->root, &s->volumes[i]);
	build_dev(rep, s);
	char p[4096];
	join(p, sizeof(p), s->root, "/proc");
	if (mkdirs(p, 0555) < 0 || mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
					 NULL) < 0)
		die(rep, errno, "/proc: %s", strerror(errno));
	if (chdir(s->root) < 0)
		die(rep, errno, "chdir %s: %s", s->root, strerror(errno));
	/* pivot_root(".", "."): the old root ends up on top of the new one
	 * and is detached at once. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		die(rep, errno, "pivot_root %s: %s", s->root, strerror(errno));
	if (umount2(".", MNT_DETACH) < 0)
		die(rep, errno, "detaching the old root: %s", strerror(errno));
	if (chdir("/") < 0)
		die(rep, errno, "chdir /: %s", strerror(errno));
	if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
		die(rep, errno, "hostname: %s", strerror(errno));
	hand_over(s);
	/* The shim moves us into the cgroup while we set up (a v1 join waits
	 * for an RCU grace period per hierarchy; so do the mounts: they
	 * overlap).  Nothing of the task runs before it says done. */
	char j = 0;
	while (read(joined, &j, 1) < 0 && errno == EINTR)
		;
	if (j != 'j')
		die(rep, EIO, "the task shim could not move the task into its cgroup");
	close(joined);
	if (setgroups(0, NULL) < 0 || setgid(s->gid) < 0 || setuid(s->uid) < 0)
		die(rep, errno, "switching to uid %d gid %d: %s", (int)s->uid, (int)s->gid,
		    strerror(errno));

	/* Block the forwarded signals (and SIGCHLD) before the task exists,
	 * so none is lost; handlers make them deliverable to a PID 1. */
	sigset_t set, none;
	sigemptyset(&set);
	sigemptyset(&none);
	sigaddset(&set, SIGCHLD);
	struct sigaction sa = { .sa_handler = noop };
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		sigaddset(&set, forwarded[i]);
		sigaction(forwarded[i], &sa, NULL);
	}
	sigaction(SIGCHLD, &sa, NULL);
	sigprocmask(SIG_BLOCK, &set, NULL);

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all;
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, err, 2);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	pid_t task;
	int r = posix_spawnp(&task, argv[0], &fa, &attr, argv, environ);
	if (r != 0)
		die(rep, r, "exec %s: %s", argv[0], strerror(r));
	close(in);
	close(out);
	close(err);
	ssize_t w = write(rep, "ok", 2);
	(void)w;
	close(rep);

	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			kill(-task, sig);
			continue;
		}
		int status;
		pid_t p2;
		while ((p2 = waitpid(-1, &status, WNOHANG)) > 0) {
			if (p2 == task) {
				w = write(stw, &status, sizeof(status));
				_exit(0);
			}
		}
	}
}

int isolate_spawn(const struct isolate_spec *s, char *const *argv, int in, int out, int err,
		  pid_t *init_pid, int *status_fd, char *msg, size_t msglen)
{
	int rep[2] = { -1, -1 }, st[2] = { -1, -1 }, jp[2] = { -1, -1 };
	int procfds[ISOLATE_MAX_LIST];
	size_t nprocs = 0;
	int rc = 0;

	for (; nprocs < s->nr_procs; nprocs++) {
		procfds[nprocs] = open(s->procs[nprocs], O_WRONLY | O_CLOEXEC);
		if (procfds[nprocs] < 0) {
			rc = errno;
			snprintf(msg, msglen, "cgroup %s: %s", s->procs[nprocs], strerror(rc));
			goto out;
		}
	}
	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 || pipe2(jp, O_CLOEXEC) < 0) {
		rc = errno;
		snprintf(msg, msglen, "pipes: %s", strerror(rc));
		goto out;
	}
	struct clone_args ca = {
		.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS,
		.exit_signal = SIGCHLD,
	};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		rc = errno;
		snprintf(msg, msglen, "clone3 (new namespaces): %s", strerror(rc));
		goto out;
	}
	if (pid == 0) {
		close(rep[0]);
		close(st[0]);
		close(jp[1]);
		init_main(s, argv, in, out, err, rep[1], st[1], jp[0]);
	}
	close(rep[1]);
	rep[1] = -1;
	close(jp[0]);
	jp[0] = -1;
	/* Join the init to the task's cgroup while it builds its root. */
	char pidstr[24];
	int plen = snprintf(pidstr, sizeof(pidstr), "%ld", pid);
	bool joined = true;
	for (size_t i = 0; i < nprocs && joined; i++) {
		if (write(procfds[i], pidstr, (size_t)plen) != plen) {
			rc = errno;
			snprintf(msg, msglen, "joining cgroup %s: %s", s->procs[i], strerror(rc));
			joined = false;
		}
	}
	if (joined && write(jp[1], "j", 1) != 1)
		joined = false;
	close(jp[1]);
	jp[1] = -1;
	if (!joined) {
		/* The init sees EOF and gives up; reap it. */
		kill((pid_t)pid, SIGKILL);
		while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (!rc) {
			rc = EIO;
			snprintf(msg, msglen, "cannot release the task's init");
		}
		goto out;
	}
	close(st[1]);
	st[1] = -1;
	char buf[1024];
	size_t len = 0;
	for (;;) {
		ssize_t n = read(rep[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	if (len >= 2 && !strncmp(buf, "ok", 2)) {
		*init_pid = (pid_t)pid;
		*status_fd = st[0];
		st[0] = -1;
		goto out;
	}
	int code = 0, off = 0;
	if (sscanf(buf, "err %d %n", &code, &off) == 1 && code > 0 && off > 0) {
		rc = code;
		snprintf(msg, msglen, "%s", buf + off);
	} else {
		rc = EIO;
		snprintf(msg, msglen, "the task's init ended during setup");
	}
	while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	for (size_t i = 0; i < nprocs; i++)
		close(procfds[i]);
	for (int i = 0; i < 2; i++) {
		if (jp[i] >= 0)
			close(jp[i]);
		if (rep[i] >= 0)
			close(rep[i]);
		if (st[i] >= 0)
			close(st[i]);
	}
	return rc;
}
