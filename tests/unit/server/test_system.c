/* system and sysbatch jobs on the server: the reconcile's pure decisions
 * over a set of nodes (reconcile_system_decide), then a real server: one
 * allocation on every matching node, a node that joins gets one and one
 * that does not match gets none, a node down loses its allocation without
 * a move and gets a new one when back, a node without room is a failure
 * named per node, sysbatch runs once per node present at submission. */
#include "server_fx.h"
#include "common/xalloc.h"
#include "server/drain.h"      /* drain_round */
#include "server/server-int.h" /* reconcile_system_decide, node_mark_down */

/* ---- pure --------------------------------------------------------------- */

struct world {
	struct view_node nodes[8];
	struct sched_view v;
	json_t *job;
	struct job *model;
};

/* Node id in status st ("ready", "down"), drain and eligibility as given,
 * registered at index created. */
static void add_node(struct world *w, const char *id, const char *st, bool drain, bool eligible,
		     int64_t created)
{
	struct view_node *vn = &w->nodes[w->v.nnodes++];
	vn->node = json_pack("{s:s, s:s, s:s, s:b, s:s, s:I}", "id", id, "name", id, "status", st,
			     "drain", drain, "eligibility", eligible ? "eligible" : "ineligible",
			     "create_index", (json_int_t)created);
	vn->id = json_string_value(json_object_get(vn->node, "id"));
	vn->schedulable = !strcmp(st, "ready") && eligible && !drain;
	w->v.nodes = w->nodes;
}

/* A stored job of type with group "g" (group_extra spliced in), version
 * version, registered at index 10. */
static void set_job(struct world *w, const char *type, const char *group_extra, int version)
{
	char *text = fx_job("sys", type, 1, NULL, group_extra, NULL);
	json_t *body = json_loads(text, 0, NULL);
	json_decref(w->job);
	job_free(w->model);
	w->job = json_incref(json_object_get(body, "job"));
	json_object_set_new(w->job, "version", json_integer(version));
	json_object_set_new(w->job, "modify_index", json_integer(10));
	w->model = job_from_stored(w->job);
	assert_non_null(w->model);
	json_decref(body);
	free(text);
}

static json_t *alloc_on(struct world *w, const char *id, const char *node, const char *client,
			int version)
{
	json_t *a = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:I}", "id", id, "node_id", node,
			      "task_group", "g", "desired_status", "run", "client_status", client,
			      "index", 0, "job_version", version, "create_time", (json_int_t)1);
	json_array_append_new(w->v.job_allocs, a);
	return a;
}

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->v.job_allocs = json_array();
}

static void world_release(struct world *w)
{
	for (size_t i = 0; i < w->v.nnodes; i++)
		json_decref(w->nodes[i].node);
	json_decref(w->v.job_allocs);
	json_decref(w->job);
	job_free(w->model);
}

/* The version test: an allocation's group changed when its version is
 * not the job's. */
static bool by_version(void *ctx, const json_t *alloc)
{
	const json_t *job = ctx;
	return json_integer_value(json_object_get(alloc, "job_version")) !=
	       json_integer_value(json_object_get(job, "version"));
}

/* The nodes that no longer match the job: {"<node id>": why}. */
static json_t *unfit_nodes;

static char *by_node_list(void *ctx, int g, const json_t *alloc, const struct view_node *vn)
{
	const char *why = json_string_value(json_object_get(unfit_nodes, vn->id));
	(void)ctx;
	(void)g;
	(void)alloc;
	return why ? xstrdup(why) : NULL;
}

/* One reconcile as reconcile_system makes it, with a deployment that has
 * no record to read (deploy_begin without a store): a rolling group's
 * first batch, as max_parallel and stagger allow. */
static void decide(struct world *w, int64_t now, struct reconcile_result *r)
{
	struct system_hooks h = { by_version, by_node_list, w->job,
				  deploy_begin(NULL, w->job, w->model, now) };
	assert_int_equal(reconcile_system_decide(w->job, w->model, &w->v, now, &h, r), 0);
	deploy_end(h.dep, r);
}

/* The node ids of r's placements, sorted, comma-separated (static buffer). */
static const char *placed(const struct reconcile_result *r)
{
	static char buf[256];
	const char *ids[16];
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < r->nplace && n < 16; i++)
		ids[n++] = r->place[i].node_id ? r->place[i].node_id : "(any)";
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(ids[j], ids[i]) < 0) {
				const char *t = ids[i];
				ids[i] = ids[j];
				ids[j] = t;
			}
	for (size_t i = 0, at = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? "," : "", ids[i]);
	return buf;
}

static const char *stopped(const struct reconcile_result *r, size_t i)
{
	return fx_s(json_array_get(r->stops, i), "id");
}

static void test_every_schedulable_node(void **state)
{
	struct world w;
	struct reconcile_result r;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", false, true, 1);
	add_node(&w, "b", "ready", false, true, 2);
	add_node(&w, "c", "ready", true, false, 3);   /* draining */
	add_node(&w, "d", "ready", false, false, 4);  /* ineligible */
	add_node(&w, "e", "down", false, true, 5);
	set_job(&w, "system", NULL, 0);
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "a,b");
	assert_int_equal(json_array_size(r.stops), 0);
	for (size_t i = 0; i < r.nplace; i++)
		assert_null(r.place[i].previous);
	reconcile_result_release(&r);
	world_release(&w);
}

