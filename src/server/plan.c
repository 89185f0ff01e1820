/* plan: from a view of a job and the cluster to a plan: reconcile, then
 * place each missing instance with the engine, taking in the view what
 * each placement takes so that the next one sees it.  Used by the workers
 * and by the plan endpoint (a dry run: the same code, nothing stored). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/depends.h"
#include "server/drain.h"
#include "server/reservation.h"
#include "server/server-int.h"
#include "server/teams.h"
#include "spec/job_system.h"

void plan_init(struct plan *p)
{
	memset(p, 0, sizeof(*p));
	p->allocs = json_array();
	p->failed = json_object();
	p->placements = json_array();
	p->extra_evals = json_array();
	p->preempted = json_array();
}

void plan_no_placements(struct plan *p)
{
	json_decref(p->placements);
	p->placements = NULL;
}

void plan_release(struct plan *p)
{
	if (!p)
		return;
	json_decref(p->allocs);
	json_decref(p->failed);
	json_decref(p->placements);
	json_decref(p->extra_evals);
	json_decref(p->preempted);
	json_decref(p->versions);
	free(p->deployment_id);
	free(p->queued);
	free(p->dep_waiting);
	free(p->dep_never);
	json_decref(p->dep_waiting_for);
	quota_state_release(p->quota);
	free(p->quota);
	for (size_t i = 0; i < p->nnodes; i++)
		free(p->nodes[i]);
	free(p->nodes);
	memset(p, 0, sizeof(*p));
}

static void plan_note_node(struct plan *p, const char *id)
{
	for (size_t i = 0; i < p->nnodes; i++)
		if (!strcmp(p->nodes[i], id))
			return;
	ALLOC_GROW(p->nodes, p->nnodes + 1, p->anodes);
	p->nodes[p->nnodes++] = xstrdup(id);
}

static uint64_t seed_of(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Ports of group g on node vn: static ones as asked, dynamic ones the
 * lowest free in the range.  Returns NULL when the range is exhausted. */
static json_t *assign_ports(const struct job_group *g, const struct view_node *vn)
{
	json_t *ports = json_array();
	int taken[JOB_MAX_PORTS];
	size_t ntaken = 0;
	int next = SERVER_PORT_MIN;

	for (size_t i = 0; i < g->network.nports; i++) {
		const struct job_port *jp = &g->network.ports[i];
		int value = (int)jp->static_port;
		if (value <= 0) {
			for (;; next++) {
				bool used = node_usage_port_used(&vn->use, next);
				for (size_t k = 0; k < ntaken && !used; k++)
					used = taken[k] == next;
				if (!used)
					break;
			}
			if (next > SERVER_PORT_MAX) {
				json_decref(ports);
				return NULL;
			}
			value = next++;
		}
		taken[ntaken++] = value;
		json_array_append_new(ports, json_pack("{s:s, s:i, s:i}", "label", jp->label, "to",
						       jp->to > 0 ? (int)jp->to : value, "value",
						       value));
	}
	return ports;
}

/* Adds ephemeral_disk's disk_mib to an allocation's resources, the keys
 * kept in the store's canonical order (alloc_new). */
static void resources_add_disk(json_t *alloc, int64_t disk_mib)
{
	static const char *const keys[] = { "cpu_milli", "devices", "disk_mib", "memory_mib",
					    "ports", "tasks", NULL };
	json_t *r = json_object_get(alloc, "resources"), *sorted = json_object();

	json_object_set_new(r, "disk_mib", json_integer(disk_mib));
	for (size_t k = 0; keys[k]; k++)
		json_object_set(sorted, keys[k], json_object_get(r, keys[k]));
	json_object_set_new(alloc, "resources", sorted);
}

/* resources.tasks.<task> of task t: the devices it sees (filled by the
 * caller) and, for a task with `cores`, the ids of its reserved cores: the
 * placement's cores come in the order of the group's tasks with cores
 * (group_ask_init), count each, from *at on. */
