/* The job decoder: types, units, limits, unknown and ignored fields, every
 * message exactly, defaults, and the canonical round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

static void test_minimal_job_gets_service_defaults(void **state)
{
	char *diags;
	struct job *job = decode_text("{\"id\":\"train\",\"groups\":[" MIN_GROUP "]}", &diags);

	assert_non_null(job);
	assert_string_equal(diags, "");
	assert_string_equal(job->name, "train");
	assert_string_equal(job->type, "service");
	assert_int_equal(job->priority, 50);
	assert_string_equal(job->namespace, "default");
	assert_int_equal(job->datacenters.n, 1);
	assert_string_equal(job->datacenters.v[0], "*");
	assert_string_equal(job->node_pool, "default");
	struct job_group *g = &job->groups[0];
	assert_int_equal(g->count, 1);
	assert_int_equal(g->restart.attempts, 2);
	assert_int_equal(g->restart.interval, 30 * 60 * NS_PER_SEC);
	assert_int_equal(g->restart.delay, 15 * NS_PER_SEC);
	assert_string_equal(g->restart.mode, "fail");
	assert_int_equal(g->reschedule.attempts, 0);
	assert_int_equal(g->reschedule.delay, 30 * NS_PER_SEC);
	assert_string_equal(g->reschedule.delay_function, "exponential");
	assert_int_equal(g->reschedule.max_delay, 3600 * NS_PER_SEC);
	assert_true(g->reschedule.unlimited);
	struct job_task *t = &g->tasks[0];
	assert_string_equal(t->driver, "raw_exec");
	assert_string_equal(json_string_value(json_object_get(t->config, "command")), "/bin/true");
	assert_int_equal(t->resources.cpu, 100);
	assert_int_equal(t->resources.memory, 300);
	assert_int_equal(t->resources.memory_max, 0);
	assert_int_equal(t->kill_timeout, 5 * NS_PER_SEC);
	assert_string_equal(t->kill_signal, "SIGINT");
	assert_int_equal(t->logs.max_files, 10);
	assert_int_equal(t->logs.max_file_size, 10);
	assert_null(t->lifecycle);
	job_free(job);
	free(diags);
}

/* logs { disabled }: false unless said, left out of the canonical job then
 * (jobs stored before it existed stay the same job); Nomad's older
 * `enabled` is accepted with a warning. */
static void test_logs_disabled(void **state)
{
	char *diags, *canon;
	struct job *job = decode_text("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", &diags);
	(void)state;
	assert_false(job->groups[0].tasks[0].logs.disabled);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "disabled"));
	free(canon);
	free(diags);
	job_free(job);
	job = decode_text("{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\","
			  "\"driver\":\"raw_exec\",\"config\":{\"command\":\"/bin/true\"},"
			  "\"logs\":{\"disabled\":true,\"enabled\":false}}]}]}", &diags);
	assert_non_null(job);
	assert_true(job->groups[0].tasks[0].logs.disabled);
	assert_string_equal(diags, "W 0:0 groups[0].tasks[0].logs.enabled: not supported by herd; "
			    "ignored\n");
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"disabled\":true"));
	free(canon);
	free(diags);
	job_free(job);
}

/* identity: none unless said (no trace in the canonical job); in HCL the
 * unnamed block is the identity "default", a labelled one a named identity
 * under "identities"; an unnamed block as the previous build stored it
 * keeps its canonical text (no new version after an upgrade). */
