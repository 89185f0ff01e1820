/* Per-task control groups on cgroup v1 and v2; see cgroup.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/cgroup.h"
#include "drivers/devfilter_bpf.h"

enum { C_MEMORY, C_CPU, C_CPUACCT, C_PIDS, C_DEVICES, C_FREEZER, C_CPUSET };
static const char *const v1_names[CGROUP_V1_CONTROLLERS] = {
	"memory", "cpu", "cpuacct", "pids", "devices", "freezer", "cpuset",
};

struct cgroup {
	int version;
	char *path;                               /* v2 group dir */
	char *v1[CGROUP_V1_CONTROLLERS];          /* v1 group dirs; NULL: not mounted */
	const char *procs[CGROUP_V1_CONTROLLERS + 1];
	char *procs_buf[CGROUP_V1_CONTROLLERS];
};

static bool valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > 200 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

static bool exists(const char *dir, const char *file)
{
	char *p = xasprintf("%s/%s", dir, file);
	bool ok = access(p, F_OK) == 0;
	free(p);
	return ok;
}

/* Writes value into dir/file (which must exist: cgroupfs files are never
 * created).  Returns 0 or -errno. */
static int write_file(const char *dir, const char *file, const char *value)
{
	char *p = xasprintf("%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return -errno;
	size_t len = strlen(value);
	ssize_t n = write(fd, value, len);
	int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return rc;
}

/* Reads dir/file (at most 64 KiB) into sb.  Returns 0 or -errno. */
static int read_file(const char *dir, const char *file, struct strbuf *sb)
{
	char *p = xasprintf("%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return -errno;
	strbuf_reset(sb);
	char buf[4096];
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0 || sb->len > 65536)
			break;
		strbuf_add(sb, buf, (size_t)n);
	}
	close(fd);
	return rc;
}

static int64_t read_int(const char *dir, const char *file)
{
	struct strbuf sb = STRBUF_INIT;
	int64_t v = -1;
	if (dir && read_file(dir, file, &sb) == 0) {
		char *end;
		errno = 0;
		long long x = strtoll(sb.buf, &end, 10);
		if (end != sb.buf && !errno)
			v = x;
	}
	strbuf_release(&sb);
	return v;
}

/* The value of "key N" in a flat keyed file (memory.events, cpu.stat,
 * memory.oom_control), or -1. */
static int64_t read_keyed(const char *dir, const char *file, const char *key)
{
	struct strbuf sb = STRBUF_INIT;
	int64_t v = -1;
	size_t klen = strlen(key);
	if (dir && read_file(dir, file, &sb) == 0) {
		for (char *line = sb.buf; line && *line; ) {
			char *nl = strchr(line, '\n');
			if (!strncmp(line, key, klen) && line[klen] == ' ') {
				v = strtoll(line + klen + 1, NULL, 10);
				break;
			}
			line = nl ? nl + 1 : NULL;
		}
	}
	strbuf_release(&sb);
	return v;
}

int cgroup_detect_version(const char *root)
{
	if (!root)
		root = "/sys/fs/cgroup";
	struct strbuf sb = STRBUF_INIT;
	int v = 0;
	if (read_file(root, "cgroup.controllers", &sb) == 0 && strspn(sb.buf, " \n") < sb.len)
		v = 2;
	else if (exists(root, "memory/cgroup.procs"))
		v = 1;
	strbuf_release(&sb);
	return v;
}

static int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1; ; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return rc;
}

