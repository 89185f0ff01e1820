/* sim: the trace replay of the FGD paper's evaluation, through sched_place. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"
#include "sched/sim.h"

struct cls_count {
	const struct trace_pod *p;
	size_t count;
};

static int cmp_pod_class(const struct trace_pod *a, const struct trace_pod *b)
{
	if (a->cpu_milli != b->cpu_milli)
		return a->cpu_milli < b->cpu_milli ? -1 : 1;
	if (a->gpu_milli != b->gpu_milli)
		return a->gpu_milli < b->gpu_milli ? -1 : 1;
	if (a->num_gpu != b->num_gpu)
		return a->num_gpu < b->num_gpu ? -1 : 1;
	return strcmp(a->gpu_spec ? a->gpu_spec : "", b->gpu_spec ? b->gpu_spec : "");
}

static int cmp_pod_ptr(const void *x, const void *y)
{
	return cmp_pod_class(*(const struct trace_pod *const *)x, *(const struct trace_pod *const *)y);
}

static int cmp_count(const void *x, const void *y)
{
	const struct cls_count *a = x, *b = y;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return cmp_pod_class(a->p, b->p); /* deterministic among equals */
}

struct sched_workload *sim_workload(const struct trace *t)
{
	const struct trace_pod **v = xcalloc(t->npods + 1, sizeof(*v));
	struct cls_count *c = xcalloc(t->npods + 1, sizeof(*c));
	struct sched_task_class *tc;
	struct sched_workload *w;
	size_t n = 0, k = 0, covered = 0;

	for (size_t i = 0; i < t->npods; i++)
		v[i] = &t->pods[i];
	qsort(v, t->npods, sizeof(*v), cmp_pod_ptr);
	for (size_t i = 0; i < t->npods; i++) {
		if (n && !cmp_pod_class(c[n - 1].p, v[i]))
			c[n - 1].count++;
		else
			c[n++] = (struct cls_count){ v[i], 1 };
	}
	qsort(c, n, sizeof(*c), cmp_count);
	tc = xcalloc(n + 1, sizeof(*tc));
	while (k < n && covered * 100 < t->npods * 95) {
		tc[k] = (struct sched_task_class){ c[k].p->cpu_milli, 0, c[k].p->gpu_milli,
						   c[k].p->num_gpu, c[k].p->gpu_spec,
						   (double)c[k].count };
		covered += c[k].count;
		k++;
	}
	w = sched_workload_new(tc, k);
	free(tc);
	free(c);
	free(v);
	return w;
}

int64_t sim_capacity(const struct trace *t)
{
	int64_t cap = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		cap += (int64_t)t->nodes[i].gpus * SCHED_MILLI;
	return cap;
}

static int cmp_name(const void *x, const void *y)
{
	const struct trace_pod *const *a = x, *const *b = y;
	return strcmp((*a)->name, (*b)->name);
}

static struct sched_snapshot *build(const struct trace *t, struct herd_err *err)
{
	struct sched_snapshot *s = sched_snapshot_new();
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct trace_node *tn = &t->nodes[i];
		struct sched_node_spec ns = { .id = tn->name, .cpu_milli = tn->cpu_milli,
					      .memory_mib = tn->memory_mib };
		int node = sched_snapshot_add_node(s, &ns, err);
		if (node < 0)
			goto fail;
		for (int g = 0; g < tn->gpus; g++) {
			char id[32];
			struct sched_device_spec ds = { .id = id, .vendor = "nvidia", .type = "gpu",
							.model = tn->model, .numa_node = -1,
							.nvlink_group = -1, .sharing = SCHED_TIMESLICE };
			snprintf(id, sizeof(id), "GPU-%d", g);
			if (sched_snapshot_add_device(s, node, &ds, err) < 0)
				goto fail;
		}
	}
	return s;
fail:
	sched_snapshot_free(s);
	return NULL;
}

static int cmp_node_name(const void *x, const void *y, void *arg)
{
	const struct trace_node *n = arg;
	return strcmp(n[*(const uint32_t *)x].name, n[*(const uint32_t *)y].name);
}

/* rank[node] = position of the node in a random permutation drawn for the
 * nodes sorted by name, so that the ranks depend on the seed and the node
 * names only, not on the file's row order. */
