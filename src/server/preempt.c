/* preempt: which running allocations a job that does not fit may stop.
 *
 * Who may be preempted (docs/teams.md, "Preemption"):
 *   - a borrowed allocation of another namespace, by a job whose namespace
 *     is within its own quota (the lender takes its GPUs back), whatever
 *     the priorities;
 *   - an allocation of lower priority in the same namespace, in a namespace
 *     without a quota (nothing was promised to it), or a borrowed one,
 *     when the job's type may preempt (server configuration; batch by
 *     default).
 * Allocations already told to stop and those of the job itself never are.
 *
 * The set is minimal for one node: candidates are ordered borrowed first,
 * then lowest priority, then smallest GPU share, then most recent (least
 * work lost); they are released from a copy of the node's usage one by one
 * until the job fits; then each chosen one is put back, most costly first,
 * and kept out of the set when the job still fits without freeing it.  The
 * node whose set costs least (highest priority touched, then count, then
 * GPU share) wins.  Releasing and re-taking uses the engine's own
 * sched_release / sched_apply on the evaluation's snapshot, so "fits" is
 * exactly what the engine will decide once the victims have ended. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"
#include "server/teams.h"

bool preempt_enabled(const struct server *srv, const char *job_type)
{
	unsigned t = srv->cfg.preempt_types;
	if (t == 0) /* batch, and system jobs as Nomad's default has it */
		t = SERVER_PREEMPT_BATCH | SERVER_PREEMPT_SYSTEM;
	if (t & SERVER_PREEMPT_NONE)
		return false;
	if (!strcmp(job_type, "batch"))
		return t & SERVER_PREEMPT_BATCH;
	if (!strcmp(job_type, "service"))
		return t & SERVER_PREEMPT_SERVICE;
	if (!strcmp(job_type, "system"))
		return t & SERVER_PREEMPT_SYSTEM;
	return false;
}

struct cand {
	json_t *alloc;           /* borrowed from the node's list */
	struct sched_placement pl;
	int64_t priority;        /* -1 for borrowed: goes first */
	int64_t gpu, created;
	bool released, chosen;
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->gpu != b->gpu)
		return a->gpu < b->gpu ? -1 : 1;
	if (a->created != b->created)
		return a->created > b->created ? -1 : 1;
	return strcmp(jstr(a->alloc, "id", ""), jstr(b->alloc, "id", ""));
}

/* The reserved cores of an allocation's tasks (resources.tasks.<task>.cores)
 * as positions in the node's cores; false when one is not offered there. */
static bool cores_of(const struct sched_snapshot *snap, int node, const json_t *res,
		     struct sched_placement *pl)
{
	const char *task;
	json_t *t, *c;
	size_t i;
	int n = sched_node_ncores(snap, node);

	json_object_foreach((json_t *)json_object_get(res, "tasks"), task, t)
		json_array_foreach(json_object_get(t, "cores"), i, c) {
			struct sched_core k = { -1, -1 };
			int at = 0;
			for (; at < n; at++) {
				sched_node_core(snap, node, at, &k, NULL);
				if (k.id == json_integer_value(c))
					break;
			}
			if (at == n || pl->ncores == SCHED_MAX_CORES_PER_ASK)
				return false;
			pl->core[pl->ncores++] = (uint16_t)at;
		}
	return true;
}

/* The engine's placement that an allocation took on snapshot node `node`;
 * false when a device is not in the snapshot. */
static bool placement_of(const struct sched_snapshot *snap, int node, const json_t *alloc,
			 struct sched_placement *pl)
{
	const json_t *res = json_object_get(alloc, "resources");
	json_t *d;
	size_t i;
	memset(pl, 0, sizeof(*pl));
	pl->node = node;
	pl->cpu_milli = jint(res, "cpu_milli", 0);
	pl->memory_mib = jint(res, "memory_mib", 0);
	pl->disk_mib = jint(res, "disk_mib", 0);
	json_array_foreach(json_object_get(res, "devices"), i, d) {
		int k, nd = sched_node_ndevices(snap, node);
		if (pl->ndev >= SCHED_MAX_DEVS_PER_ASK)
			return false;
		for (k = 0; k < nd && strcmp(sched_device_id(snap, node, k), jstr(d, "id", "")); k++)
			;
		if (k == nd)
			return false;
		pl->dev[pl->ndev].dev = k;
		pl->dev[pl->ndev].compute = (int32_t)jint(d, "compute_milli", 0);
		pl->dev[pl->ndev].memory_mib = jint(d, "memory_mib", 0);
		pl->dev[pl->ndev++].whole = jbool(d, "whole", false);
	}
	return cores_of(snap, node, res, pl);
}

