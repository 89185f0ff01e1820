/* http_server.c: the HTTP layer on GNU libmicrohttpd (see http.h).
 *
 * MHD runs an internal epoll thread pool.  A blocking query that must wait
 * is suspended (MHD_suspend_connection) and put on the waiter list; one
 * waker thread resumes waiters when the watched index passes theirs or
 * their deadline comes, so a thousand waiting agents cost a thousand list
 * entries, not a thousand threads.  The index watch's listener wakes the
 * waker after each commit, and after each poke (index_watch_poke), which
 * resumes the waiters of HTTP_ROUTE_MEMORY routes only.  On resume MHD calls the access handler again,
 * which then runs the route's handler.
 *
 * Close-on-exec: MHD creates its listening and accepted sockets with
 * SOCK_CLOEXEC (accept4), its epoll fd with EPOLL_CLOEXEC and its
 * inter-thread eventfd with EFD_CLOEXEC; the unit tests check every fd. */
#include "server/http-int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/tls_mhd.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "server/http_ui.h"

struct waiter {
	struct MHD_Connection *conn;
	uint64_t after;
	bool poked;          /* also resumed when the pokes are no longer pokes */
	uint64_t pokes;
	int64_t deadline_ns; /* CLOCK_MONOTONIC */
};

struct http_server {
	struct MHD_Daemon *mhd;
	const struct http_router *router;
	struct index_watch *watch;
	struct http_limits limits;
	uint16_t port;

	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;  /* CLOCK_MONOTONIC */
	struct waiter *waiters;
	size_t nwaiters, awaiters;
	int stopping;
	/* Requests that went to be held (held or refused a hold because the
	 * server stops) and have not completed: stop waits for them to be
	 * answered before it closes their connections. */
	size_t nheld;
	pthread_cond_t drained; /* nheld reached 0; CLOCK_MONOTONIC */
	pthread_t waker;
	/* Writes waiting for a writer thread, oldest first (write_queue). */
	struct conn_ctx *runq, *runq_tail;
	pthread_cond_t runq_wake;
	int writers_stop;
	pthread_t *writers;
	unsigned nwriters;
	struct http_local *local; /* this process's own client's requests */
	bool verify_client;       /* tls: callers need a certificate (check_peer) */
};

/* CONN_RUNNING: a write suspended on a writer thread's queue or running
 * there; CONN_RAN: its answer is in resp, to be sent when MHD calls back. */
enum conn_phase { CONN_READING, CONN_WAITING, CONN_RESUMED, CONN_RUNNING, CONN_RAN };

/* One request's state, from its first header to its completion. */
struct conn_ctx {
	struct http_request_state st;
	enum conn_phase phase;
	int counted;         /* in srv->nheld */
	int64_t deadline_ns; /* CLOCK_MONOTONIC end of the wait; 0 before the first hold */
	/* A write run by a writer thread: its connection, its answer and the
	 * index it ran at, and its place on the queue. */
	struct MHD_Connection *conn;
	struct http_response resp;
	uint64_t resp_index;
	struct conn_ctx *next;
};

/* --- the waker -------------------------------------------------------- */

static void *waker_main(void *arg)
{
	struct http_server *srv = arg;
	struct MHD_Connection **ready = NULL;
	size_t nready, aready = 0;

	pthread_mutex_lock(&srv->lock);
	for (;;) {
		int64_t now = mono_ns(), next = now + 60 * NS_PER_SEC;
		uint64_t cur = index_watch_current(srv->watch);
		uint64_t pokes = index_watch_pokes(srv->watch);
		struct timespec ts;

		nready = 0;
		for (size_t i = 0; i < srv->nwaiters;) {
			struct waiter *w = &srv->waiters[i];
			if (srv->stopping || cur > w->after || now >= w->deadline_ns ||
			    (w->poked && pokes != w->pokes)) {
				ALLOC_GROW(ready, nready + 1, aready);
				ready[nready++] = w->conn;
				*w = srv->waiters[--srv->nwaiters];
				continue;
			}
			if (w->deadline_ns < next)
				next = w->deadline_ns;
			i++;
		}
		if (nready) {
			/* resume outside our lock: MHD takes its own */
			pthread_mutex_unlock(&srv->lock);
			for (size_t i = 0; i < nready; i++)
				MHD_resume_connection(ready[i]);
			pthread_mutex_lock(&srv->lock);
			continue; /* look again: time passed */
		}
		if (srv->stopping)
			break;
		ts.tv_sec = next / NS_PER_SEC;
		ts.tv_nsec = next % NS_PER_SEC;
		pthread_cond_timedwait(&srv->wake, &srv->lock, &ts);
	}
	pthread_mutex_unlock(&srv->lock);
	free(ready);
	return NULL;
}

