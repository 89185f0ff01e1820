/* HCL job files through spec_load: the block table (labels, plurals,
 * repeats), positions in messages, JSON files, and that HCL and the
 * canonical JSON agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"
#include "spec/job-int.h"

static struct job *load(const char *text, char **out)
{
	struct diag_list dl;
	struct job *job;

	diag_list_init(&dl);
	job = spec_load(text, strlen(text), &dl);
	diag_sort(&dl);
	*out = render_diags(&dl);
	diag_list_release(&dl);
	return job;
}

static void test_blocks_become_canonical_fields(void **state)
{
	char *diags;
	struct job *job = load(
		"job \"j\" {\n"
		"  constraint {\n"
		"    attribute = \"${attr.os}\"\n"
		"    value = \"linux\"\n"
		"  }\n"
		"  constraint {\n"
		"    distinct_hosts = true\n"
		"  }\n"
		"  meta { a = \"1\" }\n"
		"  group \"g\" {\n"
		"    network {\n"
		"      port \"http\" { static = 80 }\n"
		"      port \"x\" {}\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"docker\"\n"
		"      config {\n"
		"        image = \"i\"\n"
		"        mount { type = \"bind\" }\n"
		"        mount { type = \"tmpfs\" }\n"
		"        labels { a = \"b\" }\n"
		"      }\n"
		"      resources {\n"
		"        device \"nvidia/gpu/Tesla T4\" { compute = 12.5 }\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n", &diags);

	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_string_equal(job->id, "j");
	assert_int_equal(job->constraints.n, 2);
	assert_string_equal(job->constraints.v[1].operator, "distinct_hosts");
	assert_int_equal(job->constraints.v[0].pos.line, 2);
	assert_string_equal(job->meta.v[0].value, "1");
	assert_string_equal(job->groups[0].name, "g");
	assert_int_equal(job->groups[0].pos.line, 10);
	assert_int_equal(job->groups[0].network.nports, 2);
	assert_string_equal(job->groups[0].network.ports[0].label, "http");
	assert_int_equal(job->groups[0].network.ports[0].static_port, 80);
	struct job_task *t = &job->groups[0].tasks[0];
	assert_true(json_is_array(json_object_get(t->config, "mount")));
	assert_int_equal(json_array_size(json_object_get(t->config, "mount")), 2);
	assert_true(json_is_object(json_object_get(t->config, "labels")));
	assert_string_equal(t->resources.devices[0].name, "nvidia/gpu/Tesla T4");
	assert_int_equal(t->resources.devices[0].compute, 125);
	job_free(job);
	free(diags);
}

static void test_errors_with_positions(void **state)
{
	char *diags;
	struct job *job = load(
		"job \"j\" {\n"
		"  priority = 0\n"
		"  parameterized {\n"
		"    payload = \"optional\"\n"
		"  }\n"
		"  vault {}\n"
		"  group \"g\" {\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"x\" }\n"
		"      resources { memory = \"a lot\" }\n"
		"      resources {}\n"
		"      lifecycle \"x\" { hook = \"prestart\" }\n"
		"    }\n"
		"    task {}\n"
		"  }\n"
		"}\n"
		"variable \"v\" {}\n", &diags);

	assert_null(job);
	assert_string_equal(diags,
		"E 2:14 priority: must be between 1 and 100, got 0\n"
		"E 3:3 parameterized: only batch jobs can be parameterized (this job's type is \"service\")\n"
		"W 6:3 vault: not supported by herd; ignored\n"
		"E 11:28 groups[0].tasks[0].resources.memory: expected a size such as \"512MB\" or "
		"\"2 GiB\", got \"a lot\"\n"
		"E 12:7 block \"resources\" is repeated; only one is allowed here\n"
		"E 13:7 block \"lifecycle\" takes no label\n"
		"E 15:5 block \"task\" needs one label (its name)\n"
		"E 18:1 \"variable\" is not supported at the top level; a job file holds one job block\n");
	free(diags);
}

static void test_no_job_block(void **state)
{
	char *diags;
	assert_null(load("# nothing here\n", &diags));
	assert_string_equal(diags, "E 1:1 no job block: a job file holds one job \"<id>\" { ... } block\n");
	free(diags);
	assert_null(load("job \"a\" {}\njob \"b\" {}\n", &diags));
	assert_string_equal(diags, "E 1:1 job: a job needs at least one group\n"
				   "E 2:1 a job file holds only one job block\n");
	free(diags);
	assert_null(load("job {}\n", &diags));
	assert_string_equal(diags, "E 1:1 block \"job\" needs one label (its id)\n");
	free(diags);
}

static void test_json_file_positions(void **state)
{
	char *diags;
	struct job *job = load("{\"job\": {\"id\": \"j\",\n"
			       "  \"groups\": [{\"name\": \"g\", \"count\": \"two\",\n"
			       "    \"tasks\": []}]}}\n", &diags);
	assert_null(job);
	assert_string_equal(diags,
		"E 2:14 groups[0]: a group needs at least one task\n"
		"E 2:37 groups[0].count: expected a whole number, got a string\n");
	free(diags);
}

static void test_hcl_and_json_agree(void **state)
{
	char *diags, *hcl_text, *json_text;
	struct job *a = load("job \"same\" {\n"
			     "  type = \"batch\"\n"
			     "  group \"g\" {\n"
			     "    task \"t\" {\n"
			     "      driver = \"raw_exec\"\n"
			     "      kill_timeout = \"30s\"\n"
			     "      config {\n"
			     "        command = \"/bin/sh\"\n"
			     "        args = [\"-c\", \"echo $${HOME} ${NOMAD_TASK_NAME}\"]\n"
			     "      }\n"
			     "    }\n"
			     "  }\n"
			     "}\n", &diags);
	json_t *ja;

	assert_string_equal(diags, "");
	assert_non_null(a);
	free(diags);
	ja = job_to_json(a);
	hcl_text = json_dumps(ja, JSON_COMPACT);
	struct job *b = load(hcl_text, &diags);
	assert_string_equal(diags, "");
	assert_non_null(b);
	json_t *jb = job_to_json(b);
	json_text = json_dumps(jb, JSON_COMPACT);
	assert_string_equal(hcl_text, json_text);
	assert_int_equal(b->groups[0].tasks[0].kill_timeout, 30 * NS_PER_SEC);
	free(hcl_text);
	free(json_text);
	free(diags);
	json_decref(ja);
	json_decref(jb);
	job_free(a);
	job_free(b);
}

/* An unknown name is reported where the name is written (not its value),
 * with the closest known name when one is within two edits. */
