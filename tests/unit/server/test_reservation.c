/* Reservations with backfill (src/server/reservation.c; docs/teams.md,
 * "Reservations"): the estimate of an allocation's end, the backfill
 * rule, where a reservation goes, and a large job that starts once the
 * small ones in its way end while others wait, on a real server. */
#include "server_fx.h"

#include <pthread.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "server/reservation.h"
#include "server/server-int.h"

static const char *js(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static struct fx *fx_resv(int64_t reserve_after)
{
	struct server_config cfg = { .preempt_types = SERVER_PREEMPT_NONE,
				     .reserve_after_ns = reserve_after };
	return fx_new_cfg(&cfg);
}

/* A batch job in "default" of one group asking gpus whole GPUs, with a
 * group time_limit (NULL: none); type "batch" or "service". */
static void submit_limited(struct fx *f, const char *id, const char *type, int gpus,
			   const char *limit)
{
	char *t = xasprintf(
		"{\"job\": {\"id\": \"%s\", \"type\": \"%s\", \"priority\": 50,"
		" \"groups\": [{\"name\": \"g\", \"count\": 1%s%s%s, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"}, \"resources\":"
		" {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %d}]}}]}]}}",
		id, type, limit ? ", \"time_limit\": \"" : "", limit ? limit : "", limit ? "\"" : "", gpus);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
}

/* The reservation GET /v1/quotas/queue shows, or NULL (a new reference). */
static json_t *queue_resv(struct fx *f)
{
	json_t *q = fx_ok(f, "GET", "/v1/quotas/queue", NULL), *e, *r = NULL;
	size_t i;
	json_array_foreach(q, i, e)
		if (json_object_get(e, "reservation"))
			r = json_incref(json_object_get(e, "reservation"));
	json_decref(q);
	return r;
}

/* How many GPUs GET /v1/gpus marks reserved for job. */
static int gpus_reserved_for(struct fx *f, const char *job)
{
	json_t *g = fx_ok(f, "GET", "/v1/gpus", NULL), *e;
	size_t i;
	int n = 0;
	json_array_foreach(g, i, e)
		n += !strcmp(js(e, "reserved_for"), job);
	json_decref(g);
	return n;
}

/* An allocation's end: its reported start plus its limit, else now plus
 * the group's limit; never without a limit; never before now. */
static void test_alloc_end(void **state)
{
	json_t *a;
	(void)state;
	a = json_pack("{s:s}", "id", "x");
	assert_true(resv_alloc_end(a, 0, 1000) == RESV_NEVER);
	assert_int_equal(resv_alloc_end(a, 500, 1000), 1500);
	json_decref(a);
	a = json_pack("{s:{s:I, s:I, s:b}}", "time_limit", "limit", (json_int_t)600, "started_at",
		      (json_int_t)900, "reached", 0);
	assert_int_equal(resv_alloc_end(a, 0, 1000), 1500);  /* the report's limit wins */
	assert_int_equal(resv_alloc_end(a, 99, 1000), 1500);
	assert_int_equal(resv_alloc_end(a, 0, 2000), 2000); /* overran: ends now at the soonest */
	json_decref(a);
	a = json_pack("{s:{s:I, s:I, s:b}}", "time_limit", "limit", (json_int_t)600, "started_at",
		      (json_int_t)0, "reached", 0);
	assert_int_equal(resv_alloc_end(a, 0, 1000), 1600); /* not started: from now */
	json_decref(a);
}

/* The backfill rule: the reserved job itself; batch work that ends by the
 * estimated start; nothing else, and nothing when the start is unknown. */
