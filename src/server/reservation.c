/* reservation: GPUs held for a job that waited too long (reservation.h;
 * docs/teams.md, "Reservations"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/reservation.h"
#include "server/server-int.h"
#include "server/server.h"

struct resv *resv_copy(const struct resv *r)
{
	struct resv *c;
	if (!r)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	*c = *r;
	c->ns = xstrdup(r->ns);
	c->job_id = xstrdup(r->job_id);
	c->node_id = xstrdup(r->node_id);
	for (size_t i = 0; i < r->ndevs; i++)
		c->devs[i] = xstrdup(r->devs[i]);
	return c;
}

static void resv_clear(struct resv *r)
{
	free(r->ns);
	free(r->job_id);
	free(r->node_id);
	for (size_t i = 0; i < r->ndevs; i++)
		free(r->devs[i]);
	memset(r, 0, sizeof(*r));
}

void resv_free(struct resv *r)
{
	if (!r)
		return;
	resv_clear(r);
	free(r);
}

bool resv_has_device(const struct resv *r, const char *node_id, const char *dev_id)
{
	if (!r || !dev_id || strcmp(r->node_id, node_id))
		return false;
	for (size_t i = 0; i < r->ndevs; i++)
		if (!strcmp(r->devs[i], dev_id))
			return true;
	return false;
}

int64_t resv_alloc_end(const json_t *alloc, int64_t group_limit, int64_t now)
{
	const json_t *tl = json_object_get(alloc, "time_limit");
	int64_t limit = tl ? jint(tl, "limit", 0) : group_limit;
	int64_t start = tl ? jint(tl, "started_at", 0) : 0, end;

	if (limit <= 0)
		return RESV_NEVER;
	if (start <= 0 || start > now)
		start = now; /* not started yet: its limit counts from its start */
	end = limit > RESV_NEVER - start ? RESV_NEVER - 1 : start + limit;
	return end < now ? now : end;
}

bool resv_may_use(const struct resv *r, const char *ns, const char *job_id, const char *type,
		  int64_t time_limit, int64_t now)
{
	if (!r)
		return true;
	if (ns && job_id && !strcmp(r->ns, ns) && !strcmp(r->job_id, job_id))
		return true;
	if (!type || strcmp(type, "batch") || time_limit <= 0 || r->start == RESV_NEVER)
		return false;
	return now <= r->start && time_limit <= r->start - now;
}

bool resv_may_use_ask(const struct resv *r, const struct group_ask *ask, int64_t now)
{
	const struct job *job = ask->job;
	return resv_may_use(r, job->namespace ? job->namespace : "default", job->id,
			    job->type ? job->type : "service", ask->group->time_limit, now);
}

/* ---- the estimate ------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The distinct end times of node's holders, ascending, at most
 * RESV_MAX_TIMES - 1 of the finite ones, then RESV_NEVER; returns how
 * many. */
static size_t end_times(const struct resv_holder *h, size_t nh, size_t node, int64_t *t)
{
	size_t n = 0, out = 0;
	int64_t *all = xcalloc(nh + 1, sizeof(*all));
	for (size_t i = 0; i < nh; i++)
		if (h[i].node == node && h[i].end != RESV_NEVER)
			all[n++] = h[i].end;
	qsort(all, n, sizeof(*all), cmp_i64);
	for (size_t i = 0; i < n && out < RESV_MAX_TIMES - 1; i++)
		if (!out || all[i] != t[out - 1])
			t[out++] = all[i];
	t[out++] = RESV_NEVER;
	free(all);
	return out;
}

/* Removes from u what the holders of node that end by t take. */
static void without_ended(struct node_usage *u, const struct resv_holder *h, size_t nh,
			  size_t node, int64_t t)
{
	for (size_t i = 0; i < nh; i++) {
		json_t *wrap;
		if (h[i].node != node || h[i].end > t)
			continue;
		wrap = json_pack("{s:O}", "resources", (json_t *)h[i].resources);
		node_usage_add_alloc(u, wrap, -1);
		json_decref(wrap);
	}
}

