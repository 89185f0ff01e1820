/* worker: the scheduler's threads.  Each takes an evaluation from the
 * broker, reads a consistent view, computes a plan and commits it; when the
 * commit finds the state moved (-ESTALE), it plans again from a new view.
 * An evaluation that cannot place everything is "blocked" with the engine's
 * explanation and parked until capacity appears. */
#include <errno.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/depends.h"
#include "server/server-int.h"

#define WORKER_MAX_ATTEMPTS 50

/* EVAL_WAITING: blocked on its dependencies, parked by depends.c (not
 * with the broker: capacity does not change what it waits for);
 * EVAL_NEVER: a dependency can never hold, the job is stopped. */
enum eval_outcome { EVAL_DONE, EVAL_BLOCKED, EVAL_SKIPPED, EVAL_WAITING, EVAL_NEVER };

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

/* Whether committing a plan would change nothing: it writes no allocation
 * and no other evaluation (extra: the follow-ups to put with it), and the
 * evaluation's new record (done) says what the stored one (eval) says.
 * That is a blocked evaluation planned again after capacity changed
 * somewhere and still blocked the same way: every capacity change plans
 * every blocked evaluation again, and rewriting each row for its
 * modify_time would cost a store change apiece.  Such a plan is not
 * committed. */
static bool plan_changes_nothing(const struct plan *p, const json_t *extra, const json_t *eval,
				 const json_t *done)
{
	static const char *const fields[] = { "status", "status_description", "failed_placements",
					      NULL };
	if (json_array_size(p->allocs) || json_array_size(p->extra_evals) ||
	    json_array_size(p->preempted) || json_array_size(extra) || json_array_size(p->versions))
		return false;
	for (int i = 0; fields[i]; i++) {
		const json_t *a = json_object_get(eval, fields[i]), *b = json_object_get(done, fields[i]);
		if (!a || !b || !json_equal((json_t *)a, (json_t *)b))
			return false;
	}
	return true;
}

/* eval's record once plan p is done with it: its status, why, and what
 * could not be placed.  A shallow copy (only top-level fields change, so
 * eval may be a shared record) without the store's indexes, which it sets
 * again: the record is then in the store's key order and kept as it is. */
static json_t *eval_final(const json_t *eval, const struct plan *p, enum eval_outcome *outcome)
{
	json_t *done = json_copy((json_t *)eval);

	json_object_del(done, "create_index");
	json_object_del(done, "modify_index");
	json_object_del(done, "waiting_for");
	if (p->dep_never) {
		json_object_set_new(done, "status", json_string("complete"));
		json_object_set_new(done, "status_description",
				    json_sprintf("job stopped: %s", p->dep_never));
		json_object_set_new(done, "failed_placements", json_object());
		*outcome = EVAL_NEVER;
	} else if (p->dep_waiting) {
		json_object_set_new(done, "status", json_string("blocked"));
		json_object_set_new(done, "status_description", json_string(p->dep_waiting));
		json_object_set(done, "failed_placements", p->failed);
		json_object_set(done, "waiting_for", p->dep_waiting_for);
		*outcome = EVAL_WAITING;
	} else if (json_object_size(p->failed)) {
		json_object_set_new(done, "status", json_string(p->queued ? "queued" : "blocked"));
		json_object_set_new(done, "status_description",
				    json_string(p->queued ? p->queued : "some allocations could not be placed"));
		json_object_set(done, "failed_placements", p->failed);
		*outcome = EVAL_BLOCKED;
	} else {
		json_object_set_new(done, "status", json_string("complete"));
		json_object_set_new(done, "status_description", json_string(""));
		json_object_set_new(done, "failed_placements", json_object());
		*outcome = EVAL_DONE;
	}
	json_object_set_new(done, "modify_time", json_integer(now_ns()));
	return done;
}

