/* The task shim: the small supervisor between the agent and a task.
 *
 * The raw_exec driver (and later exec) starts it with posix_spawn; it
 * starts the task, pumps its stdout/stderr into rotated logs (logrot.h),
 * reaps it and records how it ended, so that the task outlives an agent
 * restart.  It is a function rather than only a program so that the `herd`
 * binary can offer it as a hidden subcommand; src/drivers also builds it as
 * the program herd-task-shim.
 *
 * Command line (argv[0] is ignored; the shim's own environment is passed
 * to the task unchanged):
 *
 *   -task NAME -log-dir DIR -exit-file PATH -cwd DIR
 *   -max-files N -max-size BYTES [-cpus LIST] [isolation flags] -- COMMAND [ARG...]
 *
 * -cpus LIST ("4-7,12"): the shim pins itself to those cores
 * (sched_setaffinity) before it starts the task, which inherits the mask;
 * a list the kernel refuses (no such core allowed here) is a start error.
 *
 * Isolation flags (the exec driver; isolate.h): -root DIR turns isolation
 * on (DIR becomes the task's /); -alloc-dir DIR (bound at /alloc),
 * -uid N, -gid N, and repeatable -ro DIR (read-only system binds), -dev
 * PATH (device nodes exposed), -cgroup-procs FILE (cgroup.procs files the
 * task's init joins).  The task pid reported on fd 3 is then the init's
 * (PID 1 of the task's PID namespace; signals sent to its process group
 * are forwarded to the task).
 *
 * fd 3 is the status pipe: the shim writes one line and closes it:
 *   "ok <task pid> <task start time>\n"      the task runs
 *   "err <errno> <message>\n"                it could not start
 * The exit file gets "<exit code> <signal> <finished unix ns>\n" (one
 * write, not fsynced: shim.c says why) when the task has ended; read it
 * only once the shim has ended.
 *
 * The shim expects every signal at its default disposition (shim_launch
 * starts it so): for the task it resets only SIGPIPE, which it ignores.
 *
 * Returns the shim's exit status: 0 after recording the task's exit, 127
 * when the task could not start, 2 for a bad command line. */
#ifndef HERD_DRIVERS_SHIM_H
#define HERD_DRIVERS_SHIM_H

#define TASK_SHIM_STATUS_FD 3

int task_shim_main(int argc, char **argv);

/* Enter mode, for `herd alloc exec` in an exec-driver task (task_exec.h):
 *
 *   -enter -pid INIT -uid N -gid N [-cgroup-procs FILE]... [-tty] -- COMMAND [ARG...]
 *
 * joins the cgroup(s), enters the IPC, UTS, PID and mount namespaces and
 * the root of INIT (the task's init), then runs COMMAND in a child: a
 * session of its own (-tty: fd 0, a pty, its controlling terminal), the
 * task's user, this process's environment (PATH looked up inside).  Exits
 * with the command's status (dies of its signal); SIGTERM or SIGHUP kill
 * the command's process group.  126: it could not enter or run the
 * command, 127: not found (the reason on stderr); 2: a bad command line.
 * task_shim_main calls it for "-enter" (argv[0] is "-enter"). */
int task_shim_enter_main(int argc, char **argv);

/* The herd-task-shim program to start tasks through: $HERD_TASK_SHIM when
 * set (NULL if it is not executable), else herd-task-shim beside self_exe
 * (the running herd), in ../drivers (the build tree) or ../libexec.
 * Returns a new string (free it), or NULL when there is none; then `herd
 * task-shim` serves.  Why prefer it: it links libc only, statically (musl
 * where musl-gcc was found: docs/drivers.md), and costs about 0.06 ms of
 * CPU to exec, where the whole herd binary (curl, GnuTLS, SQLite, ...)
 * takes about 25 ms on a 2-core machine, on every task start. */
char *task_shim_program(const char *self_exe);

#endif
