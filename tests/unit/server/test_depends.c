/* Job dependencies (depends_on): a chain placed in order as each step
 * completes; the failed and dead conditions; a dependency that can never
 * hold stops the dependent and that propagates; unknown or invalid
 * dependencies refused; the index of dependents rebuilt after a restart
 * and pruned when a job is purged. */
#include "server_fx.h"

#include "server/depends.h"

/* A batch job of one instance depending on deps (the JSON array's text, or
 * NULL for none); failing jobs get no reschedule. */
static char *dep_job(const char *id, const char *deps)
{
	char *base = fx_job(id, "batch", 1, NULL,
			    ", \"reschedule\": {\"attempts\": 0, \"unlimited\": false}", NULL);
	char *s = NULL;
	const char *head = "{\"job\": {";
	assert_int_equal(strncmp(base, head, strlen(head)), 0);
	assert_true(asprintf(&s, "%s\"depends_on\": %s, %s", head, deps ? deps : "[]",
			     base + strlen(head)) > 0);
	free(base);
	return s;
}

static void submit_dep(struct fx *f, const char *id, const char *deps)
{
	char *t = dep_job(id, deps), *eval = fx_submit_text(f, t);
	free(eval);
	free(t);
	fx_idle(f);
}

/* Takes the job's only allocation to running and then to status. */
static void finish_job(struct fx *f, const char *id, const char *status)
{
	json_t *al = fx_the_alloc(f, id);
	fx_alloc_status(f, al, "running");
	fx_alloc_status(f, al, status);
	json_decref(al);
	fx_idle(f);
}

static size_t nallocs(struct fx *f, const char *id)
{
	json_t *a = fx_job_allocs(f, id);
	size_t n = json_array_size(a);
	json_decref(a);
	return n;
}

/* The job as readers see it. */
static json_t *job_of(struct fx *f, const char *id)
{
	return fx_get(f, "/v1/job/%s", id);
}

static void assert_job_status(struct fx *f, const char *id, const char *status)
{
	json_t *j = job_of(f, id);
	assert_string_equal(fx_s(j, "status"), status);
	json_decref(j);
}

/* The latest evaluation of job id (a new reference). */
static json_t *latest_eval(struct fx *f, const char *id)
{
	json_t *evs = fx_evals(f, id, NULL), *best = NULL, *e;
	size_t i;
	json_array_foreach(evs, i, e)
		if (!best || fx_i(e, "create_time") > fx_i(best, "create_time"))
			best = e;
	assert_non_null(best);
	json_incref(best);
	json_decref(evs);
	return best;
}

