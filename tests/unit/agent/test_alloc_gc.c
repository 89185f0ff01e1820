/* alloc_dir and alloc_gc: scrubbing a terminal allocation's tree back to
 * its skeleton leaks nothing (planted files gone, links removed and never
 * followed, modes and owner reset), unfit trees are refused, removal never
 * leaves the tree, the collector keeps running allocations' dirs and
 * recycles through its pool. */
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
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "agent/alloc_gc.h"
#include "agent/client-int.h"
#include "common/xalloc.h"

static char root[256], outside[256];
static int rootfd = -1;

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static unsigned mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static ino_t ino_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return st.st_ino;
}

/* Entries of a dir, "." and ".." left out. */
static int count_entries(const char *path)
{
	char *cmd = xasprintf("ls -A '%s' | wc -l", path);
	FILE *p = popen(cmd, "r");
	int n = -1;
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	free(cmd);
	return n;
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/herd-gc-test-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(outside, sizeof(outside), "%s-outside", root);
	assert_int_equal(mkdir(outside, 0755), 0);
	char *p = xasprintf("%s/victim", outside);
	put(p, "must survive\n");
	free(p);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char *cmd = xasprintf("rm -rf '%s' '%s'", root, outside);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	close(rootfd);
	return 0;
}

static struct job_task web_task = { .name = "web", .driver = "raw_exec" };
static struct job_group one_task = { .name = "g", .tasks = &web_task, .ntasks = 1 };

static char *build(const char *id)
{
	struct herd_err err = { 0 };
	char *dir = xasprintf("%s/%s", root, id);
	assert_int_equal(alloc_dir_build(dir, &one_task, &err), 0);
	return dir;
}

/* What an allocation leaves behind, as a hostile task would. */
static void plant(const char *dir)
{
	static const char *const files[][2] = {
		{ "web/secrets/token", "secret\n" }, { "web/tmp/scratch", "scratch\n" },
		{ "alloc/data/result", "data\n" }, { "alloc/logs/web.stdout.0", "output\n" },
		{ "web/web.exit", "0 0 1\n" },
	};
	char *p;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		p = xasprintf("%s/%s", dir, files[i][0]);
		put(p, files[i][1]);
		free(p);
	}
	/* links out of the tree: to a file and to a directory */
	p = xasprintf("%s/web/secrets/link-to-victim", dir);
	char *t = xasprintf("%s/victim", outside);
	assert_int_equal(symlink(t, p), 0);
	free(t);
	free(p);
	p = xasprintf("%s/web/local/link-to-outside", dir);
	assert_int_equal(symlink(outside, p), 0);
	free(p);
	/* the exec driver's empty mount-point directories in the task root */
	p = xasprintf("%s/web/usr/lib", dir);
	char *cmd = xasprintf("mkdir -p '%s'", p);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(p);
	/* a tree deeper than the walk holds fds for */
	p = xasprintf("%s/web/tmp", dir);
	char *d = xstrdup(p);
	for (int i = 0; i < 45; i++) {
		char *n = xasprintf("%s/d", d);
		assert_int_equal(mkdir(n, 0755), 0);
		free(d);
		d = n;
	}
	char *f = xasprintf("%s/bottom", d);
	put(f, "deep\n");
	free(f);
	free(d);
	free(p);
	/* modes a task of the exec driver could set on dirs it was given */
	p = xasprintf("%s/web/secrets", dir);
	assert_int_equal(chmod(p, 0777), 0);
	free(p);
}

static void assert_outside_intact(void)
{
	char *p = xasprintf("%s/victim", outside);
	FILE *f = fopen(p, "re");
	char buf[64] = "";
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "must survive\n");
	free(p);
	assert_int_equal(count_entries(outside), 1);
}

