/* bench_sched: placements per second on a synthetic cluster of N nodes with
 * 8 GPUs each (default 10,000), a mix of fractional, 1-GPU and multi-GPU
 * asks with CPU-only ones, policy from argv.  Prints the median of 5 runs.
 * Usage: bench_sched [POLICY [NODES [PLACEMENTS]]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "sched/sched.h"

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

int main(int argc, char **argv)
{
	enum sched_policy pol = SCHED_HERD;
	int64_t nodes = 10000, count = 2000;
	double rate[5];
	struct sched_task_class cls[] = { { 4000, 0, 500, 1, NULL, 3 }, { 8000, 0, 1000, 1, NULL, 4 },
					  { 32000, 0, 1000, 4, NULL, 1 }, { 8000, 0, 0, 0, NULL, 1 } };
	struct sched_workload *w = sched_workload_new(cls, 4);

	if (argc > 1 && sched_policy_parse(argv[1], &pol)) {
		fprintf(stderr, "bench_sched: unknown policy %s\n", argv[1]);
		return 2;
	}
	if ((argc > 2 && parse_int64(argv[2], 1, 1000000, &nodes, NULL)) ||
	    (argc > 3 && parse_int64(argv[3], 1, 10000000, &count, NULL))) {
		fprintf(stderr, "usage: bench_sched [POLICY [NODES [PLACEMENTS]]]\n");
		return 2;
	}
	for (int run = 0; run < 5; run++) {
		struct sched_snapshot *s = sched_snapshot_new();
		double t0;
		uint64_t x = 42;
		for (int64_t i = 0; i < nodes; i++) {
			char id[32];
			struct sched_node_spec ns = { .id = id, .cpu_milli = 128000, .memory_mib = 1 << 20 };
			int n;
			snprintf(id, sizeof(id), "node-%lld", (long long)i);
			n = sched_snapshot_add_node(s, &ns, NULL);
			for (int g = 0; g < 8; g++) {
				char did[16];
				struct sched_device_spec ds = { .id = did, .vendor = "nvidia", .type = "gpu",
								.model = "A100", .numa_node = g / 4,
								.nvlink_group = 0, .sharing = SCHED_MPS };
				snprintf(did, sizeof(did), "GPU-%d", g);
				sched_snapshot_add_device(s, n, &ds, NULL);
			}
		}
		t0 = now_s();
		for (int64_t i = 0; i < count; i++) {
			const struct sched_task_class *c;
			struct sched_device_request dr = { .name = "gpu" };
			struct sched_request req = { .count = 1 };
			struct sched_options o = { .policy = pol, .seed = (uint64_t)i, .workload = w };
			struct sched_placement p;
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			c = &cls[(x >> 33) % 4];
			req.cpu_milli = c->cpu_milli;
			if (c->num_gpu) {
				dr.count = c->num_gpu;
				dr.compute = c->gpu_milli;
				req.device = &dr;
			}
			if (!sched_place(s, &req, &o, &p, NULL, NULL))
				sched_apply(s, &p);
		}
		rate[run] = (double)count / (now_s() - t0);
		sched_snapshot_free(s);
	}
	qsort(rate, 5, sizeof(rate[0]), cmp);
	printf("%s: %lld nodes x 8 GPUs: median %.0f placements/s (min %.0f, max %.0f)\n",
	       sched_policy_name(pol), (long long)nodes, rate[2], rate[0], rate[4]);
	sched_workload_free(w);
	return 0;
}
