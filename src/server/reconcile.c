/* reconcile: compares what a job asks (count instances per group, its
 * current version) with its allocations, and decides what to stop and
 * what to place.
 *
 * Each group has `count` slots (instance indexes).  A slot's current
 * allocation is the one whose desired status is "run"; older ones of the
 * slot were stopped when they were replaced.  For a slot:
 *   - no current allocation: place one;
 *   - current pending/running on a node that is down, gone or draining, or
 *     of an older job version whose group changed: stop it and place a
 *     replacement (the replacement waits for capacity, never the stop);
 *   - current complete: done for a batch job; a service is replaced;
 *   - current failed: replaced per the group's reschedule policy (attempts
 *     within interval, delay); if the delay has not passed, a follow-up is
 *     due then; attempts exhausted: the slot stays failed;
 *   - current failed by its time limit (time_limit.reached, as its agent
 *     reported it): the slot stays failed, whatever the policy says (the
 *     same work would run into the same limit);
 *   - current lost: replaced at once;
 *   - current unknown (its node is down, the group has disconnect {
 *     lost_after }): kept, a replacement placed beside it when the block
 *     says replace; lost once lost_after has passed (disconnect.h): then
 *     stopped if it was replaced, else kept lost in its slot and replaced
 *     per the reschedule policy, as a failure is;
 *   - an allocation back with its node while a replacement of it runs:
 *     the block's reconcile says which of the two stops (disconnect_losers).
 * A slot whose allocation a user stopped (reconcile_user_stop: desired
 * stop, waiting for a replacement) has no current allocation: it is
 * placed again, linked to the stopped one, whatever the client status
 * (the stop route refuses an allocation that ended).
 * Allocations of removed groups or of slots past count are stopped.
 *
 * Rolling updates (deployment.c): in a service group with update {
 * max_parallel > 0 } a live allocation whose group changed is not replaced
 * at once: at most max_parallel of the group's allocations are replaced
 * and not yet healthy at a time, the next ones once those are; a failed
 * deployment replaces no more.  Canaries (update { canary }) take no slot
 * until promoted: deploy_canary says which to keep aside and which to
 * stop, deploy_canaries which to place beside the old allocations and
 * which old ones promoted canaries replace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/disconnect.h"
#include "server/drain.h"
#include "server/server-int.h"
#include "spec/job_system.h"

void reconcile_result_release(struct reconcile_result *r)
{
	if (!r)
		return;
	json_decref(r->stops);
	json_decref(r->updates);
	json_decref(r->versions);
	free(r->deployment_id);
	for (size_t i = 0; i < r->nplace; i++) {
		json_decref(r->place[i].previous);
		free(r->place[i].node_id);
	}
	free(r->place);
	memset(r, 0, sizeof(*r));
}

/* Stops alloc.  replaced_attempts >= 0 says that a replacement is due, and
 * with how many reschedule attempts: the stopped record keeps it, so that a
 * replacement that has to wait for capacity (placed by a later evaluation)
 * still links to it and keeps its reschedule history. */
static void stop_alloc(struct reconcile_result *r, const json_t *alloc, const char *why, int64_t now,
		       int replaced_attempts)
{
	json_t *c = json_copy((json_t *)alloc);
	if (!strcmp(jstr(c, "client_status", ""), "unknown")) {
		/* its node is down and nothing waits for it any more: lost,
		 * as it would have been without disconnect { } */
		json_object_set_new(c, "client_status", json_string("lost"));
		json_object_set_new(c, "end_time", json_integer(now));
		json_object_del(c, "unknown_from");
	}
	json_object_set_new(c, "desired_status", json_string("stop"));
	json_object_set_new(c, "desired_description", json_string(why));
	json_object_set_new(c, "modify_time", json_integer(now));
	if (replaced_attempts >= 0)
		json_object_set_new(c, "replacement_attempts", json_integer(replaced_attempts));
	json_array_append_new(r->stops, c);
}

