/* reconcile_system: what a system or sysbatch job (spec/job_system.h)
 * needs: one allocation of each group (count 1) on every node that is
 * ready and eligible, pinned to that node (place_need.node_id).  Whether
 * the node also matches the job (pool, datacenters, constraints, devices)
 * is the engine's to say at placement (system_snapshot, system_ineligible
 * in system_jobs.c): a node that does not match is left out silently, one
 * that lacks the room is a failure with the engine's explanation.
 *
 * Per group, an allocation that should run (desired run) on node N:
 *   - more than one on N: the newest is kept, the others stop;
 *   - pending or running:
 *       N down or gone: lost with it (heartbeat.c marks it); kept, never
 *       moved to another node;
 *       N draining: stopped when the drain marks it (drain.h: system
 *       allocations last, never with ignore_system_jobs), not replaced;
 *       the group changed (a new job version): replaced on N (the stop
 *       saying when N does not take the new version: a constraint it
 *       added, which leaves N without one), at once or,
 *       with update { max_parallel > 0 }, through a deployment
 *       (deployment.c): max_parallel at a time, the next ones once the
 *       previous replacements are healthy (min_healthy_time) and have run
 *       for `stagger`; an unhealthy one fails the deployment, which
 *       replaces nothing more (auto_revert: the job goes back to its
 *       latest stable version, rolled the same way); on a node that is
 *       not schedulable (ineligible) it keeps running as it is, of its
 *       version, until the node is eligible again;
 *       system, N schedulable but no longer matching the job (the
 *       hooks' unfit: system_unfit in system_jobs.c; its attributes,
 *       meta, class, pool changed, or a device it holds turned unhealthy
 *       or went away): stopped, the reason in its desired_description,
 *       and placed again on N, which the engine drops while N does not
 *       match and makes a failure (blocked until the room appears) while
 *       N matches but lacks the room;
 *       otherwise kept (its job_version moved on in place);
 *   - ended (complete, failed, lost):
 *       sysbatch: done on N (a batch runs once per node), unless the
 *       group changed: then it runs again there;
 *       system: placed again on N when N is schedulable (restart policies
 *       act on the node; there is no reschedule to another node), else
 *       left as it is until N is back; but not one of a deployment that
 *       failed (its version is not tried again there: a revert or a new
 *       version places N's next one).
 * A node with nothing of the group gets one when it is schedulable, and
 * for sysbatch only when it was registered before the job's version was
 * (a sysbatch job runs on the nodes present when it was submitted:
 * Nomad's rule; nodes that join later get nothing).
 *
 * The decisions are reconcile_system_decide's, pure but for its hooks
 * (whether a group changed reads stored job versions; whether a node
 * still takes an allocation asks the engine; the deployment reads its
 * record), so unit tests drive it with nodes, allocations and hooks of
 * their own. */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/drain.h"
#include "server/server-int.h"

static bool is_live(const json_t *al)
{
	const char *c = jstr(al, "client_status", "pending");
	return !strcmp(c, "pending") || !strcmp(c, "running");
}

static void system_stop(struct reconcile_result *r, const json_t *al, const char *why,
			int64_t now)
{
	json_t *c = json_copy((json_t *)al);
	json_object_set_new(c, "desired_status", json_string("stop"));
	json_object_set_new(c, "desired_description", json_string(why));
	json_object_set_new(c, "modify_time", json_integer(now));
	json_array_append_new(r->stops, c);
}

static void system_place(struct reconcile_result *r, int group, const char *node_id,
			 const json_t *previous)
{
	ALLOC_GROW(r->place, r->nplace + 1, r->aplace);
	memset(&r->place[r->nplace], 0, sizeof(r->place[0]));
	r->place[r->nplace].group = group;
	r->place[r->nplace].slot = 0;
	r->place[r->nplace].previous = previous ? json_incref((json_t *)previous) : NULL;
	r->place[r->nplace].node_id = xstrdup(node_id);
	r->nplace++;
}

/* Whether the node record of vn may take a new allocation of job now:
 * ready, eligible, not draining, and for sysbatch registered no later than
 * the job's version. */
