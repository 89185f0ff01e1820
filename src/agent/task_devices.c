/* task_devices: the host device nodes an isolated (exec) task may use:
 * /dev/nvidia<minor> of each GPU assigned to the task (a MIG slice
 * gives its parent GPU's node), plus the control nodes every CUDA program
 * needs (/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools).  Only
 * nodes that exist are listed (the exec driver binds each one and fails on
 * a missing one); a node the task was not given is never bound, so it is
 * invisible inside.
 *
 * The minor number is the driver's: /proc/driver/nvidia/gpus/<PCI bus id>/
 * information, "Device Minor: N"; without that file (simulated GPUs, no
 * driver) the NVML index, which is what the driver assigns on most
 * machines.
 *
 * A MIG slice also needs its capability device nodes: a process without
 * CAP_SYS_ADMIN opens a MIG instance only through
 * /dev/nvidia-caps/nvidia-cap<N> of its GPU instance and of its compute
 * instance (NVIDIA's MIG user guide, "Device Nodes and Capabilities").  N
 * comes from the driver's table /proc/driver/nvidia-caps/mig-minors, one
 * "NAME MINOR" per line, with names "gpu<GPU minor>/gi<GI id>/access" and
 * "gpu<GPU minor>/gi<GI id>/ci<CI id>/access" (the format Slurm's gpu/nvml
 * plugin, _nvml_get_mig_minor_numbers in src/plugins/gpu/nvml/gpu_nvml.c,
 * and nvidia-container-toolkit's internal/nvcaps read). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "common/xalloc.h"

static int minor_from_proc(const char *bus_id)
{
	char id[64], path[160], line[256];
	const char *s = bus_id;
	int minor = -1;
	FILE *f;

	/* NVML writes an 8-digit domain ("00000000:17:00.0"), the proc
	 * directory a 4-digit one in lower case ("0000:17:00.0"). */
	if (strlen(s) > 12 && !strncmp(s, "0000", 4))
		s += 4;
	snprintf(id, sizeof(id), "%s", s);
	for (char *p = id; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", id);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Device Minor:", 13)) {
			minor = (int)strtol(line + 13, NULL, 10);
			break;
		}
	fclose(f);
	return minor;
}

#define MIG_MINORS "/proc/driver/nvidia-caps/mig-minors"

int mig_cap_minor(FILE *table, unsigned gpu_minor, int64_t gi, int64_t ci)
{
	char want[96], line[256];
	if (gi < 0)
		return -1;
	if (ci < 0)
		snprintf(want, sizeof(want), "gpu%u/gi%lld/access", gpu_minor, (long long)gi);
	else
		snprintf(want, sizeof(want), "gpu%u/gi%lld/ci%lld/access", gpu_minor,
			 (long long)gi, (long long)ci);
	size_t len = strlen(want);
	rewind(table);
	while (fgets(line, sizeof(line), table)) {
		if (strncmp(line, want, len) || line[len] != ' ')
			continue;
		char *end;
		long v = strtol(line + len + 1, &end, 10);
		if (end == line + len + 1 || v < 0 || v > 1 << 20 || (*end && *end != '\n'))
			return -1;
		return (int)v;
	}
	return -1;
}

static void add_if_exists(char ***v, size_t *n, size_t *alloc, char *path)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], path)) {
			free(path);
			return;
		}
	if (access(path, F_OK) < 0) {
		free(path);
		return;
	}
	ALLOC_GROW(*v, *n + 2, *alloc);
	(*v)[(*n)++] = path;
	(*v)[*n] = NULL;
}

char **task_device_paths(struct alloc_runner *ar, const char *task)
{
	struct client *c = ar->c;
	size_t ngpus, n = 0, alloc = 0;
	const char **ids = task_gpu_ids(ar, task, &ngpus);
	char **v = NULL;

	ALLOC_GROW(v, 1, alloc);
	v[0] = NULL;
	FILE *caps = NULL;
	pthread_mutex_lock(&c->gpu_lock);
	for (size_t i = 0; i < ngpus && c->gpus; i++) {
		for (size_t k = 0; k < c->gpus->nr_devs; k++) {
			const struct gpu_device *d = &c->gpus->devs[k];
			int minor;
			if (strcmp(d->uuid, ids[i]))
				continue;
			minor = minor_from_proc(d->pci_bus_id);
			if (minor < 0)
				minor = (int)d->nvml_index;
			add_if_exists(&v, &n, &alloc, xasprintf("/dev/nvidia%d", minor));
			if (d->mig_index < 0 || d->simulated)
				continue;
			if (!caps && !(caps = fopen(MIG_MINORS, "re")))
				continue;   /* no table: a driver without MIG caps */
			int gi = mig_cap_minor(caps, (unsigned)minor, d->mig_gpu_instance_id, -1);
			int ci = mig_cap_minor(caps, (unsigned)minor, d->mig_gpu_instance_id,
					       d->mig_compute_instance_id);
			if (gi >= 0)
				add_if_exists(&v, &n, &alloc,
					      xasprintf("/dev/nvidia-caps/nvidia-cap%d", gi));
			if (ci >= 0)
				add_if_exists(&v, &n, &alloc,
					      xasprintf("/dev/nvidia-caps/nvidia-cap%d", ci));
		}
	}
	pthread_mutex_unlock(&c->gpu_lock);
	if (caps)
		fclose(caps);
	if (ngpus) {
		add_if_exists(&v, &n, &alloc, xstrdup("/dev/nvidiactl"));
		add_if_exists(&v, &n, &alloc, xstrdup("/dev/nvidia-uvm"));
		add_if_exists(&v, &n, &alloc, xstrdup("/dev/nvidia-uvm-tools"));
	}
	free(ids);
	return v;
}