static void node_ranks(const struct trace *t, struct rng *r, uint32_t *rank)
{
	uint32_t *byname = xcalloc(t->nnodes + 1, sizeof(*byname));
	uint32_t *perm = xcalloc(t->nnodes + 1, sizeof(*perm));
	for (size_t i = 0; i < t->nnodes; i++)
		byname[i] = perm[i] = (uint32_t)i;
	qsort_r(byname, t->nnodes, sizeof(*byname), cmp_node_name, t->nodes);
	for (size_t i = t->nnodes; i > 1; i--) {
		size_t j = (size_t)rng_below(r, i);
		uint32_t x = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = x;
	}
	for (size_t i = 0; i < t->nnodes; i++)
		rank[byname[i]] = perm[i];
	free(perm);
	free(byname);
}

/* gpu_spec "A|B" as the device constraint ${device.model} set_contains_any
 * "A,B": the trace's model filter through the engine's constraint path. */
static char *spec_as_set(const char *spec)
{
	char *s = xstrdup(spec);
	for (char *p = s; *p; p++)
		if (*p == '|')
			*p = ',';
	return s;
}

/* A lower bound on cap - allocated (milli) after tasks of the histogram h
 * (h[m]: one-GPU tasks of m milli arrived, 0 < m < 1000) have arrived and
 * arrived_left = cap - arrived milli.  For a threshold t < 500, a task of
 * m >= 1000 - t milli shares its GPU with nothing larger than t, so the
 * placed ones leave G - S idle at least (G: their gaps 1000 - m, S: all
 * arrived milli of tasks of at most t).  Dropping x milli of gaps instead
 * loses at least x (1000 - t) / t milli of demand, and unallocated =
 * arrived_left + dropped demand; the bound is the least of the larger of
 * the two over x, maximised over t. */
static double unalloc_bound(const size_t *h, double arrived_left)
{
	double best = arrived_left > 0 ? arrived_left : 0, g = 0, sm = 0;
	for (int t = 1; t < 500; t++) {
		double r = (1000.0 - t) / t, d, x;
		g += (double)t * (double)h[1000 - t];
		sm += (double)t * (double)h[t];
		d = g - sm;
		x = (d - arrived_left) / (1 + r);
		x = x < 0 ? 0 : x > g ? g : x;
		d = fmax(d - x, arrived_left + r * x);
		if (d > best)
			best = d;
	}
	return best;
}

