/* proc_owner: a host process's lineage and cgroups (driver.h,
 * driver_proc_read), from which each driver's `owns` tells whether the
 * process is its task's.  Only the processes NVML names are read (a few
 * per GPU), each with its chain of parents: no walk over /proc. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "drivers/drivers-int.h"

/* The stat fields of proc_root/pid.  0, -ESRCH when gone, -errno. */
static int read_stat(const char *proc_root, pid_t pid, struct proc_stat_fields *f)
{
	char path[512], buf[2048];
	int rc;

	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
	rc = proc_read_small(path, buf, sizeof(buf));
	if (rc == -ENOENT)
		return -ESRCH;
	if (rc < 0)
		return rc;
	return proc_parse_stat(buf, f) < 0 ? -EINVAL : 0;
}

/* Cuts text at the end of its last whole line (a cgroup file longer than
 * the buffer must not end in half a path, which could match by accident). */
static void keep_whole_lines(char *text, size_t len, size_t size)
{
	char *nl;
	if (len < size - 1)
		return;
	nl = strrchr(text, '\n');
	if (nl)
		nl[1] = '\0';
	else
		text[0] = '\0';
}

int driver_proc_read(const char *proc_root, pid_t pid, struct driver_proc *out)
{
	struct driver_proc p;
	struct proc_stat_fields f;
	char path[512];
	pid_t up;
	int rc;

	if (!proc_root)
		proc_root = "/proc";
	if (pid <= 0)
		return -ESRCH;
	memset(&p, 0, sizeof(p));
	p.pid = pid;
	if ((rc = read_stat(proc_root, pid, &f)) < 0)
		return rc;
	p.session = f.session;
	/* pid 1 and the kernel's 0 own everything: they end the chain */
	for (up = f.ppid; up > 1 && p.nr_ancestors < DRIVER_PROC_MAX_ANCESTORS; up = f.ppid) {
		p.ancestors[p.nr_ancestors++] = up;
		if (read_stat(proc_root, up, &f) < 0)
			break;
	}
	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)pid);
	if (proc_read_small(path, p.cgroups, sizeof(p.cgroups)) == 0)
		keep_whole_lines(p.cgroups, strlen(p.cgroups), sizeof(p.cgroups));
	else
		p.cgroups[0] = '\0';
	*out = p;
	return 0;
}

/* Whether path (up to end) has a component equal to name, or containing
 * it when contains. */
static bool path_has(const char *path, const char *end, const char *name, bool contains)
{
	size_t n = strlen(name);

	while (path < end) {
		const char *slash = memchr(path, '/', (size_t)(end - path));
		const char *stop = slash ? slash : end;
		size_t len = (size_t)(stop - path);
		if (len == n && !memcmp(path, name, n))
			return true;
		if (contains && len > n && memmem(path, len, name, n))
			return true;
		path = stop + 1;
	}
	return false;
}

bool driver_proc_in_cgroup(const struct driver_proc *p, const char *name, bool contains)
{
	const char *line = p->cgroups;

	if (!name || !*name)
		return false;
	while (*line) {
		const char *eol = strchr(line, '\n'), *end = eol ? eol : line + strlen(line);
		/* "hierarchy:controllers:path": the path follows the second ':' */
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		if (c2 && path_has(c2 + 1, end, name, contains))
			return true;
		if (!eol)
			break;
		line = eol + 1;
	}
	return false;
}

bool proc_is_or_descends(const struct driver_proc *p, pid_t pid)
{
	if (pid <= 1)
		return false;
	if (p->pid == pid)
		return true;
	for (size_t i = 0; i < p->nr_ancestors; i++)
		if (p->ancestors[i] == pid)
			return true;
	return false;
}
