/* Rolling updates (src/server/deployment.c): max_parallel respected, no
 * replacement before the previous batch is healthy, an unhealthy
 * allocation fails the deployment (auto_revert registers the last stable
 * version again), a newer version cancels a running deployment,
 * max_parallel 0 replaces all at once, an unchanged job and a batch job
 * make no deployment, healthy_deadline, and POST /v1/deployment/:id/fail.
 * Canaries: placed beside the old allocations, promoted by POST
 * /v1/deployment/:id/promote (refused while not healthy) or auto_promote,
 * then the rest rolls; a failed canary, a manual fail and a newer version
 * stop them and leave the old allocations running.
 * Allocations turn "running" through the status route as an agent would
 * report them (no task states: ready once running). */
#include "server_fx.h"

#define ROLL ", \"update\": {\"max_parallel\": 1, \"min_healthy_time\": \"%s\"," \
	     " \"healthy_deadline\": \"1m\", \"progress_deadline\": \"5m\"%s}"

/* Submits service job id, count 3, rolling one at a time, running cmd;
 * extra goes into the update block.  Returns the eval id (caller frees). */
static char *submit_roll_mht(struct fx *f, const char *id, const char *cmd, const char *mht,
			     const char *extra)
{
	char group[512], *t, *eval;
	snprintf(group, sizeof(group), ROLL, mht, extra ? extra : "");
	t = fx_job(id, "service", 3, NULL, group, cmd);
	eval = fx_submit_text(f, t);
	free(t);
	fx_idle(f);
	return eval;
}

static char *submit_roll(struct fx *f, const char *id, const char *cmd, const char *extra)
{
	return submit_roll_mht(f, id, cmd, "0s", extra);
}

/* The job's latest deployment (a new reference; json null when none). */
static json_t *deployment(struct fx *f, const char *id)
{
	return fx_get(f, "/v1/job/%s/deployment", id);
}

static json_t *dgroup(const json_t *d)
{
	return json_object_get(json_object_get(d, "groups"), "g");
}

/* The desired-run allocations of job id at job version v (a new array). */
static json_t *at_version(struct fx *f, const char *id, long long v)
{
	json_t *all = fx_running(f, id), *out = json_array(), *a;
	size_t i;
	json_array_foreach(all, i, a)
		if (fx_i(a, "job_version") == v)
			json_array_append(out, a);
	json_decref(all);
	return out;
}

/* Reports every pending desired-run allocation of job id running. */
static size_t run_pending(struct fx *f, const char *id)
{
	json_t *all = fx_running(f, id), *a;
	size_t i, n = 0;
	json_array_foreach(all, i, a)
		if (!strcmp(fx_s(a, "client_status"), "pending")) {
			fx_alloc_status(f, a, "running");
			n++;
		}
	json_decref(all);
	fx_idle(f);
	return n;
}

static bool version_stable(struct fx *f, const char *id, long long v)
{
	json_t *vs = fx_get(f, "/v1/job/%s/versions", id), *x;
	bool stable = false;
	size_t i;
	json_array_foreach(vs, i, x)
		if (fx_i(x, "version") == v)
			stable = json_is_true(json_object_get(x, "stable"));
	json_decref(vs);
	return stable;
}

/* Version 0 of id placed, running and its deployment successful. */
static void deploy_first(struct fx *f, const char *id, const char *extra)
{
	json_t *d;
	free(submit_roll(f, id, "/bin/true", extra));
	d = deployment(f, id);
	assert_string_equal(fx_s(d, "status"), "running");
	assert_int_equal(fx_i(dgroup(d), "placed_allocs"), 3);
	json_decref(d);
	assert_int_equal(run_pending(f, id), 3);
	d = deployment(f, id);
	assert_string_equal(fx_s(d, "status"), "successful");
	assert_int_equal(fx_i(dgroup(d), "healthy_allocs"), 3);
	json_decref(d);
	assert_true(version_stable(f, id, 0));
}

/* Waits (at most 10 s) until job id has n desired-run allocations of
 * version v. */
