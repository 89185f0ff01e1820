/* logrot: one output stream of a task into rotated files, as Nomad names
 * them: <dir>/<task>.stdout.0, .1, ... with the highest index the newest.
 *
 * A file is filled up to max_size bytes, then the next index is opened and
 * files older than the newest max_files are deleted.  Opening continues
 * the newest existing file while it has room (a restarted task appends to
 * its log), so that `herd alloc logs -f` sees one growing sequence.
 * Used by the task shim; plain file I/O, no threads. */
#ifndef HERD_DRIVERS_LOGROT_H
#define HERD_DRIVERS_LOGROT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct logrot {
	int dirfd;          /* the log dir, O_RDONLY|O_DIRECTORY */
	char *base;         /* "<task>.stdout" */
	int max_files;      /* >= 1 */
	int64_t max_size;   /* >= 1 */
	int fd;             /* the file being written, -1 none (yet) */
	uint64_t index;     /* its index; with fd -1, the one the next write makes */
	int64_t size;       /* its size */
	bool scanned;       /* the dir was looked at (the first write does) */
};

/* Opens the stream base in dir: nothing is listed or made until
 * logrot_write, whose first call continues the newest existing file when
 * it has room.  Returns 0, or -errno with err (dir missing, bad
 * arguments). */
int logrot_open(struct logrot *lr, const char *dir, const char *base, int max_files,
		int64_t max_size, struct herd_err *err);

/* Appends len bytes, making the stream's next file when there is none
 * and rotating whenever a file reaches max_size (a chunk may be split
 * across files).  Returns 0 or -errno (the newest file not openable: the
 * next write starts a new one). */
int logrot_write(struct logrot *lr, const void *buf, size_t len);

/* Closes the files; accepts a zeroed or closed logrot. */
void logrot_close(struct logrot *lr);

#endif
