/* idle_gpu: the server's side of idle-GPU reclaiming (idle_gpu.h).
 *
 * Heartbeats bring each device's utilization (the agent samples NVML per
 * heartbeat); idle_gpu_observe folds each sample into the device's window
 * (how many, the highest, whether one had no value, when the first came,
 * by the server's clock: an agent's clock may be off).  Once a second the
 * round thread takes the windows, reads the quotas with an idle_gpu block
 * and the running allocations of the namespaces that carry them, and steps
 * each allocation's clock (idle_track.c).  A group may carry an idle_gpu
 * block of its own (docs/jobspec.md): the jobs that have one are kept in a
 * map brought up to date each round with the jobs changed since the last
 * (store_list_changed), and where both apply the stricter wins, field by
 * field (idle_policy_merge).  A due "warn" adds an event to
 * the allocation; a due "stop" stops its job as DELETE /v1/job/:id does
 * (stop = true, stop_reason, a job-deregister evaluation), in one
 * conditional commit each; a commit that loses a race is tried again next
 * round.  All of it is in memory: a new leader starts the clocks again.
 * Every list the round reads is the store's shared records (store.h), only
 * read: an action reads its allocation and job again, as its own copies. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/depends.h"
#include "server/idle_gpu.h"
#include "server/server-int.h"
#include "server/teams.h"

#define IDLE_ROUND_NS 1000000000LL /* one round a second */
#define IDLE_MAX_EVENTS 10         /* events kept per allocation */

struct idle_gpu {
	pthread_mutex_t lock;   /* guards everything below but the thread */
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	json_t *windows;        /* {"<node>\x1f<device>": {"n", "max", "unknown", "first"}} */
	struct idle_tracker t;
	json_t *actions;        /* {"<ns>": {"warn": n, "stop": n}} */
	/* the round thread's alone: jobs with a group idle_gpu block,
	 * {"<ns>\x1f<job id>": {"<group>": block}}, as of store index
	 * jobs_index */
	json_t *jobs;
	uint64_t jobs_index;
};

/* ---- samples ---------------------------------------------------------------- */

void idle_gpu_observe(struct server *srv, const char *node_id, const json_t *devices)
{
	struct idle_gpu *ig = srv->idle;
	int64_t now = now_ns();
	json_t *d;
	size_t i;

	if (!ig || !json_is_array(devices))
		return;
	pthread_mutex_lock(&ig->lock);
	json_array_foreach(devices, i, d) {
		const json_t *u = json_object_get(json_object_get(d, "stats"), "utilization_gpu");
		const char *id = jstr(d, "id", NULL);
		bool known = json_is_number(u) && json_number_value(u) >= 0;
		char *key;
		json_t *w;
		if (!id)
			continue;
		key = xasprintf("%s\x1f%s", node_id, id);
		w = json_object_get(ig->windows, key);
		if (!w) {
			w = json_pack("{s:i, s:f, s:b, s:I}", "n", 0, "max", 0.0, "unknown", 0, "first",
				      (json_int_t)now);
			json_object_set_new(ig->windows, key, w);
		}
		json_object_set_new(w, "n", json_integer(jint(w, "n", 0) + 1));
		if (!known)
			json_object_set_new(w, "unknown", json_true());
		else if (json_number_value(u) > json_real_value(json_object_get(w, "max")))
			json_object_set_new(w, "max", json_real(json_number_value(u)));
		free(key);
	}
	pthread_mutex_unlock(&ig->lock);
}

static void window_of(const json_t *windows, const char *node, const char *dev,
		      struct idle_window *w, const struct idle_window **out)
{
	char *key = xasprintf("%s\x1f%s", node, dev);
	const json_t *o = json_object_get(windows, key);
	free(key);
	*out = NULL;
	if (!o)
		return;
	w->n = (int)jint(o, "n", 0);
	w->unknown = jbool(o, "unknown", false);
	w->max_util = json_real_value(json_object_get(o, "max"));
	w->first_at = jint(o, "first", 0);
	*out = w;
}

/* ---- policies --------------------------------------------------------------- */

/* {"<ns>": {"quota": name, "idle_gpu": block}} for every namespace whose
 * quota has an idle_gpu block; NULL with err on a store error. */
