/* herd gpu: this machine's GPUs, read locally through NVML (no server);
 * `herd gpu status` asks a server about every GPU of the cluster.
 *
 * `herd gpu list` prints one row per schedulable device (a whole GPU or a
 * MIG instance); -json prints the same data as the agent reports it;
 * -verbose adds every attribute and the topology matrix.  Without an NVIDIA
 * driver it says so in one line and lists nothing (exit 0): no GPUs is a
 * normal state of a machine, not a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/gpu_share.h"
#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "gpu/gpu-json.h"
#include "gpu/gpu.h"

static void print_sharing(const json_t *gpus);
static void add_mem(struct strbuf *sb, long long mib);

static void print_topology(const struct gpu_host *h)
{
	char buf[16];
	printf("\nTopology (X self, MIG same GPU, NV# NVLinks, PIX one PCIe switch, PXB several,\n"
	       "PHB one host bridge, NODE one CPU, SYS across sockets, ? unknown):\n%-6s", "");
	for (size_t j = 0; j < h->nr_devs; j++)
		printf(" %-5zu", j);
	printf("\n");
	for (size_t i = 0; i < h->nr_devs; i++) {
		printf("%-6zu", i);
		for (size_t j = 0; j < h->nr_devs; j++) {
			unsigned n;
			enum gpu_link l = gpu_host_link(h, i, j, &n);
			printf(" %-5s", gpu_link_label(l, n, buf, sizeof(buf)));
		}
		printf("\n");
	}
}

static void print_table(const struct gpu_host *h, const struct gpu_stats *stats, bool verbose)
{
	printf("driver %s, CUDA %s, %zu GPU%s, %zu device%s%s%s\n",
	       h->driver_version[0] ? h->driver_version : "?",
	       h->cuda_version[0] ? h->cuda_version : "?", h->nr_gpus, h->nr_gpus == 1 ? "" : "s",
	       h->nr_devs, h->nr_devs == 1 ? "" : "s", h->simulated ? " (simulated)" : "",
	       h->wsl ? " (WSL2)" : "");
	if (!h->nr_devs)
		return;
	printf("%-5s  %-40s  %-34s  %10s  %-10s  %-9s  %4s\n", "INDEX", "UUID", "MODEL", "MEMORY",
	       "MIG", "HEALTH", "UTIL");
	for (size_t i = 0; i < h->nr_devs; i++) {
		const struct gpu_device *d = &h->devs[i];
		char mem[32] = "-", util[16] = "-";
		if (d->memory_mib >= 0)
			snprintf(mem, sizeof(mem), "%lld MiB", (long long)d->memory_mib);
		if (stats[i].gpu_util >= 0)
			snprintf(util, sizeof(util), "%lld%%", (long long)stats[i].gpu_util);
		printf("%-5zu  %-40s  %-34s  %10s  %-10s  %-9s  %4s\n", i, d->uuid, d->model, mem,
		       d->mig_profile[0] ? d->mig_profile : "-",
		       d->health == GPU_HEALTHY ? "healthy" : "unhealthy", util);
		if (d->health != GPU_HEALTHY)
			printf("       unhealthy: %s\n", d->health_reason);
		if (verbose)
			for (size_t k = 0; k < d->nr_attrs; k++)
				printf("       %-24s %s\n", d->attrs[k].name, d->attrs[k].value);
	}
	if (verbose)
		print_topology(h);
}

static int cmd_gpu_list(int argc, char **argv)
{
	bool json = false, verbose = false;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &json, "print JSON (the agent's fingerprint format)" },
		{ "verbose", FLAG_BOOL, &verbose, "add every attribute and the topology matrix" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd gpu list [options]",
		"Lists this machine's GPUs as herd schedules them: one row per whole GPU or MIG\n"
		"instance, read locally through NVML (no server needed).  NVML is searched as\n"
		"libnvidia-ml.so.1, then in /usr/lib/wsl/lib; HERD_NVML_LIBRARY names another\n"
		"library, such as the simulator (see docs/gpu-sim.md).",
		flags,
	};
	struct gpu_config cfg;
	struct herd_err err = { 0 };
	int i = flags_parse(&help, argc, argv);
	if (i < 0)
		return i == -1 ? 0 : EXIT_USAGE;
	if (i < argc)
		return usage_error(argv[0], "unexpected argument '%s'", argv[i]);
	gpu_config_init(&cfg);
	if (gpu_config_from_env(&cfg, &err) < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err.msg);
		return 1;
	}
	struct gpu_host *h = gpu_host_open(&cfg);
	struct gpu_stats *stats = xcalloc(h->nr_devs ? h->nr_devs : 1, sizeof(*stats));
	for (size_t k = 0; k < h->nr_devs; k++) {
		stats[k].memory_total_mib = stats[k].gpu_util = -1;
		gpu_host_sample(h, k, &stats[k], NULL); /* a lost GPU shows as unhealthy */
	}
	if (json) {
		json_t *o = gpu_host_to_json(h, stats, verbose);
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("\n");
		json_decref(o);
	} else if (!h->nvml_loaded) {
		printf("no GPUs: %s\n", h->reason);
	} else {
		print_table(h, stats, verbose);
	}
	for (size_t k = 0; k < h->nr_warnings; k++)
		fprintf(stderr, "warning: %s\n", h->warnings[k]);
	free(stats);
	gpu_host_free(h);
	return 0;
}

