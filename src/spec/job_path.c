/* The JSON path of the value being decoded or validated ("groups[0].tasks[1]"),
 * kept as a stack of segments and written out only when a message needs it:
 * formatting it at every step cost more than the rest of the decoding. */
#include "spec/job-int.h"

#include <stdlib.h>

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

void job_path_release(struct job_path *p)
{
	free(p->v);
	strbuf_release(&p->text);
	*p = (struct job_path)JOB_PATH_INIT;
}
