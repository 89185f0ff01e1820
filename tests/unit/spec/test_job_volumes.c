/* Host volumes (group volume, task volume_mount) and the leader task:
 * decoding from HCL and JSON, every validation message, exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

/* A job with one group whose fields are group_fields (after "name") and
 * whose tasks are tasks (a JSON list body). */
static char *job_text(const char *group_fields, const char *tasks)
{
	return xasprintf("{\"id\":\"v\",\"groups\":[{\"name\":\"g\"%s%s,\"tasks\":[%s]}]}",
			 *group_fields ? "," : "", group_fields, tasks);
}

static void expect(const char *group_fields, const char *tasks, const char *want)
{
	char *diags, *text = job_text(group_fields, tasks);
	struct job *job = decode_text(text, &diags);

	assert_string_equal(diags, want);
	if (strstr(want, "E "))
		assert_null(job);
	else
		assert_non_null(job);
	job_free(job);
	free(diags);
	free(text);
}

#define VOL(name, extra) "{\"name\":\"" name "\",\"source\":\"datasets\"" extra "}"
#define TASK(driver, extra) \
	"{\"name\":\"t\",\"driver\":\"" driver "\",\"config\":{\"command\":\"x\",\"image\":\"i\"}" \
	extra "}"
#define MOUNT(vol, dst) "{\"volume\":\"" vol "\",\"destination\":\"" dst "\"}"

static void test_volume_rules(void **state)
{
	(void)state;
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("exec", ",\"volume_mounts\":[" MOUNT("data", "/data") "]"), "");
	expect("\"volumes\":[" VOL("data", ",\"type\":\"csi\"") "]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[0]: type \"csi\": CSI volumes are not supported; herd "
	       "mounts host volumes (type = \"host\", a client's host_volume)\n");
	expect("\"volumes\":[" VOL("data", ",\"type\":\"nfs\"") "]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[0]: type must be \"host\", got \"nfs\"\n");
	expect("\"volumes\":[{\"name\":\"data\"}]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[0]: source is required: the name of a client's "
	       "host_volume\n");
	expect("\"volumes\":[{\"source\":\"s\"}]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[0]: volume name is required\n");
	expect("\"volumes\":[" VOL("data", "") "," VOL("data", "") "]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[1]: volume name \"data\" is used twice\n");
	expect("\"volumes\":[" VOL("my-data", "") "," VOL("MY_data", "") "]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[1]: volumes \"my-data\" and \"MY_data\" would both be "
	       "HERD_VOLUME_MY_DATA\n");
	expect("\"volumes\":[" VOL("a b", "") "]", TASK("raw_exec", ""),
	       "E 0:0 groups[0].volumes[0]: volume name \"a b\" must be 1 to 128 letters, "
	       "digits, '-', '_' or '.', not starting with '-' or '.'\n");
}

static void test_volume_mount_rules(void **state)
{
	(void)state;
	expect("", TASK("exec", ",\"volume_mounts\":[" MOUNT("data", "/data") "]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: volume \"data\" is not a volume of "
	       "the group\n");
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("exec", ",\"volume_mounts\":[" MOUNT("data", "data") "]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: destination \"data\" must be an "
	       "absolute path inside the task (driver \"exec\")\n");
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("docker", ",\"volume_mounts\":[" MOUNT("data", "rel") "]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: destination \"rel\" must be an "
	       "absolute path inside the task (driver \"docker\")\n");
	/* raw_exec: relative (a link in the task dir) or absolute (env only) */
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("raw_exec", ",\"volume_mounts\":[" MOUNT("data", "local/data") "]"), "");
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("raw_exec", ",\"volume_mounts\":[" MOUNT("data", "/data") "]"), "");
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("raw_exec", ",\"volume_mounts\":[" MOUNT("data", "a/../../x") "]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: destination \"a/../../x\" must not "
	       "have a \"..\" component\n");
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("exec", ",\"volume_mounts\":[" MOUNT("data", "/") "]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: destination \"/\" cannot be the "
	       "task's root\n");
	expect("\"volumes\":[" VOL("data", "") "]",
	       TASK("exec", ",\"volume_mounts\":[" MOUNT("data", "/a") "," MOUNT("data", "/b") "]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[1]: volume \"data\" is mounted twice\n");
	expect("\"volumes\":[" VOL("data", "") "]", TASK("exec", ",\"volume_mounts\":[{}]"),
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: volume is required: the name of a "
	       "group volume\n"
	       "E 0:0 groups[0].tasks[0].volume_mounts[0]: destination is required: where the "
	       "task sees the volume\n");
}

