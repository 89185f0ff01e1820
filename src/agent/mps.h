/* mps: one NVIDIA MPS control daemon per GPU in mps mode, supervised.
 *
 * For every GPU the agent shares through MPS (agent_config_gpu_share), the
 * client runs `nvidia-cuda-mps-control -d` with
 *     CUDA_VISIBLE_DEVICES     the GPU's UUID (one daemon sees one GPU)
 *     CUDA_MPS_PIPE_DIRECTORY  <dir>/<uuid>/pipe
 *     CUDA_MPS_LOG_DIRECTORY   <dir>/<uuid>/log
 * (the rest of the agent's environment is passed on).  With -d the control
 * program forks the daemon and exits; the daemon's pid is read from
 * <pipe>/nvidia-cuda-mps-control.pid, where NVIDIA's daemon writes it, and
 * watched through a pidfd.  A daemon that dies is started again after a
 * backoff (doubling from backoff_min to backoff_max, back to backoff_min
 * once a daemon has stayed up for a minute).  mps_stop, and the start for
 * GPUs no longer in mps mode, tell a daemon to quit the documented way:
 * `echo quit | nvidia-cuda-mps-control` with the same environment; one
 * that is still there 5 seconds later gets SIGTERM.
 *
 * A daemon left running by an earlier agent (its pid file names a live
 * process whose command line names the control program) is adopted, not
 * started twice: tasks of the earlier agent keep their MPS server.
 *
 * Every child is started with posix_spawn; every fd herd opens is
 * close-on-exec; a launcher that hangs is killed after 10 seconds.
 * Messages go to the agent log (log.h). */
#ifndef HERD_AGENT_MPS_H
#define HERD_AGENT_MPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct mps_options {
	const char *control;     /* path of nvidia-cuda-mps-control; required */
	const char *dir;         /* the daemons' directories go under it; required */
	int64_t poll_ns;         /* how often daemons are checked; 0: 200 ms */
	int64_t backoff_min_ns;  /* first restart delay; 0: 1 s */
	int64_t backoff_max_ns;  /* 0: 30 s */
};

struct mps;

/* Makes the directories, starts (or adopts) a daemon for each of the n
 * GPU UUIDs, tells daemons under o->dir whose GPU is not among them to
 * quit (the GPU left mps mode), and starts the watcher thread.  A daemon
 * that fails to start is not an error here: it is logged and retried with
 * backoff.  Returns 0 with *out (stop with mps_stop), or -errno with err
 * when o->dir cannot be made or an option is missing.  n may be 0. */
int mps_start(const struct mps_options *o, const char *const *uuids, size_t n,
	      struct mps **out, struct herd_err *err);

/* The directories of the daemon of GPU uuid, for a task's environment
 * (valid until mps_stop).  Returns 0, -ENOENT when the GPU is not run in
 * mps mode, or -EAGAIN when its daemon is not running right now (being
 * restarted): a task started then would run outside MPS, without limits. */
int mps_dirs(struct mps *m, const char *uuid, const char **pipe_dir, const char **log_dir);

/* The daemon's pid (0 when not running) and how often it was started
 * (adoption counts as a start); for status and tests. */
pid_t mps_daemon_pid(struct mps *m, const char *uuid);
unsigned mps_starts(struct mps *m, const char *uuid);

/* Stops the watcher, tells every daemon to quit and waits for it (see
 * above), frees m.  Accepts NULL. */
void mps_stop(struct mps *m);

#endif
