/* client_http: the client's own small HTTP API (docs/api.md, "Client"),
 * served on the node's http_addr, which the CLI finds through the server
 * (allocation -> node -> http_addr) to read what only the node has:
 *
 *   GET /v1/client/fs/logs/:alloc?task=T&type=stdout|stderr
 *       &follow=true|false&origin=start|end&offset=N
 *
 * answers the task's log (logs.h) as a chunked text/plain stream; with
 * follow=true it stays open, continuing across rotations, until the task
 * is dead (per the client's persisted state) and everything is sent, or
 * the caller hangs up.  Allocation and task names are checked
 * (logs_valid_name): '/', ".." and anything outside [A-Za-z0-9_.-] are
 * 400, unknown ones 404, so no request reaches outside the allocation's
 * log directory.
 *
 *   GET /v1/client/fs/{ls,stat,cat,readat}/:alloc?path=P
 *
 * lists, describes or reads the allocation's files (client_fs.h; every
 * read beneath its directory, alloc_fs.h), authorized as a log read.
 *
 *   GET /v1/client/allocation/:id/stats
 *
 * answers {"tasks": {"<task>": {"memory_bytes", "memory_peak_bytes",
 * "memory_limit_bytes", "cpu_total_ns", "cpu_percent", "sampled_at"}}}
 * for the allocation's running tasks (driver.h, driver_ops.stats; null
 * where the driver cannot say; {"error": "..."} for a task whose sample
 * failed), 400 for a bad id, 404 for an allocation this node does not
 * have.  Both paths are authorized the same way (set_auth_server).
 *
 *   POST /v1/client/allocation/:id/restart   {"task": "T"} (optional)
 *   POST /v1/client/allocation/:id/signal    {"signal": "SIGUSR1", "task": "T"}
 *
 * restart the allocation's running task T (all of them without task) in
 * place, or send them a signal (a name or a number; unknown: 400), through
 * the client (client_http_set_client, client_alloc_task_op): {"tasks":
 * [...]} (and "signal") once the tasks' runners took it.  These change
 * things, so they ask the server for more than a read: the submit right
 * on the allocation's namespace.  A body is JSON, an object of those
 * fields only, at most 16 KiB (413); anything else is 400, and nothing is
 * done before the body and the caller are checked.
 *
 *   GET /v1/client/allocation/:id/exec?task=T&command=["sh","-c","..."]
 *       &tty=true|false&rows=R&cols=C
 *   (Connection: Upgrade, Upgrade: herd-exec)
 *
 * runs a command in the running task T (the only running one without
 * task) and, after "101 Switching Protocols", carries its stdin, stdout,
 * stderr, window size and exit as frames (common/exec_frame.h) on the
 * same connection, on the connection's own thread (exec_session.h).
 * With action=NAME instead of command it runs the task's action NAME
 * (`herd job action`): its command and args as the job version the
 * allocation runs defines them (this node's stored copy), never anything
 * the request says; an unknown name is 404 no_such_action.
 * Authorized as a restart (submit); at most 16 sessions at once (429).
 * Errors before the upgrade are JSON answers like the others.
 *
 * The reads read only files (alloc_dir, state_dir; the stats of the task
 * handles persisted there), never the runners' memory, so they need no
 * lock of the client and work while the client recovers.
 * One thread per connection (a log stream sleeps between reads). */
#ifndef HERD_AGENT_CLIENT_HTTP_H
#define HERD_AGENT_CLIENT_HTTP_H

#include <stdint.h>

#include "common/err.h"

struct client_http;

/* Starts listening on bind_addr (numeric IPv4/IPv6; NULL: 127.0.0.1):port
 * (0: any free port).  alloc_dir and state_dir are copied.  tls (the
 * agent's tls block, common/tls.h; borrowed, must outlive the API; NULL or
 * without cert_pem: plain HTTP) makes it https, and with verify_client a
 * caller without a certificate signed by its CA gets 403
 * (tls_client_certificate) whatever it asks.  Returns 0 with *out, or
 * -errno with err (-EADDRINUSE, -EINVAL for a bad address). */
struct tls_server;
struct tls_client;
int client_http_start(const char *bind_addr, uint16_t port, const char *alloc_dir,
		      const char *state_dir, const struct tls_server *tls,
		      struct client_http **out, struct herd_err *err);

/* Makes every request ask a server (one of servers[0..n), "host:port",
 * copied; n = 0: none; the one that answered last, else the next in turn:
 * server_list.h) whether the caller may read the allocation: GET
 * /v1/allocation/:id with
 * the caller's X-Herd-Token / Authorization: Bearer, which the server
 * answers only when the token may read the allocation's namespace (to
 * anyone with ACL off); a restart or signal asks ?acl=submit, answered
 * only when the token may also submit there.  Refusals: 404 (no such
 * allocation, or not readable: the server does not tell them apart), 403,
 * 503 when no server answers.  tls (copied; NULL: plain HTTP) is how the
 * server is reached: the agent's tls block, never the environment.  local
 * (NULL: none) is the server of this process when server is it: asked
 * without a socket (httpc.h, struct httpc_local), so that neither TLS nor
 * the name in the agent's certificate matter there.  Call before the
 * address is published (not thread-safe with requests in flight). */
struct httpc_local;
void client_http_set_auth_servers(struct client_http *h, const char *const *servers, size_t n,
				  const struct tls_client *tls, const struct httpc_local *local);

/* The driver settings a stats sample needs: the exec driver's cgroup
 * parent and the docker engine socket (copied; NULL: the drivers'
 * defaults).  Call before the address is published. */
void client_http_set_drivers(struct client_http *h, const char *cgroup_parent,
			     const char *docker_socket);

/* The task shim's command (driver_env.shim_argv; copied, NULL-terminated),
 * which an exec into an exec-driver task runs in its enter mode.  Call
 * before the address is published. */
void client_http_set_shim(struct client_http *h, const char *const *shim_argv);

/* Where restarts and signals go: the client of this agent (NULL: none;
 * they answer 404 then).  Stop the API (client_http_stop) before the
 * client: a request in progress holds one of its runners. */
struct client;
void client_http_set_client(struct client_http *h, struct client *c);

/* The port it listens on. */
uint16_t client_http_port(const struct client_http *h);

/* Ends open streams, stops, frees.  Accepts NULL. */
void client_http_stop(struct client_http *h);

#endif
