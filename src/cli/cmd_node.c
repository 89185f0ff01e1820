/* herd node status|drain|eligibility: the client nodes a server knows.
 *
 * `node status ID` shows what `nomad node status ID` shows: the node, its
 * allocated resources against its total, every device with used/total
 * memory and utilization, and its allocations.  IDs may be prefixes or the
 * node's name. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/gpu_share.h"
#include "cli/cli-api.h"
#include "cli/cli.h"
#include "cli/cli_cores.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

void print_allocs_table(const json_t *allocs, bool show_node);
int node_drain_cmd(int argc, char **argv); /* cmd_node_drain.c */

static int64_t cli_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static size_t count_gpus(const json_t *node)
{
	size_t i, n = 0;
	json_t *d;
	json_array_foreach(json_object_get(node, "devices"), i, d)
		n += !strcmp(js(d, "type"), "gpu");
	return n;
}

static void print_nodes(const json_t *nodes, bool verbose)
{
	static const char *const heads[] = { "ID", "NAME", "DATACENTER", "CLASS", "ADDRESS",
					     "DRAIN", "ELIGIBILITY", "STATUS", "GPUS" };
	struct table t;
	size_t i;
	json_t *n;
	char sid[16];

	if (!json_array_size(nodes)) {
		printf("no nodes\n");
		return;
	}
	table_init(&t, 9, heads);
	json_array_foreach(nodes, i, n) {
		table_add(&t, verbose ? js(n, "id") : short_id(js(n, "id"), sid));
		table_add(&t, js(n, "name"));
		table_add(&t, js(n, "datacenter"));
		table_add(&t, *js(n, "node_class") ? js(n, "node_class") : "-");
		table_add(&t, js(n, "http_addr"));
		table_add(&t, jb(n, "drain") ? "true" : "false");
		table_add(&t, js(n, "eligibility"));
		table_add(&t, js(n, "status"));
		table_addf(&t, "%zu", count_gpus(n));
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* Sums what the node's live allocations hold: cpu, memory, and per device
 * compute and memory. */
static void sum_allocated(const json_t *allocs, int64_t *cpu, int64_t *mem, json_t *dev_use)
{
	size_t i, k;
	json_t *a, *d;

	*cpu = *mem = 0;
	json_array_foreach(allocs, i, a) {
		const char *cs = js(a, "client_status");
		const json_t *res = json_object_get(a, "resources");
		if (strcmp(js(a, "desired_status"), "run") ||
		    (strcmp(cs, "pending") && strcmp(cs, "running")))
			continue;
		*cpu += ji(res, "cpu_milli");
		*mem += ji(res, "memory_mib");
		json_array_foreach(json_object_get(res, "devices"), k, d) {
			json_t *u = json_object_get(dev_use, js(d, "id"));
			if (!u) {
				u = json_pack("{s:i,s:i,s:i}", "compute", 0, "memory", 0, "holders", 0);
				json_object_set_new(dev_use, js(d, "id"), u);
			}
			json_object_set_new(u, "compute", json_integer(ji(u, "compute") +
					    (jb(d, "whole") ? 1000 : ji(d, "compute_milli"))));
			json_object_set_new(u, "memory", json_integer(ji(u, "memory") + ji(d, "memory_mib")));
			json_object_set_new(u, "holders", json_integer(ji(u, "holders") + 1));
		}
	}
}

static void print_kv_object(const char *title, const json_t *o)
{
	const char *k;
	json_t *v;
	struct table t;
	static const char *const heads[] = { "KEY", "VALUE" };

	if (!json_object_size(o))
		return;
	printf("\n%s\n", title);
	table_init(&t, 2, heads);
	json_object_foreach((json_t *)o, k, v) {
		table_add(&t, k);
		if (json_is_string(v))
			table_add(&t, json_string_value(v));
		else {
			char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			table_add(&t, s);
			free(s);
		}
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* The node's client { host_volume } blocks: name, path, access. */
static void print_host_volumes(const json_t *hv)
{
	static const char *const heads[] = { "NAME", "PATH", "ACCESS" };
	struct table t;
	const char *k;
	json_t *v;

	printf("\nHost Volumes\n");
	if (!json_object_size(hv)) {
		printf("none\n");
		return;
	}
	table_init(&t, 3, heads);
	json_object_foreach((json_t *)hv, k, v) {
		table_add(&t, k);
		table_add(&t, js(v, "path"));
		table_add(&t, jb(v, "read_only") ? "read-only" : "read-write");
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* "true (deadline in 52m)", "false (last drain complete 3m ago)", ... */
static void drain_text(const json_t *n, char *buf, size_t size)
{
	const json_t *st = json_object_get(n, "drain_strategy"), *last = json_object_get(n, "last_drain");
	char d[64], w[64];

	if (jb(n, "drain") && json_is_object(st)) {
		int64_t at = ji(st, "force_deadline");
		if (ji(st, "deadline") < 0 || !at)
			snprintf(buf, size, "true (no deadline)");
		else
			snprintf(buf, size, "true (deadline %s%s)",
				 at > cli_now_ns() ? "in " : "passed ",
				 format_duration((at > cli_now_ns() ? at - cli_now_ns() : cli_now_ns() - at) /
						 NS_PER_SEC * NS_PER_SEC, d, sizeof(d)));
	} else if (jb(n, "drain")) {
		snprintf(buf, size, "true");
	} else if (json_is_object(last)) {
		snprintf(buf, size, "false (last drain %s %s)", js(last, "status"),
			 format_ago(ji(last, "ended_at"), w, sizeof(w)));
	} else {
		snprintf(buf, size, "false");
	}
}

static void print_node(const json_t *n, const json_t *allocs, bool verbose)
{
	const json_t *res = json_object_get(n, "resources");
	char drain[160];
	json_t *use = json_object();
	int64_t cpu, mem;
	size_t i;
	json_t *d;
	char buf[64];

	sum_allocated(allocs, &cpu, &mem, use);
	drain_text(n, drain, sizeof(drain));
	printf("%-14s %s\n%-14s %s\n%-14s %s\n%-14s %s\n%-14s %s\n%-14s %s%s%s\n%-14s %s\n"
	       "%-14s %s\n%-14s %s\n",
	       "ID", js(n, "id"), "Name", js(n, "name"), "Datacenter", js(n, "datacenter"),
	       "Class", *js(n, "node_class") ? js(n, "node_class") : "<none>", "Address",
	       js(n, "http_addr"), "Status", js(n, "status"),
	       *js(n, "status_description") ? ": " : "", js(n, "status_description"),
	       "Eligibility", js(n, "eligibility"), "Drain", drain,
	       "Heartbeat", format_ago(ji(n, "last_heartbeat"), buf, sizeof(buf)));

	printf("\nAllocated Resources\n");
	{
		struct table t;
		static const char *const heads[] = { "CPU", "MEMORY", "DISK" };
		table_init(&t, 3, heads);
		table_addf(&t, "%lld/%lld thousandths of a core", (long long)cpu,
			   (long long)ji(res, "cpu_milli"));
		table_addf(&t, "%lld MiB/%lld MiB", (long long)mem, (long long)ji(res, "memory_mib"));
		table_addf(&t, "%lld MiB", (long long)ji(res, "disk_mib"));
		table_print(&t, stdout, "");
		table_release(&t);
	}

	printf("\nDevices\n");
	if (!json_array_size(json_object_get(n, "devices"))) {
		printf("none\n");
	} else {
		struct table t;
		static const char *const heads[] = { "ID", "MODEL", "MIG", "SHARING", "ALLOCATED",
						     "MEMORY USED/TOTAL", "UTIL", "TEMP", "POWER",
						     "HEALTH" };
		table_init(&t, 10, heads);
		json_array_foreach(json_object_get(n, "devices"), i, d) {
			const json_t *st = json_object_get(d, "stats");
			json_t *u = json_object_get(use, js(d, "id"));
			table_add(&t, js(d, "id"));
			table_add(&t, js(d, "model"));
			table_add(&t, *js(d, "mig_profile") ? js(d, "mig_profile") : "-");
			table_add(&t, js(d, "sharing"));
			if (!strcmp(js(d, "sharing"), "exclusive")) {
				table_add(&t, u ? "whole" : "-");
			} else {
				/* without tenants (u NULL: zeros), the room of a shared GPU */
				struct strbuf sb = STRBUF_INIT;
				gpu_share_summary(&sb, d, (long long)ji(u, "holders"),
						  (long long)ji(u, "compute"), (long long)ji(u, "memory"));
				table_add(&t, sb.buf);
				strbuf_release(&sb);
			}
			table_addf(&t, "%lld/%lld MiB", (long long)ji(st, "memory_used_mib"),
				   (long long)ji(d, "memory_mib"));
			table_addf(&t, "%lld%%", (long long)ji(st, "utilization_gpu"));
			table_addf(&t, "%lldC", (long long)ji(st, "temperature_c"));
			table_addf(&t, "%lldW", (long long)ji(st, "power_w"));
			if (jb(d, "healthy"))
				table_add(&t, "healthy");
			else
				table_addf(&t, "unhealthy: %s", js(d, "health_reason"));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	json_decref(use);

	printf("\nAllocations\n");
	if (json_array_size(allocs))
		print_allocs_table(allocs, false);
	else
		printf("none\n");
	if (verbose) {
		cli_print_node_cores(n, allocs);
		print_host_volumes(json_object_get(n, "host_volumes"));
		print_kv_object("Drivers", json_object_get(n, "drivers"));
		print_kv_object("Attributes", json_object_get(n, "attributes"));
		print_kv_object("Meta", json_object_get(n, "meta"));
	}
}

/* Resolves ID (a prefix of an id, or a name) to a full node id (also
 * cmd_node_drain.c's). */
char *node_resolve(const char *cmd, const char *arg);
char *node_resolve(const char *cmd, const char *arg)
{
	return api_resolve_prefix(cmd, "/v1/nodes", "node", arg);
}

static int node_status_cmd(int argc, char **argv)
{
	bool as_json = false, verbose = false;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "verbose", FLAG_BOOL, &verbose, "full ids; with ID also host volumes, drivers, attributes, meta" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd node status [options] [ID]",
		"Without ID lists the client nodes; with ID (a unique prefix or the node's\n"
		"name) shows the node: allocated resources, every device with memory used\n"
		"and total, utilization and health, and its allocations.",
		flags,
	};
	char *pos[1], *id, *path;
	struct httpc_response r, ra;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n == 0) {
		if (api_call(argv[0], "GET", "/v1/nodes", NULL, &r) < 0)
			return 1;
		if (as_json)
			api_print_json(r.body);
		else
			print_nodes(r.body, verbose);
		httpc_response_release(&r);
		return 0;
	}
	id = node_resolve(argv[0], pos[0]);
	if (!id)
		return 1;
	path = xasprintf("/v1/node/%s", id);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0) {
		free(id);
		return 1;
	}
	path = xasprintf("/v1/node/%s/allocations", id);
	rc = api_call(argv[0], "GET", path, NULL, &ra);
	free(path);
	free(id);
	if (rc < 0) {
		httpc_response_release(&r);
		return 1;
	}
	if (as_json) {
		json_t *o = json_pack("{s:O,s:O}", "node", r.body, "allocations", ra.body);
		api_print_json(o);
		json_decref(o);
	} else {
		print_node(r.body, ra.body, verbose);
	}
	httpc_response_release(&r);
	httpc_response_release(&ra);
	return 0;
}

static int node_post(const char *cmd, const char *arg, const char *what, json_t *body)
{
	char *id = node_resolve(cmd, arg), *path;
	struct httpc_response r;
	int rc;

	if (!id) {
		json_decref(body);
		return 1;
	}
	path = xasprintf("/v1/node/%s/%s", id, what);
	rc = api_call(cmd, "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc == 0) {
		char sid[16];
		size_t ne = json_array_size(json_object_get(r.body, "eval_ids"));
		printf("node %s: %s updated", short_id(id, sid), what);
		if (ne)
			printf(", %zu evaluation%s", ne, ne == 1 ? "" : "s");
		printf("\n");
		httpc_response_release(&r);
	}
	free(id);
	return rc < 0 ? 1 : 0;
}

/* drain and eligibility: -enable|-disable ID, POSTed as { key: !disable }.
 * Drain enables by default; eligibility needs one of the two. */
static int node_switch_cmd(int argc, char **argv, const char *what, const char *key,
			   const char *const text[4], bool enable_by_default)
{
	bool disable = false, enable = false;
	const struct flag flags[] = {
		{ "enable", FLAG_BOOL, &enable, text[2] },
		{ "disable", FLAG_BOOL, &disable, text[3] },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = { text[0], text[1], flags };
	char *pos[1];
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing node id");
	if (!enable_by_default && enable == disable)
		return usage_error(argv[0], "give one of -enable and -disable");
	if (enable && disable)
		return usage_error(argv[0], "-enable and -disable exclude each other");
	return node_post(argv[0], pos[0], what, json_pack("{s:b}", key, !disable));
}

static int node_eligibility_cmd(int argc, char **argv)
{
	static const char *const text[4] = {
		"herd node eligibility -enable|-disable ID",
		"Marks a node eligible or ineligible for new work.",
		"the node may get new work",
		"the node gets no new work (what it runs stays)",
	};
	return node_switch_cmd(argc, argv, "eligibility", "eligible", text, false);
}

int cmd_node(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "status", node_status_cmd, "list nodes, or show one node and its devices" },
		{ "drain", node_drain_cmd, "move a node's allocations away" },
		{ "eligibility", node_eligibility_cmd, "let a node get new work, or not" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
