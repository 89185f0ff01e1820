/* herd usage: GPU-hours per namespace and per job (GET /v1/usage). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

int cmd_usage(int argc, char **argv)
{
	const char *ns = NULL, *since = NULL, *until = NULL;
	bool as_json = false, as_csv = false;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns, "one namespace (default: all the token may read)" },
		{ "since", FLAG_STRING, &since, "count from: unix seconds or YYYY-MM-DDTHH:MM:SSZ" },
		{ "until", FLAG_STRING, &until, "count to (default: now)" },
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "csv", FLAG_BOOL, &as_csv, "print CSV: namespace,job_id,allocations,gpu_hours" },
		{ 0 },
	};
	const struct command_help help = {
		"herd usage [-namespace N] [-since T] [-until T] [-json|-csv]",
		"GPU-hours per namespace and per job, from allocation start and end times; a fraction "
		"of a GPU counts by its share (a 25% share is 0.25 GPU).", flags,
	};
	struct strbuf path = STRBUF_INIT;
	struct httpc_response r;
	json_t *n, *j;
	size_t i, k;
	int rc = flags_parse_anywhere(&help, argc, argv, NULL, 0);
	if (rc < 0)
		return rc == -1 ? 0 : EXIT_USAGE;
	if (as_json && as_csv)
		return usage_error(argv[0], "-json and -csv exclude each other");
	strbuf_adds(&path, "/v1/usage");
	{
		const char *keys[] = { "namespace", "since", "until" }, *vals[] = { ns, since, until };
		char sep = '?';
		for (int q = 0; q < 3; q++) {
			char *e;
			if (!vals[q])
				continue;
			e = httpc_escape(vals[q]);
			strbuf_addf(&path, "%c%s=%s", sep, keys[q], e);
			free(e);
			sep = '&';
		}
	}
	rc = api_call(argv[0], "GET", path.buf, NULL, &r);
	strbuf_release(&path);
	if (rc < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else if (as_csv) {
		printf("namespace,job_id,allocations,gpu_hours\n");
		json_array_foreach(json_object_get(r.body, "namespaces"), i, n)
			json_array_foreach(json_object_get(n, "jobs"), k, j)
				printf("%s,%s,%lld,%.6f\n", js(n, "namespace"), js(j, "job_id"),
				       (long long)ji(j, "allocations"), json_real_value(json_object_get(j, "gpu_hours")));
	} else {
		static const char *const heads[] = { "NAMESPACE", "JOB", "ALLOCATIONS", "GPU-HOURS" };
		struct table t;
		table_init(&t, 4, heads);
		json_array_foreach(json_object_get(r.body, "namespaces"), i, n) {
			json_array_foreach(json_object_get(n, "jobs"), k, j) {
				table_add(&t, js(n, "namespace"));
				table_add(&t, js(j, "job_id"));
				table_addf(&t, "%lld", (long long)ji(j, "allocations"));
				table_addf(&t, "%.3f", json_real_value(json_object_get(j, "gpu_hours")));
			}
			table_add(&t, js(n, "namespace"));
			table_add(&t, "(total)");
			table_add(&t, "");
			table_addf(&t, "%.3f", json_real_value(json_object_get(n, "gpu_hours")));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}
