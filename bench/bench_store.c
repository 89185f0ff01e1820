/* bench_store: committed changes per second of the SQLite store, each
 * acknowledged only after its fsync (WAL, synchronous=FULL).
 *
 *   bench_store DIR [N]
 *
 * DIR must be on the disk the server would use (not tmpfs: there fsync is
 * free and the figure means nothing).  Three runs over N changes each:
 *   put:      one node put per transaction (a heartbeat, a status update);
 *   put8:     the same from 8 threads at once: group commit puts the changes
 *             that arrive while one COMMIT is being fsynced into the next
 *             transaction, so changes/s exceeds fsyncs/s;
 *   batch100: plans of 100 allocations, one transaction each (allocs/s);
 *   get:      reads of random nodes (no transaction to commit);
 *   jobs:     what the server commits per batch job (bench_throughput), on
 *             a new file: 8 threads submit N/10 jobs (job, version and
 *             evaluation, one change each), a planner commits the placements
 *             of up to 64 at a time (allocation and evaluation update each)
 *             and a client status thread their allocations running, then
 *             complete, in batches of up to 64; bodies of the server's sizes.
 *             CPU ms per job (the whole process) and bytes written per job
 *             (WAL and checkpoints, /proc/self/io).
 *
 *   bench_store DIR N jobs   runs only the jobs mix, over N jobs.
 * Prints one line per run: name, count, seconds, per second.
 *
 * With HERD_BENCH_PG set to a libpq connection string, the same runs on
 * the PostgreSQL store in that database instead (emptied before each
 * store is opened: a database of its own, e.g. scripts/pg-test-cluster's;
 * DIR is then unused).  Bytes written per job are then the benchmark
 * process's (nearly none): PostgreSQL's own writes are the server's. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common/units.h"
#include "store/store.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, struct herd_err *err)
{
	fprintf(stderr, "bench_store: %s: %s (%d)\n", what, err->msg, err->code);
	exit(1);
}

#define PUT_THREADS 8

struct put_arg {
	struct store *s;
	int64_t n;
	int t;
};

static void *put_thread(void *p)
{
	struct put_arg *a = p;
	struct herd_err err = { 0 };
	char id[64];
	for (int64_t i = 0; i < a->n; i++) {
		snprintf(id, sizeof(id), "tnode-%d-%" PRId64, a->t, i % 100);
		json_t *o = json_pack("{s:s, s:I, s:s}", "id", id, "heartbeat", (json_int_t)i,
				      "status", "ready");
		if (store_put(a->s, STORE_NODE, o, NULL, &err))
			die("put", &err);
		json_decref(o);
	}
	return NULL;
}

/* --- jobs: the server's commits per batch job, as in bench_throughput --- */

/* A body of the size the server writes (allocations ~1.2 KiB, jobs ~0.9
 * KiB, evaluations ~0.3 KiB of JSON text). */
static char *filler(size_t n)
{
	char *s = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + i % 26);
	s[n] = '\0';
	return s;
}

#define MIX_SUBMITTERS 8
#define MIX_BATCH 64

/* A queue of job numbers handed from one stage to the next. */
struct mix_queue {
	pthread_mutex_t lock;
	pthread_cond_t more;
	int64_t *v;
	int64_t head, tail;
};

static void mq_push(struct mix_queue *q, int64_t j)
{
	pthread_mutex_lock(&q->lock);
	q->v[q->tail++] = j;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->lock);
}

/* Up to MIX_BATCH entries, waiting for at least one. */
static int mq_take(struct mix_queue *q, int64_t *out)
{
	int n = 0;
	pthread_mutex_lock(&q->lock);
	while (q->head == q->tail)
		pthread_cond_wait(&q->more, &q->lock);
	while (q->head < q->tail && n < MIX_BATCH)
		out[n++] = q->v[q->head++];
	pthread_mutex_unlock(&q->lock);
	return n;
}

struct mix {
	struct store *s;
	int64_t jobs;
	struct mix_queue evals, placed;
	char *job_pad, *alloc_pad, *eval_pad;
	uint64_t *alloc_index; /* the modify_index of each job's allocation */
};

