/* gc: garbage collection of the store.  Without it every evaluation and
 * every allocation ever made stays in state.db, and lists, job reads and
 * the planner's reads of a job grow without bound.
 *
 * What goes (docs/operations.md, "Garbage collection"):
 *   - a job that is over (stopped, or a batch job whose every instance
 *     completed) once nothing of it runs or is pending and its last change
 *     is older than job_gc_threshold: the job, its versions, its
 *     evaluations and allocations;
 *   - the records left by a purged job, once they ended and are older than
 *     eval_gc_threshold;
 *   - of any other job: ended evaluations (complete, failed, canceled) older
 *     than eval_gc_threshold except the job's latest, and allocations whose
 *     client ended and which were told to stop, older than eval_gc_threshold,
 *     unless a replacement still waits to link to them.
 * Each job's records go in one commit on condition that none of them, and
 * no allocation of the job, changed since they were read: the collector
 * never removes what a worker or an agent is changing at the same time.
 * The same commit adds the GPU-time of the allocations it deletes to the
 * usage ledger (usage_ledger.c), so that GET /v1/usage keeps counting it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/depends.h"
#include "server/server-int.h"
#include "server/teams.h"

struct gc {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	int64_t job_threshold, eval_threshold, interval;
};

struct gc_read {
	uint64_t index;
	json_t *jobs, *evals, *allocs;
};

static int read_all(struct store *s, void *arg, struct herd_err *err)
{
	struct gc_read *r = arg;
	int rc;
	r->index = store_index(s);
	rc = store_list(s, STORE_JOB, NULL, &r->jobs, err);
	if (!rc)
		rc = store_list(s, STORE_EVAL, NULL, &r->evals, err);
	if (!rc)
		rc = store_list(s, STORE_ALLOC, NULL, &r->allocs, err);
	return rc;
}

/* {"ns\x1fjob": {"job": record?, "evals": [...], "allocs": [...]}} */
static json_t *by_job(const struct gc_read *r)
{
	json_t *out = json_object(), *x;
	size_t i;
	const struct { json_t *list; const char *field, *id; } kinds[] = {
		{ r->jobs, "job", "id" }, { r->evals, "evals", "job_id" }, { r->allocs, "allocs", "job_id" },
	};
	for (size_t k = 0; k < 3; k++) {
		json_array_foreach(kinds[k].list, i, x) {
			char *key = xasprintf("%s\x1f%s", jstr(x, "namespace", "default"), jstr(x, kinds[k].id, ""));
			json_t *e = json_object_get(out, key);
			if (!e) {
				e = json_pack("{s:[], s:[]}", "evals", "allocs");
				json_object_set_new(out, key, e);
			}
			if (k == 0)
				json_object_set(e, "job", x);
			else
				json_array_append(json_object_get(e, kinds[k].field), x);
			free(key);
		}
	}
	return out;
}

static bool eval_live(const json_t *e)
{
	const char *st = jstr(e, "status", "pending");
	return !strcmp(st, "pending") || !strcmp(st, "blocked") || !strcmp(st, "queued");
}

/* Queues the delete of x; an allocation also goes into `folded`, whose
 * GPU-time the caller adds to the usage ledger in the same batch. */
static void delete_rec(struct store_batch *b, enum store_kind kind, const json_t *x, json_t *folded)
{
	struct store_key k = { NULL, jstr(x, "id", ""), 0 };
	store_batch_require_index(b, kind, &k, (uint64_t)jint(x, "modify_index", 0));
	store_batch_delete(b, kind, &k);
	if (kind == STORE_ALLOC)
		json_array_append(folded, (json_t *)x);
}

/* Collects the records of one job into batch b; returns how many. */
static size_t collect_job(struct server *srv, const json_t *e, int64_t now, const struct gc *g,
			  struct store_batch *b, struct gc_counts *c, json_t *folded)
{
	const json_t *job = json_object_get(e, "job"), *evals = json_object_get(e, "evals");
	const json_t *allocs = json_object_get(e, "allocs"), *x, *latest = NULL;
	json_t *replaced = json_object();
	bool all_ended = true, over;
	int64_t last = job ? jint(job, "submit_time", 0) : 0;
	size_t i, n = 0;