/* The evaluation that looks at eval's job again at p->followup_at. */
static json_t *eval_followup(const json_t *eval, const struct plan *p)
{
	json_t *f = eval_new(jstr(eval, "namespace", "default"), jstr(eval, "job_id", ""),
			     "reschedule", NULL);
	json_object_set_new(f, "wait_until", json_integer(p->followup_at));
	json_object_set_new(f, "previous_eval", json_string(jstr(eval, "id", "")));
	return f;
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
	plan_no_placements(&p);
	rc = plan_compute(srv, &v, v.job, eval_id, &p, err);
	if (rc < 0)
		goto out;
	done = eval_final(eval, &p, outcome);
	if (p.followup_at)
		json_array_append_new(extra, eval_followup(eval, &p));
	json_array_extend(extra, p.extra_evals);
	json_array_clear(p.extra_evals);
	if (!plan_changes_nothing(&p, extra, eval, done))
		rc = plan_apply(srv, &v, &p, done, extra, NULL, err);
	json_decref(done);
	if (rc == 0 && p.revert)
		deploy_revert(srv, v.job, p.revert_to);
	if (rc == 0 && p.dep_never) {
		struct herd_err e = { 0 };
		int r = depends_stop_job(srv, v.job, p.dep_never, &e);
		/* -ESTALE: registered again meanwhile; its own evaluation decides */
		if (r < 0 && r != -ESTALE)
			server_log(srv, "error", "stop job %s: %s", job_id, e.msg);
	}
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
	uint64_t fq_gen = fair_queue_gen(srv), dep_gen = depends_gen(srv);

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
		if (outcome == EVAL_WAITING) {
			depends_park(srv, it->ns, it->job_id, it->id, dep_gen);
		} else {
			depends_unpark(srv, it->ns, it->job_id, it->id);
			if (outcome == EVAL_BLOCKED &&
			    !(fq_held && fair_queue_park(srv, it->ns, it->job_id, it->id, !queue_held,
							 fq_gen)))
				broker_block(&srv->broker, it);
		}
		server_queue_evals(srv, followups);
	}
	json_decref(followups);
	json_decref(eval);
}

/* ---- batches -------------------------------------------------------------
 *
 * Evaluations that are ready together are planned against one view, one
 * after another (each plan takes in the view what it placed, so the next
 * sees it), and committed in one transaction: one view read and one commit
 * for the lot instead of one each.  Only evaluations whose plan touches
 * nothing shared beyond node capacity go in a batch: jobs that ask no
 * device (the fair queue and preemption are about GPUs) in namespaces
 * without a quota, whose plan preempted nothing.  The others, and every
 * evaluation of a batch whose commit keeps failing, are processed alone
 * as before. */

struct batch_entry {
	struct broker_item *it;
	json_t *eval, *job, *allocs; /* as the batch view read them */
	bool alone;                  /* to process on its own */
	bool planned;                /* its plan is in this attempt's commit */
	bool done;                   /* committed, or nothing to do */
	struct plan p;
	json_t *final, *extra;       /* the evaluation's record, its follow-ups */
	enum eval_outcome outcome;
};

/* Whether a stored job asks for a device in any task. */
static bool job_asks_devices(const json_t *job)
{
	size_t i, j;
	json_t *g, *t;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		json_array_foreach(json_object_get(g, "tasks"), j, t)
			if (json_array_size(json_object_get(json_object_get(t, "resources"), "devices")))
				return true;
	return false;
}

static bool eval_open(const json_t *eval)
{
	const char *status = jstr(eval, "status", "pending");
	return !strcmp(status, "pending") || !strcmp(status, "blocked") || !strcmp(status, "queued");
}

static void entry_reset(struct batch_entry *e)
{
	if (e->planned)
		plan_release(&e->p);
	json_decref(e->final);
	json_decref(e->extra);
	json_decref(e->eval);
	json_decref(e->job);
	json_decref(e->allocs);
	e->final = e->extra = e->eval = e->job = e->allocs = NULL;
	e->planned = false;
}

/* The evaluation's final record and follow-ups for plan p (as process_once). */
static void entry_finish(struct batch_entry *e)
{
	e->final = eval_final(e->eval, &e->p, &e->outcome);
	e->extra = json_array();
	if (e->p.followup_at)
		json_array_append_new(e->extra, eval_followup(e->eval, &e->p));
}

/* Plans every entry that may go in a batch against v; returns how many
 * were planned. */
static size_t plan_entries(struct server *srv, struct sched_view *v, struct batch_entry *e,
			   size_t n)
{
	size_t planned = 0;
	for (size_t i = 0; i < n; i++) {
		struct herd_err err = { 0 };
		if (e[i].alone || e[i].done)
			continue;
		if (!e[i].eval || !eval_open(e[i].eval)) {
			e[i].done = true; /* gone or finished meanwhile */
			continue;
		}
		/* the dependency gate may stop the job or park its evaluation */
		if (e[i].job && (job_asks_devices(e[i].job) ||
				 json_array_size(json_object_get(e[i].job, "depends_on")))) {
			e[i].alone = true;
			continue;
		}
		v->job = e[i].job;
		v->job_allocs = e[i].allocs;
		plan_init(&e[i].p);
		plan_no_placements(&e[i].p);
		e[i].planned = true;
		int rc = plan_compute(srv, v, e[i].job, jstr(e[i].eval, "id", ""), &e[i].p, &err);
		v->job = v->job_allocs = NULL;
		/* What it placed stays counted in v: that errs on the safe side
		 * for the plans after it. */
		if (rc < 0 || (e[i].p.quota && e[i].p.quota->spec) || e[i].p.reserve ||
		    e[i].p.fq_held || e[i].p.queued || json_array_size(e[i].p.preempted) ||
		    json_array_size(e[i].p.extra_evals) || e[i].p.versions || e[i].p.revert) {
			plan_release(&e[i].p);
			e[i].planned = false;
			e[i].alone = true;
			continue;
		}
		entry_finish(&e[i]);
		planned++;
	}
	return planned;
}