static void test_live_kept_lost_not_moved(void **state)
{
	struct world w;
	struct reconcile_result r;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", false, true, 1);
	add_node(&w, "b", "down", false, true, 2);
	add_node(&w, "c", "ready", false, true, 3);   /* joined: nothing yet */
	add_node(&w, "d", "ready", false, false, 4);  /* ineligible, still runs its own */
	set_job(&w, "system", NULL, 0);
	alloc_on(&w, "on-a", "a", "running", 0);
	alloc_on(&w, "on-b", "b", "lost", 0);
	alloc_on(&w, "on-d", "d", "running", 0);
	decide(&w, 100, &r);
	/* only the node that has none gets one: b's is not moved anywhere */
	assert_string_equal(placed(&r), "c");
	assert_int_equal(json_array_size(r.stops), 0);
	assert_int_equal(r.ignore, 3);
	reconcile_result_release(&r);

	/* b is back: its lost allocation is replaced there, linked to it */
	json_object_set_new(w.nodes[1].node, "status", json_string("ready"));
	w.nodes[1].schedulable = true;
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "b,c");
	assert_int_equal(json_array_size(r.stops), 1);
	assert_string_equal(stopped(&r, 0), "on-b");
	for (size_t i = 0; i < r.nplace; i++)
		if (!strcmp(r.place[i].node_id, "b"))
			assert_string_equal(fx_s(r.place[i].previous, "id"), "on-b");
	reconcile_result_release(&r);
	world_release(&w);
}

/* A draining node keeps its system allocation until the drain marks it
 * (drain.h: last), then it stops and is not placed anywhere else. */
static void test_draining_stops_without_replacement(void **state)
{
	struct world w;
	struct reconcile_result r;
	json_t *al;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", true, false, 1);
	add_node(&w, "b", "ready", false, true, 2);
	set_job(&w, "system", NULL, 0);
	al = alloc_on(&w, "on-a", "a", "running", 0);
	alloc_on(&w, "on-b", "b", "running", 0);
	decide(&w, 100, &r);
	assert_int_equal(json_array_size(r.stops), 0);
	assert_int_equal(r.nplace, 0);
	reconcile_result_release(&r);
	json_object_set_new(al, "desired_transition", json_pack("{s:b}", "migrate", 1));
	decide(&w, 100, &r);
	assert_int_equal(json_array_size(r.stops), 1);
	assert_string_equal(stopped(&r, 0), "on-a");
	assert_string_equal(fx_s(json_array_get(r.stops, 0), "desired_status"), "stop");
	assert_int_equal(r.nplace, 0);
	reconcile_result_release(&r);
	world_release(&w);
}

static void test_new_version_replaced_on_its_node(void **state)
{
	struct world w;
	struct reconcile_result r;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", false, true, 1);
	add_node(&w, "b", "ready", false, true, 2);
	add_node(&w, "c", "ready", false, true, 3);
	set_job(&w, "system", NULL, 1);
	alloc_on(&w, "on-a", "a", "running", 0);
	alloc_on(&w, "on-b", "b", "running", 0);
	alloc_on(&w, "on-c", "c", "running", 0);
	/* no update block: every node at once, each on its own node */
	decide(&w, 100 * SEC, &r);
	assert_string_equal(placed(&r), "a,b,c");
	assert_int_equal(json_array_size(r.stops), 3);
	for (size_t i = 0; i < r.nplace; i++)
		assert_string_equal(fx_s(r.place[i].previous, "node_id"), r.place[i].node_id);
	reconcile_result_release(&r);

	/* update { max_parallel = 1 stagger = 10s }: one node at a time */
	set_job(&w, "system", ", \"update\": {\"max_parallel\": 1, \"stagger\": 10000000000}", 1);
	decide(&w, 100 * SEC, &r);
	assert_string_equal(placed(&r), "a");
	assert_int_equal(json_array_size(r.stops), 1);
	/* the next turn: the evaluation the replacement's reports bring
	 * (its deployment's health), or a follow-up when stagger is due */
	assert_int_equal(r.followup_at, 0);
	reconcile_result_release(&r);

	/* a's replacement runs but for less than stagger: nothing more yet */
	json_array_remove(w.v.job_allocs, 0);
	json_t *na = alloc_on(&w, "new-a", "a", "running", 1);
	json_object_set_new(na, "start_time", json_integer(95 * SEC));
	decide(&w, 100 * SEC, &r);
	assert_string_equal(placed(&r), "");
	assert_int_equal(r.followup_at, 105 * SEC);
	reconcile_result_release(&r);
	/* ... and once it has: the next node */
	decide(&w, 106 * SEC, &r);
	assert_string_equal(placed(&r), "b");
	assert_string_equal(stopped(&r, 0), "on-b");
	reconcile_result_release(&r);
	world_release(&w);
}

/* A node that is not eligible keeps its allocation of an older version as
 * it is (not marked as the new one), and has it replaced once eligible. */
static void test_ineligible_keeps_its_version(void **state)
{
	struct world w;
	struct reconcile_result r;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", false, false, 1);
	set_job(&w, "system", NULL, 1);
	alloc_on(&w, "on-a", "a", "running", 0);
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "");
	assert_int_equal(json_array_size(r.stops), 0);
	assert_int_equal(json_array_size(r.updates), 0);
	reconcile_result_release(&r);
	json_object_set_new(w.nodes[0].node, "eligibility", json_string("eligible"));
	w.nodes[0].schedulable = true;
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "a");
	assert_string_equal(stopped(&r, 0), "on-a");
	reconcile_result_release(&r);
	world_release(&w);
}