static struct cgroup *cgroup_alloc(const struct cgroup_config *cfg, const char *name,
				   struct herd_err *err, int *rc)
{
	const char *root = cfg && cfg->root ? cfg->root : "/sys/fs/cgroup";
	int version = cfg && cfg->version ? cfg->version : cgroup_detect_version(root);
	if (!valid_name(name)) {
		*rc = herd_errf(err, -EINVAL, "cgroup name '%s': expected [A-Za-z0-9_.-]",
				name ? name : "");
		return NULL;
	}
	const char *parent = cfg && cfg->parent ? cfg->parent
			   : version == 2 ? "herd.slice" : "herd";
	if (!*parent || strstr(parent, "..") || parent[0] == '/') {
		*rc = herd_errf(err, -EINVAL, "cgroup parent '%s': expected a relative path",
				parent);
		return NULL;
	}
	if (version != 1 && version != 2) {
		*rc = herd_errf(err, -ENOTSUP, "no cgroup v1 or v2 hierarchy under %s", root);
		return NULL;
	}
	struct cgroup *cg = xcalloc(1, sizeof(*cg));
	cg->version = version;
	size_t np = 0;
	if (version == 2) {
		cg->path = xasprintf("%s/%s/%s", root, parent, name);
		cg->procs_buf[0] = xasprintf("%s/cgroup.procs", cg->path);
		cg->procs[np++] = cg->procs_buf[0];
	} else {
		for (int i = 0; i < CGROUP_V1_CONTROLLERS; i++) {
			char *mnt = xasprintf("%s/%s", root, v1_names[i]);
			if (exists(mnt, "cgroup.procs")) {
				cg->v1[i] = xasprintf("%s/%s/%s", mnt, parent, name);
				cg->procs_buf[i] = xasprintf("%s/cgroup.procs", cg->v1[i]);
				cg->procs[np++] = cg->procs_buf[i];
			}
			free(mnt);
		}
		if (!cg->v1[C_MEMORY]) {
			cgroup_free(cg);
			*rc = herd_errf(err, -ENOTSUP, "cgroup v1 under %s has no memory hierarchy",
					root);
			return NULL;
		}
		cg->path = xstrdup(cg->v1[C_MEMORY]);
	}
	cg->procs[np] = NULL;
	*rc = 0;
	return cg;
}

void cgroup_free(struct cgroup *cg)
{
	if (!cg)
		return;
	free(cg->path);
	for (int i = 0; i < CGROUP_V1_CONTROLLERS; i++) {
		free(cg->v1[i]);
		free(cg->procs_buf[i]);
	}
	free(cg);
}

int cgroup_version(const struct cgroup *cg) { return cg->version; }
const char *cgroup_path(const struct cgroup *cg) { return cg->path; }
const char *const *cgroup_procs_files(const struct cgroup *cg) { return cg->procs; }

/* v2: lets children of dir use the controllers dir itself has. */
static void v2_enable_controllers(const char *dir)
{
	static const char *const want[] = { "cpuset", "memory", "cpu", "pids" };
	struct strbuf sb = STRBUF_INIT;
	if (read_file(dir, "cgroup.controllers", &sb) == 0) {
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			/* Whole-word match: "cpu" must not match "cpuset". */
			size_t l = strlen(want[i]);
			for (const char *p = sb.buf; (p = strstr(p, want[i])); p += l) {
				bool start = p == sb.buf || p[-1] == ' ';
				bool end = p[l] == '\0' || p[l] == ' ' || p[l] == '\n';
				if (start && end) {
					char *v = xasprintf("+%s", want[i]);
					write_file(dir, "cgroup.subtree_control", v);
					free(v);
					break;
				}
			}
		}
	}
	strbuf_release(&sb);
}

/* Writes a limit; a missing file means the controller is not available. */
static int set_limit(const char *dir, const char *file, const char *value, bool required,
		     struct herd_err *err)
{
	if (!dir) {
		if (!required)
			return 0;
		return herd_errf(err, -ENOTSUP, "cgroup: %s: controller not mounted", file);
	}
	int rc = write_file(dir, file, value);
	if (rc == -ENOENT && !required)
		return 0;
	if (rc < 0)
		return herd_errf(err, rc, "cgroup %s/%s = %s: %s", dir, file, value,
				 rc == -ENOENT ? "controller not enabled" : strerror(-rc));
	return 0;
}

