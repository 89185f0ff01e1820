/* bench_server: the control plane's submit-to-placed path, without an
 * agent: an in-process server (SQLite in a temporary data dir, 2 scheduler
 * workers) with NODES simulated nodes of 8 GPUs, JOBS one-GPU batch jobs
 * submitted over HTTP on one keep-alive connection.
 *
 *   bench_server DIR JOBS NODES
 *
 * Prints: the latency of one job from POST /v1/jobs to its allocation
 * committed (submitted one at a time; p50, p99), then the throughput of
 * submitting all of them back to back until every one is placed (jobs/s).
 * Each placement needs a free GPU, so JOBS <= 8 * NODES is placed; the
 * agents' part (start, report) is not in these numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http.h"

static struct bench_srv srv;

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void submit(const char *id, struct strbuf *out)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"job\": {\"id\": \"%s\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\", \"tasks\": "
		 "[{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}, "
		 "\"resources\": {\"cpu\": 10, \"memory\": 10, \"devices\": [{\"name\": \"nvidia/gpu\"}]}}]}]}}", id);
	if (bench_req(&srv, "POST", "/v1/jobs", body, out) != 200) {
		fprintf(stderr, "submit %s failed: %s\n", id, out->buf);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct server_config cfg = { 0 };
	struct strbuf out = STRBUF_INIT;
	int jobs, nodes;
	double *lat, t0, t1;

	if (argc != 4) {
		fprintf(stderr, "usage: bench_server DIR JOBS NODES\n");
		return 2;
	}
	jobs = (int)strtol(argv[2], NULL, 10);
	nodes = (int)strtol(argv[3], NULL, 10);
	cfg.policy = getenv("BENCH_POLICY");
	if (bench_srv_start(&srv, argv[1], "server", &cfg) < 0)
		return 1;
	for (int n = 0; n < nodes; n++) {
		struct strbuf b = STRBUF_INIT;
		strbuf_addf(&b, "{\"node\": {\"id\": \"node-%d\", \"resources\": {\"cpu_milli\": 1000000, "
			    "\"memory_mib\": 1000000}, \"devices\": [", n);
		for (int g = 0; g < 8; g++)
			strbuf_addf(&b, "%s{\"id\": \"GPU-%d-%d\", \"model\": \"H100\", \"memory_mib\": 81920}",
				    g ? "," : "", n, g);
		strbuf_adds(&b, "]}}");
		if (bench_req(&srv, "POST", "/v1/node/register", b.buf, &out) != 200)
			return 1;
		strbuf_release(&b);
	}
	/* latency: one at a time */
	lat = calloc((size_t)jobs, sizeof(double));
	for (int i = 0; i < jobs / 2; i++) {
		char id[32];
		snprintf(id, sizeof(id), "lat-%d", i);
		t0 = bench_now_s();
		submit(id, &out);
		server_wait_idle(srv.srv, 60LL * 1000000000);
		lat[i] = bench_now_s() - t0;
	}
	qsort(lat, (size_t)(jobs / 2), sizeof(double), cmp);
	printf("submit-to-placed latency over %d jobs: p50 %.2f ms, p99 %.2f ms\n", jobs / 2,
	       lat[jobs / 4] * 1e3, lat[(jobs / 2) * 99 / 100] * 1e3);
	/* throughput: back to back */
	t0 = bench_now_s();
	for (int i = 0; i < jobs - jobs / 2; i++) {
		char id[32];
		snprintf(id, sizeof(id), "tp-%d", i);
		submit(id, &out);
	}
	t1 = bench_now_s();
	server_wait_idle(srv.srv, 600LL * 1000000000);
	printf("throughput: %d jobs submitted in %.2f s (%.0f/s), all placed after %.2f s (%.0f jobs/s)\n",
	       jobs - jobs / 2, t1 - t0, (jobs - jobs / 2) / (t1 - t0), bench_now_s() - t0,
	       (jobs - jobs / 2) / (bench_now_s() - t0));
	bench_req(&srv, "GET", "/v1/allocations", NULL, &out);
	printf("allocations: %zu bytes of JSON\n", out.len);
	bench_srv_stop(&srv);
	strbuf_release(&out);
	free(lat);
	return 0;
}
