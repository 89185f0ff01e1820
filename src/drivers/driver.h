/* driver: how the agent runs a task.  One ops table per driver (raw_exec
 * now; exec and docker slot in beside it), chosen by the task's `driver`.
 *
 * Process model (docs/drivers.md).  The agent never forks: start()
 * posix_spawns a small supervisor, the task shim (shim.h), in its own
 * session.  The shim posix_spawns the task in a session of its own (so the
 * task's process group id is its pid), pumps the task's stdout and stderr
 * into rotated log files, reaps it, and writes its exit status to a file
 * before it exits itself.  Because the shim, not the agent, is the task's
 * parent and log reader, `kill -9` of the agent leaves the task running and
 * its logs captured; a new agent calls recover() with the handle state it
 * persisted and gets the same task back, including its exit status later.
 *
 * Typical use by a task runner:
 *
 *     const struct driver_ops *d = driver_find("raw_exec");
 *     struct driver_handle *h;
 *     if (d->start(&env, &task, &h, &err) < 0)       failed; err says why
 *             ("exec /bin/nope: No such file or directory")
 *     persist driver_handle_state(h) (driver_state_to_json)
 *     loop: d->wait(h, timeout_ms, &exit, &err)      1: exited, 0: still running
 *           (or poll driver_handle_fd(h) in an event loop, then wait(h, 0, ...))
 *     on stop: d->stop(h, kill_signal, kill_timeout_ns, &exit, &err)
 *     d->destroy(h)                                  frees, never kills
 *
 * After an agent restart: d->recover(&env, &state, &h, &err), then as above.
 *
 * Resource usage: d->stats(&env, driver_handle_state(h), &st, &err) (or the
 * state persisted by the client) while the task runs.  stats reads only
 * the plain state, never the handle, so any thread may call it while the
 * task runner waits on the handle.
 *
 * Thread safety: a handle is used by one thread at a time.  Nothing here
 * prints or logs. */
#ifndef HERD_DRIVERS_DRIVER_H
#define HERD_DRIVERS_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define DRIVER_NAME_MAX 32
#define DRIVER_PATH_MAX 4096
#define DRIVER_ID_MAX 128
#define DRIVER_CGROUP_MAX 256

struct json_t;
struct docker_config;

/* How the agent runs drivers; shared by every driver. */
struct driver_env {
	/* The command that runs the task shim: argv prefix, NULL-terminated,
	 * e.g. { "/usr/libexec/herd-task-shim", NULL } or
	 * { "/proc/self/exe", "task-shim", NULL } (a hidden subcommand calling
	 * task_shim_main). */
	const char *const *shim_argv;
	bool raw_exec_enabled;     /* client config: raw_exec is off unless enabled */
	/* The docker driver's client config (drivers/docker.h); NULL: its
	 * defaults (socket /var/run/docker.sock, nothing privileged). */
	const struct docker_config *docker;

	/* The exec driver's client config; NULL fields take the defaults. */
	const char *cgroup_root;   /* NULL: /sys/fs/cgroup (v1/v2 detected there) */
	const char *cgroup_parent; /* NULL: "herd.slice" (v2) / "herd" (v1) */
	const char *const *chroot_env; /* host dirs bound read-only into the task's
				    * root, NULL-terminated; NULL: /bin /etc /lib
				    * /lib32 /lib64 /sbin /usr (Nomad's chroot_env) */
};

/* A port of the group's network, for drivers that map ports (docker). */
struct driver_port {
	const char *label;         /* network { port "http" { } } */
	const char *host_ip;       /* NULL or "": all addresses */
	int host_port;             /* port on the host */
	int to;                    /* port inside the task (0: same as host_port) */
};

/* A host volume the task mounts (the job's volume_mount, resolved by the
 * agent against its client { host_volume }; docs/drivers.md, "Host
 * volumes"). */
struct driver_volume {
	const char *name;          /* the group's volume name */
	const char *host_path;     /* absolute: the client's host_volume path */
	const char *destination;   /* where the task sees it: absolute inside the
				    * task's root for exec and docker */
	bool read_only;            /* the volume, the mount or the client said so */
};

