/* docker_api: HTTP/1.1 to the Docker Engine over its unix socket with
 * libcurl.  One easy handle per request: a unix socket connect costs
 * microseconds, and nothing is shared between the threads of a task. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "common/units.h"
#include "drivers/docker-int.h"

#define DEFAULT_TIMEOUT_MS 30000

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void docker_cancel_init(struct docker_cancel *c)
{
	pthread_mutex_init(&c->lock, NULL);
	c->fd = -1;
	c->fired = false;
}

void docker_cancel_fire(struct docker_cancel *c)
{
	pthread_mutex_lock(&c->lock);
	c->fired = true;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->lock);
}

void docker_cancel_destroy(struct docker_cancel *c)
{
	pthread_mutex_destroy(&c->lock);
}

struct call {
	const struct docker_req *req;
	struct strbuf *resp;
	struct docker_cancel *cancel;
	int cb_rc;              /* first negative on_data result */
	int64_t last_data_ns;
	bool idle_expired;
};

/* Our own socket: close-on-exec (DESIGN.md) and known to the cancel point. */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct call *call = arg;
	int fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	if (fd < 0 || !call->cancel)
		return fd < 0 ? CURL_SOCKET_BAD : fd;
	pthread_mutex_lock(&call->cancel->lock);
	if (call->cancel->fired) {
		close(fd);
		fd = CURL_SOCKET_BAD;
	} else {
		call->cancel->fd = fd;
	}
	pthread_mutex_unlock(&call->cancel->lock);
	return fd;
}

static int close_socket(void *arg, curl_socket_t fd)
{
	struct call *call = arg;
	if (call->cancel) {
		pthread_mutex_lock(&call->cancel->lock);
		if (call->cancel->fd == fd)
			call->cancel->fd = -1;
		close(fd);
		pthread_mutex_unlock(&call->cancel->lock);
		return 0;
	}
	return close(fd);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct call *call = arg;
	size_t len = size * nmemb;
	call->last_data_ns = mono_ns();
	if (call->req->on_data) {
		int rc = call->req->on_data(call->req->arg, data, len);
		if (rc < 0) {
			call->cb_rc = rc;
			return 0; /* aborts the transfer */
		}
	} else if (call->resp) {
		strbuf_add(call->resp, data, len);
	}
	return len;
}

