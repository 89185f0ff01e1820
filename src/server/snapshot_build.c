/* snapshot_build: one consistent read of what an evaluation needs (the
 * job, its allocations, every node and what its allocations take), and its
 * translation into the placement engine's snapshot and request. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/reservation.h"
#include "server/server-int.h"

struct view_arg {
	struct view_cache *cache;
	const char *ns, *job_id;
	struct sched_view *v;
};

void view_cache_init(struct view_cache *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

void view_cache_release(struct view_cache *c)
{
	json_decref(c->nodes);
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].id);
		node_usage_release(&c->v[i].use);
		json_decref(c->v[i].counted);
	}
	free(c->v);
	pthread_mutex_destroy(&c->lock);
}

/* The node list as of this transaction (cache->lock held).  Everything a
 * view reads is a shared record (store_get_shared): planning only reads
 * it, and what a plan changes it copies first (reconcile's stops and
 * updates, preemption's victims, the worker's evaluations). */
static int nodes_of(struct store *s, struct view_cache *c, json_t **out, struct herd_err *err)
{
	uint64_t idx = 0;
	int rc;
	if (!c)
		return store_list_shared(s, STORE_NODE, NULL, out, err);
	rc = store_kind_index(s, STORE_NODE, &idx, err);
	if (rc < 0)
		return rc;
	if (!c->nodes || c->nodes_index != idx) {
		json_t *list = NULL;
		rc = store_list_shared(s, STORE_NODE, NULL, &list, err);
		if (rc < 0)
			return rc;
		json_decref(c->nodes);
		c->nodes = list;
		c->nodes_index = idx;
	}
	/* views own their nodes and change nothing in them: share a copy of
	 * the array, not of every node */
	*out = json_copy(c->nodes);
	return 0;
}

/* Adds (sign 1) or removes (-1) resources counted for an allocation. */
static void usage_add_resources(struct node_usage *u, json_t *res, int sign)
{
	json_t *wrap = json_pack("{s:O}", "resources", res);
	node_usage_add_alloc(u, wrap, sign);
	json_decref(wrap);
}

/* Brings cn up to date with the allocations of its node that changed after
 * cn->allocs_index: each one's old contribution out, its new one in.  An
 * evaluation then costs what changed since the last one, not a parse of
 * every allocation the node ever had (a dev agent's single node has them
 * all).  Allocations never move between nodes (a replacement is a new
 * allocation), so the node's own list holds every change to its usage. */
static int usage_catch_up(struct store *s, struct view_cache_node *cn, struct herd_err *err)
{
	struct store_filter nf = { NULL, NULL, cn->id };
	json_t *allocs = NULL, *al;
	size_t j;
	int rc = store_list_changed_shared(s, STORE_ALLOC, &nf, cn->allocs_index, &allocs, err);
	if (rc < 0)
		return rc;
	/* Views share the map (see usage_of): copy it before changing it while
	 * one still holds it.  A shallow copy: the values are never changed. */
	if (cn->counted->refcount > 1) {
		json_t *own = json_copy(cn->counted);
		json_decref(cn->counted);
		cn->counted = own;
	}
	json_array_foreach(allocs, j, al) {
		const char *aid = jstr(al, "id", "");
		json_t *was = json_object_get(cn->counted, aid);
		if (was) {
			usage_add_resources(&cn->use, was, -1);
			json_object_del(cn->counted, aid);
		}
		if (alloc_takes_capacity(al)) {
			json_t *res = json_object_get(al, "resources");
			res = res ? json_incref(res) : json_object();
			usage_add_resources(&cn->use, res, 1);
			json_object_set_new(cn->counted, aid, res);
		}
	}
	json_decref(allocs);
	return 0;
}

/* The usage of node id as of this transaction (cache->lock held), and in
 * *counted (with a cache) the allocations that usage counts: a reference to
 * the cache's map, which the cache copies before changing it again. */