static void test_unknown_names_point_at_the_key(void **state)
{
	char *diags;
	struct job *job = load(
		"job \"j\" {\n"
		"  group \"g\" {\n"
		"    task \"t\" {\n"
		"      drivr = \"raw_exec\"\n"
		"      config { command = \"x\" }\n"
		"      constrant {\n"
		"        attribute = \"a\"\n"
		"      }\n"
		"      resources { memroy = 10 }\n"
		"      bogus = true\n"
		"      kill_timout = \"5s\"\n"
		"    }\n"
		"    contstraint { value = \"x\" }\n"
		"  }\n"
		"}\n", &diags);

	assert_null(job);
	/* driver, meant by "drivr", is not also reported as missing */
	assert_string_equal(diags,
		"E 4:7 groups[0].tasks[0]: unknown task field \"drivr\"; did you mean \"driver\"?\n"
		"E 6:7 groups[0].tasks[0]: unknown task block \"constrant\"; "
		"did you mean \"constraint\"?\n"
		"E 9:19 groups[0].tasks[0].resources: unknown resources field \"memroy\"; "
		"did you mean \"memory\"?\n"
		"E 10:7 groups[0].tasks[0]: unknown task field \"bogus\"\n"
		"E 11:7 groups[0].tasks[0]: unknown task field \"kill_timout\"; "
		"did you mean \"kill_timeout\"?\n"
		"E 13:5 groups[0]: unknown group block \"contstraint\"; "
		"did you mean \"constraint\"?\n");
	free(diags);

	/* JSON files: the key's position, and the JSON (plural) name */
	job = load("{\"id\": \"j\", \"constrants\": [],\n"
		   "  \"groups\": [{\"name\": \"g\", \"tasks\": [{\"name\": \"t\",\n"
		   "     \"driver\": \"raw_exec\", \"confg\": {}}]}]}\n", &diags);
	assert_null(job);
	assert_string_equal(diags,
		"E 1:13 job: unknown job field \"constrants\"; did you mean \"constraints\"?\n"
		"E 3:28 groups[0].tasks[0]: unknown task field \"confg\"; did you mean \"config\"?\n");
	free(diags);
}

