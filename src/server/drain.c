/* drain: the drainer on the leader (drain.h).
 *
 * A thread runs a round each second while some node drains (and once at
 * start, to find the drains a previous leader left): for each draining
 * node, one conditional commit that marks what is to leave now and queues
 * an evaluation per job concerned, or that ends the drain when nothing is
 * left.  A commit that loses a race (an allocation or the node changed) is
 * tried again next round, from the records as they are then.  It keeps
 * nothing in memory that a restart would lose: the deadline and the start
 * are in the node's record, the health stamps in the allocations'. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/drain.h"
#include "server/server-int.h"

#define DRAIN_ROUND_NS 1000000000LL /* one round a second */

struct drainer {
	pthread_mutex_t lock;   /* guards what follows but the thread */
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	bool wake;              /* drain_wake: a round now */
	bool any;               /* some node may be draining: rounds read the nodes */
};

/* ---- one node's step ------------------------------------------------------ */

enum drain_class { CLASS_SERVICE, CLASS_BATCH, CLASS_SYSTEM };

/* What a round reads more than once: jobs and nodes by key, shared
 * records (only read), null when absent. */
struct drain_cache {
	struct server *srv;
	json_t *jobs;   /* {"<ns>\x1f<id>": job} */
	json_t *nodes;  /* {"<id>": node} */
};

static const json_t *cached_job(struct drain_cache *c, const char *ns, const char *id)
{
	char *k = xasprintf("%s\x1f%s", ns, id);
	json_t *job = json_object_get(c->jobs, k);
	if (!job) {
		struct store_key key = { ns, id, 0 };
		if (store_get_shared(c->srv->store, STORE_JOB, &key, &job, NULL) < 0)
			job = json_null();
		json_object_set_new(c->jobs, k, job);
	}
	free(k);
	return json_is_object(job) ? job : NULL;
}

static bool node_draining(struct drain_cache *c, const char *id)
{
	json_t *n = json_object_get(c->nodes, id);
	if (!n) {
		struct store_key key = { NULL, id, 0 };
		if (store_get_shared(c->srv->store, STORE_NODE, &key, &n, NULL) < 0)
			n = json_null();
		json_object_set_new(c->nodes, id, n);
	}
	return jbool(n, "drain", false);
}

/* The job's type as the drain treats it: system and sysbatch jobs
 * (their allocations leave last) by the type's name, whatever else the
 * build knows of them. */
static enum drain_class class_of(const json_t *job)
{
	const char *t = jstr(job, "type", "service");
	if (!strcmp(t, "system") || !strcmp(t, "sysbatch"))
		return CLASS_SYSTEM;
	return !strcmp(t, "batch") ? CLASS_BATCH : CLASS_SERVICE;
}

static bool alloc_live(const json_t *al)
{
	return !strcmp(jstr(al, "desired_status", "run"), "run") && !alloc_client_terminal(al);
}

/* The migrate block of group `name` of a stored job, read from its JSON
 * (validation filled a group's block from the job's); Nomad's defaults
 * when it has none.  *count: the group's count. */
static struct job_migrate migrate_of(const json_t *job, const char *name, int64_t *count)
{
	struct job_migrate m = *job_group_migrate(NULL);
	const json_t *g, *b = NULL;
	size_t i;

	*count = 0;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		if (!strcmp(jstr(g, "name", ""), name)) {
			*count = jint(g, "count", 1);
			b = json_object_get(g, "migrate");
		}
	if (!json_is_object(b))
		b = json_object_get(job, "migrate");
	if (json_is_object(b)) {
		m.max_parallel = jint(b, "max_parallel", m.max_parallel);
		m.min_healthy_time = jint(b, "min_healthy_time", m.min_healthy_time);
		m.healthy_deadline = jint(b, "healthy_deadline", m.healthy_deadline);
	}
	return m;
}

static int by_index(const void *a, const void *b)
{
	int64_t x = jint(*(json_t *const *)a, "index", 0), y = jint(*(json_t *const *)b, "index", 0);
	return x < y ? -1 : x > y;
}

/* Adds to mark (ids) the allocations of node_id of service group `group`
 * of job that the pacing lets go now. */
