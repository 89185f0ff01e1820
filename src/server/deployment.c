/* deployment: rolling updates of service groups (server-int.h, "deployment.c";
 * docs/jobspec.md, "Rolling updates"), and of system groups
 * (reconcile_system.c: one allocation per node, all of index 0, replaced
 * on their nodes in the order of the node ids; no canaries).
 *
 * The deployment of job version N is the "deployment" object of N's
 * version record:
 *   {id, namespace, job_id, job_version, status, status_description,
 *    create_time, modify_time,
 *    groups: {<name>: {desired_total, placed_allocs, healthy_allocs,
 *                      unhealthy_allocs, max_parallel, auto_revert,
 *                      progress_deadline, require_progress_by,
 *                      desired_canaries, placed_canaries, auto_promote,
 *                      promoted, promote_time}}}
 * status: running, successful, failed or cancelled.  A successful one
 * marks the version "stable": true (auto_revert goes back to the latest).
 *
 * Canaries (update { canary = N }): a group's new version first places
 * min(N, allocations to replace) allocations beside the old ones
 * ("deployment_status": {"canary": true}; each takes the instance index of
 * an old allocation it will replace, and no slot while it is not
 * promoted: reconcile keeps it out of the slot count, deploy_canary).
 * desired_canaries is fixed when the deployment is created.  Nothing old
 * is replaced until the group is promoted (POST /v1/deployment/:id/promote
 * sets "promoted", or auto_promote once every group's canaries are
 * healthy, deploy_canaries).  The reconcile that first sees a group
 * promoted stops the old allocation of each canary's index (no
 * replacement: the canary is it) and marks the canary "promoted": true,
 * from then on an ordinary allocation of its slot; the rest rolls as
 * usual.  A canary not promoted dies with its deployment: failed,
 * cancelled by a newer version, or of another version (stopped).
 *
 * Health is decided on the server, from what agents report, with the
 * server's clock: when a report shows an allocation of the deployment
 * ready (every task running, or a prestart task ended well; with
 * health_check "checks", every check of its services passing, as each
 * check's on_update asks: deploy_check_ready), the status
 * route stamps "deployment_status": {"ready_since": now} on the record
 * (deploy_alloc_report), and a report that shows it not ready removes the
 * stamp.  reconcile then calls it healthy once ready_since is
 * min_healthy_time old ({"healthy": true, "timestamp"}), unhealthy when it
 * failed, or when healthy_deadline passed since it was created.  All of it
 * is in the store: a server that restarts (or a standby that takes over)
 * reads the same stamps and deadlines, and an agent that restarts reports
 * its tasks again (a task that restarted clears the stamp); no agent clock
 * is compared with the server's.  Follow-up evaluations come when a stamp
 * or a deadline is due (reconcile's followup_at). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

bool deploy_group_rolls(const struct job_group *g)
{
	return g->update && g->update->max_parallel > 0 && !g->gang;
}

struct deploy_group {
	json_t *deferred;        /* live allocations of an older version, changed */
	int64_t placed, healthy, unhealthy, inflight;
	int64_t last_healthy;    /* the latest healthy timestamp; 0 none */
	size_t replaced_now;     /* deferred ones replaced by this reconcile */
	/* canaries of the deployment: all of them, the healthy ones, and
	 * the live ones not marked promoted (their records) */
	int64_t canaries_all, canaries_healthy;
	json_t *canaries;
	int64_t desired_canaries;
	int64_t desired_total;   /* 0: the group's count (deploy_set_total) */
	bool promoted;
	json_t *superseded;      /* old allocations a promoted canary replaces */
	json_t *canary_slots;    /* indexes new canaries take now (integers) */
};

struct deploy {
	struct store *s;
	const json_t *job;
	const struct job *model;
	int64_t now;
	json_t *vrec;            /* the current version's record (shared: only read); NULL: none */
	json_t *dep;             /* its deployment (a copy, owned); NULL: none yet */
	json_t *decisions;       /* allocations with a health decision to write */
	int64_t due;             /* when a stamp or deadline is due; 0 none */
	bool deployed;           /* an allocation of some deployment was noted */
	struct deploy_group *g;  /* per group of model */
};

static void due_at(struct deploy *d, int64_t t)
{
	if (t > 0 && (!d->due || t < d->due))
		d->due = t;
}

