/* cli-api: what the commands that talk to a server share (cmd_job remote
 * parts, cmd_alloc with its logs and ops, cmd_node, cmd_gpu status, the
 * team commands): calling the API with the error printed once, reading
 * fields of JSON answers, aligned tables, list/apply/delete commands. */
#ifndef HERD_CLI_API_H
#define HERD_CLI_API_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/httpc.h"

struct job;

/* One request to $HERD_ADDR.  On failure prints "cmd: <message>" to stderr
 * and returns the negative code (resp released); on success resp holds the
 * answer for the caller to release. */
int api_call(const char *cmd, const char *method, const char *path, const json_t *body,
	     struct httpc_response *resp);
int api_get_blocking(const char *cmd, const char *path, uint64_t index, long wait_ms,
		     struct httpc_response *resp);

/* The namespace a command works in: ns_flag (-namespace) when given and
 * not empty, else $HERD_NAMESPACE when set and not empty, else "default".
 * Never NULL; points into its argument or the environment. */
const char *cli_namespace(const char *ns_flag);
/* The help line of every -namespace flag. */
#define CLI_NAMESPACE_HELP "namespace (default $HERD_NAMESPACE, else \"default\")"
/* path with namespace=<ns, escaped> added to its query ('?' or '&');
 * caller frees. */
char *api_ns_path(const char *path, const char *ns);

/* Parses flags that may come before, between or after positional
 * arguments.  Stores up to maxpos positionals in pos and returns their
 * count; -1 after --help (exit 0), -2 on a usage error (printed; exit 2),
 * also when more than maxpos positionals are given. */
struct command_help;
int flags_parse_anywhere(const struct command_help *help, int argc, char **argv, char **pos,
			 int maxpos);

/* A GET of url (complete, http:// or https://) whose answer is not JSON:
 * a 200's body goes to sink as it arrives (sink returns len, or less to
 * stop the transfer); HERD_TOKEN goes as X-Herd-Token; TLS as tls says.
 * Any other answer or a failed transfer is printed as "cmd: where: ...".
 * Returns 0 (all of it taken), 1 (printed why) or 2 (the sink stopped it;
 * nothing printed).  In get_stream.c. */
struct tls_client;
typedef size_t cli_sink_fn(const char *p, size_t len, void *arg);
int cli_get_stream(const char *cmd, const char *where, const char *url,
		   const struct tls_client *tls, cli_sink_fn *sink, void *arg);

/* Prints j as indented JSON with a newline on stdout. */
void api_print_json(const json_t *j);

/* Field readers that never fail: "" / 0 / false when absent. */
const char *js(const json_t *o, const char *key) __attribute__((returns_nonnull));
int64_t ji(const json_t *o, const char *key);
bool jb(const json_t *o, const char *key);

/* The first 8 characters of an id, into buf. */
const char *short_id(const char *id, char buf[16]) __attribute__((returns_nonnull));

/* "12s ago", "3m ago", "2026-11-21 08:10:00" for a unix-ns time; "-" for 0. */
const char *format_ago(int64_t unix_ns, char *buf, size_t size);

/* Finds the one object in the array answer of GET list_path whose "id"
 * starts with prefix.  Prints why and returns NULL when none or several
 * match; else returns the full id (caller frees). */
char *api_resolve_prefix(const char *cmd, const char *list_path, const char *what,
			 const char *prefix);

/* /v1/job/<id, escaped><suffix> in namespace ns; caller frees.  In
 * cmd_job_remote.c, as the next. */
char *api_job_path(const char *id, const char *suffix, const char *ns);
/* -namespace (ns_flag) for a command that changes something: one
 * namespace into *ns; "*" is a usage error (printed; returns EXIT_USAGE),
 * else 0. */
int api_write_namespace(const char *cmd, const char *ns_flag, const char **ns);

/* The namespace of job id for a read given "*": the one namespace (of
 * those the token may read) that holds a job with that id.  Prints why and
 * returns NULL when none or several do; else the namespace (caller
 * frees).  For any other ns returns a copy of ns. */
char *api_job_namespace(const char *cmd, const char *id, const char *ns);

