/* herd namespace apply|list|delete: the teams' namespaces (docs/teams.md). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/xalloc.h"

static int ns_apply(int argc, char **argv)
{
	const char *desc = NULL, *quota = NULL;
	int64_t weight = 0;
	const struct flag flags[] = {
		{ "description", FLAG_STRING, &desc, "what the namespace is for" },
		{ "quota", FLAG_STRING, &quota, "the quota to attach (\"\" detaches)" },
		{ "weight", FLAG_INT, &weight, "fair-share weight in GPUs (default: the quota's GPU limit)" },
		{ NULL },
	};
	const struct command_help help = {
		"herd namespace apply [-description TEXT] [-quota NAME] [-weight GPUS] NAME",
		"Creates the namespace NAME, or updates it.", flags,
	};
	struct httpc_response r;
	char *pos[1], *path, *esc;
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
	esc = httpc_escape(pos[0]);
	path = xasprintf("/v1/namespace/%s", esc);
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
	{
		json_t *wrapped = json_pack("{s:o}", "namespace", body);
		rc = api_call(argv[0], "POST", path, wrapped, &r);
		json_decref(wrapped);
	}
	free(path);
	free(esc);
	if (rc < 0)
		return 1;
	printf("namespace %s applied\n", pos[0]);
	httpc_response_release(&r);
	return 0;
}

static int ns_list(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { NULL } };
	const struct command_help help = { "herd namespace list [-json]", "Lists the namespaces.", flags };
	struct httpc_response r;
	struct table t;
	static const char *const heads[] = { "NAME", "QUOTA", "WEIGHT", "DESCRIPTION" };
	json_t *x;
	size_t i;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], "GET", "/v1/namespaces", NULL, &r) < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else {
		table_init(&t, 4, heads);
		json_array_foreach(r.body, i, x) {
			table_add(&t, js(x, "name"));
			table_add(&t, *js(x, "quota") ? js(x, "quota") : "-");
			if (json_is_number(json_object_get(x, "weight")))
				table_addf(&t, "%g", json_number_value(json_object_get(x, "weight")));
			else
				table_add(&t, "-");
			table_add(&t, js(x, "description"));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}

static int ns_delete(int argc, char **argv)
{
	const struct command_help help = {
		"herd namespace delete NAME",
		"Deletes a namespace.  Refused while it holds jobs (purge them first).", NULL,
	};
	struct httpc_response r;
	char *pos[1], *path, *esc;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one namespace name");
	esc = httpc_escape(pos[0]);
	path = xasprintf("/v1/namespace/%s", esc);
	rc = api_call(argv[0], "DELETE", path, NULL, &r);
	free(path);
	free(esc);
	if (rc < 0)
		return 1;
	printf("namespace %s deleted\n", pos[0]);
	httpc_response_release(&r);
	return 0;
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
