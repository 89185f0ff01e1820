/* resources { cores numa { affinity devices } } (docs/jobspec.md, "numa"):
 * decoding, the default affinity, the errors (numa without cores, a device
 * the task does not ask for, a bad affinity), HCL, and a job without numa
 * keeping the canonical text it had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

/* A job whose one task has the given resources (a JSON object's members). */
#define TASK_RES(res) \
	"{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\",\"driver\":" \
	"\"raw_exec\",\"config\":{\"command\":\"/bin/true\"},\"resources\":{" res "}}]}]}"

static void test_none(void **state)
{
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect(TASK_RES("\"cores\":2"), "");
	assert_int_equal(job->groups[0].tasks[0].resources.cores, 2);
	assert_null(job->groups[0].tasks[0].resources.numa);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "numa"));
	/* the text a job of cores had before numa existed */
	assert_non_null(strstr(canon, "\"resources\":{\"cores\":2,\"cpu\":0,\"devices\":[],"
				      "\"memory\":300,\"memory_max\":0}"));
	free(canon);
	job_free(job);
}

static void test_decode(void **state)
{
	const struct job_numa *nm;
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect(TASK_RES("\"cores\":4,\"numa\":{}"), "");
	nm = job->groups[0].tasks[0].resources.numa;
	assert_non_null(nm);
	assert_string_equal(nm->affinity, "none");
	assert_int_equal(nm->devices.n, 0);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"numa\":{\"affinity\":\"none\",\"devices\":[]}"));
	free(canon);
	job_free(job);
	job = decode_expect(TASK_RES("\"cores\":4,\"devices\":[{\"name\":\"nvidia/gpu\",\"count\":2}],"
				     "\"numa\":{\"affinity\":\"require\",\"devices\":[\"nvidia/gpu\"]}"),
			    "");
	nm = job->groups[0].tasks[0].resources.numa;
	assert_string_equal(nm->affinity, "require");
	assert_int_equal(nm->devices.n, 1);
	assert_string_equal(nm->devices.v[0], "nvidia/gpu");
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"numa\":{\"affinity\":\"require\",\"devices\":[\"nvidia/gpu\"]}"));
	free(canon);
	job_free(job);
}

static void test_errors(void **state)
{
	(void)state;
	decode_expect(TASK_RES("\"cpu\":500,\"numa\":{\"affinity\":\"require\"}"),
		      "E 0:0 groups[0].tasks[0].resources.numa: numa needs cores: it places the "
		      "task's reserved cores (resources { cores = N })\n");
	decode_expect(TASK_RES("\"cores\":2,\"devices\":[{\"name\":\"nvidia/gpu/H100\"}],"
			       "\"numa\":{\"affinity\":\"require\",\"devices\":[\"nvidia/gpu\"]}"),
		      "E 0:0 groups[0].tasks[0].resources.numa: devices: \"nvidia/gpu\" is not a "
		      "device this task asks for (resources { device \"nvidia/gpu\" { } })\n");
	decode_expect(TASK_RES("\"cores\":2,\"numa\":{\"affinity\":\"strict\"}"),
		      "E 0:0 groups[0].tasks[0].resources.numa.affinity: expected one of \"none\", "
		      "\"prefer\", \"require\", got \"strict\"\n");
	decode_expect(TASK_RES("\"cores\":2,\"numa\":{\"cpus\":2}"),
		      "E 0:0 groups[0].tasks[0].resources.numa: unknown numa field \"cpus\"\n");
}

static void test_hcl(void **state)
{
	static const char text[] =
		"job \"j\" {\n"
		"  group \"train\" {\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      resources {\n"
		"        cores = 8\n"
		"        device \"nvidia/gpu\" { count = 2 }\n"
		"        numa {\n"
		"          affinity = \"require\"\n"
		"          devices  = [\"nvidia/gpu\"]\n"
		"        }\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	static const char bad[] =
		"job \"j\" {\n"
		"  group \"train\" {\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      resources {\n"
		"        cpu = 500\n"
		"        numa { affinity = \"prefer\" }\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct job *job;
	char *diags;
	(void)state;
	job = load_hcl(text, &diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_string_equal(job->groups[0].tasks[0].resources.numa->affinity, "require");
	assert_int_equal(job->groups[0].tasks[0].resources.numa->pos.line, 9);
	free(diags);
	job_free(job);
	/* the error names the line of the numa block */
	job = load_hcl(bad, &diags);
	assert_null(job);
	assert_non_null(strstr(diags, "E 8:"));
	assert_non_null(strstr(diags, "numa needs cores"));
	free(diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_hcl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
