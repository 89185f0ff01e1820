/* jwt: keys derived from a seed (the same seed, the same key), a token
 * signed and verified, its parts as RFC 7515 writes them, and what
 * verification refuses (another key, a changed claim or header, an expired
 * token, malformed text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/jwt.h"

struct keys {
	gnutls_privkey_t priv, other;
	gnutls_pubkey_t pub, other_pub;
};

/* Two seeds one bit apart: two unrelated keys. */
static const unsigned char SEED[32] = "herd test seed 0123456789abcdef";
static const unsigned char OTHER_SEED[32] = "herd test seed 0123456789abcdeg";

static int setup(void **state)
{
	struct keys *k = calloc(1, sizeof(*k));
	if (jwt_key_derive(SEED, sizeof(SEED), &k->priv, NULL) < 0 ||
	    jwt_key_derive(OTHER_SEED, sizeof(OTHER_SEED), &k->other, NULL) < 0 ||
	    jwt_key_public(k->priv, &k->pub, NULL) < 0 ||
	    jwt_key_public(k->other, &k->other_pub, NULL) < 0)
		return -1;
	*state = k;
	return 0;
}

static int teardown(void **state)
{
	struct keys *k = *state;
	gnutls_privkey_deinit(k->priv);
	gnutls_privkey_deinit(k->other);
	gnutls_pubkey_deinit(k->pub);
	gnutls_pubkey_deinit(k->other_pub);
	free(k);
	return 0;
}

static json_t *some_claims(int64_t iat, int64_t exp)
{
	json_t *c = json_pack("{s:s, s:s, s:[s], s:I, s:I, s:s}", "iss", "https://herd.example",
			      "sub", "global:default:train:g:t:default", "aud", "vault.io", "iat",
			      (json_int_t)iat, "nbf", (json_int_t)iat, "herd_task", "t");
	if (exp)
		json_object_set_new(c, "exp", json_integer(exp));
	return c;
}

/* The JSON object of a token's part i (0 header, 1 claims). */
static json_t *part(const char *token, int i)
{
	const char *s = token, *e;
	size_t n;
	unsigned char *raw;
	json_t *o;
	while (i-- > 0)
		s = strchr(s, '.') + 1;
	e = strchr(s, '.');
	raw = base64url_decode(s, (size_t)(e - s), &n);
	assert_non_null(raw);
	o = json_loadb((char *)raw, n, 0, NULL);
	free(raw);
	assert_non_null(o);
	return o;
}

static void test_sign_verify_round_trip(void **state)
{
	struct keys *k = *state;
	json_t *c = some_claims(1000, 2000), *h;
	char *token;
	struct jwt t;

	assert_int_equal(jwt_sign(k->priv, "abcd", c, &token, NULL), 0);
	/* three parts, nothing but base64url */
	assert_int_equal(strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				       "0123456789-_."), strlen(token));
	h = part(token, 0);
	assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
	assert_string_equal(json_string_value(json_object_get(h, "kid")), "abcd");
	assert_string_equal(json_string_value(json_object_get(h, "typ")), "JWT");
	assert_int_equal(json_object_size(h), 3);
	json_decref(h);

	assert_int_equal(jwt_decode(token, &t, NULL), 0);
	assert_string_equal(t.kid, "abcd");
	assert_true(json_equal(t.claims, c));
	assert_int_equal(t.sig_len, JWT_RSA_BITS / 8);
	assert_int_equal(jwt_verify(token, &t, k->pub, NULL), 0);
	assert_int_equal(jwt_verify(token, &t, k->other_pub, NULL), -EBADMSG);
	assert_int_equal(jwt_check_time(t.claims, 1500, NULL), 0);
	jwt_release(&t);
	json_decref(c);
	free(token);
}

/* A claim changed after signing (the payload re-encoded, signature
 * kept), and a header that names another algorithm. */
