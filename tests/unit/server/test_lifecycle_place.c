/* Placement rules the server adds to the engine: several device blocks
 * in one group (all on one node, never the same GPU twice), the
 * distinct_property constraint, and the explanation when there is no node
 * to evaluate. */
#include "server_fx.h"

#define T4 "{\"name\": \"nvidia/gpu\", \"count\": %d, \"constraints\": [{\"attribute\": \"${device.model}\", \"value\": \"T4\"}]}"
#define H100 "{\"name\": \"nvidia/gpu\", \"count\": %d, \"constraints\": [{\"attribute\": \"${device.model}\", \"value\": \"H100\"}]}"

/* A job whose group has two tasks, each with its own device block. */
static char *two_tasks(const char *id, const char *dev_a, const char *dev_b)
{
	char *s = NULL;
	assert_true(asprintf(&s,
		"{\"job\": {\"id\": \"%s\", \"groups\": [{\"name\": \"g\", \"tasks\": ["
		"{\"name\": \"a\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [%s]}},"
		"{\"name\": \"b\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64, \"devices\": [%s]}}]}]}}",
		id, dev_a, dev_b) > 0);
	return s;
}

static char *dev(const char *fmt, int count)
{
	char *s = NULL;
	assert_true(asprintf(&s, fmt, count) > 0);
	return s;
}

static void submit_two(struct fx *f, const char *id, const char *a, const char *b)
{
	char *t = two_tasks(id, a, b), *e = fx_submit_text(f, t);
	free(e);
	free(t);
}

static const char *dev_id(const json_t *alloc, size_t i)
{
	return fx_s(json_array_get(json_object_get(json_object_get(alloc, "resources"), "devices"), i), "id");
}

static size_t ndevs(const json_t *alloc)
{
	return json_array_size(json_object_get(json_object_get(alloc, "resources"), "devices"));
}

static void test_several_device_blocks(void **state)
{
	struct fx *f = fx_new();
	static const char *const t4s[] = { "T4", "T4" }, *const h100s[] = { "H100", "H100", "H100" },
			      *const mixed[] = { "T4", "H100" };
	char *t4 = dev(T4, 1), *h1 = dev(H100, 1), *h2 = dev(H100, 2), *expl;
	json_t *al, *ev;
	(void)state;
	fx_node_models(f, "t4only", t4s, 2, "exclusive");
	fx_node_models(f, "h100only", h100s, 3, "exclusive");
	fx_node_models(f, "mixed", mixed, 2, "exclusive");
	/* one T4 and one H100: only the mixed node has both */
	submit_two(f, "both", t4, h1);
	fx_idle(f);
	al = fx_the_alloc(f, "both");
	assert_string_equal(fx_s(al, "node_id"), "mixed");
	assert_int_equal(ndevs(al), 2);
	assert_string_equal(dev_id(al, 0), "GPU-mixed-0");
	assert_string_equal(dev_id(al, 1), "GPU-mixed-1");
	assert_int_equal(fx_i(json_object_get(al, "resources"), "cpu_milli"), 200);
	json_decref(al);
	/* 1 + 2 H100s: three different GPUs of one node */
	submit_two(f, "three", h1, h2);
	fx_idle(f);
	al = fx_the_alloc(f, "three");
	assert_string_equal(fx_s(al, "node_id"), "h100only");
	assert_int_equal(ndevs(al), 3);
	assert_string_not_equal(dev_id(al, 0), dev_id(al, 1));
	assert_string_not_equal(dev_id(al, 1), dev_id(al, 2));
	assert_string_not_equal(dev_id(al, 0), dev_id(al, 2));
	json_decref(al);
	/* again: no node has both free any more; the explanation says why
	 * (last: a GPU job that waits holds the fair queue for those behind) */
	submit_two(f, "both2", t4, h1);
	fx_idle(f);
	ev = fx_evals(f, "both2", "blocked");
	assert_int_equal(json_array_size(ev), 1);
	expl = strdup(fx_s(json_object_get(json_object_get(json_array_get(ev, 0), "failed_placements"), "g"),
			   "explanation"));
	assert_non_null(strstr(expl, "device block 2"));
	free(expl);
	json_decref(ev);
	/* the mixed node's T4 frees: both2 goes there */
	al = fx_the_alloc(f, "both");
	json_decref(fx_ok(f, "DELETE", "/v1/job/both", NULL));
	fx_idle(f);
	fx_alloc_status(f, al, "complete");
	json_decref(al);
	fx_idle(f);
	al = fx_the_alloc(f, "both2");
	assert_string_equal(fx_s(al, "node_id"), "mixed");
	json_decref(al);
	free(t4);
	free(h1);
	free(h2);
	fx_free(f);
}