struct deploy *deploy_begin(struct store *s, const json_t *job, const struct job *model,
			    int64_t now)
{
	struct store_key key = { jstr(job, "namespace", "default"), jstr(job, "id", ""),
				 jint(job, "version", 0) };
	struct deploy *d;
	bool any = false;

	if (strcmp(model->type, "service") && strcmp(model->type, "system"))
		return NULL;
	for (size_t g = 0; g < model->ngroups; g++)
		any = any || deploy_group_rolls(&model->groups[g]);
	if (!any)
		return NULL;
	d = xcalloc(1, sizeof(*d));
	d->s = s;
	d->job = job;
	d->model = model;
	d->now = now;
	d->decisions = json_array();
	d->g = xcalloc(model->ngroups + 1, sizeof(*d->g));
	for (size_t g = 0; g < model->ngroups; g++) {
		d->g[g].deferred = json_array();
		d->g[g].canaries = json_array();
		d->g[g].superseded = json_array();
		d->g[g].canary_slots = json_array();
	}
	/* the store's cached record: no parse when it did not change */
	if (s && store_get_shared(s, STORE_JOB_VERSION, &key, &d->vrec, NULL) == 0) {
		json_t *dep = json_object_get(d->vrec, "deployment");
		if (json_is_object(dep))
			d->dep = json_deep_copy(dep);
	}
	return d;
}

static const char *dep_status(const struct deploy *d)
{
	return d->dep ? jstr(d->dep, "status", "") : "";
}

bool deploy_failed(const struct deploy *d)
{
	return !strcmp(dep_status(d), "failed");
}

bool deploy_alloc_halted(const struct deploy *d, const json_t *alloc)
{
	if (!d || !d->dep || strcmp(jstr(alloc, "deployment_id", ""), jstr(d->dep, "id", "")))
		return false;
	if (deploy_failed(d))
		return true;
	for (size_t g = 0; g < d->model->ngroups; g++)
		if (d->g[g].unhealthy) /* deploy_end fails it */
			return true;
	return false;
}

bool deploy_check_ready(const char *status, const char *on_update)
{
	if (!strcmp(status, "passing") || (on_update && !strcmp(on_update, "ignore")))
		return true;
	return !strcmp(status, "warning") && on_update && !strcmp(on_update, "ignore_warnings");
}

/* Whether every task of alloc runs (a prestart task may have ended well)
 * and, when it expects checks, every check passes (or is one its
 * on_update lets the deployment look past, deploy_check_ready). */
static bool alloc_ready(const json_t *alloc)
{
	const json_t *ts = json_object_get(alloc, "task_states"), *t, *svc, *c;
	int64_t want = jint(alloc, "deployment_checks", 0), seen = 0;
	const char *name;
	size_t i, k;

	if (strcmp(jstr(alloc, "client_status", ""), "running"))
		return false;
	json_object_foreach((json_t *)ts, name, t) {
		const char *st = jstr(t, "state", "");
		if (strcmp(st, "running") && !(!strcmp(st, "dead") && !jbool(t, "failed", false)))
			return false;
	}
	json_array_foreach(json_object_get(alloc, "services"), i, svc)
		json_array_foreach(json_object_get(svc, "checks"), k, c) {
			if (!deploy_check_ready(jstr(c, "status", ""), jstr(c, "on_update", NULL)))
				return false;
			seen++;
		}
	return seen >= want;
}

bool deploy_alloc_ready(const json_t *alloc)
{
	return alloc_ready(alloc);
}

bool deploy_alloc_report(json_t *alloc, int64_t now)
{
	json_t *ds = json_object_get(alloc, "deployment_status"), *n;
	bool ready, had, deployed = json_object_get(alloc, "deployment_id") != NULL;

	/* the replacement of an allocation a drain migrated is stamped the
	 * same way: the drain's pacing reads it (drain.h) */
	if ((!deployed && !jbool(alloc, "drain_migration", false)) ||
	    json_object_get(ds, "healthy"))
		return false;
	ready = alloc_ready(alloc);
	had = json_object_get(ds, "ready_since") != NULL;
	if (ready == had)
		return false;
	/* a new object (the record may be shared); the canary flag stays */
	n = json_is_object(ds) ? json_deep_copy(ds) : json_object();
	json_object_del(n, "ready_since");
	if (ready)
		json_object_set_new(n, "ready_since", json_integer(now));
	json_object_set_new(alloc, "deployment_status", n);
	return ready && deployed;
}

/* alloc with its health decided (a new object for r->updates). */
static json_t *decided(const json_t *alloc, bool healthy, int64_t now)
{
	json_t *c = json_copy((json_t *)alloc), *ds;
	ds = json_deep_copy(json_object_get(alloc, "deployment_status"));
	if (!json_is_object(ds)) {
		json_decref(ds);
		ds = json_object();
	}
	json_object_set_new(ds, "healthy", json_boolean(healthy));
	json_object_set_new(ds, "timestamp", json_integer(now));
	json_object_set_new(c, "deployment_status", ds);
	json_object_set_new(c, "modify_time", json_integer(now));
	return c;
}

