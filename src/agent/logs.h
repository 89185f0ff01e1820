/* logs: reading a task's rotated log files (drivers/logrot.h writes them:
 * <log_dir>/<task>.<stdout|stderr>.<N>, the highest N the newest) as one
 * stream, for `herd alloc logs` (GET /v1/client/fs/logs/:alloc).
 *
 * A reader holds one file open at a time.  At the end of it, it goes on
 * with the lowest index above it that exists (the writer rotated; files
 * deleted by max_files in between are skipped), so following survives
 * rotation; an open file that the writer deleted is still read to its end.
 *
 * Library code: nothing here prints.  No threads; one reader per stream. */
#ifndef HERD_AGENT_LOGS_H
#define HERD_AGENT_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define LOGS_NAME_MAX 128

struct log_reader {
	int dirfd;                 /* the log dir, O_PATH */
	char base[LOGS_NAME_MAX + 16]; /* "<task>.stdout" */
	int fd;                    /* the file being read, -1 none yet */
	uint64_t index;            /* its index */
};

/* The marker a task with logs { disabled } leaves in the log dir,
 * "<task>.logs-disabled": `herd alloc logs` says why there is nothing. */
#define LOGS_DISABLED_SUFFIX ".logs-disabled"

/* Whether name is acceptable as a task name in a file request: 1..128 of
 * [A-Za-z0-9_.-], not "." or "..", no '/' (path traversal is refused). */
bool logs_valid_name(const char *name);

/* Opens the stream `type` ("stdout" or "stderr") of task in log_dir.
 * from_end: position `offset` bytes before the end of the newest file
 * (at most to its start), else `offset` bytes after the start of the
 * oldest file (crossing files).  A stream with no file yet is not an
 * error: reads return 0 until one appears.  Returns 0, or -EINVAL (bad
 * name or type), -errno (log dir) with err. */
int log_reader_open(struct log_reader *r, const char *log_dir, const char *task,
		    const char *type, bool from_end, int64_t offset, struct herd_err *err);

/* Reads up to len bytes.  Returns the count, 0 when nothing more is there
 * now (follow: try again later), or -errno. */
ssize_t log_reader_read(struct log_reader *r, char *buf, size_t len);

/* Closes the reader; accepts a closed or zeroed one (fds -1 or 0 with
 * dirfd 0 are not closed: zero it with log_reader_init first). */
void log_reader_init(struct log_reader *r);
void log_reader_close(struct log_reader *r);

#endif
