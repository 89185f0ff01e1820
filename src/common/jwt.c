/* jwt: RS256 tokens and their keys (see jwt.h). */
#include "common/jwt.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/xalloc.h"

int jwt_key_derive(const unsigned char *seed, size_t len, gnutls_privkey_t *out,
		   struct herd_err *err)
{
	/* GnuTLS manual, gnutls_privkey_generate2: GNUTLS_PRIVKEY_FLAG_PROVABLE
	 * makes the primes with FIPS PUB 186-4's provable method (Shawe-Taylor),
	 * out of the seed a GNUTLS_KEYGEN_SEED datum gives: the same seed, the
	 * same key */
	gnutls_keygen_data_st data = { GNUTLS_KEYGEN_SEED, (unsigned char *)seed, (unsigned)len };
	gnutls_privkey_t key = NULL;
	int g;

	if (len < JWT_SEED_MIN || len > JWT_SEED_MAX)
		return herd_errf(err, -EINVAL, "signing key: a seed of %zu bytes (%d to %d)", len,
				 JWT_SEED_MIN, JWT_SEED_MAX);
	if ((g = gnutls_privkey_init(&key)) < 0 ||
	    (g = gnutls_privkey_generate2(key, GNUTLS_PK_RSA, JWT_RSA_BITS,
					  GNUTLS_PRIVKEY_FLAG_PROVABLE, &data, 1)) < 0) {
		gnutls_privkey_deinit(key);
		return herd_errf(err, -EIO, "signing key: deriving an RSA key: %s",
				 gnutls_strerror(g));
	}
	*out = key;
	return 0;
}

int jwt_key_public(gnutls_privkey_t key, gnutls_pubkey_t *out, struct herd_err *err)
{
	gnutls_pubkey_t pub = NULL;
	int g;

	if ((g = gnutls_pubkey_init(&pub)) < 0 || (g = gnutls_pubkey_import_privkey(pub, key, 0, 0)) < 0) {
		gnutls_pubkey_deinit(pub);
		return herd_errf(err, -EINVAL, "signing key: no public key: %s", gnutls_strerror(g));
	}
	*out = pub;
	return 0;
}

json_t *jwt_jwk(gnutls_pubkey_t pub, const char *kid)
{
	gnutls_datum_t n = { NULL, 0 }, e = { NULL, 0 };
	char *n64, *e64;
	json_t *jwk;

	if (gnutls_pubkey_export_rsa_raw2(pub, &n, &e, GNUTLS_EXPORT_FLAG_NO_LZ) < 0)
		return NULL;
	n64 = base64url_encode(n.data, n.size);
	e64 = base64url_encode(e.data, e.size);
	jwk = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kty", "RSA", "n", n64, "e", e64, "kid",
			kid, "alg", JWT_ALG, "use", "sig");
	free(n64);
	free(e64);
	gnutls_free(n.data);
	gnutls_free(e.data);
	return jwk;
}

/* The base64url of obj's compact JSON, keys sorted. */
static char *encode_part(const json_t *obj)
{
	char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS), *out;
	if (!text)
		abort(); /* jansson fails only when out of memory */
	out = base64url_encode(text, strlen(text));
	free(text);
	return out;
}

int jwt_sign(gnutls_privkey_t key, const char *kid, const json_t *claims, char **token,
	     struct herd_err *err)
{
	json_t *header = json_pack("{s:s, s:s, s:s}", "alg", JWT_ALG, "kid", kid, "typ", "JWT");
	char *h = encode_part(header), *c = encode_part(claims), *sig64, *signing;
	gnutls_datum_t data, sig = { NULL, 0 };
	int g;

	json_decref(header);
	signing = xasprintf("%s.%s", h, c);
	free(h);
	free(c);
	data.data = (unsigned char *)signing;
	data.size = (unsigned)strlen(signing);
	if ((g = gnutls_privkey_sign_data2(key, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sig)) < 0) {
		free(signing);
		return herd_errf(err, -EIO, "signing a token: %s", gnutls_strerror(g));
	}
	sig64 = base64url_encode(sig.data, sig.size);
	gnutls_free(sig.data);
	*token = xasprintf("%s.%s", signing, sig64);
	free(sig64);
	free(signing);
	return 0;
}

