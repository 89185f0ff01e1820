/* The task template language (template.h): the text is parsed into a tree
 * first, then evaluated.  Values are JSON (strings, numbers, lists and
 * objects of service data), each a new reference owned by its holder.
 *
 * Parsing first means that a mistake anywhere, in a branch not taken or in
 * a range over an empty list included, is an error on the first rendering,
 * not when the data one day reaches it.  Every limit a template controls is
 * checked: output size, block nesting, pipeline length, arguments. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/template.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define MAX_ARGS 4
#define MAX_CMDS 16           /* commands in one pipeline */
#define MAX_NAME 128          /* a service name */

enum arg_kind { ARG_STRING, ARG_FIELD, ARG_DOT };

struct arg {
	enum arg_kind kind;
	struct strbuf s;      /* the string; a field's name (".A.B": "A.B") */
};

/* A function with its arguments, or (name "") one lone argument. */
struct cmd {
	const char *at;
	char name[64];
	struct arg args[MAX_ARGS];
	size_t nargs;
};

struct pipe {
	struct cmd *cmds;
	size_t n;
};

enum node_kind { N_TEXT, N_PIPE, N_IF, N_RANGE, N_WITH };

struct node_list {
	struct node **v;
	size_t n, alloc;
};

struct node {
	enum node_kind kind;
	const char *at;       /* where in the text: its line in errors */
	const char *text;     /* N_TEXT: bytes of the template */
	size_t len;
	struct pipe pipe;     /* N_PIPE, and the condition of a block */
	struct node_list body, alt;   /* a block's, and its else part */
};

struct tmpl {
	const char *text;
	const char *p;        /* parse position */
	bool trim;            /* the last action ended with "-}}" */
	const struct template_ctx *ctx;
	struct herd_err *err;
	struct strbuf *out;
};

static int line_of(const struct tmpl *t, const char *at)
{
	int line = 1;
	for (const char *s = t->text; s < at; s++)
		line += *s == '\n';
	return line;
}

