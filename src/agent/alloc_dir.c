/* alloc_dir: an allocation's directory tree (Nomad's layout, so job files
 * written for Nomad find their paths):
 *
 *     <alloc_dir>/<alloc id>/alloc/{logs,tmp,data}   shared by the tasks
 *     <alloc_dir>/<alloc id>/<task>/{local,secrets,tmp}
 *
 * alloc/, alloc/tmp, alloc/data, local/ and tmp/ are 01777 (tasks of the
 * exec driver run as their `user`); secrets/ is 0700 and logs/ 0755.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "common/xalloc.h"

int mkdir_p(const char *path, unsigned mode)
{
	char *p;
	int rc = 0;

	/* Most paths have their parents: one call, no walk. */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		rc = -errno;
out:
	free(p);
	return rc;
}

/* The process's umask, read once (umask(2) cannot read it without
 * setting it, which would race with other threads creating files); all
 * bits when it cannot be read, so that every mode is set explicitly. */
static unsigned process_umask = 0777;
static pthread_once_t umask_once = PTHREAD_ONCE_INIT;

static void read_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned m;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &m) == 1) {
			process_umask = m & 0777;
			break;
		}
	fclose(f);
}

/* Makes sub under the directory dirfd with exactly mode (an existing one
 * is kept, its mode set again).  The umask must not take bits away: tasks
 * of the exec driver run as another user (nobody) and write alloc/ and
 * local/; chmod only runs where it would. */
static int make(int dirfd, const char *dir, const char *sub, unsigned mode, struct herd_err *err)
{
	int rc = 0;
	bool existed = false;

	if (mkdirat(dirfd, sub, mode) < 0) {
		if (errno != EEXIST)
			rc = -errno;
		existed = true;
	}
	if (rc == 0 && (existed || (mode & process_umask)) && fchmodat(dirfd, sub, mode, 0) < 0)
		rc = -errno;
	if (rc < 0)
		herd_errf(err, rc, "cannot make %s/%s: %s", dir, sub, strerror(-rc));
	return rc;
}

int alloc_dir_build(const char *dir, const struct job_group *g, struct herd_err *err)
{
	static const char *const shared[] = { "alloc", "alloc/logs", "alloc/tmp", "alloc/data" };
	/* Sticky and writable by all, like /tmp: a task of any user can add
	 * files and cannot remove another user's (Nomad's modes); logs only
	 * the agent's shim writes. */
	static const unsigned shared_mode[] = { 01777, 0755, 01777, 01777 };
	static const char *const own[] = { "local", "secrets", "tmp" };
	static const unsigned own_mode[] = { 01777, 0700, 01777 };
	int fd, rc = 0;

	pthread_once(&umask_once, read_umask);
	/* The client made alloc_dir at start: only <id> is new.  Its mode
	 * and the task dirs' are what mkdir_p gave them before (01777 less
	 * the umask). */
	if (mkdir(dir, 01777) < 0 && errno != EEXIST && (rc = mkdir_p(dir, 01777)) < 0)
		return herd_errf(err, rc, "cannot make %s: %s", dir, strerror(-rc));
	/* Everything below relative to the allocation's dir: no path walk
	 * from / per directory. */
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return herd_errf(err, -errno, "cannot open %s: %s", dir, strerror(errno));
	for (size_t i = 0; i < 4 && rc == 0; i++)
		rc = make(fd, dir, shared[i], shared_mode[i], err);
	for (size_t t = 0; t < g->ntasks && rc == 0; t++) {
		const char *name = g->tasks[t].name;
		if (mkdirat(fd, name, 01777) < 0 && errno != EEXIST) {
			rc = herd_errf(err, -errno, "cannot make %s/%s: %s", dir, name,
				       strerror(errno));
			break;
		}
		for (size_t i = 0; i < 3 && rc == 0; i++) {
			char *sub = xasprintf("%s/%s", name, own[i]);
			rc = make(fd, dir, sub, own_mode[i], err);
			free(sub);
		}
	}
	close(fd);
	return rc;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

void alloc_dir_destroy(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