void deploy_note(struct deploy *d, int g, const json_t *alloc)
{
	const struct job_update *u = d->model->groups[g].update;
	struct deploy_group *dg = &d->g[g];
	const json_t *ds = json_object_get(alloc, "deployment_status"), *h;
	const char *client = jstr(alloc, "client_status", "pending");
	bool run = !strcmp(jstr(alloc, "desired_status", "run"), "run"), canary;
	int64_t rs;

	if (*jstr(alloc, "deployment_id", ""))
		d->deployed = true;
	if (!d->dep || !deploy_group_rolls(&d->model->groups[g]) ||
	    strcmp(jstr(alloc, "deployment_id", ""), jstr(d->dep, "id", "")))
		return;
	dg->placed++;
	canary = jbool(ds, "canary", false);
	if (canary) {
		dg->canaries_all++;
		if (run && !jbool(ds, "promoted", false))
			json_array_append(dg->canaries, (json_t *)alloc);
	}
	h = json_object_get(ds, "healthy");
	if (json_is_boolean(h)) {
		if (json_is_true(h)) {
			dg->healthy++;
			dg->canaries_healthy += canary && run;
			if (jint(ds, "timestamp", 0) > dg->last_healthy)
				dg->last_healthy = jint(ds, "timestamp", 0);
		} else {
			dg->unhealthy++;
		}
		return;
	}
	if (!strcmp(client, "failed") || !strcmp(client, "lost") ||
	    (run && !strcmp(client, "complete"))) {
		dg->unhealthy++; /* its record may be stopped by this reconcile: counted only */
		return;
	}
	if (!run || strcmp(dep_status(d), "running"))
		return;
	rs = jint(ds, "ready_since", 0);
	if (rs && d->now >= rs + u->min_healthy_time) {
		json_array_append_new(d->decisions, decided(alloc, true, d->now));
		dg->healthy++;
		dg->canaries_healthy += canary;
		dg->last_healthy = d->now;
	} else if (d->now >= jint(alloc, "create_time", d->now) + u->healthy_deadline) {
		json_array_append_new(d->decisions, decided(alloc, false, d->now));
		dg->unhealthy++;
	} else {
		dg->inflight++;
		if (rs)
			due_at(d, rs + u->min_healthy_time);
		due_at(d, jint(alloc, "create_time", d->now) + u->healthy_deadline);
	}
}

static int by_index(const void *a, const void *b)
{
	const json_t *p = *(json_t *const *)a, *q = *(json_t *const *)b;
	int64_t x = jint(p, "index", 0), y = jint(q, "index", 0);
	/* a system group's are all index 0: their nodes' order */
	return x < y ? -1 : x > y ? 1 : strcmp(jstr(p, "node_id", ""), jstr(q, "node_id", ""));
}

void deploy_defer(struct deploy *d, int g, const json_t *alloc)
{
	json_array_append(d->g[g].deferred, (json_t *)alloc);
}

/* Group g's part of the deployment record (NULL: none yet). */
static const json_t *dep_group(const struct deploy *d, int g)
{
	return json_object_get(json_object_get(d->dep, "groups"), d->model->groups[g].name);
}

enum deploy_canary deploy_canary(const struct deploy *d, int g, const json_t *alloc)
{
	const json_t *ds = json_object_get(alloc, "deployment_status");

	if (!jbool(ds, "canary", false) || jbool(ds, "promoted", false))
		return DEPLOY_CANARY_NONE;
	/* of another deployment (an older version's, cancelled), or of a
	 * group that no longer rolls */
	if (!d || !d->dep || !deploy_group_rolls(&d->model->groups[g]) ||
	    strcmp(jstr(alloc, "deployment_id", ""), jstr(d->dep, "id", "")))
		return DEPLOY_CANARY_STOP;
	if (!strcmp(dep_status(d), "running") || jbool(dep_group(d, g), "promoted", false))
		return DEPLOY_CANARY_KEEP;
	return DEPLOY_CANARY_STOP; /* failed or cancelled before its promotion */
}

static void sort_deferred(struct deploy_group *dg)
{
	size_t n = json_array_size(dg->deferred);
	json_t **v;

	if (n < 2)
		return;
	/* slot order: the same allocations go first on every evaluation */
	v = xcalloc(n, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(dg->deferred, i));
	qsort(v, n, sizeof(*v), by_index);
	json_array_clear(dg->deferred);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(dg->deferred, v[i]);
	free(v);
}

/* Whether a live canary of dg holds instance index idx. */
static bool canary_holds(const struct deploy_group *dg, int64_t idx)
{
	size_t i;
	json_t *c;
	json_array_foreach(dg->canaries, i, c)
		if (jint(c, "index", -1) == idx)
			return true;
	return false;
}

/* Canary c of a promoted group marked "promoted": an ordinary allocation
 * of its slot from now on.  A health decision of this reconcile for it
 * carries the mark (one write per allocation). */
