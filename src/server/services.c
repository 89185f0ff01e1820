/* services: the service registry (docs/api.md, "Services").
 *
 * An agent reports the services of an allocation, with the status of each
 * check, in the allocation's status report (status_sync.c: the "services"
 * field of PUT /v1/node/:id/allocations/status); the server keeps them in
 * the allocation's record (routes_allocs.c, status_change_prepare).  So
 * the registry lives in the state store with no table of its own: it
 * survives restarts, each change bumps the index (blocking queries work
 * as for any read), and an allocation that ends, is stopped or is lost
 * with its node leaves the registry with no extra write: only allocations
 * that run (client_status running) and are meant to (desired_status run)
 * are listed.  A list scans the allocations of the namespace (shared
 * records out of the store's cache: no parse).
 *
 *   GET /v1/services          [{namespace, name, tags, instances, healthy}]
 *   GET /v1/service/:name     [{alloc_id, job_id, node_id, task, address,
 *                               port, tags, meta, health, checks}]
 *
 * canary_tags and canary_meta: an agent reports them beside tags and meta
 * (interpolated the same way; absent when the service has none), and the
 * registry chooses when it answers: while the allocation is a canary of
 * its deployment not yet promoted, canary_tags stand for tags and
 * canary_meta for meta (each only when not empty; Nomad's rule).  The
 * choice needs nothing but the allocation's record, whose
 * deployment_status the reconcile marks "promoted": that write bumps the
 * index, so a blocking query (a template's nomadService) wakes when the
 * tags switch, and the agent need not re-register anything. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"

#define SVC_MAX_SERVICES 64   /* per allocation */
#define SVC_MAX_CHECKS 32     /* per service */
#define SVC_MAX_OUTPUT 4096   /* bytes of a check's output */
#define SVC_MAX_TAGS 64

static bool short_str(const json_t *v, size_t max)
{
	return json_is_string(v) && json_string_length(v) >= 1 && json_string_length(v) <= max;
}

static bool check_status_ok(const char *s)
{
	return s && (!strcmp(s, "passing") || !strcmp(s, "warning") || !strcmp(s, "critical"));
}

bool services_on_update_ok(const char *s)
{
	return s && (!strcmp(s, "require_healthy") || !strcmp(s, "ignore_warnings") ||
		     !strcmp(s, "ignore"));
}

static int check_entry(const json_t *c, size_t i, size_t k, struct herd_err *err)
{
	const json_t *out = json_object_get(c, "output"), *ou = json_object_get(c, "on_update");
	if (!json_is_object(c) || !short_str(json_object_get(c, "name"), 256) ||
	    !check_status_ok(json_string_value(json_object_get(c, "status"))))
		return herd_errf(err, -EINVAL, "services[%zu].checks[%zu] must be an object with a "
				 "name and a status (passing, warning or critical)", i, k);
	if (out && !json_is_null(out) &&
	    (!json_is_string(out) || json_string_length(out) > SVC_MAX_OUTPUT))
		return herd_errf(err, -EINVAL, "services[%zu].checks[%zu].output must be a string of "
				 "at most %d bytes", i, k, SVC_MAX_OUTPUT);
	if (ou && !services_on_update_ok(json_string_value(ou)))
		return herd_errf(err, -EINVAL, "services[%zu].checks[%zu].on_update must be "
				 "require_healthy, ignore_warnings or ignore", i, k);
	return 0;
}

