/* server: herd's control plane in one object (docs/api.md is its wire
 * contract).
 *
 * server_start opens the state store in cfg->data_dir (SQLite, WAL), starts
 * the HTTP API on cfg->bind_addr:cfg->http_port, the scheduler workers that
 * turn evaluations into allocations, and the heartbeat timer that marks
 * silent nodes down.  Pending and blocked evaluations found in the store are
 * queued again, so a restart loses no work.  server_stop ends all of it and
 * frees the server.
 *
 * The server never prints: it reports failures of start through err, and
 * failures while running (a handler's 500, a worker's store error) through
 * cfg->log when given. */
#ifndef HERD_SERVER_SERVER_H
#define HERD_SERVER_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define SERVER_DEFAULT_HEARTBEAT_TTL_NS (10LL * 1000000000LL)
#define SERVER_DEFAULT_WORKERS 2
#define SERVER_DEFAULT_JOB_GC_THRESHOLD_NS (4LL * 3600 * 1000000000LL)
#define SERVER_DEFAULT_EVAL_GC_THRESHOLD_NS (3600LL * 1000000000LL)
#define SERVER_DEFAULT_GC_INTERVAL_NS (5LL * 60 * 1000000000LL)
#define SERVER_DEFAULT_RESERVE_AFTER_NS (5LL * 60 * 1000000000LL)
#define SERVER_RESERVE_NOW (-1) /* reserve_after_ns: reserve at once */
#define SERVER_RESERVE_OFF (-2) /* reserve_after_ns: no reservations */
#define SERVER_PORT_MIN 20000   /* dynamic ports are taken from this range */
#define SERVER_PORT_MAX 32000

/* Where the server reports what went wrong while it runs (never on the
 * request path for client errors).  level: "error" or "warn". */
typedef void server_log_fn(const char *level, const char *msg, void *arg);

struct tls_server;

struct store_pg_options;

struct server_config {
	const char *data_dir;      /* required; created when absent; holds state.db
				    * (SQLite), server.lock and snapshot temp files */
	/* The PostgreSQL store several servers share (store_open_postgres:
	 * a libpq URI or conninfo) instead of SQLite in data_dir; NULL:
	 * SQLite.  server_start then waits, as a standby, for as long as
	 * another server holds the store (docs/operations.md, "High
	 * availability"), as postgres_options says (borrowed, used during
	 * server_start and, for its lost callback, until server_stop; NULL:
	 * wait forever, no callbacks). */
	const char *postgres_url;
	const struct store_pg_options *postgres_options;
	const char *bind_addr;     /* numeric address; NULL: 127.0.0.1 */
	uint16_t http_port;        /* 0: an ephemeral port (see server_port) */
	/* The address others reach the API at ("10.0.0.1:4646"; a port of
	 * 0 becomes the bound one; NULL: bind_addr's): what
	 * GET /v1/status/leader names and, with postgres_url, what the
	 * leader records for standbys to redirect to (postgres_options'
	 * holder is replaced by it).  Copied. */
	const char *advertise_http;
	/* The iss of workload identities' tokens and the issuer of
	 * GET /.well-known/openid-configuration ("https://herd.example");
	 * NULL: http(s)://<advertise_http>.  Copied. */
	const char *oidc_issuer;
	/* The region, the first part of the tokens' sub; NULL: "global". */
	const char *region;
	/* Called once the API's port is bound, with it and log_arg: with
	 * postgres_url before the wait for the lock (a standby serves it,
	 * standby.h), else at the end of server_start.  May be NULL. */
	void (*listening)(uint16_t port, void *arg);
	int64_t heartbeat_ttl_ns;  /* 0: SERVER_DEFAULT_HEARTBEAT_TTL_NS */
	const char *policy;        /* scheduling policy name (sched_policy_parse); NULL: "herd" */
	size_t max_body;           /* request body limit in bytes; 0: HTTP_DEFAULT_MAX_BODY */
	unsigned workers;          /* scheduler workers; 0: SERVER_DEFAULT_WORKERS */
	unsigned http_threads;     /* 0: the HTTP layer's default */
	/* What GET /v1/agent/self shows: the agent's configuration (borrowed,
	 * copied at start; NULL: {}), the local client's node id (NULL: ""),
	 * and whether this process also runs a client. */
	const json_t *self_config;
	const char *self_node_id;
	int client_enabled;
	/* Which job types may preempt lower-priority allocations
	 * (SERVER_PREEMPT_*; 0: batch and system).  Reclaiming borrowed GPUs does
	 * not depend on it. */
	unsigned preempt_types;
	/* How long the job whose turn it is in the fair queue waits for GPUs
	 * before GPUs are reserved for it (docs/teams.md, "Reservations"):
	 * 0: SERVER_DEFAULT_RESERVE_AFTER_NS; SERVER_RESERVE_NOW: at once;
	 * SERVER_RESERVE_OFF: never. */
	int64_t reserve_after_ns;
	/* ACL: when set, every API call but health, status and the workload
	 * identity keys (routes_oidc.c) needs a token
	 * (docs/teams.md); -dev leaves it off. */
	int acl_enabled;
	/* https on the API (http.h, http_server_config.tls); NULL: plain
	 * HTTP.  Borrowed; must outlive the server. */
	const struct tls_server *tls;
	/* Garbage collection (gc.c, docs/operations.md): stopped and dead jobs
	 * older than job_gc_threshold go with all their records; ended
	 * evaluations and allocations older than eval_gc_threshold go; the
	 * collector runs every gc_interval.  0: the SERVER_DEFAULT_* values. */
	int64_t job_gc_threshold_ns;
	int64_t eval_gc_threshold_ns;
	int64_t gc_interval_ns;
	/* Tests: launch periodic jobs only when the test calls periodic_tick
	 * (server-int.h) with a clock of its own, never on the real clock. */
	int periodic_manual;
	server_log_fn *log;        /* may be NULL */
	void *log_arg;
};

