/* fingerprint: reading one GPU (and its MIG instances) through NVML.
 *
 * Every attribute but UUID and name is optional: NOT_SUPPORTED (WSL2,
 * consumer GPUs, MIG handles), FUNCTION_NOT_FOUND (old drivers) and any
 * other failure of one query leave that attribute absent.  Only
 * GPU_IS_LOST, or an unreadable UUID or name, drops the whole GPU. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "gpu/gpu-int.h"

#define MIB (1024ULL * 1024ULL)
#define CPUSET_WORDS 32 /* 2048 CPUs */

struct probe {
	const struct nvml_lib *lib;
	bool lost;
};

/* True when rc is success; remembers a lost GPU. */
static bool ok(struct probe *p, nvmlReturn_t rc)
{
	if (rc == NVML_ERROR_GPU_IS_LOST)
		p->lost = true;
	return rc == NVML_SUCCESS;
}

static void device_init(struct gpu_device *d)
{
	memset(d, 0, sizeof(*d));
	d->mig_index = -1;
	d->mig_gpu_instance_id = -1;
	d->mig_compute_instance_id = -1;
	d->memory_mib = -1;
	d->pci_device_id = -1;
	d->cc_major = d->cc_minor = -1;
	d->numa_node = -1;
	d->power_limit_mw = -1;
	d->max_sm_clock_mhz = -1;
	d->max_mem_clock_mhz = -1;
	d->persistence_mode = -1;
	d->display_mode = -1;
	d->sm_count = -1;
}

static const char *arch_name(unsigned arch)
{
	switch (arch) {
	case NVML_DEVICE_ARCH_KEPLER: return "kepler";
	case NVML_DEVICE_ARCH_MAXWELL: return "maxwell";
	case NVML_DEVICE_ARCH_PASCAL: return "pascal";
	case NVML_DEVICE_ARCH_VOLTA: return "volta";
	case NVML_DEVICE_ARCH_TURING: return "turing";
	case NVML_DEVICE_ARCH_AMPERE: return "ampere";
	case NVML_DEVICE_ARCH_ADA: return "ada";
	case NVML_DEVICE_ARCH_HOPPER: return "hopper";
	case NVML_DEVICE_ARCH_BLACKWELL: return "blackwell";
	default: return "";
	}
}

/* Older drivers lack nvmlDeviceGetNumaNodeId; the kernel knows the PCI
 * device's node.  Not for the simulator, whose bus ids are made up. */
static int64_t sysfs_numa_node(const char *bus_id)
{
	char id[32], path[128], buf[32];
	const char *p = bus_id;
	/* NVML writes an 8-digit PCI domain, sysfs a 4-digit one. */
	if (strlen(p) == 16 && !strncmp(p, "0000", 4))
		p += 4;
	size_t i;
	for (i = 0; p[i] && i < sizeof(id) - 1; i++)
		id[i] = (char)tolower((unsigned char)p[i]);
	id[i] = '\0';
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", id);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	long v = strtol(buf, NULL, 10);
	return v >= 0 ? v : -1;
}

void gpu_cpuset_format(const unsigned long *set, size_t nr_words, char *buf, size_t size)
{
	const size_t bits = sizeof(unsigned long) * 8;
	size_t len = 0, cpu = 0, total = nr_words * bits;
	buf[0] = '\0';
	while (cpu < total) {
		if (!(set[cpu / bits] & (1UL << (cpu % bits)))) {
			cpu++;
			continue;
		}
		size_t end = cpu;
		while (end + 1 < total && (set[(end + 1) / bits] & (1UL << ((end + 1) % bits))))
			end++;
		int n = end == cpu ? snprintf(buf + len, size - len, "%s%zu", len ? "," : "", cpu)
				   : snprintf(buf + len, size - len, "%s%zu-%zu", len ? "," : "", cpu, end);
		if (n < 0 || (size_t)n >= size - len) {
			buf[0] = '\0'; /* too long to be useful truncated */
			return;
		}
		len += (size_t)n;
		cpu = end + 1;
	}
}

/* Attributes of a physical GPU that its MIG instances share. */
static void read_gpu_fields(struct probe *p, const struct gpu_host *h, nvmlDevice_t d,
			    struct gpu_device *g)
{
	const struct nvml_lib *lib = p->lib;
	nvmlMemory_t mem;
	nvmlPciInfo_t pci;
	unsigned u;
	int a, b;
	unsigned long cpus[CPUSET_WORDS];