/* Reads path ("-": stdin) into out until its end or until out holds more
 * than limit bytes (then limit + 1: the caller tells a file too large
 * from one at the limit).  0, or -errno.  In cmd_job.c. */
struct strbuf;
int cli_read_file(const char *path, size_t limit, struct strbuf *out);

/* Loads a job file the way `herd job validate` does (diagnostics printed);
 * NULL when it has errors.  In cmd_job.c. */
struct job *job_load_file(const char *cmd, const char *path);

/* The remote job commands (cmd_job_remote.c), dispatched by cmd_job.
 * Each takes -namespace (cli_namespace). */
int job_run_cmd(int argc, char **argv);
int alloc_logs_cmd(int argc, char **argv);   /* cmd_alloc_logs.c */
/* cmd_alloc_logs.c: the client API address ("host:port") of the node that
 * runs alloc (a GET /v1/allocation/:id answer): its node_http_addr, else
 * the node's http_addr (GET /v1/node/:id).  Returns 0 with *addr (caller
 * frees), or 1 after printing why ("cmd: ...") to stderr. */
int alloc_node_addr(const char *cmd, const json_t *alloc, char **addr);
int job_plan_cmd(int argc, char **argv);
int job_status_cmd(int argc, char **argv);
int job_stop_cmd(int argc, char **argv);
/* `herd job inspect ID`: the stored job of namespace ns as JSON. */
int job_inspect_remote(const char *cmd, const char *id, const char *ns);

/* Follows evaluation eval_id with blocking queries until it is no longer
 * pending.  Returns the evaluation (new reference) or NULL after printing
 * why.  In cmd_job_remote.c. */
json_t *api_follow_eval(const char *cmd, const char *eval_id);
/* What `herd job run` does once a registration answered eval_id: follows
 * the evaluation, then the job's allocations until want of them run (or
 * completed, for batch), printing each change.  Returns the exit status: 1
 * when something could not be placed, the evaluation failed or an
 * allocation failed.  In cmd_job_remote.c. */
int job_follow(const char *cmd, const char *eval_id, const char *job_id, const char *ns,
	       bool batch, int64_t want);
/* job_follow's want for a system or sysbatch job: one allocation per node,
 * as many as the job has of its current version (those of an older
 * version that ended, lost with their node, are history). */
#define JOB_FOLLOW_PER_NODE (-1)
/* herd job history | revert | scale (cmd_job_versions.c). */
int job_history_cmd(int argc, char **argv);
/* cmd_deployment.c: prints deployment d under title (job status's "Latest
 * Deployment"); follows the deployment of job version `version` until it
 * ends, printing its progress: 0 successful, 1 failed, cancelled or an
 * error, 2 when the version made no deployment. */
void deployment_print(const json_t *d, const char *title);
int deployment_follow(const char *cmd, const char *job_id, const char *ns, int64_t version);
/* herd job promote (cmd_deployment.c): promotes the job's latest deployment. */
int job_promote_cmd(int argc, char **argv);
int job_revert_cmd(int argc, char **argv);
int job_scale_cmd(int argc, char **argv);
/* Periodic jobs (cmd_job_periodic.c): herd job periodic force; what job
 * run prints for a registered periodic job (its first launch, computed
 * here from its validated crons) and what job status adds for a periodic
 * parent (stored job as GET /v1/job/:id answers it): its schedule, next
 * launch and latest children. */
int job_periodic_cmd(int argc, char **argv);
/* The latest children of a periodic or parameterized parent in namespace
 * ns, as a table (in cmd_job_periodic.c). */
void job_print_children(const char *cmd, const char *parent, const char *ns);
/* herd job dispatch (cmd_job_dispatch.c); what job status adds for a
 * parameterized parent (its block and latest children). */
int job_dispatch_cmd(int argc, char **argv);
void job_status_parameterized(const char *cmd, const json_t *job);
void job_run_periodic_note(const struct job *job);
void job_status_periodic(const char *cmd, const json_t *job);
/* herd job status: the Scaling section of a job with scaling blocks
 * (cmd_job_scaling.c); prints nothing for other jobs. */
