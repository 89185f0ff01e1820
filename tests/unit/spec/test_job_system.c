/* system and sysbatch jobs (spec/job_system.h): the types decode, count
 * above 1, gangs and canaries are refused naming the field, a reschedule
 * block the file wrote is ignored with a warning, sysbatch takes batch's
 * defaults and may be periodic or parameterized, system may not; the
 * canonical JSON of a job of another type does not change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "job_helpers.h"
#include "spec/job_system.h"

#define SYS_WITH(type, fields) \
	"{\"id\":\"s\",\"type\":\"" type "\",\"groups\":[{\"name\":\"g\"," fields \
	",\"tasks\":[" MIN_TASK "]}]}"

static void test_types(void **state)
{
	struct job *job;
	(void)state;
	assert_true(job_type_is_system("system"));
	assert_true(job_type_is_system("sysbatch"));
	assert_false(job_type_is_system("batch"));
	assert_false(job_type_is_system("service"));
	assert_false(job_type_is_system(NULL));
	job = decode_expect(SYS_WITH("system", "\"count\":1"), "");
	assert_string_equal(job->type, "system");
	assert_int_equal(job->groups[0].count, 1);
	job_free(job);
	/* count 0: the group runs nowhere, as in Nomad */
	job_free(decode_expect(SYS_WITH("sysbatch", "\"count\":0"), ""));
	decode_expect("{\"id\":\"s\",\"type\":\"daemon\",\"groups\":[" MIN_GROUP "]}",
		      "E 0:0 type: expected one of \"service\", \"batch\", \"system\", "
		      "\"sysbatch\", got \"daemon\"\n");
}

static void test_count_refused(void **state)
{
	(void)state;
	decode_expect(SYS_WITH("system", "\"count\":3"),
		      "E 0:0 groups[0].count: a system job runs one instance of each group on every "
		      "eligible node: count must be 0 or 1, got 3\n");
	decode_expect(SYS_WITH("sysbatch", "\"count\":2"),
		      "E 0:0 groups[0].count: a sysbatch job runs one instance of each group on every "
		      "eligible node: count must be 0 or 1, got 2\n");
	decode_expect(SYS_WITH("system", "\"gang\":true"),
		      "E 0:0 groups[0].gang: a gang needs a service or batch job (a system job's "
		      "instances are one per node, not a set placed together)\n");
	decode_expect(SYS_WITH("system", "\"update\":{\"max_parallel\":1,\"canary\":1}"),
		      "E 0:0 groups[0].update: canary = 1 needs a service job: a system job rolls "
		      "node by node (max_parallel, stagger)\n");
}

/* A job file (HCL) with a reschedule block: a warning at its line; the
 * canonical JSON the server decodes, without positions, none. */
static void test_reschedule_warned(void **state)
{
	static const char hcl[] =
		"job \"s\" {\n"
		"  type = \"system\"\n"
		"  group \"g\" {\n"
		"    reschedule {\n"
		"      attempts = 2\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config {\n"
		"        command = \"/bin/true\"\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	struct job *job, *again;
	char *text, *canon;
	(void)state;
	diag_list_init(&dl);
	job = spec_load(hcl, sizeof(hcl) - 1, &dl);
	assert_non_null(job);
	text = render_diags(&dl);
	assert_string_equal(text, "W 4:5 reschedule is ignored for system jobs: an allocation belongs "
				  "to its node; a failed one is placed again on that node (system) or "
				  "stays failed (sysbatch), and one lost with its node is not moved "
				  "elsewhere\n");
	free(text);
	diag_list_release(&dl);
	json_t *j = job_to_json(job);
	canon = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	again = decode_expect(canon, "");
	job_free(again);
	free(canon);
	job_free(job);
}

static void test_sysbatch_is_batch_like(void **state)
{
	struct job *job;
	(void)state;
	/* batch's restart defaults (3 attempts a day), not a service's */
	job = decode_expect(SYS_WITH("sysbatch", "\"count\":1"), "");
	assert_int_equal(job->groups[0].restart.attempts, 3);
	job_free(job);
	job = decode_expect(SYS_WITH("system", "\"count\":1"), "");
	assert_int_equal(job->groups[0].restart.attempts, 2);
	job_free(job);
	/* periodic and parameterized: sysbatch like batch; system not */
	job_free(decode_expect("{\"id\":\"s\",\"type\":\"sysbatch\",\"periodic\":{\"crons\":"
			       "[\"0 * * * *\"]},\"groups\":[" MIN_GROUP "]}", ""));
	job_free(decode_expect("{\"id\":\"s\",\"type\":\"sysbatch\",\"parameterized\":{},"
			       "\"groups\":[" MIN_GROUP "]}", ""));
	decode_expect("{\"id\":\"s\",\"type\":\"system\",\"periodic\":{\"crons\":[\"0 * * * *\"]},"
		      "\"groups\":[" MIN_GROUP "]}",
		      "E 0:0 periodic: only batch jobs can be periodic (this job's type is "
		      "\"system\")\n");
	/* a time limit is batch work's */
	job_free(decode_expect(SYS_WITH("sysbatch", "\"time_limit\":60000000000"), ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_count_refused),
		cmocka_unit_test(test_reschedule_warned),
		cmocka_unit_test(test_sysbatch_is_batch_like),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
