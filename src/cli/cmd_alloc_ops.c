/* herd alloc stop | restart | signal: acting on one allocation by hand.
 *
 * stop goes to the server (POST /v1/allocation/:id/stop), which stops the
 * allocation and places its replacement; the command then follows the
 * evaluation and the replacement with blocking queries, as `job run`
 * follows a job.  restart and signal act in place on the node that runs
 * the allocation: the CLI finds the node's client API as `alloc logs`
 * does (allocation -> node_http_addr) and POSTs there
 * (/v1/client/allocation/:id/restart | signal).  IDs may be prefixes, as
 * for `alloc status`. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/xalloc.h"

#define FOLLOW_WAIT_MS 5000

/* The full id of the allocation prefix names in namespace ns_flag's
 * allocations, or NULL after saying why. */
static char *resolve(const char *cmd, const char *ns_flag, const char *prefix)
{
	char *list = api_ns_path("/v1/allocations", cli_namespace(ns_flag));
	char *id = api_resolve_prefix(cmd, list, "allocation", prefix);
	free(list);
	return id;
}

static bool client_ended(const json_t *alloc)
{
	const char *cs = js(alloc, "client_status");
	return !strcmp(cs, "complete") || !strcmp(cs, "failed") || !strcmp(cs, "lost");
}

/* Whether an evaluation of the job in allocs' namespace is still to run
 * (pending): the replacement may still come from it. */
