/* taskenv: the environment of a task, and `${...}` interpolation.
 *
 * taskenv_build turns what the agent knows about one task (allocation,
 * directories, assigned GPUs, ports, node) into the task's complete
 * environment: the HERD_* variables, the matching NOMAD_* names (job files
 * written for Nomad keep working), GPU visibility, and the job's own `env`
 * with its values interpolated.  Nothing of the agent's own environment is
 * passed on except what is listed here (PATH gets a default).
 *
 * Variables (NOMAD_<X> has the same value as HERD_<X> unless noted):
 *   HERD_ALLOC_ID, HERD_SHORT_ALLOC_ID (first 8), HERD_ALLOC_NAME,
 *   HERD_ALLOC_INDEX, HERD_ALLOC_DIR, HERD_TASK_DIR, HERD_SECRETS_DIR,
 *   HERD_JOB_ID, HERD_JOB_NAME, HERD_GROUP_NAME, HERD_TASK_NAME,
 *   HERD_NAMESPACE, HERD_DC, HERD_REGION, HERD_CPU_LIMIT (MHz),
 *   HERD_MEMORY_LIMIT (MiB), HERD_CPU_CORES (the reserved cores of a task
 *   with resources { cores }, list syntax "4-7,12"; unset otherwise),
 *   HERD_PORT_<label>, HERD_HOST_PORT_<label>,
 *   HERD_IP_<label>, HERD_ADDR_<label> ("ip:port"), HERD_META_<key>,
 *   HERD_GPU_IDS (the assigned UUIDs, comma separated; no NOMAD_ name),
 *   HERD_VOLUME_<NAME> (each host volume the task mounts, the name upper
 *   case: where the task reaches it; no NOMAD_ name).
 *   A member of a gang (a group with `gang = true`, docs/jobspec.md) also
 *   gets, with no NOMAD_ names (Nomad has no gangs): HERD_GANG_SIZE (the
 *   group's count), HERD_GANG_RANK (0..size-1, its HERD_ALLOC_INDEX),
 *   HERD_GANG_LEADER_IP (rank 0's node address), HERD_GANG_LEADER_PORT_<label>
 *   (each port of rank 0's allocation, the host port) and HERD_GANG_HOSTS
 *   (every member's node address in rank order, comma separated).
 *   Labels and keys: characters other than [A-Za-z0-9_] become '_'.
 *
 * GPU visibility: CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES list the
 * assigned UUIDs ("GPU-..." for whole GPUs, "MIG-..." for slices), comma
 * separated, in the order given.  With no GPU assigned, CUDA_VISIBLE_DEVICES
 * is "" (CUDA then enumerates no device) and NVIDIA_VISIBLE_DEVICES is
 * "void" (the NVIDIA container runtime then exposes none): a task that
 * asked for no GPU must never see all of them, which an unset variable
 * would mean.  The job's env cannot set these two, nor HERD_* / NOMAD_*:
 * that is an error, not a silent override.
 *
 * Shared GPUs (gpu_shares, docs/gpu-sharing.md): a task holding a fraction
 * of a GPU in mps mode also gets
 *   CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY   the GPU's MPS daemon
 *   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE  its compute share in percent, rounded
 *                                      up (250 thousandths: "25"); unset for
 *                                      a memory-only share
 *   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT   "<ordinal>=<N>M", its memory share;
 *                                      the ordinal is the device's place in
 *                                      CUDA_VISIBLE_DEVICES (NVIDIA's format
 *                                      "0=1G,1=512M"; by index, not UUID:
 *                                      limits set by UUID were not applied,
 *                                      see docs/gpu-sharing.md)
 * A timeslice share, a whole GPU and a MIG instance get visibility only.
 * These four names are reserved as well.
 *
 * Interpolation (taskenv_interpolate), for config, env and args:
 *   ${attr.NAME}      node attribute (kernel.name, cpu.arch, ...)
 *   ${node.unique.id} ${node.unique.name} ${node.datacenter}
 *   ${node.class} ${node.region} ${node.pool}
 *   ${meta.KEY}       node meta (client { meta { } })
 *   ${NAME}           a variable of the task env (HERD_*, NOMAD_*, job env)
 *   ${env.NAME}       the same, spelled as an explicit env lookup
 *   $${               a literal "${"
 * A reference that resolves to nothing is left as written (Nomad does the
 * same; a shell in the task may still expand it).  An unterminated "${" is
 * an error.
 *
 * Library code: nothing here prints. */
#ifndef HERD_AGENT_TASKENV_H
#define HERD_AGENT_TASKENV_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/fingerprint.h"
#include "common/err.h"

struct taskenv_port {
	const char *label;       /* network { port "http" { } } */
	const char *ip;          /* host address the port is on */
	int value;               /* port inside the task (== host port for raw_exec) */
	int host_value;          /* port on the host */
};

