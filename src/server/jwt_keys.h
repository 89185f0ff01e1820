/* jwt_keys: the RSA keys that sign workload identities' tokens (jwt.h;
 * docs/teams.md "Workload identity", docs/operations.md "Variables: the
 * encryption key"), one per key of the variables keyring (vars_keyring.h)
 * and named after it: a token's kid is the keyring key's id.
 *
 * Nothing on disk: each RSA key is derived from its keyring key
 * (vars_keyring_derive with JWT_KEYS_LABEL as the seed, jwt_key_derive),
 * so every server that holds the same keyring key signs with, and
 * publishes, the same RSA key under its kid (several servers on one
 * PostgreSQL store: a token one leader signed verifies after a failover).
 * A key is derived the first time it is needed (signing with the active
 * key, verifying a token of its kid, the JWK Set) and kept in memory; none
 * at open, since a derivation takes about a third of a second.
 *
 * The ring decides which keys there are: the active one signs; every key
 * still in the ring verifies and is published (GET /.well-known/jwks.json),
 * so a token signed before a rotation verifies until its key is removed
 * (jwt_keys_forget then drops the derived key).
 *
 * Thread safety: every function may be called from any thread.  A lock
 * guards the derived keys; signing and verifying hold it (an RSA operation
 * takes about a millisecond), a derivation does not: those who need the
 * key being derived wait for it (the `derived` condition), uses of other
 * keys go on. */
#ifndef HERD_SERVER_JWT_KEYS_H
#define HERD_SERVER_JWT_KEYS_H

#include <gnutls/abstract.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "server/vars_keyring.h"

/* The label of vars_keyring_derive that makes a signing key's seed: a
 * change of it (or of jwt_key_derive) changes every key, so tokens signed
 * before stop verifying. */
#define JWT_KEYS_LABEL "herd workload identity signing key v1"

struct jwt_key {
	char kid[VARS_KEY_ID_LEN + 1];
	gnutls_privkey_t priv; /* NULL while it is being derived */
	gnutls_pubkey_t pub;
};

struct jwt_keys {
	pthread_mutex_t lock;
	pthread_cond_t derived;    /* a derivation ended (broadcast) */
	struct vars_keyring *ring; /* not owned: outlives the set */
	struct jwt_key *keys;      /* owned: those derived or being derived */
	size_t nkeys;
	uint64_t derivations;      /* keys derived since open */
};

/* An empty set of ring's keys: nothing derived yet. */
void jwt_keys_open(struct jwt_keys *keys, struct vars_keyring *ring);
void jwt_keys_close(struct jwt_keys *keys);

/* Drops kid's derived key, after its removal from the ring (a key still
 * in the ring would be derived again at its next use). */
void jwt_keys_forget(struct jwt_keys *keys, const char *kid);

/* claims signed with the ring's active key: a heap string into *token.
 * -errno with err when its RSA key cannot be derived. */
int jwt_keys_sign(struct jwt_keys *keys, const json_t *claims, char **token,
		  struct herd_err *err);
/* The claims of token (a new reference into *claims) when it decodes, its
 * kid is a key of the ring, its signature is that key's and its times hold
 * at now (unix s).  -EINVAL, -ENOKEY (no such kid), -EBADMSG, -EKEYEXPIRED
 * with err otherwise. */
int jwt_keys_verify(struct jwt_keys *keys, const char *token, int64_t now, json_t **claims,
		    struct herd_err *err);
/* The JWK Set of every key of the ring: {"keys": [...]} (a new reference),
 * oldest key first; NULL with err when a key cannot be derived. */
json_t *jwt_keys_jwks(struct jwt_keys *keys, struct herd_err *err);

#endif
