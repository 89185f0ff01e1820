/* The JSON reader (RFC 8259) into the hcl expression tree, so that JSON job
 * files get line:col positions like HCL ones.  It uses the HCL lexer in its
 * JSON mode (strict strings, numbers and white space, no comments).
 *
 * A syntax error ends the parse (JSON has no lines to resynchronise on);
 * errors that leave the structure intact (bad escapes, duplicate keys,
 * numbers out of range) are all reported. */
#include <string.h>

#include "spec/hcl-int.h"

static struct hcl_expr *json_value(struct hcl_reader *p);

static struct hcl_expr *json_array(struct hcl_reader *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_LIST, p->tok.pos);
	size_t base = p->sc.nelems;
	bool full = false;

	hcl_reader_next(p);
	if (!hcl_reader_enter(p, e->pos))
		goto fail;
	if (p->tok.kind == HCL_T_RBRACK)
		goto done;
	for (;;) {
		struct hcl_expr *v = json_value(p);
		if (!v)
			goto fail;
		hcl_reader_add_element(p, e, v, &full, "array");
		if (p->tok.kind == HCL_T_COMMA) {
			hcl_reader_next(p);
			continue;
		}
		if (p->tok.kind == HCL_T_RBRACK)
			break;
		hcl_reader_syntax_error(p, "expected \",\" or \"]\" in array");
		goto fail;
	}
done:
	hcl_reader_close_list(p, e, base);
	return e;
fail:
	p->depth--;
	p->sc.nelems = base;
	return NULL;
}

static struct hcl_expr *json_object(struct hcl_reader *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_OBJECT, p->tok.pos);
	struct hcl_keyset keys = { 0 };
	char q[HCL_QUOTE_MAX];
	size_t base = p->sc.nmembers;
	bool full = false;

	hcl_reader_next(p);
	if (!hcl_reader_enter(p, e->pos))
		goto fail;
	if (p->tok.kind == HCL_T_RBRACE)
		goto done;
	for (;;) {
		struct hcl_pos kpos = p->tok.pos;
		struct hcl_expr *v;
		size_t len;
		char *key;

		if (p->tok.kind != HCL_T_STRING) {
			hcl_reader_syntax_error(p, "expected a string key in object");
			goto fail;
		}
		key = hcl_token_take_string(&p->tok, p->arena, &len);
		if (strlen(key) != len)
			hcl_reader_error(p, kpos, "key contains a NUL character");
		hcl_reader_next(p);
		if (p->tok.kind != HCL_T_COLON) {
			hcl_reader_syntax_error(p, "expected \":\" after key %s",
						hcl_msg_quote(key, strlen(key), q, sizeof(q)));
			goto fail;
		}
		hcl_reader_next(p);
		v = json_value(p);
		if (!v)
			goto fail;
		hcl_reader_add_member(p, e, &keys, key, kpos, v, &full);
		if (p->tok.kind == HCL_T_COMMA) {
			hcl_reader_next(p);
			continue;
		}
		if (p->tok.kind == HCL_T_RBRACE)
			break;
		hcl_reader_syntax_error(p, "expected \",\" or \"}\" in object");
		goto fail;
	}
done:
	hcl_keyset_release(&keys);
	hcl_reader_close_object(p, e, base);
	return e;
fail:
	p->depth--;
	hcl_keyset_release(&keys);
	p->sc.nmembers = base;
	return NULL;
}

static struct hcl_expr *json_value(struct hcl_reader *p)
{
	struct hcl_expr *e;
	char q[HCL_QUOTE_MAX];

	switch (p->tok.kind) {
	case HCL_T_LBRACK:
		return json_array(p);
	case HCL_T_LBRACE:
		return json_object(p);
	case HCL_T_STRING:
	case HCL_T_NUMBER:
	case HCL_T_IDENT:
		e = hcl_reader_scalar(p);
		if (!e)
			hcl_reader_error(p, p->tok.pos, "invalid literal %s; expected true, false or null",
					 hcl_msg_quote(p->tok.raw, p->tok.raw_len, q, sizeof(q)));
		return e;
	default:
		hcl_reader_syntax_error(p, "expected a JSON value");
		return NULL;
	}
}

struct hcl_expr *hcl_parse_json(const char *text, size_t len, struct diag_list *diags)
{
	struct hcl_reader p;
	struct hcl_expr_root *root;
	struct hcl_expr *e;

	if (!hcl_reader_start(&p, text, len, true, diags))
		return NULL;
	e = json_value(&p);
	if (e && p.tok.kind != HCL_T_EOF)
		hcl_reader_syntax_error(&p, "expected the end of input after the JSON value");
	if (!hcl_reader_finish(&p))
		return NULL;
	/* the root carries the arena, for hcl_expr_free; nothing points at
	 * the root, so a copy of it serves */
	root = hcl_arena_alloc(p.arena, sizeof(*root));
	root->expr = *e;
	root->arena = p.arena;
	return &root->expr;
}
