/* checker: see checker.h.  One thread runs every check of the process;
 * each check is a small state machine (idle until due, then running until
 * its result or its deadline), its file descriptors waited on together
 * with libcurl's in one curl_multi_poll. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent/checker.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

#define OUTPUT_MAX 4096      /* bytes of a run's output kept */
#define MAX_POLL 256         /* checks in flight waited on at once */
#define REAP_SLICE_MS 10     /* a script whose pipe closed but is not reaped yet */

enum run_state { IDLE, RUNNING };

struct check {
	struct check *next;
	struct svc_set *set;
	int task;
	bool removed;
	/* what to run (owned copies) */
	enum svc_check_type type;
	char *name, *url, *method, *host, *dir;
	struct curl_slist *headers;
	struct curl_slist *connect_to;   /* http: tls_server_name's; NULL: none */
	char *body;                      /* http: NULL: none */
	bool tls_skip_verify;
	int port;
	char **argv, **envp;
	int64_t interval, timeout;
	int64_t restart_limit, restart_grace;
	bool ignore_warnings;
	int64_t started_ns;          /* the task's start, for the grace */
	int fails;                   /* check_restart's count */
	struct svc_threshold thr;    /* its thresholds and counts */
	bool held;                   /* its last result was held back by them */
	json_t *out;                 /* its object in the set's entry: status, output, time */
	/* the run in flight */
	enum run_state state;
	int64_t next_run, deadline;  /* monotonic ns */
	int fd;                      /* tcp: the socket; script: the pipe; -1 */
	pid_t pid;                   /* script */
	bool eof;                    /* script: its output is over */
	CURL *easy;                  /* http */
	struct strbuf buf;
};

struct svc_set {
	char alloc_id[64];
	json_t *services;            /* [{..., "checks": [...]}], task numbers in "_task" */
	bool changed;
	bool freed;                  /* svc_set_free was called; the thread frees it */
	unsigned nchecks;            /* checks pointing at it */
	int restart_task;            /* -1: none */
	char restart_why[256];
};

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	pthread_t thread;
	CURLM *multi;
	struct check *checks;
} ck = { PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL };

static void *checker_main(void *arg);

/* Wall clock (a result's time, check_restart's grace from the task's
 * start, which the runner keeps in wall-clock ns). */
static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static void start_thread(void)
{
	pthread_attr_t a;

	ck.multi = curl_multi_init();
	if (!ck.multi)
		abort();
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&ck.thread, &a, checker_main, NULL))
		abort();   /* no threads left: nothing sensible remains */
	pthread_attr_destroy(&a);
}

static void wake(void)
{
	if (ck.multi)
		curl_multi_wakeup(ck.multi);
}

/* --- sets -------------------------------------------------------------- */

struct svc_set *svc_set_new(const char *alloc_id)
{
	struct svc_set *set = xcalloc(1, sizeof(*set));
	snprintf(set->alloc_id, sizeof(set->alloc_id), "%s", alloc_id);
	set->services = json_array();
	set->restart_task = -1;
	return set;
}

static void set_release_locked(struct svc_set *set)
{
	if (set->freed && !set->nchecks) {
		json_decref(set->services);
		free(set);
	}
}

/* Whether entry e (of set->services) holds check c. */
static bool entry_has_check(json_t *e, const struct check *c)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(e, "checks"), i, o)
		if (o == c->out)
			return true;
	return false;
}

/* Marks the checks of task (all: -1; only_group: only those of the
 * group's services) removed; the thread stops and frees them.  Under
 * ck.lock. */
static void remove_checks_where(struct svc_set *set, int task, bool only_group)
{
	for (size_t i = json_array_size(set->services); i-- > 0;) {
		json_t *e = json_array_get(set->services, i);
		if (task >= 0 && json_integer_value(json_object_get(e, "_task")) != task)
			continue;
		if (only_group && !json_is_true(json_object_get(e, "_group")))
			continue;
		for (struct check *c = ck.checks; c; c = c->next)
			if (c->set == set && !c->removed && entry_has_check(e, c))
				c->removed = true;
		json_array_remove(set->services, i);
		set->changed = true;
	}
	if (!only_group && (task < 0 || set->restart_task == task))
		set->restart_task = -1;
}

