/* tls: see tls.h. */
#include "common/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common/strbuf.h"
#include "common/xalloc.h"

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void tls_client_release(struct tls_client *t)
{
	if (!t)
		return;
	free(t->ca_file);
	free(t->cert_file);
	free(t->key_file);
	memset(t, 0, sizeof(*t));
}

void tls_client_copy(struct tls_client *dst, const struct tls_client *src)
{
	*dst = *src;
	dst->ca_file = dup_or_null(src->ca_file);
	dst->cert_file = dup_or_null(src->cert_file);
	dst->key_file = dup_or_null(src->key_file);
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcasecmp(s, "1") || !strcasecmp(s, "true")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(s, "0") || !strcasecmp(s, "false")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

int tls_client_from_env(struct tls_client *t, struct herd_err *err)
{
	const char *addr = env("HERD_ADDR"), *skip = env("HERD_SKIP_VERIFY");
	const char *cert = env("HERD_CLIENT_CERT"), *key = env("HERD_CLIENT_KEY");

	memset(t, 0, sizeof(*t));
	if (skip && parse_bool(skip, &t->skip_verify) < 0)
		return herd_errf(err, -EINVAL, "HERD_SKIP_VERIFY: expected 1, true, 0 or false, "
				 "not \"%s\"", skip);
	if (!cert != !key)
		return herd_errf(err, -EINVAL, "%s is set but %s is not: a client certificate "
				 "needs its key", cert ? "HERD_CLIENT_CERT" : "HERD_CLIENT_KEY",
				 cert ? "HERD_CLIENT_KEY" : "HERD_CLIENT_CERT");
	t->https = addr && !strncasecmp(addr, "https://", 8);
	t->ca_file = dup_or_null(env("HERD_CACERT"));
	t->cert_file = dup_or_null(cert);
	t->key_file = dup_or_null(key);
	return 0;
}

void tls_client_apply(const struct tls_client *t, void *curl)
{
	CURL *h = curl;

	if (t->ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
#if LIBCURL_VERSION_NUM >= 0x075700
		/* read at each new connection, as libcurl 7.88's GnuTLS build
		 * does anyway: a CA file rotated in place reaches the next
		 * connection (later versions would keep it for a day) */
		curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
	}
	if (t->cert_file && t->key_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, t->cert_file);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY, t->key_file);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (t->skip_verify) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (t->skip_hostname) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

/* --- the listener's side ------------------------------------------------ */

/* Reads a whole PEM file (at most TLS_MAX_PEM bytes) into *out, a
 * NUL-terminated string. */
static int read_pem(const char *what, const char *path, char **out, struct herd_err *err)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return herd_errf(err, -errno, "tls: %s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		rc = herd_errf(err, -EINVAL, "tls: %s %s: not a regular file", what, path);
		goto out;
	}
	for (;;) {
		strbuf_grow(&sb, 16384);
		ssize_t n = read(fd, sb.buf + sb.len, sb.alloc - sb.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = herd_errf(err, -errno, "tls: %s %s: %s", what, path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		strbuf_setlen(&sb, sb.len + (size_t)n);
		if (sb.len > TLS_MAX_PEM) {
			rc = herd_errf(err, -EFBIG, "tls: %s %s: larger than %d bytes", what, path,
				       TLS_MAX_PEM);
			goto out;
		}
	}
out:
	close(fd);
	if (rc == 0)
		*out = strbuf_detach(&sb, NULL);
	strbuf_release(&sb);
	return rc;
}

/* The number of PEM certificates in pem (0 after filling err). */
static unsigned count_certs(const char *what, const char *path, const char *pem,
			    struct herd_err *err)
{
	gnutls_datum_t d = { (unsigned char *)pem, (unsigned)strlen(pem) };
	gnutls_x509_crt_t *crts = NULL;
	unsigned n = 0;
	int r = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);

	if (r < 0 || n == 0) {
		herd_errf(err, -EINVAL, "tls: %s %s: no PEM certificate in it (%s)", what, path,
			  r < 0 ? gnutls_strerror(r) : "empty");
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return n;
}

/* The key must be a PEM private key (unencrypted: the agent starts
 * unattended) and match the certificate. */
static int check_key(const char *cert_file, const char *key_file, const char *cert_pem,
		     const char *key_pem, struct herd_err *err)
{
	gnutls_datum_t c = { (unsigned char *)cert_pem, (unsigned)strlen(cert_pem) };
	gnutls_datum_t k = { (unsigned char *)key_pem, (unsigned)strlen(key_pem) };
	gnutls_x509_privkey_t key;
	gnutls_certificate_credentials_t cred;
	int r;

	gnutls_x509_privkey_init(&key);
	r = gnutls_x509_privkey_import2(key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_x509_privkey_deinit(key);
	if (r < 0)
		return herd_errf(err, -EINVAL, "tls: key_file %s: not an unencrypted PEM private "
				 "key (%s)", key_file, gnutls_strerror(r));
	gnutls_certificate_allocate_credentials(&cred);
	r = gnutls_certificate_set_x509_key_mem2(cred, &c, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_certificate_free_credentials(cred);
	if (r < 0)
		return herd_errf(err, -EINVAL, "tls: key_file %s does not go with cert_file %s (%s)",
				 key_file, cert_file, gnutls_strerror(r));
	return 0;
}

/* --- credentials a reload can replace ----------------------------------- */

struct tls_keys {
	atomic_int refs;
	gnutls_pcert_st *pcerts;
	unsigned n;
	gnutls_privkey_t key;
	/* verify_client: the CA callers' certificates must chain to, kept
	 * with the keys so that a reload replaces both at once; NULL: none */
	gnutls_x509_trust_list_t trust;
};

struct tls_creds {
	atomic_int refs;
	pthread_mutex_t lock;    /* guards cur */
	struct tls_keys *cur;
};

void tls_keys_unref(struct tls_keys *k)
{
	if (!k || atomic_fetch_sub(&k->refs, 1) != 1)
		return;
	for (unsigned i = 0; i < k->n; i++)
		gnutls_pcert_deinit(&k->pcerts[i]);
	free(k->pcerts);
	gnutls_privkey_deinit(k->key);
	if (k->trust)
		gnutls_x509_trust_list_deinit(k->trust, 1);
	free(k);
}

bool tls_keys_verify_client(const struct tls_keys *k)
{
	return k && k->trust;
}

static struct tls_keys *keys_ref(struct tls_keys *k)
{
	atomic_fetch_add(&k->refs, 1);
	return k;
}

void tls_keys_get(const struct tls_keys *k, void *pcert, unsigned *n, void *key)
{
	*(gnutls_pcert_st **)pcert = k->pcerts;
	*n = k->n;
	*(gnutls_privkey_t *)key = k->key;
}

/* Parses checked PEM (tls_server_load checked them and that certificate
 * and key match) into keys, with ca_pem (NULL: none) as the trust of
 * callers' certificates; -EINVAL with err when GnuTLS still refuses them. */
static int keys_parse(const char *cert_pem, const char *key_pem, const char *ca_pem,
		      unsigned ncerts, struct tls_keys **out, struct herd_err *err)
{
	gnutls_datum_t c = { (unsigned char *)cert_pem, (unsigned)strlen(cert_pem) };
	gnutls_datum_t kd = { (unsigned char *)key_pem, (unsigned)strlen(key_pem) };
	struct tls_keys *k = xcalloc(1, sizeof(*k));
	unsigned n = ncerts;
	int r;

	atomic_init(&k->refs, 1);
	k->pcerts = xcalloc(ncerts, sizeof(*k->pcerts));
	r = gnutls_pcert_list_import_x509_raw(k->pcerts, &n, &c, GNUTLS_X509_FMT_PEM, 0);
	if (r < 0) {
		free(k->pcerts);
		free(k);
		return herd_errf(err, -EINVAL, "tls: the certificate cannot be used: %s",
				 gnutls_strerror(r));
	}
	k->n = n;
	gnutls_privkey_init(&k->key);
	r = gnutls_privkey_import_x509_raw(k->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0) {
		tls_keys_unref(k);
		return herd_errf(err, -EINVAL, "tls: the key cannot be used: %s",
				 gnutls_strerror(r));
	}
	if (ca_pem) {
		gnutls_datum_t ca = { (unsigned char *)ca_pem, (unsigned)strlen(ca_pem) };
		gnutls_x509_trust_list_init(&k->trust, 0);
		r = gnutls_x509_trust_list_add_trust_mem(k->trust, &ca, NULL, GNUTLS_X509_FMT_PEM,
							 0, 0);
		if (r <= 0) {
			tls_keys_unref(k);
			return herd_errf(err, -EINVAL, "tls: the CA cannot be used: %s",
					 r < 0 ? gnutls_strerror(r) : "no certificate");
		}
	}
	*out = k;
	return 0;
}

static struct tls_creds *creds_new(struct tls_keys *k)
{
	struct tls_creds *c = xcalloc(1, sizeof(*c));

	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->lock, NULL);
	c->cur = k;
	return c;
}

static struct tls_creds *creds_ref(struct tls_creds *c)
{
	if (c)
		atomic_fetch_add(&c->refs, 1);
	return c;
}

static void creds_unref(struct tls_creds *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	tls_keys_unref(c->cur);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct tls_keys *tls_creds_get(struct tls_creds *c)
{
	struct tls_keys *k;

	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	k = keys_ref(c->cur);
	pthread_mutex_unlock(&c->lock);
	return k;
}

void tls_creds_swap(struct tls_creds *dst, struct tls_creds *src)
{
	struct tls_keys *k = tls_creds_get(src), *old;

	if (!dst || !k || dst == src) {
		tls_keys_unref(k);
		return;
	}
	pthread_mutex_lock(&dst->lock);
	old = dst->cur;
	dst->cur = k;
	pthread_mutex_unlock(&dst->lock);
	/* connections that took the old keys keep a reference of their own */
	tls_keys_unref(old);
}

int tls_server_load(struct tls_server *s, const char *cert_file, const char *key_file,
		    const char *ca_file, bool verify_client, struct herd_err *err)
{
	struct tls_server t = { NULL, NULL, NULL, verify_client, NULL };
	struct tls_keys *keys = NULL;
	unsigned ncerts;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!cert_file || !key_file)
		return herd_errf(err, -EINVAL, "tls: %s is not set: https needs the agent's "
				 "certificate and key", !cert_file ? "cert_file" : "key_file");
	if (verify_client && !ca_file)
		return herd_errf(err, -EINVAL, "tls: verify_https_client needs ca_file, the CA "
				 "that signs client certificates");
	if ((rc = read_pem("cert_file", cert_file, &t.cert_pem, err)) < 0 ||
	    (rc = read_pem("key_file", key_file, &t.key_pem, err)) < 0 ||
	    (ca_file && (rc = read_pem("ca_file", ca_file, &t.ca_pem, err)) < 0))
		goto fail;
	if (!(ncerts = count_certs("cert_file", cert_file, t.cert_pem, err)) ||
	    (t.ca_pem && !count_certs("ca_file", ca_file, t.ca_pem, err))) {
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = check_key(cert_file, key_file, t.cert_pem, t.key_pem, err)) < 0 ||
	    (rc = keys_parse(t.cert_pem, t.key_pem, verify_client ? t.ca_pem : NULL, ncerts,
			     &keys, err)) < 0)
		goto fail;
	t.creds = creds_new(keys);
	*s = t;
	return 0;
fail:
	tls_server_release(&t);
	return rc;
}

void tls_server_release(struct tls_server *s)
{
	if (!s)
		return;
	free(s->cert_pem);
	if (s->key_pem)
		explicit_bzero(s->key_pem, strlen(s->key_pem));
	free(s->key_pem);
	free(s->ca_pem);
	creds_unref(s->creds);
	memset(s, 0, sizeof(*s));
}

void tls_server_copy(struct tls_server *dst, const struct tls_server *src)
{
	*dst = *src;
	dst->cert_pem = dup_or_null(src->cert_pem);
	dst->key_pem = dup_or_null(src->key_pem);
	dst->ca_pem = dup_or_null(src->ca_pem);
	dst->creds = creds_ref(src->creds);
}

/* The peer's chain (n certificates as the handshake got them, the peer's
 * first) checked against trust, as gnutls_certificate_verify_peers2 checks
 * it against a session's credentials (signatures, validity dates). */
static int verify_chain(gnutls_x509_trust_list_t trust, const gnutls_datum_t *raw,
			unsigned n, unsigned *status)
{
	gnutls_x509_crt_t crts[16];
	unsigned got = 0;
	int r = 0;

	if (n > 16)
		n = 16;   /* longer chains than any herd cluster's */
	for (; got < n; got++) {
		gnutls_x509_crt_init(&crts[got]);
		r = gnutls_x509_crt_import(crts[got], &raw[got], GNUTLS_X509_FMT_DER);
		if (r < 0) {
			gnutls_x509_crt_deinit(crts[got]);
			break;
		}
	}
	if (r >= 0)
		r = gnutls_x509_trust_list_verify_crt2(trust, crts, got, NULL, 0, 0, status, NULL);
	for (unsigned i = 0; i < got; i++)
		gnutls_x509_crt_deinit(crts[i]);
	return r;
}

int tls_verify_peer(void *session, const struct tls_keys *keys, struct herd_err *err)
{
	gnutls_session_t ss = session;
	const gnutls_datum_t *raw;
	unsigned status = 0, n = 0;
	int r;

	if (!ss)
		return herd_errf(err, -EACCES, "not a TLS connection");
	raw = gnutls_certificate_get_peers(ss, &n);
	if (!raw || n == 0)
		return herd_errf(err, -EACCES, "no client certificate was presented: this agent "
				 "requires one signed by its CA (tls { verify_https_client })");
	if (keys && keys->trust)
		r = verify_chain(keys->trust, raw, n, &status);
	else
		r = gnutls_certificate_verify_peers2(ss, &status);
	if (r < 0)
		return herd_errf(err, -EACCES, "the client certificate cannot be verified: %s",
				 gnutls_strerror(r));
	if (status == 0)
		return 0;
	if (status & GNUTLS_CERT_SIGNER_NOT_FOUND)
		return herd_errf(err, -EACCES, "the client certificate is not signed by a CA "
				 "this agent trusts (tls { ca_file })");
	if (status & GNUTLS_CERT_EXPIRED)
		return herd_errf(err, -EACCES, "the client certificate has expired");
	if (status & GNUTLS_CERT_NOT_ACTIVATED)
		return herd_errf(err, -EACCES, "the client certificate is not valid yet");
	return herd_errf(err, -EACCES, "the client certificate is not valid (status 0x%x)",
			 status);
}

int tls_peer_check(struct tls_peer *p, void *session, const struct tls_keys *keys,
		   struct herd_err *err)
{
	if (!p->checked) {
		p->err.code = 0;
		p->err.msg[0] = '\0';
		p->rc = tls_verify_peer(session, keys, &p->err);
		p->checked = true;
	}
	if (p->rc < 0)
		return herd_errf(err, p->rc, "%s", p->err.msg);
	return 0;
}

/* --- a client's session on its own socket ------------------------------ */

struct tls_conn {
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	bool send_again;     /* the last send would have blocked (tls_conn_send) */
};

/* Credentials as t says; -errno with err. */
static int client_credentials(const struct tls_client *t, gnutls_certificate_credentials_t *out,
			      struct herd_err *err)
{
	gnutls_certificate_credentials_t cred;
	int r;

	gnutls_certificate_allocate_credentials(&cred);
	if (t->ca_file)
		r = gnutls_certificate_set_x509_trust_file(cred, t->ca_file, GNUTLS_X509_FMT_PEM);
	else
		r = gnutls_certificate_set_x509_system_trust(cred);
	if (r <= 0 && !t->skip_verify) {
		gnutls_certificate_free_credentials(cred);
		if (t->ca_file)
			return herd_errf(err, -EINVAL, "CA file %s: no PEM certificate read (%s)",
					 t->ca_file, r < 0 ? gnutls_strerror(r) : "none");
		return herd_errf(err, -EINVAL, "no CA certificates in the system's store: set "
				 "HERD_CACERT");
	}
	if (t->cert_file && t->key_file &&
	    (r = gnutls_certificate_set_x509_key_file(cred, t->cert_file, t->key_file,
						      GNUTLS_X509_FMT_PEM)) < 0) {
		gnutls_certificate_free_credentials(cred);
		return herd_errf(err, -EINVAL, "client certificate %s with key %s: %s",
				 t->cert_file, t->key_file, gnutls_strerror(r));
	}
	*out = cred;
	return 0;
}

/* Why the handshake failed, for a person. */
static int handshake_error(gnutls_session_t s, int r, struct herd_err *err)
{
	if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t out = { NULL, 0 };
		unsigned status = gnutls_session_get_verify_cert_status(s);
		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0);
		herd_errf(err, -EKEYREJECTED, "the node's certificate is not trusted: %s",
			  out.data ? (const char *)out.data : gnutls_strerror(r));
		gnutls_free(out.data);
		return err ? err->code : -EKEYREJECTED;
	}
	return herd_errf(err, -EPROTO, "TLS handshake: %s", gnutls_strerror(r));
}

