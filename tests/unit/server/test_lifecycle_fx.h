/* test_lifecycle_fx.h: the fixture of the lifecycle and GC tests: a real
 * server (store, HTTP, workers, heartbeat timer) on 127.0.0.1, an
 * ephemeral port and a temporary data dir, driven over HTTP with libcurl
 * the way agents and the CLI drive it.  Every helper asserts what it needs
 * (cmocka), so a test reads as the sequence of calls it makes. */
#ifndef HERD_TEST_LIFECYCLE_FX_H
#define HERD_TEST_LIFECYCLE_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "server/server.h"

#define SEC 1000000000LL
#define MS 1000000LL

struct fx {
	char dir[64];
	struct server *srv;
	struct server_config cfg;
	char base[64];
};

static inline int fx_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
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

/* A server with cfg's settings (data_dir is filled in); cfg may be NULL. */
static inline struct fx *fx_new_cfg(const struct server_config *cfg)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/herd-life-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	if (cfg)
		f->cfg = *cfg;
	f->cfg.data_dir = f->dir;
	if (!f->cfg.workers)
		f->cfg.workers = 2;
	fx_start(f);
	return f;
}

static inline struct fx *fx_new(void)
{
	return fx_new_cfg(NULL);
}

static inline void fx_free(struct fx *f)
{
	server_stop(f->srv);
	nftw(f->dir, fx_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
}

static inline size_t fx_collect(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(arg, p, size * n);
	return size * n;
}

static inline size_t fx_header(char *p, size_t size, size_t n, void *arg)
{
	size_t len = size * n;
	const char *name = "X-Herd-Index:";
	if (len > strlen(name) && !strncasecmp(p, name, strlen(name)))
		*(long long *)arg = strtoll(p + strlen(name), NULL, 10);
	return len;
}

/* One request; returns the parsed body (or NULL), the status and the
 * X-Herd-Index header (index may be NULL). */
static inline json_t *fx_call(struct fx *f, const char *method, const char *path, const char *body,
			      long *status, long long *index)
{
	CURL *c = curl_easy_init();
	struct strbuf sb = STRBUF_INIT;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char *url = NULL;
	long long idx = -1;
	json_t *out;
	long st = 0;

	assert_true(asprintf(&url, "%s%s", f->base, path) > 0);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fx_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, fx_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &idx);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	if (status)
		*status = st;
	if (index)
		*index = idx;
	out = json_loads(sb.buf, 0, NULL);
	strbuf_release(&sb);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(url);
	return out;
}

/* A request that must answer 200; returns its body. */
static inline json_t *fx_ok(struct fx *f, const char *method, const char *path, const char *body)
{
	long st;
	json_t *r = fx_call(f, method, path, body, &st, NULL);
	if (st != 200) {
		char *s = r ? json_dumps(r, 0) : NULL;
		fprintf(stderr, "%s %s -> %ld %s\n", method, path, st, s ? s : "");
		free(s);
	}
	assert_int_equal(st, 200);
	return r;
}

/* The status a request answers (the body is dropped). */
static inline long fx_status(struct fx *f, const char *method, const char *path, const char *body)
{
	long st;
	json_decref(fx_call(f, method, path, body, &st, NULL));
	return st;
}

static inline void fx_idle(struct fx *f)
{
	assert_int_equal(server_wait_idle(f->srv, 20 * SEC), 0);
}

/* Registers node id with n GPUs of model (sharing "exclusive", "mps"),
 * meta.rack = rack (NULL: "r0"). */
static inline void fx_node(struct fx *f, const char *id, int n, const char *model,
			   const char *sharing, const char *rack)
{
	json_t *devs = json_array(), *body;
	char *text;
	for (int i = 0; i < n; i++) {
		char did[64];
		snprintf(did, sizeof(did), "GPU-%s-%d", id, i);
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b, s:{s:s}}",
			"id", did, "vendor", "nvidia", "type", "gpu", "model", model,
			"memory_mib", (json_int_t)81920, "sharing", sharing, "healthy", 1,
			"attributes", "memory", "81920"));
	}
	body = json_pack("{s:{s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:{s:I, s:I}, s:o}}", "node",
			 "id", id, "name", id, "datacenter", "dc1", "attributes", "kernel.name", "linux",
			 "meta", "rack", rack ? rack : "r0", "resources", "cpu_milli", (json_int_t)64000,
			 "memory_mib", (json_int_t)262144, "devices", devs);
	text = json_dumps(body, 0);
	json_decref(fx_ok(f, "POST", "/v1/node/register", text));
	free(text);
	json_decref(body);
}

