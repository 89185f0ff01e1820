/* routes_metrics: GET /v1/metrics, the farm in the Prometheus text format
 * (?format=json: the same model as JSON).  docs/operations.md, "Metrics",
 * names and explains every family.
 *
 * Everything is computed at scrape time from one store view (one
 * consistent state, at one index) and the server's memory (heartbeat
 * stats, the evaluation broker, the fair queue): no thread, no cache.  The
 * GPU families come from gpus_list, the very entries of GET /v1/gpus, so
 * the two never disagree; GPU-seconds from usage_sum, the sum of GET
 * /v1/usage.
 *
 * What a token sees: the route needs node read, as GET /v1/gpus, and shows
 * what that shows (nodes, GPUs and their holders) to any such token.  The
 * families per namespace (jobs, allocations, GPU-seconds, the fair queue)
 * keep only the namespaces the token may read, and the quota families need
 * quota read as well, as their own routes do.  With ACL off all is shown. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/acl.h"
#include "server/autoscale.h"
#include "server/idle_gpu.h"
#include "server/metrics_text.h"
#include "server/server-int.h"
#include "server/teams.h"

#define MIB 1048576.0

/* The highest herd_gpu_seconds_total given per namespace.  GET /v1/usage
 * counts a running allocation up to now and an allocation not yet started
 * from its placement, so its sum may step back a little (a start or an
 * end reported after a scrape counted past it); a counter must not, or
 * Prometheus takes the step for a reset and its rates jump.  The counter
 * says the highest sum seen by this process instead. */
struct metrics_seen {
	pthread_mutex_t lock;
	json_t *gpu_seconds; /* {"<ns>": real} */
};

/* What one scrape reads in one store view. */
struct scrape {
	uint64_t index;
	json_t *nodes;      /* records of our own: gpus_list decorates them */
	json_t *allocs, *jobs, *namespaces, *ledger; /* shared, read only */
	json_t *quotas;     /* [{"quota": name, "status": quota_status_json}] */
};

static int read_quotas(struct store *s, struct scrape *sc, struct herd_err *err)
{
	json_t *n;
	size_t i;

	sc->quotas = json_array();
	json_array_foreach(sc->namespaces, i, n) {
		struct quota_state q;
		int rc;
		if (!*jstr(n, "quota", ""))
			continue;
		rc = quota_state_read(s, jstr(n, "name", ""), &q, err);
		if (rc < 0)
			return rc;
		if (q.spec) /* NULL: the namespace names a quota deleted since */
			json_array_append_new(sc->quotas,
					      json_pack("{s:s, s:o}", "quota", jstr(q.spec, "name", ""),
							"status", quota_status_json(&q)));
		quota_state_release(&q);
	}
	return 0;
}

static int read_scrape(struct store *s, void *arg, struct herd_err *err)
{
	struct scrape *sc = arg;
	int rc = store_read_index(s, &sc->index, err);

	if (!rc)
		rc = store_list(s, STORE_NODE, NULL, &sc->nodes, err);
	if (!rc)
		rc = store_list_shared(s, STORE_ALLOC, NULL, &sc->allocs, err);
	if (!rc)
		rc = store_list_shared(s, STORE_JOB, NULL, &sc->jobs, err);
	if (!rc)
		rc = store_list_shared(s, STORE_NAMESPACE, NULL, &sc->namespaces, err);
	if (!rc)
		rc = store_list_shared(s, STORE_USAGE, NULL, &sc->ledger, err);
	if (!rc)
		rc = read_quotas(s, sc, err);
	return rc;
}

static void scrape_release(struct scrape *sc)
{
	json_decref(sc->nodes);
	json_decref(sc->allocs);
	json_decref(sc->jobs);
	json_decref(sc->namespaces);
	json_decref(sc->ledger);
	json_decref(sc->quotas);
}

static bool ns_visible(const struct http_request *req, const char *ns)
{
	return acl_allows_ns(req, ns, ACL_READ);
}

/* --- nodes -------------------------------------------------------------- */

