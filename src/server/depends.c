/* depends: the dependency gate and the index of dependents (depends.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/depends.h"
#include "server/server-int.h"

struct depends {
	pthread_mutex_t lock;
	json_t *dependents; /* {"<ns>\x1f<dep>": {"<ns>\x1f<job>": true}} */
	json_t *parked;     /* {"<ns>\x1f<job>": "<eval id>"}: waiting evaluations */
	json_t *poked;      /* {"<ns>\x1f<job>": gen}: when a dependency last changed */
	json_t *named;      /* {"<ns>\x1f<job>": {"<ns>\x1f<dep>": true}}: the edges a
			     * job added, which go when it is purged */
	uint64_t gen;
	size_t nedges;      /* read without the lock: 0 spares every job the lock */
};

static char *key_of(const char *ns, const char *id)
{
	return xasprintf("%s\x1f%s", ns, id);
}

void depends_note_job(struct server *srv, const char *ns, const char *id, const json_t *deps)
{
	struct depends *d = srv->deps;
	char *me = key_of(ns, id);
	size_t i;
	json_t *x;

	pthread_mutex_lock(&d->lock);
	json_array_foreach(deps, i, x) {
		char *k = key_of(ns, jstr(x, "job", ""));
		json_t *set = json_object_get(d->dependents, k), *mine;
		if (!set) {
			set = json_object();
			json_object_set_new(d->dependents, k, set);
		}
		if (!json_object_get(set, me)) {
			json_object_set_new(set, me, json_true());
			__atomic_add_fetch(&d->nedges, 1, __ATOMIC_RELEASE);
		}
		if (!(mine = json_object_get(d->named, me))) {
			mine = json_object();
			json_object_set_new(d->named, me, mine);
		}
		json_object_set_new(mine, k, json_true());
		free(k);
	}
	pthread_mutex_unlock(&d->lock);
	free(me);
}

int depends_start(struct server *srv, struct herd_err *err)
{
	struct depends *d = xcalloc(1, sizeof(*d));
	json_t *jobs = NULL, *x;
	size_t i;
	int rc;

	pthread_mutex_init(&d->lock, NULL);
	d->dependents = json_object();
	d->parked = json_object();
	d->poked = json_object();
	d->named = json_object();
	srv->deps = d;
	rc = store_list_shared(srv->store, STORE_JOB, NULL, &jobs, err);
	if (rc < 0)
		return rc;
	json_array_foreach(jobs, i, x)
		if (json_array_size(json_object_get(x, "depends_on")))
			depends_note_job(srv, jstr(x, "namespace", "default"), jstr(x, "id", ""),
					 json_object_get(x, "depends_on"));
	json_decref(jobs);
	return 0;
}

void depends_stop(struct server *srv)
{
	struct depends *d = srv->deps;
	if (!d)
		return;
	json_decref(d->dependents);
	json_decref(d->parked);
	json_decref(d->poked);
	json_decref(d->named);
	pthread_mutex_destroy(&d->lock);
	free(d);
	srv->deps = NULL;
}

/* Drops the edges job me added, under d->lock. */
static void drop_edges_locked(struct depends *d, const char *me)
{
	json_t *mine = json_object_get(d->named, me), *v;
	const char *k;

	json_object_foreach(mine, k, v) {
		json_t *set = json_object_get(d->dependents, k);
		if (json_object_get(set, me)) {
			json_object_del(set, me);
			__atomic_sub_fetch(&d->nedges, 1, __ATOMIC_RELEASE);
		}
		if (set && !json_object_size(set))
			json_object_del(d->dependents, k);
	}
	json_object_del(d->named, me);
}

void depends_forget_job(struct server *srv, const char *ns, const char *id)
{
	struct depends *d = srv->deps;
	struct store_key key = { ns, id, 0 };
	uint64_t idx = 0;
	char *me;

	if (!d)
		return;
	me = key_of(ns, id);
	pthread_mutex_lock(&d->lock);
	/* Registered again since the purge: the edges are the new job's.  A
	 * registration notes its edges after its commit, under this lock, so
	 * one that committed after this read adds them again after this.
	 * Its parked evaluation stays: the purge's own evaluation ends
	 * without waiting and cancels it (depends_unpark). */
	if (store_get_index(srv->store, STORE_JOB, &key, &idx, NULL) == -ENOENT) {
		drop_edges_locked(d, me);
		json_object_del(d->poked, me);
	}
	pthread_mutex_unlock(&d->lock);
	free(me);
}