static int fail(const struct tmpl *t, const char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(const struct tmpl *t, const char *at, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return herd_errf(t->err, code, "template line %d: %s", line_of(t, at), msg);
}

/* --- the tree --- */

static void pipe_release(struct pipe *p)
{
	for (size_t i = 0; i < p->n; i++)
		for (size_t k = 0; k < p->cmds[i].nargs; k++)
			strbuf_release(&p->cmds[i].args[k].s);
	free(p->cmds);
	p->cmds = NULL;
	p->n = 0;
}

static void list_release(struct node_list *l);

static void node_free(struct node *n)
{
	if (!n)
		return;
	pipe_release(&n->pipe);
	list_release(&n->body);
	list_release(&n->alt);
	free(n);
}

static void list_release(struct node_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		node_free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static struct node *list_add(struct node_list *l, enum node_kind kind, const char *at)
{
	struct node *n = xcalloc(1, sizeof(*n));
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
		"tree", "safeTree", "connect", "caRoots", "caLeaf", "node", "nodes", "nomadVar",
		"nomadVarList", "nomadVarExists", NULL };
	static const char *const vault[] = { "secret", "secrets", "pkiCert", NULL };
	static const char *const host[] = { "file", "plugin", "executeTemplate", "writeToFile",
		"sockaddr", NULL };
	for (size_t i = 0; consul[i]; i++)
		if (!strcmp(fn, consul[i]))
			return "not supported by herd (no Consul or Nomad variables)";
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
	{ "service", 1 }, { "nomadServices", 0 }, { "services", 0 },
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
	return !strncmp(t->p, "}}", 2) || !strncmp(t->p, "-}}", 3);
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
static int parse_field(struct tmpl *t, struct arg *a)
{
	const char *start = t->p;
	t->p++;
	if (!is_ident(*t->p)) {
		a->kind = ARG_DOT;
		return 0;
	}
	a->kind = ARG_FIELD;
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
static int parse_arg(struct tmpl *t, struct arg *a)
{
	strbuf_init(&a->s, 0);
	if (*t->p == '"' || *t->p == '`') {
		a->kind = ARG_STRING;
		return parse_string(t, &a->s);
	}
	if (*t->p == '.')
		return parse_field(t, a);
	return 1;
}

/* One command of a pipeline into c; piped: a value comes from the left. */
static int parse_cmd(struct tmpl *t, struct cmd *c, bool piped)
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
				    c->args[0].kind == ARG_STRING ? "string" : "field");
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
			    "nomadServices, services)", c->name);
	for (;;) {
		skip_space(t);
		if (c->nargs == MAX_ARGS - 1 && (*t->p == '"' || *t->p == '`' || *t->p == '.'))
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
	if (c->nargs + piped != f->nargs)
		return fail(t, c->at, -EINVAL, "%s takes %zu argument%s, got %zu", c->name, f->nargs,
			    f->nargs == 1 ? "" : "s", c->nargs + piped);
	return 0;
}

/* A pipeline up to the end of the action ("}}" or "-}}"), into p. */
static int parse_pipe(struct tmpl *t, struct pipe *p)
{
	const char *start = t->p;
	int rc;

	skip_space(t);
	if (at_action_end(t) || !*t->p)
		return fail(t, start, -EINVAL, *t->p ? "empty action" : "unterminated action (no '}}')");
	p->cmds = xcalloc(MAX_CMDS, sizeof(*p->cmds));
	for (;;) {
		if (p->n == MAX_CMDS)
			return fail(t, t->p, -EINVAL, "more than %d commands in a pipeline", MAX_CMDS);
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
			return fail(t, t->p, -EINVAL, *t->p ? "expected '|' or '}}'"
						   : "unterminated action (no '}}')");
		return 0;
	}
}

/* Ends the action at t->p ("}}" or "-}}"). */
static int close_action(struct tmpl *t, const char *open)
{
	skip_space(t);
	if (!at_action_end(t))
		return fail(t, open, -EINVAL, *t->p ? "expected '}}', found '%.10s'"
					      : "unterminated action (no '}}')", t->p);
	t->trim = *t->p == '-';
	t->p += t->trim ? 3 : 2;
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

static int parse_list(struct tmpl *t, struct node_list *l, int depth, enum term *term,
		      const char **term_at);

/* A block whose keyword was just read: its condition, body, else part. */
static int parse_block(struct tmpl *t, struct node_list *l, enum node_kind kind, const char *open,
		       int depth)
{
	static const char *const names[] = { [N_IF] = "if", [N_RANGE] = "range", [N_WITH] = "with" };
	struct node *n = list_add(l, kind, open);
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
		return parse_block(t, &n->alt, N_IF, term_at, depth + 1);
	if (term == T_ELSE) {
		if ((rc = parse_list(t, &n->alt, depth + 1, &term, &term_at)) < 0)
			return rc;
		if (term == T_ELSE || term == T_ELSE_IF)
			return fail(t, term_at, -EINVAL, "a second else in one %s", names[kind]);
	}
	if (term == T_EOF)
		return fail(t, open, -EINVAL, "%s without {{ end }}", names[kind]);
	return 0;
}

/* One action after "{{" (and its "-"): into l, or the list's end. */
static int parse_action(struct tmpl *t, struct node_list *l, int depth, enum term *term)
{
	const char *open = t->p;
	struct node *n;
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
		return parse_block(t, l, N_IF, open, depth);
	if (keyword(t, "range"))
		return parse_block(t, l, N_RANGE, open, depth);
	if (keyword(t, "with"))
		return parse_block(t, l, N_WITH, open, depth);
	n = list_add(l, N_PIPE, open);
	if ((rc = parse_pipe(t, &n->pipe)) < 0)
		return rc;
	return close_action(t, open);
}

/* Text and actions into l, up to the end of the text or an {{ end }},
 * {{ else }} or {{ else if }} (*term says which; *term_at where). */
static int parse_list(struct tmpl *t, struct node_list *l, int depth, enum term *term,
		      const char **term_at)
{
	*term = T_EOF;
	while (*t->p) {
		const char *open = strstr(t->p, "{{");
		const char *end = open ? open : t->p + strlen(t->p);
		const char *s = t->p, *e = end;
		if (t->trim)
			while (s < end && isspace((unsigned char)*s))
				s++;
		t->trim = false;
		if (open && open[2] == '-' && (open[3] == ' ' || open[3] == '\t' || open[3] == '\n'))
			while (e > s && isspace((unsigned char)e[-1]))
				e--;
		if (e > s) {
			struct node *n = list_add(l, N_TEXT, s);
			n->text = s;
			n->len = (size_t)(e - s);
		}
		if (!open) {
			t->p = end;
			break;
		}
		t->p = open + 2;
		if (*t->p == '-' && (t->p[1] == ' ' || t->p[1] == '\t' || t->p[1] == '\n'))
			t->p++;
		*term_at = open;
		int rc = parse_action(t, l, depth, term);
		if (rc < 0)
			return rc;
		if (*term != T_EOF) {
			if (depth == 0)
				return fail(t, open, -EINVAL, "{{ %s }} with no block to close",
					    *term == T_END ? "end" : "else");
			return 0;
		}
	}
	return 0;
}

/* --- values --- */

static json_t *str_value(const char *s, size_t len)
{
	return json_stringn_nocheck(s, len);
}

static const char *kind_name(const json_t *v)
{
	if (json_is_string(v))
		return "a string";
	if (json_is_array(v))
		return "a list";
	if (json_is_object(v))
		return "an object";
	if (json_is_number(v))
		return "a number";
	return "no value";
}

static bool truthy(const json_t *v)
{
	if (json_is_string(v))
		return json_string_length(v) > 0;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	if (json_is_object(v))
		return json_object_size(v) > 0;
	if (json_is_integer(v))
		return json_integer_value(v) != 0;
	return json_is_true(v);
}

/* A scalar's text into sb; false for a list or an object. */
static bool scalar_text(const json_t *v, struct strbuf *sb)
{
	if (json_is_string(v))
		strbuf_add(sb, json_string_value(v), json_string_length(v));
	else if (json_is_integer(v))
		strbuf_addf(sb, "%lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		strbuf_adds(sb, json_is_true(v) ? "true" : "false");
	else if (!json_is_null(v) && v)
		return false;
	return true;
}

/* What {{ X }} writes: a scalar, or a list of scalars as Go writes it
 * ("[a b]"). */
static int print_value(struct tmpl *t, const char *at, const json_t *v)
{
	size_t i;
	json_t *e;

	if (scalar_text(v, t->out))
		return 0;
	if (json_is_array(v)) {
		strbuf_addch(t->out, '[');
		json_array_foreach(v, i, e) {
			if (i)
				strbuf_addch(t->out, ' ');
			if (!scalar_text(e, t->out))
				return fail(t, at, -EINVAL, "cannot write a list of objects; use range");
		}
		strbuf_addch(t->out, ']');
		return 0;
	}
	return fail(t, at, -EINVAL, "cannot write %s; use a field such as .Address", kind_name(v));
}

/* The field path of a on dot: a new reference. */
static int field_value(struct tmpl *t, const char *at, const struct arg *a, const json_t *dot,
		       json_t **out)
{
	const json_t *v = dot;
	const char *p = a->s.buf;

	if (a->kind == ARG_DOT) {
		*out = json_incref((json_t *)dot);
		if (!dot)
			*out = str_value("", 0);
		return 0;
	}
	while (*p) {
		const char *dotp = strchr(p, '.');
		size_t n = dotp ? (size_t)(dotp - p) : strlen(p);
		char key[80];
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (!json_is_object(v))
			return fail(t, at, -EINVAL, ".%s: %s has no fields (fields are of the items "
				    "of range or with over nomadService)", a->s.buf,
				    v ? kind_name(v) : "the top level");
		v = json_object_get(v, key);
		if (!v)
			return fail(t, at, -EINVAL, ".%s: no field %s here", a->s.buf, key);
		p += n + (dotp ? 1 : 0);
	}
	*out = json_incref((json_t *)v);
	return 0;
}

static int arg_value(struct tmpl *t, const struct cmd *c, const struct arg *a, const json_t *dot,
		     json_t **out)
{
	if (a->kind == ARG_STRING) {
		*out = str_value(a->s.buf, a->s.len);
		return 0;
	}
	return field_value(t, c->at, a, dot, out);
}

static int want_string(struct tmpl *t, const struct cmd *c, const json_t *v)
{
	if (json_is_string(v))
		return 0;
	return fail(t, c->at, -EINVAL, "%s: expected a string, got %s", c->name, kind_name(v));
}

/* --- services --- */

/* "name|filter" into name and the health statuses kept (bits: passing 1,
 * warning 2, critical 4). */
static int service_query(struct tmpl *t, const struct cmd *c, const json_t *arg, char *name,
			 unsigned *keep)
{
	const char *s = json_string_value(arg), *bar = strchr(s, '|');
	size_t n = bar ? (size_t)(bar - s) : json_string_length(arg);

	if (!n || n > MAX_NAME || memchr(s, '\0', n))
		return fail(t, c->at, -EINVAL, "%s: a service name of 1 to %d bytes, got \"%.40s\"",
			    c->name, MAX_NAME, s);
	if (memchr(s, '@', n))
		return fail(t, c->at, -EINVAL, "%s \"%.40s\": datacenters (@dc) are not supported "
			    "by herd", c->name, s);
	memcpy(name, s, n);
	name[n] = '\0';
	*keep = 1;
	if (!bar)
		return 0;
	*keep = 0;
	for (const char *p = bar + 1; *p || !*keep;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 3 && !strncmp(p, "any", 3))
			*keep |= 7;
		else if (len == 7 && !strncmp(p, "passing", 7))
			*keep |= 1;
		else if (len == 7 && !strncmp(p, "warning", 7))
			*keep |= 2;
		else if (len == 8 && !strncmp(p, "critical", 8))
			*keep |= 4;
		else
			return fail(t, c->at, -EINVAL, "%s \"%.40s\": a filter is any, or a comma "
				    "list of passing, warning, critical", c->name, s);
		p += len + (comma ? 1 : 0);
		if (!comma)
			break;
	}
	return 0;
}

static unsigned health_bit(const char *h)
{
	return !strcmp(h, "passing") ? 1 : !strcmp(h, "warning") ? 2 : 4;
}

static const char *jget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static json_t *string_list(const json_t *a)
{
	json_t *out = json_array(), *e;
	size_t i;
	json_array_foreach(a, i, e)
		if (json_is_string(e))
			json_array_append(out, e);
	return out;
}

/* One instance as the template sees it (Nomad's field names). */
static json_t *instance_value(const json_t *in)
{
	const char *task = jget(in, "task");
	json_int_t port = json_integer_value(json_object_get(in, "port"));
	char *id = xasprintf("_herd-%s-%s-%s-%lld", jget(in, "alloc_id"), *task ? task : "group",
			     jget(in, "name"), (long long)port);
	json_t *v = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:o}",
			      "Name", jget(in, "name"), "Address", jget(in, "address"), "Port", port,
			      "ID", id, "AllocID", jget(in, "alloc_id"), "JobID", jget(in, "job_id"),
			      "NodeID", jget(in, "node_id"), "Namespace", jget(in, "namespace"),
			      "Status", json_string_value(json_object_get(in, "health")) ?: "passing",
			      "Tags", string_list(json_object_get(in, "tags")));
	free(id);
	return v;
}