static void test_identity(void **state)
{
	static const char hcl[] =
		"job \"j\" {\n"
		"  group \"g\" {\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      identity {\n"
		"        file = true\n"
		"      }\n"
		"      identity \"vault_default\" {\n"
		"        aud = [\"vault.io\"]\n"
		"        file = true\n"
		"        ttl = \"1h\"\n"
		"        change_mode = \"signal\"\n"
		"        change_signal = \"SIGHUP\"\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	char *diags, *canon;
	struct job *job = decode_text("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", &diags);
	(void)state;
	assert_null(job->groups[0].tasks[0].identity);
	assert_int_equal(job->groups[0].tasks[0].nidentities, 0);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "identit"));
	free(canon);
	free(diags);
	job_free(job);
	diag_list_init(&dl);
	job = spec_load(hcl, strlen(hcl), &dl);
	diags = render_diags(&dl);
	assert_string_equal(diags, "");
	assert_non_null(job);
	struct job_task *t = &job->groups[0].tasks[0];
	assert_true(t->identity->file);
	assert_false(t->identity->env);
	assert_null(t->identity->name);
	assert_int_equal(t->identity->ttl, 0);
	assert_string_equal(t->identity->change_mode, "noop");
	assert_int_equal(t->nidentities, 1);
	assert_string_equal(t->identities[0].name, "vault_default");
	assert_int_equal(t->identities[0].aud.n, 1);
	assert_string_equal(t->identities[0].aud.v[0], "vault.io");
	assert_int_equal(t->identities[0].ttl, 3600 * NS_PER_SEC);
	assert_string_equal(t->identities[0].change_mode, "signal");
	assert_string_equal(t->identities[0].change_signal, "SIGHUP");
	canon = canonical_round_trip(job);
	/* the unnamed block as the previous build wrote it */
	assert_non_null(strstr(canon, "\"identity\":{\"env\":false,\"file\":true}"));
	assert_non_null(strstr(canon, "\"identities\":[{"));
	assert_non_null(strstr(canon, "\"name\":\"vault_default\""));
	free(canon);
	free(diags);
	diag_list_release(&dl);
	job_free(job);
}

/* Nomad's way of naming an identity, identity { name = "..." }, is a named
 * identity too; name = "default" is the unnamed one. */
static void test_identity_named_by_attribute(void **state)
{
	static const char hcl[] =
		"job \"j\" {\n"
		"  group \"g\" {\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      identity {\n"
		"        name = \"default\"\n"
		"        env = true\n"
		"      }\n"
		"      identity {\n"
		"        name = \"example\"\n"
		"        aud = [\"oidc.example.com\"]\n"
		"        file = true\n"
		"      }\n"
		"      identity {\n"
		"        name = \"other\"\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	char *diags;
	struct job *job;
	(void)state;
	diag_list_init(&dl);
	job = spec_load(hcl, strlen(hcl), &dl);
	diags = render_diags(&dl);
	assert_string_equal(diags, "");
	assert_non_null(job);
	struct job_task *t = &job->groups[0].tasks[0];
	assert_true(t->identity->env);
	assert_int_equal(t->nidentities, 2);
	assert_string_equal(t->identities[0].name, "example");
	assert_string_equal(t->identities[0].aud.v[0], "oidc.example.com");
	assert_string_equal(t->identities[1].name, "other");
	free(diags);
	diag_list_release(&dl);
	job_free(job);
}

/* What an identity block may not be, each with its message. */
static void test_identity_refused(void **state)
{
	static const struct {
		const char *task_json, *message;
	} cases[] = {
		{ "\"identities\":[{\"name\":\"a-b\",\"env\":true}]",
		  "identity name \"a-b\" must be 1 to 64 letters, digits or '_'" },
		{ "\"identities\":[{\"env\":true}]", "a named identity needs its name" },
		{ "\"identities\":[{\"name\":\"default\"}]",
		  "the identity \"default\" is the unnamed identity block" },
		{ "\"identities\":[{\"name\":\"x\"},{\"name\":\"x\"}]",
		  "identities[1]: identity \"x\" is defined twice" },
		{ "\"identity\":{\"ttl\":\"5s\"}", "ttl must be 0 (no expiry) or at least 10s" },
		{ "\"identity\":{\"ttl\":\"91d\"}", "ttl" },
		{ "\"identity\":{\"ttl\":\"1h\",\"change_mode\":\"signal\"}",
		  "change_mode \"signal\" needs change_signal" },
		{ "\"identity\":{\"change_mode\":\"restart\"}", "needs a ttl" },
		{ "\"identity\":{\"change_mode\":\"script\"}", "change_mode" },
		{ "\"identity\":{\"aud\":[\"\"]}", "aud[0] must be 1 to 256 characters" },
		{ "\"identity\":{\"name\":\"other\"}", "the unnamed identity is \"default\"" },
		{ "\"identities\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"},"
		  "{\"name\":\"d\"},{\"name\":\"e\"},{\"name\":\"f\"},{\"name\":\"g\"},"
		  "{\"name\":\"h\"},{\"name\":\"i\"}]", "identities" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = xasprintf("{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"tasks\":[{"
				       "\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{"
				       "\"command\":\"/bin/true\"},%s}]}]}", cases[i].task_json);
		char *diags;
		struct job *job = decode_text(text, &diags);
		if (job || !strstr(diags, cases[i].message))
			fail_msg("case %zu: %s\ngot: %s", i, cases[i].task_json, diags);
		free(diags);
		free(text);
	}
}

