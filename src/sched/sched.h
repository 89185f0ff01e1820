/* sched: herd's placement engine.
 *
 * Pure and deterministic: no I/O, no clock, no globals.  Given the same
 * snapshot, request, policy and seed, the answer is the same.  The server
 * builds a snapshot from its state and asks for placements; `herd sim`
 * replays cluster traces through the very same calls.
 *
 * Model.  A snapshot holds nodes; a node holds CPU (thousandths of a core),
 * memory (MiB), attributes, and devices.  A device is a whole GPU or a MIG
 * instance (the agent lists a GPU in MIG mode as its instances, never as a
 * whole).  Each device has a profile (vendor, type, model, attributes:
 * Nomad's device group, shared by identical devices so that constraints are
 * evaluated once per profile), health, a sharing mode and what is taken of
 * it: compute in thousandths of a GPU, memory in MiB, tenants.
 *
 * Resource rules.  A whole-device ask takes devices that are completely free
 * (no compute, memory or tenant on them).  A fractional ask (compute below
 * 1000 or memory below the device's memory) lands only on devices whose
 * sharing mode is mps or timeslice, and only one device, and only while the
 * device has fewer tenants than its max_tenants.  Unhealthy devices
 * are never chosen.  Multi-device asks prefer devices joined by NVLink, then
 * devices on the same NUMA node, then the lowest indexes.
 *
 * Ownership: strings passed in are copied; every pointer returned points
 * into the snapshot and lives until sched_snapshot_free. */
#ifndef HERD_SCHED_H
#define HERD_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strbuf.h"

#define SCHED_MAX_DEVS_PER_NODE 64   /* devices (GPUs, MIG instances) per node */
#define SCHED_MAX_DEVS_PER_ASK  16   /* devices one allocation may take */
#define SCHED_MILLI 1000             /* a whole device in compute thousandths */
#define SCHED_MAX_CORES_PER_NODE 1024 /* reservable CPU cores per node */
#define SCHED_MAX_CORES_PER_ASK 256   /* cores one allocation may take */
#define SCHED_MAX_CORE_ASKS 16        /* tasks of a request that ask cores */

enum sched_sharing { SCHED_EXCLUSIVE, SCHED_MPS, SCHED_TIMESLICE };

/* Parses "exclusive", "mps", "timeslice"; -EINVAL otherwise. */
int sched_sharing_parse(const char *s, enum sched_sharing *out);

struct sched_kv {
	const char *key;
	const char *value;
};

/* A host volume (Nomad's): a node offers it by name, read-only or not; a
 * request asks for one by name, read_only false meaning a writable one. */
struct sched_volume {
	const char *name;
	bool read_only;
};

#define SCHED_MAX_VOLUMES 64   /* per node and per request */

/* A CPU core a node offers for reservation (resources { cores }): its id
 * (the kernel's CPU number) and NUMA node (-1 unknown). */
struct sched_core {
	int id;
	int numa;
};

/* ---- snapshot construction ------------------------------------------ */

struct sched_node_spec {
	const char *id;          /* unique; shown in explanations */
	const char *name;        /* ${node.unique.name}; NULL = id */
	const char *node_class;  /* ${node.class}; may be NULL */
	const char *datacenter;  /* ${node.datacenter}; may be NULL */
	int64_t cpu_milli;       /* schedulable CPU, thousandths of a core */
	int64_t memory_mib;      /* schedulable memory */
	int64_t cpu_used;        /* already taken by allocations not in the snapshot */
	int64_t memory_used;
	/* ephemeral disk (MiB) the node offers, and taken already; 0: not
	 * known, disk asks are not checked on the node */
	int64_t disk_mib;
	int64_t disk_used;
	const struct sched_kv *attrs; /* ${attr.KEY} */
	size_t nattrs;
	const struct sched_kv *meta;  /* ${meta.KEY} */
	size_t nmeta;
	const struct sched_volume *volumes; /* host volumes; names unique */
	size_t nvolumes;
	/* Reservable cores (ids unique, at most SCHED_MAX_CORES_PER_NODE);
	 * none: the node takes no request with cores.  cores_taken lists the
	 * ids held by allocations not in the snapshot (ids the node does not
	 * offer are ignored).  A reserved core counts cpu_per_core of
	 * cpu_milli (0: 1000). */
	const struct sched_core *cores;
	size_t ncores;
	const int *cores_taken;
	size_t ncores_taken;
	int64_t cpu_per_core;
};