static int call_services(struct tmpl *t, const struct cmd *c, const char *name, const json_t **raw)
{
	struct herd_err e = { 0, "" };
	int rc;

	if (!t->ctx->services)
		return fail(t, c->at, -EINVAL, "%s: service discovery is not available here", c->name);
	if ((rc = t->ctx->services(t->ctx->services_arg, name, raw, &e)) < 0)
		return fail(t, c->at, rc, "%s%s%s%s: %s", c->name, name ? " \"" : "", name ? name : "",
			    name ? "\"" : "", e.msg);
	if (!json_is_array(*raw))
		return fail(t, c->at, -EPROTO, "%s: the server's answer is not a list", c->name);
	return 0;
}

static int fn_service(struct tmpl *t, const struct cmd *c, const json_t *arg, json_t **out)
{
	char name[MAX_NAME + 1];
	const json_t *raw;
	unsigned keep = 1;
	json_t *e;
	size_t i;
	int rc;

	if ((rc = want_string(t, c, arg)) < 0 || (rc = service_query(t, c, arg, name, &keep)) < 0 ||
	    (rc = call_services(t, c, name, &raw)) < 0)
		return rc;
	*out = json_array();
	json_array_foreach(raw, i, e) {
		const char *h = json_string_value(json_object_get(e, "health"));
		if (json_is_object(e) && (health_bit(h ? h : "passing") & keep))
			json_array_append_new(*out, instance_value(e));
	}
	return 0;
}