size_t depends_edges(struct server *srv)
{
	return srv->deps ? __atomic_load_n(&srv->deps->nedges, __ATOMIC_ACQUIRE) : 0;
}

uint64_t depends_gen(struct server *srv)
{
	return __atomic_load_n(&srv->deps->gen, __ATOMIC_ACQUIRE);
}

bool depends_awaited(struct server *srv, const char *ns, const char *id)
{
	struct depends *d = srv->deps;
	bool awaited = false;
	const char *dep;
	json_t *set, *v;
	char *k;

	if (!d || __atomic_load_n(&d->nedges, __ATOMIC_ACQUIRE) == 0)
		return false;
	k = key_of(ns, id);
	pthread_mutex_lock(&d->lock);
	set = json_object_get(d->dependents, k);
	json_object_foreach(set, dep, v)
		if (json_object_get(d->parked, dep))
			awaited = true;
	pthread_mutex_unlock(&d->lock);
	free(k);
	return awaited;
}

/* The evaluation ids of what (ns, id)'s dependents had parked; every
 * dependent is marked poked at a new generation.  The entries stay until
 * their evaluations park again or end (depends_unpark): meanwhile the
 * garbage collector must still see the dependencies as awaited. */
static json_t *take_dependents(struct depends *d, const char *ns, const char *id)
{
	json_t *wake = json_array(), *set, *v;
	char *k = key_of(ns, id);
	const char *dep;

	pthread_mutex_lock(&d->lock);
	set = json_object_get(d->dependents, k);
	if (set) {
		uint64_t gen = __atomic_add_fetch(&d->gen, 1, __ATOMIC_RELEASE);
		json_object_foreach(set, dep, v) {
			json_t *eval = json_object_get(d->parked, dep);
			json_object_set_new(d->poked, dep, json_integer((json_int_t)gen));
			if (eval)
				json_array_append_new(wake, json_pack("{s:s, s:O}", "key", dep, "eval", eval));
		}
	}
	pthread_mutex_unlock(&d->lock);
	free(k);
	return wake;
}

/* Queues stored evaluation eval_id of the job whose index key is key. */
static void enqueue_keyed(struct server *srv, const char *key, const char *eval_id)
{
	const char *sep = strchr(key, '\x1f');
	char *ns = xstrndup(key, (size_t)(sep - key));
	broker_enqueue(&srv->broker, eval_id, ns, sep + 1, 0);
	free(ns);
}

void depends_job_changed(struct server *srv, const char *ns, const char *id)
{
	struct depends *d = srv->deps; /* read once: gcc's sanitized build then
					* knows it is not NULL below */
	json_t *wake, *x;
	size_t i;

	if (!d || __atomic_load_n(&d->nedges, __ATOMIC_ACQUIRE) == 0)
		return;
	wake = take_dependents(d, ns, id);
	json_array_foreach(wake, i, x)
		enqueue_keyed(srv, jstr(x, "key", ""), jstr(x, "eval", ""));
	json_decref(wake);
}

/* Marks a parked evaluation that a newer one of its job replaced. */
static void eval_supersede(struct server *srv, const char *old_id, const char *new_id)
{
	struct store_key key = { NULL, old_id, 0 };
	json_t *e = NULL;
	if (store_get(srv->store, STORE_EVAL, &key, &e, NULL) < 0)
		return;
	if (!strcmp(jstr(e, "status", ""), "blocked")) {
		char *why = xasprintf("superseded by evaluation %s", new_id);
		json_object_set_new(e, "status", json_string("canceled"));
		json_object_set_new(e, "status_description", json_string(why));
		(void)store_put(srv->store, STORE_EVAL, e, NULL, NULL);
		free(why);
	}
	json_decref(e);
}

void depends_park(struct server *srv, const char *ns, const char *id, const char *eval_id,
		  uint64_t gen_seen)
{
	struct depends *d = srv->deps;
	char *k = key_of(ns, id), *old = NULL;
	const char *prev;
	bool now;

	pthread_mutex_lock(&d->lock);
	now = (uint64_t)jint(d->poked, k, 0) > gen_seen;
	prev = json_string_value(json_object_get(d->parked, k));
	if (prev && strcmp(prev, eval_id))
		old = xstrdup(prev);
	json_object_set_new(d->parked, k, json_string(eval_id));
	pthread_mutex_unlock(&d->lock);
	/* a dependency changed while this evaluation ran: look again */
	if (now)
		broker_enqueue(&srv->broker, eval_id, ns, id, 0);
	if (old)
		eval_supersede(srv, old, eval_id);
	free(old);
	free(k);
}

