/* A task's action blocks and a template's change_script (docs/jobspec.md):
 * neither leaves a trace in the canonical text of a job without them (a
 * job stored before re-submits unchanged), HCL's labelled blocks, the
 * defaults, and every error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

/* A job of one task "t" with the given fields (a JSON object's members). */
#define TASK_WITH(fields) \
	"{\"id\":\"s\",\"groups\":[{\"name\":\"g\",\"tasks\":[{\"name\":\"t\",\"driver\":" \
	"\"raw_exec\",\"config\":{\"command\":\"/bin/true\"}," fields "}]}]}"
#define TEMPLATE(fields) \
	TASK_WITH("\"templates\":[{\"data\":\"x\",\"destination\":\"local/x\"," fields "}]")

static void test_none_leaves_no_trace(void **state)
{
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect(TEMPLATE("\"change_mode\":\"noop\""), "");
	assert_int_equal(job->groups[0].tasks[0].nactions, 0);
	assert_null(job->groups[0].tasks[0].templates[0].change_script);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "actions"));
	assert_null(strstr(canon, "change_script"));
	free(canon);
	job_free(job);
}

static void test_actions(void **state)
{
	const struct job_task *t;
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect(TASK_WITH("\"actions\":[{\"name\":\"flush-cache\",\"command\":"
				      "\"/bin/sh\",\"args\":[\"-c\",\"echo hi\"]},"
				      "{\"name\":\"date\",\"command\":\"date\"}]"), "");
	t = &job->groups[0].tasks[0];
	assert_int_equal(t->nactions, 2);
	assert_string_equal(t->actions[0].name, "flush-cache");
	assert_string_equal(t->actions[0].command, "/bin/sh");
	assert_int_equal(t->actions[0].args.n, 2);
	assert_string_equal(t->actions[0].args.v[1], "echo hi");
	assert_int_equal(t->actions[1].args.n, 0);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"actions\":[{\"args\":[\"-c\",\"echo hi\"],"
				      "\"command\":\"/bin/sh\",\"name\":\"flush-cache\"}"));
	free(canon);
	job_free(job);
}

static void test_action_errors(void **state)
{
	(void)state;
	decode_expect(TASK_WITH("\"actions\":[{\"name\":\"a\",\"command\":\"x\"},"
				"{\"name\":\"a\",\"command\":\"y\"}]"),
		      "E 0:0 groups[0].tasks[0].actions[1]: action \"a\" is defined twice in "
		      "task \"t\"\n");
	decode_expect(TASK_WITH("\"actions\":[{\"name\":\"a\"}]"),
		      "E 0:0 groups[0].tasks[0].actions[0]: command is required\n");
	decode_expect(TASK_WITH("\"actions\":[{\"name\":\"a\",\"command\":\"\"}]"),
		      "E 0:0 groups[0].tasks[0].actions[0]: command is required\n");
	decode_expect(TASK_WITH("\"actions\":[{\"command\":\"x\"}]"),
		      "E 0:0 groups[0].tasks[0].actions[0]: action name is required\n");
	decode_expect(TASK_WITH("\"actions\":[{\"name\":\"a b\",\"command\":\"x\"}]"),
		      "E 0:0 groups[0].tasks[0].actions[0]: action name \"a b\" must be 1 to 128 "
		      "letters, digits, '-', '_' or '.', not starting with '-' or '.'\n");
	decode_expect(TASK_WITH("\"actions\":[{\"name\":\"a\",\"command\":\"x\",\"commnd\":1}]"),
		      "E 0:0 groups[0].tasks[0].actions[0]: unknown action field \"commnd\"; did "
		      "you mean \"command\"?\n");
	decode_expect(TASK_WITH("\"actions\":[{\"name\":\"a\",\"command\":\"x\",\"args\":"
				"\"y\"}]"),
		      "E 0:0 groups[0].tasks[0].actions[0].args: expected a list of strings, "
		      "got a string\n");
}