static json_t *task_resources(const struct job_group *g, size_t t, const struct sched_snapshot *snap,
			      const struct sched_placement *pl, int *at)
{
	json_t *cores;
	if (g->tasks[t].resources.cores <= 0)
		return json_pack("{s:[]}", "devices");
	cores = json_array();
	for (int64_t k = 0; k < g->tasks[t].resources.cores && *at < pl->ncores; k++) {
		struct sched_core c;
		sched_node_core(snap, pl->node, pl->core[(*at)++], &c, NULL);
		json_array_append_new(cores, json_integer(c.id));
	}
	return json_pack("{s:o, s:[]}", "cores", cores, "devices");
}

static json_t *alloc_new(const json_t *job, const struct job_group *g, const struct place_need *need,
			 const char *eval_id, const struct view_node *vn,
			 const struct sched_snapshot *snap, const struct sched_placement *pl,
			 json_t *ports, int64_t now)
{
	char id[ID_LEN];
	json_t *devs = json_array(), *devices = json_object_get(vn->node, "devices"), *events, *out;
	const char *prev = need->previous ? jstr(need->previous, "id", "") : "";
	/* The allocation's name carries its index: "<job>.<group>[<i>]". */
	char *name = xasprintf("%s.%s[%d]", jstr(job, "id", ""), g->name, need->slot);

	/* The owner of each placed device: the blocks come in the order of
	 * the group's tasks and their device asks (group_ask_init places the
	 * first, multi_device.c the others), `count` devices each. */
	const char *owner[SCHED_MAX_DEVS_PER_ASK] = { 0 };
	json_t *tasks = json_object();
	int at = 0, core_at = 0;
	for (size_t t = 0; t < g->ntasks; t++) {
		const struct job_resources *r = &g->tasks[t].resources;
		for (size_t b = 0; b < r->ndevices; b++)
			for (int64_t k = 0; k < r->devices[b].count && at < pl->ndev; k++)
				owner[at++] = g->tasks[t].name;
		json_object_set_new(tasks, g->tasks[t].name, task_resources(g, t, snap, pl, &core_at));
	}

	new_id(id);
	for (int d = 0; d < pl->ndev; d++) {
		const char *did = sched_device_id(snap, pl->node, pl->dev[d].dev);
		const char *group = "", *mig = "";
		size_t i;
		json_t *x, *dj;
		json_array_foreach(devices, i, x)
			if (!strcmp(jstr(x, "id", ""), did)) {
				group = jstr(x, "group", "");
				mig = jstr(x, "mig_profile", "");
			}
		dj = json_pack("{s:s, s:s, s:i, s:I, s:b, s:s}", "id", did, "group",
			       group, "compute_milli", (int)pl->dev[d].compute,
			       "memory_mib", (json_int_t)pl->dev[d].memory_mib,
			       "whole", pl->dev[d].whole, "mig_profile", mig);
		/* the share quotas and GPU-hours count (teams.h) */
		json_object_set_new(dj, "gpu_milli", json_integer(alloc_device_gpu_milli(dj)));
		/* which task sees it (the agent shows a task only its own) */
		if (owner[d]) {
			json_object_set_new(dj, "task", json_string(owner[d]));
			json_array_append_new(json_object_get(json_object_get(tasks, owner[d]), "devices"),
					      json_string(did));
		}
		json_array_append_new(devs, dj);
	}
	events = need->previous ? json_deep_copy(json_object_get(need->previous, "reschedule_events")) : NULL;
	if (!json_is_array(events)) {
		json_decref(events);
		events = json_array();
	}
	if (need->previous && need->reschedule_attempts > jint(need->previous, "reschedule_attempts", 0))
		json_array_append_new(events, json_integer(now));
	/* Keys in the store's canonical (sorted) order: it keeps the record
	 * as it is instead of a sorted copy (store_batch_put_owned). */
	out = json_pack("{s:b, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:i, s:s, s:O, s:I,"
			 " s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:o,"
			 " s:{s:I, s:o, s:I, s:o, s:o}, s:s, s:{}}",
			 "borrowed", 0, "client_description", "", "client_status", "pending",
			 "create_time", (json_int_t)now, "desired_description", "",
			 "desired_status", "run", "eval_id", eval_id, "id", id, "index", need->slot,
			 "job_id", jstr(job, "id", ""), "job_version", json_object_get(job, "version"),
			 "modify_time", (json_int_t)now, "name", name,
			 "namespace", jstr(job, "namespace", "default"), "node_id", vn->id,
			 "node_name", jstr(vn->node, "name", vn->id), "previous_allocation", prev,
			 "priority", (json_int_t)jint(job, "priority", 50),
			 "reschedule_attempts", need->reschedule_attempts, "reschedule_events", events,
			 "resources", "cpu_milli", (json_int_t)pl->cpu_milli, "devices", devs,
			 "memory_mib", (json_int_t)pl->memory_mib, "ports", ports, "tasks", tasks,
			 "task_group", g->name, "task_states");
	free(name);
	if (pl->disk_mib > 0)
		resources_add_disk(out, pl->disk_mib);
	return out;
}

