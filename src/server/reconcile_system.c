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
 *       the group changed (a new job version): replaced on N, at once or,
 *       with update { max_parallel > 0 }, max_parallel at a time, the next
 *       ones once the previous replacements have run for `stagger`; on a
 *       node that is not schedulable (ineligible) it keeps running as it
 *       is, of its version, until the node is eligible again;
 *       otherwise kept (its job_version moved on in place);
 *   - ended (complete, failed, lost):
 *       sysbatch: done on N (a batch runs once per node), unless the
 *       group changed: then it runs again there;
 *       system: placed again on N when N is schedulable (restart policies
 *       act on the node; there is no reschedule to another node), else
 *       left as it is until N is back.
 * A node with nothing of the group gets one when it is schedulable, and
 * for sysbatch only when it was registered before the job's version was
 * (a sysbatch job runs on the nodes present when it was submitted:
 * Nomad's rule; nodes that join later get nothing).
 *
 * The decisions are reconcile_system_decide's, pure but for the
 * `changed` callback (group_changed reads stored job versions), so unit
 * tests drive it with nodes and allocations of their own. */
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

/* The in-place move of a live allocation to the job's current version. */
static void keep_live(struct reconcile_result *r, const json_t *job, const json_t *al, int64_t now)
{
	if (jint(al, "job_version", -1) != jint(job, "version", 0)) {
		json_t *c = json_copy((json_t *)al);
		json_object_set(c, "job_version", json_object_get(job, "version"));
		json_object_set_new(c, "modify_time", json_integer(now));
		json_array_append_new(r->updates, c);
	}
	r->ignore++;
}

static int cmp_node(const void *pa, const void *pb)
{
	const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
	return strcmp(jstr(a, "node_id", ""), jstr(b, "node_id", ""));
}

static void followup(struct reconcile_result *r, int64_t at)
{
	if (at > 0 && (!r->followup_at || at < r->followup_at))
		r->followup_at = at;
}

/* A rolling group's turn: of the live allocations of an older version
 * (deferred, on schedulable nodes), replace as many as max_parallel allows
 * beside the current version's that are still settling: pending, or
 * running for less than stagger.  A follow-up comes back for the rest. */
static void system_roll(struct reconcile_result *r, const struct job_update *u, int g,
			const json_t *current, json_t **deferred, size_t ndeferred, int64_t now)
{
	int64_t stagger = u->stagger > 0 ? u->stagger : 0, settling = 0, wake = 0;
	int64_t recheck = stagger > NS_PER_SEC ? stagger : NS_PER_SEC;
	const json_t *al;
	const char *node;
	size_t k = 0;

	json_object_foreach((json_t *)current, node, al) {
		int64_t started = jint(al, "start_time", 0);
		if (!strcmp(jstr(al, "client_status", ""), "pending")) {
			settling++;
			followup(r, now + recheck);
		} else if (started + stagger > now) {
			settling++;
			if (!wake || started + stagger < wake)
				wake = started + stagger;
		}
	}
	followup(r, wake);
	qsort(deferred, ndeferred, sizeof(*deferred), cmp_node);
	for (; k < ndeferred && settling + (int64_t)k < u->max_parallel; k++) {
		system_stop(r, deferred[k], "job version changed; replaced on its node", now);
		system_place(r, g, jstr(deferred[k], "node_id", ""), deferred[k]);
	}
	r->ignore += (int)(ndeferred - k);
	if (k < ndeferred && !r->followup_at)
		followup(r, now + recheck);
}

/* Group g of the job: its allocations node by node, then the nodes that
 * have none. */
static void system_group(const struct job *model, const json_t *job, int g, struct sched_view *v,
			 int64_t now, reconcile_changed_fn changed, void *ctx,
			 struct reconcile_result *r)
{
	const struct job_group *grp = &model->groups[g];
	bool sysbatch = !strcmp(model->type, "sysbatch");
	bool rolls = !sysbatch && grp->update && grp->update->max_parallel > 0;
	json_t *mine = by_node(v->job_allocs, grp->name, r, now), *current = json_object(), *al;
	json_t **deferred = NULL;
	size_t ndeferred = 0, adeferred = 0;
	const char *node;

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
			bool ch = changed(ctx, al);
			if (!ch) {
				keep_live(r, job, al, now);
				if (vn->schedulable)
					json_object_set(current, node, al);
			} else if (!vn->schedulable) {
				/* an ineligible or draining node keeps what it runs, of
				 * its version: replaced once the node is eligible again */
				r->ignore++;
			} else if (rolls) {
				ALLOC_GROW(deferred, ndeferred + 1, adeferred);
				deferred[ndeferred++] = al;
			} else {
				system_stop(r, al, "job version changed; replaced on its node", now);
				system_place(r, g, node, al);
			}
			continue;
		}
		/* ended: complete, failed or lost */
		if (sysbatch && !changed(ctx, al)) {
			r->ignore++; /* ran once on this node */
			continue;
		}
		if (!node_takes(vn, job, sysbatch)) {
			r->ignore++; /* until its node is back (or never: not present at submission) */
			continue;
		}
		system_stop(r, al, sysbatch ? "job version changed; runs again on its node"
					    : "ended; placed again on its node", now);
		system_place(r, g, node, al);
	}
	if (rolls && ndeferred)
		system_roll(r, grp->update, g, current, deferred, ndeferred, now);
	for (size_t i = 0; grp->count >= 1 && i < v->nnodes; i++)
		if (!json_object_get(mine, v->nodes[i].id) && node_takes(&v->nodes[i], job, sysbatch))
			system_place(r, g, v->nodes[i].id, NULL);
	free(deferred);
	json_decref(current);
	json_decref(mine);
}

int reconcile_system_decide(const json_t *job, const struct job *model, struct sched_view *v,
			    int64_t now, reconcile_changed_fn changed, void *ctx,
			    struct reconcile_result *out)
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
		system_group(model, job, (int)g, v, now, changed, ctx, &r);
	*out = r;
	return 0;
}

struct changed_ctx {
	struct store *s;
	const json_t *job;
};

static bool stored_changed(void *ctx, const json_t *alloc)
{
	struct changed_ctx *c = ctx;
	return reconcile_group_changed(c->s, c->job, alloc);
}

int reconcile_system(struct store *s, const json_t *job, const struct job *model,
		     struct sched_view *v, int64_t now, struct reconcile_result *out)
{
	struct changed_ctx c = { s, job };
	return reconcile_system_decide(job, model, v, now, stored_changed, &c, out);
}