static void wait_at_version(struct fx *f, const char *id, long long v, size_t n)
{
	json_t *a = NULL;
	for (int i = 0; i < 100; i++) {
		json_decref(a);
		fx_idle(f);
		a = at_version(f, id, v);
		if (json_array_size(a) == n)
			break;
		usleep(100000);
	}
	assert_int_equal(json_array_size(a), n);
	json_decref(a);
}

static void test_one_at_a_time(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *n, *old;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", NULL);
	free(submit_roll_mht(f, "w", "/bin/sleep", "1s", NULL));
	for (int step = 1; step <= 3; step++) {
		n = at_version(f, "w", 1);
		old = at_version(f, "w", 0);
		assert_int_equal(json_array_size(n), step);
		assert_int_equal(json_array_size(old), 3 - step);
		d = deployment(f, "w");
		assert_int_equal(fx_i(d, "job_version"), 1);
		assert_string_equal(fx_s(d, "status"), "running");
		assert_int_equal(fx_i(dgroup(d), "healthy_allocs"), step - 1);
		assert_string_equal(fx_s(json_array_get(n, 0), "deployment_id"), fx_s(d, "id"));
		json_decref(d);
		json_decref(n);
		json_decref(old);
		/* running, but not min_healthy_time yet: nothing more is
		 * replaced by the evaluation its report made */
		assert_int_equal(run_pending(f, "w"), 1);
		n = at_version(f, "w", 1);
		assert_int_equal(json_array_size(n), step);
		json_decref(n);
		/* healthy a second later (a follow-up evaluation): the next */
		if (step < 3)
			wait_at_version(f, "w", 1, (size_t)step + 1);
	}
	for (int i = 0; i < 100; i++) {
		d = deployment(f, "w");
		if (!strcmp(fx_s(d, "status"), "successful"))
			break;
		json_decref(d);
		d = NULL;
		usleep(100000);
	}
	assert_non_null(d);
	assert_int_equal(fx_i(dgroup(d), "healthy_allocs"), 3);
	assert_int_equal(fx_i(dgroup(d), "unhealthy_allocs"), 0);
	json_decref(d);
	assert_true(version_stable(f, "w", 1));
	fx_free(f);
}

static void test_max_parallel_two(void **state)
{
	struct fx *f = fx_new();
	json_t *n;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	free(submit_roll(f, "w", "/bin/true", NULL));
	run_pending(f, "w");
	/* max_parallel 2 of the group over the job-wide 1 is not needed:
	 * the group's own block says 2 */
	char *t = fx_job("w", "service", 3, NULL,
			 ", \"update\": {\"max_parallel\": 2, \"min_healthy_time\": \"0s\"}",
			 "/bin/sleep");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	n = at_version(f, "w", 1);
	assert_int_equal(json_array_size(n), 2);
	json_decref(n);
	run_pending(f, "w");
	n = at_version(f, "w", 1);
	assert_int_equal(json_array_size(n), 3);
	json_decref(n);
	fx_free(f);
}

static void test_unhealthy_fails_and_reverts(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *n, *job, *all, *a;
	size_t i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", ", \"auto_revert\": true");
	free(submit_roll(f, "w", "/bin/false", ", \"auto_revert\": true"));
	n = at_version(f, "w", 1);
	assert_int_equal(json_array_size(n), 1);
	fx_alloc_status(f, json_array_get(n, 0), "failed");
	json_decref(n);
	fx_idle(f);
	/* failed: version 2 registered from version 0 */
	job = fx_get(f, "/v1/job/%s", "w");
	assert_int_equal(fx_i(job, "version"), 2);
	json_decref(job);
	all = fx_get(f, "/v1/job/%s/deployments", "w");
	d = NULL;
	json_array_foreach(all, i, a)
		if (fx_i(a, "job_version") == 1)
			d = a;
	assert_non_null(d);
	assert_string_equal(fx_s(d, "status"), "failed");
	assert_non_null(strstr(fx_s(d, "status_description"), "rolling back to job version 0"));
	assert_int_equal(fx_i(dgroup(d), "unhealthy_allocs"), 1);
	json_decref(all);
	/* version 2 (= 0): the two old ones kept in place, the failed slot
	 * placed again; its deployment ends once that one is healthy */
	n = at_version(f, "w", 2);
	assert_int_equal(json_array_size(n), 3);
	json_decref(n);
	run_pending(f, "w");
	d = deployment(f, "w");
	assert_int_equal(fx_i(d, "job_version"), 2);
	assert_string_equal(fx_s(d, "status"), "successful");
	json_decref(d);
	assert_false(version_stable(f, "w", 1));
	fx_free(f);
}

