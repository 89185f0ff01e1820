/* exec: an isolated task (docs/drivers.md): namespaces, its task dir as
 * root, a user, cgroup limits, only its own devices.  Started through the
 * same task shim as raw_exec, in its isolate mode (isolate.h); the cgroup
 * (cgroup.h) is made here, before the shim, and removed after the exit. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "drivers/cgroup.h"
#include "drivers/devfilter_bpf.h"
#include "drivers/drivers-int.h"
#include "drivers/isolate.h"

#define STOP_SIGKILL_WAIT_MS 10000

extern const struct driver_ops exec_ops;

static const char *const default_chroot_env[] = {
	"/bin", "/etc", "/lib", "/lib32", "/lib64", "/sbin", "/usr", NULL,
};

static struct cgroup_config cg_config(const struct driver_env *env)
{
	return (struct cgroup_config){ .root = env->cgroup_root, .parent = env->cgroup_parent };
}

static void exec_fingerprint(const struct driver_env *env, struct driver_fingerprint *out)
{
	memset(out, 0, sizeof(*out));
	if (geteuid() != 0) {
		snprintf(out->reason, sizeof(out->reason), "the exec driver needs root");
		return;
	}
	int version = cgroup_detect_version(env->cgroup_root);
	if (version == 0) {
		snprintf(out->reason, sizeof(out->reason), "no cgroup v1 or v2 hierarchy under %s",
			 env->cgroup_root ? env->cgroup_root : "/sys/fs/cgroup");
		return;
	}
	/* v2 confines devices with an eBPF program (cgroup_allow_devices):
	 * where the kernel or the agent's capabilities cannot load one, every
	 * start would fail, so the node does not offer the driver. */
	if (version == 2) {
		struct herd_err e = { 0 };
		int fd = devfilter_load(NULL, 0, &e);
		if (fd < 0) {
			snprintf(out->reason, sizeof(out->reason), "%s", e.msg);
			return;
		}
		close(fd);
	}
	out->detected = true;
	if (!env->shim_argv || !env->shim_argv[0] || access(env->shim_argv[0], X_OK) < 0) {
		snprintf(out->reason, sizeof(out->reason), "task shim %s is not executable",
			 env->shim_argv && env->shim_argv[0] ? env->shim_argv[0] : "(none)");
		return;
	}
	out->healthy = true;
}

/* Device paths must name nodes under /dev (they are bound at the same path
 * inside); no "..". */
static bool valid_device_path(const char *p)
{
	return p && !strncmp(p, "/dev/", 5) && !strstr(p, "/..") && !strstr(p, "//") &&
	       strlen(p) < 256;
}

static void add(const char ***v, size_t *n, size_t *alloc, const char *s)
{
	ALLOC_GROW(*v, *n + 1, *alloc);
	(*v)[(*n)++] = s;
}

static int exec_start(const struct driver_env *env, const struct driver_task *task,
		      struct driver_handle **out, struct herd_err *err)
{
	char cgname[DRIVER_CGROUP_MAX], uid[16], gid[16];
	const char **extra = NULL;
	size_t n = 0, alloc = 0, ndev = 0, nro = 0;
	struct cgroup *cg = NULL;
	int rc;

	if (geteuid() != 0)
		return herd_errf(err, -EPERM, "the exec driver needs root (namespaces, mounts, "
				 "cgroups); use raw_exec or run the agent as root");
	if (!driver_valid_task_name(task->name) || !task->task_dir || task->task_dir[0] != '/')
		return herd_errf(err, -EINVAL, "task %s: needs a valid name and an absolute task_dir",
				 task->name ? task->name : "");
	if (task->alloc_dir && task->alloc_dir[0] != '/')
		return herd_errf(err, -EINVAL, "task %s: alloc_dir must be absolute", task->name);