static void remove_checks_locked(struct svc_set *set, int task)
{
	/* every check of the task, those of services already gone included */
	for (struct check *c = ck.checks; c; c = c->next)
		if (c->set == set && (task < 0 || c->task == task))
			c->removed = true;
	remove_checks_where(set, task, false);
}

void svc_set_free(struct svc_set *set)
{
	if (!set)
		return;
	pthread_mutex_lock(&ck.lock);
	remove_checks_locked(set, -1);
	set->freed = true;
	set_release_locked(set);
	pthread_mutex_unlock(&ck.lock);
	wake();
}

static char **strv_dup(const char *const *v)
{
	size_t n = 0;
	char **out;
	while (v && v[n])
		n++;
	out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static struct check *check_new(struct svc_set *set, int task, int64_t started_ns,
			       const struct svc_check_spec *s, json_t *out)
{
	struct check *c = xcalloc(1, sizeof(*c));

	c->set = set;
	c->task = task;
	c->type = s->type;
	c->name = xstrdup(s->name ? s->name : "");
	c->url = s->url ? xstrdup(s->url) : NULL;
	c->method = xstrdup(s->method ? s->method : "GET");
	c->host = s->host ? xstrdup(s->host) : NULL;
	c->dir = s->dir ? xstrdup(s->dir) : NULL;
	for (size_t i = 0; s->headers && s->headers[i]; i++)
		c->headers = curl_slist_append(c->headers, s->headers[i]);
	if (s->connect_to)
		c->connect_to = curl_slist_append(NULL, s->connect_to);
	c->body = s->body ? xstrdup(s->body) : NULL;
	c->tls_skip_verify = s->tls_skip_verify;
	c->port = s->port;
	c->argv = s->argv ? strv_dup(s->argv) : NULL;
	c->envp = strv_dup(s->envp);   /* never NULL: posix_spawn wants an array */
	c->interval = s->interval_ns;
	c->timeout = s->timeout_ns;
	c->restart_limit = s->restart_limit;
	c->restart_grace = s->restart_grace_ns;
	c->ignore_warnings = s->ignore_warnings;
	c->thr.before_passing = s->before_passing;
	c->thr.before_critical = s->before_critical;
	c->thr.before_warning = s->before_warning;
	c->started_ns = started_ns;
	c->out = out;   /* borrowed: lives in set->services while the check is not removed */
	c->state = IDLE;
	c->next_run = mono_ns();   /* the first run at once */
	c->fd = -1;
	c->pid = -1;
	strbuf_init(&c->buf, 0);
	return c;
}

void svc_set_register(struct svc_set *set, int task, int64_t started_ns,
		      const struct svc_service_spec *svcs, size_t n)
{
	pthread_once(&ck.once, start_thread);
	pthread_mutex_lock(&ck.lock);
	remove_checks_locked(set, task);
	for (size_t i = 0; i < n; i++) {
		json_t *e = svcs[i].entry, *checks = json_array();
		json_object_set_new(e, "_task", json_integer(task));
		if (svcs[i].group)
			json_object_set_new(e, "_group", json_true());
		json_object_set_new(e, "checks", checks);
		for (size_t k = 0; k < svcs[i].nchecks; k++) {
			const struct svc_check_spec *s = &svcs[i].checks[k];
			static const char *const types[] = { "http", "tcp", "script" };
			json_t *out = json_pack("{s:s, s:s, s:s, s:s, s:I}", "name", s->name ? s->name : "",
						"type", types[s->type], "status",
						svc_status_name(s->initial), "output", "", "time",
						(json_int_t)0);
			struct check *c = check_new(set, task, started_ns, s, out);
			if (s->on_update && strcmp(s->on_update, "require_healthy"))
				json_object_set_new(out, "on_update", json_string(s->on_update));
			json_array_append_new(checks, out);
			c->next = ck.checks;
			ck.checks = c;
			set->nchecks++;
		}
		json_array_append_new(set->services, e);
	}
	set->changed = true;
	pthread_mutex_unlock(&ck.lock);
	wake();
}

void svc_set_deregister(struct svc_set *set, int task)
{
	pthread_mutex_lock(&ck.lock);
	remove_checks_locked(set, task);
	pthread_mutex_unlock(&ck.lock);
	wake();
}

void svc_set_deregister_group(struct svc_set *set)
{
	pthread_mutex_lock(&ck.lock);
	remove_checks_where(set, -1, true);
	pthread_mutex_unlock(&ck.lock);
	wake();
}

json_t *svc_set_json(struct svc_set *set)
{
	json_t *out = json_array(), *e;
	size_t i;

	pthread_mutex_lock(&ck.lock);
	json_array_foreach(set->services, i, e) {
		json_t *copy = json_deep_copy(e);
		json_object_del(copy, "_task");
		json_object_del(copy, "_group");
		json_array_append_new(out, copy);
	}
	pthread_mutex_unlock(&ck.lock);
	return out;
}

bool svc_set_take_changed(struct svc_set *set)
{
	bool changed;
	pthread_mutex_lock(&ck.lock);
	changed = set->changed;
	set->changed = false;
	pthread_mutex_unlock(&ck.lock);
	return changed;
}

bool svc_set_take_restart(struct svc_set *set, int task, char *why, size_t size)
{
	bool due;
	pthread_mutex_lock(&ck.lock);
	due = set->restart_task == task;
	if (due) {
		snprintf(why, size, "%s", set->restart_why);
		set->restart_task = -1;
	}
	pthread_mutex_unlock(&ck.lock);
	return due;
}

/* --- runs -------------------------------------------------------------- */

/* A check's output line as a JSON string: a script may print anything,
 * and JSON takes only UTF-8, so a line that is not has its bytes above
 * ASCII shown as '?'. */
static json_t *output_json(char *line)
{
	json_t *s = json_string(line);
	if (s)
		return s;
	for (char *p = line; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	return json_string(line);
}

/* The result of a run: kept in the set's entry (a change of status is
 * reported), counted by check_restart.  Under ck.lock. */
static void finish(struct check *c, enum svc_status st, const char *output)
{
	const char *old;
	enum svc_status shown;
	char line[512];

	c->state = IDLE;
	c->next_run = mono_ns() + c->interval;
	if (c->removed)
		return;
	old = json_string_value(json_object_get(c->out, "status"));
	svc_first_line(output, strlen(output), line, sizeof(line));
	/* the thresholds decide what is shown (and counted by check_restart) */
	shown = svc_threshold_step(&c->thr, svc_status_parse(old), st);
	/* reported: a change of status, and a result held back by a
	 * threshold (at most that many in a row) or the first after one (its
	 * output says how far the count got) */
	if (!old || strcmp(old, svc_status_name(shown)) || shown != st || c->held)
		c->set->changed = true;
	c->held = shown != st;
	json_object_set_new(c->out, "status", json_string(svc_status_name(shown)));
	if (shown != st) {
		/* the result held back: say so beside its output */
		size_t len = strlen(line);
		snprintf(line + len, sizeof(line) - len, " (%s %lld of %lld in a row)",
			 svc_status_name(st), (long long)(st == SVC_CRITICAL ? c->thr.failures
									   : c->thr.successes),
			 (long long)(st == SVC_CRITICAL ? c->thr.before_critical : c->thr.before_passing));
	}
	json_object_set_new(c->out, "output", output_json(line));
	json_object_set_new(c->out, "time", json_integer((json_int_t)wall_ns()));
	if (svc_restart_due(&c->fails, shown, c->restart_limit, c->restart_grace, c->ignore_warnings,
			    c->started_ns, wall_ns())) {
		c->set->restart_task = c->task;
		snprintf(c->set->restart_why, sizeof(c->set->restart_why),
			 "check \"%s\" unhealthy %lld times in a row (%s: %s)", c->name,
			 (long long)c->restart_limit, svc_status_name(shown), line);
	}
}

static size_t discard_body(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* Sockets libcurl opens for checks are close-on-exec like every fd of
 * the agent (a task started meanwhile must not inherit one). */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)arg;
	(void)purpose;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void start_http(struct check *c)
{
	CURL *e = curl_easy_init();
	if (!e)
		abort();
	curl_easy_setopt(e, CURLOPT_URL, c->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(c->timeout / 1000000));
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* https: the certificate is verified (the system's CAs; the name
	 * is the address, or tls_server_name: connect_to) unless
	 * tls_skip_verify */
	if (c->tls_skip_verify) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
	if (!strcmp(c->method, "HEAD"))
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (c->body) {
		/* the body with whichever method (POSTFIELDS alone would make
		 * it a POST); the check owns the bytes while it runs */
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(c->body));
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
	} else if (strcmp(c->method, "GET"))
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method);
	if (c->headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(e, CURLOPT_PRIVATE, c);
	c->easy = e;
	curl_multi_add_handle(ck.multi, e);
}

static void start_tcp(struct check *c)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char port[16], msg[320];
	int fd, rc;

	snprintf(port, sizeof(port), "%d", c->port);
	rc = getaddrinfo(c->host, port, &hints, &ai);
	if (rc) {
		snprintf(msg, sizeof(msg), "TCP %s:%d: %s", c->host, c->port, gai_strerror(rc));
		finish(c, SVC_CRITICAL, msg);
		return;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)) {
		snprintf(msg, sizeof(msg), "TCP %s:%d: %s", c->host, c->port, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		finish(c, SVC_CRITICAL, msg);
		return;
	}
	freeaddrinfo(ai);
	c->fd = fd;
}

