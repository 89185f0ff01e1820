/* herd var put|get|list|purge: variables (docs/api.md, "Variables"). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/strbuf.h"
#include "server/vars.h"

#define MAX_ARGS 512

/* /v1/var/<path>[?cas=N] in namespace ns (path checked first: its
 * characters need no escaping); NULL after printing why. */
static char *var_path(const char *cmd, const char *path, const char *ns, int64_t cas)
{
	struct herd_err err = { 0 };
	struct strbuf sb = STRBUF_INIT;
	char *out;
	if (vars_check_path(path, &err)) {
		fprintf(stderr, "%s: %s\n", cmd, err.msg);
		return NULL;
	}
	strbuf_addf(&sb, "/v1/var/%s", path);
	if (cas >= 0)
		strbuf_addf(&sb, "?cas=%lld", (long long)cas);
	out = api_ns_path(sb.buf, ns);
	strbuf_release(&sb);
	return out;
}

/* Items from a JSON file (a variable as `herd var get -json` prints it, or
 * a plain {"key": "value"} object) into items; 1 after printing why. */
static int items_from_file(const char *cmd, const char *file, json_t *items, const char **path)
{
	struct strbuf sb = STRBUF_INIT;
	json_error_t jerr;
	json_t *doc, *from;
	int rc = cli_read_file(file, VARS_MAX_SIZE * 4, &sb);
	if (rc < 0) {
		fprintf(stderr, "%s: reading %s: %s\n", cmd, file, strerror(-rc));
		strbuf_release(&sb);
		return 1;
	}
	doc = json_loadb(sb.buf, sb.len, 0, &jerr);
	strbuf_release(&sb);
	if (!json_is_object(doc)) {
		fprintf(stderr, "%s: %s: not a JSON object%s%s\n", cmd, file, doc ? "" : ": ",
			doc ? "" : jerr.text);
		json_decref(doc);
		return 1;
	}
	from = json_object_get(doc, "items");
	json_object_update(items, json_is_object(from) ? from : doc);
	if (!*path && json_is_string(json_object_get(doc, "path")))
		*path = strdup(json_string_value(json_object_get(doc, "path")));
	json_decref(doc);
	return 0;
}

/* key=value, key=@file (the file's bytes) into items; 1 after printing why. */
static int item_arg(const char *cmd, const char *arg, json_t *items)
{
	const char *eq = strchr(arg, '=');
	char *key;
	if (!eq || eq == arg) {
		fprintf(stderr, "%s: \"%s\": an item is KEY=VALUE or KEY=@FILE\n", cmd, arg);
		return 1;
	}
	key = strndup(arg, (size_t)(eq - arg));
	if (eq[1] == '@') {
		struct strbuf sb = STRBUF_INIT;
		int rc = cli_read_file(eq + 2, VARS_MAX_SIZE, &sb);
		if (rc < 0 || sb.len > VARS_MAX_SIZE) {
			fprintf(stderr, "%s: reading %s: %s\n", cmd, eq + 2,
				rc < 0 ? strerror(-rc) : "larger than a variable may be");
			strbuf_release(&sb);
			free(key);
			return 1;
		}
		json_object_set_new(items, key, json_stringn(sb.buf, sb.len));
		strbuf_release(&sb);
	} else {
		json_object_set_new(items, key, json_string(eq + 1));
	}
	free(key);
	return 0;
}

static int var_put(int argc, char **argv)
{
	const char *ns_flag = NULL, *ns, *in = NULL, *path = NULL;
	int64_t cas = -1;
	bool as_json = false;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ "cas", FLAG_INT, &cas, "write only if the variable is at this modify index (0: only if absent)" },
		{ "in", FLAG_STRING, &in, "\"json\": the items come from FILE (\"-\": stdin) too" },
		{ "json", FLAG_BOOL, &as_json, "print the variable written as JSON" },
		{ 0 },
	};
	const struct command_help help = {
		"herd var put [-namespace NS] [-cas N] [-json] PATH KEY=VALUE|KEY=@FILE ...\n"
		"       herd var put [-namespace NS] [-cas N] [-json] -in json FILE [PATH] [KEY=VALUE ...]",
		"Writes the variable PATH with the items given, replacing all its items.  KEY=@FILE "
		"reads the value from FILE.  Items given as arguments win over those of -in's file.",
		flags,
	};
	char *pos[MAX_ARGS], *url, *owned = NULL;
	json_t *items = json_object(), *body;
	struct httpc_response resp;
	int n = flags_parse_anywhere(&help, argc, argv, pos, MAX_ARGS), i = 0, rc = 1;
	if (n < 0) {
		json_decref(items);
		return n == -1 ? 0 : EXIT_USAGE;
	}
	if (in && strcmp(in, "json")) {
		json_decref(items);
		return usage_error(argv[0], "-in takes json");
	}
	if (api_write_namespace(argv[0], ns_flag, &ns)) {
		json_decref(items);
		return EXIT_USAGE;
	}
	if (in) {
		if (n < 1) {
			json_decref(items);
			return usage_error(argv[0], "expected the FILE of -in json");
		}
		if (items_from_file(argv[0], pos[i++], items, &path))
			goto out;
		owned = (char *)path;
	}
	if (i < n && !strchr(pos[i], '='))
		path = pos[i++];
	if (!path) {
		json_decref(items);
		free(owned);
		return usage_error(argv[0], "expected a variable PATH");
	}
	for (; i < n; i++)
		if (item_arg(argv[0], pos[i], items))
			goto out;
	if (!(url = var_path(argv[0], path, ns, cas)))
		goto out;
	body = json_pack("{s:O}", "items", items);
	if (api_call(argv[0], "PUT", url, body, &resp) == 0) {
		if (as_json)
			api_print_json(resp.body);
		else
			printf("Variable %s written (namespace %s, modify index %lld)\n", path, ns,
			       (long long)ji(resp.body, "modify_index"));
		httpc_response_release(&resp);
		rc = 0;
	}
	json_decref(body);
	free(url);
