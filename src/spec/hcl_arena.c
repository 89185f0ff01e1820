/* The arena that holds an hcl tree: a chain of chunks, each allocation a
 * bump of a pointer, the whole tree freed at once.  A 1 MiB job file makes
 * some 100,000 small nodes and strings; allocating and freeing them one by
 * one cost more than parsing them. */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/hcl-int.h"

struct hcl_arena_chunk {
	struct hcl_arena_chunk *next;
	alignas(max_align_t) char data[];
};

/* The tree holds pointers, sizes, int64 and double: 8 bytes is enough;
 * strings take no alignment at all. */
#define ALIGN 8u
#define FIRST_CHUNK 4096u            /* small files (agent configs) stay small */
#define MAX_CHUNK (1u << 20)

struct hcl_arena *hcl_arena_new(void)
{
	return xcalloc(1, sizeof(struct hcl_arena));
}

void hcl_arena_init_buf(struct hcl_arena *a, void *buf, size_t size)
{
	memset(a, 0, sizeof(*a));
	a->p = buf;
	a->end = (char *)buf + size;
	a->next_size = size < FIRST_CHUNK ? FIRST_CHUNK : size * 2 < MAX_CHUNK ? size * 2 : MAX_CHUNK;
}

void hcl_arena_release(struct hcl_arena *a)
{
	struct hcl_arena_chunk *c, *next;

	for (c = a->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	a->chunks = NULL;
	a->p = a->end = NULL;
}

void hcl_arena_free(struct hcl_arena *a)
{
	if (!a)
		return;
	hcl_arena_release(a);
	free(a);
}

/* A new chunk for at least n bytes.  Requests larger than a quarter of the
 * chunk size get a chunk of their own behind the current one, so the free
 * space of the current chunk is not thrown away. */
static void *new_chunk(struct hcl_arena *a, size_t n)
{
	struct hcl_arena_chunk *c;
	size_t size = a->next_size ? a->next_size : FIRST_CHUNK;

	if (n > size / 4) {
		c = xmalloc(sizeof(*c) + n);
		if (a->chunks) {
			c->next = a->chunks->next;
			a->chunks->next = c;
		} else {
			c->next = NULL;
			a->chunks = c;
			a->p = a->end = c->data + n;
		}
		return c->data;
	}
	c = xmalloc(sizeof(*c) + size);
	c->next = a->chunks;
	a->chunks = c;
	a->p = c->data + n;
	a->end = c->data + size;
	if (size < MAX_CHUNK)
		a->next_size = size * 2;
	return c->data;
}

static void *alloc(struct hcl_arena *a, size_t n, size_t align)
{
	uintptr_t p = ((uintptr_t)a->p + align - 1) & ~(uintptr_t)(align - 1);
	void *r;

	if (!a->p || p > (uintptr_t)a->end || n > (uintptr_t)a->end - p)
		return new_chunk(a, n);
	r = (void *)p;
	a->p = (char *)p + n;
	return r;
}

void *hcl_arena_alloc(struct hcl_arena *a, size_t n)
{
	return alloc(a, n, ALIGN);
}

void *hcl_arena_zalloc(struct hcl_arena *a, size_t n)
{
	return memset(hcl_arena_alloc(a, n), 0, n);
}

void *hcl_arena_dup(struct hcl_arena *a, const void *src, size_t n)
{
	return n ? memcpy(hcl_arena_alloc(a, n), src, n) : NULL;
}

char *hcl_arena_strndup(struct hcl_arena *a, const char *s, size_t n)
{
	char *r = alloc(a, n + 1, 1);
	memcpy(r, s, n);
	r[n] = '\0';
	return r;
}
