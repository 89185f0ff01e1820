/* hcl: a parser for the HCL syntax of job files (Nomad style), and for JSON
 * documents, into a tree that remembers where everything was written.
 *
 * Owned here: the lexer and parser; the tree types below.  The meaning of
 * blocks and attributes (which blocks a job has) belongs to job.h, not here.
 *
 * Syntax accepted (docs/jobspec.md, "Syntax"): a body of attributes
 * `name = expr` and blocks `type ["label" ["label"]] { body }` (zero to two
 * labels, quoted or bare identifiers); expressions are strings with escapes
 * (\n \t \r \" \\ \uNNNN \UNNNNNNNN), heredocs `<<EOF` and indented `<<-EOF`,
 * numbers, true/false/null, lists `[a, b,]`, objects `{ k = v, "k2": v }`;
 * comments `#`, `//` and slash-star blocks.  `${...}` and `%{...}` inside
 * strings are kept verbatim for run-time interpolation, `$${` and `%%{` too (the literal
 * escapes are resolved by the interpolator, never here).  Anything else
 * (operators, function calls, variables) is an error that says so.
 *
 * JSON: hcl_parse_json reads one JSON value (RFC 8259) into the same
 * expression tree, so JSON job files get line:col positions as well.
 *
 * Details: a number may start with "-" (`weight = -50`); integers that do
 * not fit int64 become reals.  A heredoc's value ends with the newline
 * before its closing marker, which may be indented; `<<-` removes the
 * indentation (spaces and tabs, counted in bytes) common to all lines that
 * are not blank.  Heredocs are raw: no escapes.  Strings and heredocs must be
 * valid UTF-8.  A block's "{" must be on the line of its type.
 *
 * Errors: every error in the input is reported into a diag_list (positions
 * 1-based; col counts bytes) and parsing goes on where it can; when any error
 * was reported the result is NULL.  A syntax error skips the rest of its
 * attribute or block header; past DIAG_MAX errors the parse stops.  Limits
 * below give errors, never crashes or unbounded work. */
#ifndef HERD_SPEC_HCL_H
#define HERD_SPEC_HCL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

#define HCL_MAX_INPUT (8u << 20)     /* bytes in one file */
#define HCL_MAX_DEPTH 64             /* nested blocks, lists and objects */
#define HCL_MAX_STRING (1u << 20)    /* bytes in one string or heredoc */
#define HCL_MAX_ITEMS 100000         /* elements of one list, object or body */
/* Also: a number literal has at most 256 characters; interpolations nest at
 * most HCL_MAX_DEPTH deep inside one string. */

struct hcl_pos {
	int line, col;
};

enum hcl_expr_kind {
	HCL_STRING,
	HCL_NUMBER,
	HCL_BOOL,
	HCL_NULL,
	HCL_LIST,
	HCL_OBJECT,
};

struct hcl_expr;

struct hcl_object_item {
	char *key;              /* NUL-terminated; keys with NUL are rejected */
	struct hcl_pos key_pos;
	struct hcl_expr *value;
	/* false from the readers; the job model's view of an HCL body
	 * (spec.h) sets it on members written as blocks, for messages */
	bool from_block;
};

struct hcl_expr {
	enum hcl_expr_kind kind;
	struct hcl_pos pos;
	union {
		struct {
			char *s;      /* NUL-terminated, escapes resolved except $${ %%{ */
			size_t len;   /* counts NUL bytes (\u0000) inside, unlike strlen */
			bool heredoc;
		} str;
		struct {
			double value;
			bool is_int;  /* written without fraction/exponent and fits int64 */
			int64_t i;    /* valid when is_int */
		} num;
		bool boolean;
		struct {
			struct hcl_expr **v;
			size_t n;
			/* false from the readers; set on lists the job model's
			 * view builds, whose room is the next power of two */
			bool growable;
		} list;
		struct {
			struct hcl_object_item *v; /* in source order; duplicate keys are errors */
			size_t n;
		} object;
	} u;
};

struct hcl_body;

struct hcl_attribute {
	char *name;
	struct hcl_pos pos;     /* of the name */
	struct hcl_expr *value;
};

struct hcl_block {
	char *type;
	struct hcl_pos pos;     /* of the type word */
	char *labels[2];        /* NULL when absent */
	struct hcl_pos label_pos[2];
	int nlabels;
	struct hcl_body *body;
};

enum hcl_item_kind { HCL_ITEM_ATTRIBUTE, HCL_ITEM_BLOCK };

struct hcl_item {
	enum hcl_item_kind kind;
	union {
		struct hcl_attribute attr;
		struct hcl_block block;
	} u;
};

struct hcl_body {
	struct hcl_item *items;  /* in source order */
	size_t n;
	struct hcl_pos open_pos; /* of "{" (1:1 for a file's top level) */
};

/* Parses HCL text (need not be NUL-terminated).  Returns a body the caller
 * frees with hcl_body_free, or NULL when errors were added to diags.
 * An attribute set twice in one body is an error. */
struct hcl_body *hcl_parse(const char *text, size_t len, struct diag_list *diags);

/* Parses one JSON value.  Returns an expression freed with hcl_expr_free,
 * or NULL when errors were added to diags. */
struct hcl_expr *hcl_parse_json(const char *text, size_t len, struct diag_list *diags);

/* Free a whole tree returned by hcl_parse or hcl_parse_json (all of its
 * nodes and strings live in one arena owned by the root); accept NULL.
 * Never pass a part of a tree: parts are not freed on their own. */
void hcl_body_free(struct hcl_body *body);
void hcl_expr_free(struct hcl_expr *expr);

/* Looks for the attribute `name` directly in body; NULL when absent. */
const struct hcl_attribute *hcl_body_attr(const struct hcl_body *body, const char *name);

/* A name for an expression kind in messages: "string", "number", ... */
const char *hcl_kind_name(enum hcl_expr_kind kind);

#endif
