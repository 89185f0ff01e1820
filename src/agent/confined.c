/* Paths that stay beneath a directory; see confined.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/confined.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

int confined_relpath(const char *base, const char *p, const char *what, char **rel,
		     struct herd_err *err)
{
	if (!p || !*p)
		return herd_errf(err, -EINVAL, "%s: empty path", what);
	const char *r = p;
	if (p[0] == '/') {
		size_t bl = strlen(base);
		while (bl > 1 && base[bl - 1] == '/')
			bl--;
		if (strncmp(p, base, bl) || (p[bl] != '/' && p[bl] != '\0'))
			return herd_errf(err, -EXDEV, "%s %s: outside the task directory", what, p);
		r = p + bl;
		while (*r == '/')
			r++;
		if (!*r)
			r = ".";
	}
	/* Lexical check first: a ".." is rejected even where it would
	 * happen to stay inside. */
	for (const char *c = r; *c; ) {
		size_t l = strcspn(c, "/");
		if (l == 2 && c[0] == '.' && c[1] == '.')
			return herd_errf(err, -EINVAL, "%s %s: '..' is not allowed", what, p);
		c += l;
		while (*c == '/')
			c++;
	}
	*rel = xstrdup(r);
	return 0;
}

int confined_openat(int dirfd, const char *rel, int flags, unsigned mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

int confined_mkdirs(int dirfd, const char *rel, unsigned mode, struct herd_err *err)
{
	struct strbuf prefix = STRBUF_INIT;
	int fd = -1;
	for (const char *c = rel; ; ) {
		while (*c == '/')
			c++;
		size_t l = strcspn(c, "/");
		if (l == 0)
			break;
		if (prefix.len)
			strbuf_addch(&prefix, '/');
		strbuf_add(&prefix, c, l);
		c += l;
		if (l == 1 && prefix.buf[prefix.len - 1] == '.')
			continue;
		/* mkdirat does not follow a final symlink; the openat2 below
		 * then checks where what exists really is. */
		int parent = prefix.len > l ? -1 : dirfd;
		if (parent < 0) {
			char *dir = xstrndup(prefix.buf, prefix.len - l - 1);
			parent = confined_openat(dirfd, dir, O_PATH | O_DIRECTORY, 0);
			free(dir);
			if (parent < 0) {
				fd = parent;
				goto fail;
			}
		}
		int r = mkdirat(parent, prefix.buf + prefix.len - l, mode) < 0 && errno != EEXIST
			? -errno : 0;
		if (parent != dirfd)
			close(parent);
		if (r < 0) {
			fd = r;
			goto fail;
		}
	}
	fd = confined_openat(dirfd, prefix.len ? prefix.buf : ".", O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		goto fail;
	strbuf_release(&prefix);
	return fd;
fail:
	herd_errf(err, fd, "directory %s: %s", prefix.buf,
		  fd == -EXDEV ? "leaves the task directory (symlink)" : strerror(-fd));
	strbuf_release(&prefix);
	return fd;
}

int confined_write_file(int dirfd, const char *rel, const void *data, size_t len,
			unsigned perms, struct herd_err *err)
{
	return confined_write_file_owned(dirfd, rel, data, len, perms, -1, -1, err);
}

int confined_write_file_owned(int dirfd, const char *rel, const void *data, size_t len,
			      unsigned perms, long uid, long gid, struct herd_err *err)
{
	const char *slash = strrchr(rel, '/');
	char *dir = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup(".");
	const char *name = slash ? slash + 1 : rel;
	char *tmp = NULL;
	int pfd = -1, fd = -1, rc;

	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		rc = herd_errf(err, -EINVAL, "file %s: not a file name", rel);
		goto out;
	}
	pfd = confined_mkdirs(dirfd, dir, 0755, err);
	if (pfd < 0) {
		rc = pfd;
		goto out;
	}
	/* O_PATH fds cannot be fsynced: reopen the directory for that. */
	int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	pfd = dfd;
	if (pfd < 0) {
		rc = herd_errf(err, -errno, "directory of %s: %s", rel, strerror(errno));
		goto out;
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tmp = xasprintf(".%s.%d.%ld.tmp", name, (int)getpid(), ts.tv_nsec);
	fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = herd_errf(err, -errno, "file %s: %s", rel, strerror(errno));
		goto out;
	}
	const char *p = data;
	for (size_t done = 0; done < len; ) {
		ssize_t n = write(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = herd_errf(err, -errno, "file %s: %s", rel, strerror(errno));
			goto out_unlink;
		}
		done += (size_t)n;
	}
	/* before fchmod: a chown clears the set-id bits */
	if ((uid >= 0 || gid >= 0) && fchown(fd, (uid_t)uid, (gid_t)gid) < 0) {
		rc = herd_errf(err, -errno, "file %s: owner uid %ld gid %ld: %s%s", rel, uid, gid,
			       strerror(errno), errno == EPERM && geteuid() != 0 ?
			       " (only an agent that runs as root may set uid or gid)" : "");
		goto out_unlink;
	}
	if (fchmod(fd, perms & 07777) < 0 || fsync(fd) < 0) {
		rc = herd_errf(err, -errno, "file %s: %s", rel, strerror(errno));
		goto out_unlink;
	}
	/* renameat replaces a symlink at name rather than following it. */
	if (renameat(pfd, tmp, pfd, name) < 0) {
		rc = herd_errf(err, -errno, "file %s: %s", rel, strerror(errno));
		goto out_unlink;
	}
	fsync(pfd);
	rc = 0;
	goto out;
out_unlink:
	unlinkat(pfd, tmp, 0);
out:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	free(tmp);
	free(dir);
	return rc;
}
