/* The client's HTTP API: task log streams, stats, and a user's restart or
 * signal of running tasks; see client_http.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <jansson.h>

#include "agent/alloc_gc.h"
#include "agent/client.h"
#include "agent/client_fs.h"
#include "agent/client_http.h"
#include "agent/client_reply.h"
#include "agent/exec_session.h"
#include "agent/logs.h"
#include "agent/migrate_serve.h"
#include "agent/server_list.h"
#include "agent/state.h"
#include "drivers/docker.h"
#include "drivers/driver.h"
#include "common/httpc.h"
#include "common/strbuf.h"
#include "common/tls.h"
#include "common/tls_mhd.h"
#include "common/xalloc.h"
#include "common/units.h"

#define LOGS_PREFIX "/v1/client/fs/logs/"
#define ALLOC_PREFIX "/v1/client/allocation/"
/* The interval of the two samples a CPU percent is computed from. */
#define CPU_SAMPLE_NS (250 * 1000000L)
#define IDLE_SLEEP_NS (100 * 1000000L)
#define DEAD_CHECK_NS (500 * 1000000LL)
#define CHUNK 65536
/* The largest body a POST may send: {"signal": "...", "task": "..."}
 * needs well under 1 KiB. */
#define MAX_BODY 16384
/* Exec sessions at once: each holds a thread, a process and a few fds;
 * sessions are rare (a person debugging), so a few are plenty. */
#define EXEC_MAX_SESSIONS 16
/* The longest command an exec may send (the JSON array in its query). */
#define EXEC_MAX_COMMAND 16384
#define EXEC_MAX_ARGS 256
/* The Upgrade token of the exec stream (docs/api.md). */
#define EXEC_PROTOCOL "herd-exec"

struct client_http {
	struct MHD_Daemon *mhd;
	char *alloc_dir, *state_dir;
	/* the servers that authorize reads, one current (server_list.h);
	 * NULL: none */
	struct server_list *auth_servers;
	struct tls_client auth_tls; /* how auth_servers are reached */
	const struct httpc_local *auth_local; /* it, in this process; NULL: over HTTP */
	bool verify_client;   /* tls: callers need a certificate (check_peer) */
	bool tls;             /* https: exec sessions run on threads of their own */
	char *cgroup_parent;  /* the exec driver's; NULL: its default */
	char *docker_socket;  /* the docker engine's; NULL: its default */
	char **shim_argv;     /* the task shim's command (exec's enter mode); NULL: none */
	atomic_bool stopping;
	uint16_t port;
	pthread_mutex_t client_lock;
	struct client *client; /* restarts and signals go to it; NULL: none (under client_lock) */
	atomic_int exec_sessions; /* exec requests holding a slot (EXEC_MAX_SESSIONS) */
	atomic_int exec_threads;  /* https sessions on threads of their own (exec_thread) */
};

/* An exec request once checked: what its session needs after the
 * upgrade.  Owned by the request (struct request), freed with it. */
struct exec_req {
	struct client_http *h;
	char **argv;             /* NULL-terminated */
	struct driver_state task;
	char *task_dir;
	bool tty;
	uint16_t rows, cols;
	/* https: what its own thread needs (exec_thread) */
	int sock;
	char *extra;
	size_t extra_len;
	struct MHD_UpgradeResponseHandle *urh;
};

/* One connection's request as it arrives: its body, bounded (only a POST
 * may have one). */
struct request {
	struct strbuf body;
	bool too_big;         /* more than MAX_BODY came: read on, dropped, 413 */
	struct exec_req *exec; /* an exec that holds a session slot; NULL: none */
};

struct stream {
	struct client_http *h;
	struct log_reader r;
	bool follow;
	char *alloc_id;
	char task[LOGS_NAME_MAX + 1];
	int64_t last_check;
	int dead_rounds;      /* drained reads since the task was seen dead */
	char *log_path;       /* <alloc_dir>/<id>/alloc/logs */
	dev_t log_dev;        /* what it named when the stream opened */
	ino_t log_ino;
};

/* Whether the task is dead (or its allocation gone) per the state the
 * client saves (state.h). */
static bool task_dead(const struct stream *s)
{
	json_t *st = state_read_alloc(s->h->state_dir, s->alloc_id), *t;
	bool dead;

	if (!st)
		return true;   /* gone: nothing more comes */
	t = json_object_get(json_object_get(st, "tasks"), s->task);
	dead = json_is_true(json_object_get(st, "done")) ||
	       (t && !strcmp(json_string_value(json_object_get(t, "state")) ?: "", "dead"));
	json_decref(st);
	return dead;
}

/* Whether the log dir the reader holds is still the allocation's.  The
 * client's collector moves a terminal allocation's dir away from its id
 * and may hand it, scrubbed, to a new allocation (alloc_gc.h); a follower
 * that holds its fd would then read the new one's logs.  A dir never comes
 * back to an id once moved, so when the path still names it after a read,
 * it was this allocation's for the whole time before: the read is ours. */
static bool still_ours(const struct stream *s)
{
	struct stat st;
	return stat(s->log_path, &st) == 0 && st.st_dev == s->log_dev && st.st_ino == s->log_ino;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	ssize_t n;

	(void)pos;
	if (atomic_load(&s->h->stopping))
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = log_reader_read(&s->r, buf, max > CHUNK ? CHUNK : max);
	if (n > 0 && !still_ours(s))
		return MHD_CONTENT_READER_END_OF_STREAM;   /* collected: drop it */
	if (n > 0)
		return n;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (!s->follow)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (s->dead_rounds > 0 && ++s->dead_rounds > 2)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!s->dead_rounds && mono_ns() - s->last_check > DEAD_CHECK_NS) {
		s->last_check = mono_ns();
		if (task_dead(s))
			s->dead_rounds = 1;   /* drain what the shim wrote last */
	}
	struct timespec ts = { 0, IDLE_SLEEP_NS };
	nanosleep(&ts, NULL);
	/* Nothing now; with a thread per connection MHD calls again. */
	return 0;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;
	log_reader_close(&s->r);
	free(s->alloc_id);
	free(s->log_path);
	free(s);
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The caller's token: X-Herd-Token, else Authorization: Bearer. */
static const char *caller_token(struct MHD_Connection *conn)
{
	const char *t = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Herd-Token");
	if (t && *t)
		return t;
	t = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	if (t && !strncasecmp(t, "Bearer ", 7) && t[7])
		return t + 7;
	return NULL;
}

