/* client_reply: the JSON answers of the client's own HTTP API
 * (client_http.h), shared by its handlers (client_http.c, client_fs.c,
 * migrate_serve.c) so that every one carries the same headers and error
 * body.  Each takes ownership of the JSON it is given. */
#ifndef HERD_AGENT_CLIENT_REPLY_H
#define HERD_AGENT_CLIENT_REPLY_H

#include <jansson.h>
#include <microhttpd.h>

/* A response with j (taken) as compact JSON, not to be cached; the caller
 * may add headers, queues it and destroys it. */
struct MHD_Response *client_json_response(json_t *j);

/* Answers status with j (taken) as JSON. */
enum MHD_Result client_reply_json(struct MHD_Connection *conn, unsigned status, json_t *j);

/* Answers status with herd's error body {"error": {"code", "message"}}. */
enum MHD_Result client_reply_error(struct MHD_Connection *conn, unsigned status,
				   const char *code, const char *msg);

#endif
