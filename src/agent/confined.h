/* confined: file operations that cannot leave a directory.
 *
 * Templates and artifacts write where a job file says, inside a task
 * directory the task itself can change (it may plant symlinks there before
 * a restart re-renders a template).  Every path here is resolved with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the directory, so a
 * ".." or a symlink that points outside fails with -EXDEV instead of being
 * followed.  Linux 5.6+.
 *
 * Library code: nothing here prints. */
#ifndef HERD_AGENT_CONFINED_H
#define HERD_AGENT_CONFINED_H

#include <stddef.h>

#include "common/err.h"

/* The path p made relative to base: p itself when relative, the part after
 * "base/" when p is absolute and inside base, "." for base itself.
 * Rejects empty paths, ".." components and absolute paths outside base
 * with -EINVAL / -EXDEV and err (what names the path in messages).
 * Returns 0 with *rel (the caller frees). */
int confined_relpath(const char *base, const char *p, const char *what, char **rel,
		     struct herd_err *err);

/* openat2 beneath dirfd.  Returns the fd (O_CLOEXEC added) or -errno. */
int confined_openat(int dirfd, const char *rel, int flags, unsigned mode);

/* Makes the directories of rel (all of it) beneath dirfd with mode, and
 * returns an O_PATH fd of the last one, or -errno with err. */
int confined_mkdirs(int dirfd, const char *rel, unsigned mode, struct herd_err *err);

/* Writes data to rel beneath dirfd atomically: a temporary file in the
 * same directory, fchmod(perms), fsync, renameat over rel, fsync of the
 * directory.  Parent directories are made (0755).  Returns 0 or -errno
 * with err; nothing changes at rel on failure. */
int confined_write_file(int dirfd, const char *rel, const void *data, size_t len,
			unsigned perms, struct herd_err *err);
/* The same, the file given to uid and gid first (fchown; -1 keeps the
 * writer's): -EPERM with err when the caller may not (not root). */
int confined_write_file_owned(int dirfd, const char *rel, const void *data, size_t len,
			      unsigned perms, long uid, long gid, struct herd_err *err);

#endif
