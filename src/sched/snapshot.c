/* snapshot: nodes, devices, device profiles, and the per-node indexes that
 * apply/release keep current. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"

static char *dupnull(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void kv_copy(struct kvlist *l, const struct sched_kv *v, size_t n)
{
	l->n = n;
	l->key = n ? xcalloc(n, sizeof(char *)) : NULL;
	l->value = n ? xcalloc(n, sizeof(char *)) : NULL;
	for (size_t i = 0; i < n; i++) {
		l->key[i] = xstrdup(v[i].key ? v[i].key : "");
		l->value[i] = xstrdup(v[i].value ? v[i].value : "");
	}
}

static void kv_release(struct kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->key[i]);
		free(l->value[i]);
	}
	free(l->key);
	free(l->value);
}

static bool streq0(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

int sched_sharing_parse(const char *s, enum sched_sharing *out)
{
	if (!strcmp(s, "exclusive"))
		*out = SCHED_EXCLUSIVE;
	else if (!strcmp(s, "mps"))
		*out = SCHED_MPS;
	else if (!strcmp(s, "timeslice"))
		*out = SCHED_TIMESLICE;
	else
		return -EINVAL;
	return 0;
}

struct sched_snapshot *sched_snapshot_new(void)
{
	return xcalloc(1, sizeof(struct sched_snapshot));
}

void sched_snapshot_free(struct sched_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct sched_node *n = &s->node[i];
		free(n->id);
		free(n->name);
		free(n->node_class);
		free(n->datacenter);
		kv_release(&n->attrs);
		kv_release(&n->meta);
		for (int v = 0; v < n->nvol; v++)
			free(n->vol[v].name);
		free(n->vol);
		for (int d = 0; d < n->ndev; d++)
			free(n->dev[d].id);
		free(n->dev);
		free(n->core);
		free(n->core_taken);
	}
	free(s->node);
	for (size_t i = 0; i < s->nprof; i++) {
		free(s->prof[i].vendor);
		free(s->prof[i].type);
		free(s->prof[i].model);
		kv_release(&s->prof[i].attrs);
	}
	free(s->prof);
	group_index_free(s->groups);
	free(s);
}

static int core_cmp(const void *a, const void *b)
{
	const struct sched_core *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The node's reservable cores, sorted by id, with those taken marked;
 * -EINVAL with err for too many, negative or duplicate ids. */
static int node_cores(struct sched_node *n, const struct sched_node_spec *spec,
		      struct herd_err *err)
{
	if (spec->ncores > SCHED_MAX_CORES_PER_NODE)
		return herd_errf(err, -EINVAL, "node %s: more than %d reservable cores", spec->id,
				 SCHED_MAX_CORES_PER_NODE);
	n->cpu_per_core = spec->cpu_per_core > 0 ? spec->cpu_per_core : 1000;
	if (!spec->ncores)
		return 0;
	n->core = xcalloc(spec->ncores, sizeof(*n->core));
	n->core_taken = xcalloc(spec->ncores, 1);
	memcpy(n->core, spec->cores, spec->ncores * sizeof(*n->core));
	qsort(n->core, spec->ncores, sizeof(*n->core), core_cmp);
	for (size_t i = 0; i < spec->ncores; i++) {
		if (n->core[i].id < 0 || (i && n->core[i].id == n->core[i - 1].id)) {
			int id = n->core[i].id;
			free(n->core);
			free(n->core_taken);
			n->core = NULL;
			n->core_taken = NULL;
			return herd_errf(err, -EINVAL, "node %s: core %d negative or listed twice",
					 spec->id, id);
		}
		if (n->core[i].numa < 0)
			n->core[i].numa = -1;
	}
	n->ncores = n->ncores_free = (int)spec->ncores;
	for (size_t i = 0; i < spec->ncores_taken; i++) {
		struct sched_core key = { spec->cores_taken[i], 0 };
		struct sched_core *c = bsearch(&key, n->core, spec->ncores, sizeof(*c), core_cmp);
		if (c && !n->core_taken[c - n->core]) {
			n->core_taken[c - n->core] = 1;
			n->ncores_free--;
		}
	}
	return 0;
}

int sched_snapshot_add_node(struct sched_snapshot *s, const struct sched_node_spec *spec,
			    struct herd_err *err)
{
	struct sched_node tmp = { 0 };
	int rc;