static bool node_takes(const struct view_node *vn, const json_t *job, bool sysbatch)
{
	if (!vn || !vn->schedulable)
		return false;
	return !sysbatch || jint(vn->node, "create_index", 0) <= jint(job, "modify_index", INT64_MAX);
}

/* The allocation of group `name` that should run on each node, newest
 * first wins: {"<node id>": alloc}; the others (duplicates) are stopped. */
static json_t *by_node(const json_t *allocs, const char *name, struct reconcile_result *r,
		       int64_t now)
{
	json_t *m = json_object(), *al;
	size_t i;

	json_array_foreach(allocs, i, al) {
		const char *node = jstr(al, "node_id", "");
		const json_t *had;
		if (strcmp(jstr(al, "desired_status", "run"), "run") ||
		    strcmp(jstr(al, "task_group", ""), name))
			continue;
		had = json_object_get(m, node);
		if (had && jint(had, "create_time", 0) >= jint(al, "create_time", 0)) {
			system_stop(r, al, "another allocation of the group runs on the node", now);
			continue;
		}
		if (had)
			system_stop(r, had, "another allocation of the group runs on the node", now);
		json_object_set(m, node, al);
	}
	return m;
}

/* The in-place move of a live allocation to the job's current version
 * and, when node_index >= 0, to the node record it was found to match
 * now ("node_modify_index"). */
static void keep_live(struct reconcile_result *r, const json_t *job, const json_t *al,
		      int64_t node_index, int64_t now)
{
	bool version = jint(al, "job_version", -1) != jint(job, "version", 0);
	bool node = node_index >= 0 && jint(al, "node_modify_index", -1) != node_index;

	if (version || node) {
		json_t *c = json_copy((json_t *)al);
		json_object_set(c, "job_version", json_object_get(job, "version"));
		if (node)
			json_object_set_new(c, "node_modify_index", json_integer(node_index));
		json_object_set_new(c, "modify_time", json_integer(now));
		json_array_append_new(r->updates, c);
	}
	r->ignore++;
}

static void followup(struct reconcile_result *r, int64_t at)
{
	if (at > 0 && (!r->followup_at || at < r->followup_at))
		r->followup_at = at;
}

/* How many more of a rolling group's deferred allocations stagger lets
 * go now: max_parallel beside the current version's that still settle
 * (pending, or running for less than stagger) and this reconcile's
 * placements of the group; a follow-up comes back when the first of them
 * has run for stagger. */
static size_t stagger_cap(struct reconcile_result *r, const struct job_update *u, int g,
			  const json_t *current, int64_t now)
{
	int64_t stagger = u->stagger > 0 ? u->stagger : 0, settling = 0, wake = 0, left;
	const json_t *al;
	const char *node;

	json_object_foreach((json_t *)current, node, al) {
		int64_t started = jint(al, "start_time", 0);
		if (!strcmp(jstr(al, "client_status", ""), "pending")) {
			settling++; /* its report brings the next evaluation */
		} else if (started + stagger > now) {
			settling++;
			if (!wake || started + stagger < wake)
				wake = started + stagger;
		}
	}
	for (size_t k = 0; k < r->nplace; k++)
		settling += r->place[k].group == g;
	followup(r, wake);
	left = u->max_parallel - settling;
	return left > 0 ? (size_t)left : 0;
}

/* The replacement of live allocation al of an older version on its
 * schedulable node vn: stopped, and the new version placed there.  Its
 * reason says when the node does not take the new version (a constraint
 * the new version added, a device al holds unhealthy): the engine then
 * places nothing there, or places it on another device of the node. */
static void system_replace(struct reconcile_result *r, const struct system_hooks *h, int g,
			   const json_t *al, const struct view_node *vn, bool sysbatch, int64_t now)
{
	char *why = !sysbatch && h->unfit ? h->unfit(h->ctx, g, al, vn) : NULL;

	system_stop(r, al, why ? why : "job version changed; replaced on its node", now);
	system_place(r, g, vn->id, al);
	free(why);
}

/* A rolling group's turn: of the live allocations of an older version
 * deferred to the deployment (on schedulable nodes), replace as many as
 * it allows (max_parallel, the previous replacements healthy, not
 * failed: deployment.c) and stagger allows; the others wait for the
 * evaluation a health decision, a report or the follow-up brings. */