	json_array_foreach(allocs, i, x) {
		all_ended = all_ended && alloc_client_terminal(x);
		if (jint(x, "modify_time", 0) > last)
			last = jint(x, "modify_time", 0);
		if (*jstr(x, "previous_allocation", ""))
			json_object_set_new(replaced, jstr(x, "previous_allocation", ""), json_true());
	}
	json_array_foreach(evals, i, x) {
		all_ended = all_ended && !eval_live(x);
		if (jint(x, "modify_time", 0) > last)
			last = jint(x, "modify_time", 0);
		if (!latest || jint(x, "create_time", 0) > jint(latest, "create_time", 0))
			latest = x;
	}
	over = !job || jbool(job, "stop", false) || !strcmp(job_status(job, allocs), "dead");
	/* a job that another waits for stays: purged, it could never complete */
	if (over && job && depends_awaited(srv, jstr(job, "namespace", "default"), jstr(job, "id", "")))
		over = false;
	if (over && all_ended && now - last >= (job ? g->job_threshold : g->eval_threshold)) {
		if (job) {
			struct store_key k = { jstr(job, "namespace", "default"), jstr(job, "id", ""), 0 };
			struct store_filter f = { k.ns, k.id, NULL };
			json_t *versions = NULL;
			store_batch_require_index(b, STORE_JOB, &k, (uint64_t)jint(job, "modify_index", 0));
			store_batch_delete(b, STORE_JOB, &k);
			if (store_list(srv->store, STORE_JOB_VERSION, &f, &versions, NULL) == 0)
				json_array_foreach(versions, i, x) {
					struct store_key vk = { k.ns, k.id, jint(x, "version", 0) };
					store_batch_delete(b, STORE_JOB_VERSION, &vk);
				}
			json_decref(versions);
			c->jobs++;
			n++;
		}
		json_array_foreach(evals, i, x) {
			delete_rec(b, STORE_EVAL, x, folded);
			c->evals++;
			n++;
		}
		json_array_foreach(allocs, i, x) {
			delete_rec(b, STORE_ALLOC, x, folded);
			c->allocs++;
			n++;
		}
		json_decref(replaced);
		return n;
	}
	json_array_foreach(evals, i, x) {
		if (x == latest || eval_live(x) || now - jint(x, "modify_time", now) < g->eval_threshold)
			continue;
		delete_rec(b, STORE_EVAL, x, folded);
		c->evals++;
		n++;
	}
	json_array_foreach(allocs, i, x) {
		bool waits = jint(x, "replacement_attempts", -1) >= 0 && !json_object_get(replaced, jstr(x, "id", ""));
		if (!alloc_client_terminal(x) || (!strcmp(jstr(x, "desired_status", "run"), "run") && job && !over) ||
		    waits || now - jint(x, "modify_time", now) < g->eval_threshold)
			continue;
		delete_rec(b, STORE_ALLOC, x, folded);
		c->allocs++;
		n++;
	}
	json_decref(replaced);
	return n;
}

