/* docker: the ops table (docker.h).  Each handle has one follower thread:
 * it streams the container's logs into the rotated log files until the
 * container stops, then collects the exit (POST /wait, GET /json) and
 * makes the handle's fd readable.  The engine, not herd, is the
 * container's parent, so a killed agent loses nothing: recover() starts a
 * new follower from the last log timestamp it wrote down. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cpulist.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/docker-int.h"
#include "drivers/logrot.h"

#define RETRY_NS (200LL * 1000000LL)

/* The head (ops, state, fd) matches raw_exec's handle, on which
 * driver_handle_state and driver_handle_fd are defined. */
struct driver_handle {
	const struct driver_ops *ops;
	struct driver_state state;
	int fd;                 /* read end: readable once the exit is known */
	int wake_w;             /* write end, the follower's */
	struct docker_client client;
	bool keep_container;
	pthread_t thread;
	bool thread_started;
	struct docker_cancel cancel;
	pthread_mutex_t lock;
	bool done;              /* under lock */
	bool signalled;         /* a signal was sent: 128+n exits are that signal */
	struct driver_exit exit;
	struct logrot out, err;
	bool logs_off;       /* logs { disabled }: the stream is read and dropped */
	int pos_fd;             /* where the last written log timestamp is kept */
	int64_t last_ts;        /* ns; frames at or before it were written already */
};

extern const struct driver_ops docker_ops;

static bool valid_task_name(const char *s)
{
	if (!s || !*s || strlen(s) > 128 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

static int64_t now_unix_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };
	nanosleep(&ts, NULL);
}

static bool cancelled(struct driver_handle *h)
{
	pthread_mutex_lock(&h->cancel.lock);
	bool f = h->cancel.fired;
	pthread_mutex_unlock(&h->cancel.lock);
	return f;
}

/* ---- fingerprint ---- */

static void docker_fingerprint(const struct driver_env *env, struct driver_fingerprint *out)
{
	struct docker_client c;
	struct docker_engine_info info;
	struct herd_err err = { 0, "" };
	memset(out, 0, sizeof(*out));
	int rc = docker_client_init(&c, env->docker, &err);
	if (rc == 0)
		rc = docker_engine_info(&c, &info, &err);
	docker_client_release(&c);
	if (rc < 0) {
		snprintf(out->reason, sizeof(out->reason), "%s", err.msg);
		return;
	}
	out->detected = true;
	out->healthy = true;
	snprintf(out->reason, sizeof(out->reason), "docker %s, API %s, NVIDIA runtime: %s, CDI: %s",
		 info.version, c.prefix[0] ? c.prefix + 2 : "?", info.nvidia_runtime ? "yes" : "no",
		 info.cdi ? "yes" : "no");
}

/* ---- the follower ---- */

static int on_frame(void *arg, int stream, const char *data, size_t len)
{
	struct driver_handle *h = arg;
	int64_t ts;
	size_t skip;
	if (docker_log_timestamp(data, len, &ts, &skip) == 0) {
		if (ts <= h->last_ts)
			return 0; /* written before an agent restart */
		h->last_ts = ts;
		data += skip;
		len -= skip;
		if (h->pos_fd >= 0) {
			char buf[32];
			int n = snprintf(buf, sizeof(buf), "%020lld\n", (long long)ts);
			if (pwrite(h->pos_fd, buf, (size_t)n, 0) < 0) {
				/* the position is an optimisation: lines may repeat after a restart */
			}
		}
	}
	if (!h->logs_off)
		logrot_write(stream == 2 ? &h->err : &h->out, data, len);
	return 0;
}

static int on_log_data(void *arg, const char *data, size_t len)
{
	return docker_demux_feed(arg, data, len);
}

/* Streams logs from last_ts until the container stops.  Returns 0 at the
 * end of the stream, -errno otherwise. */
