/* cgroup: one control group per task, on cgroup v1 or v2.
 *
 * Layout (docs/drivers.md):
 *   v2: <root>/<parent>/<name>            e.g. /sys/fs/cgroup/herd.slice/<alloc>.<task>
 *   v1: <root>/<ctrl>/<parent>/<name>     for ctrl in memory cpu cpuacct pids devices
 *                                         freezer cpuset (those mounted), parent "herd"
 *
 * Limits, as Nomad applies them:
 *   memory_max set (> memory): `memory` is the reservation (v2 memory.low,
 *     v1 memory.soft_limit_in_bytes) and `memory_max` the hard limit;
 *   memory_max unset: `memory` is the hard limit (v2 memory.max, v1
 *     memory.limit_in_bytes).  No swap beyond the hard limit where the
 *     kernel lets us say so (v2 memory.swap.max = 0, v1 memsw = hard limit).
 *   cpu: resources.cpu in MHz is the relative weight: v1 cpu.shares = MHz
 *     (at least 2), v2 cpu.weight = 1 + (shares - 2) * 9999 / 262142 (the
 *     shares-to-weight mapping of the OCI runtimes), clamped to 1..10000.
 *   pids: pids.max.
 *   cpuset: the task's cores (cpuset_cpus, list syntax) and the NUMA nodes
 *     of their memory (cpuset_mems), where the cpuset controller is there:
 *     v2 cpuset.cpus / cpuset.mems of the group (the controller is enabled
 *     for herd's groups where the root offers it; unset files inherit the
 *     parent's); v1 the same files in the cpuset hierarchy, where a group's
 *     cpus and mems start empty and a process cannot join until both are
 *     set: herd's parent groups get their parent's, and a group without
 *     cores of its own gets its parent's.  Without the controller nothing
 *     is written (the task shim's affinity still pins: docs/drivers.md).
 *   devices: only the standard character devices and the ones listed
 *     (cgroup_allow_devices), one list for both versions: v1 devices.deny
 *     "a", then devices.allow per rule; v2 an eBPF device program attached
 *     to the group (devfilter_bpf.h), freed by the kernel with the group.
 *
 * Killing (cgroup_kill): v2 writes cgroup.kill when the kernel has it, else
 * freezes (cgroup.freeze), SIGKILLs every pid in cgroup.procs and thaws;
 * v1 freezes through the freezer hierarchy, SIGKILLs every pid, thaws.  A
 * frozen group cannot fork, so nothing escapes between reading the list
 * and killing it.
 *
 * Library code: nothing here prints; errors are -errno with err. */
#ifndef HERD_DRIVERS_CGROUP_H
#define HERD_DRIVERS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define CGROUP_V1_CONTROLLERS 7   /* memory cpu cpuacct pids devices freezer cpuset */

struct cgroup_config {
	const char *root;    /* the cgroup mount: NULL "/sys/fs/cgroup" */
	int version;         /* 1 or 2; 0: detect under root */
	const char *parent;  /* NULL: "herd.slice" (v2) or "herd" (v1) */
};

struct cgroup_limits {
	int64_t memory_bytes;      /* resources.memory; 0: none */
	int64_t memory_max_bytes;  /* resources.memory_max; 0: none (memory is the hard limit) */
	int64_t cpu_mhz;           /* resources.cpu; 0: leave the default weight */
	int64_t pids_max;          /* 0: no limit */
	const char *cpuset_cpus;   /* cores, "0-3,8"; NULL: the parent's */
	const char *cpuset_mems;   /* NUMA nodes, "0"; NULL: the parent's */
};

struct cgroup_stats {
	int64_t memory_current;    /* bytes; -1 when unknown */
	int64_t memory_peak;       /* bytes; -1 when unknown (v2 before 5.19) */
	int64_t cpu_usage_ns;      /* -1 when unknown */
	int64_t oom_kills;         /* OOM kills in the group so far; -1 unknown */
};

struct cgroup;

/* Which version is mounted at root (NULL: /sys/fs/cgroup): 2 when root is
 * a cgroup2 mount with controllers (cgroup.controllers non-empty), 1 when
 * root/memory exists, else 0.  A hybrid mount counts as 1. */
