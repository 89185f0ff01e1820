/* Fuzz target: a workload identity's token as the server reads it from a
 * request's X-Herd-Token header (common/jwt.h, base64url in
 * common/base64.h), before it knows whether the token is one of its own.
 *
 * The input is taken as the header's text: decoded (jwt_decode), checked
 * against a key derived from a fixed seed (never valid: the input was not
 * signed with it) and its time claims checked.  Each of its dot-separated
 * parts that decodes as base64url must encode back to the very same text (one
 * encoding per byte string: no padding, no stray bits). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gnutls_pubkey_t the_key(void)
{
	static gnutls_pubkey_t pub;
	if (!pub) {
		/* a fixed seed: the same key at every run, so a crash replays */
		static const unsigned char seed[32] = "herd fuzz_jwt seed";
		gnutls_privkey_t priv;
		if (jwt_key_derive(seed, sizeof(seed), &priv, NULL) < 0 ||
		    jwt_key_public(priv, &pub, NULL) < 0)
			abort();
		gnutls_privkey_deinit(priv);
	}
	return pub;
}

static void check_part(const char *s, size_t len)
{
	size_t n;
	unsigned char *raw = base64url_decode(s, len, &n);
	char *again;
	if (!raw)
		return;
	again = base64url_encode(raw, n);
	if (strlen(again) != len || memcmp(again, s, len))
		abort();
	free(again);
	free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	struct jwt t;
	const char *p;

	if (size > 2 * JWT_MAX_LEN)
		return 0;
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	for (p = text;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		check_part(p, len);
		if (!dot)
			break;
		p = dot + 1;
	}
	if (jwt_decode(text, &t, NULL) == 0) {
		if (!t.kid || !*t.kid || t.signed_len >= strlen(text) || !json_is_object(t.claims))
			abort();
		if (jwt_verify(text, &t, the_key(), NULL) != -EBADMSG)
			abort();
		jwt_check_time(t.claims, 1700000000, NULL);
		jwt_release(&t);
	}
	free(text);
	return 0;
}
