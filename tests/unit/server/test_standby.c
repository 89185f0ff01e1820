/* A standby's listener (standby.h): which leader rows are addresses, the
 * Location of a redirect, the advertised address of a server that asked
 * for any port, what a standby answers; and a live one: health 503 naming
 * the leader, a redirect, and the handoff of its socket to the API's
 * server, which then answers on the same port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/httpc.h"
#include "common/tls.h"
#include "common/xalloc.h"
#include "server/http.h"
#include "server/standby.h"
#include "store/index_watch.h"

static void test_leader_addr_usable(void **state)
{
	(void)state;
	assert_true(leader_addr_usable("10.0.0.1:4646"));
	assert_true(leader_addr_usable("herd-1.example:4646"));
	assert_true(leader_addr_usable("[fd00::1]:4646"));
	assert_false(leader_addr_usable(""));
	assert_false(leader_addr_usable(NULL));
	assert_false(leader_addr_usable("10.0.0.1"));          /* no port */
	assert_false(leader_addr_usable("10.0.0.1:0"));        /* asked for any port */
	assert_false(leader_addr_usable("10.0.0.1:65536"));
	assert_false(leader_addr_usable("10.0.0.1:46a"));
	assert_false(leader_addr_usable(":4646"));
	assert_false(leader_addr_usable("fd00::1:4646"));      /* v6 without brackets */
	assert_false(leader_addr_usable("[fd00::1]"));
	assert_false(leader_addr_usable("[]:4646"));
	assert_false(leader_addr_usable("evil/x:4646"));
	assert_false(leader_addr_usable("u@10.0.0.1:4646"));
	assert_false(leader_addr_usable("10.0.0.1:4646\r\nX: y"));
	assert_false(leader_addr_usable("herd operator snapshot restore"));
}

static void test_leader_location(void **state)
{
	char *l;

	(void)state;
	l = leader_location("http", "10.0.0.1:4646", "/v1/jobs?prefix=a%20b&x");
	assert_string_equal(l, "http://10.0.0.1:4646/v1/jobs?prefix=a%20b&x");
	free(l);
	l = leader_location("https", "[fd00::1]:4646", "/ui/");
	assert_string_equal(l, "https://[fd00::1]:4646/ui/");
	free(l);
	assert_null(leader_location("http", "10.0.0.1:4646", "v1/jobs"));
	assert_null(leader_location("http", "10.0.0.1:4646", "//evil.example/v1"));
	assert_null(leader_location("http", "10.0.0.1:4646", "/v1/a\r\nSet-Cookie: x"));
	assert_null(leader_location("http", "10.0.0.1:4646", "/v1/a b"));
	assert_null(leader_location("http", "10.0.0.1:4646", "http://evil/v1"));
}

static void adv_is(const char *adv, const char *bind, unsigned port, const char *want)
{
	char *a = advertise_with_port(adv, bind, (uint16_t)port);
	assert_string_equal(a, want);
	free(a);
}

static void test_advertise_with_port(void **state)
{
	(void)state;
	adv_is("10.0.0.1:0", NULL, 41000, "10.0.0.1:41000");
	adv_is("10.0.0.1:4646", NULL, 41000, "10.0.0.1:4646");   /* a port given stays */
	adv_is("10.0.0.1", NULL, 41000, "10.0.0.1:41000");
	adv_is("[fd00::1]:0", NULL, 41000, "[fd00::1]:41000");
	adv_is("[fd00::1]:4646", NULL, 41000, "[fd00::1]:4646");
	adv_is("fd00::1", NULL, 41000, "[fd00::1]:41000");
	adv_is("[fd00::1]", NULL, 41000, "[fd00::1]:41000");
	adv_is(NULL, "0.0.0.0", 41000, "127.0.0.1:41000");
	adv_is(NULL, "10.0.0.7", 41000, "10.0.0.7:41000");
	adv_is(NULL, "fd00::7", 41000, "[fd00::7]:41000");
	adv_is("", NULL, 41000, "127.0.0.1:41000");
}

