/* autoscale: the server's half of the GPU-utilization autoscaler (see
 * autoscale.h; the rule: autoscale_rule.c). */
#include "server/autoscale.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/autoscale_rule.h"
#include "server/server-int.h"

#define AUTOSCALE_ROUND_NS 1000000000LL

struct series_slot {
	char *key; /* "<node>\x1f<device>" */
	struct util_series s;
};

struct autoscale {
	pthread_mutex_t lock; /* guards everything below but the thread's own */
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	/* the samples of the GPUs autoscaled groups hold: slots, and
	 * {"<key>": index into slots} */
	struct series_slot *slots;
	size_t nslots;
	json_t *slot_of;
	int64_t keep_ns;      /* the longest window in use */
	json_t *status;       /* {"<ns>\x1f<job>": {"<group>": autoscale_group_status}} */
	json_t *actions;      /* {"<ns>": {"up": n, "down": n}} */
	/* the round thread's alone: jobs with an autoscaled group, as of
	 * store index jobs_index */
	json_t *jobs;
	uint64_t jobs_index;
};

static char *dev_key(const char *node, const char *dev)
{
	return xasprintf("%s\x1f%s", node, dev);
}

/* ---- samples ---------------------------------------------------------------- */

void autoscale_observe(struct server *srv, const char *node_id, const json_t *devices)
{
	struct autoscale *as = srv->autoscale;
	int64_t now = now_ns();
	json_t *d;
	size_t i;

	if (!as || !json_is_array(devices))
		return;
	pthread_mutex_lock(&as->lock);
	if (json_object_size(as->slot_of)) {
		json_array_foreach(devices, i, d) {
			const json_t *u = json_object_get(json_object_get(d, "stats"),
							  "utilization_gpu");
			char *key = dev_key(node_id, jstr(d, "id", ""));
			const json_t *at = json_object_get(as->slot_of, key);
			if (at && json_is_number(u) && json_number_value(u) >= 0)
				util_series_add(&as->slots[json_integer_value(at)].s, now,
						json_number_value(u), as->keep_ns);
			free(key);
		}
	}
	pthread_mutex_unlock(&as->lock);
}

/* Keeps the samples of the devices in `watch` (a set of keys), adds empty
 * series for new ones and drops the others; keep_ns the longest window. */
static void watch_devices(struct autoscale *as, const json_t *watch, int64_t keep_ns)
{
	struct series_slot *slots = xcalloc(json_object_size(watch) + 1, sizeof(*slots));
	json_t *slot_of = json_object(), *v;
	const char *key;
	size_t n = 0;

	pthread_mutex_lock(&as->lock);
	json_object_foreach((json_t *)watch, key, v) {
		const json_t *at = json_object_get(as->slot_of, key);
		slots[n].key = xstrdup(key);
		if (at) { /* moved, and emptied where it was */
			struct series_slot *old = &as->slots[json_integer_value(at)];
			slots[n].s = old->s;
			memset(&old->s, 0, sizeof(old->s));
		}
		json_object_set_new(slot_of, key, json_integer((json_int_t)n));
		n++;
	}
	for (size_t i = 0; i < as->nslots; i++) {
		util_series_release(&as->slots[i].s);
		free(as->slots[i].key);
	}
	free(as->slots);
	json_decref(as->slot_of);
	as->slots = slots;
	as->nslots = n;
	as->slot_of = slot_of;
	as->keep_ns = keep_ns;
	pthread_mutex_unlock(&as->lock);
}

/* ---- the jobs ----------------------------------------------------------------- */

/* The group's policy when the autoscaler acts on it: scaling enabled and
 * a gpu_utilization target; else NULL. */
static const json_t *group_policy(const json_t *g)
{
	const json_t *sc = json_object_get(g, "scaling");
	const json_t *p = json_object_get(sc, "policy");
	if (!json_is_object(sc) || !jbool(sc, "enabled", true) || jint(p, "gpu_utilization", 0) <= 0)
		return NULL;
	return p;
}

static bool job_autoscaled(const json_t *job)
{
	const json_t *g;
	size_t i;
	if (jbool(job, "stop", false) || strcmp(jstr(job, "type", "service"), "service"))
		return false;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		if (group_policy(g))
			return true;
	return false;
}

