/* standby.c: a standby's listener and the leader's address (standby.h).
 *
 * The daemon answers at once and never touches the store (a standby has
 * none open), so two threads serve it.  MHD_USE_ITC lets
 * MHD_quiesce_daemon take the listening socket back from them at the
 * handoff.  The raw request target (path and query as the client sent
 * them, MHD_OPTION_URI_LOG_CALLBACK) is what a redirect repeats: MHD
 * decodes the path it hands the access handler.
 *
 * Close-on-exec: MHD opens its sockets, epoll fd and eventfd with
 * SOCK_CLOEXEC / EPOLL_CLOEXEC / EFD_CLOEXEC (as in http_server.c). */
#include "server/standby.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tls_mhd.h"
#include "common/xalloc.h"
#include "server/http.h"
#include "server/http_ui.h"
#include "server/server-int.h"

#define STANDBY_THREADS 2
#define LEADER_ADDR_MAX 256

struct standby {
	struct MHD_Daemon *mhd;
	uint16_t port;
	bool https, verify_client;
	size_t max_body;                /* standby_config.max_body */
	pthread_mutex_t lock;           /* guards leader and told */
	char leader[LEADER_ADDR_MAX];   /* "" none known */
	bool told;                      /* standby_set_leader ran */
};

/* One request: its target as received, whether the access handler saw
 * it already, and how much of its body (read and dropped) came. */
struct standby_req {
	char *target;
	bool seen;
	size_t body_len;
};

/* --- pure parts ------------------------------------------------------- */

static bool parse_port(const char *s)
{
	long v = 0;

	if (!*s || strlen(s) > 5)
		return false;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		v = v * 10 + (*p - '0');
	}
	return v >= 1 && v <= 65535;
}

