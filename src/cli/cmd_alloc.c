/* herd alloc status: one allocation, its tasks, their events and devices.
 * The id may be a prefix (as long as it matches one allocation). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/xalloc.h"

static void print_alloc(const json_t *a)
{
	const json_t *res = json_object_get(a, "resources");
	const char *task;
	json_t *ts, *d;
	size_t i;
	char buf[64];

	printf("%-20s %s\n%-20s %s\n%-20s %s\n%-20s %s\n%-20s %s (%s)\n%-20s %lld\n"
	       "%-20s %s\n%-20s %s%s%s\n%-20s %s\n",
	       "ID", js(a, "id"), "Name", js(a, "name"), "Node", js(a, "node_name"), "Node ID",
	       js(a, "node_id"), "Job", js(a, "job_id"), js(a, "namespace"), "Job Version",
	       (long long)ji(a, "job_version"), "Desired Status", js(a, "desired_status"),
	       "Client Status", js(a, "client_status"), *js(a, "client_description") ? ": " : "",
	       js(a, "client_description"), "Created",
	       format_ago(ji(a, "create_time"), buf, sizeof(buf)));
	if (*js(a, "previous_allocation"))
		printf("%-20s %s\n", "Replaces", js(a, "previous_allocation"));
	printf("%-20s %lld thousandths of a core, %lld MiB\n", "Resources",
	       (long long)ji(res, "cpu_milli"), (long long)ji(res, "memory_mib"));
	if (json_array_size(json_object_get(res, "devices"))) {
		struct table t;
		static const char *const heads[] = { "DEVICE", "GROUP", "SHARE", "MEMORY" };
		printf("\nDevices\n");
		table_init(&t, 4, heads);
		json_array_foreach(json_object_get(res, "devices"), i, d) {
			table_add(&t, js(d, "id"));
			table_add(&t, js(d, "group"));
			if (jb(d, "whole"))
				table_add(&t, "whole");
			else
				table_addf(&t, "%lld.%lld%%", (long long)ji(d, "compute_milli") / 10,
					   (long long)ji(d, "compute_milli") % 10);
			table_addf(&t, "%lld MiB", (long long)ji(d, "memory_mib"));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	if (json_array_size(json_object_get(res, "ports"))) {
		printf("\nPorts\n");
		json_array_foreach(json_object_get(res, "ports"), i, d)
			printf("%s = %lld%s\n", js(d, "label"), (long long)ji(d, "value"),
			       ji(d, "to") > 0 ? "" : "");
	}
	json_object_foreach(json_object_get(a, "task_states"), task, ts) {
		struct table t;
		static const char *const heads[] = { "TIME", "TYPE", "MESSAGE" };
		json_t *ev;
		printf("\nTask \"%s\" is %s%s (restarts %lld", task, js(ts, "state"),
		       jb(ts, "failed") ? ", failed" : "", (long long)ji(ts, "restarts"));
		if (!strcmp(js(ts, "state"), "dead"))
			printf(", exit code %lld", (long long)ji(ts, "exit_code"));
		printf(")\n");
		if (!json_array_size(json_object_get(ts, "events")))
			continue;
		table_init(&t, 3, heads);
		json_array_foreach(json_object_get(ts, "events"), i, ev) {
			table_add(&t, format_ago(ji(ev, "time"), buf, sizeof(buf)));
			table_add(&t, js(ev, "type"));
			table_add(&t, js(ev, "message"));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
}

static int alloc_status_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc status [options] ID",
		"Shows one allocation (ID or a unique prefix of it, among the namespace's\n"
		"allocations): where it runs, its devices, and each task's state and events.",
		flags,
	};
	char *pos[1], *id, *path, *list;
	struct httpc_response r;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing allocation id");
	list = api_ns_path("/v1/allocations", cli_namespace(ns_flag));
	id = api_resolve_prefix(argv[0], list, "allocation", pos[0]);
	free(list);
	if (!id)
		return 1;
	path = xasprintf("/v1/allocation/%s", id);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	free(id);
	if (rc < 0)
		return 1;
	if (as_json)
		api_print_json(r.body);
	else
		print_alloc(r.body);
	httpc_response_release(&r);
	return 0;
}

int cmd_alloc(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "status", alloc_status_cmd, "show an allocation and its tasks" },
		{ "logs", alloc_logs_cmd, "print or follow a task's log" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
