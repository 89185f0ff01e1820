/* isolate: how the task shim starts an exec-driver task (private to
 * src/drivers; docs/drivers.md "exec").
 *
 * isolate_spawn clone3()s a child in new PID, mount, IPC and UTS
 * namespaces.  That child is PID 1 of the new PID namespace (the task's
 * "init"); it
 *   1. is moved into the task's cgroup by the shim while it sets up (it
 *      waits for that before the task starts),
 *   2. makes every mount private, bind-mounts the task directory onto
 *      itself, binds the system directories read-only (symlinks such as
 *      Debian's /lib -> usr/lib are recreated as symlinks), binds the
 *      allocation directory at /alloc, binds each host volume at its
 *      destination (nosuid, nodev; read-only when asked), builds a small /dev on tmpfs (null
 *      zero full random urandom tty, pts, shm, plus only the device nodes
 *      listed: the task's GPUs), mounts a fresh /proc,
 *   3. pivot_roots into the task directory and detaches the old root,
 *   4. hands local/, secrets/, tmp/ and alloc/{data,tmp} to the task user
 *      (local/ and secrets/ with everything the agent put in them: a 0600
 *      template in secrets/ is the task's to read),
 *      drops to uid/gid (setgroups, setgid, setuid: no capabilities left
 *      for a non-root user),
 *   5. posix_spawns the task (pid 2, its own session) and reports
 *      "ok" or "err <errno> exec ...: ..." through a pipe,
 *   6. forwards TERM, INT, HUP, QUIT, USR1, USR2, WINCH, ALRM to the
 *      task's process group, reaps orphans, and when the task ends writes
 *      its wait status to a pipe and exits (the kernel then kills what is
 *      left in the namespace).
 * The init is needed because PID 1 of a namespace ignores signals it has
 * no handler for: a task run as PID 1 would not see a SIGTERM from stop().
 */
#ifndef HERD_DRIVERS_ISOLATE_H
#define HERD_DRIVERS_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ISOLATE_MAX_LIST 64

/* A host volume bound into the task's root (driver.h, driver_volume). */
struct isolate_volume {
	const char *src;                           /* an existing host directory */
	const char *dst;                           /* absolute inside the root */
	bool read_only;
};

struct isolate_spec {
	const char *root;                          /* the task dir: the new / */
	const char *alloc_dir;                     /* bound at /alloc; NULL: none */
	const char *ro[ISOLATE_MAX_LIST];          /* system dirs, bound read-only */
	size_t nr_ro;
	const char *devices[ISOLATE_MAX_LIST];     /* host /dev paths exposed */
	size_t nr_devices;
	const char *procs[ISOLATE_MAX_LIST];       /* cgroup.procs files to join */
	size_t nr_procs;
	struct isolate_volume volumes[ISOLATE_MAX_LIST]; /* host volumes */
	size_t nr_volumes;
	uid_t uid;
	gid_t gid;
	const char *hostname;                      /* NULL: keep the host's */
};

/* Whether the init passes sig on to the task (the list of 6. above).
 * Another signal sent to the init from outside its namespace is dropped
 * (it has no handler), except SIGKILL and SIGSTOP, which the kernel
 * applies to the init itself. */
bool isolate_forwards(int sig);

/* Starts argv (PATH lookup in the caller's environ) isolated as above, with
 * fds in/out/err as its stdin/stdout/stderr.  Returns 0 with *init_pid
 * (the namespace's PID 1, a child of the caller) and *status_fd (a pipe
 * that receives the task's int wait status just before the init exits;
 * the caller closes it), or a positive errno with msg filled ("exec
 * /bin/nope: No such file or directory", "mount /usr: ..."); nothing is
 * left running then. */
int isolate_spawn(const struct isolate_spec *s, char *const *argv, int in, int out, int err,
		  pid_t *init_pid, int *status_fd, char *msg, size_t msglen);

#endif
