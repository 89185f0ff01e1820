/* vars_keyring: the active key and the retired ones (see vars_keyring.h). */
#include "server/vars_keyring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/xalloc.h"

static char *keys_dir(const struct vars_keyring *ring)
{
	return xasprintf("%s/%s", ring->dir, VARS_KEYS_DIR);
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void add_key(struct vars_keyring *ring, const struct vars_ring_key *k)
{
	ring->keys = xrealloc(ring->keys, (ring->nkeys + 1) * sizeof(*ring->keys));
	ring->keys[ring->nkeys++] = *k;
}

static bool is_key_name(const char *name)
{
	size_t n = strlen(name);
	if (n != VARS_KEY_ID_LEN + 4 || strcmp(name + VARS_KEY_ID_LEN, ".key"))
		return false;
	for (size_t i = 0; i < VARS_KEY_ID_LEN; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return false;
	return true;
}

/* The retired keys: every <id>.key under variables.keys/ (none when the
 * directory is absent: no rotation yet).  Other names (a rotation's
 * temporary file) are left alone. */
static int load_retired(struct vars_keyring *ring, struct herd_err *err)
{
	char *dir = keys_dir(ring);
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = errno == ENOENT ? 0 : herd_errf(err, -errno, "variables keys: %s: %s", dir,
						      strerror(errno));
		free(dir);
		return rc;
	}
	while (rc == 0 && (e = readdir(d))) {
		struct vars_ring_key k;
		char *path;
		if (!is_key_name(e->d_name))
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		rc = vars_key_read(path, k.key, &k.create_time, err);
		if (rc == 0) {
			vars_key_id(k.key, k.id);
			if (strncmp(k.id, e->d_name, VARS_KEY_ID_LEN))
				rc = herd_errf(err, -EINVAL, "variables key: %s holds key %s, not "
					       "the key its name says", path, k.id);
			else if (strcmp(k.id, ring->keys[ring->active].id))
				add_key(ring, &k);
		}
		explicit_bzero(&k, sizeof(k));
		free(path);
	}
	closedir(d);
	free(dir);
	return rc;
}

static int by_create_time(const void *a, const void *b)
{
	const struct vars_ring_key *x = a, *y = b;
	if (x->create_time != y->create_time)
		return x->create_time < y->create_time ? -1 : 1;
	return strcmp(x->id, y->id);
}

int vars_keyring_open(struct vars_keyring *ring, const char *dir, struct herd_err *err)
{
	struct vars_ring_key active;
	int rc;

	memset(ring, 0, sizeof(*ring));
	pthread_mutex_init(&ring->lock, NULL);
	ring->dir = xstrdup(dir);
	rc = vars_key_load(dir, active.key, active.id, &active.create_time, err);
	if (rc == 0) {
		add_key(ring, &active);
		rc = load_retired(ring, err);
	}
	explicit_bzero(&active, sizeof(active));
	if (rc < 0) {
		vars_keyring_close(ring);
		return rc;
	}
	/* oldest first, for the list; the active key (keys[0] now) after the
	 * retired ones of its time (a file system's clock ticks coarsely) */
	qsort(ring->keys + 1, ring->nkeys - 1, sizeof(*ring->keys), by_create_time);
	size_t at = 1;
	while (at < ring->nkeys && ring->keys[at].create_time <= ring->keys[0].create_time)
		at++;
	struct vars_ring_key first = ring->keys[0];
	memmove(&ring->keys[0], &ring->keys[1], (at - 1) * sizeof(*ring->keys));
	ring->keys[at - 1] = first;
	ring->active = at - 1;
	explicit_bzero(&first, sizeof(first));
	return 0;
}

void vars_keyring_close(struct vars_keyring *ring)
{
	if (ring->keys)
		explicit_bzero(ring->keys, ring->nkeys * sizeof(*ring->keys));
	free(ring->keys);
	free(ring->dir);
	pthread_mutex_destroy(&ring->lock);
	memset(ring, 0, sizeof(*ring));
}

/* A copy of key id (the active one when id is NULL) into *out; false when
 * the ring has none. */
static bool copy_key(struct vars_keyring *ring, const char *id, struct vars_ring_key *out)
{
	bool found = false;
	pthread_mutex_lock(&ring->lock);
	for (size_t i = 0; i < ring->nkeys && !found; i++)
		if (id ? !strcmp(ring->keys[i].id, id) : i == ring->active) {
			*out = ring->keys[i];
			found = true;
		}
	pthread_mutex_unlock(&ring->lock);
	return found;
}

void vars_keyring_active(struct vars_keyring *ring, char id[VARS_KEY_ID_LEN + 1])
{
	struct vars_ring_key k;
	copy_key(ring, NULL, &k);
	memcpy(id, k.id, VARS_KEY_ID_LEN + 1);
	explicit_bzero(&k, sizeof(k));
}

int vars_keyring_derive(struct vars_keyring *ring, const char *id, const char *label,
			unsigned char out[VARS_DERIVED_LEN], struct herd_err *err)
{
	struct vars_ring_key k;
	int g;

	if (!copy_key(ring, id, &k))
		return herd_errf(err, -ENOENT, "the keyring holds no key %s", id);
	g = gnutls_hmac_fast(GNUTLS_MAC_SHA256, k.key, sizeof(k.key), label, strlen(label), out);
	explicit_bzero(&k, sizeof(k));
	if (g < 0)
		return herd_errf(err, -EIO, "deriving from key %s: %s", id, gnutls_strerror(g));
	return 0;
}

bool vars_keyring_holds(struct vars_keyring *ring, const char *id)
{
	bool found = false;
	pthread_mutex_lock(&ring->lock);
	for (size_t i = 0; i < ring->nkeys && !found; i++)
		found = !strcmp(ring->keys[i].id, id);
	pthread_mutex_unlock(&ring->lock);
	return found;
}

json_t *vars_keyring_seal(struct vars_keyring *ring, const char *ns, const char *path,
			  const json_t *items, struct herd_err *err)
{
	struct vars_ring_key k;
	json_t *sealed;
	copy_key(ring, NULL, &k);
	sealed = vars_seal(k.key, k.id, ns, path, items, err);
	explicit_bzero(&k, sizeof(k));
	return sealed;
}

json_t *vars_keyring_unseal(struct vars_keyring *ring, const char *ns, const char *path,
			    const json_t *sealed, struct herd_err *err)
{
	const char *kid = json_string_value(json_object_get(sealed, "key_id"));
	struct vars_ring_key k;
	json_t *items;

	if (!kid) {
		herd_errf(err, -EBADMSG, "variable %s: its sealed items are damaged", path);
		return NULL;
	}
	if (!copy_key(ring, kid, &k)) {
		char active[VARS_KEY_ID_LEN + 1];
		vars_keyring_active(ring, active);
		herd_errf(err, -EBADMSG, "variable %s was encrypted under key %s, which this "
			  "server's keyring does not hold (its active key is %s): restore the key "
			  "file that goes with the state, as %s/%s.key", path, kid, active,
			  VARS_KEYS_DIR, kid);
		return NULL;
	}
	items = vars_unseal(k.key, k.id, ns, path, sealed, err);
	explicit_bzero(&k, sizeof(k));
	return items;
}

int vars_keyring_rotate(struct vars_keyring *ring, char old_id[VARS_KEY_ID_LEN + 1],
			char new_id[VARS_KEY_ID_LEN + 1], struct herd_err *err)
{
	char *dir = keys_dir(ring), *kept = NULL, *active_path;
	struct vars_ring_key fresh = { 0 };
	struct vars_ring_key *cur;
	int rc;

	pthread_mutex_lock(&ring->lock);
	cur = &ring->keys[ring->active];
	active_path = xasprintf("%s/%s", ring->dir, VARS_KEY_FILE);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		rc = herd_errf(err, -errno, "variables keys: %s: %s", dir, strerror(errno));
		goto out;
	}
	/* the old key kept first: a crash after this leaves it both active
	 * and kept, which opens everything */
	kept = xasprintf("%s/%s.key", dir, cur->id);
	if ((rc = vars_key_write(dir, kept, cur->key, false, err)) < 0 ||
	    (rc = vars_key_new(fresh.key, err)) < 0)
		goto out;
	/* its creation time survives a restart: the file's mtime */
	struct timespec times[2] = { { cur->create_time / 1000000000, cur->create_time % 1000000000 },
				     { cur->create_time / 1000000000, cur->create_time % 1000000000 } };
	utimensat(AT_FDCWD, kept, times, AT_SYMLINK_NOFOLLOW);
	vars_key_id(fresh.key, fresh.id);
	if ((rc = vars_key_write(ring->dir, active_path, fresh.key, true, err)) < 0)
		goto out;
	fresh.create_time = wall_ns();
	memcpy(old_id, cur->id, VARS_KEY_ID_LEN + 1);
	memcpy(new_id, fresh.id, VARS_KEY_ID_LEN + 1);
	add_key(ring, &fresh);
	ring->active = ring->nkeys - 1;
out:
	pthread_mutex_unlock(&ring->lock);
	explicit_bzero(&fresh, sizeof(fresh));
	free(active_path);
	free(kept);
	free(dir);
	return rc;
}