static void test_batch_defaults_and_wrapper(void **state)
{
	char *diags;
	struct job *job = decode_text("{\"job\":{\"id\":\"b\",\"type\":\"batch\",\"groups\":["
				      MIN_GROUP "]}}", &diags);

	assert_non_null(job);
	struct job_group *g = &job->groups[0];
	assert_int_equal(g->restart.attempts, 3);
	assert_int_equal(g->restart.interval, 24 * 3600 * NS_PER_SEC);
	assert_int_equal(g->reschedule.attempts, 1);
	assert_int_equal(g->reschedule.interval, 24 * 3600 * NS_PER_SEC);
	assert_int_equal(g->reschedule.delay, 5 * NS_PER_SEC);
	assert_string_equal(g->reschedule.delay_function, "constant");
	assert_false(g->reschedule.unlimited);
	job_free(job);
	free(diags);
}

static void test_every_type_error_in_one_run(void **state)
{
	char *diags;
	struct job *job = decode_text(
		"{\"id\":7,\"priority\":\"high\",\"type\":\"daemon\",\"groups\":[{\"name\":\"g\","
		"\"count\":-1,\"bogus\":1,\"vault\":{},\"tasks\":[" MIN_TASK ",{\"name\":\"u\","
		"\"driver\":\"exec\",\"resources\":{\"memory\":[]},\"env\":[1],"
		"\"lifecycle\":{\"hook\":\"later\",\"sidecar\":\"yes\"}}]}]}", &diags);

	assert_null(job);
	assert_string_equal(diags,
		"E 0:0 id: expected a string, got a number\n"
		"E 0:0 priority: expected a whole number, got a string\n"
		"E 0:0 type: expected one of \"service\", \"batch\", \"system\", \"sysbatch\", got \"daemon\"\n"
		"E 0:0 groups[0].count: must be between 0 and 100000, got -1\n"
		"E 0:0 groups[0]: unknown group field \"bogus\"\n"
		"W 0:0 groups[0].vault: not supported by herd; ignored\n"
		"E 0:0 groups[0].tasks[1].resources.memory: expected a whole number, got a list\n"
		"E 0:0 groups[0].tasks[1].env: expected an object of strings, got a list\n"
		"E 0:0 groups[0].tasks[1].lifecycle.hook: expected one of \"prestart\", "
		"\"poststart\", \"poststop\", got \"later\"\n"
		"E 0:0 groups[0].tasks[1].lifecycle.sidecar: expected a boolean, got a string\n"
		/* the validator runs too, so one run reports everything */
		"E 0:0 groups[0].tasks[1]: driver \"exec\" needs config.command (a string)\n");
	free(diags);
}