	if (ok(p, NVML_CALL(lib, nvmlDeviceGetMemoryInfo, d, &mem)))
		g->memory_mib = (int64_t)(mem.total / MIB);
	memset(&pci, 0, sizeof(pci));
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetPciInfo_v3, d, &pci))) {
		snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%.*s",
			 (int)sizeof(pci.busId), pci.busId);
		g->pci_device_id = pci.pciDeviceId;
	}
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetCudaComputeCapability, d, &a, &b))) {
		g->cc_major = a;
		g->cc_minor = b;
	}
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetArchitecture, d, &u)))
		snprintf(g->architecture, sizeof(g->architecture), "%s", arch_name(u));
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetNumaNodeId, d, &u)))
		g->numa_node = u;
	else if (!h->simulated && g->pci_bus_id[0])
		g->numa_node = sysfs_numa_node(g->pci_bus_id);
	memset(cpus, 0, sizeof(cpus));
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetCpuAffinity, d, CPUSET_WORDS, cpus)))
		gpu_cpuset_format(cpus, CPUSET_WORDS, g->cpu_affinity, sizeof(g->cpu_affinity));
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetPowerManagementLimit, d, &u)))
		g->power_limit_mw = u;
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetMaxClockInfo, d, NVML_CLOCK_SM, &u)))
		g->max_sm_clock_mhz = u;
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetMaxClockInfo, d, NVML_CLOCK_MEM, &u)))
		g->max_mem_clock_mhz = u;
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetPersistenceMode, d, &a)))
		g->persistence_mode = a == NVML_FEATURE_ENABLED;
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetDisplayMode, d, &a)))
		g->display_mode = a == NVML_FEATURE_ENABLED;
	g->simulated = h->simulated;
	g->wsl = h->wsl;
}

/* "NVIDIA A100-SXM4-80GB MIG 1g.10gb" -> "1g.10gb"; else from the slice
 * counts and memory as NVIDIA names profiles ("<c>c.<g>g.<mem>gb" when the
 * compute instance is smaller than its GPU instance). */
static void mig_profile(const char *name, const nvmlDeviceAttributes_t *attr, bool have_attr,
			char *buf, size_t size)
{
	const char *m = strstr(name, " MIG ");
	if (m) {
		snprintf(buf, size, "%s", m + 5);
		return;
	}
	if (!have_attr) {
		buf[0] = '\0';
		return;
	}
	unsigned long long gb = (attr->memorySizeMB + 1023) / 1024;
	if (attr->computeInstanceSliceCount &&
	    attr->computeInstanceSliceCount < attr->gpuInstanceSliceCount)
		snprintf(buf, size, "%uc.%ug.%llugb", attr->computeInstanceSliceCount,
			 attr->gpuInstanceSliceCount, gb);
	else
		snprintf(buf, size, "%ug.%llugb", attr->gpuInstanceSliceCount, gb);
}

static void append(struct gpu_host *h, const struct gpu_device *d)
{
	ALLOC_GROW(h->devs, h->nr_devs + 1, h->priv->devs_alloc);
	h->devs[h->nr_devs++] = *d;
}

/* Reads MIG slot j of GPU g; returns 1 with *m filled, 0 for an empty
 * slot or an unreadable instance (left out), -ENODEV when lost. */