static void test_backfill_rule(void **state)
{
	struct resv r = { .ns = "default", .job_id = "big", .node_id = "n1", .start = 10000 };
	(void)state;
	assert_true(resv_may_use(NULL, "default", "x", "service", 0, 0));
	assert_true(resv_may_use(&r, "default", "big", "service", 0, 9999999));
	assert_false(resv_may_use(&r, "other", "big", "batch", 0, 0));
	assert_true(resv_may_use(&r, "default", "s", "batch", 1000, 9000));
	assert_true(resv_may_use(&r, "default", "s", "batch", 1000, 0));
	assert_false(resv_may_use(&r, "default", "s", "batch", 1001, 9000));
	assert_false(resv_may_use(&r, "default", "s", "batch", 0, 0));       /* no limit */
	assert_false(resv_may_use(&r, "default", "s", "service", 100, 0));   /* not batch */
	assert_false(resv_may_use(&r, "default", "s", "batch", 1, 10001));   /* start passed */
	r.start = RESV_NEVER;
	assert_false(resv_may_use(&r, "default", "s", "batch", 1, 0));
	r.devs[0] = "GPU-1";
	r.ndevs = 1;
	assert_true(resv_has_device(&r, "n1", "GPU-1"));
	assert_false(resv_has_device(&r, "n2", "GPU-1"));
	assert_false(resv_has_device(&r, "n1", "GPU-2"));
}

/* The reservation goes where the GPUs are held by time-limited work, not
 * on the (earlier) node whose GPUs are held by work without a limit; it
 * shows in the queue and on the GPUs. */
static void test_estimate_prefers_time_limited(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	json_t *r, *n;
	int64_t before = now_ns();
	(void)state;
	node_add(f, "n1", 2, "H100");
	node_add(f, "n2", 2, "H100");
	submit_limited(f, "forever1", "batch", 1, NULL);
	fx_idle(f);
	submit_limited(f, "forever2", "batch", 1, NULL);
	fx_idle(f);
	submit_limited(f, "lim1", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "lim2", "batch", 1, "20m");
	fx_idle(f);
	/* the policy packs: whichever node took the unlimited pair, the
	 * limited pair is on the other */
	{
		json_t *a = live_allocs(f, "default", "lim1"), *b = live_allocs(f, "default", "forever1");
		assert_int_equal(json_array_size(a), 1);
		assert_int_equal(json_array_size(b), 1);
		assert_string_not_equal(js(json_array_get(a, 0), "node_id"), js(json_array_get(b, 0), "node_id"));
		json_decref(a);
		json_decref(b);
	}
	assert_null(queue_resv(f));
	submit_limited(f, "big", "batch", 2, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 0);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	{
		json_t *a = live_allocs(f, "default", "lim1");
		assert_string_equal(js(r, "node_id"), js(json_array_get(a, 0), "node_id"));
		json_decref(a);
	}
	assert_int_equal(json_array_size(json_object_get(r, "devices")), 2);
	/* held until the later of the two limits (not started: from now) */
	assert_true(fx_i(r, "estimated_start") >= before + 20 * 60 * SEC);
	assert_true(fx_i(r, "estimated_start") <= now_ns() + 20 * 60 * SEC);
	n = fx_get(f, "/v1/node/%s", js(r, "node_id"));
	{
		json_t *d;
		size_t i;
		int marked = 0;
		json_array_foreach(json_object_get(n, "devices"), i, d)
			marked += !strcmp(js(d, "reserved_for"), "big");
		assert_int_equal(marked, 2);
	}
	json_decref(n);
	assert_int_equal(gpus_reserved_for(f, "big"), 2);
	json_decref(r);
	/* stopping the job ends its reservation */
	json_decref(fx_ok(f, "DELETE", "/v1/job/big", NULL));
	fx_idle(f);
	assert_null(queue_resv(f));
	assert_int_equal(gpus_reserved_for(f, "big"), 0);
	fx_free(f);
}

/* Four 1-GPU jobs with a 10m limit fill a 4-GPU node; big (4 GPUs) and
 * then w1 (no limit) wait.  With reservations on, big gets the node: a
 * freed GPU goes to neither w1 nor a job whose limit ends after big's
 * estimated start, but to one whose limit ends before it (backfill); when
 * the small ones end, big starts ahead of w1.  Off: w1 takes the freed GPU
 * (big keeps waiting: small jobs start around it). */
