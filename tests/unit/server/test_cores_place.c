/* Reserved cores through the server: a node registered with
 * resources.cores, allocations that carry resources.tasks.<task>.cores
 * (on the GPU's NUMA node with numa require), the cpu a core counts
 * (cpu_milli / cpu.numcores), the explanations (per NUMA node; a node that
 * offers none), jobs submitted at once never sharing a core, and the plan
 * applier refusing a core handed out after its view. */
#include "server_fx.h"

#include <errno.h>
#include <pthread.h>

#include "common/xalloc.h"
#include "server/server-int.h"

/* A node of two NUMA nodes with four cores each (ids 0-3, 4-7), 2000
 * thousandths of cpu per core, and one GPU on NUMA 1 (none when !gpu). */
static void core_node(struct fx *f, const char *id, bool gpu)
{
	json_t *cores = json_array(), *devs = json_array(), *body;
	char *text;
	for (int i = 0; i < 8; i++)
		json_array_append_new(cores, json_pack("{s:i, s:i}", "id", i, "numa", i / 4));
	if (gpu)
		json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:b}", "id",
						      "GPU-0", "vendor", "nvidia", "type", "gpu",
						      "model", "H100", "memory_mib",
						      (json_int_t)81920, "numa_node", 1, "healthy", 1));
	body = json_pack("{s:{s:s, s:s, s:{s:s}, s:{s:I, s:I, s:o}, s:o}}", "node", "id", id,
			 "datacenter", "dc1", "attributes", "cpu.numcores", "8", "resources",
			 "cpu_milli", (json_int_t)16000, "memory_mib", (json_int_t)65536, "cores",
			 cores, "devices", devs);
	text = json_dumps(body, 0);
	json_decref(fx_ok(f, "POST", "/v1/node/register", text));
	free(text);
	json_decref(body);
}

/* A batch job of one task "t" with the given resources members. */
static char *cores_job(const char *id, const char *res)
{
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"%s\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\":"
		" {\"command\": \"/bin/true\"}, \"resources\": {%s}}]}]}}", id, res) > 0);
	return s;
}

static void submit(struct fx *f, const char *id, const char *res)
{
	char *t = cores_job(id, res);
	json_decref(fx_ok(f, "POST", "/v1/jobs", t));
	free(t);
}

/* The core ids of the job's one allocation, as "4,5" ("" when none). */
static char *cores_of(struct fx *f, const char *job, long long *cpu)
{
	json_t *al = fx_the_alloc(f, job), *res = json_object_get(al, "resources"), *c;
	json_t *ids = json_object_get(json_object_get(json_object_get(res, "tasks"), "t"), "cores");
	char *out = xstrdup(""), *next;
	size_t i;
	json_array_foreach(ids, i, c) {
		next = xasprintf("%s%s%lld", out, i ? "," : "", (long long)json_integer_value(c));
		free(out);
		out = next;
	}
	if (cpu)
		*cpu = fx_i(res, "cpu_milli");
	json_decref(al);
	return out;
}

static const char *why(struct fx *f, const char *job, char *buf, size_t n)
{
	json_t *e = last_eval(f, "default", job);
	snprintf(buf, n, "%s", fx_s(json_object_get(json_object_get(e, "failed_placements"), "g"),
				    "explanation"));
	json_decref(e);
	return buf;
}

