/* http_router.c: the route table (see http.h). */
#include "server/http-int.h"

#include <errno.h>
#include <string.h>

#include "common/xalloc.h"

struct http_router *http_router_new(void)
{
	return xcalloc(1, sizeof(struct http_router));
}

void http_router_free(struct http_router *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct http_route *rt = &r->routes[i];
		for (int j = 0; j < rt->nsegs; j++)
			free(rt->segs[j]);
		free(rt->segs);
		free(rt->method);
		free(rt->pattern);
	}
	free(r->routes);
	free(r);
}

void http_router_on_error(struct http_router *r, http_error_hook_fn *fn, void *arg)
{
	r->on_error = fn;
	r->on_error_arg = arg;
}

static int known_method(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "PUT") || !strcmp(m, "POST") ||
	       !strcmp(m, "DELETE");
}

int http_router_add(struct http_router *r, const char *method, const char *pattern,
		    http_handler_fn *fn, unsigned flags, void *ctx, struct herd_err *err)
{
	struct http_route rt = { 0 };
	size_t alloc = 0;
	int nparams = 0;
	const char *p;

	if (!method || !known_method(method))
		return herd_errf(err, -EINVAL, "http: unknown method \"%s\"", method ? method : "");
	/* /.well-known/: the few standard documents at fixed places (RFC 8615:
	 * the token keys of routes_oidc.c) */
	if (!pattern ||
	    (strncmp(pattern, "/v1/", 4) != 0 && strncmp(pattern, "/.well-known/", 13) != 0) ||
	    strlen(pattern) >= HTTP_MAX_PATH)
		return herd_errf(err, -EINVAL, "http: route \"%s\" must start with /v1/ or /.well-known/",
				 pattern ? pattern : "");
	if (!fn)
		return herd_errf(err, -EINVAL, "http: route %s %s has no handler", method, pattern);
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->routes[i].method, method) && !strcmp(r->routes[i].pattern, pattern))
			return herd_errf(err, -EEXIST, "http: route %s %s is there already",
					 method, pattern);
	for (p = pattern + 1;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 0 || ((p[0] == ':' || p[0] == '*') && len == 1))
			goto bad;
		/* "*name": the rest of the path, one segment or more; last only */
		if (p[0] == '*' && slash)
			goto bad;
		if ((p[0] == ':' || p[0] == '*') && ++nparams > HTTP_MAX_PARAMS)
			goto bad;
		ALLOC_GROW(rt.segs, (size_t)rt.nsegs + 1, alloc);
		rt.segs[rt.nsegs++] = xstrndup(p, len);
		if (!slash)
			break;
		p = slash + 1;
	}
	rt.method = xstrdup(method);
	rt.pattern = xstrdup(pattern);
	rt.fn = fn;
	rt.flags = flags;
	rt.ctx = ctx;
	ALLOC_GROW(r->routes, r->n + 1, r->alloc);
	r->routes[r->n++] = rt;
	return 0;
bad:
	for (int j = 0; j < rt.nsegs; j++)
		free(rt.segs[j]);
	free(rt.segs);
	return herd_errf(err, -EINVAL,
			 "http: route \"%s\" has an empty segment or too many parameters", pattern);
}
