/* herd acl bootstrap | policy apply|list|delete | token create|list|delete|self
 * (docs/teams.md, "ACL"). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "cli/teams_cli.h"
#include "common/diag.h"
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

static int acl_bootstrap(int argc, char **argv)
{
	const struct command_help help = {
		"herd acl bootstrap",
		"Creates the first management token.  Works once per cluster; later calls are refused.", NULL,
	};
	struct httpc_response r;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], "POST", "/v1/acl/bootstrap", NULL, &r) < 0)
		return 1;
	print_token(r.body);
	httpc_response_release(&r);
	return 0;
}

static int policy_apply(int argc, char **argv)
{
	const char *desc = "";
	const struct flag flags[] = { { "description", FLAG_STRING, &desc, "what the policy is for" }, { NULL } };
	const struct command_help help = {
		"herd acl policy apply [-description TEXT] NAME FILE",
		"Creates or updates policy NAME from FILE (HCL: namespace \"team-a\" { policy = \"submit\" } "
		"node { policy = \"read\" } quota { policy = \"read\" } agent { policy = \"read\" }; or JSON rules).",
		flags,
	};
	struct httpc_response r;
	struct diag_list dl;
	char *pos[2], *text, *esc, *path;
	size_t len = 0;
	json_t *rules, *body;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 2), rc;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 2)
		return usage_error(argv[0], "expected a policy name and a file");
	text = teams_read_file(argv[0], pos[1], &len);
	if (!text)
		return 1;
	diag_list_init(&dl);
	{
		const char *p = text;
		while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
			p++;
		if (*p == '{') {
			json_error_t je;
			rules = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
			if (!rules)
				diag_error(&dl, je.line, je.column, "%s", je.text);
		} else {
			rules = acl_rules_from_hcl(text, len, &dl);
		}
	}
	free(text);
	if (!rules) {
		diag_print(&dl, pos[1], stderr);
		diag_list_release(&dl);
		return 1;
	}
	diag_list_release(&dl);
	body = json_pack("{s:{s:s, s:o}}", "policy", "description", desc, "rules", rules);
	esc = httpc_escape(pos[0]);
	path = xasprintf("/v1/acl/policy/%s", esc);
	rc = api_call(argv[0], "POST", path, body, &r);
	free(esc);
	free(path);
	json_decref(body);
	if (rc < 0)
		return 1;
	printf("policy %s applied\n", pos[0]);
	httpc_response_release(&r);
	return 0;
}

static int policy_list(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { NULL } };
	const struct command_help help = { "herd acl policy list [-json]", "Lists the ACL policies.", flags };
	static const char *const heads[] = { "NAME", "DESCRIPTION", "RULES" };
	struct httpc_response r;
	struct table t;
	json_t *x;
	size_t i;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], "GET", "/v1/acl/policies", NULL, &r) < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else {
		table_init(&t, 3, heads);
		json_array_foreach(r.body, i, x) {
			char *rules = json_dumps(json_object_get(x, "rules"), JSON_COMPACT | JSON_SORT_KEYS);
			table_add(&t, js(x, "name"));
			table_add(&t, js(x, "description"));
			table_add(&t, rules ? rules : "");
			free(rules);
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}

/* DELETE prefix/NAME for the one positional. */
static int delete_one(int argc, char **argv, const char *prefix, const char *usage, const char *what)
{
	const struct command_help help = { usage, "Deletes it.", NULL };
	struct httpc_response r;
	char *pos[1], *esc, *path;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one %s", what);
	esc = httpc_escape(pos[0]);
	path = xasprintf("%s/%s", prefix, esc);
	rc = api_call(argv[0], "DELETE", path, NULL, &r);
	free(esc);
	free(path);
	if (rc < 0)
		return 1;
	printf("%s %s deleted\n", what, pos[0]);
	httpc_response_release(&r);
	return 0;
}

static int policy_delete(int argc, char **argv)
{
	return delete_one(argc, argv, "/v1/acl/policy", "herd acl policy delete NAME", "policy");
}

static int token_create(int argc, char **argv)
{
	const char *name = "", *policies = "", *type = "client";
	const struct flag flags[] = {
		{ "name", FLAG_STRING, &name, "a name for people" },
		{ "policy", FLAG_STRING, &policies, "policies, comma-separated" },
		{ "type", FLAG_STRING, &type, "client (default) or management" },
		{ NULL },
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

static int token_list(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { NULL } };
	const struct command_help help = { "herd acl token list [-json]", "Lists tokens (never their secrets).", flags };
	static const char *const heads[] = { "ACCESSOR ID", "NAME", "TYPE", "POLICIES" };
	struct httpc_response r;
	struct table t;
	json_t *x;
	size_t i;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], "GET", "/v1/acl/tokens", NULL, &r) < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else {
		table_init(&t, 4, heads);
		json_array_foreach(r.body, i, x) {
			char *pols = json_dumps(json_object_get(x, "policies"), JSON_COMPACT);
			table_add(&t, js(x, "accessor_id"));
			table_add(&t, js(x, "name"));
			table_add(&t, js(x, "type"));
			table_add(&t, pols ? pols : "[]");
			free(pols);
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}

static int token_delete(int argc, char **argv)
{
	return delete_one(argc, argv, "/v1/acl/token", "herd acl token delete ACCESSOR_ID", "token");
}

static int token_self(int argc, char **argv)
{
	const struct command_help help = { "herd acl token self", "Shows the token in HERD_TOKEN.", NULL };
	struct httpc_response r;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], "GET", "/v1/acl/token/self", NULL, &r) < 0)
		return 1;
	print_token(r.body);
	httpc_response_release(&r);
	return 0;
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
