/* fair_queue: the order in which jobs that wait for GPUs get them.
 *
 * The order (docs/teams.md, "Queue order"):
 *   1. a job that preempted others goes first (what it freed is for it);
 *   2. across namespaces, the namespace with the smallest weighted GPU
 *      share goes first: GPUs it holds now (fractions by share) divided by
 *      its weight.  The weight is the namespace's `weight` when set, else
 *      the GPU limit of its quota, else 1 GPU.  Two teams with quotas of 8
 *      and 2 GPUs thus get GPUs freed in a 4:1 ratio while both wait:
 *      dominant-resource fairness restricted to the resource that is
 *      scarce on a GPU farm, weighted by what each team was promised;
 *   3. within a namespace, higher priority first, then earlier submission.
 * Ties across namespaces go to the higher priority, then the earlier
 * submission of each namespace's first job.
 *
 * Who may try to place.  A job may try once every job ahead of it has
 * tried since capacity last changed (the capacity generation, bumped on
 * every broker_unblock_all) and failed.  A job is not tried at all when
 * one of the same shape (everything it asks but the GPU count: device
 * name and constraints, CPU, memory, placement constraints) and no larger
 * GPU ask failed at this generation: it would fail the same way.  So a
 * freed GPU costs one evaluation per job that can use it plus one per
 * shape that cannot, however long the queue.  A job that fails for any
 * reason (too many GPUs, a model the cluster lacks, a constraint no node
 * meets) therefore never holds jobs of another shape or a smaller ask
 * behind it: they try, and start when they fit (backfill, as Nomad's
 * blocked evaluations block nobody else).  The order decides only who
 * tries first when capacity changes, i.e. who gets freed GPUs first;
 * preemption by priority, and reservations (reservation.h: the job whose
 * turn came after waiting too long gets GPUs held for it, and goes first
 * after those that preempted), are what get a large job its GPUs.
 *
 * Evaluations the queue holds are parked here, not in the broker, and are
 * queued again only when their turn comes (fair_queue_wake).  A job held
 * by its own quota leaves the queue (it waits for its own team). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/reservation.h"
#include "server/server-int.h"
#include "server/teams.h"

void fair_queue_init(struct fair_queue *q)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
}

void fair_queue_release(struct fair_queue *q)
{
	for (size_t i = 0; i < q->n; i++) {
		free(q->v[i].ns);
		free(q->v[i].job_id);
		free(q->v[i].eval_id);
		free(q->v[i].shape);
	}
	free(q->v);
	resv_free(q->resv);
	json_decref(q->usage);
	json_decref(q->weights);
	pthread_mutex_destroy(&q->lock);
}

static struct fq_entry *find(struct fair_queue *q, const char *ns, const char *job_id)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->v[i].ns, ns) && !strcmp(q->v[i].job_id, job_id))
			return &q->v[i];
	return NULL;
}

bool fair_queue_remove(struct fair_queue *q, const char *ns, const char *job_id)
{
	struct fq_entry *e;
	bool had = false;
	pthread_mutex_lock(&q->lock);
	resv_drop_locked(q, ns, job_id, RESV_END_LEFT_QUEUE); /* placed, stopped, failed or held: it ends */
	e = find(q, ns, job_id);
	if (e) {
		free(e->ns);
		free(e->job_id);
		free(e->eval_id);
		free(e->shape);
		*e = q->v[--q->n];
		had = true;
	}
	pthread_mutex_unlock(&q->lock);
	return had;
}

/* Within a namespace: reserved (preempted for), then the holder of the
 * reservation, then priority, then submission, then id. */
static int entry_cmp(const struct fq_entry *a, const struct fq_entry *b)
{
	if (a->reserved != b->reserved)
		return a->reserved ? -1 : 1;
	if (a->resv != b->resv)
		return a->resv ? -1 : 1;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->submit != b->submit)
		return a->submit < b->submit ? -1 : 1;
	return strcmp(a->job_id, b->job_id);
}

struct ns_share {
	const char *ns;
	int64_t used, weight;    /* GPU milli */
	const struct fq_entry *head;
	size_t waiting;
};