static void on_index(uint64_t index, void *arg)
{
	struct http_server *srv = arg;
	pthread_mutex_lock(&srv->lock);
	pthread_cond_signal(&srv->wake);
	pthread_mutex_unlock(&srv->lock);
}

/* Counts a request in nheld, once however often it is held or queued:
 * stop waits for every counted request to be answered.  srv->lock held. */
static void count_held_locked(struct http_server *srv, struct conn_ctx *cc)
{
	if (!cc->counted) {
		cc->counted = 1;
		srv->nheld++;
	}
}

/* Suspends conn until the index passes after, the pokes are no longer
 * pokes (read before the request looked at the state; an HTTP_ROUTE_MEMORY
 * route only) or the request's wait ends (cc->deadline_ns, set at its
 * first hold).  Returns 0, or -ECANCELED when the server is stopping (then
 * it is not suspended). */
static int hold(struct http_server *srv, struct MHD_Connection *conn, struct conn_ctx *cc,
		uint64_t after, uint64_t pokes)
{
	int rc = 0;
	if (!cc->deadline_ns)
		cc->deadline_ns = mono_ns() + cc->st.req.wait_ns;
	MHD_suspend_connection(conn);
	pthread_mutex_lock(&srv->lock);
	count_held_locked(srv, cc);
	if (srv->stopping) {
		rc = -ECANCELED;
	} else {
		ALLOC_GROW(srv->waiters, srv->nwaiters + 1, srv->awaiters);
		srv->waiters[srv->nwaiters].conn = conn;
		srv->waiters[srv->nwaiters].after = after;
		srv->waiters[srv->nwaiters].poked = http_request_wakes_on_poke(&cc->st);
		srv->waiters[srv->nwaiters].pokes = pokes;
		srv->waiters[srv->nwaiters].deadline_ns = cc->deadline_ns;
		srv->nwaiters++;
		/* the waker checks the index again, so a commit that came
		 * between our check and now is not missed */
		pthread_cond_signal(&srv->wake);
	}
	pthread_mutex_unlock(&srv->lock);
	if (rc)
		MHD_resume_connection(conn);
	return rc;
}

/* --- writers ---------------------------------------------------------- */

/* Runs queued writes, each on its own until its store commit is durable,
 * then resumes its connection for an MHD thread to send the answer. */
