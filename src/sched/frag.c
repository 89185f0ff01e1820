/* frag: FGD's fragmentation measure (Weng et al., USENIX ATC'23, section 3).
 *
 * For a target workload of task classes with frequencies, a node's
 * fragmentation is the expected amount of its idle GPU compute that a task
 * drawn from the workload could not use:
 *   - CPU-only class, a model the class may not use, or not enough CPU
 *     (herd's variant also memory): all idle compute counts;
 *   - the class fits: the compute left on each device whose left is below
 *     the class's per-device share counts;
 *   - it does not fit: all idle compute counts.
 * The sum over classes is weighted by frequency. */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ULL;
	return h ^ (h >> 31);
}

/* The id of a workload is a hash of what it holds (never 0), so that two
 * workloads with the same classes share cached scores and a workload built
 * at the address of a freed one never finds the other's. */
static uint64_t workload_hash(const struct sched_workload *w)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < w->n; i++) {
		const struct wl_class *c = &w->c[i];
		uint64_t f;
		memcpy(&f, &c->freq, sizeof(f));
		h = mix(h, (uint64_t)c->cpu);
		h = mix(h, (uint64_t)c->mem);
		h = mix(h, (uint64_t)c->milli);
		h = mix(h, (uint64_t)c->num);
		h = mix(h, f);
		for (const char *p = c->spec ? c->spec : ""; *p; p++)
			h = mix(h, (unsigned char)*p);
		h = mix(h, 0xff);
	}
	return h ? h : 1;
}

/* w->fill_waste (see sched-int.h): the expected idle milli of a device
 * with l left when every later one-device task that fits there is drawn
 * from the workload (the GPU classes with one device; a whole-device class
 * fits l = 1000 only).  Filled from l = 0 up, each entry from smaller ones. */
static void fill_waste_init(struct sched_workload *w)
{
	w->fill_waste = xcalloc(SCHED_MILLI + 1, sizeof(double));
	for (int l = 1; l <= SCHED_MILLI; l++) {
		double sum = 0, freq = 0;
		for (size_t k = 0; k < w->n; k++) {
			const struct wl_class *c = &w->c[k];
			if (c->num != 1 || c->milli <= 0 || c->milli > l || c->freq <= 0)
				continue;
			sum += c->freq * w->fill_waste[l - c->milli];
			freq += c->freq;
		}
		w->fill_waste[l] = freq > 0 ? sum / freq : (double)l;
	}
}

struct sched_workload *sched_workload_new(const struct sched_task_class *v, size_t n)
{
	struct sched_workload *w = xcalloc(1, sizeof(*w));
	double sum = 0;

	w->n = n;
	w->c = n ? xcalloc(n, sizeof(*w->c)) : NULL;
	for (size_t i = 0; i < n; i++)
		sum += v[i].freq > 0 ? v[i].freq : 0;
	for (size_t i = 0; i < n; i++) {
		struct wl_class *c = &w->c[i];
		c->cpu = v[i].cpu_milli;
		c->mem = v[i].memory_mib;
		c->milli = v[i].gpu_milli;
		c->num = v[i].num_gpu;
		c->spec = v[i].gpu_spec && *v[i].gpu_spec ? xstrdup(v[i].gpu_spec) : NULL;
		c->freq = sum > 0 && v[i].freq > 0 ? v[i].freq / sum : 0;
	}
	w->mi = xcalloc(n + 1, sizeof(int));
	for (size_t i = 0; i < n; i++) {
		int k;
		w->mi[i] = -1;
		if (w->c[i].num == 0) {
			w->cpu_only += w->c[i].freq;
			continue;
		}
		for (k = 0; k < w->nm && w->mv[k] != w->c[i].milli; k++)
			;
		if (k == w->nm) {
			if (w->nm == 64)
				continue; /* beyond 64 shares: the slow path below */
			w->mv[w->nm++] = w->c[i].milli;
		}
		w->mi[i] = k;
	}
	{
		double cpu = 0, mem = 0, gpu = 0;
		for (size_t i = 0; i < n; i++)
			if (w->c[i].num > 0) {
				cpu += w->c[i].freq * (double)w->c[i].cpu;
				mem += w->c[i].freq * (double)w->c[i].mem;
				gpu += w->c[i].freq * (double)w->c[i].milli * w->c[i].num;
			}
		w->cpu_per_milli = gpu > 0 ? cpu / gpu : 0;
		w->mem_per_milli = gpu > 0 ? mem / gpu : 0;
	}
	fill_waste_init(w);
	pack_value_init(w);
	w->id = workload_hash(w);
	return w;
}

