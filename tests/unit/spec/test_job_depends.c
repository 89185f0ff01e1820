/* depends_on: the HCL block and its JSON form, the default condition, the
 * validation messages (itself, a bad condition, no job, a job named twice,
 * more than 64) and the canonical round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "job_helpers.h"

#define DEP_JOB(deps) "{\"id\":\"train\",\"depends_on\":" deps ",\"groups\":[" MIN_GROUP "]}"

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
		"job \"train\" {\n"
		"  type = \"batch\"\n"
		"  depends_on {\n"
		"    job = \"preprocess\"\n"
		"  }\n"
		"  depends_on {\n"
		"    job       = \"fetch\"\n"
		"    condition = \"dead\"\n"
		"  }\n"
		"  group \"g\" {\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	struct job *job;
	(void)state;

	diag_list_init(&dl);
	job = spec_load(text, strlen(text), &dl);
	assert_int_equal(dl.n, 0);
	assert_non_null(job);
	assert_int_equal(job->ndepends_on, 2);
	assert_string_equal(job->depends_on[0].job, "preprocess");
	assert_string_equal(job->depends_on[0].condition, "complete");
	assert_string_equal(job->depends_on[1].job, "fetch");
	assert_string_equal(job->depends_on[1].condition, "dead");
	job_free(job);
	diag_list_release(&dl);

	/* an error points at the block */
	diag_list_init(&dl);
	job = spec_load("job \"train\" {\n  depends_on {\n    job = \"train\"\n  }\n"
			"  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n"
			"      config { command = \"/bin/true\" }\n    }\n  }\n}\n",
			strlen("job \"train\" {\n  depends_on {\n    job = \"train\"\n  }\n"
			       "  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n"
			       "      config { command = \"/bin/true\" }\n    }\n  }\n}\n"),
			&dl);
	assert_null(job);
	{
		char *d = render_diags(&dl);
		assert_string_equal(d, "E 2:3 depends_on[0]: a job cannot depend on itself\n");
		free(d);
	}
	diag_list_release(&dl);
}

static void test_validation(void **state)
{
	(void)state;
	expect_job(DEP_JOB("[]"), "");
	expect_job(DEP_JOB("[{\"job\":\"a\",\"condition\":\"failed\"}]"), "");
	expect_job(DEP_JOB("[{\"job\":\"train\"}]"),
		   "E 0:0 depends_on[0]: a job cannot depend on itself\n");
	expect_job(DEP_JOB("[{\"condition\":\"dead\"}]"), "E 0:0 depends_on[0]: job is required\n");
	expect_job(DEP_JOB("[{\"job\":\"a\"},{\"job\":\"a\",\"condition\":\"dead\"}]"),
		   "E 0:0 depends_on[1]: job \"a\" is named twice\n");
	expect_job(DEP_JOB("[{\"job\":\"a b\"}]"),
		   "E 0:0 depends_on[0]: job \"a b\" must be 1 to 128 letters, digits, '-', '_' "
		   "or '.', not starting with '-' or '.'\n");
	{
		char *diags;
		struct job *job = decode_text(DEP_JOB("[{\"job\":\"a\",\"condition\":\"finished\"}]"),
					      &diags);
		assert_null(job);
		assert_non_null(strstr(diags, "depends_on[0].condition"));
		assert_non_null(strstr(diags, "complete"));
		free(diags);
	}
}

static void test_at_most_64(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char *diags;
	struct job *job;
	(void)state;

	for (int n = 64; n <= 65; n++) {
		strbuf_reset(&sb);
		strbuf_adds(&sb, "{\"id\":\"x\",\"depends_on\":[");
		for (int i = 0; i < n; i++)
			strbuf_addf(&sb, "%s{\"job\":\"j%d\"}", i ? "," : "", i);
		strbuf_adds(&sb, "],\"groups\":[" MIN_GROUP "]}");
		job = decode_text(sb.buf, &diags);
		if (n == 64) {
			assert_string_equal(diags, "");
			assert_non_null(job);
		} else {
			assert_null(job);
			assert_non_null(strstr(diags, "depends_on"));
		}
		job_free(job);
		free(diags);
	}
	strbuf_release(&sb);
}

static void test_round_trip(void **state)
{
	char *diags, *a;
	struct job *job = decode_text(DEP_JOB("[{\"job\":\"a\"},{\"job\":\"b\",\"condition\":\"dead\"}]"),
				      &diags);
	(void)state;

	assert_string_equal(diags, "");
	free(diags);
	a = canonical_round_trip(job);
	assert_non_null(strstr(a, "\"depends_on\":[{\"condition\":\"complete\",\"job\":\"a\"},"
				  "{\"condition\":\"dead\",\"job\":\"b\"}]"));
	free(a);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hcl_blocks),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_at_most_64),
		cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
