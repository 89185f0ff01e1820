/* The lexer shared by the HCL and JSON readers (hcl-int.h).
 *
 * Every scanning loop moves forward through the input and never comes back,
 * so the work is linear in the input size; strings and heredocs are copied
 * once.  Errors inside a token are reported and the token is still
 * returned, so that the parser can go on and report further errors. */
#include "spec/hcl-int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"

static struct hcl_pos pos_at(const struct hcl_lexer *lx, const char *p)
{
	return (struct hcl_pos){ lx->line, (int)(p - lx->line_start) + 1 };
}

static void lex_error(struct hcl_lexer *lx, struct hcl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void lex_error(struct hcl_lexer *lx, struct hcl_pos pos, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (hcl_diags_full(lx->diags))
		return;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(lx->diags, pos.line, pos.col, "%s", sb.buf);
	strbuf_release(&sb);
}

/* The lexer has consumed a '\n' that ends at p (p points after it). */
static void new_line(struct hcl_lexer *lx, const char *p)
{
	lx->line++;
	lx->line_start = p;
}

void hcl_lexer_init(struct hcl_lexer *lx, const char *text, size_t len, bool json,
		    struct diag_list *diags)
{
	lx->p = text;
	lx->end = text + len;
	lx->line_start = text;
	lx->line = 1;
	lx->json = json;
	lx->diags = diags;
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		lx->p += 3; /* byte order mark; columns still count it */
}

void hcl_token_release(struct hcl_token *tok)
{
	if (tok->s)
		free(tok->s);
	tok->s = NULL;
	tok->src = NULL;
}

char *hcl_token_take_string(struct hcl_token *tok, struct hcl_arena *a, size_t *len)
{
	const char *from = tok->s ? tok->s : tok->src;
	char *s = hcl_arena_strndup(a, from ? from : "", from ? tok->len : 0);

	*len = from ? tok->len : 0;
	hcl_token_release(tok);
	return s;
}

/* Character classes, looked up once per byte in the hot loops. */
enum {
	C_DIGIT = 1,       /* 0-9 */
	C_IDSTART = 2,     /* a-z A-Z _ */
	C_IDCHAR = 4,      /* an identifier's later bytes: also digits and "-" */
	C_JSONWORD = 8,    /* a JSON literal's bytes: letters, digits, "_" */
	C_PLAIN = 16,      /* printable ASCII a string copies as is */
};

/* Generated from the definitions above: 0x00-0x1F none; printable ASCII
 * C_PLAIN except " \\ $ %; digits, letters, "_" and "-" as named. */
static const unsigned char char_class[256] = {
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	16, 16,  0, 16,  0,  0, 16, 16, 16, 16, 16, 16, 16, 20, 16, 16,
	29, 29, 29, 29, 29, 29, 29, 29, 29, 29, 16, 16, 16, 16, 16, 16,
	16, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
	30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 16,  0, 16, 16, 30,
	16, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
	30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 16, 16, 16, 16,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
	 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
};

static bool has_class(int c, int cls)
{
	return (char_class[(unsigned char)c] & cls) != 0;
}

static bool is_digit(int c)
{
	return has_class(c, C_DIGIT);
}

static bool is_ident_start(int c)
{
	return has_class(c, C_IDSTART);
}

static bool is_ident_char(int c)
{
	return has_class(c, C_IDCHAR);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n, i;
	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return 0;
	n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
	if (n == 0 || (size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) ||
	    (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
		return 0;
	return n;
}

static void add_utf8(struct strbuf *sb, uint32_t cp)
{
	char b[4];
	size_t n;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	strbuf_add(sb, b, n);
}

const char *hcl_msg_quote(const char *s, size_t len, char *buf, size_t size)
{
	const size_t max_src = 48;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	strbuf_addch(&sb, '"');
	for (i = 0; i < len && i < max_src; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			strbuf_addf(&sb, "\\%c", c);
		else if (c >= 0x20 && c < 0x7F)
			strbuf_addch(&sb, c);
		else
			strbuf_addf(&sb, "\\x%02x", c);
	}
	if (i < len)
		strbuf_adds(&sb, "...");
	strbuf_addch(&sb, '"');
	snprintf(buf, size, "%s", sb.buf);
	strbuf_release(&sb);
	return buf;
}

/* A string value under construction, with the length limit applied.  As
 * long as the value is a run of the source bytes (no escapes: `${...}` and
 * heredocs are kept as written), it is only the pointers src..src_end, and
 * nothing is copied; the first byte from elsewhere moves it to sb. */
struct strscan {
	struct strbuf sb;
	const char *src, *src_end; /* the value while src is not NULL */
	bool too_long;
	bool bad_utf8;
};

static void scan_init(struct strscan *sc, const char *value_start)
{
	*sc = (struct strscan){ STRBUF_INIT, value_start, value_start, false, false };
}

static void scan_flush(struct strscan *sc)
{
	if (sc->src)
		strbuf_add(&sc->sb, sc->src, (size_t)(sc->src_end - sc->src));
	sc->src = NULL;
}

static void scan_add(struct strscan *sc, const char *s, size_t n)
{
	size_t len = sc->src ? (size_t)(sc->src_end - sc->src) : sc->sb.len;

	if (sc->too_long)
		return;
	if (len + n > HCL_MAX_STRING) {
		sc->too_long = true;
		sc->src = NULL;
		strbuf_release(&sc->sb);
		return;
	}
	if (sc->src && s == sc->src_end) {
		sc->src_end += n;
		return;
	}
	scan_flush(sc);
	strbuf_add(&sc->sb, s, n);
}

/* Hands the value to tok: the source bytes, or a heap copy. */
static void scan_finish(struct strscan *sc, struct hcl_token *tok)
{
	if (sc->src) {
		tok->src = sc->src;
		tok->len = (size_t)(sc->src_end - sc->src);
		tok->s = NULL;
		strbuf_release(&sc->sb);
		return;
	}
	tok->len = sc->sb.len;
	tok->s = strbuf_detach(&sc->sb, NULL);
}

/* Adds the byte at p (a whole UTF-8 sequence when it starts one); returns
 * how many bytes were consumed. */
static size_t scan_add_char(struct strscan *sc, const char *p, const char *end)
{
	size_t n = utf8_len((const unsigned char *)p, (const unsigned char *)end);
	if (n == 0) {
		sc->bad_utf8 = true;
		return 1;
	}
	scan_add(sc, p, n);
	return n;
}

/* Reads exactly ndigits hex digits at p; returns -1 if fewer are there. */
static long read_hex(const char *p, const char *end, int ndigits)
{
	long v = 0;
	for (int i = 0; i < ndigits; i++) {
		int h = p + i < end ? hex_digit((unsigned char)p[i]) : -1;
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Shows up to n bytes of an escape at p, for messages (printable only). */
static void show_escape(const char *p, const char *end, size_t n, char *buf, size_t size)
{
	size_t i;
	for (i = 0; i < n && i + 1 < size && p + i < end; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c >= 0x7F || c == '"')
			break;
		buf[i] = (char)c;
	}
	buf[i] = '\0';
}

/* Decodes the \u or \U escape at p (p[0] == '\\'); returns the end. */
static const char *lex_unicode_escape(struct hcl_lexer *lx, const char *p, struct strscan *sc)
{
	const char *end = lx->end;
	int ndigits = p[1] == 'U' ? 8 : 4;
	long cp = read_hex(p + 2, end, ndigits);
	char shown[16];

	if (cp < 0) {
		size_t n = 2;
		while (n < (size_t)ndigits + 2 && p + n < end && hex_digit((unsigned char)p[n]) >= 0)
			n++;
		show_escape(p, end, n, shown, sizeof(shown));
		lex_error(lx, pos_at(lx, p), "invalid escape \"%s\" in string; expected %d hex digits",
			  shown, ndigits);
		return p + n;
	}
	show_escape(p, end, (size_t)ndigits + 2, shown, sizeof(shown));
	p += 2 + ndigits;
	if (lx->json && cp >= 0xD800 && cp <= 0xDBFF) {
		long lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? read_hex(p + 2, end, 4) : -1;
		if (lo >= 0xDC00 && lo <= 0xDFFF) {
			scan_flush(sc);
			add_utf8(&sc->sb, (uint32_t)(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)));
			return p + 6;
		}
		lex_error(lx, pos_at(lx, p - 6), "invalid escape \"%s\" in string: unpaired surrogate",
			  shown);
		return p;
	}
	if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
		lex_error(lx, pos_at(lx, p - 2 - ndigits),
			  "invalid escape \"%s\" in string: not a unicode character", shown);
		return p;
	}
	if (!sc->too_long) {
		scan_flush(sc);
		add_utf8(&sc->sb, (uint32_t)cp);
	}
	return p;
}

/* Decodes the escape at p (p[0] == '\\'); returns the end of it.  At a
 * newline or the end of input nothing is consumed but the backslash: the
 * caller then reports the unterminated string. */
static const char *lex_escape(struct hcl_lexer *lx, const char *p, struct strscan *sc)
{
	const char *end = lx->end;
	char c;

	if (p + 1 >= end || p[1] == '\n')
		return p + 1;
	c = p[1];
	switch (c) {
	case 'n': scan_add(sc, "\n", 1); return p + 2;
	case 't': scan_add(sc, "\t", 1); return p + 2;
	case 'r': scan_add(sc, "\r", 1); return p + 2;
	case '"': scan_add(sc, "\"", 1); return p + 2;
	case '\\': scan_add(sc, "\\", 1); return p + 2;
	case 'u': return lex_unicode_escape(lx, p, sc);
	default: break;
	}
	if (lx->json) {
		switch (c) {
		case '/': scan_add(sc, "/", 1); return p + 2;
		case 'b': scan_add(sc, "\b", 1); return p + 2;
		case 'f': scan_add(sc, "\f", 1); return p + 2;
		default: break;
		}
	} else if (c == 'U') {
		return lex_unicode_escape(lx, p, sc);
	}
	if (c >= 0x20 && c < 0x7F)
		lex_error(lx, pos_at(lx, p), "invalid escape \"\\%c\" in string%s", c,
			  lx->json ? "" : "; write \"\\\\\" for a backslash");
	else
		lex_error(lx, pos_at(lx, p), "invalid escape in string: byte 0x%02x after \"\\\"",
			  (unsigned char)c);
	return p + 2;
}

static bool starts_template(const char *p, const char *end)
{
	return (*p == '$' || *p == '%') && p + 1 < end && p[1] == '{';
}

static bool starts_literal_template(const char *p, const char *end)
{
	return (*p == '$' || *p == '%') && end - p >= 3 && p[1] == *p && p[2] == '{';
}

/* Inside "${...}" (HCL only) the text is kept verbatim; only its nesting is
 * followed so that the right quote ends the string: braces count, and a
 * quote opens a nested string that may hold templates again.  stack holds
 * one entry per open level: > 0 an interpolation's brace depth, 0 a nested
 * string. */
#define TEMPLATE_STACK HCL_MAX_DEPTH

static void lex_string(struct hcl_lexer *lx, struct hcl_token *tok)
{
	const char *start = lx->p, *p = start + 1, *end = lx->end;
	struct strscan sc;
	int stack[TEMPLATE_STACK];
	int sp = 0;
	bool closed = false, too_deep = false, control = false;
	const char *run = p;

	/* Most strings are plain text: their value is the source bytes, copied
	 * only when the parser takes it. */
	while (run < end && has_class(*run, C_PLAIN))
		run++;
	if (run < end && *run == '"' && (size_t)(run - p) <= HCL_MAX_STRING) {
		tok->kind = HCL_T_STRING;
		tok->pos = pos_at(lx, start);
		tok->raw = start;
		tok->raw_len = (size_t)(run + 1 - start);
		tok->len = (size_t)(run - p);
		tok->src = p;
		tok->heredoc = false;
		lx->p = run + 1;
		return;
	}
	scan_init(&sc, p);

	while (p < end && *p != '\n') {
		unsigned char c = (unsigned char)*p;
		if (sp == 0) {
			const char *seg = p;
			/* the common case: a run of plain printable ASCII */
			while (p < end && has_class(*p, C_PLAIN))
				p++;
			if (p > seg) {
				scan_add(&sc, seg, (size_t)(p - seg));
				continue;
			}
			if (c == '"') {
				p++;
				closed = true;
				break;
			}
			if (c == '\\') {
				p = lex_escape(lx, p, &sc);
				continue;
			}
			if (!lx->json && starts_literal_template(p, end)) {
				scan_add(&sc, p, 3);
				p += 3;
				continue;
			}
			if (!lx->json && starts_template(p, end)) {
				scan_add(&sc, p, 2);
				p += 2;
				stack[sp++] = 1;
				continue;
			}
			if (c < 0x20 && lx->json && !control) {
				lex_error(lx, pos_at(lx, p),
					  "control character 0x%02x in string; write it as an escape", c);
				control = true;
			}
			p += scan_add_char(&sc, p, end);
			continue;
		}
		if (stack[sp - 1] > 0) { /* in an interpolation */
			const char *seg = p;
			while (p < end && has_class(*p, C_PLAIN) && *p != '{' && *p != '}')
				p++;
			if (p > seg) {
				scan_add(&sc, seg, (size_t)(p - seg));
				continue;
			}
			if (c == '"') {
				if (sp == TEMPLATE_STACK) {
					too_deep = true;
					break;
				}
				stack[sp++] = 0;
			} else if (c == '{') {
				stack[sp - 1]++;
			} else if (c == '}' && --stack[sp - 1] == 0) {
				sp--;
			}
			p += scan_add_char(&sc, p, end);
			continue;
		}
		/* in a string nested in an interpolation */
		if (c == '"') {
			sp--;
		} else if (c == '\\' && p + 1 < end && p[1] != '\n') {
			scan_add(&sc, p, 1);
			p++;
		} else if (starts_literal_template(p, end)) {
			scan_add(&sc, p, 2);
			p += 2;
			continue;
		} else if (starts_template(p, end)) {
			if (sp == TEMPLATE_STACK) {
				too_deep = true;
				break;
			}
			stack[sp++] = 1;
			scan_add(&sc, p, 1);
			p++;
		}
		p += scan_add_char(&sc, p, end);
	}

	tok->kind = HCL_T_STRING;
	tok->pos = pos_at(lx, start);
	if (too_deep) {
		lex_error(lx, tok->pos, "interpolation nested too deeply in string");
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p)
			p = end;
	} else if (!closed && sp > 0) {
		lex_error(lx, tok->pos, "unterminated string; an interpolation \"${\" is not closed by \"}\"");
	} else if (!closed) {
		lex_error(lx, tok->pos, "unterminated string");
	}
	if (!closed && lx->json)
		tok->kind = HCL_T_INVALID; /* JSON cannot resynchronise: stop there */
	if (sc.too_long)
		lex_error(lx, tok->pos, "string is longer than the limit of %u bytes", HCL_MAX_STRING);
	if (sc.bad_utf8)
		lex_error(lx, tok->pos, "invalid utf-8 in string");
	tok->raw = start;
	tok->raw_len = (size_t)(p - start);
	scan_finish(&sc, tok);
	tok->heredoc = false;
	lx->p = p;
}

/* Whitespace at the start of a heredoc line, in bytes. */
static size_t line_indent(const char *p, const char *eol)
{
	const char *q = p;
	while (q < eol && (*q == ' ' || *q == '\t'))
		q++;
	return (size_t)(q - p);
}

static bool line_is_blank(const char *p, const char *eol)
{
	while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p == eol;
}

/* Copies a heredoc's content; for "<<-" strips the indentation common to
 * all lines that are not blank (as HCL does). */
static void heredoc_value(const char *p, const char *end, bool indented, struct strscan *sc)
{
	size_t strip = SIZE_MAX;
	const char *q, *eol;

	if (!indented) {
		scan_add(sc, p, (size_t)(end - p));
		return;
	}
	for (q = p; q < end; q = eol + 1) {
		eol = memchr(q, '\n', (size_t)(end - q));
		if (!eol)
			eol = end;
		if (!line_is_blank(q, eol)) {
			size_t ind = line_indent(q, eol);
			if (ind < strip)
				strip = ind;
		}
	}
	if (strip == SIZE_MAX)
		strip = 0;
	for (q = p; q < end; q = eol + 1) {
		size_t ind;
		eol = memchr(q, '\n', (size_t)(end - q));
		if (!eol)
			eol = end;
		ind = line_indent(q, eol);
		q += ind < strip ? ind : strip;
		scan_add(sc, q, (size_t)(eol - q) + (eol < end ? 1 : 0));
		if (eol == end)
			break;
	}
}

/* At "<<": a heredoc "<<NAME\n ... \nNAME" or "<<-NAME". */
static void lex_heredoc(struct hcl_lexer *lx, struct hcl_token *tok)
{
	const char *start = lx->p, *p = start + 2, *end = lx->end;
	const char *marker, *content, *content_end = NULL, *after = NULL;
	struct strscan sc;
	size_t mlen;
	bool indented = false;

	tok->pos = pos_at(lx, start);
	tok->raw = start;
	tok->kind = HCL_T_INVALID;
	if (p < end && *p == '-') {
		indented = true;
		p++;
	}
	marker = p;
	if (p < end && is_ident_start((unsigned char)*p))
		while (p < end && is_ident_char((unsigned char)*p))
			p++;
	mlen = (size_t)(p - marker);
	if (mlen == 0) {
		lex_error(lx, tok->pos, "expected a name after \"%s\" to start a heredoc",
			  indented ? "<<-" : "<<");
		/* "<< EOF": take the name anyway, so that the heredoc's lines
		 * are skipped instead of read as items */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		marker = p;
		if (p < end && is_ident_start((unsigned char)*p))
			while (p < end && is_ident_char((unsigned char)*p))
				p++;
		mlen = (size_t)(p - marker);
		if (mlen == 0)
			goto out;
	}
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p < end && *p != '\n') {
		lex_error(lx, tok->pos, "expected a newline after heredoc marker \"%.*s\"",
			  (int)(mlen > 48 ? 48 : mlen), marker);
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p)
			p = end;
	}
	if (p == end) {
		lex_error(lx, tok->pos, "unterminated heredoc; expected a line \"%.*s\"",
			  (int)(mlen > 48 ? 48 : mlen), marker);
		goto out;
	}
	new_line(lx, ++p);
	content = p;
	scan_init(&sc, content);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p + line_indent(p, eol ? eol : end);
		if (!eol)
			eol = end;
		if ((size_t)(eol - q) >= mlen && memcmp(q, marker, mlen) == 0 &&
		    line_is_blank(q + mlen, eol)) {
			content_end = p;
			after = q + mlen;
			break;
		}
		if (eol == end)
			break;
		p = eol + 1;
		new_line(lx, p);
	}
	if (!content_end) {
		lex_error(lx, tok->pos, "unterminated heredoc; expected a line \"%.*s\"",
			  (int)(mlen > 48 ? 48 : mlen), marker);
		p = end;
		goto out;
	}
	p = after;
	if ((size_t)(content_end - content) > HCL_MAX_STRING) {
		lex_error(lx, tok->pos, "heredoc is longer than the limit of %u bytes", HCL_MAX_STRING);
	} else {
		for (const char *q = content; q < content_end;) {
			size_t n = utf8_len((const unsigned char *)q, (const unsigned char *)content_end);
			if (n == 0) {
				lex_error(lx, tok->pos, "invalid utf-8 in heredoc");
				break;
			}
			q += n;
		}
		heredoc_value(content, content_end, indented, &sc);
	}
	tok->kind = HCL_T_STRING;
	tok->heredoc = true;
	scan_finish(&sc, tok);