static int usage_of(struct store *s, struct view_cache *c, const char *id, struct node_usage *out,
		    json_t **counted, struct herd_err *err)
{
	struct store_filter nf = { NULL, NULL, id };
	struct view_cache_node *cn = NULL;
	uint64_t idx = 0;
	json_t *allocs = NULL, *al;
	size_t j;
	int rc;

	if (!c) {
		rc = store_list_shared(s, STORE_ALLOC, &nf, &allocs, err);
		if (rc < 0)
			return rc;
		json_array_foreach(allocs, j, al)
			if (alloc_takes_capacity(al))
				node_usage_add_alloc(out, al, 1);
		json_decref(allocs);
		return 0;
	}
	rc = store_node_allocs_index(s, id, &idx, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < c->n && !cn; i++)
		if (!strcmp(c->v[i].id, id))
			cn = &c->v[i];
	if (!cn) {
		ALLOC_GROW(c->v, c->n + 1, c->a);
		cn = &c->v[c->n++];
		memset(cn, 0, sizeof(*cn));
		cn->id = xstrdup(id);
		cn->counted = json_object();
	}
	if (cn->allocs_index != idx) {
		rc = usage_catch_up(s, cn, err);
		if (rc < 0) {
			/* start over from nothing next time */
			node_usage_release(&cn->use);
			json_decref(cn->counted); /* views may hold it */
			cn->counted = json_object();
			cn->allocs_index = 0;
			return rc;
		}
		cn->allocs_index = idx;
	}
	node_usage_copy(out, &cn->use);
	*counted = json_incref(cn->counted);
	return 0;
}

static bool node_schedulable(const json_t *node)
{
	return !strcmp(jstr(node, "status", ""), "ready") &&
	       !strcmp(jstr(node, "eligibility", "eligible"), "eligible") &&
	       !jbool(node, "drain", false);
}

/* The job (ns, job_id) (NULL when gone) and its allocations: shared
 * records. */
static int read_job(struct store *s, const char *ns, const char *job_id, json_t **job,
		    json_t **allocs, struct herd_err *err)
{
	struct store_key key = { ns, job_id, 0 };
	struct store_filter jf = { ns, job_id, NULL };
	int rc = store_get_shared(s, STORE_JOB, &key, job, err);
	if (rc == -ENOENT)
		*job = NULL;
	else if (rc < 0)
		return rc;
	return store_list_shared(s, STORE_ALLOC, &jf, allocs, err);
}

/* The nodes and what they have taken (a->cache->lock held when a cache). */
static int read_nodes(struct store *s, struct view_arg *a, struct herd_err *err)
{
	struct sched_view *v = a->v;
	json_t *nodes = NULL, *node;
	size_t i;
	int rc = nodes_of(s, a->cache, &nodes, err);
	if (rc < 0)
		return rc;
	v->nodes = xcalloc(json_array_size(nodes) + 1, sizeof(*v->nodes));
	json_array_foreach(nodes, i, node) {
		struct view_node *vn = &v->nodes[v->nnodes++];
		vn->node = json_incref(node);
		vn->id = jstr(node, "id", "");
		vn->schedulable = node_schedulable(node);
		if (vn->schedulable) {
			rc = usage_of(s, a->cache, vn->id, &vn->use, &vn->counted, err);
			if (rc < 0)
				break;
		}
	}
	json_decref(nodes);
	return rc < 0 ? rc : 0;
}

static int read_view(struct store *s, void *arg, struct herd_err *err)
{
	struct view_arg *a = arg;
	/* the index of the state this transaction reads: the plan's
	 * conditions compare against it (the published index may lag) */
	int rc = store_read_index(s, &a->v->index, err);
	if (rc == 0)
		rc = read_job(s, a->ns, a->job_id, &a->v->job, &a->v->job_allocs, err);
	return rc < 0 ? rc : read_nodes(s, a, err);
}

struct batch_arg {
	struct view_arg a;
	size_t n;
	char *const *eval_ids, *const *ns, *const *job_ids;
	json_t **evals, **jobs, **allocs;
};