/* herd gpu status: every GPU and MIG slice of the cluster (GET /v1/gpus). */
/* How long every holder of the GPU has been idle (GET /v1/gpus'
 * idle_since; docs/teams.md, "Idle GPUs"), "-" when not. */
static void add_idle(struct table *t, const json_t *g)
{
	struct timespec now;
	int64_t since = ji(g, "idle_since"), d;
	char buf[64];

	if (since <= 0) {
		table_add(t, "-");
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	d = (int64_t)now.tv_sec * NS_PER_SEC + now.tv_nsec - since;
	table_add(t, format_duration(d > 0 ? d / NS_PER_SEC * NS_PER_SEC : 0, buf, sizeof(buf)));
}

static int cmd_gpu_status(int argc, char **argv)
{
	bool json = false;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &json, "print JSON" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd gpu status [options]",
		"Shows every GPU and MIG instance of the cluster ($HERD_ADDR): its node, who\n"
		"holds it and what share (or the waiting job it is reserved for), memory used\n"
		"and total, utilization and health, and for how long a held GPU has been idle\n"
		"under its quota's idle_gpu block.",
		flags,
	};
	static const char *const heads[] = { "NODE", "DEVICE", "MODEL", "MIG", "SHARING",
					     "HOLDERS", "ALLOCATED", "MEMORY USED/TOTAL", "UTIL",
					     "IDLE", "HEALTH" };
	struct httpc_response r;
	struct table t;
	size_t i, k;
	json_t *g, *a;
	int i0 = flags_parse(&help, argc, argv);

	if (i0 < 0)
		return i0 == -1 ? 0 : EXIT_USAGE;
	if (i0 < argc)
		return usage_error(argv[0], "unexpected argument '%s'", argv[i0]);
	if (api_call(argv[0], "GET", "/v1/gpus", NULL, &r) < 0)
		return 1;
	if (json) {
		api_print_json(r.body);
		httpc_response_release(&r);
		return 0;
	}
	if (!json_array_size(r.body)) {
		printf("no GPUs in the cluster\n");
		httpc_response_release(&r);
		return 0;
	}
	table_init(&t, 11, heads);
	json_array_foreach(r.body, i, g) {
		const json_t *d = json_object_get(g, "device");
		const json_t *st = json_object_get(d, "stats");
		struct strbuf h = STRBUF_INIT;
		json_array_foreach(json_object_get(g, "allocations"), k, a) {
			char sid[16];
			strbuf_addf(&h, "%s%s/%s", k ? ", " : "", js(a, "job_id"),
				    short_id(js(a, "alloc_id"), sid));
			if (!jb(a, "whole"))
				strbuf_addf(&h, " %lld.%lld%%", (long long)ji(a, "compute_milli") / 10,
					    (long long)ji(a, "compute_milli") % 10);
			if (json_is_integer(json_object_get(a, "gpu_memory_used_mib"))) {
				strbuf_adds(&h, " using ");
				add_mem(&h, (long long)ji(a, "gpu_memory_used_mib"));
			}
		}
		if (ji(g, "foreign_memory_mib") > 0) {
			strbuf_adds(&h, h.len ? ", foreign " : "foreign ");
			add_mem(&h, (long long)ji(g, "foreign_memory_mib"));
		}
		/* held for a job that waits (docs/teams.md, "Reservations") */
		if (*js(g, "reserved_for"))
			strbuf_addf(&h, "%sreserved for %s", h.len ? ", " : "", js(g, "reserved_for"));
		table_addf(&t, "%s%s%s", js(g, "node_name"),
			   strcmp(js(g, "node_status"), "ready") ? " " : "",
			   strcmp(js(g, "node_status"), "ready") ? js(g, "node_status") : "");
		table_add(&t, js(d, "id"));
		table_add(&t, js(d, "model"));
		table_add(&t, *js(d, "mig_profile") ? js(d, "mig_profile") : "-");
		table_add(&t, js(d, "sharing"));
		table_add(&t, h.len ? h.buf : "-");
		table_addf(&t, "%lld.%lld%%", (long long)ji(g, "compute_used_milli") / 10,
			   (long long)ji(g, "compute_used_milli") % 10);
		table_addf(&t, "%lld/%lld MiB", (long long)ji(st, "memory_used_mib"),
			   (long long)ji(d, "memory_mib"));
		table_addf(&t, "%lld%%", (long long)ji(st, "utilization_gpu"));
		add_idle(&t, g);
		if (jb(d, "healthy"))
			table_add(&t, "healthy");
		else
			table_addf(&t, "unhealthy: %s", js(d, "health_reason"));
		strbuf_release(&h);
	}
	table_print(&t, stdout, "");
	table_release(&t);
	print_sharing(r.body);
	httpc_response_release(&r);
	return 0;
}

