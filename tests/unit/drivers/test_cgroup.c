/* cgroup: limit files on fake v1 and v2 trees (what is written where), and
 * on the real hierarchies of this machine when run as root: join, kill a
 * whole tree, OOM kill counted, remove. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drivers/cgroup.h"

extern char **environ;
static char root[] = "/tmp/herd-cgroup-XXXXXX";

static void put(const char *rel, const char *content)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	/* parents */
	for (char *s = path + strlen(root) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(path, 0755);
			*s = '/';
		}
	}
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static char *get(const char *rel)
{
	static char buf[4096];
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void fake_v2_group(const char *name)
{
	static const char *const files[] = {
		"memory.max", "memory.low", "memory.swap.max", "cpu.weight", "pids.max",
		"cgroup.procs", "cgroup.kill", "memory.events", "memory.current",
		"memory.peak", "cpu.stat",
	};
	char rel[256];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "v2/herd.slice/%s/%s", name, files[i]);
		put(rel, "");
	}
}

static void test_detect(void **state)
{
	put("v2/cgroup.controllers", "cpuset cpu io memory pids\n");
	put("v2/cgroup.subtree_control", "");
	put("v2/herd.slice/cgroup.controllers", "cpuset cpu io memory pids\n");
	put("v2/herd.slice/cgroup.subtree_control", "");
	put("v1/memory/cgroup.procs", "");
	put("empty2/cgroup.controllers", "\n");
	char p[256];
	snprintf(p, sizeof(p), "%s/v2", root);
	assert_int_equal(cgroup_detect_version(p), 2);
	snprintf(p, sizeof(p), "%s/v1", root);
	assert_int_equal(cgroup_detect_version(p), 1);
	snprintf(p, sizeof(p), "%s/empty2", root);
	assert_int_equal(cgroup_detect_version(p), 0);
}

static void test_v2_limits_memory_max(void **state)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/v2", root);
	put("v2/cgroup.controllers", "cpuset cpu io memory pids\n");
	put("v2/herd.slice/cgroup.controllers", "cpuset cpu io memory pids\n");
	fake_v2_group("a1.web");
	struct cgroup_config cfg = { .root = p };
	struct cgroup_limits lim = { .memory_bytes = 256 << 20, .memory_max_bytes = 512 << 20,
				     .cpu_mhz = 1000, .pids_max = 64 };
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(cgroup_create(&cfg, "a1.web", &lim, &cg, &err), 0);
	assert_int_equal(cgroup_version(cg), 2);
	assert_string_equal(get("v2/herd.slice/a1.web/memory.max"), "536870912");
	assert_string_equal(get("v2/herd.slice/a1.web/memory.low"), "268435456");
	assert_string_equal(get("v2/herd.slice/a1.web/memory.swap.max"), "0");
	/* 1 + (1000 - 2) * 9999 / 262142 */
	assert_string_equal(get("v2/herd.slice/a1.web/cpu.weight"), "39");
	assert_string_equal(get("v2/herd.slice/a1.web/pids.max"), "64");
	/* controllers were enabled for the children (last write wins on a
	 * plain file) */
	assert_string_equal(get("v2/herd.slice/cgroup.subtree_control"), "+pids");
	const char *const *procs = cgroup_procs_files(cg);
	assert_non_null(procs[0]);
	assert_null(procs[1]);
	assert_non_null(strstr(procs[0], "/v2/herd.slice/a1.web/cgroup.procs"));

	put("v2/herd.slice/a1.web/memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n");
	put("v2/herd.slice/a1.web/cpu.stat", "usage_usec 1500\nuser_usec 1000\n");
	put("v2/herd.slice/a1.web/memory.current", "4096\n");
	struct cgroup_stats st;
	assert_int_equal(cgroup_stats(cg, &st), 0);
	assert_int_equal(st.oom_kills, 1);
	assert_int_equal(st.cpu_usage_ns, 1500000);
	assert_int_equal(st.memory_current, 4096);
	assert_int_equal(st.memory_peak, -1);   /* empty file: unknown */

	/* cgroup.kill is used when present; the empty group is then done */
	assert_int_equal(cgroup_kill(cg, 100, &err), 0);
	assert_string_equal(get("v2/herd.slice/a1.web/cgroup.kill"), "1");
	cgroup_free(cg);
}