static void run_stream(bool on)
{
	struct fx *f = fx_resv(on ? SERVER_RESERVE_NOW : SERVER_RESERVE_OFF);
	const char *small[] = { "s1", "s2", "s3", "s4" };
	node_add(f, "n1", 4, "H100");
	for (int i = 0; i < 4; i++) {
		submit_limited(f, small[i], "batch", 1, "10m");
		fx_idle(f);
		assert_int_equal(nlive(f, "default", small[i]), 1);
	}
	submit_limited(f, "big", "batch", 4, NULL);
	fx_idle(f);
	submit_limited(f, "w1", "batch", 1, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "w1") + nlive(f, "default", "big"), 0);
	finish(f, "default", "s1", "complete");
	fx_idle(f);
	if (!on) {
		assert_null(queue_resv(f));
		assert_int_equal(nlive(f, "default", "w1"), 1);
		assert_int_equal(nlive(f, "default", "big"), 0);
		fx_free(f);
		return;
	}
	assert_int_equal(gpus_reserved_for(f, "big"), 4);
	assert_int_equal(nlive(f, "default", "w1"), 0);
	/* a limit past big's start (10m from the small ones' placement) may
	 * not backfill; neither may a service */
	submit_limited(f, "long", "batch", 1, "1h");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "long"), 0);
	submit_limited(f, "svc", "service", 1, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "svc"), 0);
	{
		/* the explanation names the reservation (the service, of w1's
		 * queue shape, is not even tried) */
		json_t *e = last_eval(f, "default", "w1");
		char *text = json_dumps(json_object_get(e, "failed_placements"), 0);
		assert_non_null(text);
		assert_non_null(strstr(text, "reserved for a waiting job"));
		free(text);
		json_decref(e);
	}
	submit_limited(f, "short", "batch", 1, "1m");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "short"), 1);
	for (int i = 1; i < 4; i++) {
		finish(f, "default", small[i], "complete");
		fx_idle(f);
		assert_int_equal(nlive(f, "default", "big"), 0);
		assert_int_equal(nlive(f, "default", "w1") + nlive(f, "default", "long") +
				 nlive(f, "default", "svc"), 0);
	}
	finish(f, "default", "short", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 1);
	assert_int_equal(nlive(f, "default", "w1"), 0);
	/* big's reservation ended (the next waiting job may hold one now) */
	{
		json_t *r = queue_resv(f);
		assert_true(!r || strcmp(js(r, "job_id"), "big"));
		json_decref(r);
	}
	assert_int_equal(gpus_reserved_for(f, "big"), 0);
	/* big ends: the others start as before */
	finish(f, "default", "big", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "w1") + nlive(f, "default", "long") + nlive(f, "default", "svc"), 3);
	fx_free(f);
}

static void test_stream_reserved(void **state)
{
	(void)state;
	run_stream(true);
}

static void test_stream_without_reservations(void **state)
{
	(void)state;
	run_stream(false);
}

/* A reservation ends when its node is drained, and is made again
 * elsewhere. */
static void test_drain_moves_reservation(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	json_t *r;
	char path[64], *first;
	(void)state;
	node_add(f, "n1", 2, "H100");
	node_add(f, "n2", 2, "H100");
	for (int i = 0; i < 4; i++) {
		char id[8];
		snprintf(id, sizeof(id), "s%d", i);
		submit_limited(f, id, "batch", 1, "10m");
		fx_idle(f);
	}
	submit_limited(f, "big", "batch", 2, NULL);
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	first = xstrdup(js(r, "node_id"));
	json_decref(r);
	snprintf(path, sizeof(path), "/v1/node/%s/eligibility", first);
	json_decref(fx_ok(f, "POST", path, "{\"eligible\": false}"));
	fx_idle(f);
	/* any evaluation drops it; the next try of big makes a new one */
	submit_limited(f, "poke", "batch", 1, NULL);
	fx_idle(f);
	r = queue_resv(f);
	assert_true(!r || strcmp(js(r, "node_id"), first));
	json_decref(r);
	finish(f, "default", "s0", "complete");
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_not_equal(js(r, "node_id"), first);
	json_decref(r);
	free(first);
	fx_free(f);
}