/* v1: a cpuset group's cpus and mems start empty, and nothing can join
 * it until both are set.  Gives dir (and, first, each of its ancestors up
 * to the hierarchy's mount mnt) its parent's values where it has none. */
static int v1_cpuset_fill(const char *mnt, const char *dir, struct herd_err *err)
{
	static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
	struct strbuf cur = STRBUF_INIT, up = STRBUF_INIT;
	int rc = 0;
	if (strlen(dir) <= strlen(mnt))
		return 0;
	char *parent = xstrdup(dir);
	*strrchr(parent, '/') = '\0';
	if ((rc = v1_cpuset_fill(mnt, parent, err)) < 0)
		goto out;
	for (size_t i = 0; i < 2; i++) {
		if (read_file(dir, files[i], &cur) == 0 && strspn(cur.buf, " \n") < cur.len)
			continue;
		if ((rc = read_file(parent, files[i], &up)) < 0 ||
		    (rc = write_file(dir, files[i], up.len ? up.buf : "\n")) < 0) {
			rc = herd_errf(err, rc, "cgroup %s/%s: %s", dir, files[i], strerror(-rc));
			goto out;
		}
	}
out:
	free(parent);
	strbuf_release(&cur);
	strbuf_release(&up);
	return rc;
}

bool cgroup_has_cpuset(const struct cgroup *cg)
{
	return cg->version == 2 ? exists(cg->path, "cpuset.cpus") : cg->v1[C_CPUSET] != NULL;
}

int cgroup_set_cpuset(const struct cgroup *cg, const char *cpus, const char *mems,
		      struct herd_err *err)
{
	const char *d = cg->version == 2 ? cg->path : cg->v1[C_CPUSET];
	struct strbuf up = STRBUF_INIT;
	int rc = 0;

	if (!d || !cgroup_has_cpuset(cg))
		return 0;
	char *parent = xstrdup(d);
	*strrchr(parent, '/') = '\0';
	/* cpus first: on v1 the new mems are checked against nothing, but
	 * an empty cpus keeps the group unjoinable */
	for (int i = 0; i < 2 && rc == 0; i++) {
		const char *file = i == 0 ? "cpuset.cpus" : "cpuset.mems";
		const char *v = i == 0 ? cpus : mems;
		if (!v) {
			/* v2: an empty file inherits the parent's; v1 has no
			 * inheritance: copy it */
			if (cg->version == 2)
				v = "\n";
			else if ((rc = read_file(parent, file, &up)) == 0)
				v = up.len ? up.buf : "\n";
			else
				break;
		}
		rc = write_file(d, file, v);
	}
	if (rc < 0)
		herd_errf(err, rc, "cgroup %s: setting cores %s, memory nodes %s: %s", d,
			  cpus ? cpus : "(the parent's)", mems ? mems : "(the parent's)",
			  strerror(-rc));
	free(parent);
	strbuf_release(&up);
	return rc;
}