/* A revert whose own deployment fails is not reverted again (it would
 * loop between the same two specs). */
static void test_failed_revert_does_not_loop(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *n, *job;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", ", \"auto_revert\": true");
	free(submit_roll(f, "w", "/bin/false", ", \"auto_revert\": true"));
	n = at_version(f, "w", 1);
	fx_alloc_status(f, json_array_get(n, 0), "failed");
	json_decref(n);
	fx_idle(f);
	/* version 2 (= 0) places the failed slot again: that fails too */
	n = at_version(f, "w", 2);
	for (size_t i = 0; i < json_array_size(n); i++)
		if (!strcmp(fx_s(json_array_get(n, i), "client_status"), "pending"))
			fx_alloc_status(f, json_array_get(n, i), "failed");
	json_decref(n);
	fx_idle(f);
	d = deployment(f, "w");
	assert_int_equal(fx_i(d, "job_version"), 2);
	assert_string_equal(fx_s(d, "status"), "failed");
	assert_non_null(strstr(fx_s(d, "status_description"), "not reverted"));
	json_decref(d);
	job = fx_get(f, "/v1/job/%s", "w");
	assert_int_equal(fx_i(job, "version"), 2);
	json_decref(job);
	fx_free(f);
}

static void test_unhealthy_without_revert_stays(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *n, *job;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", NULL);
	free(submit_roll(f, "w", "/bin/false", NULL));
	n = at_version(f, "w", 1);
	fx_alloc_status(f, json_array_get(n, 0), "failed");
	json_decref(n);
	fx_idle(f);
	d = deployment(f, "w");
	assert_string_equal(fx_s(d, "status"), "failed");
	assert_string_equal(fx_s(d, "status_description"), "Failed due to unhealthy allocations");
	json_decref(d);
	job = fx_get(f, "/v1/job/%s", "w");
	assert_int_equal(fx_i(job, "version"), 1);
	json_decref(job);
	/* the old ones that were not replaced keep running, and stay */
	n = at_version(f, "w", 0);
	assert_int_equal(json_array_size(n), 2);
	json_decref(n);
	fx_free(f);
}

static void test_newer_version_cancels(void **state)
{
	struct fx *f = fx_new();
	json_t *all, *a;
	size_t i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", NULL);
	free(submit_roll(f, "w", "/bin/sleep", NULL));
	free(submit_roll(f, "w", "/bin/echo", NULL));
	all = fx_get(f, "/v1/job/%s/deployments", "w");
	assert_int_equal(json_array_size(all), 3);
	json_array_foreach(all, i, a) {
		const char *want = fx_i(a, "job_version") == 2 ? "running"
				 : fx_i(a, "job_version") == 1 ? "cancelled" : "successful";
		assert_string_equal(fx_s(a, "status"), want);
	}
	/* newest first */
	assert_int_equal(fx_i(json_array_get(all, 0), "job_version"), 2);
	json_decref(all);
	/* stopping the job cancels the one running */
	json_decref(fx_ok(f, "DELETE", "/v1/job/w", NULL));
	fx_idle(f);
	json_t *d = deployment(f, "w");
	assert_int_equal(fx_i(d, "job_version"), 2);
	assert_string_equal(fx_s(d, "status"), "cancelled");
	assert_string_equal(fx_s(d, "status_description"), "Cancelled because job is stopped");
	json_decref(d);
	fx_free(f);
}

/* The deployment of job id's version v (a new reference; NULL: none). */
static json_t *deployment_of(struct fx *f, const char *id, long long v)
{
	json_t *all = fx_get(f, "/v1/job/%s/deployments", id), *a, *out = NULL;
	size_t i;
	json_array_foreach(all, i, a)
		if (fx_i(a, "job_version") == v)
			out = json_incref(a);
	json_decref(all);
	return out;
}

