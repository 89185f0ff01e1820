/* sticky_disk: ephemeral_disk { sticky } on the agent: the data of the
 * allocation a new one replaces moves into it before its tasks start
 * (sticky_disk.c says how and why). */
#ifndef HERD_AGENT_STICKY_DISK_H
#define HERD_AGENT_STICKY_DISK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct alloc_runner;

/* Moves <root>/<prev>/alloc/data and <root>/<prev>/<task>/local (for each
 * of tasks[0..ntasks)) into the same places under dir, exchanging them
 * with dir's (empty) ones; a directory absent under prev, or a symbolic
 * link (or anything but a directory) in place of one, stays behind.  Returns how many moved
 * (0: prev has no directory under root), or -errno with err (what was
 * moved before the failure stays moved). */
int sticky_disk_move(const char *root, const char *prev, const char *dir,
		     const char *const *tasks, size_t ntasks, struct herd_err *err);

/* The runner's step before its tasks start (alloc_runner.c): for a group
 * with ephemeral_disk { sticky } and an allocation that replaces another,
 * waits for the other's tasks on this client to stop and moves its data
 * here (sticky_disk_move); an event on each task says what happened.
 * Returns false when the client shuts down while it waits (the runner
 * then starts nothing); an allocation stopped meanwhile moves nothing. */
bool sticky_disk_take(struct alloc_runner *ar);

#endif