/* One task to start.  Strings are borrowed for the duration of start(). */
struct driver_task {
	const char *name;          /* the task's name: log file prefix, [A-Za-z0-9_.-] */
	const char *command;       /* absolute, or relative to task_dir, or a name
				    * looked up in the task env's PATH */
	const char *const *args;   /* argv[1..], NULL-terminated; may be NULL */
	const char *const *env;    /* the complete environment, "K=V", NULL-terminated;
				    * nothing of the agent's leaks in */
	const char *task_dir;      /* working directory; must exist */
	const char *log_dir;       /* where <name>.stdout.N / .stderr.N go; must exist */
	const char *state_dir;     /* where the shim writes <name>.exit; must exist */
	int log_max_files;         /* logs { max_files }: files kept per stream (>= 1) */
	int64_t log_max_file_size; /* logs { max_file_size } in bytes (>= 1) */
	bool logs_disabled;        /* logs { disabled }: stdout and stderr are dropped */

	/* Used by drivers that isolate the task (docker); 0/NULL when unset.
	 * raw_exec ignores them. */
	const struct json_t *config; /* the task's `config` object, verbatim */
	const char *alloc_id;      /* labels the container; garbage collection */
	const char *alloc_dir;     /* the shared <alloc>/alloc dir: /alloc inside */
	int64_t memory_mb;         /* resources { memory }: the reservation */
	int64_t memory_max_mb;     /* resources { memory_max }: the hard limit, 0 none */
	int64_t cpu_mhz;           /* resources { cpu }: relative CPU weight */
	const char *const *gpu_ids; /* assigned GPU/MIG UUIDs, NULL-terminated; NULL:
				    * taken from NVIDIA_VISIBLE_DEVICES in env */
	const struct driver_port *ports;
	size_t nports;
	/* Host volumes: docker and exec bind-mount each host_path at its
	 * destination (read-only when read_only); raw_exec mounts nothing
	 * (the agent links a relative destination inside the task dir). */
	const struct driver_volume *volumes;
	size_t nvolumes;
	/* Progress the task runner should show as task events ("Downloading
	 * Image", ...); called from start() on its thread.  May be NULL. */
	void (*event)(void *arg, const char *type, const char *message);
	void *event_arg;

	/* exec driver (with alloc_dir, memory_mb, memory_max_mb and cpu_mhz
	 * above).  task_dir becomes the task's /: its local/, secrets/ and
	 * tmp/ are /local, /secrets and /tmp inside. */
	const char *user;          /* NULL: "nobody" */
	const char *const *devices; /* host device nodes the task may use (its GPUs:
				    * /dev/nvidia<N>, /dev/nvidiactl, /dev/nvidia-uvm,
				    * /dev/nvidia-uvm-tools, /dev/nvidia-caps/nvidia-capN
				    * of its MIG slices), NULL-terminated; may be NULL */
	const char *cgroup_name;   /* NULL: "<alloc_id>.<name>", or without alloc_id
				    * "<basename of task_dir's parent>.<name>" */
	int64_t pids_max;          /* 0: no limit */

	/* CPU cores (every driver; docs/drivers.md, "CPU cores"): the task
	 * runs on exactly the cores of cpuset_cpus (list syntax "4-7,12";
	 * NULL: anywhere).  raw_exec and exec: the task shim sets its own
	 * affinity before it starts the task (sched_setaffinity, inherited);
	 * exec also writes its cgroup's cpuset (cpuset_mems: the NUMA nodes
	 * its memory comes from; NULL: any); docker: --cpuset-cpus /
	 * --cpuset-mems.  The agent passes only cores this machine has. */
	const char *cpuset_cpus;
	const char *cpuset_mems;
};

/* How a task ended. */
struct driver_exit {
	int exit_code;             /* 0..255 when exited; -1 when killed by a signal */
	int signal;                /* the signal that killed it, else 0 */
	bool oom_killed;           /* exec: the task's cgroup saw an OOM kill */
	bool lost;                 /* the shim vanished without a status: unknown */
	int64_t finished_ns;       /* CLOCK_REALTIME when the shim saw the exit */
};

/* What the agent persists to find a task again after a restart.  Plain
 * data: driver_state_to_json / driver_state_from_json carry it. */
struct driver_state {
	char driver[DRIVER_NAME_MAX];
	pid_t shim_pid;
	uint64_t shim_start_time;  /* /proc/<pid>/stat starttime: guards pid reuse */
	pid_t task_pid;            /* also the task's process group id */
	uint64_t task_start_time;
	char exit_file[DRIVER_PATH_MAX];
	char container_id[DRIVER_ID_MAX]; /* docker: the container; "" otherwise */
	char cgroup[DRIVER_CGROUP_MAX]; /* exec: the task's cgroup name; "" otherwise */
};

struct driver_handle;

/* One resource usage sample of a running task (docs/drivers.md says what
 * each driver counts).  Unknown fields are -1. */
