/* json_sorted: a deep copy of a JSON value with every object's keys in
 * sorted order, the one both the store's canonical form (src/store/canon.c)
 * and the spec's sorted job encoding (job_to_json_sorted) are made with.
 *
 * The order is JSON_SORT_KEYS's: bytewise (unsigned bytes, so UTF-8 beyond
 * ASCII comes last) over the common length, then the shorter key first (a
 * prefix before the keys it starts).  jansson keeps an object's keys in
 * insertion order, so json_dumps of a copy writes the same text as
 * json_dumps(v, JSON_SORT_KEYS), and a copy encoded in its own key order
 * needs no sorting. */
#ifndef HERD_COMMON_JSON_SORTED_H
#define HERD_COMMON_JSON_SORTED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* What a caller may ask of the copy beyond the order; a zeroed struct (or
 * NULL for the whole) asks nothing. */
struct json_sorted_rules {
	/* Keys left out of v itself when v is an object (not of the objects
	 * inside it): NULL, or an array ended by NULL. */
	const char *const *drop_top;
	/* No copy (NULL) when v nests deeper than this many levels below
	 * itself (which also ends a value that loops back on itself); 0: no
	 * limit, for values made by json_loads, which cannot loop. */
	int max_depth;
	/* No copy (NULL) when a string value holds a NUL byte.  Keys are
	 * copied as they are (json_loads makes none holding NUL, though
	 * json_object_setn lets one in). */
	bool refuse_nul;
};

/* A new deep copy of v (NULL: NULL) with every object's keys inserted in
 * the order above.  The caller owns the returned reference
 * (json_decref).  The copy shares nothing mutable with v: every object,
 * array, string, integer and real is new (true, false and null are
 * jansson's immutable constants), so either may be changed or freed
 * without the other.  v is only read.  NULL when a rule refuses v or on
 * allocation failure; never a partial copy. */
json_t *json_sorted_copy(json_t *v, const struct json_sorted_rules *rules);

/* The order of two keys (a, alen bytes; b, blen bytes): < 0 when a comes
 * first, 0 when equal, > 0 when b comes first. */
static inline int json_sorted_keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

#endif
