/* herd alloc status: one allocation, its tasks, their events and devices,
 * and its part in a deployment (health, canary).
 * The id may be a prefix (as long as it matches one allocation).  The
 * group's other commands: logs (cmd_alloc_logs.c), stop, restart, signal
 * (cmd_alloc_ops.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "common/httpc.h"
#include "cli/cli.h"
#include "cli/cli_cores.h"
#include "common/units.h"
#include "common/xalloc.h"

/* "31.2 MiB" for a byte count. */
static const char *format_bytes(int64_t b, char *buf, size_t size)
{
	if (b >= 1024LL * 1024 * 1024)
		snprintf(buf, size, "%.1f GiB", (double)b / (1024.0 * 1024 * 1024));
	else
		snprintf(buf, size, "%.1f MiB", (double)b / (1024.0 * 1024));
	return buf;
}

/* The usage of the allocation's running tasks from its node's client API
 * (GET /v1/client/allocation/:id/stats): the answer's "tasks" object, or
 * NULL after one line on stderr saying why (the rest is shown anyway). */
static json_t *fetch_usage(const char *cmd, const json_t *a)
{
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };
	json_t *ts, *out = NULL;
	const char *task;
	char *addr = NULL, *path;
	bool running = false;

	json_object_foreach(json_object_get(a, "task_states"), task, ts)
		running |= !strcmp(js(ts, "state"), "running");
	if (!running || alloc_node_addr(cmd, a, &addr))
		return NULL;
	httpc_init(&c, addr);
	c.timeout_ms = 10000;
	path = xasprintf("/v1/client/allocation/%s/stats", js(a, "id"));
	if (httpc_request(&c, "GET", path, NULL, &r, &err) < 0)
		fprintf(stderr, "%s: resource usage: node at %s: %s\n", cmd, addr, err.msg);
	else
		out = json_incref(json_object_get(r.body, "tasks"));
	httpc_response_release(&r);
	httpc_release(&c);
	free(path);
	free(addr);
	return out;
}

/* A line per GPU the task holds, its memory in use against its share:
 * "GPU memory: GPU-3c4d... 2.9 GiB of 2.0 GiB (over its share)". */
static void print_gpu_memory(const json_t *gpus)
{
	char used[32], share[32];
	const json_t *g;
	size_t i;

	json_array_foreach(gpus, i, g) {
		int64_t mib = ji(g, "memory_mib"), ask = ji(g, "share_mib");
		printf("GPU memory: %s %s", js(g, "device"),
		       format_bytes(mib * 1024 * 1024, used, sizeof(used)));
		if (ask > 0)
			printf(" of %s%s", format_bytes(ask * 1024 * 1024, share, sizeof(share)),
			       mib > ask ? " (over its share)" : "");
		printf("\n");
	}
}

/* "Resource usage: 31.2 MiB / 256.0 MiB memory, 98.7% CPU" */
static void print_usage(const json_t *u)
{
	char b1[32], b2[32];
	const json_t *cpu = json_object_get(u, "cpu_percent");

	if (*js(u, "error")) {
		printf("Resource usage: unknown (%s)\n", js(u, "error"));
		return;
	}
	printf("Resource usage: %s", json_is_integer(json_object_get(u, "memory_bytes"))
	       ? format_bytes(ji(u, "memory_bytes"), b1, sizeof(b1)) : "?");
	if (json_is_integer(json_object_get(u, "memory_limit_bytes")))
		printf(" / %s", format_bytes(ji(u, "memory_limit_bytes"), b2, sizeof(b2)));
	printf(" memory");
	if (json_is_number(cpu))
		printf(", %.1f%% CPU", json_number_value(cpu));
	printf("\n");
	print_gpu_memory(json_object_get(u, "gpu_memory"));
}

/* A gang member's place in its gang: "rank 1 of 4, leader on node-a
 * (10.0.0.7)". */
static void print_gang(const json_t *gang)
{
	const json_t *leader = json_array_get(json_object_get(gang, "members"), 0);
	if (!gang)
		return;
	printf("%-20s rank %lld of %lld, leader on %s (%s)\n", "Gang", (long long)ji(gang, "rank"),
	       (long long)ji(gang, "size"), js(leader, "node_name"),
	       *js(leader, "address") ? js(leader, "address") : "127.0.0.1");
}

/* The group's time limit as the agent counts it: "4h (3h12m5s left)"
 * while the allocation runs, "4h (reached)" once it ended it. */
static void print_time_limit(const json_t *a)
{
	const json_t *tl = json_object_get(a, "time_limit");
	char limit[32], left[32];
	struct timespec now;
	int64_t end;

	if (!tl)
		return;
	format_duration(ji(tl, "limit"), limit, sizeof(limit));
	clock_gettime(CLOCK_REALTIME, &now);
	end = ji(tl, "started_at") + ji(tl, "limit") - (now.tv_sec * NS_PER_SEC + now.tv_nsec);
	if (jb(tl, "reached"))
		printf("%-20s %s (reached)\n", "Time Limit", limit);
	else if (ji(tl, "started_at") > 0 && !strcmp(js(a, "client_status"), "running"))
		printf("%-20s %s (%s left)\n", "Time Limit", limit,
		       format_duration(end > 0 ? end / NS_PER_SEC * NS_PER_SEC : 0, left, sizeof(left)));
	else
		printf("%-20s %s\n", "Time Limit", limit);
}