static void system_roll(struct reconcile_result *r, const struct system_hooks *h,
			struct sched_view *v, const struct job_update *u, int g,
			const json_t *current, size_t ndeferred, int64_t now)
{
	size_t n = deploy_budget_capped(h->dep, g, r, stagger_cap(r, u, g, current, now));

	for (size_t k = 0; k < n; k++) {
		const json_t *old = deploy_deferred(h->dep, g, k);
		/* deferred on a schedulable node of v: there */
		system_replace(r, h, g, old, sched_view_node(v, jstr(old, "node_id", "")), false, now);
	}
	r->ignore += (int)(ndeferred - n);
}

/* A live allocation whose group did not change, on node vn: stopped when
 * the node no longer matches the job (and placed again there, which the
 * engine drops while the node does not match, or makes a failure while
 * it lacks the room, e.g. its only GPU unhealthy), kept otherwise.
 * Returns whether it keeps running.
 *
 * The node is asked only when its record changed since the allocation
 * was placed or last found to match it (the record's modify_index, kept
 * in the allocation's "node_modify_index"): a system job's evaluation
 * would otherwise ask every node again, a one-node snapshot each. */
static bool system_still_fits(struct reconcile_result *r, const struct system_hooks *h, int g,
			      const json_t *job, const json_t *al, const struct view_node *vn,
			      bool sysbatch, int64_t now)
{
	int64_t node_index = jint(vn->node, "modify_index", 0);
	/* a sysbatch run ends where it started */
	bool ask = !sysbatch && vn->schedulable && h->unfit &&
		   jint(al, "node_modify_index", -1) != node_index;
	char *why = ask ? h->unfit(h->ctx, g, al, vn) : NULL;

	if (!why) {
		keep_live(r, job, al, ask ? node_index : -1, now);
		return true;
	}
	system_stop(r, al, why, now);
	system_place(r, g, vn->id, al);
	free(why);
	return false;
}

/* Group g of the job: its allocations node by node, then the nodes that
 * have none, then a rolling group's replacements. */
static void system_group(const struct job *model, const json_t *job, int g, struct sched_view *v,
			 int64_t now, const struct system_hooks *h, struct reconcile_result *r)
{
	const struct job_group *grp = &model->groups[g];
	bool sysbatch = !strcmp(model->type, "sysbatch");
	bool rolls = !sysbatch && h->dep && deploy_group_rolls(grp);
	json_t *mine = by_node(v->job_allocs, grp->name, r, now), *current = json_object(), *al;
	size_t ndeferred = 0, i;
	int64_t total = 0;
	const char *node;

	if (rolls) /* its health counts, whatever its status */
		json_array_foreach(v->job_allocs, i, al)
			if (!strcmp(jstr(al, "task_group", ""), grp->name))
				deploy_note(h->dep, g, al);
	json_object_foreach(mine, node, al) {
		struct view_node *vn = sched_view_node(v, node);
		bool live = is_live(al), down = !vn || !strcmp(jstr(vn->node, "status", ""), "down");

		if (grp->count < 1) {
			system_stop(r, al, "group count is 0", now);
			continue;
		}
		if (live && down) {
			r->ignore++; /* lost with its node (heartbeat.c), never moved */
			continue;
		}
		if (live && jbool(vn->node, "drain", false) && drain_marked(al)) {
			/* its turn in the drain (drain.h: system allocations last) */
			system_stop(r, al, "node draining; not moved (system job)", now);
			continue;
		}
		if (live) {
			bool ch = h->changed(h->ctx, al);
			total++;
			if (!ch) {
				if (system_still_fits(r, h, g, job, al, vn, sysbatch, now) && vn->schedulable)
					json_object_set(current, node, al);
			} else if (!vn->schedulable) {
				/* an ineligible or draining node keeps what it runs, of
				 * its version: replaced once the node is eligible again */
				r->ignore++;
			} else if (rolls) {
				deploy_defer(h->dep, g, al); /* its turn: system_roll */
				ndeferred++;
			} else {
				system_replace(r, h, g, al, vn, sysbatch, now);
			}
			continue;
		}
		/* ended: complete, failed or lost */
		if (sysbatch && !h->changed(h->ctx, al)) {
			r->ignore++; /* ran once on this node */
			continue;
		}
		if (!node_takes(vn, job, sysbatch)) {
			r->ignore++; /* until its node is back (or never: not present at submission) */
			continue;
		}
		if (rolls && deploy_alloc_halted(h->dep, al)) {
			/* its version failed its deployment there: not tried
			 * again (auto_revert, or a new version, places the
			 * node's next one) */
			r->ignore++;
			continue;
		}
		total++;
		system_stop(r, al, sysbatch ? "job version changed; runs again on its node"
					    : "ended; placed again on its node", now);
		system_place(r, g, node, al);
	}
	for (i = 0; grp->count >= 1 && i < v->nnodes; i++)
		if (!json_object_get(mine, v->nodes[i].id) && node_takes(&v->nodes[i], job, sysbatch)) {
			total++;
			system_place(r, g, v->nodes[i].id, NULL);
		}
	if (rolls) {
		deploy_set_total(h->dep, g, total);
		system_roll(r, h, v, grp->update, g, current, ndeferred, now);
	}
	json_decref(current);
	json_decref(mine);
}

