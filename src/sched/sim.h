/* sim: replays a trace through the placement engine the way the FGD paper's
 * evaluation does (../shared/traces/openb/README.md): per seed, sort tasks
 * by name, shuffle, inflate to `tune` x GPU capacity by sampling with
 * replacement, offer one at a time, never depart, drop what fits nowhere.
 * Pure: the caller reads files and measures time. */
#ifndef HERD_SCHED_SIM_H
#define HERD_SCHED_SIM_H

#include "sched/sched.h"
#include "sched/trace.h"

#define SIM_MAX_BUCKET 200 /* arrived % buckets 0..200 */
#define SIM_MAX_INFLATE 100 /* inflation may multiply the task list at most this much */

struct sim_result {
	double alloc_100, alloc_130;   /* GPU allocation %, bucket mean at arrived 100 / 130 % */
	double frag_50, frag_70, frag_90; /* fragmentation ratio % at arrived 50/70/90 % */
	/* A lower bound on the unallocated GPU milli at arrived 100 % that no
	 * policy can beat (mean over the same samples as alloc_100); see
	 * unalloc_bound in sim.c and docs/scheduling.md. */
	double bound_100;
	size_t placements;             /* tasks offered */
	size_t placed;
	/* allocation % by arrived % bucket (mean of the samples in it; NAN when empty) */
	double curve[SIM_MAX_BUCKET + 1];
};

/* The FGD target workload of a pod list: its classes (cpu, gpu milli,
 * number of GPUs, gpu_spec), most frequent first, until they cover 95% of
 * the tasks.  Caller frees with sched_workload_free. */
struct sched_workload *sim_workload(const struct trace *t);

/* Total GPU capacity in milli. */
int64_t sim_capacity(const struct trace *t);

/* Runs one seed of policy over the trace with workload w (from
 * sim_workload).  tune is the inflation factor (1.3 in the paper).  Returns
 * 0, or -EINVAL with err filled (no GPUs, tune out of 0.1..2, tasks asking
 * for less than 1/SIM_MAX_INFLATE of the GPU to reach). */
int sim_run(const struct trace *t, const struct sched_workload *w, enum sched_policy policy,
	    uint64_t seed, double tune, struct sim_result *out, struct herd_err *err);

#endif