static int share_cmp(const struct ns_share *a, const struct ns_share *b)
{
	/* used_a / weight_a vs used_b / weight_b without division */
	__int128 l, r;
	if (a->head->reserved != b->head->reserved)
		return a->head->reserved ? -1 : 1;
	if (a->head->resv != b->head->resv)
		return a->head->resv ? -1 : 1;
	l = (__int128)a->used * b->weight;
	r = (__int128)b->used * a->weight;
	if (l != r)
		return l < r ? -1 : 1;
	return entry_cmp(a->head, b->head);
}

/* GPU usage per namespace ({"ns": milli}), cached by the allocation index. */
static json_t *usage_by_ns(struct server *srv, struct fair_queue *q)
{
	uint64_t idx = 0;
	json_t *allocs = NULL, *al, *u;
	size_t i;
	if (store_kind_index(srv->store, STORE_ALLOC, &idx, NULL) < 0)
		return json_object();
	if (q->usage && q->usage_index == idx)
		return json_incref(q->usage);
	if (store_list(srv->store, STORE_ALLOC, NULL, &allocs, NULL) < 0)
		return json_object();
	u = json_object();
	json_array_foreach(allocs, i, al) {
		const char *ns = jstr(al, "namespace", "default");
		/* an unknown allocation's replacement counts instead (quota.c) */
		if (alloc_takes_capacity(al) && strcmp(jstr(al, "client_status", ""), "unknown"))
			json_object_set_new(u, ns, json_integer(jint(u, ns, 0) + alloc_gpu_milli(al)));
	}
	json_decref(allocs);
	json_decref(q->usage);
	q->usage = json_incref(u);
	q->usage_index = idx;
	return u;
}

/* The namespace's weight in GPU milli (see the rule above), read once per
 * change of namespaces or quotas (q->lock held): a queue of thousands of
 * entries asks it for every admission. */
static int64_t weight_of(struct server *srv, struct fair_queue *q, const char *ns)
{
	struct store_key k = { NULL, ns, 0 };
	json_t *rec = NULL, *quota = NULL;
	uint64_t ni = 0, qi = 0;
	int64_t w = 1000;
	if (store_kind_index(srv->store, STORE_NAMESPACE, &ni, NULL) == 0 &&
	    store_kind_index(srv->store, STORE_QUOTA, &qi, NULL) == 0) {
		if (!q->weights || q->weights_ns_index != ni || q->weights_quota_index != qi) {
			json_decref(q->weights);
			q->weights = json_object();
			q->weights_ns_index = ni;
			q->weights_quota_index = qi;
		}
		if (json_object_get(q->weights, ns))
			return json_integer_value(json_object_get(q->weights, ns));
	}
	if (store_get(srv->store, STORE_NAMESPACE, &k, &rec, NULL) == 0) {
		json_t *wv = json_object_get(rec, "weight");
		if (json_is_number(wv) && json_number_value(wv) > 0) {
			w = (int64_t)(json_number_value(wv) * 1000.0);
		} else if (*jstr(rec, "quota", "")) {
			struct store_key qk = { NULL, jstr(rec, "quota", ""), 0 };
			if (store_get(srv->store, STORE_QUOTA, &qk, &quota, NULL) == 0 && quota_gpu_limit(quota) > 0)
				w = quota_gpu_limit(quota);
		}
	}
	json_decref(rec);
	json_decref(quota);
	if (w <= 0)
		w = 1000;
	if (q->weights)
		json_object_set_new(q->weights, ns, json_integer(w));
	return w;
}

/* The shares of the namespaces with waiting jobs (q->lock held). */
static struct ns_share *shares_of(struct server *srv, struct fair_queue *q, size_t *n)
{
	struct ns_share *s = xcalloc(q->n + 1, sizeof(*s));
	json_t *usage = usage_by_ns(srv, q);
	*n = 0;
	for (size_t i = 0; i < q->n; i++) {
		struct fq_entry *e = &q->v[i];
		size_t k;
		for (k = 0; k < *n && strcmp(s[k].ns, e->ns); k++)
			;
		if (k == *n) {
			s[k].ns = e->ns;
			s[k].used = jint(usage, e->ns, 0);
			s[k].weight = weight_of(srv, q, e->ns);
			s[k].head = e;
			(*n)++;
		} else if (entry_cmp(e, s[k].head) < 0) {
			s[k].head = e;
		}
		s[k].waiting++;
	}
	json_decref(usage);
	return s;
}

