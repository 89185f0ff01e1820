/* diag: a list of positioned diagnostics (errors and warnings) about a file.
 *
 * Parsers and validators that must report every problem in one run collect
 * them here instead of stopping at the first.  The list owns its strings.
 * Printing is left to the caller (library code does not log); diag_format
 * renders the conventional "file:line:col: message" form. */
#ifndef HERD_DIAG_H
#define HERD_DIAG_H

#include <stddef.h>
#include <stdio.h>

enum diag_level { DIAG_ERROR, DIAG_WARNING };

struct diag {
	enum diag_level level;
	int line, col;  /* 1-based; 0 when the position is unknown */
	char *msg;
};

/* Past this many errors a list records one "too many errors" and stops. */
#define DIAG_MAX 100

struct diag_list {
	struct diag *v;
	size_t n, alloc;
	size_t errors, warnings;
	int truncated;
};

void diag_list_init(struct diag_list *dl);
void diag_list_release(struct diag_list *dl);
void diag_add(struct diag_list *dl, enum diag_level level, int line, int col,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define diag_error(dl, line, col, ...) diag_add(dl, DIAG_ERROR, line, col, __VA_ARGS__)
#define diag_warn(dl, line, col, ...) diag_add(dl, DIAG_WARNING, line, col, __VA_ARGS__)
/* Sorts by position (stable), so that reports read top to bottom. */
void diag_sort(struct diag_list *dl);
/* Writes every diagnostic as "file:line:col: [warning: ]message\n". */
void diag_print(const struct diag_list *dl, const char *file, FILE *out);

#endif
