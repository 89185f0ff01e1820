/* migrate_serve: the old node's half of ephemeral_disk { migrate }
 * (docs/jobspec.md, "ephemeral_disk"): the answer to GET
 * /v1/client/allocation/:id/migrate, once client_http.c checked the
 * caller (its token reads the replacement, which the server says replaces
 * id).  The other half is migrate_fetch.h. */
#ifndef HERD_AGENT_MIGRATE_SERVE_H
#define HERD_AGENT_MIGRATE_SERVE_H

#include <microhttpd.h>

/* Queues the archive (migrate_tar.h) of <alloc_dir>/<alloc>'s alloc/data
 * and its task dirs' local/, written by a thread of its own into a pipe
 * that the response reads (the data may be large: nothing is held in
 * memory or on disk).  A failure part way leaves the archive without its
 * end marker, which the reader refuses.  404 when this node has no
 * directory of alloc. */
enum MHD_Result migrate_serve(struct MHD_Connection *conn, const char *alloc_dir,
			      const char *alloc);

#endif
