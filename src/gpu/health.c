/* health: XID and ECC events from NVML; see gpu.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu-int.h"

#define WANTED_EVENTS (NVML_EVENT_XID_CRITICAL | NVML_EVENT_DOUBLE_BIT_ECC)

int gpu_host_watch(struct gpu_host *h, struct herd_err *err)
{
	struct gpu_host_priv *priv = h->priv;
	const struct nvml_lib *lib = &priv->lib;
	nvmlEventSet_t set = NULL;
	size_t registered = 0;
	nvmlReturn_t rc;

	if (!h->nvml_loaded)
		return herd_errf(err, -ENOTSUP, "no NVML, no GPU events");
	if (priv->events)
		return 0;
	rc = NVML_CALL(lib, nvmlEventSetCreate, &set);
	if (rc != NVML_SUCCESS)
		return herd_errf(err, nvml_absent(rc) ? -ENOTSUP : -EIO,
				 "cannot create an NVML event set: %s", nvml_lib_strerror(lib, rc));
	for (size_t i = 0; i < h->nr_gpus; i++) {
		unsigned long long supported = 0;
		/* Registering a type a GPU lacks fails the whole call, so ask first. */
		if (NVML_CALL(lib, nvmlDeviceGetSupportedEventTypes, priv->gpus[i], &supported) !=
		    NVML_SUCCESS)
			continue;
		if (!(supported & WANTED_EVENTS))
			continue;
		rc = NVML_CALL(lib, nvmlDeviceRegisterEvents, priv->gpus[i], supported & WANTED_EVENTS, set);
		if (rc == NVML_SUCCESS)
			registered++;
	}
	if (!registered) {
		NVML_CALL(lib, nvmlEventSetFree, set);
		return herd_errf(err, -ENOTSUP, "no GPU here reports XID or ECC events");
	}
	priv->events = set;
	return 0;
}

/* What NVIDIA's "XID Errors" guide says the most common XIDs mean. */
static const char *xid_meaning(unsigned long long xid)
{
	switch (xid) {
	case 13: return "graphics engine exception";
	case 31: return "GPU memory page fault";
	case 43: return "GPU stopped processing";
	case 45: return "preemptive cleanup";
	case 48: return "double-bit ECC error";
	case 61: case 62: return "internal micro-controller error";
	case 63: case 64: return "ECC page retirement or row remapping";
	case 68: return "video processor exception";
	case 74: return "NVLink error";
	case 79: return "GPU has fallen off the bus";
	case 92: return "high single-bit ECC error rate";
	case 94: return "contained ECC error";
	case 95: return "uncontained ECC error";
	case 109: return "context switch timeout";
	case 119: case 120: return "GSP error";
	case 999: return "unknown XID";
	default: return "see NVIDIA's XID catalogue";
	}
}

static size_t gpu_of_handle(const struct gpu_host *h, nvmlDevice_t dev)
{
	for (size_t i = 0; i < h->nr_gpus; i++)
		if (h->priv->gpus[i] == dev)
			return i;
	for (size_t i = 0; i < h->nr_devs; i++)
		if (h->devs[i].nvml == (void *)dev)
			return h->devs[i].gpu;
	return SIZE_MAX;
}

int gpu_host_wait_event(struct gpu_host *h, unsigned timeout_ms, struct gpu_event *ev,
			struct herd_err *err)
{
	struct gpu_host_priv *priv = h->priv;
	const struct nvml_lib *lib = &priv->lib;
	nvmlEventData_t data;
	struct gpu_event e;

	if (!priv->events)
		return herd_errf(err, -EINVAL, "not watching GPU events (gpu_host_watch first)");
	for (;;) {
		memset(&data, 0, sizeof(data));
		/* Drivers older than R470 write no instance ids: keep them "none". */
		data.gpuInstanceId = data.computeInstanceId = NVML_NO_INSTANCE_ID;
		nvmlReturn_t rc = NVML_CALL(lib, nvmlEventSetWait_v2, priv->events, &data, timeout_ms);
		if (rc == NVML_ERROR_TIMEOUT)
			return 0;
		if (rc != NVML_SUCCESS)
			return herd_errf(err, nvml_errno(rc), "waiting for GPU events: %s",
					 nvml_lib_strerror(lib, rc));
		memset(&e, 0, sizeof(e));
		e.gpu = gpu_of_handle(h, data.device);
		if (e.gpu == SIZE_MAX)
			continue; /* a GPU we left out */
		e.gpu_instance_id = data.gpuInstanceId == NVML_NO_INSTANCE_ID ? -1
					: (int64_t)data.gpuInstanceId;
		if (data.eventType & NVML_EVENT_XID_CRITICAL) {
			e.xid = data.eventData;
			e.critical = gpu_config_xid_is_critical(&h->cfg, e.xid);
			snprintf(e.reason, sizeof(e.reason), "XID %llu: %s", data.eventData,
				 xid_meaning(data.eventData));
		} else if (data.eventType & NVML_EVENT_DOUBLE_BIT_ECC) {
			e.double_bit_ecc = true;
			e.critical = true;
			snprintf(e.reason, sizeof(e.reason), "double-bit ECC error");
		} else {
			continue;
		}
		*ev = e;
		return 1;
	}
}

size_t gpu_host_apply_event(struct gpu_host *h, const struct gpu_event *ev)
{
	size_t marked = 0;
	if (!ev->critical)
		return 0;
	for (size_t i = 0; i < h->nr_devs; i++) {
		struct gpu_device *d = &h->devs[i];
		if (d->gpu != ev->gpu)
			continue;
		if (ev->gpu_instance_id >= 0 && d->mig_index >= 0 &&
		    d->mig_gpu_instance_id != ev->gpu_instance_id)
			continue;
		marked += gpu_device_mark_unhealthy(d, ev->reason);
	}
	return marked;
}
