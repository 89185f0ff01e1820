/* record_cache: decoded records, shared between readers; private to
 * src/store.
 *
 * Each entry maps a record's identity, (kind, key text), to the object
 * decoded from its stored text at one modify_index.  A committed record's
 * (kind, key, modify_index) names one stored text for ever (every commit
 * has its own index, and a row with modify_index M was written by commit M
 * and not since), so an entry is valid for exactly that modify_index: the
 * store reads the row's modify_index in the caller's own transaction and
 * asks for that one; an entry at another index is a miss.  Only objects of
 * committed state go in (store.c): what a commit wrote, once it is
 * durable, and what a read outside any commit's transaction decoded; a
 * change seen inside a commit's transaction may still be rolled back and
 * its index used again by another.
 *
 * The objects are shared read-only by every thread that gets one: nobody
 * changes them (jansson's reference counts are atomic, and reading an
 * object from several threads is safe while none writes it).  The cache
 * is bounded by entries and by bytes of stored text (the decoded object
 * takes about ten times that in jansson's nodes); beyond either bound the
 * least recently used entries go.  One mutex guards everything. */
#ifndef HERD_STORE_RECORD_CACHE_H
#define HERD_STORE_RECORD_CACHE_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct record_cache_entry;

struct record_cache {
	pthread_mutex_t lock;
	struct record_cache_entry **buckets; /* hash chains; nbuckets is a power of 2 */
	size_t nbuckets;
	struct record_cache_entry *head, *tail; /* most and least recently used */
	size_t n, bytes;                        /* entries, bytes of stored text */
	size_t max_entries, max_bytes;          /* 0 entries: caching is off */
	uint64_t hits, misses, evictions;
};

void record_cache_init(struct record_cache *c, size_t max_entries, size_t max_bytes);
/* Drops every entry (the objects live on while someone holds them). */
void record_cache_release(struct record_cache *c);
/* Changes the bounds, evicting what exceeds them; 0 entries empties the
 * cache and turns it off. */
void record_cache_limit(struct record_cache *c, size_t max_entries, size_t max_bytes);

/* The object of (kind, key) at modify_index mi: a new reference, or NULL
 * (counted as a miss) when the cache has none at that index. */
json_t *record_cache_get(struct record_cache *c, unsigned kind, const char *key, size_t keylen,
			 uint64_t mi);
/* Keeps obj (takes a new reference; obj must never change again) as the
 * object of (kind, key) at mi, costing `bytes` against the bound.  An entry
 * at a higher index is kept instead: a reader in an older view must not
 * displace what newer ones read. */
void record_cache_put(struct record_cache *c, unsigned kind, const char *key, size_t keylen,
		      uint64_t mi, json_t *obj, size_t bytes);
/* Forgets (kind, key) if its entry is older than mi (a record rewritten or
 * deleted at mi); mi UINT64_MAX forgets it whatever its index. */
void record_cache_drop(struct record_cache *c, unsigned kind, const char *key, size_t keylen,
		       uint64_t mi);

void record_cache_stats(struct record_cache *c, struct store_cache_stats *out);

#endif
