/* sim-state: the simulated machine, as read from the JSON description named
 * by HERD_NVML_SIM (format: docs/gpu-sim.md).  Private to src/gpu/sim. */
#ifndef HERD_GPU_SIM_STATE_H
#define HERD_GPU_SIM_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/nvml-abi.h"

#define SIM_MAX_GPUS 64
#define SIM_MAX_MIG 8
#define SIM_MAX_PROCS 64
#define SIM_MAX_FAILS 32
#define SIM_CPU_WORDS 32
#define SIM_MAX_XIDS 256

/* "fail": {"nvmlDeviceGetPowerManagementLimit": "NOT_SUPPORTED"} */
struct sim_fail {
	char fn[64];
	nvmlReturn_t rc;
};

struct sim_proc {
	unsigned pid;
	unsigned long long memory_mib;
};

struct sim_mig {
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	char profile[32];
	unsigned long long memory_mib;
	unsigned long long memory_used_mib;
	unsigned sm_count;
	unsigned gi_slices, ci_slices;
	unsigned gpu_instance_id, compute_instance_id;
	struct sim_proc procs[SIM_MAX_PROCS];
	size_t nr_procs;
};

struct sim_gpu {
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	char pci_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
	unsigned pci_device_id;
	unsigned long long memory_mib, memory_used_mib;
	int cc_major, cc_minor;
	unsigned arch;
	int numa_node;                 /* -1: NOT_SUPPORTED */
	unsigned long cpus[SIM_CPU_WORDS];
	bool have_cpus;
	long power_limit_w, power_draw_w; /* -1: NOT_SUPPORTED */
	long max_sm_clock, max_mem_clock;
	int persistence, display;      /* -1: NOT_SUPPORTED */
	long sm_count;
	int nvlink_peers[NVML_NVLINK_MAX_LINKS];
	size_t nr_nvlink_peers;
	unsigned nvswitch_links;
	int pcie_switch, host_bridge;  /* -1: none */
	unsigned util_gpu, util_memory;
	long temperature_c;
	long long ecc_corrected, ecc_uncorrected; /* -1: NOT_SUPPORTED */
	bool events;                   /* supports XID/ECC events */
	bool lost;
	struct sim_proc procs[SIM_MAX_PROCS];
	size_t nr_procs;
	struct sim_fail fails[SIM_MAX_FAILS];
	size_t nr_fails;
	bool mig_enabled;
	struct sim_mig migs[SIM_MAX_MIG];
	size_t nr_migs;
};

struct sim_xid {
	int gpu;
	unsigned long long type;       /* NVML_EVENT_* */
	unsigned long long xid;
	unsigned gpu_instance_id;      /* NVML_NO_INSTANCE_ID: none */
};

struct sim_state {
	char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	int cuda_version;              /* 12040 */
	bool wsl;
	struct sim_fail fails[SIM_MAX_FAILS];
	size_t nr_fails;
	struct sim_gpu *gpus;
	size_t nr_gpus;
	struct sim_xid xids[SIM_MAX_XIDS];
	size_t nr_xids;
};

/* Reads the description at path into a new state.  Returns NULL with a
 * message in why (size bytes) when the file is missing or malformed. */
struct sim_state *sim_state_load(const char *path, char *why, size_t size);
void sim_state_free(struct sim_state *s);

/* "NOT_SUPPORTED" -> NVML_ERROR_NOT_SUPPORTED; -1 for an unknown name. */
int sim_error_code(const char *name);

#endif