static void start_script(struct check *c)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int p[2], rc;
	char msg[320];

	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(msg, sizeof(msg), "cannot run %s: %s", c->argv[0], strerror(errno));
		finish(c, SVC_CRITICAL, msg);
		return;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	if (c->dir)
		posix_spawn_file_actions_addchdir_np(&fa, c->dir);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	/* its own process group, so that a run past its timeout is killed
	 * with its children */
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	/* only 0-2: libraries' fds are not all close-on-exec (libcurl's) */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = posix_spawn(&c->pid, c->argv[0], &fa, &attr, c->argv, c->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(p[1]);
	if (rc) {
		close(p[0]);
		c->pid = -1;
		snprintf(msg, sizeof(msg), "cannot run %s: %s", c->argv[0], strerror(rc));
		finish(c, SVC_CRITICAL, msg);
		return;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	c->fd = p[0];
	c->eof = false;
}

static void start_run(struct check *c, int64_t now)
{
	c->state = RUNNING;
	c->deadline = now + c->timeout;
	strbuf_reset(&c->buf);
	switch (c->type) {
	case SVC_CHECK_HTTP:
		start_http(c);
		break;
	case SVC_CHECK_TCP:
		start_tcp(c);
		break;
	case SVC_CHECK_SCRIPT:
		start_script(c);
		break;
	}
}

/* Ends the run in flight, whatever it is (a timeout, a removal). */
static void stop_run(struct check *c)
{
	if (c->easy) {
		curl_multi_remove_handle(ck.multi, c->easy);
		curl_easy_cleanup(c->easy);
		c->easy = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->pid > 0) {
		kill(-c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
		c->pid = -1;
	}
}

static void check_free(struct check *c)
{
	stop_run(c);
	c->set->nchecks--;
	set_release_locked(c->set);
	free(c->name);
	free(c->url);
	free(c->method);
	free(c->host);
	free(c->dir);
	curl_slist_free_all(c->headers);
	curl_slist_free_all(c->connect_to);
	free(c->body);
	strv_free(c->argv);
	strv_free(c->envp);
	strbuf_release(&c->buf);
	free(c);
}

static void timed_out(struct check *c)
{
	char msg[128];
	stop_run(c);
	snprintf(msg, sizeof(msg), "timed out after %gs", (double)c->timeout / 1e9);
	finish(c, SVC_CRITICAL, msg);
}

static void tcp_ready(struct check *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	char msg[320];

	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
	close(c->fd);
	c->fd = -1;
	if (err)
		snprintf(msg, sizeof(msg), "TCP connect %s:%d: %s", c->host, c->port, strerror(err));
	else
		snprintf(msg, sizeof(msg), "TCP connect %s:%d: Success", c->host, c->port);
	finish(c, err ? SVC_CRITICAL : SVC_PASSING, msg);
}

/* Reads what the script wrote; once its output is over and it exited,
 * the result. */
static void script_progress(struct check *c)
{
	char buf[1024], msg[64];
	ssize_t n = -1;
	int status;
	pid_t w;

	while (!c->eof && (n = read(c->fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->eof = true;
			break;
		}
		if (c->buf.len < OUTPUT_MAX)
			strbuf_add(&c->buf, buf, (size_t)n);
	}
	if (n == 0)
		c->eof = true;
	if (!c->eof)
		return;
	w = waitpid(c->pid, &status, WNOHANG);
	if (w == 0)
		return;   /* output closed, not exited yet: looked at again soon */
	close(c->fd);
	c->fd = -1;
	c->pid = -1;
	if (w < 0) {
		finish(c, SVC_CRITICAL, "the check's process vanished");
		return;
	}
	if (!c->buf.len) {
		if (WIFSIGNALED(status))
			snprintf(msg, sizeof(msg), "killed by signal %d", WTERMSIG(status));
		else
			snprintf(msg, sizeof(msg), "exit code %d", WEXITSTATUS(status));
		finish(c, svc_script_status(status), msg);
		return;
	}
	finish(c, svc_script_status(status), c->buf.buf);
}

static void http_done(CURLMsg *m)
{
	struct check *c = NULL;
	long code = 0;
	char msg[512];
	/* m is the easy handle's: read before the cleanup below frees it */
	CURLcode result = m->data.result;

	curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
	if (!c)
		return;
	if (result == CURLE_OK) {
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
		snprintf(msg, sizeof(msg), "HTTP %s %s: %ld", c->method, c->url, code);
	} else {
		snprintf(msg, sizeof(msg), "HTTP %s %s: %s", c->method, c->url,
			 curl_easy_strerror(result));
	}
	curl_multi_remove_handle(ck.multi, c->easy);
	curl_easy_cleanup(c->easy);
	c->easy = NULL;
	finish(c, result == CURLE_OK ? svc_http_status(code) : SVC_CRITICAL, msg);
}

/* One round: frees removed checks, starts the due ones, ends the late
 * ones; fills fds (with the check of each in who) and returns how long
 * to wait at most (ms).  Under ck.lock. */
static int round_locked(struct curl_waitfd *fds, struct check **who, unsigned *nfds)
{
	int64_t now = mono_ns(), next = now + 60 * NS_PER_SEC;
	struct check **pp = &ck.checks;

	*nfds = 0;
	while (*pp) {
		struct check *c = *pp;
		if (c->removed) {
			*pp = c->next;
			check_free(c);
			continue;
		}
		if (c->state == RUNNING && now >= c->deadline)
			timed_out(c);
		if (c->state == IDLE && now >= c->next_run)
			start_run(c, now);
		if (c->state == RUNNING) {
			if (c->deadline < next)
				next = c->deadline;
			if (c->fd >= 0 && *nfds < MAX_POLL) {
				fds[*nfds].fd = c->fd;
				fds[*nfds].events = c->type == SVC_CHECK_TCP ? CURL_WAIT_POLLOUT
									     : CURL_WAIT_POLLIN;
				fds[*nfds].revents = 0;
				who[(*nfds)++] = c;
			}
			if (c->type == SVC_CHECK_SCRIPT && c->eof && c->pid > 0 &&
			    now + REAP_SLICE_MS * 1000000LL < next)
				next = now + REAP_SLICE_MS * 1000000LL;
		} else if (c->next_run < next) {
			next = c->next_run;
		}
		pp = &c->next;
	}
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

static void *checker_main(void *arg)
{
	static struct curl_waitfd fds[MAX_POLL];
	static struct check *who[MAX_POLL];
	(void)arg;

	pthread_mutex_lock(&ck.lock);
	for (;;) {
		unsigned nfds;
		int running, ms = round_locked(fds, who, &nfds);
		CURLMsg *m;

		pthread_mutex_unlock(&ck.lock);
		/* the fds' checks are not freed meanwhile: only this thread
		 * frees checks */
		curl_multi_poll(ck.multi, fds, nfds, ms, NULL);
		pthread_mutex_lock(&ck.lock);
		curl_multi_perform(ck.multi, &running);
		while ((m = curl_multi_info_read(ck.multi, &running)))
			if (m->msg == CURLMSG_DONE)
				http_done(m);
		for (unsigned i = 0; i < nfds; i++) {
			struct check *c = who[i];
			if (c->removed || c->state != RUNNING || c->fd != fds[i].fd)
				continue;
			if (c->type == SVC_CHECK_TCP && fds[i].revents)
				tcp_ready(c);
			else if (c->type == SVC_CHECK_SCRIPT && fds[i].revents)
				script_progress(c);
		}
		/* a script whose output closed before it exited */
		for (struct check *c = ck.checks; c; c = c->next)
			if (!c->removed && c->state == RUNNING && c->type == SVC_CHECK_SCRIPT && c->eof)
				script_progress(c);
	}
	return NULL;
}
