/* template_parse: the parser of the task template language (the language
 * is described in agent/template.h; the agent evaluates the tree).
 *
 * It lives in spec, which needs no node data, so that a job's inline
 * templates (`data`) are checked when the job is validated (job_validate.c)
 * with the very parser the agent renders with: a syntax error, an unknown
 * or refused function (key, secret, file, ...) is refused at submission,
 * not when the task starts.
 *
 * The tree points into the text it was parsed from (text and `at`): the
 * text must outlive it.  The caller owns the tree (template_tree_release).
 * Library code: nothing here prints; no global state. */
#ifndef HERD_SPEC_TEMPLATE_PARSE_H
#define HERD_SPEC_TEMPLATE_PARSE_H

#include <stdarg.h>
#include <stddef.h>

#include "common/err.h"
#include "common/strbuf.h"

#define TEMPLATE_MAX_DEPTH 32           /* nested range / with / if blocks */
#define TEMPLATE_MAX_ARGS 4             /* arguments of a command, a piped one included */
#define TEMPLATE_MAX_CMDS 16            /* commands in one pipeline */
#define TEMPLATE_MAX_DELIM 16           /* bytes of a left or right delimiter */

enum tmpl_arg_kind { TMPL_ARG_STRING, TMPL_ARG_FIELD, TMPL_ARG_DOT };

struct tmpl_arg {
	enum tmpl_arg_kind kind;
	struct strbuf s;      /* the string; a field's name (".A.B": "A.B") */
};

/* A function with its arguments, or (name "") one lone argument.  The
 * parser checked the function exists and takes nargs (+ a piped value). */
struct tmpl_cmd {
	const char *at;
	char name[64];
	struct tmpl_arg args[TEMPLATE_MAX_ARGS];
	size_t nargs;
};

struct tmpl_pipe {
	struct tmpl_cmd *cmds;
	size_t n;
};

enum tmpl_node_kind { TMPL_TEXT, TMPL_PIPE, TMPL_IF, TMPL_RANGE, TMPL_WITH };

struct tmpl_list {
	struct tmpl_node **v;
	size_t n, alloc;
};

struct tmpl_node {
	enum tmpl_node_kind kind;
	const char *at;       /* where in the text: its line in errors */
	const char *text;     /* TMPL_TEXT: bytes of the template */
	size_t len;
	struct tmpl_pipe pipe;          /* TMPL_PIPE, and the condition of a block */
	struct tmpl_list body, alt;     /* a block's, and its else part */
};

/* Parses the whole of text into *root (zeroed first).  Returns 0, or
 * -EINVAL with err "template line N: ..." (N counted from 1 in text); on
 * failure *root holds what was parsed: release it either way. */
int template_parse(const char *text, struct tmpl_list *root, struct herd_err *err);

/* template_parse with other delimiters than "{{" and "}}" (left_delimiter,
 * right_delimiter: a text full of "{{", such as a Helm chart, keeps it as
 * text).  NULL or "" is the default one; at most TEMPLATE_MAX_DELIM bytes
 * (else -EINVAL).  Messages name the delimiters in use. */
int template_parse_delims(const char *text, const char *left, const char *right,
			  struct tmpl_list *root, struct herd_err *err);

/* Frees the tree under root and zeroes it. */
void template_tree_release(struct tmpl_list *root);

/* Sets err to "template line N: <fmt ...>" for the position at in text
 * (the parser's and the renderer's errors read alike); returns code. */
int template_errv(struct herd_err *err, const char *text, const char *at, int code,
		  const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

#endif
