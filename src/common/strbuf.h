/* strbuf: a growable NUL-terminated byte buffer.
 *
 * buf is always a valid C string (it may also hold NULs inside; len counts
 * them).  A zero-initialised strbuf (STRBUF_INIT) is empty and owns nothing.
 * Growth aborts on out of memory (xalloc.h), so no function here fails. */
#ifndef HERD_STRBUF_H
#define HERD_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	size_t len;   /* bytes in use, not counting the terminating NUL */
	size_t alloc; /* bytes allocated; 0 means buf points at a static "" */
	char *buf;
};

extern char strbuf_empty[];
#define STRBUF_INIT { 0, 0, strbuf_empty }

void strbuf_init(struct strbuf *sb, size_t hint);
/* Frees the buffer and leaves sb empty (STRBUF_INIT); accepts NULL. */
void strbuf_release(struct strbuf *sb);
/* Hands the heap string to the caller and leaves sb empty. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_reset(struct strbuf *sb);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_adds(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Cuts the buffer to len bytes (len <= sb->len). */
void strbuf_setlen(struct strbuf *sb, size_t len);

#endif