static void mark_promoted(struct deploy *d, const json_t *c, struct reconcile_result *r)
{
	json_t *x, *m, *ds;
	size_t i;

	json_array_foreach(d->decisions, i, x)
		if (!strcmp(jstr(x, "id", ""), jstr(c, "id", ""))) {
			json_object_set_new(json_object_get(x, "deployment_status"), "promoted",
					    json_true());
			return;
		}
	m = json_copy((json_t *)c);
	ds = json_deep_copy(json_object_get(c, "deployment_status"));
	json_object_set_new(ds, "promoted", json_true());
	json_object_set_new(m, "deployment_status", ds);
	json_object_set_new(m, "modify_time", json_integer(d->now));
	json_array_append_new(r->updates, m);
}

/* Whether some group with canaries waits for its promotion; *all_auto:
 * every such group asks auto_promote; *all_healthy: and every one of
 * them has its canaries healthy. */
static bool awaits_promotion(const struct deploy *d, bool *all_auto, bool *all_healthy)
{
	bool waits = false;

	*all_auto = *all_healthy = true;
	for (size_t g = 0; g < d->model->ngroups; g++) {
		const struct deploy_group *dg = &d->g[g];
		if (!deploy_group_rolls(&d->model->groups[g]) || !dg->desired_canaries ||
		    dg->promoted)
			continue;
		waits = true;
		*all_auto = *all_auto && d->model->groups[g].update->auto_promote;
		*all_healthy = *all_healthy && dg->canaries_healthy >= dg->desired_canaries;
	}
	return waits;
}

void deploy_canaries(struct deploy *d, struct reconcile_result *r)
{
	bool running, failing = false, all_auto, all_healthy;

	if (!d)
		return;
	running = !d->dep || !strcmp(dep_status(d), "running");
	for (size_t g = 0; g < d->model->ngroups; g++) {
		const struct job_update *u = d->model->groups[g].update;
		struct deploy_group *dg = &d->g[g];
		if (!deploy_group_rolls(&d->model->groups[g]))
			continue;
		failing = failing || dg->unhealthy;
		sort_deferred(dg);
		if (d->dep) {
			dg->desired_canaries = jint(dep_group(d, (int)g), "desired_canaries", 0);
			dg->promoted = jbool(dep_group(d, (int)g), "promoted", false);
		} else if (u->canary > 0) {
			/* fixed now: one canary per allocation to replace, at most */
			size_t n = json_array_size(dg->deferred);
			dg->desired_canaries = (size_t)u->canary < n ? u->canary : (int64_t)n;
		}
	}
	/* auto_promote: once every group's canaries are healthy (Nomad's
	 * rule: every group with canaries must ask it) */
	if (d->dep && running && !failing && awaits_promotion(d, &all_auto, &all_healthy) &&
	    all_auto && all_healthy)
		for (size_t g = 0; g < d->model->ngroups; g++)
			if (d->g[g].desired_canaries)
				d->g[g].promoted = true;
	for (size_t g = 0; g < d->model->ngroups; g++) {
		struct deploy_group *dg = &d->g[g];
		json_t *keep, *x;
		size_t i;
		if (!deploy_group_rolls(&d->model->groups[g]))
			continue;
		if (!dg->promoted) {
			int64_t need = dg->desired_canaries - (int64_t)json_array_size(dg->canaries);
			if (!running || failing)
				continue;
			json_array_foreach(dg->deferred, i, x) {
				if (need <= 0)
					break;
				if (canary_holds(dg, jint(x, "index", -1)))
					continue;
				json_array_append_new(dg->canary_slots,
						      json_integer(jint(x, "index", 0)));
				need--;
			}
			continue;
		}
		/* promoted: each canary replaces the old allocation of its index */
		json_array_foreach(dg->canaries, i, x)
			mark_promoted(d, x, r);
		keep = json_array();
		json_array_foreach(dg->deferred, i, x)
			json_array_append(canary_holds(dg, jint(x, "index", -1)) ? dg->superseded : keep,
					  x);
		json_decref(dg->deferred);
		dg->deferred = keep;
	}
}

const json_t *deploy_superseded(const struct deploy *d, int g)
{
	return d->g[g].superseded;
}

const json_t *deploy_canary_slots(const struct deploy *d, int g)
{
	return d->g[g].canary_slots;
}

/* The placements r holds for group g. */
static int64_t places_of(const struct reconcile_result *r, int g)
{
	int64_t n = 0;
	for (size_t k = 0; k < r->nplace; k++)
		n += r->place[k].group == g;
	return n;
}

void deploy_set_total(struct deploy *d, int g, int64_t n)
{
	d->g[g].desired_total = n;
}

size_t deploy_budget(struct deploy *d, int g, const struct reconcile_result *r)
{
	return deploy_budget_capped(d, g, r, SIZE_MAX);
}

