/* cli: the `herd` command line.
 *
 * Each subcommand is a function `int cmd_x(int argc, char **argv)` in its own
 * cmd_x.c, listed in the table of main.c.  argv[0] is the full command name
 * ("herd job validate").  Exit codes: 0 success, 1 failure of the work
 * (a bad job file, a server error), 2 usage error (one line on stderr saying
 * what was wrong, never the whole help). */
#ifndef HERD_CLI_H
#define HERD_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define EXIT_USAGE 2

enum flag_type { FLAG_BOOL, FLAG_STRING, FLAG_INT };

/* One flag.  Flags are written -name or --name; values as "-name v" or
 * "-name=v".  value points at a bool, const char * or int64_t. */
struct flag {
	const char *name;
	enum flag_type type;
	void *value;
	const char *help;
};

struct command_help {
	const char *usage;    /* "herd job validate [options] FILE" */
	const char *summary;  /* one paragraph, no trailing newline */
	const struct flag *flags; /* terminated by { NULL } */
};

/* Parses flags from argv[1..] up to the first non-flag argument (or "--").
 * On success returns the index of the first positional argument.  On
 * -h/--help prints the command's help to stdout and returns -1 (caller exits
 * 0); on a usage error prints one line to stderr and returns -2 (caller exits
 * EXIT_USAGE). */
int flags_parse(const struct command_help *help, int argc, char **argv);

/* Prints one usage-error line: "herd job validate: <msg> (see 'herd job
 * validate --help')"; returns EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Dispatches argv[1] among subcommands (for groups such as `herd job`). */
struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};
int dispatch(const char *group, const struct subcommand *cmds, int argc, char **argv);

int cmd_acl(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_namespace(int argc, char **argv);
int cmd_quota(int argc, char **argv);
int cmd_var(int argc, char **argv);
int cmd_usage(int argc, char **argv);
int cmd_alloc(int argc, char **argv);
/* The task shim (drivers/shim.h) as a hidden subcommand: `herd task-shim`. */
int cmd_task_shim(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_deployment(int argc, char **argv);
int cmd_gpu(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_operator(int argc, char **argv);
int cmd_keyring(int argc, char **argv); /* herd operator keyring */
int cmd_service(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_system(int argc, char **argv); /* herd system gc (cmd_system.c) */
int cmd_version(int argc, char **argv);

#endif
