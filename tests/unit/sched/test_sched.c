/* Engine: resource rules, constraints, explanations, determinism, and a
 * property test that nothing is ever over-committed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "helpers.h"
#include "sched/trace.h"

static const struct sched_options binpack = { .policy = SCHED_BINPACK, .seed = 1 };

static void test_fraction_needs_sharing(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "nvidia/gpu", .count = 1, .compute = 500 };
	struct sched_request req = { .cpu_milli = 1000, .memory_mib = 100, .count = 1, .device = &dr };
	struct sched_placement p;
	struct sched_explain why;

	add_node(s, "excl", 8000, 8192, 2, "T4", SCHED_EXCLUSIVE, 16384);
	assert_int_equal(sched_place(s, &req, &binpack, &p, &why, NULL), -ENOSPC);
	assert_int_equal(why.filtered_devices, 1);
	assert_true(why.nmisses > 0);
	assert_non_null(strstr(why.misses[0], "sharing mode exclusive"));
	add_node(s, "shared", 8000, 8192, 2, "T4", SCHED_MPS, 16384);
	assert_int_equal(sched_place(s, &req, &binpack, &p, NULL, NULL), 0);
	assert_int_equal(p.node, 1);
	assert_int_equal(p.ndev, 1);
	assert_int_equal(p.dev[0].compute, 500);
	assert_false(p.dev[0].whole);
	sched_snapshot_free(s);
}

static void test_whole_never_on_tenants_or_unhealthy(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_node_spec ns = { .id = "n0", .cpu_milli = 8000, .memory_mib = 8192 };
	struct sched_device_spec d0 = { .id = "GPU-0", .vendor = "nvidia", .type = "gpu", .model = "A100",
					.sharing = SCHED_MPS, .tenants = 1, .memory_mib = 40960,
					.memory_taken = 1024, .numa_node = -1, .nvlink_group = -1 };
	struct sched_device_spec d1 = d0, d2 = d0;
	struct sched_device_request dr = { .name = "gpu", .count = 1 };
	struct sched_request req = { .cpu_milli = 100, .count = 1, .device = &dr };
	struct sched_placement p;

	d1.id = "GPU-1";
	d1.tenants = 0;
	d1.memory_taken = 0;
	d1.unhealthy = true;
	d2.id = "GPU-2";
	d2.tenants = 0;
	d2.memory_taken = 0;
	sched_snapshot_add_node(s, &ns, NULL);
	sched_snapshot_add_device(s, 0, &d0, NULL);
	sched_snapshot_add_device(s, 0, &d1, NULL);
	sched_snapshot_add_device(s, 0, &d2, NULL);
	assert_int_equal(sched_place(s, &req, &binpack, &p, NULL, NULL), 0);
	assert_int_equal(p.dev[0].dev, 2);
	assert_string_equal(sched_device_id(s, 0, p.dev[0].dev), "GPU-2");
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_place(s, &req, &binpack, &p, NULL, NULL), -ENOSPC);
	sched_snapshot_free(s);
}

static void test_memory_miss_message(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "nvidia/gpu", .count = 1, .memory_mib = 8192 };
	struct sched_request req = { .cpu_milli = 100, .count = 1, .device = &dr };
	struct sched_placement p = { 0 };
	struct sched_explain why;
	struct strbuf sb = STRBUF_INIT;

	add_node(s, "node-7", 8000, 8192, 4, "T4", SCHED_TIMESLICE, 16384);
	/* take 10 GiB of GPU-3: 6 GiB stay free */
	p.node = 0;
	p.ndev = 1;
	p.dev[0] = (struct sched_device_share){ .dev = 3, .compute = 0, .memory_mib = 10240 };
	for (int g = 0; g < 3; g++) {
		p.dev[0].dev = g;
		p.dev[0].memory_mib = 16384 - 1024 * (g + 1);
		assert_int_equal(sched_apply(s, &p), 0);
	}
	p.dev[0].dev = 3;
	p.dev[0].memory_mib = 10240;
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_place(s, &req, &binpack, &p, &why, NULL), -ENOSPC);
	sched_explain_format(&why, &req, &sb);
	assert_non_null(strstr(sb.buf, "GPU-3 on node-7: 6 GiB free, 8 GiB asked"));
	assert_non_null(strstr(sb.buf, "devices exhausted on 1 node"));
	strbuf_release(&sb);
	sched_snapshot_free(s);
}

