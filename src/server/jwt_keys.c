/* jwt_keys: the tokens' signing keys beside the keyring (see jwt_keys.h). */
#include "server/jwt_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jwt.h"
#include "common/xalloc.h"

#define PEM_MAX (64 * 1024)

static void key_release(struct jwt_key *k)
{
	gnutls_privkey_deinit(k->priv);
	gnutls_pubkey_deinit(k->pub);
	memset(k, 0, sizeof(*k));
}

/* The PEM text of path into *pem: refused when group or others may read
 * it, or when it is too long to be a key.  -ENOENT when absent. */
static int read_pem(const char *path, char **pem, size_t *len, struct herd_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = 0;
	struct stat st;
	ssize_t got;
	char *buf;

	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : herd_errf(err, -errno, "signing key: %s: %s", path,
						   strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > PEM_MAX) {
		close(fd);
		return herd_errf(err, -EINVAL, "signing key: %s is not a key file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return herd_errf(err, -EPERM, "signing key: %s may be read by others (mode %04o): "
				 "chmod 600 it", path, (unsigned)(st.st_mode & 07777));
	}
	buf = xmalloc((size_t)st.st_size + 1);
	got = read(fd, buf, (size_t)st.st_size);
	if (got != st.st_size)
		rc = herd_errf(err, got < 0 ? -errno : -EIO, "signing key: reading %s", path);
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[got] = '\0';
	*pem = buf;
	*len = (size_t)got;
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	if (fd < 0 || fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* pem written to path, 0600 and fsynced, linked into place: -EEXIST when
 * path appeared meanwhile (then it is the one to read). */
static int write_pem(const char *dir, const char *path, const char *pem, size_t len,
		     struct herd_err *err)
{
	char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	int fd, rc = 0;

	unlink(tmp); /* a crashed write's */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, pem, len) != (ssize_t)len || fsync(fd) < 0)
		rc = herd_errf(err, -errno ? -errno : -EIO, "signing key: writing %s: %s", tmp,
			       strerror(errno));
	if (fd >= 0)
		close(fd);
	if (rc == 0 && link(tmp, path) < 0)
		rc = errno == EEXIST ? -EEXIST
				     : herd_errf(err, -errno, "signing key: linking %s: %s", path,
						 strerror(errno));
	unlink(tmp);
	if (rc == 0)
		fsync_dir(dir);
	free(tmp);
	return rc;
}

/* Key kid's RSA key, read, else made and written. */
static int load_or_make(const char *dir, const char *kid, struct jwt_key *out,
			struct herd_err *err)
{
	char *path = xasprintf("%s/%s" JWT_KEY_SUFFIX, dir, kid), *pem = NULL;
	size_t len = 0;
	struct jwt_key k = { 0 };
	int rc;

	memcpy(k.kid, kid, VARS_KEY_ID_LEN + 1);
	rc = read_pem(path, &pem, &len, err);
	if (rc == -ENOENT) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			rc = herd_errf(err, -errno, "signing key: %s: %s", dir, strerror(errno));
			goto out;
		}
		if ((rc = jwt_key_generate(&k.priv, &pem, &len, err)) < 0)
			goto out;
		rc = write_pem(dir, path, pem, len, err);
		if (rc == -EEXIST) { /* another start made it first: that one */
			gnutls_privkey_deinit(k.priv);
			k.priv = NULL;
			explicit_bzero(pem, len);
			free(pem);
			pem = NULL;
			rc = read_pem(path, &pem, &len, err);
		}
	}
	if (rc == 0 && !k.priv) {
		struct herd_err why = { 0, "" };
		if ((rc = jwt_key_import(pem, len, &k.priv, &why)) < 0)
			herd_errf(err, rc, "%s: %s", path, why.msg);
	}
	if (rc == 0)
		rc = jwt_key_public(k.priv, &k.pub, err);
out:
	if (pem) {
		explicit_bzero(pem, len);
		free(pem);
	}
	free(path);
	if (rc < 0)
		key_release(&k);
	else
		*out = k;
	return rc;
}

static struct jwt_key *find(struct jwt_keys *keys, const char *kid)
{
	for (size_t i = 0; i < keys->nkeys; i++)
		if (!strcmp(keys->keys[i].kid, kid))
			return &keys->keys[i];
	return NULL;
}

int jwt_keys_open(struct jwt_keys *keys, struct vars_keyring *ring, struct herd_err *err)
{
	int rc;
	memset(keys, 0, sizeof(*keys));
	pthread_mutex_init(&keys->lock, NULL);
	keys->dir = xasprintf("%s/%s", ring->dir, VARS_KEYS_DIR);
	if ((rc = jwt_keys_sync(keys, ring, err)) < 0)
		jwt_keys_close(keys);
	return rc;
}