static void test_ended(void **state)
{
	struct world w;
	struct reconcile_result r;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", false, true, 1);
	add_node(&w, "b", "ready", false, true, 2);
	add_node(&w, "late", "ready", false, true, 11); /* registered after the job */
	/* system: a failed allocation is placed again on its node */
	set_job(&w, "system", NULL, 0);
	alloc_on(&w, "on-a", "a", "failed", 0);
	alloc_on(&w, "on-b", "b", "running", 0);
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "a,late");
	assert_string_equal(stopped(&r, 0), "on-a");
	reconcile_result_release(&r);

	/* sysbatch: done once per node (complete or failed), and only on the
	 * nodes present at its submission */
	set_job(&w, "sysbatch", NULL, 0);
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "");
	assert_int_equal(json_array_size(r.stops), 0);
	reconcile_result_release(&r);
	/* a new version runs again where the old one ended */
	set_job(&w, "sysbatch", NULL, 1);
	json_object_set_new(json_array_get(w.v.job_allocs, 1), "client_status", json_string("complete"));
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "a,b");
	reconcile_result_release(&r);
	world_release(&w);
}

static void test_duplicates_and_removed_group(void **state)
{
	struct world w;
	struct reconcile_result r;
	json_t *x;
	(void)state;
	world_init(&w);
	add_node(&w, "a", "ready", false, true, 1);
	set_job(&w, "system", NULL, 0);
	alloc_on(&w, "old", "a", "running", 0);
	x = alloc_on(&w, "new", "a", "running", 0);
	json_object_set_new(x, "create_time", json_integer(5));
	x = alloc_on(&w, "gone", "a", "running", 0);
	json_object_set_new(x, "task_group", json_string("removed"));
	decide(&w, 100, &r);
	assert_string_equal(placed(&r), "");
	assert_int_equal(json_array_size(r.stops), 2);
	assert_string_equal(stopped(&r, 0), "gone");
	assert_string_equal(stopped(&r, 1), "old");
	reconcile_result_release(&r);
	world_release(&w);
}

/* A node that no longer matches the job (the unfit hook says why) loses
 * its allocation, stopped with the reason and placed again there (the
 * engine drops it while the node does not match); an ineligible node
 * keeps its own, and a sysbatch run ends where it started.  A node is
 * asked only when its record changed since its allocation was placed or
 * last found to match (node_modify_index). */
static void test_unfit_node_stops(void **state)
{
	struct world w;
	struct reconcile_result r;
	json_t *on_b;
	(void)state;
	world_init(&w);
	unfit_nodes = json_pack("{s:s, s:s}", "a", "node no longer matches the job: meta.rack",
				"c", "node no longer matches the job: meta.rack");
	add_node(&w, "a", "ready", false, true, 1);
	add_node(&w, "b", "ready", false, true, 2);
	add_node(&w, "c", "ready", false, false, 3); /* ineligible */
	set_job(&w, "system", NULL, 0);
	alloc_on(&w, "on-a", "a", "running", 0);
	on_b = alloc_on(&w, "on-b", "b", "running", 0);
	alloc_on(&w, "on-c", "c", "running", 0);
	json_object_set_new(w.nodes[1].node, "modify_index", json_integer(7));
	decide(&w, 100, &r);
	assert_int_equal(json_array_size(r.stops), 1);
	assert_string_equal(stopped(&r, 0), "on-a");
	assert_string_equal(fx_s(json_array_get(r.stops, 0), "desired_description"),
			    "node no longer matches the job: meta.rack");
	assert_string_equal(placed(&r), "a");
	assert_string_equal(fx_s(r.place[0].previous, "id"), "on-a");
	assert_int_equal(r.ignore, 2);
	/* b was asked and matches: the node record it matched is kept */
	assert_int_equal(json_array_size(r.updates), 1);
	assert_string_equal(fx_s(json_array_get(r.updates, 0), "id"), "on-b");
	assert_int_equal(fx_i(json_array_get(r.updates, 0), "node_modify_index"), 7);
	reconcile_result_release(&r);

	/* a node whose record did not change since is not asked again */
	json_object_set_new(on_b, "node_modify_index", json_integer(7));
	json_object_set_new(unfit_nodes, "b", json_string("node no longer matches the job: x"));
	decide(&w, 100, &r);
	assert_int_equal(json_array_size(r.stops), 1); /* a's alone */
	assert_int_equal(json_array_size(r.updates), 0);
	reconcile_result_release(&r);
	/* ... until it changes */
	json_object_set_new(w.nodes[1].node, "modify_index", json_integer(8));
	decide(&w, 100, &r);
	assert_int_equal(json_array_size(r.stops), 2);
	assert_string_equal(stopped(&r, 1), "on-b");
	reconcile_result_release(&r);

	/* sysbatch: nothing stops */
	set_job(&w, "sysbatch", NULL, 0);
	decide(&w, 100, &r);
	assert_int_equal(json_array_size(r.stops), 0);
	assert_int_equal(r.nplace, 0);
	reconcile_result_release(&r);
	json_decref(unfit_nodes);
	unfit_nodes = NULL;
	world_release(&w);
}

/* ---- a real server ------------------------------------------------------ */