static void test_chain_in_order(void **state)
{
	struct fx *f = fx_new();
	json_t *j, *ev, *dep;
	(void)state;

	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "prep", NULL);
	submit_dep(f, "train", "[{\"job\": \"prep\"}]");
	submit_dep(f, "eval", "[{\"job\": \"train\", \"condition\": \"complete\"}]");
	assert_int_equal(nallocs(f, "prep"), 1);
	assert_int_equal(nallocs(f, "train"), 0);
	assert_int_equal(nallocs(f, "eval"), 0);

	/* the waiting job's evaluation and the job say why */
	ev = latest_eval(f, "train");
	assert_string_equal(fx_s(ev, "status"), "blocked");
	assert_string_equal(fx_s(ev, "status_description"),
			    "waiting for job prep (pending) to be complete");
	assert_string_equal(json_string_value(json_array_get(json_object_get(ev, "waiting_for"), 0)),
			    "prep");
	json_decref(ev);
	j = job_of(f, "train");
	dep = json_array_get(json_object_get(j, "dependencies"), 0);
	assert_string_equal(fx_s(dep, "job"), "prep");
	assert_string_equal(fx_s(dep, "condition"), "complete");
	assert_string_equal(fx_s(dep, "state"), "waiting");
	json_decref(j);
	/* a plan says so too, and so does one whose dependency can never be */
	{
		char *t = dep_job("train", "[{\"job\": \"prep\"}, {\"job\": \"eval\"}]");
		json_t *p = fx_ok(f, "POST", "/v1/job/train/plan", t);
		assert_string_equal(fx_s(json_object_get(json_object_get(p, "failed_placements"), "g"),
					 "explanation"),
				    "waiting for job prep (pending) to be complete; "
				    "waiting for job eval (pending) to be complete");
		assert_int_equal(fx_i(json_object_get(p, "changes"), "create"), 0);
		json_decref(p);
		free(t);
		t = dep_job("train", "[{\"job\": \"gone\"}]");
		p = fx_ok(f, "POST", "/v1/job/train/plan", t);
		assert_string_equal(fx_s(json_object_get(json_object_get(p, "failed_placements"), "g"),
					 "explanation"),
				    "dependency gone does not exist: will never be complete");
		json_decref(p);
		free(t);
		assert_int_equal(nallocs(f, "train"), 0);
	}

	/* running is not complete: still waiting */
	{
		json_t *al = fx_the_alloc(f, "prep");
		fx_alloc_status(f, al, "running");
		json_decref(al);
		fx_idle(f);
		assert_int_equal(nallocs(f, "train"), 0);
		/* readers see the dependency's state now */
		j = job_of(f, "train");
		dep = json_array_get(json_object_get(j, "dependencies"), 0);
		assert_string_equal(fx_s(dep, "job_status"), "running");
		assert_string_equal(fx_s(dep, "state"), "waiting");
		json_decref(j);
		al = fx_the_alloc(f, "prep");
		fx_alloc_status(f, al, "complete");
		json_decref(al);
		fx_idle(f);
	}
	assert_int_equal(nallocs(f, "train"), 1);
	assert_int_equal(nallocs(f, "eval"), 0);
	j = job_of(f, "train");
	assert_string_equal(fx_s(json_array_get(json_object_get(j, "dependencies"), 0), "state"), "met");
	json_decref(j);

	finish_job(f, "train", "complete");
	assert_int_equal(nallocs(f, "eval"), 1);
	finish_job(f, "eval", "complete");
	assert_job_status(f, "eval", "dead");
	fx_free(f);
}

static void test_failed_and_dead_conditions(void **state)
{
	struct fx *f = fx_new();
	json_t *j;
	(void)state;

	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "a", NULL);
	submit_dep(f, "on-fail", "[{\"job\": \"a\", \"condition\": \"failed\"}]");
	submit_dep(f, "on-end", "[{\"job\": \"a\", \"condition\": \"dead\"}]");
	submit_dep(f, "on-ok", "[{\"job\": \"a\"}]");
	submit_dep(f, "after-ok", "[{\"job\": \"on-ok\"}]");
	assert_int_equal(nallocs(f, "on-fail") + nallocs(f, "on-end") + nallocs(f, "on-ok"), 0);

	finish_job(f, "a", "failed");
	assert_int_equal(nallocs(f, "on-fail"), 1);
	assert_int_equal(nallocs(f, "on-end"), 1);
	/* a can never complete: on-ok is dead, and so is what waits for it */
	assert_int_equal(nallocs(f, "on-ok"), 0);
	j = job_of(f, "on-ok");
	assert_string_equal(fx_s(j, "status"), "dead");
	assert_string_equal(fx_s(j, "stop_reason"), "dependency a failed: will never be complete");
	assert_string_equal(fx_s(json_array_get(json_object_get(j, "dependencies"), 0), "state"),
			    "never");
	json_decref(j);
	j = job_of(f, "after-ok");
	assert_string_equal(fx_s(j, "status"), "dead");
	assert_string_equal(fx_s(j, "stop_reason"),
			    "dependency on-ok was stopped: will never be complete");
	json_decref(j);
	assert_int_equal(nallocs(f, "after-ok"), 0);
	fx_free(f);
}

