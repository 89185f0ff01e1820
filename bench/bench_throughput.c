/* bench_throughput: batch-job throughput of `herd agent -dev` from submit
 * to complete, measured by a client that is not the bottleneck.
 *
 *     [HERD_BENCH_TASK=PATH] [HERD_BENCH_PG=CONNINFO] \
 *         bench_throughput HERD_BIN [JOBS=10000] [THREADS=8] [RUNS=3]
 *
 * (HERD_BENCH_PG: the store on PostgreSQL; give an empty database, and
 * RUNS=1 per database.)
 * Each run starts a fresh dev agent (server and client in one process, its
 * state under a new temporary dir), waits for its node, then THREADS
 * threads submit JOBS batch jobs running HERD_BENCH_TASK (default /bin/true;
 * the build has a static no-op in bench/noop_task) through POST /v1/jobs,
 * each thread on one keep-alive connection.  Completion is watched with a
 * blocking query on GET /v1/jobs?since=N (one record, with its derived
 * status, per job that changed since the previous answer); a job counts once it was seen `dead`
 * (the dev agent garbage-collects ended jobs after a while, so the ones seen
 * are remembered).  Prints jobs/s of each run (first submit until every job
 * was seen dead) and their median. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_conn.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

extern char **environ;

/* Completion is looked at no more often than this: every look encodes one
 * record per job that changed, work the agent would otherwise spend on the
 * jobs, and costs a request.  The figure is late by at most this much. */
#define POLL_MIN_S 0.1


/* The command every job runs (HERD_BENCH_TASK), JSON-safe (checked in main). */
static const char *task_command = "/bin/true";

