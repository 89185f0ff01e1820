/* The disconnect block (docs/jobspec.md, "disconnect") and Nomad's older
 * group fields for it: defaults, the older spellings moved into the block,
 * the pairs Nomad refuses, bounds, HCL, and a canonical round trip in
 * which the older fields leave no trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

#define SEC 1000000000LL
/* the decoder's range messages (a number is nanoseconds, a string a duration) */
#define LOST_AFTER_NEGATIVE \
	"E 0:0 groups[0].disconnect.lost_after: must be between 0 and 31536000000000000, got -1\n"
#define MCD_NEGATIVE \
	"E 0:0 groups[0].max_client_disconnect: must be between 0s and 8760h, got \"-5s\"\n"

static void test_none_and_defaults(void **state)
{
	struct job *job;
	const struct job_disconnect *d;
	char *canon;
	(void)state;
	/* no block: none, and no trace in the canonical text (a job stored
	 * before the block existed reads as the same job) */
	job = decode_expect("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", "");
	assert_null(job->groups[0].disconnect);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "disconnect"));
	free(canon);
	job_free(job);
	/* an empty block: Nomad's defaults */
	job = decode_expect(GROUP_WITH("\"disconnect\":{}"), "");
	d = job->groups[0].disconnect;
	assert_non_null(d);
	assert_int_equal(d->lost_after, 0);
	assert_true(d->replace);
	assert_string_equal(d->reconcile, "best_score");
	assert_int_equal(d->stop_on_client_after, 0);
	job_free(job);
	/* every field */
	job = decode_expect(GROUP_WITH("\"disconnect\":{\"lost_after\":\"6h\",\"replace\":false,"
			      "\"reconcile\":\"keep_original\"}"), "");
	d = job->groups[0].disconnect;
	assert_int_equal(d->lost_after, 6 * 3600 * SEC);
	assert_false(d->replace);
	assert_string_equal(d->reconcile, "keep_original");
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"lost_after\":21600000000000"));
	assert_non_null(strstr(canon, "\"replace\":false"));
	free(canon);
	job_free(job);
}

static void test_legacy_spellings(void **state)
{
	struct job *job;
	const struct job_disconnect *d;
	char *canon;
	(void)state;
	job = decode_expect(GROUP_WITH("\"max_client_disconnect\":\"20s\""), "");
	d = job->groups[0].disconnect;
	assert_non_null(d);
	assert_int_equal(d->lost_after, 20 * SEC);
	assert_true(d->replace);
	assert_string_equal(d->reconcile, "best_score");
	assert_int_equal(d->stop_on_client_after, 0);
	assert_int_equal(job->groups[0].max_client_disconnect, 0);
	/* only the block is stored */
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "max_client_disconnect"));
	assert_non_null(strstr(canon, "\"lost_after\":20000000000"));
	free(canon);
	job_free(job);
	job = decode_expect(GROUP_WITH("\"stop_after_client_disconnect\":\"90s\""), "");
	d = job->groups[0].disconnect;
	assert_int_equal(d->stop_on_client_after, 90 * SEC);
	assert_int_equal(d->lost_after, 0);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "stop_after_client_disconnect"));
	free(canon);
	job_free(job);
	/* an older field beside a block: refused, whichever fields the block sets */
	job = decode_expect(GROUP_WITH("\"stop_after_client_disconnect\":\"1m\",\"disconnect\":{\"replace\":"
			      "false}"),
		   "E 0:0 groups[0]: using both stop_after_client_disconnect and a disconnect "
		   "block is not allowed: stop_after_client_disconnect is the older spelling of "
		   "disconnect { stop_on_client_after }\n");
}

static void test_refused(void **state)
{
	(void)state;
	decode_expect(GROUP_WITH("\"disconnect\":{\"lost_after\":\"1h\",\"stop_on_client_after\":\"10m\"}"),
	     "E 0:0 groups[0].disconnect: using both lost_after and stop_on_client_after is not "
	     "allowed\n");
	decode_expect(GROUP_WITH("\"max_client_disconnect\":\"1h\",\"stop_after_client_disconnect\":\"1m\""),
	     "E 0:0 groups[0]: using both max_client_disconnect and stop_after_client_disconnect "
	     "is not allowed\n");
	decode_expect(GROUP_WITH("\"max_client_disconnect\":\"1h\",\"disconnect\":{\"lost_after\":\"2h\"}"),
	     "E 0:0 groups[0]: using both max_client_disconnect and a disconnect block is not "
	     "allowed: max_client_disconnect is the older spelling of disconnect { lost_after }\n");
	decode_expect(GROUP_WITH("\"disconnect\":{\"reconcile\":\"newest\"}"),
	     "E 0:0 groups[0].disconnect.reconcile: expected one of \"keep_original\", "
	     "\"keep_replacement\", \"best_score\", \"longest_running\", got \"newest\"\n");
	decode_expect(GROUP_WITH("\"disconnect\":{\"lost_after\":-1}"), LOST_AFTER_NEGATIVE);
	decode_expect(GROUP_WITH("\"max_client_disconnect\":\"-5s\""),
	     MCD_NEGATIVE);
	decode_expect(GROUP_WITH("\"disconnect\":{\"replace\":\"yes\"}"),
	     "E 0:0 groups[0].disconnect.replace: expected a boolean, got a string\n");
}

static void test_hcl(void **state)
{
	static const char text[] =
		"job \"j\" {\n"
		"  group \"g\" {\n"
		"    disconnect {\n"
		"      lost_after = \"6h\"\n"
		"      replace    = true\n"
		"      reconcile  = \"longest_running\"\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"  group \"h\" {\n"
		"    stop_after_client_disconnect = \"1h\"\n"
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
	assert_int_equal(job->groups[0].disconnect->lost_after, 6 * 3600 * SEC);
	assert_string_equal(job->groups[0].disconnect->reconcile, "longest_running");
	assert_int_equal(job->groups[1].disconnect->stop_on_client_after, 3600 * SEC);
	free(diags);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_and_defaults),
		cmocka_unit_test(test_legacy_spellings),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_hcl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