/* Brings as->jobs up to date with the jobs changed since the last round;
 * purged jobs drop out when the round finds them gone. */
static int refresh_jobs(struct server *srv, struct autoscale *as, struct herd_err *err)
{
	json_t *jobs = NULL, *j;
	uint64_t top = as->jobs_index;
	size_t i;
	int rc = store_list_changed_shared(srv->store, STORE_JOB, NULL, as->jobs_index, &jobs,
					   err);

	if (rc < 0)
		return rc;
	json_array_foreach(jobs, i, j) {
		char *key = xasprintf("%s\x1f%s", jstr(j, "namespace", "default"), jstr(j, "id", ""));
		if ((uint64_t)jint(j, "modify_index", 0) > top)
			top = (uint64_t)jint(j, "modify_index", 0);
		if (job_autoscaled(j))
			json_object_set_new(as->jobs, key, json_true());
		else
			json_object_del(as->jobs, key);
		free(key);
	}
	as->jobs_index = top;
	json_decref(jobs);
	return 0;
}

/* ---- one group ---------------------------------------------------------------- */

struct group_look {
	struct server *srv;
	struct autoscale *as;
	const json_t *job, *group, *policy;
	const json_t *allocs; /* the job's */
	json_t *watch;        /* the devices to keep samples of (added to) */
	int64_t now;
	char waiting[256];    /* why nothing is done; "" when the mean is known */
	double mean;
};

static bool alloc_mig_or_none(const json_t *devs)
{
	const json_t *d;
	size_t i;
	if (!json_array_size(devs))
		return true;
	json_array_foreach(devs, i, d)
		if (*jstr(d, "mig_profile", ""))
			return true;
	return false;
}

/* The mean utilization of alloc's GPUs since from (as->lock held); false
 * with gl->waiting when the samples do not cover the window. */
static bool alloc_mean(struct group_look *gl, const json_t *al, int64_t from, double *mean)
{
	const json_t *devs = json_object_get(json_object_get(al, "resources"), "devices"), *d;
	int64_t window = jint(gl->policy, "window", 0);
	double sum = 0;
	size_t i;

	json_array_foreach(devs, i, d) {
		char *key = dev_key(jstr(al, "node_id", ""), jstr(d, "id", ""));
		const json_t *at = json_object_get(gl->as->slot_of, key);
		const struct util_series *s = at ? &gl->as->slots[json_integer_value(at)].s : NULL;
		double m;
		free(key);
		/* samples over most of the window: heartbeats come every few
		 * seconds, so the first one after the start is a little late */
		if (!s || !util_series_first(s) || util_series_first(s) > from + window / 5 ||
		    !util_series_mean(s, from, &m)) {
			snprintf(gl->waiting, sizeof(gl->waiting),
				 "collecting GPU utilization of allocation %.8s over the %llds window",
				 jstr(al, "id", ""), (long long)(window / 1000000000));
			return false;
		}
		sum += m;
	}
	*mean = sum / (double)json_array_size(devs);
	return true;
}

/* Looks at one group: its allocations (their GPUs added to the watch), and
 * when everything holds, the mean utilization into gl->mean; else
 * gl->waiting says why not. */