static void test_constraints(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_kv attrs[] = { { "kernel.version", "6.1.0" }, { "os", "linux" } };
	struct sched_kv dattrs[] = { { "memory", "16 GiB" }, { "compute_capability", "8.0" } };
	struct sched_node_spec ns = { .id = "a", .cpu_milli = 4000, .memory_mib = 4096,
				      .attrs = attrs, .nattrs = 2, .node_class = "big" };
	struct sched_device_spec ds = { .id = "GPU-0", .vendor = "nvidia", .type = "gpu", .model = "A100",
					.attrs = dattrs, .nattrs = 2, .numa_node = -1, .nvlink_group = -1 };
	struct sched_constraint dc[] = { { "${device.attr.memory}", SCHED_OP_GE, "12 GiB" } };
	struct sched_device_request dr = { .name = "nvidia/gpu/A100", .count = 1,
					   .constraints = dc, .nconstraints = 1 };
	struct sched_constraint nc[] = {
		{ "${attr.kernel.version}", SCHED_OP_VERSION, ">= 5.10, < 7" },
		{ "${node.class}", SCHED_OP_REGEXP, "^b.g$" },
		{ "${meta.rack}", SCHED_OP_IS_NOT_SET, NULL },
		{ "${attr.os}", SCHED_OP_SET_CONTAINS_ANY, "windows,linux" },
	};
	struct sched_request req = { .cpu_milli = 100, .count = 1, .constraints = nc,
				     .nconstraints = 4, .device = &dr };
	struct sched_placement p;
	struct sched_explain why;
	enum sched_op op;

	sched_snapshot_add_node(s, &ns, NULL);
	sched_snapshot_add_device(s, 0, &ds, NULL);
	assert_int_equal(sched_place(s, &req, &binpack, &p, NULL, NULL), 0);
	dc[0].rtarget = "24 GiB";
	assert_int_equal(sched_place(s, &req, &binpack, &p, &why, NULL), -ENOSPC);
	assert_int_equal(why.filtered_device_constraint, 1);
	dc[0].rtarget = "12 GiB";
	nc[0].rtarget = ">= 6.2";
	assert_int_equal(sched_place(s, &req, &binpack, &p, &why, NULL), -ENOSPC);
	assert_int_equal(why.filtered_constraint[0], 1);
	nc[0].op = SCHED_OP_REGEXP;
	nc[0].rtarget = "([";
	assert_int_equal(sched_place(s, &req, &binpack, &p, NULL, NULL), -EINVAL);
	assert_int_equal(sched_op_parse("set_contains_all", &op), 0);
	assert_int_equal(op, SCHED_OP_SET_CONTAINS);
	assert_int_equal(sched_op_parse("~", &op), -EINVAL);
	sched_snapshot_free(s);
}

static void test_nvlink_preferred(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_node_spec ns = { .id = "n", .cpu_milli = 8000, .memory_mib = 8192 };
	struct sched_device_request dr = { .name = "gpu", .count = 2 };
	struct sched_request req = { .cpu_milli = 100, .count = 1, .device = &dr };
	struct sched_placement p;
	/* GPU-0 alone on NUMA 0; GPU-1..3 NVLink group 1 (GPU-1 also NUMA 0) */
	int nv[] = { -1, 1, 1, 1 }, numa[] = { 0, 0, 1, 1 };

	sched_snapshot_add_node(s, &ns, NULL);
	for (int g = 0; g < 4; g++) {
		char id[16];
		struct sched_device_spec ds = { .id = id, .vendor = "nvidia", .type = "gpu",
						.model = "H100", .numa_node = numa[g], .nvlink_group = nv[g] };
		snprintf(id, sizeof(id), "GPU-%d", g);
		sched_snapshot_add_device(s, 0, &ds, NULL);
	}
	assert_int_equal(sched_place(s, &req, &binpack, &p, NULL, NULL), 0);
	assert_int_equal(p.dev[0].dev, 1);
	assert_int_equal(p.dev[1].dev, 2);
	sched_snapshot_free(s);
}

