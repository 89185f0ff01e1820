/* Reserved cores in placement: exclusive core ids, NUMA affinity none /
 * prefer / require, GPUs and cores on one NUMA node, the explanations, the
 * cpu a core counts, and groups of nodes against the plain scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "helpers.h"

/* A node with `per` cores on each of `numa` NUMA nodes (ids in order) and
 * ngpu GPUs split evenly over the NUMA nodes (GPU-0.. on NUMA 0 first);
 * taken: core ids already held. */
static int core_node(struct sched_snapshot *s, const char *id, int numa, int per, int ngpu,
		     const int *taken, size_t ntaken)
{
	struct sched_core cores[64];
	struct sched_node_spec ns = { .id = id, .cpu_milli = 1000 * numa * per,
				      .memory_mib = 65536, .cores = cores,
				      .ncores = (size_t)(numa * per), .cores_taken = taken,
				      .ncores_taken = ntaken };
	int n;
	for (int i = 0; i < numa * per; i++)
		cores[i] = (struct sched_core){ i, i / per };
	n = sched_snapshot_add_node(s, &ns, NULL);
	assert_true(n >= 0);
	for (int g = 0; g < ngpu; g++) {
		char did[32];
		struct sched_device_spec ds = { .id = did, .vendor = "nvidia", .type = "gpu",
						.model = "H100", .memory_mib = 81920,
						.numa_node = g / (ngpu / numa), .nvlink_group = -1 };
		snprintf(did, sizeof(did), "GPU-%d", g);
		assert_true(sched_snapshot_add_device(s, n, &ds, NULL) >= 0);
	}
	return n;
}

/* The core ids of placement p, in order, as "0,1,2". */
static const char *ids(struct sched_snapshot *s, const struct sched_placement *p)
{
	static char buf[512];
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < p->ncores; i++) {
		struct sched_core c;
		sched_node_core(s, p->node, p->core[i], &c, NULL);
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%d", i ? "," : "", c.id);
	}
	return buf;
}

static bool has_miss(const struct sched_explain *why, const char *text)
{
	for (int i = 0; i < why->nmisses; i++)
		if (!strcmp(why->misses[i], text))
			return true;
	return false;
}

static int place(struct sched_snapshot *s, const struct sched_request *req,
		 struct sched_placement *p, struct sched_explain *why)
{
	struct sched_options opt = { .policy = SCHED_HERD, .seed = 3 };
	struct herd_err err = { 0 };
	return sched_place(s, req, &opt, p, why, &err);
}

static void test_exclusive_lowest_ids(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core_request c = { .count = 3 };
	struct sched_request req = { .cpu_milli = 0, .memory_mib = 100, .count = 1, .cores = &c,
				     .ncores = 1 };
	struct sched_placement p, q;
	struct sched_explain why;
	(void)state;
	core_node(s, "n0", 2, 4, 0, NULL, 0);
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "0,1,2");
	assert_int_equal(p.cpu_milli, 3000);
	assert_int_equal(sched_apply(s, &p), 0);
	/* the same cores cannot be taken twice */
	assert_int_equal(sched_apply(s, &p), -EINVAL);
	assert_int_equal(place(s, &req, &q, NULL), 0);
	assert_string_equal(ids(s, &q), "3,4,5");
	assert_int_equal(sched_apply(s, &q), 0);
	assert_int_equal(place(s, &req, &q, &why), -ENOSPC);
	assert_int_equal(why.filtered_cores, 1);
	assert_int_equal(why.nmisses, 1);
	assert_string_equal(why.misses[0], "n0: 2 free cores, 3 asked");
	/* given back, they are offered again */
	assert_int_equal(sched_release(s, &p), 0);
	assert_int_equal(sched_release(s, &p), -EINVAL);
	assert_int_equal(place(s, &req, &q, NULL), 0);
	assert_string_equal(ids(s, &q), "0,1,2");
	sched_snapshot_free(s);
}

static void test_taken_by_others_and_unknown_ids(void **state)
{
	static const int taken[] = { 0, 2, 99 };
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core_request c = { .count = 2 };
	struct sched_request req = { .memory_mib = 100, .count = 1, .cores = &c, .ncores = 1 };
	struct sched_placement p;
	bool t;
	struct sched_core k;
	(void)state;
	core_node(s, "n0", 1, 4, 0, taken, 3);
	sched_node_core(s, 0, 0, &k, &t);
	assert_true(t);
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "1,3");
	sched_snapshot_free(s);
}

