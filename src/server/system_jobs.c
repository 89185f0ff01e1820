/* system_jobs: placing system and sysbatch jobs (reconcile_system.c says
 * what they need) and the evaluations a node's change owes them.
 *
 * A system job's instance is pinned to one node: the engine is handed a
 * snapshot of that node alone (system_snapshot), so what it answers is
 * about that node only.  Its answer tells eligibility from room: a node
 * the job's pool, datacenters, constraints, host volumes or device asks
 * rule out is simply not the job's (system_ineligible: no failure, as in
 * Nomad); a node that matches but lacks cpu, memory, disk or free devices
 * is a placement failure, explained per node (system_note_failure), and
 * the evaluation blocks until capacity changes as any other does.
 *
 * The same test, asked again of a node that runs an allocation of the job
 * (system_unfit), tells when the node stopped matching it: its attributes,
 * meta, class, pool or datacenter changed, or a device the allocation
 * holds became unhealthy or went away. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "server/server-int.h"
#include "spec/job_system.h"

struct sched_snapshot *system_snapshot(struct sched_view *v, const struct group_ask *ask,
				       const json_t *job_allocs_live, int *map, const char *node_id,
				       struct herd_err *err)
{
	struct sched_view one;
	struct sched_snapshot *snap;
	size_t i;

	for (i = 0; i < v->nnodes; i++)
		if (!strcmp(v->nodes[i].id, node_id))
			break;
	if (i == v->nnodes) /* gone meanwhile: nothing to place on */
		return sched_snapshot_new();
	/* the same view but for its node list: that node alone */
	one = *v;
	one.nodes = &v->nodes[i];
	one.nnodes = 1;
	one.snap = NULL;
	snap = snapshot_build(&one, ask, job_allocs_live, map, err);
	if (sched_snapshot_nodes(snap) == 1)
		map[0] = (int)i; /* the caller indexes v's nodes */
	return snap;
}

bool system_ineligible(const struct sched_explain *why)
{
	/* cores (resources { cores }) would count as room here too, once the
	 * engine reports them apart from the node offering none */
	bool room = why->filtered_cpu || why->filtered_memory || why->filtered_disk ||
		    why->filtered_devices || why->nmisses > 0;
	return why->nodes == 0 || !room;
}

/* Why vn no longer has device of alloc it holds (gone, unhealthy), or
 * NULL.  A new string. */
static char *device_unfit(const json_t *alloc, const struct view_node *vn)
{
	const json_t *d, *nd;
	size_t i, j;

	json_array_foreach(json_object_get(json_object_get(alloc, "resources"), "devices"), i, d) {
		const char *id = jstr(d, "id", "");
		const json_t *found = NULL;
		json_array_foreach(json_object_get(vn->node, "devices"), j, nd)
			if (!strcmp(jstr(nd, "id", ""), id))
				found = nd;
		if (!found)
			return xasprintf("node no longer matches the job: device %s is gone", id);
		if (!jbool(found, "healthy", true)) {
			const char *why = jstr(found, "health_reason", "");
			return xasprintf("node no longer matches the job: device %s is unhealthy%s%.200s", id,
					 *why ? ": " : "", why);
		}
	}
	return NULL;
}

/* The engine's reasons for one node, on one line ("; " between them). */
static char *explain_line(const struct sched_explain *why, const struct sched_request *req)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	const char *text, *nl;

	sched_explain_format(why, req, &sb);
	/* the first line counts nodes: one here */
	text = (nl = strchr(sb.buf, '\n')) && nl[1] ? nl + 1 : sb.buf;
	while (*text) {
		size_t len = strcspn(text, "\n");
		while (len && *text == ' ')
			text++, len--;
		if (len)
			strbuf_addf(&out, "%s%.*s", out.len ? "; " : "", (int)len, text);
		text += len + (text[len] == '\n');
	}
	strbuf_release(&sb);
	return strbuf_detach(&out, NULL);
}

