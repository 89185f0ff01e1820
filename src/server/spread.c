/* spread: the spread blocks of a job and of a group as the engine's
 * spreads (sched.h, struct sched_spread), and the counts they need: how
 * many of the group's allocations each value of the attribute holds.
 *
 * As in Nomad, a job's spreads apply to each group on its own: the desired
 * count is the group's count, and only the group's allocations count.  The
 * counts come from the job's allocations that run or are about to (those
 * this plan stops left out), on whatever node they are, and grow with each
 * placement of the plan, so that the instances of one evaluation spread
 * among themselves too. */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

struct spread_counts {
	struct sched_spread_count *v;
	size_t n, cap;
};

/* What a group_ask holds for its spreads. */
struct group_spreads {
	size_t n;
	struct sched_spread sp[SCHED_MAX_SPREADS];
	struct sched_spread_target *tg[SCHED_MAX_SPREADS];
	struct spread_counts cnt[SCHED_MAX_SPREADS];
};

static void add_spreads(struct group_spreads *gs, const struct job_spread *v, size_t n)
{
	for (size_t i = 0; i < n && gs->n < SCHED_MAX_SPREADS; i++) {
		struct sched_spread *sp = &gs->sp[gs->n];
		struct sched_spread_target *tg = xcalloc(v[i].ntargets + 1, sizeof(*tg));
		for (size_t t = 0; t < v[i].ntargets; t++)
			tg[t] = (struct sched_spread_target){ v[i].targets[t].value,
							      (int)v[i].targets[t].percent };
		sp->attribute = v[i].attribute;
		sp->weight = (int)v[i].weight;
		sp->targets = tg;
		sp->ntargets = v[i].ntargets;
		gs->tg[gs->n++] = tg;
	}
}

void group_ask_spreads_init(struct group_ask *a)
{
	struct group_spreads *gs;
	if (!a->job->nspreads && !a->group->nspreads)
		return;
	gs = a->spreads = xcalloc(1, sizeof(*gs));
	/* the group's first, then the job's (Nomad's order) */
	add_spreads(gs, a->group->spreads, a->group->nspreads);
	add_spreads(gs, a->job->spreads, a->job->nspreads);
	a->req.spreads = gs->sp;
	a->req.nspreads = gs->n;
	a->req.spread_desired = a->group->count > INT32_MAX ? INT32_MAX : (int)a->group->count;
}

static void counts_clear(struct spread_counts *c)
{
	for (size_t i = 0; i < c->n; i++)
		free((char *)c->v[i].value);
	c->n = 0;
}

void group_ask_spreads_release(struct group_ask *a)
{
	struct group_spreads *gs = a->spreads;
	if (!gs)
		return;
	for (size_t k = 0; k < gs->n; k++) {
		free(gs->tg[k]);
		counts_clear(&gs->cnt[k]);
		free(gs->cnt[k].v);
	}
	free(gs);
	a->spreads = NULL;
}

/* Counts one more allocation on value (taken). */
static void count_value(struct group_spreads *gs, size_t k, char *value)
{
	struct spread_counts *c = &gs->cnt[k];
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].value, value)) {
			c->v[i].count++;
			free(value);
			return;
		}
	ALLOC_GROW(c->v, c->n + 1, c->cap);
	c->v[c->n++] = (struct sched_spread_count){ value, 1 };
	gs->sp[k].counts = c->v;
	gs->sp[k].ncounts = c->n;
}

static void count_node(struct group_spreads *gs, const json_t *node)
{
	for (size_t k = 0; k < gs->n; k++) {
		char *value = node_property(node, gs->sp[k].attribute);
		if (value)
			count_value(gs, k, value);
	}
}

void spread_counts_init(struct group_ask *a, struct sched_view *v, const json_t *live,
			const json_t *changed)
{
	struct group_spreads *gs = a->spreads;
	json_t *stopping, *al;
	size_t i;

	if (!gs)
		return;
	for (size_t k = 0; k < gs->n; k++) {
		counts_clear(&gs->cnt[k]);
		gs->sp[k].counts = gs->cnt[k].v;
		gs->sp[k].ncounts = 0;
	}
	/* what the plan stops holds no share any more */
	stopping = json_object();
	json_array_foreach(changed, i, al)
		if (strcmp(jstr(al, "desired_status", "run"), "run"))
			json_object_set_new(stopping, jstr(al, "id", ""), json_true());
	json_array_foreach(live, i, al) {
		const struct view_node *vn;
		if (strcmp(jstr(al, "task_group", ""), a->group->name) ||
		    strcmp(jstr(al, "desired_status", "run"), "run") ||
		    json_object_get(stopping, jstr(al, "id", "")))
			continue;
		vn = sched_view_node(v, jstr(al, "node_id", ""));
		if (vn)
			count_node(gs, vn->node);
	}
	json_decref(stopping);
}

void spread_counts_add(struct group_ask *a, const struct view_node *vn)
{
	if (a->spreads)
		count_node(a->spreads, vn->node);
}