/* A node with several devices of different models: models[i] for GPU i. */
static inline void fx_node_models(struct fx *f, const char *id, const char *const *models, int n,
				  const char *sharing)
{
	json_t *devs = json_array(), *body;
	char *text;
	for (int i = 0; i < n; i++) {
		char did[64];
		snprintf(did, sizeof(did), "GPU-%s-%d", id, i);
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b}",
			"id", did, "vendor", "nvidia", "type", "gpu", "model", models[i],
			"memory_mib", (json_int_t)81920, "sharing", sharing, "healthy", 1));
	}
	body = json_pack("{s:{s:s, s:s, s:s, s:{s:I, s:I}, s:o}}", "node", "id", id, "name", id,
			 "datacenter", "dc1", "resources", "cpu_milli", (json_int_t)64000,
			 "memory_mib", (json_int_t)262144, "devices", devs);
	text = json_dumps(body, 0);
	json_decref(fx_ok(f, "POST", "/v1/node/register", text));
	free(text);
	json_decref(body);
}

/* A job of one group "g" with one task "t"; device is the body of one
 * device block (NULL: none); group_extra is spliced into the group
 * (", \"reschedule\": {...}"), task_cmd is the task's command (NULL:
 * /bin/true). */
static inline char *fx_job(const char *id, const char *type, int count, const char *device,
			   const char *group_extra, const char *task_cmd)
{
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"%s\", \"type\": \"%s\", \"groups\": [{\"name\": \"g\", \"count\": %d %s,"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"%s\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64 %s%s%s}}]}]}}",
		id, type, count, group_extra ? group_extra : "", task_cmd ? task_cmd : "/bin/true",
		device ? ", \"devices\": [" : "", device ? device : "", device ? "]" : "") > 0);
	return s;
}

/* Submits a job body; returns the eval id it answered (caller frees; "" for
 * an unchanged job). */
static inline char *fx_submit_text(struct fx *f, const char *text)
{
	json_t *r = fx_ok(f, "POST", "/v1/jobs", text);
	char *id = strdup(json_string_value(json_object_get(r, "eval_id")));
	json_decref(r);
	return id;
}

static inline void fx_submit(struct fx *f, const char *id, const char *type, int count,
			     const char *device, const char *group_extra)
{
	char *t = fx_job(id, type, count, device, group_extra, NULL);
	char *eval = fx_submit_text(f, t);
	assert_true(strlen(eval) > 0);
	free(eval);
	free(t);
}

static inline json_t *fx_get(struct fx *f, const char *fmt, const char *arg)
{
	char path[512];
	snprintf(path, sizeof(path), fmt, arg);
	return fx_ok(f, "GET", path, NULL);
}

static inline json_t *fx_job_allocs(struct fx *f, const char *id)
{
	return fx_get(f, "/v1/job/%s/allocations", id);
}

/* The job's allocations whose desired status is "run" (a new array). */
static inline json_t *fx_running(struct fx *f, const char *id)
{
	json_t *a = fx_job_allocs(f, id), *out = json_array(), *x;
	size_t i;
	json_array_foreach(a, i, x)
		if (!strcmp(json_string_value(json_object_get(x, "desired_status")), "run"))
			json_array_append(out, x);
	json_decref(a);
	return out;
}

/* The only desired-run allocation of a job (asserts there is one). */
static inline json_t *fx_the_alloc(struct fx *f, const char *id)
{
	json_t *a = fx_running(f, id), *one;
	assert_int_equal(json_array_size(a), 1);
	one = json_incref(json_array_get(a, 0));
	json_decref(a);
	return one;
}

static inline const char *fx_s(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static inline long long fx_i(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* Reports an allocation's client status as its agent would. */
static inline void fx_alloc_status(struct fx *f, const json_t *alloc, const char *status)
{
	char path[256], body[128];
	snprintf(path, sizeof(path), "/v1/allocation/%s/status", fx_s(alloc, "id"));
	snprintf(body, sizeof(body), "{\"client_status\": \"%s\"}", status);
	json_decref(fx_ok(f, "PUT", path, body));
}

/* The job's evaluations of status st (a new array). */
static inline json_t *fx_evals(struct fx *f, const char *job, const char *st)
{
	json_t *a = fx_get(f, "/v1/job/%s/evaluations", job), *out = json_array(), *x;
	size_t i;
	json_array_foreach(a, i, x)
		if (!st || !strcmp(fx_s(x, "status"), st))
			json_array_append(out, x);
	json_decref(a);
	return out;
}

/* Waits (at most 10 s) until the job has n desired-run allocations. */
static inline json_t *fx_wait_running(struct fx *f, const char *id, size_t n)
{
	for (int i = 0; i < 200; i++) {
		json_t *a;
		fx_idle(f);
		a = fx_running(f, id);
		if (json_array_size(a) == n)
			return a;
		json_decref(a);
		usleep(50000);
	}
	fail_msg("job %s never had %zu allocations to run", id, n);
	return NULL;
}

static inline void fx_heartbeat(struct fx *f, const char *node)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/node/%s/heartbeat", node);
	json_decref(fx_ok(f, "PUT", path, "{}"));
}

#define fx_main(...)                                                           \
	int main(void)                                                         \
	{                                                                      \
		const struct CMUnitTest tests[] = { __VA_ARGS__ };             \
		int rc;                                                        \
		curl_global_init(CURL_GLOBAL_DEFAULT);                         \
		rc = cmocka_run_group_tests(tests, NULL, NULL);                \
		curl_global_cleanup();                                         \
		return rc;                                                     \
	}

#endif
