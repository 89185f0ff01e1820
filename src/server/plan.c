/* plan: from a view of a job and the cluster to a plan: reconcile, then
 * place each missing instance with the engine, taking in the view what
 * each placement takes so that the next one sees it.  Used by the workers
 * and by the plan endpoint (a dry run: the same code, nothing stored). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

void plan_init(struct plan *p)
{
	memset(p, 0, sizeof(*p));
	p->allocs = json_array();
	p->failed = json_object();
	p->placements = json_array();
}

void plan_release(struct plan *p)
{
	if (!p)
		return;
	json_decref(p->allocs);
	json_decref(p->failed);
	json_decref(p->placements);
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
		json_array_append_new(ports, json_pack("{s:s, s:i, s:i}", "label", jp->label,
						       "value", value, "to",
						       jp->to > 0 ? (int)jp->to : value));
	}
	return ports;
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

	new_id(id);
	for (int d = 0; d < pl->ndev; d++) {
		const char *did = sched_device_id(snap, pl->node, pl->dev[d].dev);
		const char *group = "";
		size_t i;
		json_t *x;
		json_array_foreach(devices, i, x)
			if (!strcmp(jstr(x, "id", ""), did))
				group = jstr(x, "group", "");
		json_array_append_new(devs, json_pack("{s:s, s:s, s:i, s:I, s:b}", "id", did, "group",
						      group, "compute_milli", (int)pl->dev[d].compute,
						      "memory_mib", (json_int_t)pl->dev[d].memory_mib,
						      "whole", pl->dev[d].whole));
	}
	events = need->previous ? json_deep_copy(json_object_get(need->previous, "reschedule_events")) : NULL;
	if (!json_is_array(events)) {
		json_decref(events);
		events = json_array();
	}
	if (need->previous && need->reschedule_attempts > jint(need->previous, "reschedule_attempts", 0))
		json_array_append_new(events, json_integer(now));
	out = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s,"
			 " s:s, s:s, s:{s:I, s:I, s:o, s:o}, s:{}, s:s, s:i, s:o, s:I, s:I}",
			 "id", id, "namespace", jstr(job, "namespace", "default"),
			 "job_id", jstr(job, "id", ""), "job_version", json_object_get(job, "version"),
			 "task_group", g->name, "name", name,
			 "index", need->slot, "node_id", vn->id, "node_name", jstr(vn->node, "name", vn->id),
			 "eval_id", eval_id, "desired_status", "run", "desired_description", "",
			 "client_status", "pending", "client_description", "",
			 "resources", "cpu_milli", (json_int_t)pl->cpu_milli, "memory_mib",
			 (json_int_t)pl->memory_mib, "devices", devs, "ports", ports, "task_states",
			 "previous_allocation", prev, "reschedule_attempts", need->reschedule_attempts,
			 "reschedule_events", events, "create_time", (json_int_t)now, "modify_time",
			 (json_int_t)now);
	free(name);
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

/* Places the needs of group gi (consecutive entries of r->place). */
static void place_group(struct server *srv, struct sched_view *v, const json_t *job,
			const struct job *model, int gi, const struct place_need *needs, size_t n,
			const char *eval_id, json_t *live, struct plan *p, int64_t now)
{
	const struct job_group *g = &model->groups[gi];
	struct sched_options opt = { .policy = srv->policy,
				     .seed = seed_of(eval_id[0] ? eval_id : jstr(job, "id", "")) };
	struct herd_err err = { 0 };
	struct group_ask ask;
	struct sched_snapshot *snap = NULL;
	int *map = xcalloc(v->nnodes + 1, sizeof(int));
	bool rebuild_each = g->network.nports > 0 || false;

	if (group_ask_init(&ask, model, g, &err) < 0) {
		for (size_t i = 0; i < n; i++)
			add_failure(p, g->name, NULL, NULL, err.msg);
		free(map);
		return;
	}
	rebuild_each = rebuild_each || ask.distinct_hosts;
	for (size_t i = 0; i < n; i++) {
		struct sched_placement pl;
		struct sched_explain why;
		struct view_node *vn;
		json_t *alloc, *ports;
		int rc;

		if (!snap || rebuild_each) {
			sched_snapshot_free(snap);
			snap = snapshot_build(v, &ask, live, map, &err);
		}
		memset(&why, 0, sizeof(why));
		rc = sched_place(snap, &ask.req, &opt, &pl, &why, &err);
		if (rc < 0) {
			add_failure(p, g->name, &why, &ask.req, rc == -ENOSPC ? NULL : err.msg);
			continue;
		}
		vn = &v->nodes[map[pl.node]];
		ports = assign_ports(g, vn);
		if (!ports) {
			add_failure(p, g->name, NULL, NULL, "no dynamic port left in 20000-32000 on the chosen node");
			continue;
		}
		alloc = alloc_new(job, g, &needs[i], eval_id, vn, snap, &pl, ports, now);
		sched_apply(snap, &pl);
		node_usage_add_alloc(&vn->use, alloc, 1);
		json_array_append(live, alloc);
		json_array_append(p->allocs, alloc);
		plan_note_node(p, vn->id);
		json_array_append_new(p->placements,
			json_pack("{s:s, s:s, s:s, s:i, s:O}", "task_group", g->name, "node_id", vn->id,
				  "node_name", jstr(vn->node, "name", vn->id), "index", needs[i].slot,
				  "devices", json_object_get(json_object_get(alloc, "resources"), "devices")));
		json_decref(alloc);
		p->create++;
	}
	sched_snapshot_free(snap);
	group_ask_release(&ask);
	free(map);
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

	if (job && !jbool(job, "stop", false)) {
		model = job_from_stored(job);
		if (!model)
			return herd_errf(err, -EINVAL, "stored job %s does not decode", jstr(job, "id", "?"));
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
	for (size_t k = 0; k < r.nplace;) {
		size_t e = k;
		while (e < r.nplace && r.place[e].group == r.place[k].group)
			e++;
		place_group(srv, v, job, model, r.place[k].group, &r.place[k], e - k, eval_id, live, p, now);
		k = e;
	}
	json_decref(live);
	reconcile_result_release(&r);
	job_free(model);
	return 0;
}