static size_t count_live_on(json_t *allocs, const char *node)
{
	size_t n = 0, i;
	json_t *a;
	json_array_foreach(allocs, i, a)
		if (!strcmp(fx_s(a, "desired_status"), "run") && !strcmp(fx_s(a, "node_id"), node) &&
		    (!strcmp(fx_s(a, "client_status"), "pending") ||
		     !strcmp(fx_s(a, "client_status"), "running")))
			n++;
	return n;
}

static size_t count_live(struct fx *f, const char *job, const char *node)
{
	json_t *a = fx_job_allocs(f, job);
	size_t n = count_live_on(a, node);
	json_decref(a);
	return n;
}

static void test_server_every_node(void **state)
{
	struct fx *f = fx_new();
	struct herd_err err = { 0 };
	char *t;
	(void)state;
	fx_node(f, "n1", 1, "NVIDIA H100", "exclusive", "r1");
	fx_node(f, "n2", 1, "NVIDIA H100", "exclusive", "r1");
	fx_node(f, "n3", 1, "NVIDIA H100", "exclusive", "r9");
	t = fx_job("sys", "system", 1, NULL,
		   ", \"constraints\": [{\"attribute\": \"${meta.rack}\", \"operator\": \"!=\","
		   " \"value\": \"r9\"}]", "/bin/sleep");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n1"), 1);
	assert_int_equal(count_live(f, "sys", "n2"), 1);
	assert_int_equal(count_live(f, "sys", "n3"), 0); /* its rack does not match */
	/* matching nodes are not failures: the evaluation completed */
	json_t *blocked = fx_evals(f, "sys", "blocked");
	assert_int_equal(json_array_size(blocked), 0);
	json_decref(blocked);

	/* a node that joins gets one; so does n3 once its rack matches */
	fx_node(f, "n4", 0, "NVIDIA H100", "exclusive", "r2");
	fx_node(f, "n3", 1, "NVIDIA H100", "exclusive", "r2");
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n4"), 1);
	assert_int_equal(count_live(f, "sys", "n3"), 1);

	/* n1 goes down: its allocation is lost, nothing moves elsewhere */
	assert_int_equal(node_mark_down(f->srv, "n1", &err), 0);
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n1"), 0);
	assert_int_equal(count_live(f, "sys", "n2"), 1);
	assert_int_equal(count_live(f, "sys", "n3"), 1);
	assert_int_equal(count_live(f, "sys", "n4"), 1);
	json_t *all = fx_running(f, "sys");
	assert_int_equal(json_array_size(all), 4); /* three live and the lost one */
	json_decref(all);
	/* ... and back, it gets a new one (the heartbeat's evaluation) */
	fx_heartbeat(f, "n1");
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n1"), 1);

	/* ineligible: no new one; eligible again: one */
	json_decref(fx_ok(f, "POST", "/v1/node/n4/eligibility", "{\"eligible\": false}"));
	json_t *a4 = fx_job_allocs(f, "sys"), *x;
	size_t i;
	json_array_foreach(a4, i, x)
		if (!strcmp(fx_s(x, "node_id"), "n4") && !strcmp(fx_s(x, "desired_status"), "run"))
			fx_alloc_status(f, x, "failed");
	json_decref(a4);
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n4"), 0);
	json_decref(fx_ok(f, "POST", "/v1/node/n4/eligibility", "{\"eligible\": true}"));
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n4"), 1);
	fx_free(f);
}

static void test_server_no_room_named_per_node(void **state)
{
	struct fx *f = fx_new();
	json_t *ev, *fp;
	(void)state;
	fx_node(f, "big", 2, "NVIDIA H100", "exclusive", NULL);
	fx_node(f, "small", 1, "NVIDIA H100", "exclusive", NULL);
	fx_node(f, "cpu", 0, "NVIDIA H100", "exclusive", NULL);
	fx_submit(f, "two", "system", 1, "{\"name\": \"nvidia/gpu\", \"count\": 2}", NULL);
	fx_idle(f);
	/* big takes it; small lacks room (a failure, named); cpu has no GPU
	 * at all: not the job's, no failure */
	assert_int_equal(count_live(f, "two", "big"), 1);
	assert_int_equal(count_live(f, "two", "small"), 0);
	assert_int_equal(count_live(f, "two", "cpu"), 0);
	ev = last_eval(f, "default", "two");
	assert_string_equal(fx_s(ev, "status"), "blocked");
	fp = json_object_get(json_object_get(ev, "failed_placements"), "g");
	assert_int_equal(fx_i(fp, "missing"), 1);
	assert_non_null(json_object_get(json_object_get(fp, "nodes"), "small"));
	assert_null(json_object_get(json_object_get(fp, "nodes"), "cpu"));
	assert_non_null(strstr(fx_s(fp, "explanation"), "on node small:"));
	assert_non_null(strstr(fx_s(fp, "explanation"), "devices exhausted"));
	json_decref(ev);
	fx_free(f);
}

