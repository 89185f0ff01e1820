/* Spread in placement: hand-computed spread parts (even, targets, the
 * values without a target sharing the rest, a node without the attribute,
 * the weight's sign, several spreads), sched_plan counting its own
 * placements (count 4 over two datacenters lands 2+2, targets 70/30 with
 * count 10 land 7/3), determinism, validation, and the device chosen
 * inside a node left as the policy chose it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"

/* Nodes n0..n(n-1), CPU only, datacenter dcs[i] (NULL: none), rack
 * "r<i%2>"; the first is the roomiest, so that binpack and spread without
 * a spread block would both choose by room, not by datacenter. */
static struct sched_snapshot *nodes(const char *const *dcs, int n)
{
	struct sched_snapshot *s = sched_snapshot_new();
	for (int i = 0; i < n; i++) {
		char id[16];
		struct sched_kv meta[1] = { { "rack", i % 2 ? "r1" : "r0" } };
		struct sched_node_spec ns = { .id = id, .cpu_milli = 64000 + (i == 0) * 1000,
					      .memory_mib = 65536, .datacenter = dcs[i],
					      .meta = meta, .nmeta = 1 };
		snprintf(id, sizeof(id), "n%d", i);
		assert_int_equal(sched_snapshot_add_node(s, &ns, NULL), i);
	}
	return s;
}

static const char *dc_of(int node, const char *const *dcs)
{
	return dcs[node] ? dcs[node] : "(none)";
}

static const struct sched_request *cpu_req(struct sched_request *r, const struct sched_spread *sp,
					   size_t nsp, int desired)
{
	memset(r, 0, sizeof(*r));
	r->cpu_milli = 1000;
	r->memory_mib = 512;
	r->count = 1;
	r->spreads = sp;
	r->nspreads = nsp;
	r->spread_desired = desired;
	return r;
}

static int place_one(struct sched_snapshot *s, const struct sched_request *req,
		     enum sched_policy pol, struct sched_placement *p)
{
	struct sched_options opt = { .policy = pol, .seed = 3 };
	struct herd_err err = { 0 };
	return sched_place(s, req, &opt, p, NULL, &err);
}

static const char *const two_dcs[] = { "dc1", "dc1", "dc2", "dc2" };

/* Even: desired 4 over dc1 and dc2 is 2 each.  With dc1 holding 1, a dc1
 * node's boost is (2 - 2) / 2 = 0, a dc2 node's (2 - 1) / 2 = 0.5: 50
 * points, and dc2 wins although n0 (dc1) has the most room. */
static void test_even_parts(void **state)
{
	struct sched_spread_count cnt[] = { { "dc1", 1 } };
	struct sched_spread sp = { "${node.datacenter}", 50, NULL, 0, cnt, 1 };
	struct sched_snapshot *s = nodes(two_dcs, 4);
	struct sched_request r;
	struct sched_placement p;
	(void)state;

	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_SPREAD, &p), 0);
	assert_string_equal(dc_of(p.node, two_dcs), "dc2");
	assert_true(fabs(p.spread - 50.0) < 1e-9);
	/* without the count the even shares tie: the policy's choice, n0 */
	sp.ncounts = 0;
	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_SPREAD, &p), 0);
	assert_int_equal(p.node, 0);
	assert_true(fabs(p.spread - 50.0) < 1e-9); /* (2 - 1) / 2 everywhere */
	/* the weight's size alone does not matter (normalised like affinities) */
	sp.ncounts = 1;
	sp.weight = 5;
	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_SPREAD, &p), 0);
	assert_true(fabs(p.spread - 50.0) < 1e-9);
	sched_snapshot_free(s);
}

/* A negative weight gathers: the dc1 node's part is -(0) = 0, the dc2
 * node's -(0.5) = -50, so dc1 wins. */
static void test_weight_sign(void **state)
{
	struct sched_spread_count cnt[] = { { "dc1", 1 } };
	struct sched_spread sp = { "${node.datacenter}", -50, NULL, 0, cnt, 1 };
	struct sched_snapshot *s = nodes((const char *const[]){ "dc2", "dc1", "dc2", "dc1" }, 4);
	struct sched_request r;
	struct sched_placement p;
	(void)state;

	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_BINPACK, &p), 0);
	assert_true(p.node == 1 || p.node == 3);
	assert_true(fabs(p.spread) < 1e-9);
	sp.weight = 50;
	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_BINPACK, &p), 0);
	assert_true(p.node == 0 || p.node == 2);
	assert_true(fabs(p.spread - 50.0) < 1e-9);
	sched_snapshot_free(s);
}

/* Targets dc1 50 percent of 4 (2), the rest (2) shared by dc2 and dc3,
 * whose allocations count together: with dc2 holding 1, dc1 scores
 * (2 - 1) / 2 = 0.5, dc2 and dc3 (2 - 2) / 2 = 0.  A node without a
 * datacenter loses a whole unit: -100. */
