/* cli_cores: reserved CPU cores in the CLI's status views (cli_cores.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "cli/cli_cores.h"
#include "common/cpulist.h"
#include "common/httpc.h"
#include "common/xalloc.h"

/* The NUMA node of core id in node (-2: not offered there). */
static int core_numa(const json_t *node, int64_t id)
{
	const json_t *c;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(node, "resources"), "cores"), i, c)
		if (ji(c, "id") == id)
			return json_is_integer(json_object_get(c, "numa")) ? (int)ji(c, "numa") : -1;
	return -2;
}

/* "0", "0, 1", "?" for the NUMA nodes of ids (unknown or not offered: ?). */
static void numa_text(const json_t *node, const json_t *ids, char *buf, size_t size)
{
	struct cpulist seen = CPULIST_INIT;
	bool unknown = !node;
	const json_t *c;
	size_t i, at = 0;

	json_array_foreach(ids, i, c) {
		int m = node ? core_numa(node, json_integer_value(c)) : -1;
		if (m < 0)
			unknown = true;
		else
			cpulist_add(&seen, m);
	}
	buf[0] = 0;
	for (int m = cpulist_next(&seen, 0); m >= 0 && at < size; m = cpulist_next(&seen, m + 1))
		at += (size_t)snprintf(buf + at, size - at, "%s%d", at ? ", " : "", m);
	if (unknown && at < size)
		snprintf(buf + at, size - at, "%s?", at ? ", " : "");
}

static char *list_text(const json_t *ids)
{
	struct cpulist set = CPULIST_INIT;
	const json_t *c;
	size_t i;
	json_array_foreach(ids, i, c)
		cpulist_add(&set, (int)json_integer_value(c));
	return cpulist_str(&set);
}

void cli_print_alloc_cores(const char *cmd, const json_t *alloc)
{
	const json_t *tasks = json_object_get(json_object_get(alloc, "resources"), "tasks"), *t;
	struct httpc_response r = { 0 };
	json_t *node = NULL;
	const char *task;
	bool any = false, fetched = false;

	json_object_foreach((json_t *)tasks, task, t)
		any = any || json_array_size(json_object_get(t, "cores")) > 0;
	if (!any)
		return;
	json_object_foreach((json_t *)tasks, task, t) {
		const json_t *ids = json_object_get(t, "cores");
		char numa[128], *list;
		if (!json_array_size(ids))
			continue;
		if (!fetched) {
			char *path = xasprintf("/v1/node/%s", js(alloc, "node_id"));
			fetched = true;
			if (api_call(cmd, "GET", path, NULL, &r) == 0)
				node = r.body;
			free(path);
		}
		list = list_text(ids);
		numa_text(node, ids, numa, sizeof(numa));
		printf("%-20s %s: %s (NUMA %s)\n", "Cores", task, list, numa);
		free(list);
	}
	if (node)
		httpc_response_release(&r);
}

static bool holds_capacity(const json_t *al)
{
	const char *cs = js(al, "client_status");
	return strcmp(cs, "complete") && strcmp(cs, "failed") && strcmp(cs, "lost");
}

void cli_print_node_cores(const json_t *node, const json_t *allocs)
{
	static const char *const heads[] = { "NUMA", "CORES", "TAKEN" };
	const json_t *cores = json_object_get(json_object_get(node, "resources"), "cores"), *c, *al;
	struct cpulist taken = CPULIST_INIT, numas = CPULIST_INIT;
	bool unknown = false;
	struct table t;
	size_t i;

	printf("\nReservable Cores\n");
	if (!json_array_size(cores)) {
		printf("none (tasks with cores are not placed here)\n");
		return;
	}
	json_array_foreach(allocs, i, al) {
		const json_t *tasks = json_object_get(json_object_get(al, "resources"), "tasks"), *tk;
		const char *name;
		if (!holds_capacity(al))
			continue;
		json_object_foreach((json_t *)tasks, name, tk) {
			size_t k;
			json_array_foreach(json_object_get(tk, "cores"), k, c)
				cpulist_add(&taken, (int)json_integer_value(c));
		}
	}
	json_array_foreach(cores, i, c) {
		if (json_is_integer(json_object_get(c, "numa")) && ji(c, "numa") >= 0)
			cpulist_add(&numas, (int)ji(c, "numa"));
		else
			unknown = true;
	}
	table_init(&t, 3, heads);
	for (int m = unknown ? -1 : cpulist_next(&numas, 0); ;
	     m = cpulist_next(&numas, m + 1)) {
		struct cpulist set = CPULIST_INIT;
		char *list;
		int held = 0;
		json_array_foreach(cores, i, c) {
			int64_t cm = json_is_integer(json_object_get(c, "numa")) ? ji(c, "numa") : -1;
			if ((cm < 0 ? -1 : cm) != m)
				continue;
			cpulist_add(&set, (int)ji(c, "id"));
			held += cpulist_has(&taken, (int)ji(c, "id"));
		}
		list = cpulist_str(&set);
		if (m < 0)
			table_add(&t, "unknown");
		else
			table_addf(&t, "%d", m);
		table_add(&t, list);
		table_addf(&t, "%d of %d", held, cpulist_count(&set));
		free(list);
		if (m >= 0 && cpulist_next(&numas, m + 1) < 0)
			break;
		if (m < 0 && cpulist_empty(&numas))
			break;
	}
	table_print(&t, stdout, "");
	table_release(&t);
}