static json_t *read_policies(struct server *srv, struct herd_err *err)
{
	json_t *quotas = NULL, *nss = NULL, *by_quota = json_object(), *out = NULL, *x;
	size_t i;

	if (store_list_shared(srv->store, STORE_QUOTA, NULL, &quotas, err) < 0)
		goto done;
	json_array_foreach(quotas, i, x)
		if (json_object_get(x, "idle_gpu"))
			json_object_set(by_quota, jstr(x, "name", ""), json_object_get(x, "idle_gpu"));
	out = json_object();
	if (!json_object_size(by_quota))
		goto done;
	if (store_list_shared(srv->store, STORE_NAMESPACE, NULL, &nss, err) < 0) {
		json_decref(out);
		out = NULL;
		goto done;
	}
	json_array_foreach(nss, i, x) {
		const char *q = jstr(x, "quota", "");
		json_t *b = *q ? json_object_get(by_quota, q) : NULL;
		if (b)
			json_object_set_new(out, jstr(x, "name", ""),
					    json_pack("{s:s, s:O}", "quota", q, "idle_gpu", b));
	}
done:
	json_decref(quotas);
	json_decref(nss);
	json_decref(by_quota);
	return out;
}

/* Brings ig->jobs up to date with the jobs changed since the last round:
 * a job (not stopped) with a group's idle_gpu block is in, any other out.
 * Purged jobs do not show here; the round drops them when it finds them
 * gone.  0, or -errno with err. */
static int refresh_jobs(struct server *srv, struct idle_gpu *ig, struct herd_err *err)
{
	json_t *jobs = NULL, *j, *g;
	uint64_t top = ig->jobs_index;
	size_t i, k;
	int rc = store_list_changed_shared(srv->store, STORE_JOB, NULL, ig->jobs_index,
					   &jobs, err);

	if (rc < 0)
		return rc;
	json_array_foreach(jobs, i, j) {
		char *key = xasprintf("%s\x1f%s", jstr(j, "namespace", "default"), jstr(j, "id", ""));
		json_t *blocks = json_object();
		if ((uint64_t)jint(j, "modify_index", 0) > top)
			top = (uint64_t)jint(j, "modify_index", 0);
		json_array_foreach(json_object_get(j, "groups"), k, g)
			if (!jbool(j, "stop", false) && json_is_object(json_object_get(g, "idle_gpu")))
				json_object_set(blocks, jstr(g, "name", ""), json_object_get(g, "idle_gpu"));
		if (json_object_size(blocks))
			json_object_set(ig->jobs, key, blocks);
		else
			json_object_del(ig->jobs, key);
		json_decref(blocks);
		free(key);
	}
	ig->jobs_index = top;
	json_decref(jobs);
	return 0;
}

/* A group's block as the job model stores it (after in ns) into *p;
 * false when there is none. */
static bool group_policy(const json_t *block, struct idle_policy *p)
{
	int64_t below = jint(block, "utilization_below", 0), after = jint(block, "after", 0);
	memset(p, 0, sizeof(*p));
	if (below < 1 || below > 100 || after < IDLE_MIN_AFTER_NS)
		return false;
	p->below = (int)below;
	p->after_ns = after;
	p->action = !strcmp(jstr(block, "action", "warn"), "stop") ? IDLE_ACTION_STOP
								    : IDLE_ACTION_WARN;
	return true;
}

/* The policy of allocation al: its namespace's quota's block (qpol, an
 * entry of read_policies or NULL) and its group's (jobs, ig->jobs),
 * merged; *source names where it came from ("quota team-a", "group g's
 * idle_gpu" or both; the caller frees).  false when neither applies. */
static bool alloc_policy(const json_t *al, const json_t *qpol, const json_t *jobs,
			 struct idle_policy *p, char **source)
{
	char *key = xasprintf("%s\x1f%s", jstr(al, "namespace", "default"), jstr(al, "job_id", ""));
	const char *group = jstr(al, "task_group", "");
	const json_t *gb = json_object_get(json_object_get(jobs, key), group);
	struct idle_policy gp;
	bool q = qpol && idle_policy_from_json(json_object_get(qpol, "idle_gpu"), p);
	bool g = gb && group_policy(gb, &gp);

	free(key);
	if (!q)
		memset(p, 0, sizeof(*p));
	if (g)
		idle_policy_merge(p, &gp);
	if (q && g)
		*source = xasprintf("quota %s, group %s's idle_gpu", jstr(qpol, "quota", ""), group);
	else if (q)
		*source = xasprintf("quota %s", jstr(qpol, "quota", ""));
	else if (g)
		*source = xasprintf("group %s's idle_gpu", group);
	return q || g;
}