static void test_deterministic_seed(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1 };
	struct sched_request req = { .cpu_milli = 100, .count = 1, .device = &dr };
	struct sched_options o = { .policy = SCHED_RANDOM, .seed = 7 };
	struct sched_placement a, b;
	int differs = 0;

	for (int i = 0; i < 50; i++) {
		char id[16];
		snprintf(id, sizeof(id), "n%d", i);
		add_node(s, id, 8000, 8192, 1, "T4", SCHED_EXCLUSIVE, 0);
	}
	for (uint64_t seed = 0; seed < 20; seed++) {
		o.seed = seed;
		assert_int_equal(sched_place(s, &req, &o, &a, NULL, NULL), 0);
		assert_int_equal(sched_place(s, &req, &o, &b, NULL, NULL), 0);
		assert_int_equal(a.node, b.node);
		differs += a.node != 0;
	}
	assert_true(differs > 10); /* the seed really picks among ties */
	sched_snapshot_free(s);
}

/* Random place/release sequences under every policy: no device ever holds
 * more than 1000 thousandths or its memory, and releasing everything gives
 * back an empty cluster. */
static void test_never_overcommitted(void **state)
{
	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = sched_snapshot_new();
		struct sched_placement live[400];
		int nlive = 0;
		uint64_t x = 12345 + (uint64_t)pol;
		for (int i = 0; i < 12; i++) {
			char id[16];
			snprintf(id, sizeof(id), "n%d", i);
			add_node(s, id, 32000, 65536, 1 + i % 8, i % 3 ? "T4" : "A100",
				 i % 4 ? SCHED_TIMESLICE : SCHED_EXCLUSIVE, 16384);
		}
		for (int step = 0; step < 3000; step++) {
			struct sched_device_request dr = { .name = "gpu" };
			struct sched_request req = { .count = 1 };
			struct sched_options o = { .policy = (enum sched_policy)pol, .seed = (uint64_t)step };
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			if ((x >> 60) < 6 && nlive < 400) {
				int kind = (int)((x >> 40) % 4);
				req.cpu_milli = (int64_t)((x >> 20) % 4000);
				req.memory_mib = (int64_t)((x >> 30) % 4096);
				if (kind) {
					dr.count = kind == 3 ? 1 + (int)((x >> 10) % 4) : 1;
					dr.compute = kind == 1 ? 100 + (int32_t)((x >> 8) % 800) : 0;
					dr.memory_mib = kind == 2 ? 1024 : 0;
					req.device = &dr;
				}
				if (sched_place(s, &req, &o, &live[nlive], NULL, NULL) == 0) {
					assert_int_equal(sched_apply(s, &live[nlive]), 0);
					nlive++;
				}
			} else if (nlive) {
				int k = (int)((x >> 16) % (uint64_t)nlive);
				assert_int_equal(sched_release(s, &live[k]), 0);
				live[k] = live[--nlive];
			}
			for (size_t n = 0; n < sched_snapshot_nodes(s); n++) {
				assert_true(sched_node_cpu_free(s, (int)n) >= 0);
				assert_true(sched_node_memory_free(s, (int)n) >= 0);
				for (int d = 0; d < sched_node_ndevices(s, (int)n); d++) {
					assert_true(sched_device_compute_free(s, (int)n, d) >= 0);
					assert_true(sched_device_memory_free(s, (int)n, d) >= 0);
				}
			}
		}
		while (nlive)
			assert_int_equal(sched_release(s, &live[--nlive]), 0);
		for (size_t n = 0; n < sched_snapshot_nodes(s); n++) {
			assert_int_equal(sched_node_cpu_free(s, (int)n), 32000);
			for (int d = 0; d < sched_node_ndevices(s, (int)n); d++)
				assert_int_equal(sched_device_tenants(s, (int)n, d), 0);
		}
		sched_snapshot_free(s);
	}
}

static void test_apply_rejects_overcommit(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_placement p = { .node = 0, .cpu_milli = 10, .ndev = 1 };
	add_node(s, "n", 8000, 8192, 1, "T4", SCHED_TIMESLICE, 0);
	p.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 700 };
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_apply(s, &p), -EINVAL); /* 1400 > 1000 */
	assert_int_equal(sched_device_compute_free(s, 0, 0), 300);
	assert_int_equal(sched_release(s, &p), 0);
	assert_int_equal(sched_release(s, &p), -EINVAL);
	sched_snapshot_free(s);
}

