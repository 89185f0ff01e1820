/* Gangs (`gang = true`): a group placed all together or not at all, with
 * the explanation while it waits; placed when a node joins; annotated
 * with its members; a commit that would place part of it refused; quota
 * counting the whole gang; a member that fails, is lost (node down),
 * moves (drain) or is preempted restarting the whole gang once per the
 * reschedule policy; a batch member that completed kept by that restart
 * unless gang_restart = "all". */
#include "server_fx.h"

#include <errno.h>

#include "server/server-int.h"

/* A node of n whole GPUs advertising http_addr "<ip>:4646". */
static void gang_node(struct fx *f, const char *id, int n, const char *ip)
{
	json_t *devs = json_array();
	char addr[64], *body;
	for (int i = 0; i < n; i++) {
		char did[64];
		snprintf(did, sizeof(did), "GPU-%s-%d", id, i);
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b}", "id", did,
			"vendor", "nvidia", "type", "gpu", "model", "H100", "memory_mib",
			(json_int_t)81920, "sharing", "exclusive", "healthy", 1));
	}
	snprintf(addr, sizeof(addr), "%s:4646", ip);
	json_t *node = json_pack("{s:{s:s, s:s, s:s, s:s, s:{s:I, s:I}, s:o}}", "node", "id", id,
				 "name", id, "datacenter", "dc1", "http_addr", addr, "resources",
				 "cpu_milli", (json_int_t)64000, "memory_mib", (json_int_t)262144,
				 "devices", devs);
	body = json_dumps(node, JSON_COMPACT);
	json_decref(fx_ok(f, "POST", "/v1/node/register", body));
	free(body);
	json_decref(node);
}

/* A gang job: count members of gpus whole GPUs each, with a port "rdzv",
 * group_extra spliced into the group. */
static char *gang_job(const char *id, const char *ns, int priority, int count, int gpus,
		      const char *group_extra)
{
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"%s\", \"namespace\": \"%s\", \"type\": \"batch\", \"priority\": %d,"
		" \"groups\": [{\"name\": \"g\", \"count\": %d, \"gang\": true,"
		" \"network\": {\"ports\": [{\"label\": \"rdzv\"}]} %s,"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %d}]}}]}]}}",
		id, ns, priority, count, group_extra ? group_extra : "", gpus) > 0);
	return s;
}

static void submit_gang(struct fx *f, const char *id, const char *ns, int count, int gpus,
			const char *group_extra)
{
	char *t = gang_job(id, ns, 40, count, gpus, group_extra);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
}

/* The explanation of the job's latest evaluation for group g. */
static const char *why(struct fx *f, const char *ns, const char *job, char *buf, size_t n)
{
	json_t *e = last_eval(f, ns, job);
	snprintf(buf, n, "%s", fx_s(json_object_get(json_object_get(e, "failed_placements"), "g"),
				    "explanation"));
	json_decref(e);
	return buf;
}

/* Every live allocation carries the same members list, in rank order, its
 * own rank, and the members' node addresses and ports. */
static void check_annotated(struct fx *f, const char *job, size_t n)
{
	json_t *a = live_allocs(f, "default", job), *al, *first = NULL;
	size_t i, j;
	assert_int_equal(json_array_size(a), n);
	json_array_foreach(a, i, al) {
		json_t *g = json_object_get(al, "gang"), *members = json_object_get(g, "members"), *m;
		assert_non_null(g);
		assert_int_equal(fx_i(g, "size"), (long long)n);
		assert_int_equal(fx_i(g, "rank"), fx_i(al, "index"));
		assert_int_equal(json_array_size(members), n);
		json_array_foreach(members, j, m) {
			char ip[32];
			assert_int_equal(fx_i(m, "rank"), (long long)j);
			snprintf(ip, sizeof(ip), "10.0.0.%c", fx_s(m, "node_id")[1]);
			assert_string_equal(fx_s(m, "address"), ip);
			assert_int_equal(json_array_size(json_object_get(m, "ports")), 1);
		}
		if (!first)
			first = members;
		else
			assert_true(json_equal(first, members));
		/* the member's own entry names it */
		m = json_array_get(members, (size_t)fx_i(al, "index"));
		assert_string_equal(fx_s(m, "alloc_id"), fx_s(al, "id"));
		assert_string_equal(fx_s(m, "node_id"), fx_s(al, "node_id"));
	}
	json_decref(a);
}

