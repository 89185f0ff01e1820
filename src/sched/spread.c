/* spread: Nomad's spread block as a score component.
 *
 * For each spread, a feasible node's value of the attribute gets a boost
 * (desired - used) / desired, where used counts the allocations the value
 * holds plus the one being placed, and desired is the value's share of the
 * request's desired count: its target's percent; the rest of 100 percent,
 * shared by every value without a target (their allocations counted
 * together); or, without targets, an even share over the values of the
 * feasible nodes and of the allocations already placed.  A share of 0 and
 * a node without the attribute get -1, and no boost goes below -1 (it is
 * below 1 by construction).  The boosts are weighted by
 * weight / (sum of |weight|) over the request's spreads and scaled like
 * affinities (100 points per unit), so that one spread moves a node's score
 * by about as much as one affinity.  A negative weight turns the boost
 * around (gather), except for a node without the attribute, which always
 * loses.  See docs/scheduling.md, "Spread". */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"

int spreads_validate(const struct sched_request *req, struct herd_err *err)
{
	if (req->nspreads > SCHED_MAX_SPREADS)
		return herd_errf(err, -EINVAL, "request: %zu spreads, at most %d", req->nspreads,
				 SCHED_MAX_SPREADS);
	if (req->spread_desired < 0)
		return herd_errf(err, -EINVAL, "request: negative spread_desired");
	for (size_t i = 0; i < req->nspreads; i++) {
		const struct sched_spread *sp = &req->spreads[i];
		int sum = 0;
		if (!sp->attribute || !*sp->attribute)
			return herd_errf(err, -EINVAL, "spread: attribute is required");
		if (sp->weight == 0 || sp->weight < -100 || sp->weight > 100)
			return herd_errf(err, -EINVAL, "spread %s: weight %d out of -100..100 or 0",
					 sp->attribute, sp->weight);
		for (size_t t = 0; t < sp->ntargets; t++) {
			int pct = sp->targets[t].percent;
			if (!sp->targets[t].value || pct < 0 || pct > 100)
				return herd_errf(err, -EINVAL, "spread %s: a target without value "
						 "or with a percent out of 0..100", sp->attribute);
			sum += pct;
		}
		if (sum > 100)
			return herd_errf(err, -EINVAL, "spread %s: targets sum to %d percent",
					 sp->attribute, sum);
		for (size_t c = 0; c < sp->ncounts; c++)
			if (!sp->counts[c].value || sp->counts[c].count < 0)
				return herd_errf(err, -EINVAL, "spread %s: a count without value or "
						 "negative", sp->attribute);
	}
	return 0;
}

/* The distinct values of one spread during one placement: the
 * candidates' and the counts', each once, with what it holds.  An open
 * addressing table, so that a placement costs one hash per candidate
 * whatever the number of values (4 datacenters or 10,000 node ids). */