static void test_failed_condition_never(void **state)
{
	struct fx *f = fx_new();
	json_t *j;
	(void)state;

	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "ok", NULL);
	submit_dep(f, "cleanup", "[{\"job\": \"ok\", \"condition\": \"failed\"}]");
	finish_job(f, "ok", "complete");
	j = job_of(f, "cleanup");
	assert_string_equal(fx_s(j, "status"), "dead");
	assert_string_equal(fx_s(j, "stop_reason"), "dependency ok completed: will never be failed");
	json_decref(j);
	assert_int_equal(nallocs(f, "cleanup"), 0);

	/* the stopped job is a job like another: reverted (a new version from
	 * a stored one), it is judged again, and stopped again */
	json_decref(fx_ok(f, "POST", "/v1/job/cleanup/revert", "{\"version\": 0}"));
	fx_idle(f);
	j = job_of(f, "cleanup");
	assert_int_equal(fx_i(j, "version"), 1);
	assert_string_equal(fx_s(j, "stop_reason"), "dependency ok completed: will never be failed");
	json_decref(j);
	/* registered again with a condition that holds, it runs */
	submit_dep(f, "cleanup", "[{\"job\": \"ok\", \"condition\": \"dead\"}]");
	j = job_of(f, "cleanup");
	assert_null(json_object_get(j, "stop_reason"));
	assert_false(json_is_true(json_object_get(j, "stop")));
	json_decref(j);
	assert_int_equal(nallocs(f, "cleanup"), 1);
	fx_free(f);
}

/* A dependency stopped or purged while its dependent waits. */
static void test_stopped_and_purged(void **state)
{
	struct fx *f = fx_new();
	json_t *j;
	(void)state;

	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "s", NULL);
	submit_dep(f, "p", NULL);
	submit_dep(f, "after-s", "[{\"job\": \"s\"}]");
	submit_dep(f, "after-p", "[{\"job\": \"p\", \"condition\": \"complete\"}]");
	submit_dep(f, "end-p", "[{\"job\": \"p\", \"condition\": \"dead\"}]");
	json_decref(fx_ok(f, "DELETE", "/v1/job/s", NULL));
	json_decref(fx_ok(f, "DELETE", "/v1/job/p?purge=true", NULL));
	fx_idle(f);
	j = job_of(f, "after-s");
	assert_string_equal(fx_s(j, "stop_reason"), "dependency s was stopped: will never be complete");
	json_decref(j);
	j = job_of(f, "after-p");
	assert_string_equal(fx_s(j, "stop_reason"), "dependency p does not exist: will never be complete");
	json_decref(j);
	/* dead holds whatever the end */
	assert_int_equal(nallocs(f, "end-p"), 1);
	fx_free(f);
}

/* Whether the body's text holds s. */
static bool body_has(const json_t *r, const char *s)
{
	char *text = json_dumps(r, 0);
	bool has = text && strstr(text, s);
	free(text);
	return has;
}