static void test_targets_and_rest(void **state)
{
	static const char *const dcs[] = { "dc2", "dc3", "dc1", NULL };
	struct sched_spread_target tg[] = { { "dc1", 50 } };
	struct sched_spread_count cnt[] = { { "dc2", 1 } };
	struct sched_spread sp = { "${node.datacenter}", 50, tg, 1, cnt, 1 };
	struct sched_snapshot *s = nodes(dcs, 4);
	struct sched_request r;
	struct sched_placement p;
	(void)state;

	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_BINPACK, &p), 0);
	assert_int_equal(p.node, 2);
	assert_true(fabs(p.spread - 50.0) < 1e-9);
	/* dc1 full of its share: 2 - 3 over 2 = -0.5; dc2 and dc3 still 0 */
	cnt[0] = (struct sched_spread_count){ "dc1", 2 };
	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_BINPACK, &p), 0);
	assert_true(p.node == 0 || p.node == 1);
	assert_true(fabs(p.spread - 50.0) < 1e-9); /* the rest: (2 - 1) / 2 */

	/* far over its share a value counts as -1: dc1 holding 5 of its 2 */
	cnt[0] = (struct sched_spread_count){ "dc1", 5 };
	assert_int_equal(sched_snapshot_add_node(s, &(struct sched_node_spec){ .id = "big",
			 .cpu_milli = 900000, .memory_mib = 900000, .datacenter = "dc1" }, NULL), 4);
	r.cpu_milli = 100000; /* only "big" fits */
	assert_int_equal(place_one(s, &r, SCHED_BINPACK, &p), 0);
	assert_int_equal(p.node, 4);
	assert_true(fabs(p.spread + 100.0) < 1e-9);
	sched_snapshot_free(s);

	/* only the node without the attribute fits: it is still chosen
	 * (spread is a preference), 100 points down */
	s = nodes((const char *const[]){ NULL }, 1);
	assert_int_equal(place_one(s, cpu_req(&r, &sp, 1, 4), SCHED_BINPACK, &p), 0);
	assert_true(fabs(p.spread + 100.0) < 1e-9);
	sched_snapshot_free(s);
}

/* Two spreads, weights 50 and 25: each boost weighs 2/3 and 1/3.  n2 is
 * dc2 / r0, with dc1 holding 2 and r0 holding 2 of desired 4: datacenter
 * (2 - 1) / 2 = 0.5, rack (2 - 3) / 2 = -0.5: 100 x (0.5 x 2/3 - 0.5 x
 * 1/3) = 16.67. */
static void test_two_spreads(void **state)
{
	struct sched_spread_count c1[] = { { "dc1", 2 } }, c2[] = { { "r0", 2 } };
	struct sched_spread sp[] = {
		{ "${node.datacenter}", 50, NULL, 0, c1, 1 },
		{ "${meta.rack}", 25, NULL, 0, c2, 1 },
	};
	struct sched_snapshot *s = nodes(two_dcs, 4);
	struct sched_request r;
	struct sched_placement p;
	double want_n2 = 100.0 * (0.5 * 2 / 3 - 0.5 / 3), want_n3 = 100.0 * (0.5 * 2 / 3 + 0.5 / 3);
	(void)state;

	assert_int_equal(place_one(s, cpu_req(&r, sp, 2, 4), SCHED_BINPACK, &p), 0);
	/* n3 (dc2, r1) beats n2 (dc2, r0) */
	assert_int_equal(p.node, 3);
	assert_true(fabs(p.spread - want_n3) < 1e-9);
	assert_true(want_n2 < want_n3);
	sched_snapshot_free(s);
}

/* Every datacenter a placement of a plan of count went to. */
static void plan_counts(const char *const *dcs, int n, const struct sched_spread *sp, int count,
			enum sched_policy pol, uint64_t seed, int *in_dc1, int *in_dc2,
			struct sched_placement *out)
{
	struct sched_snapshot *s = nodes(dcs, n);
	struct sched_request r;
	struct sched_options opt = { .policy = pol, .seed = seed };
	struct herd_err err = { 0 };

	cpu_req(&r, sp, 1, 0);
	r.count = count;
	assert_int_equal(sched_plan(s, &r, &opt, out, NULL, &err), count);
	*in_dc1 = *in_dc2 = 0;
	for (int i = 0; i < count; i++) {
		*in_dc1 += !strcmp(dc_of(out[i].node, dcs), "dc1");
		*in_dc2 += !strcmp(dc_of(out[i].node, dcs), "dc2");
	}
	sched_snapshot_free(s);
}

/* sched_plan counts its own placements: binpack alone would put all on
 * n0; three nodes in dc1 and one in dc2 still split 2+2. */