static int read_batch_view(struct store *s, void *arg, struct herd_err *err)
{
	struct batch_arg *b = arg;
	int rc = store_read_index(s, &b->a.v->index, err);
	for (size_t i = 0; i < b->n && rc == 0; i++) {
		struct store_key ek = { NULL, b->eval_ids[i], 0 };
		/* shared: the worker copies an evaluation to finish it */
		rc = store_get_shared(s, STORE_EVAL, &ek, &b->evals[i], err);
		if (rc == -ENOENT) {
			b->evals[i] = NULL;
			rc = 0;
			continue;
		}
		if (rc == 0)
			rc = read_job(s, b->ns[i], b->job_ids[i], &b->jobs[i], &b->allocs[i], err);
	}
	return rc < 0 ? rc : read_nodes(s, &b->a, err);
}

int sched_view_read_batch(struct store *s, struct view_cache *cache, size_t n,
			  char *const *eval_ids, char *const *ns, char *const *job_ids,
			  struct sched_view *v, json_t **evals, json_t **jobs, json_t **allocs,
			  struct herd_err *err)
{
	struct batch_arg b = { { cache, NULL, NULL, v }, n, eval_ids, ns, job_ids,
			       evals, jobs, allocs };
	int rc;
	memset(v, 0, sizeof(*v));
	memset(evals, 0, n * sizeof(*evals));
	memset(jobs, 0, n * sizeof(*jobs));
	memset(allocs, 0, n * sizeof(*allocs));
	if (cache)
		pthread_mutex_lock(&cache->lock);
	rc = store_view(s, read_batch_view, &b, err);
	if (cache)
		pthread_mutex_unlock(&cache->lock);
	if (rc < 0) {
		sched_view_release(v);
		for (size_t i = 0; i < n; i++) {
			json_decref(evals[i]);
			json_decref(jobs[i]);
			json_decref(allocs[i]);
			evals[i] = jobs[i] = allocs[i] = NULL;
		}
	}
	return rc;
}

int sched_view_read(struct store *s, struct view_cache *cache, const char *ns,
		    const char *job_id, struct sched_view *v, struct herd_err *err)
{
	struct view_arg a = { cache, ns, job_id, v };
	int rc;
	memset(v, 0, sizeof(*v));
	if (cache)
		pthread_mutex_lock(&cache->lock);
	rc = store_view(s, read_view, &a, err);
	if (cache)
		pthread_mutex_unlock(&cache->lock);
	if (rc < 0)
		sched_view_release(v);
	return rc;
}

static void view_snap_free(struct view_snap *c);

void sched_view_release(struct sched_view *v)
{
	if (!v)
		return;
	view_snap_free(v->snap);
	resv_free(v->resv);
	json_decref(v->no_quota);
	json_decref(v->job);
	json_decref(v->job_allocs);
	json_decref(v->evals_blocked);
	for (size_t i = 0; i < v->nnodes; i++) {
		json_decref(v->nodes[i].node);
		json_decref(v->nodes[i].counted);
		node_usage_release(&v->nodes[i].use);
	}
	free(v->nodes);
	memset(v, 0, sizeof(*v));
}

struct view_node *sched_view_node(struct sched_view *v, const char *id)
{
	for (size_t i = 0; i < v->nnodes; i++)
		if (!strcmp(v->nodes[i].id, id))
			return &v->nodes[i];
	return NULL;
}

/* ---- the request -------------------------------------------------------- */

