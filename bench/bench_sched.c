/* bench_sched: placements per second on a synthetic cluster of N nodes with
 * 8 GPUs each (default 10,000).
 *
 * Nodes: 96 cores, 384 GiB, 8 time-sliced GPUs (the most common node of the
 * Alibaba GPU trace 2023, "openb": 549 of its 1,213 GPU nodes).  Tasks: the
 * 20 most frequent task classes of that trace's default pod list (cpu,
 * GPUs, share of a GPU, with their counts: 49% fractional, 8% CPU-only, a
 * few multi-GPU), drawn with those frequencies; the same classes are the
 * target workload of fgd and herd.  Ties go by a seeded node permutation
 * (sched_options.tie_rank), as in `herd sim`.
 *
 * Each run fills the cluster to half its GPUs (not timed), then times
 * PLACEMENTS placements with departures in between (after each placement a
 * random running task leaves with probability 1/2), so that the cluster
 * stays near half full and keeps changing.  Prints the median of 5 runs.
 * With "scan" as fourth argument the engine scores every node
 * (sched_options.scan_all) instead of groups of identical nodes.  With
 * "spread", nodes sit in four datacenters and every request spreads evenly
 * over them (a spread block on ${node.datacenter}, with the counts of the
 * running tasks per datacenter): the cost of the spread score.
 * Usage: bench_sched [POLICY [NODES [PLACEMENTS [scan|spread]]]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "sched/sched.h"

/* openb_pod_list_default.csv: (cpu milli, memory, GPU milli, GPUs, -, count) */
static const struct sched_task_class classes[] = {
	{ 3152, 0, 810, 1, NULL, 1047 },  { 11300, 0, 1000, 1, NULL, 874 },
	{ 11400, 0, 1000, 1, NULL, 599 }, { 3152, 0, 1000, 1, NULL, 470 },
	{ 11908, 0, 470, 1, NULL, 388 },  { 12500, 0, 0, 0, NULL, 366 },
	{ 8000, 0, 470, 1, NULL, 360 },   { 12000, 0, 1000, 1, NULL, 326 },
	{ 32000, 0, 0, 0, NULL, 290 },    { 18708, 0, 1000, 1, NULL, 255 },
	{ 11908, 0, 650, 1, NULL, 237 },  { 4000, 0, 320, 1, NULL, 232 },
	{ 9810, 0, 1000, 1, NULL, 195 },  { 8000, 0, 0, 0, NULL, 185 },
	{ 8000, 0, 1000, 1, NULL, 164 },  { 4000, 0, 230, 1, NULL, 122 },
	{ 6000, 0, 460, 1, NULL, 120 },   { 32000, 0, 1000, 4, NULL, 60 },
	{ 64200, 0, 1000, 8, NULL, 40 },  { 24000, 0, 1000, 2, NULL, 60 },
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static uint64_t next(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

static const struct sched_task_class *draw(uint64_t *x, double total)
{
	double u = (double)next(x) / 2147483648.0 * total;
	for (size_t i = 0; i < NCLASSES; i++) {
		if (u < classes[i].freq)
			return &classes[i];
		u -= classes[i].freq;
	}
	return &classes[NCLASSES - 1];
}

struct held {
	struct sched_placement *p;
	size_t n, alloc;
	int64_t gpu; /* milli held */
	bool spread; /* requests spread over the datacenters */
	int per_dc[4]; /* running tasks per datacenter (node index % 4) */
};

static const char *const dcs[4] = { "dc0", "dc1", "dc2", "dc3" };

static void place_one(struct sched_snapshot *s, const struct sched_task_class *c,
		      struct sched_options *o, struct held *h)
{
	struct sched_device_request dr = { .name = "gpu" };
	struct sched_request req = { .count = 1, .cpu_milli = c->cpu_milli };
	struct sched_placement p;
	struct sched_spread_count cnt[4];
	struct sched_spread sp = { "${node.datacenter}", 50, NULL, 0, cnt, 4 };
	if (c->num_gpu) {
		dr.count = c->num_gpu;
		dr.compute = c->gpu_milli;
		req.device = &dr;
	}
	if (h->spread) {
		for (int i = 0; i < 4; i++)
			cnt[i] = (struct sched_spread_count){ dcs[i], h->per_dc[i] };
		req.spreads = &sp;
		req.nspreads = 1;
		req.spread_desired = 1000;
	}
	if (sched_place(s, &req, o, &p, NULL, NULL) || sched_apply(s, &p))
		return;
	h->per_dc[p.node % 4]++;
	ALLOC_GROW(h->p, h->n + 1, h->alloc);
	h->p[h->n++] = p;
	h->gpu += (int64_t)c->num_gpu * c->gpu_milli;
}

static void release_one(struct sched_snapshot *s, struct held *h, uint64_t *x)
{
	size_t j;
	if (!h->n)
		return;
	j = next(x) % h->n;
	sched_release(s, &h->p[j]);
	h->per_dc[h->p[j].node % 4]--;
	for (int d = 0; d < h->p[j].ndev; d++)
		h->gpu -= h->p[j].dev[d].compute;
	h->p[j] = h->p[--h->n];
}

int main(int argc, char **argv)
{
	enum sched_policy pol = SCHED_HERD;
	int64_t nodes = 10000, count = 20000;
	double rate[5], total = 0;
	bool scan = argc > 4 && !strcmp(argv[4], "scan");
	bool spread = argc > 4 && !strcmp(argv[4], "spread");
	struct sched_workload *w = sched_workload_new(classes, NCLASSES);

	if (argc > 1 && sched_policy_parse(argv[1], &pol)) {
		fprintf(stderr, "bench_sched: unknown policy %s\n", argv[1]);
		return 2;
	}
	if ((argc > 2 && parse_int64(argv[2], 1, 1000000, &nodes, NULL)) ||
	    (argc > 3 && parse_int64(argv[3], 1, 10000000, &count, NULL)) ||
	    (argc > 4 && !scan && !spread)) {
		fprintf(stderr, "usage: bench_sched [POLICY [NODES [PLACEMENTS [scan|spread]]]]\n");
		return 2;
	}
	for (size_t i = 0; i < NCLASSES; i++)
		total += classes[i].freq;
	for (int run = 0; run < 5; run++) {
		struct sched_snapshot *s = sched_snapshot_new();
		uint32_t *rank = xcalloc((size_t)nodes, sizeof(uint32_t));
		struct sched_options o = { .policy = pol, .workload = w, .tie_rank = rank };
		struct held h = { 0 };
		uint64_t x = 42 + (uint64_t)run;
		double t0;

		for (int64_t i = 0; i < nodes; i++) {
			char id[32];
			struct sched_node_spec ns = { .id = id, .cpu_milli = 96000, .memory_mib = 393216,
						      .datacenter = spread ? dcs[i % 4] : NULL };
			int n;
			snprintf(id, sizeof(id), "node-%lld", (long long)i);
			n = sched_snapshot_add_node(s, &ns, NULL);
			for (int g = 0; g < 8; g++) {
				char did[16];
				struct sched_device_spec ds = { .id = did, .vendor = "nvidia", .type = "gpu",
								.model = "G2", .numa_node = g / 4,
								.nvlink_group = -1, .sharing = SCHED_TIMESLICE };
				snprintf(did, sizeof(did), "GPU-%d", g);
				sched_snapshot_add_device(s, n, &ds, NULL);
			}
			rank[i] = (uint32_t)i;
		}
		for (int64_t i = nodes - 1; i > 0; i--) { /* Fisher-Yates */
			int64_t j = (int64_t)(next(&x) % (uint64_t)(i + 1));
			uint32_t t = rank[i];
			rank[i] = rank[j];
			rank[j] = t;
		}
		while (h.gpu < nodes * 8 * 1000 / 2) /* half full, not timed */
			place_one(s, draw(&x, total), &o, &h);
		o.scan_all = scan;
		h.spread = spread; /* the fill above is the same in every mode */
		t0 = now_s();
		for (int64_t i = 0; i < count; i++) {
			o.seed = (uint64_t)i;
			place_one(s, draw(&x, total), &o, &h);
			if (next(&x) & 1)
				release_one(s, &h, &x);
		}
		rate[run] = (double)count / (now_s() - t0);
		free(h.p);
		free(rank);
		sched_snapshot_free(s);
	}
	qsort(rate, 5, sizeof(rate[0]), cmp);
	printf("%s%s: %lld nodes x 8 GPUs: median %.0f placements/s (min %.0f, max %.0f)\n",
	       sched_policy_name(pol),
	       scan ? " (scan every node)" : spread ? " (spread over 4 datacenters)" : "",
	       (long long)nodes, rate[2],
	       rate[0], rate[4]);
	sched_workload_free(w);
	return 0;
}
