/* A further command in a running task's context; see task_exec.h. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cpulist.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/cgroup.h"
#include "drivers/drivers-int.h"
#include "drivers/task_exec.h"

/* The most /proc/<pid>/environ we take: the kernel caps a process's
 * argument and environment strings far lower in practice (ARG_MAX). */
#define ENVIRON_MAX (4 << 20)

/* The task's starting environment, NUL-separated, into out. */
static int read_environ(pid_t pid, struct strbuf *out, struct herd_err *err)
{
	char path[64], buf[8192];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return herd_errf(err, errno == ENOENT ? -ESRCH : -errno, "%s: %s", path,
				 strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0 && out->len < ENVIRON_MAX)
		strbuf_add(out, buf, (size_t)n);
	close(fd);
	if (n < 0)
		return herd_errf(err, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

/* "K=V" pointers into text (NUL-separated), NULL-terminated; free the
 * array only. */
static char **split_environ(struct strbuf *text)
{
	char **v = NULL;
	size_t n = 0, alloc = 0;

	strbuf_addch(text, '\0');   /* a last entry without its NUL ends too */
	for (size_t i = 0; i + 1 < text->len; i += strlen(text->buf + i) + 1)
		if (text->buf[i]) {
			ALLOC_GROW(v, n + 1, alloc);
			v[n++] = text->buf + i;
		}
	ALLOC_GROW(v, n + 1, alloc);
	v[n] = NULL;
	return v;
}

static const char *env_get(char *const *env, const char *key)
{
	size_t k = strlen(key);
	for (; *env; env++)
		if (!strncmp(*env, key, k) && (*env)[k] == '=')
			return *env + k + 1;
	return NULL;
}

/* The program name runs as: itself when it has a '/' (relative to dir),
 * else the first executable file of that name in path ($PATH of the
 * task, not the agent's).  A new string, or NULL. */
static char *find_program(const char *name, const char *path, const char *dir)
{
	if (strchr(name, '/'))
		return name[0] == '/' ? xstrdup(name) : xasprintf("%s/%s", dir, name);
	for (const char *p = path; p && *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = len ? xasprintf("%.*s/%s", (int)len, p, name) : xstrdup(name);
		struct stat st;
		if (cand[0] == '/' && stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(cand, X_OK) == 0)
			return cand;
		free(cand);
		p = colon ? colon + 1 : NULL;
	}
	return NULL;
}

/* posix_spawn's settings shared by both drivers: the given fds as 0-2 (a
 * pty's slave reopened by path after setsid, so that it becomes the
 * controlling terminal), a session of its own, default signals. */
static int spawn_setup(const struct task_exec *x, posix_spawn_file_actions_t *fa,
		       posix_spawnattr_t *attr, struct herd_err *err)
{
	sigset_t none, all;

	posix_spawn_file_actions_init(fa);
	if (x->tty) {
		char name[256];
		int r = ttyname_r(x->fds[0], name, sizeof(name));
		if (r) {
			posix_spawn_file_actions_destroy(fa);
			return herd_errf(err, -r, "the exec's terminal: %s", strerror(r));
		}
		/* POSIX_SPAWN_SETSID runs before the file actions: a session
		 * leader opening a tty without O_NOCTTY acquires it. */
		posix_spawn_file_actions_addopen(fa, 0, name, O_RDWR, 0);
		posix_spawn_file_actions_adddup2(fa, 0, 1);
		posix_spawn_file_actions_adddup2(fa, 0, 2);
	} else {
		for (int i = 0; i < 3; i++)
			posix_spawn_file_actions_adddup2(fa, x->fds[i], i);
	}
	/* Nothing else of the agent's: every fd herd opens is close-on-exec,
	 * but libraries' are not all (libcurl 7.88's internal socket pair). */
	posix_spawn_file_actions_addclosefrom_np(fa, 3);
	posix_spawnattr_init(attr);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(attr, &none);
	posix_spawnattr_setsigdefault(attr, &all);
	posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	return 0;
}

/* raw_exec: the command on the host, as the agent's user (the task's),
 * in the task dir, with the task's environment. */
static int start_raw(pid_t task_pid, const struct task_exec *x, pid_t *pid,
		     struct herd_err *err)
{
	struct strbuf text = STRBUF_INIT;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char **env = NULL, *prog = NULL;
	int rc;

	if ((rc = read_environ(task_pid, &text, err)) < 0)
		goto out;
	env = split_environ(&text);
	prog = find_program(x->argv[0], env_get(env, "PATH") ?: "/usr/local/bin:/usr/bin:/bin",
			    x->task_dir);
	if (!prog) {
		rc = herd_errf(err, -ENOENT, "exec %s: not found in the task's PATH", x->argv[0]);
		goto out;
	}
	if ((rc = spawn_setup(x, &fa, &attr, err)) < 0)
		goto out;
	posix_spawn_file_actions_addchdir_np(&fa, x->task_dir);
	/* On the task's cores (a task with reserved cores, or a shared one
	 * kept off them): a child starts with its parent thread's mask, so
	 * this thread takes the task's for the spawn and its own back after. */
	struct cpulist task_mask = CPULIST_INIT, own = CPULIST_INIT;
	bool pinned = sched_getaffinity(task_pid, sizeof(task_mask.w),
					(cpu_set_t *)(void *)task_mask.w) == 0 &&
		      sched_getaffinity(0, sizeof(own.w), (cpu_set_t *)(void *)own.w) == 0 &&
		      !cpulist_equal(&task_mask, &own) &&
		      sched_setaffinity(0, cpulist_bytes(&task_mask),
					(cpu_set_t *)(void *)task_mask.w) == 0;
	rc = posix_spawn(pid, prog, &fa, &attr, (char *const *)x->argv, env);
	if (pinned)
		sched_setaffinity(0, cpulist_bytes(&own), (cpu_set_t *)(void *)own.w);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc)
		rc = herd_errf(err, -rc, "exec %s: %s", x->argv[0], strerror(rc));
out:
	free(prog);
	free(env);
	strbuf_release(&text);
	return rc;
}

/* The effective uid and gid of pid (/proc/<pid>/status): the exec
 * driver's init runs as the task's user. */
static int proc_ids(pid_t pid, uid_t *uid, gid_t *gid, struct herd_err *err)
{
	char path[64], line[256];
	unsigned long r, e;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return herd_errf(err, errno == ENOENT ? -ESRCH : -errno, "%s: %s", path,
				 strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			*uid = (uid_t)e;
			found |= 1;
		} else if (sscanf(line, "Gid: %lu %lu", &r, &e) == 2) {
			*gid = (gid_t)e;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : herd_errf(err, -EINVAL, "%s: no Uid/Gid", path);
}

static void add_arg(const char ***v, size_t *n, size_t *alloc, const char *s)
{
	ALLOC_GROW(*v, *n + 1, *alloc);
	(*v)[(*n)++] = s;
}

/* exec: the task shim's enter mode (shim.h) joins the task's cgroup,
 * namespaces and root and runs the command as the task's user. */
static int start_exec(const struct driver_env *env, const struct driver_state *st,
		      const struct task_exec *x, pid_t *pid, struct herd_err *err)
{
	struct cgroup_config cfg = { .root = env->cgroup_root, .parent = env->cgroup_parent };
	struct strbuf text = STRBUF_INIT;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct cgroup *cg = NULL;
	const char **argv = NULL;
	size_t n = 0, alloc = 0;
	char spid[16], suid[16], sgid[16];
	char **envp = NULL;
	uid_t uid = 0;
	gid_t gid = 0;
	int rc;

	if (!env->shim_argv || !env->shim_argv[0])
		return herd_errf(err, -ENOTSUP, "exec into exec tasks needs the task shim");
	if ((rc = proc_ids(st->task_pid, &uid, &gid, err)) < 0 ||
	    (rc = read_environ(st->task_pid, &text, err)) < 0)
		goto out;
	if (st->cgroup[0] && (rc = cgroup_open(&cfg, st->cgroup, &cg, err)) < 0)
		goto out;
	envp = split_environ(&text);
	snprintf(spid, sizeof(spid), "%d", (int)st->task_pid);
	snprintf(suid, sizeof(suid), "%u", (unsigned)uid);
	snprintf(sgid, sizeof(sgid), "%u", (unsigned)gid);
	for (const char *const *a = env->shim_argv; *a; a++)
		add_arg(&argv, &n, &alloc, *a);
	add_arg(&argv, &n, &alloc, "-enter");
	add_arg(&argv, &n, &alloc, "-pid");
	add_arg(&argv, &n, &alloc, spid);
	add_arg(&argv, &n, &alloc, "-uid");
	add_arg(&argv, &n, &alloc, suid);
	add_arg(&argv, &n, &alloc, "-gid");
	add_arg(&argv, &n, &alloc, sgid);
	for (const char *const *p = cg ? cgroup_procs_files(cg) : NULL; p && *p; p++) {
		add_arg(&argv, &n, &alloc, "-cgroup-procs");
		add_arg(&argv, &n, &alloc, *p);
	}
	if (x->tty)
		add_arg(&argv, &n, &alloc, "-tty");
	add_arg(&argv, &n, &alloc, "--");
	for (const char *const *a = x->argv; *a; a++)
		add_arg(&argv, &n, &alloc, *a);
	add_arg(&argv, &n, &alloc, NULL);
	/* the pty is passed as is: the enter mode's child makes it its
	 * controlling terminal inside the task (TIOCSCTTY) */
	struct task_exec plain = *x;
	plain.tty = false;
	if ((rc = spawn_setup(&plain, &fa, &attr, err)) < 0)
		goto out;
	rc = posix_spawn(pid, argv[0], &fa, &attr, (char *const *)argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc)
		rc = herd_errf(err, -rc, "exec %s: %s", argv[0], strerror(rc));
out:
	cgroup_free(cg);
	free(argv);
	free(envp);
	strbuf_release(&text);
	return rc;
}

int task_exec_start(const struct driver_env *env, const struct driver_state *st,
		    const struct task_exec *x, struct task_exec_proc *out, struct herd_err *err)
{
	bool isolated = !strcmp(st->driver, "exec");
	int fd, rc;

	if (!x->argv || !x->argv[0] || !x->argv[0][0])
		return herd_errf(err, -EINVAL, "no command to run");
	if (!strcmp(st->driver, "docker"))
		return herd_errf(err, -ENOTSUP, "exec is not supported for docker tasks yet "
				 "(docker exec into the container %.12s)", st->container_id);
	if (strcmp(st->driver, "raw_exec") && !isolated)
		return herd_errf(err, -ENOTSUP, "exec is not supported for %s tasks", st->driver);
	/* A pidfd of the task, checked against its start time, both pins the
	 * pid whose environ is read and tells the caller when the task ends. */
	fd = proc_pidfd_checked(st->task_pid, st->task_start_time);
	if (fd < 0)
		return herd_errf(err, -ESRCH, "the task is not running");
	rc = isolated ? start_exec(env, st, x, &out->pid, err)
		      : start_raw(st->task_pid, x, &out->pid, err);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	out->task_fd = fd;
	out->stop_signal = isolated ? SIGTERM : SIGKILL;
	return 0;
}