/* MiB as GiB when that reads better ("30", "7.5"). */
static void add_gib(struct strbuf *sb, long long mib)
{
	if (mib % 1024 == 0)
		strbuf_addf(sb, "%lld", mib / 1024);
	else
		strbuf_addf(sb, "%.1f", mib / 1024.0);
}

void gpu_share_summary(struct strbuf *sb, const json_t *device, long long tenants,
		       long long compute_milli, long long memory_mib)
{
	const char *mode = json_string_value(json_object_get(device, "sharing"));
	long long replicas = json_integer_value(json_object_get(device, "replicas"));
	long long total = json_integer_value(json_object_get(device, "memory_mib"));

	strbuf_addf(sb, "%s ", mode ? mode : "exclusive");
	if (replicas > 0)
		strbuf_addf(sb, "%lld/%lld tenants", tenants, replicas);
	else
		strbuf_addf(sb, "%lld tenant%s", tenants, tenants == 1 ? "" : "s");
	strbuf_addf(sb, ", compute %lld", compute_milli / 10);
	if (compute_milli % 10)
		strbuf_addf(sb, ".%lld", compute_milli % 10);
	strbuf_adds(sb, "%, memory ");
	add_gib(sb, memory_mib);
	strbuf_adds(sb, "/");
	add_gib(sb, total);
	strbuf_adds(sb, " GiB");
}

/* GPU memory as measured: "700 MiB", "1.5 GiB". */
static void add_mem(struct strbuf *sb, long long mib)
{
	if (mib < 1024) {
		strbuf_addf(sb, "%lld MiB", mib);
		return;
	}
	add_gib(sb, mib);
	strbuf_adds(sb, " GiB");
}

/* ", using 1.5 GiB": what the holder's tasks use of the device, when its
 * node's heartbeat measured it. */
static void add_using(struct strbuf *sb, const json_t *holder)
{
	if (!json_is_integer(json_object_get(holder, "gpu_memory_used_mib")))
		return;
	strbuf_adds(sb, ", using ");
	add_mem(sb, (long long)ji(holder, "gpu_memory_used_mib"));
}

/* Per shared GPU: the summary and each tenant's share. */
static void print_sharing(const json_t *gpus)
{
	size_t i, k;
	json_t *g, *a;
	bool any = false;

	json_array_foreach(gpus, i, g) {
		const json_t *d = json_object_get(g, "device");
		if (!strcmp(js(d, "sharing"), "exclusive"))
			continue;
		struct strbuf sb = STRBUF_INIT;
		gpu_share_summary(&sb, d, (long long)ji(g, "tenants"),
				  (long long)ji(g, "compute_used_milli"),
				  (long long)ji(g, "memory_used_mib"));
		printf("%s%s %s %s\n", any ? "" : "\nSharing\n", js(g, "node_name"), js(d, "id"),
		       sb.buf);
		any = true;
		json_array_foreach(json_object_get(g, "allocations"), k, a) {
			char sid[16];
			strbuf_reset(&sb);
			add_gib(&sb, (long long)ji(a, "memory_mib"));
			strbuf_adds(&sb, " GiB");
			add_using(&sb, a);
			printf("  %s/%s %s: compute %lld.%lld%%, memory %s\n", js(a, "job_id"),
			       short_id(js(a, "alloc_id"), sid), js(a, "task_group"),
			       (long long)ji(a, "compute_milli") / 10,
			       (long long)ji(a, "compute_milli") % 10, sb.buf);
		}
		/* processes no allocation of herd's owns */
		if (ji(g, "foreign_memory_mib") > 0) {
			strbuf_reset(&sb);
			add_mem(&sb, (long long)ji(g, "foreign_memory_mib"));
			printf("  foreign processes: %s\n", sb.buf);
		}
		strbuf_release(&sb);
	}
}

int cmd_gpu(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "list", cmd_gpu_list, "list this machine's GPUs (local, no server)" },
		{ "status", cmd_gpu_status, "every GPU of the cluster, who holds it, its health" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
