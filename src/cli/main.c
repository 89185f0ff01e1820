/* herd: one binary, three parts (server, agent, CLI); see README.md. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#ifndef HERD_VERSION
#define HERD_VERSION "unknown"
#endif

static const struct subcommand commands[] = {
	
	{ "acl", cmd_acl, "bootstrap ACL; manage policies and tokens" },
	{ "agent", cmd_agent, "run an agent: server, client, or both (-dev)" },
	{ "alloc", cmd_alloc, "show, stop, restart or signal allocations" },
	{ "deployment", cmd_deployment, "list, show and fail rolling updates of services" },
	{ "eval", cmd_eval, "list evaluations, show one and why it is where it is" },
	{ "gpu", cmd_gpu, "list this machine's GPUs, or the cluster's" },
	{ "job", cmd_job, "run, plan, stop and inspect jobs; validate job files" },
	{ "namespace", cmd_namespace, "create, list and delete namespaces" },
	{ "node", cmd_node, "show client nodes, drain them" },
	{ "operator", cmd_operator, "back up and restore the server's state" },
	{ "quota", cmd_quota, "apply, list and show GPU quotas" },
	{ "service", cmd_service, "list registered services; show one's instances and health" },
	{ "sim", cmd_sim, "replay a cluster trace through the placement engine" },
	{ "system", cmd_system, "server housekeeping: garbage collection now" },
	{ "usage", cmd_usage, "GPU-hours per namespace and job" },
	{ "var", cmd_var, "put, get, list and purge variables (configuration, secrets)" },
	{ "version", cmd_version, "print herd's version" },
	{ NULL, NULL, NULL },
};

int cmd_version(int argc, char **argv)
{
	static const struct command_help help = {
		"herd version", "Prints the version of this herd binary.", NULL,
	};
	int i = flags_parse(&help, argc, argv);
	if (i < 0)
		return i == -1 ? 0 : EXIT_USAGE;
	if (i < argc)
		return usage_error(argv[0], "unexpected argument '%s'", argv[i]);
	printf("herd %s\n", HERD_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-version") ||
			  !strcmp(argv[1], "-v"))) {
		printf("herd %s\n", HERD_VERSION);
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "-help") || !strcmp(argv[1], "help"))) {
		printf("herd: a GPU farm orchestrator\n\n");
		argv[1] = "--help";
	}
	/* The hidden task supervisor the raw_exec driver starts (shim.h). */
	if (argc >= 2 && !strcmp(argv[1], "task-shim"))
		return cmd_task_shim(argc - 1, argv + 1);
	argv[0] = "herd";
	return dispatch("herd", commands, argc, argv);
}