/* The score memo must not change a decision: the same sequence of
 * placements, once through the memo (plain requests) and once around it (a
 * device constraint that every device meets disables it), lands on the
 * same nodes and devices. */
static void test_memo_same_decisions(void **state)
{
	struct sched_task_class c[] = { { 2000, 0, 500, 1, NULL, 2 }, { 4000, 0, 1000, 1, NULL, 1 } };
	struct sched_workload *w = sched_workload_new(c, 2);
	struct sched_constraint any = { "${device.vendor}", SCHED_OP_EQ, "nvidia" };
	enum sched_policy pols[] = { SCHED_FGD, SCHED_HERD, SCHED_BESTFIT, SCHED_PACKING };

	for (size_t pi = 0; pi < sizeof(pols) / sizeof(pols[0]); pi++) {
		struct sched_snapshot *s1 = sched_snapshot_new(), *s2 = sched_snapshot_new();
		for (int i = 0; i < 12; i++) {
			char id[16];
			snprintf(id, sizeof(id), "n%d", i);
			add_node(s1, id, 32000, 65536, 4, "T4", SCHED_TIMESLICE, 0);
			add_node(s2, id, 32000, 65536, 4, "T4", SCHED_TIMESLICE, 0);
		}
		for (int k = 0; k < 40; k++) {
			int32_t milli = (int32_t[]){ 500, 1000, 250, 700 }[k % 4];
			struct sched_device_request d1 = { .name = "gpu", .count = 1, .compute = milli };
			struct sched_device_request d2 = d1;
			struct sched_request r1 = { .cpu_milli = 1000, .count = 1, .device = &d1 };
			struct sched_request r2 = { .cpu_milli = 1000, .count = 1, .device = &d2 };
			struct sched_options o = { .policy = pols[pi], .seed = (uint64_t)k, .workload = w };
			struct sched_placement a, b;
			int ra, rb;
			d2.constraints = &any;
			d2.nconstraints = 1;
			ra = sched_place(s1, &r1, &o, &a, NULL, NULL);
			rb = sched_place(s2, &r2, &o, &b, NULL, NULL);
			assert_int_equal(ra, rb);
			if (ra)
				continue;
			assert_int_equal(a.node, b.node);
			assert_int_equal(a.dev[0].dev, b.dev[0].dev);
			assert_int_equal(sched_apply(s1, &a), 0);
			assert_int_equal(sched_apply(s2, &b), 0);
		}
		sched_snapshot_free(s1);
		sched_snapshot_free(s2);
	}
	sched_workload_free(w);
}

/* Groups of identical nodes must not change a decision: random sequences
 * of placements and releases on a mixed cluster (models, sizes, sharing
 * modes, an unhealthy device) give the same node, devices and score with
 * grouping as with the plain scan of every node, for every policy that
 * groups (with tie ranks, and herd in node order). */