/* How many holders of node hold one of the devices placed. */
static size_t disturbed_by(const struct resv_holder *h, size_t nh, size_t node,
			   const struct resv *cand)
{
	size_t n = 0;
	for (size_t i = 0; i < nh; i++) {
		const json_t *d;
		size_t k;
		bool hit = false;
		if (h[i].node != node)
			continue;
		json_array_foreach(json_object_get(h[i].resources, "devices"), k, d)
			hit = hit || resv_has_device(cand, cand->node_id, jstr(d, "id", ""));
		n += hit;
	}
	return n;
}

/* Whether node i of v takes ask once the holders ending by t are gone:
 * 1 (and, with cand, the node and the devices chosen into it), 0 when
 * not, -1 when the node never takes the group (pool, datacenter, ports). */
static int fits_at(const struct sched_view *v, size_t i, const struct group_ask *ask,
		   const json_t *live, const struct resv_holder *h, size_t nh,
		   const struct sched_options *opt, int64_t t, struct resv *cand)
{
	struct view_node vn = v->nodes[i];
	struct sched_view one = { 0 };
	struct sched_placement pl;
	struct sched_explain why;
	struct herd_err err = { 0 };
	struct sched_snapshot *snap;
	int map[2] = { 0, 0 }, fit;

	memset(&vn.use, 0, sizeof(vn.use));
	node_usage_copy(&vn.use, &v->nodes[i].use);
	without_ended(&vn.use, h, nh, i, t);
	one.nodes = &vn;
	one.nnodes = 1;
	snap = snapshot_build(&one, ask, live, map, &err);
	memset(&why, 0, sizeof(why));
	if (sched_snapshot_nodes(snap) == 0)
		fit = -1;
	else
		fit = group_ask_place(snap, ask, opt, &pl, &why, &err) == 0;
	if (fit == 1 && cand) {
		cand->node_id = xstrdup(vn.id);
		cand->start = t;
		cand->ndevs = 0;
		for (int d = 0; d < pl.ndev && cand->ndevs < RESV_MAX_DEVS; d++)
			cand->devs[cand->ndevs++] = xstrdup(sched_device_id(snap, 0, pl.dev[d].dev));
	}
	sched_snapshot_free(snap);
	node_usage_release(&vn.use);
	return fit;
}

/* The earliest time node i of v could take ask, with the devices chosen
 * then, into cand; false when never.  Fitting is monotone in time (each
 * end only frees), so: does it fit once everything ended, then a binary
 * search over the end times: a few snapshots of one node each. */
static bool node_estimate(const struct sched_view *v, size_t i, const struct group_ask *ask,
			  const json_t *live, const struct resv_holder *h, size_t nh,
			  const struct sched_options *opt, struct resv *cand)
{
	int64_t t[RESV_MAX_TIMES];
	size_t nt = end_times(h, nh, i, t), lo = 0, hi = nt - 1;

	if (fits_at(v, i, ask, live, h, nh, opt, t[hi], NULL) != 1)
		return false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fits_at(v, i, ask, live, h, nh, opt, t[mid], NULL) == 1)
			hi = mid;
		else
			lo = mid + 1;
	}
	return fits_at(v, i, ask, live, h, nh, opt, t[hi], cand) == 1;
}

int resv_estimate(const struct sched_view *v, const struct group_ask *ask, const json_t *live,
		  const struct resv_holder *h, size_t nh, const struct sched_options *opt,
		  int64_t now, struct resv *out)
{
	struct resv best = { 0 };
	bool have = false;

	for (size_t i = 0; i < v->nnodes; i++) {
		struct resv cand = { 0 };
		if (!v->nodes[i].schedulable ||
		    !json_array_size(json_object_get(v->nodes[i].node, "devices")))
			continue;
		if (!node_estimate(v, i, ask, live, h, nh, opt, &cand))
			continue;
		if (cand.start != RESV_NEVER && cand.start < now)
			cand.start = now;
		cand.disturbed = disturbed_by(h, nh, i, &cand);
		if (!have || cand.start < best.start ||
		    (cand.start == best.start && cand.disturbed < best.disturbed)) {
			resv_clear(&best);
			best = cand;
			have = true;
		} else {
			resv_clear(&cand);
		}
	}
	if (!have)
		return -ENOSPC;
	out->node_id = best.node_id;
	out->ndevs = best.ndevs;
	memcpy(out->devs, best.devs, sizeof(best.devs));
	out->start = best.start;
	out->disturbed = best.disturbed;
	return 0;
}