out:
	json_decref(items);
	free(owned);
	return rc;
}

static void print_var(const json_t *v)
{
	char buf[64];
	const char *k;
	json_t *x;
	printf("%-13s= %s\n", "Namespace", js(v, "namespace"));
	printf("%-13s= %s\n", "Path", js(v, "path"));
	printf("%-13s= %s\n", "Create Time", format_ago(ji(v, "create_time"), buf, sizeof(buf)));
	printf("%-13s= %s\n", "Modify Time", format_ago(ji(v, "modify_time"), buf, sizeof(buf)));
	printf("%-13s= %lld\n", "Modify Index", (long long)ji(v, "modify_index"));
	printf("\nItems\n");
	json_object_foreach((json_t *)json_object_get(v, "items"), k, x)
		printf("%s = %s\n", k, json_string_value(x));
}

static int var_get(int argc, char **argv)
{
	const char *ns_flag = NULL, *ns, *item = NULL;
	bool as_json = false;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ "item", FLAG_STRING, &item, "print only this item's value" },
		{ "json", FLAG_BOOL, &as_json, "print the variable as JSON" },
		{ 0 },
	};
	const struct command_help help = {
		"herd var get [-namespace NS] [-item KEY] [-json] PATH",
		"Shows the variable PATH with its items.", flags,
	};
	char *pos[1], *url;
	struct httpc_response resp;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc = 1;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one variable PATH");
	if (api_write_namespace(argv[0], ns_flag, &ns))
		return EXIT_USAGE;
	if (!(url = var_path(argv[0], pos[0], ns, -1)))
		return 1;
	if (api_call(argv[0], "GET", url, NULL, &resp) == 0) {
		json_t *v = json_object_get(json_object_get(resp.body, "items"), item ? item : "");
		rc = 0;
		if (item && !json_is_string(v)) {
			fprintf(stderr, "%s: variable %s has no item %s\n", argv[0], pos[0], item);
			rc = 1;
		} else if (item) {
			printf("%s\n", json_string_value(v));
		} else if (as_json) {
			api_print_json(resp.body);
		} else {
			print_var(resp.body);
		}
		httpc_response_release(&resp);
	}
	free(url);
	return rc;
}

static int var_list(int argc, char **argv)
{
	static const char *const heads[] = { "NAMESPACE", "PATH", "MODIFY INDEX", "MODIFIED" };
	const char *ns_flag = NULL;
	bool as_json = false;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP " (\"*\": all)" },
		{ "json", FLAG_BOOL, &as_json, "print the list as JSON" },
		{ 0 },
	};
	const struct command_help help = {
		"herd var list [-namespace NS] [-json] [PREFIX]",
		"Lists the variables whose path starts with PREFIX (metadata only: never the items).",
		flags,
	};
	char *pos[1], *url, *q;
	struct httpc_response resp;
	struct strbuf sb = STRBUF_INIT;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1);
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n == 1 && !vars_prefix_valid(pos[0]))
		return usage_error(argv[0], "a PREFIX has the characters of a path (A-Z a-z 0-9 _ . - ~ /)");
	strbuf_addf(&sb, "/v1/vars?prefix=%s", n == 1 ? pos[0] : "");
	q = api_ns_path(sb.buf, cli_namespace(ns_flag));
	strbuf_release(&sb);
	url = q;
	if (api_call(argv[0], "GET", url, NULL, &resp)) {
		free(url);
		return 1;
	}
	free(url);
	if (as_json) {
		api_print_json(resp.body);
	} else {
		struct table t;
		size_t i;
		json_t *x;
		char buf[64];
		table_init(&t, 4, heads);
		json_array_foreach(resp.body, i, x) {
			table_add(&t, js(x, "namespace"));
			table_add(&t, js(x, "path"));
			table_addf(&t, "%lld", (long long)ji(x, "modify_index"));
			table_add(&t, format_ago(ji(x, "modify_time"), buf, sizeof(buf)));
		}
		if (json_array_size(resp.body))
			table_print(&t, stdout, "");
		else
			printf("No variables\n");
		table_release(&t);
	}
	httpc_response_release(&resp);
	return 0;
}

static int var_purge(int argc, char **argv)
{
	const char *ns_flag = NULL, *ns;
	int64_t cas = -1;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ "cas", FLAG_INT, &cas, "delete only if the variable is at this modify index" },
		{ 0 },
	};
	const struct command_help help = {
		"herd var purge [-namespace NS] [-cas N] PATH",
		"Deletes the variable PATH and its items.", flags,
	};
	char *pos[1], *url;
	struct httpc_response resp;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc = 1;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one variable PATH");
	if (api_write_namespace(argv[0], ns_flag, &ns))
		return EXIT_USAGE;
	if (!(url = var_path(argv[0], pos[0], ns, cas)))
		return 1;
	if (api_call(argv[0], "DELETE", url, NULL, &resp) == 0) {
		printf("Variable %s purged (namespace %s)\n", pos[0], ns);
		httpc_response_release(&resp);
		rc = 0;
	}
	free(url);
	return rc;
}

int cmd_var(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "put", var_put, "write a variable's items" },
		{ "get", var_get, "show a variable, or one of its items" },
		{ "list", var_list, "list variables (never their items)" },
		{ "purge", var_purge, "delete a variable" },
		{ NULL, NULL, NULL },
	};
	return dispatch("herd var", cmds, argc, argv);
}
