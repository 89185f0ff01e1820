/* standby.h: what a server of a shared PostgreSQL store answers while
 * another server leads it, and the leader's address both name; private to
 * src/server (docs/operations.md, "High availability"; docs/api.md).
 *
 * A server of a shared store binds its API's port before it asks for the
 * leadership lock and, while it waits, serves that port with a small
 * libmicrohttpd daemon of its own (struct standby):
 *
 *   GET /v1/agent/health    503 {"ok": false, "standby": true, "leader": "10.0.0.1:4646"}
 *   GET /v1/status/leader   200 {"leader": "10.0.0.1:4646"}
 *   any other /v1 path, /ui 307 Temporary Redirect, Location: the same path
 *                           and query on the leader, same scheme
 *   while no leader is known: 503 no_leader (health: "leader": "")
 *
 * with the TLS settings it will lead with (a caller without the
 * certificate verify_https_client asks for is refused 403, as the leader
 * would).  It checks no token: it acts on nothing and tells nothing but
 * who leads, which health tells anyone too.  Who leads is what the
 * store's leader row says (store.h, store_pg_options.leader): the
 * leader's advertised address, recorded with the lock; a row left by a
 * session that no longer holds the lock reads as no leader.
 *
 * When the server takes the lock, standby_handoff stops the daemon
 * accepting and hands its listening socket to the API's server
 * (http_server_config.listen_fd): connections made during the takeover
 * wait in the socket's backlog, and the port is never closed. */
#ifndef HERD_SERVER_STANDBY_H
#define HERD_SERVER_STANDBY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/tls.h"

struct standby_config {
	const char *bind_addr;        /* numeric IPv4 or IPv6; NULL: 127.0.0.1 */
	uint16_t port;                /* 0: an ephemeral port (standby_port) */
	const struct tls_server *tls; /* as http_server_config.tls; borrowed */
	/* Request bodies past this many bytes are refused, so that a
	 * standby, which drops bodies, cannot be made to read without end: a
	 * Content-Length above it is answered 413 body_too_large at once, as
	 * the API's server answers it; a body without one (chunked) is cut
	 * off, the connection closed, once more came.  0: HTTP_DEFAULT_MAX_BODY. */
	size_t max_body;
};

struct standby;

/* Binds and serves.  -EADDRINUSE, -EINVAL (bad address) or -EIO with a
 * message; on success *out owns the daemon and its socket. */
int standby_start(const struct standby_config *cfg, struct standby **out,
		  struct herd_err *err);
uint16_t standby_port(const struct standby *sb);

/* Who leads now: a holder string from the store's leader row (copied);
 * one that is not a usable address (leader_addr_usable), "" among them,
 * is no leader known.  Returns whether this changes who leads after the
 * first call (that one the caller says itself), with the leader before
 * into was (was_len bytes; "" none), for the caller's log.  Thread-safe. */
bool standby_set_leader(struct standby *sb, const char *holder, char *was, size_t was_len);

/* Stops answering (requests in progress are answered first) and hands
 * the listening socket over: returns it (the caller owns it) or -errno.
 * Frees sb either way. */
int standby_handoff(struct standby *sb);

/* Stops, closes the socket, frees.  Accepts NULL. */
void standby_stop(struct standby *sb);

/* --- pure parts, shared with the leader and the unit tests ------------- */

/* Whether addr is an address to send clients to: "host:port" or
 * "[v6]:port", port 1-65535, a host of letters, digits, '.', '-', '_'
 * (or hex digits, ':' and '.' inside brackets).  A row written by a
 * server that advertised port 0, or anything a URL could not carry, is
 * not. */
bool leader_addr_usable(const char *addr);

/* The Location of a redirect of target (the request's path and query as
 * received: "/v1/jobs?prefix=a") to leader over scheme ("http" or
 * "https"): "https://10.0.0.1:4646/v1/jobs?prefix=a".  NULL when target
 * does not start with '/' or holds a byte a header cannot carry (controls,
 * space, DEL).  The caller frees it. */
char *leader_location(const char *scheme, const char *leader, const char *target);

/* adv ("host:port", "[v6]:port"; NULL: bind_addr's host, as the agent's
 * configuration derives it) with a port of 0, or none, made port: what a
 * server that asked for any port advertises once it is bound.  The
 * caller frees it. */
char *advertise_with_port(const char *adv, const char *bind_addr, uint16_t port);

/* What a standby answers (the table above): status, body (a new
 * reference) and, for a 307, location (free it; else NULL).  method and
 * path as received (path without the query), target the path with its
 * query, leader "" when none is known. */
struct standby_answer {
	int status;
	json_t *body;
	char *location;
};
void standby_answer(const char *method, const char *path, const char *target,
		    const char *scheme, const char *leader, struct standby_answer *a);

/* GET /v1/status/leader on a server that leads (or has the store to
 * itself): {"leader": its advertised address}.  No token needed, like
 * GET /v1/status/index. */
struct server;
int routes_status_leader(struct server *srv, struct herd_err *err);

#endif