static void test_tampered_refused(void **state)
{
	struct keys *k = *state;
	json_t *c = some_claims(1000, 2000), *forged;
	char *token, *claims64, *text, *bad;
	const char *dot1, *dot2;
	struct herd_err err = { 0, "" };
	struct jwt t;

	assert_int_equal(jwt_sign(k->priv, "abcd", c, &token, NULL), 0);
	dot1 = strchr(token, '.');
	dot2 = strchr(dot1 + 1, '.');
	forged = json_deep_copy(c);
	json_object_set_new(forged, "herd_task", json_string("other"));
	text = json_dumps(forged, JSON_COMPACT | JSON_SORT_KEYS);
	claims64 = base64url_encode(text, strlen(text));
	size_t cap = strlen(token) + strlen(claims64) + 1;
	bad = malloc(cap);
	snprintf(bad, cap, "%.*s%s%s", (int)(dot1 + 1 - token), token, claims64, dot2);
	assert_int_equal(jwt_decode(bad, &t, NULL), 0);
	assert_int_equal(jwt_verify(bad, &t, k->pub, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "does not verify"));
	jwt_release(&t);

	/* one signature bit flipped */
	free(bad);
	bad = strdup(token);
	bad[strlen(bad) - 5] = bad[strlen(bad) - 5] == 'A' ? 'B' : 'A';
	assert_int_equal(jwt_decode(bad, &t, NULL), 0);
	assert_int_equal(jwt_verify(bad, &t, k->pub, NULL), -EBADMSG);
	jwt_release(&t);

	/* alg none, or HS256: refused before any key is looked at */
	free(bad);
	bad = strdup("eyJhbGciOiJub25lIiwia2lkIjoiYWJjZCJ9.e30.AA");   /* {"alg":"none","kid":"abcd"} */
	assert_int_equal(jwt_decode(bad, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "alg"));
	free(bad);
	free(text);
	free(claims64);
	json_decref(forged);
	json_decref(c);
	free(token);
}

static void test_times(void **state)
{
	json_t *c = some_claims(1000, 2000), *nested;
	struct herd_err err = { 0, "" };
	(void)state;
	assert_int_equal(jwt_check_time(c, 1000, NULL), 0);
	assert_int_equal(jwt_check_time(c, 1999, NULL), 0);
	assert_int_equal(jwt_check_time(c, 2000, &err), -EKEYEXPIRED);
	assert_non_null(strstr(err.msg, "expired"));
	assert_int_equal(jwt_check_time(c, 5000, NULL), -EKEYEXPIRED);
	/* nbf ahead of the clock by more than the skew allowed */
	assert_int_equal(jwt_check_time(c, 1000 - JWT_CLOCK_SKEW_S, NULL), 0);
	assert_int_equal(jwt_check_time(c, 1000 - JWT_CLOCK_SKEW_S - 1, NULL), -EINVAL);
	json_object_set_new(c, "exp", json_string("2000"));
	assert_int_equal(jwt_check_time(c, 1500, NULL), -EINVAL);
	json_decref(c);
	/* no exp: no end */
	nested = some_claims(1000, 0);
	assert_int_equal(jwt_check_time(nested, 1000000, NULL), 0);
	json_decref(nested);
}

static void test_decode_refuses(void **state)
{
	static const char *const bad[] = {
		"", "abc", "a.b", "a.b.c.d", "..", "e30.e30.AA", /* {}: no alg */
		"eyJhbGciOiJSUzI1NiJ9.e30.AA",                /* no kid */
		"eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.W10.AA",  /* claims [] */
		"eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.e30.",    /* no signature */
		"eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.e30=.AA", /* padding */
		/* {"a":1,"a":2}: duplicate claims */
		"eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.eyJhIjoxLCJhIjoyfQ.AA",
	};
	struct jwt t;
	char *huge;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(jwt_decode(bad[i], &t, NULL), -EINVAL);
	/* {"alg":"RS256","kid":"a"}.{}.AA decodes (the signature is checked later) */
	assert_int_equal(jwt_decode("eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.e30.AA", &t, NULL), 0);
	jwt_release(&t);
	huge = malloc(JWT_MAX_LEN + 2);
	memset(huge, 'A', JWT_MAX_LEN + 1);
	huge[JWT_MAX_LEN + 1] = '\0';
	assert_int_equal(jwt_decode(huge, &t, NULL), -EINVAL);
	free(huge);
}

