/* One `herd alloc exec` session: start the command, pump frames; see
 * exec_session.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent/exec_session.h"
#include "common/exec_frame.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "drivers/task_exec.h"

/* What either direction may hold before it stops reading its source:
 * the backpressure that keeps a fast writer from growing the agent. */
#define BUF_CAP (256 * 1024)
/* One read of the command's output: one frame. */
#define READ_CHUNK 32768
#define POLL_MS 200
/* How long output is still read after the command exited: a background
 * process it left may hold the pipes (or the pty) open for ever. */
#define DRAIN_NS (2000 * 1000000LL)
/* How long the last frames may take to leave once the command ended. */
#define FLUSH_NS (5000 * 1000000LL)

struct pump {
	int sock;
	int out, err;          /* stdout and stderr to read (-1 when at EOF); tty: out is the master */
	int in;                /* the command's stdin to write (-1 once closed); tty: the master */
	int master;            /* the pty, -1 without a tty */
	int child_fd;          /* pidfd of the command */
	int task_fd;           /* pidfd of the task */
	pid_t pid;
	int stop_signal;       /* ends the command's process group (task_exec.h) */
	struct docker_exec *dx; /* docker: the exec instance; in and out are its stream */
	bool child_exited, peer_gone, stdin_eof, killed, tty;
	int64_t exited_at;
	struct strbuf from_sock, to_child, to_sock;
};

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Sends the error frame msg and an exit frame with code, blocking (the
 * session has nothing else to do): for a command that never started. */
static void send_all(int sock, const struct strbuf *sb)
{
	size_t off = 0;
	int64_t deadline = mono_ns() + FLUSH_NS;
	while (off < sb->len && mono_ns() < deadline) {
		ssize_t n = send(sock, sb->buf + off, sb->len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			struct pollfd p = { sock, POLLOUT, 0 };
			poll(&p, 1, POLL_MS);
		} else {
			return;
		}
	}
}

static void fail_session(int sock, const char *msg, int code)
{
	struct strbuf sb = STRBUF_INIT;
	exec_frame_put(&sb, EXEC_FRAME_ERROR, msg, strlen(msg));
	exec_frame_put_exit(&sb, code, 0);
	send_all(sock, &sb);
	strbuf_release(&sb);
}

/* The pty (master, slave) sized rows x cols, both close-on-exec. */
static int open_pty(uint16_t rows, uint16_t cols, int *master, int *slave, char *why,
		    size_t size)
{
	char name[128];
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s;

	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name))) {
		snprintf(why, size, "cannot open a pty: %s", strerror(errno));
		if (m >= 0)
			close(m);
		return -1;
	}
	if ((s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		snprintf(why, size, "cannot open %s: %s", name, strerror(errno));
		close(m);
		return -1;
	}
	if (rows && cols) {
		struct winsize ws = { .ws_row = rows, .ws_col = cols };
		ioctl(m, TIOCSWINSZ, &ws);
	}
	*master = m;
	*slave = s;
	return 0;
}

static void docker_output(void *arg, int stream, const char *data, size_t len)
{
	struct pump *p = arg;
	/* the engine's frames may exceed ours: split */
	while (len) {
		size_t n = len > EXEC_FRAME_MAX ? EXEC_FRAME_MAX : len;
		exec_frame_put(&p->to_sock, stream == 2 ? EXEC_FRAME_STDERR : EXEC_FRAME_STDOUT,
			       data, n);
		data += n;
		len -= n;
	}
}

/* docker: an exec instance; its stream is both the command's stdin and
 * its output, and its end is the command's exit. */
static int start_docker(const struct exec_session_spec *spec, struct pump *p)
{
	struct herd_err err = { 0, "" };
	int fd, rc = docker_exec_start(spec->env, spec->task, spec->argv, spec->tty, spec->rows,
				       spec->cols, docker_output, p, &p->dx, &fd, &err);

	if (rc < 0) {
		fail_session(p->sock, err.msg, 126);
		return -1;
	}
	p->in = p->out = fd;
	set_nonblock(fd);
	return 0;
}