static json_t *mix_eval(struct mix *m, int64_t j, const char *status)
{
	char id[64], job[64];
	snprintf(id, sizeof(id), "eval-%" PRId64, j);
	snprintf(job, sizeof(job), "tp-%" PRId64, j);
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "namespace", "default", "job_id",
			 job, "status", status, "pad", m->eval_pad);
}

static json_t *mix_alloc(struct mix *m, int64_t j, const char *status)
{
	char id[64], job[64];
	snprintf(id, sizeof(id), "alloc-%" PRId64, j);
	snprintf(job, sizeof(job), "tp-%" PRId64, j);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", id, "namespace", "default",
			 "job_id", job, "node_id", "node-0", "client_status", status, "pad",
			 m->alloc_pad);
}

struct mix_sub {
	struct mix *m;
	int t;
};

/* POST /v1/jobs: the job, its version and an evaluation, if the job is new. */
static void *mix_submit(void *p)
{
	struct mix_sub *a = p;
	struct mix *m = a->m;
	struct herd_err err = { 0 };
	char job[64];
	for (int64_t j = a->t; j < m->jobs; j += MIX_SUBMITTERS) {
		struct store_batch b = STORE_BATCH_INIT;
		snprintf(job, sizeof(job), "tp-%" PRId64, j);
		struct store_key k = { "default", job, 0 };
		json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "id", job, "namespace", "default",
				      "version", 0, "pad", m->job_pad);
		json_t *e = mix_eval(m, j, "pending");
		store_batch_put(&b, STORE_JOB, o);
		store_batch_put(&b, STORE_JOB_VERSION, o);
		store_batch_put(&b, STORE_EVAL, e);
		store_batch_require_index(&b, STORE_JOB, &k, 0);
		if (store_commit(m->s, &b, NULL, &err))
			die("submit", &err);
		store_batch_release(&b);
		json_decref(o);
		json_decref(e);
		mq_push(&m->evals, j);
	}
	return NULL;
}

static int mix_check(struct store *s, void *arg, struct herd_err *err)
{
	uint64_t idx;
	(void)arg;
	return store_node_allocs_index(s, "node-0", &idx, err);
}

/* The planner: up to MIX_BATCH evaluations, one allocation each, one commit. */
static void *mix_plan(void *p)
{
	struct mix *m = p;
	struct herd_err err = { 0 };
	int64_t got[MIX_BATCH], done = 0;
	char job[64];
	while (done < m->jobs) {
		int n = mq_take(&m->evals, got);
		struct store_batch b = STORE_BATCH_INIT;
		uint64_t idx = store_index(m->s);
		for (int i = 0; i < n; i++) {
			json_t *al = mix_alloc(m, got[i], "pending");
			json_t *e = mix_eval(m, got[i], "complete");
			snprintf(job, sizeof(job), "tp-%" PRId64, got[i]);
			store_batch_put(&b, STORE_ALLOC, al);
			store_batch_put(&b, STORE_EVAL, e);
			store_batch_require_job_allocs(&b, "default", job, idx);
			json_decref(al);
			json_decref(e);
		}
		store_batch_check(&b, mix_check, NULL);
		if (store_commit(m->s, &b, &idx, &err))
			die("plan", &err);
		store_batch_release(&b);
		for (int i = 0; i < n; i++) {
			m->alloc_index[got[i]] = idx;
			mq_push(&m->placed, got[i]);
		}
		done += n;
	}
	return NULL;
}