static void answer(const char *method, const char *path, const char *target,
		   const char *leader, int status, const char *location)
{
	struct standby_answer a;

	standby_answer(method, path, target, "http", leader, &a);
	assert_int_equal(a.status, status);
	assert_non_null(a.body);
	if (location)
		assert_string_equal(a.location, location);
	else
		assert_null(a.location);
	json_decref(a.body);
	free(a.location);
}

static void test_answer(void **state)
{
	struct standby_answer a;

	(void)state;
	standby_answer("GET", "/v1/agent/health", "/v1/agent/health", "http", "10.0.0.1:4646",
		       &a);
	assert_int_equal(a.status, 503);
	assert_true(json_is_false(json_object_get(a.body, "ok")));
	assert_true(json_is_true(json_object_get(a.body, "standby")));
	assert_string_equal(json_string_value(json_object_get(a.body, "leader")),
			    "10.0.0.1:4646");
	json_decref(a.body);
	/* no leader known: health says so, the rest is 503 no_leader */
	standby_answer("GET", "/v1/agent/health", "/v1/agent/health", "http", "", &a);
	assert_int_equal(a.status, 503);
	assert_string_equal(json_string_value(json_object_get(a.body, "leader")), "");
	json_decref(a.body);
	standby_answer("POST", "/v1/jobs", "/v1/jobs", "http", "", &a);
	assert_int_equal(a.status, 503);
	assert_string_equal(json_string_value(json_object_get(json_object_get(a.body, "error"),
							      "code")), "no_leader");
	json_decref(a.body);

	answer("GET", "/v1/status/leader", "/v1/status/leader", "10.0.0.1:4646", 200, NULL);
	answer("GET", "/v1/status/leader", "/v1/status/leader", "", 503, NULL);
	answer("POST", "/v1/jobs", "/v1/jobs?namespace=a", "10.0.0.1:4646", 307,
	       "http://10.0.0.1:4646/v1/jobs?namespace=a");
	answer("PUT", "/v1/agent/health", "/v1/agent/health", "10.0.0.1:4646", 307,
	       "http://10.0.0.1:4646/v1/agent/health");
	answer("GET", "/ui/app.js", "/ui/app.js", "10.0.0.1:4646", 307,
	       "http://10.0.0.1:4646/ui/app.js");
	/* the workload identity keys: the leader's */
	answer("GET", "/.well-known/jwks.json", "/.well-known/jwks.json", "10.0.0.1:4646", 307,
	       "http://10.0.0.1:4646/.well-known/jwks.json");
	answer("GET", "/elsewhere", "/elsewhere", "10.0.0.1:4646", 404, NULL);
	answer("GET", "/v1/jobs", "//evil/v1/jobs", "10.0.0.1:4646", 400, NULL);
}

struct got {
	long status;
	char location[256];
	char body[512];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct got *g = arg;
	size_t len = strlen(g->body), add = size * n;

	if (len + add < sizeof(g->body)) {
		memcpy(g->body + len, p, add);
		g->body[len + add] = '\0';
	}
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct got *g = arg;

	if (size * n > 10 && !strncasecmp(p, "Location: ", 10))
		snprintf(g->location, sizeof(g->location), "%.*s", (int)(size * n - 12), p + 10);
	return size * n;
}

static struct got get(unsigned port, const char *path)
{
	struct got g = { 0 };
	char url[128];
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &g);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &g);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g.status);
	curl_easy_cleanup(c);
	return g;
}

struct upload {
	const char *data;
	size_t len, off;
};

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	struct upload *u = arg;
	size_t k = size * n < u->len - u->off ? size * n : u->len - u->off;

	memcpy(p, u->data + u->off, k);
	u->off += k;
	return k;
}

/* A POST of len bytes, with its Content-Length or chunked (no length). */
static struct got post(unsigned port, const char *path, const char *data, size_t len,
		       bool chunked)
{
	struct got g = { 0 };
	struct upload u = { data, len, 0 };
	struct curl_slist *h = NULL;
	char url[128];
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, &u);
	if (chunked)
		h = curl_slist_append(h, "Transfer-Encoding: chunked");
	else
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &g);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &g);
	curl_easy_perform(c); /* a 413 may come before all is sent */
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return g;
}

