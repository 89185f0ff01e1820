/* sched-int.h: the engine's private structures; only src/sched includes it. */
#ifndef HERD_SCHED_INT_H
#define HERD_SCHED_INT_H

#include "sched/sched.h"

struct kvlist {
	size_t n;
	char **key, **value;
};

/* Identical devices share a profile (Nomad's device group). */
struct dev_profile {
	char *vendor, *type, *model;
	struct kvlist attrs;
};

struct sched_dev {
	char *id;
	int profile;
	int64_t mem_total, mem_taken;
	int32_t compute_taken;
	int tenants;
	int max_tenants;        /* 0 = no limit */
	int numa, nvlink;
	bool unhealthy;         /* or reserved: offered to nothing */
	bool reserved;          /* only to explain why */
	enum sched_sharing sharing;
};

/* May a device take one more tenant (its max_tenants)? */
static inline bool sched_dev_has_room(const struct sched_dev *d)
{
	return d->max_tenants <= 0 || d->tenants < d->max_tenants;
}

#define SCHED_SCORE_MEMO 4 /* request shapes remembered per node */

/* A request reduced to what a score depends on (with the node's state):
 * compared bytewise, so always memset before filling. */
struct shape {
	int policy;
	int num;
	int32_t milli;
	int32_t pad;
	uint64_t wl;    /* workload id (content hash), 0 = none */
	uint64_t devs;  /* hash of the device profiles the request may use */
	int64_t cpu, mem, dmem;
};

struct node_volume {
	char *name;
	bool read_only;
};

/* Per-node indexes kept up to date by apply/release (never rebuilt). */
struct sched_node {
	char *id, *name, *node_class, *datacenter;
	struct kvlist attrs, meta;
	struct node_volume *vol;     /* host volumes; NULL when none */
	int nvol;
	int64_t cpu_total, mem_total, cpu_used, mem_used;
	int64_t disk_total, disk_used; /* disk_total 0: not known, not checked */
	/* reservable cores, sorted by id; core_taken[i] 1 while held.  Not
	 * part of a group's key: only requests with cores look at them, and
	 * those are never placed by groups (can_group). */
	int ncores, ncores_free;
	struct sched_core *core;
	uint8_t *core_taken;
	int64_t cpu_per_core;
	int ndev;
	struct sched_dev *dev;
	int32_t gpu_free_total; /* compute free over healthy devices */
	int nfree;              /* healthy devices entirely free */
	int hosted[10];         /* allocations by class: [0] fractional, [k] k whole devices (k<=8, 9 = more) */
	int nhosted_classes;    /* how many of hosted[] are non-zero */
	uint64_t version;       /* bumped on every change */
	/* scores of the last few request shapes on this state of the node:
	 * between two placements only one node changes, and a trace's
	 * requests repeat a few shapes, so most scores are looked up */
	struct score_memo {
		bool used;
		uint64_t version;
		struct shape k;
		double score;
		int pick[SCHED_MAX_DEVS_PER_ASK];
	} memo[SCHED_SCORE_MEMO];
	int memo_next;
	/* fragmentation cache for one workload (by id: a workload freed and
	 * another allocated at its address must not hit) */
	uint64_t frag_wl;
	uint64_t frag_version;
	double frag;
};

/* groups.c: nodes in identical states (see there). */
struct node_group {
	uint64_t hash;
	int64_t *key;
	size_t klen;
	int chain;      /* next group in the hash bucket, -1 = end */
	int live_pos;   /* position in group_index.live */
	int n;          /* members */
	int *heap;      /* member nodes, min-heap by (rank, index) */
	size_t aheap;
};

#define GROUP_SHAPES 64 /* request shapes with a ranking of the groups */

/* For one request shape, the score of every live group and a max-heap of
 * the groups where it fits, by (score, tie order of its best member). */
struct shape_rank {
	bool used;
	struct shape k;
	uint64_t last_use;
	size_t cap;          /* entries of the arrays below */
	double *score;
	uint8_t (*pick)[SCHED_MAX_DEVS_PER_ASK];
	int *pos;            /* per group: heap position, -1 not scored, -2 does not fit */
	int *heap, nheap;
	size_t journal_at;   /* groups created before this are scored */
};

struct group_index {
	size_t nnodes;
	bool by_index;      /* rank = node index */
	uint32_t *rank;     /* a copy of the tie ranks the heaps are ordered by */
	int ngrp;
	size_t agrp;
	struct node_group *grp;
	int *bucket;
	size_t nbucket;     /* a power of two */
	int *live, nlive;   /* groups with members */
	size_t alive;
	int *freelist, nfree;
	size_t afree;
	int *node_grp, *heap_pos; /* per node */
	int *journal;       /* groups created, in order, for the shapes to score */
	size_t njournal, ajournal;
	uint64_t clock;
	struct shape_rank shp[GROUP_SHAPES];
};

/* Scores one node for the shape being placed; fills pick (positions into
 * the node's eligible devices).  -INFINITY when the request does not fit. */
