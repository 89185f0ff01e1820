/* Small builders for sched tests. */
#include <stdio.h>
#include <string.h>

#include "sched/sched.h"

/* Adds a node with ngpu devices of model; returns its index. */
static inline int add_node(struct sched_snapshot *s, const char *id, int64_t cpu, int64_t mem,
			   int ngpu, const char *model, enum sched_sharing sh, int64_t gmem)
{
	struct sched_node_spec ns = { .id = id, .cpu_milli = cpu, .memory_mib = mem,
				      .node_class = "gpu", .datacenter = "dc1" };
	int n = sched_snapshot_add_node(s, &ns, NULL);
	for (int g = 0; g < ngpu; g++) {
		char did[32];
		struct sched_device_spec ds = { .id = did, .vendor = "nvidia", .type = "gpu",
						.model = model, .memory_mib = gmem, .numa_node = -1,
						.nvlink_group = -1, .sharing = sh };
		snprintf(did, sizeof(did), "GPU-%d", g);
		sched_snapshot_add_device(s, n, &ds, NULL);
	}
	return n;
}
