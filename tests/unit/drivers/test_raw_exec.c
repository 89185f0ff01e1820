/* raw_exec against the real task shim: exits, signals, failed exec, env,
 * log rotation, stop escalation, fd hygiene, recovery. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/units.h"
#include "drivers/driver.h"

static char root[] = "/tmp/herd-rawexec-XXXXXX";
static char task_dir[128], log_dir[128], state_dir[128];
static const char *shim_argv[2];
static struct driver_env denv;
static const struct driver_ops *d;
static const char *const base_env[] = { "PATH=/usr/bin:/bin", "FOO=bar baz", NULL };

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct driver_task sh_task(const char *name, const char *script)
{
	static const char *args[3];
	args[0] = "-c";
	args[1] = script;
	args[2] = NULL;
	struct driver_task t = {
		.name = name, .command = "/bin/sh", .args = args, .env = base_env,
		.task_dir = task_dir, .log_dir = log_dir, .state_dir = state_dir,
		.log_max_files = 5, .log_max_file_size = 1 << 20,
	};
	return t;
}

/* The content of a log file ("" when absent), at most 64 KiB. */
static char *read_log(const char *name)
{
	static char buf[65536];
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", log_dir, name);
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return buf;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static int64_t log_size(const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", log_dir, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void run_to_end(struct driver_task *t, struct driver_exit *ex)
{
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	if (d->start(&denv, t, &h, &err) < 0)
		fail_msg("start: %s", err.msg);
	assert_int_equal(d->wait(h, 10000, ex, &err), 1);
	d->destroy(h);
}

static void test_exit_codes(void **state)
{
	struct driver_exit ex;
	struct driver_task t = sh_task("ok", "exit 0");
	run_to_end(&t, &ex);
	assert_int_equal(ex.exit_code, 0);
	assert_int_equal(ex.signal, 0);
	assert_false(ex.lost);
	assert_true(ex.finished_ns > 0);
	t = sh_task("three", "echo out; echo err >&2; exit 3");
	run_to_end(&t, &ex);
	assert_int_equal(ex.exit_code, 3);
	assert_string_equal(read_log("three.stdout.0"), "out\n");
	assert_string_equal(read_log("three.stderr.0"), "err\n");
}

static void test_killed_by_signal(void **state)
{
	struct driver_exit ex;
	struct driver_task t = sh_task("sig", "kill -USR1 $$; sleep 5");
	run_to_end(&t, &ex);
	assert_int_equal(ex.exit_code, -1);
	assert_int_equal(ex.signal, SIGUSR1);
}

static void test_failed_exec(void **state)
{
	struct driver_handle *h = (void *)0x1;
	struct herd_err err = { 0 };
	struct driver_task t = sh_task("nope", "");
	t.command = "/bin/nope";
	t.args = NULL;
	assert_int_equal(d->start(&denv, &t, &h, &err), -ENOENT);
	assert_string_equal(err.msg, "exec /bin/nope: No such file or directory");
	assert_ptr_equal(h, (void *)0x1);
	/* not executable */
	char plain[160];
	snprintf(plain, sizeof(plain), "%s/not-executable", task_dir);
	int fd = open(plain, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	t.command = plain;
	assert_int_equal(d->start(&denv, &t, &h, &err), -EACCES);
	assert_non_null(strstr(err.msg, "not-executable: Permission denied"));
	/* a name is looked up in the task env's PATH */
	t.command = "true";
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	struct driver_exit ex;
	assert_int_equal(d->wait(h, 5000, &ex, &err), 1);
	assert_int_equal(ex.exit_code, 0);
	d->destroy(h);
	/* a missing task dir is a start failure, not a task failure */
	t.task_dir = "/nonexistent/dir";
	assert_int_equal(d->start(&denv, &t, &h, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "task dir /nonexistent/dir"));
}

static void test_disabled_and_bad_task(void **state)
{
	struct driver_env off = denv;
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	struct driver_task t = sh_task("x", "exit 0");
	off.raw_exec_enabled = false;
	assert_int_equal(d->start(&off, &t, &h, &err), -EPERM);
	assert_non_null(strstr(err.msg, "raw_exec is disabled"));
	struct driver_fingerprint fp;
	d->fingerprint(&off, &fp);
	assert_false(fp.detected);
	d->fingerprint(&denv, &fp);
	assert_true(fp.detected && fp.healthy);
	t.name = "../escape";
	assert_int_equal(d->start(&denv, &t, &h, &err), -EINVAL);
}

static void test_env_and_cwd(void **state)
{
	struct driver_exit ex;
	setenv("HERD_TEST_LEAK", "leaked", 1);
	struct driver_task t = sh_task("env", "echo \"$FOO|${HERD_TEST_LEAK-unset}|$(pwd)\"");
	run_to_end(&t, &ex);
	char want[256];
	snprintf(want, sizeof(want), "bar baz|unset|%s\n", task_dir);
	assert_string_equal(read_log("env.stdout.0"), want);
}

/* cpuset_cpus: the task (and what it starts) runs on exactly those cores,
 * through the shim's affinity; a list of cores the machine lacks fails the
 * start with a message naming them; without cores the mask is the
 * agent's. */
static void test_pinned_cores(void **state)
{
	struct driver_exit ex;
	struct driver_task t = sh_task("pin", "grep Cpus_allowed_list /proc/self/status; "
				       "sh -c 'grep Cpus_allowed_list /proc/self/status'");
	t.cpuset_cpus = "0";
	run_to_end(&t, &ex);
	assert_int_equal(ex.exit_code, 0);
	assert_string_equal(read_log("pin.stdout.0"),
			    "Cpus_allowed_list:\t0\nCpus_allowed_list:\t0\n");

	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 1) {
		char want[64];
		t = sh_task("pin1", "grep Cpus_allowed_list /proc/self/status");
		t.cpuset_cpus = "1";
		run_to_end(&t, &ex);
		snprintf(want, sizeof(want), "Cpus_allowed_list:\t1\n");
		assert_string_equal(read_log("pin1.stdout.0"), want);
	}

	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	t = sh_task("pinbad", "exit 0");
	t.cpuset_cpus = "4000";
	assert_true(d->start(&denv, &t, &h, &err) < 0);
	assert_null(h);
	assert_non_null(strstr(err.msg, "pinning to cores 4000"));
	t.cpuset_cpus = "1-0";
	assert_int_equal(d->start(&denv, &t, &h, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "reversed range"));

	t = sh_task("nopin", "grep -c Cpus_allowed_list /proc/self/status");
	run_to_end(&t, &ex);
	assert_string_equal(read_log("nopin.stdout.0"), "1\n");
}

/* The Cpus_allowed_list of pid ("" when gone). */
static const char *allowed(pid_t pid)
{
	static char line[128];
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	line[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Cpus_allowed_list:", 18))
			break;
	if (f)
		fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return strchr(line, '\t') ? strchr(line, '\t') + 1 : line;
}

/* set_cores moves a running task, every process of its session, onto
 * other cores, and back onto all of ours (NULL); a task that ended is
 * -ESRCH. */
static void test_set_cores(void **state)
{
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	struct driver_exit ex;
	struct driver_task t = sh_task("mover", "sleep 100 & echo child $!; wait");
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	const struct driver_state *st = driver_handle_state(h);
	for (int i = 0; i < 500 && !strstr(read_log("mover.stdout.0"), "child"); i++)
		usleep(10000);
	pid_t child = (pid_t)strtol(strstr(read_log("mover.stdout.0"), "child") + 6, NULL, 10);
	assert_true(child > 0);
	char mine[128];
	snprintf(mine, sizeof(mine), "%s", allowed(getpid()));

	assert_int_equal(d->set_cores(&denv, st, "0", &err), 0);
	assert_string_equal(allowed(st->task_pid), "0");
	assert_string_equal(allowed(child), "0");
	assert_int_equal(d->set_cores(&denv, st, NULL, &err), 0);
	assert_string_equal(allowed(st->task_pid), mine);
	assert_string_equal(allowed(child), mine);
	assert_int_equal(d->set_cores(&denv, st, "1-0", &err), -EINVAL);

	struct driver_state copy = *st;
	assert_int_equal(d->stop(h, SIGKILL, 0, &ex, &err), 0);
	d->destroy(h);
	kill(child, SIGKILL);
	assert_int_equal(d->set_cores(&denv, &copy, "0", &err), -ESRCH);
}

static void test_log_rotation(void **state)
{
	struct driver_exit ex;
	/* 2500 bytes in chunks into files of 1000, keeping 2 */
	struct driver_task t = sh_task("rot", "i=0; while [ $i -lt 25 ]; do "
				       "printf '%099d\\n' $i; i=$((i+1)); done");
	t.log_max_files = 2;
	t.log_max_file_size = 1000;
	run_to_end(&t, &ex);
	assert_int_equal(ex.exit_code, 0);
	assert_int_equal(log_size("rot.stdout.0"), -1);  /* pruned */
	assert_int_equal(log_size("rot.stdout.1"), 1000);
	assert_int_equal(log_size("rot.stdout.2"), 500);
	assert_int_equal(strncmp(read_log("rot.stdout.2"), "0000", 4), 0);
	assert_non_null(strstr(read_log("rot.stdout.2"), "24\n"));
}

/* Waits until a log file contains needle (the task is ready). */
static void wait_for_log(const char *name, const char *needle)
{
	int64_t deadline = now_ms() + 5000;
	while (!strstr(read_log(name), needle)) {
		if (now_ms() > deadline)
			fail_msg("%s never said %s", name, needle);
		usleep(10000);
	}
}

static void test_stop_graceful(void **state)
{
	struct driver_handle *h = NULL;
	struct driver_exit ex;
	struct herd_err err = { 0 };
	struct driver_task t = sh_task("soft", "trap 'echo bye; exit 0' TERM; echo ready; "
				       "while :; do sleep 0.05; done");
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	wait_for_log("soft.stdout.0", "ready");
	assert_int_equal(d->wait(h, 0, &ex, &err), 0); /* still running */
	int64_t t0 = now_ms();
	assert_int_equal(d->stop(h, SIGTERM, 5 * NS_PER_SEC, &ex, &err), 0);
	assert_true(now_ms() - t0 < 3000);
	assert_int_equal(ex.exit_code, 0);
	assert_non_null(strstr(read_log("soft.stdout.0"), "bye"));
	assert_int_equal(d->signal(h, SIGTERM), -ESRCH);
	d->destroy(h);
}

static void test_stop_escalates_and_kills_group(void **state)
{
	struct driver_handle *h = NULL;
	struct driver_exit ex;
	struct herd_err err = { 0 };
	char script[512];
	char pidfile[160];
	snprintf(pidfile, sizeof(pidfile), "%s/child.pid", task_dir);
	/* ignores SIGTERM, and has a child in its process group */
	snprintf(script, sizeof(script), "trap '' TERM; sleep 30 & echo $! > %s; echo ready; "
		 "while :; do sleep 0.05; done", pidfile);
	struct driver_task t = sh_task("stubborn", script);
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	wait_for_log("stubborn.stdout.0", "ready");
	FILE *f = fopen(pidfile, "re");
	assert_non_null(f);
	int child = 0;
	assert_int_equal(fscanf(f, "%d", &child), 1);
	fclose(f);
	assert_int_equal(kill(child, 0), 0);

	int64_t t0 = now_ms();
	assert_int_equal(d->stop(h, SIGTERM, 300 * 1000000LL, &ex, &err), 0);
	int64_t took = now_ms() - t0;
	assert_true(took >= 300);
	assert_true(took < 5000);
	assert_int_equal(ex.signal, SIGKILL);
	/* the child went with the group (reaped by init shortly after) */
	int64_t deadline = now_ms() + 3000;
	while (kill(child, 0) == 0 && now_ms() < deadline)
		usleep(10000);
	assert_int_equal(kill(child, 0), -1);
	d->destroy(h);
}

static void test_no_fd_leaks(void **state)
{
	/* An fd of the agent without close-on-exec (a careless library's)
	 * must still not reach the task. */
	int leak = open("/dev/null", O_RDONLY);
	assert_true(leak >= 0);
	struct driver_exit ex;
	static const char *args[] = { "-1", "/proc/self/fd", NULL };
	struct driver_task t = sh_task("fds", "");
	t.command = "/bin/ls";
	t.args = args;
	run_to_end(&t, &ex);
	close(leak);
	assert_int_equal(ex.exit_code, 0);
	/* 0 1 2, and 3: the directory ls itself opened to list */
	assert_string_equal(read_log("fds.stdout.0"), "0\n1\n2\n3\n");
}

static void test_recover_after_forgetting(void **state)
{
	struct driver_handle *h = NULL;
	struct driver_exit ex;
	struct herd_err err = { 0 };
	struct driver_task t = sh_task("rec", "echo ready; sleep 0.4; echo late; exit 7");
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	char *json = driver_state_to_json(driver_handle_state(h));
	d->destroy(h);  /* the agent "restarts": handle gone, task runs on */
	wait_for_log("rec.stdout.0", "ready");

	struct driver_state st;
	assert_int_equal(driver_state_from_json(json, &st, &err), 0);
	free(json);
	assert_int_equal(kill(st.task_pid, 0), 0);
	assert_int_equal(d->recover(&denv, &st, &h, &err), 0);
	assert_true(driver_handle_fd(h) >= 0);
	assert_int_equal(d->wait(h, 10000, &ex, &err), 1);
	assert_int_equal(ex.exit_code, 7);
	assert_false(ex.lost);
	/* the logs went on while nobody held a handle */
	assert_non_null(strstr(read_log("rec.stdout.0"), "late"));
	d->destroy(h);

	/* recovered after it ended: the exit file tells */
	assert_int_equal(d->recover(&denv, &st, &h, &err), -ESRCH);
	assert_int_equal(d->wait(h, 0, &ex, &err), 1);
	assert_int_equal(ex.exit_code, 7);
	d->destroy(h);

	/* a pid that is now someone else's is not adopted */
	st.shim_pid = getpid();
	st.shim_start_time += 1;
	unlink(st.exit_file);
	assert_int_equal(d->recover(&denv, &st, &h, &err), -ESRCH);
	assert_int_equal(d->wait(h, 0, &ex, &err), 1);
	assert_true(ex.lost);
	d->destroy(h);
	snprintf(st.driver, sizeof(st.driver), "docker");
	assert_int_equal(d->recover(&denv, &st, &h, &err), -EINVAL);
}

static int setup(void **state)
{
	const char *shim = getenv("HERD_TASK_SHIM");
	if (!shim || !mkdtemp(root))
		return -1;
	shim_argv[0] = shim;
	denv.shim_argv = shim_argv;
	denv.raw_exec_enabled = true;
	d = driver_find("raw_exec");
	snprintf(task_dir, sizeof(task_dir), "%s/task", root);
	snprintf(log_dir, sizeof(log_dir), "%s/logs", root);
	snprintf(state_dir, sizeof(state_dir), "%s/state", root);
	return mkdir(task_dir, 0755) || mkdir(log_dir, 0755) || mkdir(state_dir, 0755);
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_killed_by_signal),
		cmocka_unit_test(test_failed_exec),
		cmocka_unit_test(test_disabled_and_bad_task),
		cmocka_unit_test(test_env_and_cwd),
		cmocka_unit_test(test_pinned_cores),
		cmocka_unit_test(test_set_cores),
		cmocka_unit_test(test_log_rotation),
		cmocka_unit_test(test_stop_graceful),
		cmocka_unit_test(test_stop_escalates_and_kills_group),
		cmocka_unit_test(test_no_fd_leaks),
		cmocka_unit_test(test_recover_after_forgetting),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
