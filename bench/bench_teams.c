/* bench_teams: admission decisions of the fair queue with many queued jobs.
 *
 *   bench_teams DIR JOBS NAMESPACES
 *
 * An in-process server (SQLite in a temporary dir under DIR, 2 workers)
 * with one node of 8 GPUs, all held by a blocker job.  JOBS one-GPU batch
 * jobs are submitted round-robin into NAMESPACES namespaces (each with a
 * 1000-GPU quota, so quota never holds them: the fair queue does).  Prints:
 *   1. submit: JOBS submitted over HTTP and each one decided (queued),
 *      in decisions per second (the queue growing from 0 to JOBS);
 *   2. at JOBS: 1000 more submitted and decided with JOBS already queued;
 *   3. capacity event: the blocker completes; the queue hands the 8 freed
 *      GPUs out (only the first job's evaluation runs each time, the others
 *      stay parked): how long until all 8 are placed, and how many
 *      namespaces they went to (the fair rule gives each of 8 namespaces
 *      one). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http.h"

static struct bench_srv srv;

static void must(long st, const char *what, const struct strbuf *out)
{
	if (st != 200) {
		fprintf(stderr, "bench_teams: %s: %ld %s\n", what, st, out->buf);
		exit(1);
	}
}

static void log_fn(const char *level, const char *msg, void *arg)
{
	(void)arg;
	if (getenv("BENCH_TEAMS_DEBUG"))
		fprintf(stderr, "server %s: %s\n", level, msg);
}

static void job(struct strbuf *sb, const char *ns, const char *id, int gpus)
{
	strbuf_reset(sb);
	strbuf_addf(sb, "{\"job\": {\"id\": \"%s\", \"namespace\": \"%s\", \"type\": \"batch\","
		    " \"groups\": [{\"name\": \"g\", \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		    " \"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"cpu\": 10, \"memory\": 16,"
		    " \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %d}]}}]}]}}", id, ns, gpus);
}

/* Submits jobs j<from>..j<to - 1> of one GPU round-robin into nns
 * namespaces and waits until each is decided; returns the seconds taken. */
static double submit_range(int from, int to, int nns, struct strbuf *body, struct strbuf *out)
{
	double t0 = bench_now_s();

	for (int k = from; k < to; k++) {
		char ns[16], id[32];
		snprintf(ns, sizeof(ns), "ns%02d", k % nns);
		snprintf(id, sizeof(id), "j%05d", k);
		job(body, ns, id, 1);
		must(bench_req(&srv, "POST", "/v1/jobs", body->buf, out), "submit", out);
	}
	server_wait_idle(srv.srv, 3600LL * 1000000000LL);
	return bench_now_s() - t0;
}

int main(int argc, char **argv)
{
	struct server_config cfg = { 0 };
	struct strbuf body = STRBUF_INIT, out = STRBUF_INIT;
	char path[256];
	int jobs, nns;
	double t0, t1, t2;
	json_t *allocs, *a, *seen;
	size_t i;

	if (argc != 4) {
		fprintf(stderr, "usage: bench_teams DIR JOBS NAMESPACES\n");
		return 2;
	}
	jobs = (int)strtol(argv[2], NULL, 10);
	nns = (int)strtol(argv[3], NULL, 10);
	if (jobs <= 0 || nns <= 0)
		return 1;
	cfg.workers = 2;
	cfg.preempt_types = SERVER_PREEMPT_NONE;
	cfg.log = log_fn;
	cfg.heartbeat_ttl_ns = 24 * 3600LL * 1000000000LL; /* no agent heartbeats here */
	if (bench_srv_start(&srv, argv[1], "teams", &cfg) < 0)
		return 1;

	strbuf_adds(&body, "{\"node\": {\"id\": \"n1\", \"name\": \"n1\", \"datacenter\": \"dc1\","
		    " \"resources\": {\"cpu_milli\": 1000000, \"memory_mib\": 10000000}, \"devices\": [");
	for (int g = 0; g < 8; g++)
		strbuf_addf(&body, "%s{\"id\": \"GPU-%d\", \"vendor\": \"nvidia\", \"type\": \"gpu\", \"model\": \"H100\","
			    " \"memory_mib\": 81920, \"healthy\": true}", g ? ", " : "", g);
	strbuf_adds(&body, "]}}");
	must(bench_req(&srv, "POST", "/v1/node/register", body.buf, &out), "register", &out);
	must(bench_req(&srv, "POST", "/v1/quotas", "{\"quota\": {\"name\": \"big\", \"limits\": [{\"region_limit\":"
		 " {\"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1000}]}}]}}", &out), "quota", &out);
	for (int n = 0; n < nns; n++) {
		strbuf_reset(&body);
		strbuf_addf(&body, "{\"namespace\": {\"name\": \"ns%02d\", \"quota\": \"big\"}}", n);
		must(bench_req(&srv, "POST", "/v1/namespaces", body.buf, &out), "namespace", &out);
	}
	job(&body, "default", "blocker", 8);
	must(bench_req(&srv, "POST", "/v1/jobs", body.buf, &out), "blocker", &out);
	server_wait_idle(srv.srv, 60LL * 1000000000LL);

	t0 = submit_range(0, jobs, nns, &body, &out);
	printf("submit: %d jobs in %d namespaces queued in %.2f s: %.0f decisions/s\n", jobs, nns,
	       t0, jobs / t0);

	t0 = submit_range(jobs, jobs + 1000, nns, &body, &out);
	printf("at %d queued: 1000 more decided in %.2f s: %.0f decisions/s\n", jobs, t0, 1000 / t0);

	must(bench_req(&srv, "GET", "/v1/job/blocker/allocations", NULL, &out), "blocker allocs", &out);
	allocs = json_loads(out.buf, 0, NULL);
	snprintf(path, sizeof(path), "/v1/allocation/%s/status",
		 json_string_value(json_object_get(json_array_get(allocs, 0), "id")));
	json_decref(allocs);
	t1 = bench_now_s();
	must(bench_req(&srv, "PUT", path, "{\"client_status\": \"complete\"}", &out), "complete", &out);
	if (getenv("BENCH_TEAMS_DEBUG"))
		fprintf(stderr, "blocker %s: %s\n", path, out.buf);
	server_wait_idle(srv.srv, 3600LL * 1000000000LL);
	t2 = bench_now_s();
	must(bench_req(&srv, "GET", "/v1/allocations?namespace=*", NULL, &out), "allocs", &out);
	allocs = json_loads(out.buf, 0, NULL);
	seen = json_object();
	json_array_foreach(allocs, i, a)
		if (!strcmp(json_string_value(json_object_get(a, "client_status")), "pending"))
			json_object_set_new(seen, json_string_value(json_object_get(a, "namespace")), json_true());
	printf("capacity event with %d queued: the 8 freed GPUs placed in %.3f s, to %zu namespaces\n",
	       jobs + 1000, t2 - t1, json_object_size(seen));
	json_decref(seen);
	json_decref(allocs);
	bench_srv_stop(&srv);
	strbuf_release(&body);
	strbuf_release(&out);
	return 0;
}
