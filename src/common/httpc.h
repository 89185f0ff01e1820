/* httpc: a small JSON-over-HTTP client for herd's API (libcurl).
 *
 * One struct httpc is one connection to one base address (kept alive
 * between requests).  It is not thread-safe: give each thread its own.
 *
 *     struct httpc c;
 *     httpc_init(&c, NULL);                       HERD_ADDR, HERD_TOKEN
 *     struct httpc_response r;
 *     if (httpc_request(&c, "GET", "/v1/jobs", NULL, &r, &err) < 0) ...
 *     ... r.status, r.body, r.index ...
 *     httpc_response_release(&r);
 *     httpc_release(&c);
 *
 * Library code: nothing here prints. */
#ifndef HERD_COMMON_HTTPC_H
#define HERD_COMMON_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/err.h"
#include "common/tls.h"

#define HTTPC_DEFAULT_ADDR "http://127.0.0.1:4646"
#define HTTPC_DEFAULT_TIMEOUT_MS 30000
#define HTTPC_MAX_BODY (64 * 1024 * 1024)
/* Redirects (307, 308) followed per request: a standby sends a request
 * to the leader in one. */
#define HTTPC_MAX_REDIRECTS 3

struct httpc_response;

/* A server in this process (server_local_transport): requests go to its
 * handlers on the calling thread, with no socket, no HTTP encoding and no
 * hand-off to the server's threads.  call serves method + path (with its
 * query, percent-encoded as on the wire) and body (only read; NULL: none)
 * as the server would over HTTP, with token as X-Herd-Token (NULL: none),
 * blocking queries included (abort_cb, when set, is asked about four times
 * a second while one waits).  It fills resp's status, body (a new
 * reference the caller may change) and index, and returns 0; or, without
 * an answer, -ECANCELED (abort_cb said stop) or -ECONNREFUSED (the server
 * is stopping) with err. */
struct httpc_local {
	int (*call)(void *arg, const char *method, const char *path, const json_t *body,
		    const char *token, int (*abort_cb)(void *arg), void *abort_arg,
		    struct httpc_response *resp, struct herd_err *err);
	void *arg;
};

struct httpc {
	char *base;          /* "http://host:port", no trailing slash */
	char *token;         /* X-Herd-Token, or NULL */
	long timeout_ms;     /* whole-request limit of ordinary requests */
	long connect_timeout_ms;
	void *curl;          /* CURL *, made on first use */
	/* When set, called about once a second during a request; a non-zero
	 * answer aborts it (-ECANCELED): how a thread in a long poll notices
	 * that it should stop. */
	int (*abort_cb)(void *arg);
	void *abort_arg;
	/* When set, requests go to this in-process server instead of base
	 * (the timeouts do not apply: nothing can be lost on the way). */
	const struct httpc_local *local;
	/* How https connections are made (common/tls.h): from the environment
	 * (HERD_CACERT, ...) by httpc_init, or the agent's tls block through
	 * httpc_init_tls.  A bad environment is kept in tls_err and every
	 * request fails with it. */
	struct tls_client tls;
	struct herd_err tls_err;
	/* Several servers (HERD_ADDR="a:4646,b:4646"): base is addrs[cur];
	 * a request that cannot connect there (or gets 503) is sent to the
	 * next, each address tried once per request, and the one that
	 * answered stays base.  NULL (nr_addrs 0): one address only. */
	char **addrs;
	size_t nr_addrs, cur;
};

struct httpc_response {
	long status;         /* HTTP status; 0 when no answer came */
	json_t *body;        /* parsed JSON body (a new reference) or NULL */
	uint64_t index;      /* X-Herd-Index, 0 when absent */
	char error_code[64]; /* the "code" of an error body, "" otherwise */
};

/* Sets up c for addr ("http://host:port", "https://host:port",
 * "host:port" or NULL for $HERD_ADDR, else HTTPC_DEFAULT_ADDR; several of
 * them separated by commas: the failover above, in that order), the token
 * from $HERD_TOKEN and TLS from the environment (tls_client_from_env).
 * "host:port" is https:// when $HERD_ADDR is (the nodes' client APIs
 * follow the server's scheme), else http://.  Never fails (the address
 * and the environment are checked by the first request). */