enum {
	SERVER_PREEMPT_BATCH = 1,
	SERVER_PREEMPT_SERVICE = 2,
	SERVER_PREEMPT_SYSTEM = 4,
	SERVER_PREEMPT_NONE = 8,   /* no job type preempts */
};

struct server;

/* Starts a server.  On failure returns -errno with a message in err
 * (-EINVAL: bad configuration such as an unknown policy; -EADDRINUSE: the
 * port is taken; store errors as store_open_sqlite / store_open_postgres
 * report them, -ECANCELED among them when postgres_options' cancelled
 * ended a standby's wait) and leaves nothing running.  With postgres_url
 * a standby waits here, serving its port as a standby (standby.h: health
 * 503 naming the leader, every other request redirected to it), and keeps
 * that very socket when it leads.  On success *out owns the server. */
int server_start(const struct server_config *cfg, struct server **out, struct herd_err *err);

/* The HTTP port the server listens on (the chosen one when asked for 0). */
uint16_t server_port(const struct server *srv);

/* The transport through which a client in this process reaches the server
 * without a socket (httpc.h, struct httpc_local); valid until server_stop. */
struct httpc_local;
const struct httpc_local *server_local_transport(struct server *srv);

/* Sets the node id shown by GET /v1/agent/self (a dev agent learns it once
 * its client has registered).  Thread-safe; copies id. */
void server_set_self_node_id(struct server *srv, const char *id);

/* Waits until no evaluation is queued or being processed (delayed and
 * blocked ones do not count), at most timeout_ns.  Returns 0 when idle,
 * -ETIMEDOUT otherwise.  For tests and benchmarks. */
int server_wait_idle(struct server *srv, int64_t timeout_ns);

/* Stops the HTTP server (held blocking queries answer at once), the
 * workers (an evaluation in progress finishes first), the heartbeat timer,
 * and closes the store.  Accepts NULL. */
void server_stop(struct server *srv);

#endif
