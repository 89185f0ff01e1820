/* exec driver against the real task shim: namespaces, root, user, /dev,
 * /alloc, cgroup limits (OOM), device denial, failed exec, stop of a whole
 * tree, recovery.  Needs root; skips every test otherwise. */
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
#include <unistd.h>

#include "drivers/cgroup.h"
#include "drivers/driver.h"

static char root[] = "/tmp/herd-exec-XXXXXX";
static char alloc_dir[128], shared_dir[160], task_dir[160], log_dir[192], state_dir[128];
static const char *shim_argv[2];
static struct driver_env denv;
static const struct driver_ops *d;
static const char *const base_env[] = { "PATH=/usr/bin:/bin", "HOME=/local", NULL };
static bool can_run;

static struct driver_task sh_task(const char *name, const char *script)
{
	static const char *args[3];
	args[0] = "-c";
	args[1] = script;
	args[2] = NULL;
	struct driver_task t = {
		.name = name, .command = "/bin/sh", .args = args, .env = base_env,
		.task_dir = task_dir, .log_dir = log_dir, .state_dir = state_dir,
		.log_max_files = 2, .log_max_file_size = 1 << 20, .alloc_dir = shared_dir,
		.alloc_id = "a1",
	};
	return t;
}

static char *read_log(const char *name)
{
	static char buf[65536];
	char path[300];
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

static struct driver_exit run(struct driver_task *t)
{
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	if (d->start(&denv, t, &h, &err) < 0)
		fail_msg("start %s: %s", t->name, err.msg);
	struct driver_exit ex;
	assert_int_equal(d->wait(h, 30000, &ex, &err), 1);
	d->destroy(h);
	return ex;
}

static bool cgroup_exists(const char *name)
{
	struct cgroup *cg = NULL;
	struct cgroup_config cfg = { 0 };
	if (cgroup_open(&cfg, name, &cg, NULL) < 0)
		return false;
	cgroup_free(cg);
	return true;
}

#define NEED_ROOT() do { if (!can_run) skip(); } while (0)

static void test_isolation(void **state)
{
	NEED_ROOT();
	struct driver_task t = sh_task("iso",
		"echo pid=$$; echo uid=$(id -u) gid=$(id -g); "
		"test -e /work && echo SEES_WORK; test -e /tmp/herd-exec-marker && echo SEES_HOST_TMP; "
		"echo dev: $(ls /dev); "
		"echo hi > /local/out && echo LOCAL_OK; echo shared > /alloc/data/x && echo ALLOC_OK; "
		"touch /usr/herd-x 2>/dev/null && echo USR_WRITABLE; "
		"echo procs=$(ls /proc | grep -c '^[0-9]'); "
		"test -r /etc/passwd && echo ETC_OK");
	struct driver_exit ex = run(&t);
	assert_int_equal(ex.exit_code, 0);
	const char *out = read_log("iso.stdout.0");
	assert_non_null(strstr(out, "pid=2\n"));             /* its own PID namespace */
	assert_non_null(strstr(out, "uid=65534 gid=65534"));  /* nobody */
	assert_null(strstr(out, "SEES_WORK"));
	assert_null(strstr(out, "SEES_HOST_TMP"));
	assert_null(strstr(out, "USR_WRITABLE"));
	assert_non_null(strstr(out, "LOCAL_OK"));
	assert_non_null(strstr(out, "ALLOC_OK"));
	assert_non_null(strstr(out, "ETC_OK"));
	/* init, sh, and the ls/grep pipeline: nothing of the host */
	const char *procs = strstr(out, "procs=");
	assert_non_null(procs);
	assert_true(strtol(procs + 6, NULL, 10) <= 5);
	const char *dev = strstr(out, "dev: ");
	assert_non_null(dev);
	char line[512];
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(dev, "\n"), dev);
	assert_string_equal(line, "dev: fd full null ptmx pts random shm stderr stdin stdout "
			    "tty urandom zero");
	char p[300];
	snprintf(p, sizeof(p), "%s/local/out", task_dir);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/data/x", shared_dir);
	assert_int_equal(access(p, F_OK), 0);
	assert_false(cgroup_exists("a1.iso"));   /* removed after the exit */
}

