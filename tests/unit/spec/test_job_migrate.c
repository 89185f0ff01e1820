/* The migrate block (docs/jobspec.md, "migrate"): Nomad's defaults, the
 * job's block under every group's field by field, the rules between
 * fields, batch jobs (ignored with a warning), HCL with its line, and a
 * job without the block keeping its canonical text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

#define SEC 1000000000LL

static void test_defaults_and_none(void **state)
{
	struct job *job;
	const struct job_migrate *m;
	char *canon;
	(void)state;
	/* no block anywhere: none stored, Nomad's defaults used */
	job = decode_expect("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", "");
	assert_null(job->groups[0].migrate);
	assert_null(job->migrate);
	m = job_group_migrate(&job->groups[0]);
	assert_int_equal(m->max_parallel, 1);
	assert_string_equal(m->health_check, "checks");
	assert_int_equal(m->min_healthy_time, 10 * SEC);
	assert_int_equal(m->healthy_deadline, 300 * SEC);
	/* and no trace in the canonical text: a job stored before the block
	 * existed reads as the same job, and makes no new version */
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "migrate"));
	free(canon);
	job_free(job);
	/* an empty block: the defaults, written out */
	job = decode_expect(GROUP_WITH("\"migrate\":{}"), "");
	m = job->groups[0].migrate;
	assert_non_null(m);
	assert_int_equal(m->max_parallel, 1);
	assert_string_equal(m->health_check, "checks");
	assert_int_equal(m->min_healthy_time, 10 * SEC);
	assert_int_equal(m->healthy_deadline, 300 * SEC);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"migrate\":{\"health_check\":\"checks\""));
	free(canon);
	job_free(job);
}

static void test_job_block_under_groups(void **state)
{
	struct job *job;
	const struct job_migrate *a, *b;
	(void)state;
	job = decode_expect("{\"id\":\"s\",\"migrate\":{\"max_parallel\":2,\"min_healthy_time\":\"1s\","
		   "\"health_check\":\"task_states\"},\"groups\":["
		   "{\"name\":\"a\",\"tasks\":[" MIN_TASK "]},"
		   "{\"name\":\"b\",\"migrate\":{\"max_parallel\":3,\"healthy_deadline\":\"1m\"},"
		   "\"tasks\":[" MIN_TASK "]}]}", "");
	a = job->groups[0].migrate;
	b = job->groups[1].migrate;
	assert_int_equal(a->max_parallel, 2);
	assert_int_equal(a->min_healthy_time, 1 * SEC);
	assert_string_equal(a->health_check, "task_states");
	assert_int_equal(a->healthy_deadline, 300 * SEC); /* the default */
	assert_int_equal(b->max_parallel, 3);             /* its own */
	assert_int_equal(b->healthy_deadline, 60 * SEC);  /* its own */
	assert_int_equal(b->min_healthy_time, 1 * SEC);   /* the job's */
	assert_string_equal(b->health_check, "task_states");
	free(canonical_round_trip(job));
	job_free(job);
}

static void test_rules(void **state)
{
	(void)state;
	decode_expect(GROUP_WITH("\"migrate\":{\"min_healthy_time\":\"5m\",\"healthy_deadline\":\"1m\"}"),
	     "E 0:0 groups[0].migrate: min_healthy_time (300s) must be less than healthy_deadline "
	     "(60s)\n");
	decode_expect("{\"id\":\"s\",\"migrate\":{\"max_parallel\":-1},\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 migrate.max_parallel: must be between 0 and 100000, got -1\n");
	decode_expect(GROUP_WITH("\"migrate\":{\"health_check\":\"manual\"}"),
	     "E 0:0 groups[0].migrate.health_check: expected one of \"checks\", \"task_states\", "
	     "got \"manual\"\n");
	decode_expect(GROUP_WITH("\"migrate\":{\"stagger\":\"1s\"}"),
	     "E 0:0 groups[0].migrate: unknown migrate field \"stagger\"\n");
}

static void test_batch_ignored(void **state)
{
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect("{\"id\":\"s\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\","
		   "\"migrate\":{\"max_parallel\":2},\"tasks\":[" MIN_TASK "]}]}",
		   "W 0:0 migrate is ignored for batch jobs: their allocations run on a draining "
		   "node until they end or the drain's deadline\n");
	assert_null(job->groups[0].migrate);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "migrate"));
	free(canon);
	job_free(job);
}

static void test_hcl(void **state)
{
	static const char text[] =
		"job \"j\" {\n"
		"  migrate { max_parallel = 2 }\n"
		"  group \"web\" {\n"
		"    count = 3\n"
		"    migrate {\n"
		"      min_healthy_time = \"1s\"\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"}\n";
	static const char bad[] =
		"job \"j\" {\n"
		"  group \"web\" {\n"
		"    migrate {\n"
		"      max_parallel = \"two\"\n"
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
	assert_int_equal(job->groups[0].migrate->max_parallel, 2);
	assert_int_equal(job->groups[0].migrate->min_healthy_time, 1 * SEC);
	assert_int_equal(job->groups[0].migrate->pos.line, 5);
	free(diags);
	job_free(job);
	/* an error names the field and its line */
	job = load_hcl(bad, &diags);
	assert_null(job);
	assert_non_null(strstr(diags, "E 4:"));
	assert_non_null(strstr(diags, "migrate.max_parallel"));
	free(diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_none),
		cmocka_unit_test(test_job_block_under_groups),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_batch_ignored),
		cmocka_unit_test(test_hcl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