struct ranked {
	size_t rank;             /* of the entry's namespace in share order */
	struct fq_entry *e;
};

static int share_qcmp(const void *a, const void *b)
{
	return share_cmp(a, b);
}

static int ranked_cmp(const void *pa, const void *pb)
{
	const struct ranked *a = pa, *b = pb;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return entry_cmp(a->e, b->e);
}

/* The entries in the queue's order (q->lock held): an array the caller
 * frees.  O(n log n): namespaces by share, entries by (namespace, order). */
static struct ranked *ordered(struct server *srv, struct fair_queue *q)
{
	size_t n;
	struct ns_share *s = shares_of(srv, q, &n);
	struct ranked *v = xcalloc(q->n + 1, sizeof(*v));
	qsort(s, n, sizeof(*s), share_qcmp);
	for (size_t j = 0; j < q->n; j++) {
		size_t r;
		for (r = 0; r < n && strcmp(s[r].ns, q->v[j].ns); r++)
			;
		v[j].rank = r;
		v[j].e = &q->v[j];
	}
	qsort(v, q->n, sizeof(*v), ranked_cmp);
	free(s);
	return v;
}

/* The entry whose turn it is (q->lock held), or NULL when the one whose
 * turn it is is being evaluated or nothing may try.  `self`, when given,
 * counts as untried and unparked (it asks for its turn now). */
static struct fq_entry *turn_of(struct server *srv, struct fair_queue *q, const struct fq_entry *self)
{
	struct ranked *v;
	struct fq_entry *turn = NULL, *holder;
	json_t *min_failed; /* {"<shape>": least GPU ask of that shape that failed} */
	if (q->n == 0)
		return NULL;
	v = ordered(srv, q);
	min_failed = json_object();
	holder = q->resv ? find(q, q->resv->ns, q->resv->job_id) : NULL;
	for (size_t i = 0; i < q->n; i++) {
		struct fq_entry *e = v[i].e;
		bool failed = e != self && e->failed_gen == q->gen;
		json_t *m = e->shape ? json_object_get(min_failed, e->shape) : NULL;
		if (failed && e->reserved)
			break; /* it preempted: what frees up is for it, nobody backfills */
		if (failed) {
			if (e->shape && (!m || e->ask_milli < json_integer_value(m)))
				json_object_set_new(min_failed, e->shape, json_integer(e->ask_milli));
			continue;
		}
		/* the same shape with a no-larger ask failed at this capacity;
		 * not said of the reservation's holder, which may use GPUs the
		 * others may not, nor of a job ahead of it in its namespace,
		 * which takes the reservation over when it tries */
		if (m && e->ask_milli >= json_integer_value(m) && e->ask_milli > 0 && !e->resv &&
		    !(holder && resv_precedes(e, holder)))
			continue;
		turn = e;
		break;
	}
	json_decref(min_failed);
	free(v);
	return turn;
}

/* Queues the parked evaluation of the entry whose turn it is, if parked. */
static void wake_turn(struct server *srv, struct fair_queue *q)
{
	struct fq_entry *t;
	char *eval_id = NULL, *ns = NULL, *job_id = NULL;
	pthread_mutex_lock(&q->lock);
	t = turn_of(srv, q, NULL);
	if (t && t->eval_id) {
		eval_id = t->eval_id;
		t->eval_id = NULL;
		ns = xstrdup(t->ns);
		job_id = xstrdup(t->job_id);
	}
	pthread_mutex_unlock(&q->lock);
	if (eval_id)
		broker_enqueue(&srv->broker, eval_id, ns, job_id, 0);
	free(eval_id);
	free(ns);
	free(job_id);
}

