/* The update block (docs/jobspec.md, "Rolling updates"): Nomad's defaults,
 * the job's block under every group's field by field, the rules between
 * fields, what is not supported, canaries, batch jobs (ignored with a
 * warning; canaries refused), and
 * a canonical round trip. */
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
	const struct job_update *u;
	char *canon;
	(void)state;
	/* no block anywhere: none (every changed allocation at once) */
	job = decode_expect("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", "");
	assert_null(job->groups[0].update);
	assert_null(job->update);
	/* and no trace in the canonical text: a job stored before the block
	 * existed reads as the same job */
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "update"));
	free(canon);
	job_free(job);
	/* an empty block: Nomad's defaults */
	job = decode_expect("{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"update\":{},\"tasks\":[" MIN_TASK
		   "]}]}", "");
	u = job->groups[0].update;
	assert_non_null(u);
	assert_int_equal(u->max_parallel, 1);
	assert_string_equal(u->health_check, "checks");
	assert_int_equal(u->min_healthy_time, 10 * SEC);
	assert_int_equal(u->healthy_deadline, 300 * SEC);
	assert_int_equal(u->progress_deadline, 600 * SEC);
	assert_int_equal(u->stagger, 30 * SEC);
	assert_false(u->auto_revert);
	assert_int_equal(u->canary, 0);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"max_parallel\":1"));
	free(canon);
	job_free(job);
}

static void test_job_block_under_groups(void **state)
{
	struct job *job;
	const struct job_update *a, *b;
	(void)state;
	job = decode_expect("{\"id\":\"s\",\"update\":{\"max_parallel\":3,\"auto_revert\":true,"
		   "\"min_healthy_time\":\"2s\",\"health_check\":\"task_states\"},\"groups\":["
		   "{\"name\":\"a\",\"tasks\":[" MIN_TASK "]},"
		   "{\"name\":\"b\",\"update\":{\"max_parallel\":0,\"auto_revert\":false},"
		   "\"tasks\":[" MIN_TASK "]}]}", "");
	a = job->groups[0].update;
	b = job->groups[1].update;
	assert_int_equal(a->max_parallel, 3);
	assert_true(a->auto_revert);
	assert_int_equal(a->min_healthy_time, 2 * SEC);
	assert_string_equal(a->health_check, "task_states");
	assert_int_equal(a->healthy_deadline, 300 * SEC); /* the default */
	assert_int_equal(b->max_parallel, 0);             /* its own */
	assert_false(b->auto_revert);                     /* its own, over the job's true */
	assert_int_equal(b->min_healthy_time, 2 * SEC);   /* the job's */
	job_free(job);
}

static void test_rules(void **state)
{
	(void)state;
	decode_expect("{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"update\":{\"min_healthy_time\":\"5m\","
	     "\"healthy_deadline\":\"1m\"},\"tasks\":[" MIN_TASK "]}]}",
	     "E 0:0 groups[0].update: min_healthy_time (300s) must be less than healthy_deadline "
	     "(60s)\n");
	decode_expect("{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"update\":{\"healthy_deadline\":\"20m\"},"
	     "\"tasks\":[" MIN_TASK "]}]}",
	     "E 0:0 groups[0].update: progress_deadline (600s) must be 0 (none) or at least "
	     "healthy_deadline (1200s)\n");
	decode_expect("{\"id\":\"s\",\"update\":{\"canary\":2,\"auto_promote\":true,\"health_check\":"
	     "\"manual\"},\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 update: health_check \"manual\" is not supported: use \"checks\" or "
	     "\"task_states\"\n");
	decode_expect("{\"id\":\"s\",\"update\":{\"max_parallel\":-1},\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 update.max_parallel: must be between 0 and 100000, got -1\n");
}

static void test_canary(void **state)
{
	struct job *job;
	const struct job_update *a, *b;
	char *canon;
	(void)state;
	/* the job's canary and auto_promote reach every group that does not
	 * set its own */
	job = decode_expect("{\"id\":\"s\",\"update\":{\"canary\":2,\"auto_promote\":true},\"groups\":["
		   "{\"name\":\"a\",\"tasks\":[" MIN_TASK "]},"
		   "{\"name\":\"b\",\"update\":{\"canary\":0,\"auto_promote\":false},"
		   "\"tasks\":[" MIN_TASK "]}]}", "");
	a = job->groups[0].update;
	b = job->groups[1].update;
	assert_int_equal(a->canary, 2);
	assert_true(a->auto_promote);
	assert_int_equal(b->canary, 0);
	assert_false(b->auto_promote);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"canary\":2"));
	assert_non_null(strstr(canon, "\"auto_promote\":true"));
	free(canon);
	job_free(job);
	/* bounds: the schema's */
	decode_expect("{\"id\":\"s\",\"update\":{\"canary\":-1},\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 update.canary: must be between 0 and 100000, got -1\n");
	decode_expect("{\"id\":\"s\",\"update\":{\"canary\":100001},\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 update.canary: must be between 0 and 100000, got 100001\n");
	/* canaries need a deployment: max_parallel 0 makes none */
	decode_expect("{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"update\":{\"canary\":1,"
	     "\"max_parallel\":0},\"tasks\":[" MIN_TASK "]}]}",
	     "E 0:0 groups[0].update: canary = 1 needs max_parallel > 0 (0 replaces every "
	     "allocation at once, with no deployment)\n");
	/* a batch job has none at all: refused, where the rest of its update
	 * block is only ignored */
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\",\"update\":"
	     "{\"canary\":1},\"tasks\":[" MIN_TASK "]}]}",
	     "E 0:0 groups[0].update: canary = 1 needs a service job: batch jobs have no "
	     "deployments\n");
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"update\":{\"canary\":3},\"groups\":["
	     MIN_GROUP "]}",
	     "E 0:0 update: canary = 3 needs a service job: batch jobs have no deployments\n");
	/* auto_promote without canaries: accepted (as Nomad does), with a
	 * warning that it does nothing */
	job = decode_expect("{\"id\":\"s\",\"update\":{\"auto_promote\":true},\"groups\":[" MIN_GROUP
		   "]}", "W 0:0 auto_promote has no effect: no group has canary > 0\n");
	assert_true(job->groups[0].update->auto_promote);
	job_free(job);
	/* one group with canaries is enough: no warning */
	job = decode_expect("{\"id\":\"s\",\"update\":{\"auto_promote\":true},\"groups\":["
		   "{\"name\":\"a\",\"tasks\":[" MIN_TASK "]},"
		   "{\"name\":\"b\",\"update\":{\"canary\":1},\"tasks\":[" MIN_TASK "]}]}", "");
	job_free(job);
}

static void test_batch_ignored(void **state)
{
	struct job *job;
	(void)state;
	job = decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"update\":{\"max_parallel\":2},\"groups\":["
		   "{\"name\":\"g\",\"update\":{},\"tasks\":[" MIN_TASK "]}]}",
		   "W 0:0 update is ignored for batch jobs: only services roll out new versions\n");
	assert_null(job->update);
	assert_null(job->groups[0].update);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_none),
		cmocka_unit_test(test_job_block_under_groups),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_canary),
		cmocka_unit_test(test_batch_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
