/* Ephemeral disk in placement (ephemeral_disk { size }): a node whose disk
 * is known takes asks while the sum of placed sizes fits, then explains
 * "disk exhausted"; a node whose disk is not known (0) is not checked;
 * release gives the disk back; under every policy. */
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

static void test_disk_fills_up(void **state)
{
	(void)state;
	for (int pol = 0; pol < SCHED_NPOLICIES; pol++) {
		struct sched_snapshot *s = sched_snapshot_new();
		struct sched_node_spec ns = { .id = "n0", .cpu_milli = 64000, .memory_mib = 65536,
					      .disk_mib = 1000, .disk_used = 100 };
		struct sched_request req = { .cpu_milli = 100, .memory_mib = 64, .count = 1,
					     .disk_mib = 400 };
		struct sched_options opt = { .policy = (enum sched_policy)pol, .seed = 3 };
		struct sched_placement p[2];
		struct sched_explain why;
		struct strbuf sb = STRBUF_INIT;
		struct herd_err err = { 0 };
		assert_int_equal(sched_snapshot_add_node(s, &ns, NULL), 0);
		/* 900 free: two of 400 fit, a third does not */
		for (int i = 0; i < 2; i++) {
			assert_int_equal(sched_place(s, &req, &opt, &p[i], &why, &err), 0);
			assert_int_equal(p[i].disk_mib, 400);
			assert_int_equal(sched_apply(s, &p[i]), 0);
		}
		assert_int_equal(sched_place(s, &req, &opt, &p[0], &why, &err), -ENOSPC);
		assert_int_equal(why.filtered_disk, 1);
		sched_explain_format(&why, &req, &sb);
		assert_non_null(strstr(sb.buf, "disk exhausted on 1 node"));
		strbuf_release(&sb);
		/* a placement too big for the disk is not applied */
		p[0].disk_mib = 200;
		assert_int_equal(sched_apply(s, &p[0]), -EINVAL);
		/* released: fits again */
		p[0].disk_mib = 400;
		assert_int_equal(sched_release(s, &p[1]), 0);
		assert_int_equal(sched_place(s, &req, &opt, &p[1], NULL, &err), 0);
		/* no disk asked: the full disk does not matter */
		assert_int_equal(sched_apply(s, &p[1]), 0);
		req.disk_mib = 0;
		assert_int_equal(sched_place(s, &req, &opt, &p[0], NULL, &err), 0);
		sched_snapshot_free(s);
	}
}

static void test_unknown_disk_not_checked(void **state)
{
	struct sched_snapshot *s = sched_snapshot_new();
	struct sched_node_spec ns = { .id = "n0", .cpu_milli = 8000, .memory_mib = 8192 };
	struct sched_request req = { .cpu_milli = 100, .memory_mib = 64, .count = 1,
				     .disk_mib = 1 << 30 };
	struct sched_options opt = { .policy = SCHED_HERD, .seed = 3 };
	struct sched_placement p;
	struct herd_err err = { 0 };
	(void)state;
	assert_int_equal(sched_snapshot_add_node(s, &ns, NULL), 0);
	assert_int_equal(sched_place(s, &req, &opt, &p, NULL, &err), 0);
	assert_int_equal(sched_apply(s, &p), 0);
	req.disk_mib = -1;
	assert_int_equal(sched_place(s, &req, &opt, &p, NULL, &err), -EINVAL);
	sched_snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disk_fills_up),
		cmocka_unit_test(test_unknown_disk_not_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
