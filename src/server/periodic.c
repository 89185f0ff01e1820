/* periodic: the launcher of periodic jobs (docs/api.md, "Periodic jobs").
 *
 * A periodic parent is never placed (plan.c); this thread launches its
 * children.  It keeps, per periodic job, the store index of the record it
 * computed from and the next launch time; it sleeps until the earliest
 * launch, or until periodic_wake says a periodic job changed.  A record
 * with a new index (registered again, changed) gets its next launch
 * computed from now, so a change never launches at once, and a launch
 * that was due while the server was down is not run (as Nomad does).
 * Launch times are wall-clock (cron is), so the thread waits on
 * CLOCK_REALTIME, and at most an hour, so that a clock set forward or back
 * is noticed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "server/server-int.h"
#include "spec/cron.h"

#define MAX_SLEEP_S 3600

struct periodic {
	pthread_t thread;
	pthread_mutex_t lock;     /* guards stop, wake and skipped */
	pthread_cond_t cond;
	bool stop, wake;
	bool running;             /* the thread was started (not periodic_manual) */
	/* serializes passes (the thread's and a test's): state is theirs */
	pthread_mutex_t tick_lock;
	/* {"ns\x1fid": {"index": record's modify_index, "next": unix s}} */
	json_t *state;
	/* {"ns\x1fid": unix s of the last skipped launch}: read by GET /v1/job */
	json_t *skipped;
};

bool job_is_periodic(const json_t *job)
{
	return json_is_object(json_object_get(job, "periodic"));
}

int64_t periodic_next_launch(const json_t *job, int64_t t)
{
	const json_t *p = json_object_get(job, "periodic"), *c;
	bool local = !strcmp(jstr(p, "time_zone", "UTC"), "Local");
	int64_t best = -1;
	size_t i;

	json_array_foreach(json_object_get(p, "crons"), i, c) {
		struct cron cr;
		char err[256];
		int64_t n;
		/* stored jobs were validated: a failure here is a record from
		 * elsewhere, which launches nothing */
		if (!json_is_string(c) || cron_parse(json_string_value(c), &cr, err, sizeof(err)) < 0)
			continue;
		n = cron_next(&cr, t, local);
		if (n >= 0 && (best < 0 || n < best))
			best = n;
	}
	return best;
}

static void note_skipped(struct periodic *pd, const char *key, int64_t t)
{
	pthread_mutex_lock(&pd->lock);
	json_object_set_new(pd->skipped, key, json_integer(t));
	pthread_mutex_unlock(&pd->lock);
}

int64_t periodic_last_skipped(struct server *srv, const char *ns, const char *id)
{
	struct periodic *pd = srv->periodic;
	char *key;
	int64_t t;

	if (!pd)
		return 0;
	key = xasprintf("%s\x1f%s", ns, id);
	pthread_mutex_lock(&pd->lock);
	t = json_integer_value(json_object_get(pd->skipped, key));
	pthread_mutex_unlock(&pd->lock);
	free(key);
	return t;
}

/* Launches job's child for t (the launch's own time, which names the
 * child), or skips it under prohibit_overlap. */
static void launch(struct server *srv, const json_t *job, const char *key, int64_t t)
{
	struct http_response resp = { 0 };
	struct herd_err err = { 0 };
	bool overlap = jbool(json_object_get(job, "periodic"), "prohibit_overlap", false);
	int rc = periodic_launch(srv, job, t, overlap, &resp, &err);

	if (rc < 0)
		server_log(srv, "error", "periodic job %s: launch at %lld: %s", jstr(job, "id", ""),
			   (long long)t, err.msg);
	else if (resp.status == 409)
		note_skipped(srv->periodic, key, t);
	if (resp.status == 409 || (rc == 0 && resp.status != 200))
		server_log(srv, "info", "periodic job %s: launch at %lld skipped: %s",
			   jstr(job, "id", ""), (long long)t,
			   jstr(json_object_get(resp.body, "error"), "message", "refused"));
	http_response_release(&resp);
}

/* One job's part of a pass: its next launch after it (-1: none). */
static int64_t tick_job(struct server *srv, const json_t *job, int64_t now, json_t *seen)
{
	struct periodic *pd = srv->periodic;
	char *key = xasprintf("%s\x1f%s", jstr(job, "namespace", ""), jstr(job, "id", ""));
	json_t *st = json_object_get(pd->state, key);
	int64_t idx = jint(job, "modify_index", 0), next;

	if (!st || jint(st, "index", -1) != idx) {
		next = periodic_next_launch(job, now);
	} else {
		next = jint(st, "next", -1);
		if (next >= 0 && next <= now) {
			launch(srv, job, key, next);
			/* from now: launches missed meanwhile are not made up */
			next = periodic_next_launch(job, now);
		}
	}
	json_object_set_new(seen, key, json_pack("{s:I, s:I}", "index", (json_int_t)idx, "next",
						 (json_int_t)next));
	free(key);
	return next;
}

