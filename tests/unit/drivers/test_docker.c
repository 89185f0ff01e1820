/* The docker driver against a fake Docker Engine: a small HTTP/1.1 server
 * on a unix socket in this process that records every request (the exact
 * create body included) and answers as the engine would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/docker-int.h"
#include "drivers/docker.h"
#include "drivers/driver.h"

#define CID "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"

struct fake {
	char dir[64];
	char sock[128];
	int lfd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* how it answers */
	bool nvidia, cdi, image_missing, hold_logs, oom;
	int exit_code;
	/* what it saw */
	json_t *create_body;
	json_t *update_body;    /* the last POST /containers/{id}/update */
	struct strbuf log;      /* "METHOD path\n" per request */
	int pulls;
	int kill_signal;
	bool exited;
	bool stop;
};

static struct fake F;

static void fake_record(const char *method, const char *path)
{
	pthread_mutex_lock(&F.lock);
	strbuf_addf(&F.log, "%s %s\n", method, path);
	pthread_mutex_unlock(&F.lock);
}

static void reply(int fd, int status, const char *body)
{
	char *head = xasprintf("HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
			       "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, strlen(body));
	if (write(fd, head, strlen(head)) < 0 || write(fd, body, strlen(body)) < 0) {
	}
	free(head);
}

static void frame(struct strbuf *sb, int stream, const char *text)
{
	size_t n = strlen(text);
	unsigned char h[8] = { (unsigned char)stream, 0, 0, 0, (unsigned char)(n >> 24),
			       (unsigned char)(n >> 16), (unsigned char)(n >> 8), (unsigned char)n };
	strbuf_add(sb, h, 8);
	strbuf_add(sb, text, n);
}

static void serve_logs(int fd)
{
	struct strbuf sb = STRBUF_INIT;
	const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
			   "Connection: close\r\n\r\n";
	frame(&sb, 1, "2024-05-06T07:08:09.100000000Z hello from the container\n");
	frame(&sb, 2, "2024-05-06T07:08:09.2Z an error line\n");
	frame(&sb, 1, "2024-05-06T07:08:10Z bye\n");
	if (write(fd, head, strlen(head)) < 0) {
	}
	/* in two pieces, the second splitting a header */
	if (write(fd, sb.buf, 13) < 0 || write(fd, sb.buf + 13, sb.len - 13) < 0) {
	}
	strbuf_release(&sb);
	pthread_mutex_lock(&F.lock);
	while (F.hold_logs && !F.exited && !F.stop)
		pthread_cond_wait(&F.cond, &F.lock);
	pthread_mutex_unlock(&F.lock);
}

static void *conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct strbuf req = STRBUF_INIT;
	char buf[4096];
	char method[16] = "", path[2048] = "";
	size_t clen = 0;
	char *body = NULL;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			goto done;
		strbuf_add(&req, buf, (size_t)n);
		char *end = strstr(req.buf, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(req.buf, "Content-Length:");
		clen = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
		if (req.len >= (size_t)(end + 4 - req.buf) + clen) {
			body = end + 4;
			break;
		}
	}
	sscanf(req.buf, "%15s %2047s", method, path);
	fake_record(method, path);
	char *p = path;
	if (!strncmp(p, "/v1.", 4))
		p = strchr(p + 1, '/');
	if (!strcmp(p, "/version")) {
		reply(fd, 200, "{\"ApiVersion\":\"1.43\",\"Version\":\"24.0.7\"}");
	} else if (!strcmp(p, "/info")) {
		char *b = xasprintf("{\"ServerVersion\":\"24.0.7\",\"CgroupVersion\":\"2\","
				    "\"Runtimes\":{\"runc\":{}%s},\"CDISpecDirs\":[%s]}",
				    F.nvidia ? ",\"nvidia\":{\"path\":\"nvidia-container-runtime\"}" : "",
				    F.cdi ? "\"/etc/cdi\"" : "");
		reply(fd, 200, b);
		free(b);
	} else if (!strncmp(p, "/images/create", 14)) {
		pthread_mutex_lock(&F.lock);
		F.pulls++;
		pthread_mutex_unlock(&F.lock);
		usleep(300 * 1000);
		const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				   "Connection: close\r\n\r\n";
		const char *msgs = "{\"status\":\"Pulling from library/x\"}\r\n"
				   "{\"status\":\"Downloading\",\"id\":\"l1\",\"progressDetail\":"
				   "{\"current\":1048576,\"total\":2097152}}\r\n";
		if (write(fd, head, strlen(head)) < 0 || write(fd, msgs, strlen(msgs)) < 0) {
		}
		pthread_mutex_lock(&F.lock);
		F.image_missing = false;
		pthread_mutex_unlock(&F.lock);
	} else if (!strncmp(p, "/images/", 8)) {
		reply(fd, F.image_missing ? 404 : 200, F.image_missing ? "{\"message\":\"No such image\"}" : "{}");
	} else if (!strncmp(p, "/containers/create", 18)) {
		pthread_mutex_lock(&F.lock);
		json_decref(F.create_body);
		F.create_body = json_loadb(body, clen, 0, NULL);
		pthread_mutex_unlock(&F.lock);
		reply(fd, 201, "{\"Id\":\"" CID "\",\"Warnings\":[]}");
	} else if (!strcmp(method, "DELETE")) {
		reply(fd, 204, "");
	} else if (!strncmp(p, "/containers/json", 16)) {
		reply(fd, 200, "[{\"Id\":\"aaa\",\"Labels\":{\"herd.alloc_id\":\"alloc-live\"}},"
			       "{\"Id\":\"bbb\",\"Labels\":{\"herd.alloc_id\":\"alloc-gone\"}},"
			       "{\"Id\":\"ccc\",\"Labels\":{}}]");
	} else if (strstr(p, "/update")) {
		pthread_mutex_lock(&F.lock);
		json_decref(F.update_body);
		F.update_body = json_loadb(body, clen, 0, NULL);
		pthread_mutex_unlock(&F.lock);
		reply(fd, 200, "{\"Warnings\":[]}");
	} else if (strstr(p, "/start")) {
		reply(fd, 204, "");
	} else if (strstr(p, "/logs")) {
		serve_logs(fd);
	} else if (strstr(p, "/wait")) {
		char *b = xasprintf("{\"StatusCode\":%d}", F.exit_code);
		reply(fd, 200, b);
		free(b);
	} else if (strstr(p, "/kill")) {
		pthread_mutex_lock(&F.lock);
		const char *sq = strstr(p, "signal=");
		F.kill_signal = sq ? (int)strtol(sq + 7, NULL, 10) : 0;
		F.exited = true;
		F.exit_code = 128 + F.kill_signal;
		pthread_cond_broadcast(&F.cond);
		pthread_mutex_unlock(&F.lock);
		reply(fd, 204, "");
	} else if (strstr(p, "/stats")) {
		reply(fd, 200, "{\"memory_stats\":{\"usage\":1000,\"limit\":4000,\"stats\":{\"rss\":600}},"
			       "\"cpu_stats\":{\"cpu_usage\":{\"total_usage\":3000},\"system_cpu_usage\":20000,"
			       "\"online_cpus\":2},\"precpu_stats\":{\"cpu_usage\":{\"total_usage\":1000},"
			       "\"system_cpu_usage\":10000}}");
	} else if (!strncmp(p, "/containers/", 12) && strstr(p, "/json")) {
		pthread_mutex_lock(&F.lock);
		json_t *labels = json_deep_copy(json_object_get(F.create_body, "Labels"));
		bool running = F.hold_logs && !F.exited;
		pthread_mutex_unlock(&F.lock);
		json_t *o = json_pack("{s:{s:b, s:b, s:s}, s:{s:o}}", "State", "Running", running,
				      "OOMKilled", F.oom, "FinishedAt", "2024-05-06T07:08:11.5Z",
				      "Config", "Labels", labels ? labels : json_object());
		char *b = json_dumps(o, JSON_COMPACT);
		reply(fd, 200, b);
		free(b);
		json_decref(o);
	} else {
		reply(fd, 404, "{\"message\":\"page not found\"}");
	}
done:
	close(fd);
	strbuf_release(&req);
	return NULL;
}

