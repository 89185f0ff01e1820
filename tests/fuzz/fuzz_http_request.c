/* Fuzz target: the socket-free request path of the HTTP layer (route
 * matching, path parameters, query and blocking-query arguments, headers and
 * tokens, the JSON body with duplicate-key rejection, the handler call and
 * the response text).
 *
 * Input: "METHOD PATH[?k=v&k=v]\n", then "Name: value\n" header lines up to
 * an empty line, then the body.  Query arguments are split here without
 * percent-decoding (libmicrohttpd decodes them before the core sees them). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http-int.h"

static int echo(struct http_request *req, struct http_response *resp, void *ctx)
{
	const char *id = http_param(req, "id");
	http_reply(resp, 200, json_pack("{s:s?, s:O?, s:s?, s:I}", "id", id, "body", req->body,
					"token", req->token, "index", (json_int_t)req->index));
	return 0;
}

static int failing(struct http_request *req, struct http_response *resp, void *ctx)
{
	return -5;
}

static struct http_router *router(void)
{
	static struct http_router *r;
	if (r)
		return r;
	r = http_router_new();
	http_routes_base(r, NULL);
	http_router_add(r, "GET", "/v1/job/:id", echo, HTTP_ROUTE_BLOCKING, NULL, NULL);
	http_router_add(r, "POST", "/v1/job/:id", echo, HTTP_ROUTE_BODY, NULL, NULL);
	http_router_add(r, "GET", "/v1/job/:id/allocations", echo, HTTP_ROUTE_BLOCKING, NULL, NULL);
	http_router_add(r, "PUT", "/v1/jobs/parse", echo, HTTP_ROUTE_BODY, NULL, NULL);
	http_router_add(r, "DELETE", "/v1/fail/:x", failing, 0, NULL, NULL);
	return r;
}

static char *line_at(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *stop = nl ? nl : end;
	char *s = strndup(*p, (size_t)(stop - *p));
	*p = nl ? nl + 1 : end;
	if (!s)
		abort();
	return s;
}

static void add_query(struct http_request_state *st, char *qs)
{
	char *save = NULL;
	for (char *kv = strtok_r(qs, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (eq)
			*eq++ = '\0';
		http_request_add_query(st, kv, eq ? eq : "");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct http_limits limits = { 64 * 1024, 1000000000LL };
	struct http_request_state st;
	struct http_response resp = { 0 };
	char *first = line_at(&p, end), *sp, *q;
	size_t len;

	sp = strchr(first, ' ');
	if (sp)
		*sp++ = '\0';
	q = sp ? strchr(sp, '?') : NULL;
	if (q)
		*q++ = '\0';
	http_request_state_init(&st, first, sp ? sp : "");
	if (q)
		add_query(&st, q);
	while (p < end) {
		char *h = line_at(&p, end), *colon = strchr(h, ':');
		if (!*h) {
			free(h);
			break;
		}
		if (colon) {
			*colon++ = '\0';
			while (*colon == ' ')
				colon++;
			http_request_add_header(&st, h, colon);
		}
		free(h);
	}
	/* the body in two pieces, as it arrives from the network */
	http_request_add_body(&st, p, (size_t)(end - p) / 2, limits.max_body);
	http_request_add_body(&st, p + (end - p) / 2, (size_t)(end - p) - (size_t)(end - p) / 2,
			      limits.max_body);
	if (http_request_prepare(&st, router(), &limits, &resp) == 0) {
		(void)http_request_should_wait(&st, 7);
		http_request_run(&st, 7, &resp);
	}
	if (resp.status < 100 || resp.status > 599 || !resp.body)
		abort(); /* every request gets an answer */
	free(http_response_text(&resp, &len));
	http_response_release(&resp);
	http_request_state_release(&st);
	free(first);
	return 0;
}
