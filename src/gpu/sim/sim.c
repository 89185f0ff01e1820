/* sim: a simulated libnvidia-ml with the C ABI herd uses (nvml-abi.h).
 *
 * Driven by the JSON file named by HERD_NVML_SIM (docs/gpu-sim.md).  The
 * description is read at nvmlInit_v2 and re-read whenever the file changes
 * (inode, size or mtime), checked by the stats and event calls, so that a
 * test can change utilization, make a GPU fall off the bus or append an XID
 * while the agent runs.  Write the file atomically (temp + rename); a
 * description that does not parse leaves the previous one in force.
 *
 * Device handles point into static arrays indexed by GPU and MIG slot, so
 * they stay valid across re-reads. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpu/nvml-abi.h"
#include "gpu/sim/sim-state.h"

#define EXPORT __attribute__((visibility("default")))

struct sim_handle {
	int gpu;
	int mig; /* -1: the whole GPU */
};

struct nvmlEventSet_st {
	unsigned long long types[SIM_MAX_GPUS];
	size_t next_xid; /* events before this one were delivered */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned init_count;
static struct sim_state *state;
static char path[4096];
static struct stat seen;
static struct sim_handle gpu_handles[SIM_MAX_GPUS];
static struct sim_handle mig_handles[SIM_MAX_GPUS][SIM_MAX_MIG];

EXPORT const char *herd_nvml_sim_version(void);
EXPORT int herd_nvml_sim_wsl(void);

/* Every NVML function, declared with the signature herd resolves. */
#define SIM_DECLARE(ret, name, params) EXPORT ret name params;
NVML_FUNCTIONS(SIM_DECLARE)
#undef SIM_DECLARE

const char *herd_nvml_sim_version(void)
{
	return "herd-nvml-sim 1";
}

int herd_nvml_sim_wsl(void)
{
	pthread_mutex_lock(&lock);
	int wsl = state && state->wsl;
	pthread_mutex_unlock(&lock);
	return wsl;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Under lock: re-reads the description when the file changed. */
static void maybe_reload(void)
{
	struct stat st;
	char why[256];
	if (!state || stat(path, &st) < 0 || same_file(&st, &seen))
		return;
	struct sim_state *next = sim_state_load(path, why, sizeof(why));
	seen = st;
	if (!next)
		return; /* keep the last good description */
	sim_state_free(state);
	state = next;
}

static nvmlReturn_t find_fail(const struct sim_fail *f, size_t nr, const char *fn)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(f[i].fn, fn))
			return f[i].rc;
	return NVML_SUCCESS;
}

/* Calls WSL2 answers with NOT_SUPPORTED (as its driver does for NUMA,
 * topology, NVLink, persistence, ECC, process lists and events). */
static bool wsl_unsupported(const char *fn)
{
	static const char *const list[] = {
		"nvmlDeviceGetNumaNodeId", "nvmlDeviceGetCpuAffinity", "nvmlDeviceGetPersistenceMode",
		"nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetNvLinkState",
		"nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetComputeRunningProcesses_v3",
		"nvmlDeviceGetSupportedEventTypes", "nvmlDeviceRegisterEvents", "nvmlDeviceGetMigMode",
		"nvmlEventSetCreate",
	};
	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
		if (!strcmp(list[i], fn))
			return true;
	return false;
}

/* Under lock: checks that NVML is initialised, applies injected failures
 * (the GPU's, then the machine's) and WSL2's gaps. */
static nvmlReturn_t enter(const char *fn, const struct sim_gpu *g)
{
	nvmlReturn_t rc;
	if (!init_count || !state)
		return NVML_ERROR_UNINITIALIZED;
	if (g && (rc = find_fail(g->fails, g->nr_fails, fn)) != NVML_SUCCESS)
		return rc;
	if ((rc = find_fail(state->fails, state->nr_fails, fn)) != NVML_SUCCESS)
		return rc;
	if (state->wsl && wsl_unsupported(fn))
		return NVML_ERROR_NOT_SUPPORTED;
	if (g && g->lost)
		return NVML_ERROR_GPU_IS_LOST;
	return NVML_SUCCESS;
}