struct values {
	size_t mask;       /* slots - 1, slots a power of two */
	int *slot;         /* value index + 1; 0 empty */
	const char **v;    /* by value index */
	int *used;         /* allocations the value holds */
	bool *seen;        /* a candidate has it, or it holds allocations */
	size_t n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static void values_init(struct values *t, size_t most)
{
	size_t slots = 16;
	while (slots < 2 * most)
		slots *= 2;
	t->mask = slots - 1;
	t->slot = xcalloc(slots, sizeof(*t->slot));
	t->v = xcalloc(most + 1, sizeof(*t->v));
	t->used = xcalloc(most + 1, sizeof(*t->used));
	t->seen = xcalloc(most + 1, sizeof(*t->seen));
	t->n = 0;
}

static void values_release(struct values *t)
{
	free(t->slot);
	free(t->v);
	free(t->used);
	free(t->seen);
}

/* The index of value (added when new; the table has room for it). */
static int values_id(struct values *t, const char *value)
{
	size_t at = (size_t)hash_str(value) & t->mask;
	for (;; at = (at + 1) & t->mask) {
		int k = t->slot[at] - 1;
		if (k < 0)
			break;
		if (!strcmp(t->v[k], value))
			return k;
	}
	t->v[t->n] = value;
	t->slot[at] = (int)++t->n;
	return (int)t->n - 1;
}

static const struct sched_spread_target *target_of(const struct sched_spread *sp,
						   const char *value)
{
	for (size_t t = 0; t < sp->ntargets; t++)
		if (!strcmp(sp->targets[t].value, value))
			return &sp->targets[t];
	return NULL;
}

/* A node's value of attribute: the node fields directly (one compare of
 * the attribute per spread, not per node), anything else through
 * resolve_target. */
static const char *node_value(const struct sched_snapshot *s, const struct sched_node *n,
			      const char *attribute, int field)
{
	char buf[8];
	switch (field) {
	case 1: return n->datacenter;
	case 2: return n->node_class;
	case 3: return n->name;
	case 4: return n->id;
	default: return resolve_target(s, n, NULL, NULL, attribute, buf, sizeof(buf));
	}
}

static int field_of(const char *attribute)
{
	static const char *const fields[] = { "${node.datacenter}", "${node.class}",
					      "${node.unique.name}", "${node.unique.id}" };
	for (int i = 0; i < 4; i++)
		if (!strcmp(attribute, fields[i]))
			return i + 1;
	return 0;
}

/* The boost of one spread for each candidate, into boost[] (in -1..1;
 * NAN for a node without the attribute). */
static void spread_boosts(const struct sched_snapshot *s, const struct sched_spread *sp,
			  double desired_total, const struct spread_cand *c, size_t n,
			  double *boost)
{
	struct values t;
	int *id = xcalloc(n + 1, sizeof(*id));
	double *want, rest = desired_total;
	int rest_used = 0;
	size_t distinct = 0;
	int field = field_of(sp->attribute);

	values_init(&t, n + sp->ncounts);
	for (size_t i = 0; i < n; i++) {
		const char *v = node_value(s, &s->node[c[i].node], sp->attribute, field);
		id[i] = v ? values_id(&t, v) : -1;
		if (v)
			t.seen[id[i]] = true;
	}
	for (size_t k = 0; k < sp->ncounts; k++) {
		int v = values_id(&t, sp->counts[k].value);
		t.used[v] += sp->counts[k].count;
		t.seen[v] = t.seen[v] || sp->counts[k].count > 0;
	}
	/* what each value should hold */
	want = xcalloc(t.n + 1, sizeof(*want));
	for (size_t v = 0; v < t.n; v++)
		distinct += t.seen[v];
	for (size_t k = 0; k < sp->ntargets; k++)
		rest -= desired_total * sp->targets[k].percent / 100.0;
	for (size_t v = 0; v < t.n; v++) {
		const struct sched_spread_target *tg = sp->ntargets ? target_of(sp, t.v[v]) : NULL;
		if (!sp->ntargets) {
			want[v] = distinct ? desired_total / (double)distinct : 0;
		} else if (tg) {
			want[v] = desired_total * tg->percent / 100.0;
		} else {
			/* the values without a target share what the targets
			 * leave, their allocations counted together */
			want[v] = rest;
			rest_used += t.used[v];
			t.used[v] = -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		double w, used;
		if (id[i] < 0) {
			boost[i] = NAN;
			continue;
		}
		w = want[id[i]];
		used = (t.used[id[i]] < 0 ? rest_used : t.used[id[i]]) + 1;
		/* a share under 1e-9 is none (rounding of the percents); far
		 * over its share a value counts as -1, so that the part stays
		 * within 100 points, the scale of affinities */
		boost[i] = w > 1e-9 ? fmax((w - used) / w, -1.0) : -1.0;
	}
	free(want);
	free(id);
	values_release(&t);
}

void spread_score(const struct sched_snapshot *s, const struct sched_request *req,
		  struct spread_cand *c, size_t n, double *part)
{
	double total = 0, desired = req->spread_desired > 0 ? req->spread_desired : req->count;
	double *boost = xcalloc(n + 1, sizeof(*boost));

	for (size_t i = 0; i < n; i++)
		part[i] = 0;
	for (size_t k = 0; k < req->nspreads; k++)
		total += fabs((double)req->spreads[k].weight);
	for (size_t k = 0; desired > 0 && total > 0 && k < req->nspreads; k++) {
		const struct sched_spread *sp = &req->spreads[k];
		double w = sp->weight / total;
		spread_boosts(s, sp, desired, c, n, boost);
		for (size_t i = 0; i < n; i++)
			part[i] += 100.0 * (isnan(boost[i]) ? -fabs(w) : w * boost[i]);
	}
	for (size_t i = 0; i < n; i++)
		c[i].score += part[i];
	free(boost);
}

/* ---- sched_plan's running counts ------------------------------------- */

struct spread_tally {
	size_t n;
	struct sched_spread sp[SCHED_MAX_SPREADS];
	struct sched_spread_count *cnt[SCHED_MAX_SPREADS];
	size_t cap[SCHED_MAX_SPREADS];
};

struct spread_tally *spread_tally_new(const struct sched_request *req, struct sched_request *req2)
{
	struct spread_tally *t = xcalloc(1, sizeof(*t));
	*req2 = *req;
	t->n = req->nspreads < SCHED_MAX_SPREADS ? req->nspreads : SCHED_MAX_SPREADS;
	for (size_t k = 0; k < t->n; k++) {
		t->sp[k] = req->spreads[k];
		t->cap[k] = req->spreads[k].ncounts + 8;
		t->cnt[k] = xcalloc(t->cap[k], sizeof(**t->cnt));
		if (req->spreads[k].ncounts) /* counts may be NULL then */
			memcpy(t->cnt[k], req->spreads[k].counts,
			       req->spreads[k].ncounts * sizeof(**t->cnt));
		t->sp[k].counts = t->cnt[k];
	}
	req2->spreads = t->sp;
	req2->nspreads = t->n;
	/* the desired count stays the whole plan's */
	if (req2->spread_desired <= 0)
		req2->spread_desired = req->count;
	return t;
}

void spread_tally_add(struct spread_tally *t, const struct sched_snapshot *s, int node)
{
	for (size_t k = 0; k < t->n; k++) {
		struct sched_spread *sp = &t->sp[k];
		const char *v = node_value(s, &s->node[node], sp->attribute, field_of(sp->attribute));
		size_t i;
		if (!v)
			continue;
		for (i = 0; i < sp->ncounts; i++)
			if (!strcmp(t->cnt[k][i].value, v))
				break;
		if (i == sp->ncounts) {
			if (i == t->cap[k]) {
				t->cap[k] *= 2;
				t->cnt[k] = xreallocarray(t->cnt[k], t->cap[k], sizeof(**t->cnt));
				sp->counts = t->cnt[k];
			}
			/* borrowed from the snapshot, which outlives the plan */
			t->cnt[k][i] = (struct sched_spread_count){ v, 0 };
			sp->ncounts++;
		}
		t->cnt[k][i].count++;
	}
}

void spread_tally_free(struct spread_tally *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->n; k++)
		free(t->cnt[k]);
	free(t);
}
