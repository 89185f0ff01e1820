/* The HCL reader: a recursive-descent parser over the tokens of hcl_lex.c.
 *
 * Error recovery: a syntax error abandons the attribute or block header it
 * is in; recover() then skips tokens to the end of that item (the next
 * newline outside any bracket the item opened, or the "}" of the enclosing
 * block), and parsing goes on with the next item.  So each mistake gives
 * one diagnostic and mistakes in different items are all reported.
 * Recursion is bounded by HCL_MAX_DEPTH; recovery is iterative. */
#include <string.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

#define EXPR_MSG "expressions are not supported; write the value (or use \"${...}\" for run-time interpolation)"

static enum hcl_tok cur(const struct hcl_reader *p)
{
	return p->tok.kind;
}

static void skip_newlines(struct hcl_reader *p)
{
	while (cur(p) == HCL_T_NEWLINE)
		hcl_reader_next(p);
}

static bool at_line_end(const struct hcl_reader *p)
{
	return cur(p) == HCL_T_NEWLINE || cur(p) == HCL_T_EOF || cur(p) == HCL_T_RBRACE;
}

static void expr_error(struct hcl_reader *p)
{
	hcl_reader_error(p, p->tok.pos, EXPR_MSG);
}

/* Tokens that, after a value, mean an expression was written. */
static bool continues_expression(const struct hcl_reader *p)
{
	return cur(p) == HCL_T_OPERATOR || cur(p) == HCL_T_LPAREN || cur(p) == HCL_T_LBRACK;
}

static const char *quote_name(const char *s, char *buf)
{
	return hcl_msg_quote(s, strlen(s), buf, HCL_QUOTE_MAX);
}

static void skip_item(struct hcl_reader *p);

static struct hcl_expr *parse_value(struct hcl_reader *p);

static struct hcl_expr *parse_list(struct hcl_reader *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_LIST, p->tok.pos);
	size_t base = p->sc.nelems;
	bool full = false;

	strbuf_addch(&p->open, '[');
	hcl_reader_next(p);
	if (!hcl_reader_enter(p, e->pos))
		goto fail;
	for (;;) {
		struct hcl_expr *v;
		skip_newlines(p);
		if (cur(p) == HCL_T_RBRACK)
			break;
		v = parse_value(p);
		if (!v)
			goto fail;
		hcl_reader_add_element(p, e, v, &full, "list");
		skip_newlines(p);
		if (cur(p) == HCL_T_COMMA) {
			hcl_reader_next(p);
			continue;
		}
		if (cur(p) == HCL_T_RBRACK)
			continue;
		if (continues_expression(p))
			expr_error(p);
		else
			hcl_reader_syntax_error(p, "expected \",\" or \"]\" after a list element");
		goto fail;
	}
	strbuf_setlen(&p->open, p->open.len - 1);
	hcl_reader_close_list(p, e, base);
	return e;
fail:
	p->depth--;
	p->sc.nelems = base;
	return NULL;
}

/* Reads an object key: a name or a quoted string.  NULL after an error. */
static char *parse_key(struct hcl_reader *p)
{
	char *key;
	size_t len;

	if (cur(p) == HCL_T_IDENT)
		return hcl_arena_strndup(p->arena, p->tok.raw, p->tok.raw_len);
	if (cur(p) == HCL_T_STRING && !p->tok.heredoc) {
		key = hcl_token_take_string(&p->tok, p->arena, &len);
		if (strlen(key) != len)
			hcl_reader_error(p, p->tok.pos, "key contains a NUL character");
		return key;
	}
	if (cur(p) == HCL_T_LPAREN || cur(p) == HCL_T_OPERATOR)
		expr_error(p);
	else
		hcl_reader_syntax_error(p, "expected a key (a name or a quoted string) in object");
	return NULL;
}

