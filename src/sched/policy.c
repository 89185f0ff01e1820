/* policy: node scores and the choice of devices inside a node.
 *
 * The six policies of the FGD paper follow the published simulator
 * (hkust-adsl/kubernetes-scheduler-simulator): integer scores 0..100,
 * normalised by the largest node (128 cores, 8 GPUs), ties broken at random
 * by the caller.  binpack and spread follow Nomad's intent; herd is ours
 * (see herd_score below and docs/scheduling.md). */
#include <math.h>
#include <string.h>

#include "sched/sched-int.h"

#define NORM_CPU 128000.0
#define NORM_GPU 8000.0

static const char *const names[SCHED_NPOLICIES] = {
	[SCHED_HERD] = "herd", [SCHED_BINPACK] = "binpack", [SCHED_SPREAD] = "spread",
	[SCHED_RANDOM] = "random", [SCHED_DOTPROD] = "dotprod",
	[SCHED_CLUSTERING] = "clustering", [SCHED_PACKING] = "packing",
	[SCHED_BESTFIT] = "bestfit", [SCHED_FGD] = "fgd",
};

int sched_policy_parse(const char *s, enum sched_policy *out)
{
	for (int i = 0; i < SCHED_NPOLICIES; i++)
		if (!strcmp(s, names[i])) {
			*out = (enum sched_policy)i;
			return 0;
		}
	return -22; /* -EINVAL */
}

const char *sched_policy_name(enum sched_policy p)
{
	return (unsigned)p < SCHED_NPOLICIES ? names[p] : "?";
}

int pick_bestfit_frac(const struct nodeview *v, const struct ask *a)
{
	int best = -1;
	for (int i = 0; i < v->n; i++)
		if (v->left[i] >= a->milli && v->mleft[i] >= a->dmem &&
		    (best < 0 || v->left[i] < v->left[best]))
			best = i;
	return best;
}

static int pick_random_frac(const struct nodeview *v, const struct ask *a, struct rng *r)
{
	int fit[SCHED_MAX_DEVS_PER_NODE], n = 0;
	for (int i = 0; i < v->n; i++)
		if (v->left[i] >= a->milli && v->mleft[i] >= a->dmem)
			fit[n++] = i;
	return n ? fit[rng_below(r, (uint64_t)n)] : -1;
}

/* Free devices grouped by a key (NVLink group or NUMA node): the smallest
 * group that still holds num devices, so that larger groups stay whole. */
static int pick_group(const struct sched_snapshot *s, const struct nodeview *v, int num,
		      int *pick, bool nvlink)
{
	const struct sched_node *n = &s->node[v->node];
	int best_key = -1, best_size = 1 << 30;

	for (int i = 0; i < v->n; i++) {
		const struct sched_dev *d = &n->dev[v->idx[i]];
		int key = nvlink ? d->nvlink : d->numa, size = 0;
		if (!v->free[i] || key < 0)
			continue;
		for (int j = 0; j < v->n; j++) {
			const struct sched_dev *e = &n->dev[v->idx[j]];
			size += v->free[j] && (nvlink ? e->nvlink : e->numa) == key;
		}
		if (size >= num && size < best_size) {
			best_size = size;
			best_key = key;
		}
	}
	if (best_key < 0)
		return -1;
	for (int i = 0, k = 0; i < v->n && k < num; i++) {
		const struct sched_dev *d = &n->dev[v->idx[i]];
		if (v->free[i] && (nvlink ? d->nvlink : d->numa) == best_key)
			pick[k++] = i;
	}
	return 0;
}

int pick_whole(const struct sched_snapshot *s, const struct nodeview *v, int num, int *pick)
{
	int k = 0;
	if (num > 1 && (!pick_group(s, v, num, pick, true) || !pick_group(s, v, num, pick, false)))
		return 0;
	for (int i = 0; i < v->n && k < num; i++)
		if (v->free[i])
			pick[k++] = i;
	return k == num ? 0 : -1;
}

/* Choose devices the plain way: best fit for a fraction, lowest free
 * indexes (NVLink/NUMA first) for whole devices. */
static int pick_default(const struct sched_snapshot *s, const struct nodeview *v,
			const struct ask *a, int *pick)
{
	if (a->num == 0)
		return 0;
	if (a->frac) {
		pick[0] = pick_bestfit_frac(v, a);
		return pick[0] < 0 ? -1 : 0;
	}
	return pick_whole(s, v, a->num, pick);
}

static int32_t ask_gpu_total(const struct ask *a)
{
	return a->num * a->milli;
}