int services_report_check(const json_t *v, struct herd_err *err)
{
	size_t i, k;
	json_t *s, *c;

	if (!json_is_array(v) || json_array_size(v) > SVC_MAX_SERVICES)
		return herd_errf(err, -EINVAL, "services must be an array of at most %d services",
				 SVC_MAX_SERVICES);
	json_array_foreach(v, i, s) {
		const json_t *port = json_object_get(s, "port"), *tags = json_object_get(s, "tags");
		const json_t *checks = json_object_get(s, "checks");
		const json_t *ctags = json_object_get(s, "canary_tags");
		const json_t *cmeta = json_object_get(s, "canary_meta");
		if (!json_is_object(s) || !short_str(json_object_get(s, "name"), 256) ||
		    !short_str(json_object_get(s, "address"), 256) || !json_is_integer(port) ||
		    json_integer_value(port) < 0 || json_integer_value(port) > 65535)
			return herd_errf(err, -EINVAL, "services[%zu] must be an object with a name, an "
					 "address and a port (0..65535)", i);
		if (tags && (!json_is_array(tags) || json_array_size(tags) > SVC_MAX_TAGS))
			return herd_errf(err, -EINVAL, "services[%zu].tags must be an array of at most "
					 "%d strings", i, SVC_MAX_TAGS);
		if (ctags && (!json_is_array(ctags) || json_array_size(ctags) > SVC_MAX_TAGS))
			return herd_errf(err, -EINVAL, "services[%zu].canary_tags must be an array of "
					 "at most %d strings", i, SVC_MAX_TAGS);
		if (cmeta && !json_is_object(cmeta))
			return herd_errf(err, -EINVAL, "services[%zu].canary_meta must be an object", i);
		if (checks && (!json_is_array(checks) || json_array_size(checks) > SVC_MAX_CHECKS))
			return herd_errf(err, -EINVAL, "services[%zu].checks must be an array of at most "
					 "%d checks", i, SVC_MAX_CHECKS);
		json_array_foreach(checks, k, c)
			if (check_entry(c, i, k, err) < 0)
				return -EINVAL;
	}
	return 0;
}

/* Whether an allocation's services are in the registry: it runs and is
 * meant to (a stopped job's leave at once; a lost node's allocations are
 * lost, terminal). */
static bool alloc_registered(const json_t *alloc)
{
	return !strcmp(jstr(alloc, "client_status", ""), "running") &&
	       !strcmp(jstr(alloc, "desired_status", "run"), "run") &&
	       json_array_size(json_object_get(alloc, "services")) > 0;
}

bool services_alloc_canary(const json_t *alloc)
{
	const json_t *ds = json_object_get(alloc, "deployment_status");
	return jbool(ds, "canary", false) && !jbool(ds, "promoted", false);
}

void services_current_labels(const json_t *alloc, const json_t *svc, const json_t **tags,
			     const json_t **meta)
{
	bool canary = services_alloc_canary(alloc);
	const json_t *ct = json_object_get(svc, "canary_tags");
	const json_t *cm = json_object_get(svc, "canary_meta");

	*tags = json_object_get(svc, "tags");
	*meta = json_object_get(svc, "meta");
	if (canary && json_is_array(ct) && json_array_size(ct))
		*tags = ct;
	if (canary && json_is_object(cm) && json_object_size(cm))
		*meta = cm;
}

const char *services_health(const json_t *svc)
{
	const char *worst = "passing";
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(svc, "checks"), i, c) {
		const char *st = jstr(c, "status", "critical");
		if (!strcmp(st, "critical"))
			return "critical";
		if (!strcmp(st, "warning"))
			worst = "warning";
	}
	return worst;
}

/* The allocations whose services the request may see: of ?namespace=, or
 * of every namespace the token reads ("*").  A new array of shared
 * records. */
static int readable_allocs(struct server *srv, struct http_request *req, json_t **out)
{
	const char *ns = req_namespace(req);
	struct store_filter f = { strcmp(ns, "*") ? ns : NULL, NULL, NULL };
	int rc = store_list_shared(srv->store, STORE_ALLOC, &f, out, NULL);
	if (rc < 0)
		return rc;
	acl_filter_list(req, *out);
	return 0;
}

/* {"<ns>\x1f<name>": {namespace, name, tags, instances, healthy}} */
static void tally(json_t *by_key, const json_t *alloc, const json_t *svc)
{
	const char *ns = jstr(alloc, "namespace", "default"), *name = jstr(svc, "name", "");
	char key[600];
	const json_t *now_tags, *now_meta;
	json_t *e, *tags, *t;
	size_t i;

	services_current_labels(alloc, svc, &now_tags, &now_meta);

	snprintf(key, sizeof(key), "%s\x1f%s", ns, name);
	e = json_object_get(by_key, key);
	if (!e) {
		e = json_pack("{s:s, s:s, s:[], s:i, s:i}", "namespace", ns, "name", name, "tags",
			      "instances", 0, "healthy", 0);
		json_object_set_new(by_key, key, e);
	}
	json_object_set_new(e, "instances", json_integer(jint(e, "instances", 0) + 1));
	if (!strcmp(services_health(svc), "passing"))
		json_object_set_new(e, "healthy", json_integer(jint(e, "healthy", 0) + 1));
	tags = json_object_get(e, "tags");
	json_array_foreach(now_tags, i, t) {
		bool seen = false;
		size_t j;
		json_t *u;
		json_array_foreach(tags, j, u)
			seen |= json_equal(t, u);
		if (!seen && json_is_string(t))
			json_array_append(tags, t);
	}
}

