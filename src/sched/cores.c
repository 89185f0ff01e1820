/* cores: exclusive CPU cores and their NUMA alignment (resources { cores
 * numa { affinity devices } }).
 *
 * A node offers reservable cores (id, NUMA node); a request asks, per task,
 * a count of cores with an affinity: require puts all of a task's cores on
 * one NUMA node, and, when the task's GPUs are the request's device ask
 * (with_device), on the NUMA node of those GPUs; prefer does the same when
 * it can (a bonus to the score) and takes any free cores otherwise; none
 * takes the lowest free ids, those on the GPUs' NUMA node first.
 *
 * The GPUs and the cores of a require (or prefer) ask bound to them are
 * chosen together: when the policy's choice of GPUs leaves no NUMA node
 * with the cores, every NUMA node of the node's eligible GPUs is tried
 * with only its GPUs offered to the policy, and the best score wins (the
 * lowest NUMA id on a tie). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "sched/sched-int.h"

#define MAX_NUMA 64 /* NUMA nodes told apart per node; more count as unknown */

int cores_validate(const struct sched_request *req, struct ask *a, struct herd_err *err)
{
	int64_t total = 0;

	if (req->ncores > SCHED_MAX_CORE_ASKS || (req->ncores && !req->cores))
		return herd_errf(err, -EINVAL, "request: more than %d tasks reserve cores",
				 SCHED_MAX_CORE_ASKS);
	for (size_t i = 0; i < req->ncores; i++) {
		const struct sched_core_request *c = &req->cores[i];
		if (c->count < 1 || c->numa < SCHED_NUMA_NONE || c->numa > SCHED_NUMA_REQUIRE)
			return herd_errf(err, -EINVAL, "request: a core ask of %d cores (at least 1)",
					 c->count);
		total += c->count;
	}
	if (total > SCHED_MAX_CORES_PER_ASK)
		return herd_errf(err, -EINVAL, "request: %lld cores asked, at most %d per allocation",
				 (long long)total, SCHED_MAX_CORES_PER_ASK);
	a->ncores = (int)total;
	return 0;
}

int64_t cores_cpu(const struct sched_node *n, const struct ask *a)
{
	return a->cpu + (int64_t)a->ncores * n->cpu_per_core;
}

bool cores_bind_devices(const struct sched_request *req)
{
	if (!req->device)
		return false;
	for (size_t i = 0; i < req->ncores; i++)
		if (req->cores[i].with_device && req->cores[i].numa != SCHED_NUMA_NONE)
			return true;
	return false;
}

/* Free cores per NUMA node (unknown ones left out), in NUMA id order. */
struct numa_tally {
	int n;
	int numa[MAX_NUMA];
	int free[MAX_NUMA];
};

static void tally(const struct sched_node *n, const uint8_t *used, struct numa_tally *t)
{
	t->n = 0;
	for (int i = 0; i < n->ncores; i++) {
		int m = n->core[i].numa, k;
		if (m < 0)
			continue;
		for (k = 0; k < t->n && t->numa[k] != m; k++)
			;
		if (k == t->n) {
			if (t->n == MAX_NUMA)
				continue;
			/* keep NUMA id order */
			for (k = t->n; k > 0 && t->numa[k - 1] > m; k--) {
				t->numa[k] = t->numa[k - 1];
				t->free[k] = t->free[k - 1];
			}
			t->numa[k] = m;
			t->free[k] = 0;
			t->n++;
		}
		t->free[k] += !used[i];
	}
}

static int free_on(const struct sched_node *n, const uint8_t *used, int numa)
{
	int f = 0;
	for (int i = 0; i < n->ncores; i++)
		f += !used[i] && n->core[i].numa == numa;
	return f;
}

/* Takes count free cores, lowest ids first: those on NUMA node numa only
 * (only), or those there first and then any (numa -1: any). */
static void take(const struct sched_node *n, uint8_t *used, int numa, bool only, int count,
		 struct core_pick *out)
{
	for (int pass = numa >= 0 ? 0 : 1; pass < (only ? 1 : 2) && count > 0; pass++)
		for (int i = 0; i < n->ncores && count > 0; i++) {
			if (used[i] || (pass == 0 && n->core[i].numa != numa))
				continue;
			used[i] = 1;
			out->idx[out->n++] = (uint16_t)i;
			count--;
		}
}