static void look_at_group(struct group_look *gl)
{
	const char *name = jstr(gl->group, "name", "");
	int64_t count = jint(gl->group, "count", 0), version = jint(gl->job, "version", 0);
	int64_t window = jint(gl->policy, "window", 0), n = 0;
	double sum = 0;
	bool ready = true;
	const json_t *al;
	size_t i;

	/* every GPU the group holds is watched, ready or not, so that the
	 * samples are there once it is */
	json_array_foreach(gl->allocs, i, al) {
		const json_t *devs = json_object_get(json_object_get(al, "resources"), "devices"), *d;
		size_t k;
		if (strcmp(jstr(al, "task_group", ""), name) ||
		    strcmp(jstr(al, "desired_status", ""), "run") || alloc_client_terminal(al))
			continue;
		json_array_foreach(devs, k, d) {
			char *key = dev_key(jstr(al, "node_id", ""), jstr(d, "id", ""));
			json_object_set_new(gl->watch, key, json_true());
			free(key);
		}
	}
	pthread_mutex_lock(&gl->as->lock);
	json_array_foreach(gl->allocs, i, al) {
		const json_t *devs = json_object_get(json_object_get(al, "resources"), "devices");
		int64_t start = jint(al, "start_time", 0);
		double m;
		if (strcmp(jstr(al, "task_group", ""), name) ||
		    strcmp(jstr(al, "desired_status", ""), "run") || alloc_client_terminal(al))
			continue;
		n++;
		if (!ready)
			continue;
		if (alloc_mig_or_none(devs)) {
			snprintf(gl->waiting, sizeof(gl->waiting), "allocation %.8s holds no whole or "
				 "shared GPU with a utilization (MIG slices report none)",
				 jstr(al, "id", ""));
			ready = false;
		} else if (strcmp(jstr(al, "client_status", ""), "running") ||
			   jint(al, "job_version", -1) != version) {
			snprintf(gl->waiting, sizeof(gl->waiting),
				 "allocation %.8s is not running the job's version %lld yet",
				 jstr(al, "id", ""), (long long)version);
			ready = false;
		} else if (!start || gl->now - start < window) {
			snprintf(gl->waiting, sizeof(gl->waiting),
				 "allocation %.8s has not run for the %llds window yet",
				 jstr(al, "id", ""), (long long)(window / 1000000000));
			ready = false;
		} else if (!alloc_mean(gl, al, gl->now - window, &m)) {
			ready = false;
		} else {
			sum += m;
		}
	}
	pthread_mutex_unlock(&gl->as->lock);
	if (ready && n != count) {
		snprintf(gl->waiting, sizeof(gl->waiting),
			 "%lld of the group's %lld allocations are placed", (long long)n,
			 (long long)count);
		ready = false;
	}
	if (ready && n > 0)
		gl->mean = sum / (double)n;
	else if (ready)
		snprintf(gl->waiting, sizeof(gl->waiting), "the group has no allocation");
}

/* ---- status and events -------------------------------------------------------- */

/* The status entry of the group (as->lock held): created when absent. */
static json_t *status_of(struct autoscale *as, const char *ns, const char *id, const char *group)
{
	char *key = xasprintf("%s\x1f%s", ns, id);
	json_t *job = json_object_get(as->status, key), *g;
	if (!job)
		json_object_set_new(as->status, key, job = json_object());
	free(key);
	g = json_object_get(job, group);
	if (!g)
		json_object_set_new(job, group, g = json_pack("{s:n, s:s, s:[]}", "gpu_utilization",
							       "waiting", "", "events"));
	return g;
}

static void note_look(struct autoscale *as, const struct group_look *gl, const char *waiting)
{
	const char *ns = jstr(gl->job, "namespace", "default");
	pthread_mutex_lock(&as->lock);
	json_t *g = status_of(as, ns, jstr(gl->job, "id", ""), jstr(gl->group, "name", ""));
	json_object_set_new(g, "gpu_utilization",
			    gl->waiting[0] ? json_null() : json_real(round(gl->mean * 10) / 10));
	json_object_set_new(g, "waiting", json_string(waiting));
	pthread_mutex_unlock(&as->lock);
}

static void note_change(struct autoscale *as, const struct group_look *gl, int64_t from,
			int64_t to, const char *message)
{
	const char *ns = jstr(gl->job, "namespace", "default");
	pthread_mutex_lock(&as->lock);
	json_t *g = status_of(as, ns, jstr(gl->job, "id", ""), jstr(gl->group, "name", ""));
	json_t *events = json_object_get(g, "events"), *counts;
	json_array_append_new(events, json_pack("{s:I, s:I, s:I, s:s}", "time", (json_int_t)gl->now,
						"from", (json_int_t)from, "to", (json_int_t)to,
						"message", message));
	while (json_array_size(events) > AUTOSCALE_EVENTS)
		json_array_remove(events, 0);
	counts = json_object_get(as->actions, ns);
	if (!counts)
		json_object_set_new(as->actions, ns, counts = json_pack("{s:i, s:i}", "up", 0, "down", 0));
	const char *dir = to > from ? "up" : "down";
	json_object_set_new(counts, dir, json_integer(jint(counts, dir, 0) + 1));
	pthread_mutex_unlock(&as->lock);
}

