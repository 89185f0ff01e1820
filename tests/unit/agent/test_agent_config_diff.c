/* What a reload (SIGHUP) finds between two configurations
 * (agent_config_diff): what it applies (log_level, the listeners'
 * certificate and key) and which keys it names as needing a restart; and
 * the swap of a listener's credentials (tls_creds_swap): new keys for new
 * connections, the keys a connection took stay valid, and a certificate
 * that fails to load changes nothing. */
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
#include "common/strbuf.h"
#include "common/tls.h"
#include "common/xalloc.h"

static char *fixture(const char *name)
{
	const char *root = getenv("HERD_SOURCE_ROOT");
	return xasprintf("%s/tests/unit/agent/fixtures/tls/%s", root ? root : ".", name);
}

/* A finished configuration of a client and server from text, where @name@
 * is the path of a fixture; what follows "client: " (to the end) goes
 * into the client block (one block of a kind per file). */
static void build(const char *text, struct agent_config *cfg)
{
	const char *cl = strstr(text, "client: ");
	char *client_line = NULL, *rest = NULL;
	struct strbuf sb = STRBUF_INIT;
	struct diag_list dl;
	struct herd_err err = { 0, "" };
	const char *p = text;

	if (cl) {
		client_line = xstrdup(cl + 8);
		rest = xasprintf("%.*s", (int)(cl - text), text);
		p = rest;
	}
	strbuf_addf(&sb, "server {\n  enabled = true\n}\nclient {\n  enabled = true\n%s\n}\n",
		    client_line ? client_line : "");
	if (!strstr(text, "data_dir"))
		strbuf_adds(&sb, "data_dir = \"/tmp/herd-unit-diff\"\n");
	while (*p) {
		const char *at = strchr(p, '@'), *end = at ? strchr(at + 1, '@') : NULL;
		if (!end) {
			strbuf_adds(&sb, p);
			break;
		}
		char *name = xasprintf("%.*s", (int)(end - at - 1), at + 1), *path = fixture(name);
		strbuf_addf(&sb, "%.*s%s", (int)(at - p), p, path);
		free(name);
		free(path);
		p = end + 1;
	}
	free(client_line);
	free(rest);
	agent_config_init(cfg);
	diag_list_init(&dl);
	assert_int_equal(agent_config_parse(cfg, sb.buf, sb.len, &dl), 0);
	diag_list_release(&dl);
	strbuf_release(&sb);
	if (agent_config_finish(cfg, &err) < 0)
		fail_msg("finish: %s", err.msg);
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[4096];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static void diff(const char *a, const char *b, struct agent_config_diff *d)
{
	struct agent_config o, n;

	build(a, &o);
	build(b, &n);
	agent_config_diff(&o, &n, d);
	agent_config_release(&o);
	agent_config_release(&n);
}

static void test_same(void **state)
{
	struct agent_config_diff d;

	(void)state;
	diff("log_level = \"warn\"\nclient: meta {\n rack = \"r1\"\n }\n",
	     "log_level = \"warn\"\nclient: meta {\n rack = \"r1\"\n }\n", &d);
	assert_false(d.log_level);
	assert_false(d.tls_keys);
	assert_null(d.restart);
	agent_config_diff_release(&d);
}

static void test_log_level(void **state)
{
	struct agent_config_diff d;

	(void)state;
	diff("log_level = \"info\"\n", "log_level = \"debug\"\n", &d);
	assert_true(d.log_level);
	assert_false(d.tls_keys);
	assert_null(d.restart);
	agent_config_diff_release(&d);
}

/* Each change that needs a restart is named, in the file's words; the
 * applied log_level is not among them. */
static void test_restart_fields(void **state)
{
	struct agent_config_diff d;

	(void)state;
	diff("bind_addr = \"127.0.0.1\"\nports { http = 4646 }\n",
	     "bind_addr = \"10.0.0.1\"\nports { http = 4747 }\nlog_level = \"error\"\n"
	     "client: meta {\n rack = \"r2\"\n }\n", &d);
	assert_true(d.log_level);
	assert_non_null(d.restart);
	assert_non_null(strstr(d.restart, "bind_addr"));
	assert_non_null(strstr(d.restart, "ports.http"));
	assert_non_null(strstr(d.restart, "client.meta"));
	assert_null(strstr(d.restart, "log_level"));
	assert_null(strstr(d.restart, "data_dir"));
	agent_config_diff_release(&d);

	diff("datacenter = \"dc1\"\n",
	     "data_dir = \"/tmp/herd-unit-diff2\"\ndatacenter = \"dc2\"\nacl {\n enabled = true\n}\n"
	     "client: servers = [\"10.0.0.9:4646\"]\n", &d);
	assert_false(d.log_level);
	assert_non_null(d.restart);
	assert_non_null(strstr(d.restart, "data_dir"));
	assert_non_null(strstr(d.restart, "datacenter"));
	assert_non_null(strstr(d.restart, "acl.enabled"));
	assert_non_null(strstr(d.restart, "client.servers"));
	agent_config_diff_release(&d);

	/* turning https on or off is a restart; nothing is loaded or swapped */
	diff("", "tls {\n http = true\n cert_file = \"@agent.pem@\"\n"
		 " key_file = \"@agent-key.pem@\"\n}\n", &d);
	assert_false(d.tls_keys);
	assert_non_null(d.restart);
	assert_non_null(strstr(d.restart, "tls.http"));
	agent_config_diff_release(&d);
}

#define TLS_A "tls {\n http = true\n ca_file = \"@ca.pem@\"\n cert_file = \"@agent.pem@\"\n" \
	      " key_file = \"@agent-key.pem@\"\n}\n"
#define TLS_B "tls {\n http = true\n ca_file = \"@ca.pem@\"\n cert_file = \"@b.pem@\"\n" \
	      " key_file = \"@b-key.pem@\"\n}\n"

/* Another certificate and key are applied to the listeners; as other paths
 * they also need a restart for the client's own connections to servers. */
static void test_tls_keys(void **state)
{
	struct agent_config_diff d;

	(void)state;
	diff(TLS_A, TLS_A, &d);
	assert_false(d.tls_keys);
	assert_null(d.restart);
	agent_config_diff_release(&d);

	diff(TLS_A, TLS_B, &d);
	assert_true(d.tls_keys);
	assert_non_null(d.restart);
	assert_non_null(strstr(d.restart, "tls.ca_file/cert_file/key_file"));
	assert_null(strstr(d.restart, "tls.http"));
	agent_config_diff_release(&d);

	/* verify_https_client: a restart, the keys still swap */
	diff(TLS_A, "tls {\n http = true\n ca_file = \"@ca.pem@\"\n cert_file = \"@b.pem@\"\n"
		    " key_file = \"@b-key.pem@\"\n verify_https_client = true\n}\n", &d);
	assert_true(d.tls_keys);
	assert_non_null(strstr(d.restart, "tls.verify_https_client"));
	agent_config_diff_release(&d);
}

/* With verify_https_client, new contents of ca_file (same path) are
 * applied with the keys: callers are checked against the new CA. */
static void test_tls_ca_contents(void **state)
{
	char dir[] = "/tmp/herd-unit-diff-XXXXXX", *live, *text;
	char *ca = fixture("ca.pem"), *b = fixture("b.pem");
	struct agent_config_diff d;

	(void)state;
	assert_non_null(mkdtemp(dir));
	live = xasprintf("%s/ca.pem", dir);
	text = xasprintf("tls {\n http = true\n ca_file = \"%s\"\n cert_file = \"@agent.pem@\"\n"
			 " key_file = \"@agent-key.pem@\"\n verify_https_client = true\n}\n", live);
	copy_file(ca, live);
	struct agent_config o, n;
	build(text, &o);
	copy_file(b, live);                      /* another CA, same path */
	build(text, &n);
	agent_config_diff(&o, &n, &d);
	assert_true(d.tls_keys);
	assert_null(d.restart);
	agent_config_diff_release(&d);
	/* without verify_https_client the listeners have no use for it (and
	 * the client's connections read the file themselves) */
	agent_config_release(&o);
	agent_config_release(&n);
	free(text);
	text = xasprintf("tls {\n http = true\n ca_file = \"%s\"\n cert_file = \"@agent.pem@\"\n"
			 " key_file = \"@agent-key.pem@\"\n}\n", live);
	copy_file(ca, live);
	build(text, &o);
	copy_file(b, live);
	build(text, &n);
	agent_config_diff(&o, &n, &d);
	assert_false(d.tls_keys);
	assert_null(d.restart);
	agent_config_diff_release(&d);
	agent_config_release(&o);
	agent_config_release(&n);
	unlink(live);
	rmdir(dir);
	free(live);
	free(text);
	free(ca);
	free(b);
}

/* The swap: a listener started from a's creds serves b's keys to new
 * connections; keys taken before stay valid; a broken file loads nothing
 * and leaves the creds as they were. */
static void test_creds_swap(void **state)
{
	char *ca = fixture("ca.pem"), *a_cert = fixture("agent.pem"),
	     *a_key = fixture("agent-key.pem"), *b_cert = fixture("b.pem"),
	     *b_key = fixture("b-key.pem"), *other_key = fixture("other-key.pem");
	struct tls_server a, b, bad, listener;
	struct herd_err err = { 0, "" };
	struct tls_keys *old, *now, *of_b;
	void *pcert = NULL, *key = NULL;
	unsigned n = 0;

	(void)state;
	assert_int_equal(tls_server_load(&a, a_cert, a_key, ca, false, &err), 0);
	assert_non_null(a.creds);
	old = tls_creds_get(a.creds);
	assert_false(tls_keys_verify_client(old));   /* no verify_client: no CA kept */
	tls_keys_unref(old);
	tls_server_copy(&listener, &a);          /* what a listener was started from */
	old = tls_creds_get(listener.creds);      /* a connection open before the reload */
	assert_non_null(old);

	/* a certificate whose key does not match: an error naming the file,
	 * nothing loaded, nothing swapped */
	assert_int_equal(tls_server_load(&bad, b_cert, other_key, ca, false, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not go with"));
	assert_null(bad.creds);
	now = tls_creds_get(listener.creds);
	assert_ptr_equal(now, old);
	tls_keys_unref(now);
	/* a file that is not there */
	assert_true(tls_server_load(&bad, "/nonexistent/herd.pem", b_key, ca, false, &err) < 0);
	assert_null(bad.creds);

	assert_int_equal(tls_server_load(&b, b_cert, b_key, ca, true, &err), 0);
	of_b = tls_creds_get(b.creds);
	assert_true(tls_keys_verify_client(of_b));   /* the CA goes with the keys */
	tls_creds_swap(a.creds, b.creds);
	/* every copy of a (the listener's) now hands out b's keys */
	now = tls_creds_get(listener.creds);
	assert_ptr_equal(now, of_b);
	assert_ptr_not_equal(now, old);
	tls_keys_unref(now);
	tls_keys_unref(of_b);
	/* b's holder goes (a reload frees its new configuration); the swapped
	 * keys live on in a's */
	tls_server_release(&b);
	now = tls_creds_get(a.creds);
	tls_keys_get(now, &pcert, &n, &key);
	assert_non_null(pcert);
	assert_int_equal(n, 1);
	assert_non_null(key);
	tls_keys_unref(now);
	/* the connection from before still holds valid keys (ASan checks) */
	pcert = NULL;
	tls_keys_get(old, &pcert, &n, &key);
	assert_non_null(pcert);
	assert_int_equal(n, 1);
	tls_keys_unref(old);

	tls_server_release(&listener);
	tls_server_release(&a);
	free(ca);
	free(a_cert);
	free(a_key);
	free(b_cert);
	free(b_key);
	free(other_key);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_log_level),
		cmocka_unit_test(test_restart_fields),
		cmocka_unit_test(test_tls_keys),
		cmocka_unit_test(test_tls_ca_contents),
		cmocka_unit_test(test_creds_swap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
