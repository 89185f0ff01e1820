/* Policies: scores on hand-computed cases, and FGD's fragmentation measure.
 *
 * The node: 64 cores, 64 GiB, 4 GPUs, 300 thousandths already taken on
 * GPU-0 by one fractional allocation, so the GPUs have 700, 1000, 1000,
 * 1000 left (3700 in all).  The ask: 8 cores, half a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "helpers.h"
#include "sched/sched-int.h" /* the workload's fill_waste and pack_value tables */

static struct sched_snapshot *setup_node(void)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_placement p = { .node = 0, .ndev = 1 };
	add_node(s, "n", 64000, 65536, 4, "T4", SCHED_TIMESLICE, 0);
	p.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 300 };
	assert_int_equal(sched_apply(s, &p), 0);
	return s;
}

static double score_of(enum sched_policy pol, const struct sched_workload *w, int *dev)
{
	struct sched_snapshot *s = setup_node();
	struct sched_device_request dr = { .name = "gpu", .count = 1, .compute = 500 };
	struct sched_request req = { .cpu_milli = 8000, .count = 1, .device = &dr };
	struct sched_options o = { .policy = pol, .seed = 3, .workload = w };
	struct sched_placement p;
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	if (dev)
		*dev = p.dev[0].dev;
	sched_snapshot_free(s);
	return p.score;
}

static void test_bestfit(void **state)
{
	int dev;
	/* 100 x (1 - (0.5 x 56000/128000 + 0.5 x 3200/8000)) = 58.125 -> 58 */
	assert_true(score_of(SCHED_BESTFIT, NULL, &dev) == 58);
	assert_int_equal(dev, 0); /* best fit inside the node: 700 left */
}

static void test_dotprod(void **state)
{
	/* f = (0.5, 0.4625), p = (0.0625, 0.0625): 100 x (1 - 0.0601563/2) = 96.99 -> 96 */
	assert_true(score_of(SCHED_DOTPROD, NULL, NULL) == 96);
}

static void test_packing(void **state)
{
	/* reuses a shared GPU with 70% free: 100 - 70/10 = 93 */
	assert_true(score_of(SCHED_PACKING, NULL, NULL) == 93);
}

static void test_clustering(void **state)
{
	/* the node hosts only fractional tasks: 75 + 25 x (8000-3700)/8000 = 75 + 13 */
	assert_true(score_of(SCHED_CLUSTERING, NULL, NULL) == 88);
}

static void test_binpack_spread(void **state)
{
	/* mean of cpu 8000/64000, memory 0, gpu (300+500)/4000 = 10.8333 */
	assert_true(fabs(score_of(SCHED_BINPACK, NULL, NULL) - 100.0 * (0.125 + 0 + 0.2) / 3) < 1e-9);
	assert_true(fabs(score_of(SCHED_SPREAD, NULL, NULL) - (100.0 - 100.0 * 0.325 / 3)) < 1e-9);
}

static void test_fgd(void **state)
{
	struct sched_task_class c = { 1000, 0, 600, 1, NULL, 1.0 };
	struct sched_workload *w = sched_workload_new(&c, 1);
	int dev;
	/* F = 0 (700 >= 600).  On GPU-0 200 is left below 600: F' = 200,
	 * int(100 sigmoid(-0.2)) = 45; on GPU-1 500 left: sigmoid(-0.5) -> 37. */
	assert_true(score_of(SCHED_FGD, w, &dev) == 45);
	assert_int_equal(dev, 0);
	/* herd: the same bucket (45), + 1000 because it strands no GPU: the
	 * class takes 1000/600 CPU per GPU milli, and 56 cores are plenty for
	 * the 3200 idle; + 0.5 + 0.49 x (2000 - cost) / 3001 because GPU-0 is
	 * already shared.  Its cost: 200 left, plus the expected idle of 200
	 * left (no 600 fits: 200) less that of 700 left (a 600 fits, then 100
	 * stays: 100) = 300, so 0.5 + 0.49 x 1700/3001.  Rank 1000, times
	 * 1000 for a fraction, and (1000 - pack loss) x 200 above the bucket:
	 * the 600s pack one to a device (value 1000), a 500 is no class and
	 * counts as no smaller one (value 0), so it costs a 600's room on
	 * either GPU: loss 1000 - 0 - 0 = 1000, and the bucket decides. */
	assert_true(fabs(score_of(SCHED_HERD, w, &dev) -
			 (1000000.0 + 0.0 + 45.5 + 0.49 * 1700.0 / 3001.0)) < 1e-6);
	assert_int_equal(dev, 0);
	sched_workload_free(w);
}

