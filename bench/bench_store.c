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
 *   get:      reads of random nodes (no transaction to commit).
 * Prints one line per run: name, count, seconds, per second. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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
	fprintf(stderr, "bench_store: %s: %s\n", what, err->msg);
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

int main(int argc, char **argv)
{
	struct herd_err err = { 0 };
	struct store *s;
	char path[4096], id[64];
	int64_t n = 2000;
	double t0;

	if (argc < 2 || (argc > 2 && parse_int64(argv[2], 1, 100000000, &n, &err))) {
		fprintf(stderr, "usage: bench_store DIR [N]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/bench-store-%d.db", argv[1], (int)getpid());
	if (store_open_sqlite(path, &s, &err))
		die("open", &err);

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
	for (const char *suffix = ""; suffix; suffix = *suffix == '\0' ? "-wal" :
						       (suffix[1] == 'w' ? "-shm" : NULL)) {
		char p[4200];
		snprintf(p, sizeof(p), "%s%s", path, suffix);
		unlink(p);
	}
	return 0;
}