	const char *user = task->user && *task->user ? task->user : "nobody";
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];
	int r = getpwnam_r(user, &pw, pwbuf, sizeof(pwbuf), &pwp);
	if (r != 0 || !pwp)
		return herd_errf(err, r ? -r : -ENOENT, "task %s: user '%s' not found on this node",
				 task->name, user);
	snprintf(uid, sizeof(uid), "%u", (unsigned)pw.pw_uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)pw.pw_gid);

	for (size_t i = 0; task->devices && task->devices[i]; i++, ndev++)
		if (!valid_device_path(task->devices[i]) || ndev >= ISOLATE_MAX_LIST)
			return herd_errf(err, -EINVAL, "task %s: device '%s': expected a /dev path "
					 "(at most %d devices)", task->name, task->devices[i],
					 ISOLATE_MAX_LIST);
	if (task->nvolumes > ISOLATE_MAX_LIST)
		return herd_errf(err, -EINVAL, "task %s: at most %d host volumes", task->name,
				 ISOLATE_MAX_LIST);
	for (size_t i = 0; i < task->nvolumes; i++) {
		const struct driver_volume *v = &task->volumes[i];
		if (!v->host_path || v->host_path[0] != '/' || !v->destination ||
		    v->destination[0] != '/' || strstr(v->destination, ".."))
			return herd_errf(err, -EINVAL, "task %s: host volume %s: needs an absolute "
					 "host path and an absolute destination without \"..\"",
					 task->name, v->name ? v->name : "");
	}
	const char *const *ro = env->chroot_env ? env->chroot_env : default_chroot_env;
	for (; ro[nro]; nro++)
		if (ro[nro][0] != '/' || strstr(ro[nro], "..") || nro >= ISOLATE_MAX_LIST)
			return herd_errf(err, -EINVAL, "chroot_env '%s': expected an absolute path "
					 "(at most %d)", ro[nro], ISOLATE_MAX_LIST);

	if (task->cgroup_name) {
		snprintf(cgname, sizeof(cgname), "%s", task->cgroup_name);
	} else if (task->alloc_id) {
		snprintf(cgname, sizeof(cgname), "%s.%s", task->alloc_id, task->name);
	} else {
		/* <alloc_dir>/<alloc id>/<task>: the alloc id is the parent. */
		char *dir = xstrdup(task->task_dir);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			slash = strrchr(dir, '/');
		}
		snprintf(cgname, sizeof(cgname), "%s.%s", slash ? slash + 1 : dir, task->name);
		free(dir);
	}
	struct cgroup_config cfg = cg_config(env);
	struct cgroup_limits lim = {
		.memory_bytes = task->memory_mb * 1024 * 1024,
		.memory_max_bytes = task->memory_max_mb * 1024 * 1024,
		.cpu_mhz = task->cpu_mhz,
		.pids_max = task->pids_max,
		.cpuset_cpus = task->cpuset_cpus,
		.cpuset_mems = task->cpuset_mems,
	};
	if ((rc = cgroup_create(&cfg, cgname, &lim, &cg, err)) < 0)
		return herd_err_prefix(err, "task %s", task->name);
	if ((rc = cgroup_allow_devices(cg, task->devices, ndev, err)) < 0) {
		herd_err_prefix(err, "task %s", task->name);
		goto fail;
	}

	add(&extra, &n, &alloc, "-root");
	add(&extra, &n, &alloc, task->task_dir);
	if (task->alloc_dir) {
		add(&extra, &n, &alloc, "-alloc-dir");
		add(&extra, &n, &alloc, task->alloc_dir);
	}
	add(&extra, &n, &alloc, "-uid");
	add(&extra, &n, &alloc, uid);
	add(&extra, &n, &alloc, "-gid");
	add(&extra, &n, &alloc, gid);
	for (size_t i = 0; i < nro; i++) {
		add(&extra, &n, &alloc, "-ro");
		add(&extra, &n, &alloc, ro[i]);
	}
	for (size_t i = 0; i < ndev; i++) {
		add(&extra, &n, &alloc, "-dev");
		add(&extra, &n, &alloc, task->devices[i]);
	}
	for (size_t i = 0; i < task->nvolumes; i++) {
		add(&extra, &n, &alloc, "-vol");
		add(&extra, &n, &alloc, task->volumes[i].host_path);
		add(&extra, &n, &alloc, "-vol-at");
		add(&extra, &n, &alloc, task->volumes[i].destination);
		add(&extra, &n, &alloc, "-vol-mode");
		add(&extra, &n, &alloc, task->volumes[i].read_only ? "ro" : "rw");
	}
	for (const char *const *p = cgroup_procs_files(cg); *p; p++) {
		add(&extra, &n, &alloc, "-cgroup-procs");
		add(&extra, &n, &alloc, *p);
	}
	add(&extra, &n, &alloc, NULL);

	struct driver_handle *h = NULL;
	rc = shim_launch(&exec_ops, env, task, extra, &h, err);
	if (rc < 0)
		goto fail;
	h->cg = cg;
	snprintf(h->state.cgroup, sizeof(h->state.cgroup), "%s", cgname);
	free(extra);
	*out = h;
	return 0;
