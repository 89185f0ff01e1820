/* sched_request.prefer_node (ephemeral_disk { sticky }'s replacement): the
 * named node wins under every policy while it fits, even where the policy
 * would pick another; when it does not fit (or is not in the snapshot) the
 * placement goes where it would have gone; its bonus is not in the score. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "helpers.h"

/* n0 has the most room, n1 little, n2 the least: spread policies take n0,
 * packing ones n2; the preference asks for n1, which none would take. */
static struct sched_snapshot *three_nodes(void)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_node_spec ns[3] = {
		{ .id = "n0", .cpu_milli = 64000, .memory_mib = 65536 },
		{ .id = "n1", .cpu_milli = 8000, .memory_mib = 8192, .cpu_used = 2000 },
		{ .id = "n2", .cpu_milli = 4000, .memory_mib = 4096 },
	};
	for (int i = 0; i < 3; i++)
		assert_int_equal(sched_snapshot_add_node(s, &ns[i], NULL), i);
	return s;
}

static int place(struct sched_snapshot *s, const struct sched_request *req,
		 enum sched_policy policy, struct sched_placement *p)
{
	struct sched_options opt = { .policy = policy, .seed = 11 };
	struct herd_err err = { 0 };
	int rc = sched_place(s, req, &opt, p, NULL, &err);
	return rc < 0 ? rc : p->node;
}

static void test_preferred_node_wins(void **state)
{
	(void)state;
	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = three_nodes();
		struct sched_request req = { .cpu_milli = 1000, .memory_mib = 1024, .count = 1,
					     .prefer_node = "n1" };
		struct sched_placement p;
		assert_int_equal(place(s, &req, (enum sched_policy)pol, &p), 1);
		assert_true(p.score < SCHED_PREFER_BONUS / 2);
		sched_snapshot_free(s);
	}
}

static void test_without_preference_another_node(void **state)
{
	/* the test above means something: some policy picks another node
	 * when nothing is preferred */
	int other = 0;
	(void)state;
	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = three_nodes();
		struct sched_request req = { .cpu_milli = 1000, .memory_mib = 1024, .count = 1 };
		struct sched_placement p;
		if (place(s, &req, (enum sched_policy)pol, &p) != 1)
			other++;
		sched_snapshot_free(s);
	}
	assert_true(other >= SCHED_NPOLICIES / 2);
}

static void test_preferred_node_full_or_unknown(void **state)
{
	(void)state;
	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = three_nodes();
		/* n1 has 6 cores free: 7 do not fit there */
		struct sched_request req = { .cpu_milli = 7000, .memory_mib = 1024, .count = 1,
					     .prefer_node = "n1" };
		struct sched_placement p;
		assert_int_equal(place(s, &req, (enum sched_policy)pol, &p), 0);
		req.cpu_milli = 1000;
		req.prefer_node = "gone";
		assert_true(place(s, &req, (enum sched_policy)pol, &p) >= 0);
		sched_snapshot_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preferred_node_wins),
		cmocka_unit_test(test_without_preference_another_node),
		cmocka_unit_test(test_preferred_node_full_or_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
