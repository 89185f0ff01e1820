/* status_sync: the client's status reports, batched (status_sync.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "agent/status_sync.h"
#include "common/units.h"
#include "common/xalloc.h"

/* One request carries at most this many allocations, and at most this
 * many task states: a task state is at most a few KiB (its last 10
 * events), which keeps a request well under the server's body limit. */
#define SYNC_MAX_ALLOCS 256
#define SYNC_MAX_TASKS 1024
#define BACKOFF_MIN_NS (100 * 1000000LL)
#define BACKOFF_MAX_NS (2 * 1000000000LL)

/* A change handed over and not yet written: the allocation's latest
 * state to report (NULL: none) and its row to write (NULL: none). */
struct pending {
	char *id;
	json_t *state;
	struct state_row *row;
};

struct status_sync {
	struct client *c;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* CLOCK_MONOTONIC: queued, or stop */
	struct pending *pend;     /* handed over, to write */
	size_t nr_pend, alloc_pend;
	json_t *pend_pos;         /* {"<alloc id>": index into pend} */
	json_t *writing;          /* {"<alloc id>": true}: being written */
	json_t *queued;           /* {"<alloc id>": state}: written, latest, not yet sent */
	json_t *inflight;         /* {"<alloc id>": state}: sent, not yet answered */
	bool write_active;        /* a caller is writing (write_pending) */
	bool flush;               /* removals handed over: the sender writes
				   * them unless a caller did first */
	bool stopping;            /* the sender tries once more and ends */
	bool per_alloc;           /* the server lacks the batch route */
	char *path;               /* /v1/node/<id>/allocations/status */
	uint64_t gen;             /* the sender's server (client_httpc_point) */
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
enum { SYNC_OK = 0, SYNC_RETRY = -EAGAIN, SYNC_UNREACHABLE = -ECONNREFUSED,
       SYNC_MOVED = -EHOSTUNREACH /* that server failed; the next is to be tried at once */ };

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

/* The sender's server did not answer, or failed (5xx): the client moves
 * on (client_server_failed). */
static int server_failed(struct status_sync *s, const char *why)
{
	return client_server_failed(s->c, s->gen, why) ? SYNC_UNREACHABLE : SYNC_MOVED;
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
		} else if (client_server_failure(&r)) {
			rc = server_failed(s, err.msg);
			httpc_response_release(&r);
			return rc;   /* the rest waits for the retry */
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
		client_server_answered(s->c, s->gen);
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
	} else if (client_server_failure(&r)) {
		rc = server_failed(s, err.msg);
	} else {
		log_warn("client: status reports: %s", err.msg);
		rc = SYNC_RETRY;
	}
	httpc_response_release(&r);
	return rc;
}

static void write_pending(struct status_sync *s);

/* Waits ns or until stop; called locked. */
static void backoff_wait(struct status_sync *s, int64_t ns)
{
	struct timespec until = deadline_after(CLOCK_MONOTONIC, ns);

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

		while (!json_object_size(s->queued) && !s->stopping) {
			/* Removals wait for the next caller's write, which
			 * takes them along; with nothing else to do, the
			 * sender writes them itself. */
			if (s->flush) {
				write_pending(s);
				continue;
			}
			pthread_cond_wait(&s->cond, &s->lock);
		}
		if (!json_object_size(s->queued))
			break;
		last_try = s->stopping;
		per_alloc = s->per_alloc;
		v = take_batch(s, &n);
		pthread_mutex_unlock(&s->lock);
		s->gen = client_httpc_point(s->c, &h);
		rc = per_alloc ? send_each(s, &h, v, n) : send_batch(s, &h, v, n);
		pthread_mutex_lock(&s->lock);
		finish_batch(s, v, n);
		if (rc == SYNC_OK) {
			backoff = BACKOFF_MIN_NS;
			/* What the server took may be the last status of
			 * finished runners: free them now (lock order: the
			 * client's runners before this sync's lock). */
			pthread_mutex_unlock(&s->lock);
			client_collect_runners(s->c);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		/* A server that went away may come back upgraded, and the
		 * next one may be newer: ask for the batch route again. */
		if (rc == SYNC_UNREACHABLE || rc == SYNC_MOVED)
			s->per_alloc = false;
		/* another server to try (a bounded number of times: once
		 * every server failed, the answer is SYNC_UNREACHABLE) */
		if (rc == SYNC_MOVED)
			continue;
		if (last_try)
			break;
		backoff_wait(s, backoff);
		backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
	}
	pthread_mutex_unlock(&s->lock);
	httpc_release(&h);
	return NULL;
}

/* Adds a handed-over change, or folds it into the pending one of the same
 * allocation: the newer state replaces the older (NULL keeps it), the
 * newer row too, carrying the spec the older had still to write.  Called
 * locked; takes the references. */
