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
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "common/xalloc.h"

int mkdir_p(const char *path, unsigned mode)
{
	char *p = xstrdup(path);
	int rc = 0;

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

static int make(const char *dir, const char *sub, unsigned mode, struct herd_err *err)
{
	char *p = xasprintf("%s/%s", dir, sub);
	int rc = mkdir_p(p, mode);

	/* The umask must not take the bits away: tasks of the exec driver
	 * run as another user (nobody) and write alloc/ and local/. */
	if (rc == 0 && chmod(p, mode) < 0)
		rc = -errno;
	if (rc < 0)
		herd_errf(err, rc, "cannot make %s: %s", p, strerror(-rc));
	free(p);
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
	int rc;

	for (size_t i = 0; i < 4; i++)
		if ((rc = make(dir, shared[i], shared_mode[i], err)) < 0)
			return rc;
	for (size_t t = 0; t < g->ntasks; t++) {
		for (size_t i = 0; i < 3; i++) {
			char *sub = xasprintf("%s/%s", g->tasks[t].name, own[i]);
			rc = make(dir, sub, own_mode[i], err);
			free(sub);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
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