void httpc_init(struct httpc *c, const char *addr);

/* The same with tls (copied; an agent's tls block) instead of the
 * environment: "host:port" is https:// when tls->https. */
void httpc_init_tls(struct httpc *c, const char *addr, const struct tls_client *tls);

/* Frees what c owns; accepts NULL. */
void httpc_release(struct httpc *c);

/* Replaces the base address (for an agent that moves to another server);
 * one address: the list of several, if any, is dropped. */
void httpc_set_addr(struct httpc *c, const char *addr);

/* Sends method (GET, POST, PUT, DELETE) to base + path (path starts with
 * '/' and may carry a query), with body as JSON when not NULL (only read).
 * A 307 or 308 answer (a standby's: docs/operations.md, "High
 * availability") is followed, method and body kept, up to
 * HTTPC_MAX_REDIRECTS times, as httpc_redirect_check allows.
 * On success (a 2xx answer) fills resp and returns 0.  Otherwise:
 *   - the server answered 4xx/5xx: resp is filled (status, body, index,
 *     error_code), err says "server: <code>: <message>" and the return is
 *     -ENOENT (404), -EINVAL (400), -EEXIST (409), -EACCES (401/403) or
 *     -EIO (anything else);
 *   - no answer (connection refused, timeout): resp->status is 0 and the
 *     return is -ECONNREFUSED, -ETIMEDOUT or -EIO with err naming the
 *     address; -EKEYREJECTED when the server's certificate did not verify
 *     (HERD_CACERT / tls { ca_file } names the CA), -EINVAL for a bad TLS
 *     environment;
 *   - abort_cb said stop: -ECANCELED.
 * With several addresses, these are the last one tried's.  A 2xx answer whose body is not JSON is -EPROTO.  The caller releases
 * resp with httpc_response_release in every case. */
int httpc_request(struct httpc *c, const char *method, const char *path, const json_t *body,
		  struct httpc_response *resp, struct herd_err *err);

/* A blocking query: GET path with ?index=index&wait=<wait_ms>ms appended
 * (index 0 answers at once), allowing the request wait_ms plus a margin
 * before giving up.  Same results as httpc_request. */
int httpc_get_blocking(struct httpc *c, const char *path, uint64_t index, long wait_ms,
		       struct httpc_response *resp, struct herd_err *err);

/* Frees the body; accepts NULL. */
void httpc_response_release(struct httpc_response *resp);

/* Whether a request to from (an absolute URL) that was answered with a
 * redirect to location may follow it, and whether c's token goes along.
 * location is absolute with the same scheme (never from https to http),
 * or a path on from's origin; no user part.  The token (X-Herd-Token)
 * goes to the same origin, to an address of c's list (HERD_ADDR) or its
 * base, and over https with the certificate checked (the server it
 * reaches proved itself to the CA that vouches for the cluster); a
 * redirect anywhere else over plain http is not followed while c holds
 * a token (-EPERM, err says to add the address to HERD_ADDR).  On
 * success *url is the URL to request (free it) and *with_token says
 * whether to send the token; else -EPERM or -EINVAL with err. */
int httpc_redirect_check(const struct httpc *c, const char *from, const char *location,
			 char **url, bool *with_token, struct herd_err *err);

/* Makes curl (a CURL *) open its sockets close-on-exec (libcurl does not):
 * for every handle of a process that starts children.  httpc's own
 * handles have it. */
void httpc_curl_cloexec(void *curl);

/* Percent-encodes s for a path segment or query value; caller frees. */
char *httpc_escape(const char *s);

/* Decodes the %XX escapes of s[0..len) into a new string (*out; free it).
 * strict: a '%' without two hex digits after it, or an escape of NUL, is
 * -EINVAL; otherwise such a '%' stays as it is, which is how
 * libmicrohttpd decodes paths and query arguments.  Returns 0 or -EINVAL
 * (then *out is untouched). */
int httpc_unescape(const char *s, size_t len, bool strict, char **out);

#endif