/* Returns 0, or -1 - k when ask k did not fit. */
static int choose(const struct sched_node *n, const struct sched_request *req, int dev_numa,
		  bool strict, struct core_pick *out)
{
	uint8_t used[SCHED_MAX_CORES_PER_NODE];
	int nfree = n->ncores_free;

	out->n = 0;
	out->aligned = true;
	if (n->ncores)
		memcpy(used, n->core_taken, (size_t)n->ncores);
	for (size_t k = 0; k < req->ncores; k++) {
		const struct sched_core_request *c = &req->cores[k];
		bool bound = c->with_device && req->device;
		enum sched_numa mode = c->numa == SCHED_NUMA_PREFER && strict ? SCHED_NUMA_REQUIRE
									   : c->numa;
		if (c->count > nfree)
			return -1 - (int)k;
		if (mode == SCHED_NUMA_REQUIRE) {
			int m = -1;
			if (bound) {
				if (dev_numa >= 0 && free_on(n, used, dev_numa) >= c->count)
					m = dev_numa;
			} else {
				/* the best fit: the NUMA node with the fewest
				 * free cores that holds them, keeping larger
				 * blocks whole for later asks */
				struct numa_tally t;
				tally(n, used, &t);
				for (int i = 0; i < t.n; i++)
					if (t.free[i] >= c->count && (m < 0 || t.free[i] < free_on(n, used, m)))
						m = t.numa[i];
			}
			if (m < 0)
				return -1 - (int)k;
			take(n, used, m, true, c->count, out);
		} else {
			if (c->numa == SCHED_NUMA_PREFER)
				out->aligned = false;
			take(n, used, bound ? dev_numa : -1, false, c->count, out);
		}
		nfree -= c->count;
	}
	return 0;
}

int cores_choose(const struct sched_node *n, const struct sched_request *req, int dev_numa,
		 bool strict, struct core_pick *out)
{
	return choose(n, req, dev_numa, strict, out) < 0 ? -1 : 0;
}

/* The NUMA node of the devices at positions pick of v: -1 when they are on
 * several, or one is unknown, or none is asked. */
static int picks_numa(const struct sched_snapshot *s, const struct nodeview *v,
		      const struct ask *a, const int *pick)
{
	const struct sched_node *n = &s->node[v->node];
	int m = -1;
	for (int j = 0; j < a->num; j++) {
		int d = n->dev[v->idx[pick[j]]].numa;
		if (d < 0 || (j && d != m))
			return -1;
		m = d;
	}
	return m;
}

static bool any_prefer(const struct sched_request *req)
{
	for (size_t i = 0; i < req->ncores; i++)
		if (req->cores[i].numa == SCHED_NUMA_PREFER)
			return true;
	return false;
}

/* Tries each NUMA node of v's devices with only its devices offered to the
 * policy; the best score whose cores fit wins.  Returns the score or
 * -INFINITY. */
static double by_numa(struct sched_snapshot *s, const struct sched_request *req,
		      const struct nodeview *v, const struct ask *a, enum sched_policy pol,
		      const struct sched_workload *wl, struct rng *r, int *pick,
		      struct core_pick *cp)
{
	const struct sched_node *n = &s->node[v->node];
	struct nodeview v2;
	struct core_pick c2;
	double best = -INFINITY;
	int done[MAX_NUMA], ndone = 0;

	for (;;) {
		int m = -1, pos[SCHED_MAX_DEVS_PER_NODE], p2[SCHED_MAX_DEVS_PER_ASK] = { 0 };
		double sc;
		/* the next NUMA node in id order */
		for (int j = 0; j < v->n; j++) {
			int d = n->dev[v->idx[j]].numa;
			bool seen = false;
			for (int k = 0; k < ndone; k++)
				seen = seen || done[k] == d;
			if (d >= 0 && !seen && (m < 0 || d < m))
				m = d;
		}
		if (m < 0 || ndone == MAX_NUMA)
			break;
		done[ndone++] = m;
		v2 = *v;
		v2.n = 0;
		for (int j = 0; j < v->n; j++) {
			if (n->dev[v->idx[j]].numa != m)
				continue;
			pos[v2.n] = j;
			v2.idx[v2.n] = v->idx[j];
			v2.left[v2.n] = v->left[j];
			v2.mleft[v2.n] = v->mleft[j];
			v2.free[v2.n++] = v->free[j];
		}
		if (v2.n < a->num || free_on(n, n->core_taken, m) < 1)
			continue;
		sc = policy_score(pol, s, &v2, a, wl, r, p2);
		if (!isfinite(sc) || sc <= -1e299 || sc <= best)
			continue;
		if (cores_choose(n, req, m, true, &c2))
			continue;
		best = sc;
		for (int j = 0; j < a->num; j++)
			pick[j] = pos[p2[j]];
		*cp = c2;
	}
	return best;
}

