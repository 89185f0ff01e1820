/* http_request.c: checking a request and calling its handler, without
 * sockets (see http-int.h). */
#include "server/http-int.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/units.h"
#include "common/xalloc.h"

#define HTTP_MAX_QUERY_ARGS 64
#define HTTP_MAX_HEADERS 128

void http_request_state_init(struct http_request_state *st, const char *method,
			     const char *path)
{
	memset(st, 0, sizeof(*st));
	st->method = xstrdup(method ? method : "");
	st->path = xstrdup(path ? path : "");
	st->req.method = st->method;
	st->req.path = st->path;
	strbuf_init(&st->body, 0);
}

static void free_kvs(struct http_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

void http_request_state_release(struct http_request_state *st)
{
	if (!st)
		return;
	free_kvs(st->req.query, st->req.nquery);
	free_kvs(st->req.headers, st->req.nheaders);
	json_decref(st->req.body);
	strbuf_release(&st->body);
	free(st->pathbuf);
	free(st->method);
	free(st->path);
	memset(st, 0, sizeof(*st));
}

static void add_kv(struct http_kv **v, size_t *n, size_t *alloc, const char *key,
		   const char *value)
{
	ALLOC_GROW(*v, *n + 1, *alloc);
	(*v)[*n].key = xstrdup(key ? key : "");
	(*v)[*n].value = xstrdup(value ? value : "");
	(*n)++;
}

void http_request_add_query(struct http_request_state *st, const char *key, const char *value)
{
	/* Past the limit, arguments are dropped here and refused in prepare. */
	if (st->req.nquery <= HTTP_MAX_QUERY_ARGS)
		add_kv(&st->req.query, &st->req.nquery, &st->aquery, key, value);
}

void http_request_add_header(struct http_request_state *st, const char *key, const char *value)
{
	if (st->req.nheaders <= HTTP_MAX_HEADERS)
		add_kv(&st->req.headers, &st->req.nheaders, &st->aheaders, key, value);
}

void http_request_add_body(struct http_request_state *st, const char *data, size_t len,
			   size_t max_body)
{
	if (!max_body)
		max_body = HTTP_DEFAULT_MAX_BODY;
	if (st->body_too_large)
		return;
	if (len > max_body - st->body.len) {
		st->body_too_large = 1;
		strbuf_release(&st->body);
		return;
	}
	strbuf_add(&st->body, data, len);
}

const char *http_param(const struct http_request *req, const char *name)
{
	for (int i = 0; i < req->nparams; i++)
		if (!strcmp(req->params[i].key, name))
			return req->params[i].value;
	return NULL;
}

const char *http_query(const struct http_request *req, const char *name)
{
	for (size_t i = 0; i < req->nquery; i++)
		if (!strcmp(req->query[i].key, name))
			return req->query[i].value;
	return NULL;
}

const char *http_header(const struct http_request *req, const char *name)
{
	for (size_t i = 0; i < req->nheaders; i++)
		if (!strcasecmp(req->headers[i].key, name))
			return req->headers[i].value;
	return NULL;
}

static void drop_file(struct http_response *resp)
{
	if (resp->has_file)
		close(resp->file_fd);
	resp->has_file = false;
	resp->file_fd = -1;
}

void http_reply(struct http_response *resp, int status, json_t *body)
{
	drop_file(resp);
	json_decref(resp->body);
	free(resp->text);
	resp->text = NULL;
	resp->content_type = NULL;
	resp->status = status;
	resp->body = body;
}

void http_reply_text(struct http_response *resp, int status, const char *content_type,
		     char *text)
{
	drop_file(resp);
	json_decref(resp->body);
	resp->body = NULL;
	free(resp->text);
	resp->status = status;
	resp->text = text;
	resp->content_type = content_type;
}

/* A JSON string of msg; messages quote what the client sent (a path), which
 * may not be UTF-8, and JSON strings must be: such bytes become '?'. */
static json_t *message_string(char *msg)
{
	json_t *s = json_string(msg);
	if (s)
		return s;
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	return json_string(msg);
}

int http_error(struct http_response *resp, int status, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	http_reply(resp, status, json_pack("{s:{s:s, s:o}}", "error", "code", code, "message",
					   message_string(msg)));
	return 0;
}

void http_reply_file(struct http_response *resp, int status, const char *content_type, int fd)
{
	http_reply_text(resp, status, NULL, NULL);
	resp->text = NULL;
	resp->content_type = content_type;
	resp->has_file = true;
	resp->file_fd = fd;
}

void http_response_release(struct http_response *resp)
{
	if (!resp)
		return;
	drop_file(resp);
	json_decref(resp->body);
	free(resp->text);
	memset(resp, 0, sizeof(*resp));
}

/* Splits st->path into segments inside st->pathbuf; returns how many, or
 * -1 for a path no route can match (no leading '/', an empty segment, too
 * long, too many segments). */
#define HTTP_MAX_SEGS 32
static int split_path(struct http_request_state *st, char *segs[HTTP_MAX_SEGS])
{
	size_t len = strlen(st->path);
	int n = 0;
	char *p;

	/* A request may be prepared twice (the server refuses an oversize
	 * body at the headers, and libmicrohttpd may call again): the split of
	 * an earlier call goes, or it leaks. */
	free(st->pathbuf);
	st->pathbuf = NULL;
	st->req.nparams = 0;
	if (st->path[0] != '/' || len >= HTTP_MAX_PATH)
		return -1;
	st->pathbuf = xstrdup(st->path + 1);
	for (p = st->pathbuf;;) {
		char *slash = strchr(p, '/');
		if (slash)
			*slash = '\0';
		if (*p == '\0' || n == HTTP_MAX_SEGS)
			return -1;
		segs[n++] = p;
		if (!slash)
			return n;
		p = slash + 1;
	}
}

/* How well route rt matches the segments: -1 not at all, else the number
 * of literal segments (more is more specific: /v1/jobs/parse beats
 * /v1/jobs/:id). */
static int match_score(const struct http_route *rt, char **segs, int n)
{
	int score = 0;
	bool rest = rt->nsegs > 0 && rt->segs[rt->nsegs - 1][0] == '*';
	if (rest ? n < rt->nsegs : rt->nsegs != n)
		return -1;
	for (int i = 0; i < rt->nsegs; i++) {
		if (rt->segs[i][0] == ':' || rt->segs[i][0] == '*')
			continue;
		if (strcmp(rt->segs[i], segs[i]) != 0)
			return -1;
		score++;
	}
	return score;
}

static int find_route(struct http_request_state *st, const struct http_router *router,
		      struct http_response *resp)
{
	char *segs[HTTP_MAX_SEGS];
	const struct http_route *best = NULL;
	int n = split_path(st, segs), best_score = -1, path_known = 0;

	for (size_t i = 0; n > 0 && i < router->n; i++) {
		const struct http_route *rt = &router->routes[i];
		int score = match_score(rt, segs, n);
		if (score < 0)
			continue;
		path_known = 1;
		if (strcmp(rt->method, st->method) != 0) {
			/* the Allow header lists every method the path takes */
			size_t used = strlen(resp->allow);
			if (!strstr(resp->allow, rt->method))
				snprintf(resp->allow + used, sizeof(resp->allow) - used, "%s%s",
					 used ? ", " : "", rt->method);
			continue;
		}
		if (score > best_score) {
			best = rt;
			best_score = score;
		}
	}
	if (!best) {
		if (path_known)
			return http_error(resp, 405, "method_not_allowed",
					  "%s is not allowed on %s", st->method, st->path) + 1;
		resp->allow[0] = '\0';
		return http_error(resp, 404, "not_found", "no API path %s", st->path) + 1;
	}
	resp->allow[0] = '\0';
	st->route = best;
	for (int i = 0; i < best->nsegs; i++) {
		if (best->segs[i][0] == '*') /* the rest: its segments joined again */
			for (int j = i + 1; j < n; j++)
				segs[j][-1] = '/';
		else if (best->segs[i][0] != ':')
			continue;
		st->req.params[st->req.nparams].key = best->segs[i] + 1;
		st->req.params[st->req.nparams].value = segs[i];
		st->req.nparams++;
	}
	return 0;
}

static int parse_blocking(struct http_request_state *st, const struct http_limits *limits,
			  struct http_response *resp)
{
	const char *index = http_query(&st->req, "index");
	const char *wait = http_query(&st->req, "wait");
	int64_t max_wait = limits->max_wait_ns ? limits->max_wait_ns : HTTP_DEFAULT_MAX_WAIT_NS;
	struct herd_err err = { 0 };
	int64_t v;

	if (!(st->route->flags & HTTP_ROUTE_BLOCKING) || !index)
		return 0;
	if (parse_int64(index, 0, INT64_MAX, &v, &err))
		return http_error(resp, 400, "invalid_argument", "index: %s", err.msg) + 1;
	st->req.has_index = 1;
	st->req.wait_index = (uint64_t)v;
	st->req.wait_ns = max_wait;
	if (wait) {
		if (parse_duration(wait, &v, &err))
			return http_error(resp, 400, "invalid_argument", "wait: %s", err.msg) + 1;
		if (v < 0)
			return http_error(resp, 400, "invalid_argument",
					  "wait: \"%s\" is negative", wait) + 1;
		st->req.wait_ns = v < max_wait ? v : max_wait;
	}
	return 0;
}

static void find_token(struct http_request *req)
{
	const char *auth = http_header(req, "Authorization");
	req->token = http_header(req, "X-Herd-Token");
	if (req->token || !auth)
		return;
	if (strncasecmp(auth, "Bearer ", 7) == 0) {
		auth += 7;
		while (*auth == ' ')
			auth++;
		if (*auth)
			req->token = auth;
	}
}

int http_request_prepare(struct http_request_state *st, const struct http_router *router,
			 const struct http_limits *limits, struct http_response *resp)
{
	size_t max_body = limits->max_body ? limits->max_body : HTTP_DEFAULT_MAX_BODY;
	int rc;

	st->router = router;
	if ((rc = find_route(st, router, resp)))
		return rc;
	if (st->body_too_large)
		return http_error(resp, 413, "body_too_large",
				  "the request body is larger than %zu bytes", max_body) + 1;
	if (st->req.nquery > HTTP_MAX_QUERY_ARGS)
		return http_error(resp, 400, "invalid_argument",
				  "more than %d query arguments", HTTP_MAX_QUERY_ARGS) + 1;
	if (st->req.nheaders > HTTP_MAX_HEADERS)
		return http_error(resp, 400, "invalid_argument", "more than %d headers",
				  HTTP_MAX_HEADERS) + 1;
	if ((rc = parse_blocking(st, limits, resp)))
		return rc;
	if (st->body.len > 0) {
		json_error_t jerr;
		json_decref(st->req.body); /* from an earlier prepare */
		st->req.body = json_loadb(st->body.buf, st->body.len, JSON_REJECT_DUPLICATES, &jerr);
		if (!st->req.body)
			return http_error(resp, 400, "invalid_json",
					  "request body: %s (line %d, column %d)", jerr.text,
					  jerr.line, jerr.column) + 1;
	} else if (!st->req.body && (st->route->flags & HTTP_ROUTE_BODY)) {
		/* (a body handed over as JSON, http_local.c, is not text) */
		return http_error(resp, 400, "missing_body", "%s %s needs a JSON body",
				  st->method, st->path) + 1;
	}
	find_token(&st->req);
	return 0;
}

int http_request_should_wait(const struct http_request_state *st, uint64_t current)
{
	return st->req.has_index && st->req.wait_ns > 0 && current <= st->req.wait_index;
}

bool http_request_wakes_on_poke(const struct http_request_state *st)
{
	return st->route && (st->route->flags & HTTP_ROUTE_MEMORY);
}

void http_request_run(struct http_request_state *st, uint64_t current,
		      struct http_response *resp)
{
	int rc;

	st->req.index = current;
	rc = st->route->fn(&st->req, resp, st->route->ctx);
	if (rc >= 0 && resp->status >= 100 && resp->status <= 599 &&
	    (resp->body || ((resp->text || resp->has_file) && resp->content_type)))
		return;
	if (st->router && st->router->on_error)
		st->router->on_error(st->method, st->path, rc < 0 ? rc : -EPROTO,
				     st->router->on_error_arg);
	resp->has_index = 0;
	resp->allow[0] = '\0';
	/* the reason stays in the server's log, never in the answer */
	http_error(resp, 500, "internal", "internal error");
}

/* json_dump_callback's sink: appends to a strbuf. */
static int dump_to_strbuf(const char *buf, size_t size, void *data)
{
	strbuf_add(data, buf, size);
	return 0;
}

char *http_response_text(const struct http_response *resp, size_t *len)
{
	/* Encoded straight into the answer's buffer: json_dumps would make
	 * a string of its own for us to copy. */
	struct strbuf sb;

	if (resp->text) {
		*len = strlen(resp->text);
		return xstrndup(resp->text, *len);
	}
	strbuf_init(&sb, 512);
	/* ENCODE_ANY: a bare null is an answer too (no deployment yet) */
	if (!resp->body ||
	    json_dump_callback(resp->body, dump_to_strbuf, &sb, JSON_COMPACT | JSON_ENCODE_ANY)) {
		/* a body jansson cannot encode (NaN): a handler bug */
		strbuf_reset(&sb);
		strbuf_adds(&sb, "{\"error\":{\"code\":\"internal\",\"message\":\"internal error\"}}");
	}
	strbuf_addch(&sb, '\n');
	return strbuf_detach(&sb, len);
}