static void add_nodes(struct metrics *m, const json_t *nodes)
{
	struct metrics_family *count = metrics_family(m, "herd_nodes", METRICS_GAUGE,
		"Nodes by status (ready, down) and scheduling eligibility.");
	struct metrics_family *info = metrics_family(m, "herd_node_info", METRICS_GAUGE,
		"One series per node, value 1: its name, datacenter, class, pool, status, "
		"eligibility and drain.");
	struct metrics_family *hb = metrics_family(m, "herd_node_last_heartbeat_timestamp_seconds",
		METRICS_GAUGE, "When the node's last heartbeat came (unix seconds); absent when "
		"none came since this server started.");
	static const char *const statuses[] = { "ready", "down" };
	static const char *const eligibility[] = { "eligible", "ineligible" };
	json_t *n;
	size_t i;

	/* the usual states are there even at 0, for alerts on them */
	for (size_t s = 0; s < 2; s++)
		for (size_t e = 0; e < 2; e++)
			metrics_add(count, 0, "status", statuses[s], "eligibility", eligibility[e], NULL);
	json_array_foreach(nodes, i, n) {
		const char *id = jstr(n, "id", ""), *name = jstr(n, "name", "");
		/* samples with the same labels add up: one per state, its count */
		metrics_add(count, 1, "status", jstr(n, "status", ""), "eligibility",
			    jstr(n, "eligibility", "eligible"), NULL);
		metrics_add(info, 1, "node_id", id, "node_name", name, "datacenter",
			    jstr(n, "datacenter", ""), "node_class", jstr(n, "node_class", ""),
			    "node_pool", jstr(n, "node_pool", ""), "status", jstr(n, "status", ""),
			    "eligibility", jstr(n, "eligibility", "eligible"), "drain",
			    jbool(n, "drain", false) ? "true" : "false", NULL);
		if (json_is_integer(json_object_get(n, "last_heartbeat")))
			metrics_add(hb, (double)jint(n, "last_heartbeat", 0) / 1e9, "node_id", id,
				    "node_name", name, NULL);
	}
}

/* --- GPUs (the entries of GET /v1/gpus) --------------------------------- */

struct gpu_families {
	struct metrics_family *info, *healthy, *mem_total, *mem_used, *util, *compute_alloc,
		*mem_alloc, *tenants, *holder_compute, *holder_mem, *task_mem;
};

static void gpu_families(struct metrics *m, struct gpu_families *g)
{
	g->info = metrics_family(m, "herd_gpu_info", METRICS_GAUGE,
		"One series per GPU device of every node (a MIG instance is a device of its "
		"own), value 1: its model, MIG profile and parent GPU (empty for a whole GPU) and "
		"sharing mode (exclusive, mps, timeslice).");
	g->healthy = metrics_family(m, "herd_gpu_healthy", METRICS_GAUGE,
		"1 when the device is healthy as its agent last reported, else 0.");
	g->mem_total = metrics_family(m, "herd_gpu_memory_total_bytes", METRICS_GAUGE,
		"The device's memory.");
	g->mem_used = metrics_family(m, "herd_gpu_memory_used_bytes", METRICS_GAUGE,
		"Device memory in use as the node's last heartbeat measured it (NVML); absent "
		"when unknown or the node is not ready.");
	g->util = metrics_family(m, "herd_gpu_utilization_ratio", METRICS_GAUGE,
		"Share of time the GPU was busy (0..1) as the node's last heartbeat measured it "
		"(NVML); absent when unknown (MIG instances) or the node is not ready.");
	g->compute_alloc = metrics_family(m, "herd_gpu_compute_allocated_ratio", METRICS_GAUGE,
		"Share of the device's compute its holders were given (0..1; 1 for a device "
		"held whole).");
	g->mem_alloc = metrics_family(m, "herd_gpu_memory_allocated_bytes", METRICS_GAUGE,
		"Device memory its holders were given (all of it for a device held whole, the "
		"memory asks of shares).");
	g->tenants = metrics_family(m, "herd_gpu_tenants", METRICS_GAUGE,
		"How many allocations hold the device.");
	g->holder_compute = metrics_family(m, "herd_gpu_holder_compute_ratio", METRICS_GAUGE,
		"One series per allocation holding the device: the share of its compute the "
		"allocation holds (0..1).");
	g->holder_mem = metrics_family(m, "herd_gpu_holder_memory_bytes", METRICS_GAUGE,
		"One series per allocation holding the device: the device memory it was "
		"given.");
	g->task_mem = metrics_family(m, "herd_task_gpu_memory_bytes", METRICS_GAUGE,
		"One series per task of an allocation holding the device: the device memory its "
		"processes use, as the node's last heartbeat measured it (NVML's compute "
		"processes, attributed by the agent); absent while the node is not ready.");
}

