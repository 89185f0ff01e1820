/* gpu: the GPUs of this machine, as NVML reports them.
 *
 * gpu_host_open loads NVML at run time (libnvidia-ml.so.1, or the simulator
 * src/gpu/sim; see docs/gpus.md), fingerprints every GPU and turns it into
 * schedulable devices: a whole GPU, or each MIG instance of a GPU in MIG
 * mode (the parent is then not schedulable as a whole).  No driver is not an
 * error: the host has zero devices and a reason a caller prints once.
 *
 * Library code: nothing here prints or logs.  A struct gpu_host is not
 * thread-safe; the one exception is gpu_host_wait_event, which only reads
 * what gpu_host_open wrote and may run in its own thread while another
 * thread samples, as long as gpu_host_apply_event and gpu_host_sample (which
 * write device health) are serialised by the caller. */
#ifndef HERD_GPU_GPU_H
#define HERD_GPU_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define GPU_UUID_MAX 96
#define GPU_NAME_MAX 96
#define GPU_REASON_MAX 192
#define GPU_MAX_IGNORED_XIDS 64

/* What the agent's configuration (or the environment) says. */
struct gpu_config {
	/* NVML library to load instead of searching; NULL: search. */
	const char *library_path;
	/* XIDs that do not make a device unhealthy (application faults). */
	unsigned ignored_xids[GPU_MAX_IGNORED_XIDS];
	size_t nr_ignored_xids;
	/* -1: detect WSL2; 0/1: force (tests, odd kernels). */
	int wsl;
	/* Period of stats sampling, for the agent's timer. */
	int64_t stats_period_ns;
};

/* Fills cfg with the defaults: search for NVML, ignore XIDs 13, 31, 43, 45,
 * 68, 109 (those NVIDIA's Kubernetes device plugin ignores, caused by
 * applications rather than the GPU), detect WSL, sample stats every 10 s. */
void gpu_config_init(struct gpu_config *cfg);

/* Applies the environment over cfg: HERD_NVML_LIBRARY (path, wins over a
 * configured one), HERD_GPU_IGNORE_XIDS ("13,31,43" or "none"), HERD_GPU_WSL
 * ("0"/"1"), HERD_GPU_STATS_PERIOD (a duration, "10s").  cfg->library_path
 * then points into the environment.  Returns 0, or -EINVAL with err naming
 * the variable; cfg is unchanged on failure. */
int gpu_config_from_env(struct gpu_config *cfg, struct herd_err *err);

/* Parses a list of XIDs ("13, 31,43" or "none") into cfg's ignore list.
 * Returns 0, or -EINVAL/-ERANGE with err; cfg unchanged on failure. */
int gpu_config_set_ignored_xids(struct gpu_config *cfg, const char *list,
				struct herd_err *err);

/* True when an XID marks a device unhealthy under cfg. */
bool gpu_config_xid_is_critical(const struct gpu_config *cfg, uint64_t xid);

enum gpu_health { GPU_HEALTHY = 0, GPU_UNHEALTHY = 1 };

/* One attribute as scheduler constraints see it (${device.attr.NAME}). */
struct gpu_attr {
	char *name;
	char *value;
};

/* One schedulable device.  Integer fields are -1 and strings "" where the
 * driver does not know them (WSL2, consumer GPUs, MIG instances). */
struct gpu_device {
	char uuid[GPU_UUID_MAX];        /* "GPU-..." or "MIG-..." */
	char name[GPU_NAME_MAX];        /* NVML's name; MIG: "<model> MIG 1g.10gb" */
	char model[GPU_NAME_MAX];       /* the physical GPU's name */
	size_t gpu;                     /* index into gpu_host's physical GPUs */
	unsigned nvml_index;            /* NVML index of the physical GPU */
	int mig_index;                  /* -1 whole GPU; else MIG slot under parent */
	char parent_uuid[GPU_UUID_MAX]; /* MIG: the GPU's UUID */
	char mig_profile[32];           /* MIG: "1g.10gb" */
	int64_t mig_gpu_instance_id;
	int64_t mig_compute_instance_id;

	int64_t memory_mib;             /* total memory of the device */
	char pci_bus_id[32];            /* "00000000:17:00.0" (the parent's for MIG) */
	int64_t pci_device_id;          /* device << 16 | vendor, e.g. 0x233010de */
	int cc_major, cc_minor;         /* CUDA compute capability */
	char architecture[16];          /* "hopper", "ampere", ... */
	int64_t numa_node;
	char cpu_affinity[256];         /* CPUs near the GPU, "0-55,112-167" */
	int64_t power_limit_mw;
	int64_t max_sm_clock_mhz;
	int64_t max_mem_clock_mhz;
	int persistence_mode;           /* 1 on, 0 off, -1 unknown */
	int display_mode;
	int64_t sm_count;               /* streaming multiprocessors (MIG: of the slice) */
	bool simulated;                 /* reported by the simulated NVML */
	bool wsl;                       /* on a WSL2 guest */

	enum gpu_health health;
	char health_reason[GPU_REASON_MAX]; /* "" when healthy */

	/* Every known field above as a name/value string, sorted by name. */
	struct gpu_attr *attrs;
	size_t nr_attrs;

	void *nvml;         /* private: nvmlDevice_t of the device */
	void *nvml_parent;  /* private: nvmlDevice_t of the physical GPU */
};