static void test_scrub_leaks_nothing(void **state)
{
	(void)state;
	char *dir = build("a1");
	char *exitp = xasprintf("%s/web/web.exit", dir);
	plant(dir);
	ino_t exit_ino = ino_of(exitp);
	char **tasks = NULL;
	size_t n = 0;
	/* shallow entries: the deep tree makes it unfit (moved up), so
	 * scrub a copy without it first */
	char *deep = xasprintf("%s/web/tmp/d", dir);
	char *cmd = xasprintf("mv '%s' '%s/deep-aside'", deep, root);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	assert_int_equal(alloc_dir_scrub(rootfd, "a1", &tasks, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(tasks[0], "web");
	alloc_gc_free_names(tasks, n);

	const char *empty[] = { "web/secrets", "web/tmp", "web/local", "alloc/data", "alloc/logs",
				"alloc/tmp" };
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		char *p = xasprintf("%s/%s", dir, empty[i]);
		assert_int_equal(count_entries(p), 0);
		free(p);
	}
	/* the task dir holds its skeleton and the emptied exit file only */
	char *web = xasprintf("%s/web", dir);
	assert_int_equal(count_entries(web), 4);
	free(web);
	struct stat st;
	assert_int_equal(lstat(exitp, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_ino, exit_ino);   /* same inode, kept */
	/* modes as built */
	char *p = xasprintf("%s/web/secrets", dir);
	assert_int_equal(mode_of(p), 0700);
	free(p);
	p = xasprintf("%s/alloc/logs", dir);
	assert_int_equal(mode_of(p), 0755);
	free(p);
	p = xasprintf("%s/alloc/data", dir);
	assert_int_equal(mode_of(p), 01777);
	free(p);
	assert_outside_intact();

	/* the deep tree: scrub moves it up and calls the tree unfit; the
	 * removal then takes all of it */
	cmd = xasprintf("mv '%s/deep-aside' '%s'", root, deep);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	assert_int_equal(alloc_dir_scrub(rootfd, "a1", &tasks, &n), 1);
	assert_int_equal(alloc_dir_remove(rootfd, "a1"), 0);
	assert_false(exists(dir));
	assert_outside_intact();
	free(deep);
	free(exitp);
	free(dir);
}

static void test_unfit_trees_are_refused(void **state)
{
	(void)state;
	char **tasks = NULL;
	size_t n = 0;
	/* local/ replaced by a link out of the tree */
	char *dir = build("u1");
	char *p = xasprintf("%s/web/local", dir);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(alloc_dir_scrub(rootfd, "u1", &tasks, &n), 1);
	assert_int_equal(alloc_dir_remove(rootfd, "u1"), 0);
	assert_false(exists(dir));
	assert_outside_intact();
	free(p);
	free(dir);

	/* an extended attribute a task could set (a default ACL would be
	 * one) on a skeleton dir */
	dir = build("u2");
	p = xasprintf("%s/web/tmp", dir);
	if (setxattr(p, "user.herd-test", "x", 1, 0) == 0) {
		assert_int_equal(alloc_dir_scrub(rootfd, "u2", &tasks, &n), 1);
	} else {
		assert_true(errno == ENOTSUP || errno == EPERM);
	}
	assert_int_equal(alloc_dir_remove(rootfd, "u2"), 0);
	assert_false(exists(dir));
	free(p);
	free(dir);

	/* a missing skeleton dir */
	dir = build("u3");
	p = xasprintf("%s/alloc/data", dir);
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(alloc_dir_scrub(rootfd, "u3", &tasks, &n), 1);
	assert_int_equal(alloc_dir_remove(rootfd, "u3"), 0);
	free(p);
	free(dir);
}

static void test_remove_does_not_follow_links(void **state)
{
	(void)state;
	char *dir = build("r1");
	plant(dir);
	assert_int_equal(alloc_dir_remove(rootfd, "r1"), 0);
	assert_false(exists(dir));
	assert_outside_intact();
	/* a top that is itself a link: the link goes, not its target */
	char *p = xasprintf("%s/r2", root);
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(alloc_dir_remove(rootfd, "r2"), 0);
	assert_false(exists(p));
	assert_outside_intact();
	free(p);
	free(dir);
}

/* Waits (bounded) until path's existence is want. */
static bool wait_exists(const char *path, bool want)
{
	for (int i = 0; i < 1000; i++) {
		if (exists(path) == want)
			return true;
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Waits (bounded) until the collector has finished with id: its dir
 * leaves <root>/<id> first, the collection ends after. */
static bool wait_collected(const char *id)
{
	for (int i = 0; i < 1000; i++) {
		if (alloc_gc_collected(root, id))
			return true;
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return false;
}

static void test_collector_keeps_running_and_recycles(void **state)
{
	(void)state;
	/* Left by an earlier life: two terminal dirs (old1 older) and the
	 * dir of an allocation that still runs (recovered). */
	char *old1 = build("old1"), *old2 = build("old2"), *running = build("running");
	struct timespec past[2] = { { 1000, 0 }, { 1000, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, old1, past, 0), 0);
	plant(running);
	struct alloc_gc_options o = { .interval_ns = 3600 * 1000000000LL, .max_allocs = 1,
				      .disk_pct = 100, .inode_pct = 100 };
	const char *keep[] = { "running" };
	struct herd_err err = { 0 };
	struct alloc_gc *gc = alloc_gc_start(root, &o, keep, 1, &err);
	assert_non_null(gc);
	/* max_allocs 1: the oldest terminal one goes, the newer stays */
	assert_true(wait_exists(old1, false));
	assert_true(wait_collected("old1"));
	assert_true(exists(old2));
	assert_false(alloc_gc_collected(root, "old2"));
	/* the running allocation's dir is never touched */
	char *secret = xasprintf("%s/web/secrets/token", running);
	assert_true(exists(secret));

	/* A terminal allocation of this life with a planted secret: once
	 * one more ends it is scrubbed into the pool ... */
	char *done = build("done1");
	char *planted = xasprintf("%s/web/secrets/token", done);
	put(planted, "done1's secret\n");
	ino_t done_ino = ino_of(done);
	alloc_gc_add(gc, "old2", false);   /* already queued: harmless */
	alloc_gc_add(gc, "done1", true);
	alloc_gc_add(gc, "later", true);   /* no dir: nothing to do */
	assert_true(wait_exists(done, false));
	assert_true(wait_exists(old2, false));
	assert_true(wait_collected("done1"));
	/* ... and the next allocation with one task gets it, empty */
	struct timespec ts = { 0, 50 * 1000000L };
	char *next = build("next1");
	assert_int_equal(ino_of(next), done_ino);
	char *p = xasprintf("%s/web/secrets", next);
	assert_int_equal(count_entries(p), 0);
	assert_int_equal(mode_of(p), 0700);
	free(p);
	/* a claimed id is not collected: next1 runs, queued or not */
	alloc_gc_add(gc, "next1", true);
	alloc_gc_claim(root, "next1");
	alloc_gc_add(gc, "x2", true);
	alloc_gc_add(gc, "x3", true);
	nanosleep(&ts, NULL);
	assert_true(exists(next));
	assert_true(exists(secret));
	alloc_gc_stop(gc);
	/* the pool left on disk is removed by the next start */
	p = xasprintf("%s/.pool", root);
	assert_true(exists(p));
	gc = alloc_gc_start(root, &o, keep, 1, &err);
	assert_non_null(gc);
	alloc_gc_stop(gc);
	free(p);
	free(secret);
	free(planted);
	free(done);
	free(next);
	free(old1);
	free(old2);
	free(running);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrub_leaks_nothing),
		cmocka_unit_test(test_unfit_trees_are_refused),
		cmocka_unit_test(test_remove_does_not_follow_links),
		cmocka_unit_test(test_collector_keeps_running_and_recycles),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
