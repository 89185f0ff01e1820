/* MPS control daemons, one per GPU in mps mode; see mps.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#include <dirent.h>

#include "agent/log.h"
#include "agent/mps.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

extern char **environ;

#define NS_PER_MS 1000000LL
#define LAUNCH_TIMEOUT_NS (10 * 1000 * NS_PER_MS)
#define QUIT_WAIT_NS (5 * 1000 * NS_PER_MS)
#define PIDFILE_WAIT_NS (2 * 1000 * NS_PER_MS)
#define STABLE_NS (60 * 1000 * NS_PER_MS)
#define PIDFILE "nvidia-cuda-mps-control.pid"

struct daemon {
	char *uuid;
	char *pipe_dir, *log_dir;
	pid_t pid;             /* 0: not running */
	int pidfd;             /* -1: none (kill(pid, 0) is used then) */
	unsigned starts;
	int64_t started_at;
	int64_t restart_at;    /* when not running: next try */
	int64_t backoff;
};

struct mps {
	char *control, *dir;
	int64_t poll_ns, backoff_min, backoff_max;
	struct daemon *d;
	size_t n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	bool sync_init;        /* lock and cond made */
	pthread_t thread;
	bool thread_started;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int mkdir_one(const char *path, mode_t mode)
{
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	return -errno;
}

/* The daemon's environment: the agent's, without what would point CUDA
 * elsewhere, plus the GPU and the daemon's directories. */
static char **daemon_env(const struct daemon *d)
{
	size_t n = 0, k = 0;
	while (environ[n])
		n++;
	char **env = xcalloc(n + 4, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) ||
		    !strncmp(environ[i], "CUDA_MPS_", 9))
			continue;
		env[k++] = xstrdup(environ[i]);
	}
	env[k++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", d->uuid);
	env[k++] = xasprintf("CUDA_MPS_PIPE_DIRECTORY=%s", d->pipe_dir);
	env[k++] = xasprintf("CUDA_MPS_LOG_DIRECTORY=%s", d->log_dir);
	env[k] = NULL;
	return env;
}

