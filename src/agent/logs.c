/* Reading rotated task logs as one stream; see logs.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/logs.h"

bool logs_valid_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > LOGS_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (const char *s = name; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

void log_reader_init(struct log_reader *r)
{
	memset(r, 0, sizeof(*r));
	r->dirfd = -1;
	r->fd = -1;
}

void log_reader_close(struct log_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->fd = r->dirfd = -1;
}

/* The lowest index > after (after = -1: any), or -1 when none exists. */
static int64_t next_index(const struct log_reader *r, int64_t after, bool newest)
{
	int fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t blen = strlen(r->base);
	int64_t best = -1;
	struct dirent *de;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		char *end;
		unsigned long long v;
		if (strncmp(s, r->base, blen) || s[blen] != '.' || !s[blen + 1])
			continue;
		errno = 0;
		v = strtoull(s + blen + 1, &end, 10);
		if (*end || errno || s[blen + 1] < '0' || s[blen + 1] > '9' || v > INT64_MAX)
			continue;
		if ((int64_t)v <= after)
			continue;
		if (best < 0 || (newest ? (int64_t)v > best : (int64_t)v < best))
			best = (int64_t)v;
	}
	closedir(d);
	return best;
}

static int open_index(struct log_reader *r, uint64_t index)
{
	char name[sizeof(r->base) + 24];
	int fd;

	snprintf(name, sizeof(name), "%s.%llu", r->base, (unsigned long long)index);
	fd = openat(r->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = fd;
	r->index = index;
	return 0;
}

static int64_t file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 ? 0 : st.st_size;
}

int log_reader_open(struct log_reader *r, const char *log_dir, const char *task,
		    const char *type, bool from_end, int64_t offset, struct herd_err *err)
{
	int64_t idx;

	log_reader_init(r);
	if (!logs_valid_name(task))
		return herd_errf(err, -EINVAL, "task name \"%.40s\" is not valid", task ? task : "");
	if (!type || (strcmp(type, "stdout") && strcmp(type, "stderr")))
		return herd_errf(err, -EINVAL, "type must be stdout or stderr");
	if (offset < 0)
		offset = 0;
	r->dirfd = open(log_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->dirfd < 0)
		return herd_errf(err, -errno, "log dir %s: %s", log_dir, strerror(errno));
	snprintf(r->base, sizeof(r->base), "%s.%s", task, type);
	idx = next_index(r, -1, from_end);
	if (idx < 0)
		return 0;
	if (open_index(r, (uint64_t)idx) < 0)
		return 0;   /* rotated away just now: reads find the next one */
	if (from_end) {
		int64_t size = file_size(r->fd);
		lseek(r->fd, size > offset ? size - offset : 0, SEEK_SET);
		return 0;
	}
	/* From the start: skip offset bytes across files. */
	while (offset > 0) {
		int64_t size = file_size(r->fd);
		if (offset < size) {
			lseek(r->fd, offset, SEEK_SET);
			break;
		}
		offset -= size;
		idx = next_index(r, (int64_t)r->index, false);
		if (idx < 0 || open_index(r, (uint64_t)idx) < 0) {
			lseek(r->fd, 0, SEEK_END);
			break;
		}
	}
	return 0;
}

ssize_t log_reader_read(struct log_reader *r, char *buf, size_t len)
{
	for (;;) {
		ssize_t n;
		int64_t idx;

		if (r->fd < 0) {
			idx = next_index(r, -1, false);
			if (idx < 0 || open_index(r, (uint64_t)idx) < 0)
				return 0;
		}
		n = read(r->fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 0)
			return n < 0 ? -errno : n;
		/* At the end of this file: a newer one means it is complete. */
		idx = next_index(r, (int64_t)r->index, false);
		if (idx < 0)
			return 0;
		/* Re-read once: the writer may have added to the old file
		 * right before it rotated. */
		n = read(r->fd, buf, len);
		if (n > 0)
			return n;
		if (open_index(r, (uint64_t)idx) < 0)
			return 0;
	}
}
