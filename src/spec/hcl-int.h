/* hcl-int.h: private to src/spec: the lexer shared by the HCL and JSON
 * readers, and small helpers of the tree builders.
 *
 * One lexer serves both syntaxes (mode json): strings, numbers and
 * positions are scanned by the same code, only the rules differ (JSON has
 * its own escapes, no comments, no templates, stricter numbers). */
#ifndef HERD_SPEC_HCL_INT_H
#define HERD_SPEC_HCL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/strbuf.h"
#include "spec/hcl.h"

/* A number literal longer than this is an error: no real file needs it, and
 * it keeps strtod's work bounded. */
#define HCL_MAX_NUMBER_LEN 256

enum hcl_tok {
	HCL_T_EOF,
	HCL_T_NEWLINE,  /* HCL only; JSON treats newlines as white space */
	HCL_T_IDENT,
	HCL_T_STRING,   /* quoted string or heredoc */
	HCL_T_NUMBER,
	HCL_T_LBRACE,
	HCL_T_RBRACE,
	HCL_T_LBRACK,
	HCL_T_RBRACK,
	HCL_T_LPAREN,
	HCL_T_RPAREN,
	HCL_T_EQ,
	HCL_T_COLON,
	HCL_T_COMMA,
	HCL_T_OPERATOR, /* HCL expression syntax we refuse: + - * / ! . ? ... */
	HCL_T_INVALID,  /* the lexer has already reported an error for it */
};

struct hcl_token {
	enum hcl_tok kind;
	struct hcl_pos pos;
	const char *raw;      /* the source bytes of the token */
	size_t raw_len;
	/* HCL_T_STRING: the value, owned by the token until taken */
	char *s;
	size_t len;
	bool heredoc;
	/* HCL_T_NUMBER */
	double num;
	int64_t i;
	bool is_int;
};

struct hcl_lexer {
	const char *p, *end;
	const char *line_start;
	int line;
	bool json;
	struct diag_list *diags;
};

/* text need not be NUL-terminated; a leading UTF-8 byte order mark is
 * skipped.  The lexer keeps pointers into text. */
void hcl_lexer_init(struct hcl_lexer *lx, const char *text, size_t len, bool json,
		    struct diag_list *diags);
/* Scans the next token into tok (releasing nothing: call hcl_token_release
 * first if tok held a string).  Errors inside a token (bad escape, invalid
 * UTF-8, string too long, number out of range) are reported to diags and
 * the token is still returned with its kind, so parsing goes on; characters
 * that start no token give HCL_T_INVALID after one report.  Never reads past
 * end; every byte is looked at a bounded number of times (O(n) overall). */
void hcl_lex_next(struct hcl_lexer *lx, struct hcl_token *tok);
void hcl_token_release(struct hcl_token *tok);
/* Hands tok's string to the caller (heap, NUL-terminated). */
char *hcl_token_take_string(struct hcl_token *tok, size_t *len);

/* True when dl records no more messages (see DIAG_MAX): the error is
 * then only counted, which spares formatting a message nobody will see. */
static inline bool hcl_diags_full(struct diag_list *dl)
{
	if (!dl->truncated)
		return false;
	diag_error(dl, 0, 0, "%s", "");
	return true;
}

/* Describes a token for "found ..." in messages, into buf. */
const char *hcl_token_describe(const struct hcl_token *tok, char *buf, size_t size);

/* Writes s (len bytes) as a quoted, printable name for messages: escapes
 * control and non-ASCII bytes, cuts long names with "...". */
const char *hcl_msg_quote(const char *s, size_t len, char *buf, size_t size);
#define HCL_QUOTE_MAX 200

/* keyset: finds duplicate keys in O(1) per key (bodies and objects may have
 * up to HCL_MAX_ITEMS keys, so a linear scan would be quadratic).  Keys are
 * borrowed: they must outlive the set. */
struct hcl_keyset_entry {
	const char *key;
	size_t hash;
	struct hcl_pos pos;
};

#define HCL_KEYSET_SMALL 8

struct hcl_keyset {
	/* the first keys are searched linearly (most bodies and objects are
	 * small, and this saves an allocation); a hash table beyond that */
	struct hcl_keyset_entry small[HCL_KEYSET_SMALL];
	struct hcl_keyset_entry *v;
	size_t cap, n;
};

/* Adds key; returns NULL when it was new, or the entry of the same key
 * added earlier (and adds nothing). */
const struct hcl_keyset_entry *hcl_keyset_add(struct hcl_keyset *ks, const char *key,
					      struct hcl_pos pos);
void hcl_keyset_release(struct hcl_keyset *ks);

/* Tree constructors used by both readers. */
struct hcl_expr *hcl_expr_new(enum hcl_expr_kind kind, struct hcl_pos pos);
/* A string or number expression from tok (taking its string), or NULL when
 * tok is neither. */
struct hcl_expr *hcl_expr_from_token(struct hcl_token *tok);
void hcl_item_release(struct hcl_item *item);

#endif