void sched_workload_free(struct sched_workload *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->c[i].spec);
	free(w->c);
	free(w->mi);
	free(w->fill_waste);
	free(w->pack_value);
	free(w->pack_k);
	free(w);
}

bool model_in_spec(const char *model, const char *spec)
{
	size_t len;
	if (!spec || !*spec)
		return true;
	if (!model)
		return false;
	len = strlen(model);
	for (const char *p = spec;;) {
		const char *e = strchr(p, '|');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == len && !memcmp(p, model, len))
			return true;
		if (!e)
			return false;
		p = e + 1;
	}
}

double frag_node_view(const struct sched_workload *w, int64_t cpu_left, int64_t mem_left,
		      const int32_t *left, int n, const char *model, bool use_mem)
{
	int64_t idle = 0, below[64];
	int fitc[64];
	double frag;

	for (int i = 0; i < n; i++)
		idle += left[i];
	if (!idle)
		return 0;
	for (int k = 0; k < w->nm; k++) {
		below[k] = 0;
		fitc[k] = 0;
		for (int i = 0; i < n; i++) {
			if (left[i] >= w->mv[k])
				fitc[k]++;
			else
				below[k] += left[i];
		}
	}
	frag = w->cpu_only * (double)idle;
	for (size_t k = 0; k < w->n; k++) {
		const struct wl_class *c = &w->c[k];
		int m = w->mi[k];
		int64_t b = 0;
		int fit = 0;

		if (c->num == 0)
			continue;
		if (cpu_left < c->cpu || (use_mem && mem_left < c->mem) ||
		    (c->spec && !model_in_spec(model, c->spec))) {
			frag += c->freq * (double)idle;
			continue;
		}
		if (m >= 0) {
			fit = fitc[m];
			b = below[m];
		} else {
			for (int i = 0; i < n; i++) {
				if (left[i] >= c->milli)
					fit++;
				else
					b += left[i];
			}
		}
		frag += c->freq * (double)(fit >= c->num ? b : idle);
	}
	return frag;
}

static const char *node_model(const struct sched_snapshot *s, const struct sched_node *n)
{
	return n->ndev ? s->prof[n->dev[0].profile].model : NULL;
}

double frag_node(struct sched_snapshot *s, const struct sched_workload *w, int node)
{
	struct sched_node *n = &s->node[node];
	int32_t left[SCHED_MAX_DEVS_PER_NODE];

	if (n->frag_wl == w->id && n->frag_version == n->version)
		return n->frag;
	for (int i = 0; i < n->ndev; i++)
		left[i] = n->dev[i].unhealthy ? 0 : SCHED_MILLI - n->dev[i].compute_taken;
	n->frag = frag_node_view(w, n->cpu_total - n->cpu_used, n->mem_total - n->mem_used, left,
				 n->ndev, node_model(s, n), false);
	n->frag_wl = w->id;
	n->frag_version = n->version;
	return n->frag;
}

double sched_frag(struct sched_snapshot *s, const struct sched_workload *w, int node)
{
	double sum = 0;
	if (node >= 0)
		return frag_node(s, w, node);
	for (size_t i = 0; i < s->n; i++)
		sum += frag_node(s, w, (int)i);
	return sum;
}