/* ---- the server's side -------------------------------------------------- */

/* The threshold in ns: -1 when reservations are off. */
static int64_t reserve_after(const struct server *srv)
{
	int64_t a = srv->cfg.reserve_after_ns;
	if (a == SERVER_RESERVE_OFF)
		return -1;
	if (a == SERVER_RESERVE_NOW)
		return 0;
	return a > 0 ? a : SERVER_DEFAULT_RESERVE_AFTER_NS;
}

static struct fq_entry *entry_of(struct fair_queue *q, const char *ns, const char *job_id)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->v[i].ns, ns) && !strcmp(q->v[i].job_id, job_id))
			return &q->v[i];
	return NULL;
}

/* The reservation was made, moved or ended: blocking reads that show it
 * (GET /v1/gpus, /v1/node/:id, /v1/quotas/queue) answer again, though
 * nothing was stored.  Under q->lock: the watch's locks and the HTTP
 * server's waker lock come after it and never take it. */
static void resv_changed_locked(struct fair_queue *q)
{
	if (q->watch)
		index_watch_poke(q->watch);
}

const char *resv_end_name(enum resv_end why)
{
	static const char *const names[RESV_END_N] = {
		[RESV_END_LEFT_QUEUE] = "left_queue",
		[RESV_END_JOB_CHANGED] = "job_changed",
		[RESV_END_INSTANCE_PLACED] = "instance_placed",
		[RESV_END_NODE_UNSCHEDULABLE] = "node_unschedulable",
		[RESV_END_NO_FIT] = "no_fit",
		[RESV_END_TAKEN_OVER] = "taken_over",
	};
	return (unsigned)why < RESV_END_N ? names[why] : "unknown";
}

void resv_drop_locked(struct fair_queue *q, const char *ns, const char *job_id,
		      enum resv_end why)
{
	struct fq_entry *e;
	if (!q->resv || strcmp(q->resv->ns, ns) || strcmp(q->resv->job_id, job_id))
		return;
	if ((unsigned)why < RESV_END_N)
		q->resv_ended[why]++;
	resv_changed_locked(q);
	e = entry_of(q, ns, job_id);
	if (e)
		e->resv = false;
	resv_free(q->resv);
	q->resv = NULL;
	__atomic_store_n(&q->resv_held, 0, __ATOMIC_RELEASE);
}

