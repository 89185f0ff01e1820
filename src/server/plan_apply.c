/* plan_apply: commits a plan atomically, on condition that nothing it was
 * computed from has moved: the job record, the job's allocations, and the
 * allocations of every node that receives a new one.  Two workers that
 * planned the same free GPU both read that node's allocations at some
 * index; the first commit moves the node's allocation index, so the second
 * fails with -ESTALE and its worker plans again from a fresh view.  That
 * is what keeps a GPU, a MIG slice or a share from being handed out twice. */
#include <errno.h>
#include <string.h>

#include "server/server-int.h"

int plan_apply(struct server *srv, const struct sched_view *v, const struct plan *p,
	       json_t *eval, json_t *extra_evals, uint64_t *out_index, struct herd_err *err)
{
	struct store_batch b = STORE_BATCH_INIT;
	const char *ns = jstr(eval, "namespace", "default"), *job_id = jstr(eval, "job_id", "");
	size_t i;
	json_t *x;
	int rc;

	store_batch_init(&b);
	json_array_foreach(p->allocs, i, x)
		store_batch_put(&b, STORE_ALLOC, x);
	store_batch_put(&b, STORE_EVAL, eval);
	json_array_foreach(extra_evals, i, x)
		store_batch_put(&b, STORE_EVAL, x);
	json_array_foreach(p->extra_evals, i, x)
		store_batch_put(&b, STORE_EVAL, x);
	/* preempted allocations of other jobs: as read, or plan again */
	json_array_foreach(p->preempted, i, x) {
		struct store_key ak = { NULL, jstr(x, "id", ""), 0 };
		store_batch_require_index(&b, STORE_ALLOC, &ak, (uint64_t)jint(x, "modify_index", 0));
	}
	/* the namespace's usage has not grown since the plan counted its quota */
	if (p->quota && p->quota->spec && p->create > 0)
		store_batch_check(&b, quota_commit_check, (void *)p);
	store_batch_require_job_allocs(&b, ns, job_id, v->index);
	for (i = 0; i < p->nnodes; i++)
		store_batch_require_node_allocs(&b, p->nodes[i], v->index);
	if (v->job) {
		struct store_key key = { ns, job_id, 0 };
		store_batch_require_index(&b, STORE_JOB, &key, (uint64_t)jint(v->job, "modify_index", 0));
	}
	rc = store_commit(srv->store, &b, out_index, err);
	store_batch_release(&b);
	return rc;
}
