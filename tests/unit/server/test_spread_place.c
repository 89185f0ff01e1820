/* The spread block through the server: the engine gets the group's count
 * and the counts of the group's allocations per value, so that one
 * evaluation spreads (2+2 over two racks, one of them a single node;
 * targets 75/25: 3+1), a later one counts what runs (count 6: 3+3), an
 * allocation a user stopped no longer counts (its replacement goes back
 * to its rack), other groups do not count, and the plan endpoint gives
 * each placement's spread part. */
#include "server_fx.h"

#define SPREAD_RACK "\"spreads\": [{\"attribute\": \"${meta.rack}\"}]"
#define TARGETS_RACK "\"spreads\": [{\"attribute\": \"${meta.rack}\", \"weight\": 100," \
	" \"targets\": [{\"value\": \"r1\", \"percent\": 75}, {\"value\": \"r2\", \"percent\": 25}]}]"

/* Per rack (r1, r2) the desired-run allocations of job, of group g (NULL:
 * any). */
static void count_racks(struct fx *f, const char *job, const char *group, int racks[2])
{
	json_t *r = fx_running(f, job), *x;
	size_t i;
	racks[0] = racks[1] = 0;
	json_array_foreach(r, i, x) {
		json_t *node;
		const char *rack;
		if (group && strcmp(fx_s(x, "task_group"), group))
			continue;
		node = fx_get(f, "/v1/node/%s", fx_s(x, "node_id"));
		rack = fx_s(json_object_get(node, "meta"), "rack");
		assert_true(!strcmp(rack, "r1") || !strcmp(rack, "r2"));
		racks[rack[1] - '1']++;
		json_decref(node);
	}
	json_decref(r);
}

/* Three nodes: r1a and r1b in rack r1, r2a alone in r2. */
static struct fx *three_nodes(void)
{
	struct fx *f = fx_new();
	fx_node(f, "r1a", 0, "none", "exclusive", "r1");
	fx_node(f, "r1b", 0, "none", "exclusive", "r1");
	fx_node(f, "r2a", 0, "none", "exclusive", "r2");
	return f;
}

static void submit(struct fx *f, const char *id, int count, const char *group_extra)
{
	char *t = fx_job(id, "service", count, NULL, group_extra, NULL);
	free(fx_submit_text(f, t));
	free(t);
}

static void test_one_evaluation_spreads(void **state)
{
	struct fx *f = three_nodes();
	int racks[2];
	(void)state;

	/* without a spread herd packs the four onto one node */
	submit(f, "packed", 4, NULL);
	fx_idle(f);
	count_racks(f, "packed", NULL, racks);
	assert_true(racks[0] == 4 || racks[1] == 4);
	json_decref(fx_ok(f, "DELETE", "/v1/job/packed?purge=true", NULL));
	fx_idle(f);

	submit(f, "even", 4, ", " SPREAD_RACK);
	fx_idle(f);
	count_racks(f, "even", NULL, racks);
	assert_int_equal(racks[0], 2);
	assert_int_equal(racks[1], 2);

	submit(f, "targets", 4, ", " TARGETS_RACK);
	fx_idle(f);
	count_racks(f, "targets", NULL, racks);
	assert_int_equal(racks[0], 3);
	assert_int_equal(racks[1], 1);

	/* a later evaluation counts the four that run: 6 is 3+3 */
	submit(f, "even", 6, ", " SPREAD_RACK);
	fx_idle(f);
	count_racks(f, "even", NULL, racks);
	assert_int_equal(racks[0], 3);
	assert_int_equal(racks[1], 3);
	fx_free(f);
}

/* A user's stop: the stopped allocation (desired stop, still pending on
 * its client) holds no share any more, so its replacement goes back to
 * its rack, r2; counting it would tie the racks and herd would take r1a,
 * the first node. */
static void test_stopped_does_not_count(void **state)
{
	struct fx *f = three_nodes();
	json_t *r, *x, *victim = NULL;
	char path[256];
	int racks[2];
	size_t i;
	(void)state;

	submit(f, "even", 4, ", " SPREAD_RACK);
	fx_idle(f);
	r = fx_running(f, "even");
	json_array_foreach(r, i, x)
		if (!strcmp(fx_s(x, "node_id"), "r2a") && !victim)
			victim = json_incref(x);
	json_decref(r);
	assert_non_null(victim);
	snprintf(path, sizeof(path), "/v1/allocation/%s/stop", fx_s(victim, "id"));
	json_decref(fx_ok(f, "POST", path, NULL));
	fx_idle(f);
	count_racks(f, "even", NULL, racks);
	assert_int_equal(racks[0], 2);
	assert_int_equal(racks[1], 2);
	json_decref(victim);
	fx_free(f);
}

/* Another group of the job does not count: group "a" (no spread) packs
 * its three onto one node first; group "g" still spreads 2+2 (counting
 * a's would make it 1+3 or 3+1). */
static void test_other_groups_do_not_count(void **state)
{
	struct fx *f = three_nodes();
	int racks[2];
	char *t = NULL;
	(void)state;

	assert_true(asprintf(&t,
		"{\"job\": {\"id\": \"two\", \"groups\": ["
		"{\"name\": \"a\", \"count\": 3, \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\","
		" \"config\": {\"command\": \"/bin/true\"}, \"resources\": {\"cpu\": 100, \"memory\": 64}}]},"
		"{\"name\": \"g\", \"count\": 4, " SPREAD_RACK ", \"tasks\": [{\"name\": \"t\","
		" \"driver\": \"raw_exec\", \"config\": {\"command\": \"/bin/true\"},"
		" \"resources\": {\"cpu\": 100, \"memory\": 64}}]}"
		"]}}") > 0);
	free(fx_submit_text(f, t));
	free(t);
	fx_idle(f);
	count_racks(f, "two", "a", racks);
	assert_true(racks[0] == 3 || racks[1] == 3);
	count_racks(f, "two", "g", racks);
	assert_int_equal(racks[0], 2);
	assert_int_equal(racks[1], 2);
	fx_free(f);
}

/* POST /v1/job/:id/plan: each placement's spread part: 50 for the first
 * two (even shares of 2, none held), 0 for the next two. */
static void test_plan_shows_spread(void **state)
{
	struct fx *f = three_nodes();
	char *t = fx_job("even", "service", 4, NULL, ", " SPREAD_RACK, NULL), *body = NULL;
	json_t *r, *pl;
	double sum = 0;
	size_t i;
	(void)state;

	assert_true(asprintf(&body, "%s", t) > 0);
	r = fx_ok(f, "POST", "/v1/job/even/plan", body);
	assert_int_equal(json_array_size(json_object_get(r, "placements")), 4);
	json_array_foreach(json_object_get(r, "placements"), i, pl) {
		assert_true(json_is_number(json_object_get(pl, "spread_score")));
		sum += json_number_value(json_object_get(pl, "spread_score"));
	}
	assert_true(sum > 99.9 && sum < 100.1);
	json_decref(r);
	free(body);
	free(t);
	/* a job without spreads has no spread part */
	t = fx_job("plain", "service", 1, NULL, NULL, NULL);
	r = fx_ok(f, "POST", "/v1/job/plain/plan", t);
	assert_null(json_object_get(json_array_get(json_object_get(r, "placements"), 0), "spread_score"));
	json_decref(r);
	free(t);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_one_evaluation_spreads),
	cmocka_unit_test(test_stopped_does_not_count),
	cmocka_unit_test(test_other_groups_do_not_count),
	cmocka_unit_test(test_plan_shows_spread))
