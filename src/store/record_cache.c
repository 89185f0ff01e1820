/* record_cache.c: the store's cache of decoded records (record_cache.h). */
#include "store/record_cache.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct record_cache_entry {
	struct record_cache_entry *hnext;      /* hash chain */
	struct record_cache_entry *prev, *next; /* use order: prev is more recent */
	uint64_t hash, mi;
	json_t *obj;
	size_t bytes;
	unsigned kind;
	size_t keylen;
	char key[]; /* not NUL-terminated */
};

/* FNV-1a over the kind and the key text: keys are short, and their hash
 * costs nothing beside the parse a hit saves. */
static uint64_t key_hash(unsigned kind, const char *key, size_t keylen)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	h = (h ^ (kind & 0xff)) * 0x100000001b3ULL;
	for (size_t i = 0; i < keylen; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ULL;
	return h;
}

static size_t buckets_for(size_t max_entries)
{
	size_t n = 16;
	while (n < max_entries && n < ((size_t)1 << 30))
		n <<= 1;
	return n;
}

void record_cache_init(struct record_cache *c, size_t max_entries, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	c->nbuckets = buckets_for(max_entries);
	c->buckets = xcalloc(c->nbuckets, sizeof(*c->buckets));
}

static struct record_cache_entry **find_slot(struct record_cache *c, uint64_t hash,
					     unsigned kind, const char *key, size_t keylen)
{
	struct record_cache_entry **p = &c->buckets[hash & (c->nbuckets - 1)];
	for (; *p; p = &(*p)->hnext) {
		struct record_cache_entry *e = *p;
		if (e->hash == hash && e->kind == kind && e->keylen == keylen &&
		    memcmp(e->key, key, keylen) == 0)
			break;
	}
	return p;
}

static void lru_unlink(struct record_cache *c, struct record_cache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_front(struct record_cache *c, struct record_cache_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* Takes e (at *slot) out of the table and the use order and chains it on
 * *dead, to be freed once the lock is let go: freeing a decoded record
 * walks its whole tree, which readers need not wait for. */
static void unlink_entry(struct record_cache *c, struct record_cache_entry **slot,
			 struct record_cache_entry **dead)
{
	struct record_cache_entry *e = *slot;
	*slot = e->hnext;
	lru_unlink(c, e);
	c->n--;
	c->bytes -= e->bytes;
	e->hnext = *dead;
	*dead = e;
}

static void free_dead(struct record_cache_entry *dead)
{
	while (dead) {
		struct record_cache_entry *e = dead;
		dead = e->hnext;
		json_decref(e->obj);
		free(e);
	}
}

/* Evicts least recently used entries until the bounds hold (lock held). */
static void evict(struct record_cache *c, struct record_cache_entry **dead)
{
	while (c->tail && (c->n > c->max_entries || c->bytes > c->max_bytes)) {
		struct record_cache_entry *e = c->tail;
		unlink_entry(c, find_slot(c, e->hash, e->kind, e->key, e->keylen), dead);
		c->evictions++;
	}
}

void record_cache_release(struct record_cache *c)
{
	struct record_cache_entry *dead = NULL;
	while (c->tail) {
		struct record_cache_entry *e = c->tail;
		unlink_entry(c, find_slot(c, e->hash, e->kind, e->key, e->keylen), &dead);
	}
	free_dead(dead);
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	memset(c, 0, sizeof(*c));
}

void record_cache_limit(struct record_cache *c, size_t max_entries, size_t max_bytes)
{
	struct record_cache_entry *dead = NULL, *e;
	size_t nb = buckets_for(max_entries);

	pthread_mutex_lock(&c->lock);
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	evict(c, &dead);
	if (nb != c->nbuckets) {
		/* rehash what is left into a table sized for the new bound */
		free(c->buckets);
		c->nbuckets = nb;
		c->buckets = xcalloc(nb, sizeof(*c->buckets));
		for (e = c->head; e; e = e->next) {
			struct record_cache_entry **b = &c->buckets[e->hash & (nb - 1)];
			e->hnext = *b;
			*b = e;
		}
	}
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
}

json_t *record_cache_get(struct record_cache *c, unsigned kind, const char *key, size_t keylen,
			 uint64_t mi)
{
	uint64_t h = key_hash(kind, key, keylen);
	struct record_cache_entry *e;
	json_t *obj = NULL;

	pthread_mutex_lock(&c->lock);
	e = *find_slot(c, h, kind, key, keylen);
	if (e && e->mi == mi) {
		obj = json_incref(e->obj);
		if (c->head != e) {
			lru_unlink(c, e);
			lru_push_front(c, e);
		}
		c->hits++;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->lock);
	return obj;
}

void record_cache_put(struct record_cache *c, unsigned kind, const char *key, size_t keylen,
		      uint64_t mi, json_t *obj, size_t bytes)
{
	uint64_t h = key_hash(kind, key, keylen);
	struct record_cache_entry **slot, *e, *dead = NULL;

	if (!obj)
		return;
	pthread_mutex_lock(&c->lock);
	if (c->max_entries == 0 || bytes > c->max_bytes) {
		/* off, or one record larger than the whole bound */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	slot = find_slot(c, h, kind, key, keylen);
	if (*slot && (*slot)->mi >= mi) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (*slot)
		unlink_entry(c, slot, &dead);
	e = xmalloc(sizeof(*e) + keylen);
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->mi = mi;
	e->obj = json_incref(obj);
	e->bytes = bytes;
	e->kind = kind;
	e->keylen = keylen;
	memcpy(e->key, key, keylen);
	slot = &c->buckets[h & (c->nbuckets - 1)];
	e->hnext = *slot;
	*slot = e;
	lru_push_front(c, e);
	c->n++;
	c->bytes += bytes;
	evict(c, &dead);
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
}

void record_cache_drop(struct record_cache *c, unsigned kind, const char *key, size_t keylen,
		       uint64_t mi)
{
	uint64_t h = key_hash(kind, key, keylen);
	struct record_cache_entry **slot, *dead = NULL;

	pthread_mutex_lock(&c->lock);
	slot = find_slot(c, h, kind, key, keylen);
	if (*slot && (*slot)->mi < mi)
		unlink_entry(c, slot, &dead);
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
}

void record_cache_stats(struct record_cache *c, struct store_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	out->entries = c->n;
	out->bytes = c->bytes;
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	pthread_mutex_unlock(&c->lock);
}