/* A field that failed to decode is reported once, not again as missing. */
static void test_type_error_reported_once(void **state)
{
	char *diags;
	struct job *job = load(
		"job \"j\" {\n"
		"  id = 7\n"
		"  group \"g\" {\n"
		"    task \"t\" {\n"
		"      driver = [\"raw_exec\"]\n"
		"      config = \"x\"\n"
		"      template {\n"
		"        data = 5\n"
		"        destination = {}\n"
		"      }\n"
		"      lifecycle { hook = 1 }\n"
		"    }\n"
		"    task \"u\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"x\" }\n"
		"    }\n"
		"  }\n"
		"}\n", &diags);

	assert_null(job);
	assert_string_equal(diags,
		"E 1:5 \"id\" is set more than once\n"
		"E 2:8 id: expected a string, got a number\n"
		"E 5:16 groups[0].tasks[0].driver: expected a string, got a list\n"
		"E 6:16 groups[0].tasks[0].config: expected an object, got a string\n"
		"E 8:16 groups[0].tasks[0].templates[0].data: expected a string, got a number\n"
		"E 9:23 groups[0].tasks[0].templates[0].destination: expected a string, got an object\n"
		"E 11:26 groups[0].tasks[0].lifecycle.hook: expected a string, got a number\n");
	free(diags);
	job = load("{\"id\": 7, \"groups\": 3}\n", &diags);
	assert_null(job);
	assert_string_equal(diags,
		"E 1:8 id: expected a string, got a number\n"
		"E 1:21 groups: expected a list of group objects, got a number\n");
	free(diags);
}

static void test_edit_distance(void **state)
{
	assert_int_equal(job_edit_distance("driver", "driver", 3), 0);
	assert_int_equal(job_edit_distance("drivr", "driver", 3), 1);
	assert_int_equal(job_edit_distance("drvier", "driver", 3), 1); /* a swap */
	assert_int_equal(job_edit_distance("dirver", "driver", 3), 1);
	assert_int_equal(job_edit_distance("", "ab", 3), 2);
	assert_int_equal(job_edit_distance("count", "cpu", 3), 3); /* capped */
	assert_int_equal(job_edit_distance("a", "abcdef", 3), 3);
	assert_int_equal(job_edit_distance("kitten", "sitting", 9), 3);
}

/* The examples and the Nomad GPU-guide files validate unchanged. */
static void test_examples_validate(void **state)
{
	static const char *const names[] = {
		"gpu-batch.hcl", "service-port.hcl", "pipeline.hcl", "mig.hcl", "fractional.hcl",
		"nomad-raw-exec-template-t4.hcl", "nomad-docker-nvidia-smi.hcl",
		"nomad-pip-artifact-poststop.hcl", "nightly-eval.hcl", "mlflow-service.hcl",
		"gang-torchrun.hcl", "train-host-volumes.hcl", "gpu-metrics-exporter.hcl",
		"train-workload-identity.hcl",
	};
	const char *root = getenv("HERD_SOURCE_ROOT");

	assert_non_null(root);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *path = xasprintf("%s/examples/jobs/%s", root, names[i]);
		FILE *f = fopen(path, "re");
		char buf[16384], *diags;
		size_t n;

		assert_non_null(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		struct job *job = load(buf, &diags);
		if (!job || *diags)
			fprintf(stderr, "%s:\n%s", path, diags);
		assert_non_null(job);
		assert_string_equal(diags, "");
		job_free(job);
		free(diags);
		free(path);
	}
}

