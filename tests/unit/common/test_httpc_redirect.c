/* httpc and a standby's redirect (307/308): which redirects are followed
 * and with the token (httpc_redirect_check), and requests that follow
 * one: method, body and token arrive at the leader; a redirect that would
 * carry the token to an unknown address over plain http is not followed;
 * a loop ends after HTTPC_MAX_REDIRECTS.  The servers are threads of the
 * test on ports of 127.0.0.1 answering canned HTTP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/httpc.h"

static void check(struct httpc *c, const char *from, const char *loc, int want_rc,
		  const char *want_url, bool want_token)
{
	struct herd_err err = { 0, "" };
	char *url = NULL;
	bool tok = false;
	int rc = httpc_redirect_check(c, from, loc, &url, &tok, &err);

	assert_int_equal(rc, want_rc);
	if (rc == 0) {
		assert_string_equal(url, want_url);
		assert_int_equal(tok, want_token);
	} else {
		assert_null(url);
		assert_true(err.msg[0] != '\0');
	}
	free(url);
}

static void test_check(void **state)
{
	struct httpc c;

	(void)state;
	httpc_init(&c, "10.0.0.1:4646,10.0.0.2:4646");
	/* no token: any address of the same scheme */
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://10.0.0.9:4646/v1/jobs?x=1", 0,
	      "http://10.0.0.9:4646/v1/jobs?x=1", false);
	/* never to another scheme, a user part, a bad byte, or nowhere */
	check(&c, "http://10.0.0.1:4646/v1/jobs", "https://10.0.0.2:4646/v1/jobs", -EPERM, NULL,
	      false);
	check(&c, "https://10.0.0.1:4646/v1/jobs", "http://10.0.0.2:4646/v1/jobs", -EPERM, NULL,
	      false);
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://u@10.0.0.2:4646/v1/jobs", -EPERM, NULL,
	      false);
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://10.0.0.2:4646/v1/a b", -EINVAL, NULL,
	      false);
	check(&c, "http://10.0.0.1:4646/v1/jobs", "ftp://10.0.0.2/", -EPERM, NULL, false);
	check(&c, "http://10.0.0.1:4646/v1/jobs", "//10.0.0.2:4646/v1/jobs", -EPERM, NULL,
	      false);
	/* a path: the same server */
	check(&c, "http://10.0.0.1:4646/v1/jobs", "/v1/jobs?y", 0,
	      "http://10.0.0.1:4646/v1/jobs?y", false);

	/* with a token: HERD_ADDR's addresses and the same origin only */
	c.token = strdup("secret");
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://10.0.0.2:4646/v1/jobs", 0,
	      "http://10.0.0.2:4646/v1/jobs", true);
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://10.0.0.1:4646/v1/other", 0,
	      "http://10.0.0.1:4646/v1/other", true);
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://10.0.0.9:4646/v1/jobs", -EPERM, NULL,
	      false);
	/* a port is part of the address */
	check(&c, "http://10.0.0.1:4646/v1/jobs", "http://10.0.0.2:4647/v1/jobs", -EPERM, NULL,
	      false);
	httpc_release(&c);

	/* https with the certificate checked: the token goes along */
	httpc_init(&c, "https://10.0.0.1:4646");
	c.token = strdup("secret");
	check(&c, "https://10.0.0.1:4646/v1/jobs", "https://10.0.0.9:4646/v1/jobs", 0,
	      "https://10.0.0.9:4646/v1/jobs", true);
	/* ... but not when nothing is checked */
	c.tls.skip_verify = true;
	check(&c, "https://10.0.0.1:4646/v1/jobs", "https://10.0.0.9:4646/v1/jobs", -EPERM,
	      NULL, false);
	httpc_release(&c);
}

/* A listening port of 127.0.0.1. */
static int listen_port(int *fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(*fd, 8), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/* A server thread: answers n connections with reply, keeping the last
 * request it read (headers and body). */
struct canned {
	int fd, n;
	char reply[512];
	char request[4096];
};

/* Reads one request: its headers and Content-Length bytes of body. */
static void read_request(int fd, char *buf, size_t size)
{
	size_t got = 0;
	const char *end;

	buf[0] = '\0';
	for (;;) {
		ssize_t r = read(fd, buf + got, size - 1 - got);
		if (r <= 0)
			return;
		got += (size_t)r;
		buf[got] = '\0';
		if ((end = strstr(buf, "\r\n\r\n"))) {
			const char *cl = strcasestr(buf, "Content-Length:");
			size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
			if (got >= want || got >= size - 1)
				return;
		}
	}
}

static void *serve(void *arg)
{
	struct canned *s = arg;

	for (int i = 0; i < s->n; i++) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return NULL;
		read_request(fd, s->request, sizeof(s->request));
		if (write(fd, s->reply, strlen(s->reply)) < 0)
			perror("write");
		close(fd);
	}
	return NULL;
}

