/* Resource usage of a raw_exec task read from /proc (drivers-int.h):
 * the processes of the task's session, which the shim made with the task
 * as its leader (so its pid is the session id). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cpulist.h"
#include "common/xalloc.h"
#include "drivers/drivers-int.h"

int proc_read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int saved = errno;
	close(fd);
	if (n < 0)
		return -saved;
	buf[n] = '\0';
	return 0;
}

int proc_parse_stat(const char *text, struct proc_stat_fields *out)
{
	/* The command name (field 2) may hold spaces and ')': the fields
	 * resume after the last ')'. */
	const char *p = strrchr(text, ')');
	unsigned long long v[23];
	if (!p)
		return -EINVAL;
	p++;
	/* v[0] is field 3 (state, skipped as a word), v[k] field k + 3. */
	for (int field = 3; field <= 24; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		if (field == 3) {
			while (*p && *p != ' ')
				p++;
			continue;
		}
		char *end;
		errno = 0;
		long long s = strtoll(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		v[field - 3] = (unsigned long long)s;
		p = end;
	}
	out->ppid = (pid_t)v[4 - 3];
	out->session = (pid_t)v[6 - 3];
	out->utime_ticks = v[14 - 3];
	out->stime_ticks = v[15 - 3];
	out->cutime_ticks = v[16 - 3];
	out->cstime_ticks = v[17 - 3];
	out->rss_pages = (int64_t)v[24 - 3];
	return 0;
}

/* VmHWM of a /proc/<pid>/status text in bytes, or -1. */
static int64_t status_hwm(const char *text)
{
	const char *p = strstr(text, "\nVmHWM:");
	long long kb;
	if (!p || sscanf(p + 7, "%lld", &kb) != 1 || kb < 0)
		return -1;
	return kb * 1024;
}

int proc_session_usage(const char *proc_root, pid_t sid, struct proc_usage *out)
{
	char path[512], buf[2048];
	struct dirent *de;
	struct proc_usage u = { 0, 0, -1, 0 };
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	uint64_t ticks = 0;
	DIR *d;

	if (!proc_root)
		proc_root = "/proc";
	d = opendir(proc_root);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct proc_stat_fields f;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", proc_root, de->d_name);
		/* A process may end between readdir and open: skip it. */
		if (proc_read_small(path, buf, sizeof(buf)) < 0 || proc_parse_stat(buf, &f) < 0 ||
		    f.session != sid)
			continue;
		u.nprocs++;
		ticks += f.utime_ticks + f.stime_ticks + f.cutime_ticks + f.cstime_ticks;
		u.rss_bytes += f.rss_pages * page;
		if (strtol(de->d_name, NULL, 10) == (long)sid) {
			snprintf(path, sizeof(path), "%s/%s/status", proc_root, de->d_name);
			if (proc_read_small(path, buf, sizeof(buf)) == 0)
				u.leader_hwm_bytes = status_hwm(buf);
		}
	}
	closedir(d);
	if (!u.nprocs)
		return -ESRCH;
	u.cpu_ns = (int64_t)(ticks * (1000000000ULL / (uint64_t)(tick > 0 ? tick : 100)));
	*out = u;
	return 0;
}

int64_t driver_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The mask of a list (NULL: the calling thread's own).  0 or -errno. */
static int mask_of(const char *cpus, struct cpulist *set)
{
	if (cpus)
		return cpulist_parse(cpus, set, NULL) < 0 || cpulist_empty(set) ? -EINVAL : 0;
	*set = (struct cpulist)CPULIST_INIT;
	return sched_getaffinity(0, sizeof(set->w), (cpu_set_t *)(void *)set->w) < 0 ? -errno : 0;
}

/* Every thread of pid to set; counts into *nset, the first error into *rc. */
static void set_threads(const char *proc_root, long pid, const struct cpulist *set, int *nset,
			int *rc)
{
	char path[512];
	struct dirent *te;
	snprintf(path, sizeof(path), "%s/%ld/task", proc_root, pid);
	DIR *t = opendir(path);
	while (t && (te = readdir(t))) {
		if (!isdigit((unsigned char)te->d_name[0]))
			continue;
		pid_t tid = (pid_t)strtol(te->d_name, NULL, 10);
		if (sched_setaffinity(tid, cpulist_bytes(set), (const cpu_set_t *)(const void *)set->w) == 0)
			(*nset)++;
		else if (errno != ESRCH && *rc == 0)
			*rc = -errno;
	}
	if (t)
		closedir(t);
}

int proc_pids_set_affinity(const pid_t *pids, size_t n, const char *cpus)
{
	struct cpulist set;
	int nset = 0, rc = mask_of(cpus, &set);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		set_threads("/proc", (long)pids[i], &set, &nset, &rc);
	return rc < 0 && !nset ? rc : nset;
}

int proc_session_set_affinity(const char *proc_root, pid_t sid, const char *cpus)
{
	char path[512], buf[2048];
	struct dirent *de;
	struct cpulist set;
	int nprocs = 0, nset = 0, rc = mask_of(cpus, &set);
	DIR *d;

	if (rc < 0)
		return rc;
	if (!proc_root)
		proc_root = "/proc";
	d = opendir(proc_root);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct proc_stat_fields f;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", proc_root, de->d_name);
		if (proc_read_small(path, buf, sizeof(buf)) < 0 || proc_parse_stat(buf, &f) < 0 ||
		    f.session != sid)
			continue;
		nprocs++;
		/* every thread: a new mask reaches only the thread it is set on */
		set_threads(proc_root, strtol(de->d_name, NULL, 10), &set, &nset, &rc);
	}
	closedir(d);
	if (!nprocs)
		return -ESRCH;
	return rc < 0 && !nset ? rc : nset;
}