/* The node, for ${node.*}. */
struct taskenv_node {
	const char *id;
	const char *name;
	const char *datacenter;
	const char *node_class;
	const char *region;
	const char *pool;
};

/* How the task holds one of its GPUs (taskenv_input.gpu_shares[i] goes with
 * gpu_uuids[i]). */
struct taskenv_gpu_share {
	enum sched_sharing sharing;  /* the device's mode on this node */
	bool whole;                  /* the allocation holds the device whole */
	int32_t compute_milli;       /* the allocation's compute, thousandths */
	int64_t memory_mib;          /* the allocation's memory on it; 0: none asked */
	const char *mps_pipe_dir;    /* mps: the device's MPS daemon; required for */
	const char *mps_log_dir;     /* a fraction of an mps device */
};

/* The gang the task's allocation is a member of (from the allocation's
 * "gang" record, which the server writes when it places the members). */
struct taskenv_gang {
	int size;
	int rank;
	const char *leader_ip;                   /* NULL or "": 127.0.0.1 */
	const struct taskenv_port *leader_ports; /* label and host_value (or value) */
	size_t nr_leader_ports;
	const char *const *hosts;                /* size entries, in rank order */
};

struct taskenv_input {
	const char *alloc_id;      /* required */
	const char *alloc_name;    /* "job.group[0]"; NULL: omitted */
	int alloc_index;           /* -1: omitted */
	const char *namespace_;    /* NULL: "default" */
	const char *job_id;        /* required */
	const char *job_name;      /* NULL: job_id */
	const char *group;         /* required */
	const char *task;          /* required */
	const char *alloc_dir;     /* required */
	const char *task_dir;      /* required */
	const char *secrets_dir;   /* NULL: <task_dir>/secrets */
	int64_t cpu_mhz;           /* resources { cpu }; 0: omitted */
	int64_t memory_mib;        /* resources { memory }; 0: omitted */
	const char *cpu_cores;     /* the allocation's cores, "4-7,12"; NULL: none */
	const char *workload_token; /* identity { env }: HERD_TOKEN, NOMAD_TOKEN; NULL: none */
	/* named identities' tokens: HERD_TOKEN_<key>, NOMAD_TOKEN_<key> */
	const struct agent_kv *named_tokens;
	size_t nr_named_tokens;
	const char *server_addr;   /* with any token: HERD_ADDR, NOMAD_ADDR */

	const char *const *gpu_uuids;   /* assigned devices, in order */
	size_t nr_gpus;
	const struct taskenv_gpu_share *gpu_shares; /* nr_gpus entries; NULL: all
						     * held whole */

	const struct taskenv_port *ports;
	size_t nr_ports;

	const struct taskenv_gang *gang;          /* NULL: not a gang member */

	const struct taskenv_node *node;          /* may be NULL */
	const struct node_attr *attrs;            /* ${attr.*}; may be NULL */
	size_t nr_attrs;
	const struct agent_kv *node_meta;         /* ${meta.*} */
	size_t nr_node_meta;
	const struct agent_kv *task_meta;         /* job+group+task meta: HERD_META_* */
	size_t nr_task_meta;
	const struct agent_kv *env;               /* the job's env; values interpolated */
	size_t nr_env;
	/* host volumes the task mounts: key the group volume's name, value
	 * the path where the task reaches it (HERD_VOLUME_<NAME>) */
	const struct agent_kv *volumes;
	size_t nr_volumes;
};

struct taskenv;

/* Builds the environment.  Returns 0 with *out (free with taskenv_free), or
 * -EINVAL with err: a required field missing, a job env name that is not a
 * valid variable name or that is reserved (HERD_*, NOMAD_*, CUDA/NVIDIA
 * visibility, the CUDA_MPS_* above), an env value whose interpolation
 * fails, a fraction of an mps GPU without its daemon's directories, or
 * fractions of two mps GPUs with different daemons (one task talks to one
 * MPS control daemon). */
int taskenv_build(const struct taskenv_input *in, struct taskenv **out, struct herd_err *err);

void taskenv_free(struct taskenv *te);  /* accepts NULL */

/* The value of variable name, or NULL. */
const char *taskenv_get(const struct taskenv *te, const char *name);

/* "NAME=value" strings, sorted by name, NULL-terminated: an envp for
 * posix_spawn (driver_task.env).  Owned by te. */
const char *const *taskenv_envp(const struct taskenv *te);
size_t taskenv_count(const struct taskenv *te);

/* Interpolates s (see above) into a new string *out the caller frees.
 * Returns 0, or -EINVAL with err for an unterminated "${" (*out untouched). */
int taskenv_interpolate(const struct taskenv *te, const char *s, char **out,
			struct herd_err *err);

#endif
