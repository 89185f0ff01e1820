/* time_limit (job and group), a task's restart block over its group's and
 * the job's reschedule block under every group's, a gang's gang_restart:
 * validation, defaults and the merges, field by field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

#define SEC 1000000000LL
#define BATCH_TASK "{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"}}"

/* Decodes text; checks the diagnostics; returns the job (NULL on errors). */
static void test_time_limit_job_and_group(void **state)
{
	struct job *job;

	(void)state;
	job = decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"time_limit\":\"4h\",\"groups\":["
		   "{\"name\":\"a\",\"tasks\":[" BATCH_TASK "]},"
		   "{\"name\":\"b\",\"time_limit\":\"90s\",\"tasks\":[" BATCH_TASK "]}]}", "");
	assert_int_equal(job->time_limit, 4 * 3600 * SEC);
	assert_int_equal(job->groups[0].time_limit, 4 * 3600 * SEC); /* the job's */
	assert_int_equal(job->groups[1].time_limit, 90 * SEC);       /* its own */
	job_free(job);
	/* none anywhere: 0, no limit */
	job = decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":[" MIN_GROUP "]}", "");
	assert_int_equal(job->time_limit, 0);
	assert_int_equal(job->groups[0].time_limit, 0);
	job_free(job);
}

static void test_time_limit_rules(void **state)
{
	(void)state;
	/* a service: said once where it is written, and why */
	decode_expect("{\"id\":\"s\",\"time_limit\":\"1h\",\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 time_limit: only batch jobs can have a time limit: a service runs until "
	     "it is stopped\n");
	decode_expect("{\"id\":\"s\",\"type\":\"service\",\"groups\":[{\"name\":\"g\",\"time_limit\":\"1h\","
	     "\"tasks\":[" BATCH_TASK "]}]}",
	     "E 0:0 groups[0].time_limit: only batch jobs can have a time limit: a service runs "
	     "until it is stopped\n");
	/* under a second, over a year, not a duration */
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"time_limit\":\"500ms\",\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 time_limit: must be at least 1s, got 500ms\n");
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\",\"time_limit\":\"8761h\","
	     "\"tasks\":[" BATCH_TASK "]}]}",
	     "E 0:0 groups[0].time_limit: must be between 0s and 8760h, got \"8761h\"\n");
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"time_limit\":\"soon\",\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 time_limit: expected a duration such as \"30s\", \"5m\" or \"1h30m\", got "
	     "\"soon\"\n");
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"time_limit\":\"-1s\",\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 time_limit: must be between 0s and 8760h, got \"-1s\"\n");
	/* exactly a year and exactly a second are fine */
	job_free(decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"time_limit\":\"8760h\",\"groups\":[{"
		      "\"name\":\"g\",\"time_limit\":\"1s\",\"tasks\":[" BATCH_TASK "]}]}", ""));
}

/* A task's restart over its group's: what it sets wins, the rest is the
 * group's (itself over the type's defaults); the window rule holds for
 * the merged policy, reported at the task. */
static void test_task_restart_merge(void **state)
{
	struct job *job;
	const struct job_restart *r;

	(void)state;
	job = decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\",\"restart\":{"
		   "\"attempts\":5,\"delay\":\"1s\",\"mode\":\"delay\"},\"tasks\":["
		   "{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
		   "\"restart\":{\"attempts\":0}},"
		   "{\"name\":\"u\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"}}]}]}", "");
	r = job->groups[0].tasks[0].restart;
	assert_non_null(r);
	assert_int_equal(r->attempts, 0);              /* the task's */
	assert_int_equal(r->delay, 1 * SEC);           /* the group's */
	assert_string_equal(r->mode, "delay");         /* the group's */
	assert_int_equal(r->interval, 24 * 3600 * SEC); /* the batch default */
	assert_null(job->groups[0].tasks[1].restart);  /* none: the group's */
	job_free(job);
	decode_expect("{\"id\":\"b\",\"groups\":[{\"name\":\"g\",\"restart\":{\"interval\":\"1m\"},"
	     "\"tasks\":[{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
	     "\"restart\":{\"attempts\":5}}]}]}",
	     "E 0:0 groups[0].tasks[0].restart: 5 attempts with a delay of 15s need 75s, more "
	     "than the interval of 60s: raise interval or lower attempts or delay\n");
	decode_expect("{\"id\":\"b\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\",\"driver\":"
	     "\"raw_exec\",\"config\":{\"command\":\"x\"},\"restart\":{\"mode\":\"never\"}}]}]}",
	     "E 0:0 groups[0].tasks[0].restart.mode: expected one of \"fail\", \"delay\", got "
	     "\"never\"\n");
}