static int follow_logs(struct driver_handle *h)
{
	struct docker_demux dm;
	struct strbuf path = STRBUF_INIT;
	struct strbuf resp = STRBUF_INIT;
	docker_demux_init(&dm, on_frame, h);
	strbuf_addf(&path, "/containers/%s/logs?follow=1&stdout=1&stderr=1&timestamps=1",
		    h->state.container_id);
	if (h->last_ts > 0)
		strbuf_addf(&path, "&since=%lld.%09lld", (long long)(h->last_ts / 1000000000LL),
			    (long long)(h->last_ts % 1000000000LL));
	struct docker_req req = { .method = "GET", .path = path.buf, .timeout_ms = -1,
				  .on_data = on_log_data, .arg = &dm, .cancel = &h->cancel };
	int rc = docker_call(&h->client, &req, &resp, NULL);
	if (rc >= 0)
		rc = rc == 200 ? 0 : rc == 404 ? -ENOENT : -EIO;
	docker_demux_release(&dm);
	strbuf_release(&path);
	strbuf_release(&resp);
	return rc;
}

/* GET /containers/{id}/json into *o.  Returns 0, -ENOENT, -errno. */
static int inspect(struct docker_client *c, const char *id, json_t **o, struct docker_cancel *cancel,
		   struct herd_err *err)
{
	struct strbuf resp = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/json", id);
	struct docker_req req = { .method = "GET", .path = path, .cancel = cancel };
	int rc = docker_call(c, &req, &resp, err);
	if (rc == 404)
		rc = herd_errf(err, -ENOENT, "container %s: no such container", id);
	else if (rc >= 0 && rc != 200)
		rc = herd_errf(err, -EIO, "container %s: inspect: HTTP %d: %s", id, rc,
			       docker_error_message(&resp));
	else if (rc >= 0) {
		*o = json_loads(resp.buf, 0, NULL);
		rc = *o ? 0 : herd_errf(err, -EPROTO, "container %s: inspect: not JSON", id);
	}
	free(path);
	strbuf_release(&resp);
	return rc;
}

static void finish(struct driver_handle *h, const struct driver_exit *ex)
{
	pthread_mutex_lock(&h->lock);
	h->exit = *ex;
	if (h->signalled && ex->exit_code > 128 && ex->exit_code - 128 < NSIG && !ex->lost) {
		h->exit.signal = ex->exit_code - 128;
		h->exit.exit_code = -1;
	}
	h->done = true;
	pthread_mutex_unlock(&h->lock);
	while (write(h->wake_w, "x", 1) < 0 && errno == EINTR)
		;
}

/* The exit of a stopped container: POST /wait (at once for a stopped
 * one) for the status, inspect for OOMKilled and the time it finished. */
static int collect_exit(struct driver_handle *h, struct driver_exit *ex)
{
	struct strbuf resp = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/wait?condition=not-running", h->state.container_id);
	struct docker_req req = { .method = "POST", .path = path, .timeout_ms = -1,
				  .cancel = &h->cancel };
	json_t *o = NULL;
	int rc = docker_call(&h->client, &req, &resp, NULL);
	free(path);
	memset(ex, 0, sizeof(*ex));
	if (rc == 404) {
		ex->lost = true;
		ex->exit_code = -1;
		rc = 0;
		goto out;
	}
	if (rc != 200) {
		rc = rc < 0 ? rc : -EIO;
		goto out;
	}
	o = json_loads(resp.buf, 0, NULL);
	ex->exit_code = (int)json_integer_value(json_object_get(o, "StatusCode"));
	json_decref(o);
	o = NULL;
	rc = inspect(&h->client, h->state.container_id, &o, &h->cancel, NULL);
	if (rc == 0) {
		const json_t *st = json_object_get(o, "State");
		ex->oom_killed = json_is_true(json_object_get(st, "OOMKilled"));
		const char *fin = json_string_value(json_object_get(st, "FinishedAt"));
		int64_t ns;
		size_t skip;
		if (fin && docker_log_timestamp(fin, strlen(fin), &ns, &skip) == 0 && ns > 0)
			ex->finished_ns = ns;
	}
	if (!ex->finished_ns)
		ex->finished_ns = now_unix_ns();
	rc = 0;
out:
	json_decref(o);
	strbuf_release(&resp);
	return rc;
}