/* Whether namespace ns has a quota (cache: {"ns": bool}). */
static bool ns_has_quota(struct server *srv, json_t *cache, const char *ns)
{
	json_t *v = json_object_get(cache, ns), *rec = NULL;
	struct store_key k = { NULL, ns, 0 };
	bool has = false;
	if (v)
		return json_is_true(v);
	if (store_get(srv->store, STORE_NAMESPACE, &k, &rec, NULL) == 0)
		has = *jstr(rec, "quota", "") != '\0';
	json_decref(rec);
	json_object_set_new(cache, ns, json_boolean(has));
	return has;
}

/* Whether the group fits on node now: every device block of it
 * (multi_device.c), not only the first.  Called with victims released on
 * that node only, so a placement elsewhere cannot appear (the job fitted
 * nowhere before). */
static bool fits_on(struct sched_snapshot *snap, const struct group_ask *ask,
		    const struct sched_options *opt, int node)
{
	struct sched_placement out;
	return group_ask_place(snap, ask, opt, &out, NULL, NULL) == 0 && out.node == node;
}

struct victim_set {
	int node;
	json_t *allocs;          /* array */
	int64_t max_priority, count, gpu;
};

static bool set_better(const struct victim_set *a, const struct victim_set *b)
{
	if (!b->allocs)
		return true;
	if (a->max_priority != b->max_priority)
		return a->max_priority < b->max_priority;
	if (a->count != b->count)
		return a->count < b->count;
	return a->gpu < b->gpu;
}

/* The minimal set on one node, or false. */
static bool node_set(struct sched_snapshot *snap, int node, struct cand *c, size_t n,
		     const struct group_ask *ask, const struct sched_options *opt,
		     struct victim_set *out)
{
	bool fits = false;
	for (size_t i = 0; i < n && !fits; i++) {
		if (sched_release(snap, &c[i].pl) < 0)
			continue;
		c[i].released = c[i].chosen = true;
		fits = fits_on(snap, ask, opt, node);
	}
	if (fits) {
		/* prune: put back the costliest first; keep it when still fitting */
		for (size_t i = n; i-- > 0;) {
			if (!c[i].chosen || sched_apply(snap, &c[i].pl) < 0)
				continue;
			if (fits_on(snap, ask, opt, node)) {
				c[i].chosen = c[i].released = false;
			} else {
				(void)sched_release(snap, &c[i].pl);
			}
		}
		memset(out, 0, sizeof(*out));
		out->node = node;
		out->allocs = json_array();
		out->max_priority = -2;
		for (size_t i = 0; i < n; i++) {
			if (!c[i].chosen)
				continue;
			json_array_append(out->allocs, c[i].alloc);
			out->count++;
			out->gpu += c[i].gpu;
			if (c[i].priority > out->max_priority)
				out->max_priority = c[i].priority;
		}
	}
	/* restore the snapshot */
	for (size_t i = 0; i < n; i++) {
		if (c[i].released)
			(void)sched_apply(snap, &c[i].pl);
		c[i].released = c[i].chosen = false;
	}
	return fits;
}

