/* bench_exec: task start overhead of the exec and raw_exec drivers.
 *
 *   bench_exec SHIM [N [DRIVER]]
 *
 * Starts /bin/true N times (default 200) through each driver (or only
 * DRIVER: raw_exec or exec) and reports the p50, p90 and p99 of start():
 * from the call until the driver returns with the task running (shim
 * spawned, namespaces, mounts and cgroup set up, task exec'd).  Waiting for
 * the exit and destroy are not counted.  It also reports the CPU time per
 * task of the whole start-wait-destroy cycle: "agent" is this process (what
 * the agent spends: spawning the shim, reading its status, reaping),
 * "shim+task" the reaped children (the shim and /bin/true).  On a shared
 * machine the latencies are noisy; the CPU figures much less so.  exec
 * needs root; it is skipped otherwise.  Prints one line per driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drivers/driver.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double cpu_ms(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void run(const char *driver, const struct driver_env *env, const char *dir, long n)
{
	static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
	char task_dir[512], alloc[512], logs[600], state[512];
	snprintf(alloc, sizeof(alloc), "%s/alloc", dir);
	snprintf(task_dir, sizeof(task_dir), "%s/web", dir);
	snprintf(logs, sizeof(logs), "%s/logs", alloc);
	snprintf(state, sizeof(state), "%s/state", dir);
	mkdir(alloc, 0755);
	mkdir(task_dir, 0755);
	mkdir(logs, 0755);
	mkdir(state, 0755);
	const struct driver_ops *d = driver_find(driver);
	struct driver_task t = {
		.name = "bench", .command = "/bin/true", .env = envp, .task_dir = task_dir,
		.log_dir = logs, .state_dir = state, .log_max_files = 2,
		.log_max_file_size = 1 << 20, .alloc_dir = alloc, .alloc_id = "bench",
		.memory_mb = 256, .cpu_mhz = 500, .pids_max = 100,
	};
	double *ms = calloc((size_t)n, sizeof(double));
	double self0 = cpu_ms(RUSAGE_SELF), children0 = cpu_ms(RUSAGE_CHILDREN);
	for (long i = 0; i < n; i++) {
		struct driver_handle *h;
		struct herd_err err = { 0 };
		struct driver_exit ex;
		double t0 = now_ms();
		if (d->start(env, &t, &h, &err) < 0) {
			fprintf(stderr, "bench_exec: %s: %s\n", driver, err.msg);
			exit(1);
		}
		ms[i] = now_ms() - t0;
		d->wait(h, -1, &ex, &err);
		d->destroy(h);
	}
	double self = cpu_ms(RUSAGE_SELF) - self0, children = cpu_ms(RUSAGE_CHILDREN) - children0;
	qsort(ms, (size_t)n, sizeof(double), cmp);
	printf("%-8s starts %ld  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  "
	       "CPU/task: agent %.3f ms, shim+task %.3f ms\n", driver, n,
	       ms[n / 2], ms[n * 9 / 10], ms[n * 99 / 100], self / (double)n,
	       children / (double)n);
	free(ms);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_exec SHIM [N]\n");
		return 2;
	}
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
	if (n < 1)
		n = 1;
	const char *shim[] = { argv[1], NULL };
	struct driver_env env = { .shim_argv = shim, .raw_exec_enabled = true };
	char dir[] = "/tmp/herd-bench-exec-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	const char *only = argc > 3 ? argv[3] : NULL;
	if (!only || !strcmp(only, "raw_exec"))
		run("raw_exec", &env, dir, n);
	if (!only || !strcmp(only, "exec")) {
		if (geteuid() == 0)
			run("exec", &env, dir, n);
		else
			printf("exec     skipped: needs root\n");
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