#define WORKER_BATCH_MAX 64
#define WORKER_BATCH_ATTEMPTS 5

/* A worker's batch, allocated once: a batch of small arrays allocated
 * each time cost more than it held (a request of a few KiB makes glibc's
 * malloc consolidate its free chunks first). */
struct batch {
	struct batch_entry e[WORKER_BATCH_MAX];
	char *ids[WORKER_BATCH_MAX], *nss[WORKER_BATCH_MAX], *jobs[WORKER_BATCH_MAX];
	json_t *evals[WORKER_BATCH_MAX], *jrec[WORKER_BATCH_MAX], *allocs[WORKER_BATCH_MAX];
	struct plan_commit pc[WORKER_BATCH_MAX];
};

/* One attempt: view, plans, commit.  Returns 0 (the planned entries are
 * committed and done), -ESTALE, or another error. */
static int batch_attempt(struct server *srv, struct batch *b, size_t n)
{
	struct herd_err err = { 0 };
	struct sched_view v;
	struct batch_entry *e = b->e;
	size_t m = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		b->ids[i] = e[i].it->id;
		b->nss[i] = e[i].it->ns;
		b->jobs[i] = e[i].it->job_id;
	}
	rc = sched_view_read_batch(srv->store, &srv->view_cache, n, b->ids, b->nss, b->jobs, &v,
				   b->evals, b->jrec, b->allocs, &err);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		e[i].eval = b->evals[i];
		e[i].job = b->jrec[i];
		e[i].allocs = b->allocs[i];
	}
	if (plan_entries(srv, &v, e, n) == 0) {
		rc = 0;
		goto release;
	}
	for (size_t i = 0; i < n; i++)
		if (e[i].planned && !plan_changes_nothing(&e[i].p, e[i].extra, e[i].eval, e[i].final))
			b->pc[m++] = (struct plan_commit){ &e[i].p, e[i].job, e[i].final, e[i].extra };
	rc = m ? plan_apply_batch(srv, &v, b->pc, m, NULL, &err) : 0;
	if (rc == 0) {
		for (size_t i = 0; i < n; i++) {
			struct batch_entry *x = &e[i];
			if (!x->planned)
				continue;
			x->done = true;
			depends_unpark(srv, x->it->ns, x->it->job_id, x->it->id);
			fair_queue_after(srv, x->eval, x->job, &x->p);
			if (x->outcome == EVAL_BLOCKED)
				broker_block(&srv->broker, x->it);
			server_queue_evals(srv, x->extra);
		}
	}
release:
	sched_view_release(&v);
out:
	for (size_t i = 0; i < n; i++)
		entry_reset(&e[i]);
	return rc;
}

static void process_batch(struct server *srv, struct batch *b, struct broker_item *items, size_t n)
{
	int rc = -ESTALE;

	memset(b->e, 0, n * sizeof(b->e[0]));
	for (size_t i = 0; i < n; i++)
		b->e[i].it = &items[i];
	for (int attempt = 0; attempt < WORKER_BATCH_ATTEMPTS && rc == -ESTALE; attempt++)
		rc = batch_attempt(srv, b, n);
	/* what a batch could not take, or could not commit, goes alone */
	for (size_t i = 0; i < n; i++)
		if (!b->e[i].done)
			process_eval(srv, &items[i]);
}

void *worker_main(void *arg)
{
	struct server *srv = arg;
	struct broker_item items[WORKER_BATCH_MAX];
	struct batch *b = xcalloc(1, sizeof(*b));
	size_t n;
	for (;;) {
		/* one planner at a time: plans of one cluster mostly compete
		 * for the same nodes, and the later of two would fail its
		 * commit and plan again; a batch makes up for the lost
		 * parallelism.  The planner takes its batch while holding the
		 * lock: a worker that took evaluations and then waited for
		 * the lock would split what is ready into small batches (one
		 * waiting, one planning), each paying a view and a commit. */
		pthread_mutex_lock(&srv->plan_lock);
		if (broker_dequeue_batch(&srv->broker, items, WORKER_BATCH_MAX, &n) < 0) {
			pthread_mutex_unlock(&srv->plan_lock);
			break;
		}
		if (n == 1)
			process_eval(srv, &items[0]);
		else
			process_batch(srv, b, items, n);
		/* done before the next planner takes its batch, so that it may
		 * take these jobs' next evaluations too */
		for (size_t i = 0; i < n; i++)
			broker_done(&srv->broker, &items[i]);
		pthread_mutex_unlock(&srv->plan_lock);
	}
	free(b);
	return NULL;
}