/* A newer version that makes no deployment of its own (a change applied
 * in place, or no update block any more) cancels the older one still
 * running: it never goes on, nor fails and reverts over the new version. */
static void test_newer_version_without_deployment_cancels(void **state)
{
	static const char *const ids[] = { "w", "x" };
	struct fx *f = fx_new();
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	for (int k = 0; k < 2; k++) {
		char group[512], *t, *t2;
		json_t *d, *job;
		deploy_first(f, ids[k], ", \"auto_revert\": true");
		snprintf(group, sizeof(group), ROLL, "0s", ", \"auto_revert\": true");
		/* "w": one instance, replaced at once, so that the next
		 * version finds nothing to replace */
		t = fx_job(ids[k], "service", k ? 3 : 1, NULL, group, "/bin/sleep");
		free(fx_submit_text(f, t));
		fx_idle(f);
		d = deployment_of(f, ids[k], 1);
		assert_string_equal(fx_s(d, "status"), "running");
		json_decref(d);
		if (k == 0) { /* the same with a new priority: in place */
			assert_true(asprintf(&t2, "{\"job\": {\"priority\": 70, %s",
					     t + strlen("{\"job\": {")) > 0);
		} else { /* no update block */
			t2 = fx_job(ids[k], "service", 3, NULL, NULL, "/bin/sleep");
		}
		free(t);
		free(fx_submit_text(f, t2));
		free(t2);
		fx_idle(f);
		job = fx_get(f, "/v1/job/%s", ids[k]);
		assert_int_equal(fx_i(job, "version"), 2);
		json_decref(job);
		assert_null(deployment_of(f, ids[k], 2));
		d = deployment_of(f, ids[k], 1);
		assert_string_equal(fx_s(d, "status"), "cancelled");
		assert_string_equal(fx_s(d, "status_description"),
				    "Cancelled: superseded by job version 2");
		json_decref(d);
		/* what runs now turns healthy (or fails): nothing reverts */
		run_pending(f, ids[k]);
		fx_idle(f);
		job = fx_get(f, "/v1/job/%s", ids[k]);
		assert_int_equal(fx_i(job, "version"), 2);
		json_decref(job);
	}
	fx_free(f);
}

static void test_max_parallel_zero_all_at_once(void **state)
{
	struct fx *f = fx_new();
	json_t *n, *d;
	char *t;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	t = fx_job("z", "service", 3, NULL, ", \"update\": {\"max_parallel\": 0}", "/bin/true");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	run_pending(f, "z");
	t = fx_job("z", "service", 3, NULL, ", \"update\": {\"max_parallel\": 0}", "/bin/sleep");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	n = at_version(f, "z", 1);
	assert_int_equal(json_array_size(n), 3);
	json_decref(n);
	d = deployment(f, "z");
	assert_true(!d || json_is_null(d));
	json_decref(d);
	fx_free(f);
}

static void test_no_change_no_deployment(void **state)
{
	struct fx *f = fx_new();
	json_t *all, *d;
	char *eval;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", NULL);
	eval = submit_roll(f, "w", "/bin/true", NULL);
	assert_string_equal(eval, "");
	free(eval);
	all = fx_get(f, "/v1/job/%s/deployments", "w");
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
	/* without an update block, and for a batch job: none at all */
	fx_submit(f, "plain", "service", 2, NULL, NULL);
	fx_idle(f);
	d = deployment(f, "plain");
	assert_true(!d || json_is_null(d));
	json_decref(d);
	fx_submit(f, "b", "batch", 2, NULL, ", \"update\": {\"max_parallel\": 1}");
	fx_idle(f);
	d = deployment(f, "b");
	assert_true(!d || json_is_null(d));
	json_decref(d);
	d = fx_get(f, "/v1/job/%s", "b");
	/* dropped: the batch job's canonical text is what it was without the block */
	assert_null(json_object_get(json_array_get(json_object_get(d, "groups"), 0), "update"));
	assert_null(json_object_get(d, "update"));
	json_decref(d);
	fx_free(f);
}

