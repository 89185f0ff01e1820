/* service blocks: defaults, every validation error with its path, the HCL
 * form (service, check and check_restart blocks) and the round trip
 * through the canonical JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

/* A job "web" whose group "g" has a port "http" and the given group-level
 * and task-level service lists (JSON arrays, "" for none). */
static char *svc_job(const char *group_services, const char *task_services)
{
	return xasprintf("{\"id\":\"web\",\"groups\":[{\"name\":\"g\","
			 "\"network\":{\"ports\":[{\"label\":\"http\"}]}%s%s,"
			 "\"tasks\":[{\"name\":\"t\",\"driver\":\"raw_exec\","
			 "\"config\":{\"command\":\"/bin/true\"}%s%s}]}]}",
			 *group_services ? ",\"services\":" : "", group_services,
			 *task_services ? ",\"services\":" : "", task_services);
}

static void expect_services(const char *group_services, const char *task_services,
			    const char *want)
{
	char *diags, *text = svc_job(group_services, task_services);
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

static void test_service_defaults(void **state)
{
	char *diags, *text = svc_job("[{\"port\":\"http\",\"checks\":[{\"type\":\"http\","
				     "\"path\":\"/\",\"interval\":\"10s\",\"timeout\":\"2s\"}]}]",
				     "[{\"port\":8080,\"provider\":\"nomad\",\"check_restart\":{}}]");
	struct job *job = decode_text(text, &diags);
	struct job_service *gs, *ts;
	(void)state;

	assert_string_equal(diags, "");
	assert_non_null(job);
	gs = &job->groups[0].services[0];
	ts = &job->groups[0].tasks[0].services[0];
	assert_string_equal(gs->name, "web-g");
	assert_string_equal(gs->provider, "herd");
	assert_string_equal(gs->address_mode, "auto");
	assert_string_equal(gs->checks[0].name, "service: \"web-g\" check");
	assert_string_equal(gs->checks[0].method, "GET");
	assert_string_equal(gs->checks[0].protocol, "http");
	assert_string_equal(gs->checks[0].initial_status, "critical");
	assert_int_equal(gs->checks[0].interval, 10 * NS_PER_SEC);
	assert_null(gs->check_restart);
	assert_string_equal(ts->name, "web-g-t");
	assert_string_equal(ts->provider, "nomad");
	assert_string_equal(ts->port, "8080");
	assert_int_equal(ts->check_restart->limit, 0);
	assert_int_equal(ts->check_restart->grace, NS_PER_SEC);
	job_free(job);
	free(diags);
	free(text);
}

static void test_service_errors(void **state)
{
	(void)state;
	expect_services("", "[{\"provider\":\"consul\"}]",
			"E 0:0 groups[0].tasks[0].services[0]: provider \"consul\" is not supported: "
			"herd keeps its own service registry (provider = \"herd\", or \"nomad\", "
			"which is the same)\n");
	expect_services("[{\"provider\":\"etcd\"}]", "",
			"E 0:0 groups[0].services[0]: provider must be \"herd\" or \"nomad\", "
			"got \"etcd\"\n");
	expect_services("[{\"port\":\"grpc\"}]", "",
			"E 0:0 groups[0].services[0]: port \"grpc\" is not a port label of the "
			"group's network (network { port \"grpc\" { } }) nor a number\n");
	expect_services("[{\"port\":70000}]", "",
			"E 0:0 groups[0].services[0]: port 70000 must be 1..65535\n");
	expect_services("[{\"name\":\"bad name\"}]", "",
			"E 0:0 groups[0].services[0]: service name \"bad name\" must be 1 to 128 "
			"letters, digits, '-', '_' or '.', not starting with '-' or '.'\n");
	/* interpolated names are checked by the agent */
	expect_services("[{\"name\":\"${NOMAD_JOB_NAME}-api\"}]", "", "");
	expect_services("[{\"port\":\"http\"},{\"port\":\"http\"}]", "",
			"E 0:0 groups[0].services[1]: service \"web-g\" on port http is declared "
			"twice\n");
	expect_services("[{\"tags\":[\"\"]}]", "",
			"E 0:0 groups[0].services[0]: tags[0] must not be empty\n");
	expect_services("[{\"kind\":1}]", "",
			"E 0:0 groups[0].services[0]: unknown service field \"kind\"\n");
}

static void test_check_errors(void **state)
{
	(void)state;
	expect_services("[{\"checks\":[{\"interval\":\"1s\",\"timeout\":\"1s\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0]: type is required (http, tcp or "
			"script)\n");
	expect_services("[{\"checks\":[{\"type\":\"grpc\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0].type: expected one of \"http\", "
			"\"tcp\", \"script\", got \"grpc\"\n");
	expect_services("[{\"port\":\"http\",\"checks\":[{\"type\":\"tcp\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0]: interval is required (how often "
			"the check runs)\n"
			"E 0:0 groups[0].services[0].checks[0]: timeout is required (how long one "
			"run may take)\n");
	expect_services("[{\"port\":\"http\",\"checks\":[{\"type\":\"tcp\",\"interval\":0,"
			"\"timeout\":\"2s\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0]: interval must be more than 0\n");
	expect_services("", "[{\"port\":\"http\",\"checks\":[{\"type\":\"tcp\",\"interval\":\"1s\","
			"\"timeout\":\"2s\"}]}]",
			"E 0:0 groups[0].tasks[0].services[0].checks[0]: timeout (2s) must not be "
			"longer than interval (1s)\n");
	expect_services("[{\"checks\":[{\"type\":\"tcp\",\"interval\":\"1s\",\"timeout\":\"1s\"}]}]",
			"", "E 0:0 groups[0].services[0].checks[0]: a tcp check needs a port: the "
			"service's or its own\n");
	expect_services("[{\"port\":\"http\",\"checks\":[{\"type\":\"http\",\"interval\":\"1s\","
			"\"timeout\":\"1s\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0]: an http check needs path (such as "
			"\"/health\")\n");
	expect_services("[{\"port\":\"http\",\"checks\":[{\"type\":\"http\",\"path\":\"x\","
			"\"method\":\"get\",\"interval\":\"1s\",\"timeout\":\"1s\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0]: path \"x\" must start with '/'\n"
			"E 0:0 groups[0].services[0].checks[0]: method \"get\" must be an HTTP method "
			"in capitals such as \"GET\"\n");
	expect_services("[{\"checks\":[{\"type\":\"script\",\"interval\":\"1s\",\"timeout\":\"1s\"}]}]",
			"", "E 0:0 groups[0].services[0].checks[0]: a script check needs command\n");
	expect_services("[{\"checks\":[{\"type\":\"tcp\",\"port\":\"db\",\"command\":\"/bin/x\","
			"\"interval\":\"1s\",\"timeout\":\"1s\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0]: command is for script checks only "
			"(this one is tcp)\n"
			"E 0:0 groups[0].services[0].checks[0]: port \"db\" is not a port label of the "
			"group's network (network { port \"db\" { } }) nor a number\n");
	expect_services("[{\"checks\":[{\"type\":\"script\",\"command\":\"/bin/true\","
			"\"interval\":\"1s\",\"timeout\":\"1s\",\"initial_status\":\"ok\"}]}]", "",
			"E 0:0 groups[0].services[0].checks[0].initial_status: expected one of "
			"\"passing\", \"warning\", \"critical\", got \"ok\"\n");
}

/* The HCL form: service, check and check_restart blocks, and no warning
 * for service any more. */
static void test_service_hcl(void **state)
{
	static const char text[] =
		"job \"web\" {\n"
		"  group \"g\" {\n"
		"    network {\n"
		"      port \"http\" {}\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      service {\n"
		"        name = \"api\"\n"
		"        port = \"http\"\n"
		"        tags = [\"v1\"]\n"
		"        check {\n"
		"          type     = \"http\"\n"
		"          path     = \"/health\"\n"
		"          interval = \"5s\"\n"
		"          timeout  = \"1s\"\n"
		"          header { X-Probe = \"herd\" }\n"
		"        }\n"
		"        check {\n"
		"          type     = \"script\"\n"
		"          command  = \"/bin/sh\"\n"
		"          args     = [\"-c\", \"exit 1\"]\n"
		"          interval = \"5s\"\n"
		"          timeout  = \"5s\"\n"
		"        }\n"
		"        check_restart {\n"
		"          limit = 3\n"
		"          grace = \"10s\"\n"
		"          ignore_warnings = true\n"
		"        }\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	struct job *job;
	struct job_service *s;
	json_t *j, *back;
	char *r;
	(void)state;

	diag_list_init(&dl);
	job = spec_load(text, sizeof(text) - 1, &dl);
	r = render_diags(&dl);
	assert_string_equal(r, "");
	free(r);
	assert_non_null(job);
	s = &job->groups[0].tasks[0].services[0];
	assert_string_equal(s->name, "api");
	assert_int_equal(s->nchecks, 2);
	assert_string_equal(s->checks[0].header.v[0].key, "X-Probe");
	assert_int_equal(s->checks[1].args.n, 2);
	assert_int_equal(s->check_restart->limit, 3);
	assert_int_equal(s->check_restart->grace, 10 * NS_PER_SEC);
	assert_true(s->check_restart->ignore_warnings);
	/* the canonical JSON decodes to the same JSON again */
	j = job_to_json(job);
	job_free(job);
	diag_list_release(&dl);
	diag_list_init(&dl);
	job = job_from_json(j, NULL, &dl);
	assert_non_null(job);
	back = job_to_json(job);
	assert_true(json_equal(j, back));
	json_decref(j);
	json_decref(back);
	job_free(job);
	diag_list_release(&dl);
}


/* success_before_passing, failures_before_critical, failures_before_warning:
 * 0 when unset (a stored job from before them decodes as ever), limits. */
static void test_check_thresholds(void **state)
{
	char *diags, *text = svc_job("[{\"checks\":[{\"type\":\"tcp\",\"port\":80,\"interval\":\"1s\","
				     "\"timeout\":\"1s\"},{\"type\":\"tcp\",\"port\":80,"
				     "\"interval\":\"1s\",\"timeout\":\"1s\","
				     "\"success_before_passing\":3,\"failures_before_critical\":2,"
				     "\"failures_before_warning\":1}]}]", "");
	struct job *job = decode_text(text, &diags);
	struct job_check *c;
	(void)state;

	assert_string_equal(diags, "");
	assert_non_null(job);
	c = job->groups[0].services[0].checks;
	assert_int_equal(c[0].success_before_passing, 0);
	assert_int_equal(c[0].failures_before_critical, 0);
	assert_int_equal(c[0].failures_before_warning, 0);
	assert_int_equal(c[1].success_before_passing, 3);
	assert_int_equal(c[1].failures_before_critical, 2);
	assert_int_equal(c[1].failures_before_warning, 1);
	free(canonical_round_trip(job));
	job_free(job);
	free(diags);
	free(text);

#define TCP_CHECK(extra) "[{\"checks\":[{\"type\":\"tcp\",\"port\":80,\"interval\":\"1s\"," \
			 "\"timeout\":\"1s\"," extra "}]}]"
	expect_services(TCP_CHECK("\"success_before_passing\":-1"), "",
			"E 0:0 groups[0].services[0].checks[0].success_before_passing: must be "
			"between 0 and 100, got -1\n");
	expect_services(TCP_CHECK("\"failures_before_critical\":101"), "",
			"E 0:0 groups[0].services[0].checks[0].failures_before_critical: must be "
			"between 0 and 100, got 101\n");
	expect_services(TCP_CHECK("\"failures_before_warning\":\"2\""), "",
			"E 0:0 groups[0].services[0].checks[0].failures_before_warning: expected "
			"a whole number, got a string\n");
	expect_services(TCP_CHECK("\"failures_before_warning\":3,\"failures_before_critical\":2"), "",
			"E 0:0 groups[0].services[0].checks[0]: failures_before_warning (3) must "
			"not be more than failures_before_critical (2): critical would come first\n");
	expect_services(TCP_CHECK("\"failures_before_warning\":2"), "",
			"E 0:0 groups[0].services[0].checks[0]: failures_before_warning (2) must "
			"not be more than failures_before_critical (1): critical would come first\n");
	expect_services(TCP_CHECK("\"success_before_passing\":0,\"failures_before_critical\":100"),
			"", "");
#undef TCP_CHECK
}

/* shutdown_delay of a group and of a task: a non-negative duration, 0 when
 * unset; HCL and the round trip through the canonical JSON. */
static void test_shutdown_delay(void **state)
{
	static const char text[] =
		"job \"web\" {\n"
		"  group \"g\" {\n"
		"    shutdown_delay = \"5s\"\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"      shutdown_delay = \"1m30s\"\n"
		"    }\n"
		"    task \"u\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct diag_list dl;
	struct job *job;
	char *r, *diags;
	(void)state;

	diag_list_init(&dl);
	job = spec_load(text, sizeof(text) - 1, &dl);
	r = render_diags(&dl);
	assert_string_equal(r, "");
	free(r);
	diag_list_release(&dl);
	assert_non_null(job);
	assert_int_equal(job->groups[0].shutdown_delay, 5 * NS_PER_SEC);
	assert_int_equal(job->groups[0].tasks[0].shutdown_delay, 90 * NS_PER_SEC);
	assert_int_equal(job->groups[0].tasks[1].shutdown_delay, 0);
	free(canonical_round_trip(job));
	job_free(job);

	/* a job stored before the field: none */
	job = decode_text("{\"id\":\"j\",\"groups\":[" MIN_GROUP "]}", &diags);
	assert_string_equal(diags, "");
	assert_int_equal(job->groups[0].shutdown_delay, 0);
	assert_int_equal(job->groups[0].tasks[0].shutdown_delay, 0);
	job_free(job);
	free(diags);

	job = decode_text("{\"id\":\"j\",\"groups\":[{\"name\":\"g\",\"shutdown_delay\":\"-1s\","
			  "\"tasks\":[" MIN_TASK "]}]}", &diags);
	assert_null(job);
	assert_string_equal(diags, "E 0:0 groups[0].shutdown_delay: must be between 0s and 24h, "
			    "got \"-1s\"\n");
	free(diags);
	job = decode_text("{\"id\":\"j\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\","
			  "\"driver\":\"raw_exec\",\"config\":{\"command\":\"/bin/true\"},"
			  "\"shutdown_delay\":\"25h\"}]}]}", &diags);
	assert_null(job);
	assert_string_equal(diags, "E 0:0 groups[0].tasks[0].shutdown_delay: must be between 0s and "
			    "24h, got \"25h\"\n");
	free(diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_defaults),
		cmocka_unit_test(test_service_errors),
		cmocka_unit_test(test_check_errors),
		cmocka_unit_test(test_service_hcl),
		cmocka_unit_test(test_check_thresholds),
		cmocka_unit_test(test_shutdown_delay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