/* Bodies are dropped, but only up to the API server's limit: a length
 * past it is answered its 413; a chunked body past it is cut off. */
static void test_body_limit(void **state)
{
	struct standby_config sc = { "127.0.0.1", 0, NULL, 1024 };
	struct standby *sb = NULL;
	struct herd_err err = { 0, "" };
	char big[4096];
	unsigned port;
	struct got g;

	(void)state;
	memset(big, 'x', sizeof(big));
	assert_int_equal(standby_start(&sc, &sb, &err), 0);
	port = standby_port(sb);
	standby_set_leader(sb, "10.0.0.1:4646", NULL, 0);
	g = post(port, "/v1/jobs", big, sizeof(big), false);
	assert_int_equal(g.status, 413);
	assert_non_null(strstr(g.body, "body_too_large"));
	/* without a length: cut off once past the limit (no redirect) */
	g = post(port, "/v1/jobs", big, sizeof(big), true);
	assert_true(g.status == 0 || g.status == 413);
	/* at the limit: read, dropped, redirected */
	g = post(port, "/v1/jobs", big, 1024, false);
	assert_int_equal(g.status, 307);
	g = post(port, "/v1/jobs", big, 1000, true);
	assert_int_equal(g.status, 307);
	standby_stop(sb);
}

/* standby_set_leader says when who leads changed (not at the first call),
 * and who led before, for its caller's log. */
static void test_leader_changes(void **state)
{
	struct standby_config sc = { "127.0.0.1", 0, NULL, 0 };
	struct standby *sb = NULL;
	struct herd_err err = { 0, "" };
	char was[64];

	(void)state;
	assert_int_equal(standby_start(&sc, &sb, &err), 0);
	assert_false(standby_set_leader(sb, "10.0.0.1:4646", was, sizeof(was)));
	assert_false(standby_set_leader(sb, "10.0.0.1:4646", was, sizeof(was)));
	assert_true(standby_set_leader(sb, "10.0.0.2:4646", was, sizeof(was)));
	assert_string_equal(was, "10.0.0.1:4646");
	assert_true(standby_set_leader(sb, "", was, sizeof(was))); /* none now */
	assert_string_equal(was, "10.0.0.2:4646");
	assert_false(standby_set_leader(sb, "10.0.0.3:0", was, sizeof(was))); /* none still */
	assert_true(standby_set_leader(sb, "10.0.0.3:4646", was, sizeof(was)));
	assert_string_equal(was, "");
	standby_stop(sb);
}

static int health(struct http_request *req, struct http_response *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	http_reply(resp, 200, json_pack("{s:b}", "ok", 1));
	return 0;
}