/* ---- actions ------------------------------------------------------------------- */

struct idle_due {
	json_t *alloc;             /* the allocation as the round read it */
	struct idle_policy p;
	enum idle_decision d;
	int64_t since;
	char *source;              /* "quota team-a", "group g's idle_gpu", or both */
};

static void count_action(struct idle_gpu *ig, const char *ns, const char *action)
{
	json_t *o;
	pthread_mutex_lock(&ig->lock);
	o = json_object_get(ig->actions, ns);
	if (!o) {
		o = json_object();
		json_object_set_new(ig->actions, ns, o);
	}
	json_object_set_new(o, action, json_integer(jint(o, action, 0) + 1));
	pthread_mutex_unlock(&ig->lock);
}

/* The action was not taken (a race, a store error): the next round may
 * take it again, as long as the idle period goes on. */
static void undo_action(struct idle_gpu *ig, const char *alloc_id)
{
	struct idle_entry *e;
	pthread_mutex_lock(&ig->lock);
	e = (struct idle_entry *)idle_tracker_find(&ig->t, alloc_id);
	if (e)
		e->st.acted = false;
	pthread_mutex_unlock(&ig->lock);
}

/* Appends an event to alloc (a copy of the caller's), keeping the latest
 * IDLE_MAX_EVENTS. */
static void add_event(json_t *alloc, const char *message, int64_t now)
{
	json_t *ev = json_object_get(alloc, "events");
	json_t *copy = json_is_array(ev) ? json_deep_copy(ev) : json_array();
	json_array_append_new(copy, json_pack("{s:I, s:s, s:s}", "time", (json_int_t)now, "type",
					      "GPUs Idle", "message", message));
	while (json_array_size(copy) > IDLE_MAX_EVENTS)
		json_array_remove(copy, 0);
	json_object_set_new(alloc, "events", copy);
}

static void format_time(int64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / NS_PER_SEC);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Queues on b the allocation with the event, on condition that it did not
 * change since read; 0, or -errno with err. */
static int put_event(struct server *srv, struct store_batch *b, const json_t *alloc,
		     const char *message, struct herd_err *err)
{
	struct store_key key = { NULL, jstr(alloc, "id", ""), 0 };
	json_t *cur = NULL;
	int rc = store_get(srv->store, STORE_ALLOC, &key, &cur, err);
	if (rc < 0)
		return rc;
	if (alloc_client_terminal(cur) || strcmp(jstr(cur, "desired_status", ""), "run")) {
		json_decref(cur);
		return herd_errf(err, -ESTALE, "allocation %s is no longer running", key.id);
	}
	add_event(cur, message, now_ns());
	json_object_set_new(cur, "modify_time", json_integer(now_ns()));
	store_batch_require_index(b, STORE_ALLOC, &key, (uint64_t)jint(cur, "modify_index", 0));
	/* an event is for people, not for the agent: put like a report, so
	 * that the agent's watch is not sent the allocation again for it */
	store_batch_put_report(b, STORE_ALLOC, cur);
	json_decref(cur);
	return 0;
}

static int do_warn(struct server *srv, const struct idle_due *td, struct herd_err *err)
{
	struct store_batch b = STORE_BATCH_INIT;
	char when[32], *msg;
	int rc;

	format_time(td->since, when, sizeof(when));
	msg = xasprintf("GPUs idle: utilization below %d%% since %s (%s)", td->p.below, when,
			td->source);
	store_batch_init(&b);
	rc = put_event(srv, &b, td->alloc, msg, err);
	if (rc == 0)
		rc = store_commit(srv->store, &b, NULL, err);
	store_batch_release(&b);
	if (rc == 0)
		server_log(srv, "info", "idle gpu: allocation %s of job %s (namespace %s): %s",
			   jstr(td->alloc, "id", ""), jstr(td->alloc, "job_id", ""),
			   jstr(td->alloc, "namespace", ""), msg);
	free(msg);
	return rc;
}

/* Stops the allocation's job as DELETE /v1/job/:id does, with the reason
 * on the job (stop_reason) and as an event of the allocation.  1 when the
 * job was stopped already (nothing to count). */