static void test_server_sysbatch_once_per_node(void **state)
{
	struct fx *f = fx_new();
	json_t *allocs, *x, *job;
	size_t i;
	(void)state;
	fx_node(f, "n1", 0, "NVIDIA H100", "exclusive", NULL);
	fx_node(f, "n2", 0, "NVIDIA H100", "exclusive", NULL);
	fx_submit(f, "clean", "sysbatch", 1, NULL, NULL);
	fx_idle(f);
	allocs = fx_running(f, "clean");
	assert_int_equal(json_array_size(allocs), 2);
	json_array_foreach(allocs, i, x)
		fx_alloc_status(f, x, "complete");
	json_decref(allocs);
	fx_idle(f);
	job = fx_get(f, "/v1/job/%s", "clean");
	assert_string_equal(fx_s(job, "status"), "dead");
	json_decref(job);
	/* a node that joins afterwards gets nothing; nothing runs again */
	fx_node(f, "n3", 0, "NVIDIA H100", "exclusive", NULL);
	fx_heartbeat(f, "n1");
	fx_idle(f);
	allocs = fx_running(f, "clean");
	assert_int_equal(json_array_size(allocs), 2);
	json_array_foreach(allocs, i, x)
		assert_string_equal(fx_s(x, "client_status"), "complete");
	json_decref(allocs);
	fx_free(f);
}

/* A drain stops a system allocation (last: nothing else runs here) and
 * places it nowhere else; one with ignore_system_jobs leaves it running. */
static void test_server_drain(void **state)
{
	struct fx *f = fx_new();
	(void)state;
	fx_node(f, "n1", 0, "NVIDIA H100", "exclusive", NULL);
	fx_node(f, "n2", 0, "NVIDIA H100", "exclusive", NULL);
	fx_node(f, "n3", 0, "NVIDIA H100", "exclusive", NULL);
	fx_submit(f, "sys", "system", 1, NULL, NULL);
	fx_idle(f);
	json_decref(fx_ok(f, "POST", "/v1/node/n1/drain",
			  "{\"drain_spec\": {\"deadline\": 0, \"ignore_system_jobs\": false}}"));
	json_decref(fx_ok(f, "POST", "/v1/node/n2/drain",
			  "{\"drain_spec\": {\"deadline\": 0, \"ignore_system_jobs\": true}}"));
	drain_round(f->srv);
	fx_idle(f);
	assert_int_equal(count_live(f, "sys", "n1"), 0);
	assert_int_equal(count_live(f, "sys", "n2"), 1);
	assert_int_equal(count_live(f, "sys", "n3"), 1);
	json_t *all = fx_running(f, "sys");
	assert_int_equal(json_array_size(all), 2); /* n1's was not placed elsewhere */
	json_decref(all);
	fx_free(f);
}

/* Submits system job "sys" of priority 90 asking one GPU on nodes n1 (its
 * GPU held by batch job "low" of priority 10) and n2 (free); returns low's
 * live allocations (a new array). */
static json_t *system_over_low(struct fx *f)
{
	char *t;
	json_t *body;
	node_add(f, "n1", 1, "H100");
	submit_gpu(f, "default", "low", 1, 10);
	fx_idle(f);
	node_add(f, "n2", 1, "H100");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "low"), 1);
	t = fx_job("sys", "system", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}", "", NULL);
	body = json_loads(t, 0, NULL);
	json_object_set_new(json_object_get(body, "job"), "priority", json_integer(90));
	free(t);
	t = json_dumps(body, 0);
	json_decref(body);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	/* the free node took one at once */
	assert_int_equal(nlive(f, "default", "sys"), 1);
	return live_allocs(f, "default", "low");
}

/* By default (Nomad's rule) a system job asking a GPU stops a
 * lower-priority batch job's on a full node, and runs there once it
 * ended; with preemption off for system jobs, it waits, the node named. */
static void test_server_preempts_for_its_node(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	json_t *low, *e;
	(void)state;
	low = system_over_low(f);
	assert_int_equal(json_array_size(low), 1);
	assert_string_equal(fx_s(json_array_get(low, 0), "desired_status"), "stop");
	json_decref(low);
	finish(f, "default", "low", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "sys"), 2);
	fx_free(f);

	f = fx_new_teams(SERVER_PREEMPT_BATCH, 0);
	low = system_over_low(f);
	assert_string_equal(fx_s(json_array_get(low, 0), "desired_status"), "run");
	json_decref(low);
	e = last_eval(f, "default", "sys");
	assert_non_null(json_object_get(json_object_get(json_object_get(e, "failed_placements"), "g"),
					"nodes"));
	json_decref(e);
	fx_free(f);
}

/* A namespace's quota counts a system job's allocations like any: past it,
 * the next node's waits (queued, naming the quota) and is placed when the
 * quota frees. */
static void test_server_quota_holds_a_node(void **state)
{
	struct fx *f = fx_new_teams(0, 0);
	char *t;
	json_t *e, *body;
	(void)state;
	json_decref(fx_ok(f, "POST", "/v1/quotas",
			  "{\"quota\": {\"name\": \"qa\", \"limits\": [{\"region\": \"global\","
			  " \"region_limit\": {\"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 2}]}}]}}"));
	json_decref(fx_ok(f, "POST", "/v1/namespaces",
			  "{\"namespace\": {\"name\": \"qa\", \"quota\": \"qa\"}}"));
	node_add(f, "n1", 1, "H100");
	node_add(f, "n2", 1, "H100");
	node_add(f, "n3", 1, "H100");
	submit_gpu(f, "qa", "batch1", 1, 50);
	fx_idle(f);
	t = fx_job("sys", "system", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}", "", NULL);
	body = json_loads(t, 0, NULL);
	json_object_set_new(json_object_get(body, "job"), "namespace", json_string("qa"));
	free(t);
	t = json_dumps(body, 0);
	json_decref(body);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	/* two free nodes, room in the quota for one more GPU */
	assert_int_equal(nlive(f, "qa", "sys"), 1);
	e = last_eval(f, "qa", "sys");
	assert_non_null(strstr(fx_s(e, "status_description"), "quota qa"));
	json_decref(e);
	finish(f, "qa", "batch1", "complete");
	fx_idle(f);
	assert_int_equal(nlive(f, "qa", "sys"), 2);
	fx_free(f);
}

