/* migrate_tar: the tar stream of ephemeral_disk { migrate } (docs/jobspec.md,
 * "ephemeral_disk"): an allocation's alloc/data and its tasks' local/ as a
 * POSIX ustar archive, written by the node that ran it and unpacked by the
 * node of its replacement.
 *
 * What crosses: directories and regular files (mode bits 0777, no owner,
 * no times kept); symbolic links, hard links, devices and FIFOs are left out
 * by the writer and refused by the reader.  A file of 8 GiB or more has its
 * size in base 256 (GNU's extension); paths are at most 255 bytes (ustar's
 * prefix and name).
 *
 * The reader trusts nothing in the stream: every path must be relative,
 * without "." or ".." or empty components, and begin alloc/data or
 * <task>/local for one of the tasks it was given; entries are made beneath
 * the directory it was given, component by component, never following a
 * link (nothing there is one: it makes only directories and files), a
 * file never replacing another (O_EXCL).  The archive must end with its
 * end marker: a stream cut short is an error, and the caller removes what
 * was unpacked. */
#ifndef HERD_AGENT_MIGRATE_TAR_H
#define HERD_AGENT_MIGRATE_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Writes the archive of the allocation directory open at dirfd (alloc/data,
 * <task>/local for tasks[0..ntasks)) to out, end marker included.  A
 * directory absent under dirfd is left out.  0, or -errno with err (what
 * was written stays written, without the end marker). */
int migrate_tar_write(int out, int dirfd, const char *const *tasks, size_t ntasks,
		      struct herd_err *err);

/* Whether path may be unpacked (the reader's checks above). */
bool migrate_tar_path_ok(const char *path, const char *const *tasks, size_t ntasks);

struct migrate_untar;

/* A reader that unpacks beneath the directory open at dirfd (borrowed: it
 * must stay open until migrate_untar_free); tasks are copied. */
struct migrate_untar *migrate_untar_new(int dirfd, const char *const *tasks, size_t ntasks);
/* Feeds n bytes of the stream.  0, or -errno with err (the reader refuses
 * everything after a failure). */
int migrate_untar_feed(struct migrate_untar *u, const void *buf, size_t n, struct herd_err *err);
/* The stream ended: 0 when the archive was complete, -EPROTO with err
 * otherwise. */
int migrate_untar_finish(struct migrate_untar *u, struct herd_err *err);
void migrate_untar_free(struct migrate_untar *u); /* accepts NULL */

#endif
