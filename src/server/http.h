/* http: herd's HTTP/JSON layer (docs/api.md is the wire contract).
 *
 * A router maps a method and a path pattern under /v1 (segments that start
 * with ':' capture a parameter: "/v1/job/:id") to a handler.  The server
 * (GNU libmicrohttpd, a small thread pool, epoll) reads each request, checks
 * it (404 unknown path, 405 wrong method, 413 body over the limit, 400 bad
 * JSON or bad query values), hands the handler a parsed request and sends
 * what the handler answers, always with an X-Herd-Index header.  Answers
 * are JSON, except where a handler answers text with a content type of its
 * own (http_reply_text: GET /v1/metrics, the Prometheus text format).
 *
 * Blocking queries: a GET on a route marked HTTP_ROUTE_BLOCKING with
 * ?index=N (and optionally &wait=30s) is held, without a thread, until the
 * watched index passes N or the wait ends; then the handler runs and
 * answers with the state as it is.  The wait defaults to and is capped at
 * the server's max_wait (5 minutes).  A route also marked
 * HTTP_ROUTE_MEMORY answers state the store does not hold (the server's
 * reservations): its wait ends on index_watch_poke as well, and it then
 * answers with the same X-Herd-Index (nothing was stored).
 *
 * Handlers run on the server's threads, several at once. */
#ifndef HERD_SERVER_HTTP_H
#define HERD_SERVER_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/tls.h"
#include "store/index_watch.h"

#define HTTP_MAX_PARAMS 8
#define HTTP_MAX_PATH 2048
#define HTTP_DEFAULT_MAX_BODY (4 * 1024 * 1024)
#define HTTP_DEFAULT_MAX_WAIT_NS (5 * 60 * 1000000000LL)

struct http_kv {
	char *key;
	char *value;
};

/* A request as a handler sees it.  Everything here is owned by the
 * request and valid while the handler runs. */
struct http_request {
	const char *method;
	const char *path;             /* as received, without the query */
	struct http_kv params[HTTP_MAX_PARAMS]; /* from the pattern's :names */
	int nparams;
	struct http_kv *query;        /* decoded query arguments, in order */
	size_t nquery;
	struct http_kv *headers;
	size_t nheaders;
	json_t *body;                 /* the parsed JSON body; NULL when empty */
	const char *token;            /* X-Herd-Token, else Authorization: Bearer; or NULL */
	/* Blocking query: has_index is set when ?index= was given. */
	int has_index;
	uint64_t wait_index;
	int64_t wait_ns;
	/* The watched index when the handler was called (read before it, so
	 * that it never claims more than what the handler read). */
	uint64_t index;
	/* The caller's rights, set by the server's ACL guard (acl.h); NULL
	 * for routes registered without it. */
	const void *auth;
};

/* The value of path parameter / query argument / header (case-insensitive
 * name) `name`, or NULL.  For repeated query arguments, the first. */
const char *http_param(const struct http_request *req, const char *name);
const char *http_query(const struct http_request *req, const char *name);
const char *http_header(const struct http_request *req, const char *name);

/* What a handler answers: a JSON body, or a text (one or the other). */
struct http_response {
	int status;
	json_t *body;      /* owned by the response */
	/* A text answer, sent as it is (no newline added) with content_type
	 * instead of JSON, for formats other programs read (the Prometheus
	 * text format).  text is owned by the response (a NUL-terminated
	 * string of malloc); content_type is borrowed and must outlive the
	 * response (a string literal).  Both NULL for a JSON answer.  The
	 * in-process transport (http_local.c) hands a text answer to its
	 * caller as the status and a NULL body: the in-process client
	 * speaks JSON only. */
	char *text;
	const char *content_type;
	/* A file answer (http_reply_file): file_fd, owned by the response,
	 * is sent from its start to its end with content_type, then closed;
	 * the in-process transport answers its status and a NULL body. */
	bool has_file;
	int file_fd;
	int has_index;     /* set by a write: X-Herd-Index is this index */
	uint64_t index;
	char allow[64];    /* the Allow header of a 405; empty otherwise */
	/* Set by a blocking route's handler when its answer holds nothing
	 * newer than what the client said it has (?since=N, an empty list,
	 * and ?index at or above N): the layer then keeps a blocking request
	 * (?index=N&wait=D) waiting
	 * for the next change instead of answering, until the wait ends.
	 * An agent's long poll would otherwise come back after every commit
	 * of the cluster, with nothing for it. */
	int nothing_new;
};

/* Sets status and body (taking the reference to body); drops a text set
 * before. */
void http_reply(struct http_response *resp, int status, json_t *body);
/* Sets status and a text answer (taking text, a string of malloc; NULL is
 * an answer of nothing, a 500) with content_type (borrowed: a literal);
 * drops a JSON body set before. */
void http_reply_text(struct http_response *resp, int status, const char *content_type,
		     char *text);
