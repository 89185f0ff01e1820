/* The validator: every cross-field rule and its message, exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

/* Decodes a job with one group whose only task has the given extra fields,
 * and checks the diagnostics. */
static void expect_task(const char *task_fields, const char *want)
{
	char *diags;
	char *text = xasprintf("{\"id\":\"v\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\","
			       "\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"}%s%s}]}]}",
			       *task_fields ? "," : "", task_fields);
	struct job *job = decode_text(text, &diags);

	assert_string_equal(diags, want);
	if (*want && strchr(want, 'E') == want)
		assert_null(job);
	job_free(job);
	free(diags);
	free(text);
}

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

/* A job with one inline template of the given data (a JSON string's body). */
static void expect_template(const char *data, const char *want)
{
	char *fields = xasprintf("\"templates\":[{\"data\":\"%s\",\"destination\":\"local/app.conf\"}]",
				 data);
	expect_task(fields, want);
	free(fields);
}

#define TMPL_AT "E 0:0 groups[0].tasks[0].templates[0]: group \"g\", task \"t\", " \
		"template \"local/app.conf\": "

/* Inline templates are parsed at validation, with the agent's parser: each
 * kind of mistake is refused there, naming group, task, destination and the
 * template's line. */
static void test_template_data_parsed(void **state)
{
	(void)state;
	expect_template("port={{ env \\\"PORT\\\" | default \\\"80\\\" }}\\n"
			"{{ range nomadService \\\"db\\\" }}{{ .Address }}:{{ .Port }}\\n{{ end }}"
			"{{ if attr \\\"kernel.name\\\" }}x{{ else }}y{{ end }}", "");
	/* a value-dependent mistake (a field of a string) is the agent's to find */
	expect_template("{{ with env \\\"X\\\" }}{{ .Address }}{{ end }}", "");
	expect_template("a\\nb\\n{{ env \\\"X\\\"",
			TMPL_AT "template line 3: unterminated action (no '}}')\n");
	expect_template("{{ nope \\\"x\\\" }}",
			TMPL_AT "template line 1: unknown function nope (herd knows env, attr, meta, "
			"default, toUpper, toLower, trimSpace, join, nomadService, service, "
			"nomadServices, services, nomadVar, nomadVarList)\n");
	expect_template("x\\n{{ end }}", TMPL_AT "template line 2: {{ end }} with no block to close\n");
	expect_template("\\n\\n{{ range services }}\\n",
			TMPL_AT "template line 3: range without {{ end }}\n");
	expect_template("{{ key \\\"a/b\\\" }}",
			TMPL_AT "template line 1: key: not supported by herd (no Consul)\n");
	expect_template("\\n{{ file \\\"/etc/passwd\\\" }}",
			TMPL_AT "template line 2: file: not allowed: it would reach outside the task\n");
	expect_template("{{ secret \\\"x\\\" }}",
			TMPL_AT "template line 1: secret: not supported by herd (no Vault)\n");
	expect_template("{{ env }}", TMPL_AT "template line 1: env takes 1 argument, got 0\n");
	/* a source file lives on the node: not read, whatever its name */
	expect_task("\"templates\":[{\"source\":\"/nonexistent/{{ key\",\"destination\":\"a\"}]", "");
	/* each template of each task on its own */
	expect_job("{\"id\":\"v\",\"groups\":[{\"name\":\"api\",\"tasks\":[" MIN_TASK ",{\"name\":"
		   "\"web\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},\"templates\":["
		   "{\"data\":\"ok\",\"destination\":\"a\"},{\"data\":\"{{ $x }}\","
		   "\"destination\":\"b\"}]}]}]}",
		   "E 0:0 groups[0].tasks[1].templates[1]: group \"api\", task \"web\", template \"b\": "
		   "template line 1: variables ($) are not supported by herd\n");
}