static int apply_limits(struct cgroup *cg, const struct cgroup_limits *lim, struct herd_err *err)
{
	char v[32];
	int rc = 0;
	int64_t hard = lim->memory_max_bytes > lim->memory_bytes ? lim->memory_max_bytes
								   : lim->memory_bytes;
	bool reservation = lim->memory_max_bytes > lim->memory_bytes && lim->memory_bytes > 0;
	/* cpu.shares from MHz, with the kernel's minimum of 2. */
	int64_t shares = lim->cpu_mhz < 2 ? 2 : lim->cpu_mhz > 262144 ? 262144 : lim->cpu_mhz;

	if ((rc = cgroup_set_cpuset(cg, lim->cpuset_cpus, lim->cpuset_mems, err)) < 0)
		return rc;
	if (cg->version == 2) {
		const char *d = cg->path;
		if (hard > 0) {
			snprintf(v, sizeof(v), "%" PRId64, hard);
			if ((rc = set_limit(d, "memory.max", v, true, err)) < 0)
				return rc;
			if ((rc = set_limit(d, "memory.swap.max", "0", false, err)) < 0)
				return rc;
		}
		if (reservation) {
			snprintf(v, sizeof(v), "%" PRId64, lim->memory_bytes);
			if ((rc = set_limit(d, "memory.low", v, true, err)) < 0)
				return rc;
		}
		if (lim->cpu_mhz > 0) {
			int64_t w = 1 + ((shares - 2) * 9999) / 262142;
			snprintf(v, sizeof(v), "%" PRId64, w < 1 ? 1 : w > 10000 ? 10000 : w);
			if ((rc = set_limit(d, "cpu.weight", v, true, err)) < 0)
				return rc;
		}
		if (lim->pids_max > 0) {
			snprintf(v, sizeof(v), "%" PRId64, lim->pids_max);
			if ((rc = set_limit(d, "pids.max", v, true, err)) < 0)
				return rc;
		}
		return 0;
	}
	if (hard > 0) {
		snprintf(v, sizeof(v), "%" PRId64, hard);
		if ((rc = set_limit(cg->v1[C_MEMORY], "memory.limit_in_bytes", v, true, err)) < 0)
			return rc;
		/* memsw exists only with swap accounting; it must be >= the
		 * limit, which it is when equal. */
		if ((rc = set_limit(cg->v1[C_MEMORY], "memory.memsw.limit_in_bytes", v, false,
				    err)) < 0)
			return rc;
	}
	if (reservation) {
		snprintf(v, sizeof(v), "%" PRId64, lim->memory_bytes);
		if ((rc = set_limit(cg->v1[C_MEMORY], "memory.soft_limit_in_bytes", v, true,
				    err)) < 0)
			return rc;
	}
	if (lim->cpu_mhz > 0) {
		snprintf(v, sizeof(v), "%" PRId64, shares);
		if ((rc = set_limit(cg->v1[C_CPU], "cpu.shares", v, true, err)) < 0)
			return rc;
	}
	if (lim->pids_max > 0) {
		snprintf(v, sizeof(v), "%" PRId64, lim->pids_max);
		if ((rc = set_limit(cg->v1[C_PIDS], "pids.max", v, true, err)) < 0)
			return rc;
	}
	return 0;
}