static void test_refused(void **state)
{
	struct fx *f = fx_new();
	long st = 0;
	json_t *r;
	char *t;
	(void)state;

	t = dep_job("orphan", "[{\"job\": \"nope\"}]");
	r = fx_call(f, "POST", "/v1/jobs", t, &st);
	free(t);
	assert_int_equal(st, 400);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "dependency_not_found");
	assert_string_equal(fx_s(json_object_get(r, "error"), "message"),
			    "job orphan depends on job nope, which does not exist in namespace default");
	json_decref(r);
	assert_int_equal(fx_status(f, "GET", "/v1/job/orphan", NULL), 404);

	/* the spec's own rules */
	t = dep_job("self", "[{\"job\": \"self\"}]");
	r = fx_call(f, "POST", "/v1/jobs", t, &st);
	free(t);
	assert_int_equal(st, 400);
	assert_true(body_has(r, "depends_on[0]: a job cannot depend on itself"));
	json_decref(r);
	submit_dep(f, "x", NULL);
	t = dep_job("bad", "[{\"job\": \"x\", \"condition\": \"finished\"}]");
	r = fx_call(f, "POST", "/v1/jobs", t, &st);
	free(t);
	assert_int_equal(st, 400);
	assert_true(body_has(r, "condition"));
	json_decref(r);
	t = dep_job("twice", "[{\"job\": \"x\"}, {\"job\": \"x\", \"condition\": \"dead\"}]");
	assert_int_equal(fx_status(f, "POST", "/v1/jobs", t), 400);
	free(t);
	assert_int_equal(fx_status(f, "GET", "/v1/job/bad", NULL), 404);

	/* a cycle would wait forever: x -> y -> z, then x naming z */
	submit_dep(f, "y", "[{\"job\": \"x\"}]");
	submit_dep(f, "z", "[{\"job\": \"y\", \"condition\": \"dead\"}]");
	t = dep_job("x", "[{\"job\": \"z\"}]");
	r = fx_call(f, "POST", "/v1/jobs", t, &st);
	free(t);
	assert_int_equal(st, 400);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "dependency_cycle");
	assert_string_equal(fx_s(json_object_get(r, "error"), "message"),
			    "job x would wait for itself: x -> z -> y -> x");
	json_decref(r);
	r = job_of(f, "x");
	assert_int_equal(json_array_size(json_object_get(r, "depends_on")), 0);
	json_decref(r);
	fx_free(f);
}

/* The index of dependents is memory: a restart rebuilds it from the store. */
static void test_restart(void **state)
{
	struct fx *f = fx_new();
	json_t *ev;
	(void)state;

	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "first", NULL);
	submit_dep(f, "second", "[{\"job\": \"first\"}]");
	assert_int_equal(nallocs(f, "second"), 0);
	server_stop(f->srv);
	f->srv = NULL;
	fx_start(f);
	fx_heartbeat(f, "n1");
	fx_idle(f);
	assert_int_equal(nallocs(f, "second"), 0);
	finish_job(f, "first", "complete");
	assert_int_equal(nallocs(f, "second"), 1);
	/* one waiting evaluation stays: the one parked before was taken again */
	{
		json_t *blocked = fx_evals(f, "second", "blocked");
		assert_int_equal(json_array_size(blocked), 0);
		json_decref(blocked);
	}
	ev = latest_eval(f, "second");
	assert_string_equal(fx_s(ev, "status"), "complete");
	json_decref(ev);
	fx_free(f);
}

/* The garbage collector keeps a job that another waits for: purged, it
 * could never complete. */
static void test_gc_keeps_awaited(void **state)
{
	struct server_config cfg = { 0 };
	struct fx *f;
	json_t *j;
	(void)state;

	cfg.job_gc_threshold_ns = 1;
	cfg.eval_gc_threshold_ns = 1;
	f = fx_new_cfg(&cfg);
	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "early", NULL);
	submit_dep(f, "late", NULL);
	submit_dep(f, "both", "[{\"job\": \"early\"}, {\"job\": \"late\"}]");
	submit_dep(f, "done", NULL);
	finish_job(f, "early", "complete");
	finish_job(f, "done", "complete");
	usleep(2000);
	json_decref(fx_ok(f, "POST", "/v1/system/gc", NULL));
	/* what nothing waits for goes; what both waits for stays */
	assert_int_equal(fx_status(f, "GET", "/v1/job/done", NULL), 404);
	assert_int_equal(fx_status(f, "GET", "/v1/job/early", NULL), 200);
	finish_job(f, "late", "complete");
	assert_int_equal(nallocs(f, "both"), 1);
	j = job_of(f, "both");
	assert_null(json_object_get(j, "stop_reason"));
	json_decref(j);

	/* a waiting job stopped by its user waits no more: its parked
	 * evaluation is canceled and holds nothing back */
	submit_dep(f, "held", NULL);
	submit_dep(f, "quitter", "[{\"job\": \"held\"}]");
	json_decref(fx_ok(f, "DELETE", "/v1/job/quitter", NULL));
	fx_idle(f);
	j = fx_evals(f, "quitter", "canceled");
	assert_int_equal(json_array_size(j), 1);
	json_decref(j);
	j = fx_evals(f, "quitter", "blocked");
	assert_int_equal(json_array_size(j), 0);
	json_decref(j);
	finish_job(f, "held", "complete");
	usleep(2000);
	json_decref(fx_ok(f, "POST", "/v1/system/gc", NULL));
	assert_int_equal(fx_status(f, "GET", "/v1/job/held", NULL), 404);
	assert_int_equal(fx_status(f, "GET", "/v1/job/early", NULL), 404);
	fx_free(f);
}

