/* A fast subset of the trace replay, checked against the published figures
 * (Weng et al., USENIX ATC'23): one seed, the cheap policies and fgd.  Reads ../shared/traces/openb next to the source tree, or
 * $HERD_TRACES; skips when the trace is absent (it is never copied into
 * the project). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/strbuf.h"
#include "sched/sim.h"

static struct trace tr;
static char dir[4096];

static int slurp(const char *name, struct strbuf *sb)
{
	char path[4200];
	char buf[65536];
	size_t n;
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "rbe")))
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(sb, buf, n);
	fclose(f);
	return 0;
}

static int load(void)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	int rc = -1;
	if (getenv("HERD_TRACES"))
		snprintf(dir, sizeof(dir), "%s", getenv("HERD_TRACES"));
	else
		snprintf(dir, sizeof(dir), "%s/../shared/traces/openb",
			 getenv("HERD_SOURCE_ROOT") ? getenv("HERD_SOURCE_ROOT") : ".");
	if (!slurp("openb_node_list_gpu_node.csv", &a) && !slurp("openb_pod_list_default.csv", &b) &&
	    !trace_parse_nodes(&tr, a.buf, a.len, NULL) && !trace_parse_pods(&tr, b.buf, b.len, NULL))
		rc = 0;
	strbuf_release(&a);
	strbuf_release(&b);
	return rc;
}

/* Allocation % at arrived 100 %; also checks that the lower bound on
 * unallocated GPUs holds for this policy (it must for every policy). */
static double alloc100(enum sched_policy p, uint64_t seed)
{
	struct sched_workload *w = sim_workload(&tr);
	struct sim_result r;
	double unalloc;
	assert_int_equal(sim_run(&tr, w, p, seed, 1.3, &r, NULL), 0);
	sched_workload_free(w);
	unalloc = (100.0 - r.alloc_100) / 100.0 * (double)sim_capacity(&tr);
	assert_true(r.bound_100 > 0 && r.bound_100 <= unalloc);
	return r.alloc_100;
}

static void test_published(void **state)
{
	if (!tr.nnodes) {
		fprintf(stderr, "# trace not found in %s (set HERD_TRACES)\n", dir);
		skip();
	}
	assert_int_equal(tr.nnodes, 1213);
	assert_int_equal(sim_capacity(&tr), 6212000);
	/* one seed, so a wider band than the 0.5 of the 10-seed mean */
	assert_true(fabs(alloc100(SCHED_BESTFIT, 42) - 92.86) < 1.0);
	assert_true(fabs(alloc100(SCHED_RANDOM, 42) - 86.30) < 1.0);
	assert_true(fabs(alloc100(SCHED_CLUSTERING, 42) - 91.65) < 1.0);
}

static double fgd42;

static void test_published_fgd(void **state)
{
	if (!tr.nnodes)
		skip();
	fgd42 = alloc100(SCHED_FGD, 42);
	assert_true(fabs(fgd42 - 95.23) < 1.0);
}

/* herd on seed 42: 96.28 when measured (fgd 95.40; docs/scheduling.md);
 * a band of 0.3 for changes that move single tasks, and clearly above fgd
 * (the 10-seed means differ by 0.96 points). */
static void test_herd_vs_fgd(void **state)
{
	double herd;
	if (!tr.nnodes)
		skip();
	herd = alloc100(SCHED_HERD, 42);
	assert_true(fabs(herd - 96.28) < 0.3);
	assert_true(herd >= fgd42 + 0.2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_published),
		cmocka_unit_test(test_published_fgd),
		cmocka_unit_test(test_herd_vs_fgd),
	};
	int rc;
	if (load()) {
		/* the TAP way to skip a whole file; meson reports SKIP */
		printf("1..0 # SKIP trace not found in %s (set HERD_TRACES)\n", dir);
		trace_release(&tr);
		return 0;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	trace_release(&tr);
	return rc;
}