static bool eval_pending(const char *cmd, const json_t *old, json_t **last_blocked)
{
	char *job = httpc_escape(js(old, "job_id")), *p = xasprintf("/v1/job/%s/evaluations", job);
	char *path = api_ns_path(p, js(old, "namespace"));
	struct httpc_response r;
	bool pending = false;
	int64_t newest = -1;
	size_t i;
	json_t *e;

	free(job);
	free(p);
	if (api_call(cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return false;
	}
	free(path);
	json_array_foreach(r.body, i, e) {
		pending |= !strcmp(js(e, "status"), "pending");
		if (ji(e, "modify_time") > newest &&
		    (!strcmp(js(e, "status"), "blocked") || !strcmp(js(e, "status"), "queued"))) {
			newest = ji(e, "modify_time");
			json_decref(*last_blocked);
			*last_blocked = json_incref(e);
		}
	}
	httpc_response_release(&r);
	return pending;
}

/* Follows the job of the stopped allocation old until the allocation
 * that replaces it runs (or completed, or failed).  While old still holds
 * its capacity the replacement may wait for it; once old ended and no
 * evaluation is left to run, a replacement that is not there waits for
 * capacity: say why and return 1. */
int alloc_follow_replacement(const char *cmd, const char *old_id, const json_t *old_in)
{
	char *job = httpc_escape(js(old_in, "job_id")), *p = xasprintf("/v1/job/%s/allocations", job);
	char *path = api_ns_path(p, js(old_in, "namespace"));
	char sid[16], rid[16], last[32] = "";
	uint64_t index = 0;
	bool said_waiting = false;
	int rc = 1;

	free(job);
	free(p);
	for (;;) {
		struct httpc_response r;
		const json_t *old = NULL, *repl = NULL, *a;
		size_t i;

		if (api_get_blocking(cmd, path, index, FOLLOW_WAIT_MS, &r) < 0)
			break;
		index = r.index;
		json_array_foreach(r.body, i, a) {
			if (!strcmp(js(a, "id"), old_id))
				old = a;
			if (!strcmp(js(a, "previous_allocation"), old_id))
				repl = a;
		}
		if (repl) {
			const char *st = js(repl, "client_status");
			if (strcmp(st, last)) {
				snprintf(last, sizeof(last), "%s", st);
				printf("    replacement %s on node %s: %s\n", short_id(js(repl, "id"), rid),
				       js(repl, "node_name"), last);
				fflush(stdout);
			}
			if (!strcmp(st, "running") || !strcmp(st, "complete")) {
				printf("==> allocation %s replaced by %s (%s)\n", short_id(old_id, sid),
				       js(repl, "id"), st);
				rc = 0;
			} else if (!strcmp(st, "failed") || !strcmp(st, "lost")) {
				fprintf(stderr, "%s: the replacement %s %s (herd alloc status %s)\n", cmd,
					js(repl, "id"), st, rid);
			} else {
				httpc_response_release(&r);
				continue;
			}
			httpc_response_release(&r);
			break;
		}
		if (old && !client_ended(old)) {
			if (!said_waiting)
				printf("    waiting for allocation %s to stop (%s)\n", short_id(old_id, sid),
				       js(old, "client_status"));
			said_waiting = true;
			fflush(stdout);
		} else {
			json_t *blocked = NULL;
			if (!eval_pending(cmd, old_in, &blocked)) {
				printf("==> no replacement placed yet: it is placed when capacity appears "
				       "(herd job status %s)\n", js(old_in, "job_id"));
				if (blocked)
					print_failed_placements(stdout,
								json_object_get(blocked, "failed_placements"));
				json_decref(blocked);
				httpc_response_release(&r);
				break;
			}
			json_decref(blocked);
		}
		httpc_response_release(&r);
	}
	free(path);
	return rc;
}

int alloc_stop_cmd(int argc, char **argv)
{
	bool detach = false, no_delay = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "detach", FLAG_BOOL, &detach, "return once the server took the stop" },
		{ "no-shutdown-delay", FLAG_BOOL, &no_delay,
		  "skip the group and task shutdown_delay: kill at once after the services go" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc stop [options] ID",
		"Stops one allocation (ID or a unique prefix) and has it replaced: the server\n"
		"marks it to stop (\"stopped by user\"), its node stops its tasks, and an\n"
		"evaluation places a replacement on whichever node fits, for a service job and\n"
		"for a batch job whose allocation had not completed.  Follows the evaluation and\n"
		"the replacement until it runs; exits 1 when the replacement fails or cannot be\n"
		"placed yet.  An allocation that ended or is being stopped is refused.  Its\n"
		"tasks get each shutdown_delay before the kill, unless -no-shutdown-delay.",
		flags,
	};
	char *pos[1], *id, *path, sid[16];
	struct httpc_response r;
	json_t *old, *ev;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc = 1;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing allocation id");
	if (!(id = resolve(argv[0], ns_flag, pos[0])))
		return 1;
	path = xasprintf("/v1/allocation/%s", id);
	if (api_call(argv[0], "GET", path, NULL, &r) < 0) {
		free(path);
		free(id);
		return 1;
	}
	old = json_incref(r.body);
	httpc_response_release(&r);
	free(path);
	path = xasprintf("/v1/allocation/%s/stop%s", id, no_delay ? "?no_shutdown_delay=true" : "");
	n = api_call(argv[0], "POST", path, NULL, &r);
	free(path);
	if (n < 0)
		goto out;
	printf("==> allocation %s (job \"%s\") stopped, evaluation %s\n", short_id(id, sid),
	       js(old, "job_id"), js(r.body, "eval_id"));
	fflush(stdout);
	if (detach) {
		httpc_response_release(&r);
		rc = 0;
		goto out;
	}
	ev = api_follow_eval(argv[0], js(r.body, "eval_id"));
	httpc_response_release(&r);
	if (!ev)
		goto out;
	printf("==> evaluation %s\n", js(ev, "status"));
	fflush(stdout);
	if (!strcmp(js(ev, "status"), "failed"))
		fprintf(stderr, "%s: evaluation failed: %s\n", argv[0], js(ev, "status_description"));
	else
		rc = alloc_follow_replacement(argv[0], id, old);
	json_decref(ev);
out:
	json_decref(old);
	free(id);
	return rc;
}

int alloc_locate(const char *cmd, const char *ns_flag, const char *prefix, char **id,
		 json_t **alloc, char **addr)
{
	struct httpc_response r;
	char *path;
	int rc;

	if (!(*id = resolve(cmd, ns_flag, prefix)))
		return 1;
	path = xasprintf("/v1/allocation/%s", *id);
	rc = api_call(cmd, "GET", path, NULL, &r);
	free(path);
	if (rc < 0 || alloc_node_addr(cmd, r.body, addr)) {
		if (rc >= 0)
			httpc_response_release(&r);
		free(*id);
		*id = NULL;
		return 1;
	}
	*alloc = json_incref(r.body);
	httpc_response_release(&r);
	return 0;
}