typedef double (*group_score_fn)(void *ctx, int node, int *pick);

/* The index for tie ranks rank (NULL = node order), built or rebuilt as
 * needed; owned by the snapshot. */
struct group_index *group_index_get(struct sched_snapshot *s, const uint32_t *rank);
/* The best node for shape k: the highest score, ties to the lowest rank;
 * groups not yet scored for k are scored through fn.  Returns the node and
 * fills *score and pick, or -1 when no node fits. */
int group_best(struct group_index *g, const struct shape *k, group_score_fn fn, void *ctx,
	       double *score, int *pick);
/* A node's state changed: move it to its new group (no-op without index). */
void group_node_moved(struct sched_snapshot *s, int node);
/* Nodes or devices were added: forget the index. */
void group_index_drop(struct sched_snapshot *s);
void group_index_free(struct group_index *g);

struct sched_snapshot {
	size_t n, alloc;
	struct sched_node *node;
	size_t nprof, aprof;
	struct dev_profile *prof;
	struct group_index *groups; /* NULL until a grouped placement */
};

struct wl_class {
	int64_t cpu, mem;
	int32_t milli;
	int num;
	char *spec; /* NULL = any */
	double freq;
	/* per profile: can this class use it (model in spec); filled lazily */
};

struct sched_workload {
	size_t n;
	struct wl_class *c;
	/* distinct per-device shares of the classes, so that a node's
	 * devices are scanned once per share rather than once per class */
	int nm;
	int32_t mv[64];
	int *mi;           /* per class: index into mv, -1 for CPU-only */
	double cpu_only;   /* summed frequency of CPU-only classes */
	uint64_t id;       /* hash of the content: caches key on it, never on the address */
	/* mean CPU (memory) per GPU milli of the GPU classes, by frequency:
	 * sum freq x cpu / sum freq x gpu milli x GPUs; 0 when unknown */
	double cpu_per_milli, mem_per_milli;
	/* fill_waste[L]: the GPU milli expected to stay idle on a device with
	 * L of SCHED_MILLI left if the one-device tasks that fit keep coming
	 * at the workload's frequencies (L when none fits; else the mean over
	 * the fitting classes of fill_waste[L - share]).  herd's choice
	 * between shared devices (policy.c, fill_cost). */
	double *fill_waste;
	/* pack_value[s]: the share of a device that one task of s milli
	 * accounts for in the best fractional packing of the workload's
	 * one-device tasks (the dual of the bin-packing LP, in milli; 0 for a
	 * share no class has); pack_k[l]: the most pack_value a device with l
	 * left can still hold.  herd's loss of a fraction s on l left:
	 * pack_k[l] - pack_value[s] - pack_k[l - s] (packlp.c), with nothing
	 * after when the node keeps less CPU (memory) than any one-device
	 * fraction asks, pack_min_cpu (pack_min_mem). */
	double *pack_value, *pack_k;
	int64_t pack_min_cpu, pack_min_mem;
};

/* A node as the scoring functions see it for one request: only the devices
 * the request may use, in index order. */
struct nodeview {
	int node;
	int64_t cpu_left, mem_left;
	int n;                       /* eligible devices */
	int idx[SCHED_MAX_DEVS_PER_NODE];  /* device index inside the node */
	int32_t left[SCHED_MAX_DEVS_PER_NODE]; /* compute free */
	int64_t mleft[SCHED_MAX_DEVS_PER_NODE];
	bool free[SCHED_MAX_DEVS_PER_NODE];
	int32_t left_total;          /* over all healthy devices of the node */
	int32_t gpu_total;           /* capacity over healthy devices */
	int ngpu;                    /* healthy devices */
	const char *model;           /* first device's model, NULL without devices */
};

/* The request reduced to numbers. */
struct ask {
	int64_t cpu, mem;
	int num;          /* devices; 0 = none */
	int32_t milli;    /* per device */
	int64_t dmem;     /* per device memory, 0 = none */
	int64_t disk;     /* ephemeral disk MiB, 0 = none */
	int ncores;       /* reserved cores over the request's core asks */
	bool frac;        /* a share of one device */
};

/* rng.c: xoshiro256** seeded by splitmix64. */
struct rng {
	uint64_t s[4];
};
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(struct rng *r, uint64_t n);

/* packlp.c: fills w->pack_value and w->pack_k. */
void pack_value_init(struct sched_workload *w);

/* frag.c */
double frag_node_view(const struct sched_workload *w, int64_t cpu_left, int64_t mem_left,
		      const int32_t *left, int n, const char *model, bool use_mem);
double frag_node(struct sched_snapshot *s, const struct sched_workload *w, int node);
bool model_in_spec(const char *model, const char *spec);

/* policy.c: scores one node; fills pick[] with the chosen positions in
 * v->idx order (ask->num of them).  Returns the score (higher is better). */
