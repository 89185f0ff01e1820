/* CPU cores offered and pinned; see cores.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cores.h"
#include "common/xalloc.h"

int cores_offered(const struct node_fingerprint *fp, const char *reserved,
		  const char *reservable, struct cpulist *out, struct herd_err *err)
{
	struct cpulist set = CPULIST_INIT, cut;
	for (size_t i = 0; i < fp->nr_cores; i++)
		cpulist_add(&set, fp->cores[i].id);
	if (reserved) {
		if (cpulist_parse(reserved, &cut, err) < 0)
			return herd_err_prefix(err, "reserved cores");
		cpulist_andnot(&set, &cut);
	}
	if (reservable) {
		if (cpulist_parse(reservable, &cut, err) < 0)
			return herd_err_prefix(err, "reservable_cores");
		cpulist_and(&set, &cut);
	}
	*out = set;
	return 0;
}

json_t *cores_offered_json(const struct node_fingerprint *fp, const struct cpulist *offered)
{
	json_t *a = json_array();
	for (int id = cpulist_next(offered, 0); id >= 0; id = cpulist_next(offered, id + 1))
		json_array_append_new(a, json_pack("{s:i, s:i}", "id", id, "numa",
						   node_fingerprint_core_numa(fp, id)));
	return a;
}

static void add_ids(const json_t *ids, struct cpulist *out)
{
	size_t i;
	json_t *v;
	json_array_foreach(ids, i, v)
		if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		    json_integer_value(v) < CPULIST_MAX)
			cpulist_add(out, (int)json_integer_value(v));
}

bool cores_of_task(const json_t *alloc, const char *task, struct cpulist *out)
{
	const json_t *tasks = json_object_get(json_object_get(alloc, "resources"), "tasks");
	struct cpulist set = CPULIST_INIT;
	add_ids(json_object_get(json_object_get(tasks, task), "cores"), &set);
	*out = set;
	return !cpulist_empty(&set);
}

void cores_of_alloc(const json_t *alloc, struct cpulist *held)
{
	const json_t *tasks = json_object_get(json_object_get(alloc, "resources"), "tasks");
	const char *name;
	json_t *t;
	json_object_foreach((json_t *)tasks, name, t)
		add_ids(json_object_get(t, "cores"), held);
}

/* The NUMA nodes of cpus in real, as a list; NULL when one is unknown. */
static char *mems_of(const struct cpulist *cpus, const struct node_core *real, size_t nreal)
{
	struct cpulist nodes = CPULIST_INIT;
	for (int id = cpulist_next(cpus, 0); id >= 0; id = cpulist_next(cpus, id + 1)) {
		int numa = -1;
		for (size_t i = 0; i < nreal; i++)
			if (real[i].id == id)
				numa = real[i].numa;
		if (numa < 0)
			return NULL;
		cpulist_add(&nodes, numa);
	}
	return cpulist_str(&nodes);
}

void cores_plan(const struct cpulist *want, const struct cpulist *usable,
		const struct cpulist *held, const struct node_core *real, size_t nreal,
		struct cores_plan *out)
{
	struct cpulist pin = *usable;
	memset(out, 0, sizeof(*out));
	if (want && !cpulist_empty(want)) {
		out->env = cpulist_str(want);
		cpulist_and(&pin, want);
		struct cpulist missing = *want;
		cpulist_andnot(&missing, usable);
		char *miss = cpulist_str(&missing);
		if (cpulist_empty(&pin)) {
			out->event = xasprintf("cores %s of the allocation are not on this machine "
					       "(a simulated CPU topology?): the task runs unpinned",
					       out->env);
		} else {
			out->cpus = cpulist_str(&pin);
			out->mems = mems_of(&pin, real, nreal);
			if (!cpulist_empty(&missing))
				out->event = xasprintf("pinned to cores %s only: cores %s of the "
						       "allocation are not on this machine",
						       out->cpus, miss);
		}
		free(miss);
		return;
	}
	struct cpulist taken = *held;
	cpulist_and(&taken, usable);
	if (cpulist_empty(&taken))
		return;   /* nothing reserved here: the task keeps the agent's mask */
	cpulist_andnot(&pin, held);
	if (cpulist_empty(&pin)) {
		char *t = cpulist_str(&taken);
		out->event = xasprintf("every core of this machine is reserved (%s): the task "
				       "runs unpinned, beside the reserved tasks", t);
		free(t);
		return;
	}
	out->cpus = cpulist_str(&pin);
}

void cores_plan_release(struct cores_plan *p)
{
	if (!p)
		return;
	free(p->cpus);
	free(p->mems);
	free(p->env);
	free(p->event);
	memset(p, 0, sizeof(*p));
}
