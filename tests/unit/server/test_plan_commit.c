/* What the workers commit for a registration: the job with a pending
 * evaluation first, its plan after (updates, jobs that do not fit, jobs
 * that fit in part); registrations submitted at once fill a node exactly,
 * never beyond it (the plan applier's capacity re-check); and a blocked
 * evaluation planned again is written only when something changed
 * (worker.c). */
#include "server_fx.h"

#include <pthread.h>

/* A node with cpu_milli and memory_mib and no device. */
static void cpu_node(struct fx *f, const char *id, long cpu, long mem)
{
	char *body = NULL;
	assert_true(asprintf(&body,
			     "{\"node\": {\"id\": \"%s\", \"resources\": {\"cpu_milli\": %ld,"
			     " \"memory_mib\": %ld}, \"devices\": []}}",
			     id, cpu, mem) > 0);
	json_decref(fx_ok(f, "POST", "/v1/node/register", body));
	free(body);
}

/* A batch job of count instances asking cpu (MHz: thousandths of a core
 * for the engine) and mem MiB each. */
static char *cpu_job(const char *id, int count, int cpu, int mem)
{
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"%s\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
		" \"count\": %d, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"cpu\": %d, \"memory\": %d}}]}]}}",
		id, count, cpu, mem) > 0);
	return s;
}

static json_t *get_eval(struct fx *f, const char *id)
{
	return fx_get(f, "/v1/evaluation/%s", id);
}

/* The job commits with a pending evaluation, a worker plans after: an
 * update, a job that does not fit, a job that fits in part. */
static void test_register_then_plan(void **state)
{
	struct fx *f = fx_new();
	char *small = cpu_job("upd", 1, 100, 64), *bigger = cpu_job("upd", 1, 200, 64);
	char *huge = cpu_job("huge", 1, 100000, 64), *partial = cpu_job("partial", 3, 1500, 64);
	json_t *r, *al, *ev, *evs;
	(void)state;
	cpu_node(f, "n1", 4000, 8192);
	json_decref(fx_ok(f, "POST", "/v1/jobs", small));
	/* the update: its new allocation comes from a later commit */
	r = fx_ok(f, "POST", "/v1/jobs", bigger);
	fx_idle(f);
	al = fx_the_alloc(f, "upd");
	assert_true(fx_i(al, "create_index") > fx_i(r, "job_modify_index"));
	assert_int_equal(fx_i(al, "job_version"), 1);
	assert_int_equal(fx_i(json_object_get(al, "resources"), "cpu_milli"), 200);
	json_decref(al);
	json_decref(r);
	/* too big for any node: blocked, with the engine's explanation */
	r = fx_ok(f, "POST", "/v1/jobs", huge);
	fx_idle(f);
	ev = get_eval(f, fx_s(r, "eval_id"));
	assert_string_equal(fx_s(ev, "status"), "blocked");
	assert_non_null(json_object_get(json_object_get(ev, "failed_placements"), "g"));
	al = fx_job_allocs(f, "huge");
	assert_int_equal(json_array_size(al), 0);
	json_decref(al);
	json_decref(ev);
	json_decref(r);
	/* 3 x 1500 on 3800 free: two placed, one blocked */
	r = fx_ok(f, "POST", "/v1/jobs", partial);
	fx_idle(f);
	al = fx_running(f, "partial");
	assert_int_equal(json_array_size(al), 2);
	assert_true(fx_i(json_array_get(al, 0), "create_index") > fx_i(r, "job_modify_index"));
	json_decref(al);
	evs = fx_evals(f, "partial", "blocked");
	assert_int_equal(json_array_size(evs), 1);
	json_decref(evs);
	json_decref(r);
	free(small);
	free(bigger);
	free(huge);
	free(partial);
	fx_free(f);
}

struct submitter {
	pthread_t t;
	struct fx *f;
	int first, step, n;
	const char *prefix;
	int cpu, mem;
	bool mixed; /* also jobs with a dynamic port, and jobs of any datacenter */
	int failed; /* a POST that did not answer 200 */
};

/* Job i of a mixed submission: plain, with a dynamic port (planned on a
 * snapshot of its own), or of any datacenter (another node filter). */
static char *mixed_job(const char *id, int i, int cpu, int mem)
{
	static const char *const extra[] = {
		"", ", \"network\": {\"ports\": [{\"label\": \"http\"}]}", "" };
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"%s\", \"type\": \"batch\", \"datacenters\": [\"%s\"],"
		" \"groups\": [{\"name\": \"g\", \"count\": 1%s, \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": %d, \"memory\": %d}}]}]}}",
		id, i % 3 == 2 ? "*" : "dc1", extra[i % 3], cpu, mem) > 0);
	return s;
}

/* Submits jobs first, first + step, ... below n (no cmocka assert in a
 * thread: failures are counted and checked by the test). */
static void *submit_main(void *arg)
{
	struct submitter *s = arg;
	for (int i = s->first; i < s->n; i += s->step) {
		char id[64], *job;
		long st = 0;
		snprintf(id, sizeof(id), "%s-%d", s->prefix, i);
		job = s->mixed ? mixed_job(id, i, s->cpu, s->mem) : cpu_job(id, 1, s->cpu, s->mem);
		json_decref(fx_call(s->f, "POST", "/v1/jobs", job, &st));
		s->failed += st != 200;
		free(job);
	}
	return NULL;
}