int vars_keyring_remove(struct vars_keyring *ring, const char *id, struct herd_err *err)
{
	char *dir = keys_dir(ring), *path = NULL;
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&ring->lock);
	for (i = 0; i < ring->nkeys && strcmp(ring->keys[i].id, id); i++)
		;
	if (i == ring->nkeys) {
		rc = herd_errf(err, -ENOENT, "the keyring holds no key %s", id);
	} else if (i == ring->active) {
		rc = herd_errf(err, -EBUSY, "key %s is the active key; rotate first", id);
	} else {
		path = xasprintf("%s/%s.key", dir, id);
		if (unlink(path) < 0 && errno != ENOENT) {
			rc = herd_errf(err, -errno, "variables key: removing %s: %s", path,
				       strerror(errno));
		} else {
			explicit_bzero(&ring->keys[i], sizeof(ring->keys[i]));
			memmove(&ring->keys[i], &ring->keys[i + 1],
				(ring->nkeys - i - 1) * sizeof(*ring->keys));
			ring->nkeys--;
			if (ring->active > i)
				ring->active--;
		}
	}
	pthread_mutex_unlock(&ring->lock);
	free(path);
	free(dir);
	return rc;
}

json_t *vars_keyring_list(struct vars_keyring *ring)
{
	json_t *out = json_array();
	pthread_mutex_lock(&ring->lock);
	for (size_t i = 0; i < ring->nkeys; i++)
		json_array_append_new(out, json_pack("{s:s, s:b, s:I}", "key_id", ring->keys[i].id,
						     "active", i == ring->active, "create_time",
						     (json_int_t)ring->keys[i].create_time));
	pthread_mutex_unlock(&ring->lock);
	return out;
}
