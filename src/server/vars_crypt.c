/* vars_crypt: the variables' key and AES-256-GCM sealing (see vars_crypt.h). */
#include "server/vars_crypt.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define NONCE_LEN 12
#define TAG_LEN 16

static int fill_random(unsigned char *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

void vars_key_id(const unsigned char key[VARS_KEY_LEN], char id[VARS_KEY_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[32];
	gnutls_hash_fast(GNUTLS_DIG_SHA256, key, VARS_KEY_LEN, d);
	for (int i = 0; i < VARS_KEY_ID_LEN / 2; i++) {
		id[2 * i] = hex[d[i] >> 4];
		id[2 * i + 1] = hex[d[i] & 15];
	}
	id[VARS_KEY_ID_LEN] = '\0';
	explicit_bzero(d, sizeof(d));
}

int vars_key_new(unsigned char key[VARS_KEY_LEN], struct herd_err *err)
{
	int rc = fill_random(key, VARS_KEY_LEN);
	if (rc < 0)
		return herd_errf(err, rc, "variables key: getrandom: %s", strerror(-rc));
	return 0;
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Written under a temporary name, then linked (or renamed) into place:
 * no reader ever sees half a key, and with link two servers never write two
 * keys (the second link fails with EEXIST: that one reads the first). */
int vars_key_write(const char *dir, const char *path, const unsigned char key[VARS_KEY_LEN],
		   bool replace, struct herd_err *err)
{
	char *tmp = xasprintf("%s/.key.%ld", dir, (long)getpid());
	int rc = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || write(fd, key, VARS_KEY_LEN) != (ssize_t)VARS_KEY_LEN || fsync(fd) < 0)
		rc = herd_errf(err, -errno, "variables key: writing %s: %s", tmp, strerror(errno));
	else if (replace ? rename(tmp, path) < 0 : link(tmp, path) < 0 && errno != EEXIST)
		rc = herd_errf(err, -errno, "variables key: creating %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (!replace || rc < 0)
		unlink(tmp);
	free(tmp);
	/* the directory entry durable too */
	if (rc == 0)
		fsync_dir(dir);
	return rc;
}

int vars_key_read(const char *path, unsigned char key[VARS_KEY_LEN], int64_t *mtime_ns,
		  struct herd_err *err)
{
	struct stat st;
	int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return herd_errf(err, -errno, "variables key: %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		rc = herd_errf(err, -EPERM, "variables key: %s must be a regular file only its "
			       "owner may read (chmod 600)", path);
	} else if (st.st_size != VARS_KEY_LEN || read(fd, key, VARS_KEY_LEN) != VARS_KEY_LEN) {
		rc = herd_errf(err, -EINVAL, "variables key: %s must hold exactly %d bytes", path,
			       VARS_KEY_LEN);
	} else if (mtime_ns) {
		*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
	close(fd);
	return rc;
}

int vars_key_load(const char *dir, unsigned char key[VARS_KEY_LEN],
		  char id[VARS_KEY_ID_LEN + 1], int64_t *mtime_ns, struct herd_err *err)
{
	char *path = xasprintf("%s/%s", dir, VARS_KEY_FILE);
	int rc = 0;

	if (access(path, F_OK) < 0 && errno == ENOENT) {
		unsigned char fresh[VARS_KEY_LEN];
		rc = vars_key_new(fresh, err);
		if (rc == 0)
			rc = vars_key_write(dir, path, fresh, false, err);
		explicit_bzero(fresh, sizeof(fresh));
	}
	if (rc == 0)
		rc = vars_key_read(path, key, mtime_ns, err);
	if (rc == 0)
		vars_key_id(key, id);
	free(path);
	return rc;
}

/* The additional data: a sealed blob opens only for its own variable. */
static void aad(struct strbuf *sb, const char *ns, const char *path)
{
	strbuf_addf(sb, "herd-variable\n%s\n%s", ns, path);
}

static int cipher(gnutls_aead_cipher_hd_t *h, const unsigned char key[VARS_KEY_LEN])
{
	gnutls_datum_t k = { (unsigned char *)key, VARS_KEY_LEN };
	return gnutls_aead_cipher_init(h, GNUTLS_CIPHER_AES_256_GCM, &k);
}

json_t *vars_seal(const unsigned char key[VARS_KEY_LEN], const char *id, const char *ns,
		  const char *path, const json_t *items, struct herd_err *err)
{
	char *text = json_dumps(items, JSON_COMPACT | JSON_SORT_KEYS), *b64 = NULL;
	size_t len = text ? strlen(text) : 0, out_len;
	unsigned char *out;
	struct strbuf ad = STRBUF_INIT;
	gnutls_aead_cipher_hd_t h;
	json_t *sealed = NULL;
	int rc;

	if (!text) {
		herd_errf(err, -EINVAL, "variable %s: the items cannot be encoded", path);
		return NULL;
	}
	out_len = len + TAG_LEN;
	out = xmalloc(NONCE_LEN + out_len);
	aad(&ad, ns, path);
	if ((rc = fill_random(out, NONCE_LEN)) < 0) {
		herd_errf(err, rc, "variable %s: getrandom: %s", path, strerror(-rc));
	} else if (cipher(&h, key) < 0) {
		herd_errf(err, -EIO, "variable %s: AES-256-GCM is not available", path);
	} else {
		rc = gnutls_aead_cipher_encrypt(h, out, NONCE_LEN, ad.buf, ad.len, TAG_LEN, text,
						len, out + NONCE_LEN, &out_len);
		gnutls_aead_cipher_deinit(h);
		if (rc < 0)
			herd_errf(err, -EIO, "variable %s: encrypting: %s", path,
				  gnutls_strerror(rc));
		else if ((b64 = base64_encode(out, NONCE_LEN + out_len)))
			sealed = json_pack("{s:s, s:s}", "key_id", id, "data", b64);
	}
	explicit_bzero(text, len);
	free(text);
	free(out);
	free(b64);
	strbuf_release(&ad);
	return sealed;
}

json_t *vars_unseal(const unsigned char key[VARS_KEY_LEN], const char *id, const char *ns,
		    const char *path, const json_t *sealed, struct herd_err *err)
{
	const char *kid = json_string_value(json_object_get(sealed, "key_id"));
	const char *data = json_string_value(json_object_get(sealed, "data"));
	unsigned char *raw = NULL;
	char *text = NULL;
	size_t n = 0, text_len;
	struct strbuf ad = STRBUF_INIT;
	gnutls_aead_cipher_hd_t h;
	json_t *items = NULL;
	int rc;

	if (!kid || !data) {
		herd_errf(err, -EBADMSG, "variable %s: its sealed items are damaged", path);
		return NULL;
	}
	if (strcmp(kid, id)) {
		herd_errf(err, -EBADMSG, "variable %s was encrypted under key %s, and this server's "
			  "%s is key %s (restore the key file that goes with the state)", path, kid,
			  VARS_KEY_FILE, id);
		return NULL;
	}
	raw = base64_decode(data, &n);
	if (!raw || n < NONCE_LEN + TAG_LEN) {
		free(raw);
		herd_errf(err, -EBADMSG, "variable %s: its sealed items are damaged", path);
		return NULL;
	}
	text_len = n; /* room for what GnuTLS may ask, the tag's size included */
	text = xmalloc(text_len + 1);
	aad(&ad, ns, path);
	if (cipher(&h, key) < 0) {
		herd_errf(err, -EIO, "variable %s: AES-256-GCM is not available", path);
	} else {
		rc = gnutls_aead_cipher_decrypt(h, raw, NONCE_LEN, ad.buf, ad.len, TAG_LEN,
						raw + NONCE_LEN, n - NONCE_LEN, text, &text_len);
		gnutls_aead_cipher_deinit(h);
		if (rc < 0) {
			herd_errf(err, -EBADMSG, "variable %s: its sealed items do not open with "
				  "key %s (damaged, or moved from another variable)", path, id);
		} else {
			items = json_loadb(text, text_len, 0, NULL);
			if (!json_is_object(items)) {
				json_decref(items);
				items = NULL;
				herd_errf(err, -EBADMSG, "variable %s: its items do not decode", path);
			}
			explicit_bzero(text, text_len);
		}
	}
	free(text);
	free(raw);
	strbuf_release(&ad);
	return items;
}
