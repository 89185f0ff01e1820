/* cores: which CPU cores this node offers for reservation, and where each
 * task runs (docs/drivers.md, "CPU cores").
 *
 * The server reserves cores for tasks with `resources { cores = N }` and
 * writes their ids into the allocation (resources.tasks.<task>.cores).
 * The agent pins such a task to exactly those cores, and keeps every other
 * task (the shared ones) off the cores that tasks on this node hold,
 * learning which from its own allocations.
 *
 * With a simulated CPU topology (docs/gpu-sim.md) the server may hand out
 * cores this machine does not have: a task is pinned to the ones it has,
 * and where it has none of them, not pinned at all (an event says so);
 * such a task never fails for it.
 *
 * Pure functions over plain data; nothing here logs or does I/O. */
#ifndef HERD_AGENT_CORES_H
#define HERD_AGENT_CORES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/fingerprint.h"
#include "common/cpulist.h"
#include "common/err.h"

/* The cores fp offers for reservation: its cores minus reserved (a core
 * list; NULL: none), limited to reservable (NULL: no limit), into *out.
 * Returns 0, or -EINVAL with err for a list that does not parse. */
int cores_offered(const struct node_fingerprint *fp, const char *reserved,
		  const char *reservable, struct cpulist *out, struct herd_err *err);

/* The node registration's resources.cores: [{"id": N, "numa": M}, ...] of
 * the cores in offered, sorted by id, each with its NUMA node in fp (-1
 * unknown).  A new reference. */
json_t *cores_offered_json(const struct node_fingerprint *fp, const struct cpulist *offered);

/* The cores of one task of an allocation (resources.tasks.<task>.cores, an
 * array of ids): true with them in *out when there are any; ids that are
 * not integers in 0..CPULIST_MAX-1 are skipped. */
bool cores_of_task(const json_t *alloc, const char *task, struct cpulist *out);

/* Adds the cores of every task of alloc to *held. */
void cores_of_alloc(const json_t *alloc, struct cpulist *held);

/* Where one task runs. */
struct cores_plan {
	char *cpus;    /* pin to these cores (list syntax); NULL: leave the mask */
	char *mems;    /* the NUMA nodes of cpus on this machine; NULL: any */
	char *env;     /* HERD_CPU_CORES: the allocation's cores; NULL: unset */
	char *event;   /* a task event to record ("Cores Not Pinned" ...); NULL */
};

/* The plan for a task whose allocation gave it want (NULL or empty: a
 * shared task).  usable: the cores this machine lets the agent pin (its
 * own affinity); held: the cores reserved by the tasks of the node's
 * allocations that have not ended; real: this machine's cores with their
 * NUMA nodes (the real topology, never a simulated one), nreal of them.
 *   reserved: cpus = want & usable; mems = their nodes when every one is
 *     known; an event when some (or all: then no pin) are not usable;
 *   shared: cpus = usable - held when a held core is usable and something
 *     is left; otherwise no pin (with an event when nothing is left).
 * Fills *out (release with cores_plan_release). */
void cores_plan(const struct cpulist *want, const struct cpulist *usable,
		const struct cpulist *held, const struct node_core *real, size_t nreal,
		struct cores_plan *out);

void cores_plan_release(struct cores_plan *p);

#endif
