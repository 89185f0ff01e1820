/* sched: max_tenants, the agent's `replicas` of a sharing GPU, as a limit
 * on how many allocations one device holds at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "sched/sched.h"

/* One node, two mps GPUs of 16 GiB; GPU-0 takes at most max0 tenants. */
static struct sched_snapshot *two_gpus(int max0, int tenants0)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_node_spec ns = { .id = "n1", .cpu_milli = 64000, .memory_mib = 1 << 20 };
	struct herd_err err = { 0 };
	int node = sched_snapshot_add_node(s, &ns, &err);
	assert_int_equal(node, 0);
	for (int i = 0; i < 2; i++) {
		struct sched_device_spec ds = { .id = i ? "GPU-1" : "GPU-0", .vendor = "nvidia",
			.type = "gpu", .model = "T4", .memory_mib = 16384, .numa_node = 0,
			.nvlink_group = -1, .sharing = SCHED_MPS };
		if (!i) {
			ds.max_tenants = max0;
			ds.tenants = tenants0;
			ds.compute_taken = (int32_t)(100 * tenants0);
		}
		assert_int_equal(sched_snapshot_add_device(s, node, &ds, &err), i);
	}
	return s;
}

static int place_tenth(struct sched_snapshot *s, enum sched_policy policy,
		       struct sched_placement *pl, struct sched_explain *why)
{
	struct sched_device_request dr = { .name = "nvidia/gpu", .count = 1, .compute = 100 };
	struct sched_request req = { .cpu_milli = 100, .memory_mib = 64, .count = 1, .device = &dr };
	struct sched_options opt = { .policy = policy, .seed = 1 };
	struct herd_err err = { 0 };
	return sched_place(s, &req, &opt, pl, why, &err);
}

/* Binpack keeps packing GPU-0 until its tenant limit, then GPU-1. */
static void test_limit_moves_to_next_gpu(void **state)
{
	(void)state;
	for (int p = 0; p < 2; p++) {
		enum sched_policy policy = p ? SCHED_HERD : SCHED_BINPACK;
		struct sched_snapshot *s = two_gpus(3, 0);
		int on0 = 0, on1 = 0;
		for (int i = 0; i < 8; i++) {
			struct sched_placement pl;
			assert_int_equal(place_tenth(s, policy, &pl, NULL), 0);
			assert_int_equal(sched_apply(s, &pl), 0);
			if (pl.dev[0].dev == 0)
				on0++;
			else
				on1++;
		}
		assert_int_equal(sched_device_tenants(s, 0, 0), on0);
		/* without the limit binpack would put all eight on GPU-0 */
		if (policy == SCHED_BINPACK)
			assert_int_equal(on0, 3);
		assert_true(on0 <= 3);
		assert_int_equal(on0 + on1, 8);
		sched_snapshot_free(s);
	}
}

/* A full device (tenants == max) refuses fractions, explains why, and
 * sched_apply refuses a placement made elsewhere. */
static void test_full_device(void **state)
{
	(void)state;
	struct sched_snapshot *s = two_gpus(2, 2);
	struct sched_placement pl;
	struct sched_explain why;
	memset(&why, 0, sizeof(why));
	assert_int_equal(place_tenth(s, SCHED_BINPACK, &pl, &why), 0);
	assert_int_equal(pl.dev[0].dev, 1);
	/* the same placement forced onto GPU-0 does not apply */
	pl.dev[0].dev = 0;
	assert_int_equal(sched_apply(s, &pl), -EINVAL);
	sched_snapshot_free(s);

	/* one GPU only: nothing fits, and the miss names the tenant limit */
	s = sched_snapshot_new();
	struct sched_node_spec ns = { .id = "n1", .cpu_milli = 64000, .memory_mib = 1 << 20 };
	struct sched_device_spec ds = { .id = "GPU-0", .vendor = "nvidia", .type = "gpu",
		.model = "T4", .memory_mib = 16384, .numa_node = 0, .nvlink_group = -1,
		.sharing = SCHED_MPS, .max_tenants = 1, .tenants = 1, .compute_taken = 100 };
	struct herd_err err = { 0 };
	assert_int_equal(sched_snapshot_add_node(s, &ns, &err), 0);
	assert_int_equal(sched_snapshot_add_device(s, 0, &ds, &err), 0);
	memset(&why, 0, sizeof(why));
	assert_int_equal(place_tenth(s, SCHED_HERD, &pl, &why), -ENOSPC);
	int named = 0;
	for (int i = 0; i < why.nmisses; i++)
		named |= strstr(why.misses[i], "1 of 1 tenants") != NULL;
	assert_true(named);
	sched_snapshot_free(s);
}

/* max_tenants 0: no limit but compute (ten tenths fit, the eleventh not). */
static void test_no_limit(void **state)
{
	(void)state;
	struct sched_snapshot *s = two_gpus(0, 0);
	int on0 = 0;
	for (int i = 0; i < 20; i++) {
		struct sched_placement pl;
		assert_int_equal(place_tenth(s, SCHED_BINPACK, &pl, NULL), 0);
		assert_int_equal(sched_apply(s, &pl), 0);
		on0 += pl.dev[0].dev == 0;
	}
	assert_int_equal(on0, 10);
	sched_snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_moves_to_next_gpu),
		cmocka_unit_test(test_full_device),
		cmocka_unit_test(test_no_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
