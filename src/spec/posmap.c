/* posmap: json_t pointer -> source position, an open-addressing hash map
 * with linear probing (no deletion is needed: a map lives as long as one
 * decode), and the conversion of hcl expressions to jansson trees. */
#include "spec/posmap.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

struct posmap_slot {
	const json_t *key;
	struct hcl_pos pos;
};

struct posmap {
	struct posmap_slot *v;
	size_t cap, n; /* cap: a power of two, or 0 */
};

struct posmap *posmap_new(void)
{
	return xcalloc(1, sizeof(struct posmap));
}

void posmap_free(struct posmap *pm)
{
	if (!pm)
		return;
	free(pm->v);
	free(pm);
}

/* Pointers are aligned and close together: mix them so that the low bits
 * used as the index spread (a 64-bit multiplicative hash). */
static size_t hash_ptr(const json_t *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static struct posmap_slot *find_slot(struct posmap_slot *v, size_t cap, const json_t *key)
{
	size_t j;
	for (j = hash_ptr(key) & (cap - 1); v[j].key && v[j].key != key; j = (j + 1) & (cap - 1))
		;
	return &v[j];
}

static void grow(struct posmap *pm)
{
	size_t cap = pm->cap ? pm->cap * 2 : 64;
	struct posmap_slot *v = xcalloc(cap, sizeof(*v));
	for (size_t i = 0; i < pm->cap; i++)
		if (pm->v[i].key)
			*find_slot(v, cap, pm->v[i].key) = pm->v[i];
	free(pm->v);
	pm->v = v;
	pm->cap = cap;
}

void posmap_set(struct posmap *pm, const json_t *value, struct hcl_pos pos)
{
	struct posmap_slot *s;
	if (!pm || !value)
		return;
	if ((pm->n + 1) * 2 > pm->cap)
		grow(pm);
	s = find_slot(pm->v, pm->cap, value);
	if (!s->key)
		pm->n++;
	s->key = value;
	s->pos = pos;
}

struct hcl_pos posmap_get(const struct posmap *pm, const json_t *value)
{
	const struct posmap_slot *s;
	if (!pm || !value || pm->cap == 0)
		return (struct hcl_pos){ 0, 0 };
	s = find_slot(pm->v, pm->cap, value);
	return s->key ? s->pos : (struct hcl_pos){ 0, 0 };
}

/* jansson returns NULL only for invalid input (the readers validate UTF-8
 * and reject infinities) or out of memory: both are broken invariants. */
static json_t *must(json_t *j)
{
	if (!j)
		abort();
	return j;
}

/* Recursion is bounded by the readers' depth limit.  Strings and keys were
 * checked to be UTF-8 by the readers (or by jansson), hence _nocheck. */
json_t *hcl_expr_to_json(const struct hcl_expr *e, struct posmap *pm)
{
	json_t *j;

	switch (e->kind) {
	case HCL_STRING:
		j = must(json_stringn_nocheck(e->u.str.s, e->u.str.len));
		break;
	case HCL_NUMBER:
		j = must(e->u.num.is_int ? json_integer(e->u.num.i) : json_real(e->u.num.value));
		break;
	case HCL_BOOL:
		j = json_boolean(e->u.boolean);
		break;
	case HCL_LIST:
		j = must(json_array());
		for (size_t i = 0; i < e->u.list.n; i++)
			json_array_append_new(j, hcl_expr_to_json(e->u.list.v[i], pm));
		break;
	case HCL_OBJECT:
		j = must(json_object());
		for (size_t i = 0; i < e->u.object.n; i++)
			json_object_set_new_nocheck(j, e->u.object.v[i].key,
						    hcl_expr_to_json(e->u.object.v[i].value, pm));
		break;
	case HCL_NULL:
	default:
		j = json_null();
		break;
	}
	/* true, false and null are shared singletons in jansson: a position for
	 * them would be overwritten by the next one, so they get none. */
	if (pm && e->kind != HCL_BOOL && e->kind != HCL_NULL)
		posmap_set(pm, j, e->pos);
	return j;
}

/* jansson's own depth limit (2048 on input) bounds the recursion. */
struct hcl_expr *hcl_expr_from_json(struct hcl_arena *a, const json_t *j, const struct posmap *pm)
{
	struct hcl_expr *e = hcl_arena_zalloc(a, sizeof(*e));
	const char *key;
	json_t *v;
	size_t i;

	e->pos = posmap_get(pm, j);
	switch (json_typeof(j)) {
	case JSON_STRING:
		e->kind = HCL_STRING;
		e->u.str.s = (char *)json_string_value(j);
		e->u.str.len = json_string_length(j);
		break;
	case JSON_INTEGER:
		e->kind = HCL_NUMBER;
		e->u.num.is_int = true;
		e->u.num.i = json_integer_value(j);
		e->u.num.value = (double)e->u.num.i;
		break;
	case JSON_REAL:
		e->kind = HCL_NUMBER;
		e->u.num.value = json_real_value(j);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		e->kind = HCL_BOOL;
		e->u.boolean = json_is_true(j);
		break;
	case JSON_ARRAY:
		e->kind = HCL_LIST;
		e->u.list.n = json_array_size(j);
		e->u.list.v = hcl_arena_alloc(a, e->u.list.n * sizeof(*e->u.list.v));
		json_array_foreach(j, i, v)
			e->u.list.v[i] = hcl_expr_from_json(a, v, pm);
		break;
	case JSON_OBJECT:
		e->kind = HCL_OBJECT;
		e->u.object.v = hcl_arena_alloc(a, json_object_size(j) * sizeof(*e->u.object.v));
		json_object_foreach((json_t *)j, key, v) {
			struct hcl_object_item *m = &e->u.object.v[e->u.object.n++];
			*m = (struct hcl_object_item){ .key = (char *)key, .value = hcl_expr_from_json(a, v, pm) };
			/* a map has no key positions: the value's stands in */
			m->key_pos = m->value->pos;
		}
		break;
	case JSON_NULL:
	default:
		e->kind = HCL_NULL;
		break;
	}
	return e;
}