static void test_healthy_deadline(void **state)
{
	struct fx *f = fx_new();
	json_t *d = NULL;
	char *t;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	t = fx_job("h", "service", 1, NULL,
		   ", \"update\": {\"max_parallel\": 1, \"min_healthy_time\": \"0s\","
		   " \"healthy_deadline\": \"1s\", \"progress_deadline\": \"1s\"}", "/bin/true");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	/* never reported running: unhealthy once the deadline passes (a
	 * follow-up evaluation looks then) */
	for (int i = 0; i < 100; i++) {
		json_decref(d);
		d = deployment(f, "h");
		if (!strcmp(fx_s(d, "status"), "failed"))
			break;
		usleep(100000);
	}
	assert_string_equal(fx_s(d, "status"), "failed");
	assert_int_equal(fx_i(dgroup(d), "unhealthy_allocs"), 1);
	json_decref(d);
	json_t *live = fx_running(f, "h");
	d = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(live, 0), "id"));
	json_decref(live);
	assert_false(json_is_true(json_object_get(json_object_get(d, "deployment_status"),
						  "healthy")));
	json_decref(d);
	fx_free(f);
}

static void test_manual_fail(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *r, *list;
	char path[128];
	long st = 0;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "w", ", \"auto_revert\": true");
	free(submit_roll(f, "w", "/bin/sleep", ", \"auto_revert\": true"));
	d = deployment(f, "w");
	list = fx_get(f, "/v1/deployments%s", "");
	assert_int_equal(json_array_size(list), 2);
	json_decref(list);
	snprintf(path, sizeof(path), "/v1/deployment/%s", fx_s(d, "id"));
	r = fx_ok(f, "GET", path, NULL);
	assert_string_equal(fx_s(r, "id"), fx_s(d, "id"));
	json_decref(r);
	snprintf(path, sizeof(path), "/v1/deployment/%s/fail", fx_s(d, "id"));
	r = fx_ok(f, "POST", path, NULL);
	assert_int_equal(fx_i(r, "revert_to"), 0);
	json_decref(r);
	/* not running any more */
	json_decref(fx_call(f, "POST", path, NULL, &st));
	assert_int_equal(st, 409);
	json_decref(d);
	fx_idle(f);
	d = fx_get(f, "/v1/job/%s", "w");
	assert_int_equal(fx_i(d, "version"), 2);
	json_decref(d);
	json_decref(fx_call(f, "GET", "/v1/deployment/no-such-id", NULL, &st));
	assert_int_equal(st, 404);
	fx_free(f);
}

/* The deployment's POST path for action into path. */
static void dep_path(char *path, size_t n, const json_t *d, const char *action)
{
	snprintf(path, n, "/v1/deployment/%s/%s", fx_s(d, "id"), action);
}

static bool is_canary(const json_t *a)
{
	return json_is_true(json_object_get(json_object_get(a, "deployment_status"), "canary"));
}

/* Reports pending allocations running until job id has n desired-run
 * allocations of version v and none pending (at most 10 s). */
static void roll_until(struct fx *f, const char *id, long long v, size_t n)
{
	json_t *a = NULL;
	for (int i = 0; i < 100; i++) {
		run_pending(f, id);
		json_decref(a);
		a = at_version(f, id, v);
		if (json_array_size(a) == n)
			break;
		usleep(100000);
	}
	assert_int_equal(json_array_size(a), n);
	json_decref(a);
	run_pending(f, id);
}

