/* herd system gc: the server's garbage collection now (POST /v1/system/gc;
 * docs/operations.md, "Garbage collection"). */
#include <stdio.h>

#include "cli/cli-api.h"
#include "cli/cli.h"

static int system_gc(int argc, char **argv)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { 0 } };
	const struct command_help help = {
		"herd system gc [-json]",
		"Runs the server's garbage collector now, with its thresholds (job_gc_threshold,\n"
		"eval_gc_threshold): what ended long enough ago is removed, what runs never.\n"
		"Needs a management token when ACL is on.",
		flags,
	};
	struct httpc_response r;
	char *pos[1];
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1);

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n > 0)
		return usage_error(argv[0], "takes no arguments");
	if (api_call(argv[0], "POST", "/v1/system/gc", NULL, &r) < 0)
		return 1;
	if (as_json)
		api_print_json(r.body);
	else
		printf("removed %lld jobs, %lld evaluations, %lld allocations\n",
		       (long long)ji(r.body, "jobs"), (long long)ji(r.body, "evaluations"),
		       (long long)ji(r.body, "allocations"));
	httpc_response_release(&r);
	return 0;
}

int cmd_system(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "gc", system_gc, "run the garbage collector now" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
