/* The JSON reader (RFC 8259) into the hcl expression tree, so that JSON job
 * files get line:col positions like HCL ones.  It uses the HCL lexer in its
 * JSON mode (strict strings, numbers and white space, no comments).
 *
 * A syntax error ends the parse (JSON has no lines to resynchronise on);
 * errors that leave the structure intact (bad escapes, duplicate keys,
 * numbers out of range) are all reported. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

struct jparser {
	struct hcl_lexer lx;
	struct hcl_token tok;
	struct diag_list *diags;
	int depth;
	struct hcl_arena *arena; /* owns the tree being built */
	struct hcl_scratch sc;
};

static void advance(struct jparser *p)
{
	hcl_token_release(&p->tok);
	hcl_lex_next(&p->lx, &p->tok);
}

static void error_at(struct jparser *p, struct hcl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void error_at(struct jparser *p, struct hcl_pos pos, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (hcl_diags_full(p->diags))
		return;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(p->diags, pos.line, pos.col, "%s", sb.buf);
	strbuf_release(&sb);
}

/* "<message>, found <token>", unless the lexer reported the token. */
static void syntax_error(struct jparser *p, const char *what)
{
	char buf[HCL_QUOTE_MAX];
	if (p->tok.kind == HCL_T_INVALID || hcl_diags_full(p->diags))
		return;
	error_at(p, p->tok.pos, "%s, found %s", what, hcl_token_describe(&p->tok, buf, sizeof(buf)));
}

static bool ident_is(const struct hcl_token *tok, const char *word)
{
	size_t n = strlen(word);
	return tok->raw_len == n && memcmp(tok->raw, word, n) == 0;
}

static struct hcl_expr *json_value(struct jparser *p);

static bool enter(struct jparser *p, struct hcl_pos pos)
{
	if (++p->depth > HCL_MAX_DEPTH) {
		error_at(p, pos, "nesting deeper than %d levels", HCL_MAX_DEPTH);
		return false;
	}
	return true;
}

static struct hcl_expr *json_array(struct jparser *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_LIST, p->tok.pos);
	size_t base = p->sc.nelems;
	bool full = false;

	advance(p);
	if (!enter(p, e->pos))
		goto fail;
	if (p->tok.kind == HCL_T_RBRACK)
		goto done;
	for (;;) {
		struct hcl_expr *v = json_value(p);
		if (!v)
			goto fail;
		if (e->u.list.n == HCL_MAX_ITEMS) {
			if (!full)
				error_at(p, v->pos, "array has more than %d elements", HCL_MAX_ITEMS);
			full = true;
		} else {
			ALLOC_GROW(p->sc.elems, p->sc.nelems + 1, p->sc.elems_alloc);
			p->sc.elems[p->sc.nelems++] = v;
			e->u.list.n++;
		}
		if (p->tok.kind == HCL_T_COMMA) {
			advance(p);
			continue;
		}
		if (p->tok.kind == HCL_T_RBRACK)
			break;
		syntax_error(p, "expected \",\" or \"]\" in array");
		goto fail;
	}
done:
	advance(p);
	p->depth--;
	e->u.list.v = hcl_scratch_take(p->arena, p->sc.elems, base, e->u.list.n,
				       sizeof(*e->u.list.v));
	p->sc.nelems = base;
	return e;
fail:
	p->depth--;
	p->sc.nelems = base;
	return NULL;
}