/* Whether the caller may read alloc_id (submit: may also change it): the
 * server answers GET /v1/allocation/:id (?acl=submit) with the caller's
 * token only when that token may read (submit in) the allocation's
 * namespace (with ACL off, to anyone).  Returns 0, or queues the refusal
 * and returns 1 (*rc set). */
static int authorize_get(struct client_http *h, struct MHD_Connection *conn, const char *alloc_id,
			 bool submit, json_t **alloc, enum MHD_Result *rc);

static int authorize(struct client_http *h, struct MHD_Connection *conn, const char *alloc_id,
		     bool submit, enum MHD_Result *rc)
{
	return authorize_get(h, conn, alloc_id, submit, NULL, rc);
}

/* authorize, and *alloc (when not NULL) gets the server's answer: the
 * allocation (NULL when no server is asked). */
static int authorize_get(struct client_http *h, struct MHD_Connection *conn, const char *alloc_id,
			 bool submit, json_t **alloc, enum MHD_Result *rc)
{
	struct httpc c;
	struct httpc_response resp = { 0 };
	struct herd_err err = { 0, "" };
	const char *token = caller_token(conn);
	char *id = httpc_escape(alloc_id);
	char *path = xasprintf("/v1/allocation/%s%s", id, submit ? "?acl=submit" : "");
	char addr[SERVER_ADDR_MAX];
	int r;

	if (!h->auth_servers) {
		free(path);
		free(id);
		return 0;
	}
	httpc_init_tls(&c, "", &h->auth_tls);
	c.local = h->auth_local;
	free(c.token);   /* never the agent's own $HERD_TOKEN */
	c.token = token ? xstrdup(token) : NULL;
	c.timeout_ms = 10000;
	/* The current server, else the next ones (a failover): each tried
	 * once per check. */
	for (size_t tries = server_list_size(h->auth_servers);; tries--) {
		uint64_t gen = server_list_current(h->auth_servers, addr, sizeof(addr));
		httpc_set_addr(&c, addr);
		httpc_response_release(&resp);
		r = httpc_request(&c, "GET", path, NULL, &resp, &err);
		/* a standby's redirect not followed (httpc_redirect_check):
		 * the next server may be the leader */
		if (r == 0 || (resp.status && resp.status < 500 && resp.status != 307 &&
			       resp.status != 308)) {
			server_list_answered(h->auth_servers, gen);
			break;
		}
		server_list_failed(h->auth_servers, gen, NULL);
		if (tries <= 1)
			break;
	}
	if (alloc && r == 0)
		*alloc = json_incref(resp.body);
	httpc_response_release(&resp);
	httpc_release(&c);
	free(path);
	free(id);
	if (r == 0)
		return 0;
	if (r == -ENOENT)
		*rc = client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
				  "no such allocation, or the token may not read its namespace");
	else if (r == -EACCES)
		*rc = client_reply_error(conn, MHD_HTTP_FORBIDDEN, "permission_denied",
				  submit ? "permission denied: the token may not submit to this "
					   "allocation's namespace"
					 : "the token may not read this allocation's namespace");
	else {
		char *msg = xasprintf("cannot check the token with a server: %s", err.msg);
		*rc = client_reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "server_unavailable", msg);
		free(msg);
	}
	return 1;
}