int gc_run(struct server *srv, int64_t now, struct gc_counts *out, struct herd_err *err)
{
	struct gc_read r = { 0 };
	struct gc_counts total = { 0 };
	json_t *jobs, *e;
	const char *key;
	int rc = store_view(srv->store, read_all, &r, err);

	if (rc < 0)
		goto out;
	jobs = by_job(&r);
	json_object_foreach(jobs, key, e) {
		struct store_batch b = STORE_BATCH_INIT;
		struct gc_counts c = { 0 };
		const char *sep = strchr(key, '\x1f');
		char *ns = xstrndup(key, (size_t)(sep - key));
		json_t *folded = json_array();
		store_batch_init(&b);
		/* and no allocation of the job came or changed since the read */
		store_batch_require_job_allocs(&b, ns, sep + 1, r.index);
		if (collect_job(srv, e, now, srv->gc, &b, &c, folded) > 0) {
			int crc = usage_fold(srv->store, &b, ns, sep + 1, folded, err);
			if (crc == 0)
				crc = store_commit(srv->store, &b, NULL, err);
			if (crc == 0) {
				if (c.jobs)
					depends_forget_job(srv, ns, sep + 1);
				total.jobs += c.jobs;
				total.evals += c.evals;
				total.allocs += c.allocs;
			} else if (crc != -ESTALE && crc != -ENOENT) {
				rc = crc; /* a store failure; -ESTALE: moved, next run */
			}
		}
		store_batch_release(&b);
		json_decref(folded);
		free(ns);
	}
	json_decref(jobs);
out:
	json_decref(r.jobs);
	json_decref(r.evals);
	json_decref(r.allocs);
	if (out) {
		out->jobs += total.jobs;
		out->evals += total.evals;
		out->allocs += total.allocs;
	}
	return rc;
}

static void *gc_main(void *arg)
{
	struct server *srv = arg;
	struct gc *g = srv->gc;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec ts = deadline_after(CLOCK_MONOTONIC, g->interval);
		struct herd_err err = { 0 };
		struct gc_counts c = { 0 };
		pthread_cond_timedwait(&g->cond, &g->lock, &ts);
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->lock);
		if (gc_run(srv, now_ns(), &c, &err) < 0)
			server_log(srv, "error", "garbage collection: %s", err.msg);
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int gc_start(struct server *srv, struct herd_err *err)
{
	struct gc *g = xcalloc(1, sizeof(*g));
	pthread_condattr_t ca;
	int rc;

	g->job_threshold = srv->cfg.job_gc_threshold_ns > 0 ? srv->cfg.job_gc_threshold_ns
							    : SERVER_DEFAULT_JOB_GC_THRESHOLD_NS;
	g->eval_threshold = srv->cfg.eval_gc_threshold_ns > 0 ? srv->cfg.eval_gc_threshold_ns
							      : SERVER_DEFAULT_EVAL_GC_THRESHOLD_NS;
	g->interval = srv->cfg.gc_interval_ns > 0 ? srv->cfg.gc_interval_ns : SERVER_DEFAULT_GC_INTERVAL_NS;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	srv->gc = g;
	rc = -pthread_create(&g->thread, NULL, gc_main, srv);
	if (rc < 0) {
		pthread_mutex_destroy(&g->lock);
		pthread_cond_destroy(&g->cond);
		free(g);
		srv->gc = NULL;
		return herd_errf(err, rc, "cannot start garbage collector: %s", strerror(-rc));
	}
	return 0;
}

void gc_stop(struct server *srv)
{
	struct gc *g = srv->gc;
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
	srv->gc = NULL;
}

/* POST /v1/system/gc: collects now, with the configured thresholds. */
static int post_gc(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct gc_counts c = { 0 };
	struct herd_err err = { 0 };
	int rc;
	(void)req;
	if (!srv->gc)
		return http_error(resp, 503, "unavailable", "the garbage collector is not running");
	rc = gc_run(srv, now_ns(), &c, &err);
	if (rc < 0) {
		server_log(srv, "error", "garbage collection: %s", err.msg);
		return rc;
	}
	resp->has_index = 1;
	resp->index = store_index(srv->store);
	http_reply(resp, 200, json_pack("{s:I, s:I, s:I, s:I}", "jobs", (json_int_t)c.jobs,
					"evaluations", (json_int_t)c.evals, "allocations",
					(json_int_t)c.allocs, "index", (json_int_t)resp->index));
	return 0;
}

int routes_system(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "POST", "/v1/system/gc", post_gc, 0, ACL_NEED_MANAGEMENT },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