static void test_live_and_handoff(void **state)
{
	struct standby_config sc = { "127.0.0.1", 0, NULL, 0 };
	struct standby *sb = NULL;
	struct herd_err err = { 0, "" };
	struct http_router *r = http_router_new();
	struct index_watch watch;
	struct http_server_config hc = { 0 };
	struct http_server *http = NULL;
	struct got g;
	unsigned port;
	int fd;

	(void)state;
	assert_int_equal(standby_start(&sc, &sb, &err), 0);
	port = standby_port(sb);
	assert_true(port > 0);
	/* no leader known yet */
	g = get(port, "/v1/agent/health");
	assert_int_equal(g.status, 503);
	assert_non_null(strstr(g.body, "\"standby\":true"));
	g = get(port, "/v1/jobs");
	assert_int_equal(g.status, 503);
	assert_non_null(strstr(g.body, "no_leader"));
	/* a stale or unusable row is no leader either */
	standby_set_leader(sb, "10.0.0.1:0", NULL, 0);
	assert_int_equal(get(port, "/v1/jobs").status, 503);
	standby_set_leader(sb, "10.0.0.1:4646", NULL, 0);
	g = get(port, "/v1/agent/health");
	assert_int_equal(g.status, 503);
	assert_non_null(strstr(g.body, "\"leader\":\"10.0.0.1:4646\""));
	g = get(port, "/v1/jobs?prefix=a%2Fb&x");
	assert_int_equal(g.status, 307);
	assert_string_equal(g.location, "http://10.0.0.1:4646/v1/jobs?prefix=a%2Fb&x");
	g = get(port, "/v1/status/leader");
	assert_int_equal(g.status, 200);
	assert_non_null(strstr(g.body, "\"leader\":\"10.0.0.1:4646\""));

	/* the takeover: the same socket, now the API's */
	fd = standby_handoff(sb);
	assert_true(fd >= 0);
	assert_int_equal(http_router_add(r, "GET", "/v1/agent/health", health, 0, NULL, &err), 0);
	index_watch_init(&watch, 0);
	hc.router = r;
	hc.watch = &watch;
	hc.use_listen_fd = true;
	hc.listen_fd = fd;
	assert_int_equal(http_server_start(&hc, &http, &err), 0);
	assert_int_equal(http_server_port(http), port);
	g = get(port, "/v1/agent/health");
	assert_int_equal(g.status, 200);
	assert_non_null(strstr(g.body, "\"ok\":true"));
	http_server_stop(http);
	index_watch_release(&watch);
	http_router_free(r);
}

static char *fixture_file(const char *name)
{
	const char *root = getenv("HERD_SOURCE_ROOT");
	return xasprintf("%s/tests/unit/agent/fixtures/tls/%s", root ? root : ".", name);
}

/* With the TLS settings it would lead with: https, callers' certificates
 * checked (403 without one), and redirects to the leader over https. */
static void test_tls(void **state)
{
	char *ca = fixture_file("ca.pem"), *cert = fixture_file("agent.pem");
	char *key = fixture_file("agent-key.pem"), addr[64], leader[64];
	struct tls_server tls = { 0 };
	struct standby_config sc = { "127.0.0.1", 0, &tls, 0 };
	struct tls_client anon = { .https = true, .ca_file = ca };
	struct tls_client mine = { .https = true, .ca_file = ca, .cert_file = cert,
				   .key_file = key };
	struct standby *sb = NULL;
	struct herd_err err = { 0, "" };
	struct httpc c;
	struct httpc_response r = { 0 };
	int fd, port;

	(void)state;
	assert_int_equal(tls_server_load(&tls, cert, key, ca, true, &err), 0);
	assert_int_equal(standby_start(&sc, &sb, &err), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", standby_port(sb));
	/* a leader whose port refuses: the redirect is followed there */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	{
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t len = sizeof(a);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
		port = ntohs(a.sin_port);
	}
	snprintf(leader, sizeof(leader), "127.0.0.1:%d", port);
	standby_set_leader(sb, leader, NULL, 0);

	httpc_init_tls(&c, addr, &anon);
	assert_int_equal(httpc_request(&c, "GET", "/v1/agent/health", NULL, &r, &err), -EACCES);
	assert_string_equal(r.error_code, "tls_client_certificate");
	httpc_response_release(&r);
	httpc_release(&c);

	httpc_init_tls(&c, addr, &mine);
	assert_int_equal(httpc_request(&c, "GET", "/v1/agent/health", NULL, &r, &err), -EIO);
	assert_int_equal(r.status, 503);
	assert_string_equal(json_string_value(json_object_get(r.body, "leader")), leader);
	httpc_response_release(&r);
	assert_int_equal(httpc_request(&c, "GET", "/v1/jobs", NULL, &r, &err), -ECONNREFUSED);
	{
		char want[80];
		snprintf(want, sizeof(want), "https://%s", leader);
		assert_non_null(strstr(err.msg, want));
	}
	httpc_response_release(&r);
	httpc_release(&c);
	standby_stop(sb);
	close(fd);
	tls_server_release(&tls);
	free(ca);
	free(cert);
	free(key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leader_addr_usable),
		cmocka_unit_test(test_leader_location),
		cmocka_unit_test(test_advertise_with_port),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_live_and_handoff),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_leader_changes),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
