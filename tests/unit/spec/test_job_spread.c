/* spread: the HCL block (job and group level, target labels) and its JSON
 * form, the defaults (weight 50, percent 0), every validation message and
 * the canonical round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "job_helpers.h"

#define SPREAD_JOB(sp) "{\"id\":\"web\",\"spreads\":" sp ",\"groups\":[" MIN_GROUP "]}"

static void expect_job(const char *text, const char *want)
{
	char *diags;
	struct job *job = decode_text(text, &diags);
	assert_string_equal(diags, want);
	if (strstr(want, "E "))
		assert_null(job);
	else
		assert_non_null(job);
	job_free(job);
	free(diags);
}

static void test_hcl_blocks(void **state)
{
	static const char text[] =
		"job \"web\" {\n"
		"  spread {\n"
		"    attribute = \"${node.datacenter}\"\n"
		"    weight = 80\n"
		"    target \"dc1\" { percent = 70 }\n"
		"    target \"dc2\" { percent = 30 }\n"
		"  }\n"
		"  group \"g\" {\n"
		"    count = 10\n"
		"    spread { attribute = \"${meta.rack}\" }\n"
		"    spread {\n"
		"      attribute = \"${node.class}\"\n"
		"      weight = -20\n"
		"      target \"big\" {}\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	struct job *job;
	char *canon;
	(void)state;

	diag_list_init(&dl);
	job = spec_load(text, strlen(text), &dl);
	assert_int_equal(dl.n, 0);
	assert_non_null(job);
	assert_int_equal(job->nspreads, 1);
	assert_string_equal(job->spreads[0].attribute, "${node.datacenter}");
	assert_int_equal(job->spreads[0].weight, 80);
	assert_int_equal(job->spreads[0].ntargets, 2);
	assert_string_equal(job->spreads[0].targets[0].value, "dc1");
	assert_int_equal(job->spreads[0].targets[0].percent, 70);
	assert_string_equal(job->spreads[0].targets[1].value, "dc2");
	assert_int_equal(job->spreads[0].targets[1].percent, 30);
	assert_int_equal(job->groups[0].nspreads, 2);
	assert_int_equal(job->groups[0].spreads[0].weight, 50); /* the default */
	assert_int_equal(job->groups[0].spreads[0].ntargets, 0);
	assert_int_equal(job->groups[0].spreads[1].weight, -20);
	assert_int_equal(job->groups[0].spreads[1].targets[0].percent, 0); /* the default */
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"spreads\":[{\"attribute\":\"${node.datacenter}\","
				      "\"targets\":[{\"percent\":70,\"value\":\"dc1\"},"
				      "{\"percent\":30,\"value\":\"dc2\"}],\"weight\":80}]"));
	free(canon);
	job_free(job);
	diag_list_release(&dl);

	/* a spread in a task is not Nomad's (job and group only) */
	static const char in_task[] =
		"job \"w\" {\n  group \"g\" {\n    task \"t\" {\n"
		"      driver = \"raw_exec\"\n      config { command = \"x\" }\n"
		"      spread { attribute = \"${node.datacenter}\" }\n    }\n  }\n}\n";
	diag_list_init(&dl);
	job = spec_load(in_task, strlen(in_task), &dl);
	assert_null(job);
	assert_true(dl.n >= 1);
	job_free(job);
	diag_list_release(&dl);
}

static void test_rules(void **state)
{
	(void)state;
	expect_job(SPREAD_JOB("[{\"attribute\":\"${attr.zone}\"}]"), "");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.unique.id}\",\"weight\":-100}]"), "");
	expect_job(SPREAD_JOB("[{\"weight\":10}]"), "E 0:0 spreads[0]: attribute is required\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.datacenter}\",\"weight\":0}]"),
		   "E 0:0 spreads[0]: weight must be between -100 and 100 and not 0\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.datacenter}\",\"weight\":101}]"),
		   "E 0:0 spreads[0].weight: must be between -100 and 100, got 101\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"dc1\"}]"),
		   "E 0:0 spreads[0]: attribute \"dc1\" must be a node reference such as "
		   "\"${node.datacenter}\", \"${node.class}\", \"${attr.KEY}\" or \"${meta.KEY}\"\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${device.model}\"}]"),
		   "E 0:0 spreads[0]: attribute \"${device.model}\" must be a node reference such as "
		   "\"${node.datacenter}\", \"${node.class}\", \"${attr.KEY}\" or \"${meta.KEY}\"\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.datacenter}\",\"targets\":["
			      "{\"value\":\"a\",\"percent\":60},{\"value\":\"b\",\"percent\":50}]}]"),
		   "E 0:0 spreads[0]: the targets' percents sum to 110, more than 100\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.datacenter}\",\"targets\":["
			      "{\"value\":\"a\",\"percent\":10},{\"value\":\"a\",\"percent\":20}]}]"),
		   "E 0:0 spreads[0].targets[1]: target \"a\" is given twice\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.datacenter}\",\"targets\":["
			      "{\"percent\":10}]}]"),
		   "E 0:0 spreads[0].targets[0]: value is required (target \"<value>\" { ... })\n");
	expect_job(SPREAD_JOB("[{\"attribute\":\"${node.datacenter}\",\"targets\":["
			      "{\"value\":\"a\",\"percent\":101}]}]"),
		   "E 0:0 spreads[0].targets[0].percent: must be between 0 and 100, got 101\n");
	expect_job(SPREAD_JOB("[{},{},{},{},{},{},{},{},{}]"),
		   "E 0:0 spreads: more than 8 spread entries\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hcl_blocks),
		cmocka_unit_test(test_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