int cgroup_detect_version(const char *root);

/* Creates the group named name ([A-Za-z0-9_.-], no "."/"..") under the
 * parent, with the limits (NULL: none).  On v2 the parent gets the
 * memory, cpu and pids controllers enabled for its children where the
 * kernel offers them.  Returns 0 with *out (free with cgroup_free), or
 * -errno with err; nothing is left behind on failure.  An existing group of
 * that name is reused (a restarted task). */
int cgroup_create(const struct cgroup_config *cfg, const char *name,
		  const struct cgroup_limits *lim, struct cgroup **out, struct herd_err *err);

/* Opens an existing group (after an agent restart) without changing it.
 * Returns 0 with *out, -ENOENT when it does not exist, -errno with err. */
int cgroup_open(const struct cgroup_config *cfg, const char *name, struct cgroup **out,
		struct herd_err *err);

/* Frees the handle; the group stays.  NULL ok. */
void cgroup_free(struct cgroup *cg);

int cgroup_version(const struct cgroup *cg);

/* The group's directory (v1: the memory hierarchy's).  Owned by cg. */
const char *cgroup_path(const struct cgroup *cg);

/* The cgroup.procs files a process writes "0" into to join the group
 * (one for v2, one per mounted controller for v1), NULL-terminated, owned
 * by cg.  The exec driver's shim opens these before it enters its new
 * namespaces. */
const char *const *cgroup_procs_files(const struct cgroup *cg);

/* Moves pid into the group.  Returns 0 or -errno with err. */
int cgroup_add_pid(const struct cgroup *cg, pid_t pid, struct herd_err *err);

/* Restricts the group's devices to the standard ones (null zero full
 * random urandom tty ptmx, pts) plus the character or block device nodes
 * listed (host paths, stat()ed for major:minor), for every access (mknod,
 * read, write), even to root: v1 through the devices hierarchy, v2 by
 * attaching a BPF_CGROUP_DEVICE program (replacing one attached before).
 * Returns -errno with err for a path that is not a device, and when the
 * kernel cannot enforce the list (v1: no devices hierarchy; v2: no
 * CONFIG_CGROUP_BPF, or no CAP_BPF/CAP_SYS_ADMIN): the task must not start
 * then. */
int cgroup_allow_devices(const struct cgroup *cg, const char *const *paths, size_t n,
			 struct herd_err *err);

/* Sets the group's cores and memory nodes (list syntax; NULL: the
 * parent's) where the cpuset controller is there; returns 0 without
 * writing anything where it is not.  Used at creation (cgroup_limits) and
 * to move a running group onto other cores (the shared cores of tasks
 * without reserved cores).  Returns 0 or -errno with err (a core the
 * parent does not have: -EINVAL from the kernel). */
int cgroup_set_cpuset(const struct cgroup *cg, const char *cpus, const char *mems,
		      struct herd_err *err);

/* Whether the group has a cpuset to set (v2: its cpuset.cpus file; v1:
 * the cpuset hierarchy is mounted). */
bool cgroup_has_cpuset(const struct cgroup *cg);

/* Pids in the group (v1: the freezer's, else memory's), into *pids (the
 * caller frees) and *n.  Returns 0 or -errno. */
int cgroup_pids(const struct cgroup *cg, pid_t **pids, size_t *n);

/* SIGKILLs every process in the group and waits up to timeout_ms for the
 * group to be empty.  Returns 0 when empty, -ETIMEDOUT when processes
 * remain (stuck in D state), -errno with err. */
int cgroup_kill(const struct cgroup *cg, int timeout_ms, struct herd_err *err);

/* Reads usage and OOM kills (v2 memory.events oom_kill; v1 oom_kill of
 * memory.oom_control, kernels 4.13+).  Fields the kernel does not offer
 * are -1.  Returns 0 or -errno. */
int cgroup_stats(const struct cgroup *cg, struct cgroup_stats *out);

/* Removes the group (rmdir; v1 in every hierarchy).  The group must be
 * empty: kill it first.  Returns 0, -EBUSY while processes remain,
 * -errno with err.  A group already gone is not an error. */
int cgroup_remove(const struct cgroup *cg, struct herd_err *err);

#endif