int cgroup_create(const struct cgroup_config *cfg, const char *name,
		  const struct cgroup_limits *lim, struct cgroup **out, struct herd_err *err)
{
	int rc;
	struct cgroup *cg = cgroup_alloc(cfg, name, err, &rc);
	if (!cg)
		return rc;
	if (cg->version == 2) {
		char *parent = xstrdup(cg->path);
		*strrchr(parent, '/') = '\0';
		rc = mkdir_p(parent);
		if (rc == 0) {
			/* The root's children, then the parent's, get the
			 * controllers (a no-op where already enabled). */
			const char *root = cfg && cfg->root ? cfg->root : "/sys/fs/cgroup";
			v2_enable_controllers(root);
			v2_enable_controllers(parent);
		}
		free(parent);
		if (rc == 0 && mkdir(cg->path, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		if (rc < 0) {
			herd_errf(err, rc, "cgroup %s: %s", cg->path, strerror(-rc));
			cgroup_free(cg);
			return rc;
		}
	} else {
		for (int i = 0; i < CGROUP_V1_CONTROLLERS; i++) {
			if (!cg->v1[i])
				continue;
			rc = mkdir_p(cg->v1[i]);
			if (rc < 0) {
				herd_errf(err, rc, "cgroup %s: %s", cg->v1[i], strerror(-rc));
				cgroup_remove(cg, NULL);
				cgroup_free(cg);
				return rc;
			}
		}
		/* joinable: every level gets cpus and mems */
		if (cg->v1[C_CPUSET]) {
			const char *root = cfg && cfg->root ? cfg->root : "/sys/fs/cgroup";
			char *mnt = xasprintf("%s/cpuset", root);
			rc = v1_cpuset_fill(mnt, cg->v1[C_CPUSET], err);
			free(mnt);
			if (rc < 0) {
				cgroup_remove(cg, NULL);
				cgroup_free(cg);
				return rc;
			}
		}
	}
	static const struct cgroup_limits none;
	if ((rc = apply_limits(cg, lim ? lim : &none, err)) < 0) {
		cgroup_remove(cg, NULL);
		cgroup_free(cg);
		return rc;
	}
	*out = cg;
	return 0;
}

int cgroup_open(const struct cgroup_config *cfg, const char *name, struct cgroup **out,
		struct herd_err *err)
{
	int rc;
	struct cgroup *cg = cgroup_alloc(cfg, name, err, &rc);
	if (!cg)
		return rc;
	if (access(cg->path, F_OK) < 0) {
		rc = herd_errf(err, -errno, "cgroup %s: %s", cg->path, strerror(errno));
		cgroup_free(cg);
		return rc;
	}
	/* v1: a hierarchy the group was not made in (a task started by an
	 * agent before herd used that controller: cpuset) is left out, so
	 * that joining the group (alloc exec) does not fail on it */
	if (cg->version == 1) {
		size_t np = 0;
		for (int i = 0; i < CGROUP_V1_CONTROLLERS; i++) {
			if (cg->v1[i] && access(cg->v1[i], F_OK) < 0) {
				free(cg->v1[i]);
				free(cg->procs_buf[i]);
				cg->v1[i] = cg->procs_buf[i] = NULL;
			}
			if (cg->procs_buf[i])
				cg->procs[np++] = cg->procs_buf[i];
		}
		cg->procs[np] = NULL;
	}
	*out = cg;
	return 0;
}

int cgroup_add_pid(const struct cgroup *cg, pid_t pid, struct herd_err *err)
{
	char v[24];
	snprintf(v, sizeof(v), "%d", (int)pid);
	for (size_t i = 0; cg->procs[i]; i++) {
		char *dir = xstrdup(cg->procs[i]);
		*strrchr(dir, '/') = '\0';
		int rc = write_file(dir, "cgroup.procs", v);
		free(dir);
		if (rc < 0)
			return herd_errf(err, rc, "cgroup: adding pid %d to %s: %s", (int)pid,
					 cg->procs[i], strerror(-rc));
	}
	return 0;
}

/* The devices every task may use, on both versions: null zero full random
 * urandom, tty and ptmx, and the pty slaves (136:*), as the OCI runtimes
 * allow them. */
static const struct devfilter_rule standard_devices[] = {
	{ 'c', 1, 3, DEVFILTER_RWM }, { 'c', 1, 5, DEVFILTER_RWM }, { 'c', 1, 7, DEVFILTER_RWM },
	{ 'c', 1, 8, DEVFILTER_RWM }, { 'c', 1, 9, DEVFILTER_RWM }, { 'c', 5, 0, DEVFILTER_RWM },
	{ 'c', 5, 2, DEVFILTER_RWM }, { 'c', 136, DEVFILTER_ANY, DEVFILTER_RWM },
};
#define NR_STANDARD (sizeof(standard_devices) / sizeof(standard_devices[0]))

/* A rule as v1's devices.allow reads it: "c 136:* rwm". */
static void v1_rule(const struct devfilter_rule *r, char *buf, size_t len)
{
	char maj[16] = "*", min[16] = "*";
	if (r->major != DEVFILTER_ANY)
		snprintf(maj, sizeof(maj), "%d", (int)r->major);
	if (r->minor != DEVFILTER_ANY)
		snprintf(min, sizeof(min), "%d", (int)r->minor);
	snprintf(buf, len, "%c %s:%s %s%s%s", r->type, maj, min,
		 r->access & DEVFILTER_READ ? "r" : "", r->access & DEVFILTER_WRITE ? "w" : "",
		 r->access & DEVFILTER_MKNOD ? "m" : "");
}

static int v1_allow(const char *d, const struct devfilter_rule *rules, size_t n,
		    struct herd_err *err)
{
	int rc = write_file(d, "devices.deny", "a");
	if (rc < 0)
		return herd_errf(err, rc, "cgroup %s/devices.deny: %s", d, strerror(-rc));
	for (size_t i = 0; i < n; i++) {
		char r[64];
		v1_rule(&rules[i], r, sizeof(r));
		if ((rc = write_file(d, "devices.allow", r)) < 0)
			return herd_errf(err, rc, "cgroup %s/devices.allow %s: %s", d, r,
					 strerror(-rc));
	}
	return 0;
}

int cgroup_allow_devices(const struct cgroup *cg, const char *const *paths, size_t n,
			 struct herd_err *err)
{
	const char *d = cg->version == 2 ? cg->path : cg->v1[C_DEVICES];
	if (!d)
		return herd_errf(err, -ENOTSUP, "cgroup v1: the devices hierarchy is not mounted");
	/* One list for both versions: the listed nodes, then the standard
	 * ones.  Every path is checked before anything changes. */
	struct devfilter_rule *rules = xcalloc(n + NR_STANDARD, sizeof(*rules));
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0) {
			rc = herd_errf(err, -errno, "device %s: %s", paths[i], strerror(errno));
			goto out;
		}
		if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
			rc = herd_errf(err, -EINVAL, "device %s: not a device node", paths[i]);
			goto out;
		}
		rules[i] = (struct devfilter_rule){ S_ISCHR(st.st_mode) ? 'c' : 'b',
			(int32_t)major(st.st_rdev), (int32_t)minor(st.st_rdev), DEVFILTER_RWM };
	}
	memcpy(rules + n, standard_devices, sizeof(standard_devices));
	if (cg->version == 2)
		rc = devfilter_attach(d, rules, n + NR_STANDARD, err);
	else
		rc = v1_allow(d, rules, n + NR_STANDARD, err);
