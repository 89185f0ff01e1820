/* Host volumes in placement: only nodes with every asked volume are
 * candidates, writable ones for a read-write ask; the explanation counts
 * the nodes each volume filtered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "common/strbuf.h"
#include "helpers.h"

/* Four CPU nodes: n0 none, n1 datasets (rw), n2 datasets (ro), n3
 * datasets (rw) and ckpt (ro).  n0 has the most room, so a policy that
 * ignored volumes would take it. */
static struct sched_snapshot *four_nodes(void)
{
	static const struct sched_volume v1[] = { { "datasets", false } };
	static const struct sched_volume v2[] = { { "datasets", true } };
	static const struct sched_volume v3[] = { { "datasets", false }, { "ckpt", true } };
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_node_spec ns[4] = {
		{ .id = "n0", .cpu_milli = 64000, .memory_mib = 65536 },
		{ .id = "n1", .cpu_milli = 8000, .memory_mib = 8192, .volumes = v1, .nvolumes = 1 },
		{ .id = "n2", .cpu_milli = 8000, .memory_mib = 8192, .volumes = v2, .nvolumes = 1 },
		{ .id = "n3", .cpu_milli = 8000, .memory_mib = 8192, .volumes = v3, .nvolumes = 2 },
	};
	for (int i = 0; i < 4; i++)
		assert_int_equal(sched_snapshot_add_node(s, &ns[i], NULL), i);
	return s;
}

/* Every node where req is placed in n placements, applied one by one. */
static int place(struct sched_snapshot *s, const struct sched_request *req,
		 enum sched_policy policy, struct sched_explain *why)
{
	struct sched_options opt = { .policy = policy, .seed = 7 };
	struct sched_placement p;
	struct herd_err err = { 0 };
	int rc = sched_place(s, req, &opt, &p, why, &err);
	if (rc < 0)
		return rc;
	assert_int_equal(sched_apply(s, &p), 0);
	return p.node;
}

static void test_only_nodes_with_the_volume(void **state)
{
	static const struct sched_volume rw[] = { { "datasets", false } };
	static const struct sched_volume ro[] = { { "datasets", true } };
	(void)state;
	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = four_nodes();
		struct sched_request req = { .cpu_milli = 1000, .memory_mib = 1024, .count = 1,
					     .volumes = rw, .nvolumes = 1 };
		/* read-write: n1 or n3, never n0 (no volume) nor n2 (read-only) */
		for (int i = 0; i < 12; i++) {
			int node = place(s, &req, (enum sched_policy)pol, NULL);
			assert_true(node == 1 || node == 3);
		}
		/* read-only will do on n2 as well */
		req.volumes = ro;
		for (int i = 0; i < 12; i++) {
			int node = place(s, &req, (enum sched_policy)pol, NULL);
			assert_true(node >= 1 && node <= 3);
		}
		sched_snapshot_free(s);
	}
}

static void test_explanation_counts_filtered_nodes(void **state)
{
	static const struct sched_volume two[] = { { "datasets", false }, { "ckpt", false } };
	static const struct sched_volume missing[] = { { "scratch", false } };
	struct sched_snapshot *s = four_nodes();
	struct sched_request req = { .cpu_milli = 1000, .memory_mib = 1024, .count = 1,
				     .volumes = two, .nvolumes = 2 };
	struct sched_explain why;
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	/* n0: no datasets; n2: datasets read-only; n1: no ckpt; n3: ckpt
	 * read-only */
	assert_int_equal(place(s, &req, SCHED_HERD, &why), -ENOSPC);
	sched_explain_format(&why, &req, &sb);
	assert_string_equal(sb.buf,
		"no node fits (4 nodes evaluated)\n"
		"  missing host volume \"datasets\": 1 node\n"
		"  host volume \"datasets\" is read-only (a writable one is asked): 1 node\n"
		"  missing host volume \"ckpt\": 1 node\n"
		"  host volume \"ckpt\" is read-only (a writable one is asked): 1 node\n");
	strbuf_release(&sb);

	req.volumes = missing;
	req.nvolumes = 1;
	assert_int_equal(place(s, &req, SCHED_BINPACK, &why), -ENOSPC);
	sched_explain_format(&why, &req, &sb);
	assert_string_equal(sb.buf, "no node fits (4 nodes evaluated)\n"
				    "  missing host volume \"scratch\": 4 nodes\n");
	strbuf_release(&sb);
	sched_snapshot_free(s);
}

/* Nodes with the volume but without room count as full, not as missing. */
static void test_volume_then_capacity(void **state)
{
	static const struct sched_volume rw[] = { { "datasets", false } };
	struct sched_snapshot *s = four_nodes();
	struct sched_request req = { .cpu_milli = 9000, .memory_mib = 1024, .count = 1,
				     .volumes = rw, .nvolumes = 1 };
	struct sched_explain why;
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	assert_int_equal(place(s, &req, SCHED_HERD, &why), -ENOSPC);
	sched_explain_format(&why, &req, &sb);
	assert_string_equal(sb.buf,
		"no node fits (4 nodes evaluated)\n"
		"  missing host volume \"datasets\": 1 node\n"
		"  host volume \"datasets\" is read-only (a writable one is asked): 1 node\n"
		"  cpu exhausted on 2 nodes\n");
	strbuf_release(&sb);
	sched_snapshot_free(s);
}

static void test_bad_volumes_refused(void **state)
{
	static const struct sched_volume noname[] = { { NULL, false } };
	struct sched_snapshot *s = four_nodes();
	struct sched_request req = { .cpu_milli = 1, .memory_mib = 1, .count = 1,
				     .volumes = noname, .nvolumes = 1 };
	struct sched_node_spec ns = { .id = "n9", .cpu_milli = 1, .memory_mib = 1,
				      .volumes = noname, .nvolumes = 1 };
	struct sched_options opt = { .policy = SCHED_HERD };
	struct sched_placement p;
	struct herd_err err = { 0 };

	(void)state;
	assert_int_equal(sched_place(s, &req, &opt, &p, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "request: a host volume without a name");
	assert_int_equal(sched_snapshot_add_node(s, &ns, &err), -EINVAL);
	assert_string_equal(err.msg, "node n9: a host volume without a name");
	sched_snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_nodes_with_the_volume),
		cmocka_unit_test(test_explanation_counts_filtered_nodes),
		cmocka_unit_test(test_volume_then_capacity),
		cmocka_unit_test(test_bad_volumes_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