/* Under lock: the GPU (and MIG instance, or NULL) behind a handle. */
static nvmlReturn_t resolve(nvmlDevice_t dev, struct sim_gpu **g, struct sim_mig **m)
{
	struct sim_handle *h = (struct sim_handle *)dev;
	bool whole = h >= &gpu_handles[0] && h < &gpu_handles[SIM_MAX_GPUS];
	bool mig = h >= &mig_handles[0][0] && h < &mig_handles[0][0] + SIM_MAX_GPUS * SIM_MAX_MIG;
	if (!h || (!whole && !mig) || !state)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((size_t)h->gpu >= state->nr_gpus)
		return NVML_ERROR_GPU_IS_LOST; /* gone from the description */
	*g = &state->gpus[h->gpu];
	*m = NULL;
	if (h->mig >= 0) {
		if (!(*g)->mig_enabled || (size_t)h->mig >= (*g)->nr_migs)
			return NVML_ERROR_INVALID_ARGUMENT;
		*m = &(*g)->migs[h->mig];
	}
	return NVML_SUCCESS;
}

/* The prologue of every device call: lock, find the device, apply
 * failures.  `reload` re-reads a changed description first. */
#define DEVICE_CALL(dev, reload)                                       \
	struct sim_gpu *g = NULL;                                      \
	struct sim_mig *m = NULL;                                      \
	nvmlReturn_t rc;                                               \
	pthread_mutex_lock(&lock);                                     \
	if (reload && init_count)                                      \
		maybe_reload();                                        \
	rc = init_count ? resolve(dev, &g, &m) : NVML_ERROR_UNINITIALIZED; \
	if (rc == NVML_SUCCESS)                                        \
		rc = enter(__func__, g);                               \
	if (rc != NVML_SUCCESS)                                        \
		goto out;

#define DEVICE_RETURN \
out:                                                                   \
	pthread_mutex_unlock(&lock);                                   \
	return rc;

/* Calls a MIG handle does not answer (as real NVML). */
#define WHOLE_GPU_ONLY            \
	if (m) {                  \
		rc = NVML_ERROR_NOT_SUPPORTED; \
		goto out;         \
	}

static nvmlReturn_t copy_str(char *dst, unsigned len, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;
	pthread_mutex_lock(&lock);
	if (init_count == 0) {
		const char *p = getenv("HERD_NVML_SIM");
		char why[256];
		if (!p || !*p) {
			rc = NVML_ERROR_DRIVER_NOT_LOADED; /* nothing to simulate */
			goto out;
		}
		snprintf(path, sizeof(path), "%s", p);
		if (stat(path, &seen) < 0) {
			rc = NVML_ERROR_DRIVER_NOT_LOADED;
			goto out;
		}
		state = sim_state_load(path, why, sizeof(why));
		if (!state) {
			fprintf(stderr, "herd-nvml-sim: %s\n", why); /* the test author's typo */
			rc = NVML_ERROR_UNKNOWN;
			goto out;
		}
		rc = find_fail(state->fails, state->nr_fails, "nvmlInit_v2");
		if (rc != NVML_SUCCESS) {
			sim_state_free(state);
			state = NULL;
			goto out;
		}
		for (int i = 0; i < SIM_MAX_GPUS; i++) {
			gpu_handles[i] = (struct sim_handle){ i, -1 };
			for (int j = 0; j < SIM_MAX_MIG; j++)
				mig_handles[i][j] = (struct sim_handle){ i, j };
		}
	}
	init_count++;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;
	pthread_mutex_lock(&lock);
	if (!init_count)
		rc = NVML_ERROR_UNINITIALIZED;
	else if (--init_count == 0) {
		sim_state_free(state);
		state = NULL;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_NO_DATA: return "No Data";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = enter(__func__, NULL);
	if (rc == NVML_SUCCESS)
		rc = copy_str(version, length, state->driver_version);
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = enter(__func__, NULL);
	if (rc == NVML_SUCCESS)
		*version = state->cuda_version;
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = enter(__func__, NULL);
	if (rc == NVML_SUCCESS)
		*count = (unsigned)state->nr_gpus;
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = enter(__func__, NULL);
	if (rc == NVML_SUCCESS && index >= state->nr_gpus)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	if (rc == NVML_SUCCESS)
		rc = find_fail(state->gpus[index].fails, state->gpus[index].nr_fails, __func__);
	if (rc == NVML_SUCCESS)
		*device = (nvmlDevice_t)&gpu_handles[index];
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	DEVICE_CALL(device, false);
	if (m) {
		char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE + 40];
		snprintf(buf, sizeof(buf), "%s MIG %s", g->name, m->profile);
		rc = copy_str(name, length, buf);
	} else {
		rc = copy_str(name, length, g->name);
	}
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	DEVICE_CALL(device, false);
	rc = copy_str(uuid, length, m ? m->uuid : g->uuid);
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	DEVICE_CALL(device, true);
	unsigned long long total = m ? m->memory_mib : g->memory_mib;
	unsigned long long used = m ? m->memory_used_mib : g->memory_used_mib;
	if (used > total)
		used = total;
	memory->total = total << 20;
	memory->used = used << 20;
	memory->free = memory->total - memory->used;
	DEVICE_RETURN
}