json_t *reconcile_user_stop(const json_t *alloc, int64_t now)
{
	struct reconcile_result r = { 0 };
	json_t *c;

	r.stops = json_array();
	/* the attempts it had, not one more: a user's stop is no failure and
	 * uses up nothing of the group's reschedule policy */
	stop_alloc(&r, alloc, RECONCILE_USER_STOP, now, (int)jint(alloc, "reschedule_attempts", 0));
	c = json_incref(json_array_get(r.stops, 0));
	json_decref(r.stops);
	return c;
}

void alloc_set_no_shutdown_delay(json_t *alloc)
{
	json_t *t = json_object_get(alloc, "desired_transition");
	if (!json_is_object(t)) {
		t = json_object();
		json_object_set_new(alloc, "desired_transition", t);
	}
	json_object_set_new(t, "no_shutdown_delay", json_true());
}

static void add_place(struct reconcile_result *r, int group, int slot, const json_t *previous,
		      int attempts)
{
	ALLOC_GROW(r->place, r->nplace + 1, r->aplace);
	r->place[r->nplace].group = group;
	r->place[r->nplace].slot = slot;
	r->place[r->nplace].previous = previous ? json_incref((json_t *)previous) : NULL;
	r->place[r->nplace].canary = false;
	r->place[r->nplace].node_id = NULL;
	r->place[r->nplace++].reschedule_attempts = attempts;
}

/* The ids that allocations of the job name as previous_allocation. */
static json_t *replaced_ids(const json_t *allocs)
{
	json_t *ids = json_object(), *al;
	size_t i;
	json_array_foreach(allocs, i, al)
		if (*jstr(al, "previous_allocation", ""))
			json_object_set_new(ids, jstr(al, "previous_allocation", ""), json_true());
	return ids;
}

/* The stopped allocation of slot (group, index) still waiting for its
 * replacement: stopped with replacement_attempts, and not named in
 * replaced (replaced_ids).  The latest such one, or NULL. */
static const json_t *slot_predecessor(const json_t *allocs, const json_t *replaced,
				      const char *group, int64_t slot)
{
	const json_t *best = NULL, *al;
	size_t i;
	json_array_foreach(allocs, i, al) {
		if (!strcmp(jstr(al, "desired_status", "run"), "run") ||
		    jint(al, "replacement_attempts", -1) < 0 || jint(al, "index", -1) != slot ||
		    strcmp(jstr(al, "task_group", ""), group) ||
		    json_object_get(replaced, jstr(al, "id", "")))
			continue;
		if (!best || jint(al, "modify_time", 0) > jint(best, "modify_time", 0))
			best = al;
	}
	return best;
}

/* Whether alloc ended because its group's time limit was reached. */
static bool time_limit_ended(const json_t *alloc)
{
	return jbool(json_object_get(alloc, "time_limit"), "reached", false);
}

/* g (a shallow copy) without the fields added after versions were stored
 * where they hold their defaults: a group stored before them is the same.
 * Tasks are copied before a change (they are the stored job's). */
static void drop_new_defaults(json_t *g)
{
	json_t *tasks = json_object_get(g, "tasks"), *copy, *t;
	size_t i;

	if (!jint(g, "time_limit", 0))
		json_object_del(g, "time_limit");
	/* how a group rolls out, or a gang restarts, is no part of what it
	 * runs */
	json_object_del(g, "update");
	json_object_del(g, "migrate");
	json_object_del(g, "gang_restart");
	copy = json_array();
	json_array_foreach(tasks, i, t) {
		t = json_copy(t);
		if (json_is_null(json_object_get(t, "restart")))
			json_object_del(t, "restart");
		json_array_append_new(copy, t);
	}
	json_object_set_new(g, "tasks", copy);
}

/* The parts of a job that decide where a group's allocations run and what
 * they run: the group itself and the job-wide placement rules. */
