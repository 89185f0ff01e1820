/* The raw_exec usage reader: /proc/<pid>/stat parsing, session sums over
 * a made-up /proc tree, and raw_exec's stats op on a real task (two
 * processes in its session, one of them holding ~24 MiB and spinning).
 * GPU memory attribution: a process's lineage and cgroups read from a
 * made-up /proc (driver_proc_read), and which task each driver's owns
 * gives it to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drivers/drivers-int.h"

static char root[] = "/tmp/herd-procstats-XXXXXX";

/* A stat line as the kernel writes it: pid (comm) state ppid pgrp
 * session tty tpgid flags minflt cminflt majflt cmajflt utime stime
 * cutime cstime priority nice threads itrealvalue starttime vsize rss. */
static void fake_proc(const char *pid, const char *comm, int session, int utime, int stime,
		      int cutime, int rss_pages, long hwm_kb)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/proc/%s", root, pid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc/%s/stat", root, pid);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "%s (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 %d %d %d 0 20 0 1 0 12345 "
		"1000000 %d 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		pid, comm, session, session, utime, stime, cutime, rss_pages);
	fclose(f);
	snprintf(path, sizeof(path), "%s/proc/%s/status", root, pid);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "Name:\t%s\nVmPeak:\t  99999 kB\nVmHWM:\t  %ld kB\nVmRSS:\t  100 kB\n", comm,
		hwm_kb);
	fclose(f);
}

static void test_parse_stat(void **state)
{
	struct proc_stat_fields f = { 0 };
	/* a command name with spaces and parentheses */
	const char *line = "77 (a) b (c)) R 1 77 77 0 -1 0 0 0 0 0 250 50 7 3 20 0 1 0 "
			   "999 4096 321 0 0\n";
	(void)state;
	assert_int_equal(proc_parse_stat(line, &f), 0);
	assert_int_equal(f.session, 77);
	assert_int_equal(f.ppid, 1);
	assert_int_equal(f.utime_ticks, 250);
	assert_int_equal(f.stime_ticks, 50);
	assert_int_equal(f.cutime_ticks, 7);
	assert_int_equal(f.cstime_ticks, 3);
	assert_int_equal(f.rss_pages, 321);
	/* cut short, or no command name: refused, *out untouched */
	f.session = -5;
	assert_int_equal(proc_parse_stat("77 (x) R 1 77 77 0 -1 0 0", &f), -EINVAL);
	assert_int_equal(proc_parse_stat("77 x R 1 77 77", &f), -EINVAL);
	assert_int_equal(proc_parse_stat("", &f), -EINVAL);
	assert_int_equal(f.session, -5);
}

static void test_session_sum_fake_proc(void **state)
{
	char proc[256];
	struct proc_usage u;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	(void)state;
	snprintf(proc, sizeof(proc), "%s/proc", root);
	assert_int_equal(mkdir(proc, 0755), 0);
	fake_proc("4242", "sh", 4242, 10, 5, 2, 100, 2048);
	fake_proc("4250", "py (worker)", 4242, 200, 20, 0, 7000, 30000);
	fake_proc("999", "other", 999, 5000, 5000, 0, 99999, 1);
	/* a non-process entry and a vanished process are skipped */
	snprintf(proc, sizeof(proc), "%s/proc/self-ish", root);
	assert_int_equal(mkdir(proc, 0755), 0);
	snprintf(proc, sizeof(proc), "%s/proc/5000", root);
	assert_int_equal(mkdir(proc, 0755), 0);

	snprintf(proc, sizeof(proc), "%s/proc", root);
	assert_int_equal(proc_session_usage(proc, 4242, &u), 0);
	assert_int_equal(u.nprocs, 2);
	assert_int_equal(u.rss_bytes, (int64_t)(100 + 7000) * page);
	assert_int_equal(u.cpu_ns, (int64_t)(10 + 5 + 2 + 200 + 20) * (1000000000LL / tick));
	assert_int_equal(u.leader_hwm_bytes, 2048 * 1024);
	assert_int_equal(proc_session_usage(proc, 999, &u), 0);
	assert_int_equal(u.nprocs, 1);
	assert_int_equal(proc_session_usage(proc, 31337, &u), -ESRCH);
	assert_int_equal(proc_session_usage("/nonexistent/proc", 1, &u), -ENOENT);
}

/* A process of the attribution tree: pid, parent, session, cgroup file
 * ("" for none). */
