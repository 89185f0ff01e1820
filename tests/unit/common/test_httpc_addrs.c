/* httpc with several addresses (HERD_ADDR="a,b"): the list as parsed, and
 * a request that cannot connect to one address going to the next.  The
 * addresses are ports of 127.0.0.1 bound by the test and not listening
 * (every connection refused), and one that answers HTTP from a thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/httpc.h"

/* A port of 127.0.0.1 bound to fd (listening when listen_too). */
static int bound_port(int *fd, int listen_too)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (listen_too)
		assert_int_equal(listen(*fd, 4), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

static void test_parse(void **state)
{
	struct httpc c;

	httpc_init(&c, " 10.0.0.1:4646 ,, https://10.0.0.2:4646/ ,");
	assert_int_equal(c.nr_addrs, 2);
	assert_string_equal(c.addrs[0], "10.0.0.1:4646");
	assert_string_equal(c.addrs[1], "https://10.0.0.2:4646/");
	assert_string_equal(c.base, "http://10.0.0.1:4646");
	/* set_addr: one address from now on */
	httpc_set_addr(&c, "10.0.0.3:4646");
	assert_int_equal(c.nr_addrs, 0);
	assert_string_equal(c.base, "http://10.0.0.3:4646");
	httpc_release(&c);

	httpc_init(&c, "10.0.0.1:4646");
	assert_int_equal(c.nr_addrs, 0);
	assert_null(c.addrs);
	httpc_release(&c);
	/* a trailing comma leaves one address */
	httpc_init(&c, "10.0.0.1:4646,");
	assert_int_equal(c.nr_addrs, 1);
	assert_string_equal(c.base, "http://10.0.0.1:4646");
	httpc_release(&c);
}

/* both refuse: each was tried (the error names the last), once */
static void test_all_refused(void **state)
{
	int fa, fb;
	int pa = bound_port(&fa, 0), pb = bound_port(&fb, 0);
	char list[64], want[64];
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };

	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", pa, pb);
	snprintf(want, sizeof(want), "http://127.0.0.1:%d", pb);
	httpc_init(&c, list);
	assert_int_equal(httpc_request(&c, "GET", "/v1/agent/health", NULL, &r, &err),
			 -ECONNREFUSED);
	assert_non_null(strstr(err.msg, want));
	assert_string_equal(c.base, want);
	httpc_response_release(&r);
	httpc_release(&c);
	close(fa);
	close(fb);
}

/* Answers one connection with a 200 and a JSON body. */
static void *answer_one(void *arg)
{
	int lfd = *(int *)arg, fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				    "Content-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}";
	char buf[4096];

	if (fd < 0)
		return NULL;
	if (read(fd, buf, sizeof(buf)) > 0 && write(fd, reply, sizeof(reply) - 1) < 0)
		perror("write");
	close(fd);
	return NULL;
}

/* the first refuses, the second answers: the request succeeds there, and
 * the second stays current */
static void test_next_answers(void **state)
{
	int fa, fb;
	int pa = bound_port(&fa, 0), pb = bound_port(&fb, 1);
	char list[64], want[64];
	pthread_t t;
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };

	assert_int_equal(pthread_create(&t, NULL, answer_one, &fb), 0);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", pa, pb);
	snprintf(want, sizeof(want), "http://127.0.0.1:%d", pb);
	httpc_init(&c, list);
	assert_int_equal(httpc_request(&c, "GET", "/v1/agent/health", NULL, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_true(json_is_true(json_object_get(r.body, "ok")));
	assert_string_equal(c.base, want);
	httpc_response_release(&r);
	httpc_release(&c);
	pthread_join(t, NULL);
	close(fa);
	close(fb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_all_refused),
		cmocka_unit_test(test_next_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
