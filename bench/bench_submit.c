/* bench_submit: the server's CPU per batch job on its write path, from
 * submit to complete, without the agent's own work (task runners,
 * directories, processes): an in-process server (SQLite in a temporary
 * data dir) with one node, THREADS threads submitting JOBS batch jobs that
 * ask no device through POST /v1/jobs (one keep-alive connection each), and
 * one thread in the part of an agent: it long-polls the node's allocations
 * (?index&since&include=job, as the agent does) and reports each new one
 * running, then complete, in batched PUT /v1/node/:id/allocations/status
 * requests (one per round, as the agent's status sync does).
 *
 *   bench_submit DIR [JOBS=3000] [THREADS=8] [RUNS=3]
 *
 * Prints per run the jobs/s from the first submit until the last job's
 * complete status was committed, and the server's CPU per job: the
 * process's CPU time (getrusage) less the CPU of the bench's own threads
 * (RUSAGE_THREAD), so the HTTP client and its JSON are not counted; then
 * the medians. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "bench_conn.h"
#include "bench_http.h"
#include "common/strbuf.h"

#define NODE_ID "node-0"


struct submitter {
	pthread_t thread;
	const char *base;
	unsigned first, step, count, run;
	double cpu; /* this thread's CPU seconds */
	int failed;
};

struct agent {
	pthread_t thread;
	const char *base;
	unsigned jobs;
	double done_at; /* when the last complete was committed */
	double cpu;
	int failed;
};


static double thread_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double process_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *submit_main(void *arg)
{
	struct submitter *s = arg;
	struct bench_conn c;
	char body[512];
	double cpu0 = thread_cpu_s();

	bench_conn_open(&c, s->base);
	for (unsigned i = s->first; i < s->count; i += s->step) {
		snprintf(body, sizeof(body),
			 "{\"job\":{\"id\":\"r%u-%u\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\","
			 "\"tasks\":[{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":"
			 "\"/bin/true\"},\"resources\":{\"cpu\":1,\"memory\":10}}]}]}}",
			 s->run, i);
		long st = bench_conn_req(&c, "POST", "/v1/jobs", body);
		if (st != 200) {
			fprintf(stderr, "bench_submit: POST job %u: %ld %s\n", i, st, c.body.buf);
			s->failed = 1;
			break;
		}
	}
	bench_conn_close(&c);
	s->cpu = thread_cpu_s() - cpu0;
	return NULL;
}

/* Appends {"id","client_status"} entries for ids to a status body. */
static void add_status(struct strbuf *b, json_t *ids, const char *status)
{
	size_t i;
	json_t *x;
	json_array_foreach(ids, i, x)
		strbuf_addf(b, "%s{\"id\":\"%s\",\"client_status\":\"%s\"}", b->len > 16 ? "," : "",
			    json_string_value(x), status);
}

/* The part of an agent: watch, then report each new allocation running
 * and, one round later, complete; every report of a round in one
 * request. */