/* Two nodes of two GPUs hold two of three 2-GPU members: nothing is
 * placed and the evaluation says so; a third node places all three. */
static void test_all_or_nothing(void **state)
{
	struct fx *f = fx_new();
	char buf[1024];
	json_t *e;
	(void)state;
	gang_node(f, "n1", 2, "10.0.0.1");
	gang_node(f, "n2", 2, "10.0.0.2");
	submit_gang(f, "train", "default", 3, 2, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "train"), 0);
	assert_non_null(strstr(why(f, "default", "train", buf, sizeof(buf)),
			       "gang of 3: 2 of 3 members fit"));
	e = last_eval(f, "default", "train");
	assert_string_equal(fx_s(e, "status"), "blocked");
	assert_int_equal(fx_i(json_object_get(json_object_get(e, "failed_placements"), "g"), "missing"), 3);
	json_decref(e);
	/* nothing was taken: a one-GPU job still fits on either node */
	fx_submit(f, "small", "batch", 2, "{\"name\": \"nvidia/gpu\", \"count\": 2}", NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "small"), 2);
	assert_int_equal(nlive(f, "default", "train"), 0);
	finish(f, "default", "small", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "train"), 0);
	gang_node(f, "n3", 2, "10.0.0.3");
	fx_idle(f);
	check_annotated(f, "train", 3);
	fx_free(f);
}

/* A gang that fits is placed at once, distinct_hosts and all. */
static void test_fits(void **state)
{
	struct fx *f = fx_new();
	(void)state;
	gang_node(f, "n1", 8, "10.0.0.1");
	gang_node(f, "n2", 8, "10.0.0.2");
	submit_gang(f, "dh", "default", 2, 1,
		    ", \"constraints\": [{\"operator\": \"distinct_hosts\", \"value\": \"true\"}]");
	fx_idle(f);
	check_annotated(f, "dh", 2);
	json_t *a = live_allocs(f, "default", "dh");
	assert_string_not_equal(fx_s(json_array_get(a, 0), "node_id"),
				fx_s(json_array_get(a, 1), "node_id"));
	json_decref(a);
	fx_free(f);
}

/* The plan applier re-checks capacity: when one member's node took
 * another allocation after the view, the commit is refused whole (no
 * member of the gang is written).  The plan is computed by hand for a
 * stopped job (so that no worker places it meanwhile) and committed
 * after another job's allocation landed on the second member's node. */