static int fn_services(struct tmpl *t, const struct cmd *c, json_t **out)
{
	const json_t *raw;
	json_t *e;
	size_t i;
	int rc;

	if ((rc = call_services(t, c, NULL, &raw)) < 0)
		return rc;
	*out = json_array();
	json_array_foreach(raw, i, e)
		if (json_is_object(e))
			json_array_append_new(*out, json_pack("{s:s, s:o}", "Name", jget(e, "name"),
				"Tags", string_list(json_object_get(e, "tags"))));
	return 0;
}

/* --- evaluation --- */

static const char *lookup_attr(const struct template_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nr_attrs; i++)
		if (!strcmp(c->attrs[i].name, name))
			return c->attrs[i].value;
	return "";
}

static const char *lookup_meta(const struct template_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nr_meta; i++)
		if (!strcmp(c->meta[i].key, name))
			return c->meta[i].value;
	return "";
}

static json_t *fn_join(const json_t *sep, const json_t *list)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *e, *v;
	size_t i;

	json_array_foreach(list, i, e) {
		if (i)
			strbuf_add(&sb, json_string_value(sep), json_string_length(sep));
		scalar_text(e, &sb);
	}
	v = str_value(sb.buf, sb.len);
	strbuf_release(&sb);
	return v;
}

/* A string function of one string argument. */
static json_t *fn_text(const char *name, const json_t *a, const struct template_ctx *ctx)
{
	const char *s = json_string_value(a), *e = s + json_string_length(a);
	struct strbuf sb = STRBUF_INIT;
	json_t *v;

	if (!strcmp(name, "env")) {
		const char *x = ctx->env ? taskenv_get(ctx->env, s) : NULL;
		return str_value(x ? x : "", x ? strlen(x) : 0);
	}
	if (!strcmp(name, "attr") || !strcmp(name, "meta")) {
		const char *x = name[0] == 'a' ? lookup_attr(ctx, s) : lookup_meta(ctx, s);
		return str_value(x, strlen(x));
	}
	if (!strcmp(name, "trimSpace")) {
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		return str_value(s, (size_t)(e - s));
	}
	for (; s < e; s++)
		strbuf_addch(&sb, name[2] == 'U' ? toupper((unsigned char)*s)
					       : tolower((unsigned char)*s));
	v = str_value(sb.buf, sb.len);
	strbuf_release(&sb);
	return v;
}