int group_ask_add_rules(struct group_ask *a, const struct job_rules *r, bool affinity,
			struct sched_constraint **cv, size_t *cn, struct sched_affinity **av,
			size_t *an, struct herd_err *err)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct job_constraint *c = &r->v[i];
		struct sched_constraint sc;
		if (a && !affinity && !strcmp(c->operator, "distinct_hosts")) {
			a->distinct_hosts = !c->value || !strcmp(c->value, "true");
			continue;
		}
		if (a && !affinity && !strcmp(c->operator, "distinct_property")) {
			group_ask_add_distinct_property(a, c, r == &a->job->constraints);
			continue;
		}
		if (sched_op_parse(c->operator, &sc.op) < 0)
			return herd_errf(err, -EINVAL,
					 "%sconstraint operator \"%s\" is not supported by the scheduler",
					 a ? "" : "device ", c->operator);
		sc.ltarget = c->attribute;
		sc.rtarget = c->value;
		if (affinity) {
			*av = xreallocarray(*av, *an + 1, sizeof(**av));
			(*av)[*an].c = sc;
			(*av)[(*an)++].weight = (int)c->weight;
		} else {
			*cv = xreallocarray(*cv, *cn + 1, sizeof(**cv));
			(*cv)[(*cn)++] = sc;
		}
	}
	return 0;
}

/* The group's tasks with `cores` as the engine's core asks; dev is the
 * group's first device ask (the request's device), the only one whose
 * GPUs a task's cores can be aligned with. */
static int group_ask_cores(struct group_ask *a, const struct job_group *g,
			   const struct job_device *dev, struct herd_err *err)
{
	for (size_t t = 0; t < g->ntasks; t++) {
		const struct job_resources *r = &g->tasks[t].resources;
		const struct job_numa *nm = r->numa;
		bool owns_dev = dev && r->ndevices && &r->devices[0] == dev;
		struct sched_core_request *c;
		if (r->cores <= 0)
			continue;
		if (a->req.ncores == SCHED_MAX_CORE_ASKS)
			return herd_errf(err, -EINVAL, "more than %d tasks of group \"%s\" reserve cores",
					 SCHED_MAX_CORE_ASKS, g->name);
		if (!a->cores)
			a->cores = xcalloc(SCHED_MAX_CORE_ASKS, sizeof(*a->cores));
		c = &a->cores[a->req.ncores++];
		c->count = r->cores > INT32_MAX ? INT32_MAX : (int)r->cores;
		a->cores_cpu += r->cores * 1000;
		c->numa = !nm || !nm->affinity || !strcmp(nm->affinity, "none") ? SCHED_NUMA_NONE
			  : !strcmp(nm->affinity, "prefer") ? SCHED_NUMA_PREFER : SCHED_NUMA_REQUIRE;
		/* none: near the task's GPUs anyway; prefer, require: those
		 * named in devices */
		c->with_device = owns_dev && c->numa == SCHED_NUMA_NONE;
		for (size_t i = 0; nm && i < nm->devices.n; i++) {
			if (owns_dev && !strcmp(nm->devices.v[i], dev->name)) {
				c->with_device = true;
				continue;
			}
			return herd_errf(err, -EINVAL,
					 "task \"%s\": numa devices \"%s\": only the group's first device "
					 "ask (%s%s%s) can share a NUMA node with reserved cores",
					 g->tasks[t].name, nm->devices.v[i], dev ? "\"" : "",
					 dev ? dev->name : "none", dev ? "\"" : "");
		}
	}
	a->req.cores = a->cores;
	return 0;
}

int group_ask_init(struct group_ask *a, const struct job *job, const struct job_group *g,
		   struct herd_err *err)
{
	int rc = 0;
	const struct job_device *dev = NULL;