static void *accept_main(void *arg)
{
	for (;;) {
		int fd = accept4(F.lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return NULL;
		pthread_mutex_lock(&F.lock);
		bool stop = F.stop;
		pthread_mutex_unlock(&F.lock);
		if (stop) {
			close(fd);
			return NULL;
		}
		pthread_t t;
		pthread_create(&t, NULL, conn_main, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static char alloc_dir[128], task_dir[160], log_dir[160];

static int setup(void **state)
{
	memset(&F, 0, sizeof(F));
	pthread_mutex_init(&F.lock, NULL);
	pthread_cond_init(&F.cond, NULL);
	strbuf_init(&F.log, 0);
	snprintf(F.dir, sizeof(F.dir), "/tmp/herd-test-docker-XXXXXX");
	assert_non_null(mkdtemp(F.dir));
	snprintf(F.sock, sizeof(F.sock), "%s/docker.sock", F.dir);
	F.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", F.sock);
	assert_int_equal(bind(F.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(F.lfd, 64), 0);
	pthread_create(&F.thread, NULL, accept_main, NULL);
	snprintf(alloc_dir, sizeof(alloc_dir), "%s/alloc", F.dir);
	snprintf(task_dir, sizeof(task_dir), "%s/web", F.dir);
	snprintf(log_dir, sizeof(log_dir), "%s/alloc/logs", F.dir);
	mkdir(alloc_dir, 0755);
	mkdir(log_dir, 0755);
	mkdir(task_dir, 0755);
	return 0;
}

static int teardown(void **state)
{
	pthread_mutex_lock(&F.lock);
	F.stop = true;
	pthread_cond_broadcast(&F.cond);
	pthread_mutex_unlock(&F.lock);
	shutdown(F.lfd, SHUT_RDWR);
	pthread_join(F.thread, NULL);
	close(F.lfd);
	usleep(50 * 1000); /* detached connection threads finish */
	json_decref(F.create_body);
	json_decref(F.update_body);
	strbuf_release(&F.log);
	char *cmd = xasprintf("rm -rf %s", F.dir);
	if (system(cmd)) {
	}
	free(cmd);
	return 0;
}

static const char *base_env[] = {
	"PATH=/usr/bin:/bin", "HERD_ALLOC_DIR=/host/alloc", "NOMAD_TASK_DIR=/host/web/local",
	"HERD_TASK_NAME=web", NULL,
};

static struct driver_task make_task(json_t *config, const char *const *env)
{
	struct driver_task t = {
		.name = "web", .env = env ? env : base_env, .task_dir = task_dir,
		.log_dir = log_dir, .state_dir = task_dir, .log_max_files = 3,
		.log_max_file_size = 1 << 20, .config = config, .alloc_id = "a1b2c3d4-0000",
		.alloc_dir = alloc_dir, .memory_mb = 256, .memory_max_mb = 512, .cpu_mhz = 500,
	};
	return t;
}

static struct docker_config client_cfg(void)
{
	struct docker_config c = { .socket = F.sock };
	return c;
}

static bool env_has(const json_t *env, const char *kv)
{
	size_t i;
	json_t *v;
	json_array_foreach(env, i, v)
		if (!strcmp(json_string_value(v), kv))
			return true;
	return false;
}

static bool env_has_key(const json_t *env, const char *k)
{
	size_t i, n = strlen(k);
	json_t *v;
	json_array_foreach(env, i, v)
		if (!strncmp(json_string_value(v), k, n) && json_string_value(v)[n] == '=')
			return true;
	return false;
}

static const json_t *find_mount(const json_t *mounts, const char *target)
{
	size_t i;
	json_t *m;
	json_array_foreach(mounts, i, m)
		if (!strcmp(json_string_value(json_object_get(m, "Target")), target))
			return m;
	return NULL;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	char buf[512];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(f);
	return strbuf_detach(&sb, NULL);
}

/* A whole run: the exact create request (GPUs by UUID for the NVIDIA
 * runtime, mounts, env, limits, labels), logs demultiplexed into the
 * rotated files, the exit code and the OOM kill from the engine. */
static void test_run_with_gpus(void **state)
{
	F.nvidia = true;
	F.exit_code = 137;
	F.oom = true;
	struct docker_config dc = client_cfg();
	struct driver_env env = { .docker = &dc };
	const char *gpus[] = { "GPU-11111111-2222", "MIG-33333333-4444", NULL };
	json_t *cfg = json_pack("{s:s, s:s, s:[s,s], s:{s:s}, s:[s], s:s}", "image", "nvidia/cuda:12.4",
				"command", "nvidia-smi", "args", "-L", "--x", "labels", "team", "ml",
				"volumes", "data:/data:ro", "work_dir", "/work");
	struct driver_task t = make_task(cfg, NULL);
	t.gpu_ids = gpus;
	t.cpuset_cpus = "4-7,12";
	t.cpuset_mems = "0";
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), 0);
	assert_non_null(h);
	assert_string_equal(driver_handle_state(h)->container_id, CID);
	assert_string_equal(driver_handle_state(h)->driver, "docker");

	const json_t *b = F.create_body;
	assert_non_null(b);
	const json_t *host = json_object_get(b, "HostConfig");
	const json_t *dr = json_array_get(json_object_get(host, "DeviceRequests"), 0);
	assert_string_equal(json_string_value(json_object_get(dr, "Driver")), "nvidia");
	const json_t *ids = json_object_get(dr, "DeviceIDs");
	assert_int_equal(json_array_size(ids), 2);
	assert_string_equal(json_string_value(json_array_get(ids, 0)), "GPU-11111111-2222");
	assert_string_equal(json_string_value(json_array_get(ids, 1)), "MIG-33333333-4444");
	assert_string_equal(json_string_value(json_array_get(json_array_get(
		json_object_get(dr, "Capabilities"), 0), 0)), "gpu");
	const json_t *e = json_object_get(b, "Env");
	assert_true(env_has(e, "NVIDIA_VISIBLE_DEVICES=GPU-11111111-2222,MIG-33333333-4444"));
	assert_true(env_has(e, "HERD_ALLOC_DIR=/alloc"));
	assert_true(env_has(e, "NOMAD_TASK_DIR=/local"));
	assert_true(env_has(e, "HERD_TASK_NAME=web"));
	assert_false(env_has_key(e, "PATH"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(b, "Cmd"), 0)), "nvidia-smi");
	assert_string_equal(json_string_value(json_array_get(json_object_get(b, "Cmd"), 2)), "--x");
	assert_string_equal(json_string_value(json_object_get(b, "Image")), "nvidia/cuda:12.4");
	assert_string_equal(json_string_value(json_object_get(b, "WorkingDir")), "/work");
	assert_int_equal(json_integer_value(json_object_get(host, "Memory")), 512LL << 20);
	assert_int_equal(json_integer_value(json_object_get(host, "MemorySwap")), 512LL << 20);
	assert_int_equal(json_integer_value(json_object_get(host, "MemoryReservation")), 256LL << 20);
	assert_int_equal(json_integer_value(json_object_get(host, "CpuShares")), 500);
	assert_string_equal(json_string_value(json_object_get(host, "CpusetCpus")), "4-7,12");
	assert_string_equal(json_string_value(json_object_get(host, "CpusetMems")), "0");
	assert_false(json_is_true(json_object_get(host, "Privileged")));
	const json_t *mounts = json_object_get(host, "Mounts");
	assert_string_equal(json_string_value(json_object_get(find_mount(mounts, "/alloc"), "Source")), alloc_dir);
	char *local = xasprintf("%s/local", task_dir), *data = xasprintf("%s/data", task_dir);
	assert_string_equal(json_string_value(json_object_get(find_mount(mounts, "/local"), "Source")), local);
	assert_non_null(find_mount(mounts, "/secrets"));
	assert_string_equal(json_string_value(json_object_get(find_mount(mounts, "/data"), "Source")), data);
	assert_true(json_is_true(json_object_get(find_mount(mounts, "/data"), "ReadOnly")));
	free(local);
	free(data);
	const json_t *labels = json_object_get(b, "Labels");
	assert_string_equal(json_string_value(json_object_get(labels, "herd.alloc_id")), "a1b2c3d4-0000");
	assert_string_equal(json_string_value(json_object_get(labels, "herd.task")), "web");
	assert_string_equal(json_string_value(json_object_get(labels, "team")), "ml");
	assert_non_null(strstr(F.log.buf, "POST /v1.43/containers/create?name=web-a1b2c3d4-0000"));

	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 5000, &ex, &err), 1);
	assert_int_equal(ex.exit_code, 137);
	assert_true(ex.oom_killed);
	assert_false(ex.lost);
	assert_int_equal(ex.finished_ns, 1714979291500000000LL);
	docker_ops.destroy(h);
	/* the ended container was removed */
	assert_non_null(strstr(F.log.buf, "DELETE /v1.43/containers/" CID));

	char *p = xasprintf("%s/web.stdout.0", log_dir);
	char *out = read_file(p);
	free(p);
	assert_non_null(out);
	assert_string_equal(out, "hello from the container\nbye\n");
	free(out);
	p = xasprintf("%s/web.stderr.0", log_dir);
	out = read_file(p);
	free(p);
	assert_string_equal(out, "an error line\n");
	free(out);
	json_decref(cfg);
}

