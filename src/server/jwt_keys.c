/* jwt_keys: the tokens' signing keys, derived from the keyring's (see
 * jwt_keys.h). */
#include "server/jwt_keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jwt.h"
#include "common/xalloc.h"

static void key_release(struct jwt_key *k)
{
	gnutls_privkey_deinit(k->priv);
	gnutls_pubkey_deinit(k->pub);
	memset(k, 0, sizeof(*k));
}

static struct jwt_key *find(struct jwt_keys *keys, const char *kid)
{
	for (size_t i = 0; i < keys->nkeys; i++)
		if (!strcmp(keys->keys[i].kid, kid))
			return &keys->keys[i];
	return NULL;
}

static void drop(struct jwt_keys *keys, struct jwt_key *k)
{
	size_t i = (size_t)(k - keys->keys);
	key_release(k);
	memmove(&keys->keys[i], &keys->keys[i + 1], (keys->nkeys - i - 1) * sizeof(*k));
	keys->nkeys--;
}

static int not_held(const char *kid, struct herd_err *err)
{
	return herd_errf(err, -ENOKEY, "token: signed with key %s, which the keyring does not hold",
			 kid);
}

/* Ring key kid's RSA key and its public half into *out. */
static int derive(struct vars_keyring *ring, const char *kid, struct jwt_key *out,
		  struct herd_err *err)
{
	unsigned char seed[VARS_DERIVED_LEN];
	int rc = vars_keyring_derive(ring, kid, JWT_KEYS_LABEL, seed, err);

	if (rc == -ENOENT)
		rc = not_held(kid, err);
	if (rc == 0)
		rc = jwt_key_derive(seed, sizeof(seed), &out->priv, err);
	explicit_bzero(seed, sizeof(seed));
	if (rc == 0)
		rc = jwt_key_public(out->priv, &out->pub, err);
	return rc;
}

/* Ring key kid's RSA key, derived now when it is not yet: 0 with the lock
 * held and *out the key (valid until the lock is let go), or -errno with
 * err and the lock not held (-ENOKEY: the ring holds no key kid). */
static int hold_key(struct jwt_keys *keys, const char *kid, struct jwt_key **out,
		    struct herd_err *err)
{
	struct jwt_key *k, made = { { 0 }, NULL, NULL };
	int rc;

	pthread_mutex_lock(&keys->lock);
	/* the ring first: a kid from a token is anyone's text, and a key
	 * removed from the ring verifies nothing even before it is forgotten */
	if (!vars_keyring_holds(keys->ring, kid)) {
		pthread_mutex_unlock(&keys->lock);
		return not_held(kid, err);
	}
	while ((k = find(keys, kid)) && !k->priv)
		pthread_cond_wait(&keys->derived, &keys->lock); /* another thread derives it */
	if (k) {
		*out = k;
		return 0;
	}
	/* ours to derive, outside the lock: a placeholder (no priv) makes the
	 * others who need this key wait for it rather than derive it too */
	keys->keys = xrealloc(keys->keys, (keys->nkeys + 1) * sizeof(*keys->keys));
	k = &keys->keys[keys->nkeys++];
	memset(k, 0, sizeof(*k));
	memcpy(k->kid, kid, VARS_KEY_ID_LEN + 1);
	pthread_mutex_unlock(&keys->lock);

	rc = derive(keys->ring, kid, &made, err);

	pthread_mutex_lock(&keys->lock);
	/* the array may have moved; the placeholder is gone when the key was
	 * forgotten meanwhile (removed from the ring): not kept then */
	k = find(keys, kid);
	if (rc == 0 && (!k || !vars_keyring_holds(keys->ring, kid)))
		rc = not_held(kid, err);
	if (rc == 0) {
		k->priv = made.priv;
		k->pub = made.pub;
		keys->derivations++;
	} else {
		if (k && !k->priv)
			drop(keys, k);
		key_release(&made);
	}
	pthread_cond_broadcast(&keys->derived);
	if (rc < 0) {
		pthread_mutex_unlock(&keys->lock);
		return rc;
	}
	*out = k;
	return 0;
}

void jwt_keys_open(struct jwt_keys *keys, struct vars_keyring *ring)
{
	memset(keys, 0, sizeof(*keys));
	pthread_mutex_init(&keys->lock, NULL);
	pthread_cond_init(&keys->derived, NULL);
	keys->ring = ring;
}

void jwt_keys_close(struct jwt_keys *keys)
{
	for (size_t i = 0; i < keys->nkeys; i++)
		key_release(&keys->keys[i]);
	free(keys->keys);
	pthread_cond_destroy(&keys->derived);
	pthread_mutex_destroy(&keys->lock);
	memset(keys, 0, sizeof(*keys));
}

void jwt_keys_forget(struct jwt_keys *keys, const char *kid)
{
	struct jwt_key *k;
	pthread_mutex_lock(&keys->lock);
	if ((k = find(keys, kid)))
		drop(keys, k); /* a placeholder too: its deriver then keeps nothing */
	pthread_mutex_unlock(&keys->lock);
}

int jwt_keys_sign(struct jwt_keys *keys, const json_t *claims, char **token,
		  struct herd_err *err)
{
	char active[VARS_KEY_ID_LEN + 1];
	struct jwt_key *k;
	int rc;

	vars_keyring_active(keys->ring, active);
	if ((rc = hold_key(keys, active, &k, err)) < 0)
		return rc;
	rc = jwt_sign(k->priv, k->kid, claims, token, err);
	pthread_mutex_unlock(&keys->lock);
	return rc;
}

int jwt_keys_verify(struct jwt_keys *keys, const char *token, int64_t now, json_t **claims,
		    struct herd_err *err)
{
	struct jwt t;
	struct jwt_key *k;
	int rc = jwt_decode(token, &t, err);

	if (rc < 0)
		return rc;
	if ((rc = hold_key(keys, t.kid, &k, err)) == 0) {
		rc = jwt_verify(token, &t, k->pub, err);
		pthread_mutex_unlock(&keys->lock);
	}
	if (rc == 0)
		rc = jwt_check_time(t.claims, now, err);
	if (rc == 0)
		*claims = json_incref(t.claims);
	jwt_release(&t);
	return rc;
}

json_t *jwt_keys_jwks(struct jwt_keys *keys, struct herd_err *err)
{
	json_t *ring = vars_keyring_list(keys->ring), *list = json_array(), *e;
	size_t i;

	json_array_foreach(ring, i, e) {
		const char *kid = json_string_value(json_object_get(e, "key_id"));
		struct jwt_key *k;
		json_t *jwk;
		int rc = hold_key(keys, kid, &k, err);
		if (rc == -ENOKEY)
			continue; /* removed since the list was taken */
		if (rc < 0) {
			json_decref(list);
			json_decref(ring);
			return NULL;
		}
		jwk = jwt_jwk(k->pub, k->kid);
		pthread_mutex_unlock(&keys->lock);
		if (jwk)
			json_array_append_new(list, jwk);
	}
	json_decref(ring);
	return json_pack("{s:o}", "keys", list);
}