static void test_apply_refuses_partial(void **state)
{
	struct fx *f = fx_new();
	struct server *srv = f->srv;
	struct sched_view v;
	struct plan p;
	struct herd_err err = { 0 };
	json_t *intruder, *a, *job, *ev;
	char id[ID_LEN];
	(void)state;
	submit_gang(f, "pg", "default", 2, 2, NULL);
	fx_idle(f); /* no node yet: nothing placed */
	assert_int_equal(fx_status(f, "DELETE", "/v1/job/pg", NULL), 200);
	fx_idle(f);
	gang_node(f, "n1", 2, "10.0.0.1");
	gang_node(f, "n2", 2, "10.0.0.2");
	fx_idle(f);
	assert_int_equal(sched_view_read(srv->store, NULL, "default", "pg", &v, &err), 0);
	job = json_copy(v.job);
	json_object_set_new(job, "stop", json_false());
	plan_init(&p);
	assert_int_equal(plan_compute(srv, &v, job, "", &p, &err), 0);
	assert_int_equal(p.create, 2);
	/* another job takes the GPUs of the second member's node */
	intruder = json_deep_copy(json_array_get(p.allocs, 1));
	new_id(id);
	json_object_set_new(intruder, "id", json_string(id));
	json_object_set_new(intruder, "job_id", json_string("intruder"));
	json_object_del(intruder, "gang");
	assert_int_equal(store_put(srv->store, STORE_ALLOC, intruder, NULL, &err), 0);
	ev = eval_new("default", "pg", "test", NULL);
	assert_int_equal(plan_apply(srv, &v, &p, ev, NULL, NULL, &err), -ESTALE);
	json_decref(ev);
	plan_release(&p);
	json_decref(job);
	sched_view_release(&v);
	a = fx_job_allocs(f, "pg");
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	/* the same gang submitted now: one member fits, so none is placed
	 * until the other job's allocation ends */
	submit_gang(f, "pg2", "default", 2, 2, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "pg2"), 0);
	fx_alloc_status(f, intruder, "complete");
	fx_idle(f);
	check_annotated(f, "pg2", 2);
	json_decref(intruder);
	fx_free(f);
}

static void put_quota(struct fx *f, const char *name, int gpus)
{
	char *b = NULL;
	assert_true(asprintf(&b, "{\"quota\": {\"name\": \"%s\", \"limits\": [{\"region\": \"global\","
			     " \"region_limit\": {\"devices\": [{\"name\": \"nvidia/gpu\", \"count\": %d}]}}]}}",
			     name, gpus) > 0);
	json_decref(fx_ok(f, "POST", "/v1/quotas", b));
	free(b);
	assert_true(asprintf(&b, "{\"namespace\": {\"name\": \"%s\", \"quota\": \"%s\"}}", name, name) > 0);
	json_decref(fx_ok(f, "POST", "/v1/namespaces", b));
	free(b);
}

/* A quota of 4 GPUs holds a gang of 3 x 2 as a whole (two members would
 * fit the quota, the gang does not), and a gang of 2 x 2 fits it. */
static void test_quota_whole_gang(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	json_t *e;
	(void)state;
	gang_node(f, "n1", 8, "10.0.0.1");
	gang_node(f, "n2", 8, "10.0.0.2");
	put_quota(f, "team", 4);
	submit_gang(f, "big", "team", 3, 2, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "team", "big"), 0);
	e = last_eval(f, "team", "big");
	assert_string_equal(fx_s(e, "status"), "queued");
	assert_non_null(strstr(fx_s(e, "status_description"), "quota team: nvidia/gpu"));
	json_decref(e);
	submit_gang(f, "fits", "team", 2, 2, NULL);
	fx_idle(f);
	assert_int_equal(nlive(f, "team", "fits"), 2);
	assert_int_equal(nlive(f, "team", "big"), 0);
	fx_free(f);
}

/* The job's desired-run allocations of client status st. */
static size_t count_status(struct fx *f, const char *job, const char *st)
{
	json_t *a = fx_running(f, job), *al;
	size_t i, n = 0;
	json_array_foreach(a, i, al)
		n += !strcmp(fx_s(al, "client_status"), st);
	json_decref(a);
	return n;
}

/* One member failing for good (on its client) stops the other and places
 * the whole gang again, one reschedule attempt for the gang; when the
 * policy is used up, the failure stops the gang and nothing is placed. */
