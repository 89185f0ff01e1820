/* place: filter nodes, score the feasible ones with the policy, break ties
 * at random (seeded), and explain failures. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"

#define MAX_PROFILES_FAST 256

/* Does device request name ("gpu", "nvidia/gpu", "nvidia/gpu/T4") match? */
static bool name_matches(const struct dev_profile *p, const char *name)
{
	const char *a, *b;
	if (!name || !*name)
		return true;
	a = strchr(name, '/');
	if (!a)
		return !strcmp(name, p->type);
	if ((size_t)(a - name) != strlen(p->vendor) || memcmp(name, p->vendor, (size_t)(a - name)))
		return false;
	a++;
	b = strchr(a, '/');
	if (!b)
		return !strcmp(a, p->type);
	if ((size_t)(b - a) != strlen(p->type) || memcmp(a, p->type, (size_t)(b - a)))
		return false;
	return !strcmp(b + 1, p->model);
}

static bool mentions_ids(const struct sched_constraint *c)
{
	return (c->ltarget && strstr(c->ltarget, "device.ids")) ||
	       (c->rtarget && strstr(c->rtarget, "device.ids"));
}

static void format_mib(char *buf, size_t size, int64_t mib)
{
	if (mib % 1024 == 0)
		snprintf(buf, size, "%lld GiB", (long long)(mib / 1024));
	else if (mib >= 1024)
		snprintf(buf, size, "%.1f GiB", mib / 1024.0);
	else
		snprintf(buf, size, "%lld MiB", (long long)mib);
}

/* Keeps the SCHED_EXPLAIN_MISSES smallest gaps. */
void add_miss(struct sched_explain *why, double gap, const char *fmt, ...)
{
	int at = why->nmisses;
	va_list ap;

	if (at == SCHED_EXPLAIN_MISSES) {
		int worst = 0;
		for (int i = 1; i < at; i++)
			if (why->miss_gap[i] > why->miss_gap[worst])
				worst = i;
		if (why->miss_gap[worst] <= gap)
			return;
		at = worst;
	} else {
		why->nmisses++;
	}
	why->miss_gap[at] = gap;
	va_start(ap, fmt);
	vsnprintf(why->misses[at], sizeof(why->misses[at]), fmt, ap);
	va_end(ap);
}

static void explain_device(struct sched_explain *why, const struct sched_node *n,
			   const struct sched_dev *d, const struct ask *a)
{
	char f[32], w[32];
	if (d->unhealthy) {
		add_miss(why, 1e9, "%s on %s: %s", d->id, n->id,
			 d->reserved ? "reserved for a waiting job" : "unhealthy");
	} else if (!a->frac) {
		add_miss(why, 1e6 + d->tenants, "%s on %s: in use by %d allocation%s, a whole device asked",
			 d->id, n->id, d->tenants, d->tenants == 1 ? "" : "s");
	} else if (d->sharing == SCHED_EXCLUSIVE) {
		add_miss(why, 1e7, "%s on %s: sharing mode exclusive, a fraction asked", d->id, n->id);
	} else if (!sched_dev_has_room(d)) {
		add_miss(why, 1e5, "%s on %s: %d of %d tenants, no room for another", d->id, n->id,
			 d->tenants, d->max_tenants);
	} else if (SCHED_MILLI - d->compute_taken < a->milli) {
		add_miss(why, a->milli - (SCHED_MILLI - d->compute_taken),
			 "%s on %s: %d thousandths of compute free, %d asked", d->id, n->id,
			 SCHED_MILLI - d->compute_taken, a->milli);
	} else {
		format_mib(f, sizeof(f), d->mem_total - d->mem_taken);
		format_mib(w, sizeof(w), a->dmem);
		add_miss(why, (double)(a->dmem - (d->mem_total - d->mem_taken)),
			 "%s on %s: %s free, %s asked", d->id, n->id, f, w);
	}
}

