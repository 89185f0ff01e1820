/* Fuzz target: the openb trace reader (sched/trace.h) and, for small
 * accepted traces, one replay through the engine.
 *
 * The input is a node list, a blank line, and a pod list (without a blank
 * line both readers see the whole input).  Whatever the readers accept must
 * be well formed, and a replay of it must never allocate more than exists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_trace(const struct trace *t)
{
	for (size_t i = 0; i < t->nnodes; i++)
		if (!t->nodes[i].name || !*t->nodes[i].name || !t->nodes[i].model ||
		    t->nodes[i].gpus < 0 || t->nodes[i].gpus > TRACE_MAX_GPUS ||
		    t->nodes[i].cpu_milli < 0 || t->nodes[i].memory_mib < 0)
			abort();
	for (size_t i = 0; i < t->npods; i++) {
		const struct trace_pod *p = &t->pods[i];
		if (!p->name || p->num_gpu < 0 || p->num_gpu > TRACE_MAX_GPUS || p->gpu_milli < 0 ||
		    p->gpu_milli > 1000 || (p->num_gpu > 1 && p->gpu_milli < 1000) ||
		    (p->num_gpu == 0 && p->gpu_milli != 0) || (p->gpu_spec && !*p->gpu_spec))
			abort();
	}
}

/* A replay is cheap only for small clusters and task lists. */
static void replay(const struct trace *t)
{
	int64_t gpus = 0;
	struct sched_workload *w;
	struct sim_result r;

	if (!t->nnodes || !t->npods || t->nnodes > 16 || t->npods > 64)
		return;
	for (size_t i = 0; i < t->nnodes; i++)
		gpus += t->nodes[i].gpus;
	if (gpus > 32)
		return;
	w = sim_workload(t);
	if (!sim_run(t, w, SCHED_HERD, 42, 1.3, &r, NULL)) {
		if (r.placed > r.placements)
			abort();
		for (int b = 0; b <= SIM_MAX_BUCKET; b++)
			if (r.curve[b] == r.curve[b] && (r.curve[b] < 0 || r.curve[b] > 100.0 + 1e-9))
				abort(); /* never more allocated than the capacity */
	}
	sched_workload_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *sep = NULL;
	size_t nlen = size;
	struct trace t;

	for (size_t i = 0; i + 1 < size; i++)
		if (buf[i] == '\n' && buf[i + 1] == '\n') {
			sep = buf + i + 2;
			nlen = i + 1;
			break;
		}
	memset(&t, 0, sizeof(t));
	if (!trace_parse_nodes(&t, buf, nlen, NULL) &&
	    !trace_parse_pods(&t, sep ? sep : buf, sep ? size - (size_t)(sep - buf) : size, NULL)) {
		check_trace(&t);
		replay(&t);
	}
	check_trace(&t); /* a failed parse leaves what it had, intact */
	trace_release(&t);
	return 0;
}