struct sched_device_spec {
	const char *id;         /* "GPU-3", a UUID, or a MIG instance id */
	const char *vendor;     /* ${device.vendor}: "nvidia" */
	const char *type;       /* ${device.type}: "gpu" */
	const char *model;      /* ${device.model}: "A100-SXM4-40GB", "T4" */
	const struct sched_kv *attrs; /* ${device.attr.KEY} (memory, mig_profile, ...) */
	size_t nattrs;
	int64_t memory_mib;     /* the device's memory; 0 = unknown (then memory asks fail) */
	int numa_node;          /* -1 unknown */
	int nvlink_group;       /* devices of a node with the same group >= 0 are NVLink-joined; -1 none */
	bool unhealthy;
	/* Held for another job (the server's reservations): taken by nothing,
	 * offered to nothing, like an unhealthy device, but explained as
	 * reserved. */
	bool reserved;
	enum sched_sharing sharing;
	int32_t compute_taken;  /* thousandths already taken */
	int64_t memory_taken;   /* MiB already taken */
	int tenants;            /* allocations already on it */
	int max_tenants;        /* most allocations at once (the agent's replicas);
				 * 0 = no limit but compute and memory */
};

struct sched_snapshot;

struct sched_snapshot *sched_snapshot_new(void);
void sched_snapshot_free(struct sched_snapshot *s); /* accepts NULL */

/* Adds a node; returns its index (>= 0), or -EINVAL with err filled (empty
 * or duplicate id, negative amounts). */
int sched_snapshot_add_node(struct sched_snapshot *s, const struct sched_node_spec *spec,
			    struct herd_err *err);

/* Adds a device to node `node`; returns its index inside the node (>= 0) or
 * -EINVAL / -E2BIG with err filled (bad node, too many devices, taken more
 * than the device has). */
int sched_snapshot_add_device(struct sched_snapshot *s, int node,
			      const struct sched_device_spec *spec, struct herd_err *err);

size_t sched_snapshot_nodes(const struct sched_snapshot *s);
const char *sched_node_id(const struct sched_snapshot *s, int node);
int sched_node_ndevices(const struct sched_snapshot *s, int node);
const char *sched_device_id(const struct sched_snapshot *s, int node, int dev);
/* Compute thousandths still free on a device (0 for an unhealthy one). */
int32_t sched_device_compute_free(const struct sched_snapshot *s, int node, int dev);
int64_t sched_device_memory_free(const struct sched_snapshot *s, int node, int dev);
int sched_device_tenants(const struct sched_snapshot *s, int node, int dev);
int64_t sched_node_cpu_free(const struct sched_snapshot *s, int node);
int64_t sched_node_memory_free(const struct sched_snapshot *s, int node);
/* Sum of compute free over healthy devices of a node. */
int64_t sched_node_gpu_free(const struct sched_snapshot *s, int node);
/* Reservable cores of a node; core i's id and NUMA node (i < ncores), and
 * whether it is taken. */
int sched_node_ncores(const struct sched_snapshot *s, int node);
void sched_node_core(const struct sched_snapshot *s, int node, int i, struct sched_core *out,
		     bool *taken);
/* The cpu (thousandths) one reserved core of the node counts. */
int64_t sched_node_cpu_per_core(const struct sched_snapshot *s, int node);

/* ---- requests --------------------------------------------------------- */

