/* `herd alloc exec` in a docker task: an exec instance of the Engine API
 * (POST /containers/:id/exec, POST /exec/:id/start hijacked, POST
 * /exec/:id/resize, GET /exec/:id/json); see task_exec.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/docker-int.h"
#include "drivers/task_exec.h"

/* The most the start answer's head may be. */
#define HEAD_MAX 16384
/* How long the engine may take to mark an ended exec not running. */
#define EXIT_TRIES 100
#define EXIT_WAIT_NS (20 * 1000000L)

struct docker_exec {
	struct docker_client client;
	char id[80];
	bool tty;
	int fd;                      /* the hijacked stream */
	struct strbuf early;         /* stream bytes read with the start answer's head */
	struct docker_demux demux;   /* without tty: stdout/stderr frames */
	task_exec_output_fn out;
	void *out_arg;
};

static int on_frame(void *arg, int stream, const char *data, size_t len)
{
	struct docker_exec *x = arg;
	x->out(x->out_arg, stream == 2 ? 2 : 1, data, len);
	return 0;
}

/* POST /containers/:id/exec: the exec instance's id into x->id. */
static int create(struct docker_exec *x, const char *container, const char *const *argv,
		  uint16_t rows, uint16_t cols, struct herd_err *err)
{
	json_t *cmd = json_array(), *body;
	struct strbuf resp = STRBUF_INIT;
	char *text, *path = xasprintf("/containers/%s/exec", container);
	int rc;

	for (; *argv; argv++)
		json_array_append_new(cmd, json_string(*argv));
	body = json_pack("{s:b,s:b,s:b,s:b,s:o}", "AttachStdin", 1, "AttachStdout", 1,
			 "AttachStderr", 1, "Tty", x->tty, "Cmd", cmd);
	if (x->tty && rows && cols)
		json_object_set_new(body, "ConsoleSize", json_pack("[i,i]", rows, cols));
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct docker_req req = { .method = "POST", .path = path, .body = text };
	rc = docker_call(&x->client, &req, &resp, err);
	free(text);
	free(path);
	if (rc == 201) {
		json_t *j = json_loadb(resp.buf, resp.len, 0, NULL);
		const char *id = json_string_value(json_object_get(j, "Id"));
		if (id && strlen(id) < sizeof(x->id))
			snprintf(x->id, sizeof(x->id), "%s", id);
		json_decref(j);
		rc = x->id[0] ? 0 : herd_errf(err, -EIO, "docker exec: no id in the engine's answer");
	} else if (rc >= 0) {
		rc = herd_errf(err, rc == 404 || rc == 409 ? -ESRCH : -EIO, "docker exec: %s",
			       docker_error_message(&resp));
	}
	strbuf_release(&resp);
	return rc;
}

/* POST /exec/:id/start on a socket of our own, taken over for the stream
 * once the engine answers (101, or 200 from engines that do not say
 * Upgrade). */
