/* tls: herd's TLS settings, in one place for every connection it makes or
 * serves (docs/operations.md, "TLS").
 *
 * Two halves, both on GnuTLS (libcurl's GnuTLS flavour and libmicrohttpd's
 * TLS use the same library):
 *
 *   struct tls_client   how a connection to a herd API is made: which CA
 *                       vouches for servers, which certificate the caller
 *                       presents, whether the server's certificate is
 *                       checked.  Filled from the agent's tls block or from
 *                       the environment (tls_client_from_env), applied to a
 *                       libcurl handle by tls_client_apply.
 *   struct tls_server   what a listener serves: its certificate, key and
 *                       the CA of its clients as PEM text, read and checked
 *                       once at start (tls_server_load), and the check of a
 *                       caller's certificate on a GnuTLS session
 *                       (tls_verify_peer).
 *
 * Library code: nothing here prints. */
#ifndef HERD_COMMON_TLS_H
#define HERD_COMMON_TLS_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"

/* The largest PEM file read (a CA bundle of a few hundred certificates). */
#define TLS_MAX_PEM (1 << 20)

struct tls_client {
	bool https;          /* an address without a scheme is https:// */
	char *ca_file;       /* PEM CAs that vouch for servers; NULL: the system's store */
	char *cert_file;     /* PEM certificate presented to servers, with key_file; NULL: none */
	char *key_file;
	bool skip_verify;    /* the server's certificate is not checked at all */
	bool skip_hostname;  /* checked, but it need not name the host dialed */
};

/* Frees what t owns and zeroes it; accepts NULL. */
void tls_client_release(struct tls_client *t);

/* A deep copy of src into dst (dst's old contents are not freed). */
void tls_client_copy(struct tls_client *dst, const struct tls_client *src);

/* Fills t (zeroed first) from the environment, as the CLI uses it:
 *   HERD_ADDR          https://... turns https on (also for the nodes'
 *                      client APIs, whose advertised address has no scheme)
 *   HERD_CACERT        ca_file
 *   HERD_CLIENT_CERT   cert_file, needs HERD_CLIENT_KEY (and the other way)
 *   HERD_CLIENT_KEY    key_file
 *   HERD_SKIP_VERIFY   1/true/0/false (any case): skip_verify
 * Empty variables count as unset.  Returns 0, or -EINVAL with err naming
 * the variable (then t is zeroed). */
int tls_client_from_env(struct tls_client *t, struct herd_err *err);

/* Sets curl's TLS options (CURLOPT_CAINFO, SSLCERT, SSLKEY, SSL_VERIFYPEER,
 * SSL_VERIFYHOST) from t on curl (a CURL *).  Options t does not set keep
 * libcurl's defaults (verify everything against the system's store).
 * Apply after every curl_easy_reset. */
void tls_client_apply(const struct tls_client *t, void *curl);

/* A client's TLS session on a socket it connected itself, for what
 * libcurl cannot carry: `herd alloc exec`'s stream after its HTTP
 * Upgrade. */
struct tls_conn;

/* Handshakes on fd (connected, blocking; stays the caller's) as t says:
 * trusts t->ca_file (else the system's CAs), presents t's certificate,
 * and unless skip_verify checks the peer's certificate, and unless
 * skip_hostname that it names host (a DNS name or an IP address).
 * Returns 0 with *out, or -errno with err ("the node's certificate is not
 * trusted: ...", -EKEYREJECTED; a file that cannot be read, -EINVAL; any
 * other failure of the handshake, -EPROTO). */
int tls_conn_start(const struct tls_client *t, int fd, const char *host, struct tls_conn **out,
		   struct herd_err *err);

/* As recv(2) and send(2) on the session's socket, blocking or not: the
 * bytes moved, 0 from recv at the peer's end, or -1 with errno (EAGAIN:
 * it would block; EIO: the session broke).  A send that failed with
 * EAGAIN must next be called again with a buffer that starts with the
 * same bytes (what it takes is a prefix of them). */
ssize_t tls_conn_recv(struct tls_conn *c, void *buf, size_t len);
ssize_t tls_conn_send(struct tls_conn *c, const void *buf, size_t len);

/* Bytes already received and decrypted, which a poll of the socket does
 * not announce: read them first. */
