/* Private to src/drivers: process helpers shared by the drivers. */
#ifndef HERD_DRIVERS_INT_H
#define HERD_DRIVERS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "drivers/driver.h"

/* The start time of pid (field 22 of /proc/<pid>/stat, clock ticks since
 * boot): with the pid it names one process for the life of the machine.
 * Returns 0 or -errno (-ESRCH when no such process). */
int proc_start_time(pid_t pid, uint64_t *out);

/* A pidfd (O_CLOEXEC by definition) for pid, but only if that process
 * still has start time start_time (so a reused pid is not mistaken for
 * ours).  Returns the fd, -ESRCH when the process is gone or is another
 * one, -errno otherwise. */
int proc_pidfd_checked(pid_t pid, uint64_t start_time);

/* Reads a small file whole into buf (NUL-terminated, at most size - 1
 * bytes).  0 or -errno. */
int proc_read_small(const char *path, char *buf, size_t size);

/* What proc_session_usage and driver_proc_read read of /proc/<pid>/stat
 * (proc(5) fields 4, 6, 14 to 17 and 24). */
struct proc_stat_fields {
	pid_t ppid;
	pid_t session;
	uint64_t utime_ticks, stime_ticks;   /* clock ticks (_SC_CLK_TCK) */
	uint64_t cutime_ticks, cstime_ticks; /* of its reaped children */
	int64_t rss_pages;
};

/* Parses the text of a /proc/<pid>/stat file.  Returns 0, or -EINVAL when
 * it is malformed (*out untouched). */
int proc_parse_stat(const char *text, struct proc_stat_fields *out);

/* Usage of the processes of one session. */
struct proc_usage {
	int64_t rss_bytes;         /* resident set of them all */
	int64_t cpu_ns;            /* user + system time of the live ones and of
				    * the children they reaped (cutime, cstime);
				    * a child that ended but is not reaped yet,
				    * or whose parent left the session, is lost */
	int64_t leader_hwm_bytes;  /* VmHWM of the session leader, -1 unknown */
	int nprocs;
};

/* Sums the processes of session sid found under proc_root (NULL: /proc):
 * every <pid>/stat whose session field is sid.  Returns 0 with *out,
 * -ESRCH when no process is in it, -errno when proc_root cannot be read. */
int proc_session_usage(const char *proc_root, pid_t sid, struct proc_usage *out);

/* Sets the CPU affinity of every thread of every process of session sid
 * under proc_root (NULL: /proc) to cpus (list syntax; NULL: the calling
 * thread's own mask).  Threads that end meanwhile are skipped.  Returns
 * the number of threads set, -ESRCH when no process is in the session,
 * -EINVAL for a bad list, -errno when proc_root cannot be read or the
 * kernel refuses the mask. */
int proc_session_set_affinity(const char *proc_root, pid_t sid, const char *cpus);
/* The same for the processes pids (n of them) under /proc. */
int proc_pids_set_affinity(const pid_t *pids, size_t n, const char *cpus);

/* driver_ops.set_cores of shim-started tasks without a cgroup: their
 * session's affinity, after checking the task pid is still the task. */
int shim_set_cores(const struct driver_env *env, const struct driver_state *state,
		   const char *cpus, struct herd_err *err);

/* Whether process p is pid or descends from it (pid 0 and 1: never). */
bool proc_is_or_descends(const struct driver_proc *p, pid_t pid);

/* CLOCK_REALTIME in ns (stats' sampled_at). */
int64_t driver_realtime_ns(void);

/* Reads an exit file the shim wrote.  Returns 0 with *out, -ENOENT when
 * absent, -EINVAL when malformed. */
int shim_read_exit_file(const char *path, struct driver_exit *out);

/* A task started through the task shim (raw_exec, exec).  docker.c's
 * handle starts with the same three fields: driver_handle_state and
 * driver_handle_fd (raw_exec.c) read them for every driver. */
struct cgroup;
struct driver_handle {
	const struct driver_ops *ops;
	struct driver_state state;
	int pidfd;            /* the shim's; -1 once it has ended */
	bool done;
	struct driver_exit exit;
	struct cgroup *cg;    /* exec: the task's cgroup; NULL for raw_exec */
	bool cleaned;         /* exec: cgroup emptied and removed after the exit */
};

/* Whether s is a usable task name ([A-Za-z0-9_.-], not "." or ".."). */
bool driver_valid_task_name(const char *s);

/* Starts task through the shim (env->shim_argv) with the extra shim flags
 * (NULL-terminated, may be NULL) before "--"; the handle gets ops and
 * ops->name as its driver.  Same contract as driver_ops.start. */
int shim_launch(const struct driver_ops *ops, const struct driver_env *env,
		const struct driver_task *task, const char *const *extra,
		struct driver_handle **out, struct herd_err *err);

/* driver_ops.wait / .signal / .destroy for shim-started tasks (signal goes
 * to the process group of state.task_pid). */
int shim_wait(struct driver_handle *h, int timeout_ms, struct driver_exit *exit,
	      struct herd_err *err);
int shim_signal(struct driver_handle *h, int sig);
void shim_handle_free(struct driver_handle *h);

/* driver_ops.recover for shim-started tasks of driver ops. */
int shim_recover(const struct driver_ops *ops, const struct driver_state *state,
		 struct driver_handle **out, struct herd_err *err);

#endif