static void test_devices(void **state)
{
	NEED_ROOT();
	/* Only the listed device appears, and the cgroup refuses the others
	 * even to root (v1 the devices controller, v2 the device program). */
	const char *devs[] = { "/dev/kmsg", NULL };
	struct driver_task t = sh_task("devs",
		"test -c /dev/kmsg && echo HAS_KMSG; test -e /dev/mem || echo NO_MEM; "
		"mknod /tmp/m c 1 1 2>/dev/null && head -c1 /tmp/m >/dev/null 2>&1 "
		"&& echo MEM_OPENED || echo MEM_DENIED");
	t.devices = devs;
	t.user = "root";
	struct driver_exit ex = run(&t);
	assert_int_equal(ex.exit_code, 0);
	const char *out = read_log("devs.stdout.0");
	assert_non_null(strstr(out, "HAS_KMSG"));
	assert_non_null(strstr(out, "NO_MEM"));
	assert_non_null(strstr(out, "MEM_DENIED"));

	const char *bad[] = { "/etc/passwd", NULL };
	t.devices = bad;
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(d->start(&denv, &t, &h, &err), -EINVAL);
	assert_null(h);
}

static void test_oom_killed(void **state)
{
	NEED_ROOT();
	struct driver_task t = sh_task("oom", "x=$(head -c 100000000 /dev/zero | tr '\\0' a); "
				       "echo survived ${#x}");
	t.memory_mb = 32;
	struct driver_exit ex = run(&t);
	assert_int_equal(ex.signal, SIGKILL);
	assert_true(ex.oom_killed);
	assert_null(strstr(read_log("oom.stdout.0"), "survived"));

	/* memory_max raises the hard limit above memory: the same task fits */
	t.name = "oommax";
	t.memory_max_mb = 400;
	ex = run(&t);
	assert_int_equal(ex.exit_code, 0);
	assert_false(ex.oom_killed);
	assert_non_null(strstr(read_log("oommax.stdout.0"), "survived 100000000"));
}

static void test_failed_exec_and_bad_user(void **state)
{
	NEED_ROOT();
	struct driver_task t = sh_task("nope", "");
	t.command = "/bin/does-not-exist";
	t.args = NULL;
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(d->start(&denv, &t, &h, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "exec /bin/does-not-exist: No such file or directory"));
	assert_null(h);
	assert_false(cgroup_exists("a1.nope"));

	t = sh_task("nouser", "true");
	t.user = "herd-no-such-user";
	assert_int_equal(d->start(&denv, &t, &h, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "herd-no-such-user"));
}

/* cpuset_cpus: the isolated task runs on those cores (the shim's
 * affinity, inherited through its init) and its cgroup's cpuset says so
 * where this machine has the cpuset controller (v1 here: the cpuset
 * hierarchy, whose group needs cpus and mems before the task joins). */