bool fair_queue_park(struct server *srv, const char *ns, const char *job_id, const char *eval_id,
		     bool failed, uint64_t gen_seen)
{
	struct fair_queue *q = &srv->fq;
	struct fq_entry *e;
	pthread_mutex_lock(&q->lock);
	e = find(q, ns, job_id);
	if (!e) {
		pthread_mutex_unlock(&q->lock);
		return false;
	}
	free(e->eval_id);
	e->eval_id = xstrdup(eval_id);
	if (failed)
		e->failed_gen = gen_seen;
	pthread_mutex_unlock(&q->lock);
	/* the next one's turn may have come (this one failed), or this one's
	 * came while it was being decided: either way the turn is woken */
	wake_turn(srv, q);
	return true;
}

uint64_t fair_queue_gen(struct server *srv)
{
	uint64_t gen;
	pthread_mutex_lock(&srv->fq.lock);
	gen = srv->fq.gen;
	pthread_mutex_unlock(&srv->fq.lock);
	return gen;
}

void fair_queue_wake(void *arg)
{
	struct server *srv = arg;
	pthread_mutex_lock(&srv->fq.lock);
	srv->fq.gen++; /* capacity changed: everyone may be tried again */
	pthread_mutex_unlock(&srv->fq.lock);
	wake_turn(srv, &srv->fq);
}

bool fair_queue_admit(struct server *srv, const char *ns, const char *job_id, int64_t priority,
		      int64_t submit, bool reserved, int64_t ask_milli, const char *shape,
		      char **ahead)
{
	struct fair_queue *q = &srv->fq;
	struct fq_entry *e, *turn;
	bool mine;

	pthread_mutex_lock(&q->lock);
	e = find(q, ns, job_id);
	if (!e) {
		ALLOC_GROW(q->v, q->n + 1, q->a);
		e = &q->v[q->n++];
		memset(e, 0, sizeof(*e));
		e->ns = xstrdup(ns);
		e->job_id = xstrdup(job_id);
		/* never failed: generation 0 is a real one (a server that just
		 * started), and a new entry has not tried at it */
		e->failed_gen = UINT64_MAX;
		e->since = now_ns();
	}
	e->priority = priority;
	e->submit = submit;
	e->reserved = e->reserved || reserved;
	if (ask_milli >= 0) {
		e->ask_milli = ask_milli;
		free(e->shape);
		e->shape = shape ? xstrdup(shape) : NULL;
	}
	free(e->eval_id); /* it is being evaluated now, not parked */
	e->eval_id = NULL;
	turn = q->n == 1 ? e : turn_of(srv, q, e);
	mine = turn == e;
	if (!mine && ahead)
		*ahead = turn ? xasprintf("%s/%s", turn->ns, turn->job_id) : xstrdup("jobs ahead");
	pthread_mutex_unlock(&q->lock);
	return mine;
}

json_t *fair_queue_waiting(struct fair_queue *q, size_t *parked)
{
	json_t *out = json_object();

	*parked = 0;
	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < q->n; i++) {
		const char *ns = q->v[i].ns;
		json_object_set_new(out, ns, json_integer(jint(out, ns, 0) + 1));
		*parked += q->v[i].eval_id != NULL;
	}
	pthread_mutex_unlock(&q->lock);
	return out;
}

json_t *fair_queue_status(struct server *srv)
{
	struct fair_queue *q = &srv->fq;
	json_t *out = json_array();
	struct ns_share *s;
	size_t n;
	pthread_mutex_lock(&q->lock);
	s = shares_of(srv, q, &n);
	for (size_t k = 0; k < n; k++) {
		json_t *o = json_pack("{s:s, s:f, s:f, s:I, s:s}", "namespace", s[k].ns,
			"weight_gpus", s[k].weight / 1000.0, "gpu_used", s[k].used / 1000.0,
			"waiting", (json_int_t)s[k].waiting, "first", s[k].head->job_id);
		if (q->resv && !strcmp(q->resv->ns, s[k].ns))
			json_object_set_new(o, "reservation", resv_json_locked(q));
		json_array_append_new(out, o);
	}
	free(s);
	pthread_mutex_unlock(&q->lock);
	return out;
}