/* Reservations live in memory: after a restart the queue is rebuilt as
 * the queued evaluations run again, and with it the reservation; it still
 * keeps the freed GPU from w1 and gives the node to big. */
static void test_restart_rebuilds(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	json_t *r;
	(void)state;
	node_add(f, "n1", 2, "H100");
	submit_limited(f, "s1", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "s2", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "big", "batch", 2, NULL);
	fx_idle(f);
	submit_limited(f, "w1", "batch", 1, NULL);
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	json_decref(r);
	server_stop(f->srv);
	f->srv = NULL;
	fx_start(f);
	fx_heartbeat(f, "n1");
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	json_decref(r);
	finish(f, "default", "s1", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "w1") + nlive(f, "default", "big"), 0);
	finish(f, "default", "s2", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 1);
	assert_int_equal(nlive(f, "default", "w1"), 0);
	fx_free(f);
}

/* A job of two 2-GPU instances on two 2-GPU nodes: the first instance
 * takes its reserved node when it frees, and the second gets a
 * reservation of its own on the other node. */
static void test_next_instance_reserves_again(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	json_t *r, *a;
	char *t, *first;
	(void)state;
	node_add(f, "n1", 2, "H100");
	node_add(f, "n2", 2, "H100");
	for (int i = 0; i < 4; i++) {
		char id[8];
		snprintf(id, sizeof(id), "s%d", i);
		submit_limited(f, id, "batch", 1, i < 2 ? "10m" : "20m");
		fx_idle(f);
	}
	t = xasprintf("{\"job\": {\"id\": \"two\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
		      " \"count\": 2, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		      " \"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"cpu\": 100,"
		      " \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 2}]}}]}]}}");
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	first = xstrdup(js(r, "node_id"));
	json_decref(r);
	/* the two 10m jobs share the first node reserved (the earliest end) */
	a = live_allocs(f, "default", "s0");
	assert_string_equal(js(json_array_get(a, 0), "node_id"), first);
	json_decref(a);
	finish(f, "default", "s0", "complete");
	finish(f, "default", "s1", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "two"), 1);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "two");
	assert_string_not_equal(js(r, "node_id"), first);
	json_decref(r);
	free(first);
	fx_free(f);
}

/* A job no node could ever take (4 GPUs on 2-GPU nodes), ahead of the
 * holder in its namespace, gets no reservation and does not take the
 * holder's away when it tries again. */
static void test_unplaceable_takes_nothing(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	json_t *r;
	(void)state;
	node_add(f, "n1", 2, "H100");
	submit_limited(f, "s1", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "s2", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "huge", "batch", 4, NULL);
	fx_idle(f);
	assert_null(queue_resv(f));
	submit_limited(f, "big", "batch", 2, NULL);
	fx_idle(f);
	submit_limited(f, "w1", "batch", 1, NULL);
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	json_decref(r);
	finish(f, "default", "s1", "complete");
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	json_decref(r);
	assert_int_equal(nlive(f, "default", "w1"), 0);
	finish(f, "default", "s2", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 1);
	assert_int_equal(nlive(f, "default", "huge") + nlive(f, "default", "w1"), 0);
	fx_free(f);
}

/* A reservation whose start was unknown (a job without a limit in the
 * way) is estimated again when that job ends: the start becomes the
 * limited job's end, and a short job may use the freed GPU meanwhile. */