static void test_member_failure_restarts_gang(void **state)
{
	struct fx *f = fx_new();
	json_t *a, *b, *al;
	size_t i;
	(void)state;
	for (int k = 1; k <= 4; k++) {
		char id[8], ip[16];
		snprintf(id, sizeof(id), "n%d", k);
		snprintf(ip, sizeof(ip), "10.0.0.%d", k);
		gang_node(f, id, 2, ip);
	}
	submit_gang(f, "ft", "default", 2, 2,
		    ", \"reschedule\": {\"attempts\": 1, \"interval\": 3600000000000, \"delay\": 1000000,"
		    " \"delay_function\": \"constant\", \"unlimited\": false}");
	fx_idle(f);
	a = fx_running(f, "ft");
	assert_int_equal(json_array_size(a), 2);
	json_array_foreach(a, i, al)
		fx_alloc_status(f, al, "running");
	fx_alloc_status(f, json_array_get(a, 0), "failed");
	fx_idle(f);
	/* the follow-up after the delay places both again */
	for (int k = 0; k < 300 && count_status(f, "ft", "pending") < 2; k++) {
		usleep(20000);
		fx_idle(f);
	}
	b = fx_running(f, "ft");
	assert_int_equal(json_array_size(b), 2);
	json_array_foreach(b, i, al) {
		assert_string_equal(fx_s(al, "client_status"), "pending");
		assert_int_equal(fx_i(al, "reschedule_attempts"), 1);
		assert_non_null(json_object_get(al, "gang"));
		/* each replaces the member of its rank */
		const json_t *old = json_array_get(a, 0);
		if (fx_i(old, "index") != fx_i(al, "index"))
			old = json_array_get(a, 1);
		assert_string_equal(fx_s(al, "previous_allocation"), fx_s(old, "id"));
	}
	/* the surviving member was told to stop */
	json_t *old1 = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(a, 1), "id"));
	assert_string_equal(fx_s(old1, "desired_status"), "stop");
	assert_non_null(strstr(fx_s(old1, "desired_description"), "gang"));
	json_decref(old1);
	fx_alloc_status(f, json_array_get(a, 1), "complete");
	/* the second failure uses up the policy: the gang stops for good */
	json_array_foreach(b, i, al)
		fx_alloc_status(f, al, "running");
	fx_alloc_status(f, json_array_get(b, 1), "failed");
	fx_idle(f);
	usleep(50000);
	fx_idle(f);
	json_t *o = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(b, 0), "id"));
	assert_string_equal(fx_s(o, "desired_status"), "stop");
	json_decref(o);
	assert_int_equal(count_status(f, "ft", "pending"), 0);
	json_decref(a);
	json_decref(b);
	fx_free(f);
}

/* A 3-member batch gang: rank 0 completes, rank 1 fails (reschedule due
 * at once).  By default the completed member keeps its result: ranks 1
 * and 2 are placed again, and their gang still lists rank 0 (size 3,
 * its allocation as it ran); with gang_restart = "all" every member is
 * placed again, the completed one too.  Returns the ranks placed again as
 * a bit set. */