int sim_run(const struct trace *t, const struct sched_workload *w, enum sched_policy policy,
	    uint64_t seed, double tune, struct sim_result *out, struct herd_err *err)
{
	int64_t cap = sim_capacity(t), total = 0, arrived = 0, allocated = 0;
	const struct trace_pod **order;
	size_t n = t->npods, alloc;
	struct sched_snapshot *s;
	struct rng r;
	double sum[SIM_MAX_BUCKET + 1] = { 0 }, fsum[SIM_MAX_BUCKET + 1] = { 0 };
	size_t cnt[SIM_MAX_BUCKET + 1] = { 0 };
	double frag_total = 0, bsum = 0;
	size_t hist[SCHED_MILLI] = { 0 };
	uint32_t *rank;
	struct sched_options opt = { .policy = policy, .workload = w };

	if (cap <= 0 || !t->npods)
		return herd_errf(err, -EINVAL, "trace: no GPUs or no tasks");
	if (!(tune >= 0.1 && tune <= 2.0))
		return herd_errf(err, -EINVAL, "tune: expected 0.1..2, got %g", tune);
	if (!(s = build(t, err)))
		return err ? err->code : -EINVAL;
	memset(out, 0, sizeof(*out));

	/* 1. sort by name, shuffle (Fisher-Yates) */
	alloc = n * 2 + 16;
	order = xcalloc(alloc, sizeof(*order));
	for (size_t i = 0; i < n; i++)
		order[i] = &t->pods[i];
	qsort(order, n, sizeof(*order), cmp_name);
	rng_seed(&r, seed);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)rng_below(&r, i + 1);
		const struct trace_pod *x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	/* 2. inflate to tune x capacity (or trim down to it) */
	for (size_t i = 0; i < n; i++)
		total += (int64_t)order[i]->num_gpu * order[i]->gpu_milli;
	if (total == 0 || (double)total * SIM_MAX_INFLATE < tune * (double)cap) {
		/* without GPU asks the loop below would never end; with tiny
		 * ones it would build a list of millions */
		free(order);
		sched_snapshot_free(s);
		return herd_errf(err, -EINVAL, "trace: its tasks ask for %lld GPU milli, too little to "
				 "inflate to %g x %lld", (long long)total, tune, (long long)cap);
	}
	while ((double)total < tune * (double)cap) {
		const struct trace_pod *p = &t->pods[rng_below(&r, t->npods)];
		ALLOC_GROW(order, n + 1, alloc);
		order[n++] = p;
		total += (int64_t)p->num_gpu * p->gpu_milli;
	}
	while ((double)total > tune * (double)cap && n > 1) {
		size_t j = (size_t)rng_below(&r, n);
		total -= (int64_t)order[j]->num_gpu * order[j]->gpu_milli;
		memmove(&order[j], &order[j + 1], (n - j - 1) * sizeof(*order));
		n--;
	}
	/* node ranks for tie-breaking: a seeded permutation of the nodes in
	 * name order (see sched_options.tie_rank) */
	rank = xcalloc(t->nnodes + 1, sizeof(*rank));
	node_ranks(t, &r, rank);
	opt.tie_rank = getenv("RANDTIE") ? NULL : rank;
	frag_total = sched_frag(s, w, -1);

	/* 3..5. offer one at a time, record after each */
	for (size_t i = 0; i < n; i++) {
		const struct trace_pod *p = order[i];
		struct sched_device_request dr = { .name = "nvidia/gpu", .count = p->num_gpu,
						   .compute = p->gpu_milli };
		struct sched_constraint spec_c;
		char *set = NULL;
		struct sched_request req = { .cpu_milli = p->cpu_milli, .memory_mib = p->memory_mib,
					     .count = 1, .device = p->num_gpu ? &dr : NULL };
		struct sched_placement pl;
		int64_t gpu = (int64_t)p->num_gpu * p->gpu_milli;
		long b;

		if (p->gpu_spec && p->num_gpu) {
			set = spec_as_set(p->gpu_spec);
			spec_c = (struct sched_constraint){ "${device.model}", SCHED_OP_SET_CONTAINS_ANY, set };
			dr.constraints = &spec_c;
			dr.nconstraints = 1;
		}
		opt.seed = seed * 0x100000001b3ULL + i;
		if (!sched_place(s, &req, &opt, &pl, NULL, NULL)) {
			double before = frag_node(s, w, pl.node);
			if (!sched_apply(s, &pl)) {
				allocated += gpu;
				out->placed++;
				frag_total += frag_node(s, w, pl.node) - before;
			}
		}
		free(set);
		arrived += gpu;
		if (p->num_gpu == 1 && p->gpu_milli > 0 && p->gpu_milli < SCHED_MILLI)
			hist[p->gpu_milli]++;
		b = lround((double)arrived * 100.0 / (double)cap);
		if (b >= 0 && b <= SIM_MAX_BUCKET) {
			double idle = (double)(cap - allocated);
			sum[b] += (double)allocated * 100.0 / (double)cap;
			fsum[b] += idle > 0 ? frag_total * 100.0 / idle : 0;
			cnt[b]++;
			if (b == 100)
				bsum += unalloc_bound(hist, (double)(cap - arrived));
		}
	}
	out->placements = n;
	for (int b = 0; b <= SIM_MAX_BUCKET; b++)
		out->curve[b] = cnt[b] ? sum[b] / (double)cnt[b] : NAN;
	out->alloc_100 = out->curve[100];
	out->bound_100 = cnt[100] ? bsum / (double)cnt[100] : NAN;
	out->alloc_130 = out->curve[(int)lround(tune * 100) <= SIM_MAX_BUCKET ? (int)lround(tune * 100) : SIM_MAX_BUCKET];
	out->frag_50 = cnt[50] ? fsum[50] / (double)cnt[50] : NAN;
	out->frag_70 = cnt[70] ? fsum[70] / (double)cnt[70] : NAN;
	out->frag_90 = cnt[90] ? fsum[90] / (double)cnt[90] : NAN;
	free(order);
	free(rank);
	sched_snapshot_free(s);
	return 0;
}