/* A holder's share as a ratio (a device held whole counts 1000
 * thousandths; 1 whatever it counts). */
static double share_of(const json_t *holder)
{
	if (jbool(holder, "whole", false))
		return 1.0;
	return (double)jint(holder, "compute_milli", 0) / 1000.0;
}

/* The GPU memory each task of holder h uses (GET /v1/gpus's tasks of
 * the holder), labelled as the holder plus the task; only while the node
 * is ready, as the heartbeat stats. */
static void add_task_memory(const struct gpu_families *g, const json_t *gpu, const json_t *h,
			    const char *const *holder_labels)
{
	const json_t *t;
	size_t i;

	if (strcmp(jstr(gpu, "node_status", ""), "ready"))
		return;
	json_array_foreach(json_object_get(h, "tasks"), i, t) {
		const char *labels[16];
		memcpy(labels, holder_labels, 14 * sizeof(*labels));
		labels[14] = "task";
		labels[15] = jstr(t, "task", "");
		metrics_addv(g->task_mem, (double)jint(t, "gpu_memory_used_mib", 0) * MIB, labels, 8);
	}
}

static void add_holders(const struct gpu_families *g, const json_t *gpu, const char *node_id,
			const char *node_name, const char *dev_id)
{
	json_t *h;
	size_t i;

	json_array_foreach(json_object_get(gpu, "allocations"), i, h) {
		const char *labels[] = { "node_id", node_id, "node_name", node_name, "device_id",
			dev_id, "namespace", jstr(h, "namespace", ""), "job_id", jstr(h, "job_id", ""),
			"alloc_id", jstr(h, "alloc_id", ""), "task_group", jstr(h, "task_group", "") };
		metrics_addv(g->holder_compute, share_of(h), labels, 7);
		metrics_addv(g->holder_mem, (double)jint(h, "memory_mib", 0) * MIB, labels, 7);
		add_task_memory(g, gpu, h, labels);
	}
}

/* Heartbeat stats: a sample only for what the agent measured, and only
 * while its node is ready (a down node's last stats are old news). */
static void add_gpu_stats(const struct gpu_families *g, const json_t *gpu, const json_t *dev,
			  const char *const *labels)
{
	const json_t *st = json_object_get(dev, "stats");
	const json_t *used = json_object_get(st, "memory_used_mib");
	const json_t *util = json_object_get(st, "utilization_gpu");

	if (strcmp(jstr(gpu, "node_status", ""), "ready"))
		return;
	if (json_is_integer(used) && json_integer_value(used) >= 0)
		metrics_addv(g->mem_used, (double)json_integer_value(used) * MIB, labels, 3);
	if (json_is_number(util) && json_number_value(util) >= 0)
		metrics_addv(g->util, json_number_value(util) / 100.0, labels, 3);
}

static void add_gpus(struct metrics *m, const json_t *gpus)
{
	struct gpu_families g;
	json_t *gpu;
	size_t i;

	gpu_families(m, &g);
	json_array_foreach(gpus, i, gpu) {
		const json_t *dev = json_object_get(gpu, "device");
		const char *node_id = jstr(gpu, "node_id", ""), *node_name = jstr(gpu, "node_name", "");
		const char *dev_id = jstr(dev, "id", "");
		const char *labels[] = { "node_id", node_id, "node_name", node_name, "device_id",
					 dev_id };

		metrics_add(g.info, 1, "node_id", node_id, "node_name", node_name, "device_id",
			    dev_id, "model", jstr(dev, "model", ""), "mig_profile",
			    jstr(dev, "mig_profile", ""), "parent_id", jstr(dev, "parent_id", ""),
			    "sharing", jstr(gpu, "sharing", "exclusive"), NULL);
		metrics_addv(g.healthy, jbool(dev, "healthy", true) ? 1 : 0, labels, 3);
		metrics_addv(g.mem_total, (double)jint(dev, "memory_mib", 0) * MIB, labels, 3);
		add_gpu_stats(&g, gpu, dev, labels);
		metrics_addv(g.compute_alloc, (double)jint(gpu, "compute_used_milli", 0) / 1000.0,
			     labels, 3);
		metrics_addv(g.mem_alloc, (double)jint(gpu, "memory_used_mib", 0) * MIB, labels, 3);
		metrics_addv(g.tenants, (double)jint(gpu, "tenants", 0), labels, 3);
		add_holders(&g, gpu, node_id, node_name, dev_id);
	}
}