/* logs { disabled }: the container is labelled so (a recovered handle
 * knows), its output is read to the end (the exit comes after it) and
 * written nowhere. */
static void test_logs_disabled(void **state)
{
	struct docker_config dc = client_cfg();
	struct driver_env env = { .docker = &dc };
	json_t *cfg = json_pack("{s:s}", "image", "busybox");
	struct driver_task t = make_task(cfg, NULL);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	struct driver_exit ex;
	t.logs_disabled = true;
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), 0);
	const json_t *labels = json_object_get(F.create_body, "Labels");
	assert_string_equal(json_string_value(json_object_get(labels, "herd.logs_disabled")), "true");
	assert_int_equal(docker_ops.wait(h, 5000, &ex, &err), 1);
	docker_ops.destroy(h);
	char *p = xasprintf("%s/web.stdout.0", log_dir), *q = xasprintf("%s/web.stderr.0", log_dir);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(access(q, F_OK), -1);
	free(p);
	free(q);
	json_decref(cfg);
}

static void test_cdi_and_mps(void **state)
{
	F.cdi = true;
	struct docker_config dc = client_cfg();
	struct driver_env env = { .docker = &dc };
	const char *menv[] = { "NVIDIA_VISIBLE_DEVICES=GPU-aaaa", "CUDA_VISIBLE_DEVICES=GPU-aaaa",
			       "CUDA_MPS_PIPE_DIRECTORY=/run/herd/mps/GPU-aaaa",
			       "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", NULL };
	json_t *cfg = json_pack("{s:s}", "image", "cuda");
	struct driver_task t = make_task(cfg, menv);
	/* host volumes: bind mounts, with no volumes { enabled } in the client */
	const struct driver_volume vols[] = { { "data", "/nvme/sets", "/datasets", true },
					      { "ckpt", "/mnt/ckpt", "/ckpt", false } };
	t.volumes = vols;
	t.nvolumes = 2;
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), 0);
	const json_t *host = json_object_get(F.create_body, "HostConfig");
	const json_t *vm = find_mount(json_object_get(host, "Mounts"), "/datasets");
	assert_string_equal(json_string_value(json_object_get(vm, "Type")), "bind");
	assert_string_equal(json_string_value(json_object_get(vm, "Source")), "/nvme/sets");
	assert_true(json_is_true(json_object_get(vm, "ReadOnly")));
	vm = find_mount(json_object_get(host, "Mounts"), "/ckpt");
	assert_string_equal(json_string_value(json_object_get(vm, "Source")), "/mnt/ckpt");
	assert_true(json_is_false(json_object_get(vm, "ReadOnly")));
	const json_t *dr = json_array_get(json_object_get(host, "DeviceRequests"), 0);
	assert_string_equal(json_string_value(json_object_get(dr, "Driver")), "cdi");
	assert_string_equal(json_string_value(json_array_get(json_object_get(dr, "DeviceIDs"), 0)),
			    "nvidia.com/gpu=GPU-aaaa");
	assert_non_null(find_mount(json_object_get(host, "Mounts"), "/run/herd/mps/GPU-aaaa"));
	assert_string_equal(json_string_value(json_object_get(host, "IpcMode")), "host");
	const json_t *e = json_object_get(F.create_body, "Env");
	assert_true(env_has(e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
	assert_true(env_has(e, "NVIDIA_VISIBLE_DEVICES=GPU-aaaa"));
	assert_null(json_object_get(F.create_body, "Cmd")); /* the image's */
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 5000, &ex, &err), 1);
	docker_ops.destroy(h);
	json_decref(cfg);
}