static double dotprod_score(const struct nodeview *v, const struct ask *a)
{
	double f0 = (double)v->cpu_left / NORM_CPU, f1 = v->left_total / NORM_GPU;
	double p0 = (double)a->cpu / NORM_CPU, p1 = ask_gpu_total(a) / NORM_GPU;
	return floor(100.0 * (1.0 - (f0 * p0 + f1 * p1) / 2.0));
}

static double bestfit_score(const struct nodeview *v, const struct ask *a)
{
	double c = (double)(v->cpu_left - a->cpu) / NORM_CPU;
	double g = (double)(v->left_total - ask_gpu_total(a)) / NORM_GPU;
	return floor(100.0 * (1.0 - (0.5 * c + 0.5 * g)));
}

/* GPU clustering (the simulator's "GpuClustering"): keep each class of GPU
 * task (fractional, or k whole GPUs) on nodes of its own. */
static double clustering_score(const struct sched_node *n, const struct nodeview *v,
			       const struct ask *a)
{
	int cls, tier;
	int64_t used = (int64_t)NORM_GPU - v->left_total;

	if (a->num == 0)
		return 0;
	cls = a->frac ? 0 : (a->num > 8 ? 9 : a->num);
	if (n->hosted[cls] > 0)
		tier = n->nhosted_classes == 1 ? 3 : 2;
	else
		tier = n->nhosted_classes == 0 ? 1 : 0;
	return (double)(25 * used / 8000 + 25 * tier);
}

/* GPU packing: reuse partly used GPUs (50..100), else open free GPUs of a
 * used node (33..50), else an idle node (about 33 minus its GPUs). */
static double packing_score(const struct nodeview *v, const struct ask *a, const int *pick)
{
	int nfree = 0, use_free = 0;
	int64_t ratio = 0, score;

	if (a->num == 0)
		return 0;
	for (int i = 0; i < v->n; i++)
		nfree += v->free[i];
	if (nfree == v->ngpu) {
		score = 100 / 3 - nfree;
		return (double)(score > nfree ? score : nfree);
	}
	for (int k = 0; k < a->num; k++) {
		use_free += v->left[pick[k]] == SCHED_MILLI;
		ratio += (int64_t)v->left[pick[k]] * 100 / SCHED_MILLI;
	}
	if (use_free > 0) {
		score = 100 / 2 - use_free;
		return (double)(score > 100 / 3 ? score : 100 / 3);
	}
	score = 100 - ratio / 10;
	return (double)(score > 50 ? score : 50);
}

/* Nomad-style binpack: the mean fullness after placement of the node's
 * CPU, memory and GPU (0..100); spread is its mirror. */
static double binpack_score(const struct sched_node *n, const struct nodeview *v,
			    const struct ask *a)
{
	double cpu = n->cpu_total ? (double)(n->cpu_total - v->cpu_left + a->cpu) / n->cpu_total : 1;
	double mem = n->mem_total ? (double)(n->mem_total - v->mem_left + a->mem) / n->mem_total : 1;
	double parts = 2, sum = cpu + mem;
	if (v->gpu_total > 0) {
		sum += (double)(v->gpu_total - v->left_total + ask_gpu_total(a)) / v->gpu_total;
		parts++;
	}
	return 100.0 * sum / parts;
}

static double sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

/* Node lefts over all devices (an unhealthy one counts as 0 left). */
static int node_lefts(const struct sched_node *n, int32_t *left)
{
	for (int i = 0; i < n->ndev; i++)
		left[i] = n->dev[i].unhealthy ? 0 : SCHED_MILLI - n->dev[i].compute_taken;
	return n->ndev;
}

static const char *model_of(const struct sched_snapshot *s, const struct sched_node *n)
{
	return n->ndev ? s->prof[n->dev[0].profile].model : NULL;
}

/* F(after) for taking ask a with devices pick[] (positions into v). */
static double frag_after(struct sched_snapshot *s, const struct nodeview *v, const struct ask *a,
			 const struct sched_workload *w, const int *pick, bool use_mem)
{
	const struct sched_node *n = &s->node[v->node];
	int32_t left[SCHED_MAX_DEVS_PER_NODE];
	int nd = node_lefts(n, left);
	for (int k = 0; k < a->num; k++)
		left[v->idx[pick[k]]] -= a->frac ? a->milli : left[v->idx[pick[k]]];
	return frag_node_view(w, v->cpu_left - a->cpu, v->mem_left - a->mem, left, nd,
			      model_of(s, n), use_mem);
}

/* Devices with the same compute and memory left give the same
 * fragmentation after a fractional placement: only the first is tried (the
 * lowest index, as the published simulator keeps the first best). */
static bool seen_before(const struct nodeview *v, int i)
{
	for (int j = 0; j < i; j++)
		if (v->left[j] == v->left[i] && v->mleft[j] == v->mleft[i])
			return true;
	return false;
}

