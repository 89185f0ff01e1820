/* alloc_fs: a request's path never leaves the allocation's dir.  Textual
 * checks (".." refused, "/" the root, secrets/ refused), opens beneath the
 * root (a symlink out refused, one that stays inside followed; the
 * O_NOFOLLOW walk refuses every symlink), the check of what was opened (a
 * symlink inside into secrets/), kinds of file (a FIFO refused without
 * blocking), listings, modes and content types; every fd close-on-exec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/alloc_fs.h"

static char root[256];
static int rootfd = -1;

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void dir(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void link_to(const char *target, const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* The allocation's dir as the client makes it, plus what a task may plant. */
static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_alloc_fs.XXXXXX");
	assert_non_null(mkdtemp(root));
	dir("alloc");
	dir("alloc/data");
	dir("alloc/secrets");   /* alloc/ is shared: an ordinary name there */
	dir("t");
	dir("t/local");
	dir("t/secrets");
	put("alloc/data/f", "data");
	put("alloc/secrets/plain", "plain");
	put("t/local/hello", "hello");
	put("t/secrets/token", "s3cret");
	link_to("/etc/passwd", "t/local/out");
	link_to("../../..", "t/local/up");
	link_to("../local/hello", "t/local/in");
	link_to("../../alloc", "t/local/alloc");
	link_to("../secrets/token", "t/local/sec");
	link_to("../secrets", "t/local/secdir");
	link_to("/proc/self/root/etc/passwd", "t/local/magic");
	link_to("loop", "t/local/loop");
	char fifo[512];
	snprintf(fifo, sizeof(fifo), "%s/t/local/fifo", root);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];
	(void)state;
	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int clean(const char *in, char *out)
{
	struct herd_err err = { 0, "" };
	return alloc_fs_clean_path(in, out, ALLOC_FS_PATH_MAX + 1, &err);
}

static void test_clean_path(void **state)
{
	char out[ALLOC_FS_PATH_MAX + 1], *big;
	(void)state;

	assert_int_equal(clean("/", out), 0);
	assert_string_equal(out, "");
	assert_int_equal(clean("", out), 0);
	assert_string_equal(out, "");
	assert_int_equal(clean(NULL, out), 0);
	assert_string_equal(out, "");
	assert_int_equal(clean("//a/./b//c/", out), 0);
	assert_string_equal(out, "a/b/c");
	assert_int_equal(clean("/alloc/data", out), 0);   /* absolute means the alloc's root */
	assert_string_equal(out, "alloc/data");
	/* names that only look like ".." are names */
	assert_int_equal(clean("a/.../..b/b..", out), 0);
	assert_string_equal(out, "a/.../..b/b..");
	/* ".." anywhere: refused, even when it would stay inside */
	assert_int_equal(clean("..", out), -EINVAL);
	assert_int_equal(clean("../etc/passwd", out), -EINVAL);
	assert_int_equal(clean("t/../alloc", out), -EINVAL);
	assert_int_equal(clean("t/local/..", out), -EINVAL);
	assert_int_equal(clean("/..//", out), -EINVAL);
	/* too long */
	big = malloc(ALLOC_FS_PATH_MAX + 2);
	memset(big, 'a', ALLOC_FS_PATH_MAX + 1);
	big[ALLOC_FS_PATH_MAX + 1] = '\0';
	assert_int_equal(clean(big, out), -EINVAL);
	big[ALLOC_FS_PATH_MAX] = '\0';
	assert_int_equal(clean(big, out), 0);
	free(big);
	/* a task's secrets: refused; alloc/secrets and lookalikes are not */
	assert_int_equal(clean("t/secrets", out), -EPERM);
	assert_int_equal(clean("/t//secrets/token", out), -EPERM);
	assert_int_equal(clean("t/./secrets/", out), -EPERM);
	assert_int_equal(clean("alloc/secrets/x", out), 0);
	assert_int_equal(clean("t/secretsx", out), 0);
	assert_int_equal(clean("secrets", out), 0);
	assert_int_equal(clean("t/local/secrets", out), 0);
	assert_true(alloc_fs_is_secret("train/secrets"));
	assert_false(alloc_fs_is_secret("alloc/secrets"));
}

static bool cloexec(int fd)
{
	return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
}