void depends_unpark(struct server *srv, const char *ns, const char *id, const char *eval_id)
{
	struct depends *d = srv->deps;
	char *k, *old = NULL;
	const char *prev;

	if (!d || __atomic_load_n(&d->nedges, __ATOMIC_ACQUIRE) == 0)
		return;
	k = key_of(ns, id);
	pthread_mutex_lock(&d->lock);
	prev = json_string_value(json_object_get(d->parked, k));
	if (prev) {
		if (strcmp(prev, eval_id))
			old = xstrdup(prev);
		json_object_del(d->parked, k);
	}
	pthread_mutex_unlock(&d->lock);
	if (old)
		eval_supersede(srv, old, eval_id);
	free(old);
	free(k);
}

/* ---- registration ---------------------------------------------------- */

#define DEPENDS_CYCLE_SCAN 4096 /* jobs a cycle check reads at most */

/* The path back from id to the job registered (parent holds each job's
 * predecessor), "a -> b -> c -> a" with me first and last.  A new string. */
static char *cycle_path(const json_t *parent, const char *me, const char *last)
{
	json_t *chain = json_array();
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *x;

	for (const char *c = last; c && strcmp(c, me); c = json_string_value(json_object_get(parent, c)))
		json_array_insert_new(chain, 0, json_string(c));
	strbuf_adds(&sb, me);
	json_array_foreach(chain, i, x)
		strbuf_addf(&sb, " -> %s", json_string_value(x));
	strbuf_addf(&sb, " -> %s", me);
	json_decref(chain);
	return strbuf_detach(&sb, NULL);
}

/* Whether the jobs canon names lead back to it through the stored jobs'
 * depends_on (breadth first, at most DEPENDS_CYCLE_SCAN jobs): such a
 * cycle would wait forever.  *path gets it ("a -> b -> a").  0, 1 (a
 * cycle), or the store's error. */
static int find_cycle(struct server *srv, const char *ns, const json_t *canon, char **path,
		      struct herd_err *err)
{
	const char *me = jstr(canon, "id", "");
	json_t *parent = json_object(), *queue = json_array(), *x;
	size_t i, head = 0;
	int rc = 0;

	json_array_foreach(json_object_get(canon, "depends_on"), i, x) {
		json_object_set_new(parent, jstr(x, "job", ""), json_string(me));
		json_array_append_new(queue, json_string(jstr(x, "job", "")));
	}
	while (rc == 0 && head < json_array_size(queue) && head < DEPENDS_CYCLE_SCAN) {
		const char *id = json_string_value(json_array_get(queue, head++));
		struct store_key key = { ns, id, 0 };
		json_t *job = NULL, *d;
		size_t k;
		rc = store_get_shared(srv->store, STORE_JOB, &key, &job, err);
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		json_array_foreach(json_object_get(job, "depends_on"), k, d) {
			const char *next = jstr(d, "job", "");
			if (!strcmp(next, me)) {
				*path = cycle_path(parent, me, id);
				rc = 1;
				break;
			}
			if (json_object_get(parent, next))
				continue;
			json_object_set_new(parent, next, json_string(id));
			json_array_append_new(queue, json_string(next));
		}
		json_decref(job);
	}
	json_decref(parent);
	json_decref(queue);
	return rc;
}

