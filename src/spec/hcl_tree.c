/* The hcl tree: constructors, destructors, lookups, and the key set that
 * finds duplicate keys for both readers.  The nodes live in an arena
 * (hcl_arena.c). */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

struct hcl_expr *hcl_expr_new(struct hcl_arena *a, enum hcl_expr_kind kind, struct hcl_pos pos)
{
	struct hcl_expr *e = hcl_arena_zalloc(a, sizeof(*e));
	e->kind = kind;
	e->pos = pos;
	return e;
}

/* Only roots reach these (hcl.h): every node of the tree is in the arena
 * the root carries. */
void hcl_expr_free(struct hcl_expr *e)
{
	if (e)
		hcl_arena_free(((struct hcl_expr_root *)e)->arena);
}

void hcl_body_free(struct hcl_body *body)
{
	if (body)
		hcl_arena_free(((struct hcl_body_root *)body)->arena);
}

void hcl_scratch_release(struct hcl_scratch *s)
{
	free(s->elems);
	free(s->members);
	free(s->items);
	*s = (struct hcl_scratch){ 0 };
}

const struct hcl_attribute *hcl_body_attr(const struct hcl_body *body, const char *name)
{
	if (!body)
		return NULL;
	for (size_t i = 0; i < body->n; i++)
		if (body->items[i].kind == HCL_ITEM_ATTRIBUTE &&
		    strcmp(body->items[i].u.attr.name, name) == 0)
			return &body->items[i].u.attr;
	return NULL;
}

const char *hcl_kind_name(enum hcl_expr_kind kind)
{
	switch (kind) {
	case HCL_STRING: return "string";
	case HCL_NUMBER: return "number";
	case HCL_BOOL: return "bool";
	case HCL_NULL: return "null";
	case HCL_LIST: return "list";
	case HCL_OBJECT: return "object";
	}
	return "value";
}

static size_t hash_key(const char *s)
{
	size_t h = 14695981039346656037u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static void keyset_grow(struct hcl_keyset *ks)
{
	size_t cap = ks->cap ? ks->cap * 2 : 16;
	struct hcl_keyset_entry *v = xcalloc(cap, sizeof(*v));
	for (size_t i = 0; i < ks->cap; i++) {
		size_t j;
		if (!ks->v[i].key)
			continue;
		for (j = ks->v[i].hash & (cap - 1); v[j].key; j = (j + 1) & (cap - 1))
			;
		v[j] = ks->v[i];
	}
	free(ks->v);
	ks->v = v;
	ks->cap = cap;
}

static struct hcl_keyset_entry *keyset_probe(struct hcl_keyset *ks, const char *key, size_t h)
{
	size_t j;
	for (j = h & (ks->cap - 1); ks->v[j].key; j = (j + 1) & (ks->cap - 1))
		if (ks->v[j].hash == h && strcmp(ks->v[j].key, key) == 0)
			break;
	return &ks->v[j];
}

static bool same_key(const char *a, const char *b)
{
	return a[0] == b[0] && strcmp(a, b) == 0;
}

/* The first keys are compared directly, without hashing: most bodies and
 * objects are small.  Hashes are computed once the table is needed. */
const struct hcl_keyset_entry *hcl_keyset_add(struct hcl_keyset *ks, const char *key,
					      struct hcl_pos pos, size_t index)
{
	struct hcl_keyset_entry *e;
	size_t h;

	if (!ks->v) {
		for (size_t i = 0; i < ks->n; i++)
			if (same_key(ks->small[i].key, key))
				return &ks->small[i];
		if (ks->n < HCL_KEYSET_SMALL) {
			ks->small[ks->n++] = (struct hcl_keyset_entry){ key, 0, pos, index };
			return NULL;
		}
		keyset_grow(ks);
		for (size_t i = 0; i < HCL_KEYSET_SMALL; i++) {
			ks->small[i].hash = hash_key(ks->small[i].key);
			*keyset_probe(ks, ks->small[i].key, ks->small[i].hash) = ks->small[i];
		}
	}
	h = hash_key(key);
	if ((ks->n + 1) * 2 > ks->cap)
		keyset_grow(ks);
	e = keyset_probe(ks, key, h);
	if (e->key)
		return e;
	*e = (struct hcl_keyset_entry){ key, h, pos, index };
	ks->n++;
	return NULL;
}

const struct hcl_keyset_entry *hcl_keyset_find(const struct hcl_keyset *ks, const char *key)
{
	const struct hcl_keyset_entry *e;

	if (!ks->v) {
		for (size_t i = 0; i < ks->n; i++)
			if (same_key(ks->small[i].key, key))
				return &ks->small[i];
		return NULL;
	}
	e = keyset_probe((struct hcl_keyset *)ks, key, hash_key(key));
	return e->key ? e : NULL;
}

void hcl_keyset_release(struct hcl_keyset *ks)
{
	free(ks->v);
	ks->v = NULL;
	ks->cap = ks->n = 0;
}