static void test_job_level_rules(void **state)
{
	expect_job("{\"groups\":[" MIN_GROUP "]}", "E 0:0 job: id is required\n");
	expect_job("{\"id\":\"bad id!\",\"namespace\":\"a b\",\"datacenters\":[\"\"],\"groups\":[]}",
		   "E 0:0 job: id \"bad id!\" must be 1 to 128 letters, digits, '-', '_' or '.', "
		   "not starting with '-' or '.'\n"
		   "E 0:0 job: namespace \"a b\" must be 1 to 128 letters, digits, '-', '_' or '.'\n"
		   "E 0:0 job: datacenters[0] must not be empty\n"
		   "E 0:0 job: a job needs at least one group\n");
	expect_job("{\"id\":\"x\",\"groups\":[" MIN_GROUP "," MIN_GROUP "]}",
		   "E 0:0 groups[1]: group name \"g\" is used twice\n");
	expect_job("{\"id\":\"x\",\"groups\":[{\"name\":\"g\",\"tasks\":[]}]}",
		   "E 0:0 groups[0]: a group needs at least one task\n");
	expect_job("{\"id\":\"x\",\"groups\":[{\"tasks\":[" MIN_TASK "," MIN_TASK "]}]}",
		   "E 0:0 groups[0]: group name is required\n"
		   "E 0:0 groups[0].tasks[1]: task name \"t\" is used twice in the group\n");
}

static void test_task_rules(void **state)
{
	char *diags;
	struct job *job = decode_text("{\"id\":\"x\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":"
				      "\"t\",\"driver\":\"exec\"},{\"name\":\"d\",\"driver\":\"docker\","
				      "\"config\":{\"image\":\"\"}},{\"name\":\"n\"},{\"name\":\"o\","
				      "\"driver\":\"other\"}]}]}", &diags);
	assert_null(job);
	assert_string_equal(diags,
		"E 0:0 groups[0].tasks[0]: driver \"exec\" needs config.command (a string)\n"
		"E 0:0 groups[0].tasks[1]: driver \"docker\" needs config.image (a string)\n"
		"E 0:0 groups[0].tasks[2]: driver is required\n");
	free(diags);
	expect_task("\"kill_signal\":\"TERM\"",
		    "E 0:0 groups[0].tasks[0]: kill_signal must be a signal name such as "
		    "\"SIGTERM\", got \"TERM\"\n");
}

static void test_lifecycle_rules(void **state)
{
	expect_task("\"lifecycle\":{\"hook\":\"poststop\",\"sidecar\":true}",
		    "E 0:0 groups[0].tasks[0].lifecycle: sidecar is only allowed with hook prestart "
		    "or poststart\n"
		    "E 0:0 groups[0]: a group needs a main task (one without lifecycle)\n");
	expect_task("\"lifecycle\":{}",
		    "E 0:0 groups[0].tasks[0].lifecycle: hook is required (prestart, poststart or "
		    "poststop)\n"
		    "E 0:0 groups[0]: a group needs a main task (one without lifecycle)\n");
}

static void test_template_and_artifact_rules(void **state)
{
	expect_task("\"templates\":[{\"data\":\"a\",\"source\":\"b\"},{\"destination\":\"x\","
		    "\"data\":\"d\",\"perms\":\"rwx\",\"change_mode\":\"signal\"},{\"source\":\"s\","
		    "\"destination\":\"d\",\"change_signal\":\"HUP\"}],\"artifacts\":[{}]",
		    "E 0:0 groups[0].tasks[0].templates[0]: exactly one of data and source is required\n"
		    "E 0:0 groups[0].tasks[0].templates[0]: destination is required\n"
		    "E 0:0 groups[0].tasks[0].templates[1]: perms must be octal such as \"0644\", "
		    "got \"rwx\"\n"
		    "E 0:0 groups[0].tasks[0].templates[1]: change_mode \"signal\" needs change_signal\n"
		    "E 0:0 groups[0].tasks[0].templates[2]: change_signal must be a signal name such "
		    "as \"SIGHUP\", got \"HUP\"\n"
		    "E 0:0 groups[0].tasks[0].artifacts[0]: source is required\n");
	expect_task("\"templates\":[{\"data\":\"a\",\"destination\":\"local/a\",\"vault_grace\":\"5s\"}]",
		    "W 0:0 groups[0].tasks[0].templates[0].vault_grace: not supported by herd; ignored\n");
}

/* A template with the given extra fields (after data and destination). */
static void expect_template_opts(const char *data, const char *fields, const char *want)
{
	char *f = xasprintf("\"templates\":[{\"data\":\"%s\",\"destination\":\"local/app.conf\""
			    "%s%s}]", data, *fields ? "," : "", fields);
	expect_task(f, want);
	free(f);
}

#define TMPL_E "E 0:0 groups[0].tasks[0].templates[0]"