size_t tls_conn_pending(struct tls_conn *c);

/* Ends the session (a close_notify, without waiting) and frees it; not
 * the socket.  Accepts NULL. */
void tls_conn_free(struct tls_conn *c);

/* A listener's certificate chain and key, parsed for GnuTLS: immutable,
 * reference-counted, so that a handshake that picked one keeps it valid
 * while a reload installs another (struct tls_creds). */
struct tls_keys;

/* The certificate a listener serves, replaceable while it serves: each new
 * TLS connection takes the keys current when it is accepted
 * (tls_creds_get), connections already open keep theirs.  Shared,
 * reference-counted; thread-safe. */
struct tls_creds;

/* A listener's material, read at start (and again by a reload). */
struct tls_server {
	char *cert_pem;      /* NUL-terminated PEM text; NULL: not loaded */
	char *key_pem;
	char *ca_pem;        /* the CA that signs client certificates; NULL: none */
	bool verify_client;  /* callers must present a certificate signed by ca_pem */
	/* cert_pem and key_pem parsed, what listeners serve from
	 * (tls_mhd.h); a copy of s shares it (a reference), so
	 * tls_creds_swap on any copy changes what every listener started
	 * from s serves.  NULL: not loaded. */
	struct tls_creds *creds;
};

/* Reads cert_file, key_file and ca_file (NULL: none; required with
 * verify_client) into s (zeroed first), checking that each is PEM of what
 * it should be (certificates, a private key that matches the first
 * certificate, at least one CA certificate), and parses the certificate
 * and key (with verify_client, the CA too) into a new s->creds.  Returns 0, or -errno with err
 * naming the file and what is wrong ("tls: cert_file /etc/herd/a.pem: ...");
 * then s is zeroed. */
int tls_server_load(struct tls_server *s, const char *cert_file, const char *key_file,
		    const char *ca_file, bool verify_client, struct herd_err *err);

/* Frees what s owns (drops its reference of creds) and zeroes it;
 * accepts NULL. */
void tls_server_release(struct tls_server *s);

/* A deep copy of src into dst (dst's old contents are not freed); creds
 * is shared (a new reference). */
void tls_server_copy(struct tls_server *dst, const struct tls_server *src);

/* The keys c serves now, with a reference for the caller (who drops it
 * with tls_keys_unref); NULL when c is NULL. */
struct tls_keys *tls_creds_get(struct tls_creds *c);

/* Makes dst serve what src serves now (new connections only); neither
 * reference changes hands.  A reload loads the new files into a fresh
 * tls_server first (tls_server_load: every check done), so a file that
 * fails leaves dst as it was. */
void tls_creds_swap(struct tls_creds *dst, struct tls_creds *src);

/* Drops a reference of k (from tls_creds_get); accepts NULL. */
void tls_keys_unref(struct tls_keys *k);

/* k's certificate chain and key for GnuTLS's certificate callback:
 * *pcert (gnutls_pcert_st *, n entries) and *key (gnutls_privkey_t), owned
 * by k and valid while a reference to k is held. */
void tls_keys_get(const struct tls_keys *k, void *pcert, unsigned *n, void *key);

/* Whether k checks callers' certificates (it was loaded with
 * verify_client: it holds the CA read with them). */
bool tls_keys_verify_client(const struct tls_keys *k);

/* Whether the peer of session (a gnutls_session_t) presented a
 * certificate that verifies against keys' CA (tls_keys_verify_client), or
 * with keys NULL against the CAs of the session's credentials.  Returns 0,
 * or -EACCES with err saying why ("no client certificate was presented",
 * "the client certificate is not signed by a trusted CA", ...). */
int tls_verify_peer(void *session, const struct tls_keys *keys, struct herd_err *err);

/* A connection's verdict on its peer: a TLS session keeps the certificate
 * its handshake got, so a listener checks it once per connection, not per
 * request.  Zero-initialised: not checked yet. */
struct tls_peer {
	bool checked;
	int rc;
	struct herd_err err;
};

/* tls_verify_peer(session, keys) the first time, its result after that. */
int tls_peer_check(struct tls_peer *p, void *session, const struct tls_keys *keys,
		   struct herd_err *err);

#endif