	memset(a, 0, sizeof(*a));
	a->job = job;
	a->group = g;
	/* A job's cpu is in MHz (Nomad's unit); the engine counts thousandths
	 * of a core.  herd takes a nominal 1 GHz core: 1 MHz = 1 thousandth.
	 * `cores` reserves whole cores (group_ask_cores), each counting its
	 * node's cpu_milli / online cores. */
	for (size_t t = 0; t < g->ntasks; t++) {
		const struct job_resources *r = &g->tasks[t].resources;
		a->req.cpu_milli += r->cores > 0 ? 0 : r->cpu;
		a->req.memory_mib += r->memory;
		for (size_t d = 0; d < r->ndevices; d++) {
			if (!dev)
				dev = &r->devices[d];
			a->ndevice_asks++;
		}
	}
	rc = group_ask_cores(a, g, dev, err);
	/* ephemeral_disk { size } (MB, counted as MiB) */
	a->req.disk_mib = g->ephemeral_disk ? g->ephemeral_disk->size : 0;
	if (!rc)
		rc = group_ask_add_rules(a, &job->constraints, false, &a->cons, &a->ncons, NULL, NULL, err);
	if (!rc)
		rc = group_ask_add_rules(a, &g->constraints, false, &a->cons, &a->ncons, NULL, NULL, err);
	for (size_t t = 0; !rc && t < g->ntasks; t++)
		rc = group_ask_add_rules(a, &g->tasks[t].constraints, false, &a->cons, &a->ncons, NULL, NULL, err);
	if (!rc)
		rc = group_ask_add_rules(a, &job->affinities, true, NULL, NULL, &a->affs, &a->naffs, err);
	if (!rc)
		rc = group_ask_add_rules(a, &g->affinities, true, NULL, NULL, &a->affs, &a->naffs, err);
	for (size_t t = 0; !rc && t < g->ntasks; t++)
		rc = group_ask_add_rules(a, &g->tasks[t].affinities, true, NULL, NULL, &a->affs, &a->naffs, err);
	if (!rc && a->ndevice_asks > 1)
		rc = group_ask_extra_devices(a, g, err);
	if (!rc && dev) {
		rc = group_ask_add_rules(a, &dev->constraints, false, &a->dcons, &a->ndcons, NULL, NULL, err);
		if (!rc)
			rc = group_ask_add_rules(a, &dev->affinities, true, NULL, NULL, &a->daffs, &a->ndaffs, err);
		a->dev.name = dev->name;
		a->dev.count = (int)dev->count;
		a->dev.compute = dev->compute;
		a->dev.memory_mib = dev->memory;
		a->dev.constraints = a->dcons;
		a->dev.nconstraints = a->ndcons;
		a->dev.affinities = a->daffs;
		a->dev.naffinities = a->ndaffs;
		a->req.device = &a->dev;
	}
	a->req.count = 1;
	a->req.constraints = a->cons;
	a->req.nconstraints = a->ncons;
	a->req.affinities = a->affs;
	a->req.naffinities = a->naffs;
	group_ask_spreads_init(a);
	/* host volumes: nodes that have each source (writable unless the
	 * group's volume is read_only); none for most groups */
	if (g->nvolumes) {
		a->vols = xcalloc(g->nvolumes, sizeof(*a->vols));
		for (size_t i = 0; i < g->nvolumes; i++)
			a->vols[i] = (struct sched_volume){ g->volumes[i].source, g->volumes[i].read_only };
		a->req.volumes = a->vols;
		a->req.nvolumes = g->nvolumes;
	}
	if (rc)
		group_ask_release(a);
	return rc;
}

void group_ask_release(struct group_ask *a)
{
	if (!a)
		return;
	free(a->cons);
	free(a->affs);
	free(a->dcons);
	free(a->daffs);
	group_ask_extra_release(a);
	free(a->dprops);
	free(a->vols);
	free(a->cores);
	group_ask_spreads_release(a);
	memset(a, 0, sizeof(*a));
}

/* ---- the snapshot ------------------------------------------------------- */

static bool dc_matches(const struct job *job, const char *dc)
{
	for (size_t i = 0; i < job->datacenters.n; i++)
		if (!fnmatch(job->datacenters.v[i], dc, 0))
			return true;
	return job->datacenters.n == 0;
}

static bool node_fits_group(const struct view_node *vn, const struct group_ask *a,
			    const json_t *live)
{
	const char *pool = a->job->node_pool ? a->job->node_pool : "default";
	const char *npool = jstr(vn->node, "node_pool", "");
	size_t i;
	json_t *al;

	if (!*npool)
		npool = "default";
	if (strcmp(pool, "all") && strcmp(pool, npool))
		return false;
	if (!dc_matches(a->job, jstr(vn->node, "datacenter", "dc1")))
		return false;
	for (size_t p = 0; p < a->group->network.nports; p++) {
		int64_t sp = a->group->network.ports[p].static_port;
		if (sp > 0 && node_usage_port_used(&vn->use, (int)sp))
			return false;
	}
	if (a->distinct_hosts)
		json_array_foreach(live, i, al)
			if (!strcmp(jstr(al, "node_id", ""), vn->id))
				return false;
	return true;
}

