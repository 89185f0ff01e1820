/* tls_mhd: the glue between herd's TLS settings (tls.h) and a
 * libmicrohttpd daemon, shared by the two listeners that serve https: the
 * server's API (server/http_server.c) and the client's own API
 * (agent/client_http.c).  Header-only, so that common itself does not
 * link libmicrohttpd; both users do.
 *
 * Every TLS connection carries a struct tls_mhd_conn as its socket context
 * (made and freed by tls_mhd_on_connection, whose closure is the
 * listener's tls_creds): the keys current when it was accepted, which
 * GnuTLS's certificate callback (tls_mhd_cert) serves, so a reload that
 * swaps the credentials (tls_creds_swap) reaches new connections while
 * open ones keep theirs.  With verify_client, tls_mhd_check_peer checks the
 * caller's certificate once per connection (tls_peer_check) against the CA
 * of the connection's keys, which a reload replaces with them; the daemon's
 * own trust (MHD_OPTION_HTTPS_MEM_TRUST, the CA read at start) only makes
 * it ask callers for a certificate (its CertificateRequest names that CA;
 * libcurl's GnuTLS and Python's OpenSSL present theirs all the same,
 * tests/e2e/test_reload.py).
 *
 * The callback finds the connection through the session's pointer, which
 * libmicrohttpd sets to the struct MHD_Connection, and
 * the socket context is set (NOTIFY_CONNECTION, STARTED) before the
 * handshake runs. */
#ifndef HERD_COMMON_TLS_MHD_H
#define HERD_COMMON_TLS_MHD_H

#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/tls.h"
#include "common/xalloc.h"

struct tls_mhd_conn {
	struct tls_peer peer;    /* the caller's certificate, checked once */
	struct tls_keys *keys;   /* what this connection's handshake serves */
};

/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the tls_creds). */
static inline void tls_mhd_on_connection(void *cls, struct MHD_Connection *conn,
					 void **socket_context,
					 enum MHD_ConnectionNotificationCode toe)
{
	struct tls_mhd_conn *c;

	(void)conn;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		c = xcalloc(1, sizeof(*c));
		c->keys = tls_creds_get(cls);
		*socket_context = c;
	} else {
		c = *socket_context;
		if (c)
			tls_keys_unref(c->keys);
		free(c);
		*socket_context = NULL;
	}
}

/* MHD_OPTION_HTTPS_CERT_CALLBACK: the connection's keys (gnutls does not
 * free them: the connection's reference keeps them). */
static inline int tls_mhd_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
			       int nreqs, const gnutls_pk_algorithm_t *pk_algos,
			       int pk_algos_length, gnutls_pcert_st **pcert,
			       unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct MHD_Connection *conn = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *sc =
		conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
	struct tls_mhd_conn *c = sc ? sc->socket_context : NULL;

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!c || !c->keys)
		return -1;   /* the handshake fails: nothing to serve */
	tls_keys_get(c->keys, pcert, pcert_length, pkey);
	return 0;
}

/* The MHD options of https (MHD_USE_TLS is the caller's): the certificate
 * callback and the per-connection context, and with verify_client the CA
 * of callers' certificates.  tls (its creds) must outlive the daemon.  out
 * has room for 5 items, the last END. */
static inline void tls_mhd_options(const struct tls_server *tls, struct MHD_OptionItem *out)
{
	size_t n = 0;

	if (tls->creds) {
		out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
						    (void *)(intptr_t)tls_mhd_cert };
	} else {   /* a tls_server not made by tls_server_load: fixed keys */
		out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, tls->key_pem };
		out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, tls->cert_pem };
	}
	out[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION,
					    (intptr_t)tls_mhd_on_connection, tls->creds };
	if (tls->verify_client)
		out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, tls->ca_pem };
	out[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
}

/* tls { verify_https_client }: the connection's certificate, checked once
 * per connection; 0, or -EACCES with err saying why. */
static inline int tls_mhd_check_peer(struct MHD_Connection *conn, struct herd_err *err)
{
	const union MHD_ConnectionInfo *sc =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const union MHD_ConnectionInfo *ss =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	struct tls_mhd_conn *c;

	if (!sc || !sc->socket_context)
		return herd_errf(err, -EACCES, "the connection's certificate cannot be checked");
	c = sc->socket_context;
	return tls_peer_check(&c->peer, ss ? ss->tls_session : NULL, c->keys, err);
}

#endif
