/* The task template language (template.h): the text is parsed into a tree
 * (spec/template_parse.c, the parser job validation also runs), then
 * evaluated here.  Values are JSON (strings, numbers, lists and objects of
 * service data), each a new reference owned by its holder.
 *
 * The whole text is parsed before anything is evaluated, so that a mistake
 * anywhere, in a branch not taken included, is an error on the first
 * rendering.  What evaluation checks is what needs data: the kinds of
 * values, service names and filters, the output size. */
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
#include "spec/template_parse.h"

#define MAX_NAME 128          /* a service name */

struct tmpl {
	const char *text;
	const struct template_ctx *ctx;
	struct herd_err *err;
	struct strbuf *out;
};

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
static int field_value(struct tmpl *t, const char *at, const struct tmpl_arg *a, const json_t *dot,
		       json_t **out)
{
	const json_t *v = dot;
	const char *p = a->s.buf;

	if (a->kind == TMPL_ARG_DOT) {
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

static int arg_value(struct tmpl *t, const struct tmpl_cmd *c, const struct tmpl_arg *a, const json_t *dot,
		     json_t **out)
{
	if (a->kind == TMPL_ARG_STRING) {
		*out = str_value(a->s.buf, a->s.len);
		return 0;
	}
	return field_value(t, c->at, a, dot, out);
}

static int want_string(struct tmpl *t, const struct tmpl_cmd *c, const json_t *v)
{
	if (json_is_string(v))
		return 0;
	return fail(t, c->at, -EINVAL, "%s: expected a string, got %s", c->name, kind_name(v));
}

/* --- services --- */

/* "name|filter" into name and the health statuses kept (bits: passing 1,
 * warning 2, critical 4). */
static int service_query(struct tmpl *t, const struct tmpl_cmd *c, const json_t *arg, char *name,
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

static int call_services(struct tmpl *t, const struct tmpl_cmd *c, const char *name, const json_t **raw)
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

static int fn_service(struct tmpl *t, const struct tmpl_cmd *c, const json_t *arg, json_t **out)
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

static int fn_services(struct tmpl *t, const struct tmpl_cmd *c, json_t **out)
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

/* --- variables --- */

/* A variable path or list prefix as a template names it: what the
 * server's path check allows (server/vars.h), so it goes into the URL as
 * it is; the server checks the rest (segments). */
static int var_arg(struct tmpl *t, const struct tmpl_cmd *c, const json_t *arg, bool prefix)
{
	const char *s = json_string_value(arg);
	size_t n = json_string_length(arg);
	if (!n && !prefix)
		return fail(t, c->at, -EINVAL, "%s: a variable path is needed", c->name);
	if (n > 128)
		return fail(t, c->at, -EINVAL, "%s: a variable path has at most 128 bytes", c->name);
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-~/", s[i]))
			return fail(t, c->at, -EINVAL, "%s \"%.40s\": a variable path has only "
				    "A-Z a-z 0-9 _ . - ~ /", c->name, s);
	return 0;
}

/* The data callback for key "@var:PATH" (GET /v1/var/PATH: the variable,
 * or null when there is none) or "@vars:PREFIX" (GET /v1/vars: metadata). */
static int call_vars(struct tmpl *t, const struct tmpl_cmd *c, const char *kind, const char *arg,
		     const json_t **raw)
{
	struct herd_err e = { 0, "" };
	char *key;
	int rc;
	if (!t->ctx->services)
		return fail(t, c->at, -EINVAL, "%s: variables are not available here", c->name);
	key = xasprintf("%s%s", kind, arg);
	rc = t->ctx->services(t->ctx->services_arg, key, raw, &e);
	free(key);
	if (rc < 0)
		return fail(t, c->at, rc, "%s \"%s\": %s", c->name, arg, e.msg);
	return 0;
}

/* nomadVar "PATH": the variable's items (fields .KEY); "" when the job's
 * namespace has no such variable, so {{ with }} skips it. */
static int fn_var(struct tmpl *t, const struct tmpl_cmd *c, const json_t *arg, json_t **out)
{
	const json_t *raw;
	int rc;
	if ((rc = want_string(t, c, arg)) < 0 || (rc = var_arg(t, c, arg, false)) < 0 ||
	    (rc = call_vars(t, c, "@var:", json_string_value(arg), &raw)) < 0)
		return rc;
	if (json_is_object(json_object_get(raw, "items")))
		*out = json_deep_copy(json_object_get(raw, "items"));
	else
		*out = str_value("", 0);
	return 0;
}

/* nomadVarList ["PREFIX"]: the variables under PREFIX, each {Path,
 * Namespace, CreateIndex, ModifyIndex, CreateTime, ModifyTime}. */
static int fn_var_list(struct tmpl *t, const struct tmpl_cmd *c, const json_t *arg, json_t **out)
{
	const char *prefix = arg ? json_string_value(arg) : "";
	const json_t *raw;
	json_t *e;
	size_t i;
	int rc;
	if ((arg && ((rc = want_string(t, c, arg)) < 0 || (rc = var_arg(t, c, arg, true)) < 0)) ||
	    (rc = call_vars(t, c, "@vars:", prefix, &raw)) < 0)
		return rc;
	if (!json_is_array(raw))
		return fail(t, c->at, -EPROTO, "%s: the server's answer is not a list", c->name);
	*out = json_array();
	json_array_foreach(raw, i, e)
		json_array_append_new(*out, json_pack(
			"{s:s, s:s, s:I, s:I, s:I, s:I}", "Path", jget(e, "path"), "Namespace",
			jget(e, "namespace"), "CreateIndex",
			(json_int_t)json_integer_value(json_object_get(e, "create_index")),
			"ModifyIndex", (json_int_t)json_integer_value(json_object_get(e, "modify_index")),
			"CreateTime", (json_int_t)json_integer_value(json_object_get(e, "create_time")),
			"ModifyTime", (json_int_t)json_integer_value(json_object_get(e, "modify_time"))));
	return 0;
}

/* --- evaluation --- */

/* A node attribute or meta key's value; NULL when the node has none. */
static const char *lookup_attr(const struct template_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nr_attrs; i++)
		if (!strcmp(c->attrs[i].name, name))
			return c->attrs[i].value;
	return NULL;
}

static const char *lookup_meta(const struct template_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nr_meta; i++)
		if (!strcmp(c->meta[i].key, name))
			return c->meta[i].value;
	return NULL;
}

/* attr and meta are lookups in the node's maps: a key the node lacks is
 * "" (Go's missingkey=zero, consul-template's default), or an error with
 * error_on_missing_key. */
static int check_key(struct tmpl *t, const struct tmpl_cmd *c, const json_t *key)
{
	bool attr = !strcmp(c->name, "attr");
	const char *k = json_string_value(key);

	if (!t->ctx->missing_key_error || (!attr && strcmp(c->name, "meta")))
		return 0;
	if (attr ? lookup_attr(t->ctx, k) : lookup_meta(t->ctx, k))
		return 0;
	return fail(t, c->at, -EINVAL, "%s \"%.64s\": the node has no such %s "
		    "(error_on_missing_key)", c->name, k, attr ? "attribute" : "meta key");
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
		return x ? str_value(x, strlen(x)) : str_value("", 0);
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
static int run_cmd(struct tmpl *t, const struct tmpl_cmd *c, json_t *piped, const json_t *dot,
		   json_t **out)
{
	json_t *a[TEMPLATE_MAX_ARGS] = { NULL };
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
	} else if (!strcmp(c->name, "nomadVar")) {
		rc = fn_var(t, c, a[0], out);
	} else if (!strcmp(c->name, "nomadVarList")) {
		rc = fn_var_list(t, c, n ? a[0] : NULL, out);
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
		if ((rc = want_string(t, c, a[0])) < 0 || (rc = check_key(t, c, a[0])) < 0)
			goto out;
		*out = fn_text(c->name, a[0], t->ctx);
	}
out:
	for (size_t k = 0; k < n; k++)
		json_decref(a[k]);
	return rc;
}

static int run_pipe(struct tmpl *t, const struct tmpl_pipe *p, const json_t *dot, json_t **out)
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

static int eval_list(struct tmpl *t, const struct tmpl_list *l, const json_t *dot);

static int eval_block(struct tmpl *t, const struct tmpl_node *n, const json_t *dot)
{
	json_t *v = NULL, *e;
	size_t i;
	int rc;

	if ((rc = run_pipe(t, &n->pipe, dot, &v)) < 0)
		return rc;
	if (n->kind == TMPL_RANGE && v && !json_is_array(v) && !json_is_null(v)) {
		rc = fail(t, n->at, -EINVAL, "range over %s; range takes a list", kind_name(v));
	} else if (!truthy(v)) {
		rc = eval_list(t, &n->alt, dot);
	} else if (n->kind == TMPL_IF) {
		rc = eval_list(t, &n->body, dot);
	} else if (n->kind == TMPL_WITH) {
		rc = eval_list(t, &n->body, v);
	} else {
		json_array_foreach(v, i, e)
			if ((rc = eval_list(t, &n->body, e)) < 0)
				break;
	}
	json_decref(v);
	return rc;
}

static int eval_list(struct tmpl *t, const struct tmpl_list *l, const json_t *dot)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct tmpl_node *n = l->v[i];
		json_t *v = NULL;
		int rc = 0;

		if (n->kind == TMPL_TEXT) {
			strbuf_add(t->out, n->text, n->len);
		} else if (n->kind == TMPL_PIPE) {
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
	struct tmpl t = { .text = text, .ctx = ctx ? ctx : &none, .err = err, .out = &sb };
	struct tmpl_list root;
	int rc;

	rc = template_parse_delims(text, t.ctx->left_delim, t.ctx->right_delim, &root, err);
	if (rc == 0 && (rc = eval_list(&t, &root, NULL)) == 0)
		*out = strbuf_detach(&sb, NULL);
	template_tree_release(&root);
	strbuf_release(&sb);
	return rc;
}