	struct sched_node *n;

	if (!spec->id || !*spec->id)
		return herd_errf(err, -EINVAL, "node without an id");
	if (spec->cpu_milli < 0 || spec->memory_mib < 0 || spec->cpu_used < 0 ||
	    spec->memory_used < 0)
		return herd_errf(err, -EINVAL, "node %s: negative cpu or memory", spec->id);
	if (spec->nvolumes > SCHED_MAX_VOLUMES)
		return herd_errf(err, -EINVAL, "node %s: more than %d host volumes", spec->id,
				 SCHED_MAX_VOLUMES);
	for (size_t i = 0; i < spec->nvolumes; i++)
		if (!spec->volumes[i].name)
			return herd_errf(err, -EINVAL, "node %s: a host volume without a name",
					 spec->id);
	/* Duplicate ids would make placements ambiguous.  A linear scan keeps
	 * the snapshot free of a hash table; snapshots are built once. */
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->node[i].id, spec->id))
			return herd_errf(err, -EINVAL, "node %s: duplicate id", spec->id);
	if ((rc = node_cores(&tmp, spec, err)))
		return rc;
	group_index_drop(s);
	ALLOC_GROW(s->node, s->n + 1, s->alloc);
	n = &s->node[s->n];
	*n = tmp;
	n->id = xstrdup(spec->id);
	n->name = xstrdup(spec->name ? spec->name : spec->id);
	n->node_class = dupnull(spec->node_class);
	n->datacenter = dupnull(spec->datacenter);
	kv_copy(&n->attrs, spec->attrs, spec->nattrs);
	kv_copy(&n->meta, spec->meta, spec->nmeta);
	if (spec->nvolumes) {
		n->vol = xcalloc(spec->nvolumes, sizeof(*n->vol));
		for (size_t i = 0; i < spec->nvolumes; i++)
			n->vol[i] = (struct node_volume){ xstrdup(spec->volumes[i].name),
							  spec->volumes[i].read_only };
		n->nvol = (int)spec->nvolumes;
	}
	n->cpu_total = spec->cpu_milli;
	n->mem_total = spec->memory_mib;
	n->cpu_used = spec->cpu_used;
	n->mem_used = spec->memory_used;
	n->disk_total = spec->disk_mib;
	n->disk_used = spec->disk_used;
	return (int)s->n++;
}

static bool kv_equal(const struct kvlist *l, const struct sched_kv *v, size_t n)
{
	if (l->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!streq0(l->key[i], v[i].key) || !streq0(l->value[i], v[i].value))
			return false;
	return true;
}

static int intern_profile(struct sched_snapshot *s, const struct sched_device_spec *d)
{
	for (size_t i = 0; i < s->nprof; i++) {
		struct dev_profile *p = &s->prof[i];
		if (streq0(p->vendor, d->vendor) && streq0(p->type, d->type) &&
		    streq0(p->model, d->model) && kv_equal(&p->attrs, d->attrs, d->nattrs))
			return (int)i;
	}
	ALLOC_GROW(s->prof, s->nprof + 1, s->aprof);
	s->prof[s->nprof].vendor = xstrdup(d->vendor ? d->vendor : "");
	s->prof[s->nprof].type = xstrdup(d->type ? d->type : "gpu");
	s->prof[s->nprof].model = xstrdup(d->model ? d->model : "");
	kv_copy(&s->prof[s->nprof].attrs, d->attrs, d->nattrs);
	return (int)s->nprof++;
}

static bool dev_is_free(const struct sched_dev *d)
{
	return !d->unhealthy && d->compute_taken == 0 && d->mem_taken == 0 && d->tenants == 0;
}

