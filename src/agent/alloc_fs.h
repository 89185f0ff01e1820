/* alloc_fs: safe reads of an allocation's directory for the client's file
 * API (client_fs.c: GET /v1/client/fs/{ls,stat,cat,readat}/:alloc, `herd
 * alloc fs`).
 *
 * A request names a path relative to the allocation's directory
 * (<alloc_dir>/<id>: alloc/{logs,tmp,data}, <task>/{local,secrets,tmp}).
 * The task owns that tree and may plant anything in it, so nothing read
 * here may leave it:
 *
 *   - the path is checked as text first (alloc_fs_clean_path): no ".."
 *     component, no NUL, bounded length; "/" and "" name the root, a
 *     leading '/' is dropped, "." and empty components vanish;
 *   - a task's secrets dir (<task>/secrets and below) is never served;
 *   - it is opened beneath the root's fd with openat2(RESOLVE_BENEATH |
 *     RESOLVE_NO_MAGICLINKS): a symlink the task made is followed only
 *     while it stays inside the allocation's directory (one to
 *     /etc/passwd, or up through "..", fails with -EXDEV); on a kernel
 *     without openat2 (before 5.6) each component is opened with
 *     O_NOFOLLOW instead, which refuses every symlink (-ELOOP);
 *   - what was opened is checked again as resolved (alloc_fs_check_opened):
 *     a symlink that stays inside but lands in a secrets dir is refused.
 *
 * Only regular files and directories are opened for reading: a FIFO, a
 * socket or a device node the task made is refused (-EINVAL) without
 * being opened for reading, so that no read blocks or touches a device.
 *
 * Library code: nothing here prints.  Every fd is close-on-exec. */
#ifndef HERD_AGENT_ALLOC_FS_H
#define HERD_AGENT_ALLOC_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include <jansson.h>

#include "common/err.h"

/* The longest path a request may name (bytes, after cleaning). */
#define ALLOC_FS_PATH_MAX 4096
/* The most entries one listing answers (alloc_fs_list). */
#define ALLOC_FS_LIST_MAX 10000

/* Cleans path (a request's, relative to the allocation's dir) into out
 * (size >= ALLOC_FS_PATH_MAX + 1): components joined by '/', no leading or
 * trailing '/', "" for the root.  Returns 0, -EINVAL (a ".." component,
 * NUL, too long) or -EPERM (in a task's secrets dir), with err. */
int alloc_fs_clean_path(const char *path, char *out, size_t size, struct herd_err *err);

/* Whether rel (cleaned) is a task's secrets dir or below it:
 * "<task>/secrets[/...]" for any first component but "alloc". */
bool alloc_fs_is_secret(const char *rel);

/* Opens rel (cleaned) beneath rootfd with flags (O_CLOEXEC is added),
 * following symlinks only while they stay beneath (see above).  Returns
 * the fd, or -errno with err: -ENOENT, -ENOTDIR, -EXDEV (leaves the dir),
 * -ELOOP (a symlink, where it cannot be followed safely). */
int alloc_fs_open(int rootfd, const char *rel, int flags, struct herd_err *err);

/* The same through the O_NOFOLLOW walk only (what alloc_fs_open does
 * without openat2; public for tests). */
int alloc_fs_open_walk(int rootfd, const char *rel, int flags, struct herd_err *err);

/* Checks fd (opened by alloc_fs_open beneath rootfd) as resolved: it must
 * lie beneath the root and outside every secrets dir (a symlink inside
 * may point into one).  Reads /proc/self/fd; where /proc is not mounted
 * the textual checks stand alone.  Returns 0, -EXDEV or -EPERM with err. */
int alloc_fs_check_opened(int rootfd, int fd, struct herd_err *err);

/* Opens rel for a stat: O_PATH (nothing is read, a FIFO does not block),
 * checked (alloc_fs_check_opened), with its stat in *st.  Returns the fd or
 * -errno with err. */
int alloc_fs_open_path(int rootfd, const char *rel, struct stat *st, struct herd_err *err);

/* Opens rel for reading: a regular file (dir false) or a directory (dir
 * true), anything else refused before it is opened for reading (-EINVAL;
 * -EISDIR, -ENOTDIR for the other kind).  *st is its stat.  Returns the
 * fd or -errno with err. */
int alloc_fs_open_read(int rootfd, const char *rel, bool dir, struct stat *st,
		       struct herd_err *err);

/* The answer's entry for a file: {"name", "is_dir", "size", "file_mode"
 * (as ls shows it: "-rw-r--r--", "drwxr-xr-x", "lrwxrwxrwx"), "mod_time"
 * (unix ns)}.  New reference. */
json_t *alloc_fs_entry_json(const char *name, const struct stat *st);

/* "text/plain; charset=utf-8" when the len bytes at p (a file's first
 * ones) are UTF-8 without NUL (a cut last character allowed), else
 * "application/octet-stream". */
const char *alloc_fs_content_type(const char *p, size_t len);

/* The entries of the directory fd (taken: closed here), sorted by
 * name, "." and ".." left out, symlinks shown as such (not followed), at
 * most ALLOC_FS_LIST_MAX (*truncated says whether more were there).
 * Returns 0 with *out (a new array) or -errno with err. */
int alloc_fs_list(int fd, json_t **out, bool *truncated, struct herd_err *err);

#endif
