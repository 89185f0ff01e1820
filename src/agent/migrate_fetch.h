/* migrate_fetch: the new node's half of ephemeral_disk { migrate }
 * (docs/jobspec.md, "ephemeral_disk"): the previous allocation ran on
 * another node; once the server says it ended, this node's agent asks that
 * node's agent for its data (GET /v1/client/allocation/:prev/migrate?for=
 * <this allocation>, migrate_serve.h) with the node token, unpacks the
 * archive (migrate_tar.h) into a directory of its own beside the
 * allocation directories, <alloc_dir>/.migrate-<id>, and only once it is
 * complete moves it into place (sticky_disk_move): a failure part way
 * leaves nothing.  Called from sticky_disk.c. */
#ifndef HERD_AGENT_MIGRATE_FETCH_H
#define HERD_AGENT_MIGRATE_FETCH_H

#include <stddef.h>

struct alloc_runner;

/* Brings prev's data into ar's directory (root: the directory holding the
 * allocation directories; tasks: ar's task names).  Returns how many
 * directories moved in (0: none, msg says why: prev ran on this node, its
 * node is lost or down, the transfer failed), or -1 when the allocation
 * was stopped or the client shuts down while it waited for prev to end. */
int migrate_fetch(struct alloc_runner *ar, const char *prev, const char *root,
		  const char *const *tasks, size_t ntasks, char *msg, size_t msglen);

#endif