static int pace_group(struct drain_cache *c, const json_t *job, const char *group,
		      const char *node_id, int64_t now, json_t *mark)
{
	struct store_filter f = { jstr(job, "namespace", "default"), jstr(job, "id", ""), NULL };
	struct drain_pace_alloc *pa;
	json_t *allocs = NULL, *al, **v;
	struct job_migrate m;
	int64_t count;
	size_t i, n = 0;
	bool *take;
	int rc;

	m = migrate_of(job, group, &count);
	rc = store_list_shared(c->srv->store, STORE_ALLOC, &f, &allocs, NULL);
	if (rc < 0)
		return rc;
	v = xcalloc(json_array_size(allocs) + 1, sizeof(*v));
	json_array_foreach(allocs, i, al)
		if (!strcmp(jstr(al, "task_group", ""), group) && alloc_live(al))
			v[n++] = al;
	qsort(v, n, sizeof(*v), by_index); /* the same ones go first each round */
	pa = xcalloc(n + 1, sizeof(*pa));
	take = xcalloc(n + 1, sizeof(*take));
	for (i = 0; i < n; i++) {
		pa[i].live = true;
		pa[i].draining = node_draining(c, jstr(v[i], "node_id", ""));
		pa[i].marked = drain_marked(v[i]);
		pa[i].health = drain_alloc_health(v[i], &m, now);
	}
	drain_pace(count, m.max_parallel, pa, n, take);
	for (i = 0; i < n; i++)
		if (take[i] && !strcmp(jstr(v[i], "node_id", ""), node_id))
			json_object_set_new(mark, jstr(v[i], "id", ""), json_true());
	free(take);
	free(pa);
	free(v);
	json_decref(allocs);
	return 0;
}

/* alloc told to migrate, into b, on condition that it is unchanged. */
static void mark_alloc(struct store_batch *b, const json_t *al, int64_t now)
{
	struct store_key key = { NULL, jstr(al, "id", ""), 0 };
	json_t *c = json_copy((json_t *)al), *t;

	t = json_deep_copy(json_object_get(al, "desired_transition"));
	if (!json_is_object(t)) {
		json_decref(t);
		t = json_object();
	}
	json_object_set_new(t, "migrate", json_true());
	json_object_set_new(c, "desired_transition", t);
	json_object_set_new(c, "modify_time", json_integer(now));
	store_batch_put(b, STORE_ALLOC, c);
	store_batch_require_index(b, STORE_ALLOC, &key, (uint64_t)jint(al, "modify_index", 0));
	json_decref(c);
}

static void add_eval(json_t *evals, json_t *seen, struct store_batch *b, const json_t *al,
		     const char *node_id)
{
	char *k = xasprintf("%s\x1f%s", jstr(al, "namespace", ""), jstr(al, "job_id", ""));
	if (!json_object_get(seen, k)) {
		json_t *e = eval_new(jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
				     "node-drain", node_id);
		json_object_set_new(seen, k, json_true());
		store_batch_put(b, STORE_EVAL, e);
		json_array_append_new(evals, e);
	}
	free(k);
}