static void test_require_one_numa_node(void **state)
{
	static const int taken[] = { 0, 1, 4, 5, 6 };
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core_request c = { .count = 3, .numa = SCHED_NUMA_REQUIRE };
	struct sched_request req = { .memory_mib = 100, .count = 1, .cores = &c, .ncores = 1 };
	struct sched_placement p;
	struct sched_explain why;
	struct strbuf sb = STRBUF_INIT;
	(void)state;
	/* NUMA 0: 2 and 3 free, NUMA 1: 7..11 free */
	core_node(s, "n0", 2, 6, 0, taken, 5);
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "7,8,9");
	/* the best fit: 2 cores go where 2 are free, keeping NUMA 1 whole */
	c.count = 2;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "2,3");
	/* none takes the lowest ids across NUMA nodes */
	c.numa = SCHED_NUMA_NONE;
	c.count = 3;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "2,3,7");
	c.numa = SCHED_NUMA_REQUIRE;
	c.count = 6;
	assert_int_equal(place(s, &req, &p, &why), -ENOSPC);
	assert_int_equal(why.filtered_cores, 1);
	assert_string_equal(why.misses[0],
			    "n0: 2 free cores on NUMA 0, 5 on NUMA 1, 6 asked on one NUMA node");
	sched_explain_format(&why, &req, &sb);
	assert_non_null(strstr(sb.buf, "not enough free cores on one NUMA node on 1 node"));
	strbuf_release(&sb);
	sched_snapshot_free(s);
}

/* prefer takes an aligned node over an unaligned one the policy would
 * otherwise rank first; none does not care. */
static void test_prefer_scores_aligned(void **state)
{
	static const int taken[] = { 0, 1, 4, 5 };
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core_request c = { .count = 3, .numa = SCHED_NUMA_NONE };
	struct sched_request req = { .memory_mib = 100, .count = 1, .cores = &c, .ncores = 1 };
	struct sched_placement p;
	(void)state;
	core_node(s, "split", 2, 4, 0, taken, 4); /* 2 + 2 free */
	core_node(s, "whole", 2, 4, 0, NULL, 0);
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.node, 0);
	c.numa = SCHED_NUMA_PREFER;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.node, 1);
	assert_string_equal(ids(s, &p), "0,1,2");
	/* where nothing aligns, prefer still places */
	c.count = 4;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.node, 1);
	c.count = 4;
	assert_int_equal(sched_apply(s, &p), 0); /* whole: NUMA 0 gone */
	c.count = 5;
	assert_int_equal(place(s, &req, &p, NULL), -ENOSPC);
	c.count = 3;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.node, 1);
	assert_string_equal(ids(s, &p), "4,5,6");
	c.count = 4;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "4,5,6,7");
	sched_snapshot_free(s);
}

/* A 2-GPU task with require: the GPUs and the cores on one NUMA node, even
 * when the policy's first choice of GPUs is on the other one. */
static void test_gpus_and_cores_on_one_numa_node(void **state)
{
	static const int taken[] = { 0, 1, 2, 3, 4, 5 };
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "nvidia/gpu", .count = 2 };
	struct sched_core_request c = { .count = 4, .numa = SCHED_NUMA_REQUIRE, .with_device = true };
	struct sched_request req = { .memory_mib = 100, .count = 1, .device = &dr, .cores = &c,
				     .ncores = 1 };
	struct sched_placement p;
	struct sched_explain why;
	(void)state;
	/* NUMA 0: GPU-0, GPU-1, cores 6-7 free; NUMA 1: GPU-2, GPU-3, 8-15 */
	core_node(s, "n0", 2, 8, 4, taken, 6);
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.ndev, 2);
	assert_int_equal(p.dev[0].dev + p.dev[1].dev, 2 + 3);
	assert_string_equal(ids(s, &p), "8,9,10,11");
	assert_int_equal(sched_apply(s, &p), 0);
	/* GPUs left on NUMA 0 only, its 2 cores too few */
	assert_int_equal(place(s, &req, &p, &why), -ENOSPC);
	assert_int_equal(why.filtered_cores, 1);
	assert_true(has_miss(&why, "n0: 2 free cores on NUMA 0 (2 GPUs), 4 on NUMA 1 "
				   "(0 GPUs), 4 cores and 2 GPUs asked on one NUMA node"));
	/* without the binding, the cores may sit apart from the GPUs */
	c.with_device = false;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "12,13,14,15");
	/* none: the GPUs' NUMA node first, then the lowest ids */
	c.numa = SCHED_NUMA_NONE;
	c.with_device = true;
	c.count = 3;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_string_equal(ids(s, &p), "6,7,12");
	sched_snapshot_free(s);
}

