/* artifact: `artifact { source destination mode options headers }` of a task.
 *
 * Sources: http:// and https:// (libcurl; redirects followed up to 10
 * times, to http(s) only), file:///path and plain absolute paths.  A file
 * source must lie (after resolving symlinks) under one of
 * artifact_opts.file_roots, by default the allocation directory (the parent
 * of the task directory): a job cannot copy the agent's files or other
 * allocations' into its task.
 *
 * Destination: relative to the task directory (default "local/"), confined
 * to it like template destinations (confined.h: no "..", no absolute path
 * outside, no symlink leading out).  Modes (Nomad's):
 *   any   an archive (by the source path's extension: .tar .tar.gz .tgz
 *         .tar.bz2 .tbz2 .tar.xz .txz .zip) is unpacked into the
 *         destination directory; any other file is saved there under the
 *         last component of the source path;
 *   file  the destination is the file's own path; never unpacked;
 *   dir   the source must be an archive; unpacked into the destination.
 * options { archive = "false" } saves an archive without unpacking it.
 *
 * Checksum: options { checksum = "TYPE:HEX" } with TYPE sha256, sha512,
 * sha1 or md5 (nettle), checked on the downloaded bytes before anything is
 * unpacked or renamed into place; a mismatch fails the artifact.
 *
 * Archives (libarchive) are checked entry by entry: absolute paths, ".."
 * components, device nodes, fifos, sockets and hard links are rejected;
 * a symlink must be relative and point inside the destination; every
 * file is created beneath the destination with openat2(RESOLVE_BENEATH), so
 * "symlink, then a file through it" cannot write outside either.  Set-id
 * bits are dropped.  Entry count and unpacked size are limited.
 *
 * Retries: a failed download (connection error, timeout, HTTP 5xx, 408,
 * 429) is retried attempts - 1 times after backoff, 2 * backoff, ...
 * Other HTTP errors, checksum mismatches and unsafe archives fail at once.
 * Messages name the source: "artifact https://x/y.tar.gz: HTTP 404".
 *
 * Library code: nothing here prints.  Thread-safe as long as
 * curl_global_init has been called once (artifact_fetch calls it itself
 * the first time, which is not thread-safe: call it early). */
#ifndef HERD_AGENT_ARTIFACT_H
#define HERD_AGENT_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct artifact_spec {
	const char *source;         /* required */
	const char *destination;    /* NULL: "local/" */
	const char *mode;           /* "any" (NULL), "file", "dir" */
	const char *checksum;       /* options.checksum "sha256:..."; NULL: none */
	const char *archive;        /* options.archive: "false" disables unpacking */
	const char *const *headers; /* "Name: value", NULL-terminated; may be NULL */
};

struct artifact_opts {
	int attempts;                /* 0: 3 */
	int64_t backoff_ns;          /* first retry delay; 0: 1 s */
	int64_t connect_timeout_ns;  /* 0: 30 s */
	int64_t stall_timeout_ns;    /* abort when no byte arrives for this long; 0: 60 s */
	int64_t max_bytes;           /* download size limit; 0: 16 GiB */
	int64_t max_unpacked_bytes;  /* total of unpacked files; 0: 4 * max_bytes */
	const char *const *file_roots; /* NULL-terminated; NULL: the parent of task_dir */
	/* NULL, or asked every 100 ms while a download runs or waits to
	 * retry: true abandons the fetch (-ECANCELED), so that a task stopped
	 * meanwhile (its allocation's time limit, a stop) does not wait for
	 * a slow or stalled source */
	bool (*cancelled)(void *arg);
	void *cancel_arg;
};

/* Fetches one artifact into task_dir.  Returns 0, or -errno with err:
 * -EINVAL (bad spec or checksum syntax), -EXDEV (destination or an archive
 * entry leaves the directory), -EACCES (file source outside file_roots),
 * -EBADMSG (checksum mismatch), -EIO (HTTP error, after retries),
 * -EFBIG (size limits), -ECANCELED (opts->cancelled said so), ... .
 * A partly unpacked archive may be left behind
 * on failure (the task fails anyway). */
int artifact_fetch(const char *task_dir, const struct artifact_spec *a,
		   const struct artifact_opts *opts, struct herd_err *err);

#endif