size_t deploy_budget_capped(struct deploy *d, int g, const struct reconcile_result *r, size_t cap)
{
	struct deploy_group *dg = &d->g[g];
	size_t n = json_array_size(dg->deferred);
	int64_t left;

	if (!n)
		return 0;
	sort_deferred(dg); /* deploy_canaries did, unless it was not called */
	/* a failed deployment replaces nothing more: the old version keeps
	 * running where it was not replaced yet */
	if (!strcmp(dep_status(d), "failed"))
		return 0;
	/* nor one that fails now (deploy_end decides it) */
	for (size_t k = 0; k < d->model->ngroups; k++)
		if (d->g[k].unhealthy)
			return 0;
	left = d->model->groups[g].update->max_parallel - dg->inflight - places_of(r, g);
	if (d->dep && strcmp(dep_status(d), "running"))
		left = (int64_t)n; /* successful or cancelled: nothing rolls any more */
	else if (dg->desired_canaries && !dg->promoted)
		left = 0; /* the canaries wait for their promotion */
	dg->replaced_now = left <= 0 ? 0 : (size_t)left < n ? (size_t)left : n;
	if (dg->replaced_now > cap)
		dg->replaced_now = cap;
	return dg->replaced_now;
}

const json_t *deploy_deferred(struct deploy *d, int g, size_t k)
{
	return json_array_get(d->g[g].deferred, k);
}

/* The version records of the job (a new array), or NULL. */
static json_t *job_versions(struct deploy *d)
{
	struct store_filter f = { jstr(d->job, "namespace", "default"), jstr(d->job, "id", ""), NULL };
	json_t *list = NULL;
	if (!d->s || store_list(d->s, STORE_JOB_VERSION, &f, &list, NULL) < 0)
		return NULL;
	return list;
}

/* Cancels the running deployments of versions older than job's (their
 * records go into r->versions): whatever a newer version brings, an older
 * deployment never goes on (nor fails, nor reverts the job over it). */
static void cancel_older(const json_t *job, int64_t now, json_t *versions,
			 struct reconcile_result *r)
{
	int64_t cur = jint(job, "version", 0);
	size_t i;
	json_t *v;
	json_array_foreach(versions, i, v) {
		json_t *dep = json_object_get(v, "deployment"), *c;
		char *why;
		if (jint(v, "version", 0) >= cur || strcmp(jstr(dep, "status", ""), "running"))
			continue;
		c = json_deep_copy(v);
		dep = json_object_get(c, "deployment");
		why = xasprintf("Cancelled: superseded by job version %lld", (long long)cur);
		json_object_set_new(dep, "status", json_string("cancelled"));
		json_object_set_new(dep, "status_description", json_string(why));
		json_object_set_new(dep, "modify_time", json_integer(now));
		free(why);
		if (!r->versions)
			r->versions = json_array();
		json_array_append_new(r->versions, c);
	}
}

/* cancel_older over the job's version records (shared reads: nothing is
 * parsed again when they did not change). */
static void cancel_older_read(struct store *s, const json_t *job, int64_t now,
			      struct reconcile_result *r)
{
	struct store_filter f = { jstr(job, "namespace", "default"), jstr(job, "id", ""), NULL };
	json_t *versions = NULL;
	if (!s || store_list_shared(s, STORE_JOB_VERSION, &f, &versions, NULL) < 0)
		return;
	cancel_older(job, now, versions, r);
	json_decref(versions);
}

void deploy_cancel_superseded(struct store *s, const json_t *job, const json_t *allocs,
			      int64_t now, struct reconcile_result *r)
{
	size_t i;
	json_t *a;
	/* only a job some allocation of which joined a deployment (stopped
	 * ones too) pays for the read: most jobs without an update block
	 * never had one */
	json_array_foreach(allocs, i, a)
		if (*jstr(a, "deployment_id", "")) {
			cancel_older_read(s, job, now, r);
			return;
		}
}

/* The latest stable version other than the current, or -1; into *spec
 * (borrowed from versions) its record. */
static int64_t latest_stable(struct deploy *d, json_t *versions, const json_t **spec)
{
	int64_t best = -1, cur = jint(d->job, "version", 0);
	size_t i;
	json_t *v;
	*spec = NULL;
	json_array_foreach(versions, i, v)
		if (jbool(v, "stable", false) && jint(v, "version", 0) != cur &&
		    jint(v, "version", 0) > best) {
			best = jint(v, "version", 0);
			*spec = v;
		}
	return best;
}

/* Whether two stored jobs (or versions) hold the same job: without the
 * server's fields. */