static struct hcl_expr *parse_object(struct hcl_reader *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_OBJECT, p->tok.pos);
	struct hcl_keyset keys = { 0 };
	char q[HCL_QUOTE_MAX];
	size_t base = p->sc.nmembers;
	bool full = false;

	strbuf_addch(&p->open, '{');
	hcl_reader_next(p);
	if (!hcl_reader_enter(p, e->pos))
		goto fail;
	for (;;) {
		struct hcl_pos kpos;
		struct hcl_expr *v;
		char *key;

		skip_newlines(p);
		if (cur(p) == HCL_T_RBRACE)
			break;
		kpos = p->tok.pos;
		key = parse_key(p);
		if (!key)
			goto fail;
		hcl_reader_next(p);
		if (cur(p) != HCL_T_EQ && cur(p) != HCL_T_COLON) {
			hcl_reader_syntax_error(p, "expected \"=\" or \":\" after key %s", quote_name(key, q));
			goto fail;
		}
		hcl_reader_next(p);
		v = parse_value(p);
		if (!v)
			goto fail;
		hcl_reader_add_member(p, e, &keys, key, kpos, v, &full);
		if (cur(p) == HCL_T_COMMA) {
			hcl_reader_next(p);
			continue;
		}
		if (cur(p) == HCL_T_NEWLINE || cur(p) == HCL_T_RBRACE)
			continue;
		if (continues_expression(p))
			expr_error(p);
		else
			hcl_reader_syntax_error(p, "expected \",\", a newline or \"}\" after an object value");
		goto fail;
	}
	strbuf_setlen(&p->open, p->open.len - 1);
	hcl_keyset_release(&keys);
	hcl_reader_close_object(p, e, base);
	return e;
fail:
	p->depth--;
	hcl_keyset_release(&keys);
	p->sc.nmembers = base;
	return NULL;
}

static struct hcl_expr *parse_value(struct hcl_reader *p)
{
	struct hcl_expr *e;

	switch (cur(p)) {
	case HCL_T_STRING:
	case HCL_T_NUMBER:
	case HCL_T_IDENT:
		e = hcl_reader_scalar(p);
		if (!e)
			expr_error(p);
		return e;
	case HCL_T_LBRACK:
		return parse_list(p);
	case HCL_T_LBRACE:
		return parse_object(p);
	case HCL_T_OPERATOR:
	case HCL_T_LPAREN:
		expr_error(p);
		return NULL;
	default:
		hcl_reader_syntax_error(p, "expected a value");
		return NULL;
	}
}

/* Skips the rest of an item after a syntax error (see the top of the
 * file), leaving a "}" that closes the enclosing block for the caller. */
static void skip_item(struct hcl_reader *p)
{
	struct strbuf *st = &p->open;
	for (;;) {
		char top = st->len ? st->buf[st->len - 1] : 0;
		switch (cur(p)) {
		case HCL_T_EOF:
			goto out;
		case HCL_T_NEWLINE:
			if (!top)
				goto out;
			break;
		case HCL_T_LBRACE: strbuf_addch(st, '{'); break;
		case HCL_T_LBRACK: strbuf_addch(st, '['); break;
		case HCL_T_LPAREN: strbuf_addch(st, '('); break;
		case HCL_T_RBRACE:
			if (!top)
				goto out;
			strbuf_setlen(st, st->len - 1);
			if (top != '{')
				continue; /* an unclosed "[" or "(": this "}" closes more */
			break;
		case HCL_T_RBRACK:
		case HCL_T_RPAREN:
			if (top == (cur(p) == HCL_T_RBRACK ? '[' : '('))
				strbuf_setlen(st, st->len - 1);
			break;
		default:
			break;
		}
		hcl_reader_next(p);
	}
out:
	strbuf_reset(st);
}

/* A body being read: its items so far are p->sc.items[base..]. */
struct body_builder {
	struct hcl_body *body;
	size_t base;
	struct hcl_keyset attrs;
	bool full;
};

