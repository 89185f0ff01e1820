/* host: loading NVML and fingerprinting every GPU; see gpu.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "gpu/gpu-int.h"

void gpu_host_warn(struct gpu_host *h, const char *fmt, ...)
{
	va_list ap;
	char buf[512];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	h->warnings = xreallocarray(h->warnings, h->nr_warnings + 1, sizeof(*h->warnings));
	h->warnings[h->nr_warnings++] = xstrdup(buf);
}

static void read_versions(struct gpu_host *h)
{
	const struct nvml_lib *lib = &h->priv->lib;
	char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	int cuda;

	if (NVML_CALL(lib, nvmlSystemGetDriverVersion, buf, sizeof(buf)) == NVML_SUCCESS)
		snprintf(h->driver_version, sizeof(h->driver_version), "%.*s", (int)sizeof(buf), buf);
	/* 12040 means CUDA 12.4 (nvmlSystemGetCudaDriverVersion_v2). */
	if (NVML_CALL(lib, nvmlSystemGetCudaDriverVersion_v2, &cuda) == NVML_SUCCESS && cuda > 0)
		snprintf(h->cuda_version, sizeof(h->cuda_version), "%d.%d", cuda / 1000,
			 (cuda % 1000) / 10);
}

struct gpu_host *gpu_host_open(const struct gpu_config *cfg)
{
	struct gpu_host *h = xcalloc(1, sizeof(*h));
	struct herd_err err = { 0 };
	unsigned count = 0;
	nvmlReturn_t rc;

	h->priv = xcalloc(1, sizeof(*h->priv));
	if (cfg)
		h->cfg = *cfg;
	else
		gpu_config_init(&h->cfg);
	const char *path = h->cfg.library_path;
	h->cfg.library_path = NULL; /* the caller's string may not outlive us */

	if (nvml_lib_open(&h->priv->lib, path, &err) < 0) {
		snprintf(h->reason, sizeof(h->reason), "%s", err.msg);
		h->wsl = h->cfg.wsl >= 0 ? h->cfg.wsl : gpu_detect_wsl(NULL);
		return h;
	}
	struct nvml_lib *lib = &h->priv->lib;
	h->nvml_loaded = true;
	h->simulated = lib->simulated;
	snprintf(h->library, sizeof(h->library), "%s", lib->path);
	/* The simulator stands in for the whole machine, WSL2 included. */
	if (h->cfg.wsl >= 0)
		h->wsl = h->cfg.wsl;
	else
		h->wsl = lib->simulated ? lib->sim_wsl : gpu_detect_wsl(NULL);
	read_versions(h);

	rc = lib->nvmlDeviceGetCount_v2(&count);
	if (rc != NVML_SUCCESS) {
		gpu_host_warn(h, "cannot count GPUs: %s", nvml_lib_strerror(lib, rc));
		count = 0;
	}
	for (unsigned i = 0; i < count; i++) {
		if (gpu_fingerprint_gpu(h, i, &err) < 0)
			gpu_host_warn(h, "gpu %u left out: %s", i, err.msg);
	}
	gpu_topology_build(h);
	for (size_t i = 0; i < h->nr_devs; i++)
		gpu_attrs_build(h, &h->devs[i]);
	return h;
}

void gpu_host_free(struct gpu_host *h)
{
	if (!h)
		return;
	struct gpu_host_priv *priv = h->priv;
	if (priv->events)
		NVML_CALL(&priv->lib, nvmlEventSetFree, priv->events);
	nvml_lib_close(&priv->lib);
	for (size_t i = 0; i < h->nr_devs; i++)
		gpu_attrs_release(&h->devs[i]);
	free(h->devs);
	for (size_t i = 0; i < h->nr_warnings; i++)
		free(h->warnings[i]);
	free(h->warnings);
	free(priv->gpus);
	free(priv->links);
	free(priv->nvlinks);
	free(priv);
	free(h);
}

enum gpu_link gpu_host_link(const struct gpu_host *h, size_t a, size_t b, unsigned *nvlinks)
{
	if (nvlinks)
		*nvlinks = 0;
	if (a >= h->nr_devs || b >= h->nr_devs)
		return GPU_LINK_UNKNOWN;
	if (a == b)
		return GPU_LINK_SELF;
	size_t ga = h->devs[a].gpu, gb = h->devs[b].gpu;
	if (ga == gb)
		return GPU_LINK_SAME_GPU;
	size_t k = ga * h->nr_gpus + gb;
	if (nvlinks)
		*nvlinks = h->priv->nvlinks[k];
	return h->priv->links[k];
}

char *gpu_link_label(enum gpu_link link, unsigned nvlinks, char *buf, size_t size)
{
	static const char *const labels[] = {
		[GPU_LINK_SELF] = "X", [GPU_LINK_SAME_GPU] = "MIG", [GPU_LINK_NVLINK] = "NV",
		[GPU_LINK_BOARD] = "INT", [GPU_LINK_PCIE_SWITCH] = "PIX",
		[GPU_LINK_PCIE_SWITCHES] = "PXB", [GPU_LINK_HOST_BRIDGE] = "PHB",
		[GPU_LINK_SAME_CPU] = "NODE", [GPU_LINK_CROSS_SOCKET] = "SYS",
		[GPU_LINK_UNKNOWN] = "?",
	};
	if (link == GPU_LINK_NVLINK)
		snprintf(buf, size, "NV%u", nvlinks);
	else
		snprintf(buf, size, "%s", (unsigned)link <= GPU_LINK_UNKNOWN ? labels[link] : "?");
	return buf;
}

bool gpu_device_mark_unhealthy(struct gpu_device *dev, const char *reason)
{
	if (dev->health == GPU_UNHEALTHY)
		return false;
	dev->health = GPU_UNHEALTHY;
	snprintf(dev->health_reason, sizeof(dev->health_reason), "%s", reason);
	return true;
}