static void fill_pci(const struct sim_gpu *g, const char *bus_id, nvmlPciInfo_t *pci)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;
	memset(pci, 0, sizeof(*pci));
	sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
	pci->domain = dom;
	pci->bus = bus;
	pci->device = dev;
	pci->pciDeviceId = g ? g->pci_device_id : 0x1af110de; /* NVSwitch */
	snprintf(pci->busId, sizeof(pci->busId), "%s", bus_id);
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", dom & 0xffff, bus,
		 dev, fn);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	DEVICE_CALL(device, false);
	fill_pci(g, g->pci_bus_id, pci);
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
	DEVICE_CALL(device, false);
	*major = g->cc_major;
	*minor = g->cc_minor;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int *arch)
{
	DEVICE_CALL(device, false);
	*arch = g->arch;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (g->numa_node < 0)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else
		*node = (unsigned)g->numa_node;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
				      unsigned long *cpuSet)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (!g->have_cpus) {
		rc = NVML_ERROR_NOT_SUPPORTED;
		goto out;
	}
	for (unsigned i = 0; i < cpuSetSize; i++)
		cpuSet[i] = i < SIM_CPU_WORDS ? g->cpus[i] : 0;
	DEVICE_RETURN
}

#define OPTIONAL_LONG(field, out, scale)                  \
	if ((field) < 0)                                  \
		rc = NVML_ERROR_NOT_SUPPORTED;            \
	else                                              \
		*(out) = (unsigned)((field) * (scale));

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	OPTIONAL_LONG(g->power_limit_w, limit, 1000)
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS) {
		OPTIONAL_LONG(g->max_sm_clock, clock, 1)
	} else if (type == NVML_CLOCK_MEM) {
		OPTIONAL_LONG(g->max_mem_clock, clock, 1)
	} else {
		rc = NVML_ERROR_NOT_SUPPORTED;
	}
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int *mode)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	OPTIONAL_LONG(g->persistence, (unsigned *)mode, 1)
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, int *display)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	OPTIONAL_LONG(g->display, (unsigned *)display, 1)
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
				  unsigned int *pendingMode)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	/* Only GPUs described with a "mig" object are MIG-capable. */
	bool capable = g->mig_enabled || g->nr_migs;
	if (!capable) {
		rc = NVML_ERROR_NOT_SUPPORTED;
		goto out;
	}
	*currentMode = *pendingMode = g->mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	*count = g->nr_migs > 7 ? (unsigned)g->nr_migs : 7; /* A100/H100: seven slices */
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
						 nvmlDevice_t *migDevice)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (!g->mig_enabled)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (index >= g->nr_migs)
		rc = NVML_ERROR_NOT_FOUND;
	else
		*migDevice = (nvmlDevice_t)&mig_handles[g - state->gpus][index];
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	DEVICE_CALL(device, false);
	if (!m)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		*id = m->gpu_instance_id;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
	DEVICE_CALL(device, false);
	if (!m)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		*id = m->compute_instance_id;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
	DEVICE_CALL(migDevice, false);
	if (!m)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		*device = (nvmlDevice_t)&gpu_handles[g - state->gpus];
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
	DEVICE_CALL(device, false);
	memset(attributes, 0, sizeof(*attributes));
	if (m) {
		attributes->multiprocessorCount = m->sm_count;
		attributes->gpuInstanceSliceCount = m->gi_slices;
		attributes->computeInstanceSliceCount = m->ci_slices;
		attributes->memorySizeMB = m->memory_mib;
	} else if (g->sm_count >= 0) {
		attributes->multiprocessorCount = (unsigned)g->sm_count;
		attributes->memorySizeMB = g->memory_mib;
	} else {
		rc = NVML_ERROR_NOT_SUPPORTED;
	}
	DEVICE_RETURN
}