static bool same_spec(const json_t *a, const json_t *b)
{
	static const char *const server[] = {
		"version", "stop", "status", "submit_time", "create_index", "modify_index",
		"job_modify_index", "parent_id", "payload", "stop_reason", "status_description",
		"deployment", "stable", NULL,
	};
	json_t *x = json_copy((json_t *)a), *y = json_copy((json_t *)b);
	bool same;
	for (int i = 0; server[i]; i++) {
		json_object_del(x, server[i]);
		json_object_del(y, server[i]);
	}
	same = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

static json_t *dep_new(struct deploy *d)
{
	char id[ID_LEN];
	new_id(id);
	return json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:I, s:I, s:{}}", "id", id, "namespace",
			 jstr(d->job, "namespace", "default"), "job_id", jstr(d->job, "id", ""),
			 "job_version", json_object_get(d->job, "version"), "status", "running",
			 "status_description", "Deployment is running", "create_time",
			 (json_int_t)d->now, "modify_time", (json_int_t)d->now, "groups");
}

/* Whether alloc id is among r's stops. */
static bool stopped_now(const struct reconcile_result *r, const char *id)
{
	size_t i;
	json_t *x;
	json_array_foreach(r->stops, i, x)
		if (!strcmp(jstr(x, "id", ""), id))
			return true;
	return false;
}

/* The groups' counts into dep; whether every rolling group is done (no
 * allocation waits for its turn or its health), and the first group past
 * its progress deadline (NULL: none). */
static bool groups_update(struct deploy *d, const struct reconcile_result *r, const char **late)
{
	json_t *groups = json_object_get(d->dep, "groups");
	bool done = true;

	*late = NULL;
	for (size_t g = 0; g < d->model->ngroups; g++) {
		const struct job_group *jg = &d->model->groups[g];
		struct deploy_group *dg = &d->g[g];
		int64_t now_places, left, base, by = 0, promoted_at;
		bool waits, group_done;
		json_t *rec;
		if (!deploy_group_rolls(jg))
			continue;
		now_places = places_of(r, (int)g);
		left = (int64_t)(json_array_size(dg->deferred) - dg->replaced_now);
		/* the promotion's time: the route's, or now (auto_promote) */
		promoted_at = dg->promoted ? jint(dep_group(d, (int)g), "promote_time", d->now) : 0;
		base = dg->last_healthy ? dg->last_healthy : jint(d->dep, "create_time", d->now);
		if (promoted_at > base)
			base = promoted_at;
		/* canaries healthy and waiting for a person: no deadline (a
		 * promotion may come tomorrow) */
		waits = dg->desired_canaries && !dg->promoted &&
			dg->canaries_healthy >= dg->desired_canaries;
		if (jg->update->progress_deadline > 0 && !waits)
			by = base + jg->update->progress_deadline;
		group_done = !left && !now_places && !dg->inflight && !dg->unhealthy &&
			     (!dg->desired_canaries || dg->promoted);
		done = done && group_done;
		if (!group_done && by && d->now > by && !*late)
			*late = jg->name;
		else if (!group_done && by)
			due_at(d, by + 1);
		rec = json_pack("{s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I}",
				"desired_total", (json_int_t)(dg->desired_total ? dg->desired_total : jg->count),
				"placed_allocs", (json_int_t)(dg->placed + now_places),
				"healthy_allocs", (json_int_t)dg->healthy,
				"unhealthy_allocs", (json_int_t)dg->unhealthy,
				"max_parallel", (json_int_t)jg->update->max_parallel,
				"auto_revert", jg->update->auto_revert,
				"progress_deadline", (json_int_t)jg->update->progress_deadline,
				"require_progress_by", (json_int_t)by);
		if (dg->desired_canaries) {
			json_object_set_new(rec, "desired_canaries", json_integer(dg->desired_canaries));
			json_object_set_new(rec, "placed_canaries",
					    json_integer(dg->canaries_all +
							 (json_int_t)json_array_size(dg->canary_slots)));
			json_object_set_new(rec, "healthy_canaries", json_integer(dg->canaries_healthy));
			json_object_set_new(rec, "auto_promote", json_boolean(jg->update->auto_promote));
			json_object_set_new(rec, "promoted", json_boolean(dg->promoted));
			if (dg->promoted)
				json_object_set_new(rec, "promote_time", json_integer(promoted_at));
		}
		json_object_set_new(groups, jg->name, rec);
	}
	return done;
}

static bool any_auto_revert(const struct deploy *d)
{
	for (size_t g = 0; g < d->model->ngroups; g++)
		if (deploy_group_rolls(&d->model->groups[g]) && d->model->groups[g].update->auto_revert)
			return true;
	return false;
}

/* Marks dep failed for why, reverting when a group asks it. */
static void dep_fail(struct deploy *d, const char *why, struct reconcile_result *r)
{
	char *desc;
	if (any_auto_revert(d)) {
		json_t *versions = job_versions(d);
		const json_t *spec;
		int64_t to = latest_stable(d, versions, &spec);
		/* the job is that version already (a revert that failed too):
		 * reverting again would only loop */
		bool same = to >= 0 && same_spec(spec, d->job);
		json_decref(versions);
		if (same) {
			desc = xasprintf("%s - not reverted: the job is job version %lld already", why,
					 (long long)to);
		} else if (to >= 0) {
			desc = xasprintf("%s - rolling back to job version %lld", why, (long long)to);
			r->revert = true;
			r->revert_to = to;
			/* kept: a server that stops before it reverted reverts
			 * on the job's next evaluation (deploy_end) */
			json_object_set_new(d->dep, "revert_to", json_integer(to));
		} else {
			desc = xasprintf("%s - no stable job version to auto revert to", why);
		}
	} else {
		desc = xstrdup(why);
	}
	json_object_set_new(d->dep, "status", json_string("failed"));
	json_object_set_new(d->dep, "status_description", json_string(desc));
	free(desc);
}