static void *agent_main(void *arg)
{
	struct agent *a = arg;
	struct bench_conn c;
	unsigned long long index = 0;
	json_t *running = json_array();
	unsigned completed = 0;
	double cpu0 = thread_cpu_s();

	bench_conn_open(&c, a->base);
	while (completed < a->jobs) {
		char path[256];
		json_t *list, *fresh = json_array(), *x;
		struct strbuf b = STRBUF_INIT;
		size_t i;

		/* with reports to send, only look; else wait for a change */
		snprintf(path, sizeof(path),
			 "/v1/node/" NODE_ID "/allocations?index=%llu&since=%llu&include=job&wait=%s",
			 json_array_size(running) ? 0ULL : index, index, "5s");
		if (bench_conn_req(&c, "GET", path, NULL) != 200) {
			a->failed = 1;
			break;
		}
		list = json_loads(c.body.buf, 0, NULL);
		/* every server change up to X-Herd-Index is in this answer */
		index = c.index;
		json_array_foreach(list, i, x)
			if (!strcmp(json_string_value(json_object_get(x, "client_status")), "pending"))
				json_array_append(fresh, json_object_get(x, "id"));
		json_decref(list);
		if (!json_array_size(fresh) && !json_array_size(running)) {
			json_decref(fresh);
			continue;
		}
		strbuf_adds(&b, "{\"allocations\":[");
		add_status(&b, running, "complete");
		add_status(&b, fresh, "running");
		strbuf_adds(&b, "]}");
		if (bench_conn_req(&c, "PUT", "/v1/node/" NODE_ID "/allocations/status", b.buf) != 200) {
			fprintf(stderr, "bench_submit: status: %s\n", c.body.buf);
			a->failed = 1;
			strbuf_release(&b);
			json_decref(fresh);
			break;
		}
		completed += (unsigned)json_array_size(running);
		json_decref(running);
		running = fresh;
		strbuf_release(&b);
	}
	a->done_at = bench_now_s();
	json_decref(running);
	bench_conn_close(&c);
	a->cpu = thread_cpu_s() - cpu0;
	return NULL;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* One run on a fresh server: jobs/s and server CPU ms per job. */
static int run_once(const char *dir, unsigned jobs, unsigned threads, unsigned run, double *rate,
		    double *ms)
{
	struct server_config cfg = { 0 };
	struct bench_srv srv;
	struct strbuf out = STRBUF_INIT;
	struct submitter *s = calloc(threads, sizeof(*s));
	struct agent a = { 0 };
	double t0, cpu0, clients = 0;
	int rc = 0;

	if (bench_srv_start(&srv, dir, "submit", &cfg) < 0)
		return -1;
	if (bench_req(&srv, "POST", "/v1/node/register",
		      "{\"node\": {\"id\": \"" NODE_ID "\", \"resources\": {\"cpu_milli\": 100000000,"
		      " \"memory_mib\": 100000000}, \"devices\": []}}", &out) != 200) {
		fprintf(stderr, "bench_submit: node register: %s\n", out.buf);
		rc = -1;
		goto out;
	}
	a.base = srv.conn.base;
	a.jobs = jobs;
	t0 = bench_now_s();
	cpu0 = process_cpu_s();
	pthread_create(&a.thread, NULL, agent_main, &a);
	for (unsigned i = 0; i < threads; i++) {
		s[i] = (struct submitter){ .base = srv.conn.base, .first = i, .step = threads,
					   .count = jobs, .run = run };
		pthread_create(&s[i].thread, NULL, submit_main, &s[i]);
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(s[i].thread, NULL);
		clients += s[i].cpu;
		rc |= -s[i].failed;
	}
	pthread_join(a.thread, NULL);
	clients += a.cpu;
	rc |= -a.failed;
	*rate = jobs / (a.done_at - t0);
	*ms = (process_cpu_s() - cpu0 - clients) * 1e3 / jobs;
	printf("run %u: %u jobs: %.0f jobs/s, server CPU %.3f ms per job (bench threads %.2f s)\n",
	       run, jobs, *rate, *ms, clients);
out:
	bench_srv_stop(&srv);
	strbuf_release(&out);
	free(s);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned jobs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 3000;
	unsigned threads = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 8;
	unsigned runs = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 3;
	double *rate, *ms;

	if (argc < 2 || !jobs || !threads || !runs) {
		fprintf(stderr, "usage: bench_submit DIR [JOBS=3000] [THREADS=8] [RUNS=3]\n");
		return 2;
	}
	rate = calloc(runs, sizeof(double));
	ms = calloc(runs, sizeof(double));
	for (unsigned r = 0; r < runs; r++)
		if (run_once(argv[1], jobs, threads, r, &rate[r], &ms[r]) < 0)
			return 1;
	qsort(rate, runs, sizeof(double), cmp);
	qsort(ms, runs, sizeof(double), cmp);
	printf("median of %u runs: %.0f jobs/s, server CPU %.3f ms per job\n", runs, rate[runs / 2],
	       ms[runs / 2]);
	free(rate);
	free(ms);
	return 0;
}