/* GPUs requested, engine without NVIDIA runtime or CDI: a plain failure,
 * and nothing created or pulled. */
static void test_gpus_without_runtime(void **state)
{
	F.image_missing = true;
	struct docker_config dc = client_cfg();
	struct driver_env env = { .docker = &dc };
	const char *genv[] = { "NVIDIA_VISIBLE_DEVICES=GPU-bbbb", NULL };
	json_t *cfg = json_pack("{s:s}", "image", "cuda");
	struct driver_task t = make_task(cfg, genv);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), -ENODEV);
	assert_null(h);
	assert_non_null(strstr(err.msg, "no NVIDIA runtime and no CDI support"));
	assert_non_null(strstr(err.msg, "GPU-bbbb"));
	assert_null(F.create_body);
	assert_int_equal(F.pulls, 0);
	/* and "void" means no GPU at all */
	const char *venv[] = { "NVIDIA_VISIBLE_DEVICES=void", NULL };
	t = make_task(cfg, venv);
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), 0);
	assert_null(json_object_get(json_object_get(F.create_body, "HostConfig"), "DeviceRequests"));
	assert_int_equal(F.pulls, 1);
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 5000, &ex, &err), 1);
	docker_ops.destroy(h);
	json_decref(cfg);
}

static void expect_config_error(const char *json, int code, const char *needle)
{
	struct docker_config dc = client_cfg();
	struct docker_task_config tc;
	struct herd_err err = { 0, "" };
	json_t *cfg = json_loads(json, 0, NULL);
	assert_non_null(cfg);
	assert_int_equal(docker_task_config_decode(cfg, "/t", &dc, &tc, &err), code);
	if (!strstr(err.msg, needle))
		fail_msg("%s: message \"%s\" lacks \"%s\"", json, err.msg, needle);
	json_decref(cfg);
}