static json_t *group_shape(const json_t *job, const char *group)
{
	json_t *g = NULL, *x;
	size_t i;
	json_array_foreach(json_object_get(job, "groups"), i, x)
		if (!strcmp(jstr(x, "name", ""), group))
			g = x;
	if (!g)
		return NULL;
	/* count scales in place: more or fewer slots, the same instances;
	 * not a gang's, whose size every member was told (HERD_GANG_SIZE).
	 * A group stored before gangs existed has no "gang": the same. */
	g = json_copy(g);
	if (!jbool(g, "gang", false)) {
		json_object_del(g, "count");
		json_object_del(g, "gang");
	}
	drop_new_defaults(g);
	return json_pack("{s:o, s:O*, s:O*, s:O*, s:O*}", "group", g,
			 "constraints", json_object_get(job, "constraints"),
			 "affinities", json_object_get(job, "affinities"),
			 "datacenters", json_object_get(job, "datacenters"),
			 "node_pool", json_object_get(job, "node_pool"));
}

/* Whether the group of alloc changed between its job version and job. */
static bool group_changed(struct store *s, const json_t *job, const json_t *alloc)
{
	int64_t av = jint(alloc, "job_version", -1), jv = jint(job, "version", 0);
	struct store_key key = { jstr(job, "namespace", "default"), jstr(job, "id", ""), av };
	const char *group = jstr(alloc, "task_group", "");
	json_t *old = NULL, *a, *b;
	bool changed;

	if (av == jv)
		return false;
	if (av < 0 || store_get(s, STORE_JOB_VERSION, &key, &old, NULL) < 0)
		return true;
	a = group_shape(old, group);
	b = group_shape(job, group);
	changed = !a || !b || !json_equal(a, b);
	json_decref(a);
	json_decref(b);
	json_decref(old);
	return changed;
}

bool reconcile_group_changed(struct store *s, const json_t *job, const json_t *alloc)
{
	return group_changed(s, job, alloc);
}

/* When the next reschedule of alloc may happen (unix ns), or -1 when the
 * policy allows no more. */
static int64_t reschedule_at(const struct job_reschedule *p, const json_t *alloc, int64_t now)
{
	json_t *events = json_object_get(alloc, "reschedule_events"), *e;
	int64_t recent = 0, n = (int64_t)json_array_size(events), delay = p->delay;
	size_t i;

	json_array_foreach(events, i, e)
		if (p->interval <= 0 || json_integer_value(e) > now - p->interval)
			recent++;
	if (!p->unlimited && recent >= p->attempts)
		return -1;
	if (!strcmp(p->delay_function, "exponential")) {
		for (int64_t k = 0; k < n && delay < INT64_MAX / 2; k++)
			delay *= 2;
	} else if (!strcmp(p->delay_function, "fibonacci")) {
		int64_t a = p->delay, b = p->delay;
		for (int64_t k = 1; k < n && b < INT64_MAX / 2; k++) {
			int64_t c = a + b;
			a = b;
			b = c;
		}
		delay = n ? b : p->delay;
	}
	if (p->max_delay > 0 && delay > p->max_delay)
		delay = p->max_delay;
	return jint(alloc, "modify_time", now) + delay;
}

bool reconcile_reschedules(const struct job_group *g, const json_t *alloc, int64_t now)
{
	return reschedule_at(&g->reschedule, alloc, now) >= 0;
}

static int find_group(const struct job *job, const char *name)
{
	for (size_t i = 0; i < job->ngroups; i++)
		if (!strcmp(job->groups[i].name, name))
			return (int)i;
	return -1;
}

/* ---- disconnect { } (disconnect.h) ------------------------------------- */

/* Whether alloc came back with its node after it was unknown: it is
 * marked by unknown_since until reconcile decided about it. */
static bool reconnected(struct sched_view *v, const json_t *alloc)
{
	struct view_node *vn;
	if (!json_object_get(alloc, "unknown_since") ||
	    !strcmp(jstr(alloc, "client_status", ""), "unknown"))
		return false;
	vn = sched_view_node(v, jstr(alloc, "node_id", ""));
	return vn && strcmp(jstr(vn->node, "status", ""), "down");
}

/* Whether alloc, unknown before, is reported live while its node is still
 * down or gone: it waits as an unknown one does. */
static bool still_away(struct sched_view *v, const json_t *alloc)
{
	const char *c = jstr(alloc, "client_status", "pending");
	return json_object_get(alloc, "unknown_since") && !reconnected(v, alloc) &&
	       (!strcmp(c, "pending") || !strcmp(c, "running"));
}