/* ---- the round ---------------------------------------------------------------- */

/* Acts on one group of job (its allocations read): scales when the rule
 * says so and the cooldown has passed. */
static void step_group(struct group_look *gl)
{
	struct server *srv = gl->srv;
	const char *ns = jstr(gl->job, "namespace", "default"), *id = jstr(gl->job, "id", "");
	const json_t *sc = json_object_get(gl->group, "scaling");
	int64_t count = jint(gl->group, "count", 0), cooldown = jint(gl->policy, "cooldown", 0);
	int64_t since = jint(gl->job, "submit_time", 0);
	struct autoscale_input in;
	char waiting[256] = "", *message;
	int64_t want;

	look_at_group(gl);
	if (gl->waiting[0]) {
		note_look(gl->as, gl, gl->waiting);
		return;
	}
	in = (struct autoscale_input){ count, jint(sc, "min", 0), jint(sc, "max", 0),
				       (int)jint(gl->policy, "gpu_utilization", 0),
				       (int)jint(gl->policy, "tolerance", 0), gl->mean };
	want = autoscale_desired(&in);
	if (want != count && gl->now - since < cooldown) {
		char dur[64];
		snprintf(waiting, sizeof(waiting), "cooling down: %s after the job's last change",
			 format_duration(cooldown, dur, sizeof(dur)));
		want = count;
	}
	note_look(gl->as, gl, waiting);
	if (want == count)
		return;
	message = xasprintf("GPU utilization %.1f%% %s the %d%% target: count %lld -> %lld",
			    gl->mean, gl->mean > in.target ? "above" : "below", in.target,
			    (long long)count, (long long)want);
	struct http_response resp = { 0 };
	struct herd_err err = { 0, "" };
	int rc = job_scale_to(srv, ns, id, jstr(gl->group, "name", ""), want, "autoscaler", &resp,
			      &err);
	if (rc < 0)
		server_log(srv, "error", "autoscaler: job %s (namespace %s): %s", id, ns, err.msg);
	else if (resp.status != 200)
		server_log(srv, "info", "autoscaler: job %s (namespace %s) not scaled: %s", id, ns,
			   jstr(json_object_get(resp.body, "error"), "message", "refused"));
	else {
		note_change(gl->as, gl, count, want, message);
		server_log(srv, "info", "autoscaler: job %s (namespace %s) group %s: %s", id, ns,
			   jstr(gl->group, "name", ""), message);
	}
	http_response_release(&resp);
	free(message);
}

/* One job: each autoscaled group stepped; false when the job is gone or
 * no longer autoscaled. */
static bool step_job(struct server *srv, struct autoscale *as, const char *key, json_t *watch,
		     int64_t *keep_ns, int64_t now)
{
	const char *sep = strchr(key, '\x1f');
	char *ns = xstrndup(key, (size_t)(sep - key));
	struct store_key k = { ns, sep + 1, 0 };
	struct store_filter f = { ns, sep + 1, NULL };
	json_t *job = NULL, *allocs = NULL;
	const json_t *g;
	bool keep = false;
	size_t i;

	if (store_get_shared(srv->store, STORE_JOB, &k, &job, NULL) == 0 && job_autoscaled(job) &&
	    store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL) == 0) {
		keep = true;
		json_array_foreach(json_object_get(job, "groups"), i, g) {
			const json_t *p = group_policy(g);
			struct group_look gl = { srv, as, job, g, p, allocs, watch, now, "", 0 };
			if (!p)
				continue;
			if (jint(p, "window", 0) > *keep_ns)
				*keep_ns = jint(p, "window", 0);
			step_group(&gl);
		}
	}
	json_decref(allocs);
	json_decref(job);
	free(ns);
	return keep;
}