static void *follower(void *arg)
{
	struct driver_handle *h = arg;
	struct driver_exit ex;
	for (;;) {
		int rc = follow_logs(h);
		if (cancelled(h))
			return NULL;
		if (rc == -ENOENT) {
			ex = (struct driver_exit){ .exit_code = -1, .lost = true,
						   .finished_ns = now_unix_ns() };
			break;
		}
		/* The stream ended: the container stopped, or the engine went
		 * away for a moment.  Only a stopped container has an exit. */
		json_t *o = NULL;
		rc = inspect(&h->client, h->state.container_id, &o, &h->cancel, NULL);
		if (cancelled(h)) {
			json_decref(o);
			return NULL;
		}
		if (rc == -ENOENT) {
			ex = (struct driver_exit){ .exit_code = -1, .lost = true,
						   .finished_ns = now_unix_ns() };
			break;
		}
		bool running = rc == 0 && json_is_true(json_object_get(json_object_get(o, "State"),
									"Running"));
		json_decref(o);
		if (rc < 0 || running) {
			sleep_ns(RETRY_NS);
			continue;
		}
		/* The engine may end a follow stream when the container stops,
		 * before its logger has stored the last lines: read the stopped
		 * container's logs once more (frames already written are skipped
		 * by their timestamps), so the exit is reported after the last
		 * line is in the files. */
		if (follow_logs(h) < 0 && cancelled(h))
			return NULL;
		if (collect_exit(h, &ex) == 0)
			break;
		if (cancelled(h))
			return NULL;
		sleep_ns(RETRY_NS);
	}
	finish(h, &ex);
	return NULL;
}

/* ---- handles ---- */

