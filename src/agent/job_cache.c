/* job_cache: the job versions this client's allocations run (client-int.h).
 *
 * Allocations of one job version (a job's count, a batch job run again)
 * share one copy: the first fetches it, the next find it here.  Each
 * fetch asks for the one version it needs (GET /v1/job/:id/version/:v),
 * not every version of the job, on a kept-alive connection. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client-int.h"
#include "common/xalloc.h"

/* Versions kept: a job version is a few KiB of JSON. */
#define JOBS_MAX 64

static char *cache_key(const char *ns, const char *job_id, int64_t version)
{
	return xasprintf("%s\x1f%s\x1f%" PRId64, ns, job_id, version);
}

static json_t *cache_get(struct client *c, const char *key)
{
	json_t *job;

	pthread_mutex_lock(&c->shared_lock);
	job = json_incref(json_object_get(c->jobs, key));
	pthread_mutex_unlock(&c->shared_lock);
	return job;
}

static void cache_put(struct client *c, const char *key, json_t *job)
{
	pthread_mutex_lock(&c->shared_lock);
	if (!c->jobs) {
		c->jobs = json_object();
		c->jobs_order = json_array();
	}
	if (!json_object_get(c->jobs, key)) {
		if (json_array_size(c->jobs_order) >= JOBS_MAX) {
			json_object_del(c->jobs, json_string_value(json_array_get(c->jobs_order, 0)));
			json_array_remove(c->jobs_order, 0);
		}
		json_object_set(c->jobs, key, job);
		json_array_append_new(c->jobs_order, json_string(key));
	}
	pthread_mutex_unlock(&c->shared_lock);
}

/* GET path: the body (a new reference) on success, else NULL with err;
 * *status the HTTP status (0: no answer). */
static json_t *get(struct httpc *h, const char *path, long *status, struct herd_err *err)
{
	struct httpc_response r;
	json_t *body = NULL;

	if (httpc_request(h, "GET", path, NULL, &r, err) == 0)
		body = json_incref(r.body);
	*status = r.status;
	httpc_response_release(&r);
	return body;
}

static json_t *fetch(struct httpc *h, const char *ns, const char *job_id, int64_t version,
		     struct herd_err *err)
{
	char *e = httpc_escape(job_id), *ens = httpc_escape(ns);
	char *path = xasprintf("/v1/job/%s/version/%" PRId64 "?namespace=%s", e, version, ens);
	json_t *job, *list, *v;
	long status;
	size_t i;

	job = get(h, path, &status, err);
	free(path);
	if (job || status != 404)
		goto out;
	/* A server from before the single-version route: every version,
	 * else the current job. */
	path = xasprintf("/v1/job/%s/versions?namespace=%s", e, ens);
	list = get(h, path, &status, err);
	free(path);
	json_array_foreach(list, i, v)
		if (json_integer_value(json_object_get(v, "version")) == version)
			job = json_incref(v);
	json_decref(list);
	if (job || status == 0)
		goto out;
	path = xasprintf("/v1/job/%s?namespace=%s", e, ens);
	job = get(h, path, &status, err);
	free(path);
out:
	free(e);
	free(ens);
	return job;
}

json_t *client_job_version(struct client *c, const char *ns, const char *job_id,
			   int64_t version, struct herd_err *err)
{
	char *key = cache_key(ns, job_id, version);
	json_t *job = cache_get(c, key);
	struct httpc h;

	if (!job) {
		client_httpc_take(c, &h);
		h.timeout_ms = 10000;
		job = fetch(&h, ns, job_id, version, err);
		client_httpc_give(c, &h);
		/* Only the exact version is shared: the fallback to the
		 * current job may be another. */
		if (job && json_integer_value(json_object_get(job, "version")) == version)
			cache_put(c, key, job);
	}
	free(key);
	return job;
}
