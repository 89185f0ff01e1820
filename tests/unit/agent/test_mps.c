/* mps: supervision of MPS control daemons, against tests/e2e/mps-stand-in
 * (a script that records what it was asked and stays alive as a daemon). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/mps.h"
#include "common/xalloc.h"

static char *stand_in(void)
{
	const char *root = getenv("HERD_SOURCE_ROOT");
	return xasprintf("%s/tests/e2e/mps-stand-in", root ? root : ".");
}

static char *temp_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *d = xasprintf("%s/herd-mps-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(d));
	return d;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Removes a temp_dir and everything the daemons left in it, then frees
 * the name: runs of this test leave no herd-mps-* behind. */
static void remove_temp_dir(char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	struct stat st;
	assert_int_not_equal(lstat(dir, &st), 0);
	free(dir);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return xstrdup("");
	char *buf = xcalloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static bool pid_alive(pid_t pid)
{
	return pid > 0 && kill(pid, 0) == 0;
}

/* Waits until pid is gone (it may be a zombie of init for a moment). */
static bool gone(pid_t pid, long ms)
{
	char path[64];
	for (long t = 0; t < ms; t += 20) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		char *s = slurp(path);
		bool dead = !*s || strstr(s, ") Z ") != NULL;
		free(s);
		if (dead)
			return true;
		sleep_ms(20);
	}
	return false;
}

static void test_start_restart_quit(void **state)
{
	(void)state;
	char *dir = temp_dir(), *control = stand_in();
	static const char *const gpus[] = { "GPU-aaaa", "GPU-bbbb" };
	struct mps_options o = { .control = control, .dir = dir, .poll_ns = 20000000,
				 .backoff_min_ns = 50000000, .backoff_max_ns = 200000000 };
	struct mps *m = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(mps_start(&o, gpus, 2, &m, &err), 0);

	/* one daemon per GPU, each with its GPU and its own directories */
	pid_t first[2];
	for (int i = 0; i < 2; i++) {
		first[i] = mps_daemon_pid(m, gpus[i]);
		assert_true(pid_alive(first[i]));
		assert_int_equal(mps_starts(m, gpus[i]), 1);
		const char *pipe, *log;
		assert_int_equal(mps_dirs(m, gpus[i], &pipe, &log), 0);
		char *want_pipe = xasprintf("%s/%s/pipe", dir, gpus[i]);
		char *want_log = xasprintf("%s/%s/log", dir, gpus[i]);
		assert_string_equal(pipe, want_pipe);
		assert_string_equal(log, want_log);
		char *path = xasprintf("%s/stand-in.log", log);
		char *rec = slurp(path);
		char *line = xasprintf("start pid=");
		assert_int_equal(count(rec, line), 1);
		char *want = xasprintf("args=-d visible=%s pipe=%s log=%s\n", gpus[i], want_pipe,
				       want_log);
		if (!strstr(rec, want))
			fail_msg("record %s lacks '%s'", rec, want);
		free(want);
		free(line);
		free(rec);
		free(path);
		free(want_pipe);
		free(want_log);
	}
	assert_true(first[0] != first[1]);
	const char *p, *l;
	assert_int_equal(mps_dirs(m, "GPU-cccc", &p, &l), -ENOENT);

	/* a daemon that dies is started again; the other is left alone */
	kill(first[0], SIGKILL);
	pid_t again = 0;
	for (int t = 0; t < 200 && !(again = mps_daemon_pid(m, gpus[0])); t++)
		sleep_ms(20);
	for (int t = 0; t < 200 && (again == first[0] || !again); t++) {
		sleep_ms(20);
		again = mps_daemon_pid(m, gpus[0]);
	}
	assert_true(pid_alive(again));
	assert_true(again != first[0]);
	assert_int_equal(mps_starts(m, gpus[0]), 2);
	assert_int_equal(mps_daemon_pid(m, gpus[1]), first[1]);
	assert_int_equal(mps_starts(m, gpus[1]), 1);

	/* stop: each daemon is told to quit, with its own environment */
	mps_stop(m);
	assert_true(gone(again, 3000));
	assert_true(gone(first[1], 3000));
	for (int i = 0; i < 2; i++) {
		char *path = xasprintf("%s/%s/log/stand-in.log", dir, gpus[i]);
		char *rec = slurp(path);
		char *want = xasprintf("control pid=");
		assert_int_equal(count(rec, want), 1);
		char *q = xasprintf("visible=%s pipe=%s/%s/pipe", gpus[i], dir, gpus[i]);
		const char *ctl = strstr(rec, "control pid=");
		assert_non_null(strstr(ctl, q));
		assert_non_null(strstr(ctl, "cmds=quit;"));
		free(q);
		free(want);
		free(rec);
		free(path);
	}
	remove_temp_dir(dir);
	free(control);
}