out:
	free(rules);
	return rc;
}

static int read_pids(const char *dir, pid_t **pids, size_t *n)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = read_file(dir, "cgroup.procs", &sb);
	pid_t *v = NULL;
	size_t nr = 0, alloc = 0;
	if (rc == 0) {
		for (char *p = sb.buf; *p; ) {
			char *end;
			long x = strtol(p, &end, 10);
			if (end == p)
				break;
			if (x > 0) {
				ALLOC_GROW(v, nr + 1, alloc);
				v[nr++] = (pid_t)x;
			}
			p = end;
			while (*p == '\n' || *p == ' ')
				p++;
		}
		*pids = v;
		*n = nr;
	}
	strbuf_release(&sb);
	return rc;
}

int cgroup_pids(const struct cgroup *cg, pid_t **pids, size_t *n)
{
	const char *d = cg->version == 2 ? cg->path
		      : cg->v1[C_FREEZER] ? cg->v1[C_FREEZER] : cg->v1[C_MEMORY];
	return read_pids(d, pids, n);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Kills what is listed in dir's cgroup.procs; returns how many. */
static size_t kill_listed(const char *dir)
{
	pid_t *pids = NULL;
	size_t n = 0;
	if (read_pids(dir, &pids, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	free(pids);
	return n;
}

/* Waits until dir/file reads as want (a prefix match), up to ms. */
static bool wait_for(const char *dir, const char *file, const char *key, const char *want,
		     int ms)
{
	struct strbuf sb = STRBUF_INIT;
	bool ok = false;
	for (int waited = 0; ; waited++) {
		if (key) {
			char buf[8];
			snprintf(buf, sizeof(buf), "%" PRId64, read_keyed(dir, file, key));
			ok = !strcmp(buf, want);
		} else {
			ok = read_file(dir, file, &sb) == 0 && !strncmp(sb.buf, want, strlen(want));
		}
		if (ok || waited >= ms)
			break;
		sleep_ms(1);
	}
	strbuf_release(&sb);
	return ok;
}

int cgroup_kill(const struct cgroup *cg, int timeout_ms, struct herd_err *err)
{
	const char *d;
	if (cg->version == 2) {
		d = cg->path;
		if (exists(d, "cgroup.kill")) {
			int rc = write_file(d, "cgroup.kill", "1");
			if (rc < 0)
				return herd_errf(err, rc, "cgroup %s/cgroup.kill: %s", d, strerror(-rc));
		} else {
			/* Frozen, nothing forks between the listing and the
			 * kill; SIGKILL reaches frozen tasks on v2. */
			bool frozen = write_file(d, "cgroup.freeze", "1") == 0 &&
				      wait_for(d, "cgroup.events", "frozen", "1", 100);
			kill_listed(d);
			if (frozen)
				write_file(d, "cgroup.freeze", "0");
		}
	} else {
		const char *f = cg->v1[C_FREEZER];
		d = f ? f : cg->v1[C_MEMORY];
		bool frozen = f && write_file(f, "freezer.state", "FROZEN") == 0 &&
			      wait_for(f, "freezer.state", NULL, "FROZEN", 1000);
		kill_listed(d);
		/* v1 delivers the SIGKILL once the tasks are thawed. */
		if (frozen)
			write_file(f, "freezer.state", "THAWED");
	}
	for (int waited = 0; ; waited++) {
		pid_t *pids = NULL;
		size_t n = 0;
		int rc = read_pids(d, &pids, &n);
		free(pids);
		if (rc < 0)
			return rc == -ENOENT ? 0 : herd_errf(err, rc, "cgroup %s: %s", d, strerror(-rc));
		if (n == 0)
			return 0;
		if (waited >= timeout_ms)
			return herd_errf(err, -ETIMEDOUT, "cgroup %s: %zu processes survived SIGKILL",
					 d, n);
		/* A process forked before the freeze took hold: again. */
		if (waited % 50 == 49)
			kill_listed(d);
		sleep_ms(1);
	}
}

int cgroup_stats(const struct cgroup *cg, struct cgroup_stats *out)
{
	struct cgroup_stats s;
	if (cg->version == 2) {
		s.memory_current = read_int(cg->path, "memory.current");
		s.memory_peak = read_int(cg->path, "memory.peak");
		int64_t us = read_keyed(cg->path, "cpu.stat", "usage_usec");
		s.cpu_usage_ns = us < 0 ? -1 : us * 1000;
		s.oom_kills = read_keyed(cg->path, "memory.events", "oom_kill");
	} else {
		const char *m = cg->v1[C_MEMORY];
		s.memory_current = read_int(m, "memory.usage_in_bytes");
		s.memory_peak = read_int(m, "memory.max_usage_in_bytes");
		s.cpu_usage_ns = read_int(cg->v1[C_CPUACCT], "cpuacct.usage");
		s.oom_kills = read_keyed(m, "memory.oom_control", "oom_kill");
	}
	if (access(cg->path, F_OK) < 0)
		return -errno;
	*out = s;
	return 0;
}

int cgroup_remove(const struct cgroup *cg, struct herd_err *err)
{
	int rc = 0;
	for (int i = 0; i < (cg->version == 2 ? 1 : CGROUP_V1_CONTROLLERS); i++) {
		const char *d = cg->version == 2 ? cg->path : cg->v1[i];
		if (!d)
			continue;
		/* A freshly emptied group can report EBUSY for a moment
		 * while the last task finishes exiting. */
		int r = 0;
		for (int tries = 0; tries < 100; tries++) {
			r = rmdir(d) < 0 ? -errno : 0;
			if (r != -EBUSY)
				break;
			sleep_ms(1);
		}
		if (r == -ENOENT)
			r = 0;
		if (r < 0 && rc == 0)
			rc = herd_errf(err, r, "cgroup %s: %s", d, strerror(-r));
	}
	return rc;
}
