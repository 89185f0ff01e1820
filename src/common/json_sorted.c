/* json_sorted.c: a deep copy of JSON with sorted keys (json_sorted.h). */
#include "common/json_sorted.h"

#include <stdlib.h>

#include "common/xalloc.h"

/* Objects up to this many keys sort on the stack: every object a job or
 * a record holds. */
#define STACK_KEYS 32

struct sorted_key {
	const char *key;
	size_t len;
	json_t *value;
};

static int sorted_key_cmp(const void *a, const void *b)
{
	const struct sorted_key *x = a, *y = b;
	return json_sorted_keycmp(x->key, x->len, y->key, y->len);
}

static bool dropped(const struct json_sorted_rules *r, const char *key)
{
	for (const char *const *d = r->drop_top; d && *d; d++)
		if (!strcmp(key, *d))
			return true;
	return false;
}

static json_t *copy_at(json_t *v, const struct json_sorted_rules *r, int depth);

static json_t *copy_object(json_t *v, const struct json_sorted_rules *r, int depth)
{
	size_t n = json_object_size(v), m = 0;
	struct sorted_key stack[STACK_KEYS], *keys = n <= STACK_KEYS ? stack : xcalloc(n, sizeof(*keys));
	json_t *out = json_object(), *x;
	const char *k;
	size_t klen;

	json_object_keylen_foreach(v, k, klen, x) {
		if (depth == 0 && dropped(r, k))
			continue;
		keys[m++] = (struct sorted_key){ k, klen, x };
	}
	qsort(keys, m, sizeof(*keys), sorted_key_cmp);
	for (size_t i = 0; i < m && out; i++) {
		json_t *c = copy_at(keys[i].value, r, depth + 1);
		/* the keys are v's, so distinct: no need to look each up */
		if (!c || json_object_setn_new_nocheck(out, keys[i].key, keys[i].len, c)) {
			json_decref(out);
			out = NULL;
		}
	}
	if (keys != stack)
		free(keys);
	return out;
}

static json_t *copy_array(json_t *v, const struct json_sorted_rules *r, int depth)
{
	json_t *out = json_array(), *x;
	size_t i;

	json_array_foreach(v, i, x) {
		json_t *c = copy_at(x, r, depth + 1);
		if (!c || json_array_append_new(out, c)) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static json_t *copy_at(json_t *v, const struct json_sorted_rules *r, int depth)
{
	if (r->max_depth && depth > r->max_depth)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return copy_object(v, r, depth);
	case JSON_ARRAY:
		return copy_array(v, r, depth);
	case JSON_STRING:
		if (r->refuse_nul && memchr(json_string_value(v), 0, json_string_length(v)))
			return NULL;
		/* v's text is already checked UTF-8 (or was let in unchecked) */
		return json_stringn_nocheck(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return json_integer(json_integer_value(v));
	case JSON_REAL:
		return json_real(json_real_value(v));
	default: /* true, false, null: jansson's constants */
		return json_incref(v);
	}
}

json_t *json_sorted_copy(json_t *v, const struct json_sorted_rules *rules)
{
	static const struct json_sorted_rules none;
	return v ? copy_at(v, rules ? rules : &none, 0) : NULL;
}