int reconcile_system_decide(const json_t *job, const struct job *model, struct sched_view *v,
			    int64_t now, const struct system_hooks *h, struct reconcile_result *out)
{
	struct reconcile_result r = { 0 };
	json_t *al;
	size_t i;

	r.stops = json_array();
	r.updates = json_array();
	/* groups removed from the job */
	json_array_foreach(v->job_allocs, i, al) {
		bool known = false;
		if (strcmp(jstr(al, "desired_status", "run"), "run"))
			continue;
		for (size_t g = 0; g < model->ngroups && !known; g++)
			known = !strcmp(model->groups[g].name, jstr(al, "task_group", ""));
		if (!known)
			system_stop(&r, al, "group removed from the job", now);
	}
	for (size_t g = 0; g < model->ngroups; g++)
		system_group(model, job, (int)g, v, now, h, &r);
	*out = r;
	return 0;
}

/* The hooks' context for a stored job: its versions in s, the engine's
 * asks of its groups (translated once, on first need). */
struct stored_ctx {
	struct store *s;
	const json_t *job;
	const struct job *model;
	struct sched_view *v;
	struct group_ask *asks;
	signed char *ask_state; /* per group: 0 not yet, 1 ready, -1 failed */
};

static bool stored_changed(void *ctx, const json_t *alloc)
{
	struct stored_ctx *c = ctx;
	return reconcile_group_changed(c->s, c->job, alloc);
}

static char *stored_unfit(void *ctx, int g, const json_t *alloc, const struct view_node *vn)
{
	struct stored_ctx *c = ctx;

	if (!c->ask_state[g])
		c->ask_state[g] = group_ask_init(&c->asks[g], c->model, &c->model->groups[g], NULL) < 0
					  ? -1 : 1;
	/* a group the engine cannot express fails at placement, said there */
	return c->ask_state[g] > 0 ? system_unfit(c->v, &c->asks[g], alloc, vn) : NULL;
}

int reconcile_system(struct store *s, const json_t *job, const struct job *model,
		     struct sched_view *v, int64_t now, struct reconcile_result *out)
{
	struct stored_ctx c = { s, job, model, v, NULL, NULL };
	struct system_hooks h = { stored_changed, stored_unfit, &c, deploy_begin(s, job, model, now) };
	int rc;

	c.asks = xcalloc(model->ngroups + 1, sizeof(*c.asks));
	c.ask_state = xcalloc(model->ngroups + 1, 1);
	rc = reconcile_system_decide(job, model, v, now, &h, out);
	if (h.dep)
		deploy_end(h.dep, out);
	else /* no rolling group (any more): an older deployment ends */
		deploy_cancel_superseded(s, job, v->job_allocs, now, out);
	for (size_t g = 0; g < model->ngroups; g++)
		if (c.ask_state[g] > 0)
			group_ask_release(&c.asks[g]);
	free(c.asks);
	free(c.ask_state);
	return rc;
}