static void test_v2_memory_only_and_missing_controller(void **state)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/v2", root);
	put("v2/cgroup.controllers", "cpu memory pids\n");
	fake_v2_group("a2.db");
	struct cgroup_config cfg = { .root = p };
	struct cgroup_limits lim = { .memory_bytes = 100 << 20 };
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(cgroup_create(&cfg, "a2.db", &lim, &cg, &err), 0);
	/* no memory_max: memory is the hard limit, no reservation */
	assert_string_equal(get("v2/herd.slice/a2.db/memory.max"), "104857600");
	assert_string_equal(get("v2/herd.slice/a2.db/memory.low"), "");
	assert_string_equal(get("v2/herd.slice/a2.db/cpu.weight"), "");
	cgroup_free(cg);

	/* a new group without a memory controller: the limit cannot hold */
	cg = NULL;
	assert_int_equal(cgroup_create(&cfg, "a3.nomem", &lim, &cg, &err), -ENOENT);
	assert_null(cg);
	assert_non_null(strstr(err.msg, "memory.max"));
	assert_null(get("v2/herd.slice/a3.nomem/cgroup.procs"));

	assert_int_equal(cgroup_create(&cfg, "../evil", &lim, &cg, &err), -EINVAL);
	struct cgroup_config bad = { .root = p, .parent = "../x" };
	assert_int_equal(cgroup_create(&bad, "ok", &lim, &cg, &err), -EINVAL);
}

