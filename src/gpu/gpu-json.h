/* gpu-json: GPUs as JSON for `herd gpu list -json`, the agent's node
 * fingerprint and `herd node status` (field names in docs/gpus.md). */
#ifndef HERD_GPU_GPU_JSON_H
#define HERD_GPU_GPU_JSON_H

#include <jansson.h>

#include "gpu/gpu.h"

/* A device as a new JSON object: index, uuid, name, model, vendor, type,
 * memory_mib, mig_profile, parent_uuid, health, health_reason, simulated,
 * wsl, attributes {name: value}.  Never NULL. */
json_t *gpu_device_to_json(const struct gpu_device *dev, size_t index);

/* A sample as a new JSON object; absent values are left out. */
json_t *gpu_stats_to_json(const struct gpu_stats *s);

/* The host: nvml (loaded, library, reason, simulated, wsl, driver_version,
 * cuda_version), devices [...], warnings [...], and with `topology` a
 * matrix {"labels": [uuid...], "links": [["X","NV18"...]...]}.  stats, when
 * not NULL, holds one sample per device (an entry with a negative
 * memory_total_mib is left out).  Never NULL. */
json_t *gpu_host_to_json(const struct gpu_host *h, const struct gpu_stats *stats, bool topology);

#endif