static void pend_add(struct status_sync *s, const char *id, json_t *state, struct state_row *row)
{
	json_t *pos = json_object_get(s->pend_pos, id);
	struct pending *p;

	if (pos) {
		p = &s->pend[json_integer_value(pos)];
		if (state) {
			json_decref(p->state);
			p->state = state;
		}
		if (row && p->row)
			state_row_merge(row, p->row);
		if (row)
			p->row = row;
		return;
	}
	ALLOC_GROW(s->pend, s->nr_pend + 1, s->alloc_pend);
	p = &s->pend[s->nr_pend];
	p->id = xstrdup(id);
	p->state = state;
	p->row = row;
	json_object_set_new(s->pend_pos, id, json_integer((json_int_t)s->nr_pend));
	s->nr_pend++;
}

/* Writes what is pending, and whatever is handed over meanwhile, then
 * queues the states for the sender: a state is on disk before it is sent
 * (what the server knows, a restarted agent knows too).  One caller at a
 * time writes, the others only add and go on: their rows join the
 * writer's next transaction, so under load the changes of many
 * allocations share a commit, with no thread of its own to wake.  Called
 * locked; unlocks while writing.  No network I/O: a server that hangs
 * does not hold rows back. */
static void write_pending(struct status_sync *s)
{
	s->flush = false;
	if (s->write_active)
		return;   /* the active writer takes ours too */
	s->write_active = true;
	while (s->nr_pend) {
		struct herd_err err = { 0, "" };
		struct pending *v = s->pend;
		size_t n = s->nr_pend, nrows = 0;
		struct state_row **rows = xcalloc(n, sizeof(*rows));
		int rc;

		s->pend = NULL;
		s->nr_pend = s->alloc_pend = 0;
		json_object_clear(s->pend_pos);
		for (size_t i = 0; i < n; i++) {
			json_object_set_new(s->writing, v[i].id, json_true());
			if (v[i].row)
				rows[nrows++] = v[i].row;
		}
		pthread_mutex_unlock(&s->lock);
		rc = nrows ? state_write(s->c->state, rows, nrows, &err) : 0;
		if (rc < 0)
			log_warn("client: state of %zu allocation%s: %s", nrows, nrows == 1 ? "" : "s",
				 err.msg);
		pthread_mutex_lock(&s->lock);
		for (size_t i = 0; i < n; i++) {
			/* Sent even when not written, as before a write failed:
			 * the server should know.  A row not written is written
			 * with the next change (of any allocation), under a
			 * newer row of its own if there is one by then. */
			if (v[i].state) {
				json_object_set_new(s->queued, v[i].id, v[i].state);
				pthread_cond_signal(&s->cond);
			}
			json_object_del(s->writing, v[i].id);
			if (rc < 0 && v[i].row)
				pend_add(s, v[i].id, NULL, v[i].row);
			else
				state_row_free(v[i].row);
			free(v[i].id);
		}
		free(v);
		free(rows);
		if (rc < 0)
			break;   /* a disk that refused: tried again with the next change */
	}
	s->write_active = false;
}

struct status_sync *status_sync_start(struct client *c)
{
	struct status_sync *s = xcalloc(1, sizeof(*s));
	pthread_condattr_t ca;

	s->c = c;
	s->queued = json_object();
	s->inflight = json_object();
	s->pend_pos = json_object();
	s->writing = json_object();
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

void status_sync_put(struct status_sync *s, const char *id, json_t *state,
		     struct state_row *row)
{
	if (state)
		json_object_set_new(state, "id", json_string(id));
	pthread_mutex_lock(&s->lock);
	pend_add(s, id, state, row);
	write_pending(s);
	pthread_mutex_unlock(&s->lock);
}

void status_sync_forget(struct status_sync *s, const char *const *ids, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < n; i++)
		pend_add(s, ids[i], NULL, state_row_removal(ids[i]));
	s->flush = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

bool status_sync_settled(struct status_sync *s, const char *id)
{
	bool settled;

	pthread_mutex_lock(&s->lock);
	settled = !json_object_get(s->pend_pos, id) && !json_object_get(s->writing, id) &&
		  !json_object_get(s->queued, id) && !json_object_get(s->inflight, id);
	pthread_mutex_unlock(&s->lock);
	return settled;
}

void status_sync_stop(struct status_sync *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	/* What a failed write left: one more try, queued for the sender's
	 * last. */
	write_pending(s);
	s->stopping = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->nr_pend; i++) {
		free(s->pend[i].id);
		json_decref(s->pend[i].state);
		state_row_free(s->pend[i].row);
	}
	free(s->pend);
	json_decref(s->pend_pos);
	json_decref(s->writing);
	json_decref(s->queued);
	json_decref(s->inflight);
	free(s->path);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