/* The client's status batches: each allocation running, then complete. */
static void *mix_status(void *p)
{
	struct mix *m = p;
	struct herd_err err = { 0 };
	int64_t got[MIX_BATCH], done = 0;
	char id[64];
	while (done < m->jobs) {
		int n = mq_take(&m->placed, got);
		for (int phase = 0; phase < 2; phase++) {
			struct store_batch b = STORE_BATCH_INIT;
			uint64_t idx;
			for (int i = 0; i < n; i++) {
				json_t *al = mix_alloc(m, got[i], phase ? "complete" : "running");
				snprintf(id, sizeof(id), "alloc-%" PRId64, got[i]);
				struct store_key k = { NULL, id, 0 };
				store_batch_put(&b, STORE_ALLOC, al);
				store_batch_require_index(&b, STORE_ALLOC, &k, m->alloc_index[got[i]]);
				json_decref(al);
			}
			if (store_commit(m->s, &b, &idx, &err))
				die("status", &err);
			store_batch_release(&b);
			for (int i = 0; i < n; i++)
				m->alloc_index[got[i]] = idx;
		}
		done += n;
	}
	return NULL;
}

/* Bytes this process wrote (write(2) and friends), from /proc/self/io. */
static unsigned long long written_bytes(void)
{
	unsigned long long v = 0;
	char key[32];
	FILE *f = fopen("/proc/self/io", "r");
	if (!f)
		return 0;
	while (fscanf(f, "%31s %llu", key, &v) == 2)
		if (!strcmp(key, "wchar:"))
			break;
	fclose(f);
	return v;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void run_jobs(struct store *s, int64_t jobs)
{
	struct mix m = { .s = s, .jobs = jobs };
	pthread_t sub[MIX_SUBMITTERS], plan, status;
	struct mix_sub sa[MIX_SUBMITTERS];
	struct mix_queue *qs[] = { &m.evals, &m.placed };

	for (int i = 0; i < 2; i++) {
		pthread_mutex_init(&qs[i]->lock, NULL);
		pthread_cond_init(&qs[i]->more, NULL);
		qs[i]->v = calloc((size_t)jobs + 1, sizeof(int64_t));
	}
	m.alloc_index = calloc((size_t)jobs, sizeof(uint64_t));
	m.job_pad = filler(800);
	m.alloc_pad = filler(1100);
	m.eval_pad = filler(200);
	double t0 = now_s(), c0 = cpu_s();
	unsigned long long w0 = written_bytes();
	pthread_create(&plan, NULL, mix_plan, &m);
	pthread_create(&status, NULL, mix_status, &m);
	for (int t = 0; t < MIX_SUBMITTERS; t++) {
		sa[t] = (struct mix_sub){ &m, t };
		pthread_create(&sub[t], NULL, mix_submit, &sa[t]);
	}
	for (int t = 0; t < MIX_SUBMITTERS; t++)
		pthread_join(sub[t], NULL);
	pthread_join(plan, NULL);
	pthread_join(status, NULL);
	double dt = now_s() - t0, cpu = cpu_s() - c0;
	unsigned long long w = written_bytes() - w0;
	printf("jobs      %8" PRId64 " jobs     %7.3f s  %9.0f jobs/s  %6.3f CPU ms/job  %5.1f KiB "
	       "written/job\n", jobs, dt, (double)jobs / dt, cpu * 1e3 / (double)jobs,
	       (double)w / 1024.0 / (double)jobs);
	for (int i = 0; i < 2; i++)
		free(qs[i]->v);
	free(m.alloc_index);
	free(m.job_pad);
	free(m.alloc_pad);
	free(m.eval_pad);
}

/* Opens a new store: an SQLite file at path, or the PostgreSQL database
 * of HERD_BENCH_PG, emptied first. */
static void open_store(const char *path, struct store **s)
{
	const char *pg = getenv("HERD_BENCH_PG");
	struct herd_err err = { 0 };
	if (pg && *pg) {
		PGconn *c = PQconnectdb(pg);
		PGresult *res = PQexec(c, "SET client_min_messages = warning;"
					  " DROP SCHEMA public CASCADE; CREATE SCHEMA public");
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			fprintf(stderr, "bench_store: emptying %s: %s", pg, PQerrorMessage(c));
			exit(1);
		}
		PQclear(res);
		PQfinish(c);
		if (store_open_postgres(pg, NULL, s, &err))
			die("open", &err);
		return;
	}
	if (store_open_sqlite(path, s, &err))
		die("open", &err);
}

