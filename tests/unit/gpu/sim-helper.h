/* sim-helper: what the gpu unit tests share: writing a simulator
 * description and opening a gpu_host on it.  The meson test() sets
 * HERD_NVML_SIM_LIB to the built simulator. */
#ifndef HERD_TEST_SIM_HELPER_H
#define HERD_TEST_SIM_HELPER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"

static char sim_file[256];

static inline const char *sim_lib(void)
{
	const char *p = getenv("HERD_NVML_SIM_LIB");
	if (!p) {
		fprintf(stderr, "HERD_NVML_SIM_LIB is not set (run through meson test)\n");
		abort();
	}
	return p;
}

/* Writes json atomically (temp + rename) to the description file, as the
 * simulator documents, and points HERD_NVML_SIM at it. */
static inline void sim_write(const char *json)
{
	char tmp[300];
	if (!sim_file[0])
		snprintf(sim_file, sizeof(sim_file), "/tmp/herd-gpu-test-%d.json", (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", sim_file);
	FILE *f = fopen(tmp, "we");
	if (!f || fputs(json, f) < 0 || fclose(f) != 0)
		abort();
	if (rename(tmp, sim_file) < 0)
		abort();
	setenv("HERD_NVML_SIM", sim_file, 1);
}

/* Points HERD_NVML_SIM at examples/gpus/<name>. */
static inline void sim_example(const char *name)
{
	static char path[4096];
	const char *root = getenv("HERD_SOURCE_ROOT");
	snprintf(path, sizeof(path), "%s/examples/gpus/%s", root ? root : ".", name);
	setenv("HERD_NVML_SIM", path, 1);
}

static inline struct gpu_host *sim_open_cfg(struct gpu_config *cfg)
{
	cfg->library_path = sim_lib();
	return gpu_host_open(cfg);
}

static inline struct gpu_host *sim_open(void)
{
	struct gpu_config cfg;
	gpu_config_init(&cfg);
	return sim_open_cfg(&cfg);
}

static inline void sim_cleanup(void)
{
	if (sim_file[0])
		unlink(sim_file);
}

#endif