static void test_pinned_cores(void **state)
{
	NEED_ROOT();
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	struct driver_exit ex;
	struct driver_task t = sh_task("pin", "grep Cpus_allowed_list /proc/self/status; "
				       "echo ready; sleep 100 & wait");
	t.cpuset_cpus = "0";
	t.cpuset_mems = "0";
	if (d->start(&denv, &t, &h, &err) < 0)
		fail_msg("start: %s", err.msg);
	for (int i = 0; i < 500 && !strstr(read_log("pin.stdout.0"), "ready"); i++)
		usleep(10000);
	assert_non_null(strstr(read_log("pin.stdout.0"), "Cpus_allowed_list:\t0\n"));
	struct cgroup *cg = NULL;
	struct cgroup_config cfg = { 0 };
	assert_int_equal(cgroup_open(&cfg, "a1.pin", &cg, NULL), 0);
	if (cgroup_has_cpuset(cg)) {
		char p[256], buf[64] = "";
		snprintf(p, sizeof(p), "%s/cpuset.cpus",
			 cgroup_version(cg) == 2 ? cgroup_path(cg) : "/sys/fs/cgroup/cpuset/herd/a1.pin");
		FILE *f = fopen(p, "re");
		assert_non_null(f);
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		assert_string_equal(buf, "0\n");
	}
	/* moved while it runs (a task without cores of its own while
	 * another reserves or frees cores): its cgroup's cpuset */
	if (cgroup_has_cpuset(cg)) {
		assert_int_equal(d->set_cores(&denv, driver_handle_state(h), NULL, &err), 0);
		char p[256], buf[64] = "", parent[64] = "";
		snprintf(p, sizeof(p), "%s/cpuset.cpus",
			 cgroup_version(cg) == 2 ? cgroup_path(cg) : "/sys/fs/cgroup/cpuset/herd/a1.pin");
		FILE *f = fopen(p, "re");
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		f = fopen(cgroup_version(cg) == 2 ? "/dev/null" : "/sys/fs/cgroup/cpuset/herd/cpuset.cpus", "re");
		if (fgets(parent, sizeof(parent), f))
			assert_string_equal(buf, parent);
		fclose(f);
	}
	cgroup_free(cg);
	assert_int_equal(d->stop(h, SIGKILL, 0, &ex, &err), 0);
	assert_int_equal(d->set_cores(&denv, driver_handle_state(h), "0", &err), -ESRCH);
	d->destroy(h);
}

static void test_stop(void **state)
{
	NEED_ROOT();
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	struct driver_exit ex;
	/* graceful: SIGTERM reaches the task through the init */
	struct driver_task t = sh_task("term", "trap 'echo got-term; exit 7' TERM; "
				       "echo ready; sleep 100 & wait");
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	for (int i = 0; i < 500 && !strstr(read_log("term.stdout.0"), "ready"); i++)
		usleep(10000);
	assert_int_equal(d->stop(h, SIGTERM, 5000000000LL, &ex, &err), 0);
	assert_int_equal(ex.exit_code, 7);
	assert_non_null(strstr(read_log("term.stdout.0"), "got-term"));
	d->destroy(h);

	/* escalation: TERM ignored, children in other sessions: all gone */
	t = sh_task("stubborn", "trap '' TERM; sleep 1000 & setsid sleep 1000 & echo ready; wait");
	t.cgroup_name = "a1.stubborn.custom";
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	assert_string_equal(driver_handle_state(h)->cgroup, "a1.stubborn.custom");
	assert_true(cgroup_exists("a1.stubborn.custom"));
	for (int i = 0; i < 500 && !strstr(read_log("stubborn.stdout.0"), "ready"); i++)
		usleep(10000);
	assert_int_equal(d->stop(h, SIGTERM, 200000000LL, &ex, &err), 0);
	assert_int_equal(ex.signal, SIGKILL);
	assert_false(cgroup_exists("a1.stubborn.custom"));
	d->destroy(h);
}

static void test_recover(void **state)
{
	NEED_ROOT();
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	struct driver_task t = sh_task("rec", "sleep 1000");
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	char *json = driver_state_to_json(driver_handle_state(h));
	d->destroy(h);   /* the agent "dies": the task keeps running */
	struct driver_state st;
	assert_int_equal(driver_state_from_json(json, &st, &err), 0);
	free(json);
	assert_string_equal(st.driver, "exec");
	assert_string_equal(st.cgroup, "a1.rec");
	assert_int_equal(d->recover(&denv, &st, &h, &err), 0);
	struct driver_exit ex;
	assert_int_equal(d->wait(h, 0, &ex, &err), 0);
	assert_int_equal(d->stop(h, SIGTERM, 100000000LL, &ex, &err), 0);
	/* sleep as PID 2 of the namespace does get SIGTERM (default action) */
	assert_int_equal(ex.signal, SIGTERM);
	assert_false(cgroup_exists("a1.rec"));
	d->destroy(h);

	/* raw_exec state is not exec's */
	struct driver_state other = st;
	snprintf(other.driver, sizeof(other.driver), "raw_exec");
	assert_int_equal(d->recover(&denv, &other, &h, &err), -EINVAL);
}