bool leader_addr_usable(const char *addr)
{
	const char *colon;

	if (!addr || !*addr || strlen(addr) >= LEADER_ADDR_MAX)
		return false;
	if (addr[0] == '[') {
		const char *end = strstr(addr, "]:");
		if (!end || end == addr + 1)
			return false;
		for (const char *p = addr + 1; p < end; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
				return false;
		return parse_port(end + 2);
	}
	colon = strchr(addr, ':');
	if (!colon || colon == addr || strchr(colon + 1, ':'))
		return false;
	for (const char *p = addr; p < colon; p++)
		if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
			return false;
	return parse_port(colon + 1);
}

char *leader_location(const char *scheme, const char *leader, const char *target)
{
	if (!target || target[0] != '/' || target[1] == '/')
		return NULL;   /* "//host" would name another host */
	for (const unsigned char *p = (const unsigned char *)target; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return NULL;
	return xasprintf("%s://%s%s", scheme, leader, target);
}

char *advertise_with_port(const char *adv, const char *bind_addr, uint16_t port)
{
	const char *colon;
	size_t host_len;

	if (!adv || !*adv) {
		const char *host = bind_addr && *bind_addr ? bind_addr : "127.0.0.1";
		/* nobody can reach 0.0.0.0 or :: (as config.c says too) */
		if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
			host = "127.0.0.1";
		return strchr(host, ':') ? xasprintf("[%s]:%u", host, port)
					 : xasprintf("%s:%u", host, port);
	}
	if (adv[0] == '[') {
		const char *end = strstr(adv, "]:");
		colon = end ? end + 1 : NULL;
	} else {
		colon = strrchr(adv, ':');
		if (colon && strchr(adv, ':') != colon)
			colon = NULL;   /* a bare IPv6 address: no port */
	}
	if (!colon)
		return adv[0] != '[' && strchr(adv, ':') ? xasprintf("[%s]:%u", adv, port)
							  : xasprintf("%s:%u", adv, port);
	if (strcmp(colon + 1, "0") != 0)
		return xstrdup(adv);
	host_len = (size_t)(colon - adv);
	return xasprintf("%.*s:%u", (int)host_len, adv, port);
}

static json_t *error_body(const char *code, const char *msg)
{
	return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}

void standby_answer(const char *method, const char *path, const char *target,
		    const char *scheme, const char *leader, struct standby_answer *a)
{
	bool known = leader && *leader;
	bool read = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	/* /.well-known/: the workload identity keys (routes_oidc.c), the leader's */
	bool api = !strncmp(path, "/v1/", 4) || !strncmp(path, "/.well-known/", 13);

	memset(a, 0, sizeof(*a));
	if (!strcmp(path, "/v1/agent/health") && read) {
		/* a load balancer's health check: only the leader is healthy */
		a->status = 503;
		a->body = json_pack("{s:b,s:b,s:s}", "ok", 0, "standby", 1, "leader",
				    known ? leader : "");
		return;
	}
	if (!strcmp(path, "/v1/status/leader") && read && known) {
		a->status = 200;
		a->body = json_pack("{s:s}", "leader", leader);
		return;
	}
	if (!api && !http_ui_path(path)) {
		a->status = 404;
		a->body = error_body("not_found", "no such path");
		return;
	}
	if (!known) {
		a->status = 503;
		a->body = error_body("no_leader", "this server is a standby and no server leads "
						  "the PostgreSQL store now; try again or another "
						  "server");
		return;
	}
	a->location = leader_location(scheme, leader, target);
	if (!a->location) {
		a->status = 400;
		a->body = error_body("bad_request", "the request target cannot be redirected");
		return;
	}
	/* 307: the client repeats the method and the body there */
	a->status = 307;
	a->body = json_pack("{s:s,s:s}", "leader", leader, "location", a->location);
}

/* --- the daemon --------------------------------------------------------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct standby_req *rq = xcalloc(1, sizeof(*rq));

	(void)cls;
	(void)conn;
	rq->target = xstrdup(uri ? uri : "");
	return rq;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct standby_req *rq = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (rq) {
		free(rq->target);
		free(rq);
		*con_cls = NULL;
	}
}

static enum MHD_Result send_json(struct MHD_Connection *conn, int status, json_t *body,
				 const char *location)
{
	char *text = json_dumps(body, JSON_COMPACT);
	char *line = text ? xasprintf("%s\n", text) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	free(text);
	json_decref(body);
	if (!line)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(line), line, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(line);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (location)
		MHD_add_response_header(r, "Location", location);
	ret = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Whether the request's Content-Length is above max. */
static bool body_declared_too_large(struct MHD_Connection *conn, size_t max)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	int64_t n;

	return cl && parse_int64(cl, 0, INT64_MAX, &n, NULL) == 0 && (uint64_t)n > max;
}

/* The API server's 413 (http_request.c), word for word. */
static enum MHD_Result send_body_too_large(struct MHD_Connection *conn, size_t max)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "the request body is larger than %zu bytes", max);
	return send_json(conn, 413, error_body("body_too_large", msg), NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct standby *sb = cls;
	struct standby_req *rq = *con_cls;
	struct standby_answer a;
	char leader[LEADER_ADDR_MAX];
	enum MHD_Result ret;

	(void)version;
	(void)upload_data;
	if (!rq)   /* MHD always calls on_uri first; be safe */
		return MHD_NO;
	if (!rq->seen) {
		struct herd_err err = { 0, "" };
		rq->seen = true;
		if (sb->verify_client && tls_mhd_check_peer(conn, &err) < 0)
			return send_json(conn, 403, error_body("tls_client_certificate",
							       err.msg[0] ? err.msg : "the connection's "
							       "certificate cannot be checked"), NULL);
		/* refused before the body is sent, as the API's server does */
		if (body_declared_too_large(conn, sb->max_body))
			return send_body_too_large(conn, sb->max_body);
		return MHD_YES;
	}
	if (*upload_data_size) {
		/* read and dropped: answering before the body is read would
		 * close with unread data, which can reset the answer away.
		 * A body without a length (chunked) that goes past the limit
		 * closes the connection: MHD takes no answer while a body is
		 * coming, and reading it to its end is what the limit is for */
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (n > sb->max_body - rq->body_len)
			return MHD_NO;
		rq->body_len += n;
		return MHD_YES;
	}
	pthread_mutex_lock(&sb->lock);
	memcpy(leader, sb->leader, sizeof(leader));
	pthread_mutex_unlock(&sb->lock);
	standby_answer(method, url, rq->target, sb->https ? "https" : "http", leader, &a);
	ret = send_json(conn, a.status, a.body, a.location);
	free(a.location);
	return ret;
}