/* Sets status and a file answer: fd (taken: closed with the response; a
 * regular file open for reading) with content_type (borrowed: a literal);
 * drops a body or text set before. */
void http_reply_file(struct http_response *resp, int status, const char *content_type, int fd);
/* Sets an error answer: status and {"error": {"code", "message"}}.
 * Returns 0, so that handlers can `return http_error(...)`. */
int http_error(struct http_response *resp, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Frees what the response owns and leaves it empty.  Accepts NULL. */
void http_response_release(struct http_response *resp);

/* A handler fills resp and returns 0.  A negative return is an internal
 * failure: the client gets 500 with a generic message (never the reason;
 * the server's log gets it through the router's error hook). */
typedef int http_handler_fn(struct http_request *req, struct http_response *resp, void *ctx);

enum {
	HTTP_ROUTE_BLOCKING = 1, /* honours ?index=N&wait=D */
	HTTP_ROUTE_BODY = 2,     /* needs a JSON body: an empty one is 400 */
	HTTP_ROUTE_MEMORY = 4,   /* with BLOCKING: a poke of the watch ends its wait too */
};

struct http_router;

/* A new, empty router; free with http_router_free (accepts NULL). */
struct http_router *http_router_new(void);
void http_router_free(struct http_router *r);

/* Adds a route.  method is "GET", "PUT", "POST" or "DELETE"; pattern starts
 * with "/v1/" (or "/.well-known/", RFC 8615's standard documents), has no empty segments, at most HTTP_MAX_PARAMS ":name"
 * segments; a last segment "*name" takes the rest of the path (one
 * segment or more, joined with '/') as parameter name.  -EINVAL on a bad pattern, -EEXIST when the same method and
 * pattern are there already.  ctx is passed to fn. */
int http_router_add(struct http_router *r, const char *method, const char *pattern,
		    http_handler_fn *fn, unsigned flags, void *ctx, struct herd_err *err);

/* Called with the reason of each 500 (handler failure), for the server's
 * log; may be NULL.  Runs on a server thread. */
typedef void http_error_hook_fn(const char *method, const char *path, int rc, void *arg);
void http_router_on_error(struct http_router *r, http_error_hook_fn *fn, void *arg);

struct http_server_config {
	const char *bind_addr;     /* numeric IPv4 or IPv6; NULL: 127.0.0.1 */
	uint16_t port;             /* 0: an ephemeral port (see http_server_port) */
	unsigned threads;          /* 0: 8 (see http_server.c) */
	size_t max_body;           /* 0: HTTP_DEFAULT_MAX_BODY */
	int64_t max_wait_ns;       /* 0: HTTP_DEFAULT_MAX_WAIT_NS; cap and default */
	const struct http_router *router; /* borrowed; must outlive the server */
	struct index_watch *watch; /* borrowed; the index of X-Herd-Index */
	/* https (common/tls.h): NULL or without cert_pem: plain HTTP.  With
	 * verify_client, a request whose connection presented no certificate
	 * signed by ca_pem is answered 403 (tls_client_certificate) and never
	 * reaches a handler.  Borrowed; must outlive the server. */
	const struct tls_server *tls;
	/* A socket already bound and listening to serve instead of binding
	 * bind_addr:port (a standby's, handed over when it leads: standby.h);
	 * taken, also on failure.  use_listen_fd false: bind as above. */
	bool use_listen_fd;
	int listen_fd;
};

struct http_server;

struct sockaddr_storage;
/* The socket address to listen on for addr (a numeric IPv4 or IPv6 address)
 * and port, into *out; *ipv6 says which.  -EINVAL with a message for
 * anything else (names are not resolved: a listener binds what it is told).
 * Shared by the API server and a standby's listener (standby.h). */
int http_listen_addr(const char *addr, uint16_t port, struct sockaddr_storage *out, bool *ipv6,
		     struct herd_err *err);
/* Starts listening.  -EADDRINUSE, -EINVAL (bad address) or -EIO with a
 * message on failure.  On success *out owns the server. */
int http_server_start(const struct http_server_config *cfg, struct http_server **out,
		      struct herd_err *err);
/* The port the server listens on (the chosen one when asked for 0). */
uint16_t http_server_port(const struct http_server *srv);
/* Requests of a client in this process without a socket (httpc.h, struct
 * httpc_local; http_local.c says what differs): valid until
 * http_server_stop, which answers the waiting ones. */
struct httpc_local;
const struct httpc_local *http_server_local(struct http_server *srv);
/* Ends held blocking queries (they answer at once), stops, frees.  Accepts
 * NULL. */
void http_server_stop(struct http_server *srv);

/* The base routes: GET /v1/agent/health and GET /v1/status/index
 * (blocking; {"index": N}). */
int http_routes_base(struct http_router *r, struct herd_err *err);

#endif
