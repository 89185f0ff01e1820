/* xalloc: allocation that never returns NULL.
 *
 * Out of memory is not an error herd recovers from: these wrappers print one
 * line and abort, so that NULL never means "no memory" and error paths stay
 * about real errors (the convention of git's xmalloc and Redis's zmalloc). */
#ifndef HERD_XALLOC_H
#define HERD_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Array reallocation with overflow check: room for nmemb elements of size. */
void *xreallocarray(void *ptr, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh heap string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grow array `x` (with `alloc` slots) so that it holds at least `nr` items. */
#define ALLOC_GROW(x, nr, alloc)                                           \
	do {                                                               \
		if ((nr) > (alloc)) {                                      \
			size_t grow_to_ = (alloc) < 8 ? 8 : (alloc) * 2;   \
			if (grow_to_ < (size_t)(nr))                       \
				grow_to_ = (nr);                           \
			(x) = xreallocarray((x), grow_to_, sizeof(*(x)));  \
			(alloc) = grow_to_;                                \
		}                                                          \
	} while (0)

#endif
