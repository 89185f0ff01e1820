/* jwt: JSON Web Tokens signed with RS256 (RFC 7519, 7515: RSASSA-PKCS1-v1_5
 * with SHA-256 over "<base64url header>.<base64url claims>") and the JSON
 * Web Keys that verify them (RFC 7517): the encoding, signing and checking
 * of a workload identity's token (docs/teams.md, "Workload identity"),
 * with GnuTLS.  Which keys exist, where they are kept and which claims a
 * token carries are the server's (src/server/jwt_keys.h,
 * workload_identity.c).
 *
 * Pure functions: a key is derived from a seed, not drawn at random;
 * nothing here logs.  The caller owns what they return. */
#ifndef HERD_COMMON_JWT_H
#define HERD_COMMON_JWT_H

#include <gnutls/abstract.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define JWT_ALG "RS256"
#define JWT_RSA_BITS 2048
/* A token longer than this is not one of ours (a 2048-bit signature is
 * 342 characters, the claims a few hundred more): refused unparsed. */
#define JWT_MAX_LEN 8192
#define JWT_MAX_KID 64
/* nbf and iat may be this far ahead of the verifier's clock (servers'
 * clocks differ a little); exp is exact. */
#define JWT_CLOCK_SKEW_S 30

/* The RSA key of JWT_RSA_BITS that seed (JWT_SEED_MIN..JWT_SEED_MAX
 * bytes, secret: whoever has it has the key) makes, into *out
 * (gnutls_privkey_deinit it): the primes of FIPS 186-4's provable method
 * drawn from the seed alone, so the same seed gives the same key on
 * every machine (the unit test pins one key: a GnuTLS that derived
 * another would change every server's keys).  About a third of a second
 * of CPU.  -EINVAL for a seed of another length. */
#define JWT_SEED_MIN 16
#define JWT_SEED_MAX 64
int jwt_key_derive(const unsigned char *seed, size_t len, gnutls_privkey_t *out,
		   struct herd_err *err);
/* The public half of key into *out (gnutls_pubkey_deinit it). */
int jwt_key_public(gnutls_privkey_t key, gnutls_pubkey_t *out, struct herd_err *err);
/* The JWK of an RSA public key: {"kty":"RSA","n","e","kid","alg":"RS256",
 * "use":"sig"} (n and e base64url, without leading zero bytes); NULL when
 * the key is not RSA. */
json_t *jwt_jwk(gnutls_pubkey_t pub, const char *kid);

/* The signed token "<header>.<claims>.<signature>" of claims (an object;
 * written compact, keys sorted) under header {"alg":"RS256","kid":kid,
 * "typ":"JWT"}: a heap string into *token. */
int jwt_sign(gnutls_privkey_t key, const char *kid, const json_t *claims, char **token,
	     struct herd_err *err);

/* A token taken apart, not yet trusted. */
struct jwt {
	json_t *header, *claims;       /* objects */
	const char *kid;               /* the header's, within header */
	size_t signed_len;             /* the token's first signed_len bytes are signed */
	unsigned char *sig;            /* the signature's bytes */
	size_t sig_len;
};

/* Splits and decodes token: three base64url parts, a header with alg
 * RS256 and a kid of 1..JWT_MAX_KID characters, claims a JSON object
 * (duplicate keys refused).  -EINVAL with err saying what is wrong; out
 * is written only on success (jwt_release it). */
int jwt_decode(const char *token, struct jwt *out, struct herd_err *err);
/* Whether t's signature (of token, the text jwt_decode took apart) is
 * pub's: 0, or -EBADMSG with err. */
int jwt_verify(const char *token, const struct jwt *t, gnutls_pubkey_t pub,
	       struct herd_err *err);
/* The time claims against now (unix seconds): exp, when present, an
 * integer after now; nbf and iat, when present, integers at most
 * JWT_CLOCK_SKEW_S after now.  0, or -EKEYEXPIRED (expired) or -EINVAL
 * (not yet valid, or a claim that is not an integer) with err. */
int jwt_check_time(const json_t *claims, int64_t now, struct herd_err *err);
void jwt_release(struct jwt *t);

#endif
