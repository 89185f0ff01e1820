/* gang: a group whose instances are placed all together or not at all
 * (`gang = true`, docs/scheduling.md "Gangs").  plan.c places a gang's
 * members one by one as any group's, each taking in the view what it
 * took so that the next sees it; this file remembers where the plan stood
 * before the first member (gang_mark), takes everything back when one did
 * not fit (gang_undo), and otherwise writes on every member the gang it
 * belongs to (gang_annotate), which is how the members find each other
 * (the agent's HERD_GANG_* variables, taskenv.h); a restart that kept the
 * members that completed (gang_restart) lists them too.  Nothing here runs for a
 * group without `gang`. */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

void gang_mark(struct gang_mark *m, const struct plan *p, const json_t *live)
{
	m->allocs = json_array_size(p->allocs);
	m->live = json_array_size(live);
	m->placements = p->placements ? json_array_size(p->placements) : 0;
	m->nnodes = p->nnodes;
	m->create = p->create;
}

/* Drops the entries of a past its first n. */
static void array_truncate(json_t *a, size_t n)
{
	while (a && json_array_size(a) > n)
		json_array_remove(a, json_array_size(a) - 1);
}

void gang_undo(struct sched_view *v, struct plan *p, json_t *live, const struct gang_mark *m)
{
	for (size_t i = m->allocs; i < json_array_size(p->allocs); i++) {
		const json_t *al = json_array_get(p->allocs, i);
		struct view_node *vn = sched_view_node(v, jstr(al, "node_id", ""));
		if (vn)
			node_usage_add_alloc(&vn->use, al, -1);
		if (p->quota)
			quota_state_add(p->quota, al, -1);
	}
	/* a snapshot built at the old generation counted what was taken back */
	v->use_gen++;
	array_truncate(p->allocs, m->allocs);
	array_truncate(live, m->live);
	array_truncate(p->placements, m->placements);
	for (size_t i = m->nnodes; i < p->nnodes; i++)
		free(p->nodes[i]);
	p->nnodes = m->nnodes;
	p->create = m->create;
}

char *gang_node_host(const json_t *node)
{
	const char *addr = jstr(node, "http_addr", ""), *end;
	if (addr[0] == '[') {
		end = strchr(addr, ']');
		return end ? xstrndup(addr + 1, (size_t)(end - addr - 1)) : xstrdup("");
	}
	end = strrchr(addr, ':');
	return end ? xstrndup(addr, (size_t)(end - addr)) : xstrdup(addr);
}

/* One member as every member's record lists it. */
static json_t *gang_member(struct sched_view *v, const json_t *al)
{
	const char *node_id = jstr(al, "node_id", "");
	struct view_node *vn = sched_view_node(v, node_id);
	char *host = gang_node_host(vn ? vn->node : NULL);
	json_t *ports = json_object_get(json_object_get(al, "resources"), "ports");
	json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:I, s:O}", "address", host, "alloc_id",
			      jstr(al, "id", ""), "node_id", node_id, "node_name",
			      jstr(al, "node_name", node_id), "rank", (json_int_t)jint(al, "index", 0),
			      "ports", ports ? ports : json_array());
	free(host);
	return m;
}

/* The member of slot k that a partial restart kept (a batch member that
 * completed: reconcile.c, gang_restart), from the job's allocations in the
 * view, or NULL. */
static const json_t *kept_member(const struct sched_view *v, const struct job_group *g, int64_t k)
{
	const json_t *al;
	size_t i;

	json_array_foreach(v->job_allocs, i, al)
		if (jint(al, "index", -1) == k && !strcmp(jstr(al, "task_group", ""), g->name) &&
		    !strcmp(jstr(al, "desired_status", "run"), "run") &&
		    !strcmp(jstr(al, "client_status", ""), "complete"))
			return al;
	return NULL;
}

void gang_annotate(struct sched_view *v, struct plan *p, const struct gang_mark *m,
		   const struct job_group *g)
{
	size_t n = json_array_size(p->allocs) - m->allocs;
	unsigned char *placed = xcalloc((size_t)g->count + 1, 1);
	json_t *members = json_array();

	for (size_t i = 0; i < n; i++) {
		const json_t *al = json_array_get(p->allocs, m->allocs + i);
		int64_t k = jint(al, "index", -1);
		if (k >= 0 && k < g->count)
			placed[k] = 1;
		json_array_append_new(members, gang_member(v, al));
	}
	/* members kept from the gang before (their work is done) are still
	 * its members: ranks and size stay those of the whole group */
	for (int64_t k = 0; n < (size_t)g->count && k < g->count; k++) {
		const json_t *al = placed[k] ? NULL : kept_member(v, g, k);
		if (al)
			json_array_append_new(members, gang_member(v, al));
	}
	free(placed);
	/* members in rank order: HERD_GANG_HOSTS lists them so */
	for (size_t i = 1; i < json_array_size(members); i++)
		for (size_t j = i; j > 0 && jint(json_array_get(members, j - 1), "rank", 0) >
					     jint(json_array_get(members, j), "rank", 0); j--) {
			json_t *a = json_incref(json_array_get(members, j - 1));
			json_array_set(members, j - 1, json_array_get(members, j));
			json_array_set_new(members, j, a);
		}
	for (size_t i = 0; i < n; i++) {
		json_t *al = json_array_get(p->allocs, m->allocs + i);
		/* every member shares the one members array: nothing changes
		 * a record once planned */
		json_object_set_new(al, "gang", json_pack("{s:O, s:I, s:I}", "members", members,
							    "rank", (json_int_t)jint(al, "index", 0),
							    "size", (json_int_t)json_array_size(members)));
	}
	json_decref(members);
}

void gang_explain(struct plan *p, const char *group, size_t fit, size_t n)
{
	json_t *f = json_object_get(p->failed, group);
	const char *why = f ? jstr(f, "explanation", "") : "";
	char *msg = xasprintf("gang of %zu: %zu of %zu members fit%s%s", n, fit, n, *why ? "; " : "",
			      why);
	if (!f) {
		f = json_pack("{s:s, s:i, s:i}", "explanation", "", "nodes_evaluated", 0, "missing", 0);
		json_object_set_new(p->failed, group, f);
	}
	json_object_set_new(f, "explanation", json_string(msg));
	json_object_set_new(f, "missing", json_integer((json_int_t)n));
	free(msg);
}
