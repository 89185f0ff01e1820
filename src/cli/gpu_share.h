/* gpu_share: one line that sums up how a GPU is shared, for `herd gpu
 * status` and `herd node status` (defined in cmd_gpu.c):
 *     "mps 3/10 tenants, compute 75%, memory 30/80 GiB"
 * tenants/replicas ("3 tenants" when replicas is 0, no limit), the compute
 * taken in percent, the memory taken of the device's. */
#ifndef HERD_CLI_GPU_SHARE_H
#define HERD_CLI_GPU_SHARE_H

#include <jansson.h>

#include "common/strbuf.h"

/* Appends the summary of device (a node's device object: sharing,
 * replicas, memory_mib) holding tenants allocations that take
 * compute_milli and memory_mib of it. */
void gpu_share_summary(struct strbuf *sb, const json_t *device, long long tenants,
		       long long compute_milli, long long memory_mib);

#endif
