/* sticky_disk: ephemeral_disk { sticky } on the agent (docs/jobspec.md,
 * "ephemeral_disk").  Before a replacement's tasks start, the data of the
 * allocation it replaces (its previous_allocation) moves into the new
 * allocation's directory when that allocation ran on this node: alloc/data
 * and each task's local/ (a task the old allocation did not have keeps its
 * empty one).
 *
 * Why an exchange (renameat2 RENAME_EXCHANGE) and not a copy: the data may
 * be a training run's checkpoints, gigabytes on the same filesystem; an
 * exchange is one atomic step per directory, and it leaves the old tree
 * the complete skeleton (with the new allocation's empty directories) that
 * the collector scrubs or removes (alloc_gc.h).
 *
 * Order: the old allocation's tasks must have stopped first (a task still
 * writing would write into the new allocation's data, or lose what it
 * wrote after the move): the runner waits for the old runner's work to be
 * done.  The old directory is claimed from the collector while it is moved
 * (alloc_gc_claim_queued), and queued again afterwards if it was queued.
 *
 * Safety: only directories move, never a symbolic link (a task of the old
 * allocation could have put one in place of local/ pointing anywhere); the
 * names are opened beneath the alloc dir without following links. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alloc_gc.h"
#include "agent/client-int.h"
#include "agent/migrate_fetch.h"
#include "agent/sticky_disk.h"
#include "common/xalloc.h"

#define STICKY_WAIT_NS (100 * 1000000LL)

/* Whether the runner of id on this client still has work to do. */
static bool runner_busy(struct client *c, const char *id, bool *exists)
{
	struct alloc_runner *p = client_runner_hold(c, id);
	bool done;

	*exists = p != NULL;
	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	done = p->done;
	pthread_mutex_unlock(&p->lock);
	client_runner_release(p);
	return !done;
}

/* Waits for the previous allocation's tasks to stop: 0 once they did, 1
 * when this allocation was stopped meanwhile, -1 when the client shuts
 * down. */
static int wait_previous(struct alloc_runner *ar, const char *prev)
{
	bool exists;

	while (runner_busy(ar->c, prev, &exists)) {
		bool stop;
		pthread_mutex_lock(&ar->lock);
		stop = ar->stop_requested;
		pthread_mutex_unlock(&ar->lock);
		if (stop)
			return 1;
		if (client_sleep(ar->c, STICKY_WAIT_NS))
			return -1;
	}
	return 0;
}

static int open_beneath(int parent, const char *name)
{
	return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Exchanges the directories name under from and to: from's must be a
 * directory, not a link.  0, or -errno. */
static int exchange(int from, int to, const char *name)
{
	struct stat st;

	if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (renameat2(from, name, to, name, RENAME_EXCHANGE) < 0)
		return -errno;
	return 0;
}

/* Moves <from>/<sub>/<name> into <to>/<sub>/<name>.  1 moved, 0 nothing
 * there to move, -errno. */
static int move_one(int from, int to, const char *sub, const char *name)
{
	int f = open_beneath(from, sub), t = -1, rc;

	if (f < 0)
		return errno == ENOENT ? 0 : -errno;
	t = open_beneath(to, sub);
	if (t < 0) {
		rc = -errno;
		close(f);
		return rc;
	}
	rc = exchange(f, t, name);
	close(f);
	close(t);
	if (rc == -ENOENT || rc == -ENOTDIR) /* nothing, or a link: stays behind */
		return 0;
	return rc < 0 ? rc : 1;
}

int sticky_disk_move(const char *root, const char *prev, const char *dir,
		     const char *const *tasks, size_t ntasks, struct herd_err *err)
{
	int rfd, from, to, rc, moved = 0;

	if (!*prev || strchr(prev, '/') || !strcmp(prev, ".") || !strcmp(prev, ".."))
		return herd_errf(err, -EINVAL, "bad previous allocation id \"%s\"", prev);
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return herd_errf(err, -errno, "cannot open %s: %s", root, strerror(errno));
	from = open_beneath(rfd, prev);
	close(rfd);
	if (from < 0)
		return errno == ENOENT ? 0 : herd_errf(err, -errno, "cannot open %s/%s: %s", root,
						       prev, strerror(errno));
	to = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (to < 0) {
		rc = herd_errf(err, -errno, "cannot open %s: %s", dir, strerror(errno));
		close(from);
		return rc;
	}
	rc = move_one(from, to, "alloc", "data");
	for (size_t i = 0; rc >= 0 && i < ntasks; i++) {
		moved += rc;
		rc = move_one(from, to, tasks[i], "local");
	}
	close(from);
	close(to);
	if (rc < 0)
		return herd_errf(err, rc, "cannot move the data of allocation %.8s: %s", prev,
				 strerror(-rc));
	return moved + rc;
}

/* The directory holding the allocation directories: ar->dir's parent. */
static char *alloc_root(const struct alloc_runner *ar)
{
	char *root = xstrdup(ar->dir), *slash = strrchr(root, '/');

	if (slash)
		*slash = '\0';
	return root;
}

static bool dir_exists(const char *root, const char *name)
{
	char *path = xasprintf("%s/%s", root, name);
	struct stat st;
	bool yes = strchr(name, '/') == NULL && lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
	free(path);
	return yes;
}

static void event_all(struct alloc_runner *ar, const char *msg)
{
	for (size_t i = 0; i < ar->ntasks; i++)
		task_event(&ar->tasks[i], "Sticky Disk", "%s", msg);
}

bool sticky_disk_take(struct alloc_runner *ar)
{
	const struct job_ephemeral_disk *d = ar->group->ephemeral_disk;
	const char *prev = json_string_value(json_object_get(ar->alloc, "previous_allocation"));
	struct herd_err err = { 0, "" };
	const char **names;
	char *root, msg[1024];
	bool here, queued;
	int rc;

	/* a recovered runner's tasks may have started with the data already */
	if (!d || !d->sticky || !prev || !*prev || ar->recovered)
		return true;
	rc = wait_previous(ar, prev);
	if (rc)
		return rc > 0; /* stopped: its tasks will not start anyway */
	root = alloc_root(ar);
	names = xcalloc(ar->ntasks + 1, sizeof(*names));
	for (size_t i = 0; i < ar->ntasks; i++)
		names[i] = ar->tasks[i].task->name;
	here = dir_exists(root, prev);
	queued = here && alloc_gc_claim_queued(root, prev);
	rc = sticky_disk_move(root, prev, ar->dir, names, ar->ntasks, &err);
	alloc_gc_unclaim(root, prev, queued);
	if (rc == 0 && !here && d->migrate) { /* not on this node: from the one it ran on */
		rc = migrate_fetch(ar, prev, root, names, ar->ntasks, msg, sizeof(msg));
		if (rc < 0) { /* stopped meanwhile (nothing starts), or the client stops */
			pthread_mutex_lock(&ar->lock);
			rc = ar->stop_requested;
			pthread_mutex_unlock(&ar->lock);
			free(names);
			free(root);
			return rc;
		}
	} else if (rc < 0)
		snprintf(msg, sizeof(msg), "%s; the tasks start with empty directories", err.msg);
	else if (rc == 0)
		snprintf(msg, sizeof(msg), "no data of allocation %.8s on this node; the tasks start "
			 "with empty directories", prev);
	else
		snprintf(msg, sizeof(msg), "moved alloc/data and local/ of allocation %.8s", prev);
	event_all(ar, msg);
	free(names);
	free(root);
	return true;
}