fail:
	cgroup_kill(cg, 1000, NULL);
	cgroup_remove(cg, NULL);
	cgroup_free(cg);
	free(extra);
	return rc;
}

/* Once the task has ended: OOM kills, leftovers killed, group removed. */
static void cleanup(struct driver_handle *h)
{
	if (h->cleaned || !h->cg)
		return;
	struct cgroup_stats st;
	if (cgroup_stats(h->cg, &st) == 0 && st.oom_kills > 0)
		h->exit.oom_killed = true;
	if (cgroup_kill(h->cg, STOP_SIGKILL_WAIT_MS, NULL) == 0)
		cgroup_remove(h->cg, NULL);
	h->cleaned = true;
}

static int exec_wait(struct driver_handle *h, int timeout_ms, struct driver_exit *exit,
		     struct herd_err *err)
{
	int rc = shim_wait(h, timeout_ms, exit, err);
	if (rc == 1 && !h->cleaned) {
		cleanup(h);
		*exit = h->exit;
	}
	return rc;
}

/* The whole tree, whatever sessions it made. */
static void exec_kill_tree(struct driver_handle *h)
{
	if (h->cg)
		cgroup_kill(h->cg, STOP_SIGKILL_WAIT_MS, NULL);
}

/* A signal for the task goes to its init, which passes on only some
 * (isolate.h); any other would be dropped without a word, so it is
 * refused instead.  SIGKILL ends the init and with it the namespace. */
static int exec_signal(struct driver_handle *h, int sig)
{
	if (sig != SIGKILL && !isolate_forwards(sig))
		return -ENOTSUP;
	return shim_signal(h, sig);
}

static int exec_stop(struct driver_handle *h, int kill_signal, int64_t kill_timeout_ns,
		     struct driver_exit *exit, struct herd_err *err)
{
	/* signals go to the init, which passes them to the task's process group */
	static const struct driver_stop_steps steps = { shim_signal, exec_wait, exec_kill_tree };
	if (!h->done) {
		char what[48];
		snprintf(what, sizeof(what), "task pid %d", (int)h->state.task_pid);
		int rc = driver_stop_escalate(h, &steps, kill_signal, kill_timeout_ns, what, exit, err);
		if (rc < 0)
			return rc;
	}
	cleanup(h);
	*exit = h->exit;
	return 0;
}

static void exec_destroy(struct driver_handle *h)
{
	if (!h)
		return;
	cgroup_free(h->cg);
	h->cg = NULL;
	shim_handle_free(h);
}

static int exec_recover(const struct driver_env *env, const struct driver_state *state,
			struct driver_handle **out, struct herd_err *err)
{
	struct driver_handle *h = NULL;
	int rc = shim_recover(&exec_ops, state, &h, err);
	if (!h)
		return rc;
	struct cgroup_config cfg = cg_config(env);
	/* The group may be gone already (removed after the exit); then
	 * there is nothing to clean up. */
	if (state->cgroup[0])
		cgroup_open(&cfg, state->cgroup, &h->cg, NULL);
	if (h->done)
		cleanup(h);
	*out = h;
	return rc;
}

/* The hard memory limit of the group (v2 memory.max, v1
 * memory.limit_in_bytes), -1 when none ("max", or v1's near-2^63 value). */
