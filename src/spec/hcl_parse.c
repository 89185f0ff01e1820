/* The HCL reader: a recursive-descent parser over the tokens of hcl_lex.c.
 *
 * Error recovery: a syntax error abandons the attribute or block header it
 * is in; recover() then skips tokens to the end of that item (the next
 * newline outside any bracket the item opened, or the "}" of the enclosing
 * block), and parsing goes on with the next item.  So each mistake gives
 * one diagnostic and mistakes in different items are all reported.
 * Recursion is bounded by HCL_MAX_DEPTH; recovery is iterative. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

#define EXPR_MSG "expressions are not supported; write the value (or use \"${...}\" for run-time interpolation)"

struct parser {
	struct hcl_lexer lx;
	struct hcl_token tok;
	struct diag_list *diags;
	size_t errors0; /* errors in diags before this parse */
	int depth;
	/* The brackets opened by the current item and not closed when an error
	 * stopped it, innermost last: recover() skips to their ends. */
	struct strbuf open;
	struct hcl_arena *arena; /* owns the tree being built */
	struct hcl_scratch sc;
};

static void advance(struct parser *p)
{
	hcl_token_release(&p->tok);
	hcl_lex_next(&p->lx, &p->tok);
}

static enum hcl_tok cur(const struct parser *p)
{
	return p->tok.kind;
}

static void skip_newlines(struct parser *p)
{
	while (cur(p) == HCL_T_NEWLINE)
		advance(p);
}

static bool at_line_end(const struct parser *p)
{
	return cur(p) == HCL_T_NEWLINE || cur(p) == HCL_T_EOF || cur(p) == HCL_T_RBRACE;
}