/* Nomad's constraint operators. */
enum sched_op {
	SCHED_OP_EQ, SCHED_OP_NE, SCHED_OP_LT, SCHED_OP_LE, SCHED_OP_GT, SCHED_OP_GE,
	SCHED_OP_REGEXP, SCHED_OP_SET_CONTAINS, SCHED_OP_SET_CONTAINS_ANY,
	SCHED_OP_VERSION, SCHED_OP_SEMVER, SCHED_OP_IS_SET, SCHED_OP_IS_NOT_SET,
};

/* Parses "=", "==", "is", "!=", "not", "<", "<=", ">", ">=", "regexp",
 * "set_contains", "set_contains_all", "set_contains_any", "version",
 * "semver", "is_set", "is_not_set"; -EINVAL otherwise. */
int sched_op_parse(const char *s, enum sched_op *out);
const char *sched_op_name(enum sched_op op);

/* ltarget/rtarget are literals or "${...}" references: node ones
 * ${node.unique.id}, ${node.unique.name}, ${node.class}, ${node.datacenter},
 * ${attr.KEY}, ${meta.KEY}; device ones ${device.model}, ${device.vendor},
 * ${device.type}, ${device.ids}, ${device.attr.KEY}. */
struct sched_constraint {
	const char *ltarget;
	enum sched_op op;
	const char *rtarget;
};

struct sched_affinity {
	struct sched_constraint c;
	int weight; /* -100..100; negative means avoid */
};

/* Nomad's spread: prefer nodes whose value of attribute holds fewer of the
 * allocations counted for it than its share of sched_request.spread_desired
 * (see docs/scheduling.md, "Spread").  Targets give values their percent of
 * the desired count, the values without one share the rest; no targets
 * spread evenly over the values of the feasible nodes (and those already
 * holding allocations).  counts says how many allocations each value holds
 * already (values absent hold none); sched_plan adds its own placements. */
struct sched_spread_target {
	const char *value;
	int percent;  /* 0..100; a spread's percents sum to at most 100 */
};

struct sched_spread_count {
	const char *value;
	int count;    /* >= 0 */
};

#define SCHED_MAX_SPREADS 16 /* per request */

struct sched_spread {
	const char *attribute; /* a node reference: "${node.datacenter}", "${meta.rack}" */
	int weight;            /* -100..100, not 0; negative gathers instead of spreading */
	const struct sched_spread_target *targets;
	size_t ntargets;       /* 0: even */
	const struct sched_spread_count *counts;
	size_t ncounts;
};

struct sched_device_request {
	const char *name;  /* "gpu", "nvidia/gpu", "nvidia/gpu/T4": matches type, vendor/type, vendor/type/model */
	int count;         /* devices; >= 1 */
	int32_t compute;   /* thousandths per device; 0 or 1000 = whole unless memory is a fraction */
	int64_t memory_mib;/* per device; 0 = no memory ask */
	const struct sched_constraint *constraints;
	size_t nconstraints;
	const struct sched_affinity *affinities;
	size_t naffinities;
};

/* NUMA alignment of a task's reserved cores (resources { numa }). */
enum sched_numa {
	SCHED_NUMA_NONE,    /* any free cores, lowest ids first (near the GPUs when with_device) */
	SCHED_NUMA_PREFER,  /* like require when possible, else any (scored lower) */
	SCHED_NUMA_REQUIRE, /* all on one NUMA node (the GPUs' one when with_device), or no fit */
};

/* One task's exclusive cores. */
struct sched_core_request {
	int count;             /* >= 1 */
	enum sched_numa numa;
	/* the request's device ask is this task's GPUs: its cores go on their
	 * NUMA node (require, prefer) or, with none, there first */
	bool with_device;
};