/* The JSON object of the base64url part text[0..len). */
static json_t *decode_part(const char *text, size_t len)
{
	size_t n;
	unsigned char *raw = base64url_decode(text, len, &n);
	json_t *obj;

	if (!raw)
		return NULL;
	obj = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
	free(raw);
	if (obj && !json_is_object(obj)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

int jwt_decode(const char *token, struct jwt *out, struct herd_err *err)
{
	size_t len = strnlen(token, JWT_MAX_LEN + 1), kid_len;
	const char *dot1, *dot2, *kid;
	struct jwt t = { 0 };

	if (len > JWT_MAX_LEN)
		return herd_errf(err, -EINVAL, "token: longer than %d characters", JWT_MAX_LEN);
	if (!(dot1 = memchr(token, '.', len)) ||
	    !(dot2 = memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token))) ||
	    memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)))
		return herd_errf(err, -EINVAL, "token: not three dot-separated parts");
	if (!(t.header = decode_part(token, (size_t)(dot1 - token))))
		return herd_errf(err, -EINVAL, "token: its header is not base64url JSON");
	if (!(t.claims = decode_part(dot1 + 1, (size_t)(dot2 - dot1 - 1)))) {
		jwt_release(&t);
		return herd_errf(err, -EINVAL, "token: its claims are not base64url JSON");
	}
	t.sig = base64url_decode(dot2 + 1, len - (size_t)(dot2 + 1 - token), &t.sig_len);
	if (!t.sig || t.sig_len == 0) {
		jwt_release(&t);
		return herd_errf(err, -EINVAL, "token: its signature is not base64url");
	}
	kid = json_string_value(json_object_get(t.header, "kid"));
	kid_len = kid ? strlen(kid) : 0;
	if (strcmp(json_string_value(json_object_get(t.header, "alg")) ?: "", JWT_ALG)) {
		jwt_release(&t);
		return herd_errf(err, -EINVAL, "token: alg must be %s", JWT_ALG);
	}
	if (kid_len == 0 || kid_len > JWT_MAX_KID) {
		jwt_release(&t);
		return herd_errf(err, -EINVAL, "token: its header needs a kid of 1 to %d characters",
				 JWT_MAX_KID);
	}
	t.kid = kid;
	t.signed_len = (size_t)(dot2 - token);
	*out = t;
	return 0;
}

int jwt_verify(const char *token, const struct jwt *t, gnutls_pubkey_t pub, struct herd_err *err)
{
	gnutls_datum_t data = { (unsigned char *)token, (unsigned)t->signed_len };
	gnutls_datum_t sig = { t->sig, (unsigned)t->sig_len };

	if (gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sig) < 0)
		return herd_errf(err, -EBADMSG, "token: its signature does not verify with key %s",
				 t->kid);
	return 0;
}

int jwt_check_time(const json_t *claims, int64_t now, struct herd_err *err)
{
	static const char *const names[] = { "exp", "nbf", "iat" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_t *v = json_object_get(claims, names[i]);
		int64_t at;
		if (!v)
			continue;
		if (!json_is_integer(v))
			return herd_errf(err, -EINVAL, "token: %s is not an integer", names[i]);
		at = json_integer_value(v);
		if (i == 0 && at <= now)
			return herd_errf(err, -EKEYEXPIRED, "token: expired %lld s ago",
					 (long long)(now - at));
		if (i > 0 && at > now + JWT_CLOCK_SKEW_S)
			return herd_errf(err, -EINVAL, "token: not valid before %lld (%s)",
					 (long long)at, names[i]);
	}
	return 0;
}

void jwt_release(struct jwt *t)
{
	json_decref(t->header);
	json_decref(t->claims);
	free(t->sig);
	memset(t, 0, sizeof(*t));
}