/* The live allocation of job on node (a new reference), or NULL. */
static json_t *live_on(struct fx *f, const char *job, const char *node)
{
	json_t *all = fx_job_allocs(f, job), *a, *out = NULL;
	size_t i;
	json_array_foreach(all, i, a)
		if (!strcmp(fx_s(a, "desired_status"), "run") && !strcmp(fx_s(a, "node_id"), node) &&
		    (!strcmp(fx_s(a, "client_status"), "pending") ||
		     !strcmp(fx_s(a, "client_status"), "running")))
			out = json_incref(a);
	json_decref(all);
	return out;
}

/* The first GPU alloc holds. */
static const char *gpu_of(const json_t *alloc)
{
	return fx_s(json_array_get(json_object_get(json_object_get(alloc, "resources"), "devices"), 0),
		    "id");
}

/* node's heartbeat saying device dev is healthy or not. */
static void device_health(struct fx *f, const char *node, const char *dev, bool healthy)
{
	char path[128], body[256];
	snprintf(path, sizeof(path), "/v1/node/%s/heartbeat", node);
	snprintf(body, sizeof(body), "{\"devices\": [{\"id\": \"%s\", \"healthy\": %s,"
		 " \"health_reason\": \"%s\"}]}", dev, healthy ? "true" : "false",
		 healthy ? "" : "XID 79");
	json_decref(fx_ok(f, "PUT", path, body));
}

/* A node that stops matching a system job loses its allocation (stopped,
 * the reason said) and gets one again once it matches: its meta changed
 * at a registration, or the GPU the allocation holds turned unhealthy (a
 * heartbeat: placed again on another GPU of the node at once, or once the
 * GPU is healthy again where it has no other). */
static void test_server_node_stops_matching(void **state)
{
	struct fx *f = fx_new();
	json_t *a, *b, *old, *ev;
	char *t, *held;
	(void)state;
	fx_node(f, "n1", 2, "NVIDIA H100", "exclusive", "r1");
	fx_node(f, "n2", 1, "NVIDIA H100", "exclusive", "r1");
	t = fx_job("mon", "system", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1}",
		   ", \"constraints\": [{\"attribute\": \"${meta.rack}\", \"operator\": \"!=\","
		   " \"value\": \"r9\"}]", "/bin/sleep");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	a = live_on(f, "mon", "n1");
	assert_non_null(a);
	fx_alloc_status(f, a, "running");
	b = live_on(f, "mon", "n2");
	assert_non_null(b);
	fx_alloc_status(f, b, "running");
	json_decref(b);
	fx_idle(f);

	/* n1 re-registers in rack r9: not the job's any more */
	fx_node(f, "n1", 2, "NVIDIA H100", "exclusive", "r9");
	fx_idle(f);
	assert_null(live_on(f, "mon", "n1"));
	old = fx_get(f, "/v1/allocation/%s", fx_s(a, "id"));
	assert_string_equal(fx_s(old, "desired_status"), "stop");
	assert_non_null(strstr(fx_s(old, "desired_description"), "node no longer matches the job: "));
	assert_non_null(strstr(fx_s(old, "desired_description"), "meta.rack"));
	fx_alloc_status(f, old, "complete"); /* its agent stopped it */
	json_decref(old);
	json_decref(a);
	/* no failure for a node that is not the job's */
	ev = last_eval(f, "default", "mon");
	assert_string_equal(fx_s(ev, "status"), "complete");
	json_decref(ev);
	assert_non_null((b = live_on(f, "mon", "n2")));
	json_decref(b);
	/* back in a matching rack: placed again */
	fx_node(f, "n1", 2, "NVIDIA H100", "exclusive", "r1");
	fx_idle(f);
	a = live_on(f, "mon", "n1");
	assert_non_null(a);

	/* the GPU n1's allocation holds turns unhealthy: stopped, and placed
	 * again there on the other GPU */
	held = strdup(gpu_of(a));
	device_health(f, "n1", held, false);
	fx_idle(f);
	old = fx_get(f, "/v1/allocation/%s", fx_s(a, "id"));
	assert_string_equal(fx_s(old, "desired_status"), "stop");
	assert_non_null(strstr(fx_s(old, "desired_description"), "is unhealthy: XID 79"));
	fx_alloc_status(f, old, "complete");
	json_decref(old);
	json_decref(a);
	a = live_on(f, "mon", "n1");
	assert_non_null(a);
	assert_string_not_equal(gpu_of(a), held);
	json_decref(a);
	free(held);

	/* n2's only GPU: stopped, and its node waits for the GPU (a failure
	 * named per node) until it is healthy again */
	b = live_on(f, "mon", "n2");
	device_health(f, "n2", gpu_of(b), false);
	fx_idle(f);
	assert_null(live_on(f, "mon", "n2"));
	fx_alloc_status(f, b, "complete");
	fx_idle(f);
	ev = last_eval(f, "default", "mon");
	assert_string_equal(fx_s(ev, "status"), "blocked");
	assert_non_null(json_object_get(
		json_object_get(json_object_get(json_object_get(ev, "failed_placements"), "g"), "nodes"),
		"n2"));
	json_decref(ev);
	device_health(f, "n2", gpu_of(b), true);
	fx_idle(f);
	json_decref(b);
	assert_non_null((b = live_on(f, "mon", "n2")));
	json_decref(b);
	fx_free(f);
}