static void test_units_from_strings_and_numbers(void **state)
{
	char *diags;
	struct job *job = decode_text(
		"{\"id\":\"u\",\"groups\":[{\"name\":\"g\",\"restart\":{\"delay\":\"1m30s\","
		"\"interval\":600000000000},\"tasks\":[{\"name\":\"t\",\"driver\":\"docker\","
		"\"config\":{\"image\":\"x\"},\"kill_timeout\":\"30s\",\"resources\":{\"memory\":"
		"\"2 GiB\",\"memory_max\":\"512MB\"},\"logs\":{\"max_file_size\":\"1MiB\"}}]}]}",
		&diags);

	assert_string_equal(diags, "E 0:0 groups[0].tasks[0].resources: memory_max (489 MiB) must "
				   "be at least memory (2048 MiB)\n");
	assert_null(job);
	free(diags);
	job = decode_text(
		"{\"id\":\"u\",\"groups\":[{\"name\":\"g\",\"restart\":{\"delay\":\"1m30s\","
		"\"interval\":600000000000},\"tasks\":[{\"name\":\"t\",\"driver\":\"docker\","
		"\"config\":{\"image\":\"x\"},\"kill_timeout\":\"30s\",\"resources\":{\"memory\":"
		"\"512MB\",\"memory_max\":\"2 GiB\"},\"logs\":{\"max_file_size\":\"1MiB\"}}]}]}",
		&diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_int_equal(job->groups[0].restart.delay, 90 * NS_PER_SEC);
	assert_int_equal(job->groups[0].restart.interval, 600 * NS_PER_SEC);
	struct job_task *t = &job->groups[0].tasks[0];
	assert_int_equal(t->kill_timeout, 30 * NS_PER_SEC);
	assert_int_equal(t->resources.memory, 489); /* 512e6 bytes, rounded up to MiB */
	assert_int_equal(t->resources.memory_max, 2048);
	assert_int_equal(t->logs.max_file_size, 1);
	job_free(job);
	free(diags);
}

static void test_bad_units(void **state)
{
	char *diags;
	struct job *job = decode_text(
		"{\"id\":\"u\",\"groups\":[{\"name\":\"g\",\"restart\":{\"delay\":\"soon\"},"
		"\"tasks\":[{\"name\":\"t\",\"driver\":\"x\",\"kill_timeout\":\"2h\","
		"\"resources\":{\"memory\":\"lots\",\"cpu\":1.5}}]}]}", &diags);

	assert_null(job);
	assert_string_equal(diags,
		"E 0:0 groups[0].restart.delay: expected a duration such as \"30s\", \"5m\" or "
		"\"1h30m\", got \"soon\"\n"
		"E 0:0 groups[0].tasks[0].kill_timeout: must be between 0s and 1h, got \"2h\"\n"
		"E 0:0 groups[0].tasks[0].resources.memory: expected a size such as \"512MB\" or "
		"\"2 GiB\", got \"lots\"\n"
		"E 0:0 groups[0].tasks[0].resources.cpu: expected a whole number, got a number\n");
	free(diags);
}

static struct job *device_job(const char *device, char **diags)
{
	char *text = xasprintf("{\"id\":\"d\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\","
			       "\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},\"resources\":"
			       "{\"devices\":[%s]}}]}]}", device);
	struct job *job = decode_text(text, diags);
	free(text);
	return job;
}

static void test_compute_fractions(void **state)
{
	static const struct { const char *in; int thousandths; } ok[] = {
		{ "25", 250 }, { "12.5", 125 }, { "0.1", 1 }, { "100", 1000 }, { "33.3", 333 },
	};
	char *diags, buf[128];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(buf, sizeof(buf), "{\"name\":\"nvidia/gpu\",\"compute\":%s}", ok[i].in);
		struct job *job = device_job(buf, &diags);
		assert_string_equal(diags, "");
		assert_non_null(job);
		assert_int_equal(job->groups[0].tasks[0].resources.devices[0].compute, ok[i].thousandths);
		assert_int_equal(job->groups[0].tasks[0].resources.devices[0].count, 1);
		job_free(job);
		free(diags);
	}
	assert_null(device_job("{\"name\":\"gpu\",\"compute\":12.55}", &diags));
	assert_string_equal(diags, "E 0:0 groups[0].tasks[0].resources.devices[0].compute: must be a "
				   "percentage of one GPU from 0.1 to 100 in steps of 0.1, got 12.55\n");
	free(diags);
	assert_null(device_job("{\"name\":\"gpu\",\"compute\":100.5}", &diags));
	assert_string_equal(diags, "E 0:0 groups[0].tasks[0].resources.devices[0].compute: must be a "
				   "percentage of one GPU from 0.1 to 100 in steps of 0.1, got 100.5\n");
	free(diags);
	assert_null(device_job("{\"name\":\"gpu\",\"compute\":\"half\"}", &diags));
	assert_string_equal(diags, "E 0:0 groups[0].tasks[0].resources.devices[0].compute: expected a "
				   "percentage of one GPU, got a string\n");
	free(diags);
}

