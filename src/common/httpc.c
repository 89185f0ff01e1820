/* httpc: see httpc.h. */
#include "common/httpc.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	/* curl_global_init is not thread-safe on older libcurl: once. */
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *normalise_addr(const char *addr, bool https)
{
	size_t len;
	char *s;

	if (!strstr(addr, "://"))
		s = xasprintf("%s://%s", https ? "https" : "http", addr);
	else
		s = xstrdup(addr);
	len = strlen(s);
	while (len > 0 && s[len - 1] == '/')
		s[--len] = '\0';
	return s;
}

static void free_addrs(struct httpc *c)
{
	for (size_t i = 0; i < c->nr_addrs; i++)
		free(c->addrs[i]);
	free(c->addrs);
	c->addrs = NULL;
	c->nr_addrs = c->cur = 0;
}

/* "a, b,,c" -> addrs a, b, c (blanks around each dropped); one left: no
 * list. */
static void split_addrs(struct httpc *c, const char *list)
{
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ','), *b = p, *e;
		if (!end)
			end = p + strlen(p);
		e = end;
		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (e > b) {
			c->addrs = xreallocarray(c->addrs, c->nr_addrs + 1, sizeof(*c->addrs));
			c->addrs[c->nr_addrs++] = xstrndup(b, (size_t)(e - b));
		}
		p = *end ? end + 1 : end;
	}
	if (c->nr_addrs < 2) {
		char *one = c->nr_addrs ? c->addrs[0] : NULL;
		c->nr_addrs = 0;
		free(c->addrs);
		c->addrs = NULL;
		if (one) {   /* the one address, without its blanks or commas */
			c->addrs = xcalloc(1, sizeof(*c->addrs));
			c->addrs[0] = one;
			c->nr_addrs = 1;
		}
	}
}

static void init_tls(struct httpc *c, const char *addr, const struct tls_client *tls)
{
	const char *tok = getenv("HERD_TOKEN");

	pthread_once(&global_once, global_init);
	memset(c, 0, sizeof(*c));
	if (tls)
		tls_client_copy(&c->tls, tls);
	else
		tls_client_from_env(&c->tls, &c->tls_err);
	if (!addr || !*addr)
		addr = getenv("HERD_ADDR");
	if (!addr || !*addr)
		addr = HTTPC_DEFAULT_ADDR;
	if (strchr(addr, ','))
		split_addrs(c, addr);
	c->base = normalise_addr(c->nr_addrs ? c->addrs[0] : addr, c->tls.https);
	c->token = tok && *tok ? xstrdup(tok) : NULL;
	c->timeout_ms = HTTPC_DEFAULT_TIMEOUT_MS;
	c->connect_timeout_ms = 5000;
}

void httpc_init(struct httpc *c, const char *addr)
{
	init_tls(c, addr, NULL);
}

void httpc_init_tls(struct httpc *c, const char *addr, const struct tls_client *tls)
{
	init_tls(c, addr, tls);
}

void httpc_release(struct httpc *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->base);
	free(c->token);
	free_addrs(c);
	tls_client_release(&c->tls);
	memset(c, 0, sizeof(*c));
}

void httpc_set_addr(struct httpc *c, const char *addr)
{
	free_addrs(c);
	free(c->base);
	c->base = normalise_addr(addr, c->tls.https);
}

void httpc_response_release(struct httpc_response *resp)
{
	if (!resp)
		return;
	json_decref(resp->body);
	resp->body = NULL;
}

char *httpc_escape(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (isalnum(ch) || strchr("-._~", ch))
			strbuf_addch(&sb, ch);
		else
			strbuf_addf(&sb, "%%%02X", ch);
	}
	return strbuf_detach(&sb, NULL);
}