int standby_start(const struct standby_config *cfg, struct standby **out,
		  struct herd_err *err)
{
	const char *addr = cfg->bind_addr ? cfg->bind_addr : "127.0.0.1";
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
	struct sockaddr_storage ss;
	struct sockaddr *sa;
	bool ipv6;
	struct MHD_OptionItem tls_opts[5] = { { MHD_OPTION_END, 0, NULL } };
	const union MHD_DaemonInfo *info;
	struct standby *sb;

	if (http_listen_addr(addr, cfg->port, &ss, &ipv6, err) < 0)
		return -EINVAL;
	sa = (struct sockaddr *)&ss;
	flags |= ipv6 ? MHD_USE_IPv6 : 0;
	sb = xcalloc(1, sizeof(*sb));
	sb->max_body = cfg->max_body ? cfg->max_body : HTTP_DEFAULT_MAX_BODY;
	pthread_mutex_init(&sb->lock, NULL);
	if (cfg->tls && cfg->tls->cert_pem) {
		flags |= MHD_USE_TLS;
		sb->https = true;
		sb->verify_client = cfg->tls->verify_client;
		tls_mhd_options(cfg->tls, tls_opts);
	}
	errno = 0;
	sb->mhd = MHD_start_daemon(flags, cfg->port, NULL, NULL, on_request, sb,
				   MHD_OPTION_SOCK_ADDR, sa,
				   MHD_OPTION_THREAD_POOL_SIZE, (unsigned)STANDBY_THREADS,
				   MHD_OPTION_URI_LOG_CALLBACK, on_uri, sb,
				   MHD_OPTION_NOTIFY_COMPLETED, on_completed, sb,
				   MHD_OPTION_CONNECTION_TIMEOUT, 120U,
				   MHD_OPTION_ARRAY, tls_opts,
				   MHD_OPTION_END);
	if (!sb->mhd) {
		int e = errno ? errno : EIO;
		pthread_mutex_destroy(&sb->lock);
		free(sb);
		return herd_errf(err, -e, "http: cannot listen on %s port %u: %s", addr,
				 (unsigned)cfg->port, strerror(e));
	}
	info = MHD_get_daemon_info(sb->mhd, MHD_DAEMON_INFO_BIND_PORT);
	sb->port = info ? info->port : cfg->port;
	*out = sb;
	return 0;
}

uint16_t standby_port(const struct standby *sb)
{
	return sb->port;
}

bool standby_set_leader(struct standby *sb, const char *holder, char *was, size_t was_len)
{
	const char *now = leader_addr_usable(holder) ? holder : "";
	bool changed;

	pthread_mutex_lock(&sb->lock);
	changed = sb->told && strcmp(sb->leader, now);
	if (was && was_len)
		snprintf(was, was_len, "%s", sb->leader);
	snprintf(sb->leader, sizeof(sb->leader), "%s", now);
	sb->told = true;
	pthread_mutex_unlock(&sb->lock);
	return changed;
}

static void standby_free(struct standby *sb)
{
	MHD_stop_daemon(sb->mhd);
	pthread_mutex_destroy(&sb->lock);
	free(sb);
}

int standby_handoff(struct standby *sb)
{
	MHD_socket fd = MHD_quiesce_daemon(sb->mhd);

	/* the socket is ours now: MHD_stop_daemon leaves it open */
	standby_free(sb);
	return fd == MHD_INVALID_SOCKET ? -EIO : fd;
}

void standby_stop(struct standby *sb)
{
	if (sb)
		standby_free(sb);
}

/* --- the leader's side ------------------------------------------------ */

static int get_status_leader(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *body;

	(void)req;
	pthread_mutex_lock(&srv->lock);
	body = json_pack("{s:s}", "leader", srv->advertise ? srv->advertise : "");
	pthread_mutex_unlock(&srv->lock);
	http_reply(resp, 200, body);
	return 0;
}

int routes_status_leader(struct server *srv, struct herd_err *err)
{
	return http_router_add(srv->router, "GET", "/v1/status/leader", get_status_leader, 0, srv,
			       err);
}