static void test_v1_limits_and_devices(void **state)
{
	static const char *const ctrls[] = { "memory", "cpu", "cpuacct", "pids", "devices",
					     "freezer" };
	char rel[256], p[256];
	for (size_t i = 0; i < 6; i++) {
		snprintf(rel, sizeof(rel), "v1/%s/cgroup.procs", ctrls[i]);
		put(rel, "");
	}
	static const char *const files[] = {
		"memory/herd/b1.t/memory.limit_in_bytes", "memory/herd/b1.t/memory.soft_limit_in_bytes",
		"memory/herd/b1.t/memory.oom_control", "memory/herd/b1.t/memory.usage_in_bytes",
		"cpu/herd/b1.t/cpu.shares", "pids/herd/b1.t/pids.max",
		"devices/herd/b1.t/devices.deny", "devices/herd/b1.t/devices.allow",
		"cpuacct/herd/b1.t/cpuacct.usage",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "v1/%s", files[i]);
		put(rel, "");
	}
	snprintf(p, sizeof(p), "%s/v1", root);
	struct cgroup_config cfg = { .root = p };
	struct cgroup_limits lim = { .memory_bytes = 64 << 20, .memory_max_bytes = 128 << 20,
				     .cpu_mhz = 500, .pids_max = 10 };
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(cgroup_create(&cfg, "b1.t", &lim, &cg, &err), 0);
	assert_int_equal(cgroup_version(cg), 1);
	assert_string_equal(get("v1/memory/herd/b1.t/memory.limit_in_bytes"), "134217728");
	assert_string_equal(get("v1/memory/herd/b1.t/memory.soft_limit_in_bytes"), "67108864");
	assert_string_equal(get("v1/cpu/herd/b1.t/cpu.shares"), "500");
	assert_string_equal(get("v1/pids/herd/b1.t/pids.max"), "10");
	int n = 0;
	for (const char *const *f = cgroup_procs_files(cg); *f; f++)
		n++;
	assert_int_equal(n, 6);

	const char *devs[] = { "/dev/null" };
	assert_int_equal(cgroup_allow_devices(cg, devs, 1, &err), 0);
	assert_string_equal(get("v1/devices/herd/b1.t/devices.deny"), "a");
	assert_string_equal(get("v1/devices/herd/b1.t/devices.allow"), "c 136:* rwm");
	const char *notdev[] = { "/etc/passwd" };
	put("v1/devices/herd/b1.t/devices.deny", "");
	assert_int_equal(cgroup_allow_devices(cg, notdev, 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/etc/passwd"));
	assert_string_equal(get("v1/devices/herd/b1.t/devices.deny"), "");  /* unchanged */

	put("v1/memory/herd/b1.t/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	put("v1/cpuacct/herd/b1.t/cpuacct.usage", "123456\n");
	struct cgroup_stats st;
	assert_int_equal(cgroup_stats(cg, &st), 0);
	assert_int_equal(st.oom_kills, 3);
	assert_int_equal(st.cpu_usage_ns, 123456);
	cgroup_free(cg);
}

/* v2: a task's cores and memory nodes go to its group's cpuset files,
 * the cpuset controller is enabled for herd's groups; a group without
 * cores inherits (an empty file); where the controller is not there
 * nothing is written and nothing fails. */
static void test_v2_cpuset(void **state)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/v2c", root);
	put("v2c/cgroup.controllers", "cpuset cpu memory pids\n");
	put("v2c/cgroup.subtree_control", "");
	put("v2c/herd.slice/cgroup.controllers", "cpuset cpu memory pids\n");
	put("v2c/herd.slice/cgroup.subtree_control", "");
	put("v2c/herd.slice/c1.pinned/cgroup.procs", "");
	put("v2c/herd.slice/c1.pinned/cpuset.cpus", "");
	put("v2c/herd.slice/c1.pinned/cpuset.mems", "");
	put("v2c/herd.slice/c2.shared/cgroup.procs", "");
	put("v2c/herd.slice/c2.shared/cpuset.cpus", "5");
	put("v2c/herd.slice/c2.shared/cpuset.mems", "1");
	struct cgroup_config cfg = { .root = p };
	struct cgroup_limits lim = { .cpuset_cpus = "4-7,12", .cpuset_mems = "0" };
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(cgroup_create(&cfg, "c1.pinned", &lim, &cg, &err), 0);
	assert_true(cgroup_has_cpuset(cg));
	assert_string_equal(get("v2c/herd.slice/c1.pinned/cpuset.cpus"), "4-7,12");
	assert_string_equal(get("v2c/herd.slice/c1.pinned/cpuset.mems"), "0");
	/* the root's children get cpuset (the first word written to a
	 * plain file stands for all of them here) */
	assert_non_null(strstr(get("v2c/cgroup.subtree_control"), "+"));
	/* moved to other cores while it runs */
	assert_int_equal(cgroup_set_cpuset(cg, "1-2", "0-1", &err), 0);
	assert_string_equal(get("v2c/herd.slice/c1.pinned/cpuset.cpus"), "1-2");
	assert_string_equal(get("v2c/herd.slice/c1.pinned/cpuset.mems"), "0-1");
	cgroup_free(cg);

	/* no cores: the parent's (an emptied file), also for a reused group */
	assert_int_equal(cgroup_create(&cfg, "c2.shared", NULL, &cg, &err), 0);
	assert_string_equal(get("v2c/herd.slice/c2.shared/cpuset.cpus"), "\n");
	assert_string_equal(get("v2c/herd.slice/c2.shared/cpuset.mems"), "\n");
	cgroup_free(cg);

	/* no cpuset controller: nothing to write, no error */
	put("v2c/herd.slice/c3.nocpuset/cgroup.procs", "");
	assert_int_equal(cgroup_create(&cfg, "c3.nocpuset", &lim, &cg, &err), 0);
	assert_false(cgroup_has_cpuset(cg));
	assert_null(get("v2c/herd.slice/c3.nocpuset/cpuset.cpus"));
	cgroup_free(cg);
}

/* v1: the cpuset hierarchy's groups start with empty cpus and mems, and
 * a process cannot join one until both are set: herd's parent gets the
 * root's, a task with cores gets its cores and nodes, one without gets
 * its parent's; the task joins the cpuset hierarchy too. */
static void test_v1_cpuset(void **state)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/v1c", root);
	put("v1c/memory/cgroup.procs", "");
	put("v1c/cpuset/cgroup.procs", "");
	put("v1c/cpuset/cpuset.cpus", "0-15\n");
	put("v1c/cpuset/cpuset.mems", "0-1\n");
	/* what the kernel creates with each group: empty files */
	put("v1c/cpuset/herd/cpuset.cpus", "");
	put("v1c/cpuset/herd/cpuset.mems", "");
	put("v1c/cpuset/herd/d1.pinned/cpuset.cpus", "");
	put("v1c/cpuset/herd/d1.pinned/cpuset.mems", "");
	put("v1c/cpuset/herd/d2.shared/cpuset.cpus", "");
	put("v1c/cpuset/herd/d2.shared/cpuset.mems", "");
	struct cgroup_config cfg = { .root = p };
	struct cgroup_limits lim = { .cpuset_cpus = "8-9", .cpuset_mems = "1" };
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(cgroup_create(&cfg, "d1.pinned", &lim, &cg, &err), 0);
	assert_true(cgroup_has_cpuset(cg));
	assert_string_equal(get("v1c/cpuset/herd/cpuset.cpus"), "0-15\n");
	assert_string_equal(get("v1c/cpuset/herd/cpuset.mems"), "0-1\n");
	assert_string_equal(get("v1c/cpuset/herd/d1.pinned/cpuset.cpus"), "8-9");
	assert_string_equal(get("v1c/cpuset/herd/d1.pinned/cpuset.mems"), "1");
	int joined = 0;
	for (const char *const *f = cgroup_procs_files(cg); *f; f++)
		joined += strstr(*f, "/cpuset/herd/d1.pinned/cgroup.procs") != NULL;
	assert_int_equal(joined, 1);
	cgroup_free(cg);

	assert_int_equal(cgroup_create(&cfg, "d2.shared", NULL, &cg, &err), 0);
	assert_string_equal(get("v1c/cpuset/herd/d2.shared/cpuset.cpus"), "0-15\n");
	assert_string_equal(get("v1c/cpuset/herd/d2.shared/cpuset.mems"), "0-1\n");
	/* the shared cores shrink while a pinned task runs */
	assert_int_equal(cgroup_set_cpuset(cg, "0-7,10-15", NULL, &err), 0);
	assert_string_equal(get("v1c/cpuset/herd/d2.shared/cpuset.cpus"), "0-7,10-15");
	cgroup_free(cg);

	/* a group made before herd used the cpuset hierarchy (an older
	 * agent's task): opened without it, so joining it cannot fail there */
	put("v1c/memory/herd/d3.old/cgroup.procs", "");
	assert_int_equal(cgroup_open(&cfg, "d3.old", &cg, &err), 0);
	assert_false(cgroup_has_cpuset(cg));
	int n = 0;
	for (const char *const *f = cgroup_procs_files(cg); *f; f++, n++)
		assert_null(strstr(*f, "/cpuset/"));
	assert_int_equal(n, 1);
	assert_int_equal(cgroup_set_cpuset(cg, "1", NULL, &err), 0);   /* nothing to set */
	cgroup_free(cg);
	assert_int_equal(cgroup_open(&cfg, "d1.pinned", &cg, &err), 0);
	assert_true(cgroup_has_cpuset(cg));
	cgroup_free(cg);
}