/* periodic { } in HCL: Nomad's form, with positions in its messages. */
static void test_periodic_block(void **state)
{
	char *diags;
	struct job *job = load("job \"nightly\" {\n"
			       "  type = \"batch\"\n"
			       "  periodic {\n"
			       "    crons = [\"0 3 * * *\", \"@weekly\"]\n"
			       "    prohibit_overlap = true\n"
			       "    time_zone = \"UTC\"\n"
			       "  }\n"
			       "  group \"g\" {\n"
			       "    task \"t\" {\n"
			       "      driver = \"raw_exec\"\n"
			       "      config { command = \"x\" }\n"
			       "    }\n"
			       "  }\n"
			       "}\n", &diags);

	(void)state;
	assert_string_equal(diags, "");
	assert_non_null(job->periodic);
	assert_int_equal(job->periodic->crons.n, 2);
	assert_string_equal(job->periodic->crons.v[1], "@weekly");
	assert_true(job->periodic->prohibit_overlap);
	assert_int_equal(job->periodic->pos.line, 3);
	job_free(job);
	free(diags);
	assert_null(load("job \"n\" {\n"
			 "  periodic {\n"
			 "    cron = \"0 3 * * * *\"\n"
			 "  }\n"
			 "  periodic { cron = \"@daily\" }\n"
			 "  group \"g\" {\n"
			 "    task \"t\" {\n"
			 "      driver = \"raw_exec\"\n"
			 "      config { command = \"x\" }\n"
			 "    }\n"
			 "  }\n"
			 "}\n", &diags));
	assert_string_equal(diags,
		"E 2:3 periodic: only batch jobs can be periodic (this job's type is \"service\")\n"
		"E 2:3 periodic: crons[0]: \"0 3 * * * *\": column 11: more than 5 fields\n"
		"E 5:3 block \"periodic\" is repeated; only one is allowed here\n");
	free(diags);
}

/* parameterized { } and dispatch_payload { } in HCL, as Nomad writes them. */
static void test_parameterized_block(void **state)
{
	char *diags;
	struct job *job = load("job \"render\" {\n"
			       "  type = \"batch\"\n"
			       "  parameterized {\n"
			       "    payload = \"required\"\n"
			       "    meta_required = [\"user\"]\n"
			       "    meta_optional = [\"tag\", \"quality\"]\n"
			       "  }\n"
			       "  group \"g\" {\n"
			       "    task \"t\" {\n"
			       "      driver = \"raw_exec\"\n"
			       "      config { command = \"x\" }\n"
			       "      dispatch_payload { file = \"input.json\" }\n"
			       "    }\n"
			       "  }\n"
			       "}\n", &diags);

	(void)state;
	assert_string_equal(diags, "");
	assert_non_null(job->parameterized);
	assert_string_equal(job->parameterized->payload, "required");
	assert_int_equal(job->parameterized->meta_optional.n, 2);
	assert_string_equal(job->parameterized->meta_optional.v[1], "quality");
	assert_int_equal(job->parameterized->pos.line, 3);
	assert_non_null(job->groups[0].tasks[0].dispatch_payload);
	assert_string_equal(job->groups[0].tasks[0].dispatch_payload->file, "input.json");
	job_free(job);
	free(diags);
	assert_null(load("job \"n\" {\n"
			 "  parameterized { }\n"
			 "  group \"g\" {\n"
			 "    task \"t\" {\n"
			 "      driver = \"raw_exec\"\n"
			 "      config { command = \"x\" }\n"
			 "      dispatch_payload { file = \"../x\" }\n"
			 "    }\n"
			 "  }\n"
			 "}\n", &diags));
	assert_string_equal(diags,
		"E 2:3 parameterized: only batch jobs can be parameterized (this job's type is "
		"\"service\")\n"
		"E 7:7 groups[0].tasks[0].dispatch_payload: file \"../x\" must be a relative file "
		"path inside local/ (not absolute, no \"..\")\n");
	free(diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_become_canonical_fields),
		cmocka_unit_test(test_errors_with_positions),
		cmocka_unit_test(test_no_job_block),
		cmocka_unit_test(test_json_file_positions),
		cmocka_unit_test(test_hcl_and_json_agree),
		cmocka_unit_test(test_examples_validate),
		cmocka_unit_test(test_unknown_names_point_at_the_key),
		cmocka_unit_test(test_type_error_reported_once),
		cmocka_unit_test(test_edit_distance),
		cmocka_unit_test(test_periodic_block),
		cmocka_unit_test(test_parameterized_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