static enum MHD_Result serve_logs(struct client_http *h, struct MHD_Connection *conn,
				  const char *alloc_id)
{
	const char *task = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "task");
	const char *type = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "type");
	const char *follow = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "follow");
	const char *origin = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "origin");
	const char *offs = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "offset");
	struct herd_err err = { 0, "" };
	struct MHD_Response *r;
	struct stream *s;
	long long offset = 0;
	char *end, *dir;
	enum MHD_Result rc;

	if (!logs_valid_name(alloc_id))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "allocation id must be letters, digits, '-', '_' or '.'");
	if (!task || !logs_valid_name(task))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "task must be a task name (letters, digits, '-', '_', '.')");
	if (!type)
		type = "stdout";
	if (strcmp(type, "stdout") && strcmp(type, "stderr"))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "type must be stdout or stderr");
	if (origin && strcmp(origin, "start") && strcmp(origin, "end"))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "origin must be start or end");
	if (follow && strcmp(follow, "true") && strcmp(follow, "false"))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "follow must be true or false");
	if (offs) {
		errno = 0;
		offset = strtoll(offs, &end, 10);
		if (!*offs || *end || errno || offset < 0)
			return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
					   "offset must be a byte count");
	}
	if (authorize(h, conn, alloc_id, false, &rc))
		return rc;
	dir = xasprintf("%s/%s/%s", h->alloc_dir, alloc_id, task);
	if (!is_dir(dir)) {
		free(dir);
		if (alloc_gc_collected(h->alloc_dir, alloc_id))
			return client_reply_error(conn, MHD_HTTP_GONE, "gone",
					   "the allocation ended and its directory, logs "
					   "included, was garbage-collected on this node (client "
					   "gc_max_allocs, gc_disk_usage_threshold, "
					   "gc_inode_usage_threshold)");
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
				   "no such allocation or task on this node (an allocation "
				   "that ended may have been garbage-collected)");
	}
	free(dir);
	dir = xasprintf("%s/%s/alloc/logs/%s" LOGS_DISABLED_SUFFIX, h->alloc_dir, alloc_id, task);
	if (access(dir, F_OK) == 0) {
		free(dir);
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "logs_disabled",
				   "task keeps no logs: its job file says logs { disabled = true }");
	}
	free(dir);
	s = xcalloc(1, sizeof(*s));
	s->h = h;
	s->follow = follow && !strcmp(follow, "true");
	s->alloc_id = xstrdup(alloc_id);
	snprintf(s->task, sizeof(s->task), "%s", task);
	s->last_check = mono_ns();
	dir = xasprintf("%s/%s/alloc/logs", h->alloc_dir, alloc_id);
	if (log_reader_open(&s->r, dir, task, type, origin && !strcmp(origin, "end"), offset,
			    &err) < 0) {
		free(dir);
		stream_free(s);
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", err.msg);
	}
	{
		struct stat st;
		if (fstat(s->r.dirfd, &st) < 0) {
			free(dir);
			stream_free(s);
			return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
					   "no such allocation or task on this node");
		}
		s->log_dev = st.st_dev;
		s->log_ino = st.st_ino;
		s->log_path = dir;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK, stream_read, s, stream_free);
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* The entry of one sample in the stats answer (unknown fields null). */
static json_t *stats_json(const struct driver_stats *s)
{
	json_t *o = json_object();
	const struct { const char *key; int64_t v; } f[] = {
		{ "memory_bytes", s->memory_bytes },
		{ "memory_peak_bytes", s->memory_peak_bytes },
		{ "memory_limit_bytes", s->memory_limit_bytes },
		{ "cpu_total_ns", s->cpu_total_ns },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		json_object_set_new(o, f[i].key, f[i].v >= 0 ? json_integer(f[i].v) : json_null());
	json_object_set_new(o, "cpu_percent",
			    s->cpu_percent >= 0 ? json_real(s->cpu_percent) : json_null());
	json_object_set_new(o, "sampled_at", json_integer(s->sampled_at_ns));
	return o;
}

/* Each task's GPU memory (gpu_memory: [{"device", "memory_mib",
 * "share_mib"}]) as the client's GPU watch last sampled it, for the tasks
 * that hold GPUs. */
static void add_gpu_memory(struct client_http *h, const char *alloc_id, json_t *tasks)
{
	struct client *cl;
	const char *name;
	json_t *ts;

	pthread_mutex_lock(&h->client_lock);
	cl = h->client;
	pthread_mutex_unlock(&h->client_lock);
	if (!cl)
		return;
	json_object_foreach(tasks, name, ts) {
		json_t *g = client_task_gpu_memory(cl, alloc_id, name);
		if (g)
			json_object_set_new(ts, "gpu_memory", g);
	}
}

/* GET /v1/client/allocation/:id/stats: one sample of every running task
 * of the allocation, from the task handles the client persisted (so no
 * lock of the runners is needed).  A CPU percent the driver does not
 * measure itself comes from a second sample CPU_SAMPLE_NS later. */
static enum MHD_Result serve_stats(struct client_http *h, struct MHD_Connection *conn,
				   const char *alloc_id)
{
	struct docker_config dc = { .socket = h->docker_socket };
	struct driver_env env = { .cgroup_parent = h->cgroup_parent, .docker = &dc };
	enum { MAXT = 64 };
	struct {
		const char *name;
		const struct driver_ops *ops;
		struct driver_state state;
		struct driver_stats first;
		bool again;
	} t[MAXT];
	size_t n = 0;
	const char *name;
	json_t *st, *ts, *out, *tasks;
	enum MHD_Result rc;

	if (!logs_valid_name(alloc_id))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "allocation id must be letters, digits, '-', '_' or '.'");
	if (authorize(h, conn, alloc_id, false, &rc))
		return rc;
	st = state_read_alloc(h->state_dir, alloc_id);
	if (!st)
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
				   "no such allocation on this node");
	out = json_object();
	tasks = json_object();
	json_object_set_new(out, "tasks", tasks);
	json_object_foreach(json_object_get(st, "tasks"), name, ts) {
		const char *hs = json_string_value(json_object_get(ts, "handle"));
		struct herd_err err = { 0, "" };
		if (n == MAXT || !hs || strcmp(json_string_value(json_object_get(ts, "state")) ?: "",
					       "running"))
			continue;
		t[n].name = name;
		t[n].again = false;
		if (driver_state_from_json(hs, &t[n].state, &err) < 0 ||
		    !(t[n].ops = driver_find(t[n].state.driver)) || !t[n].ops->stats) {
			json_object_set_new(tasks, name, json_pack("{s:s}", "error",
				err.msg[0] ? err.msg : "the task's driver reports no stats"));
			continue;
		}
		if (t[n].ops->stats(&env, &t[n].state, &t[n].first, &err) < 0) {
			/* ended since the state was written: not running */
			if (err.code != -ESRCH)
				json_object_set_new(tasks, name, json_pack("{s:s}", "error", err.msg));
			continue;
		}
		t[n].again = t[n].first.cpu_percent < 0;
		json_object_set_new(tasks, name, stats_json(&t[n].first));
		n++;
	}
	bool wait = false;
	for (size_t i = 0; i < n; i++)
		wait |= t[i].again;
	if (wait) {
		struct timespec d = { 0, CPU_SAMPLE_NS };
		nanosleep(&d, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		struct driver_stats second;
		struct herd_err err = { 0, "" };
		if (!t[i].again || t[i].ops->stats(&env, &t[i].state, &second, &err) < 0)
			continue;
		second.cpu_percent = driver_stats_cpu_percent(&t[i].first, &second);
		json_object_set_new(tasks, t[i].name, stats_json(&second));
	}
	add_gpu_memory(h, alloc_id, tasks);
	char *text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	json_decref(st);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
								 MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* A user's restart or signal, as the body asks it: {"task": "<name>"}
 * (optional: every running task) and for a signal {"signal": "SIGUSR1" |
 * "USR1" | "10" | 10}.  Returns 0 with *op (op->task points into body), or
 * -EINVAL with why (nothing else in the body is accepted). */
static int task_op_from_body(const json_t *body, bool restart, struct client_task_op *op,
			     char *why, size_t size)
{
	const json_t *task = json_object_get(body, "task"), *sig = json_object_get(body, "signal");
	const char *key;
	json_t *v;

	memset(op, 0, sizeof(*op));
	op->restart = restart;
	json_object_foreach((json_t *)body, key, v)
		if (strcmp(key, "task") && (restart || strcmp(key, "signal"))) {
			snprintf(why, size, "unknown field \"%.64s\" (%s)", key,
				 restart ? "a restart takes only task" : "a signal takes signal and task");
			return -EINVAL;
		}
	if (task && !json_is_null(task)) {
		if (!json_is_string(task) || !logs_valid_name(json_string_value(task))) {
			snprintf(why, size, "task must be a task name (letters, digits, '-', '_', '.')");
			return -EINVAL;
		}
		op->task = json_string_value(task);
	}
	if (restart)
		return 0;
	if (json_is_integer(sig)) {
		char num[32];
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(sig));
		op->signal = driver_signal_parse(num);
	} else {
		op->signal = json_is_string(sig) ? driver_signal_parse(json_string_value(sig)) : -EINVAL;
	}
	if (op->signal < 0) {
		if (!sig)
			snprintf(why, size, "signal is required (a name such as SIGUSR1, or a number)");
		else if (json_is_string(sig))
			snprintf(why, size, "unknown signal \"%.32s\" (a name such as SIGUSR1, or a "
				 "number from 1 to %d)", json_string_value(sig), NSIG - 1);
		else
			snprintf(why, size, "signal must be a name such as SIGUSR1, or a number from 1 "
				 "to %d", NSIG - 1);
		return -EINVAL;
	}
	return 0;
}