/* The allocations that stop because their slot's other one keeps running
 * ({"<id>": why}): for each allocation back from an unknown state whose
 * slot a live replacement holds meanwhile, the loser by the group's
 * reconcile.  NULL when there is none (the common case costs a scan). */
static json_t *disconnect_losers(const struct job *model, struct sched_view *v)
{
	json_t *losers = NULL, *a, *b;
	size_t i, j;

	json_array_foreach(v->job_allocs, i, a) {
		const struct job_disconnect *d;
		int g;
		if (strcmp(jstr(a, "desired_status", "run"), "run") || !reconnected(v, a) ||
		    (g = find_group(model, jstr(a, "task_group", ""))) < 0)
			continue;
		d = model->groups[g].disconnect;
		json_array_foreach(v->job_allocs, j, b) {
			const char *cs = jstr(b, "client_status", "pending");
			bool keep;
			if (b == a || strcmp(jstr(b, "desired_status", "run"), "run") ||
			    jint(b, "index", -1) != jint(a, "index", -2) ||
			    strcmp(jstr(b, "task_group", ""), jstr(a, "task_group", "")) ||
			    (strcmp(cs, "pending") && strcmp(cs, "running")))
				continue;
			keep = disconnect_keep_original(d ? d->reconcile : NULL, a, b);
			if (!losers)
				losers = json_object();
			json_object_set_new(losers, jstr(keep ? b : a, "id", ""),
					    json_string(keep ? "node of the original reconnected; "
							       "replacement stopped (disconnect)"
							     : "node reconnected; its replacement "
							       "kept (disconnect)"));
			break;
		}
	}
	return losers;
}

/* An unknown allocation al of group g, slot slot (disconnect.h): kept,
 * replaced beside, or lost.  Returns whether it holds its slot. */
static bool reconcile_unknown(struct reconcile_result *r, const struct job_group *grp, int g,
			      int slot, const json_t *al, const json_t *replaced, int64_t now)
{
	bool was_replaced = json_object_get(replaced, jstr(al, "id", "")) != NULL;
	int64_t wake = 0;
	int attempts = (int)jint(al, "reschedule_attempts", 0);
	json_t *lost;

	switch (disconnect_unknown_step(grp->disconnect, al, was_replaced, now, &wake)) {
	case DISCONNECT_WAIT:
		break;
	case DISCONNECT_REPLACE:
		/* beside it, in its slot: not a failure, no attempt used */
		add_place(r, g, slot, al, attempts);
		break;
	case DISCONNECT_LOST:
		/* stop_alloc makes it lost */
		lost = json_copy((json_t *)al);
		json_object_set_new(lost, "client_description",
				    json_string("node down: lost_after passed (disconnect)"));
		if (was_replaced) {
			stop_alloc(r, lost, "lost; replaced while unknown", now, -1);
			json_decref(lost);
			return false;
		}
		/* replace = false: lost now, still in its slot, replaced by the
		 * group's reschedule policy (the "lost" case of reconcile, from
		 * the next pass on) */
		json_object_set_new(lost, "client_status", json_string("lost"));
		json_object_set_new(lost, "end_time", json_integer(now)); /* GPU-hours stop here */
		json_object_set_new(lost, "modify_time", json_integer(now));
		json_object_del(lost, "unknown_from");
		wake = reschedule_at(&grp->reschedule, lost, now);
		json_array_append_new(r->updates, lost);
		break;
	}
	if (wake > 0 && (!r->followup_at || wake < r->followup_at))
		r->followup_at = wake;
	r->ignore++;
	/* its replacement holds the slot once placed */
	return !was_replaced;
}