static void test_two_shares_of_one_gpu(void **state)
{
	struct fx *f = fx_new();
	static const char *const one[] = { "H100" };
	const char *q = "{\"name\": \"nvidia/gpu\", \"count\": 1, \"compute\": 25}";
	json_t *al, *r;
	char *t;
	(void)state;
	fx_node_models(f, "m", one, 1, "mps");
	submit_two(f, "shares", q, q);
	fx_idle(f);
	al = fx_the_alloc(f, "shares");
	assert_int_equal(ndevs(al), 2);
	assert_string_equal(dev_id(al, 0), "GPU-m-0");
	assert_string_equal(dev_id(al, 1), "GPU-m-0");
	json_decref(al);
	/* half the GPU is taken: 60% more does not fit, 50% does */
	t = fx_job("half", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1, \"compute\": 50}", NULL, NULL);
	free(fx_submit_text(f, t));
	free(t);
	t = fx_job("big", "service", 1, "{\"name\": \"nvidia/gpu\", \"count\": 1, \"compute\": 60}", NULL, NULL);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	r = fx_running(f, "big");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	al = fx_the_alloc(f, "half");
	assert_string_equal(dev_id(al, 0), "GPU-m-0");
	json_decref(al);
	r = fx_ok(f, "GET", "/v1/gpus", NULL);
	assert_int_equal(fx_i(json_array_get(r, 0), "compute_used_milli"), 1000);
	json_decref(r);
	fx_free(f);
}

/* Rack of each desired-run allocation of job, counted into racks[3]
 * (r1, r2, r3). */
static void count_racks(struct fx *f, const char *job, int racks[3])
{
	json_t *r = fx_running(f, job), *x;
	size_t i;
	memset(racks, 0, 3 * sizeof(int));
	json_array_foreach(r, i, x) {
		json_t *node = fx_get(f, "/v1/node/%s", fx_s(x, "node_id"));
		const char *rack = fx_s(json_object_get(node, "meta"), "rack");
		assert_true(rack[0] == 'r' && rack[1] >= '1' && rack[1] <= '3');
		racks[rack[1] - '1']++;
		json_decref(node);
	}
	json_decref(r);
}

static void test_distinct_property(void **state)
{
	struct fx *f = fx_new();
	static const char *const none[] = { "" };
	int racks[3];
	json_t *ev;
	char *t;
	(void)state;
	fx_node(f, "r1a", 0, "none", "exclusive", "r1");
	fx_node(f, "r1b", 0, "none", "exclusive", "r1");
	fx_node(f, "r2a", 0, "none", "exclusive", "r2");
	fx_node_models(f, "norack", none, 0, "exclusive"); /* no meta.rack: never used */
	/* group level, one per rack: two racks, the third instance waits */
	fx_submit(f, "spread", "service", 3, NULL,
		  ", \"constraints\": [{\"attribute\": \"${meta.rack}\", \"operator\": \"distinct_property\"}]");
	fx_idle(f);
	count_racks(f, "spread", racks);
	assert_int_equal(racks[0], 1);
	assert_int_equal(racks[1], 1);
	assert_int_equal(racks[2], 0);
	ev = fx_evals(f, "spread", "blocked");
	assert_int_equal(json_array_size(ev), 1);
	assert_int_equal(fx_i(json_object_get(json_object_get(json_array_get(ev, 0), "failed_placements"), "g"),
			      "missing"), 1);
	json_decref(ev);
	fx_node(f, "r3a", 0, "none", "exclusive", "r3");
	fx_idle(f);
	count_racks(f, "spread", racks);
	assert_true(racks[0] == 1 && racks[1] == 1 && racks[2] == 1);

	/* job level, two per rack: five instances fit three racks 2+2+1 */
	assert_true(asprintf(&t,
		"{\"job\": {\"id\": \"two\", \"constraints\": [{\"attribute\": \"${meta.rack}\","
		" \"operator\": \"distinct_property\", \"value\": \"2\"}], \"groups\": [{\"name\": \"g\", \"count\": 5,"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64}}]}]}}") > 0);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	count_racks(f, "two", racks);
	assert_int_equal(racks[0] + racks[1] + racks[2], 5);
	assert_true(racks[0] <= 2 && racks[1] <= 2 && racks[2] <= 2);
	fx_free(f);
}

static const char *explanation(struct fx *f, const char *job, char *buf, size_t n)
{
	json_t *ev = fx_evals(f, job, "blocked");
	assert_int_equal(json_array_size(ev), 1);
	snprintf(buf, n, "%s", fx_s(json_object_get(json_object_get(json_array_get(ev, 0),
					"failed_placements"), "g"), "explanation"));
	json_decref(ev);
	return buf;
}

static void test_no_nodes_explained(void **state)
{
	struct fx *f = fx_new();
	char buf[1024];
	json_t *al;
	(void)state;
	fx_submit(f, "early", "service", 1, NULL, NULL);
	fx_idle(f);
	assert_non_null(strstr(explanation(f, "early", buf, sizeof(buf)), "no nodes registered"));
	fx_node(f, "n1", 0, "none", "exclusive", NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "early");
	assert_string_equal(fx_s(al, "node_id"), "n1");
	json_decref(al);
	json_decref(fx_ok(f, "POST", "/v1/node/n1/eligibility", "{\"eligible\": false}"));
	fx_submit(f, "late", "service", 1, NULL, NULL);
	fx_idle(f);
	assert_non_null(strstr(explanation(f, "late", buf, sizeof(buf)), "1 draining or ineligible"));
	fx_free(f);
}

fx_main(cmocka_unit_test(test_several_device_blocks),
	cmocka_unit_test(test_two_shares_of_one_gpu),
	cmocka_unit_test(test_distinct_property),
	cmocka_unit_test(test_no_nodes_explained))
