/* multi_device: a task group whose tasks ask for several device blocks
 * ("one nvidia/gpu/T4 for the encoder, two H100s for the model").
 *
 * The engine places a request with one device ask.  A group's blocks must
 * all land on one node (an allocation runs on one node), so the first block
 * is placed with the group's CPU, memory and node rules, which picks a
 * node; every further block is then placed on that node alone (a
 * ${node.unique.id} constraint) against the same snapshot, each taken
 * before the next is asked, so that two blocks never get the same GPU.  A
 * node where some block does not fit is excluded and the first block asked
 * again: the answer is the engine's choice among the nodes that take every
 * block, up to MULTI_MAX_NODES candidates.  The engine's internals stay as
 * they are. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

#define MULTI_MAX_NODES 32 /* candidate nodes tried before giving up */

int group_ask_extra_devices(struct group_ask *a, const struct job_group *g, struct herd_err *err)
{
	bool first = true;
	for (size_t t = 0; t < g->ntasks; t++) {
		const struct job_resources *r = &g->tasks[t].resources;
		for (size_t d = 0; d < r->ndevices; d++) {
			const struct job_device *dev = &r->devices[d];
			struct group_device_ask *x;
			int rc;
			if (first) { /* group_ask_init places the first */
				first = false;
				continue;
			}
			a->extra = xreallocarray(a->extra, a->nextra + 1, sizeof(*a->extra));
			x = &a->extra[a->nextra++];
			memset(x, 0, sizeof(*x));
			rc = group_ask_add_rules(NULL, &dev->constraints, false, &x->cons, &x->ncons,
						 NULL, NULL, err);
			if (!rc)
				rc = group_ask_add_rules(NULL, &dev->affinities, true, NULL, NULL,
							 &x->affs, &x->naffs, err);
			if (rc < 0)
				return rc;
			x->dev.name = dev->name;
			x->dev.count = (int)dev->count;
			x->dev.compute = dev->compute;
			x->dev.memory_mib = dev->memory;
			x->dev.constraints = x->cons;
			x->dev.nconstraints = x->ncons;
			x->dev.affinities = x->affs;
			x->dev.naffinities = x->naffs;
		}
	}
	return 0;
}

void group_ask_extra_release(struct group_ask *a)
{
	for (size_t i = 0; i < a->nextra; i++) {
		free(a->extra[i].cons);
		free(a->extra[i].affs);
	}
	free(a->extra);
	a->extra = NULL;
	a->nextra = 0;
}

/* The block's share of a merged placement: k = 0 the first block with the
 * group's cpu and memory, then one per extra block, in order. */
static void part_of(const struct group_ask *a, const struct sched_placement *pl, size_t k,
		    int *from, struct sched_placement *part)
{
	int n = k == 0 ? a->dev.count : a->extra[k - 1].dev.count;
	memset(part, 0, sizeof(*part));
	part->node = pl->node;
	if (k == 0) {
		part->cpu_milli = pl->cpu_milli;
		part->memory_mib = pl->memory_mib;
		part->disk_mib = pl->disk_mib;
		part->ncores = pl->ncores;
		memcpy(part->core, pl->core, sizeof(pl->core[0]) * (size_t)pl->ncores);
	}
	for (int i = 0; i < n && *from < pl->ndev; i++)
		part->dev[part->ndev++] = pl->dev[(*from)++];
}

int group_ask_apply(struct sched_snapshot *snap, const struct group_ask *a,
		    const struct sched_placement *pl)
{
	int from = 0;
	if (!a->nextra)
		return sched_apply(snap, pl);
	for (size_t k = 0; k <= a->nextra; k++) {
		struct sched_placement part;
		int rc;
		part_of(a, pl, k, &from, &part);
		rc = sched_apply(snap, &part);
		if (rc < 0) {
			/* give back what earlier blocks took: all or nothing */
			int back = 0;
			for (size_t j = 0; j < k; j++) {
				part_of(a, pl, j, &back, &part);
				(void)sched_release(snap, &part);
			}
			return rc;
		}
	}
	return 0;
}

/* Places the extra blocks on node `node` after the first block's placement
 * p0 (taken in snap meanwhile, and given back before returning).  Returns 0
 * with *out merged, -ENOSPC with *failed the block that did not fit, or
 * another error. */