/* Link between two devices, best first; labels as `nvidia-smi topo -m`. */
enum gpu_link {
	GPU_LINK_SELF,           /* "X" */
	GPU_LINK_SAME_GPU,       /* "MIG": instances of one GPU */
	GPU_LINK_NVLINK,         /* "NV<n>": n NVLinks, direct or through NVSwitch */
	GPU_LINK_BOARD,          /* "INT": one board (dual-GPU cards) */
	GPU_LINK_PCIE_SWITCH,    /* "PIX": one PCIe switch */
	GPU_LINK_PCIE_SWITCHES,  /* "PXB": several PCIe switches */
	GPU_LINK_HOST_BRIDGE,    /* "PHB": one PCIe host bridge */
	GPU_LINK_SAME_CPU,       /* "NODE": one CPU/NUMA node */
	GPU_LINK_CROSS_SOCKET,   /* "SYS": across sockets */
	GPU_LINK_UNKNOWN,        /* "?": the driver would not say (WSL2) */
};

struct gpu_host {
	bool nvml_loaded;
	char reason[512];          /* !nvml_loaded: why there are no GPUs */
	char library[4096];        /* the library loaded */
	bool simulated;            /* the library is the simulator */
	bool wsl;                  /* WSL2 guest */
	char driver_version[80];   /* "" unknown */
	char cuda_version[16];     /* CUDA driver API version, "12.4" */

	struct gpu_device *devs;   /* schedulable devices, NVML order */
	size_t nr_devs;
	size_t nr_gpus;            /* physical GPUs fingerprinted */
	char **warnings;           /* GPUs skipped and why (lost, ...) */
	size_t nr_warnings;

	struct gpu_config cfg;     /* copy; library_path not kept */
	struct gpu_host_priv *priv;
};

/* Loads NVML per cfg (NULL: defaults) and fingerprints every GPU.  Never
 * fails: without NVML, nvml_loaded is false and reason says why.  A GPU
 * that cannot be read (fallen off the bus) is left out with a warning.  The
 * caller frees the host with gpu_host_free. */
struct gpu_host *gpu_host_open(const struct gpu_config *cfg);

/* Unloads NVML and frees everything; accepts NULL. */
void gpu_host_free(struct gpu_host *h);

/* The link between devices a and b (indexes into h->devs); with NVLink,
 * *nvlinks (may be NULL) receives the number of links, else 0. */
enum gpu_link gpu_host_link(const struct gpu_host *h, size_t a, size_t b, unsigned *nvlinks);

/* Writes the label of a link ("NV18", "PIX", ...) into buf; returns buf. */
char *gpu_link_label(enum gpu_link link, unsigned nvlinks, char *buf, size_t size);

/* The value of attribute `name` of dev, or NULL when absent. */
const char *gpu_device_attr(const struct gpu_device *dev, const char *name);

/* Cumulative stats of one device at one instant.  -1: not available. */
#define GPU_STATS_MAX_PROCS 64
struct gpu_proc {
	uint32_t pid;
	int64_t memory_mib;
};
struct gpu_stats {
	int64_t gpu_util;          /* percent (whole GPUs only; NVML has none per MIG) */
	int64_t memory_util;       /* percent */
	int64_t memory_used_mib;
	int64_t memory_total_mib;
	int64_t temperature_c;     /* MIG: the parent's */
	int64_t power_mw;          /* MIG: the parent's */
	int64_t ecc_corrected;     /* volatile counts since driver load */
	int64_t ecc_uncorrected;
	size_t nr_procs;
	bool procs_truncated;      /* more than GPU_STATS_MAX_PROCS */
	struct gpu_proc procs[GPU_STATS_MAX_PROCS];
};

/* Samples device `dev` (a few NVML calls, no allocation).  Returns 0 with
 * *out filled; -ENODEV when the GPU fell off the bus (the device is then
 * marked unhealthy with that reason); -EINVAL for a bad index; -EIO for
 * another NVML failure, with err.  *out is written only on success. */
int gpu_host_sample(struct gpu_host *h, size_t dev, struct gpu_stats *out,
		    struct herd_err *err);

/* A health event from NVML. */
struct gpu_event {
	size_t gpu;                 /* physical GPU (gpu_device.gpu) */
	int64_t gpu_instance_id;    /* MIG GPU instance, -1 when the whole GPU */
	uint64_t xid;               /* 0 when not an XID event */
	bool double_bit_ecc;
	bool critical;              /* makes the devices unhealthy under cfg */
	char reason[GPU_REASON_MAX];
};

/* Subscribes to XID and ECC events of every GPU.  Returns 0, or -ENOTSUP
 * when the driver offers no events (WSL2, no NVML), -EIO with err. */
int gpu_host_watch(struct gpu_host *h, struct herd_err *err);

/* Waits up to timeout_ms for one event.  Returns 1 with *ev filled, 0 on
 * timeout, -EINVAL when gpu_host_watch has not succeeded, -EIO with err. */
int gpu_host_wait_event(struct gpu_host *h, unsigned timeout_ms, struct gpu_event *ev,
			struct herd_err *err);

/* Marks the devices an event concerns unhealthy when it is critical: the
 * MIG instance named by gpu_instance_id, else every device of the GPU.
 * Returns the number of devices newly marked. */
size_t gpu_host_apply_event(struct gpu_host *h, const struct gpu_event *ev);

/* True when this is a WSL2 guest: `root` (NULL or "" for "/") has
 * proc/version or proc/sys/kernel/osrelease naming Microsoft or WSL, or
 * dev/dxg exists. */
bool gpu_detect_wsl(const char *root);

#endif