/* The index of dependents loses a purged job's edges, whether its user or
 * the garbage collector purged it; a job registered again after its purge
 * gets them again; a restart rebuilds the index from the stored jobs. */
static void test_purge_prunes_index(void **state)
{
	struct server_config cfg = { 0 };
	struct fx *f;
	(void)state;

	cfg.job_gc_threshold_ns = 1;
	cfg.eval_gc_threshold_ns = 1;
	f = fx_new_cfg(&cfg);
	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "base", NULL);
	submit_dep(f, "user", "[{\"job\": \"base\"}]");
	submit_dep(f, "other", "[{\"job\": \"base\"}]");
	assert_int_equal(depends_edges(f->srv), 2);
	json_decref(fx_ok(f, "DELETE", "/v1/job/user?purge=true", NULL));
	fx_idle(f);
	assert_int_equal(depends_edges(f->srv), 1);
	/* stopped is not purged: the edge stays */
	json_decref(fx_ok(f, "DELETE", "/v1/job/other", NULL));
	fx_idle(f);
	assert_int_equal(depends_edges(f->srv), 1);
	/* registered again: its edge is back */
	submit_dep(f, "user", "[{\"job\": \"base\"}]");
	assert_int_equal(depends_edges(f->srv), 2);
	/* the garbage collector purges both once base ended and nothing
	 * waits for it */
	finish_job(f, "base", "complete");
	finish_job(f, "user", "complete");
	usleep(2000);
	json_decref(fx_ok(f, "POST", "/v1/system/gc", NULL));
	assert_int_equal(fx_status(f, "GET", "/v1/job/user", NULL), 404);
	assert_int_equal(fx_status(f, "GET", "/v1/job/other", NULL), 404);
	assert_int_equal(depends_edges(f->srv), 0);
	/* a restart rebuilds it from what is stored */
	submit_dep(f, "base2", NULL);
	submit_dep(f, "user2", "[{\"job\": \"base2\"}]");
	server_stop(f->srv);
	f->srv = NULL;
	fx_start(f);
	assert_int_equal(depends_edges(f->srv), 1);
	fx_free(f);
}

/* A service may wait for a batch job (a model served once trained). */
static void test_service_waits(void **state)
{
	struct fx *f = fx_new();
	char *base, *t = NULL;
	(void)state;

	fx_node(f, "n1", 1, "H100", "exclusive", NULL);
	submit_dep(f, "trainer", NULL);
	base = fx_job("server", "service", 1, NULL, NULL, NULL);
	assert_true(asprintf(&t, "{\"job\": {\"depends_on\": [{\"job\": \"trainer\"}], %s",
			     base + strlen("{\"job\": {")) > 0);
	free(fx_submit_text(f, t));
	free(t);
	free(base);
	fx_idle(f);
	assert_int_equal(nallocs(f, "server"), 0);
	finish_job(f, "trainer", "complete");
	assert_int_equal(nallocs(f, "server"), 1);
	assert_job_status(f, "server", "pending");
	fx_free(f);
}

fx_main(cmocka_unit_test(test_chain_in_order), cmocka_unit_test(test_failed_and_dead_conditions),
	cmocka_unit_test(test_failed_condition_never), cmocka_unit_test(test_stopped_and_purged),
	cmocka_unit_test(test_refused), cmocka_unit_test(test_restart),
	cmocka_unit_test(test_service_waits), cmocka_unit_test(test_gc_keeps_awaited),
	cmocka_unit_test(test_purge_prunes_index))
