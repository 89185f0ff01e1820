/* groups: nodes in identical states, so that a placement scores each
 * distinct state once instead of every node.
 *
 * Two nodes belong to the same group when everything a score or a device
 * choice reads is equal: CPU and memory (total and used), the hosted task
 * classes (clustering), and per device in index order its profile, memory,
 * compute and memory taken, tenants, NUMA node, NVLink group, health and
 * sharing mode.  Device order is kept as is (not sorted): then the devices a
 * score picks on one member are the very devices it would pick on any other,
 * and the result equals the plain scan's.
 *
 * A group's state never changes (a node that changes moves to another
 * group), so its score for a request shape stays valid for as long as it
 * lives.  Members are kept in a binary min-heap by (tie rank, node index),
 * so the tie rule of the plain scan (the lowest rank among equal scores) is
 * the top member.  For each of the last GROUP_SHAPES request shapes, the
 * groups where it fits are kept in a max-heap by (score, top member's tie
 * order); a placement scores only the groups created since that shape was
 * last placed and reads the top: O(new groups + log groups), not O(nodes).
 *
 * The index is built lazily by the first grouped placement, dropped when a
 * node or device is added, and updated by apply/release (group_node_moved). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"

#define KEY_NODE 15  /* cpu total/used, mem total/used, ndev, hosted[10] */
#define KEY_DEV 7

static size_t key_len(const struct sched_node *n)
{
	return KEY_NODE + (size_t)n->ndev * KEY_DEV;
}

static void key_of(const struct sched_node *n, int64_t *k)
{
	size_t j = 0;
	k[j++] = n->cpu_total;
	k[j++] = n->cpu_used;
	k[j++] = n->mem_total;
	k[j++] = n->mem_used;
	k[j++] = n->ndev;
	for (int i = 0; i < 10; i++)
		k[j++] = n->hosted[i];
	for (int d = 0; d < n->ndev; d++) {
		const struct sched_dev *v = &n->dev[d];
		k[j++] = v->profile;
		k[j++] = v->mem_total;
		k[j++] = v->mem_taken;
		k[j++] = v->compute_taken;
		k[j++] = v->tenants;
		k[j++] = (int64_t)((uint64_t)(uint32_t)v->numa << 32 | (uint32_t)v->nvlink);
		k[j++] = (int64_t)v->unhealthy | (int64_t)v->sharing << 1 |
			 (int64_t)v->max_tenants << 8;
	}
}