static void *writer_main(void *arg)
{
	struct http_server *srv = arg;

	pthread_mutex_lock(&srv->lock);
	for (;;) {
		while (!srv->runq && !srv->writers_stop)
			pthread_cond_wait(&srv->runq_wake, &srv->lock);
		struct conn_ctx *cc = srv->runq;
		if (!cc)
			break;
		srv->runq = cc->next;
		if (!srv->runq)
			srv->runq_tail = NULL;
		pthread_mutex_unlock(&srv->lock);
		cc->resp_index = index_watch_current(srv->watch);
		http_request_run(&cc->st, cc->resp_index, &cc->resp);
		cc->phase = CONN_RAN;
		/* MHD's resume takes its own lock, which orders the writes
		 * above before the MHD thread that sends the answer */
		MHD_resume_connection(cc->conn);
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* Hands a write to the writer threads: an MHD thread serves every
 * connection it accepted, and a write holds its runner until its group
 * commit is fsynced, so a write run on the MHD thread stalls the other
 * connections of that thread (with 8 keep-alive submitters, 4 to 7 of the
 * 8 MHD threads carried them all).  Counted in nheld like a held request,
 * so stop waits for its answer.  Returns 0, or -ECANCELED when there are
 * no writers or the server is stopping (then it is not suspended). */
static int write_queue(struct http_server *srv, struct MHD_Connection *conn, struct conn_ctx *cc)
{
	pthread_mutex_lock(&srv->lock);
	if (srv->stopping || srv->writers_stop || !srv->nwriters) {
		pthread_mutex_unlock(&srv->lock);
		return -ECANCELED;
	}
	count_held_locked(srv, cc);
	pthread_mutex_unlock(&srv->lock);
	cc->conn = conn;
	cc->phase = CONN_RUNNING;
	cc->next = NULL;
	/* suspended before it is queued: a writer may resume it at once */
	MHD_suspend_connection(conn);
	pthread_mutex_lock(&srv->lock);
	if (srv->runq_tail)
		srv->runq_tail->next = cc;
	else
		srv->runq = cc;
	srv->runq_tail = cc;
	pthread_cond_signal(&srv->runq_wake);
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

/* Lets the writers run what is queued, then joins them. */
static void stop_writers(struct http_server *srv)
{
	unsigned n;
	pthread_mutex_lock(&srv->lock);
	srv->writers_stop = 1;
	n = srv->nwriters;
	srv->nwriters = 0;
	pthread_cond_broadcast(&srv->runq_wake);
	pthread_mutex_unlock(&srv->lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(srv->writers[i], NULL);
	free(srv->writers);
	srv->writers = NULL;
	pthread_cond_destroy(&srv->runq_wake);
}

static int is_read(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* --- requests --------------------------------------------------------- */

static enum MHD_Result add_value(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct conn_ctx *cc = cls;
	if (kind == MHD_HEADER_KIND)
		http_request_add_header(&cc->st, key, value);
	else
		http_request_add_query(&cc->st, key, value);
	return MHD_YES;
}

/* The response for a file answer; NULL when the fd cannot be sent (it is
 * closed with resp then). */
static struct MHD_Response *file_response(struct http_response *resp)
{
	struct stat st;
	struct MHD_Response *r;

	if (fstat(resp->file_fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	r = MHD_create_response_from_fd((uint64_t)st.st_size, resp->file_fd);
	if (r)
		resp->has_file = false; /* MHD's now */
	return r;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, struct http_response *resp,
				     uint64_t index)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char idx[32];
	size_t len;
	const char *type = resp->text || resp->has_file ? resp->content_type : "application/json";
	char *text;

	if (resp->has_file) {
		/* a file goes from its fd, which MHD takes and closes */
		r = file_response(resp);
	} else {
		/* a text answer goes as it is, without a copy: MHD takes it */
		if (resp->text) {
			text = resp->text;
			len = strlen(text);
			resp->text = NULL;
		} else {
			text = http_response_text(resp, &len);
		}
		r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (!r)
			free(text);
	}
	if (!r) {
		http_response_release(resp);
		return MHD_NO; /* MHD closes the connection */
	}
	snprintf(idx, sizeof(idx), "%llu",
		 (unsigned long long)(resp->has_index ? resp->index : index));
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Herd-Index", idx);
	if (resp->allow[0])
		MHD_add_response_header(r, "Allow", resp->allow);
	ret = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	http_response_release(resp);
	return ret;
}

static enum MHD_Result run_and_send(struct http_server *srv, struct MHD_Connection *conn,
				    struct conn_ctx *cc)
{
	struct http_response resp = { 0 };
	uint64_t pokes = index_watch_pokes(srv->watch);
	uint64_t index = index_watch_current(srv->watch);
	http_request_run(&cc->st, index, &resp);
	/* Nothing new for this client: wait for the next change rather than
	 * answer it an empty list (http.h, nothing_new). */
	if (resp.nothing_new && cc->st.req.has_index && cc->st.req.wait_ns > 0 &&
	    (!cc->deadline_ns || mono_ns() < cc->deadline_ns)) {
		cc->phase = CONN_WAITING;
		if (hold(srv, conn, cc, index, pokes) == 0) {
			http_response_release(&resp);
			return MHD_YES;
		}
		cc->phase = CONN_RESUMED;
	}
	return send_response(conn, &resp, index);
}

/* The web UI (http_ui.h): its files straight from the binary's memory,
 * with the UI's security headers; its errors are the API's (JSON). */
static enum MHD_Result send_ui(struct http_server *srv, struct MHD_Connection *conn,
			       const struct conn_ctx *cc)
{
	struct http_ui_answer ui;
	struct http_response resp = { 0 };
	struct MHD_Response *r;
	enum MHD_Result ret;

	http_ui_answer(cc->st.method, cc->st.path, &ui);
	if (ui.status == 405) {
		snprintf(resp.allow, sizeof(resp.allow), "GET, HEAD");
		http_error(&resp, 405, "method_not_allowed", "%s is not allowed on %s",
			   cc->st.method, cc->st.path);
		return send_response(conn, &resp, index_watch_current(srv->watch));
	}
	if (ui.status != 200 && ui.status != 302) {
		http_error(&resp, 404, "not_found", "no UI path %s", cc->st.path);
		return send_response(conn, &resp, index_watch_current(srv->watch));
	}
	r = MHD_create_response_from_buffer(ui.len, (void *)ui.data, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	if (ui.location) {
		MHD_add_response_header(r, "Location", ui.location);
	} else {
		MHD_add_response_header(r, "Content-Type", ui.content_type);
		MHD_add_response_header(r, "Content-Security-Policy", HTTP_UI_CSP);
		MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
		MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	}
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	ret = MHD_queue_response(conn, (unsigned)ui.status, r);
	MHD_destroy_response(r);
	return ret;
}

static int body_too_large_declared(struct http_server *srv, struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);
	int64_t n;
	return cl && parse_int64(cl, 0, INT64_MAX, &n, NULL) == 0 &&
	       (uint64_t)n > srv->limits.max_body;
}

/* tls { verify_https_client }: the connection's certificate checked once
 * (tls_mhd_check_peer); 0, or -EACCES with resp set to the refusal. */
static int check_peer(struct MHD_Connection *conn, struct http_response *resp)
{
	struct herd_err err = { 0, "" };

	if (tls_mhd_check_peer(conn, &err) == 0)
		return 0;
	http_error(resp, 403, "tls_client_certificate", "%s",
		   err.msg[0] ? err.msg : "the connection's certificate cannot be checked");
	return -EACCES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *srv = cls;
	struct conn_ctx *cc = *con_cls;
	struct http_response resp = { 0 };

	if (!cc) {
		cc = xcalloc(1, sizeof(*cc));
		http_request_state_init(&cc->st, method, url);
		MHD_get_connection_values(conn, MHD_HEADER_KIND, add_value, cc);
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_value, cc);
		*con_cls = cc;
		/* refused before anything of the request is looked at */
		if (srv->verify_client && check_peer(conn, &resp) < 0)
			return send_response(conn, &resp, index_watch_current(srv->watch));
		if (!body_too_large_declared(srv, conn))
			return MHD_YES;
		/* Refuse at once, before the body is sent (curl waits for
		 * "100 Continue" and gets the 413 instead). */
		cc->st.body_too_large = 1;
		http_request_prepare(&cc->st, srv->router, &srv->limits, &resp);
		return send_response(conn, &resp, index_watch_current(srv->watch));
	}
	if (*upload_data_size) {
		http_request_add_body(&cc->st, upload_data, *upload_data_size,
				      srv->limits.max_body);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (cc->phase == CONN_WAITING) {
		cc->phase = CONN_RESUMED;
		return run_and_send(srv, conn, cc);
	}
	if (cc->phase == CONN_RAN) {
		cc->phase = CONN_RESUMED;
		return send_response(conn, &cc->resp, cc->resp_index);
	}
	if (cc->phase == CONN_RUNNING)
		return MHD_YES; /* not resumed yet */
	if (http_ui_path(cc->st.path)) /* the web UI is not routed: not under /v1 */
		return send_ui(srv, conn, cc);
	if (http_request_prepare(&cc->st, srv->router, &srv->limits, &resp))
		return send_response(conn, &resp, index_watch_current(srv->watch));
	/* A poke from here on ends the wait of an HTTP_ROUTE_MEMORY route;
	 * one between the client's last answer and this request is not
	 * counted (the index cannot say what the client saw of memory): it
	 * shows at the next change or the wait's end (docs/api.md, "Blocking
	 * queries"). */
	uint64_t pokes = index_watch_pokes(srv->watch);
	if (http_request_should_wait(&cc->st, index_watch_current(srv->watch))) {
		cc->phase = CONN_WAITING;
		if (hold(srv, conn, cc, cc->st.req.wait_index, pokes) == 0)
			return MHD_YES;
		cc->phase = CONN_RESUMED;
	}
	if (!is_read(cc->st.method) && write_queue(srv, conn, cc) == 0)
		return MHD_YES;
	return run_and_send(srv, conn, cc);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct conn_ctx *cc = *con_cls;
	if (!cc)
		return;
	if (cc->counted) {
		pthread_mutex_lock(&srv->lock);
		if (--srv->nheld == 0)
			pthread_cond_broadcast(&srv->drained);
		pthread_mutex_unlock(&srv->lock);
	}
	if (cc->phase == CONN_RAN) /* closed before its answer was sent */
		http_response_release(&cc->resp);
	http_request_state_release(&cc->st);
	free(cc);
	*con_cls = NULL;
}

/* --- start and stop --------------------------------------------------- */

/* MHD threads by default.  Writes now run on the writer threads
 * (write_queue); before, a write held its MHD thread until its group
 * commit was fsynced, so the number of threads bounded how many writes
 * shared one fsync: with 2, a
 * commit group took the changes of at most 2 requests.  Measured with 8
 * submitters (docs/operations.md, Performance): 2 -> 8 threads took a
 * server's CPU per submitted job from 0.63 to 0.43 ms; idle threads
 * cost ~100 KiB of RSS in all. */
#define HTTP_DEFAULT_THREADS 8

/* Writer threads (write_queue): a write mostly waits for its group
 * commit, so a thread per concurrent writer, and as many writes share one
 * fsync as there are writers waiting. */
#define HTTP_WRITE_THREADS 16

static void http_server_stop_unlistened(struct http_server *srv);

/* How long stop waits for resumed held requests to be answered. */
#define HTTP_STOP_DRAIN_NS (5 * NS_PER_SEC)

/* Waits until no held request is left unanswered, or wait_ns passed. */
static void wait_drained(struct http_server *srv, int64_t wait_ns)
{
	int64_t deadline = mono_ns() + wait_ns;
	struct timespec ts = { (time_t)(deadline / NS_PER_SEC), (long)(deadline % NS_PER_SEC) };
	pthread_mutex_lock(&srv->lock);
	while (srv->nheld > 0)
		if (pthread_cond_timedwait(&srv->drained, &srv->lock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&srv->lock);
}

int http_listen_addr(const char *addr, uint16_t port, struct sockaddr_storage *out, bool *ipv6,
		     struct herd_err *err)
{
	struct sockaddr_in *sa4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *)out;

	memset(out, 0, sizeof(*out));
	*ipv6 = false;
	if (inet_pton(AF_INET, addr, &sa4->sin_addr) == 1) {
		sa4->sin_family = AF_INET;
		sa4->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &sa6->sin6_addr) == 1) {
		sa6->sin6_family = AF_INET6;
		sa6->sin6_port = htons(port);
		*ipv6 = true;
		return 0;
	}
	return herd_errf(err, -EINVAL,
			 "http: bind address \"%s\" is not a numeric IPv4 or IPv6 address", addr);
}

int http_server_start(const struct http_server_config *cfg, struct http_server **out,
		      struct herd_err *err)
{
	const char *addr = cfg->bind_addr ? cfg->bind_addr : "127.0.0.1";
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
	unsigned threads = cfg->threads ? cfg->threads : HTTP_DEFAULT_THREADS;
	struct sockaddr_storage ss;
	struct sockaddr *sa;
	bool ipv6;
	struct http_server *srv;
	pthread_condattr_t ca;
	const union MHD_DaemonInfo *info;

	if (!cfg->router || !cfg->watch) {
		if (cfg->use_listen_fd)
			close(cfg->listen_fd);
		return herd_errf(err, -EINVAL, "http: no router or index watch given");
	}
	if (cfg->use_listen_fd) {
		/* a standby's socket, bound already (its address is moot) */
		sa = NULL;
	} else if (http_listen_addr(addr, cfg->port, &ss, &ipv6, err) < 0) {
		return -EINVAL;
	} else {
		sa = (struct sockaddr *)&ss;
		flags |= ipv6 ? MHD_USE_IPv6 : 0;
	}

	srv = xcalloc(1, sizeof(*srv));
	srv->router = cfg->router;
	srv->watch = cfg->watch;
	srv->limits.max_body = cfg->max_body ? cfg->max_body : HTTP_DEFAULT_MAX_BODY;
	srv->limits.max_wait_ns = cfg->max_wait_ns ? cfg->max_wait_ns : HTTP_DEFAULT_MAX_WAIT_NS;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->wake, &ca);
	pthread_cond_init(&srv->drained, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&srv->runq_wake, NULL);
	if (pthread_create(&srv->waker, NULL, waker_main, srv) != 0) {
		pthread_cond_destroy(&srv->runq_wake);
		pthread_cond_destroy(&srv->wake);
		pthread_cond_destroy(&srv->drained);
		pthread_mutex_destroy(&srv->lock);
		free(srv);
		if (cfg->use_listen_fd)
			close(cfg->listen_fd);
		return herd_errf(err, -EAGAIN, "http: cannot start the waker thread");
	}
	/* Writers run before MHD does; with none, writes run on MHD threads. */
	srv->writers = xcalloc(HTTP_WRITE_THREADS, sizeof(*srv->writers));
	while (srv->nwriters < HTTP_WRITE_THREADS &&
	       pthread_create(&srv->writers[srv->nwriters], NULL, writer_main, srv) == 0)
		srv->nwriters++;

	errno = 0;
	struct MHD_OptionItem tls_opts[5] = { { MHD_OPTION_END, 0, NULL } };
	if (cfg->tls && cfg->tls->cert_pem) {
		flags |= MHD_USE_TLS;
		srv->verify_client = cfg->tls->verify_client;
		tls_mhd_options(cfg->tls, tls_opts);
	}
	/* where to listen: an address to bind, or a socket handed over,
	 * which MHD takes (and closes on its failure too) */
	struct MHD_OptionItem where[2] = {
		sa ? (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, sa }
		   : (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, cfg->listen_fd, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	srv->mhd = MHD_start_daemon(flags, cfg->port, NULL, NULL, on_request, srv,
				    MHD_OPTION_ARRAY, where,
				    MHD_OPTION_THREAD_POOL_SIZE, threads,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
				    MHD_OPTION_CONNECTION_TIMEOUT, 120U,
				    MHD_OPTION_ARRAY, tls_opts,
				    MHD_OPTION_END);
	if (!srv->mhd) {
		int e = errno ? errno : EIO;
		pthread_mutex_lock(&srv->lock);
		srv->stopping = 1;
		pthread_cond_signal(&srv->wake);
		pthread_mutex_unlock(&srv->lock);
		pthread_join(srv->waker, NULL);
		stop_writers(srv);
		pthread_cond_destroy(&srv->wake);
		pthread_cond_destroy(&srv->drained);
		pthread_mutex_destroy(&srv->lock);
		free(srv);
		return herd_errf(err, -e, "http: cannot listen on %s port %u: %s", addr,
				 (unsigned)cfg->port, strerror(e));
	}
	info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info ? info->port : cfg->port;
	if (cfg->use_listen_fd && !srv->port) {
		socklen_t len = sizeof(ss);
		if (getsockname(cfg->listen_fd, (struct sockaddr *)&ss, &len) == 0)
			srv->port = ntohs(ss.ss_family == AF_INET6 ?
					  ((struct sockaddr_in6 *)&ss)->sin6_port :
					  ((struct sockaddr_in *)&ss)->sin_port);
	}
	srv->local = http_local_new(srv->router, srv->watch, &srv->limits);
	if (index_watch_listen(srv->watch, on_index, srv)) {
		srv->watch = cfg->watch;
		http_server_stop_unlistened(srv);
		return herd_errf(err, -ENOSPC, "http: the index watch has no room for a listener");
	}
	*out = srv;
	return 0;
}

uint16_t http_server_port(const struct http_server *srv)
{
	return srv->port;
}

const struct httpc_local *http_server_local(struct http_server *srv)
{
	return http_local_transport(srv->local);
}

void http_server_stop(struct http_server *srv)
{
	if (!srv)
		return;
	index_watch_unlisten(srv->watch, on_index, srv);
	http_server_stop_unlistened(srv);
}

static void http_server_stop_unlistened(struct http_server *srv)
{
	http_local_free(srv->local);
	/* The waker resumes every held request before it ends; they answer
	 * with the state as it is, and no new one is held. */
	pthread_mutex_lock(&srv->lock);
	srv->stopping = 1;
	pthread_cond_signal(&srv->wake);
	pthread_mutex_unlock(&srv->lock);
	pthread_join(srv->waker, NULL);
	/* A resumed request is answered by an MHD thread some time after the
	 * waker resumed it; MHD_stop_daemon would close its connection
	 * unanswered ("empty reply") if that thread had not run yet.  Wait for
	 * every such request to complete, but not forever: a client that does
	 * not read its answer must not hold the stop up. */
	wait_drained(srv, HTTP_STOP_DRAIN_NS);
	/* Writers finish what is queued and resume it before MHD stops. */
	stop_writers(srv);
	MHD_stop_daemon(srv->mhd);
	free(srv->waiters);
	pthread_cond_destroy(&srv->wake);
	pthread_cond_destroy(&srv->drained);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