static void owner_proc(const char *proc, int pid, int ppid, int session, const char *cgroups)
{
	char path[512];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%d", proc, pid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/stat", proc, pid);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "%d (gpu job) S %d %d %d 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 100 10 0\n",
		pid, ppid, session, session);
	fclose(f);
	if (!*cgroups)
		return;
	snprintf(path, sizeof(path), "%s/%d/cgroup", proc, pid);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(cgroups, f);
	fclose(f);
}

static void test_gpu_process_owner(void **state)
{
	const char *cid = "3f2a9c0d1e4b5a6978c0d1e2f3a4b5c6d7e8f90123456789abcdef0123456789";
	const struct driver_ops *raw = driver_find("raw_exec"), *exec = driver_find("exec"),
				*docker = driver_find("docker");
	struct driver_state rs = { .task_pid = 100 }, es = { .task_pid = 300 },
			    ds = { .task_pid = 0 };
	struct driver_proc p;
	char proc[256], cg[256];
	(void)state;
	snprintf(proc, sizeof(proc), "%s/owner", root);
	assert_int_equal(mkdir(proc, 0755), 0);
	snprintf(es.cgroup, sizeof(es.cgroup), "a1b2.train");
	snprintf(ds.container_id, sizeof(ds.container_id), "%s", cid);
	/* raw_exec task 100: a grandchild in its session, a child that left
	 * it (setsid), a process of its session whose parent ended */
	owner_proc(proc, 100, 50, 100, "0::/user.slice\n");
	owner_proc(proc, 101, 100, 100, "");
	owner_proc(proc, 102, 101, 100, "0::/user.slice\n");
	owner_proc(proc, 103, 101, 103, "");
	owner_proc(proc, 104, 1, 100, "");
	owner_proc(proc, 50, 1, 50, "");
	/* exec task: in its cgroup (v1 lines), or a look-alike name */
	owner_proc(proc, 301, 1, 301,
		   "12:memory:/herd/a1b2.train\n11:cpu,cpuacct:/herd/a1b2.train\n");
	owner_proc(proc, 302, 1, 302, "0::/herd.slice/a1b2.train2\n");
	/* docker: systemd and cgroupfs cgroup names */
	snprintf(cg, sizeof(cg), "0::/system.slice/docker-%s.scope\n", cid);
	owner_proc(proc, 401, 1, 401, cg);
	snprintf(cg, sizeof(cg), "4:memory:/docker/%s\n", cid);
	owner_proc(proc, 402, 1, 402, cg);
	/* nobody's */
	owner_proc(proc, 900, 50, 50, "0::/user.slice/session-1.scope\n");

	assert_int_equal(driver_proc_read(proc, 102, &p), 0);
	assert_int_equal(p.pid, 102);
	assert_int_equal(p.session, 100);
	assert_int_equal(p.nr_ancestors, 3);   /* 101, 100, 50; pid 1 ends it */
	assert_int_equal(p.ancestors[0], 101);
	assert_int_equal(p.ancestors[2], 50);
	assert_string_equal(p.cgroups, "0::/user.slice\n");
	assert_int_equal(driver_proc_read(proc, 31337, &p), -ESRCH);
	assert_int_equal(driver_proc_read(proc, 0, &p), -ESRCH);

	for (int pid = 100; pid <= 104; pid++) {
		assert_int_equal(driver_proc_read(proc, pid, &p), 0);
		assert_true(raw->owns(&rs, &p));
		assert_false(exec->owns(&es, &p));
		assert_false(docker->owns(&ds, &p));
	}
	assert_int_equal(driver_proc_read(proc, 301, &p), 0);
	assert_true(exec->owns(&es, &p));
	assert_false(raw->owns(&rs, &p));
	assert_int_equal(driver_proc_read(proc, 302, &p), 0);
	assert_false(exec->owns(&es, &p));
	for (int pid = 401; pid <= 402; pid++) {
		assert_int_equal(driver_proc_read(proc, pid, &p), 0);
		assert_true(docker->owns(&ds, &p));
		assert_false(exec->owns(&es, &p));
	}
	assert_int_equal(driver_proc_read(proc, 900, &p), 0);
	assert_false(raw->owns(&rs, &p));
	assert_false(exec->owns(&es, &p));
	assert_false(docker->owns(&ds, &p));
	/* the ancestor 50 of the task is not the task's */
	assert_int_equal(driver_proc_read(proc, 50, &p), 0);
	assert_false(raw->owns(&rs, &p));
	/* an exec task without a cgroup: its lineage */
	es.cgroup[0] = '\0';
	es.task_pid = 101;
	assert_int_equal(driver_proc_read(proc, 103, &p), 0);
	assert_true(exec->owns(&es, &p));
}