static uint64_t key_hash(const int64_t *k, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= (uint64_t)k[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

/* ---- member heaps ------------------------------------------------------ */

static bool before(const struct group_index *g, int a, int b)
{
	uint32_t ra = g->rank[a], rb = g->rank[b];
	return ra != rb ? ra < rb : a < b;
}

static void heap_set(struct group_index *g, struct node_group *c, int at, int node)
{
	c->heap[at] = node;
	g->heap_pos[node] = at;
}

static void sift_up(struct group_index *g, struct node_group *c, int at)
{
	int node = c->heap[at];
	while (at > 0) {
		int up = (at - 1) / 2;
		if (!before(g, node, c->heap[up]))
			break;
		heap_set(g, c, at, c->heap[up]);
		at = up;
	}
	heap_set(g, c, at, node);
}

static void sift_down(struct group_index *g, struct node_group *c, int at)
{
	int node = c->heap[at];
	for (;;) {
		int l = 2 * at + 1, m = l;
		if (l >= c->n)
			break;
		if (l + 1 < c->n && before(g, c->heap[l + 1], c->heap[l]))
			m = l + 1;
		if (!before(g, c->heap[m], node))
			break;
		heap_set(g, c, at, c->heap[m]);
		at = m;
	}
	heap_set(g, c, at, node);
}

/* ---- shape heaps: the groups by score for one request shape ------------ */

static bool shape_better(const struct group_index *g, const struct shape_rank *r, int a, int b)
{
	if (r->score[a] != r->score[b])
		return r->score[a] > r->score[b];
	return before(g, g->grp[a].heap[0], g->grp[b].heap[0]);
}

static void shape_set(struct shape_rank *r, int at, int id)
{
	r->heap[at] = id;
	r->pos[id] = at;
}

static void shape_up(const struct group_index *g, struct shape_rank *r, int at)
{
	int id = r->heap[at];
	while (at > 0) {
		int up = (at - 1) / 2;
		if (!shape_better(g, r, id, r->heap[up]))
			break;
		shape_set(r, at, r->heap[up]);
		at = up;
	}
	shape_set(r, at, id);
}

static void shape_down(const struct group_index *g, struct shape_rank *r, int at)
{
	int id = r->heap[at];
	for (;;) {
		int l = 2 * at + 1, m = l;
		if (l >= r->nheap)
			break;
		if (l + 1 < r->nheap && shape_better(g, r, r->heap[l + 1], r->heap[l]))
			m = l + 1;
		if (!shape_better(g, r, r->heap[m], id))
			break;
		shape_set(r, at, r->heap[m]);
		at = m;
	}
	shape_set(r, at, id);
}

/* Group id's top member changed: restore its place in every shape heap. */
static void shapes_fix(struct group_index *g, int id)
{
	for (int i = 0; i < GROUP_SHAPES; i++) {
		struct shape_rank *r = &g->shp[i];
		if (!r->used || (size_t)id >= r->cap || r->pos[id] < 0)
			continue;
		shape_up(g, r, r->pos[id]);
		shape_down(g, r, r->pos[id]);
	}
}

/* Group id died: out of every shape heap, unscored for its next life. */
static void shapes_forget(struct group_index *g, int id)
{
	for (int i = 0; i < GROUP_SHAPES; i++) {
		struct shape_rank *r = &g->shp[i];
		int at;
		if (!r->used || (size_t)id >= r->cap)
			continue;
		at = r->pos[id];
		r->pos[id] = -1;
		if (at < 0)
			continue;
		if (at < --r->nheap) {
			int moved = r->heap[r->nheap];
			shape_set(r, at, moved);
			shape_up(g, r, at);
			shape_down(g, r, r->pos[moved]);
		}
	}
}

static void shape_reserve(struct shape_rank *r, size_t n)
{
	size_t old = r->cap;
	if (n <= old)
		return;
	n = n < 2 * old ? 2 * old : n;
	r->score = xreallocarray(r->score, n, sizeof(*r->score));
	r->pick = xreallocarray(r->pick, n, sizeof(*r->pick));
	r->pos = xreallocarray(r->pos, n, sizeof(*r->pos));
	r->heap = xreallocarray(r->heap, n, sizeof(*r->heap));
	for (size_t i = old; i < n; i++)
		r->pos[i] = -1;
	r->cap = n;
}

static void shape_score(struct group_index *g, struct shape_rank *r, int id, group_score_fn fn,
			void *ctx)
{
	int pick[SCHED_MAX_DEVS_PER_ASK] = { 0 };
	double sc = fn(ctx, g->grp[id].heap[0], pick);
	for (int i = 0; i < SCHED_MAX_DEVS_PER_ASK; i++)
		r->pick[id][i] = (uint8_t)pick[i];
	r->score[id] = sc;
	if (sc == -INFINITY) {
		r->pos[id] = -2;
		return;
	}
	shape_set(r, r->nheap++, id);
	shape_up(g, r, r->nheap - 1);
}

/* The slot of shape k: found, or the least recently used one emptied. */
static struct shape_rank *shape_slot(struct group_index *g, const struct shape *k, bool *fresh)
{
	struct shape_rank *r = NULL;
	for (int i = 0; i < GROUP_SHAPES; i++) {
		struct shape_rank *c = &g->shp[i];
		if (c->used && !memcmp(&c->k, k, sizeof(*k))) {
			*fresh = false;
			return c;
		}
		if (!r || !c->used || (r->used && c->last_use < r->last_use))
			r = c;
	}
	for (size_t i = 0; i < r->cap; i++)
		r->pos[i] = -1;
	r->nheap = 0;
	r->used = true;
	r->k = *k;
	*fresh = true;
	return r;
}

/* Drops the journal entries every shape has read.  A shape that has not
 * been placed for long holds the journal back: past 4 x groups + 4096
 * entries it is forgotten (scored afresh if it comes back), so that
 * placements by the plain scan alone, which read no journal, cannot grow it
 * without bound. */
static void journal_trim(struct group_index *g)
{
	size_t low = g->njournal;
	if (g->njournal < 4096)
		return;
	if (g->njournal > 4 * (size_t)g->ngrp + 4096)
		for (int i = 0; i < GROUP_SHAPES; i++)
			if (g->shp[i].used && g->shp[i].journal_at < g->njournal / 2)
				g->shp[i].used = false;
	for (int i = 0; i < GROUP_SHAPES; i++)
		if (g->shp[i].used && g->shp[i].journal_at < low)
			low = g->shp[i].journal_at;
	if (low < g->njournal / 2)
		return;
	memmove(g->journal, g->journal + low, (g->njournal - low) * sizeof(*g->journal));
	g->njournal -= low;
	for (int i = 0; i < GROUP_SHAPES; i++)
		if (g->shp[i].used)
			g->shp[i].journal_at -= low;
}

int group_best(struct group_index *g, const struct shape *k, group_score_fn fn, void *ctx,
	       double *score, int *pick)
{
	bool fresh;
	struct shape_rank *r = shape_slot(g, k, &fresh);
	int id;

	r->last_use = ++g->clock;
	shape_reserve(r, (size_t)g->ngrp);
	if (fresh) {
		for (int i = 0; i < g->nlive; i++)
			shape_score(g, r, g->live[i], fn, ctx);
	} else {
		/* groups created since the last placement of this shape (a slot
		 * may appear twice, or have died again: pos and n tell) */
		for (size_t j = r->journal_at; j < g->njournal; j++) {
			id = g->journal[j];
			if (g->grp[id].n > 0 && r->pos[id] == -1)
				shape_score(g, r, id, fn, ctx);
		}
	}
	r->journal_at = g->njournal;
	journal_trim(g);
	if (!r->nheap)
		return -1;
	id = r->heap[0];
	*score = r->score[id];
	for (int i = 0; i < SCHED_MAX_DEVS_PER_ASK; i++)
		pick[i] = r->pick[id][i];
	return g->grp[id].heap[0];
}

/* ---- groups and the hash table ----------------------------------------- */

static void table_insert(struct group_index *g, int id)
{
	size_t b = g->grp[id].hash & (g->nbucket - 1);
	g->grp[id].chain = g->bucket[b];
	g->bucket[b] = id;
}

static void table_grow(struct group_index *g)
{
	size_t nb = g->nbucket ? g->nbucket * 2 : 1024;
	free(g->bucket);
	g->bucket = xmalloc(nb * sizeof(int));
	for (size_t i = 0; i < nb; i++)
		g->bucket[i] = -1;
	g->nbucket = nb;
	for (int i = 0; i < g->ngrp; i++)
		if (g->grp[i].n > 0)
			table_insert(g, i);
}

static void table_remove(struct group_index *g, int id)
{
	int *p = &g->bucket[g->grp[id].hash & (g->nbucket - 1)];
	while (*p != id)
		p = &g->grp[*p].chain;
	*p = g->grp[id].chain;
}

/* The group of key k (creating it empty when new). */
static int group_find(struct group_index *g, const int64_t *k, size_t len)
{
	uint64_t h = key_hash(k, len);
	struct node_group *c;
	int id;

	for (id = g->bucket[h & (g->nbucket - 1)]; id >= 0; id = g->grp[id].chain)
		if (g->grp[id].hash == h && g->grp[id].klen == len &&
		    !memcmp(g->grp[id].key, k, len * sizeof(*k)))
			return id;
	if (g->nfree) {
		id = g->freelist[--g->nfree];
	} else {
		ALLOC_GROW(g->grp, (size_t)g->ngrp + 1, g->agrp);
		id = g->ngrp++;
		memset(&g->grp[id], 0, sizeof(g->grp[id]));
	}
	c = &g->grp[id];
	c->hash = h;
	c->klen = len;
	c->key = xreallocarray(c->key, len, sizeof(*k));
	memcpy(c->key, k, len * sizeof(*k));
	c->n = 0;
	ALLOC_GROW(g->journal, g->njournal + 1, g->ajournal);
	g->journal[g->njournal++] = id;
	journal_trim(g);
	c->live_pos = g->nlive;
	ALLOC_GROW(g->live, (size_t)g->nlive + 1, g->alive);
	g->live[g->nlive++] = id;
	if ((size_t)(g->nlive) * 2 > g->nbucket)
		table_grow(g);
	table_insert(g, id);
	return id;
}

static void group_add(struct group_index *g, int id, int node)
{
	struct node_group *c = &g->grp[id];
	ALLOC_GROW(c->heap, (size_t)c->n + 1, c->aheap);
	g->node_grp[node] = id;
	heap_set(g, c, c->n++, node);
	sift_up(g, c, c->n - 1);
	if (c->heap[0] == node && c->n > 1)
		shapes_fix(g, id);
}

static void group_remove(struct group_index *g, int node)
{
	int id = g->node_grp[node];
	struct node_group *c = &g->grp[id];
	int at = g->heap_pos[node], last = c->heap[--c->n];

	if (at < c->n) {
		heap_set(g, c, at, last);
		sift_down(g, c, at);
		sift_up(g, c, g->heap_pos[last]);
	}
	if (at == 0 && c->n > 0)
		shapes_fix(g, id);
	if (c->n == 0) {
		shapes_forget(g, id);
		int moved = g->live[--g->nlive];
		g->live[c->live_pos] = moved;
		g->grp[moved].live_pos = c->live_pos;
		table_remove(g, id);
		ALLOC_GROW(g->freelist, (size_t)g->nfree + 1, g->afree);
		g->freelist[g->nfree++] = id;
	}
}

static void place_node(struct group_index *g, const struct sched_snapshot *s, int node)
{
	const struct sched_node *n = &s->node[node];
	int64_t k[KEY_NODE + SCHED_MAX_DEVS_PER_NODE * KEY_DEV];
	size_t len = key_len(n);
	key_of(n, k);
	group_add(g, group_find(g, k, len), node);
}

void group_index_free(struct group_index *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->ngrp; i++) {
		free(g->grp[i].key);
		free(g->grp[i].heap);
	}
	free(g->grp);
	free(g->bucket);
	free(g->live);
	free(g->freelist);
	free(g->node_grp);
	free(g->heap_pos);
	free(g->rank);
	free(g->journal);
	for (int i = 0; i < GROUP_SHAPES; i++) {
		free(g->shp[i].score);
		free(g->shp[i].pick);
		free(g->shp[i].pos);
		free(g->shp[i].heap);
	}
	free(g);
}

/* Builds the index for ranks rank (NULL: node index order). */
static struct group_index *build(const struct sched_snapshot *s, const uint32_t *rank)
{
	struct group_index *g = xcalloc(1, sizeof(*g));
	g->nnodes = s->n;
	g->rank = xcalloc(s->n + 1, sizeof(uint32_t));
	g->node_grp = xcalloc(s->n + 1, sizeof(int));
	g->heap_pos = xcalloc(s->n + 1, sizeof(int));
	g->by_index = !rank;
	for (size_t i = 0; i < s->n; i++)
		g->rank[i] = rank ? rank[i] : (uint32_t)i;
	table_grow(g);
	for (size_t i = 0; i < s->n; i++)
		place_node(g, s, (int)i);
	return g;
}

struct group_index *group_index_get(struct sched_snapshot *s, const uint32_t *rank)
{
	struct group_index *g = s->groups;
	/* ranks are compared by content, not by address: a caller may refill
	 * the same array for another run */
	if (g && g->nnodes == s->n &&
	    (rank ? !g->by_index && !memcmp(g->rank, rank, s->n * sizeof(*rank)) : g->by_index))
		return g;
	group_index_free(g);
	s->groups = build(s, rank);
	return s->groups;
}

void group_node_moved(struct sched_snapshot *s, int node)
{
	struct group_index *g = s->groups;
	if (!g)
		return;
	group_remove(g, node);
	place_node(g, s, node);
}

void group_index_drop(struct sched_snapshot *s)
{
	group_index_free(s->groups);
	s->groups = NULL;
}
