/* Writing and reading a template's files; see template.h.  The language
 * itself is template_lang.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/confined.h"
#include "agent/template.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

int template_write_file(const char *task_dir, const char *destination, const void *data,
			size_t len, unsigned perms, struct herd_err *err)
{
	return template_write_owned(task_dir, destination, data, len, perms, -1, -1, err);
}

int template_write_owned(const char *task_dir, const char *destination, const void *data,
			 size_t len, unsigned perms, long uid, long gid, struct herd_err *err)
{
	char *rel = NULL;
	int rc = confined_relpath(task_dir, destination, "template destination", &rel, err);
	if (rc < 0)
		return rc;
	int root = open(task_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		rc = herd_errf(err, -errno, "task dir %s: %s", task_dir, strerror(errno));
	} else {
		rc = confined_write_file_owned(root, rel, data, len, perms, uid, gid, err);
		if (rc < 0)
			herd_err_prefix(err, "template destination %s", destination);
		close(root);
	}
	free(rel);
	return rc;
}

int template_read_source(const char *task_dir, const char *source, size_t max, char **out,
			 struct herd_err *err)
{
	char *rel = NULL;
	int rc = confined_relpath(task_dir, source, "template source", &rel, err);
	if (rc < 0)
		return rc;
	struct strbuf sb = STRBUF_INIT;
	int root = open(task_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = root < 0 ? -errno : confined_openat(root, rel, O_RDONLY, 0);
	if (root >= 0)
		close(root);
	if (fd < 0) {
		rc = herd_errf(err, fd, "template source %s: %s", source,
			       fd == -EXDEV ? "leaves the task directory" : strerror(-fd));
		goto out;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = herd_errf(err, -errno, "template source %s: %s", source, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (sb.len + (size_t)n > max) {
			rc = herd_errf(err, -EFBIG, "template source %s: larger than %zu bytes",
				       source, max);
			break;
		}
		strbuf_add(&sb, buf, (size_t)n);
	}
	close(fd);
	if (rc == 0)
		*out = strbuf_detach(&sb, NULL);
out:
	strbuf_release(&sb);
	free(rel);
	return rc;
}

int template_parse_perms(const char *s, unsigned *out)
{
	if (!s || !*s || strlen(s) > 5)
		return -EINVAL;
	unsigned v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '7')
			return -EINVAL;
		v = v * 8 + (unsigned)(*p - '0');
	}
	if (v > 07777)
		return -EINVAL;
	*out = v;
	return 0;
}

int64_t template_wait_due(int64_t first, int64_t last, int64_t min, int64_t max)
{
	int64_t quiet = last + min, bound = first + max;
	return quiet < bound ? quiet : bound;
}

int64_t template_splay_delay(int64_t splay, uint64_t r)
{
	return splay > 0 ? (int64_t)(r % (uint64_t)splay) : 0;
}
