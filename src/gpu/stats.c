/* stats: one cheap sample of a device; see gpu.h.
 *
 * A handful of NVML queries into stack buffers, nothing allocated, so that
 * sampling 8 GPUs every 10 s stays far below 1% of a core (bench/). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu-int.h"

#define MIB (1024ULL * 1024ULL)
/* NVML's NVML_VALUE_NOT_AVAILABLE for unsigned long long fields (WDDM). */
#define NVML_VALUE_NOT_AVAILABLE_ULL 0xffffffffffffffffULL

int gpu_host_sample(struct gpu_host *h, size_t dev, struct gpu_stats *out,
		    struct herd_err *err)
{
	if (dev >= h->nr_devs)
		return herd_errf(err, -EINVAL, "no gpu device %zu (there are %zu)", dev, h->nr_devs);
	const struct nvml_lib *lib = &h->priv->lib;
	struct gpu_device *d = &h->devs[dev];
	nvmlDevice_t md = d->nvml, gd = d->nvml_parent;
	struct gpu_stats s;
	nvmlUtilization_t util;
	nvmlMemory_t mem;
	unsigned u;
	unsigned long long ull;
	nvmlProcessInfo_t procs[4 * GPU_STATS_MAX_PROCS];
	unsigned nr = sizeof(procs) / sizeof(procs[0]);
	nvmlReturn_t rc, lost = NVML_SUCCESS;

#define SAMPLE(call) ((rc = (call)) == NVML_ERROR_GPU_IS_LOST ? (lost = rc, 0) : rc == NVML_SUCCESS)
	s.gpu_util = s.memory_util = s.memory_used_mib = s.memory_total_mib = -1;
	s.temperature_c = s.power_mw = s.ecc_corrected = s.ecc_uncorrected = -1;
	s.nr_procs = 0;
	s.procs_truncated = false;

	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetUtilizationRates, md, &util))) {
		s.gpu_util = util.gpu;
		s.memory_util = util.memory;
	}
	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetMemoryInfo, md, &mem))) {
		s.memory_used_mib = (int64_t)(mem.used / MIB);
		s.memory_total_mib = (int64_t)(mem.total / MIB);
	}
	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetTemperature, gd, NVML_TEMPERATURE_GPU, &u)))
		s.temperature_c = u;
	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetPowerUsage, gd, &u)))
		s.power_mw = u;
	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetTotalEccErrors, gd, NVML_MEMORY_ERROR_TYPE_CORRECTED,
			     NVML_VOLATILE_ECC, &ull)))
		s.ecc_corrected = (int64_t)ull;
	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetTotalEccErrors, gd, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
			     NVML_VOLATILE_ECC, &ull)))
		s.ecc_uncorrected = (int64_t)ull;
	if (SAMPLE(NVML_CALL(lib, nvmlDeviceGetComputeRunningProcesses_v3, md, &nr, procs))) {
		s.procs_truncated = nr > GPU_STATS_MAX_PROCS;
		s.nr_procs = s.procs_truncated ? GPU_STATS_MAX_PROCS : nr;
		for (size_t i = 0; i < s.nr_procs; i++) {
			s.procs[i].pid = procs[i].pid;
			s.procs[i].memory_mib = procs[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ULL
				? -1 : (int64_t)(procs[i].usedGpuMemory / MIB);
		}
	} else if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
		s.procs_truncated = true; /* more than we sample; counts stay unknown */
	}
#undef SAMPLE
	if (lost != NVML_SUCCESS) {
		char why[GPU_REASON_MAX];
		snprintf(why, sizeof(why), "gpu has fallen off the bus (%s)",
			 nvml_lib_strerror(lib, lost));
		gpu_device_mark_unhealthy(d, why);
		return herd_errf(err, -ENODEV, "%s: %s", d->uuid, why);
	}
	memcpy(out, &s, sizeof(s));
	return 0;
}
