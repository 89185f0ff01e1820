/* A group's ephemeral_disk block and prevent_reschedule_on_lost
 * (docs/jobspec.md): none leaves no trace in the canonical text, defaults
 * (size 300, migrate implies sticky), bounds, HCL, and the rule that makes
 * a disconnect block's replace false beside prevent_reschedule_on_lost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

static void test_none(void **state)
{
	struct job *job;
	char *canon;
	(void)state;
	/* a job stored before these fields existed keeps its canonical text */
	job = decode_expect("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", "");
	assert_null(job->groups[0].ephemeral_disk);
	assert_false(job->groups[0].prevent_reschedule_on_lost);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "ephemeral_disk"));
	assert_null(strstr(canon, "prevent_reschedule_on_lost"));
	free(canon);
	job_free(job);
}

static void test_defaults(void **state)
{
	struct job *job;
	const struct job_ephemeral_disk *d;
	char *canon;
	(void)state;
	job = decode_expect(GROUP_WITH("\"ephemeral_disk\":{}"), "");
	d = job->groups[0].ephemeral_disk;
	assert_non_null(d);
	assert_int_equal(d->size, 300);
	assert_false(d->sticky);
	assert_false(d->migrate);
	job_free(job);
	/* migrate implies sticky */
	job = decode_expect(GROUP_WITH("\"ephemeral_disk\":{\"migrate\":true,\"size\":500}"), "");
	d = job->groups[0].ephemeral_disk;
	assert_int_equal(d->size, 500);
	assert_true(d->sticky);
	assert_true(d->migrate);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"ephemeral_disk\""));
	assert_non_null(strstr(canon, "\"sticky\":true"));
	free(canon);
	job_free(job);
	job = decode_expect(GROUP_WITH("\"prevent_reschedule_on_lost\":true"), "");
	assert_true(job->groups[0].prevent_reschedule_on_lost);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"prevent_reschedule_on_lost\":true"));
	free(canon);
	job_free(job);
}

static void test_errors(void **state)
{
	(void)state;
	decode_expect(GROUP_WITH("\"ephemeral_disk\":{\"size\":0}"),
	     "E 0:0 groups[0].ephemeral_disk.size: must be between 1 and 1073741824, got 0\n");
	decode_expect(GROUP_WITH("\"ephemeral_disk\":{\"sticky\":\"yes\"}"),
	     "E 0:0 groups[0].ephemeral_disk.sticky: expected a boolean, got a string\n");
	decode_expect(GROUP_WITH("\"ephemeral_disk\":{\"shared\":true}"),
	     "E 0:0 groups[0].ephemeral_disk: unknown ephemeral_disk field \"shared\"\n");
}

static void test_disconnect_rule(void **state)
{
	struct job *job;
	(void)state;
	/* without the field a disconnect block replaces while unknown */
	job = decode_expect(GROUP_WITH("\"disconnect\":{\"lost_after\":\"1h\"}"), "");
	assert_true(job->groups[0].disconnect->replace);
	job_free(job);
	job = decode_expect(GROUP_WITH("\"disconnect\":{\"lost_after\":\"1h\"},"
			      "\"prevent_reschedule_on_lost\":true"), "");
	assert_false(job->groups[0].disconnect->replace);
	job_free(job);
}

static void test_hcl(void **state)
{
	static const char text[] =
		"job \"j\" {\n"
		"  group \"train\" {\n"
		"    prevent_reschedule_on_lost = true\n"
		"    ephemeral_disk {\n"
		"      size   = 2048\n"
		"      sticky = true\n"
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
	assert_int_equal(job->groups[0].ephemeral_disk->size, 2048);
	assert_true(job->groups[0].ephemeral_disk->sticky);
	assert_false(job->groups[0].ephemeral_disk->migrate);
	assert_int_equal(job->groups[0].ephemeral_disk->pos.line, 4);
	assert_true(job->groups[0].prevent_reschedule_on_lost);
	free(diags);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_disconnect_rule),
		cmocka_unit_test(test_hcl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
