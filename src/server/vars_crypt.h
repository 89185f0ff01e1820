/* vars_crypt: variables' items encrypted at rest (docs/operations.md,
 * "Variables: the encryption key").
 *
 * The server's active key, 32 random bytes, is <data dir>/variables.key
 * (mode 0600, written at the server's first start and replaced only by a
 * rotation, vars_keyring.h, which keeps the keys it replaced).
 * A variable's items are stored sealed: AES-256-GCM (GnuTLS) over the items'
 * JSON text, a random 96-bit nonce per write, the namespace and path as
 * additional data (a sealed blob moved to another variable does not open),
 * as {"key_id": the key's id, "data": base64(nonce | ciphertext | tag)}.
 * The key id (16 hex digits of the key's SHA-256) names the key in errors:
 * a store restored without its key file, or servers of one PostgreSQL
 * store with different keys, say which key a variable needs.
 *
 * The keys are the server's only copies: a snapshot holds sealed items, so
 * a backup is the snapshot and the key files (kept apart). */
#ifndef HERD_SERVER_VARS_CRYPT_H
#define HERD_SERVER_VARS_CRYPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define VARS_KEY_FILE "variables.key"
#define VARS_KEY_LEN 32
#define VARS_KEY_ID_LEN 16

/* Reads dir/variables.key, creating it (0600, fsynced) when absent, into
 * key, its id (NUL-terminated) into id and, when not NULL, the file's
 * modification time into *mtime_ns.  A key file that is not exactly
 * VARS_KEY_LEN bytes, or that its group or others may read, is refused
 * (-EINVAL, -EPERM) with err saying why. */
int vars_key_load(const char *dir, unsigned char key[VARS_KEY_LEN],
		  char id[VARS_KEY_ID_LEN + 1], int64_t *mtime_ns, struct herd_err *err);
/* The checks of vars_key_load on one key file (never created). */
int vars_key_read(const char *path, unsigned char key[VARS_KEY_LEN], int64_t *mtime_ns,
		  struct herd_err *err);
/* Writes key to path (in directory dir, where a temporary file is made):
 * linked into place when !replace (an existing path is kept: 0), renamed
 * over it when replace; the file and dir fsynced. */
int vars_key_write(const char *dir, const char *path, const unsigned char key[VARS_KEY_LEN],
		   bool replace, struct herd_err *err);
/* 32 random bytes (getrandom). */
int vars_key_new(unsigned char key[VARS_KEY_LEN], struct herd_err *err);
/* A key's id: the first 16 hex digits of its SHA-256. */
void vars_key_id(const unsigned char key[VARS_KEY_LEN], char id[VARS_KEY_ID_LEN + 1]);

/* The sealed form of items for variable (ns, path): a new reference, or
 * NULL with err. */
json_t *vars_seal(const unsigned char key[VARS_KEY_LEN], const char *id, const char *ns,
		  const char *path, const json_t *items, struct herd_err *err);
/* The items of a sealed form: a new reference, or NULL with err (another
 * key, or damaged or moved data: -EBADMSG). */
json_t *vars_unseal(const unsigned char key[VARS_KEY_LEN], const char *id, const char *ns,
		    const char *path, const json_t *sealed, struct herd_err *err);

#endif
