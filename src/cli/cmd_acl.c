/* herd acl bootstrap | policy apply|list|delete | token create|list|delete|self
 * (docs/teams.md, "ACL"). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "cli/teams_cli.h"
#include "common/httpc.h"
#include "common/xalloc.h"
#include "server/teams.h"

static void print_token(const json_t *t)
{
	printf("Accessor ID  = %s\n", js(t, "accessor_id"));
	if (*js(t, "secret_id"))
		printf("Secret ID    = %s\n", js(t, "secret_id"));
	printf("Name         = %s\n", js(t, "name"));
	printf("Type         = %s\n", js(t, "type"));
	printf("Policies     = ");
	{
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(t, "policies"), i, p)
			printf("%s%s", i ? ", " : "", json_string_value(p));
	}
	printf("\n");
	if (*js(t, "secret_id"))
		printf("The secret is shown this once; the server keeps only its hash.\n");
}

/* A command without arguments that prints the token the server answers. */
static int token_call(int argc, char **argv, const struct command_help *help, const char *method,
		      const char *path)
{
	struct httpc_response r;
	int n = flags_parse_anywhere(help, argc, argv, NULL, 0);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], method, path, NULL, &r) < 0)
		return 1;
	print_token(r.body);
	httpc_response_release(&r);
	return 0;
}

static int acl_bootstrap(int argc, char **argv)
{
	static const struct command_help help = {
		"herd acl bootstrap",
		"Creates the first management token.  Works once per cluster; later calls are refused.", NULL,
	};
	return token_call(argc, argv, &help, "POST", "/v1/acl/bootstrap");
}

static int policy_apply(int argc, char **argv)
{
	const char *desc = "";
	const struct flag flags[] = { { "description", FLAG_STRING, &desc, "what the policy is for" }, { 0 } };
	const struct command_help help = {
		"herd acl policy apply [-description TEXT] NAME FILE",
		"Creates or updates policy NAME from FILE (HCL: namespace \"team-a\" { policy = \"submit\" } "
		"node { policy = \"read\" } quota { policy = \"read\" } agent { policy = \"read\" }; a namespace "
		"block may hold variables { path \"db/*\" { capabilities = [\"read\", \"list\"] } }; or JSON rules).",
		flags,
	};
	char *pos[2], *path;
	json_t *rules;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 2), rc;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 2)
		return usage_error(argv[0], "expected a policy name and a file");
	rules = teams_load_file(argv[0], pos[1], acl_rules_from_hcl);
	if (!rules)
		return 1;
	path = api_name_path("/v1/acl/policy", pos[0]);
	rc = api_apply(argv[0], path,
		       json_pack("{s:{s:s, s:o}}", "policy", "description", desc, "rules", rules),
		       "policy", pos[0]);
	free(path);
	return rc;
}

static void policy_row(struct table *t, const json_t *x)
{
	char *rules = json_dumps(json_object_get(x, "rules"), JSON_COMPACT | JSON_SORT_KEYS);
	table_add(t, js(x, "name"));
	table_add(t, js(x, "description"));
	table_add(t, rules ? rules : "");
	free(rules);
}

static int policy_list(int argc, char **argv)
{
	static const char *const heads[] = { "NAME", "DESCRIPTION", "RULES" };
	return api_list_cmd(argc, argv, "herd acl policy list [-json]", "Lists the ACL policies.",
			    "/v1/acl/policies", 3, heads, policy_row);
}

static int policy_delete(int argc, char **argv)
{
	static const struct command_help help = { "herd acl policy delete NAME", "Deletes it.", NULL };
	return api_delete_cmd(argc, argv, &help, "/v1/acl/policy", "policy", "policy");
}

static int token_create(int argc, char **argv)
{
	const char *name = "", *policies = "", *type = "client";
	const struct flag flags[] = {
		{ "name", FLAG_STRING, &name, "a name for people" },
		{ "policy", FLAG_STRING, &policies, "policies, comma-separated" },
		{ "type", FLAG_STRING, &type, "client (default) or management" },
		{ 0 },
	};
	const struct command_help help = {
		"herd acl token create -name NAME -policy P1[,P2...] [-type client|management]",
		"Creates a token; its secret is printed once.  Agents use a token whose policy has "
		"node { policy = \"write\" }.", flags,
	};
	struct httpc_response r;
	json_t *pols = json_array(), *body;
	char *copy, *save = NULL, *p;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0), rc;
	if (n < 0) {
		json_decref(pols);
		return n == -1 ? 0 : EXIT_USAGE;
	}
	copy = xstrdup(policies);   /* after the flags: -policy sets it */
	for (p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
		if (*p)
			json_array_append_new(pols, json_string(p));
	free(copy);
	body = json_pack("{s:{s:s, s:s, s:o}}", "token", "name", name, "type", type, "policies", pols);
	rc = api_call(argv[0], "POST", "/v1/acl/tokens", body, &r);
	json_decref(body);
	if (rc < 0)
		return 1;
	print_token(r.body);
	httpc_response_release(&r);
	return 0;
}

static void token_row(struct table *t, const json_t *x)
{
	char *pols = json_dumps(json_object_get(x, "policies"), JSON_COMPACT);
	table_add(t, js(x, "accessor_id"));
	table_add(t, js(x, "name"));
	table_add(t, js(x, "type"));
	table_add(t, pols ? pols : "[]");
	free(pols);
}

static int token_list(int argc, char **argv)
{
	static const char *const heads[] = { "ACCESSOR ID", "NAME", "TYPE", "POLICIES" };
	return api_list_cmd(argc, argv, "herd acl token list [-json]",
			    "Lists tokens (never their secrets).", "/v1/acl/tokens", 4, heads, token_row);
}

static int token_delete(int argc, char **argv)
{
	static const struct command_help help = { "herd acl token delete ACCESSOR_ID", "Deletes it.", NULL };
	return api_delete_cmd(argc, argv, &help, "/v1/acl/token", "token", "token");
}

static int token_self(int argc, char **argv)
{
	static const struct command_help help = { "herd acl token self", "Shows the token in HERD_TOKEN.", NULL };
	return token_call(argc, argv, &help, "GET", "/v1/acl/token/self");
}

static int acl_policy(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "apply", policy_apply, "create or update a policy" },
		{ "list", policy_list, "list policies" },
		{ "delete", policy_delete, "delete a policy" },
		{ NULL, NULL, NULL },
	};
	return dispatch("herd acl policy", cmds, argc, argv);
}

static int acl_token(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "create", token_create, "create a token" },
		{ "list", token_list, "list tokens" },
		{ "delete", token_delete, "delete a token" },
		{ "self", token_self, "show the token in use" },
		{ NULL, NULL, NULL },
	};
	return dispatch("herd acl token", cmds, argc, argv);
}

int cmd_acl(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "bootstrap", acl_bootstrap, "create the first management token (once)" },
		{ "policy", acl_policy, "apply, list, delete policies" },
		{ "token", acl_token, "create, list, delete tokens" },
		{ NULL, NULL, NULL },
	};
	return dispatch("herd acl", cmds, argc, argv);
}