/* --- jobs, allocations, evaluations ------------------------------------- */

static void add_jobs(struct metrics *m, const struct http_request *req, const struct scrape *sc)
{
	struct metrics_family *jobs = metrics_family(m, "herd_jobs", METRICS_GAUGE,
		"Jobs by namespace, type and status (pending, running, dead), as GET /v1/jobs "
		"derives it.");
	struct metrics_family *allocs = metrics_family(m, "herd_allocations", METRICS_GAUGE,
		"Stored allocations by namespace and client status (pending, running, complete, "
		"failed, lost, unknown); ended ones count until garbage collection removes them.");
	json_t *byjob = allocs_by_job(sc->allocs), *x;
	size_t i;

	/* one sample each; those with the same labels add up to a count */
	json_array_foreach(sc->jobs, i, x) {
		const char *ns = jstr(x, "namespace", "default");
		if (ns_visible(req, ns))
			metrics_add(jobs, 1, "namespace", ns, "type", jstr(x, "type", "service"),
				    "status", job_status(x, job_allocs_of(byjob, x)), NULL);
	}
	json_array_foreach(sc->allocs, i, x) {
		const char *ns = jstr(x, "namespace", "default");
		if (ns_visible(req, ns))
			metrics_add(allocs, 1, "namespace", ns, "client_status",
				    jstr(x, "client_status", "pending"), NULL);
	}
	json_decref(byjob);
}

static void add_evals(struct metrics *m, struct server *srv, const struct http_request *req)
{
	struct metrics_family *evals = metrics_family(m, "herd_evaluations", METRICS_GAUGE,
		"Evaluations the server holds, by state: ready (waiting for a worker), delayed "
		"(a reschedule waiting for its delay), blocked (waiting for capacity), queued "
		"(parked in the fair queue until its turn), in_progress (with a worker).");
	struct metrics_family *fq = metrics_family(m, "herd_fair_queue_jobs", METRICS_GAUGE,
		"Jobs waiting in the fair queue for GPUs, by namespace.");
	struct broker_counts bc;
	size_t parked = 0;
	json_t *waiting = fair_queue_waiting(&srv->fq, &parked), *v;
	const char *ns;

	broker_counts(&srv->broker, &bc);
	metrics_add(evals, (double)bc.ready, "state", "ready", NULL);
	metrics_add(evals, (double)bc.delayed, "state", "delayed", NULL);
	metrics_add(evals, (double)bc.blocked, "state", "blocked", NULL);
	metrics_add(evals, (double)parked, "state", "queued", NULL);
	metrics_add(evals, (double)bc.in_progress, "state", "in_progress", NULL);
	json_object_foreach(waiting, ns, v)
		if (ns_visible(req, ns))
			metrics_add(fq, (double)json_integer_value(v), "namespace", ns, NULL);
	json_decref(waiting);
}

/* The reservation (reservation.h).  At most one is held at a time, so the
 * gauges have one series while it is held (none otherwise); they carry
 * its namespace but not its job: a label per job would make a new series
 * for every job that ever waited (the holder's job is in GET
 * /v1/quotas/queue and on its GPUs in GET /v1/gpus), while namespaces are
 * few.  The reasons of the ended counter are a fixed set. */
static void add_reservations(struct metrics *m, struct server *srv,
			     const struct http_request *req)
{
	struct metrics_family *held = metrics_family(m, "herd_reservations", METRICS_GAUGE,
		"Reservations held (0 or 1: at most one at a time).");
	struct metrics_family *gpus = metrics_family(m, "herd_reserved_gpus", METRICS_GAUGE,
		"GPU devices the reservation holds, by the namespace of its job; absent when "
		"none is held.");
	struct metrics_family *wait = metrics_family(m, "herd_reservation_wait_seconds",
		METRICS_GAUGE, "How long the job holding the reservation has waited in the fair "
		"queue, by its namespace; absent when none is held.");
	struct metrics_family *made = metrics_family(m, "herd_reservations_made_total",
		METRICS_COUNTER, "Reservations made since the server started.");
	struct metrics_family *ended = metrics_family(m, "herd_reservations_ended_total",
		METRICS_COUNTER, "Reservations ended since the server started, by reason "
		"(left_queue, job_changed, instance_placed, node_unschedulable, no_fit, "
		"taken_over).");
	struct resv_stats st;

	resv_stats(srv, now_ns(), &st);
	metrics_add(held, st.held ? 1 : 0, NULL);
	if (st.held && ns_visible(req, st.ns)) {
		metrics_add(gpus, (double)st.ndevs, "namespace", st.ns, NULL);
		metrics_add(wait, (double)st.waited / 1e9, "namespace", st.ns, NULL);
	}
	metrics_add(made, (double)st.made, NULL);
	for (int r = 0; r < RESV_END_N; r++)
		metrics_add(ended, (double)st.ended[r], "reason", resv_end_name((enum resv_end)r),
			    NULL);
}