/* The HTTP answer to client_alloc_task_op's failure rc. */
static enum MHD_Result reply_task_op_error(struct MHD_Connection *conn, int rc, const char *msg)
{
	switch (rc) {
	case -ENOENT:
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", msg);
	case -ESRCH:
		return client_reply_error(conn, MHD_HTTP_CONFLICT, "not_running", msg);
	case -EBUSY:
		return client_reply_error(conn, MHD_HTTP_CONFLICT, "busy", msg);
	case -ENOTSUP:
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "signal_not_supported", msg);
	case -ETIMEDOUT:
		return client_reply_error(conn, MHD_HTTP_GATEWAY_TIMEOUT, "timeout", msg);
	default:
		return client_reply_error(conn, MHD_HTTP_BAD_GATEWAY, "driver_error", msg);
	}
}

/* POST /v1/client/allocation/:id/restart and /signal: checked (id, body,
 * signal), authorized (submit on the allocation's namespace), then handed
 * to the client's runners (client_alloc_task_op). */
static enum MHD_Result serve_task_op(struct client_http *h, struct MHD_Connection *conn,
				     const char *alloc_id, bool restart, const struct request *rq)
{
	struct client_task_op op;
	struct herd_err err = { 0, "" };
	json_error_t jerr;
	json_t *body = NULL, *tasks = NULL, *out;
	struct client *cl;
	enum MHD_Result rc;
	char why[256];
	int r;

	if (!logs_valid_name(alloc_id))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "allocation id must be letters, digits, '-', '_' or '.'");
	if (rq->body.len) {
		body = json_loadb(rq->body.buf, rq->body.len, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(body)) {
			json_decref(body);
			return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "invalid_json",
					   "the body must be a JSON object");
		}
	} else {
		body = json_object();
	}
	if (task_op_from_body(body, restart, &op, why, sizeof(why)) < 0) {
		json_decref(body);
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", why);
	}
	if (authorize(h, conn, alloc_id, true, &rc)) {
		json_decref(body);
		return rc;
	}
	pthread_mutex_lock(&h->client_lock);
	cl = h->client;
	pthread_mutex_unlock(&h->client_lock);
	r = cl ? client_alloc_task_op(cl, alloc_id, &op, &tasks, &err)
	       : herd_errf(&err, -ENOENT, "allocation %s does not run on this node", alloc_id);
	json_decref(body);
	if (r < 0)
		return reply_task_op_error(conn, r, err.msg);
	out = json_pack("{s:o}", "tasks", tasks);
	if (!restart) {
		char name[DRIVER_SIGNAL_NAME_MAX];
		json_object_set_new(out, "signal", json_string(driver_signal_name(op.signal, name)));
	}
	return client_reply_json(conn, MHD_HTTP_OK, out);
}

static void exec_req_free(struct exec_req *x)
{
	if (!x)
		return;
	for (char **a = x->argv; a && *a; a++)
		free(*a);
	free(x->argv);
	free(x->task_dir);
	free(x->extra);
	free(x);
}

/* Whether header (a comma-separated list of tokens) holds token. */
static bool header_has_token(const char *header, const char *token)
{
	size_t n = strlen(token);
	for (const char *p = header; p && *p;) {
		p += strspn(p, " \t,");
		size_t len = strcspn(p, ",");
		size_t end = len;
		while (end && (p[end - 1] == ' ' || p[end - 1] == '\t'))
			end--;
		if (end == n && !strncasecmp(p, token, n))
			return true;
		p += len;
	}
	return false;
}

/* The command of ?command=["sh","-c","..."]: a JSON array of 1 to
 * EXEC_MAX_ARGS strings (the first not empty).  A new NULL-terminated
 * array, or NULL with why. */