int sched_snapshot_add_device(struct sched_snapshot *s, int node,
			      const struct sched_device_spec *spec, struct herd_err *err)
{
	struct sched_node *n;
	struct sched_dev *d;

	if (node < 0 || (size_t)node >= s->n)
		return herd_errf(err, -EINVAL, "device %s: no node %d", spec->id ? spec->id : "?", node);
	n = &s->node[node];
	if (!spec->id || !*spec->id)
		return herd_errf(err, -EINVAL, "node %s: device without an id", n->id);
	if (n->ndev >= SCHED_MAX_DEVS_PER_NODE)
		return herd_errf(err, -E2BIG, "node %s: more than %d devices", n->id,
				 SCHED_MAX_DEVS_PER_NODE);
	if (spec->compute_taken < 0 || spec->compute_taken > SCHED_MILLI || spec->memory_taken < 0 ||
	    spec->memory_mib < 0 || (spec->memory_mib && spec->memory_taken > spec->memory_mib) ||
	    spec->tenants < 0)
		return herd_errf(err, -EINVAL, "device %s on node %s: taken more than it has",
				 spec->id, n->id);
	for (int i = 0; i < n->ndev; i++)
		if (!strcmp(n->dev[i].id, spec->id))
			return herd_errf(err, -EINVAL, "node %s: duplicate device %s", n->id, spec->id);
	group_index_drop(s);
	n->dev = xreallocarray(n->dev, (size_t)n->ndev + 1, sizeof(*n->dev));
	d = &n->dev[n->ndev];
	memset(d, 0, sizeof(*d));
	d->id = xstrdup(spec->id);
	d->profile = intern_profile(s, spec);
	d->mem_total = spec->memory_mib;
	d->mem_taken = spec->memory_taken;
	d->compute_taken = spec->compute_taken;
	d->tenants = spec->tenants;
	d->max_tenants = spec->max_tenants > 0 ? spec->max_tenants : 0;
	d->numa = spec->numa_node;
	d->nvlink = spec->nvlink_group;
	d->unhealthy = spec->unhealthy || spec->reserved;
	d->reserved = spec->reserved && !spec->unhealthy;
	d->sharing = spec->sharing;
	if (!d->unhealthy) {
		n->gpu_free_total += SCHED_MILLI - d->compute_taken;
		n->nfree += dev_is_free(d);
	}
	n->version++;
	return n->ndev++;
}

size_t sched_snapshot_nodes(const struct sched_snapshot *s)
{
	return s->n;
}

const char *sched_node_id(const struct sched_snapshot *s, int node)
{
	return s->node[node].id;
}

int sched_node_ndevices(const struct sched_snapshot *s, int node)
{
	return s->node[node].ndev;
}

const char *sched_device_id(const struct sched_snapshot *s, int node, int dev)
{
	return s->node[node].dev[dev].id;
}

int32_t sched_device_compute_free(const struct sched_snapshot *s, int node, int dev)
{
	const struct sched_dev *d = &s->node[node].dev[dev];
	return d->unhealthy ? 0 : SCHED_MILLI - d->compute_taken;
}

int64_t sched_device_memory_free(const struct sched_snapshot *s, int node, int dev)
{
	const struct sched_dev *d = &s->node[node].dev[dev];
	return d->unhealthy ? 0 : d->mem_total - d->mem_taken;
}

int sched_device_tenants(const struct sched_snapshot *s, int node, int dev)
{
	return s->node[node].dev[dev].tenants;
}

int64_t sched_node_cpu_free(const struct sched_snapshot *s, int node)
{
	return s->node[node].cpu_total - s->node[node].cpu_used;
}

int64_t sched_node_memory_free(const struct sched_snapshot *s, int node)
{
	return s->node[node].mem_total - s->node[node].mem_used;
}

int64_t sched_node_gpu_free(const struct sched_snapshot *s, int node)
{
	return s->node[node].gpu_free_total;
}

int sched_node_ncores(const struct sched_snapshot *s, int node)
{
	return s->node[node].ncores;
}

void sched_node_core(const struct sched_snapshot *s, int node, int i, struct sched_core *out,
		     bool *taken)
{
	*out = s->node[node].core[i];
	if (taken)
		*taken = s->node[node].core_taken[i];
}

int64_t sched_node_cpu_per_core(const struct sched_snapshot *s, int node)
{
	return s->node[node].cpu_per_core;
}

static int hosted_class(const struct sched_placement *p)
{
	if (p->ndev == 0)
		return -1;
	if (p->ndev == 1 && !p->dev[0].whole)
		return 0;
	return p->ndev > 8 ? 9 : p->ndev;
}

static void hosted_add(struct sched_node *n, int cls, int delta)
{
	if (cls < 0)
		return;
	if (n->hosted[cls] == 0 && delta > 0)
		n->nhosted_classes++;
	n->hosted[cls] += delta;
	if (n->hosted[cls] == 0 && delta < 0)
		n->nhosted_classes--;
}

