/* base64 (base64.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/xalloc.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* p's n bytes in the alphabet abc; pad: '=' to a multiple of 4, else
 * the last group as short as its bytes need (base64url, RFC 7515 2). */
static char *encode(const void *p, size_t n, const char *abc, bool pad)
{
	const unsigned char *s = p;
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		*o++ = abc[v >> 18 & 63];
		*o++ = abc[v >> 12 & 63];
		if (i + 1 < n || pad)
			*o++ = i + 1 < n ? abc[v >> 6 & 63] : '=';
		if (i + 2 < n || pad)
			*o++ = i + 2 < n ? abc[v & 63] : '=';
	}
	*o = 0;
	return out;
}

char *base64_encode(const void *p, size_t n)
{
	return encode(p, n, alphabet, true);
}

static int value(char c)
{
	const char *at = c ? strchr(alphabet, c) : NULL;
	return at ? (int)(at - alphabet) : -1;
}

size_t base64_decoded_len(const char *text)
{
	size_t len = strlen(text), n = len / 4 * 3;

	if (len >= 1 && text[len - 1] == '=')
		n--;
	if (len >= 2 && text[len - 2] == '=')
		n--;
	return n;
}

unsigned char *base64_decode(const char *text, size_t *n)
{
	size_t len = strlen(text);
	unsigned char *out, *o;

	if (len % 4)
		return NULL;
	out = o = xmalloc(len / 4 * 3 + 1);
	for (size_t i = 0; i < len; i += 4) {
		int a = value(text[i]), b = value(text[i + 1]), c = value(text[i + 2]),
		    d = value(text[i + 3]);
		bool last = i + 4 == len;
		/* '=' only in the last group, as its last one or two characters */
		bool pad2 = last && text[i + 2] == '=' && text[i + 3] == '=';
		bool pad1 = last && !pad2 && c >= 0 && text[i + 3] == '=';
		if (a < 0 || b < 0 || (c < 0 && !pad2) || (d < 0 && !pad1 && !pad2)) {
			free(out);
			return NULL;
		}
		unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)(c < 0 ? 0 : c) << 6 |
			     (unsigned)(d < 0 ? 0 : d);
		*o++ = (unsigned char)(v >> 16);
		if (!pad2)
			*o++ = (unsigned char)(v >> 8 & 255);
		if (!pad1 && !pad2)
			*o++ = (unsigned char)(v & 255);
	}
	*o = 0;
	*n = (size_t)(o - out);
	return out;
}

char *base64url_encode(const void *p, size_t n)
{
	return encode(p, n, url_alphabet, false);
}

static int url_value(char c)
{
	const char *at = c ? strchr(url_alphabet, c) : NULL;
	return at ? (int)(at - url_alphabet) : -1;
}

unsigned char *base64url_decode(const char *text, size_t len, size_t *n)
{
	unsigned char *out = xmalloc(len / 4 * 3 + 3), *o = out;
	unsigned v = 0;
	size_t bits = 0;

	/* one character left over (len % 4 == 1) is never a whole byte */
	if (len % 4 == 1)
		goto bad;
	for (size_t i = 0; i < len; i++) {
		int c = url_value(text[i]);
		if (c < 0)
			goto bad;
		v = (v << 6 | (unsigned)c) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (unsigned char)(v >> bits & 255);
		}
	}
	/* the bits past the last byte are zero in the one encoding of it */
	if (v & ((1u << bits) - 1))
		goto bad;
	*o = 0;
	*n = (size_t)(o - out);
	return out;
bad:
	free(out);
	return NULL;
}
