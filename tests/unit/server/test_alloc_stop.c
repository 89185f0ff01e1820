/* POST /v1/allocation/:id/stop: a user's stop of one allocation and the
 * reconciler's answer to it (a replacement in the same slot, linked to the
 * stopped one, the reschedule policy untouched); what it refuses (a bad
 * id, an unknown one, one that ended or is stopped already); and ACL (the
 * submit right on the namespace, also as GET /v1/allocation/:id?acl=submit,
 * which a node's client API asks before a restart or a signal). */
#include "server_fx.h"

#define USER_STOP "stopped by user; replaced"

static long stop(struct fx *f, const char *id, json_t **out)
{
	char path[256];
	long st;
	json_t *r;
	snprintf(path, sizeof(path), "/v1/allocation/%s/stop", id);
	r = fx_call(f, "POST", path, NULL, &st);
	if (out)
		*out = r;
	else
		json_decref(r);
	return st;
}

/* The desired-run allocation of job that replaced prev, or NULL. */
static json_t *replacement_of(struct fx *f, const char *job, const char *prev)
{
	json_t *a = fx_running(f, job), *x, *out = NULL;
	size_t i;
	json_array_foreach(a, i, x)
		if (!strcmp(fx_s(x, "previous_allocation"), prev))
			out = json_incref(x);
	json_decref(a);
	return out;
}

/* A service of two instances: one stopped by the user ends with the
 * user's description and is replaced in its slot, the job keeps two. */
static void test_service_stop_replaces(void **state)
{
	struct fx *f = fx_new();
	json_t *a, *r, *gone, *repl, *evs, *x;
	char *victim, *other;
	size_t i;
	bool saw = false;
	(void)state;

	fx_node(f, "n", 0, "none", "exclusive", NULL);
	/* one reschedule attempt: a stop must not use it up */
	fx_submit(f, "web", "service", 2, NULL,
		  ", \"reschedule\": {\"attempts\": 1, \"interval\": \"1h\", \"delay\": \"0s\","
		  " \"delay_function\": \"constant\", \"unlimited\": false}");
	a = fx_wait_running(f, "web", 2);
	json_array_foreach(a, i, x)
		fx_alloc_status(f, x, "running");
	victim = strdup(fx_s(json_array_get(a, 0), "id"));
	other = strdup(fx_s(json_array_get(a, 1), "id"));
	json_decref(a);

	assert_int_equal(stop(f, victim, &r), 200);
	assert_true(strlen(fx_s(r, "eval_id")) == 36);
	assert_true(fx_i(r, "index") > 0);
	json_decref(r);
	fx_idle(f);

	gone = fx_get(f, "/v1/allocation/%s", victim);
	assert_string_equal(fx_s(gone, "desired_status"), "stop");
	assert_string_equal(fx_s(gone, "desired_description"), USER_STOP);
	/* the agent still reports it running until its task ends */
	assert_string_equal(fx_s(gone, "client_status"), "running");
	a = fx_running(f, "web");
	assert_int_equal(json_array_size(a), 2);
	json_decref(a);
	repl = replacement_of(f, "web", victim);
	assert_non_null(repl);
	assert_int_equal(fx_i(repl, "index"), fx_i(gone, "index"));
	assert_int_equal(fx_i(repl, "reschedule_attempts"), 0);
	assert_int_equal(json_array_size(json_object_get(repl, "reschedule_events")), 0);
	/* the other instance is left alone */
	r = fx_get(f, "/v1/allocation/%s", other);
	assert_string_equal(fx_s(r, "desired_status"), "run");
	json_decref(r);
	evs = fx_evals(f, "web", NULL);
	json_array_foreach(evs, i, x)
		if (!strcmp(fx_s(x, "triggered_by"), "alloc-stop")) {
			assert_string_equal(fx_s(x, "status"), "complete");
			saw = true;
		}
	assert_true(saw);
	json_decref(evs);

	/* the old one ends as its agent stops it: nothing more is placed */
	fx_alloc_status(f, gone, "complete");
	fx_idle(f);
	a = fx_running(f, "web");
	assert_int_equal(json_array_size(a), 2);
	json_decref(a);
	/* stopped already: refused, nothing changes */
	assert_int_equal(stop(f, victim, &r), 409);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "invalid_transition");
	json_decref(r);

	/* the reschedule attempt is still there: a failure of the
	 * replacement is rescheduled once */
	fx_alloc_status(f, repl, "running");
	fx_alloc_status(f, repl, "failed");
	fx_idle(f);
	r = replacement_of(f, "web", fx_s(repl, "id"));
	assert_non_null(r);
	assert_int_equal(fx_i(r, "reschedule_attempts"), 1);
	json_decref(r);

	json_decref(repl);
	json_decref(gone);
	free(victim);
	free(other);
	fx_free(f);
}

/* A batch allocation stopped while it runs is replaced; one that
 * completed is refused and not placed again. */
