/* fingerprint: what this node is, as the scheduler sees it.
 *
 * node_fingerprint reads the machine (OS, kernel, CPU, memory, disk, WSL2,
 * cgroups) and returns typed fields plus the same facts as node attributes
 * named as Nomad names them, so that job constraints written for Nomad
 * (`${attr.kernel.name}`, `${attr.cpu.arch}`, ...) work unchanged:
 *
 *     kernel.name          "linux"                (proc/sys/kernel/ostype, lower case)
 *     kernel.version       "6.1.0-18-amd64"       (proc/sys/kernel/osrelease)
 *     kernel.arch          "x86_64"               (uname machine)
 *     cpu.arch             "amd64"                (Go's names: amd64, arm64, ...)
 *     cpu.numcores         "16"                   (sys/devices/system/cpu/online)
 *     cpu.frequency        "2400"                 (MHz; cpufreq max, else cpuinfo)
 *     cpu.totalcompute     "38400"                (numcores x frequency)
 *     cpu.modelname        "AMD EPYC 7R13 ..."    (proc/cpuinfo)
 *     memory.totalbytes    "67108864000"          (proc/meminfo MemTotal)
 *     os.name              "debian"               (etc/os-release ID)
 *     os.version           "12"                   (etc/os-release VERSION_ID)
 *     os.wsl               "true" / "false"       (gpu_detect_wsl)
 *     unique.hostname      "gpu-7"                (proc/sys/kernel/hostname)
 *     unique.storage.bytestotal / .bytesfree      (statvfs of the data dir)
 *     unique.cgroup.version "v1" / "v2"           (sys/fs/cgroup, proc/mounts)
 *     unique.cgroup.mountpoint "/sys/fs/cgroup"
 *     driver.<name>        "1"                    (node_fingerprint_set_driver)
 *     cpu.numa_nodes       "2"                    (NUMA nodes with online cores)
 *     numa.node.count      "2"                    (the same, as Nomad names it)
 *     numa.node<N>.cores   "0-55,112-167"         (node N's online cores)
 *
 * The CPU topology (cores, each with its NUMA node) comes from
 * sys/devices/system/cpu/online and sys/devices/system/node/node<N>/cpulist;
 * a core no node lists (a kernel without NUMA, a container hiding sysfs)
 * has NUMA node -1 ("unknown"), and then no NUMA attribute is set.  Without
 * the online list the cores are 0..processors-1 of proc/cpuinfo.  A GPU
 * simulation file can describe another machine's topology
 * (node_fingerprint_sim_cores, docs/gpu-sim.md).
 *
 * Every file is read under a configurable root, so tests point it at a
 * fake tree (tests/unit/agent/fixtures).  Facts that cannot be read are left
 * out of attrs (and their typed field is 0 / NULL), never guessed.
 *
 * Library code: nothing here prints. */
#ifndef HERD_AGENT_FINGERPRINT_H
#define HERD_AGENT_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct node_attr {
	char *name;
	char *value;
};

/* One online CPU core (a logical CPU, as the kernel numbers them). */
struct node_core {
	int id;
	int numa;                /* its NUMA node; -1 unknown */
};

struct node_fingerprint {
	char *hostname;          /* NULL when unknown */
	char *os_name;           /* "debian"; NULL when unknown */
	char *os_version;        /* "12" */
	char *os_pretty;         /* "Debian GNU/Linux 12 (bookworm)" */
	char *kernel_name;       /* "linux" */
	char *kernel_version;
	char *arch;              /* uname machine: "x86_64" */
	char *cpu_model;
	int cpu_cores;           /* online CPUs; 0 unknown */
	int64_t cpu_mhz;         /* max frequency of one core; 0 unknown */
	int64_t cpu_total_compute;  /* cores x MHz */
	int64_t memory_bytes;
	int64_t disk_total_bytes;   /* of the file system holding the data dir */
	int64_t disk_free_bytes;    /* available to unprivileged users */
	bool wsl;
	int cgroup_version;      /* 1, 2; 0 none found */
	char *cgroup_mountpoint; /* "/sys/fs/cgroup" (without root) */

	struct node_core *cores; /* online cores, sorted by id */
	size_t nr_cores;
	int numa_nodes;          /* NUMA nodes among cores' (0: unknown) */
	bool cores_simulated;    /* cores from a GPU simulation file */

	struct node_attr *attrs; /* sorted by name, names unique */
	size_t nr_attrs;
};

struct fingerprint_opts {
	const char *root;        /* where proc/, sys/ and etc/ are; NULL: "/" */
	const char *data_dir;    /* statvfs target (real path, not under root); NULL: skip */
	const char *arch;        /* NULL: uname(2); tests give one */
	int wsl;                 /* -1 detect (gpu_detect_wsl under root); 0/1 force */
};
#define FINGERPRINT_OPTS_INIT { NULL, NULL, NULL, -1 }

/* Fingerprints the node into a new struct the caller frees with
 * node_fingerprint_free.  Returns 0, or -errno with err when the root
 * itself cannot be read (no proc/ under it); missing single facts are not
 * errors. */
int node_fingerprint(const struct fingerprint_opts *opts, struct node_fingerprint **out,
		     struct herd_err *err);

void node_fingerprint_free(struct node_fingerprint *fp);  /* accepts NULL */

/* Sets attribute name to value (replacing it), keeping attrs sorted.  Used
 * by the agent for facts from elsewhere (driver.*, nvidia.*, herd.version). */
void node_fingerprint_set_attr(struct node_fingerprint *fp, const char *name,
			       const char *value);

/* Records a driver: sets "driver.<name>" = "1" when detected, removes it
 * otherwise (Nomad's convention: an undetected driver has no attribute). */
void node_fingerprint_set_driver(struct node_fingerprint *fp, const char *name, bool detected);

/* The value of attribute name, or NULL. */
const char *node_fingerprint_attr(const struct node_fingerprint *fp, const char *name);

/* Replaces fp's cores (and the NUMA attributes) with the topology that
 * the GPU simulation file at path describes in its "cpu" section:
 * {"cpu": {"numa_nodes": [{"id": 0, "cores": "0-55,112-167"}, ...]}}.
 * Returns 1 when it did, 0 when the file has no "cpu" section (fp
 * unchanged), -errno with err when the file cannot be read or the section
 * is malformed (a node without an id >= 0, a bad core list, a core in two
 * nodes); fp is unchanged then. */
int node_fingerprint_sim_cores(struct node_fingerprint *fp, const char *path,
			       struct herd_err *err);

/* The NUMA node of core id in fp (-1 when unknown or not a core of fp). */
int node_fingerprint_core_numa(const struct node_fingerprint *fp, int id);

/* Go's name for a uname machine ("x86_64" -> "amd64", "aarch64" ->
 * "arm64"); unknown names are returned as given. */
const char *fingerprint_go_arch(const char *machine);

#endif