out:
	tok->raw_len = (size_t)(p - start);
	lx->p = p;
}

static void lex_number(struct hcl_lexer *lx, struct hcl_token *tok)
{
	const char *start = lx->p, *p = start, *end = lx->end;
	bool integral = true, bad = false;
	char buf[HCL_MAX_NUMBER_LEN + 1], shown[HCL_QUOTE_MAX];
	size_t len;

	tok->kind = HCL_T_NUMBER;
	tok->pos = pos_at(lx, start);
	tok->num = 0;
	tok->i = 0;
	tok->is_int = false;
	if (*p == '-')
		p++;
	if (p == end || !is_digit((unsigned char)*p))
		bad = true;
	else if (lx->json && *p == '0' && p + 1 < end && is_digit((unsigned char)p[1]))
		bad = true; /* JSON forbids leading zeros */
	while (p < end && is_digit((unsigned char)*p))
		p++;
	if (p < end && *p == '.') {
		integral = false;
		p++;
		if (p == end || !is_digit((unsigned char)*p))
			bad = true;
		while (p < end && is_digit((unsigned char)*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		const char *q = p + 1;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		if (q < end && is_digit((unsigned char)*q)) {
			integral = false;
			p = q;
			while (p < end && is_digit((unsigned char)*p))
				p++;
		}
	}
	if (p < end && (is_ident_char((unsigned char)*p) || *p == '.')) {
		bool letters = false;
		while (p < end && (is_ident_char((unsigned char)*p) || *p == '.')) {
			letters |= is_ident_start((unsigned char)*p);
			p++;
		}
		len = (size_t)(p - start);
		hcl_msg_quote(start, len, shown, sizeof(shown));
		if (letters && !lx->json)
			lex_error(lx, tok->pos,
				  "invalid number %s; durations and sizes are strings: write %s", shown,
				  shown);
		else
			lex_error(lx, tok->pos, "invalid number %s", shown);
		goto out;
	}
	len = (size_t)(p - start);
	if (bad) {
		hcl_msg_quote(start, len, shown, sizeof(shown));
		lex_error(lx, tok->pos, "invalid number %s", shown);
		goto out;
	}
	if (len > HCL_MAX_NUMBER_LEN) {
		lex_error(lx, tok->pos, "number is longer than %d characters", HCL_MAX_NUMBER_LEN);
		goto out;
	}
	if (integral && len <= 18) {
		/* the common case, a small integer, without strtod: below 10^18
		 * it fits int64, and the double is rounded as strtod would */
		const char *q = start;
		bool neg = *q == '-';
		uint64_t v = 0;
		for (q += neg; q < p; q++)
			v = v * 10 + (uint64_t)(*q - '0');
		tok->i = neg ? -(int64_t)v : (int64_t)v;
		tok->num = neg ? -(double)v : (double)v;
		tok->is_int = true;
		goto out;
	}
	memcpy(buf, start, len);
	buf[len] = '\0';
	tok->num = strtod(buf, NULL);
	if (isinf(tok->num)) {
		hcl_msg_quote(start, len, shown, sizeof(shown));
		lex_error(lx, tok->pos, "number %s is out of range", shown);
		tok->num = 0;
		goto out;
	}
	if (integral) {
		errno = 0;
		tok->i = strtoll(buf, NULL, 10);
		tok->is_int = errno != ERANGE;
		if (!tok->is_int)
			tok->i = 0;
	}
out:
	tok->raw = start;
	tok->raw_len = (size_t)(p - start);
	lx->p = p;
}

/* Skips white space and (HCL) comments; stops at an HCL newline. */
static void skip_space(struct hcl_lexer *lx)
{
	const char *p = lx->p, *end = lx->end;
	while (p < end) {
		char c = *p;
		if (c == ' ' || c == '\t' || c == '\r') {
			/* indentation comes in runs: eight spaces at a time */
			for (p++; end - p >= 8 && memcmp(p, "        ", 8) == 0; p += 8)
				;
			for (; p < end && *p == ' '; p++)
				;
		} else if (c == '\n') {
			if (!lx->json)
				break;
			new_line(lx, ++p);
		} else if (lx->json) {
			break;
		} else if (c == '#' || (c == '/' && p + 1 < end && p[1] == '/')) {
			p = memchr(p, '\n', (size_t)(end - p));
			if (!p)
				p = end;
		} else if (c == '/' && p + 1 < end && p[1] == '*') {
			const char *open = p;
			struct hcl_pos pos = pos_at(lx, open);
			for (p += 2; p < end; p++) {
				if (*p == '*' && p + 1 < end && p[1] == '/')
					break;
				if (*p == '\n')
					new_line(lx, p + 1);
			}
			if (p >= end) {
				lex_error(lx, pos, "unterminated comment; expected \"*/\"");
				p = end;
			} else {
				p += 2;
			}
		} else {
			break;
		}
	}
	lx->p = p;
}

static void lex_invalid(struct hcl_lexer *lx, struct hcl_token *tok)
{
	const char *p = lx->p;
	unsigned char c = (unsigned char)*p;
	size_t n = utf8_len((const unsigned char *)p, (const unsigned char *)lx->end);

	tok->kind = HCL_T_INVALID;
	if (c == '\'' && !lx->json)
		lex_error(lx, tok->pos, "unexpected character \"'\"; strings are written in double quotes");
	else if (c == '/' && lx->json)
		lex_error(lx, tok->pos, "unexpected character \"/\"; JSON has no comments");
	else if (c >= 0x20 && c < 0x7F)
		lex_error(lx, tok->pos, "unexpected character \"%c\"", c);
	else if (n > 1)
		lex_error(lx, tok->pos, "unexpected character \"%.*s\"", (int)n, p);
	else
		lex_error(lx, tok->pos, "unexpected byte 0x%02x", c);
	if (c == '\'' && !lx->json) {
		/* a single-quoted string: skip it whole, one error is enough */
		const char *q = p + 1;
		while (q < lx->end && *q != '\'' && *q != '\n')
			q++;
		if (q < lx->end && *q == '\'')
			n = (size_t)(q + 1 - p);
	}
	lx->p = p + (n ? n : 1);
	tok->raw_len = n ? n : 1;
}

void hcl_lex_next(struct hcl_lexer *lx, struct hcl_token *tok)
{
	const char *p, *end;
	unsigned char c;

	tok->s = NULL;
	tok->src = NULL;
	tok->len = 0;
	tok->heredoc = false;
	skip_space(lx);
	p = lx->p;
	end = lx->end;
	tok->pos = pos_at(lx, p);
	tok->raw = p;
	tok->raw_len = 1;
	if (p == end) {
		tok->kind = HCL_T_EOF;
		tok->raw_len = 0;
		return;
	}
	c = (unsigned char)*p;
	switch (c) {
	case '\n':
		tok->kind = HCL_T_NEWLINE;
		new_line(lx, ++lx->p);
		return;
	case '{': tok->kind = HCL_T_LBRACE; lx->p++; return;
	case '}': tok->kind = HCL_T_RBRACE; lx->p++; return;
	case '[': tok->kind = HCL_T_LBRACK; lx->p++; return;
	case ']': tok->kind = HCL_T_RBRACK; lx->p++; return;
	case ',': tok->kind = HCL_T_COMMA; lx->p++; return;
	case ':': tok->kind = HCL_T_COLON; lx->p++; return;
	case '"': lex_string(lx, tok); return;
	default: break;
	}
	if (is_digit(c) || (c == '-' && (lx->json || (p + 1 < end && is_digit((unsigned char)p[1]))))) {
		lex_number(lx, tok);
		return;
	}
	if (is_ident_start(c)) {
		int cls = lx->json ? C_JSONWORD : C_IDCHAR;
		while (p < end && has_class(*p, cls))
			p++;
		tok->kind = HCL_T_IDENT;
		tok->raw_len = (size_t)(p - lx->p);
		lx->p = p;
		return;
	}
	if (!lx->json) {
		switch (c) {
		case '(': tok->kind = HCL_T_LPAREN; lx->p++; return;
		case ')': tok->kind = HCL_T_RPAREN; lx->p++; return;
		case '=':
			if (p + 1 < end && (p[1] == '=' || p[1] == '>')) {
				tok->kind = HCL_T_OPERATOR;
				tok->raw_len = 2;
				lx->p += 2;
			} else {
				tok->kind = HCL_T_EQ;
				lx->p++;
			}
			return;
		case '<':
			if (p + 1 < end && p[1] == '<') {
				lex_heredoc(lx, tok);
				return;
			}
			break;
		default: break;
		}
		if (strchr("+-*/%!<>&|?.~^", c)) {
			tok->kind = HCL_T_OPERATOR;
			lx->p++;
			return;
		}
	}
	lex_invalid(lx, tok);
}

const char *hcl_token_describe(const struct hcl_token *tok, char *buf, size_t size)
{
	char q[HCL_QUOTE_MAX];
	switch (tok->kind) {
	case HCL_T_EOF: return "end of file";
	case HCL_T_NEWLINE: return "newline";
	case HCL_T_STRING: return tok->heredoc ? "a heredoc" : "a string";
	case HCL_T_NUMBER: return "a number";
	case HCL_T_INVALID: return "an invalid character";
	case HCL_T_IDENT:
	default:
		snprintf(buf, size, "%s", hcl_msg_quote(tok->raw, tok->raw_len, q, sizeof(q)));
		return buf;
	}
}