/* Idle GPUs (idle_gpu.h; docs/teams.md, "Idle GPUs"), from the server's
 * memory: namespaces whose quota has an idle_gpu block. */
static void add_idle_gpus(struct metrics *m, struct server *srv, const struct http_request *req)
{
	struct metrics_family *held = metrics_family(m, "herd_gpu_idle_held", METRICS_GAUGE,
		"GPUs held by running allocations that are idle now under their quota's idle_gpu "
		"block, by namespace (shares count as fractions).");
	struct metrics_family *acts = metrics_family(m, "herd_idle_gpu_actions_total",
		METRICS_COUNTER, "Actions taken on allocations whose GPUs stayed idle, by "
		"namespace and action (warn, stop), since the server started.");
	json_t *st = idle_gpu_stats(srv), *v, *n;
	const char *ns, *a;

	json_object_foreach(json_object_get(st, "held"), ns, v)
		if (ns_visible(req, ns))
			metrics_add(held, json_number_value(v), "namespace", ns, NULL);
	json_object_foreach(json_object_get(st, "actions"), ns, v)
		json_object_foreach(v, a, n)
			if (ns_visible(req, ns))
				metrics_add(acts, json_number_value(n), "action", a, "namespace", ns,
					    NULL);
	json_decref(st);
}

/* The autoscaler's changes (autoscale.h; docs/jobspec.md, "scaling"). */
static void add_autoscale(struct metrics *m, struct server *srv, const struct http_request *req)
{
	struct metrics_family *changes = metrics_family(m, "herd_autoscale_changes_total",
		METRICS_COUNTER, "Counts the autoscaler changed, by namespace and direction (up, "
		"down), since the server started.");
	json_t *st = autoscale_stats(srv), *v, *n;
	const char *ns, *dir;

	json_object_foreach(st, ns, v)
		json_object_foreach(v, dir, n)
			if (ns_visible(req, ns))
				metrics_add(changes, json_number_value(n), "direction", dir,
					    "namespace", ns, NULL);
	json_decref(st);
}

/* --- quotas and GPU time ------------------------------------------------- */

static void add_quotas(struct metrics *m, const struct http_request *req, const json_t *quotas)
{
	struct metrics_family *limit = metrics_family(m, "herd_quota_gpu_limit", METRICS_GAUGE,
		"GPUs a namespace's quota allows, per device limit of the quota (resource: "
		"nvidia/gpu, or nvidia/gpu/<model>).");
	struct metrics_family *used = metrics_family(m, "herd_quota_gpu_used", METRICS_GAUGE,
		"GPUs the namespace's allocations hold against that limit (shares count as "
		"fractions, a MIG instance as its slices out of seven).");
	struct metrics_family *borrowed = metrics_family(m, "herd_quota_gpu_borrowed",
		METRICS_GAUGE, "GPUs the namespace holds beyond its quota (borrowed).");
	json_t *q;
	size_t i;

	if (!acl_allows(req, "quota", ACL_READ))
		return;
	json_array_foreach(quotas, i, q) {
		const json_t *st = json_object_get(q, "status");
		const char *ns = jstr(st, "namespace", ""), *name = jstr(q, "quota", ""), *res;
		json_t *d;
		if (!ns_visible(req, ns))
			continue;
		json_object_foreach(json_object_get(st, "devices"), res, d) {
			metrics_add(limit, json_number_value(json_object_get(d, "limit_gpus")),
				    "namespace", ns, "quota", name, "resource", res, NULL);
			metrics_add(used, json_number_value(json_object_get(d, "used_gpus")),
				    "namespace", ns, "quota", name, "resource", res, NULL);
		}
		metrics_add(borrowed, json_number_value(json_object_get(st, "gpu_borrowed")),
			    "namespace", ns, "quota", name, NULL);
	}
}

