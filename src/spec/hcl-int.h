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

struct hcl_arena;

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
	/* HCL_T_STRING: the value, len bytes: either s (heap, owned by the
	 * token until taken) or, when s is NULL, the source bytes at src */
	char *s;
	const char *src;
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
/* Copies tok's string into a (NUL-terminated) and releases the token's. */
char *hcl_token_take_string(struct hcl_token *tok, struct hcl_arena *a, size_t *len);

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
	size_t index; /* the caller's, e.g. where the key's member is */
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
					      struct hcl_pos pos, size_t index);
/* The entry of key, or NULL. */
const struct hcl_keyset_entry *hcl_keyset_find(const struct hcl_keyset *ks, const char *key);
void hcl_keyset_release(struct hcl_keyset *ks);

/* hcl_arena (hcl_arena.c): all the memory of one tree, freed at once by
 * hcl_body_free or hcl_expr_free of its root.  Nothing in a tree is freed
 * on its own: a part the readers drop after an error stays until then. */
struct hcl_arena_chunk;
struct hcl_arena {
	char *p, *end; /* the free space of the current chunk */
	struct hcl_arena_chunk *chunks;
	size_t next_size;
};

struct hcl_arena *hcl_arena_new(void);
void hcl_arena_free(struct hcl_arena *a); /* accepts NULL */
/* An arena whose first chunk is buf (size bytes, the caller's, e.g. on its
 * stack, aligned for any node), for a tree that lives only as long as the
 * caller's frame: a small tree then costs no malloc at all.  Chunks beyond
 * buf come from the heap; hcl_arena_release frees them (not buf, not a). */
void hcl_arena_init_buf(struct hcl_arena *a, void *buf, size_t size);
void hcl_arena_release(struct hcl_arena *a);
/* n bytes aligned for any tree node; never NULL. */
void *hcl_arena_alloc(struct hcl_arena *a, size_t n);
void *hcl_arena_zalloc(struct hcl_arena *a, size_t n);
/* A copy of n bytes of src (NULL when n is 0). */
void *hcl_arena_dup(struct hcl_arena *a, const void *src, size_t n);
/* A NUL-terminated copy of s[0..n). */
char *hcl_arena_strndup(struct hcl_arena *a, const char *s, size_t n);

/* The roots the readers return: the arena travels with the tree, so that
 * the public free functions find it. */
struct hcl_body_root {
	struct hcl_body body;
	struct hcl_arena *arena;
};

struct hcl_expr_root {
	struct hcl_expr expr;
	struct hcl_arena *arena;
};

/* The tree constructor used by both readers; the node lives in a. */
struct hcl_expr *hcl_expr_new(struct hcl_arena *a, enum hcl_expr_kind kind, struct hcl_pos pos);

/* Scratch stacks where the readers collect the elements of the lists,
 * objects and bodies being read (innermost on top); each is copied to the
 * arena once complete, at its exact size. */
struct hcl_scratch {
	struct hcl_expr **elems;
	size_t nelems, elems_alloc;
	struct hcl_object_item *members;
	size_t nmembers, members_alloc;
	struct hcl_item *items;
	size_t nitems, items_alloc;
};

void hcl_scratch_release(struct hcl_scratch *s);

/* A copy in a of the n elements of size bytes from v[first] on (NULL when
 * n is 0, so that an empty stack's NULL is never offset). */
static inline void *hcl_scratch_take(struct hcl_arena *a, const void *v, size_t first, size_t n,
				     size_t size)
{
	return n ? hcl_arena_dup(a, (const char *)v + first * size, n * size) : NULL;
}

/* hcl_reader (hcl_reader.c): the state and the steps both readers share.
 * Messages go to diags; the tree being built lives in arena. */
struct hcl_reader {
	struct hcl_lexer lx;
	struct hcl_token tok; /* the current token */
	struct diag_list *diags;
	size_t errors0; /* errors in diags before this parse */
	int depth;
	/* HCL only: the brackets opened by the current item and not closed
	 * when an error stopped it, innermost last (see hcl_parse.c) */
	struct strbuf open;
	struct hcl_arena *arena; /* owns the tree being built */
	struct hcl_scratch sc;
};

/* Starts reading text: the first token is current and r owns a new arena.
 * False, with an error in diags and nothing to finish, when text is larger
 * than HCL_MAX_INPUT. */
bool hcl_reader_start(struct hcl_reader *r, const char *text, size_t len, bool json,
		      struct diag_list *diags);
/* Releases what the reading held; true when it reported no error.  On
 * false the arena (and every node in it) is freed. */
bool hcl_reader_finish(struct hcl_reader *r);
/* Makes the next token current. */
void hcl_reader_next(struct hcl_reader *r);
/* An error at pos (only counted once diags is full). */
void hcl_reader_error(struct hcl_reader *r, struct hcl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "<message>, found <current token>" at the current token, unless the
 * lexer has already reported that token as invalid. */
void hcl_reader_syntax_error(struct hcl_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* One level deeper (the caller undoes it with depth--, also on failure);
 * false, with an error at pos, past HCL_MAX_DEPTH. */
bool hcl_reader_enter(struct hcl_reader *r, struct hcl_pos pos);
/* The current token as a string, number, true, false or null (then
 * consumed, its string taken), or NULL when it is none of them (then
 * nothing is reported or consumed). */
struct hcl_expr *hcl_reader_scalar(struct hcl_reader *r);
/* Adds v to list on the scratch stack; past HCL_MAX_ITEMS one error
 * ("<noun> has more than ...", *full set) and v is dropped. */
void hcl_reader_add_element(struct hcl_reader *r, struct hcl_expr *list, struct hcl_expr *v,
			    bool *full, const char *noun);
/* Adds key = v to obj on the scratch stack; a duplicate key (found through
 * keys) or a key past HCL_MAX_ITEMS is reported and dropped. */
void hcl_reader_add_member(struct hcl_reader *r, struct hcl_expr *obj, struct hcl_keyset *keys,
			   char *key, struct hcl_pos kpos, struct hcl_expr *v, bool *full);
/* At the closing bracket: consumes it, leaves the level, and moves the
 * elements (members) gathered since base to the arena. */
void hcl_reader_close_list(struct hcl_reader *r, struct hcl_expr *list, size_t base);
void hcl_reader_close_object(struct hcl_reader *r, struct hcl_expr *obj, size_t base);

#endif
