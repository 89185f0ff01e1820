/* routes_usage: GPU-hours per namespace and per job (GET /v1/usage).
 *
 * An allocation counts from its start to its end (teams.h, "Usage ledger")
 * times the share of GPUs it holds: a whole GPU 1, a 25% share 0.25, a 3g
 * MIG slice 3/7.  Allocations that garbage collection deleted count from the
 * usage ledger, which holds their GPU-time per UTC hour.  ?since= and ?until=
 * (unix seconds or RFC 3339 in UTC) select whole hours: since is rounded
 * down and until up to the hour (until no later than now), for the stored
 * allocations as for the ledger, so that an answer does not change when
 * the allocations behind it are collected.  An allocation is counted in
 * "allocations" when the hour it started in lies in the window. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/acl.h"
#include "server/server-int.h"
#include "server/teams.h"

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

/* Adds GPU-seconds and allocations to job (ns, job) in by_ns (a
 * usage_sum_fn). */
static void add_usage(const char *ns, const char *job, double seconds, int64_t allocs, void *arg)
{
	json_t *by_ns = arg, *n = json_object_get(by_ns, ns), *j;
	double hours = seconds / 3600.0;
	if (!n) {
		n = json_pack("{s:s, s:f, s:{}}", "namespace", ns, "gpu_hours", 0.0, "jobs");
		json_object_set_new(by_ns, ns, n);
	}
	json_object_set_new(n, "gpu_hours", json_real(json_real_value(json_object_get(n, "gpu_hours")) + hours));
	j = json_object_get(json_object_get(n, "jobs"), job);
	if (!j) {
		j = json_pack("{s:s, s:f, s:i}", "job_id", job, "gpu_hours", 0.0, "allocations", 0);
		json_object_set_new(json_object_get(n, "jobs"), job, j);
	}
	json_object_set_new(j, "gpu_hours", json_real(json_real_value(json_object_get(j, "gpu_hours")) + hours));
	json_object_set_new(j, "allocations", json_integer(jint(j, "allocations", 0) + allocs));
}

struct usage_read {
	const struct store_filter *f;
	json_t *allocs, *ledger;
};

/* Allocations and ledger in one view: a collection commits between two
 * separate reads would count its allocations twice or not at all. */
static int read_usage(struct store *s, void *arg, struct herd_err *err)
{
	struct usage_read *r = arg;
	int rc = store_list(s, STORE_ALLOC, r->f, &r->allocs, err);
	return rc ? rc : store_list(s, STORE_USAGE, r->f, &r->ledger, err);
}

static int64_t floor_hour(int64_t t)
{
	return t - t % USAGE_BUCKET_NS;
}

static int get_usage(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *ns = http_query(req, "namespace");
	const char *sa = http_query(req, "since"), *ua = http_query(req, "until");
	int64_t now = now_ns(), since = sa ? parse_time(sa) : 0, until = ua ? parse_time(ua) : now;
	struct store_filter f = { .ns = ns && *ns && strcmp(ns, "*") ? ns : NULL };
	struct usage_read r = { &f, NULL, NULL };
	json_t *by_ns, *out, *list;
	const char *k;
	json_t *v;
	int rc;

	if (since < 0 || until < 0)
		return http_error(resp, 400, "invalid_argument",
				  "since and until are unix seconds or YYYY-MM-DDTHH:MM:SSZ");
	if (f.ns && !acl_allows_ns(req, f.ns, ACL_READ))
		return acl_deny(resp);
	/* whole hours, the ledger's granularity; nothing ran after now */
	since = floor_hour(since);
	if (until % USAGE_BUCKET_NS)
		until = floor_hour(until) + USAGE_BUCKET_NS;
	if (until > now)
		until = now;
	rc = store_view(srv->store, read_usage, &r, NULL);
	if (rc < 0)
		goto out;
	by_ns = json_object();
	acl_filter_list(req, r.allocs);
	acl_filter_list(req, r.ledger);
	usage_sum(r.allocs, r.ledger, since, until, now, add_usage, by_ns);
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
	http_reply(resp, 200, out);
out:
	json_decref(r.allocs);
	json_decref(r.ledger);
	return rc;
}

int routes_usage(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/usage", get_usage, HTTP_ROUTE_BLOCKING, ACL_NEED_TOKEN },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