static void test_constraint_shorthands(void **state)
{
	char *diags;
	struct job *job = decode_text(
		"{\"id\":\"c\",\"constraints\":[{\"attribute\":\"${attr.os}\",\"regexp\":\"^lin\"},"
		"{\"distinct_hosts\":true},{\"attribute\":\"${meta.rack}\",\"distinct_property\":2},"
		"{\"attribute\":\"${attr.driver.version}\",\"version\":\">= 535\"}],"
		"\"groups\":[" MIN_GROUP "]}", &diags);

	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_int_equal(job->constraints.n, 4);
	assert_string_equal(job->constraints.v[0].operator, "regexp");
	assert_string_equal(job->constraints.v[0].value, "^lin");
	assert_string_equal(job->constraints.v[1].operator, "distinct_hosts");
	assert_null(job->constraints.v[1].value);
	assert_null(job->constraints.v[1].attribute);
	assert_string_equal(job->constraints.v[2].operator, "distinct_property");
	assert_string_equal(job->constraints.v[2].value, "2");
	assert_string_equal(job->constraints.v[3].operator, "version");
	job_free(job);
	free(diags);

	job = decode_text("{\"id\":\"c\",\"constraints\":[{\"attribute\":\"a\",\"operator\":\"=\","
			  "\"regexp\":\"x\"}],\"groups\":[" MIN_GROUP "]}", &diags);
	assert_null(job);
	assert_string_equal(diags, "E 0:0 constraints[0].regexp: conflicts with operator\n");
	free(diags);
}

static void test_scalars_become_text(void **state)
{
	char *diags;
	struct job *job = decode_text(
		"{\"id\":\"m\",\"meta\":{\"n\":3,\"on\":true,\"s\":\"x\"},\"constraints\":[{"
		"\"attribute\":\"${attr.cpu.numcores}\",\"operator\":\">=\",\"value\":8}],"
		"\"groups\":[" MIN_GROUP "]}", &diags);

	assert_non_null(job);
	assert_int_equal(job->meta.n, 3);
	assert_string_equal(job->meta.v[0].key, "n");
	assert_string_equal(job->meta.v[0].value, "3");
	assert_string_equal(job->meta.v[1].value, "true");
	assert_string_equal(job->constraints.v[0].value, "8");
	job_free(job);
	free(diags);
}

static void test_limits(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char *diags;

	strbuf_adds(&sb, "{\"id\":\"l\",\"constraints\":[");
	for (int i = 0; i <= JOB_MAX_RULES; i++)
		strbuf_addf(&sb, "%s{\"attribute\":\"a\",\"value\":\"b\"}", i ? "," : "");
	strbuf_adds(&sb, "],\"groups\":[{\"name\":\"");
	for (int i = 0; i <= JOB_MAX_ID; i++)
		strbuf_addch(&sb, 'g');
	strbuf_adds(&sb, "\",\"tasks\":[" MIN_TASK "]}]}");
	assert_null(decode_text(sb.buf, &diags));
	assert_string_equal(diags, "E 0:0 constraints: more than 64 constraint entries\n"
				   "E 0:0 groups[0].name: longer than 128 bytes\n");
	free(diags);
	strbuf_release(&sb);
}

static void test_not_an_object(void **state)
{
	char *diags;
	assert_null(decode_text("[1]", &diags));
	assert_string_equal(diags, "E 0:0 job: expected a job object, got a list\n");
	free(diags);
	assert_null(decode_text("{\"id\":\"x\",\"groups\":[3]}", &diags));
	/* reported once: the validator skips what failed to decode */
	assert_string_equal(diags, "E 0:0 groups[0]: expected a group object, got a number\n");
	free(diags);
}

