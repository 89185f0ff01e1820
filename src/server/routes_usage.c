/* routes_usage: GPU-hours per namespace and per job (GET /v1/usage).
 *
 * An allocation counts from its start (the first "running" its client
 * reported; the placement when none came) to its end (the terminal status,
 * or now while it runs), times the share of GPUs it holds: a whole GPU
 * 1, a 25% share 0.25, a 3g MIG slice 3/7.  ?since= and ?until= (unix
 * seconds or RFC 3339 in UTC) clip every interval. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/acl.h"
#include "server/server-int.h"
#include "server/teams.h"

#define NS_PER_HOUR 3600000000000.0

/* A time argument: unix seconds, or "YYYY-MM-DDTHH:MM:SSZ"; -1 if neither. */
static int64_t parse_time(const char *s)
{
	struct tm tm;
	char *end;
	long long v;
	if (!s || !*s)
		return -1;
	v = strtoll(s, &end, 10);
	if (*end == '\0' && v >= 0 && v < 32503680000LL)
		return v * 1000000000LL;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (*end && strcmp(end, "Z")))
		return -1;
	return (int64_t)timegm(&tm) * 1000000000LL;
}

/* The GPU-hours of one allocation within [since, until]. */
static double alloc_gpu_hours(const json_t *al, int64_t since, int64_t until)
{
	int64_t start = jint(al, "start_time", jint(al, "create_time", 0));
	int64_t end = alloc_client_terminal(al) ? jint(al, "end_time", jint(al, "modify_time", start)) : until;
	int64_t milli = alloc_gpu_milli(al);
	if (start < since)
		start = since;
	if (end > until)
		end = until;
	if (end <= start || milli <= 0)
		return 0;
	return (double)milli / 1000.0 * (double)(end - start) / NS_PER_HOUR;
}

static int get_usage(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *ns = http_query(req, "namespace");
	const char *sa = http_query(req, "since"), *ua = http_query(req, "until");
	int64_t now = now_ns(), since = sa ? parse_time(sa) : 0, until = ua ? parse_time(ua) : now;
	struct store_filter f = { .ns = ns && *ns && strcmp(ns, "*") ? ns : NULL };
	json_t *allocs = NULL, *by_ns, *al, *out, *list;
	const char *k;
	json_t *v;
	size_t i;
	int rc;

	if (since < 0 || until < 0)
		return http_error(resp, 400, "invalid_argument",
				  "since and until are unix seconds or YYYY-MM-DDTHH:MM:SSZ");
	if (f.ns && !acl_allows_ns(req, f.ns, ACL_READ))
		return acl_deny(resp);
	rc = store_list(srv->store, STORE_ALLOC, &f, &allocs, NULL);
	if (rc < 0)
		return rc;
	by_ns = json_object();
	acl_filter_list(req, allocs);
	json_array_foreach(allocs, i, al) {
		const char *ans = jstr(al, "namespace", "default"), *job = jstr(al, "job_id", "");
		double h = alloc_gpu_hours(al, since, until);
		json_t *n = json_object_get(by_ns, ans), *j;
		if (!n) {
			n = json_pack("{s:s, s:f, s:{}}", "namespace", ans, "gpu_hours", 0.0, "jobs");
			json_object_set_new(by_ns, ans, n);
		}
		json_object_set_new(n, "gpu_hours", json_real(json_real_value(json_object_get(n, "gpu_hours")) + h));
		j = json_object_get(json_object_get(n, "jobs"), job);
		if (!j) {
			j = json_pack("{s:s, s:f, s:i}", "job_id", job, "gpu_hours", 0.0, "allocations", 0);
			json_object_set_new(json_object_get(n, "jobs"), job, j);
		}
		json_object_set_new(j, "gpu_hours", json_real(json_real_value(json_object_get(j, "gpu_hours")) + h));
		json_object_set_new(j, "allocations", json_integer(jint(j, "allocations", 0) + 1));
	}
	list = json_array();
	json_object_foreach(by_ns, k, v) {
		json_t *jobs = json_array(), *jv;
		const char *jk;
		json_object_foreach(json_object_get(v, "jobs"), jk, jv)
			json_array_append(jobs, jv);
		json_array_append_new(list, json_pack("{s:s, s:O, s:o}", "namespace", k, "gpu_hours",
						      json_object_get(v, "gpu_hours"), "jobs", jobs));
	}
	out = json_pack("{s:I, s:I, s:o}", "since", (json_int_t)since, "until", (json_int_t)until,
			"namespaces", list);
	json_decref(by_ns);
	json_decref(allocs);
	http_reply(resp, 200, out);
	return 0;
}

int routes_usage(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/usage", get_usage, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