double policy_score(enum sched_policy p, struct sched_snapshot *s, const struct nodeview *v,
		    const struct ask *a, const struct sched_workload *w, struct rng *r,
		    int *pick);
/* Picks devices for a whole-device ask: NVLink group, then NUMA, then lowest
 * indexes; positions into v.  Returns 0 or -1 if too few free. */
int pick_whole(const struct sched_snapshot *s, const struct nodeview *v, int num, int *pick);
/* Best fit for a fraction: least compute left that fits, lowest index. */
int pick_bestfit_frac(const struct nodeview *v, const struct ask *a);

/* volume.c: does node n have every host volume of req (writable where
 * asked)?  Counts the node in why (when not NULL) under the first it
 * lacks. */
bool volumes_fit(const struct sched_node *n, const struct sched_request *req,
		 struct sched_explain *why);
/* -EINVAL with err for a request's volumes without names or too many. */
int volumes_validate(const struct sched_request *req, struct herd_err *err);
/* The volume lines of an explanation. */
void volumes_explain_format(const struct sched_explain *why, const struct sched_request *req,
			    struct strbuf *sb);

/* spread.c: a feasible node with its score so far (policy, affinities). */
struct spread_cand {
	int node;
	double score;
	int pick[SCHED_MAX_DEVS_PER_ASK];
};
/* -EINVAL with err for a malformed spread of req. */
int spreads_validate(const struct sched_request *req, struct herd_err *err);
/* Adds to each of the n candidates' score its spread component, which it
 * also writes to part[i] (score points: 100 per unit of weighted boost). */
void spread_score(const struct sched_snapshot *s, const struct sched_request *req,
		  struct spread_cand *c, size_t n, double *part);
/* sched_plan's running counts: a copy of req's spreads whose counts grow
 * with each placement (spread_tally_add); req2 is req pointing at them. */
struct spread_tally;
struct spread_tally *spread_tally_new(const struct sched_request *req, struct sched_request *req2);
void spread_tally_add(struct spread_tally *t, const struct sched_snapshot *s, int node);
void spread_tally_free(struct spread_tally *t); /* accepts NULL */

/* cores.c: the reserved cores of a request on one node. */
struct core_pick {
	int n;
	uint16_t idx[SCHED_MAX_CORES_PER_ASK];
	bool aligned; /* every require/prefer ask on one NUMA node (with its GPUs) */
};
/* -EINVAL with err for malformed core asks; fills a->ncores. */
int cores_validate(const struct sched_request *req, struct ask *a, struct herd_err *err);
/* The cpu node n needs for ask a (its cores at the node's cpu_per_core). */
int64_t cores_cpu(const struct sched_node *n, const struct ask *a);
/* Chooses cores of node n for req's core asks, the request's devices (when
 * any) being on NUMA node dev_numa (-1: several or unknown).  strict: the
 * prefer asks as require.  Returns 0 with *out filled, -1 when they do not
 * fit. */
int cores_choose(const struct sched_node *n, const struct sched_request *req, int dev_numa,
		 bool strict, struct core_pick *out);
/* The score of node v for a request with cores: the policy's (plus
 * SCHED_NUMA_BONUS for an aligned prefer), with pick (positions in v) and
 * *cp filled; -INFINITY when the cores do not fit (explained in why when
 * not NULL). */
double cores_place(struct sched_snapshot *s, const struct sched_request *req,
		   const struct nodeview *v, const struct ask *a, enum sched_policy pol,
		   const struct sched_workload *wl, struct rng *r, int *pick, struct core_pick *cp,
		   struct sched_explain *why);
/* place.c: keeps the SCHED_EXPLAIN_MISSES closest misses (smallest gap). */
void add_miss(struct sched_explain *why, double gap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Explains why node n cannot take req's cores (what cores_choose refused
 * with the devices of the view on their NUMA nodes): counts it in why and
 * adds a miss. */
void cores_explain(const struct sched_snapshot *s, const struct sched_node *n,
		   const struct sched_request *req, const struct nodeview *v, const struct ask *a,
		   struct sched_explain *why);
/* Does any core ask want the request's devices on its NUMA node
 * (require or prefer with_device)? */
bool cores_bind_devices(const struct sched_request *req);

/* constraint.c */
struct sched_dev;
/* Resolves "${...}" against a node (and a device when dev != NULL);
 * literals resolve to themselves.  Returns NULL when the attribute is not
 * set.  buf holds values that must be built (device ids). */
const char *resolve_target(const struct sched_snapshot *s, const struct sched_node *n,
			   const struct dev_profile *p, const struct sched_dev *d,
			   const char *target, char *buf, size_t bufsize);
/* Checks one constraint; -EINVAL with err for a bad regexp/version. */
int constraint_check(const struct sched_snapshot *s, const struct sched_node *n,
		     const struct dev_profile *p, const struct sched_dev *d,
		     const struct sched_constraint *c, struct herd_err *err);
/* Validates operators and regexps of a request up front. */
int constraint_validate(const struct sched_constraint *c, struct herd_err *err);

#endif