/* Starts the command with a pty or pipes; fills p's fds.  On failure
 * sends the error and returns -1. */
static int start_command(const struct exec_session_spec *spec, struct pump *p)
{
	struct task_exec x = { .argv = spec->argv, .task_dir = spec->task_dir, .tty = spec->tty };
	struct herd_err err = { 0, "" };
	int child[3] = { -1, -1, -1 }, pin[2] = { -1, -1 }, pout[2] = { -1, -1 },
	    perr[2] = { -1, -1 }, rc;
	char why[256];

	if (!strcmp(spec->task->driver, "docker"))
		return start_docker(spec, p);
	if (spec->tty) {
		if (open_pty(spec->rows, spec->cols, &p->master, &child[0], why, sizeof(why)) < 0) {
			fail_session(p->sock, why, 126);
			return -1;
		}
		child[1] = child[2] = child[0];
		p->in = p->out = p->master;
	} else {
		if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 ||
		    pipe2(perr, O_CLOEXEC) < 0) {
			snprintf(why, sizeof(why), "pipes: %s", strerror(errno));
			fail_session(p->sock, why, 126);
			for (int i = 0; i < 2; i++) {
				close_fd(&pin[i]);
				close_fd(&pout[i]);
				close_fd(&perr[i]);
			}
			return -1;
		}
		child[0] = pin[0];
		child[1] = pout[1];
		child[2] = perr[1];
		p->in = pin[1];
		p->out = pout[0];
		p->err = perr[0];
	}
	memcpy(x.fds, child, sizeof(x.fds));
	struct task_exec_proc proc;
	rc = task_exec_start(spec->env, spec->task, &x, &proc, &err);
	/* the command holds its ends now: ours would keep the pipes open */
	for (int i = 0; i < 3; i++)
		if (child[i] >= 0 && (i == 0 || child[i] != child[0]))
			close(child[i]);
	if (rc < 0) {
		fail_session(p->sock, err.msg, rc == -ENOENT ? 127 : 126);
		return -1;
	}
	p->pid = proc.pid;
	p->task_fd = proc.task_fd;
	p->stop_signal = proc.stop_signal;
	/* The command is our unreaped child: its pid cannot be reused. */
	p->child_fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	set_nonblock(p->in);
	set_nonblock(p->out);
	if (p->err >= 0)
		set_nonblock(p->err);
	return 0;
}

static void kill_command(struct pump *p)
{
	if (!p->killed && p->dx)
		docker_exec_kill(p->dx);
	else if (!p->killed && p->pid > 0)
		kill(-p->pid, p->stop_signal);
	p->killed = true;
}

static void say_error(struct pump *p, const char *msg)
{
	exec_frame_put(&p->to_sock, EXEC_FRAME_ERROR, msg, strlen(msg));
}

/* Handles the frames complete in from_sock.  -1 on a protocol error
 * (the caller hangs up). */
static int take_frames(struct pump *p)
{
	size_t off = 0;
	struct exec_frame f;
	ssize_t n;

	while ((n = exec_frame_parse(p->from_sock.buf + off, p->from_sock.len - off, &f)) > 0) {
		off += (size_t)n;
		switch (f.type) {
		case EXEC_FRAME_STDIN:
			if (p->in >= 0 && !p->stdin_eof)
				strbuf_add(&p->to_child, f.data, f.len);
			break;
		case EXEC_FRAME_STDIN_CLOSE:
			p->stdin_eof = true;
			break;
		case EXEC_FRAME_RESIZE:
			if (p->master >= 0 || p->dx) {
				struct winsize ws = { 0 };
				exec_frame_resize(&f, &ws.ws_row, &ws.ws_col);
				if (p->dx)
					docker_exec_resize(p->dx, ws.ws_row, ws.ws_col);
				else
					ioctl(p->master, TIOCSWINSZ, &ws);
			}
			break;
		default:
			return -1;   /* output frames go the other way */
		}
	}
	memmove(p->from_sock.buf, p->from_sock.buf + off, p->from_sock.len - off);
	strbuf_setlen(&p->from_sock, p->from_sock.len - off);
	return n < 0 ? -1 : 0;
}

