/* A group's idle_gpu block (docs/jobspec.md, "idle_gpu"): none leaves no
 * trace in the canonical text, defaults, `after` required, bounds and
 * choices, HCL, and a canonical round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

#define SEC 1000000000LL

static void test_none_and_defaults(void **state)
{
	struct job *job;
	const struct job_idle_gpu *d;
	char *canon;
	(void)state;
	/* no block: none, and no trace in the canonical text (a job stored
	 * before the block existed reads as the same job) */
	job = decode_expect("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", "");
	assert_null(job->groups[0].idle_gpu);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "idle_gpu"));
	free(canon);
	job_free(job);
	/* only after: 5% and warn */
	job = decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"1h\"}"), "");
	d = job->groups[0].idle_gpu;
	assert_non_null(d);
	assert_int_equal(d->utilization_below, 5);
	assert_int_equal(d->after, 3600 * SEC);
	assert_string_equal(d->action, "warn");
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"idle_gpu\""));
	free(canon);
	job_free(job);
	job = decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"2s\",\"utilization_below\":100,"
			      "\"action\":\"stop\"}"), "");
	d = job->groups[0].idle_gpu;
	assert_int_equal(d->utilization_below, 100);
	assert_int_equal(d->after, 2 * SEC);
	assert_string_equal(d->action, "stop");
	job_free(job);
}

static void test_errors(void **state)
{
	(void)state;
	decode_expect(GROUP_WITH("\"idle_gpu\":{}"),
	     "E 0:0 groups[0].idle_gpu: idle_gpu needs after, how long the GPUs must stay idle "
	     "(after = \"1h\")\n");
	decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"1h\",\"action\":\"kill\"}"),
	     "E 0:0 groups[0].idle_gpu.action: expected one of \"warn\", \"stop\", got \"kill\"\n");
	decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"1h\",\"utilization_below\":0}"),
	     "E 0:0 groups[0].idle_gpu.utilization_below: must be between 1 and 100, got 0\n");
	decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"1h\",\"utilization_below\":101}"),
	     "E 0:0 groups[0].idle_gpu.utilization_below: must be between 1 and 100, got 101\n");
	decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"500ms\"}"),
	     "E 0:0 groups[0].idle_gpu.after: must be between 1s and 8760h, got \"500ms\"\n"
	     "E 0:0 groups[0].idle_gpu: idle_gpu needs after, how long the GPUs must stay idle "
	     "(after = \"1h\")\n");
	decode_expect(GROUP_WITH("\"idle_gpu\":{\"after\":\"1h\",\"threshold\":3}"),
	     "E 0:0 groups[0].idle_gpu: unknown idle_gpu field \"threshold\"\n");
}

static void test_hcl(void **state)
{
	static const char text[] =
		"job \"j\" {\n"
		"  group \"notebook\" {\n"
		"    idle_gpu {\n"
		"      utilization_below = 10\n"
		"      after             = \"90m\"\n"
		"      action            = \"stop\"\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct job *job;
	char *diags;
	(void)state;
	job = load_hcl(text, &diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_int_equal(job->groups[0].idle_gpu->utilization_below, 10);
	assert_int_equal(job->groups[0].idle_gpu->after, 90 * 60 * SEC);
	assert_string_equal(job->groups[0].idle_gpu->action, "stop");
	assert_int_equal(job->groups[0].idle_gpu->pos.line, 3);
	free(diags);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_and_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_hcl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
