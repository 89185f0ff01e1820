/* client_reply: the client API's JSON answers (client_reply.h). */
#include <string.h>

#include "agent/client_reply.h"

struct MHD_Response *client_json_response(json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
								 MHD_RESPMEM_MUST_FREE);
	json_decref(j);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	return r;
}

enum MHD_Result client_reply_json(struct MHD_Connection *conn, unsigned status, json_t *j)
{
	struct MHD_Response *r = client_json_response(j);
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

enum MHD_Result client_reply_error(struct MHD_Connection *conn, unsigned status,
				   const char *code, const char *msg)
{
	return client_reply_json(conn, status,
				 json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg));
}