static void add_failure(struct plan *p, const char *group, const struct sched_explain *why,
			const struct sched_request *req, const char *reason)
{
	json_t *f = json_object_get(p->failed, group);
	if (!f) {
		struct strbuf sb = STRBUF_INIT;
		if (reason)
			strbuf_adds(&sb, reason);
		else
			sched_explain_format(why, req, &sb);
		f = json_pack("{s:s, s:i, s:i}", "explanation", sb.buf, "nodes_evaluated",
			      why ? why->nodes : 0, "missing", 0);
		json_object_set_new(p->failed, group, f);
		strbuf_release(&sb);
	}
	json_object_set_new(f, "missing", json_integer(jint(f, "missing", 0) + 1));
}

/* Records that an instance of group waits for its namespace's quota
 * (takes `why`, "quota team-a: nvidia/gpu 4/4"). */
static void plan_hold(struct plan *p, const char *group, char *why)
{
	char *msg = xasprintf("queued: %s", why);
	add_failure(p, group, NULL, NULL, msg);
	if (!p->queued)
		p->queued = msg;
	else
		free(msg);
	p->quota_held = true;
	free(why);
}

/* Whether any group that needs placing asks for a device. */
static bool asks_devices(const struct job *model, const struct reconcile_result *r)
{
	for (size_t k = 0; k < r->nplace; k++) {
		const struct job_group *g = &model->groups[r->place[k].group];
		for (size_t t = 0; t < g->ntasks; t++)
			if (g->tasks[t].resources.ndevices > 0)
				return true;
	}
	return false;
}

/* The least a group's instance can take of a GPU: a MIG slice is 1/7. */
static int64_t ask_gpu_lower(const struct group_ask *ask)
{
	if (!ask->req.device)
		return 0;
	return ask->dev.count * (ask->dev.compute > 0 && ask->dev.compute < SCHED_MILLI
				 ? ask->dev.compute : SCHED_MILLI / 7);
}

/* The GPU thousandths the first instance to place asks at least. */
static int64_t first_ask_lower(const struct job *model, const struct reconcile_result *r)
{
	struct group_ask ask;
	int64_t lower;
	const struct job_group *g = &model->groups[r->place[0].group];
	if (group_ask_init(&ask, model, g, NULL) < 0)
		return 0;
	lower = ask_gpu_lower(&ask) * (g->gang ? g->count : 1);
	group_ask_release(&ask);
	return lower;
}

/* Keeps of rules (constraints) those that do not depend on the job's own
 * allocations; false when one does (distinct_hosts, distinct_property):
 * then a failure of one job says nothing of another's. */
static bool shape_rules(json_t *dst, const char *key, const json_t *rules)
{
	json_t *r;
	size_t i;
	json_array_foreach(rules, i, r) {
		const char *op = jstr(r, "operator", "");
		if (!strcmp(op, "distinct_hosts") || !strcmp(op, "distinct_property"))
			return false;
	}
	json_object_set(dst, key, rules ? (json_t *)rules : json_null());
	return true;
}

/* The shape of what job still has to place, for the fair queue: every
 * field that decides where it may go except the GPU count (which
 * fair_queue_admit compares as ask_milli).  A job of the same shape and no
 * smaller ask cannot fit where this one did not.  NULL (always tried) when
 * the job places more than one group or more than one device block, or has
 * rules that count its own allocations.  A new string. */
