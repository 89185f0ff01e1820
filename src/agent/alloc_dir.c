/* alloc_dir: an allocation's directory tree (Nomad's layout, so job files
 * written for Nomad find their paths):
 *
 *     <alloc_dir>/<alloc id>/alloc/{logs,tmp,data}   shared by the tasks
 *     <alloc_dir>/<alloc id>/<task>/{local,secrets,tmp}
 *
 * alloc/, alloc/tmp, alloc/data, local/ and tmp/ are 01777 (tasks of the
 * exec driver run as their `user`); secrets/ is 0700 and logs/ 0755.
 *
 * Also the removal and the recycling of such trees (alloc_gc.h): a
 * terminal allocation's tree is scrubbed back to that skeleton and renamed
 * into place for a later allocation instead of being deleted and made
 * again (9 new inodes, each slow on ext4 after many deletions).
 *
 * Why a recycled tree leaks nothing from one allocation to the next:
 *   - everything under the skeleton dirs is removed: logs, secrets,
 *     local, tmp, alloc/data, alloc/tmp, and whatever else the task or
 *     the exec driver left in the task dir (the empty directories it mounted on, files
 *     a task made in its root), depth first, by fd, never following a
 *     link and never crossing into a mount (a mount point stops it all);
 *   - the skeleton dirs themselves get the agent's owner and their
 *     modes back (the exec driver hands local/, secrets/, tmp/ and
 *     alloc/{data,tmp} to the task's user, who may have chmod'ed them);
 *     one that is not a plain directory, or that carries an extended
 *     attribute other than security.* (a default ACL would grant the old
 *     user the new allocation's files), makes the whole tree go instead;
 *   - the exit file is kept, emptied (its content is the old task's
 *     exit; the driver empties it again before each start);
 *   - no process of the old allocation is left to write into it: an exec
 *     task's cgroup is killed before the task counts as dead, and a
 *     raw_exec task runs as the agent's own user without isolation, so
 *     a leftover of it could reach any allocation's dir anyway; docker
 *     tasks (containers bind-mount these dirs and may outlive a failed
 *     removal) are never recycled (alloc_gc_client_note);
 *   - the tree moves out of <alloc_dir>/<old id> before it is scrubbed
 *     and is never renamed back to an id that was used: a reader that
 *     holds an fd of the old tree can tell (client_http.c checks that the
 *     path still names what it reads). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent/alloc_gc.h"
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

/* Modes of the skeleton, as alloc_dir_build makes them.  The <id> and
 * <task> dirs get 01777 less the umask from mkdir (no chmod: that is what
 * they always had). */
#define MODE_TOP 01777
#define MODE_ALLOC 01777
#define MODE_LOGS 0755
#define MODE_SHARED 01777   /* alloc/tmp, alloc/data, local, tmp */
#define MODE_SECRETS 0700

static const char *const shared[] = { "alloc", "alloc/logs", "alloc/tmp", "alloc/data" };
static const unsigned shared_mode[] = { MODE_ALLOC, MODE_LOGS, MODE_SHARED, MODE_SHARED };
static const char *const own[] = { "local", "secrets", "tmp" };
static const unsigned own_mode[] = { MODE_SHARED, MODE_SECRETS, MODE_SHARED };

/* --- removing without following links or crossing mounts --- */

static atomic_bool no_openat2;

/* Opens the directory name under parent for reading: never through a
 * symbolic link, never onto another mount (a bind mount of the same
 * filesystem included, which st_dev cannot tell; on kernels without
 * openat2 (< 5.6) only a different st_dev is caught). */