int64_t periodic_tick(struct server *srv, int64_t now)
{
	struct periodic *pd = srv->periodic;
	json_t *jobs = NULL, *seen, *job;
	struct herd_err err = { 0 };
	int64_t earliest = -1;
	size_t i;

	if (!pd)
		return -1;
	pthread_mutex_lock(&pd->tick_lock);
	/* shared records: only read */
	if (store_list_shared(srv->store, STORE_JOB, NULL, &jobs, &err) < 0) {
		server_log(srv, "error", "periodic launcher: %s", err.msg);
		pthread_mutex_unlock(&pd->tick_lock);
		return now + 60; /* try again in a minute */
	}
	seen = json_object();
	json_array_foreach(jobs, i, job) {
		int64_t n;
		if (!job_is_periodic(job) || jbool(job, "stop", false) ||
		    !jbool(json_object_get(job, "periodic"), "enabled", true))
			continue;
		n = tick_job(srv, job, now, seen);
		if (n >= 0 && (earliest < 0 || n < earliest))
			earliest = n;
	}
	/* jobs gone, stopped or disabled are forgotten */
	json_decref(pd->state);
	pd->state = seen;
	json_decref(jobs);
	pthread_mutex_unlock(&pd->tick_lock);
	return earliest;
}

static void *periodic_main(void *arg)
{
	struct server *srv = arg;
	struct periodic *pd = srv->periodic;

	pthread_mutex_lock(&pd->lock);
	while (!pd->stop) {
		int64_t now, next;
		struct timespec ts = { 0 };

		pd->wake = false;
		pthread_mutex_unlock(&pd->lock);
		now = (int64_t)time(NULL);
		next = periodic_tick(srv, now);
		if (next < 0 || next > now + MAX_SLEEP_S)
			next = now + MAX_SLEEP_S;
		ts.tv_sec = (time_t)next;
		pthread_mutex_lock(&pd->lock);
		while (!pd->stop && !pd->wake) {
			int rc = pthread_cond_timedwait(&pd->cond, &pd->lock, &ts);
			if (rc == ETIMEDOUT)
				break;
		}
	}
	pthread_mutex_unlock(&pd->lock);
	return NULL;
}

void periodic_wake(struct server *srv)
{
	struct periodic *pd = srv->periodic;

	if (!pd)
		return;
	pthread_mutex_lock(&pd->lock);
	pd->wake = true;
	pthread_cond_broadcast(&pd->cond);
	pthread_mutex_unlock(&pd->lock);
}

int periodic_start(struct server *srv, struct herd_err *err)
{
	struct periodic *pd = xcalloc(1, sizeof(*pd));
	int rc;

	pthread_mutex_init(&pd->lock, NULL);
	pthread_mutex_init(&pd->tick_lock, NULL);
	/* the default clock is CLOCK_REALTIME: launch times are wall-clock */
	pthread_cond_init(&pd->cond, NULL);
	pd->state = json_object();
	pd->skipped = json_object();
	srv->periodic = pd;
	if (srv->cfg.periodic_manual)
		return 0;
	pd->running = true;
	rc = -pthread_create(&pd->thread, NULL, periodic_main, srv);
	if (rc < 0) {
		srv->periodic = NULL;
		json_decref(pd->state);
		json_decref(pd->skipped);
		pthread_mutex_destroy(&pd->lock);
		pthread_mutex_destroy(&pd->tick_lock);
		pthread_cond_destroy(&pd->cond);
		free(pd);
		return herd_errf(err, rc, "cannot start the periodic launcher: %s", strerror(-rc));
	}
	return 0;
}

void periodic_stop(struct server *srv)
{
	struct periodic *pd = srv->periodic;

	if (!pd)
		return;
	pthread_mutex_lock(&pd->lock);
	pd->stop = true;
	pthread_cond_broadcast(&pd->cond);
	pthread_mutex_unlock(&pd->lock);
	if (pd->running)
		pthread_join(pd->thread, NULL);
	srv->periodic = NULL;
	json_decref(pd->state);
	json_decref(pd->skipped);
	pthread_mutex_destroy(&pd->lock);
	pthread_mutex_destroy(&pd->tick_lock);
	pthread_cond_destroy(&pd->cond);
	free(pd);
}