static struct driver_handle *handle_new(void)
{
	struct driver_handle *h = xcalloc(1, sizeof(*h));
	h->ops = &docker_ops;
	h->fd = h->wake_w = h->pos_fd = -1;
	h->out.fd = h->err.fd = -1;
	h->out.dirfd = h->err.dirfd = -1;
	snprintf(h->state.driver, sizeof(h->state.driver), "%s", docker_ops.name);
	docker_cancel_init(&h->cancel);
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

static void handle_free(struct driver_handle *h)
{
	if (h->thread_started) {
		docker_cancel_fire(&h->cancel);
		pthread_join(h->thread, NULL);
	}
	if (h->fd >= 0)
		close(h->fd);
	if (h->wake_w >= 0)
		close(h->wake_w);
	if (h->pos_fd >= 0)
		close(h->pos_fd);
	logrot_close(&h->out);
	logrot_close(&h->err);
	docker_client_release(&h->client);
	docker_cancel_destroy(&h->cancel);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* Opens the log files (none with logs { disabled }: the follower's writes
 * then go nowhere, and it still sees the stream end when the container
 * does) and the position file, starts the follower. */
static int handle_run(struct driver_handle *h, const char *name, const char *log_dir,
		      int max_files, int64_t max_size, bool logs_off, const char *pos_file,
		      bool fresh, struct herd_err *err)
{
	int p[2];
	char *base;
	int rc;
	h->logs_off = logs_off;
	if (logs_off)
		goto logs_open;
	base = xasprintf("%s.stdout", name);
	rc = logrot_open(&h->out, log_dir, base, max_files, max_size, err);
	free(base);
	if (rc < 0)
		return rc;
	base = xasprintf("%s.stderr", name);
	rc = logrot_open(&h->err, log_dir, base, max_files, max_size, err);
	free(base);
	if (rc < 0)
		return rc;
logs_open:
	if (pos_file && *pos_file) {
		h->pos_fd = open(pos_file, O_RDWR | O_CREAT | O_CLOEXEC | (fresh ? O_TRUNC : 0), 0600);
		if (h->pos_fd >= 0 && !fresh) {
			char buf[32] = "";
			ssize_t n = pread(h->pos_fd, buf, sizeof(buf) - 1, 0);
			int64_t ts;
			if (n > 0) {
				buf[n] = '\0';
				buf[strcspn(buf, "\n")] = '\0';
				if (parse_int64(buf, 0, INT64_MAX, &ts, NULL) == 0)
					h->last_ts = ts;
			}
		}
	}
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return herd_errf(err, -errno, "pipe: %s", strerror(errno));
	h->fd = p[0];
	h->wake_w = p[1];
	rc = pthread_create(&h->thread, NULL, follower, h);
	if (rc != 0)
		return herd_errf(err, -rc, "log follower thread: %s", strerror(rc));
	h->thread_started = true;
	return 0;
}

static int remove_container(struct docker_client *c, const char *id_or_name, struct herd_err *err)
{
	struct strbuf resp = STRBUF_INIT;
	char *path = xasprintf("/containers/%s?force=1&v=1", id_or_name);
	struct docker_req req = { .method = "DELETE", .path = path };
	int rc = docker_call(c, &req, &resp, err);
	if (rc >= 0 && rc != 204 && rc != 404 && rc != 200)
		rc = herd_errf(err, -EIO, "remove container %s: HTTP %d: %s", id_or_name, rc,
			       docker_error_message(&resp));
	else if (rc >= 0)
		rc = 0;
	free(path);
	strbuf_release(&resp);
	return rc;
}

static int create_and_start(struct driver_handle *h, const struct driver_task *task,
			    json_t *body, struct herd_err *err)
{
	struct strbuf path = STRBUF_INIT, resp = STRBUF_INIT;
	char *name = docker_container_name(task);
	char *text = json_dumps(body, JSON_COMPACT);
	json_t *o = NULL;
	int rc;

	/* A container of an earlier run of this task (a restart) goes first. */
	rc = remove_container(&h->client, name, err);
	if (rc < 0)
		goto out;
	strbuf_adds(&path, "/containers/create?name=");
	docker_query_escape(&path, name);
	struct docker_req req = { .method = "POST", .path = path.buf, .body = text };
	rc = docker_call(&h->client, &req, &resp, err);
	if (rc < 0)
		goto out;
	if (rc != 201) {
		rc = herd_errf(err, rc == 404 ? -ENOENT : rc == 409 ? -EEXIST : -EINVAL,
			       "create container %s: HTTP %d: %s", name, rc, docker_error_message(&resp));
		goto out;
	}
	o = json_loads(resp.buf, 0, NULL);
	const char *id = json_string_value(json_object_get(o, "Id"));
	if (!id || !*id || strlen(id) >= sizeof(h->state.container_id)) {
		rc = herd_errf(err, -EPROTO, "create container %s: no Id in the answer", name);
		goto out;
	}
	snprintf(h->state.container_id, sizeof(h->state.container_id), "%s", id);
	strbuf_reset(&path);
	strbuf_addf(&path, "/containers/%s/start", id);
	struct docker_req start = { .method = "POST", .path = path.buf };
	strbuf_reset(&resp);
	rc = docker_call(&h->client, &start, &resp, err);
	if (rc == 204 || rc == 304) {
		rc = 0;
		goto out;
	}
	if (rc >= 0)
		/* e.g. "exec: \"nope\": executable file not found in $PATH" */
		rc = herd_errf(err, rc == 404 ? -ENOENT : -EINVAL, "start container %s: %s", name,
			       docker_error_message(&resp));
	remove_container(&h->client, id, NULL);
	h->state.container_id[0] = '\0';
out:
	json_decref(o);
	free(text);
	free(name);
	strbuf_release(&path);
	strbuf_release(&resp);
	return rc;
}

static void event_adapter(void *arg, const char *type, const char *message)
{
	const struct driver_task *task = arg;
	task->event(task->event_arg, type, message);
}

static int docker_start(const struct driver_env *env, const struct driver_task *task,
			struct driver_handle **out, struct herd_err *err)
{
	struct docker_task_config tc;
	struct docker_engine_info info = { .version = "" };
	json_t *body = NULL;
	int rc;

	if (!valid_task_name(task->name))
		return herd_errf(err, -EINVAL, "task name '%s': expected letters, digits, '_', '-', '.'",
				 task->name ? task->name : "");
	if (!task->alloc_id || !*task->alloc_id || !valid_task_name(task->alloc_id))
		return herd_errf(err, -EINVAL, "task %s: the docker driver needs the allocation id",
				 task->name);
	if (!task->task_dir || !task->log_dir || !task->state_dir || !task->env)
		return herd_errf(err, -EINVAL, "task %s: task_dir, log_dir, state_dir and env are required",
				 task->name);
	if (task->log_max_files < 1 || task->log_max_file_size < 1)
		return herd_errf(err, -EINVAL, "task %s: logs need max_files >= 1 and max_file_size >= 1",
				 task->name);
	rc = docker_task_config_decode(task->config, task->task_dir, env->docker, &tc, err);
	if (rc < 0)
		return rc;
	struct driver_handle *h = handle_new();
	h->keep_container = env->docker && env->docker->keep_containers;
	rc = docker_client_init(&h->client, env->docker, err);
	if (rc < 0)
		goto fail;
	size_t ngpus;
	docker_strv_free(docker_task_gpus(task, &ngpus));
	if (ngpus && (rc = docker_engine_info(&h->client, &info, err)) < 0)
		goto fail;
	/* Before the pull: a task that cannot run here fails at once. */
	rc = docker_create_body(task, &tc, &info, env->docker, &body, err);
	if (rc < 0)
		goto fail;
	rc = docker_image_ensure(&h->client, tc.image, tc.force_pull, tc.auth_header,
				 tc.pull_timeout_ns ? tc.pull_timeout_ns
				 : env->docker ? env->docker->pull_timeout_ns : 0,
				 env->docker ? env->docker->pull_activity_timeout_ns : 0,
				 task->event ? event_adapter : NULL, (void *)task, err);
	if (rc < 0)
		goto fail;
	rc = create_and_start(h, task, body, err);
	if (rc < 0)
		goto fail;
	char *pos = xasprintf("%s/%s.docker-logpos", task->state_dir, task->name);
	rc = handle_run(h, task->name, task->log_dir, task->log_max_files, task->log_max_file_size,
			task->logs_disabled, pos, true, err);
	free(pos);
	if (rc < 0) {
		remove_container(&h->client, h->state.container_id, NULL);
		goto fail;
	}
	*out = h;
	h = NULL;
	rc = 0;
fail:
	if (h)
		handle_free(h);
	json_decref(body);
	docker_task_config_release(&tc);
	return rc;
}

static int docker_wait(struct driver_handle *h, int timeout_ms, struct driver_exit *exit,
		       struct herd_err *err)
{
	pthread_mutex_lock(&h->lock);
	bool done = h->done;
	pthread_mutex_unlock(&h->lock);
	if (!done) {
		struct pollfd p = { h->fd, POLLIN, 0 };
		int n;
		do {
			n = poll(&p, 1, timeout_ms);
		} while (n < 0 && errno == EINTR);
		if (n < 0)
			return herd_errf(err, -errno, "waiting for container %.12s: %s",
					 h->state.container_id, strerror(errno));
		pthread_mutex_lock(&h->lock);
		done = h->done;
		pthread_mutex_unlock(&h->lock);
		if (!done)
			return 0;
	}
	pthread_mutex_lock(&h->lock);
	*exit = h->exit;
	pthread_mutex_unlock(&h->lock);
	return 1;
}

static int docker_signal(struct driver_handle *h, int sig)
{
	pthread_mutex_lock(&h->lock);
	bool done = h->done;
	h->signalled = true;
	pthread_mutex_unlock(&h->lock);
	if (done)
		return -ESRCH;
	char *path = xasprintf("/containers/%s/kill?signal=%d", h->state.container_id, sig);
	struct docker_req req = { .method = "POST", .path = path };
	int rc = docker_call(&h->client, &req, NULL, NULL);
	free(path);
	if (rc == 204)
		return 0;
	if (rc == 404 || rc == 409)
		return -ESRCH; /* gone, or not running */
	return rc < 0 ? rc : -EIO;
}

static int docker_stop(struct driver_handle *h, int kill_signal, int64_t kill_timeout_ns,
		       struct driver_exit *exit, struct herd_err *err)
{
	static const struct driver_stop_steps steps = { docker_signal, docker_wait, NULL };
	int rc = docker_wait(h, 0, exit, err);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	char what[48];
	snprintf(what, sizeof(what), "container %.12s", h->state.container_id);
	return driver_stop_escalate(h, &steps, kill_signal, kill_timeout_ns, what, exit, err);
}

static void docker_destroy(struct driver_handle *h)
{
	if (!h)
		return;
	if (h->thread_started) {
		docker_cancel_fire(&h->cancel);
		pthread_join(h->thread, NULL);
		h->thread_started = false;
	}
	/* An ended container has given all it had (logs, exit): remove it.
	 * A running one stays for recover(). */
	if (h->done && !h->keep_container && h->state.container_id[0] && !h->exit.lost)
		remove_container(&h->client, h->state.container_id, NULL);
	handle_free(h);
}

static int docker_recover(const struct driver_env *env, const struct driver_state *state,
			  struct driver_handle **out, struct herd_err *err)
{
	if (strcmp(state->driver, docker_ops.name))
		return herd_errf(err, -EINVAL, "task state is for driver '%s', not docker",
				 state->driver);
	if (!state->container_id[0])
		return herd_errf(err, -EINVAL, "task state: no container id");
	struct driver_handle *h = handle_new();
	json_t *o = NULL;
	h->state = *state;
	h->keep_container = env->docker && env->docker->keep_containers;
	int rc = docker_client_init(&h->client, env->docker, err);
	if (rc < 0)
		goto fail;
	rc = inspect(&h->client, state->container_id, &o, NULL, err);
	if (rc == -ENOENT) {
		/* Removed while no agent watched: nothing says how it ended. */
		h->done = true;
		h->exit = (struct driver_exit){ .exit_code = -1, .lost = true,
						.finished_ns = now_unix_ns() };
		int p[2];
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
			/* readable at once, like the fd of any ended task */
			h->fd = p[0];
			h->wake_w = p[1];
			while (write(h->wake_w, "x", 1) < 0 && errno == EINTR)
				;
		}
		*out = h;
		return herd_errf(err, -ESRCH, "container %.12s no longer exists", state->container_id);
	}
	if (rc < 0)
		goto fail;
	const json_t *labels = json_object_get(json_object_get(o, "Config"), "Labels");
	const char *task = json_string_value(json_object_get(labels, DOCKER_LABEL_TASK));
	const char *log_dir = json_string_value(json_object_get(labels, DOCKER_LABEL_LOG_DIR));
	const char *files = json_string_value(json_object_get(labels, DOCKER_LABEL_LOG_FILES));
	const char *size = json_string_value(json_object_get(labels, DOCKER_LABEL_LOG_SIZE));
	const char *pos = json_string_value(json_object_get(labels, DOCKER_LABEL_LOG_POS));
	int64_t nfiles, nsize;
	if (!valid_task_name(task) || !log_dir || !files || !size ||
	    parse_int64(files, 1, 1 << 20, &nfiles, NULL) < 0 ||
	    parse_int64(size, 1, INT64_MAX, &nsize, NULL) < 0) {
		rc = herd_errf(err, -EINVAL, "container %.12s: not started by herd (labels missing)",
			       state->container_id);
		goto fail;
	}
	const char *off = json_string_value(json_object_get(labels, DOCKER_LABEL_LOGS_OFF));
	rc = handle_run(h, task, log_dir, (int)nfiles, nsize, off && !strcmp(off, "true"), pos,
			false, err);
	if (rc < 0)
		goto fail;
	json_decref(o);
	*out = h;
	return 0;
fail:
	json_decref(o);
	handle_free(h);
	return rc;
}

/* One stats sample of container id through client c (docker_stats). */
static int container_stats(struct docker_client *c, const char *id, struct docker_stats *out,
			   struct herd_err *err)
{
	struct strbuf resp = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/stats?stream=0", id);
	struct docker_req req = { .method = "GET", .path = path };
	json_t *o = NULL;
	int rc = docker_call(c, &req, &resp, err);
	free(path);
	if (rc == 404 || rc == 409) {
		rc = herd_errf(err, -ESRCH, "container %.12s is not running", id);
		goto out;
	}
	if (rc >= 0 && rc != 200) {
		rc = herd_errf(err, -EIO, "stats of container %.12s: HTTP %d: %s",
			       id, rc, docker_error_message(&resp));
		goto out;
	}
	if (rc < 0)
		goto out;
	o = json_loads(resp.buf, 0, NULL);
	const json_t *mem = json_object_get(o, "memory_stats");
	const json_t *ms = json_object_get(mem, "stats");
	const json_t *cpu = json_object_get(o, "cpu_stats");
	const json_t *pre = json_object_get(o, "precpu_stats");
	if (!json_is_object(mem) || !json_is_object(cpu)) {
		rc = herd_errf(err, -ESRCH, "container %.12s: no stats (not running)",
			       id);
		goto out;
	}
	struct docker_stats s = { 0 };
	s.memory_usage = json_integer_value(json_object_get(mem, "usage"));
	s.memory_limit = json_integer_value(json_object_get(mem, "limit"));
	/* cgroup v1 reports rss, v2 anon */
	const json_t *rss = json_object_get(ms, "rss");
	if (!rss)
		rss = json_object_get(ms, "anon");
	s.memory_rss = rss ? json_integer_value(rss) : -1;
	json_int_t total = json_integer_value(json_object_get(json_object_get(cpu, "cpu_usage"),
							      "total_usage"));
	json_int_t pre_total = json_integer_value(json_object_get(json_object_get(pre, "cpu_usage"),
								  "total_usage"));
	json_int_t sys = json_integer_value(json_object_get(cpu, "system_cpu_usage"));
	json_int_t pre_sys = json_integer_value(json_object_get(pre, "system_cpu_usage"));
	json_int_t ncpu = json_integer_value(json_object_get(cpu, "online_cpus"));
	s.cpu_total_ns = total > 0 ? (uint64_t)total : 0;
	if (sys > pre_sys && total >= pre_total && pre_sys > 0)
		s.cpu_percent = (double)(total - pre_total) / (double)(sys - pre_sys) *
				(double)(ncpu > 0 ? ncpu : 1) * 100.0;
	s.read_ns = now_unix_ns();
	*out = s;
	rc = 0;
out:
	json_decref(o);
	strbuf_release(&resp);
	return rc;
}

int docker_stats(struct driver_handle *h, struct docker_stats *out, struct herd_err *err)
{
	return container_stats(&h->client, h->state.container_id, out, err);
}

/* driver_ops.stats: a client of its own (the handle may be in use by the
 * task runner's thread), one engine sample. */
static int docker_ops_stats(const struct driver_env *env, const struct driver_state *state,
			    struct driver_stats *out, struct herd_err *err)
{
	struct docker_client c;
	struct docker_stats ds;
	int rc;

