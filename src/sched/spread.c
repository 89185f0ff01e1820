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

static int cmp_count(const void *a, const void *b)
{
	return strcmp(((const struct sched_spread_count *)a)->value,
		      ((const struct sched_spread_count *)b)->value);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The allocations value holds, from counts sorted by value (a value given
 * twice counts once per entry). */
static int used_of(const struct sched_spread_count *sorted, size_t n, const char *value)
{
	size_t lo = 0, hi = n;
	int sum = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(sorted[mid].value, value) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && !strcmp(sorted[lo].value, value); lo++)
		sum += sorted[lo].count;
	return sum;
}

static const struct sched_spread_target *target_of(const struct sched_spread *sp,
						   const char *value)
{
	for (size_t t = 0; t < sp->ntargets; t++)
		if (!strcmp(sp->targets[t].value, value))
			return &sp->targets[t];
	return NULL;
}

/* How many distinct values among the candidates' (vals, NULL skipped) and
 * those holding allocations. */
static size_t distinct_values(const char *const *vals, size_t n,
			      const struct sched_spread_count *cnt, size_t ncnt)
{
	const char **all = xcalloc(n + ncnt + 1, sizeof(*all));
	size_t m = 0, d = 0;
	for (size_t i = 0; i < n; i++)
		if (vals[i])
			all[m++] = vals[i];
	for (size_t i = 0; i < ncnt; i++)
		if (cnt[i].count > 0)
			all[m++] = cnt[i].value;
	qsort(all, m, sizeof(*all), cmp_str);
	for (size_t i = 0; i < m; i++)
		d += i == 0 || strcmp(all[i], all[i - 1]) != 0;
	free(all);
	return d;
}

/* The boost of one spread for each candidate, into boost[] (in -inf..1;
 * NAN for a node without the attribute). */
static void spread_boosts(const struct sched_snapshot *s, const struct sched_spread *sp,
			  double desired_total, const struct spread_cand *c, size_t n,
			  double *boost)
{
	struct sched_spread_count *cnt = xcalloc(sp->ncounts + 1, sizeof(*cnt));
	const char **vals = xcalloc(n + 1, sizeof(*vals));
	double even = 0, rest = desired_total;
	int rest_used = 0;
	char buf[8];

	memcpy(cnt, sp->counts, sp->ncounts * sizeof(*cnt));
	qsort(cnt, sp->ncounts, sizeof(*cnt), cmp_count);
	for (size_t i = 0; i < n; i++)
		vals[i] = resolve_target(s, &s->node[c[i].node], NULL, NULL, sp->attribute, buf,
					 sizeof(buf));
	if (!sp->ntargets) {
		size_t d = distinct_values(vals, n, cnt, sp->ncounts);
		even = d ? desired_total / (double)d : 0;
	} else {
		/* the values without a target share what the targets leave */
		for (size_t t = 0; t < sp->ntargets; t++)
			rest -= desired_total * sp->targets[t].percent / 100.0;
		for (size_t k = 0; k < sp->ncounts; k++)
			if (!target_of(sp, cnt[k].value))
				rest_used += cnt[k].count;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sched_spread_target *t;
		double want, used;
		if (!vals[i]) {
			boost[i] = NAN;
			continue;
		}
		if (!sp->ntargets) {
			want = even;
			used = used_of(cnt, sp->ncounts, vals[i]) + 1;
		} else if ((t = target_of(sp, vals[i]))) {
			want = desired_total * t->percent / 100.0;
			used = used_of(cnt, sp->ncounts, vals[i]) + 1;
		} else {
			want = rest;
			used = rest_used + 1;
		}
		/* a share under 1e-9 is none (rounding of the percents); far
		 * over its share a value counts as -1, so that the part stays
		 * within 100 points, the scale of affinities */
		boost[i] = want > 1e-9 ? fmax((want - used) / want, -1.0) : -1.0;
	}
	free(vals);
	free(cnt);
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
	char buf[8];
	for (size_t k = 0; k < t->n; k++) {
		struct sched_spread *sp = &t->sp[k];
		const char *v = resolve_target(s, &s->node[node], NULL, NULL, sp->attribute, buf,
					       sizeof(buf));
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
