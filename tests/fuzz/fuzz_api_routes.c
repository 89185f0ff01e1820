/* Fuzz target: the agents' and the bench's read routes of a running server
 * (with its store), by their query arguments: GET /v1/node/:id/allocations
 * (since, include, index), GET /v1/jobs (since, namespace),
 * GET /v1/job/:id/version/:version, GET /v1/services and /v1/service/:name
 * (the same query; a name), the deployment reads GET /v1/deployments
 * (the same query), GET /v1/deployment/:id, GET /v1/job/:id/deployment
 * and POST /v1/deployment/:id/fail and /promote (an id), and GET /v1/metrics (format: a text
 * answer or JSON); and the batch status route
 * PUT /v1/node/:id/allocations/status, the job version routes
 * POST /v1/job/:id/revert and /scale (the revert's body also promotes
 * the rolling service's deployment), and the child launches
 * POST /v1/job/:id/dispatch and /periodic/force by their bodies; the
 * variables' routes: GET /v1/vars and PUT|DELETE /v1/var/fz/q by the
 * query (cas), GET /v1/var/<path> by a path, PUT /v1/var/fz/b by a body
 * (each variable written is purged at once); POST
 * /v1/allocation/:id/identity by a body.  One
 * server, started once with a node, a batch job placed on it and its
 * allocations, a parameterized and a periodic job, a rolling service (a
 * deployment), answers every input
 * through its router (no sockets).  A child an input launched is purged
 * at once, so that the store stays the same size input after input.
 *
 * Input: a first byte picks the route; the rest is the query string
 * ("k=v&k=v", split without percent-decoding as in fuzz_http_request), the
 * version path segment, or the body.  Every request gets an answer. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http-int.h"
#include "server/server-int.h"

static struct server *srv;
static char promote_path[128]; /* POST /v1/deployment/<the service's>/promote */
static char identity_path[128]; /* POST /v1/allocation/<job a's first>/identity */
static char dir[] = "/tmp/fuzz_api_routes.XXXXXX";

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The store goes with the process (the server holds it open till then). */
static void remove_store(void)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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

/* Whether a scale body asks for more instances than the fuzzer lets the
 * job have: a count of thousands makes every later input plan them all,
 * which tests the scheduler's speed, not the route. */
static bool scale_too_big(const uint8_t *data, size_t size)
{
	json_t *b = json_loadb((const char *)data, size, 0, NULL);
	json_t *c = json_object_get(b, "count");
	bool big = json_is_integer(c) && json_integer_value(c) > 16;
	json_decref(b);
	return big;
}

/* Runs one request; returns its status, and its JSON answer in *answer
 * when answer is not NULL (the caller's reference, or NULL). */
static int call_answer(const char *method, const char *path, char *query, const char *body,
		       size_t len, json_t **answer)
{
	struct http_limits limits = { 64 * 1024, 1000000000LL };
	struct http_request_state st;
	struct http_response resp = { 0 };
	size_t tlen;
	int status;

	http_request_state_init(&st, method, path);
	if (query)
		add_query(&st, query);
	if (body)
		http_request_add_body(&st, body, len, limits.max_body);
	if (http_request_prepare(&st, srv->router, &limits, &resp) == 0) {
		/* a blocking query answers at once, as if the index had
		 * moved past any ?index */
		(void)http_request_should_wait(&st, 1000000);
		http_request_run(&st, 1000000, &resp);
	}
	status = resp.status;
	if (status < 100 || status > 599 || (!resp.body && !resp.text))
		abort(); /* every request gets an answer */
	free(http_response_text(&resp, &tlen));
	if (answer)
		*answer = json_incref(resp.body);
	http_response_release(&resp);
	http_request_state_release(&st);
	return status;
}

static int call(const char *method, const char *path, char *query, const char *body, size_t len)
{
	return call_answer(method, path, query, body, len, NULL);
}

/* A child launch (dispatch, periodic force) of parent; a child it made is
 * purged again. */
static void launch_child(const char *parent, const char *what, const char *body, size_t len)
{
	char path[128], query[] = "purge=true";
	json_t *answer = NULL;
	const char *child;

	snprintf(path, sizeof(path), "/v1/job/%s/%s", parent, what);
	if (call_answer("POST", path, NULL, body, len, &answer) != 200) {
		json_decref(answer);
		return;
	}
	child = json_string_value(json_object_get(answer, "dispatched_job_id"));
	if (!child)
		child = json_string_value(json_object_get(answer, "job_id"));
	if (child && *child) {
		snprintf(path, sizeof(path), "/v1/job/%s", child);
		if (call("DELETE", path, query, NULL, 0) != 200)
			abort(); /* a child just made can be purged */
	}
	json_decref(answer);
}