static void test_config(void **state)
{
	expect_config_error("{\"image\":\"x\",\"imagee\":1}", -EINVAL, "unknown key \"imagee\"");
	expect_config_error("{\"command\":\"x\"}", -EINVAL, "image");
	expect_config_error("{\"image\":\"x\",\"privileged\":true}", -EPERM, "allow_privileged");
	expect_config_error("{\"image\":\"x\",\"cap_add\":[\"SYS_ADMIN\"]}", -EPERM, "SYS_ADMIN");
	expect_config_error("{\"image\":\"x\",\"volumes\":[\"/etc:/etc\"]}", -EPERM, "/etc");
	expect_config_error("{\"image\":\"x\",\"volumes\":[\"../x:/y\"]}", -EPERM, "leaves");
	expect_config_error("{\"image\":\"x\",\"mount\":{\"type\":\"bind\",\"target\":\"/a\",\"sorce\":\"b\"}}",
			    -EINVAL, "sorce");
	expect_config_error("{\"image\":\"x\",\"ulimit\":{\"nofile\":\"9:1\"}}", -EINVAL, "soft");
	expect_config_error("{\"image\":\"x\",\"labels\":{\"herd.task\":\"y\"}}", -EINVAL, "herd.");

	/* what the client allows, allowed */
	struct docker_config dc = client_cfg();
	const char *caps[] = { "CAP_SYS_ADMIN", "net_raw", NULL };
	dc.allow_caps = caps;
	dc.allow_privileged = true;
	dc.volumes_enabled = true;
	json_t *cfg = json_loads("{\"image\":\"x\",\"privileged\":true,\"cap_add\":[\"sys_admin\"],"
				 "\"cap_drop\":[\"all\"],\"volumes\":[\"/data:/data\"],"
				 "\"mount\":[{\"type\":\"tmpfs\",\"target\":\"/scratch\","
				 "\"tmpfs_options\":{\"size\":1048576}}],\"shm_size\":\"1GiB\","
				 "\"ulimit\":{\"nofile\":\"1024:2048\"},\"auth\":{\"username\":\"u\","
				 "\"password\":\"p\"},\"entrypoint\":[\"/bin/sh\",\"-c\"]}", 0, NULL);
	struct docker_task_config tc;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_task_config_decode(cfg, "/t", &dc, &tc, &err), 0);
	assert_string_equal(tc.cap_add[0], "SYS_ADMIN");
	assert_string_equal(tc.cap_drop[0], "ALL");
	assert_int_equal(tc.shm_size, 1LL << 30);
	assert_int_equal(tc.nulimits, 1);
	assert_int_equal(tc.ulimits[0].soft, 1024);
	assert_int_equal(tc.ulimits[0].hard, 2048);
	assert_int_equal(tc.nmounts, 2);
	/* base64url of {"username":"u","password":"p"} */
	assert_string_equal(tc.auth_header,
			    "X-Registry-Auth: eyJ1c2VybmFtZSI6InUiLCJwYXNzd29yZCI6InAifQ==");
	struct driver_port ports[] = { { "http", "10.0.0.1", 23456, 8080 } };
	struct driver_task t = make_task(cfg, NULL);
	t.ports = ports;
	t.nports = 1;
	tc.ports = xcalloc(2, sizeof(char *));
	tc.ports[0] = xstrdup("http");
	struct docker_engine_info info = { .version = "x" };
	json_t *body = NULL;
	assert_int_equal(docker_create_body(&t, &tc, &info, &dc, &body, &err), 0);
	const json_t *host = json_object_get(body, "HostConfig");
	const json_t *pb = json_array_get(json_object_get(json_object_get(host, "PortBindings"),
							  "8080/tcp"), 0);
	assert_string_equal(json_string_value(json_object_get(pb, "HostPort")), "23456");
	assert_string_equal(json_string_value(json_object_get(pb, "HostIp")), "10.0.0.1");
	assert_non_null(json_object_get(json_object_get(body, "ExposedPorts"), "8080/udp"));
	assert_int_equal(json_integer_value(json_object_get(host, "ShmSize")), 1LL << 30);
	assert_true(json_is_true(json_object_get(host, "Privileged")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		find_mount(json_object_get(host, "Mounts"), "/scratch"), "TmpfsOptions"), "SizeBytes")),
		1048576);
	json_decref(body);
	free(tc.ports[0]);
	tc.ports[0] = xstrdup("grpc");
	assert_int_equal(docker_create_body(&t, &tc, &info, &dc, &body, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "grpc"));
	docker_task_config_release(&tc);
	json_decref(cfg);
}