/* A JSON map of strings (numbers and booleans written as text) as kv. */
static struct sched_kv *kv_of(const json_t *obj, size_t *n, char ***owned, size_t *nowned)
{
	struct sched_kv *v = xcalloc(json_object_size(obj) + 1, sizeof(*v));
	const char *k;
	json_t *val;
	*n = 0;
	json_object_foreach((json_t *)obj, k, val) {
		const char *s = json_string_value(val);
		if (!s) {
			char *t;
			if (json_is_integer(val))
				t = xasprintf("%lld", (long long)json_integer_value(val));
			else if (json_is_real(val))
				t = xasprintf("%g", json_real_value(val));
			else if (json_is_boolean(val))
				t = xstrdup(json_is_true(val) ? "true" : "false");
			else
				continue;
			*owned = xreallocarray(*owned, *nowned + 1, sizeof(char *));
			(*owned)[(*nowned)++] = t;
			s = t;
		}
		v[*n].key = k;
		v[(*n)++].value = s;
	}
	return v;
}

static const struct dev_usage *dev_use(const struct node_usage *u, const char *id)
{
	for (size_t i = 0; i < u->ndevs; i++)
		if (!strcmp(u->devs[i].id, id))
			return &u->devs[i];
	return NULL;
}

/* node.host_volumes ({"<name>": {"path", "read_only"}}) as the engine's
 * volumes, into v (room for SCHED_MAX_VOLUMES; names borrowed from the
 * node); returns how many.  The server checked the shape at registration. */
static size_t node_volumes(const json_t *node, struct sched_volume *v)
{
	const json_t *hv = json_object_get(node, "host_volumes");
	const char *name;
	json_t *vol;
	size_t n = 0;

	json_object_foreach((json_t *)hv, name, vol) {
		if (n == SCHED_MAX_VOLUMES)
			break;
		v[n++] = (struct sched_volume){ name, jbool(vol, "read_only", false) };
	}
	return n;
}

/* resources.cores ([{"id", "numa"}], checked at registration) as the
 * engine's cores (returned, caller frees), the ids the node's allocations
 * hold, and what one core counts of cpu_milli: cpu_milli / online cores
 * (the attribute cpu.numcores, or the cores offered when more). */
static struct sched_core *node_cores(const struct view_node *vn, const json_t *res,
				     struct sched_node_spec *ns)
{
	const json_t *jc = json_object_get(res, "cores"), *c;
	const char *nc = json_string_value(json_object_get(json_object_get(vn->node, "attributes"),
							   "cpu.numcores"));
	size_t n = json_array_size(jc), i;
	struct sched_core *v;
	long online = nc ? strtol(nc, NULL, 10) : 0;

	if (!n)
		return NULL;
	if (n > SCHED_MAX_CORES_PER_NODE)
		n = SCHED_MAX_CORES_PER_NODE;
	v = xcalloc(n, sizeof(*v));
	json_array_foreach(jc, i, c) {
		if (i == n)
			break;
		v[i].id = (int)jint(c, "id", -1);
		v[i].numa = (int)jint(c, "numa", -1);
	}
	ns->cores = v;
	ns->ncores = n;
	ns->cores_taken = vn->use.cores;
	ns->ncores_taken = vn->use.ncores;
	/* a simulated topology may offer more cores than the machine has
	 * online: then each counts its share of those it offers */
	if (online < (long)n)
		online = (long)n;
	ns->cpu_per_core = ns->cpu_milli / online > 0 ? ns->cpu_milli / online : 1;
	return v;
}

