/* herd job action: runs an action of a job (docs/jobspec.md, "action") in
 * one of its running allocations, as `herd alloc exec` runs a command
 * (cmd_alloc_exec.c) but by name: the node resolves the name to the
 * command the job version of the allocation defines, so that the caller
 * never chooses what runs.
 *
 * The CLI lists the job's actions (GET /v1/job/:id/actions) to find the
 * group and task that define NAME (-group and -task pick among several),
 * picks a running allocation of that group whose task runs (or checks the
 * one -alloc names), says which on stderr and opens the exec stream with
 * action=NAME. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

struct action_opts {
	const char *cmd, *ns, *job, *group, *task, *alloc, *name;
};

/* The one action of the job that o names: 0 with *group and *task set
 * (pointing into *list, the caller's), or 1 after printing why. */
static int find_action(const struct action_opts *o, json_t **list, const char **group,
		       const char **task)
{
	char *path = api_job_path(o->job, "/actions", o->ns);
	struct strbuf all = STRBUF_INIT, where = STRBUF_INIT;
	struct httpc_response r;
	const json_t *a, *hit = NULL;
	size_t i, n = 0;
	int rc = 1;

	if (api_call(o->cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return 1;
	}
	free(path);
	json_array_foreach(r.body, i, a) {
		strbuf_addf(&all, "%s%s", all.len ? ", " : "", js(a, "name"));
		if (strcmp(js(a, "name"), o->name) || (o->group && strcmp(js(a, "group"), o->group)) ||
		    (o->task && strcmp(js(a, "task"), o->task)))
			continue;
		strbuf_addf(&where, "%s%s/%s", where.len ? ", " : "", js(a, "group"), js(a, "task"));
		hit = a;
		n++;
	}
	if (n == 1) {
		*list = json_incref(r.body);
		*group = js(hit, "group");
		*task = js(hit, "task");
		rc = 0;
	} else if (n > 1) {
		fprintf(stderr, "%s: action \"%s\" is defined by %zu tasks (%s): name one with "
			"-group and -task\n", o->cmd, o->name, n, where.buf);
	} else if (o->group || o->task) {
		fprintf(stderr, "%s: job \"%s\" has no action \"%s\" in %s%s%s (its actions: %s)\n",
			o->cmd, o->job, o->name, o->group ? o->group : "*", "/",
			o->task ? o->task : "*", all.len ? all.buf : "none");
	} else {
		fprintf(stderr, "%s: job \"%s\" has no action \"%s\" (its actions: %s)\n", o->cmd,
			o->job, o->name, all.len ? all.buf : "none");
	}
	strbuf_release(&all);
	strbuf_release(&where);
	httpc_response_release(&r);
	return rc;
}

static bool task_runs(const json_t *alloc, const char *task)
{
	const json_t *st = json_object_get(json_object_get(alloc, "task_states"), task);
	return !strcmp(js(alloc, "desired_status"), "run") &&
	       !strcmp(js(alloc, "client_status"), "running") && !strcmp(js(st, "state"), "running");
}

/* A running allocation of o->job's group whose task runs: its id (caller
 * frees), or NULL after printing why. */
static char *pick_alloc(const struct action_opts *o, const char *group, const char *task)
{
	char *path = api_job_path(o->job, "/allocations", o->ns), *id = NULL;
	struct httpc_response r;
	const json_t *a;
	size_t i;

	if (api_call(o->cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return NULL;
	}
	free(path);
	json_array_foreach(r.body, i, a)
		if (!strcmp(js(a, "task_group"), group) && task_runs(a, task)) {
			id = xstrdup(js(a, "id"));
			break;
		}
	if (!id)
		fprintf(stderr, "%s: no allocation of job \"%s\" runs task %s/%s\n", o->cmd, o->job,
			group, task);
	httpc_response_release(&r);
	return id;
}

int job_action_cmd(int argc, char **argv)
{
	struct action_opts o = { .cmd = argv[0] };
	const char *ns_flag = NULL, *group, *task;
	bool in = true, tty = false;
	const struct flag flags[] = {
		{ "job", FLAG_STRING, &o.job, "the job (required)" },
		{ "group", FLAG_STRING, &o.group, "the group (when several tasks define NAME)" },
		{ "task", FLAG_STRING, &o.task, "the task (when several tasks define NAME)" },
		{ "alloc", FLAG_STRING, &o.alloc, "the allocation (ID or a unique prefix); default: "
						   "any running one of the job" },
		{ "i", FLAG_BOOL, &in, "pass stdin to the command (default true; -i=false: none)" },
		{ "t", FLAG_BOOL, &tty, "a pseudo-terminal (default false)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job action [options] -job ID NAME",
		"Runs the action NAME that the job defines (action \"NAME\" { command args } in a\n"
		"task) inside a running allocation of the task, as herd alloc exec runs a\n"
		"command: the task's environment, directory and user; stdin, stdout and stderr\n"
		"passed through.  The command is the one the allocation's job version defines,\n"
		"never one given here.  The group and task are found when one task of the job\n"
		"defines NAME; the allocation, when -alloc is not given, is any running one\n"
		"(named on stderr).  Exits with the command's exit code.  Needs the submit\n"
		"right on the job's namespace, as herd alloc exec.",
		flags,
	};
	char *pos[1], *id = NULL, *addr = NULL, *ns = NULL, sid[16];
	json_t *actions = NULL, *alloc = NULL;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc = 1;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (!o.job || !*o.job)
		return usage_error(argv[0], "missing -job ID");
	if (n < 1)
		return usage_error(argv[0], "missing action name");
	o.name = pos[0];
	if (!(ns = api_job_namespace(argv[0], o.job, cli_namespace(ns_flag))))
		return 1;
	o.ns = ns;
	if (find_action(&o, &actions, &group, &task))
		goto out;
	if (o.alloc) {
		if (alloc_locate(argv[0], ns, o.alloc, &id, &alloc, &addr))
			goto out;
		if (strcmp(js(alloc, "job_id"), o.job) || strcmp(js(alloc, "task_group"), group)) {
			fprintf(stderr, "%s: allocation %s is not of job \"%s\", group \"%s\"\n",
				argv[0], short_id(id, sid), o.job, group);
			goto out;
		}
		if (!task_runs(alloc, task)) {
			fprintf(stderr, "%s: task \"%s\" of allocation %s is not running\n", argv[0],
				task, short_id(id, sid));
			goto out;
		}
	} else {
		char *picked = pick_alloc(&o, group, task);
		if (!picked)
			goto out;
		fprintf(stderr, "%s: running action \"%s\" in allocation %s (%s/%s)\n", argv[0],
			o.name, short_id(picked, sid), group, task);
		rc = alloc_locate(argv[0], ns, picked, &id, &alloc, &addr);
		free(picked);
		if (rc)
			goto out;
	}
	rc = alloc_exec_stream(argv[0], id, addr, task, o.name, NULL, tty, in);
out:
	json_decref(actions);
	json_decref(alloc);
	free(addr);
	free(id);
	free(ns);
	return rc;
}
