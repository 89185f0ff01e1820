/* http-int.h: the socket-free core of the HTTP layer; private to
 * src/server.  The server (http_server.c) and the fuzz target both drive a
 * request through it: http_request_prepare (match the route, parse the
 * query, the headers and the JSON body), then, possibly after a blocking
 * wait, http_request_run (call the handler). */
#ifndef HERD_SERVER_HTTP_INT_H
#define HERD_SERVER_HTTP_INT_H

#include "common/strbuf.h"
#include "server/http.h"

struct http_route {
	char *method;
	char *pattern;
	char **segs;    /* the pattern split at '/', without the leading "" */
	int nsegs;
	http_handler_fn *fn;
	unsigned flags;
	void *ctx;
};

struct http_router {
	struct http_route *routes;
	size_t n, alloc;
	http_error_hook_fn *on_error;
	void *on_error_arg;
};

/* Limits the core applies; zeros mean the defaults of http.h. */
struct http_limits {
	size_t max_body;
	int64_t max_wait_ns;
};

/* A request as read from the wire, before checks.  Strings are copied by
 * http_request_add_*; body is appended as it comes. */
struct http_request_state {
	struct http_request req;
	char *method, *path;
	char *pathbuf;               /* path split into params (owned) */
	size_t aquery, aheaders;
	struct strbuf body;
	int body_too_large;          /* the body went past max_body: discarded */
	const struct http_route *route;
	const struct http_router *router;
};

/* Starts a request; frees with http_request_state_release. */
void http_request_state_init(struct http_request_state *st, const char *method,
			     const char *path);
void http_request_state_release(struct http_request_state *st);
void http_request_add_query(struct http_request_state *st, const char *key, const char *value);
void http_request_add_header(struct http_request_state *st, const char *key, const char *value);
/* Appends body bytes; past max_body it keeps nothing more and marks the
 * body too large. */
void http_request_add_body(struct http_request_state *st, const char *data, size_t len,
			   size_t max_body);

/* Matches the route and checks the request.  Returns 0 when the handler
 * may run (st->route set, req filled), or 1 when resp holds the error to
 * send (404, 405, 413, 400). */
int http_request_prepare(struct http_request_state *st, const struct http_router *router,
			 const struct http_limits *limits, struct http_response *resp);

/* Whether a prepared request must wait: a blocking route, ?index given, and
 * the current index not above it. */
int http_request_should_wait(const struct http_request_state *st, uint64_t current);
/* Whether its wait also ends on a poke of the watch (HTTP_ROUTE_MEMORY). */
bool http_request_wakes_on_poke(const struct http_request_state *st);

/* Runs the handler with req.index = current and fills resp; a handler
 * failure or a handler that answered nothing becomes a 500. */
void http_request_run(struct http_request_state *st, uint64_t current,
		      struct http_response *resp);

/* The in-process transport of a server (http_local.c): requests served on
 * the caller's thread through router, with the watch's blocking queries
 * and the limits' max_wait.  http_local_free ends waiting calls (they
 * answer at once), waits for running ones and refuses new ones. */
struct http_local;
struct http_local *http_local_new(const struct http_router *router, struct index_watch *watch,
				  const struct http_limits *limits);
const struct httpc_local *http_local_transport(struct http_local *l);
void http_local_free(struct http_local *l);

/* Writes the response body as text (compact JSON and a newline; a text
 * answer's text as it is); the caller frees it.  *len receives its
 * length. */
char *http_response_text(const struct http_response *resp, size_t *len);

#endif