static void test_no_engine(void **state)
{
	struct docker_config dc = { .socket = "/nonexistent/docker.sock" };
	struct driver_env env = { .docker = &dc };
	struct driver_fingerprint fp;
	docker_ops.fingerprint(&env, &fp);
	assert_false(fp.detected);
	assert_non_null(strstr(fp.reason, "/nonexistent/docker.sock"));
	json_t *cfg = json_pack("{s:s}", "image", "x");
	struct driver_task t = make_task(cfg, NULL);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "does not answer"));
	json_decref(cfg);

	/* and the fake one is found, with what it offers */
	F.nvidia = true;
	struct docker_config ok = client_cfg();
	env.docker = &ok;
	docker_ops.fingerprint(&env, &fp);
	assert_true(fp.detected);
	assert_non_null(strstr(fp.reason, "NVIDIA runtime: yes"));
}

struct starter {
	struct driver_env *env;
	json_t *cfg;
	int events;
	int rc;
	struct driver_handle *h;
};

static void count_event(void *arg, const char *type, const char *msg)
{
	struct starter *s = arg;
	if (strstr(type, "Image"))
		__atomic_add_fetch(&s->events, 1, __ATOMIC_SEQ_CST);
}

static void *start_one(void *arg)
{
	struct starter *s = arg;
	struct driver_task t = make_task(s->cfg, NULL);
	t.event = count_event;
	t.event_arg = s;
	struct herd_err err = { 0, "" };
	s->rc = docker_ops.start(s->env, &t, &s->h, &err);
	return NULL;
}

