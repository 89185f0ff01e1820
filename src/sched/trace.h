/* trace: the Alibaba GPU cluster trace 2023 ("openb") CSV files, parsed
 * from memory (the caller reads the file; this library does no I/O).
 *
 * Node files need the columns sn, cpu_milli, memory_mib, gpu, model; pod
 * files name, cpu_milli, memory_mib, num_gpu, gpu_milli, and gpu_spec when
 * present (other columns are ignored, in any order).  See
 * ../shared/traces/openb/README.md for the format. */
#ifndef HERD_SCHED_TRACE_H
#define HERD_SCHED_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define TRACE_MAX_ROWS 1000000
#define TRACE_MAX_GPUS 64

struct trace_node {
	char *name, *model;
	int64_t cpu_milli, memory_mib;
	int gpus;
};

struct trace_pod {
	char *name, *gpu_spec; /* gpu_spec NULL when any model will do */
	int64_t cpu_milli, memory_mib;
	int num_gpu;
	int32_t gpu_milli;     /* per GPU, 0..1000 */
};

struct trace {
	size_t nnodes, npods;
	struct trace_node *nodes;
	struct trace_pod *pods;
};

/* Parse a node list / pod list into t (appending).  Return 0, or -EINVAL
 * with err naming the line and column ("line 7: num_gpu: expected 0..64");
 * on failure nothing is appended. */
int trace_parse_nodes(struct trace *t, const char *buf, size_t len, struct herd_err *err);
int trace_parse_pods(struct trace *t, const char *buf, size_t len, struct herd_err *err);

/* Frees what t owns and leaves it empty; accepts NULL. */
void trace_release(struct trace *t);

#endif
