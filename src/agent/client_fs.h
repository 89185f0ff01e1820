/* client_fs: the file routes of the client's HTTP API (client_http.h,
 * docs/api.md "Client API"), over an allocation's directory:
 *
 *   GET /v1/client/fs/ls/:alloc?path=P       the entries of dir P (JSON array)
 *   GET /v1/client/fs/stat/:alloc?path=P     one entry (JSON object)
 *   GET /v1/client/fs/cat/:alloc?path=P      file P's bytes
 *   GET /v1/client/fs/readat/:alloc?path=P&offset=N&limit=M
 *                                            at most M bytes of P from N
 *
 * P is relative to <alloc_dir>/<alloc> ("/" or absent: its root) and is
 * read through alloc_fs.h, which keeps every read inside it and out of
 * the tasks' secrets dirs.  File bytes are sent from the file as they are
 * read (Content-Length: the size when opened), never loaded whole.
 *
 * Errors, {"error": {"code", "message"}}: 400 bad_path (".."),
 * outside_allocation (a symlink out), not_a_directory, is_a_directory,
 * not_a_regular_file, bad_request (offset, limit); 403 secrets_not_served;
 * 404 not_found (allocation or path); 410 gone (allocation collected). */
#ifndef HERD_AGENT_CLIENT_FS_H
#define HERD_AGENT_CLIENT_FS_H

#include <microhttpd.h>
#include <stdbool.h>

#define CLIENT_FS_PREFIX "/v1/client/fs/"

/* Whether op (the segment after CLIENT_FS_PREFIX) is one of ls, stat,
 * cat, readat. */
bool client_fs_op_known(const char *op);

/* Answers the request for op on alloc_id (checked by the caller: a valid
 * name, the caller authorized to read it) from <alloc_dir>/<alloc_id>. */
enum MHD_Result client_fs_serve(struct MHD_Connection *conn, const char *alloc_dir,
				const char *op, const char *alloc_id);

#endif
