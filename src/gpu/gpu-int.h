/* gpu-int: what the files of src/gpu share; private to this folder. */
#ifndef HERD_GPU_GPU_INT_H
#define HERD_GPU_GPU_INT_H

#include "gpu/gpu.h"
#include "gpu/nvml-lib.h"

struct gpu_host_priv {
	struct nvml_lib lib;
	nvmlDevice_t *gpus;        /* handle of each physical GPU, nr_gpus */
	enum gpu_link *links;      /* nr_gpus x nr_gpus, row-major */
	unsigned *nvlinks;         /* nr_gpus x nr_gpus NVLink counts */
	nvmlEventSet_t events;     /* NULL until gpu_host_watch */
	size_t devs_alloc;         /* slots allocated in h->devs */
};

/* Appends a copy of `fmt` to h->warnings. */
void gpu_host_warn(struct gpu_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fingerprints NVML GPU `index` and appends its devices (the GPU, or its MIG
 * instances) to h->devs.  Returns 0, or -errno with err when the GPU cannot
 * be read (then nothing was appended). */
int gpu_fingerprint_gpu(struct gpu_host *h, unsigned index, struct herd_err *err);

/* Fills h->priv->links/nvlinks for the fingerprinted GPUs. */
void gpu_topology_build(struct gpu_host *h);

/* (Re)builds dev->attrs from its typed fields and the host's. */
void gpu_attrs_build(const struct gpu_host *h, struct gpu_device *dev);
void gpu_attrs_release(struct gpu_device *dev);

/* Marks dev unhealthy with reason unless already unhealthy; returns whether
 * it changed. */
bool gpu_device_mark_unhealthy(struct gpu_device *dev, const char *reason);

/* Writes the CPU set as a range list ("0-3,8") into buf. */
void gpu_cpuset_format(const unsigned long *set, size_t nr_words, char *buf, size_t size);

#endif