/* Three tasks need a missing image at once: one pull. */
static void test_pull_dedup(void **state)
{
	F.image_missing = true;
	struct docker_config dc = client_cfg();
	struct driver_env env = { .docker = &dc };
	json_t *cfg = json_pack("{s:s}", "image", "registry.example:5000/team/img");
	struct starter s[3];
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		s[i] = (struct starter){ .env = &env, .cfg = cfg };
		pthread_create(&t[i], NULL, start_one, &s[i]);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(s[i].rc, 0);
		assert_true(s[i].events >= 1);
		struct driver_exit ex;
		assert_int_equal(docker_ops.wait(s[i].h, 5000, &ex, NULL), 1);
		docker_ops.destroy(s[i].h);
	}
	assert_int_equal(F.pulls, 1);
	assert_non_null(strstr(F.log.buf,
		"/images/create?fromImage=registry.example%3A5000%2Fteam%2Fimg&tag=latest"));
	json_decref(cfg);
}

/* The agent forgets its handle (a restart); recover re-attaches to the
 * running container; stop sends kill_signal. */
static void test_recover_and_stop(void **state)
{
	F.hold_logs = true;
	struct docker_config dc = client_cfg();
	struct driver_env env = { .docker = &dc };
	json_t *cfg = json_pack("{s:s}", "image", "x");
	struct driver_task t = make_task(cfg, NULL);
	struct driver_handle *h = NULL;
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_ops.start(&env, &t, &h, &err), 0);
	struct driver_exit ex;
	assert_int_equal(docker_ops.wait(h, 200, &ex, &err), 0);
	char *js = driver_state_to_json(driver_handle_state(h));
	docker_ops.destroy(h); /* running: not removed */
	assert_null(strstr(F.log.buf, "DELETE /v1.43/containers/" CID));

	struct driver_state st;
	assert_int_equal(driver_state_from_json(js, &st, &err), 0);
	free(js);
	assert_string_equal(st.container_id, CID);
	assert_int_equal(docker_ops.recover(&env, &st, &h, &err), 0);
	assert_int_equal(docker_ops.wait(h, 200, &ex, &err), 0);
	assert_true(driver_handle_fd(h) >= 0);
	struct docker_stats ds;
	assert_int_equal(docker_stats(h, &ds, &err), 0);
	assert_int_equal(ds.memory_usage, 1000);
	assert_int_equal(ds.memory_rss, 600);
	assert_true(ds.cpu_percent > 39.9 && ds.cpu_percent < 40.1);
	/* moved onto other cores while it runs: the engine's update */
	assert_int_equal(docker_ops.set_cores(&env, &st, "0,2-3", &err), 0);
	assert_non_null(strstr(F.log.buf, "POST /v1.43/containers/" CID "/update"));
	assert_string_equal(json_string_value(json_object_get(F.update_body, "CpusetCpus")), "0,2-3");
	assert_int_equal(docker_ops.set_cores(&env, &st, NULL, &err), 0);
	const char *all = json_string_value(json_object_get(F.update_body, "CpusetCpus"));
	assert_non_null(all);
	assert_true(strlen(all) > 0);   /* our own cores, written out */
	assert_int_equal(docker_ops.stop(h, SIGTERM, 2000000000LL, &ex, &err), 0);
	assert_int_equal(F.kill_signal, SIGTERM);
	assert_int_equal(ex.signal, SIGTERM);
	docker_ops.destroy(h);
	/* the log lines were not written twice by the second follower */
	char *p = xasprintf("%s/web.stdout.0", log_dir);
	char *out = read_file(p);
	free(p);
	assert_string_equal(out, "hello from the container\nbye\n");
	free(out);
	json_decref(cfg);
}