/* A usage_sum_fn: GPU-seconds per namespace into {"<ns>": real}. */
static void sum_ns(const char *ns, const char *job_id, double seconds, int64_t allocs, void *arg)
{
	json_t *by_ns = arg;
	(void)job_id, (void)allocs;
	json_object_set_new(by_ns, ns,
			    json_real(json_real_value(json_object_get(by_ns, ns)) + seconds));
}

static void add_gpu_seconds(struct metrics *m, struct server *srv,
			    const struct http_request *req, const struct scrape *sc)
{
	struct metrics_family *f = metrics_family(m, "herd_gpu_seconds_total", METRICS_COUNTER,
		"GPU time allocations held, by namespace: seconds times the share of GPUs held "
		"(a whole GPU 1, a 25% share 0.25, a MIG 3g instance 3/7), what herd usage "
		"reports, collected allocations included.");
	struct metrics_seen *seen = srv->metrics_seen;
	json_t *sums = json_object(), *v;
	int64_t now = now_ns();
	const char *ns;

	/* everything up to now: GET /v1/usage without since and until */
	usage_sum(sc->allocs, sc->ledger, 0, now, now, sum_ns, sums);
	pthread_mutex_lock(&seen->lock);
	json_object_foreach(sums, ns, v)
		if (json_real_value(v) > json_real_value(json_object_get(seen->gpu_seconds, ns)))
			json_object_set(seen->gpu_seconds, ns, v);
	json_object_foreach(seen->gpu_seconds, ns, v)
		if (ns_visible(req, ns))
			metrics_add(f, json_real_value(v), "namespace", ns, NULL);
	pthread_mutex_unlock(&seen->lock);
	json_decref(sums);
}

/* --- the server itself ----------------------------------------------------- */

static void add_server(struct metrics *m, const struct scrape *sc)
{
	metrics_add(metrics_family(m, "herd_build_info", METRICS_GAUGE,
				   "The server's version, value 1."),
		    1, "version", HERD_VERSION_STRING, NULL);
	metrics_add(metrics_family(m, "herd_store_index", METRICS_GAUGE,
				   "The store's index (X-Herd-Index): it moves by one per committed "
				   "change."),
		    (double)sc->index, NULL);
	metrics_add_process(m);
}

/* --- the route ------------------------------------------------------------- */

static int get_metrics(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *format = http_query(req, "format");
	struct scrape sc = { 0 };
	struct metrics *m;
	json_t *gpus;
	int rc;

	if (format && *format && strcmp(format, "json") && strcmp(format, "text"))
		return http_error(resp, 400, "invalid_argument",
				  "format must be \"text\" or \"json\" (got \"%.64s\")", format);
	rc = store_view(srv->store, read_scrape, &sc, NULL);
	if (rc < 0) {
		scrape_release(&sc);
		return rc;
	}
	m = metrics_new();
	gpus = gpus_list(srv, sc.nodes, sc.allocs); /* decorates the nodes: first */
	add_nodes(m, sc.nodes);
	add_gpus(m, gpus);
	add_jobs(m, req, &sc);
	add_evals(m, srv, req);
	add_reservations(m, srv, req);
	add_idle_gpus(m, srv, req);
	add_autoscale(m, srv, req);
	add_quotas(m, req, sc.quotas);
	add_gpu_seconds(m, srv, req, &sc);
	add_server(m, &sc);
	if (format && !strcmp(format, "json")) {
		http_reply(resp, 200, metrics_to_json(m));
	} else {
		struct strbuf sb;
		strbuf_init(&sb, 16384);
		metrics_write_text(m, &sb);
		http_reply_text(resp, 200, METRICS_TEXT_TYPE, strbuf_detach(&sb, NULL));
	}
	metrics_free(m);
	json_decref(gpus);
	scrape_release(&sc);
	return 0;
}

int routes_metrics(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/metrics", get_metrics, 0, ACL_NEED_NODE_READ },
	};
	if (!srv->metrics_seen) {
		srv->metrics_seen = xcalloc(1, sizeof(*srv->metrics_seen));
		pthread_mutex_init(&srv->metrics_seen->lock, NULL);
		srv->metrics_seen->gpu_seconds = json_object();
	}
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}

void routes_metrics_release(struct server *srv)
{
	if (!srv->metrics_seen)
		return;
	json_decref(srv->metrics_seen->gpu_seconds);
	pthread_mutex_destroy(&srv->metrics_seen->lock);
	free(srv->metrics_seen);
	srv->metrics_seen = NULL;
}