static const char *full_job =
	"{\"id\":\"full\",\"type\":\"batch\",\"priority\":70,\"datacenters\":[\"dc1\",\"dc2\"],"
	"\"meta\":{\"team\":\"ml\"},\"affinities\":[{\"attribute\":\"${node.class}\","
	"\"value\":\"gpu\",\"weight\":-20}],\"groups\":[{\"name\":\"g\",\"count\":3,"
	"\"network\":{\"ports\":[{\"label\":\"http\",\"static\":8080,\"to\":80},{\"label\":\"m\"}]},"
	"\"reschedule\":{\"unlimited\":true,\"delay_function\":\"fibonacci\",\"max_delay\":\"10m\"},"
	"\"tasks\":[{\"name\":\"pre\",\"driver\":\"exec\",\"config\":{\"command\":\"pip\","
	"\"args\":[\"install\",\"x\"]},\"lifecycle\":{\"hook\":\"prestart\"}},"
	"{\"name\":\"main\",\"driver\":\"raw_exec\",\"user\":\"nobody\",\"config\":{\"command\":"
	"\"python3\",\"nested\":{\"a\":[1,2.5,null]}},\"env\":{\"A\":\"1\"},"
	"\"templates\":[{\"data\":\"x={{.}}\",\"destination\":\"local/x\",\"change_mode\":\"signal\","
	"\"change_signal\":\"SIGHUP\"}],\"artifacts\":[{\"source\":\"https://e/x.tgz\","
	"\"options\":{\"checksum\":\"sha256:ab\"}}],\"resources\":{\"cores\":2,\"memory\":1024,"
	"\"devices\":[{\"name\":\"nvidia/gpu\",\"compute\":12.5,\"memory\":\"4GiB\",\"constraints\":"
	"[{\"attribute\":\"${device.model}\",\"value\":\"Tesla T4\"}]},{\"name\":\"gpu\","
	"\"count\":2}]},\"kill_signal\":\"SIGTERM\",\"meta\":{\"k\":\"v\"}}]}]}";

static void test_round_trip(void **state)
{
	char *diags, *text1, *text2;
	struct job *a = decode_text(full_job, &diags), *b;
	json_t *j1, *j2;

	assert_string_equal(diags, "");
	assert_non_null(a);
	free(diags);
	j1 = job_to_json(a);
	text1 = json_dumps(j1, JSON_COMPACT);
	b = decode_text(text1, &diags);
	assert_string_equal(diags, "");
	assert_non_null(b);
	j2 = job_to_json(b);
	text2 = json_dumps(j2, JSON_COMPACT);
	assert_string_equal(text1, text2);
	/* the canonical form writes every default and the units it promises */
	json_t *task = json_array_get(json_object_get(json_array_get(json_object_get(j1, "groups"), 0),
						      "tasks"), 1);
	json_t *dev = json_array_get(json_object_get(json_object_get(task, "resources"), "devices"), 0);
	assert_true(json_real_value(json_object_get(dev, "compute")) == 12.5);
	assert_int_equal(json_integer_value(json_object_get(dev, "memory")), 4096);
	assert_int_equal(json_integer_value(json_object_get(task, "kill_timeout")), 5 * NS_PER_SEC);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(task, "resources"), "cpu")), 0);
	assert_true(json_is_null(json_object_get(task, "lifecycle")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(task, "artifacts"), 0), "destination")), "local/");
	assert_int_equal(b->affinities.v[0].weight, -20);
	assert_int_equal(b->groups[0].network.ports[0].static_port, 8080);
	assert_int_equal(b->groups[0].tasks[1].resources.devices[0].compute, 125);
	free(text1);
	free(text2);
	free(diags);
	json_decref(j1);
	json_decref(j2);
	job_free(a);
	job_free(b);
}

/* Fields added after jobs were stored are left out of the canonical JSON
 * at their defaults, so that a stored job re-submitted unchanged after an
 * upgrade keeps its text (no new version); set, they are written; a task's
 * own render_templates = false stays false beside its group's true. */
