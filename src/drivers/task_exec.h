/* task_exec: starting a further command in a running task's context, for
 * `herd alloc exec` (docs/drivers.md, "Running a command in a task").
 *
 * The command gets the environment the task started with (read from the
 * task's /proc/<pid>/environ, so HERD_*, NOMAD_*, CUDA_VISIBLE_DEVICES...
 * are the task's), the task directory as working directory, the task's
 * user, a session of its own (its pid is its process group id) and
 * exactly the three fds the caller gives it.  Per driver:
 *
 *   raw_exec  a plain process on the host, like the task, on its cores
 *             (the task process's CPU affinity);
 *   exec      entered into the task's namespaces, cgroup and root, as the
 *             task's user (through the task shim's enter mode, shim.h: a
 *             multi-threaded agent cannot setns() into a mount namespace);
 *   docker    an exec instance of the Engine API in the task's container
 *             (the container's environment, working directory and user),
 *             docker_exec_* below: no process of ours, a stream instead.
 *
 * Nothing here logs.  The caller owns what it gets back. */
#ifndef HERD_DRIVERS_TASK_EXEC_H
#define HERD_DRIVERS_TASK_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "drivers/driver.h"

struct task_exec {
	const char *const *argv;   /* the command, NULL-terminated; a name without '/'
				    * is looked up in the task environment's PATH */
	const char *task_dir;      /* the task's directory on the host */
	int fds[3];                /* stdin, stdout, stderr of the command */
	bool tty;                  /* fds[0] is a pty's slave: it becomes the
				    * command's controlling terminal */
};

/* What task_exec_start started. */
struct task_exec_proc {
	pid_t pid;                 /* a child of the caller, to reap; its process group id */
	int task_fd;               /* a pidfd of the task's process, readable once the
				    * task has ended; the caller closes it */
	int stop_signal;           /* what ends the command and everything in its
				    * process group when sent to -pid (raw_exec:
				    * SIGKILL; exec: SIGTERM, which the enter mode
				    * turns into a SIGKILL of the command's group) */
};

/* Starts x->argv in the context of the running task st (of driver
 * st->driver) with env's settings (shim_argv, cgroup_root, cgroup_parent
 * for exec).  Returns 0 with *out, or -errno with err: -ESRCH when the
 * task is not running, -ENOTSUP for a driver that cannot do it (docker),
 * -ENOENT / -EACCES when the command cannot be run ("exec nope: ...").
 * For exec a command that cannot run inside the task is reported by the
 * started process instead (stderr, exit 127 / 126). */
int task_exec_start(const struct driver_env *env, const struct driver_state *st,
		    const struct task_exec *x, struct task_exec_proc *out, struct herd_err *err);

/* ---- docker ---------------------------------------------------------- */

struct docker_exec;

/* Output of a docker exec: stream 1 stdout (everything with a tty), 2
 * stderr. */
typedef void (*task_exec_output_fn)(void *arg, int stream, const char *data, size_t len);

/* Creates and starts an exec of argv in the container of the running
 * docker task st (env->docker: the engine), on the engine's pty (tty,
 * sized rows x cols when not 0) or not.  Returns 0 with *x and *fd: the
 * stream, to poll for reading (then docker_exec_read) and to write the
 * command's stdin to (shutdown(SHUT_WR) ends it); owned by *x.  -ESRCH
 * when the container is gone, -errno with err otherwise. */
int docker_exec_start(const struct driver_env *env, const struct driver_state *st,
		      const char *const *argv, bool tty, uint16_t rows, uint16_t cols,
		      task_exec_output_fn out, void *arg, struct docker_exec **x, int *fd,
		      struct herd_err *err);
/* Reads the stream once and hands the output to out: > 0 bytes read, 0
 * at its end (the command ended), -errno (-EAGAIN: nothing now).  Call
 * first while docker_exec_pending: bytes came with the start answer. */
ssize_t docker_exec_read(struct docker_exec *x);
bool docker_exec_pending(const struct docker_exec *x);
/* The engine's pty to rows x cols (errors ignored: a size is advice). */
void docker_exec_resize(struct docker_exec *x, uint16_t rows, uint16_t cols);
/* After the stream ended: the exit code as the engine records it (128 + N
 * for a signal), -1 when it cannot say. */
int docker_exec_exit_code(struct docker_exec *x);
/* SIGKILL to the exec's process (and the group it leads) while it runs;
 * asks the engine again for up to 2 s while it cannot say. */
void docker_exec_kill(struct docker_exec *x);
/* Closes the stream and frees; accepts NULL. */
void docker_exec_free(struct docker_exec *x);

#endif