static void test_cpu_percent(void **state)
{
	struct driver_stats a = { .cpu_total_ns = 1000000000, .sampled_at_ns = 5000000000 };
	struct driver_stats b = { .cpu_total_ns = 1500000000, .sampled_at_ns = 6000000000 };
	(void)state;
	assert_true(driver_stats_cpu_percent(&a, &b) > 49.99 &&
		    driver_stats_cpu_percent(&a, &b) < 50.01);
	/* restarted (counter back), no time, unknown: cannot say */
	assert_true(driver_stats_cpu_percent(&b, &a) < 0);
	assert_true(driver_stats_cpu_percent(&a, &a) < 0);
	a.cpu_total_ns = -1;
	assert_true(driver_stats_cpu_percent(&a, &b) < 0);
}

/* raw_exec's stats op on a real task: a shell whose child (a 24 MiB
 * variable, then spinning) shares its session. */
static void test_raw_exec_stats(void **state)
{
	const char *shim = getenv("HERD_TASK_SHIM");
	const char *shim_argv[2] = { shim, NULL };
	struct driver_env denv = { .shim_argv = shim_argv, .raw_exec_enabled = true };
	const char *env[] = { "PATH=/usr/bin:/bin", NULL };
	/* a child shell holds a 24 MiB variable and spins */
	const char *args[] = { "-c", "sh -c 'x=$(head -c 25165824 /dev/zero | tr \"\\\\0\" a); "
			       "while :; do :; done' & wait", NULL };
	struct driver_task t = { .name = "spin", .command = "/bin/sh", .args = args, .env = env,
		.task_dir = root, .log_dir = root, .state_dir = root, .log_max_files = 1,
		.log_max_file_size = 1 << 20 };
	const struct driver_ops *d = driver_find("raw_exec");
	struct driver_handle *h = NULL;
	struct driver_stats s1, s2;
	struct driver_exit ex;
	struct herd_err err = { 0, "" };
	(void)state;
	assert_non_null(shim);
	assert_non_null(d->stats);
	if (d->start(&denv, &t, &h, &err) < 0)
		fail_msg("start: %s", err.msg);
	/* wait until the child holds its buffer (up to 10 s) */
	for (int i = 0; i < 100; i++) {
		if (d->stats(&denv, driver_handle_state(h), &s1, &err) < 0)
			fail_msg("stats: %s", err.msg);
		if (s1.memory_bytes >= 20 * 1024 * 1024)
			break;
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
	}
	assert_true(s1.memory_bytes >= 20 * 1024 * 1024);
	assert_int_equal(s1.memory_limit_bytes, -1);
	assert_int_equal(s1.memory_peak_bytes, -1);   /* two processes: no tree peak */
	assert_true(s1.cpu_percent < 0);
	struct timespec ts = { 0, 500000000 };
	nanosleep(&ts, NULL);
	assert_int_equal(d->stats(&denv, driver_handle_state(h), &s2, &err), 0);
	assert_true(s2.cpu_total_ns > s1.cpu_total_ns);
	/* a spinning task on a loaded 2-core CI machine may get little CPU in
	 * half a second: the share must be positive, its size is not checked */
	assert_true(driver_stats_cpu_percent(&s1, &s2) > 0.0);
	assert_int_equal(d->stop(h, SIGKILL, 0, &ex, &err), 0);
	/* ended: -ESRCH, also for a state whose pid was reused */
	struct driver_state st = *driver_handle_state(h);
	assert_int_equal(d->stats(&denv, &st, &s1, &err), -ESRCH);
	/* pid 1 runs, with a start time far from the task's (start times
	 * have clock-tick resolution: this test process may have started in
	 * the same tick as its task, so getpid() would not do) */
	st.task_pid = 1;
	assert_int_equal(d->stats(&denv, &st, &s1, &err), -ESRCH);
	d->destroy(h);
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(root) ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_session_sum_fake_proc),
		cmocka_unit_test(test_cpu_percent),
		cmocka_unit_test(test_gpu_process_owner),
		cmocka_unit_test(test_raw_exec_stats),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
