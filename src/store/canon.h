/* canon: a record's canonical form, private to src/store.
 *
 * The store keeps each record as its canonical JSON text: compact, object
 * keys sorted (the order JSON_SORT_KEYS writes: bytewise, a prefix first),
 * without the store's own create_index and modify_index at the top.  A put
 * makes the canonical object first (canon_copy: a deep copy in that order)
 * and encodes it (canon_encode); once the commit is durable, the same
 * object is what the cache of decoded records keeps (record_cache.h),
 * since json_loads of the text gives an equal object with its keys in the
 * same order. */
#ifndef HERD_STORE_CANON_H
#define HERD_STORE_CANON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A new deep copy of v with every object's keys inserted in canonical
 * order (json_sorted_copy, common/json_sorted.h, with the store's rules:
 * top, without create_index and modify_index), or NULL when its
 * text would not load back as the same object (a string holding NUL,
 * which json_loads refuses as \u0000) or v nests deeper than json_loads
 * accepts (or loops back on itself). */
json_t *canon_copy(json_t *v, bool top);

/* The compact JSON text of v (heap; free()), in v's own key order: for a
 * canon_copy, what json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) writes,
 * byte for byte.  *len (may be NULL) receives its length.  NULL when v
 * cannot be encoded (a NaN or infinite real, a string that is not
 * UTF-8). */
char *canon_encode(const json_t *v, size_t *len);

/* canon_encode of an object that is already what canon_copy(v, true)
 * would make: every object's keys in canonical order, none of the store's
 * indexes at the top, no string value holding NUL.  NULL when v is not
 * (or cannot be encoded): the caller then copies it the usual way.  This
 * lets a put whose object the store may keep skip the copy. */
char *canon_encode_canonical(const json_t *v, size_t *len);

#endif