static void error_at(struct parser *p, struct hcl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void error_at(struct parser *p, struct hcl_pos pos, const char *fmt, ...)
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

/* Reports "<message>, found <current token>" at the current token, unless
 * the lexer has already reported that token as invalid. */
static void syntax_error(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void syntax_error(struct parser *p, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[HCL_QUOTE_MAX];
	va_list ap;

	if (cur(p) == HCL_T_INVALID)
		return;
	if (hcl_diags_full(p->diags))
		return;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(p->diags, p->tok.pos.line, p->tok.pos.col, "%s, found %s", sb.buf,
		   hcl_token_describe(&p->tok, buf, sizeof(buf)));
	strbuf_release(&sb);
}

static void expr_error(struct parser *p)
{
	error_at(p, p->tok.pos, EXPR_MSG);
}

/* Tokens that, after a value, mean an expression was written. */
static bool continues_expression(const struct parser *p)
{
	return cur(p) == HCL_T_OPERATOR || cur(p) == HCL_T_LPAREN || cur(p) == HCL_T_LBRACK;
}

static bool ident_is(const struct hcl_token *tok, const char *word)
{
	size_t n = strlen(word);
	return tok->kind == HCL_T_IDENT && tok->raw_len == n && memcmp(tok->raw, word, n) == 0;
}

static const char *quote_name(const char *s, char *buf)
{
	return hcl_msg_quote(s, strlen(s), buf, HCL_QUOTE_MAX);
}

static void skip_item(struct parser *p);

static struct hcl_expr *parse_value(struct parser *p);

static struct hcl_expr *parse_list(struct parser *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_LIST, p->tok.pos);
	size_t base = p->sc.nelems;
	bool full = false;

	strbuf_addch(&p->open, '[');
	advance(p);
	if (++p->depth > HCL_MAX_DEPTH) {
		error_at(p, e->pos, "nesting deeper than %d levels", HCL_MAX_DEPTH);
		goto fail;
	}
	for (;;) {
		struct hcl_expr *v;
		skip_newlines(p);
		if (cur(p) == HCL_T_RBRACK)
			break;
		v = parse_value(p);
		if (!v)
			goto fail;
		if (e->u.list.n == HCL_MAX_ITEMS) {
			if (!full)
				error_at(p, v->pos, "list has more than %d elements", HCL_MAX_ITEMS);
			full = true;
		} else {
			ALLOC_GROW(p->sc.elems, p->sc.nelems + 1, p->sc.elems_alloc);
			p->sc.elems[p->sc.nelems++] = v;
			e->u.list.n++;
		}
		skip_newlines(p);
		if (cur(p) == HCL_T_COMMA) {
			advance(p);
			continue;
		}
		if (cur(p) == HCL_T_RBRACK)
			continue;
		if (continues_expression(p))
			expr_error(p);
		else
			syntax_error(p, "expected \",\" or \"]\" after a list element");
		goto fail;
	}
	advance(p);
	p->depth--;
	strbuf_setlen(&p->open, p->open.len - 1);
	e->u.list.v = hcl_scratch_take(p->arena, p->sc.elems, base, e->u.list.n,
				       sizeof(*e->u.list.v));
	p->sc.nelems = base;
	return e;
fail:
	p->depth--;
	p->sc.nelems = base;
	return NULL;
}

/* Reads an object key: a name or a quoted string.  NULL after an error. */
static char *parse_key(struct parser *p)
{
	char *key;
	size_t len;

	if (cur(p) == HCL_T_IDENT)
		return hcl_arena_strndup(p->arena, p->tok.raw, p->tok.raw_len);
	if (cur(p) == HCL_T_STRING && !p->tok.heredoc) {
		key = hcl_token_take_string(&p->tok, p->arena, &len);
		if (strlen(key) != len)
			error_at(p, p->tok.pos, "key contains a NUL character");
		return key;
	}
	if (cur(p) == HCL_T_LPAREN || cur(p) == HCL_T_OPERATOR)
		expr_error(p);
	else
		syntax_error(p, "expected a key (a name or a quoted string) in object");
	return NULL;
}

static struct hcl_expr *parse_object(struct parser *p)
{
	struct hcl_expr *e = hcl_expr_new(p->arena, HCL_OBJECT, p->tok.pos);
	struct hcl_keyset keys = { 0 };
	char q[HCL_QUOTE_MAX];
	size_t base = p->sc.nmembers;
	bool full = false;

	strbuf_addch(&p->open, '{');
	advance(p);
	if (++p->depth > HCL_MAX_DEPTH) {
		error_at(p, e->pos, "nesting deeper than %d levels", HCL_MAX_DEPTH);
		goto fail;
	}
	for (;;) {
		const struct hcl_keyset_entry *first;
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
		advance(p);
		if (cur(p) != HCL_T_EQ && cur(p) != HCL_T_COLON) {
			syntax_error(p, "expected \"=\" or \":\" after key %s", quote_name(key, q));
			goto fail;
		}
		advance(p);
		v = parse_value(p);
		if (!v)
			goto fail;
		if (e->u.object.n == HCL_MAX_ITEMS) {
			if (!full)
				error_at(p, kpos, "object has more than %d keys", HCL_MAX_ITEMS);
			full = true;
		} else if ((first = hcl_keyset_add(&keys, key, kpos, 0))) {
			error_at(p, kpos, "duplicate key %s in object (first at line %d)",
				 quote_name(key, q), first->pos.line);
		} else {
			ALLOC_GROW(p->sc.members, p->sc.nmembers + 1, p->sc.members_alloc);
			p->sc.members[p->sc.nmembers++] =
				(struct hcl_object_item){ .key = key, .key_pos = kpos, .value = v };
			e->u.object.n++;
		}
		if (cur(p) == HCL_T_COMMA) {
			advance(p);
			continue;
		}
		if (cur(p) == HCL_T_NEWLINE || cur(p) == HCL_T_RBRACE)
			continue;
		if (continues_expression(p))
			expr_error(p);
		else
			syntax_error(p, "expected \",\", a newline or \"}\" after an object value");
		goto fail;
	}
	advance(p);
	p->depth--;
	strbuf_setlen(&p->open, p->open.len - 1);
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

static struct hcl_expr *parse_value(struct parser *p)
{
	struct hcl_expr *e;

	switch (cur(p)) {
	case HCL_T_STRING:
	case HCL_T_NUMBER:
		e = hcl_expr_from_token(p->arena, &p->tok);
		advance(p);
		return e;
	case HCL_T_IDENT:
		if (ident_is(&p->tok, "true") || ident_is(&p->tok, "false")) {
			e = hcl_expr_new(p->arena, HCL_BOOL, p->tok.pos);
			e->u.boolean = ident_is(&p->tok, "true");
		} else if (ident_is(&p->tok, "null")) {
			e = hcl_expr_new(p->arena, HCL_NULL, p->tok.pos);
		} else {
			expr_error(p);
			return NULL;
		}
		advance(p);
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
		syntax_error(p, "expected a value");
		return NULL;
	}
}

/* Skips the rest of an item after a syntax error (see the top of the
 * file), leaving a "}" that closes the enclosing block for the caller. */
static void skip_item(struct parser *p)
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
		advance(p);
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
static bool body_add(struct parser *p, struct body_builder *bb, struct hcl_item *item,
		     struct hcl_pos pos)
{
	if (bb->body->n == HCL_MAX_ITEMS) {
		if (!bb->full)
			error_at(p, pos, "more than %d attributes and blocks in one body",
				 HCL_MAX_ITEMS);
		bb->full = true;
		return false;
	}
	ALLOC_GROW(p->sc.items, p->sc.nitems + 1, p->sc.items_alloc);
	p->sc.items[p->sc.nitems++] = *item;
	bb->body->n++;
	return true;
}

static void parse_body(struct parser *p, struct hcl_body *body, const char *owner,
		       struct hcl_pos open_pos);

/* After "name =": returns 0, or -1 when the caller must skip the item. */
static int parse_attribute(struct parser *p, struct body_builder *bb, char *name, struct hcl_pos npos)
{
	const struct hcl_keyset_entry *first;
	struct hcl_item item = { .kind = HCL_ITEM_ATTRIBUTE };
	char q[HCL_QUOTE_MAX];
	struct hcl_expr *v;

	advance(p);
	if (at_line_end(p)) {
		syntax_error(p, "expected a value for %s", quote_name(name, q));
		return -1;
	}
	v = parse_value(p);
	if (!v)
		return -1;
	if (!at_line_end(p)) {
		if (continues_expression(p))
			expr_error(p);
		else
			syntax_error(p, "expected a newline after the value of %s", quote_name(name, q));
		return -1;
	}
	item.u.attr = (struct hcl_attribute){ name, npos, v };
	if (bb->full || bb->body->n == HCL_MAX_ITEMS) {
		body_add(p, bb, &item, npos);
		return 0;
	}
	if ((first = hcl_keyset_add(&bb->attrs, name, npos, 0))) {
		error_at(p, npos, "attribute %s is already set at line %d", quote_name(name, q),
			 first->pos.line);
		return 0;
	}
	body_add(p, bb, &item, npos);
	return 0;
}

/* After a block's type word: labels, "{", body, "}".  Returns 0, -1 when
 * the caller must skip the item, -2 when the error left the parser at the
 * start of the next item. */
static int parse_block(struct parser *p, struct body_builder *bb, char *type, struct hcl_pos tpos)
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
			syntax_error(p, "expected a quoted label or \"{\" after block %s", quote_name(type, q));
			goto fail;
		}
		if (b->nlabels == 2) {
			error_at(p, p->tok.pos, "block %s has more than 2 labels", quote_name(type, q));
			goto fail;
		}
		if (cur(p) == HCL_T_IDENT) {
			label = hcl_arena_strndup(p->arena, p->tok.raw, p->tok.raw_len);
		} else {
			label = hcl_token_take_string(&p->tok, p->arena, &len);
			if (strlen(label) != len)
				error_at(p, p->tok.pos, "label of block %s contains a NUL character",
					 quote_name(type, q));
		}
		b->label_pos[b->nlabels] = p->tok.pos;
		b->labels[b->nlabels++] = label;
		advance(p);
	}
	if (cur(p) == HCL_T_NEWLINE) {
		error_at(p, p->tok.pos, "expected \"{\" on the same line as block %s", quote_name(type, q));
		skip_newlines(p);
		if (cur(p) != HCL_T_LBRACE)
			return -2;
	} else if (cur(p) != HCL_T_LBRACE) {
		syntax_error(p, "expected \"{\" after the labels of block %s", quote_name(type, q));
		goto fail;
	}
	open_pos = p->tok.pos;
	if (p->depth + 1 > HCL_MAX_DEPTH) {
		error_at(p, open_pos, "nesting deeper than %d levels", HCL_MAX_DEPTH);
		strbuf_addch(&p->open, '{');
		advance(p);
		goto fail;
	}
	advance(p);
	p->depth++;
	b->body = hcl_arena_alloc(p->arena, sizeof(*b->body));
	parse_body(p, b->body, type, open_pos);
	p->depth--;
	body_add(p, bb, &item, tpos);
	if (!at_line_end(p)) {
		syntax_error(p, "expected a newline after the \"}\" of block %s", quote_name(type, q));
		return -1;
	}
	return 0;
