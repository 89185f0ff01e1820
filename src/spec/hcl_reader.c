/* The steps the HCL reader (hcl_parse.c) and the JSON reader (hcl_json.c)
 * take alike: start and finish, token stepping, messages, true/false/null,
 * and collecting list elements and object members under the limits. */
#include <stdarg.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

bool hcl_reader_start(struct hcl_reader *r, const char *text, size_t len, bool json,
		      struct diag_list *diags)
{
	*r = (struct hcl_reader){ .diags = diags, .errors0 = diags->errors, .open = STRBUF_INIT };
	if (len > HCL_MAX_INPUT) {
		diag_error(diags, 0, 0, "file is larger than the limit of %u bytes", HCL_MAX_INPUT);
		return false;
	}
	hcl_lexer_init(&r->lx, text ? text : "", text ? len : 0, json, diags);
	hcl_lex_next(&r->lx, &r->tok);
	r->arena = hcl_arena_new();
	return true;
}

bool hcl_reader_finish(struct hcl_reader *r)
{
	hcl_token_release(&r->tok);
	strbuf_release(&r->open);
	hcl_scratch_release(&r->sc);
	if (r->diags->errors > r->errors0) {
		hcl_arena_free(r->arena);
		r->arena = NULL;
		return false;
	}
	return true;
}

void hcl_reader_next(struct hcl_reader *r)
{
	hcl_token_release(&r->tok);
	hcl_lex_next(&r->lx, &r->tok);
}

void hcl_reader_error(struct hcl_reader *r, struct hcl_pos pos, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (hcl_diags_full(r->diags))
		return;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(r->diags, pos.line, pos.col, "%s", sb.buf);
	strbuf_release(&sb);
}

void hcl_reader_syntax_error(struct hcl_reader *r, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[HCL_QUOTE_MAX];
	va_list ap;

	if (r->tok.kind == HCL_T_INVALID || hcl_diags_full(r->diags))
		return;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(r->diags, r->tok.pos.line, r->tok.pos.col, "%s, found %s", sb.buf,
		   hcl_token_describe(&r->tok, buf, sizeof(buf)));
	strbuf_release(&sb);
}

bool hcl_reader_enter(struct hcl_reader *r, struct hcl_pos pos)
{
	if (++r->depth > HCL_MAX_DEPTH) {
		hcl_reader_error(r, pos, "nesting deeper than %d levels", HCL_MAX_DEPTH);
		return false;
	}
	return true;
}

static bool ident_is(const struct hcl_token *tok, const char *word)
{
	size_t n = strlen(word);
	return tok->kind == HCL_T_IDENT && tok->raw_len == n && memcmp(tok->raw, word, n) == 0;
}

struct hcl_expr *hcl_reader_scalar(struct hcl_reader *r)
{
	struct hcl_token *tok = &r->tok;
	struct hcl_expr *e;

	if (tok->kind == HCL_T_STRING) {
		e = hcl_expr_new(r->arena, HCL_STRING, tok->pos);
		e->u.str.heredoc = tok->heredoc;
		e->u.str.s = hcl_token_take_string(tok, r->arena, &e->u.str.len);
	} else if (tok->kind == HCL_T_NUMBER) {
		e = hcl_expr_new(r->arena, HCL_NUMBER, tok->pos);
		e->u.num.value = tok->num;
		e->u.num.is_int = tok->is_int;
		e->u.num.i = tok->i;
	} else if (ident_is(tok, "true") || ident_is(tok, "false")) {
		e = hcl_expr_new(r->arena, HCL_BOOL, tok->pos);
		e->u.boolean = ident_is(tok, "true");
	} else if (ident_is(tok, "null")) {
		e = hcl_expr_new(r->arena, HCL_NULL, tok->pos);
	} else {
		return NULL;
	}
	hcl_reader_next(r);
	return e;
}

void hcl_reader_add_element(struct hcl_reader *r, struct hcl_expr *list, struct hcl_expr *v,
			    bool *full, const char *noun)
{
	if (list->u.list.n == HCL_MAX_ITEMS) {
		if (!*full)
			hcl_reader_error(r, v->pos, "%s has more than %d elements", noun,
					 HCL_MAX_ITEMS);
		*full = true;
		return;
	}
	ALLOC_GROW(r->sc.elems, r->sc.nelems + 1, r->sc.elems_alloc);
	r->sc.elems[r->sc.nelems++] = v;
	list->u.list.n++;
}

void hcl_reader_add_member(struct hcl_reader *r, struct hcl_expr *obj, struct hcl_keyset *keys,
			   char *key, struct hcl_pos kpos, struct hcl_expr *v, bool *full)
{
	const struct hcl_keyset_entry *first;
	char q[HCL_QUOTE_MAX];

	if (obj->u.object.n == HCL_MAX_ITEMS) {
		if (!*full)
			hcl_reader_error(r, kpos, "object has more than %d keys", HCL_MAX_ITEMS);
		*full = true;
	} else if ((first = hcl_keyset_add(keys, key, kpos, 0))) {
		hcl_reader_error(r, kpos, "duplicate key %s in object (first at line %d)",
				 hcl_msg_quote(key, strlen(key), q, sizeof(q)), first->pos.line);
	} else {
		ALLOC_GROW(r->sc.members, r->sc.nmembers + 1, r->sc.members_alloc);
		r->sc.members[r->sc.nmembers++] =
			(struct hcl_object_item){ .key = key, .key_pos = kpos, .value = v };
		obj->u.object.n++;
	}
}

void hcl_reader_close_list(struct hcl_reader *r, struct hcl_expr *list, size_t base)
{
	hcl_reader_next(r);
	r->depth--;
	list->u.list.v = hcl_scratch_take(r->arena, r->sc.elems, base, list->u.list.n,
					  sizeof(*list->u.list.v));
	r->sc.nelems = base;
}

void hcl_reader_close_object(struct hcl_reader *r, struct hcl_expr *obj, size_t base)
{
	hcl_reader_next(r);
	r->depth--;
	obj->u.object.v = hcl_scratch_take(r->arena, r->sc.members, base, obj->u.object.n,
					   sizeof(*obj->u.object.v));
	r->sc.nmembers = base;
}