void job_status_scaling(const char *cmd, const json_t *job, const char *ns);
/* herd alloc stop | restart | signal (cmd_alloc_ops.c). */
int alloc_stop_cmd(int argc, char **argv);
int alloc_restart_cmd(int argc, char **argv);
int alloc_signal_cmd(int argc, char **argv);
/* The allocation prefix names (in ns_flag's allocations) and where its
 * node's client API is: 0 with *id (the full id), *alloc (GET
 * /v1/allocation/:id's answer, a new reference) and *addr ("host:port"),
 * all the caller's; or 1 after printing why.  In cmd_alloc_ops.c. */
int alloc_locate(const char *cmd, const char *ns_flag, const char *prefix, char **id,
		 json_t **alloc, char **addr);
/* POSTs body to the client API of the node that runs allocation prefix
 * (resolved in ns_flag's allocations) at /v1/client/allocation/<id><op>.
 * Returns 0 with *id (the full id, the caller's) and *resp, or 1 after
 * printing why.  In cmd_alloc_ops.c. */
int alloc_client_post(const char *cmd, const char *ns_flag, const char *prefix, const char *op,
		      const json_t *body, char **id, struct httpc_response *resp);
/* Follows the replacement of stopped allocation old_id (old_in: the
 * allocation as read before the stop) until it runs (0) or fails or cannot
 * be placed yet (1, after saying so).  In cmd_alloc_ops.c. */
int alloc_follow_replacement(const char *cmd, const char *old_id, const json_t *old_in);
/* herd job restart (cmd_job_restart.c). */
int job_restart_cmd(int argc, char **argv);
/* herd alloc exec (cmd_alloc_exec.c). */
int alloc_exec_cmd(int argc, char **argv);
/* The exec session itself, once the allocation id (full), its node's
 * client API addr and the task are known: runs argv (NULL-terminated), or
 * with action the task's action of that name (resolved by the node),
 * passing stdin (in) and output through, on a pty with tty.  Returns the
 * command's exit status, or 1 after printing why it could not run.  Used
 * by herd job action (cmd_job_action.c). */
int alloc_exec_stream(const char *cmd, const char *id, const char *addr, const char *task,
		      const char *action, char *const *argv, bool tty, bool in);
/* herd job action (cmd_job_action.c). */
int job_action_cmd(int argc, char **argv);
/* herd alloc fs (cmd_alloc_fs.c). */
int alloc_fs_cmd(int argc, char **argv);

/* herd alloc status's "Services" table: the allocation's registered
 * services and their health (cmd_service.c); nothing when it has none. */
void alloc_print_services(const json_t *alloc);

/* Prints the failed placements of an evaluation or plan ({"<group>":
 * {"explanation","nodes_evaluated","missing"}}) to f. */
void print_failed_placements(FILE *f, const json_t *failed);

/* An aligned text table: columns as wide as their widest cell. */
struct table {
	size_t ncols;
	char **cells;          /* row-major, heading first */
	size_t ncells, alloc;
};
/* headings: ncols strings. */
void table_init(struct table *t, size_t ncols, const char *const *headings);
void table_add(struct table *t, const char *cell);
void table_addf(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints with two spaces between columns and indent before each row. */
void table_print(const struct table *t, FILE *f, const char *indent);
void table_release(struct table *t);

/* prefix/<name, escaped for a path>; caller frees. */
char *api_name_path(const char *prefix, const char *name);
/* POSTs body (taken) to path and prints "<what> <name> applied"; the
 * error printed as api_call does.  Returns the exit status (0 or 1). */
int api_apply(const char *cmd, const char *path, json_t *body, const char *what, const char *name);
/* A `herd ... list [-json]` command: GETs path and prints the array answer
 * as JSON with -json, else as a table with ncols headings where row adds
 * the cells of one element.  Returns the exit status. */
int api_list_cmd(int argc, char **argv, const char *usage, const char *summary, const char *path,
		 size_t ncols, const char *const *heads, void (*row)(struct table *t, const json_t *x));
/* A `herd ... delete NAME` command (help has no flags): DELETEs
 * prefix/NAME and prints "<what> NAME deleted"; a missing NAME is a usage
 * error "expected one <arg>".  Returns the exit status. */
int api_delete_cmd(int argc, char **argv, const struct command_help *help, const char *prefix,
		   const char *what, const char *arg);

#endif