void autoscale_round(struct server *srv)
{
	struct autoscale *as = srv->autoscale;
	json_t *watch = json_object(), *gone = json_array(), *v;
	struct herd_err err = { 0, "" };
	int64_t keep_ns = 0, now = now_ns();
	const char *key;
	size_t i;

	if (!as)
		return;
	if (refresh_jobs(srv, as, &err) < 0) {
		server_log(srv, "error", "autoscaler: reading jobs: %s", err.msg);
		json_decref(watch);
		json_decref(gone);
		return;
	}
	json_object_foreach(as->jobs, key, v)
		if (!step_job(srv, as, key, watch, &keep_ns, now))
			json_array_append_new(gone, json_string(key));
	json_array_foreach(gone, i, v) {
		json_object_del(as->jobs, json_string_value(v));
		pthread_mutex_lock(&as->lock);
		json_object_del(as->status, json_string_value(v));
		pthread_mutex_unlock(&as->lock);
	}
	/* a little more than the window: the oldest sample it reads stays */
	watch_devices(as, watch, keep_ns + keep_ns / 4);
	json_decref(watch);
	json_decref(gone);
}

/* ---- thread and readers ------------------------------------------------------- */

static void *autoscale_main(void *arg)
{
	struct server *srv = arg;
	struct autoscale *as = srv->autoscale;

	pthread_mutex_lock(&as->lock);
	while (!as->stop) {
		struct timespec until = deadline_after(CLOCK_MONOTONIC, AUTOSCALE_ROUND_NS);
		while (!as->stop && pthread_cond_timedwait(&as->cond, &as->lock, &until) != ETIMEDOUT)
			;
		if (as->stop)
			break;
		pthread_mutex_unlock(&as->lock);
		autoscale_round(srv);
		pthread_mutex_lock(&as->lock);
	}
	pthread_mutex_unlock(&as->lock);
	return NULL;
}

static void autoscale_free(struct autoscale *as)
{
	for (size_t i = 0; i < as->nslots; i++) {
		util_series_release(&as->slots[i].s);
		free(as->slots[i].key);
	}
	free(as->slots);
	json_decref(as->slot_of);
	json_decref(as->status);
	json_decref(as->actions);
	json_decref(as->jobs);
	pthread_mutex_destroy(&as->lock);
	pthread_cond_destroy(&as->cond);
	free(as);
}

int autoscale_start(struct server *srv, struct herd_err *err)
{
	struct autoscale *as = xcalloc(1, sizeof(*as));
	pthread_condattr_t ca;
	int rc;

	pthread_mutex_init(&as->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&as->cond, &ca);
	pthread_condattr_destroy(&ca);
	as->slot_of = json_object();
	as->status = json_object();
	as->actions = json_object();
	as->jobs = json_object();
	srv->autoscale = as;
	rc = -pthread_create(&as->thread, NULL, autoscale_main, srv);
	if (rc < 0) {
		srv->autoscale = NULL;
		autoscale_free(as);
		return herd_errf(err, rc, "cannot start the autoscaler: %s", strerror(-rc));
	}
	return 0;
}

void autoscale_stop(struct server *srv)
{
	struct autoscale *as = srv->autoscale;
	if (!as)
		return;
	pthread_mutex_lock(&as->lock);
	as->stop = true;
	pthread_cond_broadcast(&as->cond);
	pthread_mutex_unlock(&as->lock);
	pthread_join(as->thread, NULL);
	srv->autoscale = NULL;
	autoscale_free(as);
}

json_t *autoscale_group_status(struct server *srv, const char *ns, const char *id,
			       const char *group)
{
	struct autoscale *as = srv->autoscale;
	char *key = xasprintf("%s\x1f%s", ns, id);
	json_t *out = NULL;

	if (as) {
		pthread_mutex_lock(&as->lock);
		out = json_deep_copy(json_object_get(json_object_get(as->status, key), group));
		pthread_mutex_unlock(&as->lock);
	}
	free(key);
	return out ? out : json_pack("{s:n, s:s, s:[]}", "gpu_utilization", "waiting", "", "events");
}

json_t *autoscale_stats(struct server *srv)
{
	struct autoscale *as = srv->autoscale;
	json_t *out;
	if (!as)
		return json_object();
	pthread_mutex_lock(&as->lock);
	out = json_deep_copy(as->actions);
	pthread_mutex_unlock(&as->lock);
	return out;
}
