/* The JSON path of the value being decoded or validated ("groups[0].tasks[1]"),
 * kept as a stack of segments and written out only when a message needs it:
 * formatting it at every step cost more than the rest of the decoding. */
#include "spec/job-int.h"

#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/xalloc.h"

static size_t push(struct job_path *p, const char *key, size_t index)
{
	size_t old = p->n;
	ALLOC_GROW(p->v, p->n + 1, p->alloc);
	p->v[p->n++] = (struct job_path_seg){ key, index };
	return old;
}

size_t job_path_push_key(struct job_path *p, const char *key)
{
	return push(p, key, 0);
}

size_t job_path_push_index(struct job_path *p, size_t index)
{
	return push(p, NULL, index);
}

const char *job_path_text(struct job_path *p)
{
	if (p->n == 0)
		return "job";
	strbuf_reset(&p->text);
	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].key) {
			if (i)
				strbuf_addch(&p->text, '.');
			strbuf_adds(&p->text, p->v[i].key);
		} else {
			strbuf_addf(&p->text, "[%zu]", p->v[i].index);
		}
	}
	return p->text.buf;
}

void job_path_verror(struct diag_list *diags, struct job_path *path, struct hcl_pos pos,
		     const char *fmt, va_list ap)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_vaddf(&sb, fmt, ap);
	diag_error(diags, pos.line, pos.col, "%s: %s", job_path_text(path), sb.buf);
	strbuf_release(&sb);
}

void job_path_release(struct job_path *p)
{
	free(p->v);
	strbuf_release(&p->text);
	*p = (struct job_path)JOB_PATH_INIT;
}

/* Optimal string alignment distance over two rows of the table (names are
 * short: longer ones are not compared). */
int job_edit_distance(const char *a, const char *b, int limit)
{
	enum { MAXLEN = 64 };
	int rows[3][MAXLEN + 1];
	size_t n = strlen(a), m = strlen(b);
	int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

	if (n > MAXLEN || m > MAXLEN || (n > m ? n - m : m - n) >= (size_t)limit)
		return limit;
	for (size_t j = 0; j <= m; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= n; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= m; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = prev[j - 1] + cost;
			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < v)
				v = prev2[j - 2] + 1;
			cur[j] = v;
		}
		int *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[m] < limit ? prev[m] : limit;
}
