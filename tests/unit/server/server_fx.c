/* server_fx: see server_fx.h. */
#include "server_fx.h"

#include <ftw.h>
#include <strings.h>

#include "common/strbuf.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

void fx_start(struct fx *f)
{
	struct herd_err err = { 0 };
	int rc = server_start(&f->cfg, &f->srv, &err);
	if (rc)
		fprintf(stderr, "server_start: %s\n", err.msg);
	assert_int_equal(rc, 0);
	snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%u", server_port(f->srv));
}

struct fx *fx_new_cfg(const struct server_config *cfg)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/herd-fx-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	if (cfg)
		f->cfg = *cfg;
	f->cfg.data_dir = f->dir;
	if (!f->cfg.workers)
		f->cfg.workers = 2;
	fx_start(f);
	return f;
}

struct fx *fx_new(void)
{
	return fx_new_cfg(NULL);
}

struct fx *fx_new_teams(unsigned preempt_types, int acl)
{
	struct server_config cfg = { .preempt_types = preempt_types, .acl_enabled = acl };
	return fx_new_cfg(&cfg);
}

void fx_free(struct fx *f)
{
	server_stop(f->srv);
	nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
}

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(arg, p, size * n);
	return size * n;
}

static size_t index_header(char *p, size_t size, size_t n, void *arg)
{
	size_t len = size * n;
	const char *name = "X-Herd-Index:";
	if (len > strlen(name) && !strncasecmp(p, name, strlen(name)))
		*(long long *)arg = strtoll(p + strlen(name), NULL, 10);
	return len;
}

json_t *fx_call_index(struct fx *f, const char *method, const char *path, const char *body,
		      long *status, long long *index)
{
	CURL *c = curl_easy_init();
	struct strbuf sb = STRBUF_INIT;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char *url = NULL, *tok = NULL;
	long long idx = -1;
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
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, index_header);
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
	free(tok);
	return out;
}

json_t *fx_call(struct fx *f, const char *method, const char *path, const char *body, long *status)
{
	return fx_call_index(f, method, path, body, status, NULL);
}

json_t *fx_ok(struct fx *f, const char *method, const char *path, const char *body)
{
	long st;
	json_t *r = fx_call(f, method, path, body, &st);
	if (st != 200) {
		char *s = r ? json_dumps(r, 0) : NULL;
		fprintf(stderr, "%s %s -> %ld %s\n", method, path, st, s ? s : "");
		free(s);
	}
	assert_int_equal(st, 200);
	return r;
}

long fx_status(struct fx *f, const char *method, const char *path, const char *body)
{
	long st;
	json_decref(fx_call(f, method, path, body, &st));
	return st;
}

void fx_idle(struct fx *f)
{
	assert_int_equal(server_wait_idle(f->srv, 20 * SEC), 0);
}

static void register_node(struct fx *f, json_t *body)
{
	char *text = json_dumps(body, 0);
	json_decref(fx_ok(f, "POST", "/v1/node/register", text));
	free(text);
	json_decref(body);
}

void fx_node(struct fx *f, const char *id, int n, const char *model, const char *sharing,
	     const char *rack)
{
	json_t *devs = json_array();
	for (int i = 0; i < n; i++) {
		char did[64];
		snprintf(did, sizeof(did), "GPU-%s-%d", id, i);
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b, s:{s:s}}",
			"id", did, "vendor", "nvidia", "type", "gpu", "model", model,
			"memory_mib", (json_int_t)81920, "sharing", sharing, "healthy", 1,
			"attributes", "memory", "81920"));
	}
	register_node(f, json_pack("{s:{s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:{s:I, s:I}, s:o}}", "node",
				   "id", id, "name", id, "datacenter", "dc1", "attributes", "kernel.name",
				   "linux", "meta", "rack", rack ? rack : "r0", "resources", "cpu_milli",
				   (json_int_t)64000, "memory_mib", (json_int_t)262144, "devices", devs));
}

/* models[i] for GPU i, or model for all when models is NULL. */
static void node_of_models(struct fx *f, const char *id, const char *const *models,
			   const char *model, int n, const char *sharing)
{
	json_t *devs = json_array();
	for (int i = 0; i < n; i++) {
		char did[64];
		snprintf(did, sizeof(did), "GPU-%s-%d", id, i);
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b}",
			"id", did, "vendor", "nvidia", "type", "gpu", "model", models ? models[i] : model,
			"memory_mib", (json_int_t)81920, "sharing", sharing, "healthy", 1));
	}
	register_node(f, json_pack("{s:{s:s, s:s, s:s, s:{s:I, s:I}, s:o}}", "node", "id", id,
				   "name", id, "datacenter", "dc1", "resources", "cpu_milli",
				   (json_int_t)64000, "memory_mib", (json_int_t)262144, "devices", devs));
}

void fx_node_models(struct fx *f, const char *id, const char *const *models, int n,
		    const char *sharing)
{
	node_of_models(f, id, models, NULL, n, sharing);
}

void node_add_sharing(struct fx *f, const char *id, int n, const char *model, const char *sharing)
{
	node_of_models(f, id, NULL, model, n, sharing);
}

void node_add(struct fx *f, const char *id, int n, const char *model)
{
	node_add_sharing(f, id, n, model, "exclusive");
}