static int start(struct docker_exec *x, struct herd_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct strbuf rq = STRBUF_INIT, in = STRBUF_INIT;
	char body[64], buf[4096], *end = NULL;
	int status = 0;
	ssize_t n;

	if (strlen(x->client.socket) >= sizeof(sa.sun_path))
		return herd_errf(err, -ENAMETOOLONG, "docker socket path too long");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", x->client.socket);
	x->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (x->fd < 0 || connect(x->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return herd_errf(err, -errno, "docker engine at %s: %s", x->client.socket,
				 strerror(errno));
	snprintf(body, sizeof(body), "{\"Detach\":false,\"Tty\":%s}", x->tty ? "true" : "false");
	strbuf_addf(&rq, "POST %s/exec/%s/start HTTP/1.1\r\nHost: docker\r\n"
		    "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
		    "Content-Length: %zu\r\n\r\n%s", x->client.prefix, x->id, strlen(body), body);
	n = send(x->fd, rq.buf, rq.len, MSG_NOSIGNAL);
	strbuf_release(&rq);
	if (n < 0)
		return herd_errf(err, -errno, "docker exec start: %s", strerror(errno));
	while (!(end = strstr(in.buf, "\r\n\r\n")) && in.len < HEAD_MAX &&
	       (n = read(x->fd, buf, sizeof(buf))) > 0)
		strbuf_add(&in, buf, (size_t)n);
	if (!end || sscanf(in.buf, "HTTP/1.%*d %d", &status) != 1 ||
	    (status != 101 && status != 200)) {
		herd_errf(err, -EIO, "docker exec start: the engine answered %d", status);
		strbuf_release(&in);
		return err->code;
	}
	size_t head = (size_t)(end + 4 - in.buf);
	strbuf_add(&x->early, in.buf + head, in.len - head);
	strbuf_release(&in);
	return 0;
}

static void first_size(struct docker_exec *x, uint16_t rows, uint16_t cols);

int docker_exec_start(const struct driver_env *env, const struct driver_state *st,
		      const char *const *argv, bool tty, uint16_t rows, uint16_t cols,
		      task_exec_output_fn out, void *arg, struct docker_exec **xp, int *fd,
		      struct herd_err *err)
{
	struct docker_exec *x = xcalloc(1, sizeof(*x));
	int rc;

	x->fd = -1;
	x->tty = tty;
	x->out = out;
	x->out_arg = arg;
	strbuf_init(&x->early, 0);
	docker_demux_init(&x->demux, on_frame, x);
	if (!st->container_id[0])
		rc = herd_errf(err, -ESRCH, "the task has no container");
	else if ((rc = docker_client_init(&x->client, env->docker, err)) == 0 &&
		 (rc = create(x, st->container_id, argv, rows, cols, err)) == 0)
		rc = start(x, err);
	if (rc < 0) {
		docker_exec_free(x);
		return rc;
	}
	if (tty && rows && cols)
		first_size(x, rows, cols);
	*xp = x;
	*fd = x->fd;
	return 0;
}

/* Hands what came on the stream to the output callback. */
static void deliver(struct docker_exec *x, const char *data, size_t len)
{
	if (x->tty)
		x->out(x->out_arg, 1, data, len);
	else
		docker_demux_feed(&x->demux, data, len);
}

ssize_t docker_exec_read(struct docker_exec *x)
{
	char buf[32768];
	ssize_t n;

	if (x->early.len) {
		n = (ssize_t)x->early.len;
		deliver(x, x->early.buf, x->early.len);
		strbuf_reset(&x->early);
		return n;
	}
	n = read(x->fd, buf, sizeof(buf));
	if (n > 0)
		deliver(x, buf, (size_t)n);
	return n < 0 ? -errno : n;
}

bool docker_exec_pending(const struct docker_exec *x)
{
	return x->early.len > 0;
}

/* POST /exec/:id/resize; the HTTP status or -errno. */
static int resize(struct docker_exec *x, uint16_t rows, uint16_t cols)
{
	char *path = xasprintf("/exec/%s/resize?h=%u&w=%u", x->id, rows, cols);
	struct docker_req req = { .method = "POST", .path = path };
	int rc = docker_call(&x->client, &req, NULL, NULL);
	free(path);
	return rc;
}

void docker_exec_resize(struct docker_exec *x, uint16_t rows, uint16_t cols)
{
	resize(x, rows, cols);
}

/* The first size.  Engines before API 1.42 ignore the create's
 * ConsoleSize, and a resize right after the start may come before the
 * process exists (the engine refuses it then): a few tries, as docker's
 * own CLI does. */
static void first_size(struct docker_exec *x, uint16_t rows, uint16_t cols)
{
	for (int i = 0; i < 10; i++) {
		int rc = resize(x, rows, cols);
		if (rc >= 200 && rc < 300)
			return;
		struct timespec ts = { 0, EXIT_WAIT_NS };
		nanosleep(&ts, NULL);
	}
}

/* GET /exec/:id/json: whether it runs, its exit code and host pid. */
static int inspect(struct docker_exec *x, bool *running, int *code, pid_t *pid)
{
	struct strbuf resp = STRBUF_INIT;
	char *path = xasprintf("/exec/%s/json", x->id);
	struct docker_req req = { .method = "GET", .path = path };
	int rc = docker_call(&x->client, &req, &resp, NULL);

	free(path);
	if (rc == 200) {
		json_t *j = json_loadb(resp.buf, resp.len, 0, NULL);
		*running = json_is_true(json_object_get(j, "Running"));
		*code = (int)json_integer_value(json_object_get(j, "ExitCode"));
		*pid = (pid_t)json_integer_value(json_object_get(j, "Pid"));
		json_decref(j);
		rc = 0;
	} else {
		rc = -EIO;
	}
	strbuf_release(&resp);
	return rc;
}

int docker_exec_exit_code(struct docker_exec *x)
{
	bool running = true;
	int code = -1;
	pid_t pid;

	/* the stream may end a moment before the engine records the exit */
	for (int i = 0; i < EXIT_TRIES; i++) {
		if (inspect(x, &running, &code, &pid) < 0)
			return -1;
		if (!running)
			return code;
		struct timespec ts = { 0, EXIT_WAIT_NS };
		nanosleep(&ts, NULL);
	}
	return -1;
}

void docker_exec_kill(struct docker_exec *x)
{
	/* The engine has no kill for an exec: its process (a host pid) and
	 * the group it leads (with a tty, its session) get SIGKILL.  A busy
	 * engine may fail an inspect, or not have the pid of a running exec
	 * yet: asked again (as for the exit code) rather than leave the
	 * command running after its caller went. */
	for (int i = 0; i < EXIT_TRIES; i++) {
		bool running = false;
		int code;
		pid_t pid = 0;

		if (inspect(x, &running, &code, &pid) == 0) {
			if (!running)
				return;
			if (pid > 1) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				return;
			}
		}
		struct timespec ts = { 0, EXIT_WAIT_NS };
		nanosleep(&ts, NULL);
	}
}

void docker_exec_free(struct docker_exec *x)
{
	if (!x)
		return;
	if (x->fd >= 0)
		close(x->fd);
	docker_demux_release(&x->demux);
	strbuf_release(&x->early);
	docker_client_release(&x->client);
	free(x);
}