struct sched_request {
	int64_t cpu_milli;
	int64_t memory_mib;
	int64_t disk_mib; /* ephemeral disk; 0: none.  A request with disk is
			   * never scored by groups of nodes */
	int count; /* instances for sched_plan; sched_place places one */
	const struct sched_constraint *constraints;
	size_t nconstraints;
	const struct sched_affinity *affinities;
	size_t naffinities;
	const struct sched_device_request *device; /* NULL: no device */
	/* host volumes every chosen node must have (writable unless the
	 * volume is read_only); a request with volumes is never scored by
	 * groups of nodes (sched_options.scan_all) */
	const struct sched_volume *volumes;
	size_t nvolumes;
	/* spreads (none for most requests: then nothing of them is computed);
	 * a request with spreads is never scored by groups of nodes */
	const struct sched_spread *spreads;
	size_t nspreads;
	int spread_desired; /* the count the targets' percents are of; 0: count */
	/* a node id (NULL: none) that wins whenever it fits: ephemeral_disk
	 * { sticky }'s replacement prefers the node of the allocation it
	 * replaces.  Its bonus, SCHED_PREFER_BONUS, is added to the node's
	 * score while choosing and left out of sched_placement.score. */
	const char *prefer_node;
	/* tasks that reserve cores (NULL: none); their cpu is not in
	 * cpu_milli: each core counts the chosen node's cpu_per_core.  A
	 * request with cores is never scored by groups of nodes. */
	const struct sched_core_request *cores;
	size_t ncores;
};

#define SCHED_PREFER_BONUS 1e9
/* What a NUMA-aligned placement of a `prefer` request adds to its score
 * (an affinity of full weight adds 100). */
#define SCHED_NUMA_BONUS 50.0

/* ---- policies --------------------------------------------------------- */

enum sched_policy {
	SCHED_HERD, SCHED_BINPACK, SCHED_SPREAD, SCHED_RANDOM, SCHED_DOTPROD,
	SCHED_CLUSTERING, SCHED_PACKING, SCHED_BESTFIT, SCHED_FGD,
	SCHED_NPOLICIES
};

/* "herd", "binpack", ... -> enum; -EINVAL for an unknown name. */
int sched_policy_parse(const char *s, enum sched_policy *out);
const char *sched_policy_name(enum sched_policy p);

/* The target workload that fgd and herd defragment for: task classes with
 * their frequencies (FGD's "typical pods").  Built by the caller, for
 * instance from recent history; see sched_workload_from_* in trace.h. */
struct sched_task_class {
	int64_t cpu_milli;
	int64_t memory_mib;
	int32_t gpu_milli; /* per device */
	int num_gpu;
	const char *gpu_spec; /* allowed models joined by '|', NULL/"" = any */
	double freq;          /* frequencies sum to 1 */
};

struct sched_workload; /* opaque, immutable once built */

/* Copies n classes; frequencies are renormalised to sum to 1. */
struct sched_workload *sched_workload_new(const struct sched_task_class *v, size_t n);
void sched_workload_free(struct sched_workload *w); /* accepts NULL */

struct sched_options {
	enum sched_policy policy;
	uint64_t seed;  /* random tie-breaking */
	const struct sched_workload *workload; /* fgd/herd; NULL = the request alone */
	int lookahead;  /* herd: candidates examined with a one-step lookahead; 0 = default */
	/* Tie-breaking among nodes with equal scores: NULL = uniformly at random
	 * (seeded); otherwise one rank per node of the snapshot and the lowest
	 * rank wins.  The FGD artifact breaks ties this way (its Kubernetes
	 * scheduler is patched to keep the smallest node name, and node names
	 * are prefixed with a per-run random permutation), so `herd sim` uses a
	 * seeded permutation to reproduce the published figures.  `random`
	 * ignores it (its scores are all equal by design). */
	const uint32_t *tie_rank;
	/* Score every node, never groups of identical nodes.  The answer is the
	 * same either way (tests and benchmarks compare the two).  Grouping is
	 * used when the score depends on the node's state alone (no node
	 * constraint or affinity, no device affinity, no ${device.ids}
	 * constraint; not `random`) and ties go by a fixed order (tie_rank, or
	 * herd's node order); then nodes in identical states (CPU, memory,
	 * hosted classes, every device's state) are scored once per group and
	 * on success *why holds only .nodes. */
	bool scan_all;
};

