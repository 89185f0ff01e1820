/* vars_keyring: the variables' keys, the active one and those it replaced
 * (docs/operations.md, "Variables: the encryption key").
 *
 * On disk, under the server's data dir:
 *   variables.key              the active key (vars_crypt.h), made at the
 *                              first start;
 *   variables.keys/<id>.key    each key a rotation replaced (dir 0700,
 *                              files 0600), kept so that what is still
 *                              sealed with it (a variable a rotation did not
 *                              reach, a snapshot taken before) opens.
 * New variables are sealed with the active key; a sealed blob names its key
 * (key_id), and opens with whichever key of the ring has that id.
 *
 * A rotation makes a new key and moves the old one into variables.keys/
 * (the old one linked there first, the new one renamed over variables.key
 * after, each fsynced: a crash at any point leaves a ring that opens every
 * variable).  Re-sealing the variables with the new key is the caller's
 * (routes_keyring.c), through vars_keyring_seal/unseal.
 *
 * Thread safety: every function may be called from any thread; the ring
 * holds a lock while it reads or changes its keys, never while it
 * encrypts. */
#ifndef HERD_SERVER_VARS_KEYRING_H
#define HERD_SERVER_VARS_KEYRING_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "server/vars_crypt.h"

#define VARS_KEYS_DIR "variables.keys"

struct vars_ring_key {
	unsigned char key[VARS_KEY_LEN];
	char id[VARS_KEY_ID_LEN + 1];
	int64_t create_time; /* unix ns: the key file's modification time */
};

struct vars_keyring {
	pthread_mutex_t lock;
	char *dir;                  /* the server's data dir; owned */
	struct vars_ring_key *keys; /* owned; zeroed before it is freed */
	size_t nkeys, active;       /* keys[active] seals */
};

/* Opens dir's ring: the active key (made when absent, vars_key_load) and
 * every retired key under dir/variables.keys.  A key file that is not
 * VARS_KEY_LEN bytes, that others may read, or whose name is not its key's
 * id stops the server: -errno with err naming the file. */
int vars_keyring_open(struct vars_keyring *ring, const char *dir, struct herd_err *err);
void vars_keyring_close(struct vars_keyring *ring);

/* items sealed for variable (ns, path) with the active key (vars_seal). */
json_t *vars_keyring_seal(struct vars_keyring *ring, const char *ns, const char *path,
			  const json_t *items, struct herd_err *err);
/* The items of a sealed blob, opened with the ring's key of its key_id
 * (vars_unseal); NULL with err when the ring has no such key. */
json_t *vars_keyring_unseal(struct vars_keyring *ring, const char *ns, const char *path,
			    const json_t *sealed, struct herd_err *err);

/* The active key's id into id. */
void vars_keyring_active(struct vars_keyring *ring, char id[VARS_KEY_ID_LEN + 1]);

/* A new active key; the one it replaces is kept in variables.keys/ (its id
 * into old_id, the new one's into new_id).  -errno with err when a file
 * cannot be written; the ring is then as it was, on disk and in memory. */
int vars_keyring_rotate(struct vars_keyring *ring, char old_id[VARS_KEY_ID_LEN + 1],
			char new_id[VARS_KEY_ID_LEN + 1], struct herd_err *err);

/* Removes retired key id from the ring and from disk.  -ENOENT when the ring
 * has no such key, -EBUSY for the active one; -errno with err otherwise. */
int vars_keyring_remove(struct vars_keyring *ring, const char *id, struct herd_err *err);

/* Key material for one purpose, made from ring key id without the key
 * leaving the ring: HMAC-SHA256(key, label) into out.  Every server that
 * holds the same key file derives the same bytes; another label, or
 * another key, derives others (label names the purpose and its version,
 * e.g. "herd workload identity signing key v1").  -ENOENT with err when
 * the ring has no key id. */
#define VARS_DERIVED_LEN 32
int vars_keyring_derive(struct vars_keyring *ring, const char *id, const char *label,
			unsigned char out[VARS_DERIVED_LEN], struct herd_err *err);
/* Whether the ring holds key id. */
bool vars_keyring_holds(struct vars_keyring *ring, const char *id);

/* The ring's keys, oldest first: [{"key_id", "active", "create_time"}] (a
 * new reference). */
json_t *vars_keyring_list(struct vars_keyring *ring);

#endif