int preempt_for(struct server *srv, struct sched_view *v, struct sched_snapshot *snap,
		const int *map, const struct group_ask *ask, const json_t *job,
		const struct quota_state *q, const struct sched_options *opt, struct plan *p,
		int64_t now)
{
	const char *ns = jstr(job, "namespace", "default"), *job_id = jstr(job, "id", "");
	int64_t prio = jint(job, "priority", 50);
	bool by_priority = preempt_enabled(srv, jstr(job, "type", "service"));
	bool within_quota = q && q->spec && quota_gpu_limit(q->spec) > 0 &&
			    q->gpu_milli < quota_gpu_limit(q->spec);
	char *me = xasprintf("%s/%s", ns, job_id);
	json_t *quota_cache = json_object(), *lists = json_array(), *events = json_object();
	struct victim_set best = { 0 };
	size_t nnodes = sched_snapshot_nodes(snap);
	int rc = -ENOSPC;

	if (!by_priority && !within_quota)
		goto out;
	/* the lists of every node first: victims of an earlier round still
	 * stopping mean: wait for them, preempt nothing more */
	for (size_t i = 0; i < nnodes; i++) {
		struct store_filter f = { .node_id = v->nodes[map[i]].id };
		json_t *list = NULL, *al;
		size_t k;
		if (store_list(srv->store, STORE_ALLOC, &f, &list, NULL) < 0)
			list = json_array();
		json_array_foreach(list, k, al)
			if (alloc_takes_capacity(al) && !strcmp(jstr(al, "preempted_by", ""), me))
				rc = 1;
		json_array_append_new(lists, list);
	}
	if (rc == 1)
		goto out;
	for (size_t i = 0; i < nnodes; i++) {
		json_t *list = json_array_get(lists, i), *al;
		struct cand *c = xcalloc(json_array_size(list) + 1, sizeof(*c));
		struct victim_set set;
		size_t k, n = 0;
		json_array_foreach(list, k, al) {
			const char *ans = jstr(al, "namespace", "default");
			bool borrowed = jbool(al, "borrowed", false), ok;
			int64_t ap = jint(al, "priority", 50);
			if (!alloc_takes_capacity(al) || strcmp(jstr(al, "desired_status", "run"), "run") ||
			    (!strcmp(ans, ns) && !strcmp(jstr(al, "job_id", ""), job_id)))
				continue;
			ok = borrowed && within_quota && strcmp(ans, ns);
			ok = ok || (by_priority && ap < prio &&
				    (!strcmp(ans, ns) || borrowed || !ns_has_quota(srv, quota_cache, ans)));
			if (!ok || !placement_of(snap, (int)i, al, &c[n].pl))
				continue;
			c[n].alloc = al;
			c[n].priority = borrowed && strcmp(ans, ns) ? -1 : ap;
			c[n].gpu = alloc_gpu_milli(al);
			c[n].created = jint(al, "create_time", 0);
			n++;
		}
		qsort(c, n, sizeof(*c), cand_cmp);
		if (n && node_set(snap, (int)i, c, n, ask, opt, &set)) {
			if (set_better(&set, &best)) {
				json_decref(best.allocs);
				best = set;
			} else {
				json_decref(set.allocs);
			}
		}
		free(c);
	}
	if (best.allocs) {
		json_t *al;
		size_t k;
		char *why = xasprintf("preempted by job %s (priority %lld)", job_id, (long long)prio);
		json_array_foreach(best.allocs, k, al) {
			json_t *s = json_copy(al);
			char *jk = xasprintf("%s\x1f%s", jstr(al, "namespace", "default"), jstr(al, "job_id", ""));
			json_object_set_new(s, "desired_status", json_string("stop"));
			json_object_set_new(s, "desired_description", json_string(why));
			json_object_set_new(s, "preempted_by", json_string(me));
			json_object_set_new(s, "preempted_by_job", json_string(job_id));
			json_object_set_new(s, "preempted_by_priority", json_integer(prio));
			json_object_set_new(s, "modify_time", json_integer(now));
			json_array_append(p->allocs, s);
			json_array_append_new(p->preempted, s);
			p->destroy++;
			if (!json_object_get(events, jk)) {
				json_t *e = eval_new(jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
						     "preemption", NULL);
				json_object_set_new(events, jk, json_true());
				json_array_append_new(p->extra_evals, e);
			}
			free(jk);
		}
		free(why);
		p->reserve = true;
		json_decref(best.allocs);
		rc = 0;
	}
out:
	json_decref(quota_cache);
	json_decref(lists);
	json_decref(events);
	free(me);
	return rc;
}