static void test_action_limits(void **state)
{
	struct strbuf sb = STRBUF_INIT, doc = STRBUF_INIT;
	char *diags;
	struct job *job;
	(void)state;
	for (int i = 0; i <= JOB_MAX_ACTIONS; i++)
		strbuf_addf(&sb, "%s{\"name\":\"a%d\",\"command\":\"x\"}", i ? "," : "", i);
	strbuf_addf(&doc, TASK_WITH("\"actions\":[%s]"), sb.buf);
	job = decode_text(doc.buf, &diags);
	assert_null(job);
	assert_non_null(strstr(diags, "actions: more than 32 action entries"));
	free(diags);
	strbuf_reset(&sb);
	strbuf_reset(&doc);
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&sb, 'c');
	strbuf_addf(&doc, TASK_WITH("\"actions\":[{\"name\":\"a\",\"command\":\"%s\"}]"), sb.buf);
	job = decode_text(doc.buf, &diags);
	assert_null(job);
	assert_non_null(strstr(diags, "command: longer than 4096 bytes"));
	free(diags);
	strbuf_release(&sb);
	strbuf_release(&doc);
}

static void test_action_hcl(void **state)
{
	struct job *job;
	char *diags;
	(void)state;
	job = load_hcl("job \"j\" {\n group \"g\" {\n  task \"t\" {\n   driver = \"raw_exec\"\n"
		       "   config { command = \"/bin/sleep\" }\n"
		       "   action \"hello\" {\n    command = \"/bin/echo\"\n    args = [\"hi\"]\n   }\n"
		       "   action \"bye\" { command = \"/bin/true\" }\n  }\n }\n}\n", &diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_int_equal(job->groups[0].tasks[0].nactions, 2);
	assert_string_equal(job->groups[0].tasks[0].actions[0].name, "hello");
	assert_string_equal(job->groups[0].tasks[0].actions[0].args.v[0], "hi");
	assert_string_equal(job->groups[0].tasks[0].actions[1].name, "bye");
	free(diags);
	job_free(job);
	/* a duplicate name points at the second block */
	job = load_hcl("job \"j\" {\n group \"g\" {\n  task \"t\" {\n   driver = \"raw_exec\"\n"
		       "   config { command = \"/bin/sleep\" }\n"
		       "   action \"a\" { command = \"x\" }\n   action \"a\" { command = \"y\" }\n"
		       "  }\n }\n}\n", &diags);
	assert_null(job);
	assert_string_equal(diags, "E 7:4 groups[0].tasks[0].actions[1]: action \"a\" is defined "
				   "twice in task \"t\"\n");
	free(diags);
}

static void test_change_script(void **state)
{
	const struct job_change_script *cs;
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect(TEMPLATE("\"change_mode\":\"script\",\"change_script\":{\"command\":"
				     "\"/bin/reload\"}"), "");
	cs = job->groups[0].tasks[0].templates[0].change_script;
	assert_non_null(cs);
	assert_string_equal(cs->command, "/bin/reload");
	assert_int_equal(cs->timeout, 5 * NS_PER_SEC);
	assert_false(cs->fail_on_error);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"change_script\":{\"args\":[],\"command\":\"/bin/reload\","
				      "\"fail_on_error\":false,\"timeout\":5000000000}"));
	free(canon);
	job_free(job);
	job = decode_expect(TEMPLATE("\"change_mode\":\"script\",\"change_script\":{\"command\":"
				     "\"/bin/sh\",\"args\":[\"-c\",\"exit 3\"],\"timeout\":\"2s\","
				     "\"fail_on_error\":true}"), "");
	cs = job->groups[0].tasks[0].templates[0].change_script;
	assert_int_equal(cs->timeout, 2 * NS_PER_SEC);
	assert_true(cs->fail_on_error);
	assert_int_equal(cs->args.n, 2);
	job_free(job);
}