/* A copy of the reservation, or NULL (cheap when there is none). */
static struct resv *resv_get(struct fair_queue *q)
{
	struct resv *r;
	if (!__atomic_load_n(&q->resv_held, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&q->lock);
	r = resv_copy(q->resv);
	pthread_mutex_unlock(&q->lock);
	return r;
}

void resv_view(struct server *srv, struct sched_view *v, int64_t now)
{
	struct fair_queue *q = &srv->fq;

	resv_free(v->resv);
	v->resv = NULL;
	v->resv_now = now;
	if (!__atomic_load_n(&q->resv_held, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&q->lock);
	if (q->resv) {
		struct view_node *vn = sched_view_node(v, q->resv->node_id);
		if (vn && vn->schedulable) {
			v->resv = resv_copy(q->resv);
		} else {
			/* down, ineligible or draining: the job gets a new
			 * reservation the next time it tries */
			char *ns = xstrdup(q->resv->ns), *id = xstrdup(q->resv->job_id);
			resv_drop_locked(q, ns, id, RESV_END_NODE_UNSCHEDULABLE);
			free(ns);
			free(id);
		}
	}
	pthread_mutex_unlock(&q->lock);
}

/* The time limit the group of alloc had when placed: its stored job's
 * (jobs caches them: {"<ns>\x1f<job>": job or null}); 0 when none or not
 * batch work (only batch limits are enforced). */
static int64_t group_limit_of(struct server *srv, json_t *jobs, const json_t *alloc)
{
	const char *ns = jstr(alloc, "namespace", "default"), *id = jstr(alloc, "job_id", "");
	const char *group = jstr(alloc, "task_group", "");
	char *k = xasprintf("%s\x1f%s", ns, id);
	json_t *job = json_object_get(jobs, k), *g;
	size_t i;

	if (!job) {
		struct store_key key = { ns, id, 0 };
		if (store_get_shared(srv->store, STORE_JOB, &key, &job, NULL) < 0)
			job = json_null();
		json_object_set_new(jobs, k, job);
	}
	free(k);
	if (!json_is_object(job) || strcmp(jstr(job, "type", "service"), "batch"))
		return 0;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		if (!strcmp(jstr(g, "name", ""), group))
			return jint(g, "time_limit", 0);
	return 0;
}

/* The allocations that v's nodes count (with devices; only node_id's
 * when not NULL), as holders; keeps what they point into in keep.
 * Returns how many. */
static size_t holders_of(struct server *srv, const struct sched_view *v, const char *node_id,
			 json_t *keep, int64_t now, struct resv_holder **out)
{
	json_t *jobs = json_object();
	struct resv_holder *h = NULL;
	size_t n = 0, a = 0;

	for (size_t i = 0; i < v->nnodes; i++) {
		const struct view_node *vn = &v->nodes[i];
		struct store_filter f = { NULL, NULL, vn->id };
		json_t *allocs = NULL, *al, *seen, *res;
		const char *aid;
		size_t j;

		if (!vn->schedulable || !json_array_size(json_object_get(vn->node, "devices")) ||
		    (node_id && strcmp(vn->id, node_id)))
			continue;
		seen = json_object();
		if (store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL) < 0)
			allocs = json_array();
		json_array_append_new(keep, allocs);
		json_array_foreach(allocs, j, al) {
			aid = jstr(al, "id", "");
			res = vn->counted ? json_object_get(vn->counted, aid)
					  : alloc_takes_capacity(al) ? json_object_get(al, "resources") : NULL;
			if (!res)
				continue;
			ALLOC_GROW(h, n + 1, a);
			h[n++] = (struct resv_holder){ i, res,
				resv_alloc_end(al, group_limit_of(srv, jobs, al), now) };
			json_object_set_new(seen, aid, json_true());
		}
		/* counted by the view but gone from the store since: its end is
		 * unknown */
		json_object_foreach(vn->counted, aid, res) {
			if (json_object_get(seen, aid))
				continue;
			ALLOC_GROW(h, n + 1, a);
			h[n++] = (struct resv_holder){ i, res, RESV_NEVER };
		}
		json_decref(seen);
	}
	json_decref(jobs);
	*out = h;
	return n;
}

bool resv_precedes(const struct fq_entry *a, const struct fq_entry *b)
{
	if (strcmp(a->ns, b->ns))
		return false;
	if (a->priority != b->priority)
		return a->priority > b->priority;
	if (a->submit != b->submit)
		return a->submit < b->submit;
	return strcmp(a->job_id, b->job_id) < 0;
}

/* Whether a and b hold the same devices (of their node). */
static bool same_devs(const struct resv *a, const struct resv *b)
{
	if (a->ndevs != b->ndevs)
		return false;
	for (size_t i = 0; i < a->ndevs; i++)
		if (strcmp(a->devs[i], b->devs[i]))
			return false;
	return true;
}

/* The holder of r tried again and did not fit, and r's start is unknown
 * or passed (what was in the way started later than estimated, or had no
 * limit and some of it ended): estimates again on r's node alone (a
 * known start lets short work in again) and updates q's reservation if it
 * is still r's.  Drops it when the node cannot take the job any more. */
static void resv_refresh(struct server *srv, struct sched_view *v, const struct resv *r,
			 const struct job *model, int gi, const json_t *live, int64_t now)
{
	struct fair_queue *q = &srv->fq;
	struct sched_options opt = { .policy = srv->policy, .seed = 1 };
	struct view_node *vn = sched_view_node(v, r->node_id);
	struct resv_holder *h = NULL;
	struct resv cand = { 0 };
	struct group_ask ask;
	json_t *keep;
	size_t nh;
	bool fits;

	if (!vn || group_ask_init(&ask, model, &model->groups[gi], NULL) < 0)
		return;
	keep = json_array();
	nh = holders_of(srv, v, r->node_id, keep, now, &h);
	fits = node_estimate(v, (size_t)(vn - v->nodes), &ask, live, h, nh, &opt, &cand);
	if (fits) {
		if (cand.start != RESV_NEVER && cand.start < now)
			cand.start = now;
		cand.disturbed = disturbed_by(h, nh, (size_t)(vn - v->nodes), &cand);
	}
	free(h);
	json_decref(keep);
	group_ask_release(&ask);
	pthread_mutex_lock(&q->lock);
	if (q->resv && !strcmp(q->resv->ns, r->ns) && !strcmp(q->resv->job_id, r->job_id) &&
	    q->resv->job_version == r->job_version && !strcmp(q->resv->node_id, r->node_id)) {
		if (!fits) {
			resv_drop_locked(q, r->ns, r->job_id, RESV_END_NO_FIT);
		} else {
			if (!same_devs(q->resv, &cand) || q->resv->start != cand.start)
				resv_changed_locked(q);
			for (size_t i = 0; i < q->resv->ndevs; i++)
				free(q->resv->devs[i]);
			memcpy(q->resv->devs, cand.devs, sizeof(cand.devs));
			q->resv->ndevs = cand.ndevs;
			cand.ndevs = 0; /* moved */
			q->resv->start = cand.start;
			q->resv->disturbed = cand.disturbed;
		}
	}
	pthread_mutex_unlock(&q->lock);
	resv_clear(&cand);
}

void resv_consider(struct server *srv, struct sched_view *v, const json_t *job,
		   const struct job *model, int gi, const json_t *live, bool placed_some, int64_t now)
{
	struct fair_queue *q = &srv->fq;
	const char *ns = jstr(job, "namespace", "default"), *id = jstr(job, "id", "");
	int64_t after = reserve_after(srv), version = jint(job, "version", 0);
	struct sched_options opt = { .policy = srv->policy, .seed = 1 };
	struct resv_holder *h = NULL;
	struct resv est = { 0 };
	struct group_ask ask;
	struct fq_entry *e;
	json_t *keep;
	size_t nh;
	bool go;
	char *steal = NULL;
	uint64_t nodes_index = 0, never;
	int rc;

	if (after < 0 || !model || gi < 0 || (size_t)gi >= model->ngroups || model->groups[gi].gang)
		return;
	pthread_mutex_lock(&q->lock);
	/* the job changed, or an instance took GPUs (the reserved ones, or
	 * others) and the next one waits: estimate again for that one */
	if (q->resv && !strcmp(q->resv->ns, ns) && !strcmp(q->resv->job_id, id) &&
	    (q->resv->job_version != version || placed_some))
		resv_drop_locked(q, ns, id,
				 q->resv->job_version != version ? RESV_END_JOB_CHANGED
								 : RESV_END_INSTANCE_PLACED);
	/* its own, with a start unknown or passed: estimate it again */
	if (q->resv && !strcmp(q->resv->ns, ns) && !strcmp(q->resv->job_id, id) &&
	    (q->resv->start == RESV_NEVER || now >= q->resv->start)) {
		struct resv *r = resv_copy(q->resv);
		pthread_mutex_unlock(&q->lock);
		resv_refresh(srv, v, r, model, gi, live, now);
		resv_free(r);
		return;
	}
	e = entry_of(q, ns, id);
	/* one that preempted needs none: what it freed is for it */
	go = e && !e->reserved && now_ns() - e->since >= after;
	never = e ? e->resv_never_nodes : 0;
	/* a job ahead of the holder in the holder's own namespace takes the
	 * reservation over (the order within a namespace does not change
	 * with usage, so it cannot go back and forth): after a restart the
	 * queue is rebuilt in whatever order evaluations run again */
	if (go && q->resv) {
		struct fq_entry *holder = entry_of(q, q->resv->ns, q->resv->job_id);
		if (holder && holder != e && resv_precedes(e, holder))
			steal = xstrdup(holder->job_id);
		else
			go = false;
	}
	pthread_mutex_unlock(&q->lock);
	/* one that no node could ever take is not estimated again until the
	 * nodes change */
	if (go && store_kind_index(srv->store, STORE_NODE, &nodes_index, NULL) == 0 && never &&
	    never == nodes_index)
		go = false;
	if (!go || group_ask_init(&ask, model, &model->groups[gi], NULL) < 0) {
		free(steal);
		return;
	}
	keep = json_array();
	nh = holders_of(srv, v, NULL, keep, now, &h);
	rc = resv_estimate(v, &ask, live, h, nh, &opt, now, &est);
	free(h);
	json_decref(keep);
	group_ask_release(&ask);
	pthread_mutex_lock(&q->lock);
	e = entry_of(q, ns, id);
	if (rc < 0) {
		/* no node could ever take it: nothing to hold (a holder it
		 * would have taken over keeps its reservation) */
		if (e)
			e->resv_never_nodes = nodes_index;
		pthread_mutex_unlock(&q->lock);
		free(steal);
		return;
	}
	est.ns = xstrdup(ns);
	est.job_id = xstrdup(id);
	est.job_version = version;
	est.made = now;
	/* the holder it takes over from, if it still holds */
	if (e && steal && q->resv && !strcmp(q->resv->ns, ns) && !strcmp(q->resv->job_id, steal))
		resv_drop_locked(q, ns, steal, RESV_END_TAKEN_OVER);
	free(steal);
	if (e && !q->resv) {
		q->resv = resv_copy(&est);
		q->resv_made++;
		resv_changed_locked(q);
		e->resv = true;
		__atomic_store_n(&q->resv_held, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&q->lock);
	resv_clear(&est);
}

void resv_stats(struct server *srv, int64_t now, struct resv_stats *out)
{
	struct fair_queue *q = &srv->fq;
	struct fq_entry *e;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&q->lock);
	out->made = q->resv_made;
	memcpy(out->ended, q->resv_ended, sizeof(out->ended));
	if (q->resv) {
		out->held = true;
		snprintf(out->ns, sizeof(out->ns), "%s", q->resv->ns);
		out->ndevs = q->resv->ndevs;
		e = entry_of(q, q->resv->ns, q->resv->job_id);
		if (e && now > e->since)
			out->waited = now - e->since;
	}
	pthread_mutex_unlock(&q->lock);
}

json_t *resv_json_locked(const struct fair_queue *q)
{
	const struct resv *r = q->resv;
	json_t *devs;
	if (!r)
		return NULL;
	devs = json_array();
	for (size_t i = 0; i < r->ndevs; i++)
		json_array_append_new(devs, json_string(r->devs[i]));
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:I, s:I}", "namespace", r->ns, "job_id",
			 r->job_id, "node_id", r->node_id, "devices", devs, "estimated_start",
			 r->start == RESV_NEVER ? json_null() : json_integer(r->start), "create_time",
			 (json_int_t)r->made, "disturbed", (json_int_t)r->disturbed);
}

static void mark(json_t *o, const struct resv *r)
{
	json_object_set_new(o, "reserved_for", json_string(r->job_id));
	json_object_set_new(o, "reserved_namespace", json_string(r->ns));
	json_object_set_new(o, "reserved_start",
			    r->start == RESV_NEVER ? json_null() : json_integer(r->start));
}

void resv_decorate_gpus(struct server *srv, json_t *gpus)
{
	struct resv *r = resv_get(&srv->fq);
	json_t *g;
	size_t i;
	if (!r)
		return;
	json_array_foreach(gpus, i, g)
		if (resv_has_device(r, jstr(g, "node_id", ""),
				    jstr(json_object_get(g, "device"), "id", NULL)))
			mark(g, r);
	resv_free(r);
}

void resv_decorate_node(struct server *srv, json_t *node)
{
	struct resv *r = resv_get(&srv->fq);
	json_t *d;
	size_t i;
	if (!r)
		return;
	json_array_foreach(json_object_get(node, "devices"), i, d)
		if (resv_has_device(r, jstr(node, "id", ""), jstr(d, "id", NULL)))
			mark(d, r);
	resv_free(r);
}