/* herd, a CPU-only task: FGD's bucket, then the node with the least idle
 * GPU.  Node n (3700 of 4000 idle) against m (2 GPUs, all taken) and c (no
 * GPU): the class (8 cores, 1 GPU) still fits everywhere, so the gradient
 * is 0 and the bucket int(100 sigmoid(0)) = 50 on all three; the tie-break
 * 1 - idle / (capacity + 1000) is 1 - 3700/5000 = 0.26 on n, 1 - 0/3000
 * = 1 on m and 1 - 0/1000 = 1 on c: 100.26, 101, 101, and m (first) wins. */
static void test_herd_cpu_only(void **state)
{
	struct sched_task_class c = { 8000, 0, 1000, 1, NULL, 1.0 };
	struct sched_workload *w = sched_workload_new(&c, 1);
	struct sched_snapshot *s = setup_node();
	struct sched_placement p = { .node = 1, .ndev = 2 }, got;
	struct sched_request req = { .cpu_milli = 4000, .count = 1 };
	struct sched_options o = { .policy = SCHED_HERD, .workload = w };
	int m = add_node(s, "m", 64000, 65536, 2, "T4", SCHED_TIMESLICE, 0);
	add_node(s, "c", 64000, 65536, 0, "T4", SCHED_TIMESLICE, 0);

	p.node = m;
	p.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 1000, .whole = true };
	p.dev[1] = (struct sched_device_share){ .dev = 1, .compute = 1000, .whole = true };
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_place(s, &req, &o, &got, NULL, NULL), 0);
	assert_int_equal(got.node, m);
	assert_true(got.score == 101.0);
	o.scan_all = true; /* the plain scan agrees */
	assert_int_equal(sched_place(s, &req, &o, &got, NULL, NULL), 0);
	assert_int_equal(got.node, m);
	/* with m's GPUs back, m is idle too (2000/3000 idle: 100.33) and the
	 * GPU-less node c wins */
	assert_int_equal(sched_release(s, &p), 0);
	o.scan_all = false;
	assert_int_equal(sched_place(s, &req, &o, &got, NULL, NULL), 0);
	assert_string_equal(sched_node_id(s, got.node), "c");
	assert_true(got.score == 101.0);
	sched_snapshot_free(s);
	sched_workload_free(w);
}

/* herd, a GPU task: nodes where it strands GPU come last, whatever the
 * bucket.  The class (8 cores, 1 GPU) takes 8 CPU per GPU milli.  Node a
 * (24 cores, 3 GPUs) after a 12-core 1-GPU task keeps 12 cores for 2 idle
 * GPUs: usable min(2000, 12000/8) = 1500, so 500 stranded where none was;
 * node b (64 cores) strands none.  The class still fits on both (F = F' =
 * 0, bucket int(100 sigmoid(0)) = 50): a scores 50, b 1050, and b wins
 * although a comes first. */