static char **exec_argv(const char *text, char *why, size_t size)
{
	json_error_t jerr;
	json_t *a, *v;
	char **argv;
	size_t i;

	if (!text || strlen(text) > EXEC_MAX_COMMAND) {
		snprintf(why, size, "command must be a JSON array of strings of at most %d bytes",
			 EXEC_MAX_COMMAND);
		return NULL;
	}
	a = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_array(a) || !json_array_size(a) || json_array_size(a) > EXEC_MAX_ARGS ||
	    !json_is_string(json_array_get(a, 0)) || !*json_string_value(json_array_get(a, 0))) {
		json_decref(a);
		snprintf(why, size, "command must be a JSON array of 1 to %d strings, the "
			 "first a program", EXEC_MAX_ARGS);
		return NULL;
	}
	argv = xcalloc(json_array_size(a) + 1, sizeof(*argv));
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) !=
					      json_string_length(v)) {
			for (size_t j = 0; j < i; j++)
				free(argv[j]);
			free(argv);
			json_decref(a);
			snprintf(why, size, "command: argument %zu is not a string without NUL", i);
			return NULL;
		}
		argv[i] = xstrdup(json_string_value(v));
	}
	json_decref(a);
	return argv;
}

/* A terminal dimension from the query: absent is 0; else 1..65535. */
static int exec_dim(struct MHD_Connection *conn, const char *key, uint16_t *out)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
	char *end;
	long n;

	*out = 0;
	if (!v)
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	if (!*v || *end || errno || n < 1 || n > 65535)
		return -1;
	*out = (uint16_t)n;
	return 0;
}

/* The task of the allocation's state st that the exec runs in: name,
 * else the only running one.  Returns its state entry, or NULL after
 * queueing why (*rc). */
static const json_t *exec_pick_task(struct MHD_Connection *conn, const json_t *st,
				    const char *name, const char **picked, enum MHD_Result *rc)
{
	const json_t *tasks = json_object_get(st, "tasks"), *t, *only = NULL;
	struct strbuf running = STRBUF_INIT;
	const char *key;
	size_t n = 0;

	if (json_is_true(json_object_get(st, "done"))) {
		*rc = client_reply_error(conn, MHD_HTTP_CONFLICT, "not_running",
				  "the allocation has ended: no task runs to exec in");
		return NULL;
	}
	json_object_foreach((json_t *)tasks, key, t) {
		bool run = !strcmp(json_string_value(json_object_get(t, "state")) ?: "", "running");
		if (name && !strcmp(key, name)) {
			strbuf_release(&running);
			if (!run) {
				*rc = client_reply_error(conn, MHD_HTTP_CONFLICT, "not_running",
						  "the task is not running");
				return NULL;
			}
			*picked = key;
			return t;
		}
		if (run) {
			strbuf_addf(&running, "%s%s", n ? ", " : "", key);
			only = t;
			*picked = key;
			n++;
		}
	}
	if (name) {
		char *msg = xasprintf("the allocation has no task \"%s\"", name);
		*rc = client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", msg);
		free(msg);
	} else if (n == 0) {
		*rc = client_reply_error(conn, MHD_HTTP_CONFLICT, "not_running",
				  "no task of the allocation is running");
	} else if (n > 1) {
		char *msg = xasprintf("the allocation runs %zu tasks: name one with task (%s)", n,
				      running.buf);
		*rc = client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "task_required", msg);
		free(msg);
	}
	strbuf_release(&running);
	return n == 1 && !name ? only : NULL;
}

/* Runs x's session on sock until it ends. */
static void exec_run(struct exec_req *x, int sock, const char *extra, size_t extra_len)
{
	struct docker_config dc = { .socket = x->h->docker_socket };
	struct driver_env env = { .cgroup_parent = x->h->cgroup_parent, .docker = &dc,
				  .shim_argv = (const char *const *)x->h->shim_argv };
	struct exec_session_spec spec = {
		.env = &env, .task = &x->task, .task_dir = x->task_dir,
		.argv = (const char *const *)x->argv, .tty = x->tty, .rows = x->rows,
		.cols = x->cols, .stopping = &x->h->stopping,
	};

	exec_session_run(&spec, sock, extra, extra_len);
}

/* An https session's own thread: it owns x and its slot. */
static void *exec_thread(void *arg)
{
	struct exec_req *x = arg;
	struct client_http *h = x->h;

	exec_run(x, x->sock, x->extra, x->extra_len);
	MHD_upgrade_action(x->urh, MHD_UPGRADE_ACTION_CLOSE);
	exec_req_free(x);
	atomic_fetch_sub(&h->exec_sessions, 1);
	atomic_fetch_sub(&h->exec_threads, 1);   /* last: stop may free h now */
	return NULL;
}

/* After the 101: over plain HTTP the session runs on this connection's
 * own thread (MHD's thread per connection may block here), then the socket
 * goes back.  Over https sock is one end of a socket pair that MHD relays
 * to the TLS session on this same thread once this returns, so the session
 * goes to a thread of its own, taking x and its slot from the request. */