/* The live canaries of groups not promoted stop with their failed
 * deployment: the old allocations keep serving (with a health decision
 * of this reconcile, the stop carries it). */
static void stop_canaries(struct deploy *d, struct reconcile_result *r)
{
	for (size_t g = 0; g < d->model->ngroups; g++) {
		struct deploy_group *dg = &d->g[g];
		json_t *c, *x, *base;
		size_t i, k;
		if (dg->promoted)
			continue;
		json_array_foreach(dg->canaries, i, c) {
			if (stopped_now(r, jstr(c, "id", "")))
				continue;
			base = c;
			json_array_foreach(d->decisions, k, x)
				if (!strcmp(jstr(x, "id", ""), jstr(c, "id", "")))
					base = x;
			x = json_copy(base);
			json_object_set_new(x, "desired_status", json_string("stop"));
			json_object_set_new(x, "desired_description",
					    json_string("canary of a failed deployment"));
			json_object_set_new(x, "modify_time", json_integer(d->now));
			json_array_append_new(r->stops, x);
		}
	}
}

/* Canaries this reconcile would place join no deployment once it ended:
 * taken back. */
static void drop_canary_places(struct reconcile_result *r)
{
	size_t k = 0;
	for (size_t i = 0; i < r->nplace; i++) {
		if (r->place[i].canary) {
			json_decref(r->place[i].previous);
			continue;
		}
		r->place[k++] = r->place[i];
	}
	r->nplace = k;
}

/* Whether r stops a canary not promoted. */
static bool stops_canaries(const struct reconcile_result *r)
{
	size_t i;
	json_t *x;
	json_array_foreach(r->stops, i, x) {
		const json_t *ds = json_object_get(x, "deployment_status");
		if (jbool(ds, "canary", false) && !jbool(ds, "promoted", false))
			return true;
	}
	return false;
}

/* What a running deployment says while some group waits for promotion. */
static const char *running_description(const struct deploy *d)
{
	bool all_auto, all_healthy;
	if (!awaits_promotion(d, &all_auto, &all_healthy))
		return "Deployment is running";
	return all_auto ? "Deployment is running pending automatic promotion"
			: "Deployment is running but requires manual promotion";
}

static void deploy_free(struct deploy *d)
{
	if (!d)
		return;
	for (size_t g = 0; g < d->model->ngroups; g++) {
		json_decref(d->g[g].deferred);
		json_decref(d->g[g].canaries);
		json_decref(d->g[g].superseded);
		json_decref(d->g[g].canary_slots);
	}
	free(d->g);
	json_decref(d->vrec);
	json_decref(d->dep);
	json_decref(d->decisions);
	free(d);
}

