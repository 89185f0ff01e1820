/* Writes a job file of about the given size (default 1 MiB) to stdout, for
 * bench_spec: one job of many groups and tasks, each task with the blocks
 * real files use (config, env, template, resources with a device and its
 * constraints), so that every stage of spec_load has work to do.
 *   bench_spec_gen [BYTES] > job.hcl */
#include <stdio.h>
#include <stdlib.h>

#include "common/units.h"

static long task(FILE *f, int g, int t)
{
	return fprintf(f,
		"    task \"t%d\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config {\n"
		"        command = \"/opt/bin/train\"\n"
		"        args    = [\"--shard\", \"%d\", \"--group\", \"%d\", \"--out\", \"${NOMAD_ALLOC_DIR}/o\"]\n"
		"      }\n"
		"      env {\n"
		"        SHARD      = \"%d\"\n"
		"        NCCL_DEBUG = \"WARN\"\n"
		"      }\n"
		"      template {\n"
		"        destination = \"local/run.sh\"\n"
		"        perms       = \"755\"\n"
		"        data        = <<EOT\n"
		"#!/bin/sh\n"
		"exec /opt/bin/train --config local/conf.json \"$@\"\n"
		"EOT\n"
		"      }\n"
		"      resources {\n"
		"        cpu    = 1000\n"
		"        memory = \"2 GiB\"\n"
		"        device \"nvidia/gpu\" {\n"
		"          count = 1\n"
		"          constraint {\n"
		"            attribute = \"${device.attr.memory}\"\n"
		"            operator  = \">=\"\n"
		"            value     = \"16 GiB\"\n"
		"          }\n"
		"          affinity {\n"
		"            attribute = \"${device.model}\"\n"
		"            operator  = \"regexp\"\n"
		"            value     = \"A100|H100\"\n"
		"            weight    = 50\n"
		"          }\n"
		"        }\n"
		"      }\n"
		"      kill_timeout = \"30s\"\n"
		"    }\n", t, t, g, t);
}

int main(int argc, char **argv)
{
	int64_t want = 1 << 20, tasks_per_group = 10;
	long written = 0;
	int g = 0;

	if (argc > 1 && parse_int64(argv[1], 1024, 64 << 20, &want, NULL) < 0) {
		fprintf(stderr, "usage: bench_spec_gen [BYTES]\n");
		return 2;
	}
	written += printf("job \"bench\" {\n  type = \"batch\"\n  datacenters = [\"dc1\"]\n");
	while (written < want - 200) {
		written += printf("  group \"g%d\" {\n    count = 2\n", g);
		for (int t = 0; t < tasks_per_group && written < want - 200; t++)
			written += task(stdout, g, t);
		written += printf("  }\n");
		g++;
	}
	printf("}\n");
	return 0;
}