static int make_ask(const struct sched_request *req, struct ask *a, struct herd_err *err)
{
	const struct sched_device_request *dr = req->device;

	memset(a, 0, sizeof(*a));
	if (req->cpu_milli < 0 || req->memory_mib < 0 || req->disk_mib < 0)
		return herd_errf(err, -EINVAL, "request: negative cpu, memory or disk");
	a->cpu = req->cpu_milli;
	a->mem = req->memory_mib;
	a->disk = req->disk_mib;
	if (req->ncores) {
		int rc = cores_validate(req, a, err);
		if (rc)
			return rc;
	}
	if (!dr)
		return 0;
	if (dr->count < 1 || dr->count > SCHED_MAX_DEVS_PER_ASK)
		return herd_errf(err, -EINVAL, "device %s: count %d out of range 1..%d",
				 dr->name ? dr->name : "", dr->count, SCHED_MAX_DEVS_PER_ASK);
	if (dr->compute < 0 || dr->compute > SCHED_MILLI || dr->memory_mib < 0)
		return herd_errf(err, -EINVAL, "device %s: compute must be 0..1000 thousandths",
				 dr->name ? dr->name : "");
	a->num = dr->count;
	a->frac = (dr->compute > 0 && dr->compute < SCHED_MILLI) ||
		  (dr->memory_mib > 0 && dr->compute < SCHED_MILLI);
	if (a->frac && dr->count != 1)
		return herd_errf(err, -EINVAL,
				 "device %s: a fraction of a device is asked for one device, not %d",
				 dr->name ? dr->name : "", dr->count);
	a->milli = a->frac ? dr->compute : SCHED_MILLI;
	a->dmem = a->frac ? dr->memory_mib : 0;
	return 0;
}

static int validate(const struct sched_request *req, struct herd_err *err)
{
	int rc;
	if (req->nvolumes && (rc = volumes_validate(req, err)))
		return rc;
	if (req->nspreads && (rc = spreads_validate(req, err)))
		return rc;
	for (size_t i = 0; i < req->nconstraints; i++)
		if ((rc = constraint_validate(&req->constraints[i], err)))
			return rc;
	for (size_t i = 0; i < req->naffinities; i++)
		if ((rc = constraint_validate(&req->affinities[i].c, err)))
			return rc;
	if (req->device) {
		for (size_t i = 0; i < req->device->nconstraints; i++)
			if ((rc = constraint_validate(&req->device->constraints[i], err)))
				return rc;
		for (size_t i = 0; i < req->device->naffinities; i++)
			if ((rc = constraint_validate(&req->device->affinities[i].c, err)))
				return rc;
	}
	return 0;
}

/* Profile verdicts for this request: 1 eligible, 0 not, -1 decided per
 * device (constraints on ${device.ids}).  *aff gets the profile's affinity
 * score in -1..1. */
static int profile_ok(const struct sched_snapshot *s, int pi, const struct sched_device_request *dr,
		      double *aff, struct herd_err *err)
{
	const struct dev_profile *p = &s->prof[pi];
	int per_device = 0, rc;
	double sum = 0, total = 0;

	*aff = 0;
	if (!name_matches(p, dr->name))
		return 0;
	for (size_t i = 0; i < dr->nconstraints; i++) {
		if (mentions_ids(&dr->constraints[i])) {
			per_device = 1;
			continue;
		}
		rc = constraint_check(s, &s->node[0], p, NULL, &dr->constraints[i], err);
		if (rc <= 0)
			return rc;
	}
	for (size_t i = 0; i < dr->naffinities; i++) {
		int wgt = dr->affinities[i].weight;
		total += fabs((double)wgt);
		rc = constraint_check(s, &s->node[0], p, NULL, &dr->affinities[i].c, err);
		if (rc < 0)
			return rc;
		sum += rc ? wgt : 0;
	}
	*aff = total > 0 ? sum / total : 0;
	return per_device ? -1 : 1;
}