static int do_stop(struct server *srv, const struct idle_due *td, struct herd_err *err)
{
	const char *ns = jstr(td->alloc, "namespace", "default");
	struct store_key key = { ns, jstr(td->alloc, "job_id", ""), 0 };
	struct store_batch b = STORE_BATCH_INIT;
	json_t *job = NULL, *eval = NULL;
	char dur[64], *why;
	int rc = store_get(srv->store, STORE_JOB, &key, &job, err);

	if (rc < 0)
		return rc;
	if (jbool(job, "stop", false)) {
		json_decref(job);
		return 1;
	}
	why = xasprintf("stopped: GPUs idle below %d%% for %s (%s)", td->p.below,
			format_duration(td->p.after_ns, dur, sizeof(dur)), td->source);
	store_batch_init(&b);
	store_batch_require_index(&b, STORE_JOB, &key, (uint64_t)jint(job, "modify_index", 0));
	json_object_set_new(job, "stop", json_true());
	json_object_set_new(job, "stop_reason", json_string(why));
	store_batch_put(&b, STORE_JOB, job);
	eval = eval_new(key.ns, key.id, "job-deregister", NULL);
	store_batch_put(&b, STORE_EVAL, eval);
	rc = put_event(srv, &b, td->alloc, why, err);
	if (rc == 0)
		rc = store_commit(srv->store, &b, NULL, err);
	store_batch_release(&b);
	if (rc == 0) {
		broker_enqueue(&srv->broker, jstr(eval, "id", ""), key.ns, key.id, 0);
		if (job_is_periodic(job))
			periodic_wake(srv);
		depends_job_changed(srv, key.ns, key.id);
		server_log(srv, "info", "idle gpu: job %s (namespace %s) %s", key.id, key.ns, why);
	}
	free(why);
	json_decref(eval);
	json_decref(job);
	return rc;
}

static void act(struct server *srv, const struct idle_due *td)
{
	struct herd_err err = { 0 };
	const char *id = jstr(td->alloc, "id", "");
	int rc = td->d == IDLE_DO_STOP ? do_stop(srv, td, &err) : do_warn(srv, td, &err);

	if (rc == 0)
		count_action(srv->idle, jstr(td->alloc, "namespace", "default"),
			     td->d == IDLE_DO_STOP ? "stop" : "warn");
	if (rc >= 0)
		return;
	if (rc != -ESTALE)
		server_log(srv, "error", "idle gpu: allocation %s: %s", id, err.msg);
	undo_action(srv->idle, id);
}

/* ---- the round --------------------------------------------------------------- */

static bool alloc_running(const json_t *al)
{
	return !strcmp(jstr(al, "client_status", ""), "running") &&
	       !strcmp(jstr(al, "desired_status", ""), "run");
}

/* Steps one allocation's clock; a due action goes into r->due. */
struct idle_round {
	const json_t *windows;
	int64_t now;
	struct idle_due *due;
	size_t ndue, adue;
};

/* Steps one allocation's clock under the policies that apply to it (qpol:
 * its namespace's entry of read_policies, or NULL); a due action goes into
 * r->due. */
static void step_alloc(struct idle_gpu *ig, const json_t *al, const json_t *qpol,
		       struct idle_round *r)
{
	const json_t *devs = json_object_get(json_object_get(al, "resources"), "devices"), *d;
	size_t n = json_array_size(devs), i;
	struct idle_window *ws = xcalloc(n ? n : 1, sizeof(*ws));
	struct idle_dev *ds = xcalloc(n ? n : 1, sizeof(*ds));
	struct idle_policy p;
	struct idle_entry *e;
	enum idle_decision dec;
	enum idle_obs obs;
	int64_t first = 0;
	char *source = NULL;

	if (!alloc_running(al) || !n || !alloc_policy(al, qpol, ig->jobs, &p, &source)) {
		free(ws);
		free(ds);
		return;
	}
	json_array_foreach(devs, i, d) {
		window_of(r->windows, jstr(al, "node_id", ""), jstr(d, "id", ""), &ws[i], &ds[i].w);
		ds[i].mig = *jstr(d, "mig_profile", "") != '\0';
	}
	obs = idle_observe(ds, n, p.below, &first);
	pthread_mutex_lock(&ig->lock);
	e = idle_tracker_touch(&ig->t, jstr(al, "id", ""), jstr(al, "namespace", "default"));
	e->gpu_milli = alloc_gpu_milli(al);
	dec = idle_step(&e->st, obs, first, &p, r->now);
	if (dec != IDLE_NOTHING) {
		ALLOC_GROW(r->due, r->ndue + 1, r->adue);
		r->due[r->ndue++] = (struct idle_due){ json_incref((json_t *)al), p, dec,
							  e->st.idle_since, source };
		source = NULL;
	}
	pthread_mutex_unlock(&ig->lock);
	free(source);
	free(ws);
	free(ds);
}

