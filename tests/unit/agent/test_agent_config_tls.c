/* tls { }: the block's keys, and what agent_config_finish makes of the files
 * it names (fixtures/tls/README): loaded and checked with http = true, a
 * clear error naming the file otherwise, nothing read with http = false. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/config-int.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

static char *fixture(const char *name)
{
	const char *root = getenv("HERD_SOURCE_ROOT");
	return xasprintf("%s/tests/unit/agent/fixtures/tls/%s", root ? root : ".", name);
}

/* A configuration of a server with data_dir set and the given tls body
 * (fixture names in it written as @name@ become their paths); finish's
 * result and message. */
static int finish_with(const char *tls_body, struct agent_config *cfg, struct herd_err *err)
{
	struct strbuf text = STRBUF_INIT;
	struct diag_list dl;
	const char *p = tls_body;
	int rc;

	strbuf_adds(&text, "data_dir = \"/tmp/herd-unit-tls\"\nserver { enabled = true }\ntls {\n");
	while (*p) {
		const char *at = strchr(p, '@'), *end = at ? strchr(at + 1, '@') : NULL;
		if (!end) {
			strbuf_adds(&text, p);
			break;
		}
		char *name = xasprintf("%.*s", (int)(end - at - 1), at + 1), *path = fixture(name);
		strbuf_addf(&text, "%.*s%s", (int)(at - p), p, path);
		free(name);
		free(path);
		p = end + 1;
	}
	strbuf_adds(&text, "\n}\n");
	agent_config_init(cfg);
	diag_list_init(&dl);
	rc = agent_config_parse(cfg, text.buf, text.len, &dl);
	assert_int_equal(rc, 0);
	assert_int_equal(dl.errors, 0);
	diag_list_release(&dl);
	strbuf_release(&text);
	return agent_config_finish(cfg, err);
}