/* ---- gangs ---------------------------------------------------------------
 *
 * A gang group (`gang = true`) is decided as a whole: its members run
 * together or not at all (a distributed run whose peer is gone hangs).
 *   - every member live (or, in a batch job, complete): nothing to do;
 *   - a member failed and its reschedule policy allows no more: the gang
 *     failed for good, the live members stop, nothing is placed;
 *   - a member failed and its reschedule is delayed: the live members stop
 *     now (their peers wait for nothing), the gang is placed at the
 *     follow-up;
 *   - a member failed (reschedule due), was lost, or must move (node down,
 *     draining, group changed), or a slot is empty: every member stops
 *     and the whole gang is placed again, with one reschedule attempt
 *     counted for the gang (every member carries the same count and
 *     events, since they are always placed together).  In a batch job a
 *     member that completed keeps its result and is not placed again,
 *     unless the group says gang_restart = "all" (ranks that must all
 *     start over together): the others are placed again beside it, and
 *     their gang record still lists it (gang.c). */

struct gang_ctx {
	struct store *s;
	const json_t *job;
	struct sched_view *v;
	const json_t *replaced;
	int64_t now;
	bool batch;
};

/* Why a live member must move, or NULL. */
static const char *member_moves(const struct gang_ctx *c, const json_t *al)
{
	struct view_node *vn = sched_view_node(c->v, jstr(al, "node_id", ""));
	if (!vn || !strcmp(jstr(vn->node, "status", ""), "down"))
		return "node down";
	if (jbool(vn->node, "drain", false) && drain_marked(al))
		return "node draining";
	if (group_changed(c->s, c->job, al))
		return "job version changed";
	return NULL;
}

static bool member_live(const json_t *al)
{
	const char *client = jstr(al, "client_status", "pending");
	return !strcmp(client, "pending") || !strcmp(client, "running");
}

/* The in-place update of a live member to the job's version (nothing
 * that decides placement changed), as for any allocation. */
static void member_update(const struct gang_ctx *c, const json_t *al, struct reconcile_result *r)
{
	json_t *u;
	if (jint(al, "job_version", -1) == jint(c->job, "version", 0))
		return;
	u = json_copy((json_t *)al);
	json_object_set(u, "job_version", json_object_get(c->job, "version"));
	json_object_set_new(u, "modify_time", json_integer(c->now));
	json_array_append_new(r->updates, u);
}

/* Whether the gang's restart leaves member al as it is: a batch member
 * that completed, in a gang that does not restart every member. */
static bool member_kept(const struct gang_ctx *c, const struct job_group *grp, const json_t *al)
{
	return c->batch && al && !strcmp(jstr(al, "client_status", ""), "complete") &&
	       !(grp->gang_restart && !strcmp(grp->gang_restart, "all"));
}

struct gang_state {
	const char *trigger;  /* why the gang restarts; NULL: it does not */
	bool exhausted;       /* a member failed for good */
	bool failure;         /* the restart counts as a reschedule attempt */
	int64_t wait_at;      /* a failed member's delayed reschedule; 0: none */
	int attempts;         /* the most reschedule attempts of any member */
};

static void gang_classify(const struct gang_ctx *c, const struct job_group *grp,
			  const json_t **m, struct gang_state *st)
{
	memset(st, 0, sizeof(*st));
	for (int64_t k = 0; k < grp->count; k++) {
		const json_t *al = m[k];
		const char *client, *why;
		int64_t at;
		if (!al) {
			const json_t *prev = slot_predecessor(c->v->job_allocs, c->replaced, grp->name, k);
			int a = prev ? (int)jint(prev, "replacement_attempts", 0) : 0;
			st->attempts = a > st->attempts ? a : st->attempts;
			if (!st->trigger)
				st->trigger = "member missing";
			continue;
		}
		if (jint(al, "reschedule_attempts", 0) > st->attempts)
			st->attempts = (int)jint(al, "reschedule_attempts", 0);
		client = jstr(al, "client_status", "pending");
		if (member_live(al)) {
			why = member_moves(c, al);
			if (why)
				st->trigger = why;
			continue;
		}
		if (!strcmp(client, "complete") && c->batch)
			continue;
		if (!strcmp(client, "lost")) {
			st->trigger = "member lost";
			st->failure = true;
			continue;
		}
		if (time_limit_ended(al)) {
			st->exhausted = true; /* its peers ran as long */
			continue;
		}
		/* failed, or a service member that completed */
		at = reschedule_at(&grp->reschedule, al, c->now);
		if (at < 0) {
			st->exhausted = true;
		} else if (at <= c->now) {
			st->trigger = "member failed";
			st->failure = true;
		} else if (!st->wait_at || at < st->wait_at) {
			st->wait_at = at;
		}
	}
}