int httpc_unescape(const char *s, size_t len, bool strict, char **out)
{
	char *buf = xmalloc(len + 1), *o = buf;

	for (size_t i = 0; i < len; i++) {
		int hi = i + 2 < len && s[i] == '%' ? hex_digit((unsigned char)s[i + 1]) : -1;
		int lo = hi >= 0 ? hex_digit((unsigned char)s[i + 2]) : -1;
		if (s[i] == '%' && lo >= 0 && (hi || lo || !strict)) {
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else if (s[i] == '%' && strict) {
			free(buf);
			return -EINVAL;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	*out = buf;
	return 0;
}

struct recv {
	struct strbuf body;
	uint64_t index;
	int too_big;
	char location[2048];   /* a Location header, trimmed; "" none */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct recv *r = arg;
	size_t n = size * nmemb;

	if (r->body.len + n > HTTPC_MAX_BODY) {
		r->too_big = 1;
		return 0;
	}
	strbuf_add(&r->body, data, n);
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct recv *r = arg;
	size_t n = size * nmemb;
	static const char name[] = "x-herd-index:", loc[] = "location:";

	if (n > sizeof(loc) - 1 && !strncasecmp(data, loc, sizeof(loc) - 1)) {
		const char *v = data + sizeof(loc) - 1, *end = data + n;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && isspace((unsigned char)end[-1]))
			end--;
		snprintf(r->location, sizeof(r->location), "%.*s", (int)(end - v), v);
	}
	if (n > sizeof(name) - 1 && !strncasecmp(data, name, sizeof(name) - 1)) {
		char buf[32];
		size_t len = n - (sizeof(name) - 1);
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, data + sizeof(name) - 1, len);
		buf[len] = '\0';
		r->index = strtoull(buf, NULL, 10);
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct httpc *c = arg;
	return c->abort_cb(c->abort_arg) ? 1 : 0;
}

static int status_errno(long status)
{
	switch (status) {
	case 400: return -EINVAL;
	case 401:
	case 403: return -EACCES;
	case 404: return -ENOENT;
	case 409: return -EEXIST;
	default: return -EIO;
	}
}

/* Fills resp->error_code and err from an error body, or a generic line
 * quoting raw (the body as received; NULL when it came as JSON). */
static int decode_error(struct httpc_response *resp, const char *raw, struct herd_err *err)
{
	json_t *e = resp->body ? json_object_get(resp->body, "error") : NULL;
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	int rc = status_errno(resp->status);

	if (code) {
		snprintf(resp->error_code, sizeof(resp->error_code), "%s", code);
		return herd_errf(err, rc, "server: %s: %s", code, msg ? msg : "");
	}
	return herd_errf(err, rc, "server: http %ld: %.200s", resp->status,
			 raw && *raw ? raw : "no body");
}

/* The request through the in-process server: the same answers and errors
 * as over HTTP. */
static int perform_local(struct httpc *c, const char *method, const char *path,
			 const json_t *body, struct httpc_response *resp, struct herd_err *err)
{
	int rc;

	memset(resp, 0, sizeof(*resp));
	rc = c->local->call(c->local->arg, method, path, body, c->token, c->abort_cb,
			    c->abort_arg, resp, err);
	if (rc < 0)
		return rc;
	if (resp->status < 200 || resp->status >= 300)
		return decode_error(resp, NULL, err);
	return 0;
}

/* libcurl (7.88) opens its sockets without close-on-exec, and the agent
 * starts task shims and exec commands while its connections to servers
 * are open: each child held them all. */
static curl_socket_t open_cloexec(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)arg;
	(void)purpose;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

void httpc_curl_cloexec(void *curl)
{
	curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_cloexec);
}

/* One request to url (whose origin "who" names in errors), with the
 * token when with_token; a redirect's Location into location. */
static int perform(struct httpc *c, const char *method, const char *url, const char *who,
		   bool with_token, const json_t *body, long timeout_ms,
		   struct httpc_response *resp, char *location, size_t locsize,
		   struct herd_err *err)
{
	CURL *h;
	CURLcode cc;
	struct curl_slist *hdrs = NULL;
	struct recv r = { STRBUF_INIT, 0, 0, "" };
	char *payload = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	int rc = 0;

	memset(resp, 0, sizeof(*resp));
	if (c->tls_err.code)
		return herd_errf(err, c->tls_err.code, "%s", c->tls_err.msg);
	if (!c->curl)
		c->curl = curl_easy_init();
	if (!c->curl)
		return herd_errf(err, -ENOMEM, "cannot start an http client");
	h = c->curl;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	httpc_curl_cloexec(h);
	tls_client_apply(&c->tls, h);
	if (c->abort_cb) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (c->token && with_token) {
		char *t = xasprintf("X-Herd-Token: %s", c->token);
		hdrs = curl_slist_append(hdrs, t);
		free(t);
	}
	if (body) {
		payload = json_dumps(body, JSON_COMPACT);
		if (!payload) {
			rc = herd_errf(err, -EINVAL, "request body cannot be encoded as json");
			goto out;
		}
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
	} else if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);

	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		if (r.too_big)
			rc = herd_errf(err, -EFBIG, "%s: answer larger than %d bytes", who,
				       HTTPC_MAX_BODY);
		else if (cc == CURLE_ABORTED_BY_CALLBACK)
			rc = herd_errf(err, -ECANCELED, "%s: request abandoned", who);
		else if (cc == CURLE_COULDNT_CONNECT)
			rc = herd_errf(err, -ECONNREFUSED, "cannot reach %s: %s", who,
				       errbuf[0] ? errbuf : curl_easy_strerror(cc));
		else if (cc == CURLE_OPERATION_TIMEDOUT)
			rc = herd_errf(err, -ETIMEDOUT, "%s did not answer in time", who);
		else if (cc == CURLE_PEER_FAILED_VERIFICATION)
			rc = herd_errf(err, -EKEYREJECTED, "%s: the server's certificate is not "
				       "trusted: %s", who, errbuf[0] ? errbuf :
				       curl_easy_strerror(cc));
		else if (cc == CURLE_GOT_NOTHING && !strncmp(who, "http://", 7))
			/* what a TLS listener does with plain HTTP */
			rc = herd_errf(err, -EIO, "%s: empty reply (a server with TLS on answers "
				       "only https://)", who);
		else
			rc = herd_errf(err, -EIO, "%s: %s", who,
				       errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	resp->index = r.index;
	snprintf(location, locsize, "%s", r.location);
	if (r.body.len) {
		json_error_t je;
		resp->body = json_loadb(r.body.buf, r.body.len, JSON_DECODE_ANY, &je);
	}
	if (resp->status < 200 || resp->status >= 300) {
		rc = decode_error(resp, r.body.buf, err);
		goto out;
	}
	if (r.body.len && !resp->body)
		rc = herd_errf(err, -EPROTO, "%s: answer is not json", who);
out:
	curl_slist_free_all(hdrs);
	free(payload);
	strbuf_release(&r.body);
	return rc;
}

/* The length of url's origin ("https://host:port"), 0 when url is not
 * an absolute http(s) URL with a host and no user part. */
static size_t origin_len(const char *url)
{
	const char *p = !strncmp(url, "http://", 7) ? url + 7 :
			!strncmp(url, "https://", 8) ? url + 8 : NULL;
	size_t n;

	if (!p)
		return 0;
	n = strcspn(p, "/?#");
	if (!n || memchr(p, '@', n))
		return 0;
	return (size_t)(p - url) + n;
}

/* Whether origin (o, n bytes) is one of c's addresses. */
static bool known_origin(const struct httpc *c, const char *o, size_t n)
{
	bool found = strlen(c->base) == n && !strncmp(c->base, o, n);

	for (size_t i = 0; i < c->nr_addrs && !found; i++) {
		char *a = normalise_addr(c->addrs[i], c->tls.https);
		found = strlen(a) == n && !strncmp(a, o, n);
		free(a);
	}
	return found;
}

int httpc_redirect_check(const struct httpc *c, const char *from, const char *location,
			 char **url, bool *with_token, struct herd_err *err)
{
	size_t fn = origin_len(from), ln;
	bool https = !strncmp(from, "https://", 8);

	for (const unsigned char *p = (const unsigned char *)location; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return herd_errf(err, -EINVAL, "%.*s redirected to a bad location",
					 (int)fn, from);
	if (location[0] == '/' && location[1] != '/') {
		/* a path: the same server */
		*url = xasprintf("%.*s%s", (int)fn, from, location);
		*with_token = c->token != NULL;
		return 0;
	}
	ln = origin_len(location);
	if (!fn || !ln || https != !strncmp(location, "https://", 8))
		return herd_errf(err, -EPERM, "%.*s redirected to \"%.200s\"; only a redirect to "
				 "an address of the same scheme is followed", (int)fn, from, location);
	if (c->token && !known_origin(c, location, ln) &&
	    !(ln == fn && !strncmp(location, from, fn)) && !(https && !c->tls.skip_verify))
		return herd_errf(err, -EPERM, "%.*s redirected to %.*s (a standby names the "
				 "leader so), which is not in HERD_ADDR: the token is not sent there "
				 "over plain http; add it to HERD_ADDR or use https", (int)fn, from,
				 (int)ln, location);
	*url = xstrdup(location);
	*with_token = c->token != NULL;
	return 0;
}

/* perform, following redirects (httpc_redirect_check) up to
 * HTTPC_MAX_REDIRECTS times.  The first request goes to url on base, as
 * ever; only a redirect allocates. */
static int perform_following(struct httpc *c, const char *method, const char *url,
			     const json_t *body, long timeout_ms, struct httpc_response *resp,
			     struct herd_err *err)
{
	char location[2048], *owned = NULL, *who = NULL;
	const char *cur = url;
	bool with_token = true;
	int rc;

	for (int hops = 0;; hops++) {
		char *next = NULL;
		struct herd_err why = { 0, "" };
		location[0] = '\0';
		rc = perform(c, method, cur, who ? who : c->base, with_token, body, timeout_ms,
			     resp, location, sizeof(location), err);
		if (rc == 0 || (resp->status != 307 && resp->status != 308) || !location[0])
			break;
		if (hops == HTTPC_MAX_REDIRECTS) {
			rc = herd_errf(err, -EIO, "%s: more than %d redirects (last to %.200s)",
				       who ? who : c->base, HTTPC_MAX_REDIRECTS, location);
			break;
		}
		if (httpc_redirect_check(c, cur, location, &next, &with_token, &why) < 0) {
			rc = herd_errf(err, -EIO, "%s", why.msg);
			break;
		}
		httpc_response_release(resp);
		free(owned);
		free(who);
		cur = owned = next;
		who = xstrndup(next, origin_len(next));
	}
	free(owned);
	free(who);
	return rc;
}

/* After a request to base failed with rc: whether to send it to the next
 * of several addresses (made base), tried counting those tried so far.
 * Only what cannot have reached a server that acts on it moves on: no
 * connection, or a 503 (a server that is not serving: retrying a write
 * elsewhere does not do it twice). */
static bool next_addr(struct httpc *c, int rc, struct httpc_response *resp, size_t *tried)
{
	if (c->nr_addrs < 2 || *tried >= c->nr_addrs)
		return false;
	if (rc != -ECONNREFUSED && resp->status != 503)
		return false;
	httpc_response_release(resp);
	c->cur = (c->cur + 1) % c->nr_addrs;
	free(c->base);
	c->base = normalise_addr(c->addrs[c->cur], c->tls.https);
	(*tried)++;
	return true;
}

int httpc_request(struct httpc *c, const char *method, const char *path, const json_t *body,
		  struct httpc_response *resp, struct herd_err *err)
{
	size_t tried = 1;
	int rc;

	if (c->local)
		return perform_local(c, method, path, body, resp, err);
	do {
		char *url = xasprintf("%s%s", c->base, path);
		rc = perform_following(c, method, url, body, c->timeout_ms, resp, err);
		free(url);
	} while (rc < 0 && next_addr(c, rc, resp, &tried));
	return rc;
}

int httpc_get_blocking(struct httpc *c, const char *path, uint64_t index, long wait_ms,
		       struct httpc_response *resp, struct herd_err *err)
{
	char *query = xasprintf("%s%cindex=%llu&wait=%ldms", path, strchr(path, '?') ? '&' : '?',
				(unsigned long long)index, wait_ms);
	int rc;

	if (c->local) {
		rc = perform_local(c, "GET", query, NULL, resp, err);
	} else {
		size_t tried = 1;
		do {
			char *url = xasprintf("%s%s", c->base, query);
			/* The server may answer up to wait later (plus its
			 * jitter): allow that and the ordinary limit on top. */
			rc = perform_following(c, "GET", url, NULL, wait_ms + c->timeout_ms, resp,
					       err);
			free(url);
		} while (rc < 0 && next_addr(c, rc, resp, &tried));
	}
	free(query);
	return rc;
}
