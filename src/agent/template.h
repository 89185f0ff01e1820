/* template: `template { data | source, destination, perms }` of a task.
 *
 * A small, safe template language in the spirit of consul-template's (so
 * simple Nomad templates carry over); everything else that would reach
 * outside the node (Consul keys, Vault secrets, files, commands) is an
 * error, never an empty string.  Services come from the caller
 * (ctx->services: the agent asks its server).
 *
 *   text                    copied as is
 *   {{ PIPELINE }}          the pipeline's value ("{{" and "}}": other
 *                           delimiters with ctx->left_delim, right_delim)
 *   {{- ... -}}             also trims white space before / after the action
 *   {{/ * comment * /}}     (written without the inner spaces) nothing;
 *                           the comment may span lines
 *
 * A pipeline is `command | command | ...`; each command's value is passed
 * to the next as its last argument.  Arguments are string literals,
 * "double quoted" (escapes \" \\ \n \t) or `raw`, and fields of the
 * current value: `.Address`, `.` (the value itself).  Commands:
 *
 *   env "NAME"       the task's environment variable NAME ("" when unset)
 *   attr "NAME"      the node attribute NAME (attr "kernel.name"); "" when unknown
 *                    (an error with ctx->missing_key_error)
 *   meta "KEY"       the node's meta KEY (client { meta { } }); "" when unknown
 *                    (an error with ctx->missing_key_error)
 *   "literal", .F    the string itself, the field's value
 *   default "X"      X when the piped value is empty, else the value
 *   toUpper, toLower, trimSpace    on the piped value
 *   join "SEP" LIST  the strings of LIST joined by SEP
 *   nomadService "NAME[|FILTER]"   (alias: service) the instances of the
 *                    service NAME in the job's namespace (ctx->services),
 *                    each {Name, Address, Port, ID, AllocID, JobID, NodeID,
 *                    Namespace, Tags, Status}; FILTER: "any" or a comma list
 *                    of passing, warning, critical; default: passing only
 *   nomadServices    (alias: services) the registered services, each
 *                    {Name, Tags}, sorted by name
 *   nomadVar "PATH"  the items of variable PATH of the job's namespace, as
 *                    fields; "" when there is none
 *   nomadVarList ["PREFIX"]  the variables under PREFIX, each {Path,
 *                    Namespace, CreateIndex, ModifyIndex, CreateTime,
 *                    ModifyTime} (never items)
 *
 * Blocks (Go's text/template): {{ range P }}..{{ else }}..{{ end }} runs
 * its body once per element of the list P with `.` set to it, else the
 * else part; {{ with P }} runs its body with `.` set to P when P is not
 * empty; {{ if P }}..{{ else if Q }}..{{ else }}..{{ end }} on emptiness
 * ("", 0, an empty list are empty).  At most TEMPLATE_MAX_DEPTH nested
 * blocks (an `else if` counts as one).  The whole template is parsed
 * (spec/template_parse.h) before anything is evaluated: a mistake in a
 * branch not taken is still an error, and job validation refuses a job
 * whose inline template does not parse.
 *
 * Unsupported functions (key, keyOrDefault, ls, tree, secret, secrets,
 * file, plugin, executeTemplate, ...), variables ($x) and unknown names
 * are errors: "template line 3: key: not supported by herd (no Consul)".
 *
 * Files: destinations are paths relative to the task directory (an
 * absolute path is accepted only when it lies inside the task directory);
 * a ".." component, a path that leaves the task directory or one that
 * passes through a symlink pointing outside it is rejected (openat2
 * RESOLVE_BENEATH).  Files are written to a temporary name in the target
 * directory, fsynced, given their perms and renamed over the destination,
 * so a task never sees half a file; missing parent directories are made
 * (0755).
 *
 * Library code: nothing here prints. */
#ifndef HERD_AGENT_TEMPLATE_H
#define HERD_AGENT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/config.h"
#include "agent/fingerprint.h"
#include "agent/taskenv.h"
#include "common/err.h"
#include "spec/template_parse.h"   /* the parser; TEMPLATE_MAX_DEPTH */

#define TEMPLATE_MAX_OUTPUT (4 << 20)   /* bytes a rendering may produce */

/* Where nomadService, nomadServices and the variables' functions take their
 * data (the agent: its server, through template_watch.c).  name: a
 * service's name, NULL for the list of services, "@var:PATH" for variable
 * PATH (the answer of GET /v1/var/PATH, an object, or null when there is
 * none) or "@vars:PREFIX" (GET /v1/vars?prefix=PREFIX's array).  Returns 0 with *out a borrowed JSON array, valid
 * until the rendering returns: the instances of GET /v1/service/:name, or
 * the entries of GET /v1/services, as the server answered them (the
 * template filters and renames); or -errno with err, which fails the
 * rendering. */
typedef int (*template_services_fn)(void *arg, const char *name, const json_t **out,
				    struct herd_err *err);

struct template_ctx {
	const struct taskenv *env;           /* env "NAME"; may be NULL */
	const struct node_attr *attrs;       /* attr "NAME" */
	size_t nr_attrs;
	const struct agent_kv *meta;         /* meta "KEY" */
	size_t nr_meta;
	template_services_fn services;       /* NULL: nomadService is an error */
	void *services_arg;
	/* the template's options (job_template): delimiters (NULL: "{{"
	 * and "}}"), and whether attr / meta of a key the node lacks fails
	 * the rendering instead of giving "" */
	const char *left_delim, *right_delim;
	bool missing_key_error;
};

/* Renders text into a new string *out (the caller frees).  Returns 0, or
 * -EINVAL with err ("template line N: ...") for a syntax error, an
 * unsupported function or a value of the wrong kind, -E2BIG when the
 * output would exceed TEMPLATE_MAX_OUTPUT, the services callback's error;
 * *out untouched on failure. */
int template_render(const char *text, const struct template_ctx *ctx, char **out,
		    struct herd_err *err);

/* Writes len bytes of data to destination (see above) under task_dir with
 * mode perms (e.g. 0644; only the 07777 bits count).  Returns 0, -EINVAL
 * (bad path) / -EXDEV (escapes the task dir) / -errno with err. */
int template_write_file(const char *task_dir, const char *destination, const void *data,
			size_t len, unsigned perms, struct herd_err *err);

/* template_write_file, the file given to uid and gid (-1: the agent's):
 * -EPERM with err ("only an agent that runs as root ...") when the agent
 * may not. */
int template_write_owned(const char *task_dir, const char *destination, const void *data,
			 size_t len, unsigned perms, long uid, long gid, struct herd_err *err);

/* wait { min max } (pure): a template whose data changed first at `first`
 * and last at `last` (ns, first <= last) renders at the returned time:
 * once the data stayed the same for min, and no later than max after the
 * first change (consul-template's quiescence).  */
int64_t template_wait_due(int64_t first, int64_t last, int64_t min, int64_t max);

/* splay (pure): the delay before a re-rendered template's change_mode is
 * carried out, in [0, splay) ns, from the random number r; 0 when splay
 * is 0. */
int64_t template_splay_delay(int64_t splay, uint64_t r);

/* Reads a template's `source`, confined to task_dir like a destination, at
 * most max bytes, into a new NUL-terminated string *out.  Returns 0 or
 * -errno with err (-EFBIG when larger than max). */
int template_read_source(const char *task_dir, const char *source, size_t max, char **out,
			 struct herd_err *err);

/* Parses a `perms` string ("0644", "644", "0600") into *out.  Returns 0 or
 * -EINVAL. */
int template_parse_perms(const char *s, unsigned *out);

#endif