void deploy_end(struct deploy *d, struct reconcile_result *r)
{
	json_t *before, *x;
	const char *late;
	bool creating = false, done;
	size_t i;

	if (!d)
		return;
	if (!r->versions)
		r->versions = json_array();
	if (!d->dep) {
		/* a version with something to place in a rolling group (its
		 * first allocations, or replacements) gets a deployment */
		bool work = false;
		for (size_t g = 0; g < d->model->ngroups; g++)
			if (deploy_group_rolls(&d->model->groups[g]) &&
			    (places_of(r, (int)g) || json_array_size(d->g[g].deferred)))
				work = true;
		if (!work || !d->vrec) {
			drop_canary_places(r);
			/* no deployment of its own (a change applied in
			 * place, or a version back to the old spec that stops
			 * an older one's canaries): an older one still running
			 * is over (read only when an allocation of the job
			 * joined a deployment) */
			if (d->deployed || stops_canaries(r))
				cancel_older_read(d->s, d->job, d->now, r);
			goto out;
		}
		d->dep = dep_new(d);
		creating = true;
		json_t *versions = job_versions(d);
		cancel_older(d->job, d->now, versions, r);
		json_decref(versions);
	}
	/* a revert decided but not done (the job is still at this version:
	 * a revert registers a new one): try again */
	if (!strcmp(dep_status(d), "failed") && json_is_integer(json_object_get(d->dep, "revert_to"))) {
		r->revert = true;
		r->revert_to = jint(d->dep, "revert_to", 0);
	}
	before = json_deep_copy(d->dep);
	if (!strcmp(dep_status(d), "running")) {
		r->deployment_id = xstrdup(jstr(d->dep, "id", ""));
		done = groups_update(d, r, &late);
		int64_t unhealthy = 0;
		for (size_t g = 0; g < d->model->ngroups; g++)
			unhealthy += d->g[g].unhealthy;
		if (unhealthy) {
			dep_fail(d, "Failed due to unhealthy allocations", r);
		} else if (late) {
			char *why = xasprintf("Failed due to progress deadline (group %s)", late);
			dep_fail(d, why, r);
			free(why);
		} else if (done) {
			json_object_set_new(d->dep, "status", json_string("successful"));
			json_object_set_new(d->dep, "status_description",
					    json_string("Deployment completed successfully"));
		} else {
			json_object_set_new(d->dep, "status_description",
					    json_string(running_description(d)));
			if (d->due && (!r->followup_at || d->due < r->followup_at))
				r->followup_at = d->due;
		}
		if (strcmp(dep_status(d), "running")) {
			/* it ended: nothing more joins it */
			free(r->deployment_id);
			r->deployment_id = NULL;
			drop_canary_places(r);
		}
	}
	if (!strcmp(dep_status(d), "failed"))
		stop_canaries(d, r);
	json_array_foreach(d->decisions, i, x)
		if (!stopped_now(r, jstr(x, "id", "")))
			json_array_append(r->updates, x);
	json_object_del(before, "modify_time");
	x = json_copy(d->dep);
	json_object_del(x, "modify_time");
	if (creating || !json_equal(before, x)) {
		json_t *v = json_deep_copy(d->vrec);
		json_object_set_new(d->dep, "modify_time", json_integer(d->now));
		json_object_set(v, "deployment", d->dep);
		if (!strcmp(dep_status(d), "successful"))
			json_object_set_new(v, "stable", json_true());
		json_array_append_new(r->versions, v);
	}
	json_decref(x);
	json_decref(before);
out:
	if (!json_array_size(r->versions)) {
		json_decref(r->versions);
		r->versions = NULL;
	}
	deploy_free(d);
}

void deploy_join(json_t *alloc, const struct job_group *g, const char *id, bool canary)
{
	int64_t checks = 0;

	json_object_set_new(alloc, "deployment_id", json_string(id));
	if (canary)
		json_object_set_new(alloc, "deployment_status", json_pack("{s:b}", "canary", 1));
	if (strcmp(g->update->health_check, "checks"))
		return;
	for (size_t i = 0; i < g->nservices; i++)
		checks += (int64_t)g->services[i].nchecks;
	for (size_t t = 0; t < g->ntasks; t++)
		for (size_t i = 0; i < g->tasks[t].nservices; i++)
			checks += (int64_t)g->tasks[t].services[i].nchecks;
	if (checks)
		json_object_set_new(alloc, "deployment_checks", json_integer(checks));
}

void deploy_revert(struct server *srv, const json_t *job, int64_t to)
{
	struct http_response resp = { 0 };
	struct herd_err err = { 0 };
	const char *ns = jstr(job, "namespace", "default"), *id = jstr(job, "id", "");
	int rc = job_revert_to(srv, ns, id, to, jint(job, "version", 0), "deployment-revert", &resp,
			       &err);

	if (rc < 0)
		server_log(srv, "error", "job %s: auto revert to version %lld: %s", id, (long long)to,
			   err.msg);
	else if (resp.status != 200)
		server_log(srv, "info", "job %s: auto revert to version %lld not done: %s", id,
			   (long long)to,
			   jstr(json_object_get(resp.body, "error"), "message", "refused"));
	else
		server_log(srv, "info", "job %s: deployment failed; reverted to version %lld", id,
			   (long long)to);
	http_response_release(&resp);
}

void deploy_cancel_stopped(struct store *s, const json_t *job, int64_t now,
			   struct reconcile_result *r)
{
	struct store_key key = { jstr(job, "namespace", "default"), jstr(job, "id", ""),
				 jint(job, "version", 0) };
	bool any = json_is_object(json_object_get(job, "update"));
	json_t *g, *v = NULL, *dep;
	size_t i;

	json_array_foreach(json_object_get(job, "groups"), i, g)
		any = any || json_is_object(json_object_get(g, "update"));
	if (!any || store_get(s, STORE_JOB_VERSION, &key, &v, NULL) < 0)
		return;
	dep = json_object_get(v, "deployment");
	if (!strcmp(jstr(dep, "status", ""), "running")) {
		json_object_set_new(dep, "status", json_string("cancelled"));
		json_object_set_new(dep, "status_description",
				    json_string("Cancelled because job is stopped"));
		json_object_set_new(dep, "modify_time", json_integer(now));
		if (!r->versions)
			r->versions = json_array();
		json_array_append(r->versions, v);
	}
	json_decref(v);
}