static char *ask_shape(const json_t *job, const struct job *model, const struct reconcile_result *r)
{
	const json_t *g = json_array_get(json_object_get(job, "groups"), (size_t)r->place[0].group);
	json_t *shape, *tasks = json_array(), *t;
	size_t i, ndev = 0;
	bool ok = true;
	char *out = NULL;

	for (size_t k = 1; k < r->nplace; k++)
		if (r->place[k].group != r->place[0].group)
			ok = false;
	/* a gang that failed says nothing of one job of its shape, nor the
	 * other way round (it needs all its members at once) */
	if (!g || !model || model->groups[r->place[0].group].gang)
		ok = false;
	shape = json_object();
	ok = ok && shape_rules(shape, "job_constraints", json_object_get(job, "constraints")) &&
	     shape_rules(shape, "group_constraints", json_object_get(g, "constraints"));
	json_object_set(shape, "datacenters", json_object_get(job, "datacenters"));
	json_object_set(shape, "node_pool", json_object_get(job, "node_pool"));
	json_object_set(shape, "network", json_object_get(g, "network"));
	/* whether it may backfill on reserved GPUs (reservation.h): only
	 * batch work has a time limit; a shape without one stays as short
	 * as before (the queue hashes it for every entry it passes) */
	if (jint(g, "time_limit", 0) > 0)
		json_object_set(shape, "time_limit", json_object_get(g, "time_limit"));
	json_array_foreach(json_object_get(g, "tasks"), i, t) {
		const json_t *res = json_object_get(t, "resources"), *d;
		json_t *ts = json_object(), *devs = json_array();
		size_t j;
		json_object_set(ts, "driver", json_object_get(t, "driver"));
		ok = ok && shape_rules(ts, "constraints", json_object_get(t, "constraints"));
		json_object_set(ts, "cpu", json_object_get(res, "cpu"));
		json_object_set(ts, "cores", json_object_get(res, "cores"));
		if (json_object_get(res, "numa"))
			json_object_set(ts, "numa", json_object_get(res, "numa"));
		json_object_set(ts, "memory", json_object_get(res, "memory"));
		json_array_foreach(json_object_get(res, "devices"), j, d) {
			json_t *dc = json_copy((json_t *)d);
			json_object_del(dc, "count");
			json_object_del(dc, "affinities");
			json_array_append_new(devs, dc);
			ndev++;
		}
		json_object_set_new(ts, "devices", devs);
		json_array_append_new(tasks, ts);
	}
	json_object_set_new(shape, "tasks", tasks);
	if (ok && ndev == 1)
		out = json_dumps(shape, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	json_decref(shape);
	return out;
}

/* Whether the quota holds the first instance to place (no borrowing
 * possible); then every instance is recorded as held. */
static bool quota_holds_first(struct plan *p, const struct job *model, const struct reconcile_result *r)
{
	const struct job_group *g = &model->groups[r->place[0].group];
	struct group_ask ask;
	bool gpu_only = false;
	char *held;
	if (!p->quota->spec || group_ask_init(&ask, model, g, NULL) < 0)
		return false;
	/* a gang waits as a whole: its every member's demand counts */
	int64_t times = g->gang ? g->count : 1, lower = ask_gpu_lower(&ask) * times;
	held = quota_exceeds(p->quota, (ask.req.cpu_milli + ask.cores_cpu) * times,
			     ask.req.memory_mib * times, NULL,
			     lower, &gpu_only);
	if (held && gpu_only && quota_may_borrow(p->quota, lower)) {
		free(held);
		held = NULL;
	}
	group_ask_release(&ask);
	if (!held)
		return false;
	for (size_t k = 0; k < r->nplace; k++)
		plan_hold(p, model->groups[r->place[k].group].name, xstrdup(held));
	free(held);
	return true;
}

/* A gang's placement once each member was tried (gang.c): all of them
 * placed, each learns of the others; otherwise none is.  Returns whether
 * placements were taken back. */
static bool place_gang_end(struct sched_view *v, struct plan *p, json_t *live,
			   const struct gang_mark *gm, const struct job_group *g, size_t n)
{
	size_t fit = (size_t)(p->create - gm->create);
	if (fit == n && !p->gang_probe) {
		gang_annotate(v, p, gm, g);
		return false;
	}
	gang_undo(v, p, live, gm);
	if (fit < n)
		gang_explain(p, g->name, fit, n);
	return fit > 0;
}

/* Places the needs of group gi (consecutive entries of r->place). */
static void place_group(struct server *srv, struct sched_view *v, const json_t *job,
			const struct job *model, int gi, const struct place_need *needs, size_t n,
			const char *eval_id, json_t *live, struct plan *p, int64_t now)
{
	struct quota_state *q = p->quota;
	const struct job_group *g = &model->groups[gi];
	struct sched_options opt = { .policy = srv->policy,
				     .seed = seed_of(eval_id[0] ? eval_id : jstr(job, "id", "")) };
	struct herd_err err = { 0 };
	struct group_ask ask;
	struct sched_snapshot *snap = NULL;
	int *map = NULL;
	bool rebuild_each = g->network.nports > 0, reusable = true;
	struct gang_mark gm;

	if (group_ask_init(&ask, model, g, &err) < 0) {
		for (size_t i = 0; i < n; i++)
			add_failure(p, g->name, NULL, NULL, err.msg);
		return;
	}
	/* Which nodes may take an instance depends on what the instances
	 * before it took (ports, hosts, property values): a new snapshot
	 * each.  Otherwise one snapshot serves every instance, and the next
	 * group or evaluation planned against this view (a batch) when
	 * nothing else changed the view's usage meanwhile. */
	rebuild_each = rebuild_each || ask.distinct_hosts || ask.ndprops > 0 ||
		       (n && needs[0].node_id); /* a system job's: one node each */
	spread_counts_init(&ask, v, live, p->allocs);
	if (g->gang)
		gang_mark(&gm, p, live);
	if (rebuild_each)
		map = xcalloc(v->nnodes + 1, sizeof(int));
	else
		snap = view_snapshot_take(v, &ask, live, &map, &err);
	for (size_t i = 0; i < n; i++) {
		struct sched_placement pl;
		struct sched_explain why;
		struct view_node *vn;
		json_t *alloc, *ports;
		char *held = NULL;
		bool gpu_only = false, borrowed = false;
		int rc;

		if (rebuild_each) {
			sched_snapshot_free(snap);
			snap = needs[i].node_id ? system_snapshot(v, &ask, live, map, needs[i].node_id, &err)
						: snapshot_build(v, &ask, live, map, &err);
		}
		/* Quota first, with the least the ask can take (a MIG slice is
		 * 1/7 of a GPU); the placement's own devices are checked below. */
		if (q) {
			int64_t lower = ask_gpu_lower(&ask);
			held = quota_exceeds(q, ask.req.cpu_milli + ask.cores_cpu, ask.req.memory_mib,
					     NULL, lower, &gpu_only);
			if (held && gpu_only && quota_may_borrow(q, lower)) {
				free(held);
				held = NULL;
			}
			if (held) {
				plan_hold(p, g->name, held);
				continue;
			}
		}
		memset(&why, 0, sizeof(why));
		/* ephemeral_disk { sticky }: the node of the allocation replaced */
		ask.req.prefer_node = g->ephemeral_disk && g->ephemeral_disk->sticky &&
				      needs[i].previous ? jstr(needs[i].previous, "node_id", NULL) : NULL;
		rc = group_ask_place(snap, &ask, &opt, &pl, &why, &err);
		/* a node a system job does not match is not the job's: no failure */
		if (rc == -ENOSPC && needs[i].node_id && system_ineligible(&why))
			continue;
		/* a gang does not preempt (docs/teams.md): the minimal set is
		 * found per instance, and stopping others' work for part of a
		 * gang that may not fit as a whole frees GPUs for nothing */
		if (rc == -ENOSPC && eval_id[0] && model && !g->gang) {
			size_t before = json_array_size(p->preempted);
			int prc = preempt_for(srv, v, snap, map, &ask, job, q, &opt, p, now);
			if (prc == 0) {
				char *w = xasprintf("waiting for %zu preempted allocation(s) to stop",
						    json_array_size(p->preempted) - before);
				add_failure(p, g->name, NULL, NULL, w);
				free(w);
				continue;
			}
			if (prc == 1) {
				add_failure(p, g->name, NULL, NULL, "waiting for preempted allocations to stop");
				continue;
			}
		}
		if (rc < 0 && needs[i].node_id) { /* a system job's: said per node */
			system_note_failure(p->failed, v, g->name, needs[i].node_id, &why, &ask.req,
					    rc == -ENOSPC ? NULL : err.msg);
			continue;
		}
		if (rc < 0) {
			/* "0 nodes evaluated" helps nobody: say why there were none */
			char *none = rc == -ENOSPC && why.nodes == 0 ? no_candidates_reason(v) : NULL;
			add_failure(p, g->name, &why, &ask.req, none ? none : rc == -ENOSPC ? NULL : err.msg);
			free(none);
			continue;
		}
		vn = &v->nodes[map[pl.node]];
		ports = assign_ports(g, vn);
		if (!ports) {
			add_failure(p, g->name, NULL, NULL, "no dynamic port left in 20000-32000 on the chosen node");
			continue;
		}
		alloc = alloc_new(job, g, &needs[i], eval_id, vn, snap, &pl, ports, now);
		if (g->disconnect) /* disconnect { reconcile = "best_score" } compares it */
			json_object_set_new(alloc, "score", json_real(pl.score));
		if (p->deployment_id && deploy_group_rolls(g))
			deploy_join(alloc, g, p->deployment_id, needs[i].canary);
		drain_join(alloc, g, needs[i].previous); /* drain.h: its health paces a drain */
		if (needs[i].node_id) /* the node record it matched (reconcile_system.c) */
			json_object_set_new(alloc, "node_modify_index",
					    json_integer(jint(vn->node, "modify_index", 0)));
		if (q) {
			held = quota_exceeds(q, pl.cpu_milli, pl.memory_mib,
					     json_object_get(json_object_get(alloc, "resources"), "devices"), 0,
					     &gpu_only);
			borrowed = held && gpu_only && quota_may_borrow(q, alloc_gpu_milli(alloc));
			if (held && !borrowed) {
				plan_hold(p, g->name, held);
				json_decref(alloc);
				continue;
			}
			free(held);
			json_object_set_new(alloc, "borrowed", json_boolean(borrowed));
			quota_state_add(q, alloc, 1);
		}
		/* a device placement counts in the snapshot's hosted classes,
		 * which a snapshot built from the usage would not have */
		if (group_ask_apply(snap, &ask, &pl) < 0 || pl.ndev > 0)
			reusable = false;
		node_usage_add_alloc(&vn->use, alloc, 1);
		spread_counts_add(&ask, vn);
		v->use_gen++;
		json_array_append(live, alloc);
		json_array_append(p->allocs, alloc);
		plan_note_node(p, vn->id);
		if (p->placements) {
			json_t *pj = json_pack("{s:s, s:s, s:s, s:i, s:O}", "task_group", g->name,
					       "node_id", vn->id, "node_name",
					       jstr(vn->node, "name", vn->id), "index", needs[i].slot,
					       "devices",
					       json_object_get(json_object_get(alloc, "resources"), "devices"));
			/* the score's spread part, where the group spreads */
			if (ask.req.nspreads)
				json_object_set_new(pj, "spread_score", json_real(pl.spread));
			json_array_append_new(p->placements, pj);
		}
		json_decref(alloc);
		p->create++;
	}
	if (g->gang && place_gang_end(v, p, live, &gm, g, n))
		reusable = false; /* the snapshot took what was taken back */
	if (rebuild_each) {
		sched_snapshot_free(snap);
		free(map);
	} else {
		view_snapshot_put(v, &ask, snap, map, reusable);
	}
	group_ask_release(&ask);
}

/* Whether the quota holds the gang whose needs are r->place[k..k+n):
 * quota_holds_first knows only the least one instance may take (a MIG
 * slice), and a gang counts its whole demand, so its members are placed
 * against the quota and taken back again (gang_probe).  Only a gang that
 * fits its quota enters the fair queue: one held there would enter, try,
 * leave and wake itself again forever (nothing of it stays placed to
 * change the next try).  Then every instance is recorded as held, as by
 * quota_holds_first. */
static bool gang_probe_holds(struct server *srv, struct sched_view *v, const json_t *job,
			     const struct job *model, const struct reconcile_result *r, size_t k,
			     size_t n, json_t *live, struct plan *p, int64_t now)
{
	const struct job_group *g = &model->groups[r->place[k].group];
	struct plan probe;
	bool held;

	plan_init(&probe);
	plan_no_placements(&probe);
	probe.quota = p->quota;
	probe.gang_probe = true;
	place_group(srv, v, job, model, r->place[k].group, &r->place[k], n, "", live, &probe, now);
	held = probe.quota_held;
	probe.quota = NULL;
	if (held) {
		json_t *f = json_object_get(probe.failed, g->name);
		for (size_t i = 0; i < r->nplace; i++)
			add_failure(p, model->groups[r->place[i].group].name, NULL, NULL,
				    jstr(f, "explanation", probe.queued));
		p->queued = probe.queued;
		probe.queued = NULL;
		p->quota_held = true;
	}
	plan_release(&probe);
	return held;
}

/* Whether the quota holds any gang group the job has to place. */
static bool gang_quota_holds(struct server *srv, struct sched_view *v, const json_t *job,
			     const struct job *model, const struct reconcile_result *r,
			     json_t *live, struct plan *p, int64_t now)
{
	if (!p->quota->spec)
		return false;
	for (size_t k = 0; k < r->nplace;) {
		size_t e = k;
		while (e < r->nplace && r->place[e].group == r->place[k].group)
			e++;
		if (model->groups[r->place[k].group].gang &&
		    gang_probe_holds(srv, v, job, model, r, k, e - k, live, p, now))
			return true;
		k = e;
	}
	return false;
}

/* The quota state of namespace ns.  A namespace found without a quota
 * stays so for the other plans against v (a batch is planned as of one
 * moment; a quota attached meanwhile counts from the next view on). */
static int plan_read_quota(struct server *srv, struct sched_view *v, const char *ns,
			   struct quota_state *q, struct herd_err *err)
{
	int rc;
	if (json_object_get(v->no_quota, ns)) {
		quota_state_none(q, ns);
		return 0;
	}
	rc = quota_state_read(srv->store, ns, q, err);
	if (rc == 0 && !q->spec) {
		if (!v->no_quota)
			v->no_quota = json_object();
		json_object_set_new(v->no_quota, ns, json_true());
	}
	return rc;
}

/* The dependency gate: a job that names dependencies and has no
 * allocation yet is placed only once they all hold.  Returns 1 when it
 * must not be placed now (p says why: every group fails with the
 * reason, so readers and `job run` see it), 0 to go on, or an error. */
static int plan_gate(struct server *srv, struct sched_view *v, const json_t *job,
		     const struct job *model, struct plan *p, struct herd_err *err)
{
	char *why = NULL;
	int verdict;

	if (!model || !model->ndepends_on || json_array_size(v->job_allocs))
		return 0;
	verdict = depends_gate(srv, job, &why, &p->dep_waiting_for, err);
	if (verdict < 0 || verdict == DEPENDS_HOLD)
		return verdict;
	for (size_t g = 0; g < model->ngroups; g++)
		for (int64_t k = 0; k < model->groups[g].count; k++)
			add_failure(p, model->groups[g].name, NULL, NULL, why);
	if (verdict == DEPENDS_NEVER)
		p->dep_never = why;
	else
		p->dep_waiting = why;
	return 1;
}

int plan_compute(struct server *srv, struct sched_view *v, const json_t *job,
		 const char *eval_id, struct plan *p, struct herd_err *err)
{
	struct reconcile_result r;
	struct job *model = NULL;
	int64_t now = now_ns();
	json_t *live, *al;
	size_t i;
	int rc;

	/* a stopped job, and a periodic or parameterized parent (its
	 * children run, not it), want nothing placed */
	if (job && !jbool(job, "stop", false) && !job_is_parent(job)) {
		model = job_from_stored(job);
		if (!model)
			return herd_errf(err, -EINVAL, "stored job %s does not decode", jstr(job, "id", "?"));
	}
	rc = plan_gate(srv, v, job, model, p, err);
	if (rc != 0) {
		job_free(model);
		return rc < 0 ? rc : 0;
	}
	rc = reconcile(srv->store, job, model, v, now, &r, err);
	if (rc < 0) {
		job_free(model);
		return rc;
	}
	/* What the job runs now, for distinct_hosts; stops free their slot
	 * only once their client ends, so they stay in it. */
	live = json_array();
	json_array_foreach(v->job_allocs, i, al)
		if (alloc_takes_capacity(al))
			json_array_append(live, al);
	json_array_foreach(r.stops, i, al) {
		json_array_append(p->allocs, al);
		p->destroy++;
	}
	json_array_foreach(r.updates, i, al) {
		json_array_append(p->allocs, al);
		p->update++;
	}
	p->ignore = r.ignore;
	p->followup_at = r.followup_at;
	p->versions = r.versions;
	r.versions = NULL;
	p->deployment_id = r.deployment_id;
	r.deployment_id = NULL;
	p->revert = r.revert;
	p->revert_to = r.revert_to;
	if (model && r.nplace > 0) {
		const char *ns = jstr(job, "namespace", "default");
		p->quota = xcalloc(1, sizeof(*p->quota));
		rc = plan_read_quota(srv, v, ns, p->quota, err);
		if (rc < 0) {
			free(p->quota);
			p->quota = NULL;
			goto out;
		}
		p->needs_gpus = asks_devices(model, &r);
		/* a job its own quota holds waits for its team, not in the queue
		 * across teams: check its first instance before entering */
		if (eval_id[0] && p->needs_gpus &&
		    (quota_holds_first(p, model, &r) ||
		     gang_quota_holds(srv, v, job, model, &r, live, p, now))) {
			goto out; /* the worker takes it out of the queue */
		} else if (eval_id[0] && p->needs_gpus && !job_type_is_system(model->type)) {
			/* a system job does not enter the queue: what it fails
			 * to place is one node's, not the cluster's, and it must
			 * not hold up jobs of its shape that fit elsewhere
			 * (docs/jobspec.md, "System jobs") */
			char *ahead = NULL, *shape = ask_shape(job, model, &r);
			bool mine = fair_queue_admit(srv, ns, jstr(job, "id", ""), jint(job, "priority", 50),
						     jint(job, "submit_time", 0), false,
						     first_ask_lower(model, &r), shape, &ahead);
			free(shape);
			if (!mine) {
				p->queued = xasprintf("queued: behind %s in the fair queue", ahead);
				p->fq_held = true;
				for (size_t k = 0; k < r.nplace; k++)
					add_failure(p, model->groups[r.place[k].group].name, NULL, NULL, p->queued);
				free(ahead);
				goto out;
			}
		}
	}
	if (p->needs_gpus)
		resv_view(srv, v, now);
	for (size_t k = 0; k < r.nplace;) {
		size_t e = k;
		while (e < r.nplace && r.place[e].group == r.place[k].group)
			e++;
		place_group(srv, v, job, model, r.place[k].group, &r.place[k], e - k, eval_id, live, p, now);
		k = e;
	}
	/* it tried in its turn and did not fit: it may have waited long
	 * enough for GPUs to be reserved for it */
	if (p->needs_gpus && eval_id[0] && json_object_size(p->failed) && !p->reserve &&
	    !p->quota_held && !job_type_is_system(model->type))
		resv_consider(srv, v, job, model, r.place[0].group, live, p->create > 0, now);
out:
	json_decref(live);
	reconcile_result_release(&r);
	job_free(model);
	return rc;
}