/* Keeps the clocks of namespace ns as they are: a store error is no
 * sample. */
static void keep_clocks(struct idle_gpu *ig, const char *ns)
{
	pthread_mutex_lock(&ig->lock);
	for (size_t j = 0; j < ig->t.n; j++)
		if (!strcmp(ig->t.e[j].ns, ns))
			ig->t.e[j].seen = true;
	pthread_mutex_unlock(&ig->lock);
}

/* Steps the allocations of every job with its own block in a namespace
 * without a quota block (those with one were stepped with their namespace);
 * drops from ig->jobs the jobs that are gone. */
static void step_jobs(struct server *srv, struct idle_gpu *ig, const json_t *pols,
		      struct idle_round *r)
{
	json_t *gone = json_array(), *v, *x;
	const char *key;
	size_t i;

	json_object_foreach(ig->jobs, key, v) {
		const char *sep = strchr(key, '\x1f');
		char *ns = xstrndup(key, (size_t)(sep - key));
		struct store_filter f = { ns, sep + 1, NULL };
		struct store_key jk = { ns, sep + 1, 0 };
		struct herd_err err = { 0 };
		json_t *allocs = NULL, *al;
		uint64_t idx;
		size_t k;
		(void)v;
		if (json_object_get(pols, ns)) {
			free(ns);
			continue;
		}
		if (store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, &err) < 0) {
			server_log(srv, "error", "idle gpu: job %s (namespace %s): %s", sep + 1, ns, err.msg);
			keep_clocks(ig, ns);
			free(ns);
			continue;
		}
		if (!json_array_size(allocs) &&
		    store_get_index(srv->store, STORE_JOB, &jk, &idx, NULL) == -ENOENT)
			json_array_append_new(gone, json_string(key));
		json_array_foreach(allocs, k, al)
			step_alloc(ig, al, NULL, r);
		json_decref(allocs);
		free(ns);
	}
	json_array_foreach(gone, i, x)
		json_object_del(ig->jobs, json_string_value(x));
	json_decref(gone);
}

void idle_gpu_round(struct server *srv)
{
	struct idle_gpu *ig = srv->idle;
	struct herd_err err = { 0 };
	struct idle_round r = { 0 };
	json_t *windows, *pols, *pol;
	const char *ns;
	size_t i;

	if (!ig)
		return;
	pthread_mutex_lock(&ig->lock);
	windows = ig->windows;
	ig->windows = json_object();
	pthread_mutex_unlock(&ig->lock);
	r.windows = windows;
	r.now = now_ns();
	pols = read_policies(srv, &err);
	if (pols && refresh_jobs(srv, ig, &err) < 0) {
		json_decref(pols);
		pols = NULL;
	}
	if (!pols) {
		/* the clocks stay as they are: a store error is no sample */
		server_log(srv, "error", "idle gpu: %s", err.msg);
		json_decref(windows);
		return;
	}
	pthread_mutex_lock(&ig->lock);
	idle_tracker_begin(&ig->t);
	pthread_mutex_unlock(&ig->lock);
	json_object_foreach(pols, ns, pol) {
		struct store_filter f = { ns, NULL, NULL };
		json_t *allocs = NULL, *al;
		size_t k;
		if (store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, &err) < 0) {
			server_log(srv, "error", "idle gpu: namespace %s: %s", ns, err.msg);
			keep_clocks(ig, ns);
			continue;
		}
		json_array_foreach(allocs, k, al)
			step_alloc(ig, al, pol, &r);
		json_decref(allocs);
	}
	step_jobs(srv, ig, pols, &r);
	pthread_mutex_lock(&ig->lock);
	idle_tracker_end(&ig->t);
	pthread_mutex_unlock(&ig->lock);
	for (i = 0; i < r.ndue; i++) {
		act(srv, &r.due[i]);
		json_decref(r.due[i].alloc);
		free(r.due[i].source);
	}
	free(r.due);
	json_decref(pols);
	json_decref(windows);
}