static void exec_upgraded(void *cls, struct MHD_Connection *conn, void *con_cls,
			  const char *extra, size_t extra_len, MHD_socket sock,
			  struct MHD_UpgradeResponseHandle *urh)
{
	struct request *rq = con_cls;
	struct exec_req *x = rq->exec;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	(void)cls;
	(void)conn;
	if (!x->h->tls) {
		exec_run(x, sock, extra, extra_len);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		return;
	}
	/* MHD's socket pair may lack close-on-exec: the command must not
	 * inherit it */
	fcntl(sock, F_SETFD, fcntl(sock, F_GETFD) | FD_CLOEXEC);
	x->sock = sock;
	x->urh = urh;
	x->extra_len = extra_len;
	x->extra = xmalloc(extra_len + 1);
	memcpy(x->extra, extra, extra_len);
	atomic_fetch_add(&x->h->exec_threads, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, exec_thread, x);
	pthread_attr_destroy(&attr);
	if (rc == 0) {
		rq->exec = NULL;
		return;
	}
	/* no thread: the caller sees the connection end (x goes with rq) */
	atomic_fetch_sub(&x->h->exec_threads, 1);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

/* The command of action name of task (an object of the job's JSON) in
 * group of job: a new NULL-terminated array, or NULL after queueing why
 * (*rc).  The job is the version the allocation runs, as this node
 * stored it: what runs is the job author's, never the caller's. */
static char **action_argv(struct MHD_Connection *conn, const json_t *spec, const char *task,
			  const char *name, enum MHD_Result *rc)
{
	const char *group = json_string_value(json_object_get(json_object_get(spec, "alloc"),
							      "task_group"));
	const json_t *job = json_object_get(spec, "job"), *g, *t = NULL, *a, *found = NULL;
	struct strbuf names = STRBUF_INIT;
	char **argv = NULL, *msg;
	size_t i, j, n;

	json_array_foreach(json_object_get(job, "groups"), i, g)
		if (group && !strcmp(json_string_value(json_object_get(g, "name")) ?: "", group))
			json_array_foreach(json_object_get(g, "tasks"), j, a)
				if (!strcmp(json_string_value(json_object_get(a, "name")) ?: "", task))
					t = a;
	if (!t) {
		*rc = client_reply_error(conn, MHD_HTTP_CONFLICT, "not_running",
				  "this node does not have the job version of the allocation");
		return NULL;
	}
	json_array_foreach(json_object_get(t, "actions"), i, a) {
		const char *an = json_string_value(json_object_get(a, "name")) ?: "";
		strbuf_addf(&names, "%s%s", names.len ? ", " : "", an);
		if (!strcmp(an, name))
			found = a;
	}
	if (!found || !json_is_string(json_object_get(found, "command"))) {
		msg = names.len ? xasprintf("task \"%s\" has no action \"%s\" (its actions: %s)",
					    task, name, names.buf)
				: xasprintf("task \"%s\" has no action \"%s\" (it defines none)", task,
					    name);
		*rc = client_reply_error(conn, MHD_HTTP_NOT_FOUND, "no_such_action", msg);
		free(msg);
		strbuf_release(&names);
		return NULL;
	}
	strbuf_release(&names);
	n = json_array_size(json_object_get(found, "args"));
	argv = xcalloc(n + 2, sizeof(*argv));
	argv[0] = xstrdup(json_string_value(json_object_get(found, "command")));
	json_array_foreach(json_object_get(found, "args"), i, a)
		argv[i + 1] = xstrdup(json_string_value(a) ?: "");
	return argv;
}

/* GET /v1/client/allocation/:id/exec?task=T&command=[...]&tty=true&rows=R&cols=C
 * (or &action=NAME instead of command) with Connection: Upgrade, Upgrade:
 * herd-exec: checked, authorized (submit, as a restart), a session slot
 * taken, then 101 and the framed stream (exec_session.h). */
static enum MHD_Result serve_exec(struct client_http *h, struct MHD_Connection *conn,
				  const char *alloc_id, struct request *rq)
{
	const char *task = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "task");
	const char *tty = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tty");
	const char *cmd = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "command");
	const char *action = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "action");
	const char *conn_h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Connection");
	const char *upg = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Upgrade");
	struct herd_err err = { 0, "" };
	const json_t *t;
	struct exec_req *x;
	struct MHD_Response *r;
	enum MHD_Result rc;
	const char *picked = NULL, *hs;
	char why[256];
	json_t *st;

	if (!logs_valid_name(alloc_id))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "allocation id must be letters, digits, '-', '_' or '.'");
	if (task && !logs_valid_name(task))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "task must be a task name (letters, digits, '-', '_', '.')");
	if (tty && strcmp(tty, "true") && strcmp(tty, "false"))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "tty must be true or false");
	if (action && cmd)
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "give command or action, not both");
	if (action && !logs_valid_name(action))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "action must be an action name (letters, digits, '-', '_', '.')");
	if (!conn_h || !header_has_token(conn_h, "upgrade") || !upg ||
	    !header_has_token(upg, EXEC_PROTOCOL))
		return client_reply_error(conn, 426, "upgrade_required",
				   "exec needs Connection: Upgrade and Upgrade: " EXEC_PROTOCOL);
	x = xcalloc(1, sizeof(*x));
	x->h = h;
	x->tty = tty && !strcmp(tty, "true");
	if ((!action && !(x->argv = exec_argv(cmd, why, sizeof(why)))) ||
	    exec_dim(conn, "rows", &x->rows) < 0 || exec_dim(conn, "cols", &x->cols) < 0) {
		if (x->argv || action)
			snprintf(why, sizeof(why), "rows and cols must be numbers from 1 to 65535");
		exec_req_free(x);
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", why);
	}
	if (authorize(h, conn, alloc_id, true, &rc)) {
		exec_req_free(x);
		return rc;
	}
	if (!(st = state_read_alloc(h->state_dir, alloc_id))) {
		exec_req_free(x);
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
				   "no such allocation on this node");
	}
	if (!(t = exec_pick_task(conn, st, task, &picked, &rc))) {
		json_decref(st);
		exec_req_free(x);
		return rc;
	}
	if (action) {
		json_t *spec = state_read_alloc_spec(h->state_dir, alloc_id);
		x->argv = spec ? action_argv(conn, spec, picked, action, &rc) : NULL;
		if (!spec)
			rc = client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found",
						"no such allocation on this node");
		json_decref(spec);
		if (!x->argv) {
			json_decref(st);
			exec_req_free(x);
			return rc;
		}
	}
	hs = json_string_value(json_object_get(t, "handle"));
	if (!hs || driver_state_from_json(hs, &x->task, &err) < 0) {
		json_decref(st);
		exec_req_free(x);
		return client_reply_error(conn, MHD_HTTP_CONFLICT, "not_running",
				   err.msg[0] ? err.msg : "the task has no process yet");
	}
	x->task_dir = xasprintf("%s/%s/%s", h->alloc_dir, alloc_id, picked);
	json_decref(st);
	if (atomic_fetch_add(&h->exec_sessions, 1) >= EXEC_MAX_SESSIONS) {
		atomic_fetch_sub(&h->exec_sessions, 1);
		exec_req_free(x);
		return client_reply_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, "too_many_sessions",
				   "this node runs too many exec sessions already (16): try "
				   "again later");
	}
	rq->exec = x;   /* the slot and x go with the request (on_completed) */
	r = MHD_create_response_for_upgrade(exec_upgraded, h);
	MHD_add_response_header(r, "Upgrade", EXEC_PROTOCOL);
	rc = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, r);
	MHD_destroy_response(r);
	return rc;
}