/* Runs command c with the piped value (NULL: none) as its last argument. */
static int run_cmd(struct tmpl *t, const struct cmd *c, json_t *piped, const json_t *dot,
		   json_t **out)
{
	json_t *a[MAX_ARGS] = { NULL };
	size_t n = 0;
	int rc = 0;

	if (!c->name[0])
		return arg_value(t, c, &c->args[0], dot, out);
	for (; n < c->nargs; n++)
		if ((rc = arg_value(t, c, &c->args[n], dot, &a[n])) < 0)
			goto out;
	if (piped)
		a[n++] = json_incref(piped);
	if (!strcmp(c->name, "nomadService") || !strcmp(c->name, "service")) {
		rc = fn_service(t, c, a[0], out);
	} else if (!strcmp(c->name, "nomadServices") || !strcmp(c->name, "services")) {
		rc = fn_services(t, c, out);
	} else if (!strcmp(c->name, "default")) {
		*out = json_incref(truthy(a[1]) ? a[1] : a[0]);
	} else if (!strcmp(c->name, "join")) {
		if ((rc = want_string(t, c, a[0])) < 0)
			goto out;
		if (!json_is_array(a[1])) {
			rc = fail(t, c->at, -EINVAL, "join: expected a list, got %s", kind_name(a[1]));
			goto out;
		}
		*out = fn_join(a[0], a[1]);
	} else {
		if ((rc = want_string(t, c, a[0])) < 0)
			goto out;
		*out = fn_text(c->name, a[0], t->ctx);
	}
out:
	for (size_t k = 0; k < n; k++)
		json_decref(a[k]);
	return rc;
}