char *fx_job(const char *id, const char *type, int count, const char *device,
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

char *fx_submit_text(struct fx *f, const char *text)
{
	json_t *r = fx_ok(f, "POST", "/v1/jobs", text);
	char *id = strdup(json_string_value(json_object_get(r, "eval_id")));
	json_decref(r);
	return id;
}

void fx_submit(struct fx *f, const char *id, const char *type, int count, const char *device,
	       const char *group_extra)
{
	char *t = fx_job(id, type, count, device, group_extra, NULL);
	char *eval = fx_submit_text(f, t);
	assert_true(strlen(eval) > 0);
	free(eval);
	free(t);
}

json_t *fx_get(struct fx *f, const char *fmt, const char *arg)
{
	char path[512];
	snprintf(path, sizeof(path), fmt, arg);
	return fx_ok(f, "GET", path, NULL);
}

json_t *fx_job_allocs(struct fx *f, const char *id)
{
	return fx_get(f, "/v1/job/%s/allocations", id);
}

json_t *fx_running(struct fx *f, const char *id)
{
	json_t *a = fx_job_allocs(f, id), *out = json_array(), *x;
	size_t i;
	json_array_foreach(a, i, x)
		if (!strcmp(json_string_value(json_object_get(x, "desired_status")), "run"))
			json_array_append(out, x);
	json_decref(a);
	return out;
}

json_t *fx_the_alloc(struct fx *f, const char *id)
{
	json_t *a = fx_running(f, id), *one;
	if (json_array_size(a) != 1) {
		/* say which way it failed: cmocka prints only the count */
		char *d = json_dumps(a, JSON_COMPACT);
		fprintf(stderr, "job %s: %zu desired-run allocations, expected 1: %s\n", id,
			json_array_size(a), d);
		free(d);
	}
	assert_int_equal(json_array_size(a), 1);
	one = json_incref(json_array_get(a, 0));
	json_decref(a);
	return one;
}

const char *fx_s(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

long long fx_i(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

void fx_alloc_status(struct fx *f, const json_t *alloc, const char *status)
{
	char path[256], body[128];
	snprintf(path, sizeof(path), "/v1/allocation/%s/status", fx_s(alloc, "id"));
	snprintf(body, sizeof(body), "{\"client_status\": \"%s\"}", status);
	json_decref(fx_ok(f, "PUT", path, body));
}

json_t *fx_evals(struct fx *f, const char *job, const char *st)
{
	json_t *a = fx_get(f, "/v1/job/%s/evaluations", job), *out = json_array(), *x;
	size_t i;
	json_array_foreach(a, i, x)
		if (!st || !strcmp(fx_s(x, "status"), st))
			json_array_append(out, x);
	json_decref(a);
	return out;
}

json_t *fx_wait_running(struct fx *f, const char *id, size_t n)
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

void fx_heartbeat(struct fx *f, const char *node)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/node/%s/heartbeat", node);
	json_decref(fx_ok(f, "PUT", path, "{}"));
}

void submit_gpu(struct fx *f, const char *ns, const char *id, int gpus, int priority)
{
	char *t = NULL;
	assert_true(asprintf(&t,
		"{\"job\": {\"id\": \"%s\", \"namespace\": \"%s\", \"type\": \"batch\", \"priority\": %d,"
		" \"groups\": [{\"name\": \"g\", \"count\": 1, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}, \"resources\":"
		" {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %d}]}}]}]}}",
		id, ns, priority, gpus) > 0);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
}

json_t *live_allocs(struct fx *f, const char *ns, const char *id)
{
	char path[256];
	json_t *a, *out = json_array(), *x;
	size_t i;
	snprintf(path, sizeof(path), "/v1/job/%s/allocations?namespace=%s", id, ns);
	a = fx_ok(f, "GET", path, NULL);
	json_array_foreach(a, i, x) {
		const char *cs = json_string_value(json_object_get(x, "client_status"));
		if (!strcmp(cs, "pending") || !strcmp(cs, "running"))
			json_array_append(out, x);
	}
	json_decref(a);
	return out;
}

size_t nlive(struct fx *f, const char *ns, const char *id)
{
	json_t *a = live_allocs(f, ns, id);
	size_t n = json_array_size(a);
	json_decref(a);
	return n;
}

void finish(struct fx *f, const char *ns, const char *id, const char *status)
{
	json_t *a = live_allocs(f, ns, id), *x;
	size_t i;
	json_array_foreach(a, i, x)
		fx_alloc_status(f, x, status);
	json_decref(a);
}

json_t *last_eval(struct fx *f, const char *ns, const char *id)
{
	char path[256];
	json_t *a, *x, *best = NULL;
	size_t i;
	snprintf(path, sizeof(path), "/v1/job/%s/evaluations?namespace=%s", id, ns);
	a = fx_ok(f, "GET", path, NULL);
	json_array_foreach(a, i, x)
		if (!best || json_integer_value(json_object_get(x, "modify_index")) >
			     json_integer_value(json_object_get(best, "modify_index")))
			best = x;
	if (best)
		json_incref(best);
	json_decref(a);
	return best;
}

char *fx_token(struct fx *f, const char *policy, const char *rules)
{
	char path[128], *b = NULL, *secret;
	json_t *r;
	snprintf(path, sizeof(path), "/v1/acl/policy/%s", policy);
	assert_true(asprintf(&b, "{\"policy\": {\"rules\": %s}}", rules) > 0);
	json_decref(fx_ok(f, "POST", path, b));
	free(b);
	assert_true(asprintf(&b, "{\"token\": {\"name\": \"%s\", \"policies\": [\"%s\"]}}",
			     policy, policy) > 0);
	r = fx_ok(f, "POST", "/v1/acl/tokens", b);
	free(b);
	secret = strdup(fx_s(r, "secret_id"));
	assert_int_equal(strlen(secret), 64);
	json_decref(r);
	return secret;
}
