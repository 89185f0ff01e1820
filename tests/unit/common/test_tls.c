/* tls: the environment's TLS settings (HERD_CACERT, ...), the scheme that
 * httpc gives an address without one, and the client-certificate check's
 * refusals that need no handshake. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/httpc.h"
#include "common/tls.h"

static const char *const vars[] = { "HERD_ADDR", "HERD_CACERT", "HERD_CLIENT_CERT",
				    "HERD_CLIENT_KEY", "HERD_SKIP_VERIFY", NULL };

static int clear_env(void **state)
{
	(void)state;
	for (const char *const *v = vars; *v; v++)
		unsetenv(*v);
	return 0;
}

static void test_env_unset(void **state)
{
	struct tls_client t;
	struct herd_err err = { 0, "" };

	(void)state;
	assert_int_equal(tls_client_from_env(&t, &err), 0);
	assert_false(t.https);
	assert_null(t.ca_file);
	assert_null(t.cert_file);
	assert_null(t.key_file);
	assert_false(t.skip_verify);
	assert_false(t.skip_hostname);
	tls_client_release(&t);
}

static void test_env_all(void **state)
{
	struct tls_client t, copy;
	struct herd_err err = { 0, "" };

	(void)state;
	setenv("HERD_ADDR", "HTTPS://10.0.0.1:4646", 1);
	setenv("HERD_CACERT", "/etc/herd/ca.pem", 1);
	setenv("HERD_CLIENT_CERT", "/etc/herd/cli.pem", 1);
	setenv("HERD_CLIENT_KEY", "/etc/herd/cli-key.pem", 1);
	setenv("HERD_SKIP_VERIFY", "TRUE", 1);
	assert_int_equal(tls_client_from_env(&t, &err), 0);
	assert_true(t.https);
	assert_string_equal(t.ca_file, "/etc/herd/ca.pem");
	assert_string_equal(t.cert_file, "/etc/herd/cli.pem");
	assert_string_equal(t.key_file, "/etc/herd/cli-key.pem");
	assert_true(t.skip_verify);
	tls_client_copy(&copy, &t);
	tls_client_release(&t);
	assert_string_equal(copy.key_file, "/etc/herd/cli-key.pem");
	assert_true(copy.https);
	tls_client_release(&copy);

	/* plain http, empty variables count as unset, 0 is false */
	setenv("HERD_ADDR", "http://10.0.0.1:4646", 1);
	setenv("HERD_CACERT", "", 1);
	setenv("HERD_SKIP_VERIFY", "0", 1);
	assert_int_equal(tls_client_from_env(&t, &err), 0);
	assert_false(t.https);
	assert_null(t.ca_file);
	assert_false(t.skip_verify);
	tls_client_release(&t);
}

static void test_env_errors(void **state)
{
	struct tls_client t;
	struct herd_err err = { 0, "" };

	(void)state;
	setenv("HERD_SKIP_VERIFY", "yes", 1);
	assert_int_equal(tls_client_from_env(&t, &err), -EINVAL);
	assert_string_equal(err.msg, "HERD_SKIP_VERIFY: expected 1, true, 0 or false, not \"yes\"");
	assert_null(t.ca_file);
	unsetenv("HERD_SKIP_VERIFY");

	setenv("HERD_CLIENT_CERT", "/c.pem", 1);
	assert_int_equal(tls_client_from_env(&t, &err), -EINVAL);
	assert_string_equal(err.msg, "HERD_CLIENT_CERT is set but HERD_CLIENT_KEY is not: a "
			    "client certificate needs its key");
	unsetenv("HERD_CLIENT_CERT");
	setenv("HERD_CLIENT_KEY", "/k.pem", 1);
	assert_int_equal(tls_client_from_env(&t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "HERD_CLIENT_KEY is set but HERD_CLIENT_CERT is not"));
}

/* A node's client API has an address without a scheme: it takes
 * HERD_ADDR's; an agent's connections take its own tls block's. */
static void test_httpc_scheme(void **state)
{
	struct httpc c;
	struct httpc_response r;
	struct herd_err err = { 0, "" };
	struct tls_client agent = { 0 };

	(void)state;
	httpc_init(&c, "10.0.0.7:4647");
	assert_string_equal(c.base, "http://10.0.0.7:4647");
	httpc_release(&c);

	setenv("HERD_ADDR", "https://10.0.0.1:4646", 1);
	httpc_init(&c, "10.0.0.7:4647");
	assert_string_equal(c.base, "https://10.0.0.7:4647");
	httpc_release(&c);
	httpc_init(&c, NULL);
	assert_string_equal(c.base, "https://10.0.0.1:4646");
	httpc_release(&c);
	httpc_init(&c, "http://10.0.0.7:4647");   /* a scheme given stays */
	assert_string_equal(c.base, "http://10.0.0.7:4647");
	httpc_release(&c);

	/* the agent's own settings, not the environment's */
	httpc_init_tls(&c, "10.0.0.2:4646", &agent);
	assert_string_equal(c.base, "http://10.0.0.2:4646");
	httpc_release(&c);
	agent.https = true;
	unsetenv("HERD_ADDR");
	httpc_init_tls(&c, "10.0.0.2:4646", &agent);
	assert_string_equal(c.base, "https://10.0.0.2:4646");
	httpc_release(&c);

	/* a bad environment fails every request with its reason, before any
	 * connection is tried */
	setenv("HERD_SKIP_VERIFY", "maybe", 1);
	httpc_init(&c, "127.0.0.1:1");
	assert_int_equal(httpc_request(&c, "GET", "/v1/jobs", NULL, &r, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "HERD_SKIP_VERIFY"));
	assert_int_equal(r.status, 0);
	httpc_response_release(&r);
	httpc_release(&c);
}

static void test_verify_peer_without_session(void **state)
{
	struct herd_err err = { 0, "" };
	struct tls_peer p = { 0 };

	(void)state;
	assert_int_equal(tls_verify_peer(NULL, NULL, &err), -EACCES);
	assert_string_equal(err.msg, "not a TLS connection");
	/* the verdict is kept: the second call gives the same refusal */
	assert_int_equal(tls_peer_check(&p, NULL, NULL, &err), -EACCES);
	assert_true(p.checked);
	err.msg[0] = '\0';
	assert_int_equal(tls_peer_check(&p, NULL, NULL, &err), -EACCES);
	assert_string_equal(err.msg, "not a TLS connection");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_env_unset, clear_env),
		cmocka_unit_test_setup(test_env_all, clear_env),
		cmocka_unit_test_setup(test_env_errors, clear_env),
		cmocka_unit_test_setup(test_httpc_scheme, clear_env),
		cmocka_unit_test_setup(test_verify_peer_without_session, clear_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
