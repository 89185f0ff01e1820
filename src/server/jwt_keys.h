/* jwt_keys: the RSA keys that sign workload identities' tokens (jwt.h;
 * docs/teams.md "Workload identity", docs/operations.md "Variables: the
 * encryption key"), one per key of the variables keyring (vars_keyring.h)
 * and named after it: a token's kid is the keyring key's id.
 *
 * On disk, beside the keyring's files, under the server's data dir:
 *   variables.keys/<id>.jwt.pem   the RSA key (2048 bits, unencrypted
 *                                 PKCS#8 PEM; dir 0700, file 0600, as the
 *                                 keyring's own keys are kept), made the
 *                                 first time the server sees key <id> (a
 *                                 rotation, or a keyring from a build
 *                                 before tokens were signed).
 * The active keyring key's RSA key signs; every key still in the ring
 * verifies and is published (GET /.well-known/jwks.json), so a token
 * signed before a rotation verifies until its key is removed.
 *
 * Thread safety: every function may be called from any thread (a lock
 * guards the set; signing holds it, an RSA signature takes about a
 * millisecond). */
#ifndef HERD_SERVER_JWT_KEYS_H
#define HERD_SERVER_JWT_KEYS_H

#include <gnutls/abstract.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "common/err.h"
#include "server/vars_keyring.h"

#define JWT_KEY_SUFFIX ".jwt.pem"

struct jwt_key {
	char kid[VARS_KEY_ID_LEN + 1];
	gnutls_privkey_t priv;
	gnutls_pubkey_t pub;
};

struct jwt_keys {
	pthread_mutex_t lock;
	char *dir;                 /* <data dir>/variables.keys; owned */
	struct jwt_key *keys;      /* owned */
	size_t nkeys;
	char active[VARS_KEY_ID_LEN + 1];
};

/* Opens the signing keys of ring's keys (jwt_keys_sync).  -errno with err
 * (a key file others may read, or that is not an RSA key) stops the
 * server. */
int jwt_keys_open(struct jwt_keys *keys, struct vars_keyring *ring, struct herd_err *err);
void jwt_keys_close(struct jwt_keys *keys);

/* Brings the set in line with ring after a rotation or a removal: each
 * ring key's RSA key read, or made and written when it has none; keys no
 * longer in the ring dropped (from memory: jwt_keys_remove deletes the
 * file).  On failure the set is as it was. */
int jwt_keys_sync(struct jwt_keys *keys, struct vars_keyring *ring, struct herd_err *err);
/* Deletes key kid's file and drops it (no such file: 0). */
int jwt_keys_remove(struct jwt_keys *keys, const char *kid, struct herd_err *err);

/* claims signed with the active key: a heap string into *token. */
int jwt_keys_sign(struct jwt_keys *keys, const json_t *claims, char **token,
		  struct herd_err *err);
/* The claims of token (a new reference into *claims) when it decodes, its
 * kid is a key of the set, its signature is that key's and its times hold
 * at now (unix s).  -EINVAL, -ENOKEY (no such kid), -EBADMSG, -EKEYEXPIRED
 * with err otherwise. */
int jwt_keys_verify(struct jwt_keys *keys, const char *token, int64_t now, json_t **claims,
		    struct herd_err *err);
/* The JWK Set of every key: {"keys": [...]} (a new reference). */
json_t *jwt_keys_jwks(struct jwt_keys *keys);

#endif