#define SYS_ROLL ", \"update\": {\"max_parallel\": 1, \"min_healthy_time\": \"0s\"," \
		 " \"healthy_deadline\": \"1m\", \"progress_deadline\": \"5m\", \"auto_revert\": true," \
		 " \"stagger\": \"0s\"}"

/* Reports every pending live allocation of job running; how many. */
static size_t sys_run_pending(struct fx *f, const char *job)
{
	json_t *all = fx_job_allocs(f, job), *a;
	size_t i, n = 0;
	json_array_foreach(all, i, a)
		if (!strcmp(fx_s(a, "desired_status"), "run") &&
		    !strcmp(fx_s(a, "client_status"), "pending")) {
			fx_alloc_status(f, a, "running");
			n++;
		}
	json_decref(all);
	fx_idle(f);
	return n;
}

/* The node ids of job's desired-run allocations of version v, sorted by
 * creation (then node id), comma-separated (static buffer). */
static const char *nodes_at(struct fx *f, const char *job, long long v)
{
	static char buf[128];
	json_t *all = fx_job_allocs(f, job), *a;
	const json_t *pick[8];
	size_t i, n = 0, at = 0;
	json_array_foreach(all, i, a)
		if (!strcmp(fx_s(a, "desired_status"), "run") && fx_i(a, "job_version") == v && n < 8)
			pick[n++] = a;
	for (i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (fx_i(pick[j], "create_time") < fx_i(pick[i], "create_time") ||
			    (fx_i(pick[j], "create_time") == fx_i(pick[i], "create_time") &&
			     strcmp(fx_s(pick[j], "node_id"), fx_s(pick[i], "node_id")) < 0)) {
				const json_t *x = pick[i];
				pick[i] = pick[j];
				pick[j] = x;
			}
	buf[0] = 0;
	for (i = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? "," : "",
				       fx_s(pick[i], "node_id"));
	json_decref(all);
	return buf;
}

static json_t *sys_deployment(struct fx *f, const char *job)
{
	return fx_get(f, "/v1/job/%s/deployment", job);
}

/* update { max_parallel = 1 } on a system job: a deployment replaces one
 * node's allocation at a time, the next once the previous replacement is
 * healthy; an unhealthy one fails it, nothing more is replaced, and
 * auto_revert registers the stable version again, rolled back the same
 * way. */
static void test_server_rolling_health_gated(void **state)
{
	struct fx *f = fx_new();
	json_t *d, *job;
	char *t;
	(void)state;
	fx_node(f, "n1", 0, "none", "exclusive", NULL);
	fx_node(f, "n2", 0, "none", "exclusive", NULL);
	fx_node(f, "n3", 0, "none", "exclusive", NULL);
	t = fx_job("roll", "system", 1, NULL, SYS_ROLL, "/bin/sleep");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	assert_string_equal(nodes_at(f, "roll", 0), "n1,n2,n3");
	assert_int_equal(sys_run_pending(f, "roll"), 3);
	d = sys_deployment(f, "roll");
	assert_string_equal(fx_s(d, "status"), "successful");
	assert_int_equal(fx_i(json_object_get(json_object_get(d, "groups"), "g"), "desired_total"), 3);
	json_decref(d);

	/* version 1: one node at a time, in node order, each once the one
	 * before it is healthy */
	t = fx_job("roll", "system", 1, NULL, SYS_ROLL, "/bin/sh");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	assert_string_equal(nodes_at(f, "roll", 1), "n1");
	d = sys_deployment(f, "roll");
	assert_int_equal(fx_i(d, "job_version"), 1);
	assert_string_equal(fx_s(d, "status"), "running");
	json_decref(d);
	/* an evaluation meanwhile (a node's change) replaces nothing more */
	fx_heartbeat(f, "n3");
	fx_node(f, "n3", 0, "none", "exclusive", NULL);
	fx_idle(f);
	assert_string_equal(nodes_at(f, "roll", 1), "n1");
	assert_int_equal(sys_run_pending(f, "roll"), 1);
	assert_string_equal(nodes_at(f, "roll", 1), "n1,n2");
	assert_int_equal(sys_run_pending(f, "roll"), 1);
	assert_string_equal(nodes_at(f, "roll", 1), "n1,n2,n3");
	assert_int_equal(sys_run_pending(f, "roll"), 1);
	d = sys_deployment(f, "roll");
	assert_string_equal(fx_s(d, "status"), "successful");
	json_decref(d);

	/* version 2 fails on its first node: the rest keep version 1, and
	 * the job goes back to it (version 3), n1 first */
	t = fx_job("roll", "system", 1, NULL, SYS_ROLL, "/bin/false");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	assert_string_equal(nodes_at(f, "roll", 2), "n1");
	json_t *bad = live_on(f, "roll", "n1");
	fx_alloc_status(f, bad, "failed");
	json_decref(bad);
	fx_idle(f);
	job = fx_get(f, "/v1/job/%s", "roll");
	assert_int_equal(fx_i(job, "version"), 3);
	json_decref(job);
	json_t *all = fx_get(f, "/v1/job/%s/deployments", "roll"), *x;
	size_t i;
	d = NULL;
	json_array_foreach(all, i, x)
		if (fx_i(x, "job_version") == 2)
			d = x;
	assert_non_null(d);
	assert_string_equal(fx_s(d, "status"), "failed");
	assert_non_null(strstr(fx_s(d, "status_description"), "rolling back to job version 1"));
	json_decref(all);
	/* version 3 is version 1's spec: n2 and n3 kept in place, n1 placed
	 * again */
	assert_string_equal(nodes_at(f, "roll", 2), "");
	assert_int_equal(sys_run_pending(f, "roll"), 1);
	d = sys_deployment(f, "roll");
	assert_int_equal(fx_i(d, "job_version"), 3);
	assert_string_equal(fx_s(d, "status"), "successful");
	json_decref(d);
	fx_free(f);
}

/* Without auto_revert, a failed rollout leaves the nodes it did not reach
 * on the old version and does not try the failed version again on its
 * node, whatever evaluations come. */
static void test_server_failed_rollout_stays(void **state)
{
	struct fx *f = fx_new();
	const char *roll = ", \"update\": {\"max_parallel\": 1, \"min_healthy_time\": \"0s\","
			   " \"stagger\": \"0s\"}";
	json_t *d, *bad;
	char *t;
	(void)state;
	fx_node(f, "n1", 0, "none", "exclusive", NULL);
	fx_node(f, "n2", 0, "none", "exclusive", NULL);
	t = fx_job("roll", "system", 1, NULL, roll, "/bin/sleep");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	assert_int_equal(sys_run_pending(f, "roll"), 2);
	t = fx_job("roll", "system", 1, NULL, roll, "/bin/false");
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	bad = live_on(f, "roll", "n1");
	assert_non_null(bad);
	assert_int_equal(fx_i(bad, "job_version"), 1);
	fx_alloc_status(f, bad, "failed");
	json_decref(bad);
	fx_idle(f);
	d = sys_deployment(f, "roll");
	assert_string_equal(fx_s(d, "status"), "failed");
	json_decref(d);
	fx_node(f, "n1", 0, "none", "exclusive", NULL); /* an evaluation of n1 */
	fx_idle(f);
	assert_null(live_on(f, "roll", "n1"));
	assert_string_equal(nodes_at(f, "roll", 1), "n1"); /* the failed one, alone */
	assert_string_equal(nodes_at(f, "roll", 0), "n2");
	fx_free(f);
}

/* A new version with a constraint a node fails: that node's allocation
 * stops, saying why, and nothing is placed there; the others are
 * replaced as usual. */
static void test_server_new_constraint_stops_where_it_fails(void **state)
{
	struct fx *f = fx_new();
	json_t *a, *b, *old, *ev;
	char *t;
	(void)state;
	fx_node(f, "n1", 0, "none", "exclusive", "r1");
	fx_node(f, "n2", 0, "none", "exclusive", "r2");
	fx_submit(f, "sys", "system", 1, NULL, NULL);
	fx_idle(f);
	a = live_on(f, "sys", "n1");
	b = live_on(f, "sys", "n2");
	assert_non_null(a);
	assert_non_null(b);
	t = fx_job("sys", "system", 1, NULL,
		   ", \"constraints\": [{\"attribute\": \"${meta.rack}\", \"operator\": \"!=\","
		   " \"value\": \"r2\"}]", NULL);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	old = fx_get(f, "/v1/allocation/%s", fx_s(b, "id"));
	assert_string_equal(fx_s(old, "desired_status"), "stop");
	assert_string_equal(fx_s(old, "desired_description"),
			    "node no longer matches the job: constraint ${meta.rack} != r2 filtered 1 node");
	json_decref(old);
	assert_null(live_on(f, "sys", "n2"));
	old = fx_get(f, "/v1/allocation/%s", fx_s(a, "id"));
	assert_string_equal(fx_s(old, "desired_description"), "job version changed; replaced on its node");
	json_decref(old);
	json_decref(a);
	a = live_on(f, "sys", "n1");
	assert_int_equal(fx_i(a, "job_version"), 1);
	ev = last_eval(f, "default", "sys");
	assert_string_equal(fx_s(ev, "status"), "complete");
	json_decref(ev);
	json_decref(a);
	json_decref(b);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_every_schedulable_node),
	cmocka_unit_test(test_live_kept_lost_not_moved),
	cmocka_unit_test(test_draining_stops_without_replacement),
	cmocka_unit_test(test_new_version_replaced_on_its_node),
	cmocka_unit_test(test_ineligible_keeps_its_version),
	cmocka_unit_test(test_ended),
	cmocka_unit_test(test_duplicates_and_removed_group),
	cmocka_unit_test(test_unfit_node_stops),
	cmocka_unit_test(test_server_every_node),
	cmocka_unit_test(test_server_no_room_named_per_node),
	cmocka_unit_test(test_server_sysbatch_once_per_node),
	cmocka_unit_test(test_server_drain),
	cmocka_unit_test(test_server_preempts_for_its_node),
	cmocka_unit_test(test_server_quota_holds_a_node),
	cmocka_unit_test(test_server_node_stops_matching),
	cmocka_unit_test(test_server_rolling_health_gated),
	cmocka_unit_test(test_server_failed_rollout_stays),
	cmocka_unit_test(test_server_new_constraint_stops_where_it_fails))
