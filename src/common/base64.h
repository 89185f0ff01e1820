/* base64 (RFC 4648, standard alphabet, padded): the encoding of a
 * dispatched job's payload in the API (docs/api.md, "Parameterized jobs").
 * Pure functions; the caller owns what they return. */
#ifndef HERD_BASE64_H
#define HERD_BASE64_H

#include <stddef.h>

/* The encoding of n bytes at p: a NUL-terminated heap string. */
char *base64_encode(const void *p, size_t n);
/* Decodes text (padding required, no whitespace): a heap buffer of *n
 * bytes with a NUL after them, or NULL when text is not base64. */
unsigned char *base64_decode(const char *text, size_t *n);
/* The decoded length of valid base64 text, without decoding it. */
size_t base64_decoded_len(const char *text);

#endif
