/* client { host_volume "<name>" { path read_only } }: parsing, every error,
 * the check of the paths at finish, copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/config-int.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

static int parse(struct agent_config *cfg, const char *text, struct diag_list *dl)
{
	return agent_config_parse(cfg, text, strlen(text), dl);
}

/* The diagnostics as "line:col msg\n" lines. */
static char *diags(const struct diag_list *dl)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < dl->n; i++)
		strbuf_addf(&sb, "%d:%d %s\n", dl->v[i].line, dl->v[i].col, dl->v[i].msg);
	return strbuf_detach(&sb, NULL);
}

static void test_good_volumes(void **state)
{
	struct agent_config cfg, copy;
	struct diag_list dl;

	(void)state;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "client {\n"
				     "  host_volume \"datasets\" {\n"
				     "    path = \"/data/sets\"\n"
				     "  }\n"
				     "  host_volume \"ckpt\" {\n"
				     "    path      = \"/mnt/shared/ckpt\"\n"
				     "    read_only = true\n"
				     "  }\n"
				     "}\n", &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(cfg.client.nr_host_volumes, 2);
	assert_string_equal(cfg.client.host_volumes[0].name, "datasets");
	assert_string_equal(cfg.client.host_volumes[0].path, "/data/sets");
	assert_false(cfg.client.host_volumes[0].read_only);
	assert_true(agent_config_host_volume(&cfg, "ckpt")->read_only);
	assert_null(agent_config_host_volume(&cfg, "nope"));

	/* a later file's block of the same name replaces it */
	assert_int_equal(parse(&cfg, "client {\n  host_volume \"datasets\" {\n"
				     "    path = \"/nvme/sets\"\n    read_only = true\n  }\n}\n",
			       &dl), 0);
	assert_int_equal(cfg.client.nr_host_volumes, 2);
	assert_string_equal(cfg.client.host_volumes[0].path, "/nvme/sets");
	assert_true(cfg.client.host_volumes[0].read_only);

	agent_config_copy(&copy, &cfg);
	agent_config_release(&cfg);
	assert_int_equal(copy.client.nr_host_volumes, 2);
	assert_string_equal(copy.client.host_volumes[1].path, "/mnt/shared/ckpt");
	agent_config_release(&copy);
	diag_list_release(&dl);
}

static void expect_errors(const char *text, const char *want)
{
	struct agent_config cfg;
	struct diag_list dl;
	char *got;

	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, text, &dl), -EINVAL);
	got = diags(&dl);
	assert_string_equal(got, want);
	/* a file with errors changes nothing */
	assert_int_equal(cfg.client.nr_host_volumes, 0);
	free(got);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_bad_volumes(void **state)
{
	(void)state;
	expect_errors("client {\n  host_volume \"d\" {\n    path = \"data\"\n  }\n}\n",
		      "3:12 host_volume \"d\": path must be absolute, without \"..\", not \"data\"\n");
	expect_errors("client {\n  host_volume \"d\" {\n    path = \"/a/../etc\"\n  }\n}\n",
		      "3:12 host_volume \"d\": path must be absolute, without \"..\", not "
		      "\"/a/../etc\"\n");
	expect_errors("client {\n  host_volume \"d\" {\n    read_only = true\n  }\n}\n",
		      "2:3 host_volume \"d\": path is required\n");
	expect_errors("client {\n  host_volume {\n    path = \"/x\"\n  }\n}\n",
		      "2:3 block 'host_volume' takes one label, its name (1 to 128 letters, digits, "
		      "'-', '_' or '.'): host_volume \"datasets\" { path = \"/data/sets\" }\n");
	expect_errors("client {\n  host_volume \"a b\" {\n    path = \"/x\"\n  }\n}\n",
		      "2:3 block 'host_volume' takes one label, its name (1 to 128 letters, digits, "
		      "'-', '_' or '.'): host_volume \"datasets\" { path = \"/data/sets\" }\n");
	expect_errors("client {\n  host_volume \"d\" {\n    path = \"/x\"\n    read_only = \"yes\"\n"
		      "  }\n}\n",
		      "4:17 read_only: expected true or false, not a string\n");
	expect_errors("client {\n  host_volume \"d\" {\n    path = \"/x\"\n    mode = \"rw\"\n"
		      "  }\n}\n",
		      "4:5 unknown key 'mode' in client.host_volume (expected one of: path, "
		      "read_only)\n");
}

/* finish: every path is a directory that exists now, else an error that
 * names the volume and the path. */
static void test_paths_checked_at_finish(void **state)
{
	char dir[] = "/tmp/herd-hv-XXXXXX";
	struct agent_config cfg;
	struct diag_list dl;
	struct herd_err err = { 0 };
	char *text, *file;

	(void)state;
	assert_non_null(mkdtemp(dir));
	file = xasprintf("%s/file", dir);
	FILE *f = fopen(file, "we");
	assert_non_null(f);
	fclose(f);
	for (int k = 0; k < 3; k++) {
		const char *path = k == 0 ? dir : k == 1 ? "/nonexistent/herd-hv" : file;
		agent_config_init(&cfg);
		agent_config_apply_dev(&cfg);
		diag_list_init(&dl);
		text = xasprintf("data_dir = \"%s\"\nclient {\n  host_volume \"sets\" {\n"
				 "    path = \"%s\"\n  }\n}\n", dir, path);
		assert_int_equal(parse(&cfg, text, &dl), 0);
		int rc = agent_config_finish(&cfg, &err);
		if (k == 0) {
			assert_int_equal(rc, 0);
		} else if (k == 1) {
			assert_int_equal(rc, -ENOENT);
			assert_string_equal(err.msg, "client.host_volume \"sets\": path "
				"/nonexistent/herd-hv: No such file or directory");
		} else {
			char *want = xasprintf("client.host_volume \"sets\": path %s is not a "
					       "directory", file);
			assert_int_equal(rc, -ENOTDIR);
			assert_string_equal(err.msg, want);
			free(want);
		}
		free(text);
		diag_list_release(&dl);
		agent_config_release(&cfg);
	}
	unlink(file);
	rmdir(dir);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_volumes),
		cmocka_unit_test(test_bad_volumes),
		cmocka_unit_test(test_paths_checked_at_finish),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
