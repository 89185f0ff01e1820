/* status_sync: the client's status reports, batched (status_sync.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "agent/status_sync.h"
#include "common/xalloc.h"

/* One request carries at most this many allocations, and at most this
 * many task states: a task state is at most a few KiB (its last 10
 * events), which keeps a request well under the server's body limit. */
#define SYNC_MAX_ALLOCS 256
#define SYNC_MAX_TASKS 1024
#define BACKOFF_MIN_NS (100 * 1000000LL)
#define BACKOFF_MAX_NS (2 * 1000000000LL)

struct status_sync {
	struct client *c;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* CLOCK_MONOTONIC: a put or stop */
	json_t *queued;           /* {"<alloc id>": state}: latest, not yet sent */
	json_t *inflight;         /* {"<alloc id>": state}: sent, not yet answered */
	bool stopping;
	bool per_alloc;           /* the server lacks the batch route */
	char *path;               /* /v1/node/<id>/allocations/status */
	pthread_t thread;
};

/* One allocation of a request, and what became of it. */
struct sync_entry {
	char *id;
	json_t *state;            /* a reference of its own */
	bool settled;
};

/* What a send did: everything settled; something to send again; or no
 * server answered (then the rest waits too). */
enum { SYNC_OK = 0, SYNC_RETRY = -EAGAIN, SYNC_UNREACHABLE = -ECONNREFUSED };

static void settle_log(const char *id, const char *why)
{
	log_warn("client: alloc %.8s: status report: %s", id, why);
}

/* Moves the queued states (up to the limits of one request) in flight;
 * called locked.  Returns the entries (caller frees) and their count. */
static struct sync_entry *take_batch(struct status_sync *s, size_t *n)
{
	size_t cap = json_object_size(s->queued), tasks = 0, k = 0;
	struct sync_entry *v = xcalloc(cap ? cap : 1, sizeof(*v));
	const char *id;
	json_t *state;
	void *tmp;

	json_object_foreach_safe(s->queued, tmp, id, state) {
		size_t t = json_object_size(json_object_get(state, "task_states"));
		if (k == SYNC_MAX_ALLOCS || (k && tasks + t > SYNC_MAX_TASKS))
			break;
		tasks += t;
		v[k].id = xstrdup(id);
		v[k].state = json_incref(state);
		json_object_set(s->inflight, id, state);
		json_object_del(s->queued, v[k].id);
		k++;
	}
	*n = k;
	return v;
}

/* Takes the answered entries out of flight; the others go back in the
 * queue unless a newer state of theirs is queued already.  Called locked. */
static void finish_batch(struct status_sync *s, struct sync_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i].settled && !json_object_get(s->queued, v[i].id))
			json_object_set(s->queued, v[i].id, v[i].state);
		json_object_del(s->inflight, v[i].id);
		json_decref(v[i].state);
		free(v[i].id);
	}
	free(v);
}

/* One PUT /v1/allocation/:id/status per entry: a server without the
 * batch route. */
static int send_each(struct status_sync *s, struct httpc *h, struct sync_entry *v, size_t n)
{
	int rc = SYNC_OK;

	for (size_t i = 0; i < n; i++) {
		struct herd_err err = { 0, "" };
		struct httpc_response r;
		char *path = xasprintf("/v1/allocation/%s/status", v[i].id);
		int q = httpc_request(h, "PUT", path, v[i].state, &r, &err);
		free(path);
		/* 404, 400 and a refused transition are final, as in a batch;
		 * a conflict (the allocation kept changing) is tried again */
		if (q == 0 || r.status == 404 || r.status == 400 ||
		    (r.status == 409 && strcmp(r.error_code, "conflict"))) {
			if (q < 0)
				settle_log(v[i].id, err.msg);
			v[i].settled = true;
		} else if (r.status == 0) {
			client_server_reachable(s->c, false, err.msg);
			httpc_response_release(&r);
			return SYNC_UNREACHABLE;   /* the rest waits for the retry */
		} else {
			settle_log(v[i].id, err.msg);
			rc = SYNC_RETRY;
		}
		httpc_response_release(&r);
	}
	return rc;
}

/* Reads the per-allocation results of a batch answer, in request order. */
static int read_results(struct sync_entry *v, size_t n, const json_t *body)
{
	json_t *results = json_object_get(body, "results");
	int rc = SYNC_OK;

	for (size_t i = 0; i < n; i++) {
		json_t *res = json_array_get(results, i), *e = json_object_get(res, "error");
		const char *rid = json_string_value(json_object_get(res, "id"));
		const char *code = json_string_value(json_object_get(e, "code"));
		if (!rid || strcmp(rid, v[i].id)) {
			rc = SYNC_RETRY;   /* not answered: send it again */
			continue;
		}
		/* "conflict": the allocation kept changing under the server;
		 * anything else is a final refusal, as the single route's
		 * 404, 400 and 409 are */
		if (e && code && !strcmp(code, "conflict")) {
			rc = SYNC_RETRY;
			continue;
		}
		if (e)
			settle_log(v[i].id, json_string_value(json_object_get(e, "message")) ?: "refused");
		v[i].settled = true;
	}
	return rc;
}