static void setup(void)
{
	static const char node[] =
		"{\"node\": {\"id\": \"n1\", \"name\": \"n1\", \"datacenter\": \"dc1\","
		" \"resources\": {\"cpu_milli\": 64000, \"memory_mib\": 262144}}}";
	static const char job[] =
		"{\"job\": {\"id\": \"a\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
		" \"count\": 3, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"cpu\": 100,"
		" \"memory\": 64}}]}]}}";
	/* parents whose children place nothing (count 0): what is fuzzed is
	 * the route, not the scheduler */
	static const char param[] =
		"{\"job\": {\"id\": \"p\", \"type\": \"batch\", \"parameterized\":"
		" {\"payload\": \"optional\", \"meta_optional\": [\"k\"]}, \"groups\":"
		" [{\"name\": \"g\", \"count\": 0, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}}]}]}}";
	static const char cron[] =
		"{\"job\": {\"id\": \"c\", \"type\": \"batch\", \"periodic\":"
		" {\"crons\": [\"0 0 1 1 *\"]}, \"groups\": [{\"name\": \"g\", \"count\": 0,"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}}]}]}}";
	static const char svc[] =
		"{\"job\": {\"id\": \"s\", \"update\": {\"max_parallel\": 1}, \"groups\":"
		" [{\"name\": \"g\", \"count\": 1, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64}}]}]}}";
	struct server_config cfg = { 0 };
	struct herd_err err = { 0 };

	if (!mkdtemp(dir))
		abort();
	atexit(remove_store);
	cfg.data_dir = dir;
	cfg.job_gc_threshold_ns = cfg.eval_gc_threshold_ns = 1000000000000000LL;
	if (server_start(&cfg, &srv, &err) < 0) {
		fprintf(stderr, "server_start: %s\n", err.msg);
		abort();
	}
	if (call("POST", "/v1/node/register", NULL, node, strlen(node)) != 200 ||
	    call("POST", "/v1/jobs", NULL, job, strlen(job)) != 200 ||
	    call("POST", "/v1/jobs", NULL, param, strlen(param)) != 200 ||
	    call("POST", "/v1/jobs", NULL, cron, strlen(cron)) != 200 ||
	    call("POST", "/v1/jobs", NULL, svc, strlen(svc)) != 200)
		abort();
	if (server_wait_idle(srv, 20 * 1000000000LL) < 0)
		abort();
	json_t *d = NULL;
	if (call_answer("GET", "/v1/job/s/deployment", NULL, NULL, 0, &d) != 200 ||
	    !json_is_object(d))
		abort();
	snprintf(promote_path, sizeof(promote_path), "/v1/deployment/%s/promote",
		 json_string_value(json_object_get(d, "id")));
	json_decref(d);
	d = NULL;
	if (call_answer("GET", "/v1/job/a/allocations", NULL, NULL, 0, &d) != 200 ||
	    !json_array_size(d))
		abort();
	snprintf(identity_path, sizeof(identity_path), "/v1/allocation/%s/identity",
		 json_string_value(json_object_get(json_array_get(d, 0), "id")));
	json_decref(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *rest, *path;

	if (!srv)
		setup();
	if (size < 1)
		return 0;
	rest = strndup((const char *)data + 1, size - 1);
	if (!rest)
		abort();
	switch (data[0] % 9) {
	case 0:
		call("GET", "/v1/node/n1/allocations", rest, NULL, 0);
		break;
	case 1:
		call("GET", "/v1/jobs", rest, NULL, 0);
		/* the service registry reads the same query (namespace, index),
		 * and so do the deployments */
		call("GET", "/v1/services", rest, NULL, 0);
		call("GET", "/v1/deployments", rest, NULL, 0);
		call("GET", "/v1/vars", rest, NULL, 0);
		{
			static const char body[] = "{\"items\": {\"k\": \"v\"}}";
			char *q = strdup(rest);
			if (!q)
				abort();
			call("PUT", "/v1/var/fz/q", rest, body, strlen(body));
			call("DELETE", "/v1/var/fz/q", q, NULL, 0);
			call("DELETE", "/v1/var/fz/q", NULL, NULL, 0);
			free(q);
		}
		break;
	case 2:
		if (strchr(rest, '/') || strchr(rest, '?'))
			break;
		if (asprintf(&path, "/v1/job/a/version/%s", rest) < 0)
			abort();
		call("GET", path, NULL, NULL, 0);
		free(path);
		if (asprintf(&path, "/v1/service/%s", rest) < 0)
			abort();
		call("GET", path, NULL, NULL, 0);
		free(path);
		if (asprintf(&path, "/v1/deployment/%s", rest) < 0)
			abort();
		call("GET", path, NULL, NULL, 0);
		free(path);
		if (asprintf(&path, "/v1/deployment/%s/fail", rest) < 0)
			abort();
		call("POST", path, NULL, NULL, 0);
		free(path);
		if (asprintf(&path, "/v1/deployment/%s/promote", rest) < 0)
			abort();
		call("POST", path, NULL, NULL, 0);
		free(path);
		if (asprintf(&path, "/v1/job/%s/deployment", rest) < 0)
			abort();
		call("GET", path, NULL, NULL, 0);
		free(path);
		break;
	case 3:
		call("PUT", "/v1/node/n1/allocations/status", NULL, (const char *)data + 1,
		     size - 1);
		call("PUT", "/v1/var/fz/b", NULL, (const char *)data + 1, size - 1);
		call("DELETE", "/v1/var/fz/b", NULL, NULL, 0);
		/* a workload identity's token asked for by its body (nothing
		 * is written: the token is signed, not stored) */
		call("POST", identity_path, NULL, (const char *)data + 1, size - 1);
		break;
	case 5:
		call("POST", "/v1/job/a/revert", NULL, (const char *)data + 1, size - 1);
		/* its deployment has no canaries: the body is read, nothing
		 * is written */
		call("POST", promote_path, NULL, (const char *)data + 1, size - 1);
		break;
	case 6:
		if (!scale_too_big(data + 1, size - 1))
			call("POST", "/v1/job/a/scale", NULL, (const char *)data + 1, size - 1);
		break;
	case 7:
		launch_child("p", "dispatch", (const char *)data + 1, size - 1);
		break;
	case 8:
		launch_child("c", "periodic/force", (const char *)data + 1, size - 1);
		break;
	default:
		call("GET", "/v1/metrics", rest, NULL, 0);
		/* a variable path: any bytes but a query's */
		if (!strchr(rest, '?') && !strchr(rest, '#')) {
			if (asprintf(&path, "/v1/var/%s", rest) < 0)
				abort();
			call("GET", path, NULL, NULL, 0);
			free(path);
		}
		break;
	}
	free(rest);
	return 0;
}
