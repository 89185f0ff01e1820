/* topology: how every pair of GPUs is connected; see gpu.h (gpu_link).
 *
 * NVLink first: each active link's remote end is either another GPU (a
 * direct link, counted per peer) or an NVSwitch (HGX boards), in which case
 * every pair of switch-attached GPUs can talk over min(links) links.  Pairs
 * without NVLink get the PCIe level of nvmlDeviceGetTopologyCommonAncestor. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"
#include "gpu/gpu-int.h"

static enum gpu_link pcie_link(int level)
{
	switch (level) {
	case NVML_TOPOLOGY_INTERNAL: return GPU_LINK_BOARD;
	case NVML_TOPOLOGY_SINGLE: return GPU_LINK_PCIE_SWITCH;
	case NVML_TOPOLOGY_MULTIPLE: return GPU_LINK_PCIE_SWITCHES;
	case NVML_TOPOLOGY_HOSTBRIDGE: return GPU_LINK_HOST_BRIDGE;
	case NVML_TOPOLOGY_NODE: return GPU_LINK_SAME_CPU;
	case NVML_TOPOLOGY_SYSTEM: return GPU_LINK_CROSS_SOCKET;
	default: return GPU_LINK_UNKNOWN;
	}
}

void gpu_topology_build(struct gpu_host *h)
{
	struct gpu_host_priv *priv = h->priv;
	const struct nvml_lib *lib = &priv->lib;
	size_t n = h->nr_gpus;
	char (*bus)[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE] = xcalloc(n ? n : 1, sizeof(*bus));
	unsigned *to_switch = xcalloc(n ? n : 1, sizeof(*to_switch));
	unsigned *nv = xcalloc(n * n + 1, sizeof(*nv));

	priv->links = xcalloc(n * n + 1, sizeof(*priv->links));
	priv->nvlinks = xcalloc(n * n + 1, sizeof(*priv->nvlinks));
	for (size_t i = 0; i < n; i++) {
		nvmlPciInfo_t pci;
		memset(&pci, 0, sizeof(pci));
		if (NVML_CALL(lib, nvmlDeviceGetPciInfo_v3, priv->gpus[i], &pci) == NVML_SUCCESS)
			memcpy(bus[i], pci.busId, sizeof(bus[i]) - 1);
	}
	for (size_t i = 0; i < n; i++) {
		for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			int active = 0;
			nvmlPciInfo_t pci;
			nvmlReturn_t rc = NVML_CALL(lib, nvmlDeviceGetNvLinkState, priv->gpus[i], l, &active);
			if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
			    rc == NVML_ERROR_INVALID_ARGUMENT)
				break; /* no NVLink, or no more links */
			if (rc != NVML_SUCCESS || active != NVML_FEATURE_ENABLED)
				continue;
			memset(&pci, 0, sizeof(pci));
			if (NVML_CALL(lib, nvmlDeviceGetNvLinkRemotePciInfo_v2, priv->gpus[i], l, &pci) !=
			    NVML_SUCCESS)
				continue;
			pci.busId[sizeof(pci.busId) - 1] = '\0';
			size_t j;
			for (j = 0; j < n; j++)
				if (j != i && bus[j][0] && !strcasecmp(bus[j], pci.busId))
					break;
			if (j < n)
				nv[i * n + j]++;
			else
				to_switch[i]++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			size_t k = i * n + j;
			if (i == j) {
				priv->links[k] = GPU_LINK_SELF;
				continue;
			}
			unsigned links = nv[i * n + j] > nv[j * n + i] ? nv[i * n + j] : nv[j * n + i];
			if (!links && to_switch[i] && to_switch[j])
				links = to_switch[i] < to_switch[j] ? to_switch[i] : to_switch[j];
			if (links) {
				priv->links[k] = GPU_LINK_NVLINK;
				priv->nvlinks[k] = links;
				continue;
			}
			int level = -1;
			if (j < i) {
				priv->links[k] = priv->links[j * n + i];
				continue;
			}
			if (NVML_CALL(lib, nvmlDeviceGetTopologyCommonAncestor, priv->gpus[i],
				      priv->gpus[j], &level) != NVML_SUCCESS)
				level = -1;
			priv->links[k] = pcie_link(level);
		}
	}
	free(bus);
	free(to_switch);
	free(nv);
}