/* Checks that p fits (apply) or was taken (release) before changing
 * anything, so that a failure leaves the snapshot as it was. */
static int check(const struct sched_snapshot *s, const struct sched_placement *p, bool take)
{
	const struct sched_node *n;

	if (p->node < 0 || (size_t)p->node >= s->n || p->ndev < 0 ||
	    p->ndev > SCHED_MAX_DEVS_PER_ASK || p->cpu_milli < 0 || p->memory_mib < 0 ||
	    p->disk_mib < 0)
		return -EINVAL;
	n = &s->node[p->node];
	if (take && (n->cpu_used + p->cpu_milli > n->cpu_total ||
		     n->mem_used + p->memory_mib > n->mem_total))
		return -EINVAL;
	if (!take && (n->cpu_used < p->cpu_milli || n->mem_used < p->memory_mib))
		return -EINVAL;
	if (take && n->disk_total && n->disk_used + p->disk_mib > n->disk_total)
		return -EINVAL;
	if (!take && n->disk_used < p->disk_mib)
		return -EINVAL;
	if (p->ncores < 0 || p->ncores > SCHED_MAX_CORES_PER_ASK || p->ncores > n->ncores)
		return -EINVAL;
	if (p->ncores) {
		/* each core once, and free (apply) or held (release) */
		uint8_t seen[SCHED_MAX_CORES_PER_NODE / 8] = { 0 };
		for (int i = 0; i < p->ncores; i++) {
			int c = p->core[i];
			if (c >= n->ncores || (seen[c / 8] & (1u << (c % 8))) ||
			    n->core_taken[c] != !take)
				return -EINVAL;
			seen[c / 8] |= (uint8_t)(1u << (c % 8));
		}
	}
	for (int i = 0; i < p->ndev; i++) {
		const struct sched_device_share *sh = &p->dev[i];
		const struct sched_dev *d;
		if (sh->dev < 0 || sh->dev >= n->ndev || sh->compute < 0 || sh->memory_mib < 0)
			return -EINVAL;
		for (int j = 0; j < i; j++)
			if (p->dev[j].dev == sh->dev)
				return -EINVAL;
		d = &n->dev[sh->dev];
		if (take) {
			if (d->unhealthy)
				return -EINVAL;
			if (sh->whole && !dev_is_free(d))
				return -EINVAL;
			if (!sh->whole && (d->sharing == SCHED_EXCLUSIVE || !sched_dev_has_room(d) ||
					   d->compute_taken + sh->compute > SCHED_MILLI ||
					   (sh->memory_mib && d->mem_taken + sh->memory_mib > d->mem_total)))
				return -EINVAL;
		} else if (d->tenants < 1 || d->compute_taken < sh->compute ||
			   d->mem_taken < sh->memory_mib) {
			return -EINVAL;
		}
	}
	return 0;
}

static void change(struct sched_snapshot *s, const struct sched_placement *p, int sign)
{
	struct sched_node *n = &s->node[p->node];

	n->cpu_used += sign * p->cpu_milli;
	n->mem_used += sign * p->memory_mib;
	n->disk_used += sign * p->disk_mib;
	for (int i = 0; i < p->ncores; i++)
		n->core_taken[p->core[i]] = sign > 0;
	n->ncores_free -= sign * p->ncores;
	for (int i = 0; i < p->ndev; i++) {
		struct sched_dev *d = &n->dev[p->dev[i].dev];
		bool was_free = dev_is_free(d);
		d->compute_taken += sign * p->dev[i].compute;
		d->mem_taken += sign * p->dev[i].memory_mib;
		d->tenants += sign;
		if (!d->unhealthy) {
			n->gpu_free_total -= sign * p->dev[i].compute;
			n->nfree += (int)dev_is_free(d) - (int)was_free;
		}
	}
	hosted_add(n, hosted_class(p), sign);
	n->version++;
	group_node_moved(s, p->node);
}

int sched_apply(struct sched_snapshot *s, const struct sched_placement *p)
{
	if (check(s, p, true))
		return -EINVAL;
	change(s, p, 1);
	return 0;
}

int sched_release(struct sched_snapshot *s, const struct sched_placement *p)
{
	if (check(s, p, false))
		return -EINVAL;
	change(s, p, -1);
	return 0;
}