	if (!state->container_id[0])
		return herd_errf(err, -EINVAL, "task state: no container id");
	rc = docker_client_init(&c, env->docker, err);
	if (rc == 0)
		rc = container_stats(&c, state->container_id, &ds, err);
	docker_client_release(&c);
	if (rc < 0)
		return rc;
	*out = (struct driver_stats){
		.memory_bytes = ds.memory_usage,
		.memory_peak_bytes = -1,
		.memory_limit_bytes = ds.memory_limit > 0 ? ds.memory_limit : -1,
		.cpu_total_ns = (int64_t)ds.cpu_total_ns,
		.cpu_percent = ds.cpu_percent,
		.sampled_at_ns = ds.read_ns,
	};
	return 0;
}

/* driver_ops.set_cores: POST /containers/{id}/update {"CpusetCpus"}, on
 * a client of its own (as stats).  NULL: the cores this process may use,
 * written out (an empty CpusetCpus means "unchanged" to the engine). */
static int docker_set_cores(const struct driver_env *env, const struct driver_state *state,
			    const char *cpus, struct herd_err *err)
{
	struct docker_client c;
	struct strbuf resp = STRBUF_INIT;
	char *all = NULL;
	int rc;

	if (!state->container_id[0])
		return herd_errf(err, -EINVAL, "task state: no container id");
	if (!cpus) {
		struct cpulist set = CPULIST_INIT;
		if (sched_getaffinity(0, sizeof(set.w), (cpu_set_t *)(void *)set.w) < 0)
			return herd_errf(err, -errno, "sched_getaffinity: %s", strerror(errno));
		cpus = all = cpulist_str(&set);
	}
	json_t *o = json_pack("{s:s}", "CpusetCpus", cpus);
	char *body = json_dumps(o, JSON_COMPACT);
	char *path = xasprintf("/containers/%s/update", state->container_id);
	struct docker_req req = { .method = "POST", .path = path, .body = body };
	rc = docker_client_init(&c, env->docker, err);
	if (rc == 0)
		rc = docker_call(&c, &req, &resp, err);
	if (rc == 404)
		rc = herd_errf(err, -ESRCH, "container %.12s is gone", state->container_id);
	else if (rc >= 300)
		rc = herd_errf(err, -EIO, "update container %.12s: HTTP %d: %s", state->container_id,
			       rc, docker_error_message(&resp));
	else if (rc > 0)
		rc = 0;
	docker_client_release(&c);
	strbuf_release(&resp);
	json_decref(o);
	free(body);
	free(path);
	free(all);
	return rc;
}

int docker_gc(const struct docker_config *cfg, const char *const *live_alloc_ids, size_t n,
	      struct herd_err *err)
{
	struct docker_client c;
	struct strbuf resp = STRBUF_INIT, path = STRBUF_INIT;
	json_t *list = NULL;
	size_t i;
	json_t *ct;
	int removed = 0;
	int rc = docker_client_init(&c, cfg, err);
	if (rc < 0)
		goto out;
	strbuf_adds(&path, "/containers/json?all=1&filters=");
	docker_query_escape(&path, "{\"label\":[\"" DOCKER_LABEL_ALLOC "\"]}");
	struct docker_req req = { .method = "GET", .path = path.buf };
	rc = docker_call(&c, &req, &resp, err);
	if (rc >= 0 && rc != 200)
		rc = herd_errf(err, -EIO, "list containers: HTTP %d: %s", rc, docker_error_message(&resp));
	if (rc < 0)
		goto out;
	list = json_loads(resp.buf, 0, NULL);
	json_array_foreach(list, i, ct) {
		const char *id = json_string_value(json_object_get(ct, "Id"));
		const char *alloc = json_string_value(json_object_get(json_object_get(ct, "Labels"),
								      DOCKER_LABEL_ALLOC));
		if (!id || !alloc)
			continue;
		bool live = false;
		for (size_t k = 0; k < n && !live; k++)
			live = live_alloc_ids[k] && !strcmp(live_alloc_ids[k], alloc);
		if (!live && remove_container(&c, id, NULL) == 0)
			removed++;
	}
	if (cfg && cfg->gc_dangling_images) {
		strbuf_reset(&path);
		strbuf_adds(&path, "/images/prune?filters=");
		docker_query_escape(&path, "{\"dangling\":[\"true\"]}");
		struct docker_req prune = { .method = "POST", .path = path.buf };
		strbuf_reset(&resp);
		rc = docker_call(&c, &prune, &resp, err);
		if (rc >= 0 && rc != 200)
			rc = herd_errf(err, -EIO, "prune images: HTTP %d: %s", rc,
				       docker_error_message(&resp));
		if (rc < 0)
			goto out;
	}
	rc = removed;
out:
	json_decref(list);
	docker_client_release(&c);
	strbuf_release(&resp);
	strbuf_release(&path);
	return rc;
}

/* The processes of the container's cgroup: the engine names it after the
 * container's id ("docker-<id>.scope" under systemd, "docker/<id>" with
 * cgroupfs), which no other cgroup contains. */
static bool docker_owns(const struct driver_state *state, const struct driver_proc *p)
{
	return strlen(state->container_id) >= 12 &&
	       driver_proc_in_cgroup(p, state->container_id, true);
}

const struct driver_ops docker_ops = {
	.name = "docker",
	.fingerprint = docker_fingerprint,
	.start = docker_start,
	.wait = docker_wait,
	.signal = docker_signal,
	.stop = docker_stop,
	.destroy = docker_destroy,
	.recover = docker_recover,
	.stats = docker_ops_stats,
	.set_cores = docker_set_cores,
	.owns = docker_owns,
};