static void test_cores_on_the_gpu_numa_node(void **state)
{
	struct fx *f = fx_new();
	char buf[1024], *c;
	long long cpu = 0;
	(void)state;
	core_node(f, "n1", true);
	submit(f, "gpu", "\"cores\": 2, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\"}],"
			 " \"numa\": {\"affinity\": \"require\", \"devices\": [\"nvidia/gpu\"]}");
	fx_idle(f);
	c = cores_of(f, "gpu", &cpu);
	assert_string_equal(c, "4,5");
	free(c);
	/* a core counts cpu_milli / cpu.numcores: 16000 / 8 */
	assert_int_equal(cpu, 2 * 2000);
	/* without numa: the lowest free ids */
	submit(f, "plain", "\"cores\": 3, \"memory\": 64");
	fx_idle(f);
	c = cores_of(f, "plain", &cpu);
	assert_string_equal(c, "0,1,2");
	free(c);
	/* 1 free on NUMA 0 (3), 2 on NUMA 1 (6, 7): 3 on one do not fit */
	submit(f, "big", "\"cores\": 3, \"memory\": 64, \"numa\": {\"affinity\": \"require\"}");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 0);
	why(f, "big", buf, sizeof(buf));
	assert_non_null(strstr(buf, "n1: 1 free core on NUMA 0, 2 on NUMA 1, 3 asked on one NUMA node"));
	/* prefer places it anyway */
	submit(f, "loose", "\"cores\": 3, \"memory\": 64, \"numa\": {\"affinity\": \"prefer\"}");
	fx_idle(f);
	c = cores_of(f, "loose", NULL);
	assert_string_equal(c, "3,6,7");
	free(c);
	/* freed cores are offered again */
	{
		json_t *al = fx_the_alloc(f, "plain");
		fx_alloc_status(f, al, "complete");
		json_decref(al);
	}
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "big"), 1);
	c = cores_of(f, "big", NULL);
	assert_string_equal(c, "0,1,2");
	free(c);
	fx_free(f);
}

/* A node that reports no cores (an agent before core reservation) takes
 * no task with cores, and says so; tasks without cores still land. */
static void test_node_without_cores(void **state)
{
	struct fx *f = fx_new();
	char buf[1024];
	(void)state;
	fx_node(f, "old", 1, "H100", "exclusive", NULL);
	submit(f, "c", "\"cores\": 1, \"memory\": 64");
	submit(f, "m", "\"cpu\": 100, \"memory\": 64");
	fx_idle(f);
	assert_int_equal(nlive(f, "default", "c"), 0);
	assert_int_equal(nlive(f, "default", "m"), 1);
	why(f, "c", buf, sizeof(buf));
	assert_non_null(strstr(buf, "no reservable cores on 1 node (agents that report no "
				    "resources.cores)"));
	fx_free(f);
}

/* numa devices naming a device ask that is not the group's first: said
 * plainly in the placement failure. */
static void test_numa_second_device_ask(void **state)
{
	struct fx *f = fx_new();
	char buf[1024];
	(void)state;
	core_node(f, "n1", true);
	json_decref(fx_ok(f, "POST", "/v1/jobs",
		"{\"job\": {\"id\": \"two\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
		" \"tasks\": [{\"name\": \"a\", \"driver\": \"raw_exec\", \"config\": {\"command\":"
		" \"/bin/true\"}, \"resources\": {\"memory\": 64, \"devices\": [{\"name\": \"gpu\"}]}},"
		" {\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cores\": 1, \"memory\": 64, \"devices\": [{\"name\": \"nvidia/gpu\"}],"
		" \"numa\": {\"affinity\": \"require\", \"devices\": [\"nvidia/gpu\"]}}}]}]}}"));
	fx_idle(f);
	why(f, "two", buf, sizeof(buf));
	assert_non_null(strstr(buf, "task \"t\": numa devices \"nvidia/gpu\": only the group's "
				    "first device ask (\"gpu\") can share a NUMA node"));
	fx_free(f);
}