double cores_place(struct sched_snapshot *s, const struct sched_request *req,
		   const struct nodeview *v, const struct ask *a, enum sched_policy pol,
		   const struct sched_workload *wl, struct rng *r, int *pick, struct core_pick *cp,
		   struct sched_explain *why)
{
	const struct sched_node *n = &s->node[v->node];
	double bonus = any_prefer(req) ? SCHED_NUMA_BONUS : 0, sc;
	int dn;

	if (n->ncores_free < a->ncores) {
		if (why)
			cores_explain(s, n, req, v, a, why);
		return -INFINITY;
	}
	sc = policy_score(pol, s, v, a, wl, r, pick);
	if (!isfinite(sc) || sc <= -1e299)
		return -INFINITY;
	dn = a->num ? picks_numa(s, v, a, pick) : -1;
	if (!cores_choose(n, req, dn, true, cp))
		return sc + bonus;
	if (a->num && cores_bind_devices(req)) {
		int p2[SCHED_MAX_DEVS_PER_ASK];
		double b = by_numa(s, req, v, a, pol, wl, r, p2, cp);
		if (isfinite(b)) {
			memcpy(pick, p2, sizeof(int) * (size_t)a->num);
			return b + bonus;
		}
	}
	if (bonus > 0 && !cores_choose(n, req, dn, false, cp))
		return sc;
	if (why)
		cores_explain(s, n, req, v, a, why);
	return -INFINITY;
}

void cores_explain(const struct sched_snapshot *s, const struct sched_node *n,
		   const struct sched_request *req, const struct nodeview *v, const struct ask *a,
		   struct sched_explain *why)
{
	struct core_pick cp;
	struct numa_tally t;
	struct strbuf sb = STRBUF_INIT;
	const struct sched_core_request *c;
	bool bound;
	int k, gpus[MAX_NUMA] = { 0 };

	/* a node that offers none is not a candidate, as one without the
	 * asked device: counted, no miss (a system job passes over it) */
	if (!n->ncores) {
		why->filtered_no_cores++;
		return;
	}
	why->filtered_cores++;
	if (n->ncores_free < a->ncores) {
		add_miss(why, a->ncores - n->ncores_free, "%s: %d free core%s, %d asked", n->name,
			 n->ncores_free, n->ncores_free == 1 ? "" : "s", a->ncores);
		return;
	}
	/* the ask that does not fit on one NUMA node, with its GPUs anywhere */
	k = -1 - choose(n, req, -1, true, &cp);
	if (k < 0 || (size_t)k >= req->ncores)
		k = 0;
	c = &req->cores[k];
	bound = c->with_device && req->device && a->num > 0;
	tally(n, n->core_taken, &t);
	for (int j = 0; bound && j < v->n; j++)
		for (int i = 0; i < t.n; i++)
			gpus[i] += t.numa[i] == n->dev[v->idx[j]].numa;
	if (!t.n) {
		add_miss(why, 1e4, "%s: the NUMA node of its cores is not known, %d asked on one",
			 n->name, c->count);
		return;
	}
	if (bound) {
		int known = 0;
		for (int i = 0; i < t.n; i++)
			known += gpus[i];
		if (!known) {
			add_miss(why, 1e4, "%s: the NUMA node of its GPUs is not known, %d cores asked "
				 "on the GPUs' NUMA node", n->name, c->count);
			return;
		}
	}
	strbuf_addf(&sb, "%s:", n->name);
	for (int i = 0; i < t.n; i++) {
		if (i)
			strbuf_addf(&sb, ", %d on NUMA %d", t.free[i], t.numa[i]);
		else
			strbuf_addf(&sb, " %d free core%s on NUMA %d", t.free[i],
				    t.free[i] == 1 ? "" : "s", t.numa[i]);
		if (bound)
			strbuf_addf(&sb, " (%d GPU%s)", gpus[i], gpus[i] == 1 ? "" : "s");
	}
	if (bound)
		strbuf_addf(&sb, ", %d cores and %d GPU%s asked on one NUMA node", c->count, a->num,
			    a->num == 1 ? "" : "s");
	else
		strbuf_addf(&sb, ", %d asked on one NUMA node", c->count);
	add_miss(why, 1e3 + c->count, "%s", sb.buf);
	strbuf_release(&sb);
	(void)s;
}