void jwt_keys_close(struct jwt_keys *keys)
{
	for (size_t i = 0; i < keys->nkeys; i++)
		key_release(&keys->keys[i]);
	free(keys->keys);
	free(keys->dir);
	pthread_mutex_destroy(&keys->lock);
	memset(keys, 0, sizeof(*keys));
}

int jwt_keys_sync(struct jwt_keys *keys, struct vars_keyring *ring, struct herd_err *err)
{
	json_t *list = vars_keyring_list(ring), *k;
	size_t n = json_array_size(list), i, kept = 0;
	struct jwt_key *next = xcalloc(n ? n : 1, sizeof(*next));
	char active[VARS_KEY_ID_LEN + 1] = "";
	int rc = 0;

	/* made outside the lock (a key takes a while to generate): two
	 * syncs at once find the file the first one linked (write_pem) */
	json_array_foreach(list, i, k) {
		const char *kid = json_string_value(json_object_get(k, "key_id"));
		struct jwt_key *have;
		if (!kid || strlen(kid) != VARS_KEY_ID_LEN)
			continue;
		if (json_is_true(json_object_get(k, "active")))
			memcpy(active, kid, sizeof(active));
		pthread_mutex_lock(&keys->lock);
		have = find(keys, kid);
		pthread_mutex_unlock(&keys->lock);
		if (have) {
			memcpy(next[kept].kid, kid, sizeof(next[kept].kid));
			kept++; /* taken over below, under the lock */
			continue;
		}
		if ((rc = load_or_make(keys->dir, kid, &next[kept], err)) < 0)
			break;
		kept++;
	}
	json_decref(list);
	pthread_mutex_lock(&keys->lock);
	if (rc == 0) {
		/* keys held already move over; the others are released */
		for (i = 0; i < kept; i++) {
			struct jwt_key *have = next[i].priv ? NULL : find(keys, next[i].kid);
			if (have) {
				next[i] = *have;
				memset(have, 0, sizeof(*have));
			}
		}
		for (i = 0; i < keys->nkeys; i++)
			key_release(&keys->keys[i]);
		free(keys->keys);
		keys->keys = next;
		keys->nkeys = kept;
		memcpy(keys->active, active, sizeof(active));
		/* a key removed between the two looks: not kept half-made */
		for (i = 0; i < keys->nkeys;)
			if (!keys->keys[i].priv)
				memmove(&keys->keys[i], &keys->keys[i + 1],
					(--keys->nkeys - i) * sizeof(*keys->keys));
			else
				i++;
	} else {
		for (i = 0; i < kept; i++)
			if (next[i].priv)
				key_release(&next[i]);
		free(next);
	}
	pthread_mutex_unlock(&keys->lock);
	return rc;
}

int jwt_keys_remove(struct jwt_keys *keys, const char *kid, struct herd_err *err)
{
	char *path = xasprintf("%s/%s" JWT_KEY_SUFFIX, keys->dir, kid);
	struct jwt_key *k;
	int rc = 0;

	pthread_mutex_lock(&keys->lock);
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = herd_errf(err, -errno, "signing key: removing %s: %s", path, strerror(errno));
	} else if ((k = find(keys, kid))) {
		size_t i = (size_t)(k - keys->keys);
		key_release(k);
		memmove(&keys->keys[i], &keys->keys[i + 1], (keys->nkeys - i - 1) * sizeof(*k));
		keys->nkeys--;
	}
	pthread_mutex_unlock(&keys->lock);
	free(path);
	return rc;
}

int jwt_keys_sign(struct jwt_keys *keys, const json_t *claims, char **token,
		  struct herd_err *err)
{
	struct jwt_key *k;
	int rc;

	pthread_mutex_lock(&keys->lock);
	k = find(keys, keys->active);
	rc = k ? jwt_sign(k->priv, k->kid, claims, token, err)
	       : herd_errf(err, -ENOKEY, "signing key: none for the active key %s", keys->active);
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
	pthread_mutex_lock(&keys->lock);
	k = find(keys, t.kid);
	rc = k ? jwt_verify(token, &t, k->pub, err)
	       : herd_errf(err, -ENOKEY, "token: signed with key %s, which the keyring does not "
			   "hold", t.kid);
	pthread_mutex_unlock(&keys->lock);
	if (rc == 0)
		rc = jwt_check_time(t.claims, now, err);
	if (rc == 0)
		*claims = json_incref(t.claims);
	jwt_release(&t);
	return rc;
}

json_t *jwt_keys_jwks(struct jwt_keys *keys)
{
	json_t *list = json_array();
	pthread_mutex_lock(&keys->lock);
	for (size_t i = 0; i < keys->nkeys; i++) {
		json_t *jwk = jwt_jwk(keys->keys[i].pub, keys->keys[i].kid);
		if (jwk)
			json_array_append_new(list, jwk);
	}
	pthread_mutex_unlock(&keys->lock);
	return json_pack("{s:o}", "keys", list);
}