static void test_groups_same_decisions(void **state)
{
	struct sched_task_class c[] = { { 2000, 0, 500, 1, NULL, 3 }, { 4000, 0, 1000, 1, NULL, 2 },
					{ 8000, 0, 1000, 2, "A100", 1 }, { 1000, 0, 0, 0, NULL, 1 },
					{ 3000, 0, 250, 1, NULL, 2 } };
	struct sched_workload *w = sched_workload_new(c, 5);
	enum sched_policy pols[] = { SCHED_HERD, SCHED_FGD, SCHED_BESTFIT, SCHED_PACKING,
				     SCHED_CLUSTERING, SCHED_DOTPROD, SCHED_BINPACK, SCHED_SPREAD };
	struct sched_constraint model = { "${device.model}", SCHED_OP_SET_CONTAINS_ANY, "A100,V100" };

	for (size_t pi = 0; pi < sizeof(pols) / sizeof(pols[0]); pi++) {
		for (int ranked = 0; ranked < 2; ranked++) {
			struct sched_snapshot *s[2];
			struct sched_placement held[64];
			uint32_t rank[24];
			int nheld = 0, grouped = 0;
			uint64_t x = 7 + pi * 31 + (uint64_t)ranked;

			if (!ranked && pols[pi] != SCHED_HERD)
				continue;
			s[0] = sched_snapshot_new();
			s[1] = sched_snapshot_new();
			for (int i = 0; i < 24; i++) {
				char id[16];
				const char *m = (const char *[]){ "T4", "A100", "V100" }[i % 3];
				snprintf(id, sizeof(id), "n%d", i);
				for (int k = 0; k < 2; k++)
					add_node(s[k], id, i % 2 ? 32000 : 16000, 65536, i % 4 ? 4 : 2, m,
						 i % 5 ? SCHED_TIMESLICE : SCHED_EXCLUSIVE, 16384);
				rank[i] = (uint32_t)((i * 7) % 24);
			}
			for (int step = 0; step < 400; step++) {
				struct sched_device_request dr = { .name = "gpu", .count = 1 };
				struct sched_request req = { .count = 1 };
				struct sched_options o = { .policy = pols[pi], .seed = (uint64_t)step,
							   .workload = step % 7 ? w : NULL,
							   .tie_rank = ranked ? rank : NULL };
				struct sched_placement p[2];
				int rc[2], kind;

				x = x * 6364136223846793005ULL + 1442695040888963407ULL;
				kind = (int)((x >> 33) % 6);
				if (nheld > 0 && (kind == 5 || nheld == 64)) {
					int j = (int)((x >> 20) % (uint64_t)nheld);
					for (int k = 0; k < 2; k++)
						assert_int_equal(sched_release(s[k], &held[j]), 0);
					held[j] = held[--nheld];
					continue;
				}
				req.cpu_milli = 1000 * (int64_t)((x >> 40) % 6);
				if (kind < 4) {
					dr.compute = (int32_t[]){ 300, 500, 1000, 1000 }[kind];
					dr.count = kind == 3 ? 2 : 1;
					if ((x >> 50) % 3 == 0) {
						dr.constraints = &model;
						dr.nconstraints = 1;
					}
					req.device = &dr;
				}
				for (int k = 0; k < 2; k++) {
					o.scan_all = k == 1;
					rc[k] = sched_place(s[k], &req, &o, &p[k], NULL, NULL);
				}
				assert_int_equal(rc[0], rc[1]);
				if (rc[0])
					continue;
				assert_int_equal(p[0].node, p[1].node);
				assert_int_equal(p[0].ndev, p[1].ndev);
				for (int d = 0; d < p[0].ndev; d++)
					assert_int_equal(p[0].dev[d].dev, p[1].dev[d].dev);
				assert_true(p[0].score == p[1].score);
				for (int k = 0; k < 2; k++)
					assert_int_equal(sched_apply(s[k], &p[k]), 0);
				held[nheld++] = p[0];
				grouped++;
			}
			assert_true(grouped > 50); /* the sequence really placed things */
			sched_snapshot_free(s[0]);
			sched_snapshot_free(s[1]);
		}
	}
	sched_workload_free(w);
}

/* Thousands of placements by the plain scan between two grouped ones (the
 * journal of new groups is read by no shape meanwhile and must be trimmed):
 * the grouped answer still equals the plain one. */
static void test_groups_after_long_plain_run(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1 };
	struct sched_request req = { .cpu_milli = 1000, .count = 1, .device = &dr };
	struct sched_options o = { .policy = SCHED_HERD };
	struct sched_placement p, q;

	for (int i = 0; i < 8; i++) {
		char id[8];
		snprintf(id, sizeof(id), "n%d", i);
		add_node(s, id, 64000, 65536, 4, "T4", SCHED_TIMESLICE, 0);
	}
	dr.compute = 300;
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0); /* builds the groups */
	o.scan_all = true;
	for (int i = 0, nheld = 0; i < 12000; i++) {
		static struct sched_placement held[64];
		dr.compute = 100 + 50 * (i % 17);
		if (nheld == 64 || sched_place(s, &req, &o, &p, NULL, NULL)) {
			while (nheld > 0) /* the cluster is full: everything leaves */
				assert_int_equal(sched_release(s, &held[--nheld]), 0);
			continue;
		}
		assert_int_equal(sched_apply(s, &p), 0);
		if (i % 3 == 2)
			held[nheld++] = p;
		else
			assert_int_equal(sched_release(s, &p), 0);
	}
	dr.compute = 300;
	assert_int_equal(sched_place(s, &req, &o, &q, NULL, NULL), 0);
	o.scan_all = false;
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_int_equal(p.node, q.node);
	assert_int_equal(p.dev[0].dev, q.dev[0].dev);
	sched_snapshot_free(s);
}