static void test_bad_node_cores_refused(void **state)
{
	struct fx *f = fx_new();
	long st = 0;
	json_t *r;
	char *text;
	(void)state;
	r = fx_call(f, "POST", "/v1/node/register",
		    "{\"node\": {\"id\": \"d\", \"resources\": {\"cpu_milli\": 1000, \"memory_mib\": 1000,"
		    " \"cores\": [{\"id\": 1, \"numa\": 0}, {\"id\": 1, \"numa\": 0}]}}}", &st);
	assert_int_equal(st, 400);
	text = json_dumps(r, 0);
	assert_non_null(strstr(text, "core 1 listed twice"));
	free(text);
	json_decref(r);
	r = fx_call(f, "POST", "/v1/node/register",
		    "{\"node\": {\"id\": \"d\", \"resources\": {\"cores\": [{\"id\": -2}]}}}", &st);
	assert_int_equal(st, 400);
	json_decref(r);
	fx_free(f);
}

struct submitter {
	pthread_t t;
	struct fx *f;
	int first, failed;
};

static void *submit_main(void *arg)
{
	struct submitter *s = arg;
	for (int i = s->first; i < 24; i += 8) {
		char id[32], *job;
		long st = 0;
		snprintf(id, sizeof(id), "j%d", i);
		job = cores_job(id, "\"cores\": 1, \"memory\": 64");
		json_decref(fx_call(s->f, "POST", "/v1/jobs", job, &st));
		s->failed += st != 200;
		free(job);
	}
	return NULL;
}

/* Jobs submitted at once from 8 threads (evaluations planned
 * concurrently): 8 cores, 8 placed, no core twice. */
static void test_concurrent_never_share_a_core(void **state)
{
	struct fx *f = fx_new();
	struct submitter s[8];
	json_t *all, *al;
	int held[8] = { 0 }, placed = 0;
	size_t i;
	(void)state;
	core_node(f, "n1", false);
	for (int k = 0; k < 8; k++) {
		s[k] = (struct submitter){ .f = f, .first = k };
		assert_int_equal(pthread_create(&s[k].t, NULL, submit_main, &s[k]), 0);
	}
	for (int k = 0; k < 8; k++) {
		pthread_join(s[k].t, NULL);
		assert_int_equal(s[k].failed, 0);
	}
	fx_idle(f);
	all = fx_ok(f, "GET", "/v1/allocations", NULL);
	json_array_foreach(all, i, al) {
		json_t *c = json_object_get(json_object_get(json_object_get(
			json_object_get(al, "resources"), "tasks"), "t"), "cores");
		if (strcmp(fx_s(al, "desired_status"), "run"))
			continue;
		assert_int_equal(json_array_size(c), 1);
		held[json_integer_value(json_array_get(c, 0))]++;
		placed++;
	}
	json_decref(all);
	assert_int_equal(placed, 8);
	for (int k = 0; k < 8; k++)
		assert_int_equal(held[k], 1);
	fx_free(f);
}

/* A plan computed from a view, committed after another allocation took
 * the same cores: refused (-ESTALE), nothing written. */
static void test_apply_refuses_core_taken_twice(void **state)
{
	struct fx *f = fx_new();
	struct server *srv = f->srv;
	struct sched_view v;
	struct plan p;
	struct herd_err err = { 0 };
	json_t *intruder, *job, *ev, *a;
	char id[ID_LEN];
	(void)state;
	submit(f, "pc", "\"cores\": 2, \"memory\": 64");
	fx_idle(f); /* no node yet: nothing placed */
	assert_int_equal(fx_status(f, "DELETE", "/v1/job/pc", NULL), 200);
	fx_idle(f);
	core_node(f, "n1", false);
	fx_idle(f);
	assert_int_equal(sched_view_read(srv->store, NULL, "default", "pc", &v, &err), 0);
	job = json_copy(v.job);
	json_object_set_new(job, "stop", json_false());
	plan_init(&p);
	assert_int_equal(plan_compute(srv, &v, job, "", &p, &err), 0);
	assert_int_equal(p.create, 1);
	a = json_object_get(json_object_get(json_object_get(json_object_get(
		json_array_get(p.allocs, 0), "resources"), "tasks"), "t"), "cores");
	assert_int_equal(json_array_size(a), 2);
	/* another job takes those very cores meanwhile */
	intruder = json_deep_copy(json_array_get(p.allocs, 0));
	new_id(id);
	json_object_set_new(intruder, "id", json_string(id));
	json_object_set_new(intruder, "job_id", json_string("intruder"));
	assert_int_equal(store_put(srv->store, STORE_ALLOC, intruder, NULL, &err), 0);
	ev = eval_new("default", "pc", "test", NULL);
	assert_int_equal(plan_apply(srv, &v, &p, ev, NULL, NULL, &err), -ESTALE);
	json_decref(ev);
	plan_release(&p);
	json_decref(job);
	sched_view_release(&v);
	a = fx_job_allocs(f, "pc");
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	json_decref(intruder);
	fx_free(f);
}