static void test_herd_strands_last(void **state)
{
	struct sched_task_class c = { 8000, 0, 1000, 1, NULL, 1.0 };
	struct sched_workload *w = sched_workload_new(&c, 1);
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1, .compute = 1000 };
	struct sched_request req = { .cpu_milli = 12000, .count = 1, .device = &dr };
	struct sched_options o = { .policy = SCHED_HERD, .workload = w };
	struct sched_placement p;

	add_node(s, "a", 24000, 65536, 3, "T4", SCHED_TIMESLICE, 0);
	add_node(s, "b", 64000, 65536, 3, "T4", SCHED_TIMESLICE, 0);
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_int_equal(p.node, 1);
	assert_true(p.score == 1050);
	/* a 4-core task strands nothing on a (20 cores for 2 GPUs) and the
	 * first node wins: 1050 on both */
	req.cpu_milli = 4000;
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_int_equal(p.node, 0);
	assert_true(p.score == 1050);
	sched_snapshot_free(s);
	sched_workload_free(w);
}

/* herd, a fraction on a tie: node a has GPU-0 taken whole and GPU-1 free,
 * node b has half of its MPS GPU-0 taken by one tenant and GPU-1 free.  Half
 * a GPU (the workload: that request alone) leaves no fragment either way
 * (a: 0 and 500 left, b: 0 and 1000), so the gradient is 0, both nodes get
 * bucket int(100 sigmoid(0)) = 50 and strand nothing: 1050.  Completing
 * b's shared GPU adds 0.5 + 0.49 x (2000 - 0) / 3001 (it leaves 0, and the
 * expected idle of 0 and of 500 left are both 0), so b wins whatever the
 * tie order (ranks either way, or the snapshot's order with a or b first),
 * and takes its shared GPU-0 rather than its free GPU-1. */
static void herd_shared_case(bool b_first, const uint32_t *rank, bool scan_all)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1, .compute = 500 };
	struct sched_request req = { .cpu_milli = 1000, .count = 1, .device = &dr };
	struct sched_options o = { .policy = SCHED_HERD, .tie_rank = rank, .scan_all = scan_all };
	struct sched_placement whole = { .ndev = 1 }, half = { .ndev = 1 }, p;
	int a, b;

	if (b_first) {
		b = add_node(s, "b", 16000, 65536, 2, "T4", SCHED_MPS, 16384);
		a = add_node(s, "a", 16000, 65536, 2, "T4", SCHED_MPS, 16384);
	} else {
		a = add_node(s, "a", 16000, 65536, 2, "T4", SCHED_MPS, 16384);
		b = add_node(s, "b", 16000, 65536, 2, "T4", SCHED_MPS, 16384);
	}
	whole.node = a;
	whole.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 1000,
						    .memory_mib = 16384, .whole = true };
	half.node = b;
	half.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 500 };
	assert_int_equal(sched_apply(s, &whole), 0);
	assert_int_equal(sched_apply(s, &half), 0);
	assert_int_equal(sched_device_tenants(s, b, 0), 1);
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_string_equal(sched_node_id(s, p.node), "b");
	assert_int_equal(p.dev[0].dev, 0);
	/* rank 1000 x 1000, no pack loss either way (two 500s fill a
	 * device): + 1000 x 200, then the bucket and the tie-break */
	assert_true(fabs(p.score - (1200050.5 + 0.49 * 2000.0 / 3001.0)) < 1e-6);
	/* node a alone still takes its free GPU (the tie-break only orders) */
	assert_int_equal(sched_release(s, &half), 0);
	half.dev[0].compute = 1000;
	half.dev[0].memory_mib = 16384;
	half.dev[0].whole = true;
	assert_int_equal(sched_apply(s, &half), 0);
	half.dev[0].dev = 1;
	assert_int_equal(sched_apply(s, &half), 0);
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_string_equal(sched_node_id(s, p.node), "a");
	assert_int_equal(p.dev[0].dev, 1);
	assert_true(p.score == 1200050);
	sched_snapshot_free(s);
}

static void test_herd_prefers_shared_gpu(void **state)
{
	static const uint32_t a_first[2] = { 0, 1 }, b_first[2] = { 1, 0 };
	for (int scan_all = 0; scan_all < 2; scan_all++)
		for (int order = 0; order < 2; order++) {
			/* ranks are per node index: both rank arrays, and none */
			herd_shared_case(order, order ? b_first : a_first, scan_all);
			herd_shared_case(order, order ? a_first : b_first, scan_all);
			herd_shared_case(order, NULL, scan_all);
		}
}

