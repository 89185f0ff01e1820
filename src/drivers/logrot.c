/* Rotated log files of a task stream; see logrot.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "drivers/logrot.h"

/* The index N of a name "<base>.N", or -1. */
static int64_t index_of(const char *name, const char *base)
{
	size_t blen = strlen(base);
	if (strncmp(name, base, blen) || name[blen] != '.' || !name[blen + 1])
		return -1;
	int64_t v = 0;
	for (const char *p = name + blen + 1; *p; p++) {
		if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

/* Deletes every <base>.N with N + max_files <= newest. */
static void prune(struct logrot *lr)
{
	int fd = openat(lr->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		int64_t n = index_of(de->d_name, lr->base);
		if (n >= 0 && (uint64_t)n + (uint64_t)lr->max_files <= lr->index)
			unlinkat(lr->dirfd, de->d_name, 0);
	}
	closedir(d);
}

static int open_index(struct logrot *lr, uint64_t index, bool append)
{
	char name[512];
	snprintf(name, sizeof(name), "%s.%" PRIu64, lr->base, index);
	int fd = openat(lr->dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			(append ? O_APPEND : O_TRUNC), 0644);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	if (lr->fd >= 0)
		close(lr->fd);
	lr->fd = fd;
	lr->index = index;
	lr->size = st.st_size;
	return 0;
}

int logrot_open(struct logrot *lr, const char *dir, const char *base, int max_files,
		int64_t max_size, struct herd_err *err)
{
	if (max_files < 1 || max_size < 1 || !*base || strchr(base, '/'))
		return herd_errf(err, -EINVAL, "log rotation: bad settings (max_files %d, "
				 "max_file_size %lld, name '%s')", max_files, (long long)max_size, base);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return herd_errf(err, -errno, "log dir %s: %s", dir, strerror(errno));
	*lr = (struct logrot){ dfd, xstrdup(base), max_files, max_size, -1, 0, 0, false };
	return 0;
}

/* The first write's look at the dir: continue after the newest existing
 * file (opening it makes no inode), or name the next one, which
 * open_pending makes.  Not at open: most batch tasks never write a
 * stream, and the listing was a dozen system calls per stream and task
 * start. */
static int resume(struct logrot *lr)
{
	int64_t newest = -1;
	int scan = openat(lr->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = scan >= 0 ? fdopendir(scan) : NULL;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			int64_t n = index_of(de->d_name, lr->base);
			if (n > newest)
				newest = n;
		}
		closedir(d);
	} else if (scan >= 0) {
		close(scan);
	}
	lr->scanned = true;
	if (newest < 0)
		return 0;
	int rc = open_index(lr, (uint64_t)newest, true);
	if (rc < 0) {
		/* not continued: the stream starts a file of its own after it */
		lr->index = (uint64_t)newest + 1;
		return rc;
	}
	if (lr->size >= lr->max_size) {
		close(lr->fd);
		lr->fd = -1;
		lr->index++;
		lr->size = 0;
	} else {
		prune(lr);
	}
	return 0;
}

/* Makes the file the stream writes next (lr->index, not there yet) and
 * deletes the ones max_files pushes out, now that a newer one exists. */
static int open_pending(struct logrot *lr)
{
	int rc = open_index(lr, lr->index, false);
	if (rc == 0)
		prune(lr);
	return rc;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int logrot_write(struct logrot *lr, const void *buf, size_t len)
{
	const char *p = buf;
	if (!lr->scanned && len) {
		int rc = resume(lr);
		if (rc < 0)
			return rc;
	}
	while (len) {
		if (lr->fd >= 0 && lr->size >= lr->max_size) {
			close(lr->fd);
			lr->fd = -1;
			lr->index++;
			lr->size = 0;
		}
		if (lr->fd < 0) {
			int rc = open_pending(lr);
			if (rc < 0)
				return rc;
		}
		size_t room = (size_t)(lr->max_size - lr->size);
		size_t n = len < room ? len : room;
		int rc = write_all(lr->fd, p, n);
		if (rc < 0)
			return rc;
		lr->size += (int64_t)n;
		p += n;
		len -= n;
	}
	return 0;
}

void logrot_close(struct logrot *lr)
{
	if (lr->base) {
		if (lr->fd >= 0)
			close(lr->fd);
		close(lr->dirfd);
		free(lr->base);
	}
	memset(lr, 0, sizeof(*lr));
	lr->fd = -1;
	lr->dirfd = -1;
}