struct driver_stats {
	int64_t memory_bytes;      /* resident memory now */
	int64_t memory_peak_bytes; /* the most it has used */
	int64_t memory_limit_bytes; /* the hard limit */
	int64_t cpu_total_ns;      /* CPU time (user + system) used so far */
	double cpu_percent;        /* over an interval the driver measured itself
				    * (docker's ~1 s sample), 100 = one core; -1:
				    * the caller computes it from two samples
				    * (driver_stats_cpu_percent) */
	int64_t sampled_at_ns;     /* CLOCK_REALTIME of the sample */
};

/* A host process as the agent's GPU memory attribution sees it
 * (driver_proc_read): which processes it descends from, its session and
 * its cgroups, so that each driver can say whether it is its task's
 * (driver_ops.owns).  Plain data. */
#define DRIVER_PROC_MAX_ANCESTORS 64
#define DRIVER_PROC_CGROUP_MAX 2048
struct driver_proc {
	pid_t pid;
	pid_t session;
	/* its parent, the parent's parent, ...: up to (not with) pid 1, at
	 * most DRIVER_PROC_MAX_ANCESTORS */
	pid_t ancestors[DRIVER_PROC_MAX_ANCESTORS];
	size_t nr_ancestors;
	/* /proc/<pid>/cgroup as the kernel wrote it ("hierarchy:controllers:
	 * path" lines; v2: one "0::/path"); "" when it could not be read, a
	 * longer file cut at a line's end */
	char cgroups[DRIVER_PROC_CGROUP_MAX];
};

/* Reads process pid under proc_root (NULL: /proc): its stat, the stat of
 * each ancestor, and its cgroup file.  Returns 0 with *out, -ESRCH when the
 * process is gone, -errno otherwise.  An ancestor that ends meanwhile cuts
 * the chain there. */
int driver_proc_read(const char *proc_root, pid_t pid, struct driver_proc *out);

/* Whether one of p's cgroups has a path component equal to name (exec:
 * the task's cgroup "<alloc>.<task>") or, with contains, a component that
 * contains name (docker: "docker-<id>.scope" or "<id>"). */
bool driver_proc_in_cgroup(const struct driver_proc *p, const char *name, bool contains);

struct driver_fingerprint {
	bool detected;             /* usable on this node: sets driver.<name> = 1 */
	bool healthy;
	char reason[256];          /* when not detected or not healthy */
};

struct driver_ops {
	const char *name;

	/* Whether the driver can run tasks here.  Never fails. */
	void (*fingerprint)(const struct driver_env *env, struct driver_fingerprint *out);

	/* Starts the task.  Returns 0 with *out (free with destroy), or -errno
	 * with err: -EPERM when the driver is disabled, -ENOENT/-EACCES/...
	 * when the command cannot be executed ("exec PATH: strerror"), -EINVAL
	 * for a bad task.  Nothing is left running on failure. */
	int (*start)(const struct driver_env *env, const struct driver_task *task,
		     struct driver_handle **out, struct herd_err *err);

	/* Waits up to timeout_ms (0: poll, -1: forever) for the task to end.
	 * Returns 1 with *exit filled, 0 when still running, -errno with err.
	 * Once it has returned 1 it returns 1 again with the same exit. */
	int (*wait)(struct driver_handle *h, int timeout_ms, struct driver_exit *exit,
		    struct herd_err *err);

	/* Sends sig to the task's whole process group (raw_exec: kill of the
	 * group; exec: to its init, which passes it on to the task's group;
	 * docker: the Engine API's kill with the signal).  Used by stop and
	 * for a user's `herd alloc signal`, from the thread that uses the
	 * handle.  Returns 0, -ESRCH when the task has ended, -ENOTSUP when the
	 * driver cannot deliver that signal (exec: one its init does not pass
	 * on), -errno otherwise (docker: the engine's refusal or absence). */
	int (*signal)(struct driver_handle *h, int sig);

	/* Stops the task: kill_signal to its process group, then SIGKILL to
	 * the group when it has not ended after kill_timeout_ns.  Returns 0
	 * with *exit once it has ended, -errno with err. */
	int (*stop)(struct driver_handle *h, int kill_signal, int64_t kill_timeout_ns,
		    struct driver_exit *exit, struct herd_err *err);

	/* Frees the handle (closes fds).  Does not stop the task: a task whose
	 * handle is destroyed keeps running and can be recovered.  NULL ok. */
	void (*destroy)(struct driver_handle *h);