/* splay, wait, delimiters, error_on_missing_key, uid and gid: their
 * limits, and the delimiters the inline template is parsed with. */
static void test_template_options(void **state)
{
	(void)state;
	expect_template_opts("x", "\"splay\":\"30s\",\"wait\":{\"min\":\"2s\",\"max\":\"10s\"},"
			     "\"error_on_missing_key\":true,\"uid\":1000,\"gid\":-1", "");
	expect_template_opts("x", "\"splay\":\"-1s\"",
			     TMPL_E ".splay: must be between 0s and 24h, got \"-1s\"\n");
	expect_template_opts("x", "\"splay\":\"soon\"",
			     TMPL_E ".splay: expected a duration such as \"30s\", \"5m\" or \"1h30m\", "
			     "got \"soon\"\n");
	expect_template_opts("x", "\"wait\":{\"min\":\"10s\",\"max\":\"2s\"}",
			     TMPL_E ".wait: min (10s) must not be more than max (2s)\n");
	/* max unset: 4 x min, never less than min */
	expect_template_opts("x", "\"wait\":{\"min\":\"10s\"}", "");
	expect_template_opts("x", "\"wait\":{\"max\":\"25h\"}",
			     TMPL_E ".wait.max: must be between 0s and 24h, got \"25h\"\n");
	expect_template_opts("x", "\"uid\":-2",
			     TMPL_E ".uid: must be between -1 and 2147483647, got -2\n");
	expect_template_opts("x", "\"gid\":4294967296",
			     TMPL_E ".gid: must be between -1 and 2147483647, got 4294967296\n");
	expect_template_opts("x", "\"uid\":\"root\"", TMPL_E ".uid: expected a whole number, got a string\n");
	expect_template_opts("x", "\"left_delimiter\":\"\"",
			     TMPL_E ": left_delimiter and right_delimiter must not be empty\n");
	expect_template_opts("x", "\"right_delimiter\":\"01234567890123456\"",
			     TMPL_E ".right_delimiter: longer than 16 bytes\n");
	/* other delimiters: "{{" is text (a Helm file), "[[ ]]" are actions */
	expect_template_opts("image: {{ .Values.image | quote }}\\nport=[[ env \\\"PORT\\\" ]]",
			     "\"left_delimiter\":\"[[\",\"right_delimiter\":\"]]\"", "");
	expect_template_opts("image: {{ .Values.image | quote }}", "",
			     TMPL_AT "template line 1: unknown function quote (herd knows env, attr, "
			     "meta, default, toUpper, toLower, trimSpace, join, nomadService, service, "
			     "nomadServices, services, nomadVar, nomadVarList)\n");
	expect_template_opts("a\\n{{ x }}\\n[[ nope ]]",
			     "\"left_delimiter\":\"[[\",\"right_delimiter\":\"]]\"",
			     TMPL_AT "template line 3: unknown function nope (herd knows env, attr, meta, "
			     "default, toUpper, toLower, trimSpace, join, nomadService, service, "
			     "nomadServices, services, nomadVar, nomadVarList)\n");
	expect_template_opts("[[ env \\\"X\\\" ", "\"left_delimiter\":\"[[\",\"right_delimiter\":\"]]\"",
			     TMPL_AT "template line 1: unterminated action (no ']]')\n");
	expect_template_opts("<% range services %>", "\"left_delimiter\":\"<%\",\"right_delimiter\":\"%>\"",
			     TMPL_AT "template line 1: range without <% end %>\n");
}

