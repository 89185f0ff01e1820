/* Safe reads of an allocation's directory; see alloc_fs.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/alloc_fs.h"
#include "common/xalloc.h"

int alloc_fs_clean_path(const char *path, char *out, size_t size, struct herd_err *err)
{
	size_t len = 0;
	const char *p = path ? path : "";

	if (size < 2)
		return herd_errf(err, -EINVAL, "path buffer too small");
	out[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && !strncmp(p, "..", 2))
			return herd_errf(err, -EINVAL, "the path may not contain \"..\": it is "
					 "relative to the allocation's directory, which it may not leave");
		if (n && !(n == 1 && *p == '.')) {
			if (len + !!len + n > ALLOC_FS_PATH_MAX || len + !!len + n + 1 > size)
				return herd_errf(err, -EINVAL, "the path is longer than %d bytes",
						 ALLOC_FS_PATH_MAX);
			if (len)
				out[len++] = '/';
			memcpy(out + len, p, n);
			len += n;
			out[len] = '\0';
		}
		p += n;
		p += *p == '/';
	}
	if (alloc_fs_is_secret(out))
		return herd_errf(err, -EPERM, "a task's secrets directory is not served");
	return 0;
}

bool alloc_fs_is_secret(const char *rel)
{
	const char *slash = strchr(rel, '/');

	/* alloc/ is shared by the tasks: "alloc/secrets" is an ordinary name */
	if (!slash || (slash - rel == 5 && !strncmp(rel, "alloc", 5)))
		return false;
	return !strncmp(slash + 1, "secrets", 7) && (slash[8] == '\0' || slash[8] == '/');
}

int alloc_fs_open_walk(int rootfd, const char *rel, int flags, struct herd_err *err)
{
	char buf[ALLOC_FS_PATH_MAX + 1], *save = NULL, *c, *next;
	int cur, e;
	struct stat st;

	if (strlen(rel) > ALLOC_FS_PATH_MAX)
		return herd_errf(err, -ENAMETOOLONG, "the path is too long");
	if (!*rel) {
		cur = openat(rootfd, ".", flags | O_CLOEXEC);
		return cur >= 0 ? cur : herd_errf(err, -errno, "the allocation's directory: %s",
						  strerror(errno));
	}
	snprintf(buf, sizeof(buf), "%s", rel);
	cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return herd_errf(err, -errno, "the allocation's directory: %s", strerror(errno));
	for (c = strtok_r(buf, "/", &save); c; c = next) {
		next = strtok_r(NULL, "/", &save);
		/* every component without following: a symlink is refused */
		int f = next ? O_PATH | O_DIRECTORY | O_NOFOLLOW : flags | O_NOFOLLOW;
		int fd = openat(cur, c, f | O_CLOEXEC);
		e = errno;
		/* O_DIRECTORY | O_NOFOLLOW on a symlink says ENOTDIR: say why */
		if (fd < 0 && e == ENOTDIR && next && fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			e = ELOOP;
		close(cur);
		if (fd < 0) {
			return herd_errf(err, -e, "%s: %s", rel, e == ELOOP ?
					 "a symlink (not followed where openat2 is missing)" :
					 strerror(e));
		}
		/* O_PATH | O_NOFOLLOW opens a symlink itself */
		if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
			close(fd);
			return herd_errf(err, -ELOOP, "%s: a symlink (not followed where openat2 "
					 "is missing)", rel);
		}
		cur = fd;
	}
	return cur;
}

/* Whether openat2 is missing here (ENOSYS, or a seccomp filter's EPERM):
 * learnt once. */
static atomic_bool no_openat2;

int alloc_fs_open(int rootfd, const char *rel, int flags, struct herd_err *err)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (strlen(rel) > ALLOC_FS_PATH_MAX)
		return herd_errf(err, -ENAMETOOLONG, "the path is too long");
	if (atomic_load(&no_openat2))
		return alloc_fs_open_walk(rootfd, rel, flags, err);
	fd = syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (errno == ENOSYS || errno == EPERM) {
		atomic_store(&no_openat2, true);
		return alloc_fs_open_walk(rootfd, rel, flags, err);
	}
	if (errno == EXDEV)
		return herd_errf(err, -EXDEV, "%s: leaves the allocation's directory (through a "
				 "symlink)", rel);
	if (errno == ELOOP)
		return herd_errf(err, -ELOOP, "%s: too many symlinks, or one through /proc", rel);
	return herd_errf(err, -errno, "%s: %s", *rel ? rel : "/", strerror(errno));
}

/* The path the fd names, per /proc/self/fd; false where /proc cannot say. */
static bool fd_path(int fd, char *out, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, size - 1);
	if (n <= 0 || (size_t)n >= size - 1)
		return false;
	out[n] = '\0';
	return out[0] == '/';
}