/* A user's signal reaches the task through its init when the init passes
 * it on; another is refused (-ENOTSUP) instead of dropped, and the task
 * keeps running. */
static void test_user_signal(void **state)
{
	NEED_ROOT();
	struct driver_handle *h = NULL;
	struct herd_err err = { 0 };
	struct driver_exit ex;
	struct driver_task t = sh_task("sig", "trap 'echo got-usr1' USR1; echo ready; "
				       "while true; do sleep 0.1; done");
	assert_int_equal(d->start(&denv, &t, &h, &err), 0);
	for (int i = 0; i < 100 && !strstr(read_log("sig.stdout.0"), "ready"); i++)
		usleep(50000);
	assert_int_equal(d->signal(h, SIGPIPE), -ENOTSUP);
	assert_int_equal(d->signal(h, SIGSTOP), -ENOTSUP);
	assert_int_equal(d->signal(h, SIGUSR1), 0);
	for (int i = 0; i < 100 && !strstr(read_log("sig.stdout.0"), "got-usr1"); i++)
		usleep(50000);
	assert_non_null(strstr(read_log("sig.stdout.0"), "got-usr1"));
	assert_int_equal(d->wait(h, 0, &ex, &err), 0);   /* still running */
	assert_int_equal(d->signal(h, SIGKILL), 0);
	assert_int_equal(d->wait(h, 30000, &ex, &err), 1);
	assert_int_equal(d->signal(h, SIGUSR1), -ESRCH);
	assert_int_equal(d->stop(h, SIGTERM, 100000000LL, &ex, &err), 0);
	d->destroy(h);
}

static void test_fingerprint(void **state)
{
	struct driver_fingerprint fp;
	d->fingerprint(&denv, &fp);
	if (geteuid() != 0) {
		assert_false(fp.detected);
		assert_non_null(strstr(fp.reason, "root"));
	} else if (cgroup_detect_version(NULL)) {
		assert_true(fp.detected && fp.healthy);
	}
}

static int setup(void **state)
{
	shim_argv[0] = getenv("HERD_TASK_SHIM");
	shim_argv[1] = NULL;
	if (!shim_argv[0] || !mkdtemp(root))
		return -1;
	denv.shim_argv = shim_argv;
	d = driver_find("exec");
	if (!d)
		return -1;
	snprintf(alloc_dir, sizeof(alloc_dir), "%s/a1", root);
	snprintf(shared_dir, sizeof(shared_dir), "%s/alloc", alloc_dir);
	snprintf(task_dir, sizeof(task_dir), "%s/web", alloc_dir);
	snprintf(log_dir, sizeof(log_dir), "%s/logs", shared_dir);
	snprintf(state_dir, sizeof(state_dir), "%s/state", root);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/data %s/tmp %s %s/local %s/tmp %s/secrets %s "
		 "&& chmod 700 %s/secrets && touch /tmp/herd-exec-marker", shared_dir, shared_dir,
		 log_dir, task_dir, task_dir, task_dir, state_dir, task_dir);
	if (system(cmd) != 0)
		return -1;
	can_run = geteuid() == 0 && cgroup_detect_version(NULL) != 0;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s /tmp/herd-exec-marker", root);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_isolation),
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_oom_killed),
		cmocka_unit_test(test_failed_exec_and_bad_user),
		cmocka_unit_test(test_pinned_cores),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_recover),
		cmocka_unit_test(test_user_signal),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