/* Adds item to the body; false (and the item dropped) past the limit. */
static bool body_add(struct hcl_reader *p, struct body_builder *bb, struct hcl_item *item,
		     struct hcl_pos pos)
{
	if (bb->body->n == HCL_MAX_ITEMS) {
		if (!bb->full)
			hcl_reader_error(p, pos, "more than %d attributes and blocks in one body",
				 HCL_MAX_ITEMS);
		bb->full = true;
		return false;
	}
	ALLOC_GROW(p->sc.items, p->sc.nitems + 1, p->sc.items_alloc);
	p->sc.items[p->sc.nitems++] = *item;
	bb->body->n++;
	return true;
}

static void parse_body(struct hcl_reader *p, struct hcl_body *body, const char *owner,
		       struct hcl_pos open_pos);

/* After "name =": returns 0, or -1 when the caller must skip the item. */
static int parse_attribute(struct hcl_reader *p, struct body_builder *bb, char *name, struct hcl_pos npos)
{
	const struct hcl_keyset_entry *first;
	struct hcl_item item = { .kind = HCL_ITEM_ATTRIBUTE };
	char q[HCL_QUOTE_MAX];
	struct hcl_expr *v;

	hcl_reader_next(p);
	if (at_line_end(p)) {
		hcl_reader_syntax_error(p, "expected a value for %s", quote_name(name, q));
		return -1;
	}
	v = parse_value(p);
	if (!v)
		return -1;
	if (!at_line_end(p)) {
		if (continues_expression(p))
			expr_error(p);
		else
			hcl_reader_syntax_error(p, "expected a newline after the value of %s", quote_name(name, q));
		return -1;
	}
	item.u.attr = (struct hcl_attribute){ name, npos, v };
	if (bb->full || bb->body->n == HCL_MAX_ITEMS) {
		body_add(p, bb, &item, npos);
		return 0;
	}
	if ((first = hcl_keyset_add(&bb->attrs, name, npos, 0))) {
		hcl_reader_error(p, npos, "attribute %s is already set at line %d", quote_name(name, q),
			 first->pos.line);
		return 0;
	}
	body_add(p, bb, &item, npos);
	return 0;
}

/* After a block's type word: labels, "{", body, "}".  Returns 0, -1 when
 * the caller must skip the item, -2 when the error left the parser at the
 * start of the next item. */
static int parse_block(struct hcl_reader *p, struct body_builder *bb, char *type, struct hcl_pos tpos)
{
	struct hcl_item item = { .kind = HCL_ITEM_BLOCK };
	struct hcl_block *b = &item.u.block;
	char q[HCL_QUOTE_MAX];
	struct hcl_pos open_pos;

	b->type = type;
	b->pos = tpos;
	while (cur(p) == HCL_T_STRING || cur(p) == HCL_T_IDENT) {
		char *label;
		size_t len;
		if (p->tok.heredoc) {
			hcl_reader_syntax_error(p, "expected a quoted label or \"{\" after block %s", quote_name(type, q));
			goto fail;
		}
		if (b->nlabels == 2) {
			hcl_reader_error(p, p->tok.pos, "block %s has more than 2 labels", quote_name(type, q));
			goto fail;
		}
		if (cur(p) == HCL_T_IDENT) {
			label = hcl_arena_strndup(p->arena, p->tok.raw, p->tok.raw_len);
		} else {
			label = hcl_token_take_string(&p->tok, p->arena, &len);
			if (strlen(label) != len)
				hcl_reader_error(p, p->tok.pos, "label of block %s contains a NUL character",
					 quote_name(type, q));
		}
		b->label_pos[b->nlabels] = p->tok.pos;
		b->labels[b->nlabels++] = label;
		hcl_reader_next(p);
	}
	if (cur(p) == HCL_T_NEWLINE) {
		hcl_reader_error(p, p->tok.pos, "expected \"{\" on the same line as block %s", quote_name(type, q));
		skip_newlines(p);
		if (cur(p) != HCL_T_LBRACE)
			return -2;
	} else if (cur(p) != HCL_T_LBRACE) {
		hcl_reader_syntax_error(p, "expected \"{\" after the labels of block %s", quote_name(type, q));
		goto fail;
	}
	open_pos = p->tok.pos;
	if (p->depth + 1 > HCL_MAX_DEPTH) {
		hcl_reader_error(p, open_pos, "nesting deeper than %d levels", HCL_MAX_DEPTH);
		strbuf_addch(&p->open, '{');
		hcl_reader_next(p);
		goto fail;
	}
	hcl_reader_next(p);
	p->depth++;
	b->body = hcl_arena_alloc(p->arena, sizeof(*b->body));
	parse_body(p, b->body, type, open_pos);
	p->depth--;
	body_add(p, bb, &item, tpos);
	if (!at_line_end(p)) {
		hcl_reader_syntax_error(p, "expected a newline after the \"}\" of block %s", quote_name(type, q));
		return -1;
	}
	return 0;
fail:
	return -1;
}