static int device_ok(const struct sched_snapshot *s, const struct sched_node *n,
		     const struct sched_dev *d, const struct sched_device_request *dr,
		     struct herd_err *err)
{
	for (size_t i = 0; i < dr->nconstraints; i++) {
		int rc;
		if (!mentions_ids(&dr->constraints[i]))
			continue;
		rc = constraint_check(s, n, &s->prof[d->profile], d, &dr->constraints[i], err);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

static double node_affinity(const struct sched_snapshot *s, const struct sched_node *n,
			    const struct sched_request *req, struct herd_err *err, int *rc)
{
	double sum = 0, total = 0;
	for (size_t i = 0; i < req->naffinities; i++) {
		int wgt = req->affinities[i].weight, ok;
		total += fabs((double)wgt);
		ok = constraint_check(s, n, NULL, NULL, &req->affinities[i].c, err);
		if (ok < 0) {
			*rc = ok;
			return 0;
		}
		sum += ok ? wgt : 0;
	}
	return total > 0 ? sum / total : 0;
}

/* policy_score through the node's memo.  Valid because a score depends
 * only on the node's state (its version) and the request's shape (numbers,
 * policy, workload, eligible device profiles), when the request names no
 * per-device constraint or affinity (the caller checks) and the policy
 * draws no random numbers. */
static double memo_score(struct sched_snapshot *s, struct sched_node *n, const struct nodeview *v,
			 const struct ask *a, const struct shape *k, const struct sched_workload *wl,
			 struct rng *r, int *pick)
{
	struct score_memo *m;
	for (int i = 0; i < SCHED_SCORE_MEMO; i++) {
		m = &n->memo[i];
		if (m->used && m->version == n->version && !memcmp(&m->k, k, sizeof(*k))) {
			memcpy(pick, m->pick, sizeof(m->pick));
			return m->score;
		}
	}
	m = &n->memo[n->memo_next];
	n->memo_next = (n->memo_next + 1) % SCHED_SCORE_MEMO;
	m->score = policy_score((enum sched_policy)k->policy, s, v, a, wl, r, pick);
	memcpy(m->pick, pick, sizeof(m->pick));
	m->used = true;
	m->version = n->version;
	m->k = *k;
	return m->score;
}

/* What one request needs while nodes are looked at. */
struct scan {
	const struct sched_request *req;
	const struct sched_device_request *dr;
	struct ask a;
	const signed char *pok;  /* per profile: 1 eligible, 0 not, -1 per device */
	const double *paff;
};

/* Fills v with node ni's devices that the request may take.  Returns 1
 * when the node can host it, 0 when not (counted in why), <0 on a bad
 * constraint.  Node constraints are the caller's.  *aff_dev gets the
 * device affinity of the last eligible device. */
static int node_view(struct sched_snapshot *s, const struct scan *q, size_t ni,
		     struct nodeview *v, double *aff_dev, struct sched_explain *why,
		     struct herd_err *err)
{
	const struct sched_node *n = &s->node[ni];
	const struct ask *a = &q->a;
	int named = 0, fit = 0;

	v->node = (int)ni;
	v->cpu_left = n->cpu_total - n->cpu_used;
	v->mem_left = n->mem_total - n->mem_used;
	/* cores first: a task's cores are most of its cpu, and "2 free
	 * cores, 4 asked" says more than "cpu exhausted" */
	if (a->ncores && n->ncores_free < a->ncores) {
		if (why)
			cores_explain(s, n, q->req, v, a, why);
		return 0;
	}
	if (v->cpu_left < (a->ncores ? cores_cpu(n, a) : a->cpu)) {
		if (why)
			why->filtered_cpu++;
		return 0;
	}
	if (v->mem_left < a->mem) {
		if (why)
			why->filtered_memory++;
		return 0;
	}
	if (a->disk && n->disk_total && n->disk_total - n->disk_used < a->disk) {
		if (why)
			why->filtered_disk++;
		return 0;
	}
	v->n = 0;
	v->left_total = n->gpu_free_total;
	v->gpu_total = 0;
	v->ngpu = 0;
	v->model = n->ndev ? s->prof[n->dev[0].profile].model : NULL;
	for (int d = 0; d < n->ndev; d++) {
		const struct sched_dev *dv = &n->dev[d];
		bool ok;
		if (!dv->unhealthy) {
			v->gpu_total += SCHED_MILLI;
			v->ngpu++;
		}
		if (!q->dr || !q->pok[dv->profile])
			continue;
		if (q->pok[dv->profile] < 0) {
			int k = device_ok(s, n, dv, q->dr, err);
			if (k < 0)
				return k;
			if (!k)
				continue;
		}
		named++;
		if (a->frac)
			ok = !dv->unhealthy && dv->sharing != SCHED_EXCLUSIVE && sched_dev_has_room(dv) &&
			     SCHED_MILLI - dv->compute_taken >= a->milli &&
			     (!a->dmem || dv->mem_total - dv->mem_taken >= a->dmem);
		else
			ok = !dv->unhealthy && !dv->compute_taken && !dv->mem_taken && !dv->tenants;
		if (!ok) {
			if (why)
				explain_device(why, n, dv, a);
			continue;
		}
		*aff_dev = q->paff[dv->profile];
		v->idx[v->n] = d;
		v->left[v->n] = SCHED_MILLI - dv->compute_taken;
		v->mleft[v->n] = dv->mem_total - dv->mem_taken;
		v->free[v->n] = !dv->compute_taken && !dv->mem_taken && !dv->tenants;
		v->n++;
		fit++;
	}
	if (q->dr && fit < a->num) {
		if (why) {
			if (!named)
				why->filtered_device_constraint++;
			else
				why->filtered_devices++;
			if (a->num > 1 && named >= a->num)
				add_miss(why, 1e5 * (a->num - fit), "%s: %d free device%s, %d asked",
					 n->id, fit, fit == 1 ? "" : "s", a->num);
		}
		return 0;
	}
	return 1;
}

/* Does node a beat node b on a score tie?  The lowest rank, then the
 * lowest index (ranks may repeat). */
static bool ranks_before(const uint32_t *rank, size_t a, size_t b)
{
	return rank[a] != rank[b] ? rank[a] < rank[b] : a < b;
}

/* Does node ni with score sc take the lead from best_node (best, ties)?
 * Equal scores go by the tie ranks, herd's node order (the first node
 * stays, so that the same nodes fill up), or a draw (reservoir sampling:
 * each tied node wins with equal odds). */
static bool takes_lead(const struct sched_options *opt, struct rng *r, double sc, size_t ni,
		       int best_node, double *best, uint64_t *ties)
{
	if (sc > *best) {
		*best = sc;
		*ties = 1;
		return true;
	}
	if (sc < *best)
		return false;
	if (opt->tie_rank && opt->policy != SCHED_RANDOM)
		return ranks_before(opt->tie_rank, ni, (size_t)best_node);
	if (opt->policy == SCHED_HERD)
		return false;
	return rng_below(r, ++*ties) == 0;
}

/* What the grouped scan's score callback needs. */
struct group_ctx {
	struct sched_snapshot *s;
	const struct scan *q;
	const struct sched_options *opt;
	const struct sched_workload *wl;
	struct rng *r;
	struct nodeview *v;
};

static double group_score(void *arg, int node, int *pick)
{
	struct group_ctx *c = arg;
	double aff = 0, sc;
	if (node_view(c->s, c->q, (size_t)node, c->v, &aff, NULL, NULL) <= 0)
		return -INFINITY;
	sc = policy_score(c->opt->policy, c->s, c->v, &c->q->a, c->wl, c->r, pick);
	return !isfinite(sc) || sc <= -1e299 ? -INFINITY : sc;
}

/* The grouped scan: one score per group of identical nodes, the winning
 * group's best-ranked member.  Only for requests whose score depends on the
 * node's state alone (see can_group); gives what the plain scan gives.
 * Returns 1 with *best_node and pick filled, 0 when no node fits. */
static int grouped_scan(struct sched_snapshot *s, const struct scan *q, const struct shape *k,
			const struct sched_options *opt, const struct sched_workload *wl,
			struct rng *r, struct nodeview *v, int *best_node, double *best_score,
			int *best_pick)
{
	struct group_ctx c = { s, q, opt, wl, r, v };
	struct group_index *g = group_index_get(s, opt->tie_rank);
	*best_node = group_best(g, k, group_score, &c, best_score, best_pick);
	return *best_node >= 0;
}

/* May this request be placed by groups of identical nodes?  Its score must
 * depend on the node's state alone (no node constraint or affinity, device
 * constraints decided per profile, no device affinity), the policy must
 * draw no random numbers, and ties must go by a fixed order (ranks, or
 * herd's node order) rather than a draw. */
static bool can_group(const struct sched_request *req, const struct sched_options *opt,
		      const signed char *pok, size_t nprof)
{
	const struct sched_device_request *dr = req->device;
	/* groups of identical nodes do not look at host volumes */
	if (opt->scan_all || opt->policy == SCHED_RANDOM || req->nconstraints || req->naffinities ||
	    req->nvolumes || req->nspreads || req->prefer_node || req->disk_mib || req->ncores)
		return false;
	if (!opt->tie_rank && opt->policy != SCHED_HERD)
		return false;
	if (dr) {
		if (dr->naffinities)
			return false;
		for (size_t i = 0; i < nprof; i++)
			if (pok[i] < 0)
				return false;
	}
	return true;
}

int sched_place(struct sched_snapshot *s, const struct sched_request *req,
		const struct sched_options *opt, struct sched_placement *out,
		struct sched_explain *why, struct herd_err *err)
{
	struct scan q = { .req = req, .dr = req->device };
	struct rng r;
	int rc, best_node = -1, best_pick[SCHED_MAX_DEVS_PER_ASK] = { 0 };
	const struct sched_device_request *dr = req->device;
	signed char pok_fast[MAX_PROFILES_FAST];
	double paff_fast[MAX_PROFILES_FAST];
	signed char *pok = pok_fast;
	double *paff = paff_fast, best = -INFINITY;
	uint64_t ties = 0;
	bool memo_ok;
	/* with spreads: the feasible nodes, scored once all are known */
	struct spread_cand *cand = NULL;
	size_t ncand = 0;
	double best_spread = 0;
	struct shape k;
	struct sched_workload *own_wl = NULL;
	const struct sched_workload *wl = opt->workload;
	struct nodeview *v = xmalloc(sizeof(*v));
	/* with cores: the node's choice, the best so far, and (with spreads)
	 * each candidate's */
	struct core_pick *cp = NULL, *best_cp = NULL, *cand_cp = NULL;

	if ((rc = make_ask(req, &q.a, err)) || (rc = validate(req, err)))
		goto out;
	if (why) {
		memset(why, 0, sizeof(*why));
		why->nodes = (int)s->n;
	}
	if (s->nprof > MAX_PROFILES_FAST) {
		pok = xmalloc(s->nprof);
		paff = xcalloc(s->nprof, sizeof(double));
	}
	memset(pok, 0, s->nprof);
	if (dr && s->n) {
		for (size_t i = 0; i < s->nprof; i++) {
			int ok = profile_ok(s, (int)i, dr, &paff[i], err);
			if (ok < 0 && ok != -1) {
				rc = ok;
				goto out;
			}
			pok[i] = (signed char)ok;
		}
	}
	q.pok = pok;
	q.paff = paff;
	if (!wl && (opt->policy == SCHED_FGD || opt->policy == SCHED_HERD)) {
		struct sched_task_class self = { q.a.cpu, q.a.mem, q.a.milli, q.a.num, NULL, 1.0 };
		wl = own_wl = sched_workload_new(&self, 1);
	}
	rng_seed(&r, opt->seed);
	/* the request's shape: what a cached score is looked up by */
	memset(&k, 0, sizeof(k));
	k.policy = (int)opt->policy;
	k.num = q.a.num;
	k.milli = q.a.milli;
	k.wl = wl ? wl->id : 0;
	k.cpu = q.a.cpu;
	k.mem = q.a.mem;
	k.dmem = q.a.dmem;
	k.devs = 0xcbf29ce484222325ULL;
	for (size_t i = 0; dr && i < s->nprof; i++)
		k.devs = (k.devs ^ (unsigned char)pok[i]) * 0x100000001b3ULL; /* FNV-1a */
	k.devs ^= dr ? 1 : 0;

	if (s->n && can_group(req, opt, pok, s->nprof)) {
		if (grouped_scan(s, &q, &k, opt, wl, &r, v, &best_node, &best, best_pick))
			goto found;
		/* nothing fits: the plain scan below says why */
		if (!why) {
			rc = -ENOSPC;
			goto out;
		}
	}
	/* random draws numbers while scoring */
	memo_ok = opt->policy != SCHED_RANDOM && (!dr || !dr->naffinities) && !req->ncores;
	for (size_t i = 0; dr && i < s->nprof; i++)
		memo_ok = memo_ok && pok[i] >= 0;
	if (req->nspreads)
		cand = xcalloc(s->n + 1, sizeof(*cand));
	if (req->ncores) {
		cp = xcalloc(2, sizeof(*cp));
		best_cp = cp + 1;
		if (cand)
			cand_cp = xcalloc(s->n + 1, sizeof(*cand_cp));
	}
	for (size_t ni = 0; ni < s->n; ni++) {
		struct sched_node *n = &s->node[ni];
		int pick[SCHED_MAX_DEVS_PER_ASK] = { 0 };
		double sc, aff_dev = 0;
		bool filtered = false;

		if (req->nvolumes && !volumes_fit(n, req, why))
			continue;
		for (size_t c = 0; c < req->nconstraints && !filtered; c++) {
			int ok = constraint_check(s, n, NULL, NULL, &req->constraints[c], err);
			if (ok < 0) {
				rc = ok;
				goto out;
			}
			if (!ok) {
				filtered = true;
				if (why && c < 16)
					why->filtered_constraint[c]++;
			}
		}
		if (filtered)
			continue;
		rc = node_view(s, &q, ni, v, &aff_dev, why, err);
		if (rc < 0)
			goto out;
		if (!rc)
			continue;
		if (cp)
			sc = cores_place(s, req, v, &q.a, opt->policy, wl, &r, pick, cp, why);
		else if (memo_ok)
			sc = memo_score(s, n, v, &q.a, &k, wl, &r, pick);
		else
			sc = policy_score(opt->policy, s, v, &q.a, wl, &r, pick);
		if (!isfinite(sc) || sc <= -1e299)
			continue;
		if (req->naffinities || (dr && dr->naffinities)) {
			int arc = 0;
			sc += 100.0 * (node_affinity(s, n, req, err, &arc) + aff_dev);
			if (arc) {
				rc = arc;
				goto out;
			}
		}
		if (req->prefer_node && !strcmp(n->id, req->prefer_node))
			sc += SCHED_PREFER_BONUS;
		if (cand) {
			if (cand_cp)
				cand_cp[ncand] = *cp;
			cand[ncand].node = (int)ni;
			cand[ncand].score = sc;
			memcpy(cand[ncand++].pick, pick, sizeof(pick));
			continue;
		}
		/* most nodes score below the best: no call for them */
		if (sc < best || !takes_lead(opt, &r, sc, ni, best_node, &best, &ties))
			continue;
		best_node = (int)ni;
		memcpy(best_pick, pick, sizeof(pick));
		if (cp)
			*best_cp = *cp;
	}
	if (cand && ncand) {
		/* the even shares depend on every feasible node's value */
		double *part = xcalloc(ncand, sizeof(*part));
		spread_score(s, req, cand, ncand, part);
		for (size_t i = 0; i < ncand; i++) {
			if (!takes_lead(opt, &r, cand[i].score, (size_t)cand[i].node, best_node, &best,
					&ties))
				continue;
			best_node = cand[i].node;
			best_spread = part[i];
			if (cand_cp)
				*best_cp = cand_cp[i];
			memcpy(best_pick, cand[i].pick, sizeof(best_pick));
		}
		free(part);
	}
	if (best_node < 0) {
		rc = -ENOSPC;
		goto out;
	}
found:
	{
		struct sched_node *n = &s->node[best_node];
		int idx[SCHED_MAX_DEVS_PER_NODE], m = 0;
		/* map positions back to device indexes (same filter as above) */
		for (int d = 0; d < n->ndev && dr; d++) {
			const struct sched_dev *dv = &n->dev[d];
			bool ok;
			if (!pok[dv->profile] ||
			    (pok[dv->profile] < 0 && device_ok(s, n, dv, dr, NULL) <= 0))
				continue;
			if (q.a.frac)
				ok = !dv->unhealthy && dv->sharing != SCHED_EXCLUSIVE &&
				     sched_dev_has_room(dv) &&
				     SCHED_MILLI - dv->compute_taken >= q.a.milli &&
				     (!q.a.dmem || dv->mem_total - dv->mem_taken >= q.a.dmem);
			else
				ok = !dv->unhealthy && !dv->compute_taken && !dv->mem_taken && !dv->tenants;
			if (ok)
				idx[m++] = d;
		}
		memset(out, 0, sizeof(*out));
		out->node = best_node;
		out->cpu_milli = q.a.ncores ? cores_cpu(n, &q.a) : q.a.cpu;
		if (best_cp) {
			out->ncores = best_cp->n;
			memcpy(out->core, best_cp->idx, sizeof(out->core[0]) * (size_t)best_cp->n);
		}
		out->memory_mib = q.a.mem;
		out->disk_mib = q.a.disk;
		out->ndev = q.a.num;
		out->score = best;
		if (req->prefer_node && !strcmp(n->id, req->prefer_node))
			out->score -= SCHED_PREFER_BONUS;
		out->spread = best_spread;
		for (int j = 0; j < q.a.num; j++) {
			const struct sched_dev *dv = &n->dev[idx[best_pick[j]]];
			out->dev[j].dev = idx[best_pick[j]];
			out->dev[j].whole = !q.a.frac;
			out->dev[j].compute = q.a.frac ? q.a.milli : SCHED_MILLI;
			out->dev[j].memory_mib = q.a.frac ? q.a.dmem : dv->mem_total;
		}
	}
	rc = 0;
out:
	if (pok != pok_fast) {
		free(pok);
		free(paff);
	}
	sched_workload_free(own_wl);
	free(cand);
	free(cand_cp);
	free(cp);
	free(v);
	return rc;
}

int sched_plan(struct sched_snapshot *s, const struct sched_request *req,
	       const struct sched_options *opt, struct sched_placement *out,
	       struct sched_explain *why, struct herd_err *err)
{
	struct sched_options o = *opt;
	struct sched_request counted;
	/* spreads count what this plan places as it goes */
	struct spread_tally *tally = req->nspreads ? spread_tally_new(req, &counted) : NULL;
	int rc = req->count;

	if (tally)
		req = &counted;
	for (int i = 0; i < req->count; i++) {
		o.seed = opt->seed + (uint64_t)i * 0x9e3779b97f4a7c15ULL;
		rc = sched_place(s, req, &o, &out[i], why, err);
		if (rc)
			break;
		if (sched_apply(s, &out[i])) {
			rc = herd_errf(err, -EINVAL, "placement did not apply");
			break;
		}
		if (tally)
			spread_tally_add(tally, s, out[i].node);
		rc = req->count;
	}
	spread_tally_free(tally);
	return rc;
}

void sched_explain_format(const struct sched_explain *why, const struct sched_request *req,
			  struct strbuf *sb)
{
	strbuf_addf(sb, "no node fits (%d node%s evaluated)\n", why->nodes, why->nodes == 1 ? "" : "s");
	for (size_t i = 0; i < req->nconstraints && i < 16; i++)
		if (why->filtered_constraint[i])
			strbuf_addf(sb, "  constraint %s %s %s filtered %d node%s\n",
				    req->constraints[i].ltarget ? req->constraints[i].ltarget : "",
				    sched_op_name(req->constraints[i].op),
				    req->constraints[i].rtarget ? req->constraints[i].rtarget : "",
				    why->filtered_constraint[i], why->filtered_constraint[i] == 1 ? "" : "s");
	if (req->nvolumes)
		volumes_explain_format(why, req, sb);
	if (why->filtered_cpu)
		strbuf_addf(sb, "  cpu exhausted on %d node%s\n", why->filtered_cpu,
			    why->filtered_cpu == 1 ? "" : "s");
	if (why->filtered_memory)
		strbuf_addf(sb, "  memory exhausted on %d node%s\n", why->filtered_memory,
			    why->filtered_memory == 1 ? "" : "s");
	if (why->filtered_disk)
		strbuf_addf(sb, "  disk exhausted on %d node%s\n", why->filtered_disk,
			    why->filtered_disk == 1 ? "" : "s");
	if (why->filtered_device_constraint)
		strbuf_addf(sb, "  no matching device on %d node%s\n", why->filtered_device_constraint,
			    why->filtered_device_constraint == 1 ? "" : "s");
	if (why->filtered_devices)
		strbuf_addf(sb, "  devices exhausted on %d node%s\n", why->filtered_devices,
			    why->filtered_devices == 1 ? "" : "s");
	if (why->filtered_no_cores)
		strbuf_addf(sb, "  no reservable cores on %d node%s (agents that report no "
			    "resources.cores)\n", why->filtered_no_cores,
			    why->filtered_no_cores == 1 ? "" : "s");
	if (why->filtered_cores)
		strbuf_addf(sb, "  not enough free cores%s on %d node%s\n",
			    req->ncores && req->cores[0].numa == SCHED_NUMA_REQUIRE ? " on one NUMA node" : "",
			    why->filtered_cores, why->filtered_cores == 1 ? "" : "s");
	for (int i = 0; i < why->nmisses; i++)
		strbuf_addf(sb, "  closest: %s\n", why->misses[i]);
}