static int send_batch(struct status_sync *s, struct httpc *h, struct sync_entry *v, size_t n)
{
	struct herd_err err = { 0, "" };
	struct httpc_response r;
	json_t *list = json_array(), *body;
	int rc, q;

	for (size_t i = 0; i < n; i++)
		json_array_append(list, v[i].state);
	body = json_pack("{s:o}", "allocations", list);
	q = httpc_request(h, "PUT", s->path, body, &r, &err);
	json_decref(body);
	if (q == 0) {
		client_server_reachable(s->c, true, NULL);
		rc = read_results(v, n, r.body);
	} else if ((r.status == 404 || r.status == 405) && strcmp(r.error_code, "node_not_found")) {
		/* an older server: no such route */
		log_info("client: server has no batch status route; reporting each allocation");
		pthread_mutex_lock(&s->lock);
		s->per_alloc = true;
		pthread_mutex_unlock(&s->lock);
		rc = send_each(s, h, v, n);
	} else if (r.status == 404) {
		/* The node is not (yet) known there: the single route says
		 * what becomes of each allocation. */
		rc = send_each(s, h, v, n);
	} else if (r.status == 400) {
		/* the whole set refused: as final as a 400 of one */
		for (size_t i = 0; i < n; i++) {
			settle_log(v[i].id, err.msg);
			v[i].settled = true;
		}
		rc = SYNC_OK;
	} else if (r.status == 0) {
		client_server_reachable(s->c, false, err.msg);
		rc = SYNC_UNREACHABLE;
	} else {
		log_warn("client: status reports: %s", err.msg);
		rc = SYNC_RETRY;
	}
	httpc_response_release(&r);
	return rc;
}

/* Waits ns or until stop; called locked. */
static void backoff_wait(struct status_sync *s, int64_t ns)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ns / 1000000000LL;
	until.tv_nsec += ns % 1000000000LL;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!s->stopping && pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
		;
}

static void *sync_main(void *arg)
{
	struct status_sync *s = arg;
	int64_t backoff = BACKOFF_MIN_NS;
	struct httpc h;

	client_httpc_init(s->c, &h);
	h.timeout_ms = 10000;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct sync_entry *v;
		bool last_try, per_alloc;
		size_t n;
		int rc;

		while (!json_object_size(s->queued) && !s->stopping)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!json_object_size(s->queued))
			break;
		last_try = s->stopping;
		per_alloc = s->per_alloc;
		v = take_batch(s, &n);
		pthread_mutex_unlock(&s->lock);
		rc = per_alloc ? send_each(s, &h, v, n) : send_batch(s, &h, v, n);
		pthread_mutex_lock(&s->lock);
		finish_batch(s, v, n);
		if (rc == SYNC_OK) {
			backoff = BACKOFF_MIN_NS;
			continue;
		}
		if (last_try)
			break;
		/* A server that went away may come back upgraded: ask for
		 * the batch route again. */
		if (rc == SYNC_UNREACHABLE)
			s->per_alloc = false;
		backoff_wait(s, backoff);
		backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
	}
	pthread_mutex_unlock(&s->lock);
	httpc_release(&h);
	return NULL;
}

struct status_sync *status_sync_start(struct client *c)
{
	struct status_sync *s = xcalloc(1, sizeof(*s));
	pthread_condattr_t ca;

	s->c = c;
	s->queued = json_object();
	s->inflight = json_object();
	s->path = xasprintf("/v1/node/%s/allocations/status", c->node_id);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&s->thread, NULL, sync_main, s))
		abort();   /* no threads left: nothing sensible remains */
	return s;
}

void status_sync_put(struct status_sync *s, const char *id, json_t *state)
{
	json_object_set_new(state, "id", json_string(id));
	pthread_mutex_lock(&s->lock);
	json_object_set_new(s->queued, id, state);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

bool status_sync_settled(struct status_sync *s, const char *id)
{
	bool settled;

	pthread_mutex_lock(&s->lock);
	settled = !json_object_get(s->queued, id) && !json_object_get(s->inflight, id);
	pthread_mutex_unlock(&s->lock);
	return settled;
}

void status_sync_stop(struct status_sync *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	json_decref(s->queued);
	json_decref(s->inflight);
	free(s->path);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