struct submitter {
	pthread_t thread;
	const char *base; /* the agent's address */
	unsigned first, step, count; /* jobs first, first + step, ... below count */
	int failed;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *submit_loop(void *arg)
{
	struct submitter *s = arg;
	struct bench_conn c;
	struct strbuf job;

	bench_conn_open(&c, s->base);
	strbuf_init(&job, 512);
	for (unsigned i = s->first; i < s->count; i += s->step) {
		strbuf_reset(&job);
		strbuf_addf(&job,
			    "{\"job\":{\"id\":\"tp-%u\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\","
			    "\"tasks\":[{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":"
			    "\"%s\"},\"resources\":{\"cpu\":1,\"memory\":10}}]}]}}",
			    i, task_command);
		long st = bench_conn_req(&c, "POST", "/v1/jobs", job.buf);
		if (st != 200) {
			fprintf(stderr, "bench_throughput: POST tp-%u: %ld %s\n", i, st, c.body.buf);
			s->failed = 1;
			break;
		}
	}
	strbuf_release(&job);
	bench_conn_close(&c);
	return NULL;
}

/* Marks in dead[] every job tp-N of the GET /v1/jobs answer whose status is
 * "dead"; returns how many were newly marked.  The records are scanned, not
 * parsed: each starts with its "id" and its first "status" key is the job's
 * (the per-group summary has no such key). */
static unsigned mark_dead(const char *p, unsigned char *dead, unsigned jobs)
{
	unsigned fresh = 0;

	while ((p = strstr(p, "\"id\":\"tp-")) != NULL) {
		char *end;
		unsigned long n = strtoul(p + 9, &end, 10);
		const char *st = strstr(end, "\"status\":\"");

		p = end;
		if (!st || n >= jobs)
			continue;
		if (strncmp(st + 10, "dead\"", 5) == 0 && !dead[n]) {
			dead[n] = 1;
			fresh++;
		}
	}
	return fresh;
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st; (void)f; (void)w;
	return remove(p);
}

/* Starts `HERD agent -dev` with TMPDIR=dir; its pid and HTTP port. */
static int agent_start(const char *herd, const char *dir, pid_t *pid, unsigned *port)
{
	char log[600], tmpenv[600], line[256];
	int fds[2];
	posix_spawn_file_actions_t fa;
	/* HERD_BENCH_PG: the server's store in that (empty) PostgreSQL
	 * database instead of SQLite; one run per database, since a run's
	 * jobs stay there */
	const char *pg = getenv("HERD_BENCH_PG");
	char *argv[] = { (char *)herd, "agent", "-dev", "-http-port", "0", "-log-level", "warn",
			 pg && *pg ? "-postgres-url" : NULL, (char *)pg, NULL };
	size_t n = 0;

	while (environ[n])
		n++;
	char **env = xcalloc(n + 2, sizeof(*env));
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "TMPDIR=", 7) != 0)
			env[m++] = environ[i];
	snprintf(tmpenv, sizeof(tmpenv), "TMPDIR=%s", dir);
	env[m] = tmpenv;

	snprintf(log, sizeof(log), "%s/agent.log", dir);
	if (pipe2(fds, O_CLOEXEC) < 0) {
		perror("pipe2");
		free(env);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc = posix_spawn(pid, herd, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(fds[1]);
	if (rc != 0) {
		fprintf(stderr, "bench_throughput: %s: %s\n", herd, strerror(rc));
		close(fds[0]);
		return -1;
	}
	FILE *out = fdopen(fds[0], "r");
	*port = 0;
	/* The agent says its server's port first, then the client's. */
	while (!*port && fgets(line, sizeof(line), out))
		sscanf(line, "http port %u", port);
	fclose(out);
	if (!*port) {
		fprintf(stderr, "bench_throughput: the agent said no port (see %s)\n", log);
		return -1;
	}
	return 0;
}

static double run_once(const char *herd, unsigned jobs, unsigned threads)
{
	char dir[] = "/tmp/herd-bench-tp-XXXXXX";
	pid_t pid;
	unsigned port;
	double rate = -1;
	struct bench_conn c;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	if (agent_start(herd, dir, &pid, &port) < 0)
		return -1;
	char base[64];
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", port);
	bench_conn_open(&c, base);
	int ready = 0;
	for (int i = 0; i < 200 && !ready; i++) {
		if (bench_conn_req(&c, "GET", "/v1/nodes", NULL) == 200 &&
		    strstr(c.body.buf, "\"ready\""))
			ready = 1;
		else
			usleep(50 * 1000);
	}
	if (!ready) {
		fprintf(stderr, "bench_throughput: no node ready in 10 s\n");
		goto out;
	}

	struct submitter *subs = xcalloc(threads, sizeof(*subs));
	double t0 = now_s();
	for (unsigned i = 0; i < threads; i++) {
		subs[i] = (struct submitter){ .base = base, .first = i, .step = threads,
					      .count = jobs };
		pthread_create(&subs[i].thread, NULL, submit_loop, &subs[i]);
	}
	int failed = 0;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(subs[i].thread, NULL);
		failed |= subs[i].failed;
	}
	free(subs);
	double submitted = now_s() - t0;
	if (failed)
		goto out;

	unsigned char *dead = xcalloc(jobs, 1);
	unsigned seen = 0;
	char path[96];
	/* c.index is the X-Herd-Index of the readiness check, before the
	 * first submit: every job changed after it (since=0 would list every
	 * job at the first look, all 10,000 encoded at once) */
	while (seen < jobs) {
		double look = now_s();
		/* only the jobs that changed since the previous answer */
		snprintf(path, sizeof(path), "/v1/jobs?index=%llu&since=%llu&wait=30s", c.index,
			 c.index);
		if (bench_conn_req(&c, "GET", path, NULL) != 200) {
			fprintf(stderr, "bench_throughput: GET /v1/jobs failed\n");
			free(dead);
			goto out;
		}
		seen += mark_dead(c.body.buf, dead, jobs);
		double spent = now_s() - look;
		if (seen < jobs && spent < POLL_MIN_S)
			usleep((useconds_t)((POLL_MIN_S - spent) * 1e6));
	}
	free(dead);
	double total = now_s() - t0;
	rate = jobs / total;
	printf("%u batch jobs: submitted in %.2f s (%.0f/s), all complete in %.2f s: %.0f jobs/s\n",
	       jobs, submitted, jobs / submitted, total, rate);
	fflush(stdout);
out:
	bench_conn_close(&c);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rate;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 5) {
		fprintf(stderr, "usage: bench_throughput HERD_BIN [JOBS=10000] [THREADS=8] [RUNS=3]\n");
		return 2;
	}
	unsigned jobs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 10000;
	unsigned threads = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 8;
	unsigned runs = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 3;
	const char *task = getenv("HERD_BENCH_TASK");
	if (task && *task) {
		if (task[0] != '/' || strpbrk(task, "\"\\") || access(task, X_OK)) {
			fprintf(stderr, "bench_throughput: HERD_BENCH_TASK must be an executable's "
					"absolute path without quotes or backslashes: %s\n", task);
			return 2;
		}
		task_command = task;
	}
	printf("task: %s\n", task_command);
	if (!jobs || !threads || !runs) {
		fprintf(stderr, "bench_throughput: JOBS, THREADS and RUNS must be positive\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	double *rates = xcalloc(runs, sizeof(*rates));
	for (unsigned r = 0; r < runs; r++) {
		rates[r] = run_once(argv[1], jobs, threads);
		if (rates[r] < 0) {
			free(rates);
			return 1;
		}
	}
	qsort(rates, runs, sizeof(*rates), cmp_double);
	printf("median of %u runs: %.0f jobs/s (target >= 1000)\n", runs, rates[runs / 2]);
	free(rates);
	curl_global_cleanup();
	return 0;
}
