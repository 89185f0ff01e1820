/* herd eval list | status: the evaluations a server made (every job change
 * and node change makes one; docs/api.md, "How work flows").  Both read
 * GET /v1/evaluations (status: GET /v1/evaluation/:id); the -job and
 * -status filters of list are applied here, the server's list having
 * none. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/xalloc.h"

/* The statuses an evaluation may have (docs/api.md). */
static bool known_status(const char *s)
{
	static const char *const st[] = { "pending", "complete", "blocked", "queued", "failed",
					  "canceled", NULL };
	for (int i = 0; st[i]; i++)
		if (!strcmp(st[i], s))
			return true;
	return false;
}

static int cmp_newest_first(const void *x, const void *y)
{
	int64_t a = ji(*(json_t *const *)x, "create_index");
	int64_t b = ji(*(json_t *const *)y, "create_index");
	return a < b ? 1 : a > b ? -1 : 0;
}

/* The evaluations of list that match job and status (NULL: any), newest
 * first (a new array sharing list's objects). */
static json_t *select_evals(const json_t *list, const char *job, const char *status)
{
	size_t n = json_array_size(list), k = 0;
	json_t **v = xcalloc(n ? n : 1, sizeof(*v)), *out = json_array(), *x;
	size_t i;

	json_array_foreach(list, i, x)
		if ((!job || !strcmp(js(x, "job_id"), job)) &&
		    (!status || !strcmp(js(x, "status"), status)))
			v[k++] = x;
	qsort(v, k, sizeof(*v), cmp_newest_first);
	for (i = 0; i < k; i++)
		json_array_append(out, v[i]);
	free(v);
	return out;
}

static void print_evals(const json_t *evals, bool with_ns)
{
	static const char *const heads[] = { "NAMESPACE", "ID", "JOB", "TRIGGERED BY", "STATUS",
					     "PLACEMENT FAILURES", "CREATED" };
	struct table t;
	size_t i;
	json_t *e;

	if (!json_array_size(evals)) {
		printf("no evaluations\n");
		return;
	}
	table_init(&t, with_ns ? 7 : 6, with_ns ? heads : heads + 1);
	json_array_foreach(evals, i, e) {
		char sid[16], buf[64];
		if (with_ns)
			table_add(&t, js(e, "namespace"));
		table_add(&t, short_id(js(e, "id"), sid));
		table_add(&t, js(e, "job_id"));
		table_add(&t, js(e, "triggered_by"));
		table_add(&t, js(e, "status"));
		table_add(&t, json_object_size(json_object_get(e, "failed_placements")) ? "true"
											 : "false");
		table_add(&t, format_ago(ji(e, "create_time"), buf, sizeof(buf)));
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

static int eval_list_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL, *job = NULL, *status = NULL, *ns;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "job", FLAG_STRING, &job, "only the evaluations of this job" },
		{ "status", FLAG_STRING, &status, "only those of this status (pending, complete, "
		  "blocked, queued, failed, canceled)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd eval list [options]",
		"Lists the evaluations of the namespace, newest first: what made each\n"
		"(triggered by), its status, and whether some allocations could not be\n"
		"placed (herd eval status ID says why).",
		flags,
	};
	char *path;
	struct httpc_response r;
	json_t *sel;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (status && !known_status(status))
		return usage_error(argv[0], "-status %s: not a status (pending, complete, blocked, "
				   "queued, failed, canceled)", status);
	if (job && !*job)
		return usage_error(argv[0], "-job: empty job id");
	ns = cli_namespace(ns_flag);
	path = api_ns_path("/v1/evaluations", ns);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	sel = select_evals(r.body, job, status);
	httpc_response_release(&r);
	if (as_json)
		api_print_json(sel);
	else
		print_evals(sel, !strcmp(ns, "*"));
	json_decref(sel);
	return 0;
}

/* The id of the evaluation in list that follows up on id (its
 * previous_eval), or "". */
static const char *next_eval(const json_t *list, const char *id)
{
	size_t i;
	json_t *x;
	json_array_foreach(list, i, x)
		if (!strcmp(js(x, "previous_eval"), id))
			return js(x, "id");
	return "";
}

static void print_eval(const json_t *e, const char *next)
{
	char b1[64], b2[64];

	printf("%-20s %s\n%-20s %s\n%-20s %s\n%-20s %s\n%-20s %s\n", "ID", js(e, "id"),
	       "Namespace", js(e, "namespace"), "Job", js(e, "job_id"), "Triggered By",
	       js(e, "triggered_by"), "Status", js(e, "status"));
	if (*js(e, "status_description"))
		printf("%-20s %s\n", "Status Description", js(e, "status_description"));
	if (*js(e, "node_id"))
		printf("%-20s %s\n", "Node", js(e, "node_id"));
	if (ji(e, "wait_until") > 0)
		printf("%-20s %s\n", "Wait Until", format_ago(ji(e, "wait_until"), b1, sizeof(b1)));
	printf("%-20s %s (index %lld)\n%-20s %s (index %lld)\n", "Created",
	       format_ago(ji(e, "create_time"), b1, sizeof(b1)), (long long)ji(e, "create_index"),
	       "Modified", format_ago(ji(e, "modify_time"), b2, sizeof(b2)),
	       (long long)ji(e, "modify_index"));
	if (*js(e, "previous_eval"))
		printf("%-20s %s\n", "Previous Eval", js(e, "previous_eval"));
	if (*next)
		printf("%-20s %s\n", "Next Eval", next);
	if (json_object_size(json_object_get(e, "failed_placements"))) {
		printf("\nPlacement failures\n");
		print_failed_placements(stdout, json_object_get(e, "failed_placements"));
	}
}

static int eval_status_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd eval status [options] ID",
		"Shows one evaluation (ID or a unique prefix of it, among the namespace's\n"
		"evaluations): its job, what made it, its status and why, what could not\n"
		"be placed and why, and the evaluation that follows it up, if any.",
		flags,
	};
	char *pos[1], *id, *path, *list_path;
	struct httpc_response r, rl;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing evaluation id");
	list_path = api_ns_path("/v1/evaluations", cli_namespace(ns_flag));
	id = api_resolve_prefix(argv[0], list_path, "evaluation", pos[0]);
	if (!id) {
		free(list_path);
		return 1;
	}
	path = xasprintf("/v1/evaluation/%s", id);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0) {
		free(id);
		free(list_path);
		return 1;
	}
	if (as_json) {
		api_print_json(r.body);
	} else {
		/* the follow-up, if any, names this one: read the list again
		 * (it may have come since the prefix was resolved) */
		bool listed = api_call(argv[0], "GET", list_path, NULL, &rl) == 0;
		print_eval(r.body, listed ? next_eval(rl.body, id) : "");
		if (listed)
			httpc_response_release(&rl);
	}
	httpc_response_release(&r);
	free(id);
	free(list_path);
	return 0;
}

int cmd_eval(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "list", eval_list_cmd, "list evaluations, newest first" },
		{ "status", eval_status_cmd, "show one evaluation and why it is where it is" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
