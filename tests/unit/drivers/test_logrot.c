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

#include "drivers/logrot.h"

static char dir[] = "/tmp/herd-logrot-XXXXXX";

static int64_t file_size(const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void test_rotation(void **state)
{
	struct logrot lr;
	struct herd_err err = { 0 };
	char buf[250];
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(logrot_open(&lr, dir, "web.stdout", 3, 100, &err), 0);
	/* no file before the first write: a silent stream costs no inode */
	assert_int_equal(file_size("web.stdout.0"), -1);
	assert_int_equal(logrot_write(&lr, buf, 250), 0); /* 0:100 1:100 2:50 */
	assert_int_equal(file_size("web.stdout.0"), 100);
	assert_int_equal(file_size("web.stdout.2"), 50);
	assert_int_equal(logrot_write(&lr, buf, 100), 0); /* 2:100 3:50, 0 pruned */
	assert_int_equal(file_size("web.stdout.0"), -1);
	assert_int_equal(file_size("web.stdout.1"), 100);
	assert_int_equal(file_size("web.stdout.3"), 50);
	logrot_close(&lr);
	/* reopening continues the newest file while it has room */
	assert_int_equal(logrot_open(&lr, dir, "web.stdout", 3, 100, &err), 0);
	assert_int_equal(logrot_write(&lr, buf, 30), 0);
	assert_int_equal(file_size("web.stdout.3"), 80);
	logrot_close(&lr);
	/* ... and starts a new one when it is full */
	assert_int_equal(logrot_open(&lr, dir, "web.stdout", 1, 80, &err), 0);
	/* ... made by the first write, which also prunes (max_files 1) */
	assert_int_equal(file_size("web.stdout.4"), -1);
	assert_int_equal(file_size("web.stdout.3"), 80);
	assert_int_equal(logrot_write(&lr, buf, 10), 0);
	assert_int_equal(file_size("web.stdout.4"), 10);
	assert_int_equal(file_size("web.stdout.3"), -1);
	logrot_close(&lr);
	logrot_close(&lr); /* twice is fine */
}

static void test_bad(void **state)
{
	struct logrot lr = { .fd = -1 };
	struct herd_err err = { 0 };
	assert_int_equal(logrot_open(&lr, "/nonexistent/x", "a", 1, 1, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/x"));
	assert_int_equal(logrot_open(&lr, dir, "a/b", 1, 1, &err), -EINVAL);
	assert_int_equal(logrot_open(&lr, dir, "a", 0, 1, &err), -EINVAL);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
