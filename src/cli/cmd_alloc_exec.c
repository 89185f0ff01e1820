/* herd alloc exec: a command inside a running task (docs/api.md, "GET
 * /v1/client/allocation/:id/exec").
 *
 * The CLI finds the allocation's node as restart and signal do
 * (alloc_locate), opens a plain socket to its client API (libcurl does
 * not hand over an upgraded connection), with a TLS session of its own on
 * it when HERD_ADDR is https (common/tls.h: HERD_CACERT, the client
 * certificate), asks for the upgrade and then
 * pumps frames (common/exec_frame.h): stdin up, stdout/stderr down,
 * window sizes up on SIGWINCH, the exit code last.  With -t the local
 * terminal is in raw mode for the session and restored on every way out,
 * signals included. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/exec_frame.h"
#include "common/httpc.h"
#include "common/strbuf.h"
#include "common/tls.h"
#include "common/xalloc.h"

/* The most an error answer (before the upgrade) may be. */
#define HEAD_MAX 65536
#define BUF_CAP (256 * 1024)
#define STDIN_CHUNK 32768

/* The terminal as it was, restored at every exit (atexit and the fatal
 * signals): a shell left in raw mode is unusable. */
static struct termios saved_tio;
static volatile sig_atomic_t raw_on;
static int winch_pipe[2] = { -1, -1 };

static void restore_tty(void)
{
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		raw_on = 0;
	}
}

static void on_fatal(int sig)
{
	restore_tty();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_winch(int sig)
{
	int saved = errno;
	(void)sig;
	if (write(winch_pipe[1], "w", 1) < 0) {
		/* full: a resize is already pending */
	}
	errno = saved;
}

static int make_raw(void)
{
	struct termios t;
	const int fatal[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE };

	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -1;
	t = saved_tio;
	cfmakeraw(&t);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], on_fatal);
	atexit(restore_tty);
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0)
		return -1;
	raw_on = 1;
	return 0;
}

static void term_size(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws = { 0 };
	*rows = *cols = 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* A connected socket to "host:port" ("[v6]:port"; an http:// prefix
 * allowed), close-on-exec; -1 after printing why. */
static int dial(const char *cmd, const char *addr)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char *host, *port;
	int fd = -1, r;

	if (!strncmp(addr, "http://", 7))
		addr += 7;
	host = xstrdup(addr);
	if (host[0] == '[') {
		char *end = strchr(host, ']');
		port = end && end[1] == ':' ? end + 2 : NULL;
		if (end)
			*end = '\0';
		memmove(host, host + 1, strlen(host));
	} else {
		port = strrchr(host, ':');
		if (port)
			*port++ = '\0';
	}
	if (!port || !*port) {
		fprintf(stderr, "%s: node address %s has no port\n", cmd, addr);
		free(host);
		return -1;
	}
	if ((r = getaddrinfo(host, port, &hints, &res)) != 0) {
		fprintf(stderr, "%s: node at %s: %s\n", cmd, addr, gai_strerror(r));
		free(host);
		return -1;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			r = errno;
			close(fd);
			fd = -1;
			errno = r;
		}
	}
	if (fd < 0)
		fprintf(stderr, "%s: node at %s: %s\n", cmd, addr, strerror(errno));
	freeaddrinfo(res);
	free(host);
	return fd;
}

/* The connection to the node: its socket, and over https the TLS
 * session on it (NULL: plain). */
struct conn {
	int fd;
	struct tls_conn *tls;
};

static ssize_t conn_recv(struct conn *c, void *buf, size_t len)
{
	return c->tls ? tls_conn_recv(c->tls, buf, len) : recv(c->fd, buf, len, 0);
}

static ssize_t conn_send(struct conn *c, const void *buf, size_t len)
{
	return c->tls ? tls_conn_send(c->tls, buf, len) : send(c->fd, buf, len, MSG_NOSIGNAL);
}

/* When HERD_ADDR is https (the nodes take its scheme): the TLS session on
 * the socket, checked as HERD_CACERT and the others say (the node's
 * certificate must name the host of addr).  0, or 1 after printing why. */
static int conn_tls(const char *cmd, const char *addr, struct conn *c)
{
	struct tls_client t;
	struct herd_err err = { 0, "" };
	char *host, *colon;

	if (tls_client_from_env(&t, &err) < 0) {
		fprintf(stderr, "%s: %s\n", cmd, err.msg);
		return 1;
	}
	if (!t.https) {
		tls_client_release(&t);
		return 0;
	}
	host = xstrdup(addr);
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		if ((colon = strchr(host, ']')))
			*colon = '\0';
	} else if ((colon = strrchr(host, ':'))) {
		*colon = '\0';
	}
	tls_conn_start(&t, c->fd, host, &c->tls, &err);
	tls_client_release(&t);
	free(host);
	if (c->tls)
		return 0;
	fprintf(stderr, "%s: node at %s: %s\n", cmd, addr, err.msg);
	if (err.code == -EKEYREJECTED)
		fprintf(stderr, "%s: HERD_CACERT names the CA file that signed the agents' "
			"certificates\n", cmd);
	return 1;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EAGAIN) {
				struct pollfd pf = { fd, POLLOUT, 0 };
				poll(&pf, 1, -1);
				continue;
			}
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* What the exec asks for: the request line's path and query, with
 * command=argv or action=action. */