char *system_unfit(const struct sched_view *v, const struct group_ask *ask, const json_t *alloc,
		   const struct view_node *vn)
{
	struct view_node node = *vn;
	struct sched_view one = { 0 };
	struct sched_options opt = { 0 };
	struct sched_placement pl;
	struct sched_explain why;
	struct herd_err err = { 0 };
	struct sched_snapshot *snap;
	json_t *none = json_array();
	int map[2] = { 0, 0 }, rc;
	char *out = device_unfit(alloc, vn), *reasons;

	if (out || !vn->schedulable)
		goto done;
	/* the node as if alloc were not on it: what it holds is free for
	 * the question; no reservation either (one has none): a running
	 * allocation is not stopped for a waiting job's GPUs */
	memset(&node.use, 0, sizeof(node.use));
	node_usage_copy(&node.use, &vn->use);
	node_usage_add_alloc(&node.use, alloc, -1);
	one.index = v->index;
	one.job = v->job;
	one.nodes = &node;
	one.nnodes = 1;
	memset(&why, 0, sizeof(why));
	snap = snapshot_build(&one, ask, none, map, &err);
	/* a node the engine refused (bad numbers from its agent: err set)
	 * says nothing of the job */
	if (sched_snapshot_nodes(snap) == 0)
		rc = err.code ? -EINVAL : -ENOSPC;
	else
		rc = group_ask_place(snap, ask, &opt, &pl, &why, &err);
	/* room the node lacks (its resources shrank) is no reason to stop
	 * what runs; an error is the engine's, not the node's: kept too */
	if (rc == -ENOSPC && system_ineligible(&why)) {
		reasons = why.nodes ? explain_line(&why, &ask->req)
				    : xstrdup("the job's node_pool or datacenters rule it out");
		out = xasprintf("node no longer matches the job: %s", reasons);
		free(reasons);
	}
	sched_snapshot_free(snap);
	node_usage_release(&node.use);
done:
	json_decref(none);
	return out;
}

void system_note_failure(json_t *failed, struct sched_view *v, const char *group, const char *node_id,
			 const struct sched_explain *why, const struct sched_request *req,
			 const char *reason)
{
	const struct view_node *vn = sched_view_node(v, node_id);
	const char *node_name = vn ? jstr(vn->node, "name", node_id) : node_id;
	json_t *f = json_object_get(failed, group), *nodes;
	struct strbuf sb = STRBUF_INIT, all = STRBUF_INIT;
	const char *text, *nl;

	if (reason) {
		strbuf_adds(&sb, reason);
	} else {
		sched_explain_format(why, req, &sb);
	}
	/* "no node fits (1 node evaluated)" says nothing for one node: the
	 * lines under it say why this one does not */
	text = sb.buf;
	if (!reason && (nl = strchr(text, '\n')) && nl[1])
		text = nl + 1;
	if (!f) {
		f = json_pack("{s:s, s:i, s:i, s:{}}", "explanation", "", "nodes_evaluated", 0,
			      "missing", 0, "nodes");
		json_object_set_new(failed, group, f);
	}
	nodes = json_object_get(f, "nodes");
	json_object_set_new(nodes, node_name, json_string(text));
	json_object_set_new(f, "missing", json_integer(jint(f, "missing", 0) + 1));
	json_object_set_new(f, "nodes_evaluated", json_integer(jint(f, "nodes_evaluated", 0) + 1));
	/* the explanation names each node and its reasons, indented */
	strbuf_adds(&all, jstr(f, "explanation", ""));
	strbuf_addf(&all, "on node %s:\n", node_name);
	while (*text) {
		size_t len = strcspn(text, "\n");
		while (len && (*text == ' '))
			text++, len--;
		if (len)
			strbuf_addf(&all, "  %.*s\n", (int)len, text);
		text += len + (text[len] == '\n');
	}
	json_object_set_new(f, "explanation", json_string(all.buf));
	strbuf_release(&all);
	strbuf_release(&sb);
}

int system_node_evals(struct store *s, const char *node_id, struct store_batch *b, json_t *evals,
		      struct herd_err *err)
{
	json_t *jobs = NULL, *job;
	size_t i;
	int rc = store_list(s, STORE_JOB, NULL, &jobs, err);

	if (rc < 0)
		return rc;
	json_array_foreach(jobs, i, job) {
		json_t *e;
		/* sysbatch runs on the nodes present at its submission: a node
		 * joining owes it nothing */
		if (strcmp(jstr(job, "type", ""), "system") || jbool(job, "stop", false) ||
		    job_is_parent(job))
			continue;
		e = eval_new(jstr(job, "namespace", "default"), jstr(job, "id", ""), "node-update",
			     node_id);
		store_batch_put(b, STORE_EVAL, e);
		json_array_append_new(evals, e);
	}
	json_decref(jobs);
	return 0;
}