static void redirect_reply(struct canned *s, int to_port)
{
	char body[128];

	snprintf(body, sizeof(body), "{\"leader\":\"127.0.0.1:%d\"}", to_port);
	snprintf(s->reply, sizeof(s->reply),
		 "HTTP/1.1 307 Temporary Redirect\r\nContent-Type: application/json\r\n"
		 "Location: http://127.0.0.1:%d/v1/jobs?x=1\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n%s", to_port, strlen(body), body);
}

static void ok_reply(struct canned *s)
{
	snprintf(s->reply, sizeof(s->reply),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
		 "Connection: close\r\n\r\n{\"ok\":true}");
}

/* a standby redirects a POST; the leader (in HERD_ADDR) gets its method,
 * path, body and token */
static void test_follow(void **state)
{
	struct canned standby = { .n = 1 }, leader = { .n = 1 };
	int ps = listen_port(&standby.fd), pl = listen_port(&leader.fd);
	pthread_t ts, tl;
	char list[64];
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };
	json_t *body = json_pack("{s:s}", "job", "hello");

	(void)state;
	redirect_reply(&standby, pl);
	ok_reply(&leader);
	assert_int_equal(pthread_create(&ts, NULL, serve, &standby), 0);
	assert_int_equal(pthread_create(&tl, NULL, serve, &leader), 0);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", ps, pl);
	httpc_init(&c, list);
	c.token = strdup("secret");
	assert_int_equal(httpc_request(&c, "POST", "/v1/jobs", body, &r, &err), 0);
	assert_int_equal(r.status, 200);
	pthread_join(ts, NULL);
	pthread_join(tl, NULL);
	assert_non_null(strstr(standby.request, "POST /v1/jobs HTTP/1.1"));
	assert_non_null(strstr(leader.request, "POST /v1/jobs?x=1 HTTP/1.1"));
	assert_non_null(strstr(leader.request, "X-Herd-Token: secret"));
	assert_non_null(strstr(leader.request, "{\"job\":\"hello\"}"));
	httpc_response_release(&r);
	httpc_release(&c);
	json_decref(body);
	close(standby.fd);
	close(leader.fd);
}

/* the leader is not in HERD_ADDR and the token would go over plain http:
 * not followed; the answer is the 307 */
static void test_token_not_sent_elsewhere(void **state)
{
	struct canned standby = { .n = 1 };
	int ps = listen_port(&standby.fd), lfd, pl = listen_port(&lfd);
	pthread_t ts;
	char addr[64];
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };
	struct pollfd pending;

	(void)state;
	redirect_reply(&standby, pl);
	assert_int_equal(pthread_create(&ts, NULL, serve, &standby), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ps);
	httpc_init(&c, addr);
	c.token = strdup("secret");
	assert_int_equal(httpc_request(&c, "GET", "/v1/jobs", NULL, &r, &err), -EIO);
	assert_int_equal(r.status, 307);
	assert_non_null(strstr(err.msg, "HERD_ADDR"));
	pthread_join(ts, NULL);
	/* nothing connected to the leader's port */
	pending = (struct pollfd){ .fd = lfd, .events = POLLIN };
	assert_int_equal(poll(&pending, 1, 0), 0);
	httpc_response_release(&r);
	httpc_release(&c);
	close(standby.fd);
	close(lfd);
}

/* a server that redirects to itself: HTTPC_MAX_REDIRECTS hops, then an
 * error with the 307 */
static void test_loop_ends(void **state)
{
	struct canned loop = { .n = HTTPC_MAX_REDIRECTS + 1 };
	int p = listen_port(&loop.fd);
	pthread_t t;
	char addr[64];
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };

	(void)state;
	redirect_reply(&loop, p);
	assert_int_equal(pthread_create(&t, NULL, serve, &loop), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", p);
	httpc_init(&c, addr);
	assert_int_equal(httpc_request(&c, "GET", "/v1/jobs", NULL, &r, &err), -EIO);
	assert_int_equal(r.status, 307);
	assert_non_null(strstr(err.msg, "redirects"));
	pthread_join(t, NULL);
	httpc_response_release(&r);
	httpc_release(&c);
	close(loop.fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_follow),
		cmocka_unit_test(test_token_not_sent_elsewhere),
		cmocka_unit_test(test_loop_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