static void test_leader_rules(void **state)
{
	(void)state;
	expect("", "{\"name\":\"a\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
		   "\"leader\":true},{\"name\":\"b\",\"driver\":\"raw_exec\",\"config\":"
		   "{\"command\":\"x\"}}", "");
	expect("", "{\"name\":\"a\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
		   "\"leader\":true},{\"name\":\"b\",\"driver\":\"raw_exec\",\"config\":"
		   "{\"command\":\"x\"},\"leader\":true}",
	       "E 0:0 groups[0].tasks[1]: a group has at most one leader task\n");
	expect("", "{\"name\":\"a\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"}},"
		   "{\"name\":\"b\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
		   "\"leader\":true,\"lifecycle\":{\"hook\":\"prestart\"}}",
	       "E 0:0 groups[0].tasks[1]: leader is for main tasks, not lifecycle hooks\n");
	expect("", "{\"name\":\"a\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
		   "\"leader\":\"yes\"}",
	       "E 0:0 groups[0].tasks[0].leader: expected a boolean, got a string\n");
}

/* Nomad's HCL: labelled volume blocks, repeated volume_mount blocks; the
 * fields herd does not use warn; the canonical JSON decodes again to the
 * same job. */
static void test_hcl_and_round_trip(void **state)
{
	static const char text[] =
		"job \"train\" {\n"
		"  group \"g\" {\n"
		"    volume \"data\" {\n"
		"      type      = \"host\"\n"
		"      source    = \"datasets\"\n"
		"      read_only = true\n"
		"    }\n"
		"    volume \"ckpt\" {\n"
		"      source      = \"checkpoints\"\n"
		"      access_mode = \"single-node-writer\"\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"exec\"\n"
		"      leader = true\n"
		"      config { command = \"x\" }\n"
		"      volume_mount {\n"
		"        volume      = \"data\"\n"
		"        destination = \"/data\"\n"
		"      }\n"
		"      volume_mount {\n"
		"        volume      = \"ckpt\"\n"
		"        destination = \"/ckpt\"\n"
		"        read_only   = false\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct job *job;
	char *diags, *a;

	(void)state;
	job = load_hcl(text, &diags);
	assert_string_equal(diags, "W 10:7 groups[0].volumes[1].access_mode: not supported by "
			    "herd; ignored\n");
	free(diags);
	assert_non_null(job);
	assert_int_equal(job->groups[0].nvolumes, 2);
	assert_string_equal(job->groups[0].volumes[0].name, "data");
	assert_string_equal(job->groups[0].volumes[0].source, "datasets");
	assert_true(job->groups[0].volumes[0].read_only);
	assert_string_equal(job->groups[0].volumes[1].type, "host");
	assert_false(job->groups[0].volumes[1].read_only);
	assert_true(job->groups[0].tasks[0].leader);
	assert_int_equal(job->groups[0].tasks[0].nvolume_mounts, 2);
	assert_string_equal(job->groups[0].tasks[0].volume_mounts[1].destination, "/ckpt");
	assert_int_equal(job->groups[0].tasks[0].volume_mounts[1].pos.line, 20);

	a = canonical_round_trip(job);
	assert_non_null(strstr(a, "\"volumes\":[{\"name\":\"data\",\"read_only\":true,"
				  "\"source\":\"datasets\",\"type\":\"host\"},"));
	assert_non_null(strstr(a, "\"volume_mounts\":[{\"destination\":\"/data\","
				  "\"read_only\":false,\"volume\":\"data\"},"));
	assert_non_null(strstr(a, "\"leader\":true"));
	free(a);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_volume_rules),
		cmocka_unit_test(test_volume_mount_rules),
		cmocka_unit_test(test_leader_rules),
		cmocka_unit_test(test_hcl_and_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