fail:
	return -1;
}

static int parse_item(struct parser *p, struct body_builder *bb)
{
	struct hcl_pos npos = p->tok.pos;
	char q[HCL_QUOTE_MAX];
	char *name;

	if (cur(p) != HCL_T_IDENT) {
		syntax_error(p, "expected an attribute name or a block type");
		return -1;
	}
	name = hcl_arena_strndup(p->arena, p->tok.raw, p->tok.raw_len);
	advance(p);
	if (cur(p) == HCL_T_EQ)
		return parse_attribute(p, bb, name, npos);
	if (cur(p) == HCL_T_STRING || cur(p) == HCL_T_IDENT || cur(p) == HCL_T_LBRACE)
		return parse_block(p, bb, name, npos);
	if (cur(p) != HCL_T_INVALID)
		error_at(p, p->tok.pos, "expected \"=\" or \"{\" after %s", quote_name(name, q));
	return -1;
}

/* Parses items into body up to the "}" that closes it (consumed) or, for
 * the file's top level (owner NULL), up to the end of input. */
static void parse_body(struct parser *p, struct hcl_body *body, const char *owner,
		       struct hcl_pos open_pos)
{
	struct body_builder bb = { .body = body, .base = p->sc.nitems };
	char q[HCL_QUOTE_MAX];