int depends_check_register(struct server *srv, const char *ns, const json_t *canon,
			   json_t **required, struct http_response *resp, struct herd_err *err)
{
	json_t *deps = json_object_get(canon, "depends_on"), *req, *x;
	char *path = NULL;
	size_t i;
	int rc;

	*required = NULL;
	if (!json_array_size(deps))
		return 0;
	req = json_object();
	json_array_foreach(deps, i, x) {
		struct store_key key = { ns, jstr(x, "job", ""), 0 };
		uint64_t idx = 0;
		rc = store_get_index(srv->store, STORE_JOB, &key, &idx, err);
		if (rc == -ENOENT) {
			json_decref(req);
			http_error(resp, 400, "dependency_not_found",
				   "job %s depends on job %s, which does not exist in namespace %s",
				   jstr(canon, "id", ""), key.id, ns);
			return 1;
		}
		if (rc < 0) {
			json_decref(req);
			return rc;
		}
		json_object_set_new(req, key.id, json_integer((json_int_t)idx));
	}
	rc = find_cycle(srv, ns, canon, &path, err);
	if (rc) {
		json_decref(req);
		if (rc > 0)
			http_error(resp, 400, "dependency_cycle",
				   "job %s would wait for itself: %s", jstr(canon, "id", ""), path);
		free(path);
		return rc;
	}
	*required = req;
	return 0;
}

void depends_require(struct store_batch *b, const char *ns, const json_t *required)
{
	const char *id;
	json_t *v;
	json_object_foreach((json_t *)required, id, v) {
		struct store_key key = { ns, id, 0 };
		store_batch_require_index(b, STORE_JOB, &key, (uint64_t)json_integer_value(v));
	}
}

/* ---- the gate ---------------------------------------------------------- */

/* How a dependency's job stands now. */
enum outcome { OUT_RUNNING, OUT_COMPLETE, OUT_FAILED, OUT_STOPPED, OUT_PURGED };

/* Whether every slot of a job that is not dead has ended for good with a
 * failure among them: each current allocation failed (or, for a service,
 * ended) with no reschedule left, or completed (batch).  Anything pending,
 * running, lost or due a reschedule means it has not ended. */
static bool failed_for_good(const json_t *job, const json_t *allocs, int64_t now)
{
	struct job *model = job_from_stored(job);
	bool batch = !strcmp(jstr(job, "type", "service"), "batch"), failed = false;
	int64_t want = 0, ended = 0;
	size_t i;
	json_t *al;

	if (!model)
		return false;
	for (size_t g = 0; g < model->ngroups; g++)
		want += model->groups[g].count;
	json_array_foreach(allocs, i, al) {
		const char *c = jstr(al, "client_status", "pending");
		const struct job_group *g = NULL;
		if (strcmp(jstr(al, "desired_status", "run"), "run"))
			continue;
		for (size_t k = 0; k < model->ngroups; k++)
			if (!strcmp(model->groups[k].name, jstr(al, "task_group", "")))
				g = &model->groups[k];
		if (!g)
			continue;
		if (!strcmp(c, "complete") && batch) {
			ended++;
		} else if (!strcmp(c, "failed") || !strcmp(c, "complete")) {
			if (reconcile_reschedules(g, al, now))
				continue;
			ended++;
			failed = true;
		}
	}
	job_free(model);
	return failed && ended >= want;
}

/* The outcome of job (NULL: purged) given its allocations; *status gets
 * its status for messages ("running", "pending", "dead"). */
static enum outcome outcome_of(const json_t *job, const json_t *allocs, const char **status)
{
	if (!job) {
		*status = "purged";
		return OUT_PURGED;
	}
	*status = job_status(job, allocs);
	if (jbool(job, "stop", false))
		return OUT_STOPPED;
	if (!strcmp(*status, "dead"))
		return OUT_COMPLETE;
	if (!job_is_parent(job) && failed_for_good(job, allocs, now_ns())) {
		*status = "failed";
		return OUT_FAILED;
	}
	return OUT_RUNNING;
}

/* 1: condition holds for outcome o; 0: not yet; -1: never. */
static int condition_holds(const char *cond, enum outcome o)
{
	if (o == OUT_RUNNING)
		return 0;
	if (!strcmp(cond, "dead"))
		return 1;
	if (!strcmp(cond, "failed"))
		return o == OUT_FAILED || o == OUT_STOPPED ? 1 : -1;
	return o == OUT_COMPLETE ? 1 : -1;
}

static const char *outcome_verb(enum outcome o)
{
	switch (o) {
	case OUT_COMPLETE: return "completed";
	case OUT_FAILED: return "failed";
	case OUT_STOPPED: return "was stopped";
	case OUT_PURGED: return "does not exist";
	default: return "runs";
	}
}

/* Reads dependency id of namespace ns: its job (NULL when purged) and
 * allocations. */