static unsigned restart_after_completion(const char *gang_restart, size_t *size)
{
	struct fx *f = fx_new();
	char extra[512];
	json_t *a, *b, *al, *members, *m;
	const char *first0 = "";
	unsigned ranks = 0;
	size_t i, j;

	for (int k = 1; k <= 6; k++) {
		char id[8], ip[16];
		snprintf(id, sizeof(id), "n%d", k);
		snprintf(ip, sizeof(ip), "10.0.0.%d", k);
		gang_node(f, id, 2, ip);
	}
	snprintf(extra, sizeof(extra),
		 "%s%s%s, \"reschedule\": {\"attempts\": 1, \"interval\": 3600000000000,"
		 " \"delay\": 0, \"delay_function\": \"constant\", \"unlimited\": false}",
		 gang_restart ? ", \"gang_restart\": \"" : "", gang_restart ? gang_restart : "",
		 gang_restart ? "\"" : "");
	submit_gang(f, "gc", "default", 3, 2, extra);
	fx_idle(f);
	a = fx_running(f, "gc");
	assert_int_equal(json_array_size(a), 3);
	json_array_foreach(a, i, al)
		fx_alloc_status(f, al, "running");
	json_array_foreach(a, i, al)
		if (fx_i(al, "index") == 0) {
			fx_alloc_status(f, al, "complete");
			first0 = fx_s(al, "id");
		}
	json_array_foreach(a, i, al)
		if (fx_i(al, "index") == 1)
			fx_alloc_status(f, al, "failed");
	fx_idle(f);
	b = fx_running(f, "gc");
	*size = 0;
	json_array_foreach(b, i, al) {
		if (!strcmp(fx_s(al, "client_status"), "complete"))
			continue; /* a member kept */
		assert_string_equal(fx_s(al, "client_status"), "pending");
		assert_int_equal(fx_i(al, "reschedule_attempts"), 1);
		ranks |= 1u << fx_i(al, "index");
		*size = (size_t)fx_i(json_object_get(al, "gang"), "size");
		/* every rank, in rank order; rank 0 the allocation that ran
		 * unless it was placed again */
		members = json_object_get(json_object_get(al, "gang"), "members");
		assert_int_equal(json_array_size(members), *size);
		json_array_foreach(members, j, m) {
			assert_int_equal(fx_i(m, "rank"), (long long)j);
			if (j == 0 && !(gang_restart && !strcmp(gang_restart, "all")))
				assert_string_equal(fx_s(m, "alloc_id"), first0);
		}
	}
	/* each slot has one current allocation */
	assert_int_equal(json_array_size(b), 3);
	json_decref(a);
	json_decref(b);
	fx_free(f);
	return ranks;
}

static void test_restart_keeps_completed_member(void **state)
{
	size_t size;
	(void)state;
	assert_int_equal(restart_after_completion(NULL, &size), 0x6);
	assert_int_equal(size, 3);
	assert_int_equal(restart_after_completion("unfinished", &size), 0x6);
	assert_int_equal(size, 3);
	assert_int_equal(restart_after_completion("all", &size), 0x7);
	assert_int_equal(size, 3);
}

/* A member on a node that goes down: the whole gang moves. */
static void test_node_down_moves_gang(void **state)
{
	struct fx *f = fx_new();
	json_t *a, *b;
	(void)state;
	gang_node(f, "n1", 2, "10.0.0.1");
	gang_node(f, "n2", 2, "10.0.0.2");
	gang_node(f, "n3", 2, "10.0.0.3");
	submit_gang(f, "nd", "default", 2, 2, NULL);
	fx_idle(f);
	a = fx_running(f, "nd");
	assert_int_equal(json_array_size(a), 2);
	const char *down = fx_s(json_array_get(a, 0), "node_id");
	char path[128];
	snprintf(path, sizeof(path), "/v1/node/%s/drain", down);
	json_decref(fx_ok(f, "POST", path, "{\"enable\": true}"));
	fx_idle(f);
	/* both told to stop; the replacements wait for their GPUs */
	for (size_t i = 0; i < 2; i++) {
		json_t *o = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(a, i), "id"));
		assert_string_equal(fx_s(o, "desired_status"), "stop");
		fx_alloc_status(f, o, "complete");
		json_decref(o);
	}
	fx_idle(f);
	b = fx_running(f, "nd");
	/* both members replaced, none on the drained node */
	assert_int_equal(json_array_size(b), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *al = json_array_get(b, i);
		assert_string_not_equal(fx_s(al, "node_id"), down);
		assert_string_not_equal(fx_s(al, "id"), fx_s(json_array_get(a, 0), "id"));
		assert_string_not_equal(fx_s(al, "id"), fx_s(json_array_get(a, 1), "id"));
	}
	check_annotated(f, "nd", 2);
	json_decref(a);
	json_decref(b);
	fx_free(f);
}

/* A member's node goes down (its heartbeats stop): the member is lost,
 * the other member stops, and the gang is placed again on live nodes with
 * one reschedule attempt counted for it. */