static int place_rest(struct sched_snapshot *snap, const struct group_ask *a,
		      const struct sched_options *opt, const struct sched_placement *p0,
		      struct sched_placement *out, size_t *failed, struct herd_err *err)
{
	struct sched_placement taken[SCHED_MAX_DEVS_PER_ASK];
	struct sched_constraint on_node = { "${node.unique.id}", SCHED_OP_EQ,
					    sched_node_id(snap, p0->node) };
	struct sched_placement merged = *p0;
	size_t ntaken = 0;
	int rc = sched_apply(snap, p0);

	if (rc < 0)
		return rc;
	taken[ntaken++] = *p0;
	for (size_t k = 0; k < a->nextra && rc == 0; k++) {
		struct sched_request req = { 0 };
		struct sched_placement pk;
		req.count = 1;
		req.constraints = &on_node;
		req.nconstraints = 1;
		req.device = &a->extra[k].dev;
		rc = sched_place(snap, &req, opt, &pk, NULL, err);
		if (rc == -ENOSPC) {
			*failed = k + 1;
			break;
		}
		if (rc < 0)
			break;
		if (merged.ndev + pk.ndev > SCHED_MAX_DEVS_PER_ASK || ntaken == SCHED_MAX_DEVS_PER_ASK) {
			rc = herd_errf(err, -EINVAL, "the group asks for more than %d devices",
				       SCHED_MAX_DEVS_PER_ASK);
			break;
		}
		memcpy(&merged.dev[merged.ndev], pk.dev, (size_t)pk.ndev * sizeof(pk.dev[0]));
		merged.ndev += pk.ndev;
		rc = sched_apply(snap, &pk);
		if (rc == 0)
			taken[ntaken++] = pk;
	}
	while (ntaken > 0)
		(void)sched_release(snap, &taken[--ntaken]);
	if (rc == 0)
		*out = merged;
	return rc;
}

int group_ask_place(struct sched_snapshot *snap, const struct group_ask *a,
		    const struct sched_options *opt, struct sched_placement *out,
		    struct sched_explain *why, struct herd_err *err)
{
	struct sched_constraint *cons;
	struct sched_request req;
	char misses[SCHED_EXPLAIN_MISSES][128];
	int nmisses = 0, rc;

	if (!a->nextra)
		return sched_place(snap, &a->req, opt, out, why, err);
	/* the group's constraints, then one "not this node" per excluded node */
	cons = xcalloc(a->req.nconstraints + MULTI_MAX_NODES, sizeof(*cons));
	if (a->req.nconstraints)
		memcpy(cons, a->req.constraints, a->req.nconstraints * sizeof(*cons));
	req = a->req;
	req.constraints = cons;
	for (int tries = 0;; tries++) {
		struct sched_placement p0;
		size_t failed = 0;
		rc = sched_place(snap, &req, opt, &p0, why, err);
		if (rc < 0)
			break;
		rc = place_rest(snap, a, opt, &p0, out, &failed, err);
		if (rc != -ENOSPC)
			break;
		if (nmisses < SCHED_EXPLAIN_MISSES) {
			const struct sched_device_request *d = &a->extra[failed - 1].dev;
			snprintf(misses[nmisses++], sizeof(misses[0]),
				 "%s: device block %zu (%d x %s) does not fit beside the others",
				 sched_node_id(snap, p0.node), failed + 1, d->count, d->name);
		}
		if (tries + 1 >= MULTI_MAX_NODES) {
			if (why)
				memset(why, 0, sizeof(*why));
			rc = -ENOSPC;
			break;
		}
		cons[req.nconstraints].ltarget = "${node.unique.id}";
		cons[req.nconstraints].op = SCHED_OP_NE;
		cons[req.nconstraints].rtarget = sched_node_id(snap, p0.node);
		req.nconstraints++;
	}
	if (rc == -ENOSPC && why) {
		/* the nodes excluded above show as their misses, the counts of
		 * the exclusions stay out of the explanation (they are not the
		 * job's constraints) */
		for (size_t i = a->req.nconstraints; i < 16; i++)
			why->filtered_constraint[i] = 0;
		struct sched_explain engine = *why;
		why->nodes = (int)sched_snapshot_nodes(snap);
		why->nmisses = 0;
		for (int i = 0; i < nmisses; i++)
			memcpy(why->misses[why->nmisses++], misses[i], sizeof(misses[0]));
		for (int i = 0; i < engine.nmisses && why->nmisses < SCHED_EXPLAIN_MISSES; i++)
			memcpy(why->misses[why->nmisses++], engine.misses[i], sizeof(misses[0]));
	}
	free(cons);
	return rc;
}