/* Called about once a second even while idle: the idle timeout and
 * cancellation of a request that has not opened its socket yet. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct call *call = arg;
	if (call->cancel) {
		pthread_mutex_lock(&call->cancel->lock);
		bool fired = call->cancel->fired;
		pthread_mutex_unlock(&call->cancel->lock);
		if (fired)
			return 1;
	}
	if (call->req->idle_ms > 0 && mono_ns() - call->last_data_ns > call->req->idle_ms * 1000000LL) {
		call->idle_expired = true;
		return 1;
	}
	return 0;
}

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_ABORTED_BY_CALLBACK: return -ECANCELED;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE: return -ECONNRESET;
	default: return -EIO;
	}
}

int docker_call(struct docker_client *c, const struct docker_req *req, struct strbuf *resp,
		struct herd_err *err)
{
	pthread_once(&curl_once, curl_init_once);
	struct call call = { .req = req, .resp = resp, .cancel = req->cancel,
			     .last_data_ns = mono_ns() };
	struct curl_slist *hdrs = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url = xasprintf("http://docker%s%s", c->prefix, req->path);
	CURL *e = curl_easy_init();
	long status = 0;
	int rc;

	if (!e) {
		free(url);
		return herd_errf(err, -ENOMEM, "docker: curl_easy_init failed");
	}
	curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &call);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, &call);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &call);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, &call);
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	int64_t tmo = req->timeout_ms ? req->timeout_ms : c->timeout_ms;
	if (tmo > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)tmo);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	if (req->body) {
		char *ct = xasprintf("Content-Type: %s",
				     req->body_type ? req->body_type : "application/json");
		hdrs = curl_slist_append(hdrs, ct);
		free(ct);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(req->body_len ? req->body_len : strlen(req->body)));
	} else if (!strcmp(req->method, "POST")) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (req->header)
		hdrs = curl_slist_append(hdrs, req->header);
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);

	CURLcode cc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (call.cb_rc < 0) {
		rc = herd_errf(err, call.cb_rc, "docker %s %s: %s", req->method, req->path,
			       strerror(-call.cb_rc));
	} else if (call.idle_expired) {
		rc = herd_errf(err, -ETIMEDOUT, "docker %s %s: no data for %lld s", req->method,
			       req->path, (long long)(req->idle_ms / 1000));
	} else if (cc == CURLE_ABORTED_BY_CALLBACK ||
		   (cc != CURLE_OK && req->cancel && req->cancel->fired)) {
		rc = herd_errf(err, -ECANCELED, "docker %s %s: cancelled", req->method, req->path);
	} else if (cc == CURLE_COULDNT_CONNECT) {
		rc = herd_errf(err, access(c->socket, F_OK) < 0 ? -ENOENT : -ECONNREFUSED,
			       "docker engine at %s does not answer: %s", c->socket,
			       errbuf[0] ? errbuf : curl_easy_strerror(cc));
	} else if (cc != CURLE_OK) {
		rc = herd_errf(err, curl_errno(cc), "docker %s %s: %s", req->method, req->path,
			       errbuf[0] ? errbuf : curl_easy_strerror(cc));
	} else {
		rc = (int)status;
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(e);
	free(url);
	return rc;
}

const char *docker_error_message(const struct strbuf *resp)
{
	static __thread char msg[300];
	json_t *o = json_loads(resp->buf, 0, NULL);
	const char *m = json_string_value(json_object_get(o, "message"));
	snprintf(msg, sizeof(msg), "%s", m ? m : resp->len ? resp->buf : "(no message)");
	json_decref(o);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	return msg;
}

void docker_query_escape(struct strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			strbuf_addch(sb, ch);
		} else {
			strbuf_addch(sb, '%');
			strbuf_addch(sb, hex[ch >> 4]);
			strbuf_addch(sb, hex[ch & 15]);
		}
	}
}

/* "1.43" -> 43 (major 1 assumed, as every engine API so far). */
static int api_minor(const char *v)
{
	int major = 0, minor = 0;
	if (!v || sscanf(v, "%d.%d", &major, &minor) != 2 || major != 1)
		return -1;
	return minor;
}

int docker_client_init(struct docker_client *c, const struct docker_config *cfg,
		       struct herd_err *err)
{
	struct strbuf resp = STRBUF_INIT;
	memset(c, 0, sizeof(*c));
	c->socket = xstrdup(cfg && cfg->socket && *cfg->socket ? cfg->socket : DOCKER_DEFAULT_SOCKET);
	c->timeout_ms = cfg && cfg->request_timeout_ns > 0 ? cfg->request_timeout_ns / 1000000
							   : DEFAULT_TIMEOUT_MS;
	struct docker_req req = { .method = "GET", .path = "/version" };
	int rc = docker_call(c, &req, &resp, err);
	if (rc < 0)
		goto out;
	if (rc != 200) {
		rc = herd_errf(err, -EPROTO, "docker engine at %s: GET /version: HTTP %d: %s",
			       c->socket, rc, docker_error_message(&resp));
		goto out;
	}
	json_t *o = json_loads(resp.buf, 0, NULL);
	int theirs = api_minor(json_string_value(json_object_get(o, "ApiVersion")));
	json_decref(o);
	int ours = api_minor(DOCKER_API_MAX);
	if (theirs < DOCKER_API_MIN_MINOR) {
		rc = herd_errf(err, -ENOTSUP, "docker engine at %s speaks API 1.%d; herd needs 1.%d "
			       "or later", c->socket, theirs, DOCKER_API_MIN_MINOR);
		goto out;
	}
	snprintf(c->prefix, sizeof(c->prefix), "/v1.%d", theirs < ours ? theirs : ours);
	rc = 0;
out:
	strbuf_release(&resp);
	return rc;
}

void docker_client_release(struct docker_client *c)
{
	free(c->socket);
	c->socket = NULL;
}