/* A group of two device asks (the second placed on the node the first
 * chose, multi_device.c) and two instances in one plan: the instances get
 * cores of their own. */
static void test_two_device_asks_two_instances(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *c;
	bool held[8] = { false };
	size_t i, k;
	(void)state;
	/* a node of cores without GPUs, one of GPUs without cores: neither
	 * takes the group; "both" has 4 GPUs (of no known NUMA node: the
	 * cores go by lowest id) and 8 cores */
	core_node(f, "n1", false);
	fx_node(f, "g4", 4, "H100", "exclusive", NULL);
	{
		json_t *cores = json_array(), *devs = json_array(), *body;
		char *text;
		for (int j = 0; j < 8; j++)
			json_array_append_new(cores, json_pack("{s:i, s:i}", "id", j, "numa", j / 4));
		for (int j = 0; j < 4; j++) {
			char did[16];
			snprintf(did, sizeof(did), "GPU-%d", j);
			json_array_append_new(devs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:b}", "id",
							      did, "vendor", "nvidia", "type", "gpu",
							      "model", "H100", "memory_mib",
							      (json_int_t)81920, "numa_node", -1,
							      "healthy", 1));
		}
		body = json_pack("{s:{s:s, s:s, s:{s:I, s:I, s:o}, s:o}}", "node", "id", "both",
				 "datacenter", "dc1", "resources", "cpu_milli", (json_int_t)16000,
				 "memory_mib", (json_int_t)65536, "cores", cores, "devices", devs);
		text = json_dumps(body, 0);
		json_decref(fx_ok(f, "POST", "/v1/node/register", text));
		free(text);
		json_decref(body);
	}
	json_decref(fx_ok(f, "POST", "/v1/jobs",
		"{\"job\": {\"id\": \"md\", \"type\": \"batch\", \"groups\": [{\"name\": \"g\","
		" \"count\": 2, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\":"
		" {\"command\": \"/bin/true\"}, \"resources\": {\"cores\": 3, \"memory\": 64,"
		" \"devices\": [{\"name\": \"nvidia/gpu\"}, {\"name\": \"gpu\"}]}}]}]}}"));
	fx_idle(f);
	al = live_allocs(f, "default", "md");
	assert_int_equal(json_array_size(al), 2);
	json_array_foreach(al, i, c) {
		json_t *ids = json_object_get(json_object_get(json_object_get(
			json_object_get(c, "resources"), "tasks"), "t"), "cores"), *id;
		assert_string_equal(fx_s(c, "node_id"), "both");
		assert_int_equal(json_array_size(ids), 3);
		json_array_foreach(ids, k, id) {
			assert_false(held[json_integer_value(id)]);
			held[json_integer_value(id)] = true;
		}
	}
	json_decref(al);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cores_on_the_gpu_numa_node),
		cmocka_unit_test(test_node_without_cores),
		cmocka_unit_test(test_numa_second_device_ask),
		cmocka_unit_test(test_bad_node_cores_refused),
		cmocka_unit_test(test_concurrent_never_share_a_core),
		cmocka_unit_test(test_apply_refuses_core_taken_twice),
		cmocka_unit_test(test_two_device_asks_two_instances),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
