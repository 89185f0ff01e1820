/* The parser of the task template language (spec/template_parse.h): the
 * text into a tree the agent evaluates (agent/template_lang.c), and that
 * job validation runs on a job's inline templates.
 *
 * Parsing the whole text first means that a mistake anywhere, in a branch
 * not taken or in a range over an empty list included, is an error before
 * any data is looked at.  Every limit a template controls in its syntax is
 * checked here: block nesting, pipeline length, arguments. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/template_parse.h"

struct tmpl {
	const char *text;
	const char *p;        /* parse position */
	bool trim;            /* the last action ended with "-}}" */
	const char *ld, *rd;  /* the delimiters: "{{" and "}}" unless the template says */
	size_t ldn, rdn;
	struct herd_err *err;
};

/* The line (from 1) of at, a position in text. */
static int template_line(const char *text, const char *at)
{
	int line = 1;
	for (const char *s = text; s < at; s++)
		line += *s == '\n';
	return line;
}

int template_errv(struct herd_err *err, const char *text, const char *at, int code,
		  const char *fmt, va_list ap)
{
	char msg[400];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	return herd_errf(err, code, "template line %d: %s", template_line(text, at), msg);
}

static int fail(const struct tmpl *t, const char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(const struct tmpl *t, const char *at, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	code = template_errv(t->err, t->text, at, code, fmt, ap);
	va_end(ap);
	return code;
}

/* --- the tree --- */

static void pipe_release(struct tmpl_pipe *p)
{
	for (size_t i = 0; i < p->n; i++)
		for (size_t k = 0; k < p->cmds[i].nargs; k++)
			strbuf_release(&p->cmds[i].args[k].s);
	free(p->cmds);
	p->cmds = NULL;
	p->n = 0;
}

static void list_release(struct tmpl_list *l);

static void node_free(struct tmpl_node *n)
{
	if (!n)
		return;
	pipe_release(&n->pipe);
	list_release(&n->body);
	list_release(&n->alt);
	free(n);
}

static void list_release(struct tmpl_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		node_free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static struct tmpl_node *list_add(struct tmpl_list *l, enum tmpl_node_kind kind, const char *at)
{
	struct tmpl_node *n = xcalloc(1, sizeof(*n));
	n->kind = kind;
	n->at = at;
	ALLOC_GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = n;
	return n;
}

/* --- parsing --- */

/* consul-template functions that need Consul, Vault, the agent's files or
 * commands: named in the error so a Nomad user knows why. */
static const char *unsupported_reason(const char *fn)
{
	static const char *const consul[] = { "key", "keyOrDefault", "keyExists", "ls", "safeLs",
		"tree", "safeTree", "connect", "caRoots", "caLeaf", "node", "nodes",
		"nomadVarExists", NULL };
	static const char *const vault[] = { "secret", "secrets", "pkiCert", NULL };
	static const char *const host[] = { "file", "plugin", "executeTemplate", "writeToFile",
		"sockaddr", NULL };
	for (size_t i = 0; consul[i]; i++)
		if (!strcmp(fn, consul[i]))
			return "not supported by herd (no Consul)";
	for (size_t i = 0; vault[i]; i++)
		if (!strcmp(fn, vault[i]))
			return "not supported by herd (no Vault)";
	for (size_t i = 0; host[i]; i++)
		if (!strcmp(fn, host[i]))
			return "not allowed: it would reach outside the task";
	return NULL;
}

static const struct fn {
	const char *name;
	size_t nargs;
} fns[] = {
	{ "env", 1 }, { "attr", 1 }, { "meta", 1 }, { "default", 2 }, { "toUpper", 1 },
	{ "toLower", 1 }, { "trimSpace", 1 }, { "join", 2 }, { "nomadService", 1 },
	{ "service", 1 }, { "nomadServices", 0 }, { "services", 0 }, { "nomadVar", 1 },
	{ "nomadVarList", 1 }, /* or none: every variable */
};

static const struct fn *fn_find(const char *name)
{
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strcmp(fns[i].name, name))
			return &fns[i];
	return NULL;
}

static void skip_space(struct tmpl *t)
{
	while (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r')
		t->p++;
}

static bool at_action_end(const struct tmpl *t)
{
	return !strncmp(t->p, t->rd, t->rdn) || (*t->p == '-' && !strncmp(t->p + 1, t->rd, t->rdn));
}

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* A string literal at t->p into sb.  Returns 0 or -EINVAL. */
static int parse_string(struct tmpl *t, struct strbuf *sb)
{
	const char *start = t->p;
	char q = *t->p++;
	for (;;) {
		char c = *t->p;
		if (!c || (q == '"' && c == '\n'))
			return fail(t, start, -EINVAL, "unterminated string");
		t->p++;
		if (c == q)
			return 0;
		if (q == '"' && c == '\\') {
			char e = *t->p++;
			switch (e) {
			case '"': case '\\': strbuf_addch(sb, e); break;
			case 'n': strbuf_addch(sb, '\n'); break;
			case 't': strbuf_addch(sb, '\t'); break;
			default:
				return fail(t, t->p - 2, -EINVAL, "unknown escape \\%c", e ? e : '0');
			}
			continue;
		}
		strbuf_addch(sb, c);
	}
}

/* A field (".", ".Name", ".A.B") at t->p into a. */
static int parse_field(struct tmpl *t, struct tmpl_arg *a)
{
	const char *start = t->p;
	t->p++;
	if (!is_ident(*t->p)) {
		a->kind = TMPL_ARG_DOT;
		return 0;
	}
	a->kind = TMPL_ARG_FIELD;
	for (;;) {
		while (is_ident(*t->p))
			strbuf_addch(&a->s, *t->p++);
		if (*t->p != '.' || !is_ident(t->p[1]))
			break;
		strbuf_addch(&a->s, *t->p++);
	}
	if (a->s.len > 64)
		return fail(t, start, -EINVAL, "field name too long");
	return 0;
}

/* One argument (a string or a field) into a; 1 when there is none. */
static int parse_arg(struct tmpl *t, struct tmpl_arg *a)
{
	strbuf_init(&a->s, 0);
	if (*t->p == '"' || *t->p == '`') {
		a->kind = TMPL_ARG_STRING;
		return parse_string(t, &a->s);
	}
	if (*t->p == '.')
		return parse_field(t, a);
	return 1;
}

/* One command of a pipeline into c; piped: a value comes from the left. */
static int parse_cmd(struct tmpl *t, struct tmpl_cmd *c, bool piped)
{
	size_t nl = 0;
	int rc;

	skip_space(t);
	c->at = t->p;
	if (*t->p == '$')
		return fail(t, t->p, -EINVAL, "variables ($) are not supported by herd");
	if ((rc = parse_arg(t, &c->args[0])) <= 0) {
		c->nargs = 1;
		if (rc == 0 && piped)
			return fail(t, c->at, -EINVAL, "a %s cannot take a piped value",
				    c->args[0].kind == TMPL_ARG_STRING ? "string" : "field");
		return rc;
	}
	strbuf_release(&c->args[0].s);
	while (is_ident(*t->p)) {
		if (nl + 1 >= sizeof(c->name))
			return fail(t, c->at, -EINVAL, "function name too long");
		c->name[nl++] = *t->p++;
	}
	c->name[nl] = '\0';
	if (!nl)
		return fail(t, c->at, -EINVAL, "expected a function, a string or a field, found '%.10s'",
			    t->p);
	const char *why = unsupported_reason(c->name);
	if (why)
		return fail(t, c->at, -EINVAL, "%s: %s", c->name, why);
	const struct fn *f = fn_find(c->name);
	if (!f)
		return fail(t, c->at, -EINVAL, "unknown function %s (herd knows env, attr, meta, "
			    "default, toUpper, toLower, trimSpace, join, nomadService, service, "
			    "nomadServices, services, nomadVar, nomadVarList)", c->name);
	for (;;) {
		skip_space(t);
		if (c->nargs == TEMPLATE_MAX_ARGS - 1 && (*t->p == '"' || *t->p == '`' || *t->p == '.'))
			return fail(t, t->p, -EINVAL, "%s: too many arguments", c->name);
		if ((rc = parse_arg(t, &c->args[c->nargs])) < 0) {
			strbuf_release(&c->args[c->nargs].s);
			return rc;
		}
		if (rc == 1) {
			strbuf_release(&c->args[c->nargs].s);
			break;
		}
		c->nargs++;
	}
	if (*t->p && *t->p != '|' && !at_action_end(t))
		return fail(t, t->p, -EINVAL, "%s: arguments must be string literals or fields "
			    "(.Name)", c->name);
	if (c->nargs + piped != f->nargs &&
	    !(c->nargs + piped == 0 && !strcmp(c->name, "nomadVarList")))
		return fail(t, c->at, -EINVAL, "%s takes %s%zu argument%s, got %zu", c->name,
			    strcmp(c->name, "nomadVarList") ? "" : "0 or ", f->nargs,
			    f->nargs == 1 ? "" : "s", c->nargs + piped);
	return 0;
}

/* A pipeline up to the end of the action ("}}" or "-}}": the right
 * delimiter), into p. */
static int parse_pipe(struct tmpl *t, struct tmpl_pipe *p)
{
	const char *start = t->p;
	int rc;

	skip_space(t);
	if (at_action_end(t) || !*t->p)
		return fail(t, start, -EINVAL, *t->p ? "empty action" : "unterminated action (no '%s')",
			    t->rd);
	p->cmds = xcalloc(TEMPLATE_MAX_CMDS, sizeof(*p->cmds));
	for (;;) {
		if (p->n == TEMPLATE_MAX_CMDS)
			return fail(t, t->p, -EINVAL, "more than %d commands in a pipeline", TEMPLATE_MAX_CMDS);
		rc = parse_cmd(t, &p->cmds[p->n], p->n > 0);
		p->n++;   /* released with the pipe even when it failed */
		if (rc < 0)
			return rc;
		skip_space(t);
		if (*t->p == '|') {
			t->p++;
			continue;
		}
		if (!at_action_end(t))
			return fail(t, t->p, -EINVAL, *t->p ? "expected '|' or '%s'"
						   : "unterminated action (no '%s')", t->rd);
		return 0;
	}
}

/* Ends the action at t->p ("}}" or "-}}"). */
static int close_action(struct tmpl *t, const char *open)
{
	skip_space(t);
	if (!*t->p)
		return fail(t, open, -EINVAL, "unterminated action (no '%s')", t->rd);
	if (!at_action_end(t))
		return fail(t, open, -EINVAL, "expected '%s', found '%.10s'", t->rd, t->p);
	/* "-" then the delimiter, unless the delimiter itself starts so */
	t->trim = strncmp(t->p, t->rd, t->rdn) != 0;
	t->p += t->rdn + t->trim;
	return 0;
}

/* Whether the word w (then a space or the action's end) is at t->p; moves
 * past it when it is. */
static bool keyword(struct tmpl *t, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(t->p, w, n) || is_ident(t->p[n]) || t->p[n] == '.')
		return false;
	t->p += n;
	return true;
}

enum term { T_EOF, T_END, T_ELSE, T_ELSE_IF };

static int parse_list(struct tmpl *t, struct tmpl_list *l, int depth, enum term *term,
		      const char **term_at);

/* A block whose keyword was just read: its condition, body, else part. */
static int parse_block(struct tmpl *t, struct tmpl_list *l, enum tmpl_node_kind kind, const char *open,
		       int depth)
{
	static const char *const names[] = { [TMPL_IF] = "if", [TMPL_RANGE] = "range", [TMPL_WITH] = "with" };
	struct tmpl_node *n = list_add(l, kind, open);
	const char *term_at = NULL;
	enum term term;
	int rc;

	if (depth >= TEMPLATE_MAX_DEPTH)
		return fail(t, open, -EINVAL, "blocks nested deeper than %d", TEMPLATE_MAX_DEPTH);
	if ((rc = parse_pipe(t, &n->pipe)) < 0 || (rc = close_action(t, open)) < 0)
		return rc;
	if ((rc = parse_list(t, &n->body, depth + 1, &term, &term_at)) < 0)
		return rc;
	if (term == T_ELSE_IF)
		return parse_block(t, &n->alt, TMPL_IF, term_at, depth + 1);
	if (term == T_ELSE) {
		if ((rc = parse_list(t, &n->alt, depth + 1, &term, &term_at)) < 0)
			return rc;
		if (term == T_ELSE || term == T_ELSE_IF)
			return fail(t, term_at, -EINVAL, "a second else in one %s", names[kind]);
	}
	if (term == T_EOF)
		return fail(t, open, -EINVAL, "%s without %s end %s", names[kind], t->ld, t->rd);
	return 0;
}

/* One action after "{{" (and its "-"): into l, or the list's end. */
static int parse_action(struct tmpl *t, struct tmpl_list *l, int depth, enum term *term)
{
	const char *open = t->p;
	struct tmpl_node *n;
	int rc;

	skip_space(t);
	if (!strncmp(t->p, "/*", 2)) {
		const char *end = strstr(t->p + 2, "*/");
		if (!end)
			return fail(t, open, -EINVAL, "unterminated comment");
		t->p = end + 2;
		skip_space(t);
		if (!at_action_end(t))
			return fail(t, open, -EINVAL, "a comment must end the action");
		return close_action(t, open);
	}
	if (keyword(t, "end"))
		return *term = T_END, close_action(t, open);
	if (keyword(t, "else")) {
		skip_space(t);
		if (keyword(t, "if")) {
			*term = T_ELSE_IF;
			return 0;   /* the caller parses the if */
		}
		*term = T_ELSE;
		return close_action(t, open);
	}
	if (keyword(t, "if"))
		return parse_block(t, l, TMPL_IF, open, depth);
	if (keyword(t, "range"))
		return parse_block(t, l, TMPL_RANGE, open, depth);
	if (keyword(t, "with"))
		return parse_block(t, l, TMPL_WITH, open, depth);
	n = list_add(l, TMPL_PIPE, open);
	if ((rc = parse_pipe(t, &n->pipe)) < 0)
		return rc;
	return close_action(t, open);
}

/* Text and actions into l, up to the end of the text or an {{ end }},
 * {{ else }} or {{ else if }} (*term says which; *term_at where). */
static int parse_list(struct tmpl *t, struct tmpl_list *l, int depth, enum term *term,
		      const char **term_at)
{
	*term = T_EOF;
	while (*t->p) {
		const char *open = strstr(t->p, t->ld);
		const char *end = open ? open : t->p + strlen(t->p);
		const char *s = t->p, *e = end;
		if (t->trim)
			while (s < end && isspace((unsigned char)*s))
				s++;
		t->trim = false;
		const char *after = open ? open + t->ldn : NULL;
		if (after && after[0] == '-' && (after[1] == ' ' || after[1] == '\t' || after[1] == '\n'))
			while (e > s && isspace((unsigned char)e[-1]))
				e--;
		if (e > s) {
			struct tmpl_node *n = list_add(l, TMPL_TEXT, s);
			n->text = s;
			n->len = (size_t)(e - s);
		}
		if (!open) {
			t->p = end;
			break;
		}
		t->p = after;
		if (*t->p == '-' && (t->p[1] == ' ' || t->p[1] == '\t' || t->p[1] == '\n'))
			t->p++;
		*term_at = open;
		int rc = parse_action(t, l, depth, term);
		if (rc < 0)
			return rc;
		if (*term != T_EOF) {
			if (depth == 0)
				return fail(t, open, -EINVAL, "%s %s %s with no block to close", t->ld,
					    *term == T_END ? "end" : "else", t->rd);
			return 0;
		}
	}
	return 0;
}

int template_parse_delims(const char *text, const char *left, const char *right,
			  struct tmpl_list *root, struct herd_err *err)
{
	struct tmpl t = { .text = text, .p = text, .err = err };
	const char *term_at = NULL;
	enum term term;

	memset(root, 0, sizeof(*root));
	/* Go's rule: an empty delimiter is the default one */
	t.ld = left && *left ? left : "{{";
	t.rd = right && *right ? right : "}}";
	t.ldn = strlen(t.ld);
	t.rdn = strlen(t.rd);
	if (t.ldn > TEMPLATE_MAX_DELIM || t.rdn > TEMPLATE_MAX_DELIM)
		return herd_errf(err, -EINVAL, "template: a delimiter longer than %d bytes",
				 TEMPLATE_MAX_DELIM);
	return parse_list(&t, root, 0, &term, &term_at);
}

int template_parse(const char *text, struct tmpl_list *root, struct herd_err *err)
{
	return template_parse_delims(text, NULL, NULL, root, err);
}

void template_tree_release(struct tmpl_list *root)
{
	list_release(root);
}