static void test_new_fields_left_out_at_default(void **state)
{
	static const char text[] =
		"{\"id\":\"n\",\"groups\":[{\"name\":\"g\",\"restart\":{\"attempts\":1},"
		"\"tasks\":[{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},"
		"\"templates\":[{\"data\":\"a\",\"destination\":\"local/a\"},{\"data\":\"b\","
		"\"destination\":\"local/b\",\"splay\":0,\"uid\":0,\"gid\":7,\"left_delimiter\":\"[[\","
		"\"right_delimiter\":\"]]\",\"error_on_missing_key\":true}]}]},{\"name\":\"h\","
		"\"restart\":{\"render_templates\":true},\"tasks\":[{\"name\":\"t\",\"driver\":"
		"\"raw_exec\",\"config\":{\"command\":\"x\"},\"restart\":{\"render_templates\":false}}]}]}";
	static const char *const added[] = { "splay", "uid", "gid", "left_delimiter",
					     "right_delimiter", "error_on_missing_key", NULL };
	char *diags, *text1, *text2;
	struct job *a = decode_text(text, &diags), *b;
	json_t *j1, *j2, *g0, *tmpl;

	(void)state;
	assert_string_equal(diags, "");
	assert_non_null(a);
	free(diags);
	j1 = job_to_json(a);
	g0 = json_array_get(json_object_get(j1, "groups"), 0);
	assert_null(json_object_get(json_object_get(g0, "restart"), "render_templates"));
	tmpl = json_object_get(json_array_get(json_object_get(g0, "tasks"), 0), "templates");
	for (const char *const *k = added; *k; k++) {
		assert_null(json_object_get(json_array_get(tmpl, 0), *k));
		assert_non_null(json_object_get(json_array_get(tmpl, 1), *k));
	}
	text1 = json_dumps(j1, JSON_COMPACT);
	b = decode_text(text1, &diags);
	assert_string_equal(diags, "");
	assert_non_null(b);
	assert_int_equal(b->groups[0].tasks[0].templates[0].splay, 5 * NS_PER_SEC);
	assert_int_equal(b->groups[0].tasks[0].templates[0].uid, -1);
	assert_string_equal(b->groups[0].tasks[0].templates[0].left_delimiter, "{{");
	assert_int_equal(b->groups[0].tasks[0].templates[1].splay, 0);
	assert_int_equal(b->groups[0].tasks[0].templates[1].uid, 0);
	assert_true(b->groups[1].restart.render_templates);
	assert_false(b->groups[1].tasks[0].restart->render_templates);
	j2 = job_to_json(b);
	text2 = json_dumps(j2, JSON_COMPACT);
	assert_string_equal(text1, text2);
	free(text1);
	free(text2);
	free(diags);
	json_decref(j1);
	json_decref(j2);
	job_free(a);
	job_free(b);
}

/* job_to_json_sorted: the same job as job_to_json, every object's keys
 * (the job's, maps', a task config's) in sorted order, as JSON_SORT_KEYS
 * writes them. */
/* A check's TLS fields and body, added after jobs were stored: left out at
 * their defaults (a stored check keeps its text), written when set. */
static void test_check_tls_fields_left_out_at_default(void **state)
{
	static const char text[] =
		"{\"id\":\"c\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\","
		"\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},\"services\":[{"
		"\"name\":\"s\",\"port\":8080,\"checks\":[{\"type\":\"http\",\"path\":\"/\","
		"\"interval\":\"1s\",\"timeout\":\"1s\"},{\"type\":\"http\",\"path\":\"/\","
		"\"protocol\":\"https\",\"interval\":\"1s\",\"timeout\":\"1s\","
		"\"tls_skip_verify\":true,\"tls_server_name\":\"api.test\",\"body\":\"{}\"}]}]}]}]}";
	static const char *const added[] = { "tls_skip_verify", "tls_server_name", "body", NULL };
	char *diags, *text1, *text2;
	struct job *a = decode_text(text, &diags), *b;
	json_t *j1, *j2, *checks;

	(void)state;
	assert_string_equal(diags, "");
	assert_non_null(a);
	free(diags);
	j1 = job_to_json(a);
	checks = json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(
		json_array_get(json_object_get(j1, "groups"), 0), "tasks"), 0), "services"), 0),
		"checks");
	for (const char *const *k = added; *k; k++) {
		assert_null(json_object_get(json_array_get(checks, 0), *k));
		assert_non_null(json_object_get(json_array_get(checks, 1), *k));
	}
	text1 = json_dumps(j1, JSON_COMPACT);
	b = decode_text(text1, &diags);
	assert_string_equal(diags, "");
	assert_non_null(b);
	assert_false(b->groups[0].tasks[0].services[0].checks[0].tls_skip_verify);
	assert_null(b->groups[0].tasks[0].services[0].checks[0].body);
	assert_true(b->groups[0].tasks[0].services[0].checks[1].tls_skip_verify);
	assert_string_equal(b->groups[0].tasks[0].services[0].checks[1].tls_server_name, "api.test");
	assert_string_equal(b->groups[0].tasks[0].services[0].checks[1].body, "{}");
	j2 = job_to_json(b);
	text2 = json_dumps(j2, JSON_COMPACT);
	assert_string_equal(text1, text2);
	free(text1);
	free(text2);
	free(diags);
	json_decref(j1);
	json_decref(j2);
	job_free(a);
	job_free(b);
}