/* ---- placement -------------------------------------------------------- */

struct sched_device_share {
	int dev;          /* index inside the node */
	int32_t compute;  /* thousandths taken */
	int64_t memory_mib;
	bool whole;
};

struct sched_placement {
	int node;
	int64_t cpu_milli, memory_mib, disk_mib;
	int ndev;
	struct sched_device_share dev[SCHED_MAX_DEVS_PER_ASK];
	double score;
	double spread; /* the part of score that the request's spreads gave */
	/* reserved cores: positions in the node's core list (sched_node_core),
	 * the request's core asks' in order, count each */
	int ncores;
	uint16_t core[SCHED_MAX_CORES_PER_ASK];
};

#define SCHED_EXPLAIN_MISSES 5
#define SCHED_EXPLAIN_VOLUMES 8

/* Why nothing fits: how many nodes each step filtered, and the devices that
 * came closest. */
struct sched_explain {
	int nodes;               /* nodes in the snapshot */
	int filtered_constraint[16]; /* per request constraint (first 16) */
	int filtered_cpu, filtered_memory, filtered_disk;
	int filtered_device_constraint; /* no device of the asked name/constraints */
	int filtered_devices;    /* devices exist but not enough free */
	int filtered_no_cores;   /* cores asked, the node offers none */
	int filtered_cores;      /* not enough free cores (on one NUMA node) */
	/* per request volume (first 8), the nodes it filtered: without a
	 * volume of the name, or with a read-only one where a writable one
	 * was asked (a node counts under the first volume it lacks) */
	int filtered_volume_missing[SCHED_EXPLAIN_VOLUMES];
	int filtered_volume_read_only[SCHED_EXPLAIN_VOLUMES];
	int nmisses;
	char misses[SCHED_EXPLAIN_MISSES][128]; /* "GPU-3 on node-7: 6 GiB free, 8 GiB asked" */
	double miss_gap[SCHED_EXPLAIN_MISSES];  /* internal: how far each miss was */
};

/* Places one instance of req.  Returns 0 and fills *out (the snapshot is not
 * changed: call sched_apply to take it), -ENOSPC when nothing fits (then
 * *why, when not NULL, says why), or -EINVAL with err filled for a malformed
 * request (bad regexp, count out of range, unknown operator). */
int sched_place(struct sched_snapshot *s, const struct sched_request *req,
		const struct sched_options *opt, struct sched_placement *out,
		struct sched_explain *why, struct herd_err *err);

/* Takes a placement's resources in the snapshot, updating its indexes.
 * Returns -EINVAL if the placement does not fit (nothing changes then). */
int sched_apply(struct sched_snapshot *s, const struct sched_placement *p);

/* Gives back what sched_apply took.  Returns -EINVAL (and changes nothing)
 * if the placement was not taken. */
int sched_release(struct sched_snapshot *s, const struct sched_placement *p);

/* Places req->count instances one after another, applying each; out must
 * hold req->count entries.  Returns the number placed (all or -ENOSPC with
 * the earlier ones left applied and *why about the first that failed). */
int sched_plan(struct sched_snapshot *s, const struct sched_request *req,
	       const struct sched_options *opt, struct sched_placement *out,
	       struct sched_explain *why, struct herd_err *err);

/* Appends a person's reading of an explanation to sb (several lines). */
void sched_explain_format(const struct sched_explain *why, const struct sched_request *req,
			  struct strbuf *sb);

/* ---- measures --------------------------------------------------------- */

/* FGD's fragmentation (GPU milli) of one node, or of the whole snapshot
 * with node = -1, for workload w.  See docs/scheduling.md. */
double sched_frag(struct sched_snapshot *s, const struct sched_workload *w, int node);

#endif
