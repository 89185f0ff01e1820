/* tls_mhd: the glue between herd's TLS settings (tls.h) and a
 * libmicrohttpd daemon, shared by the two listeners that serve https: the
 * server's API (server/http_server.c) and the client's own API
 * (agent/client_http.c).  Header-only, so that common itself does not
 * link libmicrohttpd; both users do.
 *
 * With verify_client, MHD asks every caller for a certificate and each
 * connection carries a struct tls_peer as its socket context (made and
 * freed by tls_mhd_on_connection), on which tls_mhd_check_peer checks the
 * certificate once per connection (tls_peer_check). */
#ifndef HERD_COMMON_TLS_MHD_H
#define HERD_COMMON_TLS_MHD_H

#include <errno.h>
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/tls.h"
#include "common/xalloc.h"

/* MHD_OPTION_NOTIFY_CONNECTION's callback: each connection's tls_peer. */
static inline void tls_mhd_on_connection(void *cls, struct MHD_Connection *conn,
					 void **socket_context,
					 enum MHD_ConnectionNotificationCode toe)
{
	(void)cls;
	(void)conn;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = xcalloc(1, sizeof(struct tls_peer));
	} else {
		free(*socket_context);
		*socket_context = NULL;
	}
}

/* The MHD options of https (MHD_USE_TLS is the caller's): key and
 * certificate, and with verify_client the CA of callers' certificates and
 * the per-connection context.  out has room for 5 items, the last END. */
static inline void tls_mhd_options(const struct tls_server *tls, struct MHD_OptionItem *out)
{
	size_t n = 0;

	out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, tls->key_pem };
	out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, tls->cert_pem };
	if (tls->verify_client) {
		out[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, tls->ca_pem };
		out[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION,
						    (intptr_t)tls_mhd_on_connection, NULL };
	}
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

	if (!sc || !sc->socket_context)
		return herd_errf(err, -EACCES, "the connection's certificate cannot be checked");
	return tls_peer_check(sc->socket_context, ss ? ss->tls_session : NULL, err);
}

#endif