static ino_t ino_at(const char *rel)
{
	struct stat st;
	assert_int_equal(fstatat(rootfd, rel, &st, 0), 0);
	return st.st_ino;
}

static int open_rel(const char *rel, bool walk)
{
	struct herd_err err = { 0, "" };
	int fd = walk ? alloc_fs_open_walk(rootfd, rel, O_PATH, &err)
		      : alloc_fs_open(rootfd, rel, O_PATH, &err);
	if (fd >= 0) {
		assert_true(cloexec(fd));
		assert_int_equal(err.code, 0);
	} else {
		assert_true(err.msg[0]);   /* a refusal says why */
	}
	return fd;
}

static void expect_ino(const char *rel, bool walk, const char *same_as)
{
	struct stat st;
	int fd = open_rel(rel, walk);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, ino_at(same_as));
	close(fd);
}

static void test_open_beneath(void **state)
{
	(void)state;
	expect_ino("", false, ".");
	expect_ino("t/local/hello", false, "t/local/hello");
	/* out of the allocation's dir: refused */
	assert_int_equal(open_rel("t/local/out", false), -EXDEV);
	assert_int_equal(open_rel("t/local/up", false), -EXDEV);
	assert_int_equal(open_rel("t/local/up/etc/passwd", false), -EXDEV);
	assert_int_equal(open_rel("t/local/magic", false), -EXDEV);
	assert_true(open_rel("t/local/loop", false) < 0);
	assert_int_equal(open_rel("t/local/nope", false), -ENOENT);
	/* symlinks that stay inside are followed */
	expect_ino("t/local/in", false, "t/local/hello");
	expect_ino("t/local/alloc/data/f", false, "alloc/data/f");
}