static void reconcile_gang(const struct gang_ctx *c, const struct job_group *grp, int g,
			   const json_t **m, struct reconcile_result *r)
{
	struct gang_state st;
	char why[96];
	int attempts;

	gang_classify(c, grp, m, &st);
	if (st.exhausted || st.wait_at) {
		/* failed for good: no replacement; delayed: replaced at the
		 * follow-up, so linked to their successors */
		int repl = st.exhausted ? -1 : st.attempts;
		for (int64_t k = 0; k < grp->count; k++)
			if (m[k] && member_live(m[k]))
				stop_alloc(r, m[k], st.exhausted ? "gang member failed; gang stopped"
								 : "gang member failed; gang restarts",
					   c->now, repl);
		if (!st.exhausted && (!r->followup_at || st.wait_at < r->followup_at))
			r->followup_at = st.wait_at;
		r->ignore += (int)grp->count;
		return;
	}
	if (!st.trigger) {
		for (int64_t k = 0; k < grp->count; k++)
			if (member_live(m[k]))
				member_update(c, m[k], r);
		r->ignore += (int)grp->count;
		return;
	}
	attempts = st.attempts + (st.failure ? 1 : 0);
	snprintf(why, sizeof(why), "gang restarted: %s", st.trigger);
	for (int64_t k = 0; k < grp->count; k++) {
		const json_t *prev = m[k];
		if (member_kept(c, grp, prev))
			continue;
		if (prev)
			stop_alloc(r, prev, why, c->now, attempts);
		else
			prev = slot_predecessor(c->v->job_allocs, c->replaced, grp->name, k);
		add_place(r, g, (int)k, prev, attempts);
	}
}

int reconcile(struct store *s, const json_t *job, const struct job *job_model,
	      struct sched_view *v, int64_t now, struct reconcile_result *out,
	      struct herd_err *err)
{
	struct reconcile_result r = { 0 };
	unsigned char **slots = NULL; /* per group, per slot: taken */
	const json_t ***gang = NULL;  /* per gang group, per slot: its member */
	struct deploy *dep = NULL;    /* rolling updates; NULL: none */
	json_t *replaced, *losers;
	bool batch;
	size_t i;
	json_t *al;

	/* one allocation per node: a reconcile of its own */
	if (job_model && job_type_is_system(job_model->type))
		return reconcile_system(s, job, job_model, v, now, out);
	r.stops = json_array();
	r.updates = json_array();
	if (!job_model) {
		json_array_foreach(v->job_allocs, i, al)
			if (!strcmp(jstr(al, "desired_status", "run"), "run"))
				stop_alloc(&r, al, job ? "job stopped" : "job purged", now, -1);
		if (job)
			deploy_cancel_stopped(s, job, now, &r);
		*out = r;
		return 0;
	}
	batch = !strcmp(job_model->type, "batch");
	if (!batch) /* batch jobs never pay for deployments */
		dep = deploy_begin(s, job, job_model, now);
	if (!batch && !dep) /* no rolling group (any more): an older deployment ends */
		deploy_cancel_superseded(s, job, v->job_allocs, now, &r);
	slots = xcalloc(job_model->ngroups + 1, sizeof(*slots));
	for (size_t g = 0; g < job_model->ngroups; g++) {
		slots[g] = xcalloc((size_t)job_model->groups[g].count + 1, 1);
		if (!job_model->groups[g].gang)
			continue;
		if (!gang) /* only jobs with a gang pay for it */
			gang = xcalloc(job_model->ngroups + 1, sizeof(*gang));
		gang[g] = xcalloc((size_t)job_model->groups[g].count + 1, sizeof(**gang));
	}