/* Reads a request's body into rq (at most MAX_BODY kept); true while more
 * is to come. */
static bool read_body(struct request *rq, const char *data, size_t *size)
{
	if (!*size)
		return false;
	if (rq->too_big || rq->body.len + *size > MAX_BODY)
		rq->too_big = true;
	else
		strbuf_add(&rq->body, data, *size);
	*size = 0;
	return true;
}

/* 405 with Allow: allowed (one method). */
static enum MHD_Result reply_method_not_allowed(struct MHD_Connection *conn, const char *allowed)
{
	char *msg = xasprintf("only %s", allowed);
	json_t *j = json_pack("{s:{s:s,s:s}}", "error", "code", "method_not_allowed", "message", msg);
	char *text = json_dumps(j, JSON_COMPACT);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
								 MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	free(msg);
	json_decref(j);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Allow", allowed);
	rc = MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	return rc;
}

/* GET /v1/client/fs/{ls,stat,cat,readat}/:alloc (client_fs.h): rest is
 * the URL after CLIENT_FS_PREFIX; authorized as a log read. */
static enum MHD_Result serve_fs(struct client_http *h, struct MHD_Connection *conn,
				const char *method, const struct request *rq, const char *rest)
{
	const char *slash = strchr(rest, '/');
	enum MHD_Result rc;
	char op[8];

	if (!slash || (size_t)(slash - rest) >= sizeof(op))
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no such path");
	snprintf(op, sizeof(op), "%.*s", (int)(slash - rest), rest);
	if (!client_fs_op_known(op))
		return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no such path");
	if (strcmp(method, "GET"))
		return reply_method_not_allowed(conn, "GET");
	if (rq->too_big || rq->body.len)
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", "no body expected");
	if (!logs_valid_name(slash + 1))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "allocation id must be letters, digits, '-', '_' or '.'");
	if (authorize(h, conn, slash + 1, false, &rc))
		return rc;
	return client_fs_serve(conn, h->alloc_dir, op, slash + 1);
}

/* GET /v1/client/allocation/:id/migrate?for=NEW: the archive of id's
 * alloc/data and local/ (migrate_serve.h), only to a caller whose token
 * reads NEW and only when the server says NEW replaces id. */
static enum MHD_Result serve_migrate(struct client_http *h, struct MHD_Connection *conn,
				     const char *alloc)
{
	const char *for_id = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "for");
	json_t *repl = NULL;
	enum MHD_Result rc;
	bool ok;

	if (!logs_valid_name(alloc) || !for_id || !logs_valid_name(for_id))
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "an allocation id and for=<the id of its replacement> are needed");
	if (!h->auth_servers)
		return client_reply_error(conn, MHD_HTTP_FORBIDDEN, "permission_denied",
				   "no server to ask which allocation replaces this one");
	if (authorize_get(h, conn, for_id, false, &repl, &rc))
		return rc;
	ok = repl && !strcmp(json_string_value(json_object_get(repl, "previous_allocation")) ?: "",
			     alloc);
	json_decref(repl);
	if (!ok)
		return client_reply_error(conn, MHD_HTTP_FORBIDDEN, "permission_denied",
				   "that allocation does not replace this one");
	return migrate_serve(conn, h->alloc_dir, alloc);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct client_http *h = cls;
	struct request *rq = *con_cls;
	bool logs = !strncmp(url, LOGS_PREFIX, strlen(LOGS_PREFIX)), post = !strcmp(method, "POST");
	const char *id = NULL, *op = NULL, *allowed;
	char alloc[LOGS_NAME_MAX + 1];

	(void)version;
	/* The first call only announces the request (headers read). */
	if (!rq) {
		rq = xcalloc(1, sizeof(*rq));
		strbuf_init(&rq->body, 0);
		*con_cls = rq;
		return MHD_YES;
	}
	/* Every body is read to its end (bounded) before the answer: one
	 * queued while the client still sends makes MHD drop the connection */
	if (read_body(rq, upload_data, upload_size))
		return MHD_YES;
	if (h->verify_client) {
		/* after the body: an answer queued mid-upload drops the connection */
		struct herd_err perr = { 0, "" };
		if (tls_mhd_check_peer(conn, &perr) < 0)
			return client_reply_error(conn, MHD_HTTP_FORBIDDEN, "tls_client_certificate",
					   perr.msg);
	}
	if (!logs && !strncmp(url, CLIENT_FS_PREFIX, strlen(CLIENT_FS_PREFIX)))
		return serve_fs(h, conn, method, rq, url + strlen(CLIENT_FS_PREFIX));
	if (!logs) {
		/* /v1/client/allocation/:id/{stats,restart,signal}; the id is
		 * all before the last '/', checked by the handler ("../x": 400) */
		if (!strncmp(url, ALLOC_PREFIX, strlen(ALLOC_PREFIX))) {
			id = url + strlen(ALLOC_PREFIX);
			op = strrchr(id, '/');
		}
		if (!op || (strcmp(op, "/stats") && strcmp(op, "/restart") && strcmp(op, "/signal") &&
			    strcmp(op, "/exec") && strcmp(op, "/migrate")))
			return client_reply_error(conn, MHD_HTTP_NOT_FOUND, "not_found", "no such path");
	}
	allowed = logs || !strcmp(op, "/stats") || !strcmp(op, "/exec") ||
		  !strcmp(op, "/migrate") ? "GET" : "POST";
	if (strcmp(method, allowed))
		return reply_method_not_allowed(conn, allowed);
	if (rq->too_big)
		return client_reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large",
				   "the body is larger than 16 KiB");
	if (!post && rq->body.len)
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request", "no body expected");
	if (logs)
		return serve_logs(h, conn, url + strlen(LOGS_PREFIX));
	if ((size_t)(op - id) > LOGS_NAME_MAX)
		return client_reply_error(conn, MHD_HTTP_BAD_REQUEST, "bad_request",
				   "allocation id too long");
	snprintf(alloc, sizeof(alloc), "%.*s", (int)(op - id), id);
	if (!strcmp(op, "/stats"))
		return serve_stats(h, conn, alloc);
	if (!strcmp(op, "/exec"))
		return serve_exec(h, conn, alloc, rq);
	if (!strcmp(op, "/migrate"))
		return serve_migrate(h, conn, alloc);
	return serve_task_op(h, conn, alloc, !strcmp(op, "/restart"), rq);
}