/* herd's expected idle of a device with l left (w->fill_waste), by hand for
 * shares of 320 (frequency 1) and 470 (frequency 3): below 320 nothing
 * fits and all of l stays idle; from 320 only the 320 fits (360 -> 40);
 * from 470 the next fitting task is a 320 one time in four:
 * 530 -> (W(210) + 3 W(60)) / 4 = (210 + 180) / 4 = 97.5,
 * 680 -> (W(360) + 3 W(210)) / 4 = (40 + 630) / 4 = 167.5.
 * So a 320 costs 210 + 210 - 97.5 = 322.5 on a device with 530 left and
 * 360 + 40 - 167.5 = 232.5 on one with 680 left: best fit alone would
 * take the first and leave 210 that neither class can use.  CPU-only and
 * multi-device classes do not fill a device; a whole device fills 1000. */
static void test_herd_fill_waste(void **state)
{
	struct sched_task_class c[] = { { 1000, 0, 320, 1, NULL, 1 }, { 1000, 0, 470, 1, NULL, 3 },
					{ 4000, 0, 0, 0, NULL, 2 }, { 8000, 0, 1000, 2, NULL, 2 } };
	struct sched_workload *w = sched_workload_new(c, 4), *whole;
	struct sched_task_class one = { 1000, 0, 1000, 1, NULL, 1 };

	assert_true(w->fill_waste[0] == 0);
	assert_true(w->fill_waste[210] == 210);
	assert_true(w->fill_waste[319] == 319);
	assert_true(w->fill_waste[320] == 0);
	assert_true(w->fill_waste[360] == 40);
	assert_true(fabs(w->fill_waste[530] - 97.5) < 1e-9);
	assert_true(fabs(w->fill_waste[680] - 167.5) < 1e-9);
	sched_workload_free(w);
	whole = sched_workload_new(&one, 1);
	assert_true(whole->fill_waste[1000] == 0);
	assert_true(whole->fill_waste[999] == 999);
	sched_workload_free(whole);
}

/* herd's pack values (w->pack_value, w->pack_k), by hand for shares of
 * 320 (frequency 1) and 470 (frequency 3) and a whole device (4): the best
 * fractional packing puts the 470s two to a device and the 320s three
 * (mixing them, 790, would waste more), so the bin-packing LP's dual gives
 * a 470 half a device (500) and a 320 a third (333.3); its bound is met:
 * 3/4 x 1/2 + 1/4 x 1/3 devices per 470-or-320 task either way.  A device
 * with 680 left can still hold 666.7 (two 320s), with 530 left 500 (a 470),
 * with 210 nothing.  A 480, no class, counts as a 470 (the largest smaller
 * share).  CPU-only and multi-device classes take no part. */