/* The JWK's numbers are the key's: e 65537 ("AQAB"), n 256 bytes. */
static void test_jwk(void **state)
{
	struct keys *k = *state;
	json_t *jwk = jwt_jwk(k->pub, "abcd");
	unsigned char *n;
	size_t nlen;

	assert_non_null(jwk);
	assert_string_equal(json_string_value(json_object_get(jwk, "kty")), "RSA");
	assert_string_equal(json_string_value(json_object_get(jwk, "e")), "AQAB");
	assert_string_equal(json_string_value(json_object_get(jwk, "alg")), "RS256");
	assert_string_equal(json_string_value(json_object_get(jwk, "use")), "sig");
	assert_string_equal(json_string_value(json_object_get(jwk, "kid")), "abcd");
	const char *n64 = json_string_value(json_object_get(jwk, "n"));
	n = base64url_decode(n64, strlen(n64), &nlen);
	assert_int_equal(nlen, JWT_RSA_BITS / 8);
	assert_true(n[0] & 0x80);
	free(n);
	json_decref(jwk);
}

/* The JWK of the key seed derives (a new reference). */
static json_t *derived_jwk(const unsigned char *seed, size_t len)
{
	gnutls_privkey_t priv;
	gnutls_pubkey_t pub;
	json_t *jwk;
	assert_int_equal(jwt_key_derive(seed, len, &priv, NULL), 0);
	assert_int_equal(jwt_key_public(priv, &pub, NULL), 0);
	jwk = jwt_jwk(pub, "k");
	gnutls_pubkey_deinit(pub);
	gnutls_privkey_deinit(priv);
	return jwk;
}

/* A seed derives one key, whenever and wherever it is derived: the same
 * seed again gives the same key (a token one signs, the other's public
 * key verifies), pinned here by its modulus so that a change of the
 * derivation (which would make every server's keys new) fails this test;
 * another seed gives another key.  Seeds of a length out of range are
 * refused. */
static void test_derive(void **state)
{
	struct keys *k = *state;
	/* the first and last characters of n's base64url for SEED */
	static const char N_HEAD[] = "mAa6VT28763Vin-m", N_TAIL[] = "bEIOkXf_miPwTFpQ";
	json_t *again = derived_jwk(SEED, sizeof(SEED)), *first = jwt_jwk(k->pub, "k"), *c;
	json_t *other = jwt_jwk(k->other_pub, "k");
	gnutls_privkey_t priv = NULL;
	unsigned char big[JWT_SEED_MAX + 1] = { 0 };
	const char *n;
	char *token;
	struct jwt t;

	assert_true(json_equal(again, first));
	assert_false(json_equal(other, first));
	n = json_string_value(json_object_get(first, "n"));
	assert_int_equal(strncmp(n, N_HEAD, strlen(N_HEAD)), 0);
	assert_string_equal(n + strlen(n) - strlen(N_TAIL), N_TAIL);

	/* signed with a key derived again: the first one's public key verifies */
	assert_int_equal(jwt_key_derive(SEED, sizeof(SEED), &priv, NULL), 0);
	c = some_claims(1, 0);
	assert_int_equal(jwt_sign(priv, "k", c, &token, NULL), 0);
	assert_int_equal(jwt_decode(token, &t, NULL), 0);
	assert_int_equal(jwt_verify(token, &t, k->pub, NULL), 0);
	assert_int_equal(jwt_verify(token, &t, k->other_pub, NULL), -EBADMSG);
	jwt_release(&t);
	free(token);
	json_decref(c);
	gnutls_privkey_deinit(priv);

	priv = NULL;
	assert_int_equal(jwt_key_derive(big, JWT_SEED_MIN - 1, &priv, NULL), -EINVAL);
	assert_int_equal(jwt_key_derive(big, JWT_SEED_MAX + 1, &priv, NULL), -EINVAL);
	assert_null(priv);
	json_decref(again);
	json_decref(first);
	json_decref(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign_verify_round_trip),
		cmocka_unit_test(test_tampered_refused),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_decode_refuses),
		cmocka_unit_test(test_jwk),
		cmocka_unit_test(test_derive),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