static void test_unknown_start_estimated_again(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	json_t *r;
	(void)state;
	node_add(f, "n1", 2, "H100");
	submit_limited(f, "forever", "batch", 1, NULL);
	fx_idle(f);
	submit_limited(f, "lim", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "big", "batch", 2, NULL);
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	assert_true(json_is_null(json_object_get(r, "estimated_start")));
	json_decref(r);
	/* unknown start: nothing may backfill */
	finish(f, "default", "forever", "complete");
	fx_idle(f);
	r = queue_resv(f);
	assert_non_null(r);
	assert_string_equal(js(r, "job_id"), "big");
	assert_true(json_is_integer(json_object_get(r, "estimated_start")));
	assert_true(fx_i(r, "estimated_start") <= now_ns() + 10 * 60 * SEC);
	json_decref(r);
	submit_limited(f, "short", "batch", 1, "1m");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "short"), 1);
	finish(f, "default", "lim", "complete");
	finish(f, "default", "short", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 1);
	fx_free(f);
}

/* A blocking read waiting at the current index. */
struct blocking_read {
	struct fx *f;
	char path[160];
	json_t *body;
	long status;
	long long index;
	int64_t took; /* ns */
};

static void *blocking_read(void *arg)
{
	struct blocking_read *b = arg;
	int64_t t0 = mono_ns();
	b->body = fx_call_index(b->f, "GET", b->path, NULL, &b->status, &b->index);
	b->took = mono_ns() - t0;
	return NULL;
}

/* Reservations live in memory: one ending (or made) stores nothing, yet
 * blocking reads that show it answer again, at the same index. */
static void test_blocking_reads_wake(void **state)
{
	struct fx *f = fx_resv(SERVER_RESERVE_NOW);
	struct blocking_read gpus = { .f = f }, queue = { .f = f };
	pthread_t tg, tq;
	long long index;
	json_t *r;
	(void)state;
	node_add(f, "n1", 2, "H100");
	submit_limited(f, "s0", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "s1", "batch", 1, "10m");
	fx_idle(f);
	submit_limited(f, "big", "batch", 2, NULL);
	fx_idle(f);
	assert_int_equal(gpus_reserved_for(f, "big"), 2);
	json_decref(fx_call_index(f, "GET", "/v1/gpus", NULL, NULL, &index));
	snprintf(gpus.path, sizeof(gpus.path), "/v1/gpus?index=%lld&wait=30s", index);
	snprintf(queue.path, sizeof(queue.path), "/v1/quotas/queue?index=%lld&wait=30s", index);
	pthread_create(&tg, NULL, blocking_read, &gpus);
	pthread_create(&tq, NULL, blocking_read, &queue);
	usleep(300 * 1000); /* let them wait (a read that has not does not wait) */
	pthread_mutex_lock(&f->srv->fq.lock);
	resv_drop_locked(&f->srv->fq, "default", "big", RESV_END_NO_FIT);
	pthread_mutex_unlock(&f->srv->fq.lock);
	pthread_join(tg, NULL);
	pthread_join(tq, NULL);
	/* well before the 30 s wait, at the same index (nothing stored;
	 * without the wake they answer at the next commit, ~10 s on, when
	 * the node's heartbeat TTL passes) */
	assert_true(gpus.took < 20 * SEC && queue.took < 20 * SEC);
	assert_int_equal(gpus.status, 200);
	assert_int_equal(queue.status, 200);
	assert_int_equal(gpus.index, index);
	json_decref(gpus.body);
	json_decref(queue.body);
	assert_int_equal(gpus_reserved_for(f, "big"), 0);
	r = queue_resv(f);
	assert_null(r);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_alloc_end), cmocka_unit_test(test_backfill_rule),
	cmocka_unit_test(test_estimate_prefers_time_limited), cmocka_unit_test(test_stream_reserved),
	cmocka_unit_test(test_stream_without_reservations),
	cmocka_unit_test(test_drain_moves_reservation), cmocka_unit_test(test_restart_rebuilds),
	cmocka_unit_test(test_next_instance_reserves_again),
	cmocka_unit_test(test_unplaceable_takes_nothing),
	cmocka_unit_test(test_unknown_start_estimated_again),
	cmocka_unit_test(test_blocking_reads_wake))