/* What the allocations of the node that take capacity take, and how many. */
static void node_taken(struct fx *f, const char *node, long *cpu, long *mem, size_t *n)
{
	json_t *all = fx_ok(f, "GET", "/v1/allocations", NULL), *al;
	size_t i;
	*cpu = *mem = 0;
	*n = 0;
	json_array_foreach(all, i, al) {
		const char *cs = fx_s(al, "client_status");
		if (strcmp(fx_s(al, "node_id"), node) || strcmp(fx_s(al, "desired_status"), "run") ||
		    (strcmp(cs, "pending") && strcmp(cs, "running")))
			continue;
		*cpu += fx_i(json_object_get(al, "resources"), "cpu_milli");
		*mem += fx_i(json_object_get(al, "resources"), "memory_mib");
		(*n)++;
	}
	json_decref(all);
}

/* Submits n jobs from 8 threads at once. */
static void submit_at_once(struct fx *f, const char *prefix, int n, int cpu, int mem, bool mixed)
{
	struct submitter s[8];
	for (int i = 0; i < 8; i++) {
		s[i] = (struct submitter){ .f = f, .first = i, .step = 8, .n = n, .prefix = prefix,
					   .cpu = cpu, .mem = mem, .mixed = mixed };
		assert_int_equal(pthread_create(&s[i].t, NULL, submit_main, &s[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(s[i].t, NULL);
		assert_int_equal(s[i].failed, 0);
	}
}

/* Registrations submitted at once fill the node exactly, never beyond it,
 * in cpu and in memory. */
static void test_concurrent_registrations_fill_exactly(void **state)
{
	struct fx *f = fx_new();
	long cpu, mem;
	size_t n;
	(void)state;
	/* room for 10 jobs by cpu */
	cpu_node(f, "c", 1000, 100000);
	submit_at_once(f, "c", 40, 100, 64, false);
	fx_idle(f);
	node_taken(f, "c", &cpu, &mem, &n);
	assert_int_equal(cpu, 1000);
	assert_int_equal(n, 10);
	fx_free(f);

	/* room for 7 jobs by memory (and 20 by cpu) */
	f = fx_new();
	cpu_node(f, "m", 2000, 7 * 256 + 100);
	submit_at_once(f, "m", 40, 100, 256, false);
	fx_idle(f);
	node_taken(f, "m", &cpu, &mem, &n);
	assert_int_equal(mem, 7 * 256);
	assert_int_equal(n, 7);
	fx_free(f);
}

/* The same with jobs planned on snapshots of their own (a dynamic port)
 * and on another node filter among those that share the view's snapshot
 * (plan.c, view_snapshot_take): what each took counts for the others. */
static void test_mixed_registrations_fill_exactly(void **state)
{
	struct fx *f = fx_new();
	long cpu, mem;
	size_t n;
	(void)state;
	for (int round = 0; round < 3; round++) {
		char prefix[16];
		snprintf(prefix, sizeof(prefix), "x%d", round);
		/* room for 10 more jobs by cpu each round */
		cpu_node(f, prefix, 1000, 100000);
		submit_at_once(f, prefix, 40, 100, 64, true);
		fx_idle(f);
		node_taken(f, prefix, &cpu, &mem, &n);
		assert_int_equal(cpu, 1000);
		assert_int_equal(n, 10);
	}
	fx_free(f);
}

/* A blocked evaluation planned again after capacity changed elsewhere,
 * still blocked the same way, is not written again (worker.c,
 * plan_changes_nothing); once it places, it is. */
static void test_blocked_not_rewritten(void **state)
{
	struct fx *f = fx_new();
	char *big = cpu_job("big", 1, 1500, 64), *small = cpu_job("small", 1, 100, 64);
	json_t *r, *ev, *al;
	long long blocked_at;
	(void)state;
	cpu_node(f, "n1", 1000, 8192);
	r = fx_ok(f, "POST", "/v1/jobs", big);
	fx_idle(f);
	ev = get_eval(f, fx_s(r, "eval_id"));
	assert_string_equal(fx_s(ev, "status"), "blocked");
	blocked_at = fx_i(ev, "modify_index");
	json_decref(ev);
	/* capacity frees (an allocation ends): the blocked one is planned
	 * again and stays blocked as it was */
	json_decref(fx_ok(f, "POST", "/v1/jobs", small));
	fx_idle(f);
	al = fx_the_alloc(f, "small");
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	fx_idle(f);
	ev = get_eval(f, fx_s(r, "eval_id"));
	assert_string_equal(fx_s(ev, "status"), "blocked");
	assert_int_equal(fx_i(ev, "modify_index"), blocked_at);
	json_decref(ev);
	/* a node where it fits: placed, and the evaluation says so */
	cpu_node(f, "n2", 4000, 8192);
	fx_idle(f);
	ev = get_eval(f, fx_s(r, "eval_id"));
	assert_string_equal(fx_s(ev, "status"), "complete");
	assert_true(fx_i(ev, "modify_index") > blocked_at);
	json_decref(ev);
	al = fx_the_alloc(f, "big");
	assert_string_equal(fx_s(al, "node_id"), "n2");
	json_decref(al);
	json_decref(r);
	free(big);
	free(small);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_register_then_plan),
	cmocka_unit_test(test_concurrent_registrations_fill_exactly),
	cmocka_unit_test(test_mixed_registrations_fill_exactly),
	cmocka_unit_test(test_blocked_not_rewritten))
