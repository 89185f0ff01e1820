/* routes_base.c: the routes every herd server answers, which also prove
 * the HTTP machinery: health, and the index as a blocking query. */
#include "server/http.h"

static int get_health(struct http_request *req, struct http_response *resp, void *ctx)
{
	http_reply(resp, 200, json_pack("{s:b}", "ok", 1));
	return 0;
}

static int get_status_index(struct http_request *req, struct http_response *resp, void *ctx)
{
	http_reply(resp, 200, json_pack("{s:I}", "index", (json_int_t)req->index));
	return 0;
}

int http_routes_base(struct http_router *r, struct herd_err *err)
{
	int rc = http_router_add(r, "GET", "/v1/agent/health", get_health, 0, NULL, err);
	if (rc == 0)
		rc = http_router_add(r, "GET", "/v1/status/index", get_status_index,
				     HTTP_ROUTE_BLOCKING, NULL, err);
	return rc;
}
