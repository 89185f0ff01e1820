/* herd operator keyring list|rotate|reseal|remove: the keys the server
 * seals variables with (docs/operations.md, "Variables: the encryption
 * key"; the API: src/server/routes_keyring.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/xalloc.h"

/* Flags and no positional argument, or exactly one; 0, or the exit code
 * (with *done) after help or a usage error. */
static int parse(const struct command_help *help, int argc, char **argv, char **pos, int want,
		 bool *done)
{
	int n = flags_parse_anywhere(help, argc, argv, pos, want ? want : 1);
	*done = true;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != want)
		return want ? usage_error(argv[0], "expected a key id")
			    : usage_error(argv[0], "takes no arguments");
	*done = false;
	return 0;
}

static void print_unreadable(const json_t *out)
{
	const json_t *bad = json_object_get(out, "unreadable"), *b;
	size_t i;
	json_array_foreach(bad, i, b)
		fprintf(stderr, "variable %s (namespace %s) was not re-sealed: %s\n", js(b, "path"),
			js(b, "namespace"), js(b, "error"));
}

static int keyring_list(int argc, char **argv)
{
	bool as_json = false, done;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { 0 } };
	const struct command_help help = {
		"herd operator keyring list [-json]",
		"Lists the keys the server seals variables with: the active one and those rotations "
		"replaced, with how many variables each still seals.", flags,
	};
	struct httpc_response r;
	const json_t *k;
	size_t i;
	int rc = parse(&help, argc, argv, NULL, 0, &done);

	if (done)
		return rc;
	if (api_call(argv[0], "GET", "/v1/operator/keyring/keys", NULL, &r) < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else {
		printf("%-16s  %-6s  %-9s  %s\n", "KEY ID", "ACTIVE", "VARIABLES", "CREATED");
		json_array_foreach(json_object_get(r.body, "keys"), i, k) {
			char ago[64];
			printf("%-16s  %-6s  %-9lld  %s\n", js(k, "key_id"),
			       jb(k, "active") ? "yes" : "no", (long long)ji(k, "variables"),
			       format_ago(ji(k, "create_time"), ago, sizeof(ago)));
		}
		json_array_foreach(json_object_get(r.body, "missing"), i, k)
			printf("%-16s  %-6s  %-9lld  (not in this server's keyring: those variables "
			       "do not open)\n", js(k, "key_id"), "-", (long long)ji(k, "variables"));
	}
	httpc_response_release(&r);
	return 0;
}

/* rotate and reseal answer alike: {key_id, previous_key_id?, resealed,
 * unreadable}. */
static int keyring_post(int argc, char **argv, const struct command_help *help, const char *path,
			bool *as_json)
{
	struct httpc_response r;
	bool done;
	int rc = parse(help, argc, argv, NULL, 0, &done);
	size_t bad;

	if (done)
		return rc;
	if (api_call(argv[0], "POST", path, NULL, &r) < 0)
		return 1;
	bad = json_array_size(json_object_get(r.body, "unreadable"));
	if (*as_json) {
		api_print_json(r.body);
	} else {
		if (json_object_get(r.body, "previous_key_id"))
			printf("Active key %s (was %s)\n", js(r.body, "key_id"),
			       js(r.body, "previous_key_id"));
		printf("%lld variable%s re-sealed with key %s\n",
		       (long long)ji(r.body, "resealed"), ji(r.body, "resealed") == 1 ? "" : "s",
		       js(r.body, "key_id"));
		print_unreadable(r.body);
	}
	httpc_response_release(&r);
	return bad ? 1 : 0;
}

static int keyring_rotate(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { 0 } };
	const struct command_help help = {
		"herd operator keyring rotate [-json]",
		"Makes a new active key and re-seals every variable with it.  The old key is kept "
		"(in the data dir's variables.keys/) until `herd operator keyring remove`.  With "
		"several servers (PostgreSQL), copy variables.key and variables.keys/ to each of "
		"them afterwards.  Exits 1 when a variable could not be re-sealed.", flags,
	};
	return keyring_post(argc, argv, &help, "/v1/operator/keyring/rotate", &as_json);
}

static int keyring_reseal(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { 0 } };
	const struct command_help help = {
		"herd operator keyring reseal [-json]",
		"Re-seals with the active key every variable still sealed with an older one (after "
		"a rotation that was cut short).  Exits 1 when a variable could not be re-sealed.",
		flags,
	};
	return keyring_post(argc, argv, &help, "/v1/operator/keyring/reseal", &as_json);
}

static int keyring_remove(int argc, char **argv)
{
	const struct command_help help = {
		"herd operator keyring remove KEY_ID",
		"Removes a retired key from the server's keyring and data dir.  Refused for the "
		"active key and for a key that still seals a variable.  Snapshots taken while it "
		"was in use need it to open their variables: keep a copy with them.", NULL,
	};
	struct httpc_response r;
	char *pos[1], *path;
	bool done;
	int rc = parse(&help, argc, argv, pos, 1, &done);

	if (done)
		return rc;
	path = xasprintf("/v1/operator/keyring/key/%s", pos[0]);
	rc = api_call(argv[0], "DELETE", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	printf("key %s removed\n", pos[0]);
	httpc_response_release(&r);
	return 0;
}

int cmd_keyring(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "list", keyring_list, "list the variables' keys" },
		{ "rotate", keyring_rotate, "make a new key and re-seal every variable" },
		{ "reseal", keyring_reseal, "re-seal what an older key still seals" },
		{ "remove", keyring_remove, "remove a retired key" },
		{ 0 },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