/* A workload freed and another built at the same address with other
 * classes must not reuse the first one's cached scores: the decision equals
 * a fresh snapshot's. */
static void test_workload_reuse_not_stale(void **state)
{
	struct sched_task_class a[] = { { 1000, 0, 250, 1, NULL, 1 } };
	struct sched_task_class b[] = { { 1000, 0, 1000, 4, NULL, 1 } };
	struct sched_snapshot *s = sched_snapshot_new(), *fresh = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1, .compute = 500 };
	struct sched_request req = { .cpu_milli = 1000, .count = 1, .device = &dr };
	struct sched_placement p, q, pre;
	struct sched_workload *w;

	for (int i = 0; i < 4; i++) {
		char id[8];
		snprintf(id, sizeof(id), "n%d", i);
		add_node(s, id, 64000, 65536, 4, "T4", SCHED_TIMESLICE, 0);
		add_node(fresh, id, 64000, 65536, 4, "T4", SCHED_TIMESLICE, 0);
	}
	/* a half-used GPU on n2 so that the two workloads disagree */
	pre = (struct sched_placement){ .node = 2, .cpu_milli = 1000, .ndev = 1,
					.dev = { { .dev = 0, .compute = 250 } } };
	assert_int_equal(sched_apply(s, &pre), 0);
	assert_int_equal(sched_apply(fresh, &pre), 0);
	w = sched_workload_new(a, 1);
	{
		struct sched_options o = { .policy = SCHED_FGD, .workload = w, .tie_rank = (uint32_t[]){ 0, 1, 2, 3 } };
		assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	}
	sched_workload_free(w);
	w = sched_workload_new(b, 1);
	{
		struct sched_options o = { .policy = SCHED_FGD, .workload = w, .tie_rank = (uint32_t[]){ 0, 1, 2, 3 } };
		assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
		assert_int_equal(sched_place(fresh, &req, &o, &q, NULL, NULL), 0);
		assert_int_equal(p.node, q.node);
		assert_int_equal(p.dev[0].dev, q.dev[0].dev);
		assert_true(p.score == q.score);
	}
	sched_workload_free(w);
	sched_snapshot_free(s);
	sched_snapshot_free(fresh);
}

/* The trace reader: header found after blank lines, gpu_spec optional,
 * malformed rows named by line. */
static void test_trace_reader(void **state)
{
	static const char nodes[] = "\nsn,cpu_milli,memory_mib,gpu,model\nn0,64000,1024,2,T4\n";
	static const char pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,1,500\n"
				   "p1,1000,10,0,0\n";
	static const char bad[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,2,500\n";
	struct trace t = { 0 };
	struct herd_err err;

	assert_int_equal(trace_parse_nodes(&t, nodes, sizeof(nodes) - 1, NULL), 0);
	assert_int_equal(t.nnodes, 1);
	assert_int_equal(t.nodes[0].gpus, 2);
	assert_int_equal(trace_parse_pods(&t, pods, sizeof(pods) - 1, NULL), 0);
	assert_int_equal(t.npods, 2);
	assert_null(t.pods[0].gpu_spec);
	assert_int_equal(t.pods[0].gpu_milli, 500);
	assert_int_equal(trace_parse_pods(&t, bad, sizeof(bad) - 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 2"));
	assert_int_equal(t.npods, 2); /* nothing appended on failure */
	assert_int_equal(trace_parse_pods(&t, "\n\n", 2, NULL), -EINVAL);
	trace_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fraction_needs_sharing),
		cmocka_unit_test(test_whole_never_on_tenants_or_unhealthy),
		cmocka_unit_test(test_memory_miss_message),
		cmocka_unit_test(test_constraints),
		cmocka_unit_test(test_nvlink_preferred),
		cmocka_unit_test(test_deterministic_seed),
		cmocka_unit_test(test_never_overcommitted),
		cmocka_unit_test(test_apply_rejects_overcommit),
		cmocka_unit_test(test_memo_same_decisions),
		cmocka_unit_test(test_groups_same_decisions),
		cmocka_unit_test(test_workload_reuse_not_stale),
		cmocka_unit_test(test_groups_after_long_plain_run),
		cmocka_unit_test(test_trace_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