/* The end of a request: its state goes. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *rq = *con_cls;

	(void)conn;
	(void)toe;
	if (rq) {
		if (rq->exec) {
			exec_req_free(rq->exec);
			atomic_fetch_sub(&((struct client_http *)cls)->exec_sessions, 1);
		}
		strbuf_release(&rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

int client_http_start(const char *bind_addr, uint16_t port, const char *alloc_dir,
		      const char *state_dir, const struct tls_server *tls,
		      struct client_http **out, struct herd_err *err)
{
	struct MHD_OptionItem tls_opts[5] = { { MHD_OPTION_END, 0, NULL } };
	struct client_http *h;
	struct sockaddr_in sa4;
	struct sockaddr_in6 sa6;
	struct sockaddr *sa;
	/* upgrade: the exec stream (serve_exec) */
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_ALLOW_UPGRADE;
	const char *addr = bind_addr ? bind_addr : "127.0.0.1";
	const union MHD_DaemonInfo *info;

	memset(&sa4, 0, sizeof(sa4));
	memset(&sa6, 0, sizeof(sa6));
	if (inet_pton(AF_INET, addr, &sa4.sin_addr) == 1) {
		sa4.sin_family = AF_INET;
		sa4.sin_port = htons(port);
		sa = (struct sockaddr *)&sa4;
	} else if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) == 1) {
		sa6.sin6_family = AF_INET6;
		sa6.sin6_port = htons(port);
		sa = (struct sockaddr *)&sa6;
		flags |= MHD_USE_IPv6;
	} else {
		return herd_errf(err, -EINVAL, "client http: \"%s\" is not a numeric address", addr);
	}
	h = xcalloc(1, sizeof(*h));
	h->alloc_dir = xstrdup(alloc_dir);
	h->state_dir = xstrdup(state_dir);
	atomic_init(&h->stopping, false);
	atomic_init(&h->exec_sessions, 0);
	atomic_init(&h->exec_threads, 0);
	pthread_mutex_init(&h->client_lock, NULL);
	if (tls && tls->cert_pem) {
		flags |= MHD_USE_TLS;
		h->tls = true;
		h->verify_client = tls->verify_client;
		tls_mhd_options(tls, tls_opts);
	}
	errno = 0;
	h->mhd = MHD_start_daemon(flags, port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, sa,
				  MHD_OPTION_CONNECTION_LIMIT, 256U,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
	if (!h->mhd) {
		int e = errno ? errno : EIO;
		client_http_stop(h);
		return herd_errf(err, -e, "client http: cannot listen on %s:%u: %s", addr, port,
				 strerror(e));
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	*out = h;
	return 0;
}

uint16_t client_http_port(const struct client_http *h)
{
	return h->port;
}

void client_http_stop(struct client_http *h)
{
	if (!h)
		return;
	atomic_store(&h->stopping, true);
	/* https exec sessions see stopping within their poll interval and
	 * end; they use h and the daemon until then */
	for (int i = 0; i < 1000 && atomic_load(&h->exec_threads) > 0; i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000000L }, NULL);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	free(h->alloc_dir);
	free(h->state_dir);
	server_list_free(h->auth_servers);
	tls_client_release(&h->auth_tls);
	free(h->cgroup_parent);
	free(h->docker_socket);
	for (char **a = h->shim_argv; a && *a; a++)
		free(*a);
	free(h->shim_argv);
	pthread_mutex_destroy(&h->client_lock);
	free(h);
}

void client_http_set_client(struct client_http *h, struct client *c)
{
	pthread_mutex_lock(&h->client_lock);
	h->client = c;
	pthread_mutex_unlock(&h->client_lock);
}

void client_http_set_auth_servers(struct client_http *h, const char *const *servers, size_t n,
				  const struct tls_client *tls, const struct httpc_local *local)
{
	server_list_free(h->auth_servers);
	h->auth_servers = n ? server_list_new(servers, n) : NULL;
	h->auth_local = local;
	tls_client_release(&h->auth_tls);
	if (tls)
		tls_client_copy(&h->auth_tls, tls);
}

void client_http_set_drivers(struct client_http *h, const char *cgroup_parent,
			     const char *docker_socket)
{
	free(h->cgroup_parent);
	free(h->docker_socket);
	h->cgroup_parent = cgroup_parent ? xstrdup(cgroup_parent) : NULL;
	h->docker_socket = docker_socket ? xstrdup(docker_socket) : NULL;
}

void client_http_set_shim(struct client_http *h, const char *const *shim_argv)
{
	size_t n = 0;

	for (char **a = h->shim_argv; a && *a; a++)
		free(*a);
	free(h->shim_argv);
	h->shim_argv = NULL;
	if (!shim_argv)
		return;
	while (shim_argv[n])
		n++;
	h->shim_argv = xcalloc(n + 1, sizeof(*h->shim_argv));
	for (size_t i = 0; i < n; i++)
		h->shim_argv[i] = xstrdup(shim_argv[i]);
}
