/* gpu_share: the rule for a task's GPU memory against its share of a
 * timeslice GPU (gpu { timeslice_memory_limit timeslice_memory_grace },
 * docs/gpu-sharing.md "GPU memory per task").  Pure: the client's GPU
 * watch (gpu_watch.c) measures and acts; this says when.
 *
 * A task is over its share at a sample when its processes use more MiB of
 * the device than its `memory` ask.  It is acted on (warned, or killed)
 * once it has been over for `grace` samples in a row, and then once only
 * until a sample finds it within its share again: one action per
 * exceedance. */
#ifndef HERD_AGENT_GPU_SHARE_H
#define HERD_AGENT_GPU_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the rule remembers of one task on one device between samples;
 * zeroed at the start (GPU_SHARE_TRACK_INIT). */
struct gpu_share_track {
	int over;        /* consecutive samples over the share */
	bool acted;      /* this exceedance was acted on */
};
#define GPU_SHARE_TRACK_INIT { 0, false }

enum gpu_share_verdict {
	GPU_SHARE_WITHIN,   /* at or under its share (or no share to check) */
	GPU_SHARE_OVER,     /* over, within its grace or already acted on */
	GPU_SHARE_ACT,      /* over for the whole grace: act now (once) */
};

/* One sample: used_mib of the task's processes on the device against
 * share_mib (<= 0: nothing to check: WITHIN, and t starts again), with
 * grace >= 1 samples.  Updates t. */
enum gpu_share_verdict gpu_share_step(struct gpu_share_track *t, int64_t used_mib,
				      int64_t share_mib, int grace);

/* "9.1 GiB", "8 GiB", "512 MiB": a MiB figure as people read it, into
 * buf; returns buf. */
const char *gpu_share_mib_text(int64_t mib, char *buf, size_t size);

#endif