	/* Finds a task again from persisted state.  Returns 0 with *out;
	 * -ESRCH when the shim is gone (then, if it left an exit status,
	 * *out is still returned and wait() reports that exit; otherwise the
	 * exit has lost = true), -errno with err for bad state. */
	int (*recover)(const struct driver_env *env, const struct driver_state *state,
		       struct driver_handle **out, struct herd_err *err);

	/* One usage sample of the task that state names (a live handle's
	 * state, or one persisted).  Reads only state and env: safe from any
	 * thread, also while another thread uses the task's handle.  Returns
	 * 0 with *out, -ESRCH when the task is no longer running, -errno with
	 * err (docker: engine unreachable).  May take about a second (docker). */
	int (*stats)(const struct driver_env *env, const struct driver_state *state,
		     struct driver_stats *out, struct herd_err *err);

	/* Moves the running task that state names onto the cores cpus (list
	 * syntax; NULL: every core this process may use): a task without
	 * cores of its own while other tasks reserve and free cores
	 * (docs/drivers.md, "CPU cores").  Reads only state and env, like
	 * stats.  raw_exec: the affinity of every thread of the processes of
	 * the task's session (one that left it keeps its mask); exec: its
	 * cgroup's cpuset (where there is none, its processes' affinity as
	 * raw_exec); docker: the engine's container update (CpusetCpus).
	 * Returns 0, -ESRCH when the task is not running, -errno with err. */
	int (*set_cores)(const struct driver_env *env, const struct driver_state *state,
			 const char *cpus, struct herd_err *err);

	/* Whether process p (driver_proc_read) is the running task's that
	 * state names: raw_exec: p is the task process, descends from it, or
	 * is in its session; exec: p is in the task's cgroup (or descends from
	 * its process); docker: p is in the container's cgroup.  Reads only
	 * its arguments (no I/O): the agent calls it for every GPU process
	 * and task it samples (docs/gpu-sharing.md, "GPU memory per task"). */
	bool (*owns)(const struct driver_state *state, const struct driver_proc *p);
};

/* CPU percent (100 = one core) between two samples of the same task:
 * the CPU time used over the wall time passed.  -1 when it cannot be said
 * (a field unknown, no time passed, or the counter went back: a restart). */
double driver_stats_cpu_percent(const struct driver_stats *prev, const struct driver_stats *cur);

/* The driver named name, or NULL. */
const struct driver_ops *driver_find(const char *name);

/* Every driver, NULL-terminated (for fingerprinting). */
extern const struct driver_ops *const driver_all[];

/* The persistable state of a handle (owned by the handle). */
const struct driver_state *driver_handle_state(const struct driver_handle *h);

/* An fd that becomes readable when the task's shim exits (a pidfd), for
 * the agent's event loop; then call wait(h, 0, ...).  Owned by the handle. */
int driver_handle_fd(const struct driver_handle *h);

/* State to/from a JSON text (a new string the caller frees / parsed into
 * *out).  from_json returns 0 or -EINVAL with err; *out untouched then. */
char *driver_state_to_json(const struct driver_state *s);
int driver_state_from_json(const char *text, struct driver_state *out, struct herd_err *err);

/* Signal names as job files write kill_signal (and `herd alloc signal
 * -s`): "SIGTERM", "TERM", "term", "15" (1..NSIG-1).  Returns the number,
 * or -EINVAL. */
int driver_signal_parse(const char *s);
/* "SIGUSR1" for a signal with a name, else "signal 40"; into buf. */
#define DRIVER_SIGNAL_NAME_MAX 24
const char *driver_signal_name(int sig, char buf[DRIVER_SIGNAL_NAME_MAX]);

/* ---- for driver implementations ---------------------------------------- */

/* How a driver signals and waits for its task, for driver_stop_escalate. */
struct driver_stop_steps {
	int (*signal)(struct driver_handle *h, int sig);
	int (*wait)(struct driver_handle *h, int timeout_ms, struct driver_exit *exit,
		    struct herd_err *err);
	void (*before_sigkill)(struct driver_handle *h); /* may be NULL */
};

/* The stop every driver does: kill_signal (SIGTERM when out of range), up
 * to kill_timeout_ns for the task to end, then SIGKILL and up to 10 s more.
 * Returns 0 once the task ended (exit filled by steps->wait), the wait's
 * -errno, or -ETIMEDOUT with err saying "<what> survived SIGKILL". */
int driver_stop_escalate(struct driver_handle *h, const struct driver_stop_steps *steps,
			 int kill_signal, int64_t kill_timeout_ns, const char *what,
			 struct driver_exit *exit, struct herd_err *err);

#endif