static void test_canary_promote(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *n, *old, *r, *all, *a;
	char path[160], *text;
	long st = 0;
	size_t i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	/* a first version has nothing to replace: no canaries */
	deploy_first(f, "c", ", \"canary\": 1");
	d = deployment(f, "c");
	assert_null(json_object_get(dgroup(d), "desired_canaries"));
	dep_path(path, sizeof(path), d, "promote");
	r = fx_call(f, "POST", path, NULL, &st);
	assert_int_equal(st, 409); /* not running */
	json_decref(r);
	json_decref(d);
	free(submit_roll(f, "c", "/bin/sleep", ", \"canary\": 1"));
	n = at_version(f, "c", 1);
	old = at_version(f, "c", 0);
	assert_int_equal(json_array_size(n), 1);
	assert_int_equal(json_array_size(old), 3); /* beside them, not instead */
	assert_true(is_canary(json_array_get(n, 0)));
	json_decref(n);
	json_decref(old);
	d = deployment(f, "c");
	assert_string_equal(fx_s(d, "status"), "running");
	assert_string_equal(fx_s(d, "status_description"),
			    "Deployment is running but requires manual promotion");
	assert_int_equal(fx_i(dgroup(d), "desired_canaries"), 1);
	assert_int_equal(fx_i(dgroup(d), "placed_canaries"), 1);
	assert_false(json_is_true(json_object_get(dgroup(d), "promoted")));
	/* not healthy yet: refused, naming how many */
	dep_path(path, sizeof(path), d, "promote");
	r = fx_call(f, "POST", path, NULL, &st);
	assert_int_equal(st, 409);
	text = json_dumps(r, 0);
	assert_non_null(strstr(text, "1 of 1 canaries not healthy"));
	free(text);
	json_decref(r);
	json_decref(d);
	assert_int_equal(run_pending(f, "c"), 1);
	/* healthy, and waiting: nothing old is replaced */
	d = deployment(f, "c");
	assert_string_equal(fx_s(d, "status"), "running");
	assert_int_equal(fx_i(dgroup(d), "healthy_allocs"), 1);
	old = at_version(f, "c", 0);
	assert_int_equal(json_array_size(old), 3);
	json_decref(old);
	r = fx_call(f, "POST", path, "{\"groups\": [\"nope\"]}", &st);
	assert_int_equal(st, 400);
	json_decref(r);
	r = fx_call(f, "POST", path, "{\"groups\": [\"g\"], \"all\": true}", &st);
	assert_int_equal(st, 400);
	json_decref(r);
	r = fx_ok(f, "POST", path, "{\"groups\": [\"g\"]}");
	assert_true(json_is_true(json_object_get(json_object_get(r, "promoted"), "g")));
	json_decref(r);
	fx_idle(f);
	/* the canary replaced the old one of its index, and one more rolls */
	n = at_version(f, "c", 1);
	old = at_version(f, "c", 0);
	assert_int_equal(json_array_size(n), 2);
	assert_int_equal(json_array_size(old), 1);
	json_decref(n);
	json_decref(old);
	roll_until(f, "c", 1, 3);
	for (i = 0; i < 100; i++) {
		json_decref(d);
		fx_idle(f);
		d = deployment(f, "c");
		if (!strcmp(fx_s(d, "status"), "successful"))
			break;
		usleep(100000);
	}
	assert_string_equal(fx_s(d, "status"), "successful");
	assert_true(json_is_true(json_object_get(dgroup(d), "promoted")));
	assert_true(version_stable(f, "c", 1));
	/* count allocations of the new version, no more; the canary among them */
	all = fx_running(f, "c");
	assert_int_equal(json_array_size(all), 3);
	n = json_array();
	json_array_foreach(all, i, a) {
		assert_int_equal(fx_i(a, "job_version"), 1);
		if (is_canary(a))
			json_array_append(n, a);
	}
	assert_int_equal(json_array_size(n), 1);
	assert_true(json_is_true(json_object_get(json_object_get(json_array_get(n, 0),
								 "deployment_status"), "promoted")));
	json_decref(n);
	json_decref(all);
	r = fx_call(f, "POST", path, NULL, &st);
	assert_int_equal(st, 409);
	json_decref(r);
	json_decref(d);
	fx_free(f);
}

