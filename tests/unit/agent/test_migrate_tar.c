/* migrate_tar and sticky_disk_move: an allocation's data crosses as a tar
 * stream (round trip fed in small pieces, long paths, links and FIFOs left
 * out), the reader refuses what could leave its directory (absolute paths,
 * "..", links, other dirs than alloc/data and <task>/local), a stream cut
 * short or corrupt fails; the same-node move exchanges the directories
 * and leaves a link behind. */
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

#include "agent/migrate_tar.h"
#include "agent/sticky_disk.h"
#include "common/xalloc.h"

static char root[256];

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static char *get(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static char *at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *at(const char *fmt, ...)
{
	static char bufs[8][1024];
	static int k;
	char rel[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	k = (k + 1) % 8;
	snprintf(bufs[k], sizeof(bufs[k]), "%s/%s", root, rel);
	return bufs[k];
}

static void mk(const char *rel)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", at("%s", rel));
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/herd-migrate-tar-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static const char *const tasks[] = { "t1", "t2" };

/* Unpacks the archive file at path into dir, fed `piece` bytes at a time;
 * returns the first error (feed or finish). */
static int unpack(const char *path, const char *dir, size_t piece, struct herd_err *err)
{
	int in = open(path, O_RDONLY | O_CLOEXEC), dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct migrate_untar *u = migrate_untar_new(dfd, tasks, 2);
	char buf[4096];
	ssize_t n;
	int rc = 0;
	assert_true(in >= 0 && dfd >= 0);
	while (!rc && (n = read(in, buf, piece < sizeof(buf) ? piece : sizeof(buf))) > 0)
		rc = migrate_untar_feed(u, buf, (size_t)n, err);
	if (!rc)
		rc = migrate_untar_finish(u, err);
	migrate_untar_free(u);
	close(in);
	close(dfd);
	return rc;
}

static void test_round_trip(void **state)
{
	struct herd_err err = { 0, "" };
	char longdir[200];
	int out, dfd;
	(void)state;
	/* 112 bytes: past ustar's name field, into its prefix */
	memset(longdir, 'd', 111);
	longdir[55] = '/';
	longdir[111] = '\0';
	mk("src/alloc/data/sub");
	mk("src/alloc/tmp");
	mk("src/t1/local/empty");
	mk("src/t1/secrets");
	mk(at("src/alloc/data/%s", longdir) + strlen(root) + 1);
	put(at("src/alloc/data/a.txt"), "alpha");
	put(at("src/alloc/data/sub/b"), "");
	put(at("src/alloc/data/%s/deep", longdir), "long path");
	put(at("src/t1/local/c"), "task local");
	put(at("src/t1/secrets/s"), "secret");
	put(at("src/alloc/tmp/x"), "tmp");
	assert_int_equal(symlink("/etc/passwd", at("src/alloc/data/link")), 0);
	assert_int_equal(mkfifo(at("src/alloc/data/fifo"), 0600), 0);
	dfd = open(at("src"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	out = open(at("archive.tar"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_equal(migrate_tar_write(out, dfd, tasks, 2, &err), 0);
	close(out);
	close(dfd);
	/* GNU tar reads it as well */
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "tar -tf '%s' >/dev/null 2>&1", at("archive.tar"));
		assert_int_equal(system(cmd), 0);
	}
	mk("dst");
	assert_int_equal(unpack(at("archive.tar"), at("dst"), 7, &err), 0);
	assert_string_equal(get(at("dst/alloc/data/a.txt")), "alpha");
	assert_string_equal(get(at("dst/alloc/data/sub/b")), "");
	assert_string_equal(get(at("dst/alloc/data/%s/deep", longdir)), "long path");
	assert_string_equal(get(at("dst/t1/local/c")), "task local");
	assert_true(exists(at("dst/t1/local/empty")));
	/* only alloc/data and local/ cross; links and FIFOs do not */
	assert_false(exists(at("dst/t1/secrets")));
	assert_false(exists(at("dst/alloc/tmp")));
	assert_false(exists(at("dst/alloc/data/link")));
	assert_false(exists(at("dst/alloc/data/fifo")));
	assert_false(exists(at("dst/t2")));
}

static void test_paths(void **state)
{
	(void)state;
	assert_true(migrate_tar_path_ok("alloc/data", tasks, 2));
	assert_true(migrate_tar_path_ok("alloc/data/x/y", tasks, 2));
	assert_true(migrate_tar_path_ok("t2/local/z", tasks, 2));
	static const char *const bad[] = {
		"", "/etc/passwd", "/alloc/data/x", "../x", "alloc/data/../../x", "alloc/data/..",
		"alloc/data/./x", "alloc//data/x", "alloc/data/", "alloc", "t1", "alloc/tmp/x",
		"alloc/logs/t1.stdout.0", "t1/secrets/token", "t1/data/x", "alloc/local/x",
		"t3/local/x", "t1x/local/x", "./alloc/data/x", NULL,
	};
	for (size_t i = 0; bad[i]; i++) {
		if (migrate_tar_path_ok(bad[i], tasks, 2))
			fail_msg("accepted \"%s\"", bad[i]);
	}
}

/* A one-entry archive of name, type and content, with or without its end. */
static void craft(const char *path, const char *name, char type, const char *content, bool end)
{
	unsigned char h[512] = { 0 }, pad[1024] = { 0 };
	unsigned sum = 0;
	size_t len = strlen(content);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	memcpy(h, name, strlen(name));
	snprintf((char *)h + 100, 8, "%07o", 0644);
	snprintf((char *)h + 124, 12, "%011o", (unsigned)len);
	h[156] = (unsigned char)type;
	if (type == '2')
		memcpy(h + 157, "/etc", 4);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	assert_int_equal(write(fd, h, 512), 512);
	if (len) {
		assert_int_equal(write(fd, content, len), (ssize_t)len);
		assert_int_equal(write(fd, pad, 512 - len % 512), (ssize_t)(512 - len % 512));
	}
	if (end)
		assert_int_equal(write(fd, pad, 1024), 1024);
	close(fd);
}

static void test_refused_archives(void **state)
{
	struct herd_err err = { 0, "" };
	(void)state;
	mk("evil");
	mk("evil/in");
	craft(at("e.tar"), "../escaped", '0', "x", true);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPERM);
	assert_false(exists(at("evil/escaped")));
	craft(at("e.tar"), "alloc/data/../../escaped", '0', "x", true);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPERM);
	assert_false(exists(at("evil/escaped")));
	craft(at("e.tar"), "/tmp/escaped", '0', "x", true);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPERM);
	craft(at("e.tar"), "alloc/data/l", '2', "", true);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPERM);
	assert_false(exists(at("evil/in/alloc/data/l")));
	craft(at("e.tar"), "alloc/data/h", '1', "", true);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPERM);
	craft(at("e.tar"), "t1/secrets/s", '0', "x", true);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPERM);
	/* cut short: no end marker */
	craft(at("e.tar"), "alloc/data/ok", '0', "fine", false);
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 100, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "cut short"));
	/* a file that exists is not replaced */
	craft(at("e.tar"), "alloc/data/ok", '0', "again", true);
	assert_true(unpack(at("e.tar"), at("evil/in"), 512, &err) < 0);
	assert_string_equal(get(at("evil/in/alloc/data/ok")), "fine");
	/* a corrupt header */
	{
		int fd = open(at("e.tar"), O_WRONLY | O_CLOEXEC);
		assert_int_equal(pwrite(fd, "Z", 1, 0), 1);
		close(fd);
	}
	assert_int_equal(unpack(at("e.tar"), at("evil/in"), 512, &err), -EPROTO);
}