static void test_open_walk(void **state)
{
	(void)state;
	expect_ino("", true, ".");
	expect_ino("t/local/hello", true, "t/local/hello");
	expect_ino("alloc/data", true, "alloc/data");
	/* every symlink refused, inside or out, last component or not */
	assert_int_equal(open_rel("t/local/out", true), -ELOOP);
	assert_int_equal(open_rel("t/local/in", true), -ELOOP);
	assert_int_equal(open_rel("t/local/up/etc/passwd", true), -ELOOP);
	assert_int_equal(open_rel("t/local/alloc/data/f", true), -ELOOP);
	assert_int_equal(open_rel("t/local/nope", true), -ENOENT);
	/* read flags too */
	struct herd_err err = { 0, "" };
	assert_int_equal(alloc_fs_open_walk(rootfd, "t/local/out", O_RDONLY, &err), -ELOOP);
	int fd = alloc_fs_open_walk(rootfd, "t/local/hello", O_RDONLY, &err);
	assert_true(fd >= 0 && cloexec(fd));
	char buf[8] = { 0 };
	assert_int_equal(read(fd, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "hello");
	close(fd);
}

static void test_opened_check(void **state)
{
	struct herd_err err = { 0, "" };
	struct stat st;
	int fd;
	(void)state;

	/* into secrets through a symlink that stays inside: opened, then refused */
	fd = open_rel("t/local/sec", false);
	assert_true(fd >= 0);
	assert_int_equal(alloc_fs_check_opened(rootfd, fd, &err), -EPERM);
	close(fd);
	assert_int_equal(alloc_fs_open_path(rootfd, "t/local/sec", &st, &err), -EPERM);
	assert_int_equal(alloc_fs_open_path(rootfd, "t/local/secdir", &st, &err), -EPERM);
	assert_int_equal(alloc_fs_open_read(rootfd, "t/local/sec", false, &st, &err), -EPERM);
	/* elsewhere: fine */
	fd = alloc_fs_open_path(rootfd, "alloc/secrets/plain", &st, &err);
	assert_true(fd >= 0 && S_ISREG(st.st_mode) && cloexec(fd));
	close(fd);
	fd = alloc_fs_open_path(rootfd, "", &st, &err);
	assert_true(fd >= 0 && S_ISDIR(st.st_mode));
	close(fd);
	/* an fd outside the root (opened any other way) is caught */
	fd = open("/etc", O_PATH | O_CLOEXEC);
	assert_int_equal(alloc_fs_check_opened(rootfd, fd, &err), -EXDEV);
	close(fd);
}

static void test_open_read_kinds(void **state)
{
	struct herd_err err = { 0, "" };
	struct stat st;
	int fd;
	(void)state;

	/* a FIFO: refused, and the call returns (no open for reading blocks) */
	assert_int_equal(alloc_fs_open_read(rootfd, "t/local/fifo", false, &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "regular file"));
	assert_int_equal(alloc_fs_open_read(rootfd, "t/local", false, &st, &err), -EISDIR);
	assert_int_equal(alloc_fs_open_read(rootfd, "t/local/hello", true, &st, &err), -ENOTDIR);
	assert_int_equal(alloc_fs_open_read(rootfd, "t/local/out", false, &st, &err), -EXDEV);
	fd = alloc_fs_open_read(rootfd, "t/local/in", false, &st, &err);
	assert_true(fd >= 0 && cloexec(fd));
	assert_int_equal(st.st_size, 5);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	fd = alloc_fs_open_read(rootfd, "t/local", true, &st, &err);
	assert_true(fd >= 0 && cloexec(fd));
	close(fd);
}

static void test_list(void **state)
{
	struct herd_err err = { 0, "" };
	struct stat st;
	json_t *list, *e;
	bool truncated = true;
	const char *prev = "";
	size_t i;
	int fd;
	(void)state;

	fd = alloc_fs_open_read(rootfd, "t/local", true, &st, &err);
	assert_true(fd >= 0);
	assert_int_equal(alloc_fs_list(fd, &list, &truncated, &err), 0);
	assert_false(truncated);
	assert_int_equal(json_array_size(list), 10);
	json_array_foreach(list, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		assert_true(strcmp(prev, name) < 0);   /* sorted */
		prev = name;
		if (!strcmp(name, "out")) {
			/* the link itself, not /etc/passwd */
			assert_string_equal(json_string_value(json_object_get(e, "file_mode")),
					    "lrwxrwxrwx");
			assert_int_equal(json_integer_value(json_object_get(e, "size")),
					 strlen("/etc/passwd"));
		}
		if (!strcmp(name, "fifo"))
			assert_int_equal(json_string_value(json_object_get(e, "file_mode"))[0], 'p');
	}
	json_decref(list);
}

static void expect_mode(mode_t m, const char *want)
{
	struct stat st = { .st_mode = m, .st_size = 3 };
	json_t *e = alloc_fs_entry_json("x", &st);
	assert_string_equal(json_string_value(json_object_get(e, "file_mode")), want);
	assert_int_equal(json_is_true(json_object_get(e, "is_dir")), S_ISDIR(m));
	json_decref(e);
}

static void test_entry_and_content_type(void **state)
{
	(void)state;
	expect_mode(S_IFREG | 0644, "-rw-r--r--");
	expect_mode(S_IFDIR | 0755, "drwxr-xr-x");
	expect_mode(S_IFDIR | 01777, "drwxrwxrwt");
	expect_mode(S_IFREG | 04755, "-rwsr-xr-x");
	expect_mode(S_IFREG | 02644, "-rw-r-Sr--");
	expect_mode(S_IFLNK | 0777, "lrwxrwxrwx");
	struct stat st = { .st_mode = S_IFREG | 0600, .st_mtim = { 17, 5 } };
	json_t *e = alloc_fs_entry_json("n", &st);
	assert_int_equal(json_integer_value(json_object_get(e, "mod_time")), 17000000005LL);
	json_decref(e);

	const char *text = "text/plain; charset=utf-8", *bin = "application/octet-stream";
	assert_string_equal(alloc_fs_content_type("", 0), text);
	assert_string_equal(alloc_fs_content_type("hello\n", 6), text);
	assert_string_equal(alloc_fs_content_type("h\xc3\xa9!", 4), text);
	assert_string_equal(alloc_fs_content_type("h\xc3", 2), text);   /* cut by the sample */
	assert_string_equal(alloc_fs_content_type("a\0b", 3), bin);
	assert_string_equal(alloc_fs_content_type("\xff\xfe", 2), bin);
	assert_string_equal(alloc_fs_content_type("\xc0\x80", 2), bin);  /* overlong NUL */
	assert_string_equal(alloc_fs_content_type("\xc3(", 2), bin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_path),
		cmocka_unit_test_setup_teardown(test_open_beneath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opened_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_read_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test(test_entry_and_content_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