static int read_dependency(struct server *srv, const char *ns, const char *id, json_t **job,
			   json_t **allocs, struct herd_err *err)
{
	struct store_key key = { ns, id, 0 };
	struct store_filter f = { ns, id, NULL };
	int rc = store_get_shared(srv->store, STORE_JOB, &key, job, err);
	*allocs = NULL;
	if (rc == -ENOENT) {
		*job = NULL;
		return 0;
	}
	if (rc == 0)
		rc = store_list_shared(srv->store, STORE_ALLOC, &f, allocs, err);
	if (rc < 0) {
		json_decref(*job);
		*job = NULL;
	}
	return rc;
}

/* Checks one dependency x of a job of namespace ns: *holds gets 1, 0 or
 * -1 as condition_holds; *status and *o describe its job.  0 or the
 * store's error. */
static int check_one(struct server *srv, const char *ns, const json_t *x, int *holds,
		     const char **status, enum outcome *o, struct herd_err *err)
{
	json_t *job, *allocs;
	int rc = read_dependency(srv, ns, jstr(x, "job", ""), &job, &allocs, err);
	if (rc < 0)
		return rc;
	*o = outcome_of(job, allocs, status);
	json_decref(job);
	json_decref(allocs);
	*holds = condition_holds(jstr(x, "condition", "complete"), *o);
	return 0;
}

int depends_gate(struct server *srv, const json_t *job, char **why, json_t **waiting,
		 struct herd_err *err)
{
	const char *ns = jstr(job, "namespace", "default");
	struct strbuf sb = STRBUF_INIT;
	json_t *wait = json_array(), *x;
	size_t i;

	*why = NULL;
	*waiting = NULL;
	json_array_foreach(json_object_get(job, "depends_on"), i, x) {
		const char *status = "", *id = jstr(x, "job", ""), *cond = jstr(x, "condition", "complete");
		enum outcome o = OUT_RUNNING;
		int h = 0, rc = check_one(srv, ns, x, &h, &status, &o, err);
		if (rc < 0) {
			strbuf_release(&sb);
			json_decref(wait);
			return rc;
		}
		if (h == -1) {
			*why = xasprintf("dependency %s %s: will never be %s", id, outcome_verb(o), cond);
			strbuf_release(&sb);
			json_decref(wait);
			return DEPENDS_NEVER;
		}
		if (h == 0) {
			strbuf_addf(&sb, "%swaiting for job %s (%s) to be %s", sb.len ? "; " : "", id,
				    status, cond);
			json_array_append_new(wait, json_string(id));
		}
	}
	if (!json_array_size(wait)) {
		strbuf_release(&sb);
		json_decref(wait);
		return DEPENDS_HOLD;
	}
	*why = strbuf_detach(&sb, NULL);
	*waiting = wait;
	return DEPENDS_WAIT;
}

int depends_stop_job(struct server *srv, const json_t *job, const char *why, struct herd_err *err)
{
	struct store_key key = { jstr(job, "namespace", "default"), jstr(job, "id", ""), 0 };
	struct store_batch b = STORE_BATCH_INIT;
	json_t *c = json_deep_copy(job);
	int rc;

	json_object_set_new(c, "stop", json_true());
	json_object_set_new(c, "stop_reason", json_string(why));
	store_batch_init(&b);
	store_batch_require_index(&b, STORE_JOB, &key, (uint64_t)jint(job, "modify_index", 0));
	store_batch_put(&b, STORE_JOB, c);
	rc = store_commit(srv->store, &b, NULL, err);
	store_batch_release(&b);
	json_decref(c);
	if (rc == 0)
		depends_job_changed(srv, key.ns, key.id);
	return rc;
}

json_t *depends_describe(struct server *srv, const json_t *job, struct herd_err *err)
{
	const char *ns = jstr(job, "namespace", "default");
	json_t *deps = json_object_get(job, "depends_on"), *out, *x;
	static const char *const states[] = { "never", "waiting", "met" };
	size_t i;

	if (!json_array_size(deps))
		return NULL;
	out = json_array();
	json_array_foreach(deps, i, x) {
		const char *status = "";
		enum outcome o = OUT_RUNNING;
		int h = 0;
		if (check_one(srv, ns, x, &h, &status, &o, err) < 0) {
			json_decref(out);
			return NULL;
		}
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s}", "job", jstr(x, "job", ""),
						     "condition", jstr(x, "condition", "complete"),
						     "job_status", status, "state", states[h + 1]));
	}
	return out;
}