static void test_canary_auto_promote_then_failing_canary(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *n, *all, *a, *job;
	size_t i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "c", NULL);
	free(submit_roll(f, "c", "/bin/sleep",
			 ", \"canary\": 2, \"auto_promote\": true, \"auto_revert\": true"));
	n = at_version(f, "c", 1);
	assert_int_equal(json_array_size(n), 2);
	json_decref(n);
	d = deployment(f, "c");
	assert_string_equal(fx_s(d, "status_description"),
			    "Deployment is running pending automatic promotion");
	json_decref(d);
	/* both healthy: promoted with no one asking, and the rest rolls */
	roll_until(f, "c", 1, 3);
	for (i = 0; i < 100; i++) {
		fx_idle(f);
		d = deployment(f, "c");
		if (!strcmp(fx_s(d, "status"), "successful"))
			break;
		json_decref(d);
		d = NULL;
		usleep(100000);
	}
	assert_non_null(d);
	assert_true(json_is_true(json_object_get(dgroup(d), "promoted")));
	assert_int_equal(fx_i(dgroup(d), "placed_canaries"), 2);
	json_decref(d);
	all = fx_running(f, "c");
	assert_int_equal(json_array_size(all), 3);
	json_decref(all);

	/* a canary that fails: the deployment fails, the canaries stop, the
	 * job goes back to version 1 (as version 3), whose allocations never
	 * stopped */
	free(submit_roll(f, "c", "/bin/cat",
			 ", \"canary\": 2, \"auto_promote\": true, \"auto_revert\": true"));
	n = at_version(f, "c", 2);
	assert_int_equal(json_array_size(n), 2);
	fx_alloc_status(f, json_array_get(n, 0), "running");
	fx_alloc_status(f, json_array_get(n, 1), "failed");
	json_decref(n);
	fx_idle(f);
	fx_idle(f);
	job = fx_get(f, "/v1/job/%s", "c");
	assert_int_equal(fx_i(job, "version"), 3);
	json_decref(job);
	all = fx_job_allocs(f, "c");
	json_array_foreach(all, i, a)
		if (fx_i(a, "job_version") == 2)
			assert_string_equal(fx_s(a, "desired_status"), "stop");
	json_decref(all);
	all = fx_running(f, "c");
	assert_int_equal(json_array_size(all), 3);
	json_array_foreach(all, i, a)
		assert_int_equal(fx_i(a, "job_version"), 3);
	json_decref(all);
	fx_free(f);
}

static void test_canary_cancel_and_manual_fail(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *d2, *n, *r, *all, *a;
	char path[160];
	size_t i;
	(void)state;
	fx_node(f, "n", 0, "none", "exclusive", NULL);
	deploy_first(f, "c", NULL);
	free(submit_roll(f, "c", "/bin/sleep", ", \"canary\": 1"));
	d = deployment(f, "c");
	/* a newer version: the first canary stops, the new one takes over */
	free(submit_roll(f, "c", "/bin/cat", ", \"canary\": 1"));
	n = at_version(f, "c", 1);
	assert_int_equal(json_array_size(n), 0);
	json_decref(n);
	n = at_version(f, "c", 2);
	assert_int_equal(json_array_size(n), 1);
	assert_true(is_canary(json_array_get(n, 0)));
	json_decref(n);
	r = fx_get(f, "/v1/deployment/%s", fx_s(d, "id"));
	assert_string_equal(fx_s(r, "status"), "cancelled");
	json_decref(r);
	json_decref(d);
	/* back to the first version's spec: nothing to roll (the old ones
	 * are that spec), the canary stops and its deployment is over */
	d = deployment(f, "c");
	free(submit_roll(f, "c", "/bin/true", NULL));
	all = fx_running(f, "c");
	assert_int_equal(json_array_size(all), 3);
	json_array_foreach(all, i, a)
		assert_false(is_canary(a));
	json_decref(all);
	r = fx_get(f, "/v1/deployment/%s", fx_s(d, "id"));
	assert_string_equal(fx_s(r, "status"), "cancelled");
	json_decref(r);
	json_decref(d);
	free(submit_roll(f, "c", "/bin/cat", ", \"canary\": 1"));
	/* a manual fail: the canary stops, the old ones stay */
	d2 = deployment(f, "c");
	dep_path(path, sizeof(path), d2, "fail");
	json_decref(fx_ok(f, "POST", path, NULL));
	fx_idle(f);
	all = fx_running(f, "c");
	assert_int_equal(json_array_size(all), 3);
	json_array_foreach(all, i, a)
		assert_false(is_canary(a));
	json_decref(all);
	json_decref(d2);
	fx_free(f);
}