static void test_change_script_errors(void **state)
{
	(void)state;
	decode_expect(TEMPLATE("\"change_mode\":\"script\""),
		      "E 0:0 groups[0].tasks[0].templates[0]: change_mode \"script\" needs a "
		      "change_script block\n");
	decode_expect(TEMPLATE("\"change_mode\":\"noop\",\"change_script\":{\"command\":\"x\"}"),
		      "E 0:0 groups[0].tasks[0].templates[0]: change_script is only run with "
		      "change_mode \"script\" (change_mode is \"noop\")\n");
	/* the default change_mode is restart */
	decode_expect(TEMPLATE("\"change_script\":{\"command\":\"x\"}"),
		      "E 0:0 groups[0].tasks[0].templates[0]: change_script is only run with "
		      "change_mode \"script\" (change_mode is \"restart\")\n");
	decode_expect(TEMPLATE("\"change_mode\":\"script\",\"change_script\":{}"),
		      "E 0:0 groups[0].tasks[0].templates[0].change_script: command is required\n");
	decode_expect(TEMPLATE("\"change_mode\":\"script\",\"change_script\":{\"command\":\"x\","
			       "\"timeout\":\"2h\"}"),
		      "E 0:0 groups[0].tasks[0].templates[0].change_script.timeout: must be between "
		      "100ms and 1h, got \"2h\"\n");
	decode_expect(TEMPLATE("\"change_mode\":\"script\",\"change_script\":{\"command\":\"x\","
			       "\"timeout\":\"0s\"}"),
		      "E 0:0 groups[0].tasks[0].templates[0].change_script.timeout: must be between "
		      "100ms and 1h, got \"0s\"\n");
}

static void test_change_script_hcl(void **state)
{
	struct job *job;
	char *diags;
	(void)state;
	job = load_hcl("job \"j\" {\n group \"g\" {\n  task \"t\" {\n   driver = \"raw_exec\"\n"
		       "   config { command = \"/bin/sleep\" }\n"
		       "   template {\n    data = \"x\"\n    destination = \"local/x\"\n"
		       "    change_mode = \"script\"\n"
		       "    change_script {\n     command = \"/bin/sh\"\n     args = [\"-c\", \"true\"]\n"
		       "     timeout = \"10s\"\n     fail_on_error = true\n    }\n   }\n  }\n }\n}\n",
		       &diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_int_equal(job->groups[0].tasks[0].templates[0].change_script->timeout,
			 10 * NS_PER_SEC);
	free(diags);
	job_free(job);
}

/* A job an earlier build stored with change_mode "script" and no
 * change_script (accepted then) still decodes, as "noop"; the stored record
 * a shallow copy shares is left as it was. */
static void test_stored_script_without_change_script(void **state)
{
	json_error_t jerr;
	json_t *stored = json_loads(TEMPLATE("\"change_mode\":\"script\""), 0, &jerr), *copy;
	struct diag_list dl;
	struct job *job;
	(void)state;
	assert_non_null(stored);
	copy = json_copy(stored);
	assert_int_equal(job_stored_upgrade(copy), 1);
	diag_list_init(&dl);
	job = job_from_json(copy, NULL, &dl);
	assert_int_equal(dl.n, 0);
	assert_non_null(job);
	assert_string_equal(job->groups[0].tasks[0].templates[0].change_mode, "noop");
	job_free(job);
	diag_list_release(&dl);
	json_decref(copy);
	/* the record the shallow copy shared is unchanged */
	{
		char *text = json_dumps(stored, JSON_COMPACT);
		assert_non_null(strstr(text, "\"change_mode\":\"script\""));
		free(text);
	}
	assert_int_equal(job_stored_upgrade(stored), 1);
	assert_int_equal(job_stored_upgrade(stored), 0);   /* once is enough */
	json_decref(stored);
	/* a submission is still refused */
	decode_expect(TEMPLATE("\"change_mode\":\"script\""),
		      "E 0:0 groups[0].tasks[0].templates[0]: change_mode \"script\" needs a "
		      "change_script block\n");
	/* nothing to change: nothing touched */
	stored = json_loads(TEMPLATE("\"change_mode\":\"script\",\"change_script\":{\"command\":"
				     "\"x\"}"), 0, &jerr);
	assert_int_equal(job_stored_upgrade(stored), 0);
	json_decref(stored);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_leaves_no_trace),
		cmocka_unit_test(test_actions),
		cmocka_unit_test(test_action_errors),
		cmocka_unit_test(test_action_limits),
		cmocka_unit_test(test_action_hcl),
		cmocka_unit_test(test_change_script),
		cmocka_unit_test(test_change_script_errors),
		cmocka_unit_test(test_change_script_hcl),
		cmocka_unit_test(test_stored_script_without_change_script),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