/* A one-GPU task: none puts its cores on the GPU's NUMA node. */
static void test_none_near_the_gpu(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1 };
	struct sched_core_request c = { .count = 2, .with_device = true };
	struct sched_request req = { .memory_mib = 100, .count = 1, .device = &dr, .cores = &c,
				     .ncores = 1 };
	struct sched_placement p;
	struct sched_device_share busy = { .dev = 0, .compute = 1000, .whole = true };
	struct sched_placement hold = { .node = 0, .ndev = 1, .dev = { busy } };
	(void)state;
	core_node(s, "n0", 2, 4, 2, NULL, 0);
	assert_int_equal(sched_apply(s, &hold), 0); /* GPU-0 (NUMA 0) taken */
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.dev[0].dev, 1);
	assert_string_equal(ids(s, &p), "4,5");
	sched_snapshot_free(s);
}

/* Two tasks with cores: each ask gets its own, in the asks' order (the
 * server hands them out to the tasks in that order). */
static void test_two_asks_in_order(void **state)
{
	static const int taken[] = { 0 };
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1 };
	struct sched_core_request c[2] = {
		{ .count = 2, .numa = SCHED_NUMA_REQUIRE, .with_device = true },
		{ .count = 3, .numa = SCHED_NUMA_NONE },
	};
	struct sched_request req = { .memory_mib = 100, .count = 1, .device = &dr, .cores = c,
				     .ncores = 2 };
	struct sched_placement p;
	struct sched_device_share busy = { .dev = 0, .compute = 1000, .whole = true };
	struct sched_placement hold = { .node = 0, .ndev = 1, .dev = { busy } };
	(void)state;
	core_node(s, "n0", 2, 4, 2, taken, 1);
	assert_int_equal(sched_apply(s, &hold), 0); /* GPU-0 (NUMA 0) taken */
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.dev[0].dev, 1);
	/* the GPU task's on NUMA 1 first, then the other's from the lowest */
	assert_string_equal(ids(s, &p), "4,5,1,2,3");
	assert_int_equal(p.ncores, 5);
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_release(s, &p), 0);
	sched_snapshot_free(s);
}

static void test_node_without_cores(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core_request c = { .count = 1 };
	struct sched_request req = { .memory_mib = 100, .count = 1, .cores = &c, .ncores = 1 };
	struct sched_node_spec ns = { .id = "old", .cpu_milli = 8000, .memory_mib = 8192 };
	struct sched_placement p;
	struct sched_explain why;
	struct strbuf sb = STRBUF_INIT;
	(void)state;
	assert_int_equal(sched_snapshot_add_node(s, &ns, NULL), 0);
	assert_int_equal(place(s, &req, &p, &why), -ENOSPC);
	assert_int_equal(why.filtered_no_cores, 1);
	assert_int_equal(why.nmisses, 0);
	sched_explain_format(&why, &req, &sb);
	assert_non_null(strstr(sb.buf, "no reservable cores on 1 node"));
	strbuf_release(&sb);
	/* a request without cores still lands there */
	req.ncores = 0;
	req.cpu_milli = 1000;
	assert_int_equal(place(s, &req, &p, NULL), 0);
	sched_snapshot_free(s);
}

/* A core counts the node's cpu_per_core of its cpu. */
static void test_cpu_per_core(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core cores[4] = { { 0, 0 }, { 1, 0 }, { 2, 0 }, { 3, 0 } };
	struct sched_node_spec ns = { .id = "n0", .cpu_milli = 10000, .memory_mib = 8192,
				      .cores = cores, .ncores = 4, .cpu_per_core = 2500 };
	struct sched_core_request c = { .count = 2 };
	struct sched_request req = { .cpu_milli = 500, .memory_mib = 100, .count = 1, .cores = &c,
				     .ncores = 1 };
	struct sched_placement p;
	struct sched_explain why;
	(void)state;
	assert_int_equal(sched_snapshot_add_node(s, &ns, NULL), 0);
	assert_int_equal(sched_node_cpu_per_core(s, 0), 2500);
	assert_int_equal(place(s, &req, &p, NULL), 0);
	assert_int_equal(p.cpu_milli, 500 + 2 * 2500);
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_node_cpu_free(s, 0), 10000 - 5500);
	/* two cores are free, but not the cpu of two (5000 of 4500) */
	assert_int_equal(place(s, &req, &p, &why), -ENOSPC);
	assert_int_equal(why.filtered_cpu, 1);
	sched_snapshot_free(s);
}