static void test_herd_pack_value(void **state)
{
	struct sched_task_class c[] = { { 1000, 0, 320, 1, NULL, 1 }, { 1000, 0, 470, 1, NULL, 3 },
					{ 1000, 0, 1000, 1, NULL, 4 }, { 4000, 0, 0, 0, NULL, 2 },
					{ 8000, 0, 1000, 2, NULL, 2 } };
	struct sched_task_class big[] = { { 1000, 0, 810, 1, NULL, 3 }, { 1000, 0, 160, 1, NULL, 1 } };
	struct sched_workload *w = sched_workload_new(c, 5);

	assert_true(fabs(w->pack_value[470] - 500.0) < 1e-6);
	assert_true(fabs(w->pack_value[320] - 1000.0 / 3) < 1e-6);
	assert_true(fabs(w->pack_value[1000] - 1000.0) < 1e-6);
	assert_true(fabs(w->pack_value[480] - 500.0) < 1e-6);
	assert_true(w->pack_value[100] == 0);
	assert_true(fabs(w->pack_k[1000] - 1000.0) < 1e-6);
	assert_true(fabs(w->pack_k[680] - 2000.0 / 3) < 1e-6);
	assert_true(fabs(w->pack_k[530] - 500.0) < 1e-6);
	assert_true(w->pack_k[210] == 0);
	sched_workload_free(w);
	/* three 810s to one 160: each 810 needs a device of its own and the
	 * 160s all fit beside them, so an 810 is worth a whole device and a
	 * 160 nothing (the dual's only optimum: 3/4 x 1 against, for example,
	 * 3/4 x 5/6 + 1/4 x 1/6 with the 160 priced) */
	w = sched_workload_new(big, 2);
	assert_true(fabs(w->pack_value[810] - 1000.0) < 1e-6);
	assert_true(fabs(w->pack_value[160]) < 1e-6);
	assert_true(fabs(w->pack_k[190]) < 1e-6);
	sched_workload_free(w);
}

/* herd puts a 470 on a free GPU rather than beside a lone 320 (the
 * workload of test_herd_pack_value).  Node a: one GPU with 320 taken (680
 * left); node b: one free GPU; 64 cores each, so nothing strands (rank
 * 1000 on both).  FGD's gradient prefers a: there the whole-device class
 * (half the tasks) could not use the 680 before and the 210 after, all
 * classes are short of 210: F = 0.5 x 680 = 340, F' = 210, bucket
 * int(100 sigmoid(0.13)) = 53; on b, 530 left that the whole-device class
 * cannot use: F' = 265, bucket int(100 sigmoid(-0.265)) = 43.  The pack
 * loss: on a 666.7 - 500 - 0 = 167 (rounded), on b 1000 - 500 - 500 = 0,
 * and it ranks above the bucket: b scores 1e6 + 1000 x 200 + 43, a
 * 1e6 + 833 x 200 + 53 + its shared tie-break.  Either tie order. */
static void herd_pack_case(const uint32_t *rank, bool scan_all)
{
	struct sched_task_class c[] = { { 1000, 0, 320, 1, NULL, 1 }, { 1000, 0, 470, 1, NULL, 3 },
					{ 1000, 0, 1000, 1, NULL, 4 } };
	struct sched_workload *w = sched_workload_new(c, 3);
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1, .compute = 470 };
	struct sched_request req = { .cpu_milli = 1000, .count = 1, .device = &dr };
	struct sched_options o = { .policy = SCHED_HERD, .workload = w, .tie_rank = rank,
				   .scan_all = scan_all };
	struct sched_placement p = { .ndev = 1, .cpu_milli = 1000 };
	int a = add_node(s, "a", 64000, 65536, 1, "T4", SCHED_TIMESLICE, 0);

	add_node(s, "b", 64000, 65536, 1, "T4", SCHED_TIMESLICE, 0);
	p.node = a;
	p.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 320 };
	assert_int_equal(sched_apply(s, &p), 0);
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_string_equal(sched_node_id(s, p.node), "b");
	assert_true(p.score == 1200043);
	o.policy = SCHED_FGD;
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_string_equal(sched_node_id(s, p.node), "a");
	assert_true(p.score == 53);
	sched_snapshot_free(s);
	sched_workload_free(w);
}

/* The same workload: a 320 on a free GPU of a node that keeps 960 cores
 * after it, less than any fraction of the workload asks (1000).  The GPU
 * could still hold 666.7 (two 320s) but the node cannot feed them, so the
 * loss is 1000 - 333.3 - 0 = 667 rather than 0.  Nothing strands (the
 * classes take 8000 CPU per 5730 GPU milli: 960 cores feed 687 of the 680
 * idle), so rank 1000; F = 0 before, and after every class lacks CPU: F' =
 * 680, bucket int(100 sigmoid(-0.68)) = 33.  1e6 + 333 x 200 + 33. */
