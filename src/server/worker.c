/* worker: the scheduler's threads.  Each takes an evaluation from the
 * broker, reads a consistent view, computes a plan and commits it; when the
 * commit finds the state moved (-ESTALE), it plans again from a new view.
 * An evaluation that cannot place everything is "blocked" with the engine's
 * explanation and parked until capacity appears. */
#include <errno.h>
#include <string.h>

#include "server/server-int.h"

#define WORKER_MAX_ATTEMPTS 50

enum eval_outcome { EVAL_DONE, EVAL_BLOCKED, EVAL_SKIPPED };

/* What the plan means for the fair queue, once committed: a job that
 * placed everything, or waits for its own quota, leaves it (and those
 * behind it may go); one that preempted keeps its place first. */
static void fair_queue_after(struct server *srv, const json_t *eval, const json_t *job,
			     const struct plan *p)
{
	const char *ns = jstr(eval, "namespace", "default"), *job_id = jstr(eval, "job_id", "");
	bool placed_all = json_object_size(p->failed) == 0;
	if (p->reserve) {
		(void)fair_queue_admit(srv, ns, job_id, jint(job, "priority", 50), jint(job, "submit_time", 0),
				       true, -1, NULL, NULL);
		return;
	}
	if (placed_all || p->quota_held || !p->needs_gpus) {
		if (fair_queue_remove(&srv->fq, ns, job_id))
			broker_unblock_all(&srv->broker);
	}
}

static int process_once(struct server *srv, const json_t *eval, enum eval_outcome *outcome,
			bool *fq_held, bool *queue_held, json_t **followups, struct herd_err *err)
{
	const char *ns = jstr(eval, "namespace", "default"), *job_id = jstr(eval, "job_id", "");
	const char *eval_id = jstr(eval, "id", "");
	struct sched_view v;
	struct plan p;
	json_t *done, *extra = json_array();
	int rc;

	rc = sched_view_read(srv->store, &srv->view_cache, ns, job_id, &v, err);
	if (rc < 0) {
		json_decref(extra);
		return rc;
	}
	plan_init(&p);
	rc = plan_compute(srv, &v, v.job, eval_id, &p, err);
	if (rc < 0)
		goto out;
	done = json_deep_copy(eval);
	if (json_object_size(p.failed)) {
		json_object_set_new(done, "status", json_string(p.queued ? "queued" : "blocked"));
		json_object_set_new(done, "status_description",
				    json_string(p.queued ? p.queued : "some allocations could not be placed"));
		json_object_set(done, "failed_placements", p.failed);
		*outcome = EVAL_BLOCKED;
	} else {
		json_object_set_new(done, "status", json_string("complete"));
		json_object_set_new(done, "status_description", json_string(""));
		json_object_set_new(done, "failed_placements", json_object());
		*outcome = EVAL_DONE;
	}
	json_object_set_new(done, "modify_time", json_integer(now_ns()));
	if (p.followup_at) {
		json_t *f = eval_new(ns, job_id, "reschedule", NULL);
		json_object_set_new(f, "wait_until", json_integer(p.followup_at));
		json_object_set_new(f, "previous_eval", json_string(eval_id));
		json_array_append_new(extra, f);
	}
	json_array_extend(extra, p.extra_evals);
	json_array_clear(p.extra_evals);
	rc = plan_apply(srv, &v, &p, done, extra, NULL, err);
	json_decref(done);
	if (rc == 0) {
		fair_queue_after(srv, eval, v.job, &p);
		/* still in the queue: its evaluation is parked there */
		*fq_held = p.needs_gpus && !p.quota_held && json_object_size(p.failed) > 0;
		*queue_held = p.fq_held;
		*followups = extra;
		extra = NULL;
	}
out:
	json_decref(extra);
	plan_release(&p);
	sched_view_release(&v);
	return rc;
}

/* Marks an evaluation failed after an error that retrying will not fix. */
static void eval_fail(struct server *srv, const json_t *eval, const char *why)
{
	json_t *f = json_deep_copy(eval);
	json_object_set_new(f, "status", json_string("failed"));
	json_object_set_new(f, "status_description", json_string(why));
	(void)store_put(srv->store, STORE_EVAL, f, NULL, NULL);
	json_decref(f);
}

static void process_eval(struct server *srv, struct broker_item *it)
{
	struct store_key key = { NULL, it->id, 0 };
	struct herd_err err = { 0 };
	json_t *eval = NULL, *followups = NULL;
	enum eval_outcome outcome = EVAL_SKIPPED;
	bool fq_held = false, queue_held = false;
	const char *status;
	int rc = -ESTALE;
	/* read before the snapshot: capacity that appears from here on must
	 * not be lost if this evaluation ends up parked as failed */
	uint64_t fq_gen = fair_queue_gen(srv);

	if (store_get(srv->store, STORE_EVAL, &key, &eval, &err) < 0)
		return;
	status = jstr(eval, "status", "pending");
	if (strcmp(status, "pending") && strcmp(status, "blocked") && strcmp(status, "queued")) {
		json_decref(eval);
		return;
	}
	for (int attempt = 0; attempt < WORKER_MAX_ATTEMPTS && rc == -ESTALE; attempt++)
		rc = process_once(srv, eval, &outcome, &fq_held, &queue_held, &followups, &err);
	if (rc < 0) {
		server_log(srv, "error", "evaluation %s: %s", it->id, err.msg);
		eval_fail(srv, eval, err.msg);
		/* a failed job must not hold the fair queue for everyone */
		if (fair_queue_remove(&srv->fq, it->ns, it->job_id))
			broker_unblock_all(&srv->broker);
	} else {
		if (outcome == EVAL_BLOCKED &&
		    !(fq_held && fair_queue_park(srv, it->ns, it->job_id, it->id, !queue_held, fq_gen)))
			broker_block(&srv->broker, it);
		server_queue_evals(srv, followups);
	}
	json_decref(followups);
	json_decref(eval);
}

void *worker_main(void *arg)
{
	struct server *srv = arg;
	struct broker_item it;
	while (broker_dequeue(&srv->broker, &it) == 0) {
		process_eval(srv, &it);
		broker_done(&srv->broker, &it);
	}
	return NULL;
}