static int run_pipe(struct tmpl *t, const struct pipe *p, const json_t *dot, json_t **out)
{
	json_t *v = NULL;

	for (size_t i = 0; i < p->n; i++) {
		json_t *next = NULL;
		int rc = run_cmd(t, &p->cmds[i], v, dot, &next);
		json_decref(v);
		if (rc < 0)
			return rc;
		v = next;
	}
	*out = v;
	return 0;
}

static int check_size(struct tmpl *t)
{
	if (t->out->len > TEMPLATE_MAX_OUTPUT)
		return herd_errf(t->err, -E2BIG, "template: output larger than %d bytes",
				 TEMPLATE_MAX_OUTPUT);
	return 0;
}

static int eval_list(struct tmpl *t, const struct node_list *l, const json_t *dot);

static int eval_block(struct tmpl *t, const struct node *n, const json_t *dot)
{
	json_t *v = NULL, *e;
	size_t i;
	int rc;

	if ((rc = run_pipe(t, &n->pipe, dot, &v)) < 0)
		return rc;
	if (n->kind == N_RANGE && v && !json_is_array(v) && !json_is_null(v)) {
		rc = fail(t, n->at, -EINVAL, "range over %s; range takes a list", kind_name(v));
	} else if (!truthy(v)) {
		rc = eval_list(t, &n->alt, dot);
	} else if (n->kind == N_IF) {
		rc = eval_list(t, &n->body, dot);
	} else if (n->kind == N_WITH) {
		rc = eval_list(t, &n->body, v);
	} else {
		json_array_foreach(v, i, e)
			if ((rc = eval_list(t, &n->body, e)) < 0)
				break;
	}
	json_decref(v);
	return rc;
}

static int eval_list(struct tmpl *t, const struct node_list *l, const json_t *dot)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct node *n = l->v[i];
		json_t *v = NULL;
		int rc = 0;

		if (n->kind == N_TEXT) {
			strbuf_add(t->out, n->text, n->len);
		} else if (n->kind == N_PIPE) {
			if ((rc = run_pipe(t, &n->pipe, dot, &v)) == 0)
				rc = print_value(t, n->at, v);
			json_decref(v);
		} else {
			rc = eval_block(t, n, dot);
		}
		if (rc < 0 || (rc = check_size(t)) < 0)
			return rc;
	}
	return 0;
}

int template_render(const char *text, const struct template_ctx *ctx, char **out,
		    struct herd_err *err)
{
	static const struct template_ctx none = { 0 };
	struct strbuf sb = STRBUF_INIT;
	struct tmpl t = { .text = text, .p = text, .ctx = ctx ? ctx : &none, .err = err, .out = &sb };
	struct node_list root = { 0 };
	const char *term_at = NULL;
	enum term term;
	int rc;

	if ((rc = parse_list(&t, &root, 0, &term, &term_at)) == 0 &&
	    (rc = eval_list(&t, &root, NULL)) == 0)
		*out = strbuf_detach(&sb, NULL);
	list_release(&root);
	strbuf_release(&sb);
	return rc;
}