/* A daemon of an earlier agent is adopted; one whose GPU left mps mode is
 * told to quit. */
static void test_adopt_and_stray(void **state)
{
	(void)state;
	char *dir = temp_dir(), *control = stand_in();
	static const char *const both[] = { "GPU-aaaa", "GPU-bbbb" };
	static const char *const one[] = { "GPU-aaaa" };
	struct mps_options o = { .control = control, .dir = dir, .poll_ns = 20000000,
				 .backoff_min_ns = 50000000 };
	struct mps *m1 = NULL, *m2 = NULL;
	assert_int_equal(mps_start(&o, both, 2, &m1, NULL), 0);
	pid_t a = mps_daemon_pid(m1, "GPU-aaaa"), b = mps_daemon_pid(m1, "GPU-bbbb");
	assert_true(pid_alive(a) && pid_alive(b));
	/* a second supervisor (the agent restarted, now with one mps GPU) */
	assert_int_equal(mps_start(&o, one, 1, &m2, NULL), 0);
	assert_int_equal(mps_daemon_pid(m2, "GPU-aaaa"), a);
	assert_true(gone(b, 3000));
	char *path = xasprintf("%s/GPU-aaaa/log/stand-in.log", dir);
	char *rec = slurp(path);
	assert_int_equal(count(rec, "start pid="), 1);   /* not started twice */
	free(rec);
	free(path);
	path = xasprintf("%s/GPU-bbbb/log/stand-in.log", dir);
	rec = slurp(path);
	assert_non_null(strstr(rec, "cmds=quit;"));
	free(rec);
	free(path);
	mps_stop(m2);
	assert_true(gone(a, 3000));
	mps_stop(m1);   /* its daemons are gone already: nothing to wait for */
	remove_temp_dir(dir);
	free(control);
}

/* A control program that fails: -EAGAIN for tasks, retried with backoff. */
static void test_failing_control(void **state)
{
	(void)state;
	char *dir = temp_dir();
	char *script = xasprintf("%s/failing-control", dir);
	char *calls = xasprintf("%s/calls", dir);
	FILE *f = fopen(script, "we");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho \"$*\" >> %s\nexit 3\n", calls);
	fclose(f);
	chmod(script, 0755);
	char *mdir = xasprintf("%s/mps", dir);
	static const char *const gpus[] = { "GPU-aaaa" };
	struct mps_options o = { .control = script, .dir = mdir, .poll_ns = 10000000,
				 .backoff_min_ns = 20000000, .backoff_max_ns = 40000000 };
	struct mps *m = NULL;
	assert_int_equal(mps_start(&o, gpus, 1, &m, NULL), 0);
	const char *p, *l;
	assert_int_equal(mps_dirs(m, "GPU-aaaa", &p, &l), -EAGAIN);
	sleep_ms(400);
	char *rec = slurp(calls);
	assert_true(count(rec, "-d\n") >= 3);
	assert_true(count(rec, "-d\n") <= 20);   /* backoff, not a busy loop */
	free(rec);
	assert_int_equal(mps_daemon_pid(m, "GPU-aaaa"), 0);
	mps_stop(m);
	/* missing options */
	struct mps_options bad = { .control = NULL, .dir = mdir };
	struct herd_err err = { 0 };
	assert_int_equal(mps_start(&bad, gpus, 1, &m, &err), -EINVAL);
	free(mdir);
	free(calls);
	free(script);
	remove_temp_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_restart_quit),
		cmocka_unit_test(test_adopt_and_stray),
		cmocka_unit_test(test_failing_control),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