static void read_sock(struct pump *p)
{
	char buf[READ_CHUNK];
	ssize_t n = recv(p->sock, buf, sizeof(buf), 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		p->peer_gone = true;
		return;
	}
	strbuf_add(&p->from_sock, buf, (size_t)n);
	if (take_frames(p) < 0)
		p->peer_gone = true;   /* not our protocol: treat as gone */
}

/* Reads what the command wrote on *fd into a frame of type; closes *fd
 * at its end (EOF, or EIO from a pty whose slave is closed everywhere). */
static void read_docker(struct pump *p)
{
	ssize_t n = docker_exec_read(p->dx);

	if (n > 0 || n == -EAGAIN || n == -EINTR)
		return;
	/* the end of the stream is the end of the command (the stream's fd
	 * is the exec's to close) */
	p->in = p->out = -1;
	p->child_exited = true;
	p->exited_at = mono_ns();
}

static void read_output(struct pump *p, int *fd, enum exec_frame_type type)
{
	char buf[READ_CHUNK];
	ssize_t n;

	if (p->dx) {
		read_docker(p);
		return;
	}
	n = read(*fd, buf, sizeof(buf));

	if (n > 0) {
		exec_frame_put(&p->to_sock, type, buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (*fd == p->master) {
		/* the master is also stdin: both are done */
		p->in = -1;
		p->out = -1;
		close_fd(&p->master);
		return;
	}
	close_fd(fd);
}

static void write_child(struct pump *p)
{
	ssize_t n = write(p->in, p->to_child.buf, p->to_child.len);

	if (n > 0) {
		memmove(p->to_child.buf, p->to_child.buf + n, p->to_child.len - (size_t)n);
		strbuf_setlen(&p->to_child, p->to_child.len - (size_t)n);
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		/* the command closed its stdin: what it did not read is dropped */
		strbuf_reset(&p->to_child);
		if (p->dx)
			p->in = -1;   /* the stream is also the output: kept */
		else if (p->in != p->master)
			close_fd(&p->in);
	}
}

static void write_sock(struct pump *p)
{
	ssize_t n = send(p->sock, p->to_sock.buf, p->to_sock.len, MSG_NOSIGNAL);

	if (n > 0) {
		memmove(p->to_sock.buf, p->to_sock.buf + n, p->to_sock.len - (size_t)n);
		strbuf_setlen(&p->to_sock, p->to_sock.len - (size_t)n);
	} else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		p->peer_gone = true;
	}
}

enum { PS_SOCK, PS_OUT, PS_ERR, PS_IN, PS_CHILD, PS_TASK, PS_N };

/* One round of poll and what it found. */
static void pump_once(struct pump *p)
{
	struct pollfd fds[PS_N];
	bool out_room = p->to_sock.len < BUF_CAP;

	fds[PS_SOCK] = (struct pollfd){ p->sock,
		(short)((p->to_child.len < BUF_CAP ? POLLIN : 0) | (p->to_sock.len ? POLLOUT : 0)), 0 };
	fds[PS_OUT] = (struct pollfd){ out_room ? p->out : -1, POLLIN, 0 };
	fds[PS_ERR] = (struct pollfd){ out_room ? p->err : -1, POLLIN, 0 };
	/* with a pty, stdin is the master again: its own entry for POLLOUT */
	fds[PS_IN] = (struct pollfd){ p->to_child.len ? p->in : -1, POLLOUT, 0 };
	fds[PS_CHILD] = (struct pollfd){ p->child_exited ? -1 : p->child_fd, POLLIN, 0 };
	fds[PS_TASK] = (struct pollfd){ p->task_fd, POLLIN, 0 };
	if (p->dx && docker_exec_pending(p->dx))
		read_docker(p);   /* what came with the engine's answer */
	if (poll(fds, PS_N, POLL_MS) <= 0)
		return;
	if (fds[PS_SOCK].revents & (POLLIN | POLLHUP | POLLERR))
		read_sock(p);
	if (fds[PS_SOCK].revents & POLLOUT)
		write_sock(p);
	if (p->out >= 0 && fds[PS_OUT].revents)
		read_output(p, &p->out, EXEC_FRAME_STDOUT);
	if (p->err >= 0 && fds[PS_ERR].revents)
		read_output(p, &p->err, EXEC_FRAME_STDERR);
	if (p->in >= 0 && fds[PS_IN].revents)
		write_child(p);
	if (fds[PS_CHILD].revents) {
		p->child_exited = true;
		p->exited_at = mono_ns();
	}
	if (fds[PS_TASK].revents) {
		say_error(p, "the task ended: the command was killed");
		kill_command(p);
		close_fd(&p->task_fd);
	}
}

/* The exit frame of the reaped command. */
static void put_exit(struct pump *p)
{
	int status = 0;

	if (p->dx) {
		int code = docker_exec_exit_code(p->dx);
		exec_frame_put_exit(&p->to_sock, code >= 0 ? code : 255, 0);
		return;
	}

	kill_command(p);   /* what it left in its process group */
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	p->pid = -1;
	if (WIFSIGNALED(status))
		exec_frame_put_exit(&p->to_sock, -1, WTERMSIG(status));
	else
		exec_frame_put_exit(&p->to_sock, WEXITSTATUS(status), 0);
}

static void pump(struct pump *p, const atomic_bool *stopping)
{
	for (;;) {
		if (p->peer_gone) {
			kill_command(p);
			return;
		}
		if (stopping && atomic_load(stopping) && !p->killed) {
			say_error(p, "the agent is stopping: the command was killed");
			kill_command(p);
		}
		/* stdin ends once what came before the close is written */
		if (p->stdin_eof && !p->to_child.len && p->in >= 0 && p->dx && !p->tty) {
			shutdown(p->in, SHUT_WR);   /* the engine passes the EOF on */
			p->in = -1;
		} else if (p->stdin_eof && !p->to_child.len && p->in >= 0 && !p->dx &&
			   p->in != p->master) {
			close_fd(&p->in);
		}
		if (p->child_exited && ((p->out < 0 && p->err < 0) ||
					mono_ns() - p->exited_at > DRAIN_NS))
			break;
		pump_once(p);
	}
	put_exit(p);
	send_all(p->sock, &p->to_sock);
	strbuf_reset(&p->to_sock);
}

void exec_session_run(const struct exec_session_spec *spec, int sock, const char *extra,
		      size_t extra_len)
{
	struct pump p = {
		.sock = sock, .out = -1, .err = -1, .in = -1, .master = -1, .child_fd = -1,
		.task_fd = -1, .pid = -1,
		.from_sock = STRBUF_INIT, .to_child = STRBUF_INIT, .to_sock = STRBUF_INIT,
	};

	p.tty = spec->tty;
	set_nonblock(sock);
	if (start_command(spec, &p) == 0) {
		if (extra_len) {
			strbuf_add(&p.from_sock, extra, extra_len);
			if (take_frames(&p) < 0)
				p.peer_gone = true;
		}
		pump(&p, spec->stopping);
		if (p.pid > 0)
			while (waitpid(p.pid, NULL, 0) < 0 && errno == EINTR)
				;
	}
	if (p.dx) {
		/* in and out are the exec's stream, closed with it */
		docker_exec_free(p.dx);
		p.in = p.out = -1;
	}
	if (p.master >= 0) {
		/* in and out are the master too */
		close_fd(&p.master);
		p.in = p.out = -1;
	}
	close_fd(&p.in);
	close_fd(&p.out);
	close_fd(&p.err);
	close_fd(&p.child_fd);
	close_fd(&p.task_fd);
	strbuf_release(&p.from_sock);
	strbuf_release(&p.to_child);
	strbuf_release(&p.to_sock);
}
