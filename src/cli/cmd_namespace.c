/* herd namespace apply|list|delete: the teams' namespaces (docs/teams.md). */
#include <stdlib.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"

static int ns_apply(int argc, char **argv)
{
	const char *desc = NULL, *quota = NULL;
	int64_t weight = 0;
	const struct flag flags[] = {
		{ "description", FLAG_STRING, &desc, "what the namespace is for" },
		{ "quota", FLAG_STRING, &quota, "the quota to attach (\"\" detaches)" },
		{ "weight", FLAG_INT, &weight, "fair-share weight in GPUs (default: the quota's GPU limit)" },
		{ 0 },
	};
	const struct command_help help = {
		"herd namespace apply [-description TEXT] [-quota NAME] [-weight GPUS] NAME",
		"Creates the namespace NAME, or updates it.", flags,
	};
	char *pos[1], *path;
	json_t *body;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one namespace name");
	body = json_pack("{s:s}", "name", pos[0]);
	if (desc)
		json_object_set_new(body, "description", json_string(desc));
	if (quota)
		json_object_set_new(body, "quota", json_string(quota));
	if (weight > 0)
		json_object_set_new(body, "weight", json_integer(weight));
	/* keep the fields not given: read the namespace first */
	path = api_name_path("/v1/namespace", pos[0]);
	{
		struct httpc c;
		struct httpc_response old;
		struct herd_err err = { 0 };
		httpc_init(&c, NULL);
		if (httpc_request(&c, "GET", path, NULL, &old, &err) == 0) {
			if (!desc)
				json_object_set(body, "description", json_object_get(old.body, "description"));
			if (!quota)
				json_object_set(body, "quota", json_object_get(old.body, "quota"));
			if (weight <= 0 && json_object_get(old.body, "weight"))
				json_object_set(body, "weight", json_object_get(old.body, "weight"));
		}
		httpc_response_release(&old);
		httpc_release(&c);
	}
	rc = api_apply(argv[0], path, json_pack("{s:o}", "namespace", body), "namespace", pos[0]);
	free(path);
	return rc;
}

static void ns_row(struct table *t, const json_t *x)
{
	table_add(t, js(x, "name"));
	table_add(t, *js(x, "quota") ? js(x, "quota") : "-");
	if (json_is_number(json_object_get(x, "weight")))
		table_addf(t, "%g", json_number_value(json_object_get(x, "weight")));
	else
		table_add(t, "-");
	table_add(t, js(x, "description"));
}

static int ns_list(int argc, char **argv)
{
	static const char *const heads[] = { "NAME", "QUOTA", "WEIGHT", "DESCRIPTION" };
	return api_list_cmd(argc, argv, "herd namespace list [-json]", "Lists the namespaces.",
			    "/v1/namespaces", 4, heads, ns_row);
}

static int ns_delete(int argc, char **argv)
{
	static const struct command_help help = {
		"herd namespace delete NAME",
		"Deletes a namespace.  Refused while it holds jobs or variables (purge them first).", NULL,
	};
	return api_delete_cmd(argc, argv, &help, "/v1/namespace", "namespace", "namespace name");
}

int cmd_namespace(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "apply", ns_apply, "create or update a namespace" },
		{ "list", ns_list, "list namespaces" },
		{ "delete", ns_delete, "delete an empty namespace" },
		{ NULL, NULL, NULL },
	};
	return dispatch("herd namespace", cmds, argc, argv);
}
