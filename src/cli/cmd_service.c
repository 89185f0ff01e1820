/* herd service list | info: the service registry (GET /v1/services,
 * GET /v1/service/:name; docs/api.md, "Services").  Also what herd alloc
 * status shows of an allocation's services (alloc_print_services). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

/* "2 passing, 1 critical" of a service's checks; "-" without any. */
static void add_checks_cell(struct table *t, const json_t *checks)
{
	size_t i, n[3] = { 0, 0, 0 };
	static const char *const names[] = { "passing", "warning", "critical" };
	const json_t *c;
	char buf[96] = "";

	json_array_foreach(checks, i, c)
		for (size_t k = 0; k < 3; k++)
			if (!strcmp(js(c, "status"), names[k]))
				n[k]++;
	for (size_t k = 0; k < 3; k++)
		if (n[k])
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%zu %s",
				 *buf ? ", " : "", n[k], names[k]);
	table_add(t, *buf ? buf : "-");
}

/* The worst status of a service's checks, as the server computes it. */
static const char *health_of(const json_t *svc)
{
	const char *worst = "passing";
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(svc, "checks"), i, c) {
		if (!strcmp(js(c, "status"), "critical"))
			return "critical";
		if (!strcmp(js(c, "status"), "warning"))
			worst = "warning";
	}
	return worst;
}

static void add_tags_cell(struct table *t, const json_t *tags)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	const json_t *v;
	json_array_foreach(tags, i, v)
		strbuf_addf(&sb, "%s%s", i ? "," : "", json_string_value(v) ?: "");
	table_add(t, sb.len ? sb.buf : "-");
	strbuf_release(&sb);
}

void alloc_print_services(const json_t *alloc)
{
	const json_t *svcs = json_object_get(alloc, "services"), *s;
	static const char *const heads[] = { "SERVICE", "TASK", "ADDRESS", "HEALTH", "CHECKS" };
	struct table t;
	size_t i;

	if (!json_array_size(svcs))
		return;
	printf("\nServices\n");
	table_init(&t, 5, heads);
	json_array_foreach(svcs, i, s) {
		table_add(&t, js(s, "name"));
		table_add(&t, js(s, "task"));
		table_addf(&t, "%s:%lld", js(s, "address"), (long long)ji(s, "port"));
		table_add(&t, health_of(s));
		add_checks_cell(&t, json_object_get(s, "checks"));
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

static int service_list_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd service list [options]",
		"Lists the services registered by running allocations: how many instances\n"
		"each has and how many of them pass their health checks.",
		flags,
	};
	static const char *const heads[] = { "NAMESPACE", "NAME", "TAGS", "INSTANCES", "HEALTHY" };
	struct httpc_response r;
	struct table t;
	const json_t *x;
	size_t i;
	char *path;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	path = api_ns_path("/v1/services", cli_namespace(ns_flag));
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
		httpc_response_release(&r);
		return 0;
	}
	if (!json_array_size(r.body)) {
		printf("No services\n");
		httpc_response_release(&r);
		return 0;
	}
	table_init(&t, 5, heads);
	json_array_foreach(r.body, i, x) {
		table_add(&t, js(x, "namespace"));
		table_add(&t, js(x, "name"));
		add_tags_cell(&t, json_object_get(x, "tags"));
		table_addf(&t, "%lld", (long long)ji(x, "instances"));
		table_addf(&t, "%lld", (long long)ji(x, "healthy"));
	}
	table_print(&t, stdout, "");
	table_release(&t);
	httpc_response_release(&r);
	return 0;
}

static void print_instances(const json_t *list)
{
	static const char *const heads[] = { "ALLOC", "JOB", "NODE", "ADDRESS", "TAGS", "HEALTH" };
	static const char *const cheads[] = { "ALLOC", "CHECK", "TYPE", "STATUS", "CHECKED",
					      "OUTPUT" };
	struct table t, ct;
	const json_t *x, *c;
	size_t i, k;
	char b1[16], b2[16], ago[64];

	table_init(&t, 6, heads);
	table_init(&ct, 6, cheads);
	json_array_foreach(list, i, x) {
		table_add(&t, short_id(js(x, "alloc_id"), b1));
		table_add(&t, js(x, "job_id"));
		table_add(&t, short_id(js(x, "node_id"), b2));
		table_addf(&t, "%s:%lld", js(x, "address"), (long long)ji(x, "port"));
		add_tags_cell(&t, json_object_get(x, "tags"));
		table_add(&t, js(x, "health"));
		json_array_foreach(json_object_get(x, "checks"), k, c) {
			table_add(&ct, b1);
			table_add(&ct, js(c, "name"));
			table_add(&ct, js(c, "type"));
			table_add(&ct, js(c, "status"));
			table_add(&ct, format_ago(ji(c, "time"), ago, sizeof(ago)));
			table_add(&ct, *js(c, "output") ? js(c, "output") : "-");
		}
	}
	table_print(&t, stdout, "");
	if (ct.ncells > ct.ncols) {
		printf("\nChecks\n");
		table_print(&ct, stdout, "");
	}
	table_release(&t);
	table_release(&ct);
}

static int service_info_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd service info [options] NAME",
		"Shows where service NAME runs: each instance's allocation, node, address\n"
		"and port, and the status of its health checks with their last output.\n"
		"Exits 1 when no instance is registered.",
		flags,
	};
	struct httpc_response r;
	char *pos[1], *path, *name_path;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing service name");
	name_path = api_name_path("/v1/service", pos[0]);
	path = api_ns_path(name_path, cli_namespace(ns_flag));
	free(name_path);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (as_json)
		api_print_json(r.body);
	else if (json_array_size(r.body))
		print_instances(r.body);
	if (!json_array_size(r.body))
		fprintf(stderr, "%s: no instance of service \"%s\" is registered\n", argv[0], pos[0]);
	rc = json_array_size(r.body) ? 0 : 1;
	httpc_response_release(&r);
	return rc;
}

int cmd_service(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "list", service_list_cmd, "list registered services and their health" },
		{ "info", service_info_cmd, "show a service's instances and checks" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
