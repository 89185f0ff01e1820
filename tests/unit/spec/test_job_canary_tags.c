/* service canary_tags, canary_meta and on_update, check on_update: the
 * HCL form, defaults (a check's on_update is its service's unless it has
 * its own), the errors with their paths, and the canonical JSON: a job
 * that does not use them keeps the text it had (no new version when it
 * is submitted again after an upgrade). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

static void test_hcl_fields(void **state)
{
	static const char text[] =
		"job \"web\" {\n"
		"  group \"g\" {\n"
		"    network { port \"http\" {} }\n"
		"    service {\n"
		"      port = \"http\"\n"
		"      tags = [\"live\"]\n"
		"      canary_tags = [\"canary\", \"v-${NOMAD_ALLOC_INDEX}\"]\n"
		"      meta { version = \"1\" }\n"
		"      canary_meta { version = \"2\" }\n"
		"      on_update = \"ignore_warnings\"\n"
		"      check {\n"
		"        type = \"tcp\"\n"
		"        interval = \"1s\"\n"
		"        timeout = \"1s\"\n"
		"      }\n"
		"      check {\n"
		"        type = \"tcp\"\n"
		"        interval = \"1s\"\n"
		"        timeout = \"1s\"\n"
		"        on_update = \"ignore\"\n"
		"      }\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      service {\n"
		"        port = 8080\n"
		"        check {\n"
		"          type = \"tcp\"\n"
		"          interval = \"1s\"\n"
		"          timeout = \"1s\"\n"
		"          on_update = \"require_healthy\"\n"
		"        }\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	char *diags, *canon;
	struct job *job = load_hcl(text, &diags);
	struct job_service *gs, *ts;
	(void)state;

	assert_string_equal(diags, "");
	assert_non_null(job);
	gs = &job->groups[0].services[0];
	ts = &job->groups[0].tasks[0].services[0];
	assert_int_equal(gs->canary_tags.n, 2);
	assert_string_equal(gs->canary_tags.v[0], "canary");
	assert_string_equal(gs->canary_tags.v[1], "v-${NOMAD_ALLOC_INDEX}");
	assert_int_equal(gs->canary_meta.n, 1);
	assert_string_equal(gs->canary_meta.v[0].key, "version");
	assert_string_equal(gs->canary_meta.v[0].value, "2");
	assert_string_equal(gs->on_update, "ignore_warnings");
	/* the service's, then the check's own */
	assert_null(gs->checks[0].on_update);
	assert_string_equal(job_check_on_update(gs, &gs->checks[0]), "ignore_warnings");
	assert_string_equal(gs->checks[1].on_update, "ignore");
	assert_string_equal(job_check_on_update(gs, &gs->checks[1]), "ignore");
	assert_string_equal(ts->on_update, "require_healthy");
	assert_string_equal(ts->checks[0].on_update, "require_healthy");
	assert_string_equal(job_check_on_update(ts, &ts->checks[0]), "require_healthy");
	assert_int_equal(ts->canary_tags.n, 0);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"canary_tags\":[\"canary\",\"v-${NOMAD_ALLOC_INDEX}\"]"));
	assert_non_null(strstr(canon, "\"canary_meta\":{\"version\":\"2\"}"));
	assert_non_null(strstr(canon, "\"on_update\":\"ignore\""));
	/* a check's own require_healthy stays: it overrides its service's */
	assert_non_null(strstr(canon, "\"on_update\":\"require_healthy\""));
	free(canon);
	job_free(job);
	free(diags);
}

/* The canonical text of a job with services and checks that use none of
 * the fields: none of them appears, and writing the defaults out gives the
 * same text. */
static void test_canonical_unchanged(void **state)
{
#define SVC_JOB(svc_extra, check_extra) \
	"{\"id\":\"web\",\"groups\":[{\"name\":\"g\",\"services\":[{\"port\":80" svc_extra \
	",\"tags\":[\"a\"],\"checks\":[{\"type\":\"tcp\",\"interval\":\"1s\",\"timeout\":\"1s\"" \
	check_extra "}]}],\"tasks\":[" MIN_TASK "]}]}"
	char *d1, *d2, *a, *b;
	struct job *j1 = decode_text(SVC_JOB("", ""), &d1);
	struct job *j2 = decode_text(SVC_JOB(",\"on_update\":\"require_healthy\",\"canary_tags\":[],"
					     "\"canary_meta\":{}", ""), &d2);
	(void)state;

	assert_string_equal(d1, "");
	assert_string_equal(d2, "");
	a = canonical_round_trip(j1);
	b = canonical_round_trip(j2);
	assert_null(strstr(a, "on_update"));
	assert_null(strstr(a, "canary_"));
	assert_string_equal(a, b);
	free(a);
	free(b);
	job_free(j1);
	job_free(j2);
	free(d1);
	free(d2);
#undef SVC_JOB
}

static void expect_error(const char *svc_extra, const char *check_extra, const char *want)
{
	char *diags, *text = xasprintf(
		"{\"id\":\"web\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\","
		"\"driver\":\"raw_exec\",\"config\":{\"command\":\"/bin/true\"},\"services\":"
		"[{\"port\":80%s,\"checks\":[{\"type\":\"tcp\",\"interval\":\"1s\","
		"\"timeout\":\"1s\"%s}]}]}]}]}", svc_extra, check_extra);
	struct job *job = decode_text(text, &diags);

	assert_string_equal(diags, want);
	if (*want)
		assert_null(job);
	else
		assert_non_null(job);
	job_free(job);
	free(diags);
	free(text);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error(",\"on_update\":\"sometimes\"", "",
		     "E 0:0 groups[0].tasks[0].services[0].on_update: expected one of "
		     "\"require_healthy\", \"ignore_warnings\", \"ignore\", got \"sometimes\"\n");
	expect_error("", ",\"on_update\":\"ignore_warning\"",
		     "E 0:0 groups[0].tasks[0].services[0].checks[0].on_update: expected one of "
		     "\"require_healthy\", \"ignore_warnings\", \"ignore\", got \"ignore_warning\"\n");
	expect_error("", ",\"on_update\":true",
		     "E 0:0 groups[0].tasks[0].services[0].checks[0].on_update: expected a string, "
		     "got a boolean\n");
	expect_error(",\"canary_tags\":[\"a\",\"\"]", "",
		     "E 0:0 groups[0].tasks[0].services[0]: canary_tags[1] must not be empty\n");
	expect_error(",\"canary_tags\":\"a\"", "",
		     "E 0:0 groups[0].tasks[0].services[0].canary_tags: expected a list of strings, "
		     "got a string\n");
	/* a check that restarts its task is not one to look past */
	expect_error("", ",\"on_update\":\"ignore\",\"check_restart\":{\"limit\":3}",
		     "E 0:0 groups[0].tasks[0].services[0].checks[0]: on_update \"ignore\" is not "
		     "compatible with check_restart\n");
	expect_error(",\"on_update\":\"ignore_warnings\",\"check_restart\":{\"limit\":3}", "",
		     "E 0:0 groups[0].tasks[0].services[0].checks[0]: on_update \"ignore_warnings\" "
		     "needs check_restart's ignore_warnings = true\n");
	expect_error(",\"on_update\":\"ignore_warnings\",\"check_restart\":{\"limit\":3,"
		     "\"ignore_warnings\":true}", "", "");
	expect_error(",\"on_update\":\"ignore\"", "", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hcl_fields),
		cmocka_unit_test(test_canonical_unchanged),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