static int parse_item(struct hcl_reader *p, struct body_builder *bb)
{
	struct hcl_pos npos = p->tok.pos;
	char q[HCL_QUOTE_MAX];
	char *name;

	if (cur(p) != HCL_T_IDENT) {
		hcl_reader_syntax_error(p, "expected an attribute name or a block type");
		return -1;
	}
	name = hcl_arena_strndup(p->arena, p->tok.raw, p->tok.raw_len);
	hcl_reader_next(p);
	if (cur(p) == HCL_T_EQ)
		return parse_attribute(p, bb, name, npos);
	if (cur(p) == HCL_T_STRING || cur(p) == HCL_T_IDENT || cur(p) == HCL_T_LBRACE)
		return parse_block(p, bb, name, npos);
	if (cur(p) != HCL_T_INVALID)
		hcl_reader_error(p, p->tok.pos, "expected \"=\" or \"{\" after %s", quote_name(name, q));
	return -1;
}

/* Parses items into body up to the "}" that closes it (consumed) or, for
 * the file's top level (owner NULL), up to the end of input. */
static void parse_body(struct hcl_reader *p, struct hcl_body *body, const char *owner,
		       struct hcl_pos open_pos)
{
	struct body_builder bb = { .body = body, .base = p->sc.nitems };
	char q[HCL_QUOTE_MAX];

	*body = (struct hcl_body){ .open_pos = open_pos };
	for (;;) {
		if (p->diags->errors - p->errors0 > DIAG_MAX) {
			/* no one will read more messages: stop at once */
			p->lx.p = p->lx.end;
			hcl_reader_next(p);
			break;
		}
		skip_newlines(p);
		if (cur(p) == HCL_T_EOF) {
			if (owner)
				hcl_reader_error(p, p->tok.pos, "expected \"}\" to close block %s (opened at line %d)",
					 quote_name(owner, q), open_pos.line);
			break;
		}
		if (cur(p) == HCL_T_RBRACE) {
			if (owner) {
				hcl_reader_next(p);
				break;
			}
			hcl_reader_error(p, p->tok.pos, "unexpected \"}\"; no block is open");
			hcl_reader_next(p);
			continue;
		}
		strbuf_reset(&p->open);
		if (parse_item(p, &bb) == -1)
			skip_item(p);
	}
	hcl_keyset_release(&bb.attrs);
	body->items = hcl_scratch_take(p->arena, p->sc.items, bb.base, body->n,
				       sizeof(*body->items));
	p->sc.nitems = bb.base;
}

struct hcl_body *hcl_parse(const char *text, size_t len, struct diag_list *diags)
{
	struct hcl_reader p;
	struct hcl_body_root *root;

	if (!hcl_reader_start(&p, text, len, false, diags))
		return NULL;
	root = hcl_arena_alloc(p.arena, sizeof(*root));
	root->arena = p.arena;
	parse_body(&p, &root->body, NULL, (struct hcl_pos){ 1, 1 });
	return hcl_reader_finish(&p) ? &root->body : NULL;
}