static char *exec_path(const char *id, const char *task, bool tty, const char *action,
		       char *const *argv)
{
	char *text, *q, *path;
	uint16_t rows, cols;

	if (action) {
		q = httpc_escape(action);
		path = xasprintf("/v1/client/allocation/%s/exec?tty=%s&action=%s", id,
				 tty ? "true" : "false", q);
	} else {
		json_t *a = json_array();
		for (; *argv; argv++)
			json_array_append_new(a, json_string(*argv));
		text = json_dumps(a, JSON_COMPACT);
		json_decref(a);
		q = httpc_escape(text);
		free(text);
		path = xasprintf("/v1/client/allocation/%s/exec?tty=%s&command=%s", id,
				 tty ? "true" : "false", q);
	}
	free(q);
	if (task) {
		char *t = httpc_escape(task), *p2 = xasprintf("%s&task=%s", path, t);
		free(t);
		free(path);
		path = p2;
	}
	if (tty) {
		term_size(&rows, &cols);
		if (rows && cols) {
			char *p2 = xasprintf("%s&rows=%u&cols=%u", path, rows, cols);
			free(path);
			path = p2;
		}
	}
	return path;
}

/* Sends all of buf on c (blocking); 0 or -1. */
static int conn_send_all(struct conn *c, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = conn_send(c, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Sends the upgrade request and reads the answer's head.  Returns 0 once
 * the node switched protocols (*rest holds what came after the head: the
 * first frames), or 1 after printing the node's error. */
static int upgrade(const char *cmd, struct conn *c, const char *addr, const char *path,
		   struct strbuf *rest)
{
	const char *tok = getenv("HERD_TOKEN");
	struct strbuf req = STRBUF_INIT, in = STRBUF_INIT;
	char buf[4096], *end = NULL;
	int status = 0;
	ssize_t n;

	strbuf_addf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\n"
		    "Upgrade: herd-exec\r\n", path, addr);
	if (tok && *tok)
		strbuf_addf(&req, "X-Herd-Token: %s\r\n", tok);
	strbuf_adds(&req, "\r\n");
	if (conn_send_all(c, req.buf, req.len) < 0) {
		fprintf(stderr, "%s: node at %s: %s\n", cmd, addr, strerror(errno));
		strbuf_release(&req);
		return 1;
	}
	strbuf_release(&req);
	while (!(end = strstr(in.buf, "\r\n\r\n")) && in.len < HEAD_MAX &&
	       (n = conn_recv(c, buf, sizeof(buf))) > 0)
		strbuf_add(&in, buf, (size_t)n);
	if (!end || sscanf(in.buf, "HTTP/1.%*d %d", &status) != 1) {
		fprintf(stderr, "%s: node at %s: no HTTP answer\n", cmd, addr);
		strbuf_release(&in);
		return 1;
	}
	if (status == 101) {
		size_t head = (size_t)(end + 4 - in.buf);
		strbuf_add(rest, in.buf + head, in.len - head);
		strbuf_release(&in);
		return 0;
	}
	/* An error answer: JSON of Content-Length bytes (the connection
	 * stays open after it: read no further), HEAD_MAX at most. */
	size_t head = (size_t)(end + 4 - in.buf), want = HEAD_MAX;
	const char *cl = strcasestr(in.buf, "\r\ncontent-length:");
	if (cl && cl < end)
		want = head + strtoul(cl + 17, NULL, 10);
	while (in.len < want && in.len < HEAD_MAX && (n = conn_recv(c, buf, sizeof(buf))) > 0)
		strbuf_add(&in, buf, (size_t)n);
	end = strstr(in.buf, "\r\n\r\n");
	json_t *j = json_loads(end + 4, JSON_DISABLE_EOF_CHECK, NULL);
	const char *msg = js(json_object_get(j, "error"), "message");
	if (*msg)
		fprintf(stderr, "%s: %s\n", cmd, msg);
	else
		fprintf(stderr, "%s: node at %s answered %d\n", cmd, addr, status);
	json_decref(j);
	strbuf_release(&in);
	return 1;
}

struct session {
	const char *cmd;
	struct conn c;
	bool stdin_open;       /* still reading our stdin */
	bool done;
	int exit_code;         /* what the command ended with; -1 before */
	struct strbuf from_sock, to_sock;
};

/* Handles the complete frames from the node.  -1 on a protocol error. */
static int take_frames(struct session *s)
{
	size_t off = 0;
	struct exec_frame f;
	ssize_t n = 0;

	while (!s->done &&
	       (n = exec_frame_parse(s->from_sock.buf + off, s->from_sock.len - off, &f)) > 0) {
		off += (size_t)n;
		switch (f.type) {
		case EXEC_FRAME_STDOUT:
			write_all(STDOUT_FILENO, f.data, f.len);
			break;
		case EXEC_FRAME_STDERR:
			write_all(STDERR_FILENO, f.data, f.len);
			break;
		case EXEC_FRAME_ERROR:
			fprintf(stderr, "%s%s: %.*s\n", raw_on ? "\r\n" : "", s->cmd, (int)f.len,
				(const char *)f.data);
			if (raw_on)
				fputc('\r', stderr);
			break;
		case EXEC_FRAME_EXIT: {
			int32_t code, sig;
			exec_frame_exit(&f, &code, &sig);
			s->exit_code = sig ? 128 + sig : code & 0xff;
			s->done = true;
			break;
		}
		default:
			return -1;
		}
	}
	if (n < 0)
		return -1;
	memmove(s->from_sock.buf, s->from_sock.buf + off, s->from_sock.len - off);
	strbuf_setlen(&s->from_sock, s->from_sock.len - off);
	return 0;
}

static void read_stdin(struct session *s)
{
	char buf[STDIN_CHUNK];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		exec_frame_put(&s->to_sock, EXEC_FRAME_STDIN, buf, (size_t)n);
		return;
	}
	exec_frame_put(&s->to_sock, EXEC_FRAME_STDIN_CLOSE, NULL, 0);
	s->stdin_open = false;
}

