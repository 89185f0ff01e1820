/* vars_crypt: variables' items encrypted at rest (docs/operations.md,
 * "Variables: the encryption key").
 *
 * The server keeps one key, 32 random bytes, in <data dir>/variables.key
 * (mode 0600, written once at the server's first start, never rewritten).
 * A variable's items are stored sealed: AES-256-GCM (GnuTLS) over the items'
 * JSON text, a random 96-bit nonce per write, the namespace and path as
 * additional data (a sealed blob moved to another variable does not open),
 * as {"key_id": the key's id, "data": base64(nonce | ciphertext | tag)}.
 * The key id (16 hex digits of the key's SHA-256) names the key in errors:
 * a store restored without its key file, or servers of one PostgreSQL
 * store with different keys, say which key a variable needs.
 *
 * The key is the server's only copy: a snapshot holds sealed items, so a
 * backup is the snapshot and the key file (kept apart). */
#ifndef HERD_SERVER_VARS_CRYPT_H
#define HERD_SERVER_VARS_CRYPT_H

#include <jansson.h>

#include "common/err.h"

#define VARS_KEY_FILE "variables.key"
#define VARS_KEY_LEN 32
#define VARS_KEY_ID_LEN 16

/* Reads dir/variables.key, creating it (0600, fsynced) when absent, into
 * key and its id (NUL-terminated) into id.  A key file that is not exactly
 * VARS_KEY_LEN bytes, or that its group or others may read, is refused
 * (-EINVAL, -EPERM) with err saying why. */
int vars_key_load(const char *dir, unsigned char key[VARS_KEY_LEN],
		  char id[VARS_KEY_ID_LEN + 1], struct herd_err *err);

/* The sealed form of items for variable (ns, path): a new reference, or
 * NULL with err. */
json_t *vars_seal(const unsigned char key[VARS_KEY_LEN], const char *id, const char *ns,
		  const char *path, const json_t *items, struct herd_err *err);
/* The items of a sealed form: a new reference, or NULL with err (another
 * key, or damaged or moved data: -EBADMSG). */
json_t *vars_unseal(const unsigned char key[VARS_KEY_LEN], const char *id, const char *ns,
		    const char *path, const json_t *sealed, struct herd_err *err);

#endif