static void strv_release(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Runs the control program with arg (NULL: none), stdin from in_fd (-1:
 * /dev/null), output appended to <log>/herd-control.out; waits up to
 * LAUNCH_TIMEOUT_NS.  Returns its exit status (>= 0) or -errno. */
static int run_control(const struct mps *m, const struct daemon *d, const char *arg, int in_fd)
{
	posix_spawn_file_actions_t fa;
	char *out = xasprintf("%s/herd-control.out", d->log_dir);
	char *argv[] = { m->control, (char *)arg, NULL };
	char **env = daemon_env(d);
	pid_t pid;
	int rc, status;

	posix_spawn_file_actions_init(&fa);
	if (in_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	/* only 0-2: libraries' fds are not all close-on-exec (libcurl's) */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = posix_spawn(&pid, m->control, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	strv_release(env);
	free(out);
	if (rc)
		return -rc;
	/* -d forks the daemon and returns; quit returns once told. */
	int64_t end = now_ns() + LAUNCH_TIMEOUT_NS;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		sleep_ns(5 * NS_PER_MS);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The pid in <pipe>/nvidia-cuda-mps-control.pid, or 0. */
static pid_t read_pidfile(const struct daemon *d)
{
	char *path = xasprintf("%s/" PIDFILE, d->pipe_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[32] = "";
	ssize_t n = -1;
	free(path);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	long v = strtol(buf, &end, 10);
	return v > 1 && v < INT32_MAX && (*end == '\n' || *end == '\0') ? (pid_t)v : 0;
}

/* Is pid alive and running the control program (not a reused pid)? */
static bool is_control(const struct mps *m, pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	const char *base = strrchr(m->control, '/');
	return strstr(buf, base ? base + 1 : m->control) != NULL;
}

static bool alive(const struct daemon *d)
{
	if (!d->pid)
		return false;
	if (d->pidfd >= 0) {
		struct pollfd p = { d->pidfd, POLLIN, 0 };
		/* A pidfd polls readable once the process has exited. */
		return poll(&p, 1, 0) == 0;
	}
	return kill(d->pid, 0) == 0 || errno == EPERM;
}

static void watch(struct daemon *d, pid_t pid)
{
	d->pid = pid;
	d->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);  /* close-on-exec by the kernel */
	d->starts++;
	d->started_at = now_ns();
}

static void forget(struct daemon *d)
{
	if (d->pidfd >= 0)
		close(d->pidfd);
	d->pidfd = -1;
	d->pid = 0;
}

/* Starts d's daemon (or adopts a live one).  0 or -errno, logged. */
static int start_daemon(const struct mps *m, struct daemon *d)
{
	pid_t pid = read_pidfile(d);
	if (pid && is_control(m, pid)) {
		watch(d, pid);
		log_info("mps: GPU %s: adopted the running MPS control daemon (pid %d)", d->uuid,
			 (int)pid);
		return 0;
	}
	/* A stale pid file would be read back as the new daemon's. */
	char *path = xasprintf("%s/" PIDFILE, d->pipe_dir);
	unlink(path);
	free(path);
	int rc = run_control(m, d, "-d", -1);
	if (rc != 0) {
		if (rc > 0)
			log_warn("mps: GPU %s: %s -d exited with status %d (see %s/herd-control.out)",
				 d->uuid, m->control, rc, d->log_dir);
		else
			log_warn("mps: GPU %s: cannot run %s: %s", d->uuid, m->control, strerror(-rc));
		return rc > 0 ? -EIO : rc;
	}
	int64_t end = now_ns() + PIDFILE_WAIT_NS;
	while (!(pid = read_pidfile(d)) && now_ns() < end)
		sleep_ns(10 * NS_PER_MS);
	if (!pid) {
		log_warn("mps: GPU %s: the control daemon wrote no %s/" PIDFILE, d->uuid, d->pipe_dir);
		return -EIO;
	}
	watch(d, pid);
	log_info("mps: GPU %s: MPS control daemon started (pid %d, pipe %s)", d->uuid, (int)pid,
		 d->pipe_dir);
	return 0;
}

/* `echo quit | control` with d's environment; SIGTERM if still there. */
static void quit_daemon(const struct mps *m, struct daemon *d)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		log_warn("mps: GPU %s: pipe: %s", d->uuid, strerror(errno));
	} else {
		/* "quit\n" fits the pipe buffer: written before the child reads. */
		ssize_t w = write(fds[1], "quit\n", 5);
		close(fds[1]);
		int rc = w == 5 ? run_control(m, d, NULL, fds[0]) : -EIO;
		close(fds[0]);
		if (rc != 0)
			log_warn("mps: GPU %s: quit: %s", d->uuid,
				 rc > 0 ? "the control program failed" : strerror(-rc));
	}
	int64_t end = now_ns() + QUIT_WAIT_NS;
	while (alive(d) && now_ns() < end)
		sleep_ns(10 * NS_PER_MS);
	if (alive(d)) {
		log_warn("mps: GPU %s: daemon %d did not quit: SIGTERM", d->uuid, (int)d->pid);
		kill(d->pid, SIGTERM);
	} else if (d->pid) {
		log_info("mps: GPU %s: MPS control daemon stopped", d->uuid);
	}
	forget(d);
}

static void init_daemon(struct daemon *d, const char *dir, const char *uuid)
{
	memset(d, 0, sizeof(*d));
	d->uuid = xstrdup(uuid);
	d->pipe_dir = xasprintf("%s/%s/pipe", dir, uuid);
	d->log_dir = xasprintf("%s/%s/log", dir, uuid);
	d->pidfd = -1;
}

static void release_daemon(struct daemon *d)
{
	forget(d);
	free(d->uuid);
	free(d->pipe_dir);
	free(d->log_dir);
}

static int make_dirs(const struct daemon *d, const char *dir, struct herd_err *err)
{
	char *top = xasprintf("%s/%s", dir, d->uuid);
	int rc = mkdir_one(top, 0755);
	if (!rc)
		rc = mkdir_one(d->pipe_dir, 0755);
	if (!rc)
		rc = mkdir_one(d->log_dir, 0755);
	if (rc)
		herd_errf(err, rc, "mps: cannot make %s: %s", top, strerror(-rc));
	free(top);
	return rc;
}

/* Daemons under dir of GPUs that are not in mps mode any more: quit. */
static void quit_strays(const struct mps *m)
{
	DIR *dir = opendir(m->dir);
	struct dirent *de;
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		bool ours = false;
		if (de->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < m->n; i++)
			ours |= !strcmp(m->d[i].uuid, de->d_name);
		if (ours)
			continue;
		struct daemon stray;
		init_daemon(&stray, m->dir, de->d_name);
		pid_t pid = read_pidfile(&stray);
		if (pid && is_control(m, pid)) {
			log_info("mps: GPU %s is not in mps mode any more: stopping its daemon",
				 stray.uuid);
			watch(&stray, pid);
			quit_daemon(m, &stray);
		}
		release_daemon(&stray);
	}
	closedir(dir);
}

/* Each death or failed start doubles the wait before the next start. */
static void grow_backoff(const struct mps *m, struct daemon *d)
{
	d->backoff = d->backoff * 2 > m->backoff_max ? m->backoff_max : d->backoff * 2;
}

static void check_daemons(struct mps *m)
{
	int64_t t = now_ns();
	for (size_t i = 0; i < m->n; i++) {
		struct daemon *d = &m->d[i];
		if (d->pid) {
			if (alive(d)) {
				if (t - d->started_at > STABLE_NS)
					d->backoff = m->backoff_min;
				continue;
			}
			log_warn("mps: GPU %s: MPS control daemon (pid %d) exited; restarting in %lld ms",
				 d->uuid, (int)d->pid, (long long)(d->backoff / NS_PER_MS));
			forget(d);
			d->restart_at = t + d->backoff;
			grow_backoff(m, d);
		}
		if (t < d->restart_at)
			continue;
		if (start_daemon(m, d) < 0) {
			d->restart_at = now_ns() + d->backoff;
			log_info("mps: GPU %s: next try in %lld ms", d->uuid,
				 (long long)(d->backoff / NS_PER_MS));
			grow_backoff(m, d);
		}
	}
}

static void *watch_main(void *arg)
{
	struct mps *m = arg;
	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct timespec ts;
		check_daemons(m);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t at = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + m->poll_ns;
		ts.tv_sec = at / 1000000000LL;
		ts.tv_nsec = at % 1000000000LL;
		while (!m->stopping && pthread_cond_timedwait(&m->cond, &m->lock, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int mps_start(const struct mps_options *o, const char *const *uuids, size_t n,
	      struct mps **out, struct herd_err *err)
{
	if (!o->control || !*o->control || !o->dir || !*o->dir)
		return herd_errf(err, -EINVAL, "mps: the control program and a directory are required");
	int rc = mkdir_one(o->dir, 0755);
	if (rc)
		return herd_errf(err, rc, "mps: cannot make %s: %s", o->dir, strerror(-rc));

	struct mps *m = xcalloc(1, sizeof(*m));
	m->control = xstrdup(o->control);
	m->dir = xstrdup(o->dir);
	m->poll_ns = o->poll_ns > 0 ? o->poll_ns : 200 * NS_PER_MS;
	m->backoff_min = o->backoff_min_ns > 0 ? o->backoff_min_ns : 1000 * NS_PER_MS;
	m->backoff_max = o->backoff_max_ns > 0 ? o->backoff_max_ns : 30000 * NS_PER_MS;
	if (m->backoff_max < m->backoff_min)
		m->backoff_max = m->backoff_min;
	m->d = n ? xcalloc(n, sizeof(*m->d)) : NULL;
	for (size_t i = 0; i < n; i++) {
		init_daemon(&m->d[m->n], m->dir, uuids[i]);
		m->d[m->n].backoff = m->backoff_min;
		m->n++;
		if ((rc = make_dirs(&m->d[i], m->dir, err)) < 0) {
			mps_stop(m);
			return rc;
		}
		/* Unix sockets go in the pipe dir: sun_path holds 108 bytes. */
		if (strlen(m->d[i].pipe_dir) > 80)
			log_warn("mps: %s is long: MPS may fail to make its sockets there "
				 "(108 bytes at most); use a shorter data_dir", m->d[i].pipe_dir);
	}
	quit_strays(m);
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	m->sync_init = true;
	/* The first start happens here, so that a task placed right after
	 * registration finds its daemon. */
	pthread_mutex_lock(&m->lock);
	check_daemons(m);
	pthread_mutex_unlock(&m->lock);
	if (pthread_create(&m->thread, NULL, watch_main, m) == 0)
		m->thread_started = true;
	else
		log_warn("mps: cannot start the watcher thread: daemons that die stay down");
	*out = m;
	return 0;
}

static struct daemon *find(struct mps *m, const char *uuid)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->d[i].uuid, uuid))
			return &m->d[i];
	return NULL;
}

int mps_dirs(struct mps *m, const char *uuid, const char **pipe_dir, const char **log_dir)
{
	int rc = -ENOENT;
	if (!m)
		return rc;
	pthread_mutex_lock(&m->lock);
	struct daemon *d = find(m, uuid);
	if (d) {
		rc = alive(d) ? 0 : -EAGAIN;
		*pipe_dir = d->pipe_dir;
		*log_dir = d->log_dir;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

pid_t mps_daemon_pid(struct mps *m, const char *uuid)
{
	pthread_mutex_lock(&m->lock);
	struct daemon *d = find(m, uuid);
	pid_t pid = d && alive(d) ? d->pid : 0;
	pthread_mutex_unlock(&m->lock);
	return pid;
}

unsigned mps_starts(struct mps *m, const char *uuid)
{
	pthread_mutex_lock(&m->lock);
	struct daemon *d = find(m, uuid);
	unsigned n = d ? d->starts : 0;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void mps_stop(struct mps *m)
{
	if (!m)
		return;
	if (m->thread_started) {
		pthread_mutex_lock(&m->lock);
		m->stopping = true;
		pthread_cond_broadcast(&m->cond);
		pthread_mutex_unlock(&m->lock);
		pthread_join(m->thread, NULL);
	}
	for (size_t i = 0; i < m->n; i++) {
		if (m->d[i].pid)
			quit_daemon(m, &m->d[i]);
		release_daemon(&m->d[i]);
	}
	if (m->sync_init) {
		pthread_mutex_destroy(&m->lock);
		pthread_cond_destroy(&m->cond);
	}
	free(m->d);
	free(m->control);
	free(m->dir);
	free(m);
}