static void test_herd_pack_loss_cpu(void **state)
{
	struct sched_task_class c[] = { { 1000, 0, 320, 1, NULL, 1 }, { 1000, 0, 470, 1, NULL, 3 },
					{ 1000, 0, 1000, 1, NULL, 4 } };
	struct sched_workload *w = sched_workload_new(c, 3);
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_device_request dr = { .name = "gpu", .count = 1, .compute = 320 };
	struct sched_request req = { .cpu_milli = 1000, .count = 1, .device = &dr };
	struct sched_options o = { .policy = SCHED_HERD, .workload = w };
	struct sched_placement p;

	assert_true(w->pack_min_cpu == 1000);
	add_node(s, "a", 1960, 65536, 1, "T4", SCHED_TIMESLICE, 0);
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_true(p.score == 1066633);
	/* with 1000 cores kept, the loss is 0: 1e6 + 1000 x 200 + bucket */
	req.cpu_milli = 960;
	assert_int_equal(sched_place(s, &req, &o, &p, NULL, NULL), 0);
	assert_true(p.score >= 1200000);
	sched_snapshot_free(s);
	sched_workload_free(w);
}

static void test_herd_pack_loss(void **state)
{
	static const uint32_t a_first[2] = { 0, 1 }, b_first[2] = { 1, 0 };
	for (int scan_all = 0; scan_all < 2; scan_all++) {
		herd_pack_case(a_first, scan_all);
		herd_pack_case(b_first, scan_all);
		herd_pack_case(NULL, scan_all);
	}
}

static void test_frag_measure(void **state)
{
	struct sched_task_class c[] = { { 1000, 0, 600, 1, NULL, 1 }, { 2000, 0, 0, 0, NULL, 1 },
					{ 1000, 0, 1000, 1, "A100|H100", 2 } };
	struct sched_workload *w = sched_workload_new(c, 3);
	struct sched_snapshot *s = setup_node();
	struct sched_placement p = { .node = 0, .ndev = 1, .cpu_milli = 63500 };
	/* frequencies 1/4, 1/4, 1/2; idle 3700.  class 1 fits with nothing
	 * below 600; the CPU-only class and the A100/H100 class (T4 here)
	 * count all idle: 0.25 x 3700 + 0.5 x 3700 */
	assert_true(fabs(sched_frag(s, w, 0) - 0.75 * 3700) < 1e-9);
	p.dev[0] = (struct sched_device_share){ .dev = 0, .compute = 200 };
	assert_int_equal(sched_apply(s, &p), 0);
	/* 500 left on GPU-0, below 600; and 500 cpu left, below class 1's
	 * 1000: class 1 now counts all idle (3500) */
	assert_true(fabs(sched_frag(s, w, 0) - 3500.0) < 1e-9);
	assert_true(fabs(sched_frag(s, w, -1) - 3500.0) < 1e-9);
	sched_snapshot_free(s);
	sched_workload_free(w);
}

static void test_policy_names(void **state)
{
	for (int p = 0; p < SCHED_NPOLICIES; p++) {
		enum sched_policy q;
		assert_int_equal(sched_policy_parse(sched_policy_name((enum sched_policy)p), &q), 0);
		assert_int_equal(q, p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bestfit),    cmocka_unit_test(test_dotprod),
		cmocka_unit_test(test_packing),    cmocka_unit_test(test_clustering),
		cmocka_unit_test(test_binpack_spread), cmocka_unit_test(test_fgd),
		cmocka_unit_test(test_frag_measure), cmocka_unit_test(test_policy_names),
		cmocka_unit_test(test_herd_cpu_only),
		cmocka_unit_test(test_herd_strands_last),
		cmocka_unit_test(test_herd_prefers_shared_gpu),
		cmocka_unit_test(test_herd_fill_waste),
		cmocka_unit_test(test_herd_pack_value),
		cmocka_unit_test(test_herd_pack_loss),
		cmocka_unit_test(test_herd_pack_loss_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