/* An allocation of a deployment (docs/jobspec.md, "Rolling updates"): its
 * health as the server decided it, "healthy", "unhealthy" or "pending",
 * and whether it is a canary: "healthy (canary)", "pending (canary,
 * promoted)". */
static void print_deployment(const json_t *a)
{
	const json_t *ds = json_object_get(a, "deployment_status"), *h;
	bool canary = jb(ds, "canary");

	if (!*js(a, "deployment_id"))
		return;
	h = json_object_get(ds, "healthy");
	printf("%-20s %s%s%s\n%-20s %s\n", "Deployment",
	       json_is_true(h) ? "healthy" : json_is_false(h) ? "unhealthy" : "pending",
	       canary ? " (canary" : "", !canary ? "" : jb(ds, "promoted") ? ", promoted)" : ")",
	       "Deployment ID", js(a, "deployment_id"));
}

/* Events the server adds to the allocation itself (idle GPUs: docs/teams.md,
 * "Idle GPUs"), apart from its tasks' own. */
static void print_alloc_events(const json_t *a)
{
	static const char *const heads[] = { "TIME", "TYPE", "MESSAGE" };
	struct table t;
	json_t *ev;
	size_t i;
	char buf[64];

	if (!json_array_size(json_object_get(a, "events")))
		return;
	printf("\nAllocation Events\n");
	table_init(&t, 3, heads);
	json_array_foreach(json_object_get(a, "events"), i, ev) {
		table_add(&t, format_ago(ji(ev, "time"), buf, sizeof(buf)));
		table_add(&t, js(ev, "type"));
		table_add(&t, js(ev, "message"));
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

static void print_alloc(const json_t *a, const json_t *usage)
{
	const json_t *res = json_object_get(a, "resources");
	const char *task;
	json_t *ts, *d;
	size_t i;
	char buf[64];

	printf("%-20s %s\n%-20s %s\n%-20s %s\n%-20s %s\n%-20s %s (%s)\n%-20s %lld\n"
	       "%-20s %s%s%s\n%-20s %s%s%s\n%-20s %s\n",
	       "ID", js(a, "id"), "Name", js(a, "name"), "Node", js(a, "node_name"), "Node ID",
	       js(a, "node_id"), "Job", js(a, "job_id"), js(a, "namespace"), "Job Version",
	       (long long)ji(a, "job_version"), "Desired Status", js(a, "desired_status"),
	       *js(a, "desired_description") ? ": " : "", js(a, "desired_description"),
	       "Client Status", js(a, "client_status"), *js(a, "client_description") ? ": " : "",
	       js(a, "client_description"), "Created",
	       format_ago(ji(a, "create_time"), buf, sizeof(buf)));
	print_time_limit(a);
	if (*js(a, "previous_allocation"))
		printf("%-20s %s\n", "Replaces", js(a, "previous_allocation"));
	print_gang(json_object_get(a, "gang"));
	print_deployment(a);
	printf("%-20s %lld thousandths of a core, %lld MiB\n", "Resources",
	       (long long)ji(res, "cpu_milli"), (long long)ji(res, "memory_mib"));
	cli_print_alloc_cores("alloc status", a);
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
	alloc_print_services(a);
	print_alloc_events(a);
	json_object_foreach(json_object_get(a, "task_states"), task, ts) {
		struct table t;
		static const char *const heads[] = { "TIME", "TYPE", "MESSAGE" };
		json_t *ev;
		printf("\nTask \"%s\" is %s%s (restarts %lld", task, js(ts, "state"),
		       jb(ts, "failed") ? ", failed" : "", (long long)ji(ts, "restarts"));
		if (!strcmp(js(ts, "state"), "dead"))
			printf(", exit code %lld", (long long)ji(ts, "exit_code"));
		printf(")\n");
		if (json_object_get(usage, task))
			print_usage(json_object_get(usage, task));
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
		"allocations): where it runs, its devices, and each task's state and events;\n"
		"for running tasks, their memory and CPU use as the node measures them.",
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
	json_t *usage = fetch_usage(argv[0], r.body);
	if (as_json) {
		if (usage)
			json_object_set(r.body, "resource_usage", usage);
		api_print_json(r.body);
	} else {
		print_alloc(r.body, usage);
	}
	json_decref(usage);
	httpc_response_release(&r);
	return 0;
}

int cmd_alloc(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "status", alloc_status_cmd, "show an allocation and its tasks" },
		{ "logs", alloc_logs_cmd, "print or follow a task's log" },
		{ "stop", alloc_stop_cmd, "stop an allocation and have it replaced" },
		{ "restart", alloc_restart_cmd, "restart an allocation's tasks in place" },
		{ "signal", alloc_signal_cmd, "send a signal to an allocation's tasks" },
		{ "exec", alloc_exec_cmd, "run a command inside a running task" },
		{ "fs", alloc_fs_cmd, "list or print files of an allocation's directory" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