static bool is_ip_literal(const char *host)
{
	return strspn(host, "0123456789.") == strlen(host) || strchr(host, ':');
}

int tls_conn_start(const struct tls_client *t, int fd, const char *host, struct tls_conn **out,
		   struct herd_err *err)
{
	struct tls_conn *c = xcalloc(1, sizeof(*c));
	int r;

	if ((r = client_credentials(t, &c->cred, err)) < 0) {
		free(c);
		return r;
	}
	/* GNUTLS_NO_SIGNAL: a peer that hangs up must not kill us with SIGPIPE */
	gnutls_init(&c->s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL);
	gnutls_set_default_priority(c->s);
	gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, c->cred);
	if (!is_ip_literal(host))
		gnutls_server_name_set(c->s, GNUTLS_NAME_DNS, host, strlen(host));
	if (!t->skip_verify)
		gnutls_session_set_verify_cert(c->s, t->skip_hostname ? NULL : host, 0);
	gnutls_transport_set_int(c->s, fd);
	gnutls_handshake_set_timeout(c->s, GNUTLS_DEFAULT_HANDSHAKE_TIMEOUT);
	do
		r = gnutls_handshake(c->s);
	while (r < 0 && !gnutls_error_is_fatal(r));
	if (r < 0) {
		r = handshake_error(c->s, r, err);
		gnutls_deinit(c->s);
		gnutls_certificate_free_credentials(c->cred);
		free(c);
		return r;
	}
	*out = c;
	return 0;
}