/* The PCIe level between two GPUs from their switch, host bridge and NUMA
 * node in the description. */
static int pcie_level(const struct sim_gpu *a, const struct sim_gpu *b)
{
	if (a == b)
		return NVML_TOPOLOGY_INTERNAL;
	if (a->pcie_switch >= 0 && a->pcie_switch == b->pcie_switch)
		return NVML_TOPOLOGY_SINGLE;
	if (a->host_bridge >= 0 && a->host_bridge == b->host_bridge)
		return NVML_TOPOLOGY_HOSTBRIDGE;
	if (a->numa_node >= 0 && a->numa_node == b->numa_node)
		return NVML_TOPOLOGY_NODE;
	return NVML_TOPOLOGY_SYSTEM;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
						 int *pathInfo)
{
	struct sim_gpu *g2;
	struct sim_mig *m2;
	DEVICE_CALL(device1, false);
	WHOLE_GPU_ONLY
	rc = resolve(device2, &g2, &m2);
	if (rc == NVML_SUCCESS)
		rc = enter(__func__, g2);
	if (rc == NVML_SUCCESS)
		*pathInfo = pcie_level(g, g2);
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (!g->nr_nvlink_peers && !g->nvswitch_links)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else if (link >= NVML_NVLINK_MAX_LINKS)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		*isActive = link < g->nr_nvlink_peers + g->nvswitch_links ? NVML_FEATURE_ENABLED
									 : NVML_FEATURE_DISABLED;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
						 nvmlPciInfo_t *pci)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (link < g->nr_nvlink_peers) {
		int peer = g->nvlink_peers[link];
		if (peer < 0 || (size_t)peer >= state->nr_gpus)
			rc = NVML_ERROR_INVALID_ARGUMENT;
		else
			fill_pci(&state->gpus[peer], state->gpus[peer].pci_bus_id, pci);
	} else if (link < g->nr_nvlink_peers + g->nvswitch_links) {
		/* One NVSwitch per link, as on HGX boards; bus ids no GPU uses. */
		char bus[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
		snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0xE0 + (link - (unsigned)g->nr_nvlink_peers) % 4);
		fill_pci(NULL, bus, pci);
	} else {
		rc = NVML_ERROR_INVALID_ARGUMENT;
	}
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	DEVICE_CALL(device, true);
	WHOLE_GPU_ONLY /* NVML reports no utilization per MIG instance */
	utilization->gpu = g->util_gpu;
	utilization->memory = g->util_memory;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp)
{
	DEVICE_CALL(device, true);
	WHOLE_GPU_ONLY
	if (sensorType != NVML_TEMPERATURE_GPU)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		OPTIONAL_LONG(g->temperature_c, temp, 1)
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	DEVICE_CALL(device, true);
	WHOLE_GPU_ONLY
	OPTIONAL_LONG(g->power_draw_w, power, 1000)
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
					 unsigned long long *eccCounts)
{
	DEVICE_CALL(device, true);
	WHOLE_GPU_ONLY
	long long v = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? g->ecc_corrected
								    : g->ecc_uncorrected;
	if (v < 0)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else
		*eccCounts = (unsigned long long)v;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos)
{
	DEVICE_CALL(device, true);
	const struct sim_proc *procs = m ? m->procs : g->procs;
	size_t nr = m ? m->nr_procs : g->nr_procs;
	if (*infoCount < nr || (nr && !infos)) {
		*infoCount = (unsigned)nr;
		rc = nr ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		infos[i].pid = procs[i].pid;
		infos[i].usedGpuMemory = procs[i].memory_mib << 20;
		infos[i].gpuInstanceId = m ? m->gpu_instance_id : NVML_NO_INSTANCE_ID;
		infos[i].computeInstanceId = m ? m->compute_instance_id : NVML_NO_INSTANCE_ID;
	}
	*infoCount = (unsigned)nr;
	DEVICE_RETURN
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	if (!g->events)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else
		*eventTypes = NVML_EVENT_XID_CRITICAL | NVML_EVENT_DOUBLE_BIT_ECC | NVML_EVENT_SINGLE_BIT_ECC;
	DEVICE_RETURN
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = enter(__func__, NULL);
	if (rc == NVML_SUCCESS) {
		*set = calloc(1, sizeof(**set));
		if (!*set)
			rc = NVML_ERROR_MEMORY;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
				      nvmlEventSet_t set)
{
	DEVICE_CALL(device, false);
	WHOLE_GPU_ONLY
	const unsigned long long all = NVML_EVENT_XID_CRITICAL | NVML_EVENT_DOUBLE_BIT_ECC |
				       NVML_EVENT_SINGLE_BIT_ECC;
	if (!set)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (!g->events || (eventTypes & ~all))
		rc = NVML_ERROR_NOT_SUPPORTED;
	else
		set->types[g - state->gpus] |= eventTypes;
	DEVICE_RETURN
}

/* Under lock: the next undelivered event for a registered GPU, if any. */
static bool next_event(nvmlEventSet_t set, nvmlEventData_t *data)
{
	while (set->next_xid < state->nr_xids) {
		const struct sim_xid *x = &state->xids[set->next_xid++];
		if (x->gpu < 0 || (size_t)x->gpu >= state->nr_gpus || !(set->types[x->gpu] & x->type))
			continue;
		data->device = (nvmlDevice_t)&gpu_handles[x->gpu];
		data->eventType = x->type;
		data->eventData = x->type == NVML_EVENT_XID_CRITICAL ? x->xid : 0;
		data->gpuInstanceId = x->gpu_instance_id;
		data->computeInstanceId = x->gpu_instance_id == NVML_NO_INSTANCE_ID ? NVML_NO_INSTANCE_ID : 0;
		return true;
	}
	return false;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pthread_mutex_lock(&lock);
		nvmlReturn_t rc = enter(__func__, NULL);
		if (rc == NVML_SUCCESS && !set)
			rc = NVML_ERROR_INVALID_ARGUMENT;
		if (rc == NVML_SUCCESS) {
			maybe_reload();
			if (!next_event(set, data))
				rc = NVML_ERROR_TIMEOUT;
		}
		pthread_mutex_unlock(&lock);
		if (rc != NVML_ERROR_TIMEOUT)
			return rc;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long ms = (now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms >= timeoutms)
			return NVML_ERROR_TIMEOUT;
		/* Poll the file every 100 ms: an agent waits here all its life, and
		 * tests still see an event within a moment. */
		struct timespec nap = { 0, 100 * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	free(set);
	return NVML_SUCCESS;
}