/* FGD: int(100 * sigmoid((F - F') / 1000)); for a fraction every fitting
 * device is tried and the first best kept. */
static double fgd_score(struct sched_snapshot *s, const struct nodeview *v, const struct ask *a,
			const struct sched_workload *w, int *pick)
{
	double before = frag_node(s, w, v->node), best = -1;
	if (!a->frac) {
		if (pick_default(s, v, a, pick))
			return -1;
		return floor(100.0 * sigmoid((before - frag_after(s, v, a, w, pick, false)) / 1000.0));
	}
	for (int i = 0; i < v->n; i++) {
		int p = i;
		double sc;
		if (v->left[i] < a->milli || v->mleft[i] < a->dmem || seen_before(v, i))
			continue;
		sc = floor(100.0 * sigmoid((before - frag_after(s, v, a, w, &p, false)) / 1000.0));
		if (sc > best) {
			best = sc;
			pick[0] = i;
		}
	}
	return best;
}

/* GPU compute (milli) of a node that the workload's GPU tasks could not
 * use for lack of CPU or memory: with gpu idle and cpu/mem free, the tasks
 * take on average w->cpu_per_milli CPU (w->mem_per_milli memory) per milli
 * of GPU, so at most cpu / cpu_per_milli of the idle GPU can be used. */
static double stranded(const struct sched_workload *w, double gpu, double cpu, double mem)
{
	double usable = gpu;
	if (w->cpu_per_milli > 0)
		usable = fmin(usable, cpu / w->cpu_per_milli);
	if (w->mem_per_milli > 0)
		usable = fmin(usable, mem / w->mem_per_milli);
	return gpu - fmax(usable, 0);
}

/* The share of a device left after a fraction takes it, in thousandths:
 * compute, averaged with memory when memory is asked (best fit). */
static double left_after(const struct sched_snapshot *s, const struct nodeview *v,
			 const struct ask *a, int pos)
{
	const struct sched_dev *d = &s->node[v->node].dev[v->idx[pos]];
	double left = (double)(v->left[pos] - a->milli);

	if (a->dmem > 0 && d->mem_total > 0)
		left = (left + (double)(v->mleft[pos] - a->dmem) * SCHED_MILLI / (double)d->mem_total) / 2.0;
	return left;
}

/* What a fraction on device pos costs in idle GPU milli, in [-1000, 2000]:
 * what it leaves (best fit) plus how much it raises the device's expected
 * idle if later tasks of the workload fill it (w->fill_waste).  Best fit
 * sees only what is left now: with 320s and 470s it puts a 320 next to a
 * lone 470 (210 left, which neither can use) rather than next to another
 * 320 (360 left, which a third 320 fills); the expected idle sees the
 * difference (test_herd_fill_waste, docs/scheduling.md). */
static double fill_cost(const struct sched_snapshot *s, const struct nodeview *v,
			const struct ask *a, const struct sched_workload *w, int pos)
{
	int left = v->left[pos];
	return left_after(s, v, a, pos) + w->fill_waste[left - a->milli] - w->fill_waste[left];
}

/* What a fraction on a device with `left` milli left costs the workload's
 * best packing, in milli: the most value the device could still hold
 * (w->pack_k) less the task's own value and what the device could hold
 * after it.  0 when the task is part of a best set for the device: a 470
 * on a free device (two 470s fill it as well as a packing can), 167 for a
 * 470 next to a lone 320 when 320s pack three to a device (the 320s' and
 * 650s' best sets need the room it takes).  What is left holds nothing
 * when the node keeps too little CPU or memory for any one-device
 * fraction of the workload (w->pack_min_cpu, pack_min_mem): that room is
 * lost with the task.  Rounded to a milli, so that equal losses tie and
 * the bucket and the node order still decide. */
static double pack_loss(const struct nodeview *v, const struct ask *a,
			const struct sched_workload *w, int pos)
{
	int left = v->left[pos];
	double after = w->pack_k[left - a->milli], l;
	if (v->cpu_left - a->cpu < w->pack_min_cpu || v->mem_left - a->mem < w->pack_min_mem)
		after = 0;
	l = w->pack_k[left] - w->pack_value[a->milli] - after;
	return l > 0 ? round(l) : 0;
}

/* herd's key for a fraction on device pos: the least pack_loss first,
 * then FGD's bucket of the exact gradient (into *bucket), then a device
 * already shared (completing it keeps free devices whole for whole-device
 * tasks; without it an equal bucket left the choice to the node order),
 * then the least fill_cost.  Used both for the device inside a node and,
 * through herd_score, between nodes. */