static int open_dir_at(int parent, const char *name)
{
	if (!atomic_load(&no_openat2)) {
		struct open_how how = {
			.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
				   RESOLVE_BENEATH,
		};
		int fd = (int)syscall(SYS_openat2, parent, name, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		atomic_store(&no_openat2, true);
	}
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat a, b;
	if (fd >= 0 && (fstat(fd, &a) < 0 || fstat(parent, &b) < 0 || a.st_dev != b.st_dev)) {
		close(fd);
		errno = EXDEV;
		return -1;
	}
	return fd;
}

/* A removal's context: top is the tree's root, where subtrees too deep to
 * walk with open fds are moved up (moved counts them: the caller walks
 * top again). */
struct rm_ctx {
	int top;
	unsigned moved;
	unsigned seq;
};

#define RM_DEPTH_MAX 32

static int remove_dir(int parent, const char *name, struct rm_ctx *c, unsigned depth);

/* Removes name (a file, link, fifo... or a tree) under parent. */
static int remove_entry(int parent, const char *name, struct rm_ctx *c, unsigned depth)
{
	/* unlinkat never follows a link; a directory answers EISDIR. */
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -errno;
	return remove_dir(parent, name, c, depth);
}

/* A listing of the directory open at fd, read with getdents64 straight
 * into a buffer of its own: no dup, fdopendir (an fstat and an fcntl),
 * rewind and close per directory, as a DIR took; a scrub lists nine
 * directories per allocation.  Small enough for a stack frame per level
 * of a removal (RM_DEPTH_MAX of them, on a runner's 512 KiB stack too). */
struct listing {
	int fd;
	size_t len, pos;
	char buf[2048] __attribute__((aligned(8)));
};

/* Starts listing fd: from where it is (rewind false: a fresh fd, at its
 * start), else from its start again. */
static int listing_start(struct listing *l, int fd, bool rewind)
{
	l->fd = fd;
	l->len = l->pos = 0;
	return rewind && lseek(fd, 0, SEEK_SET) < 0 ? -errno : 0;
}

/* The next entry but "." and "..": 1 with *name and *type (valid until
 * the next call), 0 at the end, -errno. */
static int listing_next(struct listing *l, const char **name, unsigned char *type)
{
	for (;;) {
		if (l->pos >= l->len) {
			ssize_t n = getdents64(l->fd, l->buf, sizeof(l->buf));
			if (n < 0)
				return -errno;
			if (n == 0)
				return 0;
			l->len = (size_t)n;
			l->pos = 0;
		}
		struct dirent64 *de = (struct dirent64 *)(l->buf + l->pos);
		l->pos += de->d_reclen;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		*name = de->d_name;
		*type = de->d_type;
		return 1;
	}
}

/* Removes everything in the directory open at fd (rewind: listed
 * before, see listing_start). */
static int empty_dir(int fd, bool rewind, struct rm_ctx *c, unsigned depth)
{
	struct listing l;
	const char *name;
	unsigned char type;
	int rc = listing_start(&l, fd, rewind), more;

	if (rc < 0)
		return rc;
	while ((more = listing_next(&l, &name, &type)) > 0) {
		int r = type == DT_DIR ? remove_dir(fd, name, c, depth + 1)
				       : remove_entry(fd, name, c, depth + 1);
		if (r < 0 && !rc)
			rc = r;
	}
	return more < 0 && !rc ? more : rc;
}

static int remove_dir(int parent, const char *name, struct rm_ctx *c, unsigned depth)
{
	if (depth >= RM_DEPTH_MAX) {
		/* A tree planted deeper than we hold fds for: move it up to
		 * the top (renameat moves the entry itself, never what a link
		 * points to); the caller's next pass goes on from there. */
		for (int tries = 0; tries < 100; tries++) {
			char tmp[32];
			snprintf(tmp, sizeof(tmp), ".deep-%u", ++c->seq);
			if (renameat2(parent, name, c->top, tmp, RENAME_NOREPLACE) == 0) {
				c->moved++;
				return 0;
			}
			if (errno != EEXIST)
				return -errno;
		}
		return -EEXIST;
	}
	int fd = open_dir_at(parent, name);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		return errno == ENOENT ? 0 : -errno;
	}
	int rc = empty_dir(fd, false, c, depth);
	close(fd);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

int alloc_dir_remove(int parent, const char *name)
{
	int fd = open_dir_at(parent, name);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		return errno == ENOENT ? 0 : -errno;
	}
	struct rm_ctx c = { .top = fd };
	bool again = false;
	int rc;
	do {
		c.moved = 0;
		rc = empty_dir(fd, again, &c, 0);
		again = true;
	} while (rc == 0 && c.moved);
	close(fd);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

void alloc_dir_destroy(const char *dir)
{
	char *parent = xstrdup(dir);
	char *slash = strrchr(parent, '/');
	const char *name = dir;
	int pfd = AT_FDCWD;
	if (slash) {
		*slash = '\0';
		name = dir + (slash - parent) + 1;
		pfd = open(slash == parent ? "/" : parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (pfd >= 0 || pfd == AT_FDCWD)
		alloc_dir_remove(pfd, name);
	if (pfd >= 0)
		close(pfd);
	free(parent);
}

/* --- scrubbing back to the skeleton --- */

/* Whether fd carries an extended attribute a task could have set (a
 * default ACL, user.*): anything but security.* (LSM labels). */
static bool foreign_xattrs(int fd)
{
	char buf[4096];
	ssize_t n = flistxattr(fd, buf, sizeof(buf));
	if (n < 0)
		return errno != ENOTSUP;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (strncmp(buf + i, "security.", 9))
			return true;
	return false;
}

/* The agent's effective ids, read once (the agent never changes them;
 * a scrub wanted them for every directory). */
static uid_t agent_uid;
static gid_t agent_gid;
static pthread_once_t ids_once = PTHREAD_ONCE_INIT;

static void read_ids(void)
{
	agent_uid = geteuid();
	agent_gid = getegid();
}

/* Gives the directory open at fd the agent's owner and exactly mode.
 * 1 when it carries attributes that make it unfit. */
static int reset_dir(int fd, unsigned mode)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || foreign_xattrs(fd))
		return 1;
	uid_t uid = agent_uid;
	gid_t gid = agent_gid;
	bool chowned = false;
	if (st.st_uid != uid || st.st_gid != gid) {
		if (fchown(fd, uid, gid) < 0)
			return -errno;
		chowned = true;
	}
	if ((chowned || (st.st_mode & 07777) != mode) && fchmod(fd, mode) < 0)
		return -errno;
	return 0;
}

/* Empties the skeleton dir name under parent and resets it: 0, 1 when it
 * is not a plain directory on this mount (or a tree too deep was moved
 * up: the caller removes everything instead), -errno. */
static int scrub_skel(int parent, const char *name, unsigned mode, struct rm_ctx *c)
{
	int fd = open_dir_at(parent, name);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP || errno == EXDEV || errno == ENOENT
		       ? 1 : -errno;
	int rc = empty_dir(fd, false, c, 1);
	if (rc == 0)
		rc = c->moved ? 1 : reset_dir(fd, mode);
	close(fd);
	return rc;
}

/* Keeps the exit file name under parent, emptied, when it is a regular
 * file of the agent's with no other link; removes it otherwise (never
 * truncating through a link to something else). */
static int scrub_exit(int parent, const char *name)
{
	int fd = openat(parent, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;
		bool keep = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
			    st.st_uid == agent_uid && !foreign_xattrs(fd) &&
			    ftruncate(fd, 0) == 0 &&
			    ((st.st_mode & 07777) == 0644 || fchmod(fd, 0644) == 0);
		close(fd);
		if (keep)
			return 0;
	}
	return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/* Which skeleton entry name is in list (of n): its index, or -1. */
static int skel_index(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return (int)i;
	return -1;
}

/* Scrubs the dir at fd whose skeleton entries are names[0..n) (each with
 * its mode), the exit file exit_name (NULL: none) kept emptied, all else
 * removed; then resets fd itself to mode.  0, 1 (unfit), -errno. */
static int scrub_level(int fd, const char *const *names, const unsigned *modes, size_t n,
		       const char *exit_name, unsigned mode, struct rm_ctx *c)
{
	struct listing l;
	const char *name;
	unsigned char type;
	unsigned found = 0;
	int rc = listing_start(&l, fd, false), more = 0;

	while (rc == 0 && (more = listing_next(&l, &name, &type)) > 0) {
		int k = skel_index(name, names, n);
		if (k >= 0) {
			rc = scrub_skel(fd, name, modes[k], c);
			found |= 1u << k;
		} else if (exit_name && !strcmp(name, exit_name)) {
			rc = scrub_exit(fd, name);
		} else {
			rc = type == DT_DIR ? remove_dir(fd, name, c, 1)
					    : remove_entry(fd, name, c, 1);
		}
	}
	if (rc == 0 && more < 0)
		rc = more;
	if (rc == 0 && (found != (1u << n) - 1 || c->moved))
		rc = 1;
	if (rc == 0)
		rc = reset_dir(fd, mode);
	return rc;
}

int alloc_dir_scrub(int parent, const char *name, char ***tasks, size_t *ntasks)
{
	static const char *const alloc_names[] = { "logs", "tmp", "data" };
	static const unsigned alloc_modes[] = { MODE_LOGS, MODE_SHARED, MODE_SHARED };
	char **names = NULL;
	size_t n = 0, cap = 0;
	bool have_alloc = false;
	int rc = 0;

	pthread_once(&umask_once, read_umask);
	pthread_once(&ids_once, read_ids);
	int top = open_dir_at(parent, name);
	if (top < 0)
		return errno == ENOTDIR || errno == ELOOP || errno == EXDEV ? 1 : -errno;
	struct rm_ctx c = { .top = top };
	struct listing l;
	const char *e;
	unsigned char type;
	int more = 0;
	rc = listing_start(&l, top, false);
	while (rc == 0 && (more = listing_next(&l, &e, &type)) > 0) {
		int fd = open_dir_at(top, e);
		if (fd < 0) {
			/* only the agent writes here: a non-directory is
			 * not ours */
			rc = errno == ENOTDIR || errno == ELOOP || errno == EXDEV ? 1 : -errno;
			break;
		}
		if (!strcmp(e, "alloc")) {
			have_alloc = true;
			rc = scrub_level(fd, alloc_names, alloc_modes, 3, NULL, MODE_ALLOC, &c);
		} else if (e[0] == '.' || strlen(e) > 200 || n >= 1000) {
			rc = 1;
		} else {
			char exit_name[256];
			snprintf(exit_name, sizeof(exit_name), "%s.exit", e);
			rc = scrub_level(fd, own, own_mode, 3, exit_name, MODE_TOP & ~process_umask,
					 &c);
			ALLOC_GROW(names, n + 1, cap);
			names[n++] = xstrdup(e);
		}
		close(fd);
	}
	if (rc == 0 && more < 0)
		rc = more;
	if (rc == 0 && (!have_alloc || !n))
		rc = 1;
	if (rc == 0)
		rc = reset_dir(top, MODE_TOP & ~process_umask);
	close(top);
	if (rc != 0) {
		alloc_gc_free_names(names, n);
		return rc;
	}
	*tasks = names;
	*ntasks = n;
	return 0;
}

/* --- building --- */

/* Whether name is among the group's task names. */
static bool group_has_task(const struct job_group *g, const char *name)
{
	for (size_t t = 0; t < g->ntasks; t++)
		if (!strcmp(g->tasks[t].name, name))
			return true;
	return false;
}

/* Renames a pool directory into place at dir and its task dirs (with
 * their exit files) to the group's task names.  0 when dir is complete;
 * -1 when there was no pool dir to take, or the rename failed (then dir is
 * whatever it was, and the ordinary build makes what is missing). */
static int take_from_pool(const char *root, const char *dir, const struct job_group *g)
{
	char *path = NULL, **old = NULL;
	int rc = -1;

	if (!alloc_gc_pool_take(root, g->ntasks, &path, &old))
		return -1;
	if (renameat2(AT_FDCWD, path, AT_FDCWD, dir, RENAME_NOREPLACE) < 0) {
		/* dir exists already (a runner that started again) or the
		 * pool dir is gone: not worth keeping it for another try */
		alloc_dir_destroy(path);
		goto out;
	}
	/* Names in both sets stay; every new name takes an old name that
	 * is not wanted, so no rename lands on an existing entry.  The dir
	 * is opened for the first rename only (most groups keep their
	 * task names: a job's next allocation, a batch of one job). */
	int fd = -1;
	size_t o = 0;
	rc = 0;
	for (size_t t = 0; t < g->ntasks && rc == 0; t++) {
		const char *want = g->tasks[t].name;
		bool have = false;
		for (size_t i = 0; i < g->ntasks; i++)
			if (!strcmp(old[i], want))
				have = true;
		if (have)
			continue;
		while (o < g->ntasks && group_has_task(g, old[o]))
			o++;
		if (fd < 0 && (fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			rc = -1;
			break;
		}
		if (o == g->ntasks || renameat2(fd, old[o], fd, want, RENAME_NOREPLACE) < 0) {
			rc = -1;
			break;
		}
		char *from = xasprintf("%s/%s.exit", want, old[o]);
		char *to = xasprintf("%s/%s.exit", want, want);
		if (renameat2(fd, from, fd, to, RENAME_NOREPLACE) < 0 && errno != ENOENT)
			unlinkat(fd, from, 0);
		free(from);
		free(to);
		o++;
	}
	if (fd >= 0)
		close(fd);
out:
	free(path);
	alloc_gc_free_names(old, g->ntasks);
	return rc;
}

int alloc_dir_build(const char *dir, const struct job_group *g, struct herd_err *err)
{
	/* alloc/: sticky and writable by all, like /tmp: a task of any user
	 * can add files and cannot remove another user's (Nomad's modes);
	 * logs only the agent's shim writes. */
	int fd, rc = 0;

	pthread_once(&umask_once, read_umask);
	/* A collection of this id under way ends first; a queued one is
	 * called off (alloc_gc.h).  Then a recycled tree, when the pool has
	 * one with as many tasks. */
	const char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		char *root = xstrndup(dir, (size_t)(slash - dir));
		alloc_gc_claim(root, slash + 1);
		rc = g->ntasks ? take_from_pool(root, dir, g) : -1;
		free(root);
		if (rc == 0)
			return 0;
		rc = 0;
	}
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