int drain_node_step(struct server *srv, const json_t *node, int64_t now, struct store_batch *b,
		    json_t *evals, bool *complete)
{
	const json_t *st = json_object_get(node, "drain_strategy");
	const char *node_id = jstr(node, "id", "");
	struct store_filter f = { NULL, NULL, node_id };
	struct drain_cache c = { srv, json_object(), json_object() };
	json_t *allocs = NULL, *mark = json_object(), *paced = json_object(), *seen = json_object();
	json_t *al;
	int64_t force_at = jint(st, "force_deadline", 0);
	/* a drain from before strategies existed stops everything, as it did */
	bool deadline = !json_is_object(st) || (force_at > 0 && now >= force_at);
	bool ignore_sys = jbool(st, "ignore_system_jobs", false);
	size_t i, others = 0, left = 0;
	int rc, marked = 0;

	json_object_set_new(c.nodes, node_id, json_incref((json_t *)node));
	rc = store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL);
	if (rc < 0)
		goto out;
	/* what is still on the node, and which of it may go now */
	json_array_foreach(allocs, i, al) {
		const json_t *job;
		enum drain_class cl;
		if (alloc_client_terminal(al))
			continue;
		job = cached_job(&c, jstr(al, "namespace", "default"), jstr(al, "job_id", ""));
		cl = job ? class_of(job) : CLASS_SERVICE;
		if (cl == CLASS_SYSTEM && ignore_sys)
			continue; /* left alone, and no reason to wait */
		left++;
		if (cl != CLASS_SYSTEM)
			others++;
		if (!alloc_live(al) || drain_marked(al))
			continue;
		if (!job || deadline) {
			if (cl != CLASS_SYSTEM) /* system ones go last, below */
				json_object_set_new(mark, jstr(al, "id", ""), json_true());
		} else if (cl == CLASS_SERVICE) {
			char *k = xasprintf("%s\x1f%s\x1f%s", jstr(al, "namespace", ""),
					    jstr(al, "job_id", ""), jstr(al, "task_group", ""));
			if (!json_object_get(paced, k)) {
				json_object_set_new(paced, k, json_true());
				rc = pace_group(&c, job, jstr(al, "task_group", ""), node_id, now, mark);
			}
			free(k);
			if (rc < 0)
				goto out;
		}
	}
	/* system allocations leave once everything else has */
	json_array_foreach(allocs, i, al) {
		const json_t *job;
		if (others || !alloc_live(al) || drain_marked(al) || ignore_sys)
			continue;
		job = cached_job(&c, jstr(al, "namespace", "default"), jstr(al, "job_id", ""));
		if (job && class_of(job) == CLASS_SYSTEM)
			json_object_set_new(mark, jstr(al, "id", ""), json_true());
	}
	json_array_foreach(allocs, i, al) {
		if (!json_object_get(mark, jstr(al, "id", "")))
			continue;
		mark_alloc(b, al, now);
		add_eval(evals, seen, b, al, node_id);
		marked++;
	}
	if (complete)
		*complete = left == 0;
	rc = marked;
out:
	json_decref(allocs);
	json_decref(mark);
	json_decref(paced);
	json_decref(seen);
	json_decref(c.jobs);
	json_decref(c.nodes);
	return rc;
}

int drain_node_cancel(struct server *srv, const char *node_id, struct store_batch *b)
{
	struct store_filter f = { NULL, NULL, node_id };
	json_t *allocs = NULL, *al;
	size_t i;
	int rc = store_list_shared(srv->store, STORE_ALLOC, &f, &allocs, NULL);

	if (rc < 0)
		return rc;
	json_array_foreach(allocs, i, al) {
		struct store_key key = { NULL, jstr(al, "id", ""), 0 };
		json_t *c, *t;
		if (!drain_marked(al) || strcmp(jstr(al, "desired_status", "run"), "run"))
			continue;
		/* told to migrate, not stopped yet: it stays */
		c = json_copy(al);
		t = json_deep_copy(json_object_get(al, "desired_transition"));
		json_object_del(t, "migrate");
		if (json_object_size(t))
			json_object_set_new(c, "desired_transition", t);
		else {
			json_decref(t);
			json_object_del(c, "desired_transition");
		}
		store_batch_put(b, STORE_ALLOC, c);
		store_batch_require_index(b, STORE_ALLOC, &key, (uint64_t)jint(al, "modify_index", 0));
		json_decref(c);
	}
	json_decref(allocs);
	return 0;
}

void drain_join(json_t *alloc, const struct job_group *g, const json_t *previous)
{
	int64_t checks = 0;

	if (!previous || !drain_marked(previous))
		return;
	json_object_set_new(alloc, "drain_migration", json_true());
	/* a deployment's allocation waits for the checks its update block
	 * says already (deploy_join) */
	if (json_object_get(alloc, "deployment_checks") ||
	    strcmp(job_group_migrate(g)->health_check, "checks"))
		return;
	for (size_t i = 0; i < g->nservices; i++)
		checks += (int64_t)g->services[i].nchecks;
	for (size_t t = 0; t < g->ntasks; t++)
		for (size_t i = 0; i < g->tasks[t].nservices; i++)
			checks += (int64_t)g->tasks[t].services[i].nchecks;
	if (checks)
		json_object_set_new(alloc, "deployment_checks", json_integer(checks));
}

/* ---- the round -------------------------------------------------------------- */

