/* teams_fx: a real server on 127.0.0.1 for the teams tests (quotas, fair
 * queue, preemption, ACL, usage), driven with libcurl; a token may be set
 * per fixture. */
#ifndef HERD_TEST_TEAMS_FX_H
#define HERD_TEST_TEAMS_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/strbuf.h"
#include "server/server.h"

#define SEC 1000000000LL

struct fx {
	char dir[64];
	struct server *srv;
	struct server_config cfg;
	char base[64];
	const char *token;
};

static inline int fx_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static inline void fx_start(struct fx *f)
{
	struct herd_err err = { 0 };
	int rc = server_start(&f->cfg, &f->srv, &err);
	if (rc)
		fprintf(stderr, "server_start: %s\n", err.msg);
	assert_int_equal(rc, 0);
	snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%u", server_port(f->srv));
}

static inline struct fx *fx_new_cfg(unsigned preempt_types, int acl)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/herd-teams-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->cfg.data_dir = f->dir;
	f->cfg.workers = 2;
	f->cfg.preempt_types = preempt_types;
	f->cfg.acl_enabled = acl;
	fx_start(f);
	return f;
}

static inline void fx_free(struct fx *f)
{
	server_stop(f->srv);
	nftw(f->dir, fx_rm, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
}

static inline size_t fx_collect(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(arg, p, size * n);
	return size * n;
}

/* One request with f->token; returns the parsed body (or NULL). */
static inline json_t *call(struct fx *f, const char *method, const char *path, const char *body, long *status)
{
	CURL *c = curl_easy_init();
	struct strbuf sb = STRBUF_INIT;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char *url = NULL, *tok = NULL;
	json_t *out;
	long st = 0;

	if (f->token) {
		assert_true(asprintf(&tok, "X-Herd-Token: %s", f->token) > 0);
		h = curl_slist_append(h, tok);
	}
	assert_true(asprintf(&url, "%s%s", f->base, path) > 0);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fx_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	if (status)
		*status = st;
	out = json_loads(sb.buf, 0, NULL);
	strbuf_release(&sb);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	free(tok);
	return out;
}

static inline json_t *ok(struct fx *f, const char *method, const char *path, const char *body)
{
	long st;
	json_t *r = call(f, method, path, body, &st);
	if (st != 200) {
		char *s = r ? json_dumps(r, 0) : NULL;
		fprintf(stderr, "%s %s -> %ld %s\n", method, path, st, s ? s : "");
		free(s);
	}
	assert_int_equal(st, 200);
	return r;
}

static inline void idle(struct fx *f)
{
	assert_int_equal(server_wait_idle(f->srv, 20 * SEC), 0);
}

static inline void node_add_sharing(struct fx *f, const char *id, int n, const char *model, const char *sharing)
{
	json_t *devs = json_array(), *body;
	char *text;
	for (int i = 0; i < n; i++) {
		char did[64];
		snprintf(did, sizeof(did), "GPU-%s-%d", id, i);
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b}",
			"id", did, "vendor", "nvidia", "type", "gpu", "model", model,
			"memory_mib", (json_int_t)81920, "sharing", sharing, "healthy", 1));
	}
	body = json_pack("{s:{s:s, s:s, s:s, s:{s:I, s:I}, s:o}}", "node", "id", id, "name", id,
			 "datacenter", "dc1", "resources", "cpu_milli", (json_int_t)64000,
			 "memory_mib", (json_int_t)262144, "devices", devs);
	text = json_dumps(body, 0);
	json_decref(ok(f, "POST", "/v1/node/register", text));
	free(text);
	json_decref(body);
}

static inline void node_add(struct fx *f, const char *id, int n, const char *model)
{
	node_add_sharing(f, id, n, model, "exclusive");
}

/* A batch job of one group asking gpus whole GPUs, in namespace ns. */
static inline void submit_gpu(struct fx *f, const char *ns, const char *id, int gpus, int priority)
{
	char *t = NULL;
	assert_true(asprintf(&t,
		"{\"job\": {\"id\": \"%s\", \"namespace\": \"%s\", \"type\": \"batch\", \"priority\": %d,"
		" \"groups\": [{\"name\": \"g\", \"count\": 1, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}, \"resources\":"
		" {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %d}]}}]}]}}",
		id, ns, priority, gpus) > 0);
	json_decref(ok(f, "POST", "/v1/jobs", t));
	free(t);
}

/* The allocations of a job that hold capacity (client pending/running). */
static inline json_t *live_allocs(struct fx *f, const char *ns, const char *id)
{
	char path[256];
	json_t *a, *out = json_array(), *x;
	size_t i;
	snprintf(path, sizeof(path), "/v1/job/%s/allocations?namespace=%s", id, ns);
	a = ok(f, "GET", path, NULL);
	json_array_foreach(a, i, x) {
		const char *cs = json_string_value(json_object_get(x, "client_status"));
		if (!strcmp(cs, "pending") || !strcmp(cs, "running"))
			json_array_append(out, x);
	}
	json_decref(a);
	return out;
}

static inline size_t nlive(struct fx *f, const char *ns, const char *id)
{
	json_t *a = live_allocs(f, ns, id);
	size_t n = json_array_size(a);
	json_decref(a);
	return n;
}

/* Sets the client status of every live allocation of a job. */
static inline void finish(struct fx *f, const char *ns, const char *id, const char *status)
{
	json_t *a = live_allocs(f, ns, id), *x;
	size_t i;
	json_array_foreach(a, i, x) {
		char path[256], body[128];
		snprintf(path, sizeof(path), "/v1/allocation/%s/status",
			 json_string_value(json_object_get(x, "id")));
		snprintf(body, sizeof(body), "{\"client_status\": \"%s\"}", status);
		json_decref(ok(f, "PUT", path, body));
	}
	json_decref(a);
}

/* The latest evaluation of a job. */
static inline json_t *last_eval(struct fx *f, const char *ns, const char *id)
{
	char path[256];
	json_t *a, *x, *best = NULL;
	size_t i;
	snprintf(path, sizeof(path), "/v1/job/%s/evaluations?namespace=%s", id, ns);
	a = ok(f, "GET", path, NULL);
	json_array_foreach(a, i, x)
		if (!best || json_integer_value(json_object_get(x, "modify_index")) >
			     json_integer_value(json_object_get(best, "modify_index")))
			best = x;
	if (best)
		json_incref(best);
	json_decref(a);
	return best;
}

#endif
