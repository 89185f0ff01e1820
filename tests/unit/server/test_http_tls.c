/* The HTTP layer with TLS on (http_server_config.tls): a real server on
 * 127.0.0.1 with the test CA's certificate (tests/unit/agent/fixtures/tls),
 * talked to with httpc as the CLI and the agents use it.  What passes: a
 * caller that trusts the CA; with verify_client, only one that presents a
 * certificate the CA signed.  What does not: an untrusted server
 * certificate, plain HTTP, a caller without a certificate (403
 * tls_client_certificate, before any handler runs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/httpc.h"
#include "common/tls.h"
#include "common/xalloc.h"
#include "server/http.h"

struct fixture {
	struct index_watch watch;
	struct http_router *router;
	struct tls_server tls;
	struct http_server *srv;
	char *ca, *cert, *key;
	int handled;           /* how often a handler ran */
};

static int counted(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct fixture *f = ctx;
	__atomic_add_fetch(&f->handled, 1, __ATOMIC_SEQ_CST);
	http_reply(resp, 200, json_pack("{s:b}", "ok", 1));
	return 0;
}

static char *fixture_file(const char *name)
{
	const char *root = getenv("HERD_SOURCE_ROOT");
	return xasprintf("%s/tests/unit/agent/fixtures/tls/%s", root ? root : ".", name);
}

static int start(void **state, bool verify_client)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	struct http_server_config cfg = { 0 };
	struct herd_err err = { 0, "" };

	f->ca = fixture_file("ca.pem");
	f->cert = fixture_file("agent.pem");
	f->key = fixture_file("agent-key.pem");
	index_watch_init(&f->watch, 3);
	f->router = http_router_new();
	if (http_router_add(f->router, "GET", "/v1/counted", counted, 0, f, &err) ||
	    tls_server_load(&f->tls, f->cert, f->key, f->ca, verify_client, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	cfg.bind_addr = "127.0.0.1";
	cfg.router = f->router;
	cfg.watch = &f->watch;
	cfg.tls = &f->tls;
	if (http_server_start(&cfg, &f->srv, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return start(state, false);
}

static int setup_verify(void **state)
{
	return start(state, true);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	http_server_stop(f->srv);
	http_router_free(f->router);
	index_watch_release(&f->watch);
	tls_server_release(&f->tls);
	free(f->ca);
	free(f->cert);
	free(f->key);
	free(f);
	return 0;
}

/* GET /v1/counted at 127.0.0.1:<port> with tls; the result, err filled. */
static int get(struct fixture *f, const char *scheme, const struct tls_client *tls,
	       struct httpc_response *r, struct herd_err *err)
{
	char addr[64];
	struct httpc c;
	int rc;

	snprintf(addr, sizeof(addr), "%s127.0.0.1:%u", scheme, http_server_port(f->srv));
	httpc_init_tls(&c, addr, tls);
	rc = httpc_request(&c, "GET", "/v1/counted", NULL, r, err);
	httpc_release(&c);
	return rc;
}

static void test_https_with_the_ca(void **state)
{
	struct fixture *f = *state;
	struct tls_client t = { .https = true, .ca_file = f->ca };
	struct httpc_response r;
	struct herd_err err = { 0, "" };

	/* "host:port" takes https from the settings */
	assert_int_equal(get(f, "", &t, &r, &err), 0);
	assert_int_equal(r.status, 200);
	assert_true(json_is_true(json_object_get(r.body, "ok")));
	assert_int_equal(r.index, 3);
	httpc_response_release(&r);
	assert_int_equal(f->handled, 1);
}

static void test_untrusted_and_plain_refused(void **state)
{
	struct fixture *f = *state;
	struct tls_client none = { .https = true };   /* the system's CAs only */
	struct tls_client skip = { .https = true, .skip_verify = true };
	struct httpc_response r;
	struct herd_err err = { 0, "" };

	assert_int_equal(get(f, "", &none, &r, &err), -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "the server's certificate is not trusted"));
	assert_int_equal(r.status, 0);
	httpc_response_release(&r);

	assert_true(get(f, "http://", &none, &r, &err) < 0);
	assert_non_null(strstr(err.msg, "answers only https://"));
	httpc_response_release(&r);
	assert_int_equal(f->handled, 0);

	/* skip_verify: no check at all */
	assert_int_equal(get(f, "", &skip, &r, &err), 0);
	httpc_response_release(&r);
	assert_int_equal(f->handled, 1);
}

static void test_client_certificate_required(void **state)
{
	struct fixture *f = *state;
	struct tls_client anon = { .https = true, .ca_file = f->ca };
	/* the agent's certificate serves as a client's too (clientAuth) */
	struct tls_client cert = { .https = true, .ca_file = f->ca, .cert_file = f->cert,
				   .key_file = f->key };
	struct httpc_response r;
	struct herd_err err = { 0, "" };

	assert_int_equal(get(f, "", &anon, &r, &err), -EACCES);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.error_code, "tls_client_certificate");
	assert_non_null(strstr(err.msg, "no client certificate was presented"));
	httpc_response_release(&r);
	assert_int_equal(f->handled, 0);

	assert_int_equal(get(f, "", &cert, &r, &err), 0);
	assert_int_equal(r.status, 200);
	httpc_response_release(&r);
	assert_int_equal(f->handled, 1);

	/* several requests on one kept-alive connection: checked once, all pass */
	struct httpc c;
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", http_server_port(f->srv));
	httpc_init_tls(&c, addr, &cert);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(httpc_request(&c, "GET", "/v1/counted", NULL, &r, &err), 0);
		httpc_response_release(&r);
	}
	httpc_release(&c);
	assert_int_equal(f->handled, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_https_with_the_ca, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_and_plain_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_certificate_required, setup_verify,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