/* restart's render_templates: a task's own setting over its group's. */
static void test_restart_render_templates(void **state)
{
	char *diags;
	struct job *job;

	(void)state;
	job = decode_text("{\"id\":\"v\",\"groups\":[{\"name\":\"g\",\"restart\":{\"render_templates\":"
			  "true},\"tasks\":[" MIN_TASK ",{\"name\":\"b\",\"driver\":\"raw_exec\","
			  "\"config\":{\"command\":\"x\"},\"restart\":{\"attempts\":1}},{\"name\":\"c\","
			  "\"driver\":\"raw_exec\",\"config\":{\"command\":\"x\"},\"restart\":"
			  "{\"render_templates\":false}}]}]}", &diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_true(job->groups[0].restart.render_templates);
	assert_null(job->groups[0].tasks[0].restart);
	assert_true(job->groups[0].tasks[1].restart->render_templates);
	assert_int_equal(job->groups[0].tasks[1].restart->attempts, 1);
	assert_false(job->groups[0].tasks[2].restart->render_templates);
	job_free(job);
	free(diags);
	expect_task("\"restart\":{\"render_templates\":\"yes\"}",
		    "E 0:0 groups[0].tasks[0].restart.render_templates: expected a boolean, got a "
		    "string\n");
}

static void test_resource_rules(void **state)
{
	expect_task("\"resources\":{\"cpu\":500,\"cores\":2,\"memory\":512,\"memory_max\":256}",
		    "E 0:0 groups[0].tasks[0].resources: cpu and cores cannot both be set\n"
		    "E 0:0 groups[0].tasks[0].resources: memory_max (256 MiB) must be at least "
		    "memory (512 MiB)\n");
	expect_task("\"resources\":{\"cpu\":0}",
		    "E 0:0 groups[0].tasks[0].resources: cpu must be at least 1 MHz when cores is "
		    "not set\n");
	expect_task("\"resources\":{\"memory\":5}",
		    "E 0:0 groups[0].tasks[0].resources.memory: must be between 10 and 1073741824, "
		    "got 5\n");
}

static void test_device_rules(void **state)
{
	expect_task("\"resources\":{\"devices\":[{\"name\":\"nvidia/gpu\",\"count\":2,\"compute\":25},"
		    "{\"name\":\"nvidia//x\"},{\"count\":1},{\"name\":\"gpu\",\"memory\":\"8GiB\","
		    "\"count\":3},{\"name\":\"nvidia/gpu/Tesla T4\"},{\"name\":\"a/b/c/d\"}]}",
		    "E 0:0 groups[0].tasks[0].resources.devices[0]: a fraction of one GPU is shared; "
		    "count must be 1, got 2\n"
		    "E 0:0 groups[0].tasks[0].resources.devices[1]: device name \"nvidia//x\" must be "
		    "\"<type>\", \"<vendor>/<type>\" or \"<vendor>/<type>/<model>\", e.g. \"nvidia/gpu\"\n"
		    "E 0:0 groups[0].tasks[0].resources.devices[2]: name is required\n"
		    "E 0:0 groups[0].tasks[0].resources.devices[3]: a fraction of one GPU is shared; "
		    "count must be 1, got 3\n"
		    "E 0:0 groups[0].tasks[0].resources.devices[5]: device name \"a/b/c/d\" must be "
		    "\"<type>\", \"<vendor>/<type>\" or \"<vendor>/<type>/<model>\", e.g. \"nvidia/gpu\"\n");
}

static void test_constraint_rules(void **state)
{
	expect_job("{\"id\":\"c\",\"constraints\":["
		   "{\"attribute\":\"a\",\"operator\":\"is_set\",\"value\":\"x\"},"
		   "{\"operator\":\"=\",\"value\":\"x\"},"
		   "{\"attribute\":\"a\",\"operator\":\"regexp\",\"value\":\"(unclosed\"},"
		   "{\"attribute\":\"a\",\"operator\":\"set_contains\"},"
		   "{\"attribute\":\"a\",\"operator\":\"distinct_hosts\"},"
		   "{\"attribute\":\"a\",\"operator\":\"distinct_property\",\"value\":\"many\"},"
		   "{\"attribute\":\"a\",\"operator\":\"version\",\"value\":\"\"},"
		   "{\"attribute\":\"a\",\"operator\":\"is_not_set\"},"
		   "{\"operator\":\"distinct_hosts\",\"value\":\"true\"}"
		   "],\"groups\":[" MIN_GROUP "]}",
		   "E 0:0 constraints[0]: operator \"is_set\" takes no value\n"
		   "E 0:0 constraints[1]: attribute is required with operator \"=\"\n"
		   "E 0:0 constraints[2]: value \"(unclosed\" is not a valid regular expression: "
		   "Unmatched ( or \\(\n"
		   "E 0:0 constraints[3]: value is required with operator \"set_contains\"\n"
		   "E 0:0 constraints[4]: operator \"distinct_hosts\" takes no attribute\n"
		   "E 0:0 constraints[5]: operator \"distinct_property\" takes as value a count of 1 "
		   "or more, got \"many\"\n"
		   "E 0:0 constraints[6]: value must not be empty with operator \"version\"\n");
	expect_job("{\"id\":\"c\",\"constraints\":[{\"attribute\":\"a\",\"operator\":\"~\"}],"
		   "\"groups\":[" MIN_GROUP "]}",
		   "E 0:0 constraints[0].operator: expected one of \"=\", \"==\", \"!=\", \"<\", \"<=\", "
		   "\">\", \">=\", \"regexp\", \"set_contains\", \"set_contains_all\", "
		   "\"set_contains_any\", \"version\", \"semver\", \"is_set\", \"is_not_set\", "
		   "\"distinct_hosts\", \"distinct_property\", got \"~\"\n"
		   "E 0:0 constraints[0]: value is required with operator \"~\"\n");
}

static void test_affinity_rules(void **state)
{
	char *diags;
	struct job *job;

	expect_job("{\"id\":\"a\",\"affinities\":[{\"attribute\":\"a\",\"value\":\"b\",\"weight\":0},"
		   "{\"attribute\":\"a\",\"operator\":\"distinct_hosts\"},"
		   "{\"attribute\":\"a\",\"value\":\"b\",\"weight\":101}],\"groups\":[" MIN_GROUP "]}",
		   "E 0:0 affinities[2].weight: must be between -100 and 100, got 101\n"
		   "E 0:0 affinities[0]: weight must be between -100 and 100 and not 0\n"
		   "E 0:0 affinities[1]: operator \"distinct_hosts\" is only for constraints\n"
		   "E 0:0 affinities[1]: operator \"distinct_hosts\" takes no attribute\n");
	job = decode_text("{\"id\":\"a\",\"affinities\":[{\"attribute\":\"a\",\"value\":\"b\"}],"
			  "\"groups\":[" MIN_GROUP "]}", &diags);
	assert_non_null(job);
	assert_int_equal(job->affinities.v[0].weight, 50);
	assert_string_equal(job->affinities.v[0].operator, "=");
	job_free(job);
	free(diags);
}

static void test_network_and_policy_rules(void **state)
{
	expect_job("{\"id\":\"n\",\"groups\":[{\"name\":\"g\",\"network\":{\"mode\":\"bridge\","
		   "\"ports\":[{\"label\":\"http\",\"static\":80},{\"label\":\"http\",\"static\":80},"
		   "{\"static\":70000},{\"label\":\"a-b\"}]},\"restart\":{\"mode\":\"retry\"},"
		   "\"reschedule\":{\"delay_function\":\"linear\"},\"tasks\":[" MIN_TASK "]}]}",
		   "W 0:0 groups[0].network.mode: not supported by herd; ignored\n"
		   "E 0:0 groups[0].network.ports[2].static: must be between 0 and 65535, got 70000\n"
		   "E 0:0 groups[0].restart.mode: expected one of \"fail\", \"delay\", got \"retry\"\n"
		   "E 0:0 groups[0].reschedule.delay_function: expected one of \"constant\", "
		   "\"exponential\", \"fibonacci\", got \"linear\"\n"
		   "E 0:0 groups[0].network.ports[1]: port label \"http\" is used twice\n"
		   "E 0:0 groups[0].network.ports[1]: static port 80 is used twice\n"
		   "E 0:0 groups[0].network.ports[2]: label is required\n"
		   "E 0:0 groups[0].network.ports[3]: port label \"a-b\" must be letters, digits "
		   "and '_'\n");
	expect_job("{\"id\":\"n\",\"groups\":[{\"name\":\"g\",\"network\":{"
		   "\"ports\":[{\"label\":\"http\",\"static\":80},{\"label\":\"http\",\"static\":80},"
		   "{\"static\":7000},{\"label\":\"a-b\"}]},\"reschedule\":{\"delay\":\"1m\","
		   "\"max_delay\":\"10s\"},\"tasks\":[" MIN_TASK "]}]}",
		   "E 0:0 groups[0].reschedule: max_delay must be at least delay\n"
		   "E 0:0 groups[0].network.ports[1]: port label \"http\" is used twice\n"
		   "E 0:0 groups[0].network.ports[1]: static port 80 is used twice\n"
		   "E 0:0 groups[0].network.ports[2]: label is required\n"
		   "E 0:0 groups[0].network.ports[3]: port label \"a-b\" must be letters, digits "
		   "and '_'\n");
}

/* Nomad's rule: attempts restarts, delay apart, must fit in interval. */
static void test_restart_fits_interval(void **state)
{
	expect_job("{\"id\":\"r\",\"groups\":[{\"name\":\"g\",\"restart\":{\"attempts\":3,"
		   "\"delay\":\"30s\",\"interval\":\"1m\"},\"tasks\":[" MIN_TASK "]}]}",
		   "E 0:0 groups[0].restart: 3 attempts with a delay of 30s need 90s, more than "
		   "the interval of 60s: raise interval or lower attempts or delay\n");
	/* exactly filling the interval is allowed */
	expect_job("{\"id\":\"r\",\"groups\":[{\"name\":\"g\",\"restart\":{\"attempts\":2,"
		   "\"delay\":\"30s\",\"interval\":\"1m\"},\"tasks\":[" MIN_TASK "]}]}", "");
	/* the defaults apply before the check: 2 x 15s in 1m fails... */
	expect_job("{\"id\":\"r\",\"groups\":[{\"name\":\"g\",\"restart\":{\"attempts\":5,"
		   "\"interval\":\"1m\"},\"tasks\":[" MIN_TASK "]}]}",
		   "E 0:0 groups[0].restart: 5 attempts with a delay of 15s need 75s, more than "
		   "the interval of 60s: raise interval or lower attempts or delay\n");
	/* ...no attempts never does, and a huge count does not overflow */
	expect_job("{\"id\":\"r\",\"groups\":[{\"name\":\"g\",\"restart\":{\"attempts\":0,"
		   "\"delay\":\"1h\",\"interval\":\"1s\"},\"tasks\":[" MIN_TASK "]}]}", "");
	char *diags;
	struct job *job = decode_text("{\"id\":\"r\",\"groups\":[{\"name\":\"g\",\"restart\":"
				      "{\"attempts\":4611686018427387904,\"delay\":\"1h\"},"
				      "\"tasks\":[" MIN_TASK "]}]}", &diags);
	assert_null(job);
	assert_non_null(strstr(diags, "groups[0].restart: "));
	free(diags);
}

/* periodic { }: batch only, valid expressions with their column, the
 * supported time zones, and cron folded into crons. */
#define PERIODIC_JOB(type, periodic) \
	"{\"id\":\"p\",\"type\":\"" type "\",\"groups\":[" MIN_GROUP "],\"periodic\":" periodic "}"

static void test_periodic_rules(void **state)
{
	char *diags;
	struct job *job;

	(void)state;
	job = decode_text(PERIODIC_JOB("batch", "{\"cron\":\"0 3 * * *\"}"), &diags);
	assert_string_equal(diags, "");
	assert_non_null(job->periodic);
	assert_int_equal(job->periodic->crons.n, 1);
	assert_string_equal(job->periodic->crons.v[0], "0 3 * * *");
	assert_null(job->periodic->cron);
	assert_string_equal(job->periodic->time_zone, "UTC");
	assert_true(job->periodic->enabled);
	assert_false(job->periodic->prohibit_overlap);
	job_free(job);
	free(diags);

	expect_job(PERIODIC_JOB("service", "{\"crons\":[\"@daily\"]}"),
		   "E 0:0 periodic: only batch jobs can be periodic (this job's type is \"service\")\n");
	expect_job(PERIODIC_JOB("batch", "{\"crons\":[\"@daily\", \"0 25 * * *\"]}"),
		   "E 0:0 periodic: crons[1]: \"0 25 * * *\": column 3 (hour): 25 is out of range 0-23\n");
	expect_job(PERIODIC_JOB("batch", "{\"crons\":[\"@daily\"],\"cron\":\"@hourly\"}"),
		   "E 0:0 periodic: set cron or crons, not both\n");
	expect_job(PERIODIC_JOB("batch", "{\"enabled\":false}"),
		   "E 0:0 periodic: crons (or cron) is required: when to launch the job\n");
	expect_job(PERIODIC_JOB("batch", "{\"cron\":\"@daily\",\"time_zone\":\"Europe/Paris\"}"),
		   "E 0:0 periodic: time_zone \"Europe/Paris\" is not supported: herd computes "
		   "launches in \"UTC\" or \"Local\" (the server's time zone)\n");
	expect_job(PERIODIC_JOB("batch", "{\"cron\":\"@daily\",\"time_zone\":\"Local\"}"), "");
	expect_job(PERIODIC_JOB("batch", "{\"cron\":\"@daily\",\"crons\":null,\"bogus\":1}"),
		   "E 0:0 periodic: unknown periodic field \"bogus\"\n");
}

/* The canonical JSON of a periodic job decodes to the same job. */
static void test_periodic_round_trip(void **state)
{
	char *diags, *a;
	struct job *job = decode_text(PERIODIC_JOB("batch", "{\"crons\":[\"@daily\",\"*/5 * * * *\"],"
						   "\"prohibit_overlap\":true,\"enabled\":false}"),
				      &diags);

	(void)state;
	assert_string_equal(diags, "");
	free(diags);
	a = canonical_round_trip(job);
	assert_non_null(strstr(a, "\"periodic\":{\"cron\":null,\"crons\":[\"@daily\",\"*/5 * * * *\"],"
				  "\"enabled\":false,\"prohibit_overlap\":true,\"time_zone\":\"UTC\"}"));
	free(a);
	job_free(job);
	/* a job that is not periodic says so */
	job = decode_text("{\"id\":\"p\",\"groups\":[" MIN_GROUP "]}", &diags);
	json_t *ja = job_to_json(job);
	assert_true(json_is_null(json_object_get(ja, "periodic")));
	json_decref(ja);
	job_free(job);
	free(diags);
}

/* gang = true: a group of count >= 1, batch or service, distinct_hosts
 * welcome; the canonical JSON says gang for every group. */
static void test_gang_rules(void **state)
{
	char *diags, *a;
	struct job *job;
	json_t *j;
	(void)state;
	expect_job("{\"id\":\"x\",\"groups\":[{\"name\":\"g\",\"count\":0,\"gang\":true,\"tasks\":["
		   MIN_TASK "]}]}",
		   "E 0:0 groups[0]: a gang needs count >= 1 (its members are placed together), got 0\n");
	expect_job("{\"id\":\"x\",\"groups\":[{\"name\":\"g\",\"gang\":\"yes\",\"tasks\":["
		   MIN_TASK "]}]}",
		   "E 0:0 groups[0].gang: expected a boolean, got a string\n");
	expect_job("{\"id\":\"x\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\",\"count\":4,"
		   "\"gang\":true,\"constraints\":[{\"operator\":\"distinct_hosts\"}],\"tasks\":["
		   MIN_TASK "]}]}", "");
	expect_job("{\"id\":\"x\",\"groups\":[{\"name\":\"g\",\"count\":2,\"gang\":true,"
		   "\"tasks\":[" MIN_TASK "]}]}", "");
	job = decode_text("{\"id\":\"x\",\"groups\":[{\"name\":\"g\",\"count\":2,\"gang\":true,"
			  "\"tasks\":[" MIN_TASK "]},{\"name\":\"h\",\"tasks\":[" MIN_TASK "]}]}", &diags);
	assert_string_equal(diags, "");
	assert_true(job->groups[0].gang);
	assert_false(job->groups[1].gang);
	j = job_to_json_sorted(job);
	a = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(strstr(a, "\"count\":2,\"gang\":true,"));
	assert_non_null(strstr(a, "\"count\":1,\"gang\":false,"));
	free(a);
	json_decref(j);
	job_free(job);
	free(diags);
}

/* parameterized { }: batch only, not periodic too, payload's choices. */
#define PARAM_JOB(type, extra) \
	"{\"id\":\"d\",\"type\":\"" type "\",\"groups\":[" MIN_GROUP "]" extra "}"

static void test_parameterized_rules(void **state)
{
	char *diags;
	struct job *job;

	(void)state;
	job = decode_text(PARAM_JOB("batch", ",\"parameterized\":{\"meta_required\":[\"user\"]}"),
			  &diags);
	assert_string_equal(diags, "");
	assert_non_null(job->parameterized);
	assert_string_equal(job->parameterized->payload, "optional");
	assert_int_equal(job->parameterized->meta_required.n, 1);
	assert_string_equal(job->parameterized->meta_required.v[0], "user");
	assert_int_equal(job->parameterized->meta_optional.n, 0);
	job_free(job);
	free(diags);

	expect_job(PARAM_JOB("service", ",\"parameterized\":{}"),
		   "E 0:0 parameterized: only batch jobs can be parameterized (this job's type is "
		   "\"service\")\n");
	expect_job(PARAM_JOB("batch", ",\"parameterized\":{},\"periodic\":{\"cron\":\"@daily\"}"),
		   "E 0:0 parameterized: a job cannot be both periodic and parameterized\n");
	expect_job(PARAM_JOB("batch", ",\"parameterized\":{\"payload\":\"sometimes\"}"),
		   "E 0:0 parameterized.payload: expected one of \"optional\", \"required\", "
		   "\"forbidden\", got \"sometimes\"\n");
	expect_job(PARAM_JOB("batch", ",\"parameterized\":{\"meta_required\":[\"a\"],"
			     "\"meta_optional\":[\"a\"]}"),
		   "E 0:0 parameterized: meta key \"a\" is both required and optional\n");
	expect_job(PARAM_JOB("batch", ",\"parameterized\":{\"payload\":\"required\"}"), "");
}

/* dispatch_payload { file }: inside local/, required. */
static void test_dispatch_payload_path(void **state)
{
	(void)state;
	expect_task("\"dispatch_payload\":{\"file\":\"input.json\"}", "");
	expect_task("\"dispatch_payload\":{\"file\":\"in/sub/x.bin\"}", "");
	expect_task("\"dispatch_payload\":{\"file\":\"../secrets\"}",
		    "E 0:0 groups[0].tasks[0].dispatch_payload: file \"../secrets\" must be a "
		    "relative file path inside local/ (not absolute, no \"..\")\n");
	expect_task("\"dispatch_payload\":{\"file\":\"a/../../b\"}",
		    "E 0:0 groups[0].tasks[0].dispatch_payload: file \"a/../../b\" must be a "
		    "relative file path inside local/ (not absolute, no \"..\")\n");
	expect_task("\"dispatch_payload\":{\"file\":\"/etc/passwd\"}",
		    "E 0:0 groups[0].tasks[0].dispatch_payload: file \"/etc/passwd\" must be a "
		    "relative file path inside local/ (not absolute, no \"..\")\n");
	expect_task("\"dispatch_payload\":{}",
		    "E 0:0 groups[0].tasks[0].dispatch_payload: file is required: where in local/ "
		    "the payload is written\n");
}

/* The canonical JSON of a parameterized job decodes to the same job. */
static void test_parameterized_round_trip(void **state)
{
	char *diags, *a;
	struct job *job = decode_text(
		"{\"id\":\"d\",\"type\":\"batch\",\"parameterized\":{\"payload\":\"required\","
		"\"meta_required\":[\"user\"],\"meta_optional\":[\"tag\"]},\"groups\":[{\"name\":"
		"\"g\",\"tasks\":[{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":"
		"\"x\"},\"dispatch_payload\":{\"file\":\"in.json\"}}]}]}", &diags);

	(void)state;
	assert_string_equal(diags, "");
	free(diags);
	a = canonical_round_trip(job);
	assert_non_null(strstr(a, "\"parameterized\":{\"meta_optional\":[\"tag\"],"
				  "\"meta_required\":[\"user\"],\"payload\":\"required\"}"));
	assert_non_null(strstr(a, "\"dispatch_payload\":{\"file\":\"in.json\"}"));
	free(a);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_level_rules),
		cmocka_unit_test(test_task_rules),
		cmocka_unit_test(test_lifecycle_rules),
		cmocka_unit_test(test_template_and_artifact_rules),
		cmocka_unit_test(test_template_options),
		cmocka_unit_test(test_restart_render_templates),
		cmocka_unit_test(test_template_data_parsed),
		cmocka_unit_test(test_resource_rules),
		cmocka_unit_test(test_device_rules),
		cmocka_unit_test(test_constraint_rules),
		cmocka_unit_test(test_affinity_rules),
		cmocka_unit_test(test_network_and_policy_rules),
		cmocka_unit_test(test_restart_fits_interval),
		cmocka_unit_test(test_periodic_rules),
		cmocka_unit_test(test_periodic_round_trip),
		cmocka_unit_test(test_gang_rules),
		cmocka_unit_test(test_parameterized_rules),
		cmocka_unit_test(test_dispatch_payload_path),
		cmocka_unit_test(test_parameterized_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