static void test_good(void **state)
{
	struct agent_config cfg, copy;
	struct herd_err err = { 0, "" };

	(void)state;
	assert_int_equal(finish_with("http = true\nca_file = \"@ca.pem@\"\n"
				     "cert_file = \"@agent.pem@\"\nkey_file = \"@agent-key.pem@\"\n"
				     "verify_https_client = true\nverify_server_hostname = false\n",
				     &cfg, &err), 0);
	assert_true(cfg.tls.http);
	assert_true(cfg.tls.verify_https_client);
	assert_non_null(strstr(cfg.tls.server.cert_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(cfg.tls.server.key_pem, "PRIVATE KEY"));
	assert_non_null(strstr(cfg.tls.server.ca_pem, "BEGIN CERTIFICATE"));
	assert_true(cfg.tls.server.verify_client);
	/* outgoing connections: https, the CA, the agent's own certificate */
	assert_true(cfg.tls.client.https);
	assert_string_equal(cfg.tls.client.ca_file, cfg.tls.ca_file);
	assert_string_equal(cfg.tls.client.cert_file, cfg.tls.cert_file);
	assert_string_equal(cfg.tls.client.key_file, cfg.tls.key_file);
	assert_true(cfg.tls.client.skip_hostname);
	assert_false(cfg.tls.client.skip_verify);

	agent_config_copy(&copy, &cfg);
	agent_config_release(&cfg);
	assert_non_null(strstr(copy.tls.server.ca_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(copy.tls.ca_file, "fixtures/tls/ca.pem"));
	assert_non_null(strstr(copy.tls.server.cert_pem, "BEGIN CERTIFICATE"));
	assert_true(copy.tls.client.https);
	agent_config_release(&copy);
}

static void test_defaults_and_off(void **state)
{
	struct agent_config cfg;
	struct herd_err err = { 0, "" };

	(void)state;
	agent_config_init(&cfg);
	assert_false(cfg.tls.http);
	assert_true(cfg.tls.verify_server_hostname);
	assert_false(cfg.tls.verify_https_client);
	agent_config_apply_dev(&cfg);
	assert_false(cfg.tls.http);   /* -dev stays plain HTTP */
	agent_config_release(&cfg);

	/* http = false: the files are not even read */
	assert_int_equal(finish_with("http = false\ncert_file = \"/nonexistent/a.pem\"\n",
				     &cfg, &err), 0);
	assert_null(cfg.tls.server.cert_pem);
	assert_false(cfg.tls.client.https);
	agent_config_release(&cfg);
}

static void expect_finish_error(const char *body, int code, const char *want_part)
{
	struct agent_config cfg;
	struct herd_err err = { 0, "" };
	int rc = finish_with(body, &cfg, &err);

	if (rc != code || !strstr(err.msg, want_part))
		fail_msg("finish: %d \"%s\", expected %d with \"%s\"", rc, err.msg, code, want_part);
	assert_null(cfg.tls.server.cert_pem);
	assert_false(cfg.tls.client.https);
	agent_config_release(&cfg);
}

static void test_errors(void **state)
{
	char *ca = fixture("ca.pem"), *readme = fixture("README"), *msg;

	(void)state;
	/* http = true without a certificate */
	expect_finish_error("http = true\n", -EINVAL, "tls: cert_file is not set");
	expect_finish_error("http = true\ncert_file = \"@agent.pem@\"\n", -EINVAL,
			    "tls: key_file is not set");
	/* a file that is not there: named, with the system's reason */
	expect_finish_error("http = true\ncert_file = \"/nonexistent/herd.pem\"\n"
			    "key_file = \"@agent-key.pem@\"\n", -ENOENT,
			    "tls: cert_file /nonexistent/herd.pem: No such file or directory");
	expect_finish_error("http = true\ncert_file = \"@agent.pem@\"\n"
			    "key_file = \"@agent-key.pem@\"\nca_file = \"/nonexistent/ca.pem\"\n",
			    -ENOENT, "tls: ca_file /nonexistent/ca.pem: No such file");
	/* not PEM */
	msg = xasprintf("tls: cert_file %s: no PEM certificate in it", readme);
	expect_finish_error("http = true\ncert_file = \"@README@\"\n"
			    "key_file = \"@agent-key.pem@\"\n", -EINVAL, msg);
	free(msg);
	msg = xasprintf("tls: ca_file %s: no PEM certificate in it", readme);
	expect_finish_error("http = true\ncert_file = \"@agent.pem@\"\n"
			    "key_file = \"@agent-key.pem@\"\nca_file = \"@README@\"\n", -EINVAL, msg);
	free(msg);
	msg = xasprintf("tls: key_file %s: not an unencrypted PEM private key", ca);
	expect_finish_error("http = true\ncert_file = \"@agent.pem@\"\nkey_file = \"@ca.pem@\"\n",
			    -EINVAL, msg);
	free(msg);
	/* a key of another certificate */
	expect_finish_error("http = true\ncert_file = \"@agent.pem@\"\n"
			    "key_file = \"@other-key.pem@\"\n", -EINVAL, "does not go with cert_file");
	/* client certificates need the CA that signs them */
	expect_finish_error("http = true\ncert_file = \"@agent.pem@\"\n"
			    "key_file = \"@agent-key.pem@\"\nverify_https_client = true\n", -EINVAL,
			    "verify_https_client needs ca_file");
	/* a directory is not a PEM file */
	expect_finish_error("http = true\ncert_file = \"/tmp\"\nkey_file = \"@agent-key.pem@\"\n",
			    -EINVAL, "tls: cert_file /tmp: not a regular file");
	free(ca);
	free(readme);
}

static void test_parse_errors(void **state)
{
	struct agent_config cfg;
	struct diag_list dl;
	const char *bad = "tls {\n  http = \"yes\"\n  ca = \"x\"\n  rpc = true\n}\n";

	(void)state;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(agent_config_parse(&cfg, bad, strlen(bad), &dl), -EINVAL);
	assert_int_equal(dl.errors, 2);
	assert_int_equal(dl.n, 3);   /* and the warning about rpc */
	assert_false(cfg.tls.http);
	diag_list_release(&dl);

	diag_list_init(&dl);
	bad = "tls {\n  http = true\n}\ntls {\n  http = false\n}\n";
	assert_int_equal(agent_config_parse(&cfg, bad, strlen(bad), &dl), -EINVAL);
	assert_non_null(strstr(dl.v[0].msg, "block 'tls' given twice"));
	diag_list_release(&dl);

	diag_list_init(&dl);
	bad = "tls {\n  tls_min_version = \"tls12\"\n  verify_https_client = true\n}\n";
	assert_int_equal(agent_config_parse(&cfg, bad, strlen(bad), &dl), 0);
	assert_int_equal(dl.errors, 0);
	assert_int_equal(dl.n, 1);
	assert_true(cfg.tls.verify_https_client);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_defaults_and_off),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_parse_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
