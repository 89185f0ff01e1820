/* batch.c: building a store_batch (see store.h). */
#include "store/store.h"

#include <string.h>

#include "common/xalloc.h"

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void store_batch_init(struct store_batch *b)
{
	memset(b, 0, sizeof(*b));
}

void store_batch_release(struct store_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nw; i++) {
		json_decref(b->w[i].obj);
		free(b->w[i].ns);
		free(b->w[i].id);
	}
	for (size_t i = 0; i < b->nc; i++) {
		free(b->c[i].ns);
		free(b->c[i].id);
	}
	free(b->w);
	free(b->c);
	store_batch_init(b);
}

static struct store_write *new_write(struct store_batch *b)
{
	ALLOC_GROW(b->w, b->nw + 1, b->aw);
	memset(&b->w[b->nw], 0, sizeof(b->w[0]));
	return &b->w[b->nw++];
}

static struct store_cond *new_cond(struct store_batch *b)
{
	ALLOC_GROW(b->c, b->nc + 1, b->ac);
	memset(&b->c[b->nc], 0, sizeof(b->c[0]));
	return &b->c[b->nc++];
}

void store_batch_put(struct store_batch *b, enum store_kind kind, json_t *obj)
{
	struct store_write *w = new_write(b);
	w->op = STORE_OP_PUT;
	w->kind = kind;
	w->obj = json_incref(obj);
}

void store_batch_put_owned(struct store_batch *b, enum store_kind kind, json_t *obj)
{
	struct store_write *w = new_write(b);
	w->op = STORE_OP_PUT;
	w->kind = kind;
	w->obj = obj;
	w->owned = true;
}

void store_batch_put_report(struct store_batch *b, enum store_kind kind, json_t *obj)
{
	store_batch_put(b, kind, obj);
	b->w[b->nw - 1].report = true;
}

void store_batch_delete(struct store_batch *b, enum store_kind kind, const struct store_key *key)
{
	struct store_write *w = new_write(b);
	w->op = STORE_OP_DELETE;
	w->kind = kind;
	w->ns = dup_or_null(key->ns);
	w->id = dup_or_null(key->id);
	w->version = key->version;
}

void store_batch_require_index(struct store_batch *b, enum store_kind kind,
			       const struct store_key *key, uint64_t index)
{
	struct store_cond *c = new_cond(b);
	c->type = STORE_COND_MODIFY_INDEX;
	c->kind = kind;
	c->ns = dup_or_null(key->ns);
	c->id = dup_or_null(key->id);
	c->version = key->version;
	c->index = index;
}

void store_batch_require_node_allocs(struct store_batch *b, const char *node_id, uint64_t index)
{
	struct store_cond *c = new_cond(b);
	c->type = STORE_COND_NODE_ALLOCS;
	c->id = dup_or_null(node_id);
	c->index = index;
}

void store_batch_require_job_allocs(struct store_batch *b, const char *ns, const char *job_id,
				    uint64_t index)
{
	struct store_cond *c = new_cond(b);
	c->type = STORE_COND_JOB_ALLOCS;
	c->ns = dup_or_null(ns);
	c->id = dup_or_null(job_id);
	c->index = index;
}

void store_batch_check(struct store_batch *b, store_check_fn *fn, void *arg)
{
	b->check = fn;
	b->check_arg = arg;
}
