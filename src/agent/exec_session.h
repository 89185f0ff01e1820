/* exec_session: one `herd alloc exec` session on a connection that the
 * client API upgraded (client_http.c; docs/api.md, "GET
 * /v1/client/allocation/:id/exec").
 *
 * It starts the command in the task's context (drivers/task_exec.h) on a
 * pty (tty) or three pipes (docker: the engine's exec stream), then pumps: stdin and resize frames from the
 * connection to the command, its stdout/stderr to the connection as
 * frames (common/exec_frame.h), with bounded buffers both ways so that
 * neither side can block the other.  It ends
 *   - when the command exits: what it wrote is drained (up to 2 s after
 *     its exit, for a background process that keeps the pipes open), its
 *     process group is killed, and an exit frame goes last;
 *   - when the caller hangs up or breaks the protocol: SIGKILL to the
 *     command's process group;
 *   - when the task ends or the agent stops (*stopping): an error frame
 *     says so, the group is killed, the exit frame follows.
 * A command that cannot start gets an error frame and exit code 126
 * (found, not runnable) or 127 (not found), as shells report them.
 * Nothing here logs. */
#ifndef HERD_AGENT_EXEC_SESSION_H
#define HERD_AGENT_EXEC_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/driver.h"

struct exec_session_spec {
	const struct driver_env *env;     /* the drivers' settings (shim_argv for exec) */
	const struct driver_state *task;  /* the running task's persisted state */
	const char *task_dir;             /* the task's directory on the host */
	const char *const *argv;          /* the command, NULL-terminated */
	bool tty;                         /* a pty instead of pipes */
	uint16_t rows, cols;              /* the pty's first size (0: the kernel's) */
	const atomic_bool *stopping;      /* set when the agent stops */
};

/* Runs the session on sock (a connected stream socket; not closed here)
 * until it ends as above.  extra holds bytes the HTTP server already read
 * past the request: they are the first of the stream.  Blocks the
 * calling thread for the session's length. */
void exec_session_run(const struct exec_session_spec *spec, int sock, const char *extra,
		      size_t extra_len);

#endif