static void *idle_main(void *arg)
{
	struct server *srv = arg;
	struct idle_gpu *ig = srv->idle;

	pthread_mutex_lock(&ig->lock);
	while (!ig->stop) {
		struct timespec until = deadline_after(CLOCK_MONOTONIC, IDLE_ROUND_NS);
		while (!ig->stop && pthread_cond_timedwait(&ig->cond, &ig->lock, &until) != ETIMEDOUT)
			;
		if (ig->stop)
			break;
		pthread_mutex_unlock(&ig->lock);
		idle_gpu_round(srv);
		pthread_mutex_lock(&ig->lock);
	}
	pthread_mutex_unlock(&ig->lock);
	return NULL;
}

int idle_gpu_start(struct server *srv, struct herd_err *err)
{
	struct idle_gpu *ig = xcalloc(1, sizeof(*ig));
	pthread_condattr_t ca;
	int rc;

	pthread_mutex_init(&ig->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ig->cond, &ca);
	pthread_condattr_destroy(&ca);
	ig->windows = json_object();
	ig->actions = json_object();
	ig->jobs = json_object();
	idle_tracker_init(&ig->t);
	srv->idle = ig;
	rc = -pthread_create(&ig->thread, NULL, idle_main, srv);
	if (rc < 0) {
		srv->idle = NULL;
		pthread_mutex_destroy(&ig->lock);
		pthread_cond_destroy(&ig->cond);
		json_decref(ig->windows);
		json_decref(ig->actions);
		json_decref(ig->jobs);
		free(ig);
		return herd_errf(err, rc, "cannot start the idle GPU timer: %s", strerror(-rc));
	}
	return 0;
}

void idle_gpu_stop(struct server *srv)
{
	struct idle_gpu *ig = srv->idle;
	if (!ig)
		return;
	pthread_mutex_lock(&ig->lock);
	ig->stop = true;
	pthread_cond_broadcast(&ig->cond);
	pthread_mutex_unlock(&ig->lock);
	pthread_join(ig->thread, NULL);
	srv->idle = NULL;
	idle_tracker_release(&ig->t);
	json_decref(ig->windows);
	json_decref(ig->actions);
	json_decref(ig->jobs);
	pthread_mutex_destroy(&ig->lock);
	pthread_cond_destroy(&ig->cond);
	free(ig);
}

/* ---- readers ------------------------------------------------------------------ */

void idle_gpu_decorate(struct server *srv, json_t *gpus)
{
	struct idle_gpu *ig = srv->idle;
	json_t *g, *h;
	size_t i, k;

	if (!ig)
		return;
	pthread_mutex_lock(&ig->lock);
	json_array_foreach(gpus, i, g) {
		json_t *holders = json_object_get(g, "allocations");
		int64_t latest = 0;
		bool all = json_array_size(holders) > 0;
		json_array_foreach(holders, k, h) {
			const struct idle_entry *e = idle_tracker_find(&ig->t, jstr(h, "alloc_id", ""));
			if (!e || !e->st.idle_since) {
				all = false;
				continue;
			}
			json_object_set_new(h, "idle_since", json_integer(e->st.idle_since));
			if (e->st.idle_since > latest)
				latest = e->st.idle_since;
		}
		if (all)
			json_object_set_new(g, "idle_since", json_integer(latest));
	}
	pthread_mutex_unlock(&ig->lock);
}

json_t *idle_gpu_stats(struct server *srv)
{
	struct idle_gpu *ig = srv->idle;
	json_t *held = json_object(), *out;

	if (!ig)
		return json_pack("{s:o, s:{}}", "held", held, "actions");
	pthread_mutex_lock(&ig->lock);
	for (size_t i = 0; i < ig->t.n; i++) {
		const struct idle_entry *e = &ig->t.e[i];
		if (!e->st.idle_since)
			continue;
		json_object_set_new(held, e->ns,
				    json_real(json_real_value(json_object_get(held, e->ns)) +
					      (double)e->gpu_milli / 1000.0));
	}
	out = json_pack("{s:o, s:o}", "held", held, "actions", json_deep_copy(ig->actions));
	pthread_mutex_unlock(&ig->lock);
	return out;
}
