/* A task's host volumes: its volume_mounts, each naming a group volume whose
 * source is one of the client's host_volume blocks, resolved into what
 * the drivers mount (driver.h, struct driver_volume), the environment
 * (HERD_VOLUME_<NAME>) and, for raw_exec, links in the task directory
 * (docs/drivers.md, "Host volumes"). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "agent/confined.h"
#include "common/xalloc.h"

static const struct job_volume *group_volume(const struct job_group *g, const char *name)
{
	for (size_t i = 0; i < g->nvolumes; i++)
		if (g->volumes[i].name && !strcmp(g->volumes[i].name, name))
			return &g->volumes[i];
	return NULL;
}

int task_volumes(const struct task_runner *tr, struct driver_volume **out, size_t *n,
		 struct herd_err *err)
{
	const struct job_task *t = tr->task;
	struct driver_volume *v;

	*out = NULL;
	*n = 0;
	if (!t->nvolume_mounts)
		return 0;
	v = xcalloc(t->nvolume_mounts, sizeof(*v));
	for (size_t i = 0; i < t->nvolume_mounts; i++) {
		const struct job_volume_mount *m = &t->volume_mounts[i];
		const struct job_volume *gv = group_volume(tr->ar->group, m->volume);
		const struct agent_host_volume *hv =
			gv ? agent_config_host_volume(tr->ar->c->cfg, gv->source) : NULL;
		if (!hv) {
			free(v);
			/* the scheduler chose this node for the volume: the
			 * client's configuration changed since */
			return herd_errf(err, -ENOENT, "volume \"%s\": host volume \"%s\" is not "
					 "configured on this node", m->volume,
					 gv ? gv->source : "?");
		}
		v[i] = (struct driver_volume){ m->volume, hv->path, m->destination,
					       m->read_only || gv->read_only || hv->read_only };
	}
	*out = v;
	*n = t->nvolume_mounts;
	return 0;
}

/* Makes rel (relative, no "..", checked by the job's validation) a link to
 * target inside the task dir.  A link already there (a restart) is
 * replaced; anything else is refused rather than removed: it is the task's. */
static int link_one(int dirfd, const char *rel, const char *target, struct herd_err *err)
{
	char *parent = xstrdup(rel), *slash = strrchr(parent, '/'), *base;
	struct stat st;
	int pfd, rc = 0;

	while (slash && slash[1] == '\0') { /* "data/" names "data" */
		*slash = '\0';
		slash = strrchr(parent, '/');
	}
	if (slash) {
		*slash = '\0';
		base = slash + 1;
		pfd = confined_mkdirs(dirfd, parent, 0755, err);
	} else {
		base = parent;
		pfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
		if (pfd < 0)
			pfd = -errno;
	}
	if (pfd < 0) {
		rc = pfd;
		if (!err->msg[0])
			herd_errf(err, rc, "volume_mount %s: %s", rel, strerror(-rc));
		goto out;
	}
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISLNK(st.st_mode)) {
			rc = herd_errf(err, -EEXIST, "volume_mount destination %s exists in the task "
				       "directory and is not a link", rel);
			goto close;
		}
		if (unlinkat(pfd, base, 0) < 0) {
			rc = herd_errf(err, -errno, "volume_mount %s: %s", rel, strerror(errno));
			goto close;
		}
	}
	if (symlinkat(target, pfd, base) < 0)
		rc = herd_errf(err, -errno, "volume_mount %s -> %s: %s", rel, target, strerror(errno));
close:
	close(pfd);
out:
	free(parent);
	return rc;
}

int task_link_volumes(struct task_runner *tr, struct herd_err *err)
{
	struct driver_volume *v;
	size_t n;
	int dirfd, rc = task_volumes(tr, &v, &n, err);

	if (rc < 0 || !n)
		return rc;
	dirfd = open(tr->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		rc = herd_errf(err, -errno, "task dir %s: %s", tr->dir, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		if (v[i].destination[0] != '/')
			rc = link_one(dirfd, v[i].destination, v[i].host_path, err);
	close(dirfd);
out:
	free(v);
	return rc;
}