static void test_lost_member_moves_gang(void **state)
{
	struct server_config cfg = { .heartbeat_ttl_ns = SEC / 2 };
	struct fx *f = fx_new_cfg(&cfg);
	const char *ids[] = { "n1", "n2", "n3", "n4" };
	json_t *a, *b, *al;
	char down[8];
	size_t i;
	(void)state;
	for (int k = 0; k < 4; k++) {
		char ip[16];
		snprintf(ip, sizeof(ip), "10.0.0.%d", k + 1);
		gang_node(f, ids[k], 2, ip);
	}
	submit_gang(f, "lm", "default", 2, 2, NULL);
	fx_idle(f);
	a = fx_running(f, "lm");
	assert_int_equal(json_array_size(a), 2);
	json_array_foreach(a, i, al)
		fx_alloc_status(f, al, "running");
	snprintf(down, sizeof(down), "%s", fx_s(json_array_get(a, 0), "node_id"));
	for (int k = 0; k < 15; k++) {
		for (int n = 0; n < 4; n++)
			if (strcmp(ids[n], down))
				fx_heartbeat(f, ids[n]);
		usleep(100000);
	}
	fx_idle(f);
	json_t *lost = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(a, 0), "id"));
	assert_string_equal(fx_s(lost, "client_status"), "lost");
	json_decref(lost);
	json_t *peer = fx_get(f, "/v1/allocation/%s", fx_s(json_array_get(a, 1), "id"));
	assert_string_equal(fx_s(peer, "desired_status"), "stop");
	assert_non_null(strstr(fx_s(peer, "desired_description"), "gang restarted"));
	json_decref(peer);
	b = fx_running(f, "lm");
	assert_int_equal(json_array_size(b), 2);
	json_array_foreach(b, i, al) {
		assert_string_not_equal(fx_s(al, "node_id"), down);
		assert_int_equal(fx_i(al, "reschedule_attempts"), 1);
		assert_int_equal(fx_i(json_object_get(al, "gang"), "size"), 2);
	}
	json_decref(a);
	json_decref(b);
	fx_free(f);
}

/* Preempting one member stops the whole gang (docs/teams.md), and a gang
 * itself never preempts. */
static void test_preempted_member_stops_gang(void **state)
{
	struct fx *f = fx_new_teams(SERVER_PREEMPT_BATCH, 0);
	json_t *a;
	size_t i;
	json_t *al;
	(void)state;
	gang_node(f, "n1", 2, "10.0.0.1");
	gang_node(f, "n2", 2, "10.0.0.2");
	submit_gang(f, "low", "default", 2, 2, NULL); /* priority 40 */
	fx_idle(f);
	a = fx_running(f, "low");
	assert_int_equal(json_array_size(a), 2);
	json_array_foreach(a, i, al)
		fx_alloc_status(f, al, "running");
	/* a higher priority gang does not preempt */
	char *t = gang_job("gang-hi", "default", 90, 1, 2, NULL);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
	fx_idle(f);
	json_array_foreach(a, i, al) {
		json_t *o = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
		assert_string_equal(fx_s(o, "desired_status"), "run");
		json_decref(o);
	}
	/* a plain job of higher priority preempts one member: both stop */
	submit_gpu(f, "default", "urgent", 2, 90);
	fx_idle(f);
	json_array_foreach(a, i, al) {
		json_t *o = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
		assert_string_equal(fx_s(o, "desired_status"), "stop");
		json_decref(o);
	}
	json_decref(a);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_all_or_nothing),
	cmocka_unit_test(test_fits),
	cmocka_unit_test(test_apply_refuses_partial),
	cmocka_unit_test(test_quota_whole_gang),
	cmocka_unit_test(test_member_failure_restarts_gang),
	cmocka_unit_test(test_restart_keeps_completed_member),
	cmocka_unit_test(test_node_down_moves_gang),
	cmocka_unit_test(test_lost_member_moves_gang),
	cmocka_unit_test(test_preempted_member_stops_gang))