static void remove_db(const char *path)
{
	for (const char *suffix = ""; suffix; suffix = *suffix == '\0' ? "-wal" :
						       (suffix[1] == 'w' ? "-shm" : NULL)) {
		char p[4200];
		snprintf(p, sizeof(p), "%s%s", path, suffix);
		unlink(p);
	}
}

int main(int argc, char **argv)
{
	struct herd_err err = { 0 };
	struct store *s;
	char path[4096], id[64];
	int64_t n = 2000;
	double t0;

	if (argc < 2 || (argc > 2 && parse_int64(argv[2], 1, 100000000, &n, &err)) ||
	    (argc > 3 && strcmp(argv[3], "jobs")) || argc > 4) {
		fprintf(stderr, "usage: bench_store DIR [N [jobs]]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/bench-store-%d-jobs.db", argv[1], (int)getpid());
	open_store(path, &s);
	run_jobs(s, argc > 3 ? n : (n / 10 > 0 ? n / 10 : 1));
	store_close(s);
	remove_db(path);
	if (argc > 3)
		return 0;
	snprintf(path, sizeof(path), "%s/bench-store-%d.db", argv[1], (int)getpid());
	open_store(path, &s);

	t0 = now_s();
	for (int64_t i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "node-%" PRId64, i % 1000);
		json_t *o = json_pack("{s:s, s:I, s:s}", "id", id, "heartbeat", (json_int_t)i,
				      "status", "ready");
		if (store_put(s, STORE_NODE, o, NULL, &err))
			die("put", &err);
		json_decref(o);
	}
	double dt = now_s() - t0;
	printf("put       %8" PRId64 " changes  %7.3f s  %9.0f commits/s\n", n, dt, (double)n / dt);

	{
		pthread_t th[PUT_THREADS];
		struct put_arg pa[PUT_THREADS];
		t0 = now_s();
		for (int t = 0; t < PUT_THREADS; t++) {
			pa[t] = (struct put_arg){ s, n / PUT_THREADS, t };
			pthread_create(&th[t], NULL, put_thread, &pa[t]);
		}
		for (int t = 0; t < PUT_THREADS; t++)
			pthread_join(th[t], NULL);
		dt = now_s() - t0;
		printf("put8      %8" PRId64 " changes  %7.3f s  %9.0f changes/s\n",
		       n / PUT_THREADS * PUT_THREADS, dt, (double)(n / PUT_THREADS * PUT_THREADS) / dt);
	}

	int64_t plans = n / 10 > 0 ? n / 10 : 1;
	t0 = now_s();
	for (int64_t p = 0; p < plans; p++) {
		struct store_batch b = STORE_BATCH_INIT;
		for (int a = 0; a < 100; a++) {
			snprintf(id, sizeof(id), "alloc-%" PRId64 "-%d", p, a);
			char node[32];
			snprintf(node, sizeof(node), "node-%d", a % 1000);
			json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "namespace",
					      "default", "job_id", "bench", "node_id", node,
					      "desired_status", "run");
			store_batch_put(&b, STORE_ALLOC, o);
			json_decref(o);
		}
		if (store_commit(s, &b, NULL, &err))
			die("commit", &err);
		store_batch_release(&b);
	}
	dt = now_s() - t0;
	printf("batch100  %8" PRId64 " plans    %7.3f s  %9.0f commits/s  %9.0f allocs/s\n", plans,
	       dt, (double)plans / dt, (double)plans * 100 / dt);

	unsigned seed = 1;
	t0 = now_s();
	for (int64_t i = 0; i < n; i++) {
		json_t *got;
		snprintf(id, sizeof(id), "node-%d", rand_r(&seed) % 1000 % (int)(n < 1000 ? n : 1000));
		struct store_key k = { NULL, id, 0 };
		if (store_get(s, STORE_NODE, &k, &got, &err))
			die("get", &err);
		json_decref(got);
	}
	dt = now_s() - t0;
	printf("get       %8" PRId64 " reads    %7.3f s  %9.0f reads/s\n", n, dt, (double)n / dt);
	store_close(s);
	remove_db(path);
	return 0;
}