static void test_gc(void **state)
{
	struct docker_config dc = client_cfg();
	dc.gc_dangling_images = true;
	const char *live[] = { "alloc-live" };
	struct herd_err err = { 0, "" };
	assert_int_equal(docker_gc(&dc, live, 1, &err), 1);
	assert_non_null(strstr(F.log.buf, "DELETE /v1.43/containers/bbb"));
	assert_null(strstr(F.log.buf, "DELETE /v1.43/containers/aaa"));
	assert_null(strstr(F.log.buf, "DELETE /v1.43/containers/ccc"));
	assert_non_null(strstr(F.log.buf, "POST /v1.43/images/prune"));
}

static int frames_seen;
static struct strbuf frames_text;

static int collect(void *arg, int stream, const char *data, size_t len)
{
	frames_seen++;
	strbuf_addf(&frames_text, "%d:", stream);
	strbuf_add(&frames_text, data, len);
	return 0;
}

static void test_demux_and_timestamps(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	frame(&sb, 1, "abc");
	frame(&sb, 2, "de");
	frame(&sb, 1, "");
	frame(&sb, 1, "f");
	struct docker_demux d;
	strbuf_init(&frames_text, 0);
	docker_demux_init(&d, collect, NULL);
	for (size_t i = 0; i < sb.len; i++) /* one byte at a time */
		assert_int_equal(docker_demux_feed(&d, sb.buf + i, 1), 0);
	assert_string_equal(frames_text.buf, "1:abc2:de1:1:f");
	docker_demux_release(&d);
	unsigned char bad[8] = { 7, 0, 0, 0, 0, 0, 0, 1 };
	docker_demux_init(&d, collect, NULL);
	assert_int_equal(docker_demux_feed(&d, (const char *)bad, 8), -EPROTO);
	docker_demux_release(&d);
	strbuf_release(&sb);
	strbuf_release(&frames_text);

	int64_t ns;
	size_t skip;
	const char *l = "1970-01-01T00:00:01.5Z x";
	assert_int_equal(docker_log_timestamp(l, strlen(l), &ns, &skip), 0);
	assert_int_equal(ns, 1500000000LL);
	assert_string_equal(l + skip, "x");
	l = "2024-05-06T07:08:09Z";
	assert_int_equal(docker_log_timestamp(l, strlen(l), &ns, &skip), 0);
	assert_int_equal(ns, 1714979289000000000LL);
	l = "no timestamp here at all";
	assert_int_equal(docker_log_timestamp(l, strlen(l), &ns, &skip), -EINVAL);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_with_gpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cdi_and_mps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logs_disabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpus_without_runtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_engine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pull_dedup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recover_and_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gc, setup, teardown),
		cmocka_unit_test(test_demux_and_timestamps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