	*body = (struct hcl_body){ .open_pos = open_pos };
	for (;;) {
		if (p->diags->errors - p->errors0 > DIAG_MAX) {
			/* no one will read more messages: stop at once */
			p->lx.p = p->lx.end;
			advance(p);
			break;
		}
		skip_newlines(p);
		if (cur(p) == HCL_T_EOF) {
			if (owner)
				error_at(p, p->tok.pos, "expected \"}\" to close block %s (opened at line %d)",
					 quote_name(owner, q), open_pos.line);
			break;
		}
		if (cur(p) == HCL_T_RBRACE) {
			if (owner) {
				advance(p);
				break;
			}
			error_at(p, p->tok.pos, "unexpected \"}\"; no block is open");
			advance(p);
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
	size_t errors = diags->errors;
	struct parser p = { .diags = diags, .errors0 = diags->errors, .open = STRBUF_INIT };
	struct hcl_body_root *root;

	if (len > HCL_MAX_INPUT) {
		diag_error(diags, 0, 0, "file is larger than the limit of %u bytes", HCL_MAX_INPUT);
		return NULL;
	}
	hcl_lexer_init(&p.lx, text ? text : "", text ? len : 0, false, diags);
	hcl_lex_next(&p.lx, &p.tok);
	p.arena = hcl_arena_new();
	root = hcl_arena_alloc(p.arena, sizeof(*root));
	root->arena = p.arena;
	parse_body(&p, &root->body, NULL, (struct hcl_pos){ 1, 1 });
	hcl_token_release(&p.tok);
	strbuf_release(&p.open);
	hcl_scratch_release(&p.sc);
	if (diags->errors > errors) {
		hcl_arena_free(p.arena);
		return NULL;
	}
	return &root->body;
}