static void test_batch_stop(void **state)
{
	struct fx *f = fx_new();
	json_t *al, *r, *repl, *a;
	(void)state;

	fx_node(f, "n", 0, "none", "exclusive", NULL);
	fx_submit(f, "b", "batch", 1, NULL, NULL);
	fx_idle(f);
	al = fx_the_alloc(f, "b");
	fx_alloc_status(f, al, "running");
	assert_int_equal(stop(f, fx_s(al, "id"), NULL), 200);
	fx_idle(f);
	repl = replacement_of(f, "b", fx_s(al, "id"));
	assert_non_null(repl);
	fx_alloc_status(f, al, "complete"); /* the stopped one ends */
	fx_alloc_status(f, repl, "running");
	fx_alloc_status(f, repl, "complete");
	fx_idle(f);
	assert_int_equal(stop(f, fx_s(repl, "id"), &r), 409);
	assert_non_null(strstr(fx_s(json_object_get(r, "error"), "message"), "complete already"));
	json_decref(r);
	fx_idle(f);
	a = fx_running(f, "b");
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(fx_s(json_array_get(a, 0), "id"), fx_s(repl, "id"));
	json_decref(a);
	r = fx_get(f, "/v1/allocation/%s", fx_s(repl, "id"));
	assert_string_equal(fx_s(r, "desired_status"), "run");
	json_decref(r);
	json_decref(repl);
	json_decref(al);
	fx_free(f);
}

static void test_bad_and_unknown_ids(void **state)
{
	struct fx *f = fx_new();
	json_t *r;
	(void)state;

	assert_int_equal(stop(f, "not-an-id", &r), 400);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "invalid_argument");
	json_decref(r);
	assert_int_equal(stop(f, "0123456789abcdef0123456789abcdef0123", NULL), 400);
	assert_int_equal(stop(f, "00000000-0000-0000-0000-000000000000", &r), 404);
	assert_string_equal(fx_s(json_object_get(r, "error"), "code"), "alloc_not_found");
	json_decref(r);
	assert_int_equal(fx_status(f, "GET", "/v1/allocation/x?acl=admin", NULL), 400);
	/* nothing was made */
	r = fx_ok(f, "GET", "/v1/evaluations", NULL);
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	fx_free(f);
}

/* Stop needs submit on the allocation's namespace: read alone is 403,
 * another team's token gets the 404 of an unknown id.  ?acl=submit on the
 * read route answers the same way. */
static void test_acl(void **state)
{
	struct fx *f = fx_new_teams(0, 1);
	json_t *r, *al;
	char *mgmt, *submit, *reader, *other, path[256], *t1, *t2;
	long st;
	(void)state;

	r = fx_ok(f, "POST", "/v1/acl/bootstrap", NULL);
	mgmt = strdup(fx_s(r, "secret_id"));
	json_decref(r);
	f->token = mgmt;
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"a\"}}"));
	json_decref(fx_ok(f, "POST", "/v1/namespaces", "{\"namespace\": {\"name\": \"b\"}}"));
	submit = fx_token(f, "a-submit", "{\"namespace\": {\"a\": \"submit\"}}");
	reader = fx_token(f, "a-read", "{\"namespace\": {\"a\": \"read\"}}");
	other = fx_token(f, "b-submit", "{\"namespace\": {\"b\": \"submit\"}}");
	node_add(f, "n1", 2, "H100");
	f->token = submit;
	submit_gpu(f, "a", "j", 1, 50);
	fx_idle(f);
	r = fx_ok(f, "GET", "/v1/allocations?namespace=a", NULL);
	al = json_incref(json_array_get(r, 0));
	json_decref(r);
	assert_non_null(al);

	f->token = reader;
	assert_int_equal(stop(f, fx_s(al, "id"), NULL), 403);
	snprintf(path, sizeof(path), "/v1/allocation/%s?acl=submit", fx_s(al, "id"));
	assert_int_equal(fx_status(f, "GET", path, NULL), 403);
	snprintf(path, sizeof(path), "/v1/allocation/%s?acl=read", fx_s(al, "id"));
	assert_int_equal(fx_status(f, "GET", path, NULL), 200);
	f->token = other;
	assert_int_equal(stop(f, fx_s(al, "id"), &r), 404);
	t1 = json_dumps(r, JSON_SORT_KEYS);
	json_decref(r);
	assert_int_equal(stop(f, "00000000-0000-0000-0000-000000000000", &r), 404);
	t2 = json_dumps(r, JSON_SORT_KEYS);
	json_decref(r);
	assert_null(strstr(t1, "\"j\""));
	assert_int_equal(strlen(t1), strlen(t2));
	free(t1);
	free(t2);
	snprintf(path, sizeof(path), "/v1/allocation/%s?acl=submit", fx_s(al, "id"));
	assert_int_equal(fx_status(f, "GET", path, NULL), 404);
	/* refused: still meant to run */
	f->token = mgmt;
	r = fx_get(f, "/v1/allocation/%s", fx_s(al, "id"));
	assert_string_equal(fx_s(r, "desired_status"), "run");
	json_decref(r);

	f->token = submit;
	assert_int_equal(fx_status(f, "GET", path, NULL), 200);
	r = fx_call(f, "POST", "/v1/allocation/00000000-0000-0000-0000-000000000000/stop", NULL, &st);
	assert_int_equal(st, 404);
	json_decref(r);
	assert_int_equal(stop(f, fx_s(al, "id"), NULL), 200);
	f->token = NULL;
	json_decref(al);
	free(mgmt);
	free(submit);
	free(reader);
	free(other);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_service_stop_replaces), cmocka_unit_test(test_batch_stop),
	cmocka_unit_test(test_bad_and_unknown_ids), cmocka_unit_test(test_acl))
