/* The docker driver against a real Docker Engine.  Not a meson test on its
 * own: tests/e2e/test_docker.py starts dockerd, imports a busybox image
 * and runs this binary with
 *   HERD_DOCKER_SOCKET  the engine's socket
 *   HERD_DOCKER_IMAGE   an image with busybox's sh, echo, cat, sleep, dd
 *   HERD_DOCKER_WORK    an empty directory for allocation dirs
 * Without them every test fails (it never passes by skipping). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/docker.h"
#include "drivers/driver.h"

static const char *sock, *image, *work;
static struct docker_config dc;
static struct driver_env env;

struct alloc {
	char id[64];
	char dir[512], shared[512], logs[512], task[512];
};

static void mkdirs(const char *path)
{
	char *cmd = xasprintf("mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void alloc_init(struct alloc *a, const char *id)
{
	snprintf(a->id, sizeof(a->id), "%s-%ld", id, (long)getpid());
	snprintf(a->dir, sizeof(a->dir), "%s/%s", work, a->id);
	snprintf(a->shared, sizeof(a->shared), "%s/alloc", a->dir);
	snprintf(a->logs, sizeof(a->logs), "%s/alloc/logs", a->dir);
	snprintf(a->task, sizeof(a->task), "%s/main", a->dir);
	mkdirs(a->logs);
	char *p = xasprintf("%s/local", a->task);
	mkdirs(p);
	free(p);
	p = xasprintf("%s/secrets", a->task);
	mkdirs(p);
	free(p);
}

static const char *task_env[] = { "HERD_TASK_NAME=main", "HERD_ALLOC_DIR=/on/the/host",
				   "NVIDIA_VISIBLE_DEVICES=void", NULL };

static struct driver_task task_for(struct alloc *a, json_t *cfg, int64_t memory_mb)
{
	struct driver_task t = {
		.name = "main", .env = task_env, .task_dir = a->task, .log_dir = a->logs,
		.state_dir = a->task, .log_max_files = 2, .log_max_file_size = 1 << 20,
		.config = cfg, .alloc_id = a->id, .alloc_dir = a->shared, .memory_mb = memory_mb,
		.cpu_mhz = 100,
	};
	return t;
}

static char *slurp(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	free(path);
	if (!f)
		return xstrdup("");
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(f);
	return strbuf_detach(&sb, NULL);
}

static json_t *sh_config(const char *script)
{
	return json_pack("{s:s, s:s, s:[s,s], s:s}", "image", image, "command", "/bin/sh",
			 "args", "-c", script, "network_mode", "none");
}

/* A task runs, reads a file a prestart task left in the alloc dir, writes
 * both streams; logs and the exit code come back. */
static void test_run_logs_alloc_dir(void **state)
{
	struct alloc a;
	alloc_init(&a, "run");
	char *input = xasprintf("%s/input.txt", a.shared);
	FILE *f = fopen(input, "we");
	assert_non_null(f);
	fputs("written by prestart\n", f);
	fclose(f);
	free(input);
	json_t *cfg = sh_config("echo out; echo err >&2; cat /alloc/input.txt; "
				"echo \"dir=$HERD_ALLOC_DIR\"; exit 3");
	json_object_set_new(cfg, "env", json_pack("{s:s}", "EXTRA", "1"));
	struct driver_task t = task_for(&a, cfg, 64);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	int rc = docker_ops.start(&env, &t, &h, &err);
	if (rc < 0)
		fail_msg("start: %s", err.msg);
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 20000, &ex, &err), 1);
	assert_int_equal(ex.exit_code, 3);
	assert_false(ex.oom_killed);
	assert_true(ex.finished_ns > 0);
	docker_ops.destroy(h);
	char *out = slurp(a.logs, "main.stdout.0");
	char *errs = slurp(a.logs, "main.stderr.0");
	assert_string_equal(out, "out\nwritten by prestart\ndir=/alloc\n");
	assert_string_equal(errs, "err\n");
	free(out);
	free(errs);
	json_decref(cfg);
}

/* A memory limit kills a hog, and the driver says it was the OOM killer. */
static void test_oom(void **state)
{
	struct alloc a;
	alloc_init(&a, "oom");
	json_t *cfg = sh_config("echo start; exec dd if=/dev/zero of=/dev/null bs=96M count=1");
	struct driver_task t = task_for(&a, cfg, 16);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	if (docker_ops.start(&env, &t, &h, &err) < 0)
		fail_msg("start: %s", err.msg);
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 20000, &ex, &err), 1);
	docker_ops.destroy(h);
	char *out = slurp(a.logs, "main.stdout.0");
	if (!ex.oom_killed || ex.exit_code != 137)
		fail_msg("not OOM killed: exit %d, stdout \"%s\"", ex.exit_code, out);
	assert_string_equal(out, "start\n");
	free(out);
	json_decref(cfg);
}