/* The job's reschedule under every group's: a group's own fields win,
 * the rest is the job's, itself over the type's defaults. */
static void test_job_reschedule_merge(void **state)
{
	struct job *job;
	const struct job_reschedule *a, *b;

	(void)state;
	job = decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"reschedule\":{\"attempts\":4,"
		   "\"delay\":\"10s\",\"unlimited\":true},\"groups\":["
		   "{\"name\":\"a\",\"tasks\":[" BATCH_TASK "]},"
		   "{\"name\":\"b\",\"reschedule\":{\"attempts\":0,\"unlimited\":false},"
		   "\"tasks\":[" BATCH_TASK "]}]}", "");
	a = &job->groups[0].reschedule;
	b = &job->groups[1].reschedule;
	assert_int_equal(a->attempts, 4);
	assert_int_equal(a->delay, 10 * SEC);
	assert_true(a->unlimited);
	assert_int_equal(a->interval, 24 * 3600 * SEC); /* the batch default */
	assert_string_equal(a->delay_function, "constant");
	assert_int_equal(b->attempts, 0);               /* its own */
	assert_false(b->unlimited);                     /* its own */
	assert_int_equal(b->delay, 10 * SEC);           /* the job's */
	assert_int_equal(job->reschedule->attempts, 4);
	job_free(job);
	/* the job's block is checked where it is written */
	decode_expect("{\"id\":\"s\",\"reschedule\":{\"delay\":\"1m\",\"max_delay\":\"10s\"},"
	     "\"groups\":[" MIN_GROUP "]}",
	     "E 0:0 reschedule: max_delay must be at least delay\n"
	     "E 0:0 groups[0].reschedule: max_delay must be at least delay\n");
}

/* HCL: the blocks are read (not warned about), and the canonical JSON of
 * the merged job decodes to the same job. */
static void test_hcl_and_round_trip(void **state)
{
	static const char hcl[] =
		"job \"b\" {\n"
		"  type = \"batch\"\n"
		"  time_limit = \"2h\"\n"
		"  reschedule {\n    attempts = 2\n  }\n"
		"  group \"g\" {\n"
		"    time_limit = \"30m\"\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config {\n        command = \"x\"\n      }\n"
		"      restart {\n        attempts = 0\n      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct job *job;
	char *a, *diags;

	(void)state;
	job = load_hcl(hcl, &diags);
	assert_string_equal(diags, "");
	free(diags);
	assert_non_null(job);
	assert_int_equal(job->groups[0].time_limit, 30 * 60 * SEC);
	assert_int_equal(job->groups[0].reschedule.attempts, 2);
	assert_int_equal(job->groups[0].tasks[0].restart->attempts, 0);
	a = canonical_round_trip(job);
	free(a);
	job_free(job);
}

/* gang_restart: "unfinished" by default for a gang, "all" as asked,
 * nothing else, and only with gang = true. */
static void test_gang_restart(void **state)
{
	struct job *job;

	(void)state;
	job = decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":["
		   "{\"name\":\"a\",\"count\":2,\"gang\":true,\"tasks\":[" BATCH_TASK "]},"
		   "{\"name\":\"b\",\"count\":2,\"gang\":true,\"gang_restart\":\"all\","
		   "\"tasks\":[" BATCH_TASK "]},"
		   "{\"name\":\"c\",\"tasks\":[" BATCH_TASK "]}]}", "");
	assert_string_equal(job->groups[0].gang_restart, "unfinished");
	assert_string_equal(job->groups[1].gang_restart, "all");
	assert_null(job->groups[2].gang_restart);
	job_free(job);
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":[{\"name\":\"a\",\"gang_restart\":\"all\","
	     "\"tasks\":[" BATCH_TASK "]}]}", "E 0:0 groups[0]: gang_restart needs gang = true\n");
	decode_expect("{\"id\":\"b\",\"type\":\"batch\",\"groups\":[{\"name\":\"a\",\"gang\":true,"
	     "\"gang_restart\":\"some\",\"tasks\":[" BATCH_TASK "]}]}",
	     "E 0:0 groups[0].gang_restart: expected one of \"unfinished\", \"all\", got \"some\"\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_limit_job_and_group),
		cmocka_unit_test(test_time_limit_rules),
		cmocka_unit_test(test_gang_restart),
		cmocka_unit_test(test_task_restart_merge),
		cmocka_unit_test(test_job_reschedule_merge),
		cmocka_unit_test(test_hcl_and_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
