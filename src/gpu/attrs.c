/* attrs: a device's fields as name/value strings for constraints
 * (${device.attr.NAME}); see gpu.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "gpu/gpu-int.h"

struct attr_list {
	struct gpu_attr *v;
	size_t nr, alloc;
};

static void add(struct attr_list *l, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add(struct attr_list *l, const char *name, const char *fmt, ...)
{
	va_list ap;
	char buf[512];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	l->v[l->nr].name = xstrdup(name);
	l->v[l->nr].value = xstrdup(buf);
	l->nr++;
}

static void add_str(struct attr_list *l, const char *name, const char *v)
{
	if (v && *v)
		add(l, name, "%s", v);
}

static void add_int(struct attr_list *l, const char *name, int64_t v, const char *unit)
{
	if (v >= 0)
		add(l, name, "%lld%s%s", (long long)v, unit ? " " : "", unit ? unit : "");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct gpu_attr *)a)->name, ((const struct gpu_attr *)b)->name);
}

void gpu_attrs_release(struct gpu_device *dev)
{
	for (size_t i = 0; i < dev->nr_attrs; i++) {
		free(dev->attrs[i].name);
		free(dev->attrs[i].value);
	}
	free(dev->attrs);
	dev->attrs = NULL;
	dev->nr_attrs = 0;
}

void gpu_attrs_build(const struct gpu_host *h, struct gpu_device *d)
{
	struct attr_list l = { 0 };

	gpu_attrs_release(d);
	add_str(&l, "architecture", d->architecture);
	if (d->cc_major >= 0)
		add(&l, "compute_capability", "%d.%d", d->cc_major, d->cc_minor);
	add_str(&l, "cpu_affinity", d->cpu_affinity);
	add_str(&l, "cuda_version", h->cuda_version);
	if (d->display_mode >= 0)
		add_str(&l, "display_mode", d->display_mode ? "enabled" : "disabled");
	add_str(&l, "driver_version", h->driver_version);
	add_int(&l, "max_memory_clock", d->max_mem_clock_mhz, "MHz");
	add_int(&l, "max_sm_clock", d->max_sm_clock_mhz, "MHz");
	add_int(&l, "memory", d->memory_mib, "MiB");
	add_int(&l, "mig_compute_instance_id", d->mig_compute_instance_id, NULL);
	add_int(&l, "mig_gpu_instance_id", d->mig_gpu_instance_id, NULL);
	add_str(&l, "mig_profile", d->mig_profile);
	add_int(&l, "numa_node", d->numa_node, NULL);
	add_str(&l, "parent_uuid", d->parent_uuid);
	add_str(&l, "pci_bus_id", d->pci_bus_id);
	if (d->pci_device_id >= 0)
		add(&l, "pci_device_id", "0x%08llx", (long long)d->pci_device_id);
	if (d->persistence_mode >= 0)
		add_str(&l, "persistence_mode", d->persistence_mode ? "enabled" : "disabled");
	if (d->power_limit_mw >= 0)
		add(&l, "power_limit", "%lld W", (long long)(d->power_limit_mw / 1000));
	if (d->simulated)
		add_str(&l, "simulated", "true");
	add_int(&l, "sm_count", d->sm_count, NULL);
	if (d->wsl)
		add_str(&l, "wsl", "true");
	qsort(l.v, l.nr, sizeof(*l.v), by_name);
	d->attrs = l.v;
	d->nr_attrs = l.nr;
}

const char *gpu_device_attr(const struct gpu_device *dev, const char *name)
{
	struct gpu_attr key = { (char *)name, NULL };
	const struct gpu_attr *a = dev->nr_attrs ?
		bsearch(&key, dev->attrs, dev->nr_attrs, sizeof(key), by_name) : NULL;
	return a ? a->value : NULL;
}