static bool ticks_in_order(const char *text, int *count)
{
	int want = 0;
	const char *p = text;
	while ((p = strstr(p, "tick "))) {
		if (strtol(p + 5, NULL, 10) != want)
			return false;
		want++;
		p += 5;
	}
	*count = want;
	return true;
}

/* The agent goes away (the handle is forgotten, the container keeps
 * running); recover re-attaches, logs continue without repeats, stop
 * escalates to SIGKILL for a PID 1 that ignores SIGTERM. */
static void test_recover(void **state)
{
	struct alloc a;
	alloc_init(&a, "recover");
	json_t *cfg = sh_config("i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done");
	struct driver_task t = task_for(&a, cfg, 32);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	if (docker_ops.start(&env, &t, &h, &err) < 0)
		fail_msg("start: %s", err.msg);
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 600, &ex, &err), 0);
	char *js = driver_state_to_json(driver_handle_state(h));
	docker_ops.destroy(h); /* the agent is gone */
	struct timespec ts = { 0, 700 * 1000000L };
	nanosleep(&ts, NULL); /* output while nobody follows */

	struct driver_state st;
	assert_int_equal(driver_state_from_json(js, &st, &err), 0);
	free(js);
	if (docker_ops.recover(&env, &st, &h, &err) < 0)
		fail_msg("recover: %s", err.msg);
	assert_int_equal(docker_ops.wait(h, 600, &ex, &err), 0); /* still running */
	struct docker_stats s;
	if (docker_stats(h, &s, &err) < 0)
		fail_msg("stats: %s", err.msg);
	assert_true(s.memory_usage > 0);
	assert_true(s.memory_limit == 32LL << 20);
	assert_true(s.cpu_total_ns > 0);
	assert_int_equal(docker_ops.stop(h, SIGTERM, 1000000000LL, &ex, &err), 0);
	assert_int_equal(ex.signal, SIGKILL);
	docker_ops.destroy(h);
	char *out = slurp(a.logs, "main.stdout.0");
	int n = 0;
	if (!ticks_in_order(out, &n))
		fail_msg("ticks repeated or lost across recover: %s", out);
	assert_true(n >= 15); /* ~2 s at 10 per second, the unfollowed part included */
	free(out);
	json_decref(cfg);
}

/* GPUs on an engine without the NVIDIA runtime: a plain failure. */
static void test_gpus_refused(void **state)
{
	struct alloc a;
	alloc_init(&a, "gpu");
	json_t *cfg = sh_config("true");
	struct driver_task t = task_for(&a, cfg, 32);
	const char *gpus[] = { "GPU-00000000-1111-2222-3333-444444444444", NULL };
	t.gpu_ids = gpus;
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "no NVIDIA runtime"));
	json_decref(cfg);
}

/* Containers of allocations that no longer exist are removed. */
static void test_gc(void **state)
{
	struct alloc a, b;
	alloc_init(&a, "gc-live");
	alloc_init(&b, "gc-gone");
	json_t *cfg = sh_config("sleep 30");
	struct driver_handle *ha = NULL, *hb = NULL;
	struct herd_err err = { 0, "" };
	struct driver_task ta = task_for(&a, cfg, 32), tb = task_for(&b, cfg, 32);
	assert_int_equal(docker_ops.start(&env, &ta, &ha, &err), 0);
	assert_int_equal(docker_ops.start(&env, &tb, &hb, &err), 0);
	docker_ops.destroy(hb); /* left running, its allocation forgotten */
	const char *live[] = { a.id };
	int rc = docker_gc(&dc, live, 1, &err);
	if (rc < 0)
		fail_msg("gc: %s", err.msg);
	assert_true(rc >= 1);
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(ha, 300, &ex, &err), 0); /* the live one runs on */
	assert_int_equal(docker_ops.stop(ha, SIGKILL, 1000000000LL, &ex, &err), 0);
	docker_ops.destroy(ha);
	assert_int_equal(docker_gc(&dc, NULL, 0, &err), 0); /* nothing left */
	json_decref(cfg);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	sock = getenv("HERD_DOCKER_SOCKET");
	image = getenv("HERD_DOCKER_IMAGE");
	work = getenv("HERD_DOCKER_WORK");
	if (!sock || !image || !work) {
		fprintf(stderr, "test_docker_engine: set HERD_DOCKER_SOCKET, HERD_DOCKER_IMAGE and "
			"HERD_DOCKER_WORK (tests/e2e/test_docker.py does)\n");
		return 2;
	}
	dc.socket = sock;
	env.docker = &dc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_logs_alloc_dir),
		cmocka_unit_test(test_oom),
		cmocka_unit_test(test_recover),
		cmocka_unit_test(test_gpus_refused),
		cmocka_unit_test(test_gc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