static void test_sorted_form(void **state)
{
	char *diags, *text1, *text2;
	struct job *a = decode_text(full_job, &diags);
	json_t *j1, *j2;

	(void)state;
	assert_non_null(a);
	free(diags);
	/* a config and a map whose keys come out of order */
	json_object_set_new(a->groups[0].tasks[0].config, "args", json_pack("{s:i, s:i}", "z", 1, "a", 2));
	json_object_set_new(a->groups[0].tasks[0].config, "Alpha", json_true());
	j1 = job_to_json(a);
	j2 = job_to_json_sorted(a);
	assert_true(json_equal(j1, j2));
	text1 = json_dumps(j1, JSON_COMPACT | JSON_SORT_KEYS);
	text2 = json_dumps(j2, JSON_COMPACT);
	assert_string_equal(text1, text2);
	/* table order is not sorted order, so the test sees a difference */
	free(text2);
	text2 = json_dumps(j1, JSON_COMPACT);
	assert_string_not_equal(text1, text2);
	free(text1);
	free(text2);
	json_decref(j1);
	json_decref(j2);
	job_free(a);

	/* a map written out of order */
	a = decode_text("{\"id\":\"m\",\"meta\":{\"z\":\"1\",\"b\":\"2\",\"a\":\"3\"},"
			"\"groups\":[" MIN_GROUP "]}", &diags);
	assert_non_null(a);
	free(diags);
	j2 = job_to_json_sorted(a);
	text2 = json_dumps(json_object_get(j2, "meta"), JSON_COMPACT);
	assert_string_equal(text2, "{\"a\":\"3\",\"b\":\"2\",\"z\":\"1\"}");
	free(text2);
	json_decref(j2);
	job_free(a);
}

static void test_compute_from_percent(void **state)
{
	assert_int_equal(job_compute_from_percent(25), 250);
	assert_int_equal(job_compute_from_percent(0.1), 1);
	assert_int_equal(job_compute_from_percent(99.9), 999);
	assert_int_equal(job_compute_from_percent(0.05), -1);
	assert_int_equal(job_compute_from_percent(0), -1);
	assert_int_equal(job_compute_from_percent(100.1), -1);
	assert_int_equal(job_compute_from_percent(1.23), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_job_gets_service_defaults),
		cmocka_unit_test(test_batch_defaults_and_wrapper),
		cmocka_unit_test(test_logs_disabled),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_identity_refused),
		cmocka_unit_test(test_identity_named_by_attribute),
		cmocka_unit_test(test_every_type_error_in_one_run),
		cmocka_unit_test(test_units_from_strings_and_numbers),
		cmocka_unit_test(test_bad_units),
		cmocka_unit_test(test_compute_fractions),
		cmocka_unit_test(test_constraint_shorthands),
		cmocka_unit_test(test_scalars_become_text),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_not_an_object),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_sorted_form),
		cmocka_unit_test(test_new_fields_left_out_at_default),
		cmocka_unit_test(test_check_tls_fields_left_out_at_default),
		cmocka_unit_test(test_compute_from_percent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