static void test_bad_requests_and_nodes(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_core dup[2] = { { 1, 0 }, { 1, 0 } };
	struct sched_node_spec ns = { .id = "n0", .cpu_milli = 1000, .memory_mib = 1000,
				      .cores = dup, .ncores = 2 };
	struct sched_core_request c = { .count = 0 };
	struct sched_request req = { .memory_mib = 100, .count = 1, .cores = &c, .ncores = 1 };
	struct sched_placement p;
	struct herd_err err = { 0 };
	struct sched_options opt = { .policy = SCHED_HERD };
	(void)state;
	assert_int_equal(sched_snapshot_add_node(s, &ns, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "core 1"));
	core_node(s, "n1", 1, 4, 0, NULL, 0);
	assert_int_equal(sched_place(s, &req, &opt, &p, NULL, &err), -EINVAL);
	c.count = SCHED_MAX_CORES_PER_ASK + 1;
	assert_int_equal(sched_place(s, &req, &opt, &p, NULL, &err), -EINVAL);
	/* a placement naming a core the node does not offer */
	memset(&p, 0, sizeof(p));
	p.ncores = 1;
	p.core[0] = 4;
	assert_int_equal(sched_apply(s, &p), -EINVAL);
	p.ncores = 2;
	p.core[0] = 1;
	p.core[1] = 1;
	assert_int_equal(sched_apply(s, &p), -EINVAL);
	sched_snapshot_free(s);
}

/* Grouped placements (nodes in identical states scored once) give what the
 * plain scan gives while requests with and without cores come and go. */
static void test_groups_match_plain_scan(void **state)
{
	struct sched_snapshot *s[2];
	struct sched_placement held[2][256];
	int nheld = 0, placed_cores = 0, placed_plain = 0;
	uint32_t rank[12];
	(void)state;
	for (int k = 0; k < 2; k++) {
		s[k] = sched_snapshot_new();
		for (int i = 0; i < 12; i++) {
			char id[8];
			snprintf(id, sizeof(id), "n%d", i);
			core_node(s[k], id, 2, 4, i % 3 ? 2 : 0, NULL, 0);
			rank[i] = (uint32_t)((i * 7) % 12);
		}
	}
	for (int i = 0; i < 3000; i++) {
		struct sched_device_request dr = { .name = "gpu", .count = 1 + i % 2 };
		struct sched_core_request c = { .count = 1 + i % 3,
						.numa = (enum sched_numa)(i % 5 % 3),
						.with_device = i % 2 };
		struct sched_request req = { .cpu_milli = 500, .memory_mib = 100, .count = 1 };
		struct sched_placement p[2];
		int rc[2];
		if (i % 4 == 1)
			req.device = &dr;
		if (i % 3 == 0) {
			req.cores = &c;
			req.ncores = 1;
		}
		for (int k = 0; k < 2; k++) {
			struct sched_options o = { .policy = i % 7 == 0 ? SCHED_BINPACK : SCHED_HERD,
						   .tie_rank = i % 7 == 0 ? rank : NULL,
						   .scan_all = k == 1 };
			rc[k] = sched_place(s[k], &req, &o, &p[k], NULL, NULL);
		}
		assert_int_equal(rc[0], rc[1]);
		if (rc[0] || nheld == 256 || i % 11 == 10) {
			/* full, or now and then: some leave */
			for (int j = nheld / 2; j < nheld; j++)
				for (int k = 0; k < 2; k++)
					assert_int_equal(sched_release(s[k], &held[k][j]), 0);
			nheld /= 2;
			continue;
		}
		assert_int_equal(p[0].node, p[1].node);
		assert_int_equal(p[0].ncores, p[1].ncores);
		assert_memory_equal(p[0].core, p[1].core, sizeof(p[0].core[0]) * (size_t)p[0].ncores);
		assert_int_equal(p[0].ndev, p[1].ndev);
		for (int d = 0; d < p[0].ndev; d++)
			assert_int_equal(p[0].dev[d].dev, p[1].dev[d].dev);
		for (int k = 0; k < 2; k++) {
			assert_int_equal(sched_apply(s[k], &p[k]), 0);
			held[k][nheld] = p[k];
		}
		nheld++;
		placed_cores += req.ncores > 0;
		placed_plain += req.ncores == 0;
	}
	assert_true(placed_cores > 100 && placed_plain > 100);
	sched_snapshot_free(s[0]);
	sched_snapshot_free(s[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exclusive_lowest_ids),
		cmocka_unit_test(test_taken_by_others_and_unknown_ids),
		cmocka_unit_test(test_require_one_numa_node),
		cmocka_unit_test(test_prefer_scores_aligned),
		cmocka_unit_test(test_gpus_and_cores_on_one_numa_node),
		cmocka_unit_test(test_none_near_the_gpu),
		cmocka_unit_test(test_two_asks_in_order),
		cmocka_unit_test(test_node_without_cores),
		cmocka_unit_test(test_cpu_per_core),
		cmocka_unit_test(test_bad_requests_and_nodes),
		cmocka_unit_test(test_groups_match_plain_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