ssize_t tls_conn_recv(struct tls_conn *c, void *buf, size_t len)
{
	ssize_t n = gnutls_record_recv(c->s, buf, len);

	if (n >= 0)
		return n;
	if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
		errno = EAGAIN;
		return -1;
	}
	if (n == GNUTLS_E_PREMATURE_TERMINATION)
		return 0;   /* hung up without close_notify: the end all the same */
	errno = EIO;
	return -1;
}

ssize_t tls_conn_send(struct tls_conn *c, const void *buf, size_t len)
{
	/* GnuTLS wants a send that would have blocked repeated as it was;
	 * NULL, 0 does that with the data it kept */
	ssize_t n = c->send_again ? gnutls_record_send(c->s, NULL, 0)
				  : gnutls_record_send(c->s, buf, len);

	c->send_again = n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED;
	if (n >= 0)
		return n;
	errno = c->send_again ? EAGAIN : EIO;
	return -1;
}

size_t tls_conn_pending(struct tls_conn *c)
{
	return gnutls_record_check_pending(c->s);
}

void tls_conn_free(struct tls_conn *c)
{
	if (!c)
		return;
	gnutls_bye(c->s, GNUTLS_SHUT_WR);
	gnutls_deinit(c->s);
	gnutls_certificate_free_credentials(c->cred);
	free(c);
}
