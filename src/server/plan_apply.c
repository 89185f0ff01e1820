/* plan_apply: commits a plan atomically, on condition that nothing it was
 * computed from has moved in a way that matters: the job record, the job's
 * allocations, and the capacity of every node that receives a new
 * allocation.
 *
 * The capacity re-check runs inside the write transaction (a store check):
 * for each node the plan places on whose allocations changed after the
 * view's index, every allocation there that takes capacity now must be one
 * the view counted, with the same resources.  Two workers that planned the
 * same free GPU both read that node at some index; the first commit adds an
 * allocation the second's view did not count, so the second fails with
 * -ESTALE and its worker plans again from a fresh view.  That is what keeps
 * a GPU, a MIG slice or a share from being handed out twice.  A change
 * that only takes capacity away (a client reporting its allocation
 * running, complete or failed) does not: the plan fit what the view
 * counted, which is at least what the node holds now.  That matters: on a
 * busy node clients report every few milliseconds, and a plain "the node's
 * allocations have not changed" condition made most plans retry. */
#include <errno.h>
#include <string.h>

#include "server/server-int.h"

struct apply_check {
	const struct sched_view *v;
	const struct plan_commit *pc;
	size_t n;
};

/* The capacity of node id as the plan saw it, re-checked as described
 * above (inside the commit's transaction). */
static int node_capacity_check(struct store *s, const struct sched_view *v, const char *id,
			       struct herd_err *err)
{
	const struct view_node *vn = NULL;
	struct store_filter nf = { NULL, NULL, id };
	json_t *changed = NULL, *al;
	uint64_t idx = 0;
	size_t i;
	int rc = store_node_allocs_index(s, id, &idx, err);

	if (rc < 0 || idx <= v->index)
		return rc;
	for (i = 0; i < v->nnodes && !vn; i++)
		if (!strcmp(v->nodes[i].id, id))
			vn = &v->nodes[i];
	if (!vn || !vn->counted)
		return herd_errf(err, -ESTALE, "allocations of node %s changed after index %llu", id,
				 (unsigned long long)v->index);
	/* shared records: only read */
	rc = store_list_changed_shared(s, STORE_ALLOC, &nf, v->index, &changed, err);
	if (rc < 0)
		return rc;
	json_array_foreach(changed, i, al) {
		json_t *was, *res;
		if (!alloc_takes_capacity(al))
			continue;
		was = json_object_get(vn->counted, jstr(al, "id", ""));
		res = json_object_get(al, "resources");
		if (!was || !(res ? json_equal(was, res) : json_object_size(was) == 0)) {
			rc = herd_errf(err, -ESTALE, "node %s took allocation %s after index %llu", id,
				       jstr(al, "id", ""), (unsigned long long)v->index);
			break;
		}
	}
	json_decref(changed);
	return rc;
}

/* Whether plan k places on node id before plan j (or, k == j, before
 * index i of its own list): then that node is checked already. */
static bool node_seen(const struct plan_commit *pc, size_t j, size_t i, const char *id)
{
	for (size_t k = 0; k <= j; k++)
		for (size_t m = 0; m < (k == j ? i : pc[k].p->nnodes); m++)
			if (!strcmp(pc[k].p->nodes[m], id))
				return true;
	return false;
}

static int apply_check(struct store *s, void *arg, struct herd_err *err)
{
	const struct apply_check *c = arg;
	int rc = 0;
	for (size_t j = 0; j < c->n && rc == 0; j++) {
		const struct plan *p = c->pc[j].p;
		for (size_t i = 0; i < p->nnodes && rc == 0; i++)
			if (!node_seen(c->pc, j, i, p->nodes[i]))
				rc = node_capacity_check(s, c->v, p->nodes[i], err);
		/* the namespace's usage has not grown since the plan counted
		 * its quota */
		if (rc == 0 && p->quota && p->quota->spec && p->create > 0)
			rc = quota_commit_check(s, (void *)p, err);
	}
	return rc;
}

/* Queues plan pc's writes and conditions in b. */
static void batch_add_plan(struct store_batch *b, const struct sched_view *v,
			   const struct plan_commit *pc)
{
	const struct plan *p = pc->p;
	const char *ns = jstr(pc->eval, "namespace", "default"), *job_id = jstr(pc->eval, "job_id", "");
	size_t i;
	json_t *x;

	/* Nothing changes a plan's records once it is committed: the store
	 * may keep those already in its canonical key order (new allocations,
	 * evaluations) as its cached records instead of a sorted copy. */
	json_array_foreach(p->allocs, i, x)
		store_batch_put_owned(b, STORE_ALLOC, json_incref(x));
	store_batch_put_owned(b, STORE_EVAL, json_incref(pc->eval));
	json_array_foreach(pc->extra_evals, i, x)
		store_batch_put_owned(b, STORE_EVAL, json_incref(x));
	json_array_foreach(p->extra_evals, i, x)
		store_batch_put_owned(b, STORE_EVAL, json_incref(x));
	/* deployments' progress: on the version records as read */
	json_array_foreach(p->versions, i, x) {
		struct store_key vk = { ns, job_id, jint(x, "version", 0) };
		store_batch_put(b, STORE_JOB_VERSION, x);
		store_batch_require_index(b, STORE_JOB_VERSION, &vk,
					  (uint64_t)jint(x, "modify_index", 0));
	}
	/* preempted allocations of other jobs: as read, or plan again */
	json_array_foreach(p->preempted, i, x) {
		struct store_key ak = { NULL, jstr(x, "id", ""), 0 };
		store_batch_require_index(b, STORE_ALLOC, &ak, (uint64_t)jint(x, "modify_index", 0));
	}
	store_batch_require_job_allocs(b, ns, job_id, v->index);
	if (pc->job) {
		struct store_key key = { ns, job_id, 0 };
		store_batch_require_index(b, STORE_JOB, &key, (uint64_t)jint(pc->job, "modify_index", 0));
	}
}

int plan_apply_batch(struct server *srv, const struct sched_view *v, const struct plan_commit *pc,
		     size_t n, uint64_t *out_index, struct herd_err *err)
{
	struct store_batch b = STORE_BATCH_INIT;
	struct apply_check chk = { v, pc, n };
	int rc;

	store_batch_init(&b);
	for (size_t j = 0; j < n; j++)
		batch_add_plan(&b, v, &pc[j]);
	store_batch_check(&b, apply_check, &chk);
	rc = store_commit(srv->store, &b, out_index, err);
	store_batch_release(&b);
	return rc;
}

int plan_apply(struct server *srv, const struct sched_view *v, const struct plan *p,
	       json_t *eval, json_t *extra_evals, uint64_t *out_index, struct herd_err *err)
{
	struct plan_commit pc = { p, v->job, eval, extra_evals };
	return plan_apply_batch(srv, v, &pc, 1, out_index, err);
}