static int cmp_entries(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(jstr(x, "namespace", ""), jstr(y, "namespace", ""));
	return c ? c : strcmp(jstr(x, "name", ""), jstr(y, "name", ""));
}

/* Sorts the array's elements by namespace and name (or alloc id). */
static json_t *sorted(json_t *a, int (*cmp)(const void *, const void *))
{
	size_t n = json_array_size(a), i;
	json_t **v = n ? xcalloc(n, sizeof(*v)) : NULL, *out = json_array();
	for (i = 0; i < n; i++)
		v[i] = json_array_get(a, i);
	if (n)
		qsort(v, n, sizeof(*v), cmp);
	for (i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(a);
	return out;
}

static int get_services(struct http_request *req, struct http_response *resp, void *ctx)
{
	json_t *allocs = NULL, *by_key = json_object(), *list = json_array(), *a, *s, *e;
	const char *k;
	size_t i, j;
	int rc = readable_allocs(ctx, req, &allocs);

	if (rc < 0) {
		json_decref(by_key);
		json_decref(list);
		return rc;
	}
	json_array_foreach(allocs, i, a) {
		if (!alloc_registered(a))
			continue;
		json_array_foreach(json_object_get(a, "services"), j, s)
			tally(by_key, a, s);
	}
	json_object_foreach(by_key, k, e)
		json_array_append(list, e);
	json_decref(by_key);
	json_decref(allocs);
	http_reply(resp, 200, sorted(list, cmp_entries));
	return 0;
}

static int cmp_instances(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(jstr(x, "namespace", ""), jstr(y, "namespace", ""));
	if (!c)
		c = strcmp(jstr(x, "alloc_id", ""), jstr(y, "alloc_id", ""));
	return c ? c : (int)(jint(x, "port", 0) - jint(y, "port", 0));
}

static json_t *instance(const json_t *alloc, const json_t *svc)
{
	const json_t *tags, *meta;
	json_t *checks = json_object_get(svc, "checks");

	services_current_labels(alloc, svc, &tags, &meta);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:O, s:O, s:s, s:O}",
			 "namespace", jstr(alloc, "namespace", "default"), "name", jstr(svc, "name", ""),
			 "alloc_id", jstr(alloc, "id", ""), "alloc_name", jstr(alloc, "name", ""),
			 "job_id", jstr(alloc, "job_id", ""), "node_id", jstr(alloc, "node_id", ""),
			 "task", jstr(svc, "task", ""), "address", jstr(svc, "address", ""),
			 "port", (json_int_t)jint(svc, "port", 0),
			 "tags", json_is_array(tags) ? (json_t *)tags : json_array(),
			 "meta", json_is_object(meta) ? (json_t *)meta : json_object(),
			 "health", services_health(svc),
			 "checks", json_is_array(checks) ? checks : json_array());
}

static int get_service(struct http_request *req, struct http_response *resp, void *ctx)
{
	const char *name = http_param(req, "name");
	json_t *allocs = NULL, *list = json_array(), *a, *s;
	size_t i, j;
	int rc;

	if (!valid_id(name)) {
		json_decref(list);
		return http_error(resp, 404, "service_not_found", "no service %.128s", name);
	}
	rc = readable_allocs(ctx, req, &allocs);
	if (rc < 0) {
		json_decref(list);
		return rc;
	}
	json_array_foreach(allocs, i, a) {
		if (!alloc_registered(a))
			continue;
		json_array_foreach(json_object_get(a, "services"), j, s)
			if (!strcmp(jstr(s, "name", ""), name))
				json_array_append_new(list, instance(a, s));
	}
	json_decref(allocs);
	/* Nomad answers an empty list for a name with no instance: a
	 * blocking query may wait for the first one to register */
	http_reply(resp, 200, sorted(list, cmp_instances));
	return 0;
}

int routes_services(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/services", get_services, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
		{ "GET", "/v1/service/:name", get_service, HTTP_ROUTE_BLOCKING, ACL_NEED_NS_READ },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
