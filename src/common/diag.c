#include "common/diag.h"

#include <stdarg.h>
#include <stdlib.h>

#include "common/strbuf.h"
#include "common/xalloc.h"

void diag_list_init(struct diag_list *dl)
{
	*dl = (struct diag_list){ 0 };
}

void diag_list_release(struct diag_list *dl)
{
	if (!dl)
		return;
	for (size_t i = 0; i < dl->n; i++)
		free(dl->v[i].msg);
	free(dl->v);
	diag_list_init(dl);
}

void diag_add(struct diag_list *dl, enum diag_level level, int line, int col, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	if (level == DIAG_ERROR)
		dl->errors++;
	else
		dl->warnings++;
	if (dl->truncated)
		return;
	if (dl->n >= DIAG_MAX) {
		dl->truncated = 1;
		line = col = 0;
		strbuf_adds(&sb, "too many errors; stopping here");
		level = DIAG_ERROR;
	} else {
		va_start(ap, fmt);
		strbuf_vaddf(&sb, fmt, ap);
		va_end(ap);
	}
	ALLOC_GROW(dl->v, dl->n + 1, dl->alloc);
	dl->v[dl->n++] = (struct diag){ level, line, col, strbuf_detach(&sb, NULL) };
}

/* Unpositioned diagnostics (line 0) sort after every positioned one. */
static int cmp_pos(const struct diag *a, const struct diag *b)
{
	if ((a->line == 0) != (b->line == 0))
		return a->line == 0 ? 1 : -1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->col != b->col)
		return a->col < b->col ? -1 : 1;
	return 0;
}

void diag_sort(struct diag_list *dl)
{
	/* insertion sort: stable, and lists are short (at most DIAG_MAX) */
	for (size_t i = 1; i < dl->n; i++) {
		struct diag d = dl->v[i];
		size_t j = i;
		while (j > 0 && cmp_pos(&dl->v[j - 1], &d) > 0) {
			dl->v[j] = dl->v[j - 1];
			j--;
		}
		dl->v[j] = d;
	}
}

void diag_print(const struct diag_list *dl, const char *file, FILE *out)
{
	for (size_t i = 0; i < dl->n; i++) {
		const struct diag *d = &dl->v[i];
		const char *kind = d->level == DIAG_WARNING ? "warning: " : "";
		if (d->line > 0)
			fprintf(out, "%s:%d:%d: %s%s\n", file, d->line, d->col, kind, d->msg);
		else
			fprintf(out, "%s: %s%s\n", file, kind, d->msg);
	}
}
