/* The file routes of the client's HTTP API; see client_fs.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/alloc_fs.h"
#include "agent/alloc_gc.h"
#include "agent/client_fs.h"
#include "agent/client_reply.h"
#include "common/xalloc.h"

/* The bytes a stat reads to tell text from binary. */
#define SNIFF_LEN 512

/* Answers 200 with j (taken); truncated: a listing cut short. */
static enum MHD_Result reply_ok(struct MHD_Connection *conn, json_t *j, bool truncated)
{
	struct MHD_Response *r = client_json_response(j);
	enum MHD_Result rc;

	if (truncated)
		MHD_add_response_header(r, "X-Herd-Truncated", "true");
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* The answer to an alloc_fs failure rc (err's message). */
static enum MHD_Result reply_fs_error(struct MHD_Connection *conn, int rc,
				      const struct herd_err *err)
{
	switch (rc) {
	case -ENOENT:
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", err->msg);
	case -ENOTDIR:
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "not_a_directory", err->msg);
	case -EISDIR:
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "is_a_directory", err->msg);
	case -EINVAL:
	case -ENAMETOOLONG:
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST,
				   strstr(err->msg, "regular file") ? "not_a_regular_file"
								    : "bad_path", err->msg);
	case -EXDEV:
	case -ELOOP:
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "outside_allocation", err->msg);
	case -EPERM:
		return client_reply_error(conn, MHD_HTTP_FORBIDDEN, "secrets_not_served", err->msg);
	case -EACCES:
		return client_reply_error(conn, MHD_HTTP_FORBIDDEN, "permission_denied", err->msg);
	case -EAGAIN:
		return client_reply_error(conn, MHD_HTTP_CONFLICT, "changed", err->msg);
	default:
		return client_reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "io_error", err->msg);
	}
}

bool client_fs_op_known(const char *op)
{
	return !strcmp(op, "ls") || !strcmp(op, "stat") || !strcmp(op, "cat") ||
	       !strcmp(op, "readat");
}

/* A byte count from the query: absent is def; else a decimal >= 0.
 * Returns 0, or -1 for anything else. */
static int query_count(struct MHD_Connection *conn, const char *key, long long def,
		       long long *out)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
	char *end;

	*out = def;
	if (!v)
		return 0;
	errno = 0;
	*out = strtoll(v, &end, 10);
	return !*v || *end || errno || *out < 0 || *v == '-' || *v == '+' ? -1 : 0;
}

/* Sends len bytes of fd (taken) from off. */
static enum MHD_Result reply_file(struct MHD_Connection *conn, int fd, uint64_t off,
				  uint64_t len)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	if (!len) {
		close(fd);
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		/* read (or sent) from the file as the connection takes it */
		r = MHD_create_response_from_fd_at_offset64(len, fd, off);
		if (!r) {
			close(fd);
			return client_reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "io_error",
					   "cannot send the file");
		}
	}
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* stat: the entry, named by the path's last component ("/" for the
 * root), with content_type for a regular file. */
static enum MHD_Result serve_stat(struct MHD_Connection *conn, int rootfd, const char *rel)
{
	struct herd_err err = { 0, "" };
	const char *slash = strrchr(rel, '/');
	struct stat st;
	json_t *entry;
	int fd = alloc_fs_open_path(rootfd, rel, &st, &err);

	if (fd < 0)
		return reply_fs_error(conn, fd, &err);
	close(fd);
	entry = alloc_fs_entry_json(*rel ? (slash ? slash + 1 : rel) : "/", &st);
	if (S_ISREG(st.st_mode)) {
		char buf[SNIFF_LEN];
		ssize_t n;
		fd = alloc_fs_open_read(rootfd, rel, false, &st, &err);
		if (fd >= 0) {
			n = pread(fd, buf, sizeof(buf), 0);
			close(fd);
			if (n >= 0)
				json_object_set_new(entry, "content_type",
						    json_string(alloc_fs_content_type(buf, (size_t)n)));
		}
	}
	return reply_ok(conn, entry, false);
}

static enum MHD_Result serve_op(struct MHD_Connection *conn, int rootfd, const char *op,
				const char *rel)
{
	struct herd_err err = { 0, "" };
	struct stat st;
	long long off = 0, limit = -1;
	int fd;

	if (!strcmp(op, "stat"))
		return serve_stat(conn, rootfd, rel);
	if (!strcmp(op, "ls")) {
		json_t *list;
		bool truncated;
		fd = alloc_fs_open_read(rootfd, rel, true, &st, &err);
		if (fd < 0)
			return reply_fs_error(conn, fd, &err);
		if ((fd = alloc_fs_list(fd, &list, &truncated, &err)) < 0)
			return reply_fs_error(conn, fd, &err);
		return reply_ok(conn, list, truncated);
	}
	if (!strcmp(op, "readat") &&
	    (query_count(conn, "offset", 0, &off) < 0 || query_count(conn, "limit", -1, &limit) < 0))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "offset and limit must be byte counts (0 or more)");
	fd = alloc_fs_open_read(rootfd, rel, false, &st, &err);
	if (fd < 0)
		return reply_fs_error(conn, fd, &err);
	/* the size when opened: a growing file is read to there */
	uint64_t size = (uint64_t)st.st_size, start = (uint64_t)off < size ? (uint64_t)off : size;
	uint64_t len = size - start;
	if (limit >= 0 && (uint64_t)limit < len)
		len = (uint64_t)limit;
	return reply_file(conn, fd, start, len);
}

enum MHD_Result client_fs_serve(struct MHD_Connection *conn, const char *alloc_dir,
				const char *op, const char *alloc_id)
{
	const char *path = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "path");
	struct herd_err err = { 0, "" };
	char rel[ALLOC_FS_PATH_MAX + 1], *dir;
	enum MHD_Result rc;
	int rootfd, r;

	if ((r = alloc_fs_clean_path(path ? path : "/", rel, sizeof(rel), &err)) < 0)
		return reply_fs_error(conn, r, &err);
	dir = xasprintf("%s/%s", alloc_dir, alloc_id);
	rootfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(dir);
	if (rootfd < 0) {
		if (alloc_gc_collected(alloc_dir, alloc_id))
			return client_reply_error(conn, MHD_HTTP_GONE, "gone",
					   "the allocation ended and its directory was "
					   "garbage-collected on this node");
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
				   "no such allocation on this node (an allocation that ended "
				   "may have been garbage-collected)");
	}
	rc = serve_op(conn, rootfd, op, rel);
	close(rootfd);
	return rc;
}
