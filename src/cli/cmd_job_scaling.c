/* What `herd job status ID` adds for a job whose groups have a scaling
 * block: each group's bounds, its autoscaling policy, the GPU utilization
 * the autoscaler sees and why it waits, and its recent changes (GET
 * /v1/job/:id/scale; docs/jobspec.md, "scaling"). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli-api.h"
#include "cli/cli.h"

static bool has_scaling(const json_t *job)
{
	const json_t *g;
	size_t i;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		if (json_is_object(json_object_get(g, "scaling")))
			return true;
	return false;
}

static void print_events(const json_t *groups)
{
	const json_t *g, *e;
	const char *name;
	size_t i;
	bool any = false;

	json_object_foreach((json_t *)groups, name, g)
		json_array_foreach(json_object_get(g, "events"), i, e) {
			char ago[64];
			if (!any)
				printf("\nScaling Events\n");
			any = true;
			printf("  %-10s %-12s %s\n", format_ago(ji(e, "time"), ago, sizeof(ago)), name,
			       js(e, "message"));
		}
}

void job_status_scaling(const char *cmd, const json_t *job, const char *ns)
{
	static const char *const heads[] = { "Group", "Count", "Min", "Max", "Target",
					     "GPU Util", "Autoscaler" };
	struct httpc_response r;
	struct table t;
	const json_t *g;
	const char *name;
	char *path;

	if (!has_scaling(job))
		return;
	path = api_job_path(js(job, "id"), "/scale", ns);
	if (api_call(cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return;
	}
	free(path);
	printf("\nScaling\n");
	table_init(&t, 7, heads);
	json_object_foreach(json_object_get(r.body, "groups"), name, g) {
		const json_t *sc = json_object_get(g, "scaling"), *p = json_object_get(sc, "policy");
		const json_t *util = json_object_get(g, "gpu_utilization");
		bool autoscaled = ji(p, "gpu_utilization") > 0;
		if (!json_is_object(sc))
			continue;
		table_add(&t, name);
		table_addf(&t, "%lld", (long long)ji(g, "count"));
		table_addf(&t, "%lld", (long long)ji(sc, "min"));
		table_addf(&t, "%lld", (long long)ji(sc, "max"));
		if (autoscaled)
			table_addf(&t, "%lld%%", (long long)ji(p, "gpu_utilization"));
		else
			table_add(&t, "-");
		if (json_is_number(util))
			table_addf(&t, "%.1f%%", json_number_value(util));
		else
			table_add(&t, "-");
		table_add(&t, !autoscaled ? "off (no gpu_utilization policy)"
			      : !jb(sc, "enabled") ? "off (enabled = false)"
			      : *js(g, "waiting") ? js(g, "waiting") : "watching");
	}
	table_print(&t, stdout, "");
	table_release(&t);
	print_events(json_object_get(r.body, "groups"));
	httpc_response_release(&r);
}