static int read_mig(struct probe *p, nvmlDevice_t parent, unsigned j,
		    const struct gpu_device *g, struct gpu_device *m)
{
	const struct nvml_lib *lib = p->lib;
	nvmlDevice_t md;
	nvmlMemory_t mem;
	nvmlDeviceAttributes_t attr;
	unsigned u;

	if (!ok(p, NVML_CALL(lib, nvmlDeviceGetMigDeviceHandleByIndex, parent, j, &md)))
		return p->lost ? -ENODEV : 0;
	*m = *g;
	m->attrs = NULL;
	m->nr_attrs = 0;
	m->mig_index = (int)j;
	m->nvml = md;
	snprintf(m->parent_uuid, sizeof(m->parent_uuid), "%s", g->uuid);
	snprintf(m->model, sizeof(m->model), "%s", g->name);
	if (!ok(p, NVML_CALL(lib, nvmlDeviceGetUUID, md, m->uuid, sizeof(m->uuid))) ||
	    !ok(p, NVML_CALL(lib, nvmlDeviceGetName, md, m->name, sizeof(m->name))))
		return p->lost ? -ENODEV : 0;
	m->memory_mib = -1;
	m->sm_count = -1;
	bool have_attr = ok(p, NVML_CALL(lib, nvmlDeviceGetAttributes_v2, md, &attr));
	if (have_attr) {
		m->memory_mib = (int64_t)attr.memorySizeMB;
		m->sm_count = attr.multiprocessorCount;
	}
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetMemoryInfo, md, &mem)))
		m->memory_mib = (int64_t)(mem.total / MIB);
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetGpuInstanceId, md, &u)))
		m->mig_gpu_instance_id = u;
	if (ok(p, NVML_CALL(lib, nvmlDeviceGetComputeInstanceId, md, &u)))
		m->mig_compute_instance_id = u;
	mig_profile(m->name, &attr, have_attr, m->mig_profile, sizeof(m->mig_profile));
	return p->lost ? -ENODEV : 1;
}

int gpu_fingerprint_gpu(struct gpu_host *h, unsigned index, struct herd_err *err)
{
	struct gpu_host_priv *priv = h->priv;
	const struct nvml_lib *lib = &priv->lib;
	struct probe p = { lib, false };
	struct gpu_device g, *migs = NULL;
	size_t nr_migs = 0, migs_alloc = 0;
	nvmlDevice_t d;
	nvmlReturn_t rc;
	nvmlDeviceAttributes_t attr;
	unsigned cur, pending, max;
	int ret = 0;

	device_init(&g);
	rc = lib->nvmlDeviceGetHandleByIndex_v2(index, &d);
	if (rc != NVML_SUCCESS)
		return herd_errf(err, nvml_errno(rc), "no handle: %s", nvml_lib_strerror(lib, rc));
	rc = lib->nvmlDeviceGetUUID(d, g.uuid, sizeof(g.uuid));
	if (rc == NVML_SUCCESS)
		rc = lib->nvmlDeviceGetName(d, g.name, sizeof(g.name));
	if (rc == NVML_ERROR_GPU_IS_LOST)
		return herd_errf(err, -ENODEV, "it has fallen off the bus (GPU_IS_LOST)");
	if (rc != NVML_SUCCESS)
		return herd_errf(err, nvml_errno(rc), "cannot read UUID and name: %s",
				 nvml_lib_strerror(lib, rc));
	snprintf(g.model, sizeof(g.model), "%s", g.name);
	g.nvml_index = index;
	g.gpu = h->nr_gpus;
	g.nvml = d;
	g.nvml_parent = d;
	read_gpu_fields(&p, h, d, &g);
	if (ok(&p, NVML_CALL(lib, nvmlDeviceGetAttributes_v2, d, &attr)))
		g.sm_count = attr.multiprocessorCount;

	bool mig = ok(&p, NVML_CALL(lib, nvmlDeviceGetMigMode, d, &cur, &pending)) &&
		   cur == NVML_DEVICE_MIG_ENABLE;
	if (mig && ok(&p, NVML_CALL(lib, nvmlDeviceGetMaxMigDeviceCount, d, &max))) {
		for (unsigned j = 0; j < max && !p.lost; j++) {
			struct gpu_device m;
			if (read_mig(&p, d, j, &g, &m) == 1) {
				ALLOC_GROW(migs, nr_migs + 1, migs_alloc);
				migs[nr_migs++] = m;
			}
		}
	}
	if (p.lost) {
		ret = herd_errf(err, -ENODEV, "%s %s has fallen off the bus (GPU_IS_LOST)",
				g.name, g.uuid);
		goto out;
	}

	if (!mig) {
		append(h, &g);
	} else {
		if (!nr_migs)
			gpu_host_warn(h, "gpu %u (%s) is in MIG mode without MIG instances: "
				      "nothing to schedule on it", index, g.uuid);
		for (size_t j = 0; j < nr_migs; j++)
			append(h, &migs[j]);
	}
	priv->gpus = xreallocarray(priv->gpus, h->nr_gpus + 1, sizeof(*priv->gpus));
	priv->gpus[h->nr_gpus++] = d;
out:
	free(migs);
	return ret;
}