static struct hcl_expr *json_object(struct jparser *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_OBJECT, p->tok.pos);
	struct hcl_keyset keys = { 0 };
	char q[HCL_QUOTE_MAX];
	size_t base = p->sc.nmembers;
	bool full = false;

	advance(p);
	if (!enter(p, e->pos))
		goto fail;
	if (p->tok.kind == HCL_T_RBRACE)
		goto done;
	for (;;) {
		const struct hcl_keyset_entry *first;
		struct hcl_pos kpos = p->tok.pos;
		struct hcl_expr *v;
		size_t len;
		char *key;

		if (p->tok.kind != HCL_T_STRING) {
			syntax_error(p, "expected a string key in object");
			goto fail;
		}
		key = hcl_token_take_string(&p->tok, p->arena, &len);
		if (strlen(key) != len)
			error_at(p, kpos, "key contains a NUL character");
		advance(p);
		if (p->tok.kind != HCL_T_COLON) {
			char what[HCL_QUOTE_MAX + 32];
			snprintf(what, sizeof(what), "expected \":\" after key %s",
				 hcl_msg_quote(key, strlen(key), q, sizeof(q)));
			syntax_error(p, what);
			goto fail;
		}
		advance(p);
		v = json_value(p);
		if (!v)
			goto fail;
		if (e->u.object.n == HCL_MAX_ITEMS) {
			if (!full)
				error_at(p, kpos, "object has more than %d keys", HCL_MAX_ITEMS);
			full = true;
		} else if ((first = hcl_keyset_add(&keys, key, kpos, 0))) {
			error_at(p, kpos, "duplicate key %s in object (first at line %d)",
				 hcl_msg_quote(key, strlen(key), q, sizeof(q)), first->pos.line);
		} else {
			ALLOC_GROW(p->sc.members, p->sc.nmembers + 1, p->sc.members_alloc);
			p->sc.members[p->sc.nmembers++] =
				(struct hcl_object_item){ .key = key, .key_pos = kpos, .value = v };
			e->u.object.n++;
		}
		if (p->tok.kind == HCL_T_COMMA) {
			advance(p);
			continue;
		}
		if (p->tok.kind == HCL_T_RBRACE)
			break;
		syntax_error(p, "expected \",\" or \"}\" in object");
		goto fail;
	}
done:
	advance(p);
	p->depth--;
	hcl_keyset_release(&keys);
	e->u.object.v = hcl_scratch_take(p->arena, p->sc.members, base, e->u.object.n,
					 sizeof(*e->u.object.v));
	p->sc.nmembers = base;
	return e;
fail:
	p->depth--;
	hcl_keyset_release(&keys);
	p->sc.nmembers = base;
	return NULL;
}

static struct hcl_expr *json_value(struct jparser *p)
{
	struct hcl_expr *e;
	char q[HCL_QUOTE_MAX];

	switch (p->tok.kind) {
	case HCL_T_STRING:
	case HCL_T_NUMBER:
		e = hcl_expr_from_token(p->arena, &p->tok);
		advance(p);
		return e;
	case HCL_T_LBRACK:
		return json_array(p);
	case HCL_T_LBRACE:
		return json_object(p);
	case HCL_T_IDENT:
		if (ident_is(&p->tok, "true") || ident_is(&p->tok, "false")) {
			e = hcl_expr_new(p->arena, HCL_BOOL, p->tok.pos);
			e->u.boolean = ident_is(&p->tok, "true");
		} else if (ident_is(&p->tok, "null")) {
			e = hcl_expr_new(p->arena, HCL_NULL, p->tok.pos);
		} else {
			error_at(p, p->tok.pos, "invalid literal %s; expected true, false or null",
				 hcl_msg_quote(p->tok.raw, p->tok.raw_len, q, sizeof(q)));
			return NULL;
		}
		advance(p);
		return e;
	default:
		syntax_error(p, "expected a JSON value");
		return NULL;
	}
}

struct hcl_expr *hcl_parse_json(const char *text, size_t len, struct diag_list *diags)
{
	size_t errors = diags->errors;
	struct jparser p = { .diags = diags };
	struct hcl_expr_root *root;
	struct hcl_expr *e;

	if (len > HCL_MAX_INPUT) {
		diag_error(diags, 0, 0, "file is larger than the limit of %u bytes", HCL_MAX_INPUT);
		return NULL;
	}
	hcl_lexer_init(&p.lx, text ? text : "", text ? len : 0, true, diags);
	hcl_lex_next(&p.lx, &p.tok);
	p.arena = hcl_arena_new();
	e = json_value(&p);
	if (e && p.tok.kind != HCL_T_EOF)
		syntax_error(&p, "expected the end of input after the JSON value");
	hcl_token_release(&p.tok);
	hcl_scratch_release(&p.sc);
	if (diags->errors > errors) {
		hcl_arena_free(p.arena);
		return NULL;
	}
	/* the root carries the arena, for hcl_expr_free; nothing points at
	 * the root, so a copy of it serves */
	root = hcl_arena_alloc(p.arena, sizeof(*root));
	root->expr = *e;
	root->arena = p.arena;
	return &root->expr;
}