	replaced = replaced_ids(v->job_allocs);
	losers = disconnect_losers(job_model, v);
	json_array_foreach(v->job_allocs, i, al) {
		const char *client = jstr(al, "client_status", "pending");
		int g, slot = (int)jint(al, "index", -1);
		struct view_node *vn;
		int64_t at;

		if (dep && (g = find_group(job_model, jstr(al, "task_group", ""))) >= 0)
			deploy_note(dep, g, al);
		if (strcmp(jstr(al, "desired_status", "run"), "run"))
			continue;
		g = find_group(job_model, jstr(al, "task_group", ""));
		if (g < 0) {
			stop_alloc(&r, al, "group removed from the job", now, -1);
			continue;
		}
		if (losers && json_object_get(losers, jstr(al, "id", ""))) {
			stop_alloc(&r, al, jstr(losers, jstr(al, "id", ""), ""), now, -1);
			continue;
		}
		/* also one its agent reported on while its node is still down
		 * (the agent came back before its heartbeat did) */
		if ((!strcmp(client, "unknown") || still_away(v, al)) && slot >= 0 &&
		    slot < job_model->groups[g].count && !(gang && gang[g])) {
			if (reconcile_unknown(&r, &job_model->groups[g], g, slot, al, replaced, now))
				slots[g][slot] = 1;
			continue;
		}
		if (!batch) { /* a canary shares its index with the allocation it replaces */
			enum deploy_canary c = deploy_canary(dep, g, al);
			if (c == DEPLOY_CANARY_KEEP) {
				r.ignore++;
				continue;
			}
			if (c == DEPLOY_CANARY_STOP) {
				stop_alloc(&r, al, "canary of a deployment that was not promoted", now, -1);
				continue;
			}
		}
		if (slot < 0 || slot >= job_model->groups[g].count || slots[g][slot]) {
			stop_alloc(&r, al, "more instances than count", now, -1);
			continue;
		}
		slots[g][slot] = 1;
		if (gang && gang[g]) {
			gang[g][slot] = al; /* decided for the whole gang below */
			continue;
		}
		vn = sched_view_node(v, jstr(al, "node_id", ""));
		if (!strcmp(client, "pending") || !strcmp(client, "running")) {
			const char *why = NULL;
			bool changed = false;
			if ((!vn || !strcmp(jstr(vn->node, "status", ""), "down")) &&
			    job_model->groups[g].prevent_reschedule_on_lost) {
				r.ignore++; /* lost with its node: not replaced */
				continue;
			}
			if (!vn || !strcmp(jstr(vn->node, "status", ""), "down"))
				why = "node down; replaced";
			else if (jbool(vn->node, "drain", false) && drain_marked(al))
				why = "node draining; migrated"; /* its turn (drain.h) */
			else if ((changed = group_changed(s, job, al)))
				why = "job version changed; replaced";
			if (changed && dep && deploy_group_rolls(&job_model->groups[g])) {
				/* its turn comes within max_parallel (below) */
				deploy_defer(dep, g, al);
				r.ignore++;
				continue;
			}
			if (why) {
				int attempts = (int)jint(al, "reschedule_attempts", 0);
				stop_alloc(&r, al, why, now, attempts);
				add_place(&r, g, slot, al, attempts);
			} else {
				if (jint(al, "job_version", -1) != jint(job, "version", 0) ||
				    json_object_get(al, "unknown_since")) {
					json_t *c = json_copy(al);
					json_object_set(c, "job_version", json_object_get(job, "version"));
					json_object_set_new(c, "modify_time", json_integer(now));
					/* back from unknown, decided: no longer marked */
					json_object_del(c, "unknown_since");
					json_array_append_new(r.updates, c);
				}
				r.ignore++;
			}
			continue;
		}
		if (!strcmp(client, "complete") && batch) {
			r.ignore++;
			continue;
		}
		if (!strcmp(client, "lost") && json_object_get(al, "unknown_since")) {
			/* lost once disconnect's lost_after passed, replace = false:
			 * replaced as the reschedule policy says */
			at = reschedule_at(&job_model->groups[g].reschedule, al, now);
			if (at < 0 || job_model->groups[g].prevent_reschedule_on_lost) {
				/* attempts exhausted, or never replaced: the slot stays lost */
				r.ignore++;
			} else if (at <= now) {
				int attempts = (int)jint(al, "reschedule_attempts", 0) + 1;
				stop_alloc(&r, al, "lost; rescheduled", now, attempts);
				add_place(&r, g, slot, al, attempts);
			} else {
				if (!r.followup_at || at < r.followup_at)
					r.followup_at = at;
				r.ignore++;
			}
			continue;
		}
		if (!strcmp(client, "lost") && job_model->groups[g].prevent_reschedule_on_lost) {
			r.ignore++; /* stays lost in its slot, not replaced */
			continue;
		}
		if (!strcmp(client, "lost")) {
			int attempts = (int)jint(al, "reschedule_attempts", 0) + 1;
			at = disconnect_replace_at(job_model->groups[g].disconnect, al, now);
			if (at > now) { /* its node stops it by then (disconnect.h) */
				if (!r.followup_at || at < r.followup_at)
					r.followup_at = at;
				r.ignore++;
				continue;
			}
			stop_alloc(&r, al, "lost; replaced", now, attempts);
			add_place(&r, g, slot, al, attempts);
			continue;
		}
		if (time_limit_ended(al)) {
			r.ignore++; /* final: the slot stays failed */
			continue;
		}
		/* failed, or a service that completed */
		if (dep && !deploy_failed(dep) && deploy_group_rolls(&job_model->groups[g]) &&
		    group_changed(s, job, al)) {
			/* a rolling group's new version (a revert, a fix) gets a
			 * fresh start where the old one failed */
			stop_alloc(&r, al, "job version changed; replaced", now, 0);
			add_place(&r, g, slot, al, 0);
			continue;
		}
		at = reschedule_at(&job_model->groups[g].reschedule, al, now);
		if (at < 0) {
			r.ignore++; /* attempts exhausted: the slot stays failed */
		} else if (at <= now) {
			int attempts = (int)jint(al, "reschedule_attempts", 0) + 1;
			stop_alloc(&r, al, "rescheduled", now, attempts);
			add_place(&r, g, slot, al, attempts);
		} else {
			if (!r.followup_at || at < r.followup_at)
				r.followup_at = at;
			r.ignore++;
		}
	}
	for (size_t g = 0; g < job_model->ngroups; g++) {
		if (gang && gang[g]) {
			struct gang_ctx gc = { s, job, v, replaced, now, batch };
			reconcile_gang(&gc, &job_model->groups[g], (int)g, gang[g], &r);
			free(gang[g]);
			free(slots[g]);
			continue;
		}
		for (int64_t k = 0; k < job_model->groups[g].count; k++) {
			const json_t *prev;
			if (slots[g][k])
				continue;
			prev = slot_predecessor(v->job_allocs, replaced, job_model->groups[g].name, k);
			add_place(&r, (int)g, (int)k, prev,
				  prev ? (int)jint(prev, "replacement_attempts", 0) : 0);
		}
		free(slots[g]);
	}
	deploy_canaries(dep, &r);
	for (size_t g = 0; dep && g < job_model->ngroups; g++) {
		const json_t *x;
		size_t k;
		json_array_foreach(deploy_superseded(dep, (int)g), k, x) {
			stop_alloc(&r, x, "job version changed; replaced by a promoted canary", now, -1);
			r.ignore--;
		}
		json_array_foreach(deploy_canary_slots(dep, (int)g), k, x) {
			add_place(&r, (int)g, (int)json_integer_value(x), NULL, 0);
			r.place[r.nplace - 1].canary = true;
		}
	}
	for (size_t g = 0; dep && g < job_model->ngroups; g++) {
		size_t n = deploy_budget(dep, (int)g, &r);
		for (size_t k = 0; k < n; k++) {
			const json_t *old = deploy_deferred(dep, (int)g, k);
			int attempts = (int)jint(old, "reschedule_attempts", 0);
			stop_alloc(&r, old, "job version changed; replaced", now, attempts);
			add_place(&r, (int)g, (int)jint(old, "index", 0), old, attempts);
			r.ignore--;
		}
	}
	deploy_end(dep, &r);
	free(slots);
	free(gang);
	json_decref(replaced);
	json_decref(losers);
	(void)err;
	*out = r;
	return 0;
}