static double frac_key(const struct sched_snapshot *s, const struct nodeview *v,
		       const struct ask *a, const struct sched_workload *w, double gradient,
		       int pos, double *bucket)
{
	*bucket = floor(100.0 * sigmoid(gradient / 1000.0));
	return (SCHED_MILLI - pack_loss(v, a, w, pos)) * 1e7 + *bucket * 1e4 +
	       (v->free[pos] ? 3000.0 : 8000.0) - fill_cost(s, v, a, w, pos);
}

/* herd's tie-break for a fraction, in [0, 1) so that it never crosses a
 * bucket: 0 for a free device, else 0.5 plus up to 0.49 for a low
 * fill_cost (-1000 .. 2000). */
static double shared_fit(const struct sched_snapshot *s, const struct nodeview *v,
			 const struct ask *a, const struct sched_workload *w, int pos)
{
	if (v->free[pos])
		return 0.0;
	return 0.5 + 0.49 * (2000.0 - fill_cost(s, v, a, w, pos)) / 3001.0;
}

/* herd: FGD's gradient, CPU-aware.  See docs/scheduling.md. */
static double herd_score(struct sched_snapshot *s, const struct nodeview *v, const struct ask *a,
			 const struct sched_workload *w, int *pick)
{
	double before = frag_node(s, w, v->node), best = -1e300, bucket = 0;

	if (!a->frac) {
		if (pick_default(s, v, a, pick))
			return -1e300;
		best = before - frag_after(s, v, a, w, pick, false);
		bucket = floor(100.0 * sigmoid(best / 1000.0));
	} else {
		for (int i = 0; i < v->n; i++) {
			int p = i;
			double k, b;
			if (v->left[i] < a->milli || v->mleft[i] < a->dmem || seen_before(v, i))
				continue;
			k = frac_key(s, v, a, w, before - frag_after(s, v, a, w, &p, false), i, &b);
			if (k > best) {
				best = k;
				bucket = b;
				pick[0] = i;
			}
		}
		if (best <= -1e299)
			return -1e300;
	}
	/* FGD's bucket of the gradient; equal buckets stay ties, broken by
	 * the caller's stable node order (the exact gradient does worse: it
	 * chases differences of a few milli and loses the first-fit effect) */
	if (a->num == 0)
		/* a CPU-only task: inside the bucket, the node with the least
		 * idle GPU compute, since the CPU it takes there strands the
		 * least GPU (a node without GPUs strands none); in [0, 1) so
		 * that it never crosses a bucket */
		return bucket * 2.0 + 1.0 - v->left_total / (v->gpu_total + 1000.0);
	{
		/* a GPU task: first, nodes where it strands no more GPU than
		 * is stranded already (its CPU and memory leave enough for the
		 * node's idle GPU at the workload's mean ratio), then the
		 * bucket.  The half milli absorbs rounding. */
		double gpu = v->left_total, used = (double)a->num * a->milli;
		double was = stranded(w, gpu, (double)v->cpu_left, (double)v->mem_left);
		double now = stranded(w, gpu - used, (double)(v->cpu_left - a->cpu),
				      (double)(v->mem_left - a->mem));
		double tier = now > was + 0.5 ? 0.0 : 1000.0;
		if (!a->frac)
			return tier + bucket;
		/* a fraction: the rank, then the least pack_loss, then as a
		 * whole-device task (the loss first, even before the bucket:
		 * the gradient sees what fits now, the loss what a best packing
		 * of the workload would do with the room) */
		return tier * 1000.0 + (SCHED_MILLI - pack_loss(v, a, w, pick[0])) * 200.0 +
		       bucket + shared_fit(s, v, a, w, pick[0]);
	}
}

double policy_score(enum sched_policy p, struct sched_snapshot *s, const struct nodeview *v,
		    const struct ask *a, const struct sched_workload *w, struct rng *r, int *pick)
{
	const struct sched_node *n = &s->node[v->node];

	switch (p) {
	case SCHED_FGD:
		return fgd_score(s, v, a, w, pick);
	case SCHED_HERD:
		return herd_score(s, v, a, w, pick);
	case SCHED_RANDOM:
		if (a->num && a->frac) {
			pick[0] = pick_random_frac(v, a, r);
			return pick[0] < 0 ? -1 : 0;
		}
		return pick_default(s, v, a, pick) ? -1 : 0;
	default:
		break;
	}
	if (pick_default(s, v, a, pick))
		return -1;
	switch (p) {
	case SCHED_BINPACK:
		return binpack_score(n, v, a);
	case SCHED_SPREAD:
		return 100.0 - binpack_score(n, v, a);
	case SCHED_DOTPROD:
		return dotprod_score(v, a);
	case SCHED_BESTFIT:
		return bestfit_score(v, a);
	case SCHED_CLUSTERING:
		return clustering_score(n, v, a);
	case SCHED_PACKING:
		return packing_score(v, a, pick);
	default:
		return 0;
	}
}