static void test_plan_even(void **state)
{
	static const char *const dcs[] = { "dc1", "dc1", "dc1", "dc2" };
	struct sched_spread sp = { "${node.datacenter}", 50, NULL, 0, NULL, 0 };
	struct sched_placement out[8];
	int a, b;
	(void)state;

	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		plan_counts(dcs, 4, &sp, 4, (enum sched_policy)pol, 11, &a, &b, out);
		assert_int_equal(a, 2);
		assert_int_equal(b, 2);
	}
	plan_counts(dcs, 4, &sp, 8, SCHED_BINPACK, 11, &a, &b, out);
	assert_int_equal(a, 4);
	assert_int_equal(b, 4);
}

static void test_plan_targets(void **state)
{
	struct sched_spread_target tg[] = { { "dc1", 70 }, { "dc2", 30 } };
	struct sched_spread sp = { "${node.datacenter}", 50, tg, 2, NULL, 0 };
	struct sched_placement out[10];
	int a, b;
	(void)state;

	plan_counts(two_dcs, 4, &sp, 10, SCHED_BINPACK, 5, &a, &b, out);
	assert_int_equal(a, 7);
	assert_int_equal(b, 3);
	plan_counts(two_dcs, 4, &sp, 10, SCHED_HERD, 5, &a, &b, out);
	assert_int_equal(a, 7);
	assert_int_equal(b, 3);
	/* 75/25 of 4: 3+1 */
	tg[0].percent = 75;
	tg[1].percent = 25;
	plan_counts(two_dcs, 4, &sp, 4, SCHED_SPREAD, 5, &a, &b, out);
	assert_int_equal(a, 3);
	assert_int_equal(b, 1);
}

/* The same snapshot, request and seed give the same placements, random
 * tie-breaking included. */
static void test_deterministic(void **state)
{
	struct sched_spread sp = { "${meta.rack}", 30, NULL, 0, NULL, 0 };
	struct sched_placement x[6], y[6];
	int a, b;
	(void)state;

	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		plan_counts(two_dcs, 4, &sp, 6, (enum sched_policy)pol, 99, &a, &b, x);
		plan_counts(two_dcs, 4, &sp, 6, (enum sched_policy)pol, 99, &a, &b, y);
		for (int i = 0; i < 6; i++) {
			assert_int_equal(x[i].node, y[i].node);
			assert_true(x[i].score == y[i].score);
		}
	}
}

static void test_validation(void **state)
{
	struct sched_spread_target over[] = { { "a", 60 }, { "b", 50 } };
	struct sched_spread bad[] = {
		{ "${node.datacenter}", 0, NULL, 0, NULL, 0 },
		{ "${node.datacenter}", 101, NULL, 0, NULL, 0 },
		{ NULL, 50, NULL, 0, NULL, 0 },
		{ "${node.datacenter}", 50, over, 2, NULL, 0 },
	};
	struct sched_snapshot *s = nodes(two_dcs, 4);
	struct sched_request r;
	struct sched_placement p;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(place_one(s, cpu_req(&r, &bad[i], 1, 4), SCHED_BINPACK, &p), -EINVAL);
	sched_snapshot_free(s);
}

/* Inside the node, the device is the policy's (herd's packing of a shared
 * GPU): a spread moves nodes, never the GPU chosen on one. */
static void test_device_choice_kept(void **state)
{
	struct sched_spread sp = { "${node.datacenter}", 50, NULL, 0, NULL, 0 };
	struct sched_device_request dr = { .name = "nvidia/gpu", .count = 1, .compute = 250 };
	struct sched_placement a, b;
	(void)state;

	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = sched_snapshot_new();
		struct sched_request r;
		struct sched_placement pre;
		int n = add_node(s, "g0", 32000, 65536, 4, "A100", SCHED_MPS, 40960);
		/* GPU-2 is half taken: the packing policies finish it */
		pre = (struct sched_placement){ .node = n, .cpu_milli = 0, .ndev = 1,
						.dev = { { .dev = 2, .compute = 500, .memory_mib = 0 } } };
		assert_int_equal(sched_apply(s, &pre), 0);
		cpu_req(&r, NULL, 0, 4);
		r.device = &dr;
		assert_int_equal(place_one(s, &r, (enum sched_policy)pol, &a), 0);
		r.spreads = &sp;
		r.nspreads = 1;
		assert_int_equal(place_one(s, &r, (enum sched_policy)pol, &b), 0);
		assert_int_equal(a.node, b.node);
		if (pol != SCHED_RANDOM) /* random draws once more for the spread scan */
			assert_int_equal(a.dev[0].dev, b.dev[0].dev);
		assert_true(fabs(b.score - a.score - b.spread) < 1e-9 || pol == SCHED_RANDOM);
		sched_snapshot_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_even_parts),
		cmocka_unit_test(test_weight_sign),
		cmocka_unit_test(test_targets_and_rest),
		cmocka_unit_test(test_two_spreads),
		cmocka_unit_test(test_plan_even),
		cmocka_unit_test(test_plan_targets),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_device_choice_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