int alloc_fs_check_opened(int rootfd, int fd, struct herd_err *err)
{
	char root[ALLOC_FS_PATH_MAX + 64], path[2 * ALLOC_FS_PATH_MAX + 64];
	size_t len;

	if (!fd_path(rootfd, root, sizeof(root)) || !fd_path(fd, path, sizeof(path)))
		return 0;   /* no /proc: the textual checks stand alone */
	len = strlen(root);
	if (!strcmp(path, root))
		return 0;
	if (len > 1 && (strncmp(path, root, len) || path[len] != '/'))
		return herd_errf(err, -EXDEV, "the path leaves the allocation's directory");
	if (alloc_fs_is_secret(path + (len > 1 ? len + 1 : 1)))
		return herd_errf(err, -EPERM, "the path leads into a task's secrets directory, "
				 "which is not served");
	return 0;
}

int alloc_fs_open_path(int rootfd, const char *rel, struct stat *st, struct herd_err *err)
{
	int fd = alloc_fs_open(rootfd, rel, O_PATH, err), rc;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0) {
		rc = herd_errf(err, -errno, "%s: %s", rel, strerror(errno));
		close(fd);
		return rc;
	}
	if ((rc = alloc_fs_check_opened(rootfd, fd, err)) < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int alloc_fs_open_read(int rootfd, const char *rel, bool dir, struct stat *st,
		       struct herd_err *err)
{
	const char *shown = *rel ? rel : "/";
	int pfd = alloc_fs_open_path(rootfd, rel, st, err), fd, rc = 0;
	struct stat again;
	char link[64];

	if (pfd < 0)
		return pfd;
	if (dir && !S_ISDIR(st->st_mode))
		rc = herd_errf(err, -ENOTDIR, "%s is not a directory", shown);
	else if (!dir && S_ISDIR(st->st_mode))
		rc = herd_errf(err, -EISDIR, "%s is a directory", shown);
	else if (!dir && !S_ISREG(st->st_mode))
		rc = herd_errf(err, -EINVAL, "%s is not a regular file (a FIFO, socket or "
			       "device is not read)", shown);
	if (rc < 0) {
		close(pfd);
		return rc;
	}
	/* The same inode upgraded to a read fd, so nothing swapped in between
	 * is opened; O_NONBLOCK and O_NOCTTY in case it still is one. */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", pfd);
	fd = open(link, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC | O_NONBLOCK |
		  O_NOCTTY);
	if (fd < 0 && errno == ENOENT) {
		/* no /proc: the path again, then the inode compared */
		fd = alloc_fs_open(rootfd, rel, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) |
				   O_NONBLOCK | O_NOCTTY, err);
		if (fd < 0) {
			close(pfd);
			return fd;
		}
	} else if (fd < 0) {
		rc = herd_errf(err, -errno, "%s: %s", shown, strerror(errno));
		close(pfd);
		return rc;
	}
	close(pfd);
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino) {
		close(fd);
		return herd_errf(err, -EAGAIN, "%s changed while it was opened", shown);
	}
	*st = again;
	return fd;
}

/* ls's letters for the mode: type, then rwx thrice with s/S and t/T. */
static void mode_string(mode_t m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISFIFO(m) ? 'p' : S_ISSOCK(m) ? 's' :
		 S_ISCHR(m) ? 'c' : S_ISBLK(m) ? 'b' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		out[3] = out[3] == 'x' ? 's' : 'S';
	if (m & S_ISGID)
		out[6] = out[6] == 'x' ? 's' : 'S';
	if (m & S_ISVTX)
		out[9] = out[9] == 'x' ? 't' : 'T';
	out[10] = '\0';
}

json_t *alloc_fs_entry_json(const char *name, const struct stat *st)
{
	char mode[11];

	mode_string(st->st_mode, mode);
	return json_pack("{s:s,s:b,s:I,s:s,s:I}", "name", name, "is_dir", S_ISDIR(st->st_mode),
			 "size", (json_int_t)st->st_size, "file_mode", mode, "mod_time",
			 (json_int_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec);
}

const char *alloc_fs_content_type(const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 :
			   (c & 0xf8) == 0xf0 ? 3 : 9;
		if (!c || n == 9 || (n == 1 && c < 0xc2))
			return "application/octet-stream";
		for (size_t k = 1; k <= n; k++) {
			if (i + k >= len)
				return "text/plain; charset=utf-8";   /* cut by the sample */
			if ((s[i + k] & 0xc0) != 0x80)
				return "application/octet-stream";
		}
		i += n + 1;
	}
	return "text/plain; charset=utf-8";
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int alloc_fs_list(int fd, json_t **out, bool *truncated, struct herd_err *err)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	json_t *list;

	*truncated = false;
	if (!d) {
		int rc = herd_errf(err, -errno, "cannot list: %s", strerror(errno));
		close(fd);
		return rc;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == ALLOC_FS_LIST_MAX) {
			*truncated = true;
			break;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = xstrdup(e->d_name);
	}
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	list = json_array();
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		/* the entry itself: a symlink is shown, not followed */
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
			json_array_append_new(list, alloc_fs_entry_json(names[i], &st));
		free(names[i]);   /* gone since the listing: left out */
	}
	free(names);
	closedir(d);
	*out = list;
	return 0;
}
