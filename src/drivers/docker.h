/* docker: tasks as Docker containers, through the Docker Engine API on its
 * unix socket (libcurl; no docker CLI at run time).  The ops table is
 * docker_ops (driver_find("docker")); this header adds the client config,
 * stats and garbage collection.  See docs/drivers.md, "docker".
 *
 * How start() uses struct driver_task (driver.h):
 *   name, env, task_dir, log_dir, state_dir, log_max_files/size: as raw_exec
 *     (command and args are ignored: they come from config);
 *   config: the task's `config` object (required: `image`);
 *   alloc_id: required, labels the container (herd.alloc_id) for recovery
 *     and garbage collection; alloc_dir: the shared <alloc>/alloc dir;
 *   memory_mb, memory_max_mb, cpu_mhz: limits; gpu_ids or
 *     NVIDIA_VISIBLE_DEVICES in env: the GPUs; ports/nports: `ports`;
 *   event/event_arg: "Downloading Image" progress.
 * Mounts: alloc_dir at /alloc, <task_dir>/local at /local, <task_dir>/secrets
 * at /secrets; HERD_/NOMAD_ ALLOC_DIR, TASK_DIR, SECRETS_DIR are rewritten to
 * those paths; PATH from env is dropped (the image's PATH applies).
 *
 * The container is named <task>-<alloc_id> and labelled herd.alloc_id,
 * herd.task and with what recover() needs to reopen the log files (so
 * driver_state carries only the container id).  When wait() has reported an
 * exit, destroy() removes the container (unless gc.container is off);
 * otherwise destroy() leaves it running for recover(). */
#ifndef HERD_DRIVERS_DOCKER_H
#define HERD_DRIVERS_DOCKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "drivers/driver.h"

#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"

/* How GPUs are handed to containers. */
enum docker_gpu_mode {
	DOCKER_GPU_AUTO,    /* CDI when the engine reports CDI spec dirs, else NVIDIA runtime */
	DOCKER_GPU_NVIDIA,  /* DeviceRequests {Driver:"nvidia", DeviceIDs:[uuids]} */
	DOCKER_GPU_CDI,     /* DeviceRequests {Driver:"cdi", DeviceIDs:["nvidia.com/gpu=<uuid>"]} */
};

/* The client's plugin "docker" { config { ... } }.  Zero-initialised means
 * the defaults below. */
struct docker_config {
	const char *socket;           /* NULL: DOCKER_DEFAULT_SOCKET */
	bool allow_privileged;        /* `privileged = true` refused unless set */
	bool volumes_enabled;         /* host paths outside the task dir in volumes/mount */
	const char *const *allow_caps; /* cap_add allow-list, NULL-terminated; NULL:
				       * docker's default set (docker_default_caps) */
	int64_t pull_timeout_ns;      /* whole pull; 0: 5 min (a task's
				       * image_pull_timeout overrides) */
	int64_t pull_activity_timeout_ns; /* no progress for this long aborts; 0: 2 min */
	int64_t request_timeout_ns;   /* ordinary API calls; 0: 30 s */
	bool keep_containers;         /* gc { container = false }: keep ended containers */
	bool gc_dangling_images;      /* docker_gc also prunes dangling images */
	enum docker_gpu_mode gpu_mode;
};

/* The ops table (also reachable as driver_find("docker")). */
extern const struct driver_ops docker_ops;

/* Docker's default capability set (as `docker run` grants), lower case
 * without CAP_, NULL-terminated: the default allow-list. */
extern const char *const docker_default_caps[];

struct docker_stats {
	int64_t memory_usage;         /* bytes, as the cgroup counts (cache included) */
	int64_t memory_rss;           /* bytes; -1 when the engine does not say */
	int64_t memory_limit;         /* bytes */
	uint64_t cpu_total_ns;        /* CPU time used since start */
	double cpu_percent;           /* over the engine's ~1 s sample, 100 = one core */
	int64_t read_ns;              /* CLOCK_REALTIME of the sample */
};

/* One stats sample of a running task (GET /containers/{id}/stats?stream=0;
 * takes about a second, the engine's sampling).  h must be a docker handle.
 * Returns 0 with *out, -ESRCH when the task has ended, -errno with err. */
int docker_stats(struct driver_handle *h, struct docker_stats *out, struct herd_err *err);

/* Removes (force) every container labelled herd.alloc_id whose allocation
 * is not in live_alloc_ids (n ids), and, when cfg->gc_dangling_images, the
 * engine's dangling images.  cfg may be NULL.  Returns the number of
 * containers removed, or -errno with err (engine unreachable). */
int docker_gc(const struct docker_config *cfg, const char *const *live_alloc_ids, size_t n,
	      struct herd_err *err);

#endif
