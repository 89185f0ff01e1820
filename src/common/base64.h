/* base64 (RFC 4648, standard alphabet, padded): the encoding of a
 * dispatched job's payload in the API (docs/api.md, "Parameterized jobs");
 * and base64url (RFC 4648 section 5, '-' and '_', no padding): the
 * encoding of a JSON Web Token's parts and a JWK's numbers (jwt.h).
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

/* The base64url encoding of n bytes at p, without padding: a heap string. */
char *base64url_encode(const void *p, size_t n);
/* Decodes the first len characters of text as unpadded base64url (no '=',
 * no whitespace, no bits set past the last byte): a heap buffer of *n
 * bytes with a NUL after them, or NULL when they are not. */
unsigned char *base64url_decode(const char *text, size_t len, size_t *n);

#endif
