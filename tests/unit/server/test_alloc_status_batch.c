/* PUT /v1/node/:id/allocations/status: an agent's statuses in one request.
 * Each entry is answered on its own (refused entries do not stop the
 * others), a malformed body stores nothing, another node's allocation is
 * refused, evaluations come as from the single route, node write is
 * needed. */
#include "server_fx.h"

#include "common/strbuf.h"

static json_t *batch(struct fx *f, const char *node, const char *body, long *status)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/node/%s/allocations/status", node);
	return fx_call(f, "PUT", path, body, status);
}

static char *entry(const char *id, const char *status)
{
	char *s = NULL;
	assert_true(asprintf(&s, "{\"id\": \"%s\", \"client_status\": \"%s\", \"client_description\": "
			     "\"d\", \"task_states\": {\"t\": {\"state\": \"running\"}}}", id, status) > 0);
	return s;
}

static const char *result_error(const json_t *r, size_t i)
{
	json_t *e = json_object_get(json_array_get(json_object_get(r, "results"), i), "error");
	return e ? json_string_value(json_object_get(e, "code")) : NULL;
}

static const char *result_id(const json_t *r, size_t i)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(r, "results"), i), "id"));
}

static const char *status_of(struct fx *f, const char *alloc_id)
{
	static char st[32];
	json_t *a = fx_get(f, "/v1/allocation/%s", alloc_id);
	snprintf(st, sizeof(st), "%s", fx_s(a, "client_status"));
	json_decref(a);
	return st;
}

/* Job a (2 allocations) on n1; job b (1) on n2, n1 made ineligible for it. */
static struct fx *two_nodes(char a_ids[2][64], char b_id[64])
{
	struct fx *f = fx_new();
	json_t *r;
	fx_node(f, "n1", 0, "none", "exclusive", NULL);
	fx_submit(f, "a", "batch", 2, NULL, NULL);
	r = fx_wait_running(f, "a", 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *al = json_array_get(r, i);
		assert_string_equal(fx_s(al, "node_id"), "n1");
		snprintf(a_ids[i], 64, "%s", fx_s(al, "id"));
	}
	json_decref(r);
	fx_node(f, "n2", 0, "none", "exclusive", NULL);
	json_decref(fx_ok(f, "POST", "/v1/node/n1/eligibility", "{\"eligible\": false}"));
	fx_submit(f, "b", "batch", 1, NULL, NULL);
	r = fx_wait_running(f, "b", 1);
	assert_string_equal(fx_s(json_array_get(r, 0), "node_id"), "n2");
	snprintf(b_id, 64, "%s", fx_s(json_array_get(r, 0), "id"));
	json_decref(r);
	fx_idle(f);
	return f;
}

static void test_each_entry_answered_on_its_own(void **state)
{
	char a[2][64], b[64], *e0, *e1, *e2, *e3, *body = NULL;
	struct fx *f = two_nodes(a, b);
	json_t *r, *al;
	long st;
	(void)state;

	e0 = entry(a[0], "running");
	e1 = entry(b, "running");            /* another node's allocation */
	e2 = entry("0b3c0d7e-0000-4000-8000-000000000000", "complete");   /* unknown */
	e3 = entry(a[1], "sleeping");        /* malformed entry */
	assert_true(asprintf(&body, "{\"allocations\": [%s, %s, %s, %s]}", e0, e1, e2, e3) > 0);
	r = batch(f, "n1", body, &st);
	assert_int_equal(st, 200);
	assert_true(json_integer_value(json_object_get(r, "index")) > 0);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 4);
	assert_string_equal(result_id(r, 0), a[0]);
	assert_null(result_error(r, 0));
	assert_string_equal(result_id(r, 1), b);
	assert_string_equal(result_error(r, 1), "alloc_not_on_node");
	assert_string_equal(result_error(r, 2), "alloc_not_found");
	assert_string_equal(result_id(r, 3), a[1]);
	assert_string_equal(result_error(r, 3), "invalid_argument");
	json_decref(r);
	free(body);
	/* the good entry is stored with its fields; the refused ones are not */
	al = fx_get(f, "/v1/allocation/%s", a[0]);
	assert_string_equal(fx_s(al, "client_status"), "running");
	assert_string_equal(fx_s(al, "client_description"), "d");
	assert_non_null(json_object_get(json_object_get(al, "task_states"), "t"));
	assert_true(fx_i(al, "start_time") > 0);
	json_decref(al);
	assert_string_equal(status_of(f, b), "pending");
	assert_string_equal(status_of(f, a[1]), "pending");

	/* a refused transition (complete -> running) and a duplicate stop
	 * only themselves */
	free(e0);
	e0 = entry(a[0], "complete");
	assert_true(asprintf(&body, "{\"allocations\": [%s]}", e0) > 0);
	json_decref(batch(f, "n1", body, &st));
	assert_int_equal(st, 200);
	free(body);
	free(e0);
	free(e3);
	e0 = entry(a[0], "running");
	e3 = entry(a[1], "complete");
	assert_true(asprintf(&body, "{\"allocations\": [%s, %s, %s]}", e0, e3, e3) > 0);
	r = batch(f, "n1", body, &st);
	assert_int_equal(st, 200);
	assert_string_equal(result_error(r, 0), "invalid_transition");
	assert_null(result_error(r, 1));
	assert_string_equal(result_error(r, 2), "invalid_argument");
	json_decref(r);
	assert_string_equal(status_of(f, a[0]), "complete");
	assert_string_equal(status_of(f, a[1]), "complete");
	/* n2's agent reports its own */
	free(body);
	free(e1);
	e1 = entry(b, "complete");
	assert_true(asprintf(&body, "{\"allocations\": [%s]}", e1) > 0);
	r = batch(f, "n2", body, &st);
	assert_int_equal(st, 200);
	assert_null(result_error(r, 0));
	json_decref(r);
	assert_string_equal(status_of(f, b), "complete");
	/* an unknown node */
	json_decref(batch(f, "n9", body, &st));
	assert_int_equal(st, 404);
	free(body);
	free(e0);
	free(e1);
	free(e2);
	free(e3);
	fx_free(f);
}