static void test_sticky_move(void **state)
{
	struct herd_err err = { 0, "" };
	(void)state;
	mk("allocs/old/alloc/data");
	mk("allocs/old/t1/local");
	mk("allocs/old/t2");
	mk("allocs/new/alloc/data");
	mk("allocs/new/t1/local");
	mk("allocs/new/t2/local");
	put(at("allocs/old/alloc/data/ckpt"), "step 100");
	put(at("allocs/old/t1/local/cache"), "warm");
	/* a link in place of local/: stays behind, never followed */
	assert_int_equal(symlink("/etc", at("allocs/old/t2/local")), 0);
	assert_int_equal(sticky_disk_move(at("allocs"), "old", at("allocs/new"), tasks, 2, &err), 2);
	assert_string_equal(get(at("allocs/new/alloc/data/ckpt")), "step 100");
	assert_string_equal(get(at("allocs/new/t1/local/cache")), "warm");
	assert_false(exists(at("allocs/new/t2/local/passwd")));
	/* the old tree keeps its skeleton, empty */
	assert_true(exists(at("allocs/old/alloc/data")));
	assert_false(exists(at("allocs/old/alloc/data/ckpt")));
	/* nothing there: 0; a bad id: refused */
	assert_int_equal(sticky_disk_move(at("allocs"), "gone", at("allocs/new"), tasks, 2, &err), 0);
	assert_int_equal(sticky_disk_move(at("allocs"), "..", at("allocs/new"), tasks, 2, &err),
			 -EINVAL);
	assert_int_equal(sticky_disk_move(at("allocs"), "a/b", at("allocs/new"), tasks, 2, &err),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_refused_archives),
		cmocka_unit_test(test_sticky_move),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