/* Starts `sh -c script` held until go() writes a line, so that it joins
 * the group before it forks. */
static pid_t spawn_held(const char *script, int *go_fd)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[0], 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	char *full = NULL;
	assert_true(asprintf(&full, "read x; %s", script) > 0);
	char *argv[] = { "/bin/sh", "-c", full, NULL };
	pid_t pid;
	assert_int_equal(posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	free(full);
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

static size_t count_pids(const struct cgroup *cg)
{
	pid_t *pids = NULL;
	size_t n = 0;
	if (cgroup_pids(cg, &pids, &n) < 0)
		return 0;
	free(pids);
	return n;
}

static void real_tree_kill(const struct cgroup_config *cfg, const char *name)
{
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	struct cgroup_limits lim = { .pids_max = 50 };
	if (cgroup_create(cfg, name, cfg->version == 1 ? &lim : NULL, &cg, &err) < 0)
		fail_msg("create: %s", err.msg);
	int go;
	pid_t pid = spawn_held("sleep 100 & sleep 100 & setsid sleep 100 & wait", &go);
	assert_int_equal(cgroup_add_pid(cg, pid, &err), 0);
	assert_int_equal(write(go, "\n", 1), 1);
	close(go);
	for (int i = 0; i < 2000 && count_pids(cg) < 4; i++)
		usleep(1000);
	assert_int_equal(count_pids(cg), 4);  /* sh and three sleeps, one in its own session */
	assert_int_equal(cgroup_kill(cg, 2000, &err), 0);
	assert_int_equal(count_pids(cg), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(cgroup_remove(cg, &err), 0);
	assert_int_equal(access(cgroup_path(cg), F_OK), -1);
	cgroup_free(cg);
}

static void test_real_v1(void **state)
{
	if (geteuid() != 0 || cgroup_detect_version(NULL) != 1)
		skip();  /* needs root and a cgroup v1 machine */
	struct cgroup_config cfg = { .version = 1, .parent = "herd-test" };
	char name[64];
	snprintf(name, sizeof(name), "kill.%d", (int)getpid());
	real_tree_kill(&cfg, name);

	/* OOM: 32 MiB hard limit, a shell that holds 100 MB */
	snprintf(name, sizeof(name), "oom.%d", (int)getpid());
	struct cgroup_limits lim = { .memory_bytes = 32 << 20 };
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(cgroup_create(&cfg, name, &lim, &cg, &err), 0);
	struct cgroup_stats st;
	assert_int_equal(cgroup_stats(cg, &st), 0);
	assert_int_equal(st.oom_kills, 0);
	int go;
	pid_t pid = spawn_held("x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo ${#x}", &go);
	assert_int_equal(cgroup_add_pid(cg, pid, &err), 0);
	assert_int_equal(write(go, "\n", 1), 1);
	close(go);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(cgroup_stats(cg, &st), 0);
	assert_true(st.oom_kills >= 1);
	assert_true(st.memory_peak > 16 << 20 && st.memory_peak <= 32 << 20);
	assert_int_equal(cgroup_kill(cg, 2000, &err), 0);
	assert_int_equal(cgroup_remove(cg, &err), 0);
	cgroup_free(cg);
	rmdir("/sys/fs/cgroup/memory/herd-test");
	rmdir("/sys/fs/cgroup/cpu/herd-test");
	rmdir("/sys/fs/cgroup/cpuacct/herd-test");
	rmdir("/sys/fs/cgroup/pids/herd-test");
	rmdir("/sys/fs/cgroup/devices/herd-test");
	rmdir("/sys/fs/cgroup/freezer/herd-test");
	rmdir("/sys/fs/cgroup/cpuset/herd-test");
}

/* A real cgroup2 mount: the hybrid one at /sys/fs/cgroup/unified here, or
 * /sys/fs/cgroup itself on a v2 machine.  Kill and removal only: limits
 * need controllers a hybrid mount does not have. */
static void test_real_v2(void **state)
{
	const char *mnt = cgroup_detect_version(NULL) == 2 ? "/sys/fs/cgroup"
			: "/sys/fs/cgroup/unified";
	char probe[128];
	snprintf(probe, sizeof(probe), "%s/cgroup.procs", mnt);
	if (geteuid() != 0 || access(probe, W_OK) < 0)
		skip();  /* needs root and a cgroup2 mount */
	struct cgroup_config cfg = { .root = mnt, .version = 2, .parent = "herd-test.slice" };
	char name[64];
	snprintf(name, sizeof(name), "kill.%d", (int)getpid());
	real_tree_kill(&cfg, name);
	char parent[160];
	snprintf(parent, sizeof(parent), "%s/herd-test.slice", mnt);
	rmdir(parent);
}

static int setup(void **state)
{
	return mkdtemp(root) ? 0 : -1;
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
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_v2_limits_memory_max),
		cmocka_unit_test(test_v2_memory_only_and_missing_controller),
		cmocka_unit_test(test_v1_limits_and_devices),
		cmocka_unit_test(test_v2_cpuset),
		cmocka_unit_test(test_v1_cpuset),
		cmocka_unit_test(test_real_v1),
		cmocka_unit_test(test_real_v2),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
