/* task_exec: starting a further command in a running task's context, for
 * `herd alloc exec` (docs/drivers.md, "Running a command in a task").
 *
 * The command gets the environment the task started with (read from the
 * task's /proc/<pid>/environ, so HERD_*, NOMAD_*, CUDA_VISIBLE_DEVICES...
 * are the task's), the task directory as working directory, the task's
 * user, a session of its own (its pid is its process group id) and
 * exactly the three fds the caller gives it.  Per driver:
 *
 *   raw_exec  a plain process on the host, like the task;
 *   exec      entered into the task's namespaces, cgroup and root, as the
 *             task's user (through the task shim's enter mode, shim.h: a
 *             multi-threaded agent cannot setns() into a mount namespace);
 *   docker    not supported yet (-ENOTSUP).
 *
 * Nothing here logs.  The caller owns what it gets back. */
#ifndef HERD_DRIVERS_TASK_EXEC_H
#define HERD_DRIVERS_TASK_EXEC_H

#include <stdbool.h>
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

#endif