static int64_t cgroup_memory_limit(const struct cgroup *cg)
{
	char path[DRIVER_PATH_MAX + 32], buf[64];
	FILE *f;
	long long v;

	snprintf(path, sizeof(path), "%s/%s", cgroup_path(cg),
		 cgroup_version(cg) == 2 ? "memory.max" : "memory.limit_in_bytes");
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld", &v) != 1 || v <= 0 ||
	    v >= (1LL << 62))
		v = -1;
	fclose(f);
	return v;
}

/* The task's cgroup: memory.current / usage_in_bytes (page cache
 * included), peak where the kernel keeps it, the hard limit, CPU usage. */
static int exec_stats(const struct driver_env *env, const struct driver_state *state,
		      struct driver_stats *out, struct herd_err *err)
{
	struct cgroup_config cfg = cg_config(env);
	struct cgroup_stats st;
	struct cgroup *cg = NULL;
	pid_t *pids = NULL;
	size_t n = 0;
	int rc;

	if (!state->cgroup[0])
		return herd_errf(err, -EINVAL, "task state: no cgroup");
	rc = cgroup_open(&cfg, state->cgroup, &cg, err);
	if (rc == -ENOENT)
		return herd_errf(err, -ESRCH, "cgroup %s is gone: the task has ended", state->cgroup);
	if (rc < 0)
		return rc;
	/* An empty group: the task ended, its cgroup not yet removed. */
	rc = cgroup_pids(cg, &pids, &n);
	free(pids);
	if (rc == 0 && n == 0)
		rc = herd_errf(err, -ESRCH, "cgroup %s is empty: the task has ended", state->cgroup);
	else if ((rc = cgroup_stats(cg, &st)) < 0)
		rc = herd_errf(err, rc, "cgroup %s: %s", state->cgroup, strerror(-rc));
	if (rc == 0)
		*out = (struct driver_stats){
			.memory_bytes = st.memory_current,
			.memory_peak_bytes = st.memory_peak,
			.memory_limit_bytes = cgroup_memory_limit(cg),
			.cpu_total_ns = st.cpu_usage_ns,
			.cpu_percent = -1,
			.sampled_at_ns = driver_realtime_ns(),
		};
	cgroup_free(cg);
	return rc;
}

/* Its cgroup's cpuset; without a cpuset controller, the affinity of the
 * processes in its cgroup. */
static int exec_set_cores(const struct driver_env *env, const struct driver_state *state,
			  const char *cpus, struct herd_err *err)
{
	struct cgroup_config cfg = cg_config(env);
	struct cgroup *cg = NULL;
	pid_t *pids = NULL;
	size_t n = 0;
	int rc;

	if (!state->cgroup[0])
		return herd_errf(err, -EINVAL, "task state: no cgroup");
	rc = cgroup_open(&cfg, state->cgroup, &cg, err);
	if (rc == -ENOENT)
		return herd_errf(err, -ESRCH, "cgroup %s is gone: the task has ended", state->cgroup);
	if (rc < 0)
		return rc;
	if (cgroup_has_cpuset(cg)) {
		rc = cgroup_set_cpuset(cg, cpus, NULL, err);
	} else if ((rc = cgroup_pids(cg, &pids, &n)) == 0) {
		rc = n ? proc_pids_set_affinity(pids, n, cpus) : -ESRCH;
		if (rc < 0)
			herd_errf(err, rc, "cgroup %s: cores %s: %s", state->cgroup,
				  cpus ? cpus : "(all)", strerror(-rc));
		else
			rc = 0;
	}
	free(pids);
	cgroup_free(cg);
	return rc;
}

/* The processes of the task's cgroup (what its stats count), or of its
 * lineage where it has none (the cgroup could not be made). */
static bool exec_owns(const struct driver_state *state, const struct driver_proc *p)
{
	if (state->cgroup[0])
		return driver_proc_in_cgroup(p, state->cgroup, false);
	return proc_is_or_descends(p, state->task_pid);
}

const struct driver_ops exec_ops = {
	.name = "exec",
	.fingerprint = exec_fingerprint,
	.start = exec_start,
	.wait = exec_wait,
	.signal = exec_signal,
	.stop = exec_stop,
	.destroy = exec_destroy,
	.recover = exec_recover,
	.stats = exec_stats,
	.set_cores = exec_set_cores,
	.owns = exec_owns,
};