/* blocked: a reservation whose GPUs the request may not use (NULL: none). */
static int add_node(struct sched_snapshot *snap, const struct view_node *vn,
		    const struct resv *blocked, struct herd_err *err)
{
	const json_t *res = json_object_get(vn->node, "resources");
	struct sched_node_spec ns = { 0 };
	char **owned = NULL;
	size_t nowned = 0, i;
	json_t *d;
	int idx;

	ns.id = vn->id;
	ns.name = jstr(vn->node, "name", NULL);
	ns.node_class = jstr(vn->node, "node_class", NULL);
	ns.datacenter = jstr(vn->node, "datacenter", NULL);
	ns.cpu_milli = jint(res, "cpu_milli", 0);
	ns.memory_mib = jint(res, "memory_mib", 0);
	ns.cpu_used = vn->use.cpu > 0 ? vn->use.cpu : 0;
	ns.memory_used = vn->use.memory > 0 ? vn->use.memory : 0;
	/* the free disk of the client's data dir at its fingerprint; none
	 * reported (0, or a node registered by a tool that does not say)
	 * is not checked */
	ns.disk_mib = jint(res, "disk_mib", 0) > 0 ? jint(res, "disk_mib", 0) : 0;
	ns.disk_used = vn->use.disk > 0 ? vn->use.disk : 0;
	struct sched_kv *attrs = kv_of(json_object_get(vn->node, "attributes"), &ns.nattrs, &owned, &nowned);
	struct sched_kv *meta = kv_of(json_object_get(vn->node, "meta"), &ns.nmeta, &owned, &nowned);
	ns.attrs = attrs;
	ns.meta = meta;
	struct sched_volume vols[SCHED_MAX_VOLUMES];
	ns.volumes = vols;
	ns.nvolumes = node_volumes(vn->node, vols);
	struct sched_core *cores = node_cores(vn, res, &ns);
	idx = sched_snapshot_add_node(snap, &ns, err);
	free(cores);
	json_array_foreach(json_object_get(vn->node, "devices"), i, d) {
		struct sched_device_spec ds = { 0 };
		const struct dev_usage *u;
		struct sched_kv *dattrs;
		int rc;
		if (idx < 0)
			break;
		ds.id = jstr(d, "id", NULL);
		if (!ds.id)
			continue;
		ds.vendor = jstr(d, "vendor", "nvidia");
		ds.type = jstr(d, "type", "gpu");
		ds.model = jstr(d, "model", "");
		ds.memory_mib = jint(d, "memory_mib", 0);
		ds.numa_node = (int)jint(d, "numa_node", -1);
		ds.nvlink_group = (int)jint(d, "nvlink_group", -1);
		ds.unhealthy = !jbool(d, "healthy", true);
		ds.reserved = blocked && resv_has_device(blocked, vn->id, ds.id);
		if (sched_sharing_parse(jstr(d, "sharing", "exclusive"), &ds.sharing) < 0)
			ds.sharing = SCHED_EXCLUSIVE;
		/* The agent's replicas: most tenants at once (0: no limit). */
		if (ds.sharing != SCHED_EXCLUSIVE && jint(d, "replicas", 0) > 0)
			ds.max_tenants = (int)(jint(d, "replicas", 0) > INT32_MAX ? INT32_MAX
									: jint(d, "replicas", 0));
		u = dev_use(&vn->use, ds.id);
		if (u) {
			ds.compute_taken = u->compute > SCHED_MILLI ? SCHED_MILLI : u->compute;
			ds.memory_taken = ds.memory_mib && u->memory > ds.memory_mib ? ds.memory_mib : u->memory;
			ds.tenants = u->tenants;
		}
		dattrs = kv_of(json_object_get(d, "attributes"), &ds.nattrs, &owned, &nowned);
		ds.attrs = dattrs;
		rc = sched_snapshot_add_device(snap, idx, &ds, err);
		free(dattrs);
		if (rc < 0) {
			idx = rc;
			break;
		}
	}
	free(attrs);
	free(meta);
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	return idx < 0 ? idx : 0;
}