int alloc_client_post(const char *cmd, const char *ns_flag, const char *prefix, const char *op,
		       const json_t *body, char **id, struct httpc_response *resp)
{
	struct httpc c;
	struct herd_err err = { 0, "" };
	char *addr = NULL, *path;
	int rc;
	json_t *alloc;

	if (alloc_locate(cmd, ns_flag, prefix, id, &alloc, &addr))
		return 1;
	json_decref(alloc);
	httpc_init(&c, addr);   /* HERD_TOKEN goes along: the node asks the server */
	c.timeout_ms = 60000;
	path = xasprintf("/v1/client/allocation/%s%s", *id, op);
	rc = httpc_request(&c, "POST", path, body, resp, &err);
	if (rc < 0) {
		const char *msg = js(json_object_get(resp->body, "error"), "message");
		if (resp->status && *msg)
			fprintf(stderr, "%s: %s\n", cmd, msg);
		else
			fprintf(stderr, "%s: node at %s: %s\n", cmd, addr, err.msg);
		httpc_response_release(resp);
	}
	httpc_release(&c);
	free(path);
	free(addr);
	return rc < 0;
}

/* "t, u" of the answer's tasks. */
static void print_tasks(const json_t *tasks)
{
	size_t i;
	json_t *t;
	json_array_foreach(tasks, i, t)
		printf("%s%s", i ? ", " : "", json_string_value(t));
}

int alloc_restart_cmd(int argc, char **argv)
{
	const char *ns_flag = NULL, *task = NULL;
	const struct flag flags[] = {
		{ "task", FLAG_STRING, &task, "the task to restart (default: every running task)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc restart [options] ID",
		"Restarts the running tasks of an allocation (ID or a unique prefix) in place, on\n"
		"its node: each is stopped with its kill_signal and kill_timeout and started again\n"
		"in the same allocation directory.  The restart shows in `herd alloc status` (a\n"
		"\"Restart Signaled\" event, restarted by user) and does not count against the\n"
		"group's restart policy.  Nothing is rescheduled.",
		flags,
	};
	char *pos[1], *id = NULL, sid[16];
	struct httpc_response r;
	json_t *body;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing allocation id");
	body = task ? json_pack("{s:s}", "task", task) : json_object();
	n = alloc_client_post(argv[0], ns_flag, pos[0], "/restart", body, &id, &r);
	json_decref(body);
	if (n == 0) {
		printf("==> allocation %s: restarting ", short_id(id, sid));
		print_tasks(json_object_get(r.body, "tasks"));
		printf("\n");
		httpc_response_release(&r);
	}
	free(id);
	return n;
}

int alloc_signal_cmd(int argc, char **argv)
{
	const char *ns_flag = NULL, *task = NULL, *sig = "SIGKILL";
	const struct flag flags[] = {
		{ "s", FLAG_STRING, &sig, "the signal: a name (SIGUSR1, USR1) or a number (default SIGKILL)" },
		{ "task", FLAG_STRING, &task, "the task to signal (default: every running task)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc signal [options] ID",
		"Sends a signal to the running tasks of an allocation (ID or a unique prefix), to\n"
		"each task's process group, through its driver (exec passes on TERM, INT, HUP,\n"
		"QUIT, USR1, USR2, WINCH, ALRM and KILL).  The task gets a \"Signaling\" event.",
		flags,
	};
	char *pos[1], *id = NULL, sid[16];
	struct httpc_response r;
	json_t *body;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing allocation id");
	body = json_pack("{s:s}", "signal", sig);
	if (task)
		json_object_set_new(body, "task", json_string(task));
	n = alloc_client_post(argv[0], ns_flag, pos[0], "/signal", body, &id, &r);
	json_decref(body);
	if (n == 0) {
		printf("==> allocation %s: %s sent to ", short_id(id, sid), js(r.body, "signal"));
		print_tasks(json_object_get(r.body, "tasks"));
		printf("\n");
		httpc_response_release(&r);
	}
	free(id);
	return n;
}