/* 0 when the socket is still open. */
static int pump_sock(struct session *s, short revents)
{
	if (revents & POLLOUT) {
		ssize_t n = conn_send(&s->c, s->to_sock.buf, s->to_sock.len);
		if (n > 0) {
			memmove(s->to_sock.buf, s->to_sock.buf + n, s->to_sock.len - (size_t)n);
			strbuf_setlen(&s->to_sock, s->to_sock.len - (size_t)n);
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		char buf[65536];
		ssize_t n = conn_recv(&s->c, buf, sizeof(buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0)
			return -1;
		strbuf_add(&s->from_sock, buf, (size_t)n);
		if (take_frames(s) < 0) {
			fprintf(stderr, "%s%s: the node sent something that is not an exec frame\n",
				raw_on ? "\r\n" : "", s->cmd);
			return -1;
		}
	}
	return 0;
}

/* Runs the session until the exit frame; returns the exit status. */
static int run_session(struct session *s, bool tty)
{
	fcntl(s->c.fd, F_SETFL, fcntl(s->c.fd, F_GETFL) | O_NONBLOCK);
	if (take_frames(s) < 0)
		return 1;
	if (!s->stdin_open)
		exec_frame_put(&s->to_sock, EXEC_FRAME_STDIN_CLOSE, NULL, 0);
	while (!s->done) {
		/* what TLS decrypted already: the socket will not announce it */
		if (s->c.tls && tls_conn_pending(s->c.tls)) {
			if (pump_sock(s, POLLIN) < 0)
				break;
			continue;
		}
		struct pollfd p[3] = {
			{ s->c.fd, (short)(POLLIN | (s->to_sock.len ? POLLOUT : 0)), 0 },
			{ s->stdin_open && s->to_sock.len < BUF_CAP ? STDIN_FILENO : -1, POLLIN, 0 },
			{ tty ? winch_pipe[0] : -1, POLLIN, 0 },
		};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents && pump_sock(s, p[0].revents) < 0)
			break;
		/* A window change before what was typed after it.  The pipe
		 * is read whatever poll said: a SIGWINCH that came while poll
		 * returned for stdin has run its handler by now, though poll's
		 * answer predates it. */
		if (tty && winch_pipe[0] >= 0) {
			char b[64];
			uint16_t rows, cols;
			if (read(winch_pipe[0], b, sizeof(b)) > 0) {
				term_size(&rows, &cols);
				if (rows && cols)
					exec_frame_put_resize(&s->to_sock, rows, cols);
			}
		}
		if (p[1].revents)
			read_stdin(s);
	}
	if (!s->done) {
		fprintf(stderr, "%s%s: the connection to the node ended before the command did\n",
			raw_on ? "\r\n" : "", s->cmd);
		return 1;
	}
	return s->exit_code;
}

/* The task to exec in: task_arg when the allocation has it, else its only
 * running task; NULL after saying why. */
static const char *pick_task(const char *cmd, const json_t *alloc, const char *task_arg)
{
	const json_t *states = json_object_get(alloc, "task_states"), *t;
	const char *status = js(alloc, "client_status"), *key, *only = NULL;
	struct strbuf names = STRBUF_INIT, running = STRBUF_INIT;
	size_t nrun = 0;
	char sid[16];

	if (!strcmp(status, "complete") || !strcmp(status, "failed") || !strcmp(status, "lost")) {
		fprintf(stderr, "%s: allocation %s has ended (%s): no task runs to exec in\n", cmd,
			short_id(js(alloc, "id"), sid), status);
		return NULL;
	}
	json_object_foreach((json_t *)states, key, t) {
		strbuf_addf(&names, "%s%s", names.len ? ", " : "", key);
		if (!strcmp(js(t, "state"), "running")) {
			strbuf_addf(&running, "%s%s", running.len ? ", " : "", key);
			only = key;
			nrun++;
		}
	}
	if (task_arg && !json_object_get(states, task_arg)) {
		fprintf(stderr, "%s: allocation %s has no task \"%s\" (its tasks: %s)\n", cmd,
			short_id(js(alloc, "id"), sid), task_arg, names.buf);
		only = NULL;
	} else if (task_arg) {
		only = task_arg;   /* the node says whether it runs */
	} else if (nrun == 0) {
		fprintf(stderr, "%s: no task of allocation %s is running (%s)\n", cmd,
			short_id(js(alloc, "id"), sid), status);
	} else if (nrun > 1) {
		fprintf(stderr, "%s: allocation %s runs %zu tasks: name one with -task (%s)\n", cmd,
			short_id(js(alloc, "id"), sid), nrun, running.buf);
		only = NULL;
	}
	strbuf_release(&names);
	strbuf_release(&running);
	return only;
}

int alloc_exec_stream(const char *cmd, const char *id, const char *addr, const char *task,
		      const char *action, char *const *argv, bool tty, bool in)
{
	struct session s = { .cmd = cmd, .c = { -1, NULL }, .exit_code = -1,
			     .from_sock = STRBUF_INIT, .to_sock = STRBUF_INIT };
	char *path;
	int rc = 1;

	if ((s.c.fd = dial(cmd, addr)) < 0)
		goto out;
	if ((rc = conn_tls(cmd, addr, &s.c)))
		goto out_sock;
	path = exec_path(id, task, tty, action, argv);
	rc = upgrade(cmd, &s.c, addr, path, &s.from_sock);
	free(path);
	if (rc)
		goto out_sock;
	s.stdin_open = in;
	if (tty && isatty(STDIN_FILENO)) {
		if (pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) == 0)
			signal(SIGWINCH, on_winch);
		if (make_raw() < 0)
			fprintf(stderr, "%s: cannot put the terminal in raw mode: %s\n", cmd,
				strerror(errno));
	}
	rc = run_session(&s, tty);
	restore_tty();
out_sock:
	tls_conn_free(s.c.tls);
	close(s.c.fd);
out:
	strbuf_release(&s.from_sock);
	strbuf_release(&s.to_sock);
	return rc;
}