/* node (a copy) with its drain ended as complete. */
static void complete_drain(json_t *node, int64_t now)
{
	json_t *last = json_deep_copy(json_object_get(node, "last_drain"));

	if (!json_is_object(last)) {
		json_decref(last);
		last = json_pack("{s:I}", "started_at",
				 (json_int_t)jint(json_object_get(node, "drain_strategy"),
						  "started_at", now));
	}
	json_object_set_new(last, "status", json_string("complete"));
	json_object_set_new(last, "ended_at", json_integer(now));
	json_object_set_new(node, "last_drain", last);
	json_object_set_new(node, "drain", json_false());
	json_object_del(node, "drain_strategy");
}

/* One draining node's step in its own commit.  Returns 0 or -errno. */
static int drain_one(struct server *srv, const json_t *node, int64_t now)
{
	struct store_key key = { NULL, jstr(node, "id", ""), 0 };
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0 };
	json_t *evals = json_array(), *done = NULL;
	bool complete = false;
	int rc;

	store_batch_init(&b);
	store_batch_require_index(&b, STORE_NODE, &key, (uint64_t)jint(node, "modify_index", 0));
	rc = drain_node_step(srv, node, now, &b, evals, &complete);
	if (rc >= 0 && complete) {
		done = json_deep_copy(node);
		complete_drain(done, now);
		store_batch_put(&b, STORE_NODE, done);
	}
	if (rc > 0 || (rc == 0 && complete))
		rc = store_commit(srv->store, &b, NULL, &err);
	if (rc == 0) {
		server_queue_evals(srv, evals);
		if (complete)
			server_log(srv, "info", "node %s: drain complete", key.id);
	} else if (rc < 0 && rc != -ESTALE) {
		server_log(srv, "error", "node %s: drain: %s", key.id,
			   err.msg[0] ? err.msg : strerror(-rc));
	}
	store_batch_release(&b);
	json_decref(done);
	json_decref(evals);
	return rc < 0 ? rc : 0;
}

void drain_round(struct server *srv)
{
	struct drainer *d = srv->drainer;
	json_t *nodes = NULL, *n;
	int64_t now = now_ns();
	bool any = false;
	size_t i;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	if (!d->any) {
		pthread_mutex_unlock(&d->lock);
		return;
	}
	d->wake = false;
	pthread_mutex_unlock(&d->lock);
	if (store_list_shared(srv->store, STORE_NODE, NULL, &nodes, NULL) < 0)
		return; /* as it was: the next round reads again */
	json_array_foreach(nodes, i, n) {
		if (!jbool(n, "drain", false))
			continue;
		any = true;
		drain_one(srv, n, now);
	}
	json_decref(nodes);
	pthread_mutex_lock(&d->lock);
	/* a drain started meanwhile set wake (and any) again */
	d->any = any || d->wake;
	pthread_mutex_unlock(&d->lock);
}

static void *drain_main(void *arg)
{
	struct server *srv = arg;
	struct drainer *d = srv->drainer;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		struct timespec until = deadline_after(CLOCK_MONOTONIC, DRAIN_ROUND_NS);
		while (!d->stop && !d->wake &&
		       pthread_cond_timedwait(&d->cond, &d->lock, &until) != ETIMEDOUT)
			;
		if (d->stop)
			break;
		pthread_mutex_unlock(&d->lock);
		drain_round(srv);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

void drain_wake(struct server *srv)
{
	struct drainer *d = srv->drainer;
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->any = d->wake = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

int drain_start(struct server *srv, struct herd_err *err)
{
	struct drainer *d = xcalloc(1, sizeof(*d));
	pthread_condattr_t ca;
	int rc;

	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	d->any = true; /* the first round finds drains a previous leader left */
	srv->drainer = d;
	rc = -pthread_create(&d->thread, NULL, drain_main, srv);
	if (rc < 0) {
		srv->drainer = NULL;
		pthread_mutex_destroy(&d->lock);
		pthread_cond_destroy(&d->cond);
		free(d);
		return herd_errf(err, rc, "cannot start the drainer: %s", strerror(-rc));
	}
	return 0;
}

void drain_stop(struct server *srv)
{
	struct drainer *d = srv->drainer;
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	srv->drainer = NULL;
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}