struct sched_snapshot *snapshot_build(struct sched_view *v, const struct group_ask *ask,
				      const json_t *job_allocs_live, int *map,
				      struct herd_err *err)
{
	struct sched_snapshot *snap = sched_snapshot_new();
	json_t *dcounts = distinct_property_counts(v, ask, job_allocs_live);
	const struct resv *blocked = v->resv && !resv_may_use_ask(v->resv, ask, v->resv_now) ? v->resv : NULL;
	int n = 0;
	for (size_t i = 0; i < v->nnodes; i++) {
		struct view_node *vn = &v->nodes[i];
		if (!vn->schedulable || !node_fits_group(vn, ask, job_allocs_live) ||
		    !distinct_property_allows(dcounts, ask, vn))
			continue;
		/* A node or device the engine refuses (bad numbers from an
		 * agent) is left out rather than failing every evaluation; the
		 * map follows the engine's node indexes either way. */
		(void)add_node(snap, vn, blocked, err);
		if (sched_snapshot_nodes(snap) > (size_t)n)
			map[n++] = (int)i;
	}
	json_decref(dcounts);
	return snap;
}

/* ---- the view's snapshot ------------------------------------------------ */

struct view_snap {
	struct sched_snapshot *snap;
	int *map;
	char *key; size_t klen; /* the pool and datacenters it was built for */
	uint64_t gen;           /* the view's use_gen it matches */
};

static void view_snap_free(struct view_snap *c)
{
	if (!c)
		return;
	sched_snapshot_free(c->snap);
	free(c->map);
	free(c->key);
	free(c);
}

/* What decides the node set of a snapshot without ports, distinct_hosts
 * or distinct_property (node_fits_group): the job's pool and datacenter
 * patterns, NUL-separated; and, under a reservation the request may not
 * use, that reservation (its GPUs show as reserved). */
static char *snap_key(const struct sched_view *v, const struct group_ask *ask, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	const struct job *job = ask->job;
	if (v->resv && !resv_may_use_ask(v->resv, ask, v->resv_now)) {
		strbuf_addch(&sb, 1); /* no pool name has it */
		strbuf_adds(&sb, v->resv->job_id);
		strbuf_addch(&sb, 0);
		strbuf_adds(&sb, v->resv->node_id);
		strbuf_addch(&sb, 0);
	}
	strbuf_adds(&sb, job->node_pool ? job->node_pool : "default");
	strbuf_addch(&sb, 0);
	for (size_t i = 0; i < job->datacenters.n; i++) {
		strbuf_adds(&sb, job->datacenters.v[i]);
		strbuf_addch(&sb, 0);
	}
	return strbuf_detach(&sb, len);
}

struct sched_snapshot *view_snapshot_take(struct sched_view *v, const struct group_ask *ask,
					  const json_t *job_allocs_live, int **map,
					  struct herd_err *err)
{
	struct view_snap *c = v->snap;
	struct sched_snapshot *snap;
	size_t klen;
	char *key = snap_key(v, ask, &klen);
	bool hit = c && c->snap && c->gen == v->use_gen && c->klen == klen &&
		   !memcmp(c->key, key, klen);

	free(key);
	if (hit) {
		snap = c->snap;
		*map = c->map;
		c->snap = NULL;
		c->map = NULL;
		return snap;
	}
	*map = xcalloc(v->nnodes + 1, sizeof(int));
	return snapshot_build(v, ask, job_allocs_live, *map, err);
}

void view_snapshot_put(struct sched_view *v, const struct group_ask *ask,
		       struct sched_snapshot *snap, int *map, bool reusable)
{
	struct view_snap *c;
	if (!reusable) {
		sched_snapshot_free(snap);
		free(map);
		return;
	}
	c = v->snap;
	if (!c) {
		c = v->snap = xcalloc(1, sizeof(*c));
	} else {
		sched_snapshot_free(c->snap);
		free(c->map);
		free(c->key);
	}
	c->snap = snap;
	c->map = map;
	c->key = snap_key(v, ask, &c->klen);
	c->gen = v->use_gen;
}