int alloc_exec_cmd(int argc, char **argv)
{
	const char *ns_flag = NULL, *task_arg = NULL, *task;
	bool in = true, tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	const struct flag flags[] = {
		{ "task", FLAG_STRING, &task_arg, "the task (required when several run)" },
		{ "i", FLAG_BOOL, &in, "pass stdin to the command (default true; -i=false: none)" },
		{ "t", FLAG_BOOL, &tty, "a pseudo-terminal (default: when stdin and stdout are "
					"terminals; -t=false: pipes)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc exec [options] ID COMMAND [ARGS...]",
		"Runs COMMAND inside a running task of an allocation (ID or a unique prefix), on\n"
		"its node: with the task's environment, in its directory, as its user; for the\n"
		"exec driver inside its namespaces, cgroup and root (docs/drivers.md).  stdin,\n"
		"stdout and stderr are passed through; with -t on a pseudo-terminal (the local\n"
		"terminal in raw mode, window size changes passed on).  Exits with the command's\n"
		"exit code (128 + N when killed by signal N).  Options come before ID.\n"
		"To run a command the job defines by name instead: herd job action.",
		flags,
	};
	char *id = NULL, *addr = NULL;
	json_t *alloc = NULL;
	int n = flags_parse(&help, argc, argv), rc = 1;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n >= argc)
		return usage_error(argv[0], "missing allocation id");
	if (n + 1 >= argc)
		return usage_error(argv[0], "missing command");
	if (alloc_locate(argv[0], ns_flag, argv[n], &id, &alloc, &addr))
		return 1;
	if ((task = pick_task(argv[0], alloc, task_arg)))
		rc = alloc_exec_stream(argv[0], id, addr, task, NULL, argv + n + 1, tty, in);
	json_decref(alloc);
	free(addr);
	free(id);
	return rc;
}