static void test_malformed_body_stores_nothing(void **state)
{
	char a[2][64], b[64], *e0, *body;
	struct fx *f = two_nodes(a, b);
	long long before, after;
	long st;
	json_t *r;
	(void)state;

	e0 = entry(a[0], "running");
	const char *fmt[] = {
		"[%s]",
		"{\"allocations\": %s}",
		"{\"allocations\": [%s, 7]}",
		"{\"allocations\": [%s, {\"client_status\": \"running\"}]}",
		"{\"allocations\": [%s, {\"id\": 5, \"client_status\": \"running\"}]}",
		"{\"allocs\": [%s]}",
	};
	json_decref(fx_call_index(f, "GET", "/v1/allocations", NULL, &st, &before));
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		body = NULL;
		assert_true(asprintf(&body, fmt[i], e0) > 0);
		r = batch(f, "n1", body, &st);
		assert_int_equal(st, 400);
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
				    "invalid_argument");
		json_decref(r);
		free(body);
	}
	/* more entries than one request may carry */
	{
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "{\"allocations\": [");
		for (int i = 0; i <= 1024; i++)
			strbuf_addf(&sb, "%s{\"id\": \"%s\", \"client_status\": \"running\"}",
				    i ? ", " : "", a[0]);
		strbuf_adds(&sb, "]}");
		json_decref(batch(f, "n1", sb.buf, &st));
		assert_int_equal(st, 400);
		strbuf_release(&sb);
	}
	json_decref(batch(f, "n1", "not json", &st));
	assert_int_equal(st, 400);
	json_decref(fx_call_index(f, "GET", "/v1/allocations", NULL, &st, &after));
	assert_int_equal(before, after);
	assert_string_equal(status_of(f, a[0]), "pending");
	/* an empty batch is fine and changes nothing */
	r = batch(f, "n1", "{\"allocations\": []}", &st);
	assert_int_equal(st, 200);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 0);
	json_decref(r);
	free(e0);
	fx_free(f);
}

/* The evaluations of the single route: a failure gets an alloc-failure
 * evaluation, a batch allocation that completes none. */
static void test_evaluations_as_single_route(void **state)
{
	char a[2][64], b[64], *e0, *e1, *body = NULL;
	struct fx *f = two_nodes(a, b);
	json_t *evals, *x;
	size_t i, failures = 0, before = 0;
	long st;
	(void)state;

	evals = fx_evals(f, "a", NULL);
	json_array_foreach(evals, i, x)
		before += !strcmp(fx_s(x, "triggered_by"), "alloc-failure");
	json_decref(evals);
	assert_int_equal(before, 0);
	e0 = entry(a[0], "failed");
	e1 = entry(a[1], "complete");
	assert_true(asprintf(&body, "{\"allocations\": [%s, %s]}", e0, e1) > 0);
	json_decref(batch(f, "n1", body, &st));
	assert_int_equal(st, 200);
	fx_idle(f);
	/* one, for the failed allocation (it may have been rescheduled,
	 * which makes evaluations of other kinds) */
	evals = fx_evals(f, "a", NULL);
	json_array_foreach(evals, i, x)
		failures += !strcmp(fx_s(x, "triggered_by"), "alloc-failure");
	assert_int_equal(failures, 1);
	json_decref(evals);
	free(body);
	free(e0);
	free(e1);
	fx_free(f);
}

static void test_needs_node_write(void **state)
{
	struct fx *f = fx_new_teams(0, 1);
	char *mgmt, *team, *node, *e0, *body = NULL;
	json_t *r;
	long st;
	(void)state;

	r = fx_ok(f, "POST", "/v1/acl/bootstrap", NULL);
	mgmt = strdup(json_string_value(json_object_get(r, "secret_id")));
	json_decref(r);
	f->token = mgmt;
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"a\"}}"));
	team = fx_token(f, "team-a", "{\"namespace\": {\"a\": \"submit\"}}");
	node = fx_token(f, "node", "{\"node\": \"write\"}");
	f->token = node;
	node_add(f, "n1", 4, "H100");
	f->token = team;
	submit_gpu(f, "a", "j", 1, 50);
	fx_idle(f);
	r = live_allocs(f, "a", "j");
	e0 = entry(fx_s(json_array_get(r, 0), "id"), "running");
	json_decref(r);
	assert_true(asprintf(&body, "{\"allocations\": [%s]}", e0) > 0);
	json_decref(batch(f, "n1", body, &st));
	assert_int_equal(st, 403);
	f->token = NULL;
	json_decref(batch(f, "n1", body, &st));
	assert_int_equal(st, 403);
	f->token = node;
	r = batch(f, "n1", body, &st);
	assert_int_equal(st, 200);
	assert_null(result_error(r, 0));
	json_decref(r);
	f->token = NULL;
	free(body);
	free(e0);
	free(mgmt);
	free(team);
	free(node);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_each_entry_answered_on_its_own),
	cmocka_unit_test(test_malformed_body_stores_nothing),
	cmocka_unit_test(test_evaluations_as_single_route),
	cmocka_unit_test(test_needs_node_write))