static void test_validation(void **state)
{
	struct fx *f = fx_new();
	long st = 0;
	json_t *r;
	char *t;
	(void)state;
	t = fx_job("v", "service", 1, NULL,
		   ", \"update\": {\"min_healthy_time\": \"5m\", \"healthy_deadline\": \"1m\"}", NULL);
	r = fx_call(f, "POST", "/v1/jobs", t, &st);
	assert_int_equal(st, 400);
	char *text = json_dumps(r, 0);
	assert_non_null(strstr(text, "min_healthy_time"));
	free(text);
	json_decref(r);
	free(t);
	t = fx_job("v", "service", 1, NULL, ", \"update\": {\"canary\": 1, \"max_parallel\": 0}",
		   NULL);
	r = fx_call(f, "POST", "/v1/jobs", t, &st);
	assert_int_equal(st, 400);
	json_decref(r);
	free(t);
	fx_free(f);
}

static long status_of(struct fx *f, const char *method, const char *path)
{
	long st = 0;
	json_decref(fx_call(f, method, path, NULL, &st));
	return st;
}

/* Reads need read on the deployment's namespace, fail needs submit; a
 * token of another namespace does not learn that it exists. */
static void test_acl(void **state)
{
	struct fx *f = fx_new_teams(0, 1);
	json_t *r;
	char *mgmt, *reader, *other, *submitter, *t, *body, path[160], fail[160], *id;
	(void)state;
	r = fx_ok(f, "POST", "/v1/acl/bootstrap", NULL);
	mgmt = strdup(fx_s(r, "secret_id"));
	json_decref(r);
	f->token = mgmt;
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"a\"}}"));
	reader = fx_token(f, "reader", "{\"namespace\": {\"a\": \"read\"}}");
	other = fx_token(f, "other", "{\"namespace\": {\"default\": \"submit\"}}");
	submitter = fx_token(f, "submitter", "{\"namespace\": {\"a\": \"submit\"}}");
	node_add(f, "n1", 0, "none");
	t = fx_job("w", "service", 2, NULL, ", \"update\": {\"min_healthy_time\": \"0s\"}", NULL);
	assert_true(asprintf(&body, "{\"job\": {\"namespace\": \"a\", %s", t + strlen("{\"job\": {")) > 0);
	free(t);
	free(fx_submit_text(f, body));
	free(body);
	fx_idle(f);
	r = fx_ok(f, "GET", "/v1/job/w/deployment?namespace=a", NULL);
	id = strdup(fx_s(r, "id"));
	json_decref(r);
	snprintf(path, sizeof(path), "/v1/deployment/%s", id);
	snprintf(fail, sizeof(fail), "/v1/deployment/%s/fail", id);

	f->token = reader;
	assert_int_equal(status_of(f, "GET", "/v1/job/w/deployment?namespace=a"), 200);
	assert_int_equal(status_of(f, "GET", path), 200);
	assert_int_equal(status_of(f, "POST", fail), 403);
	f->token = other;
	assert_int_equal(status_of(f, "GET", "/v1/job/w/deployment?namespace=a"), 403);
	assert_int_equal(status_of(f, "GET", path), 404);
	assert_int_equal(status_of(f, "POST", fail), 404);
	r = fx_ok(f, "GET", "/v1/deployments?namespace=*", NULL);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	f->token = submitter;
	assert_int_equal(status_of(f, "POST", fail), 200);
	f->token = NULL;
	free(id);
	free(mgmt);
	free(reader);
	free(other);
	free(submitter);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_one_at_a_time),
	cmocka_unit_test(test_acl),
	cmocka_unit_test(test_max_parallel_two),
	cmocka_unit_test(test_unhealthy_fails_and_reverts),
	cmocka_unit_test(test_unhealthy_without_revert_stays),
	cmocka_unit_test(test_failed_revert_does_not_loop),
	cmocka_unit_test(test_newer_version_cancels),
	cmocka_unit_test(test_newer_version_without_deployment_cancels),
	cmocka_unit_test(test_max_parallel_zero_all_at_once),
	cmocka_unit_test(test_no_change_no_deployment),
	cmocka_unit_test(test_healthy_deadline),
	cmocka_unit_test(test_manual_fail),
	cmocka_unit_test(test_canary_promote),
	cmocka_unit_test(test_canary_auto_promote_then_failing_canary),
	cmocka_unit_test(test_canary_cancel_and_manual_fail),
	cmocka_unit_test(test_validation))
