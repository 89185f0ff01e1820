/* GET /v1/jobs?since=N: only the jobs whose record or allocations changed
 * after index N, each with its status derived from all its allocations;
 * since=0 (or none) lists every job; a bad since is 400. */
#include "server_fx.h"

/* The ids of a GET /v1/jobs answer, sorted, comma-separated, into buf. */
static const char *ids_of(const json_t *list, char *buf, size_t len)
{
	const char *ids[16];
	size_t n = 0, i, used = 0;
	json_t *x;
	json_array_foreach(list, i, x)
		if (n < 16)
			ids[n++] = fx_s(x, "id");
	for (i = 0; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(ids[i], ids[j]) > 0) {
				const char *t = ids[i];
				ids[i] = ids[j];
				ids[j] = t;
			}
	buf[0] = '\0';
	for (i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "", ids[i]);
	return buf;
}

static json_t *jobs_since(struct fx *f, long long since, long long *index)
{
	char path[96];
	long st = 0;
	json_t *r;
	snprintf(path, sizeof(path), "/v1/jobs?since=%lld", since);
	r = fx_call_index(f, "GET", path, NULL, &st, index);
	assert_int_equal(st, 200);
	return r;
}

static void test_since_lists_what_changed(void **state)
{
	struct fx *f = fx_new();
	char buf[256];
	long long idx = 0, idx2 = 0, idx3 = 0;
	json_t *r, *a;
	(void)state;

	fx_node(f, "n1", 0, NULL, NULL, NULL);
	fx_submit(f, "a", "batch", 1, NULL, NULL);
	fx_submit(f, "b", "batch", 1, NULL, NULL);
	json_decref(fx_wait_running(f, "a", 1));
	json_decref(fx_wait_running(f, "b", 1));
	fx_idle(f);

	r = jobs_since(f, 0, &idx);
	assert_string_equal(ids_of(r, buf, sizeof(buf)), "a,b");
	json_decref(r);
	r = jobs_since(f, idx, NULL);
	assert_int_equal(json_array_size(r), 0); /* nothing changed */
	json_decref(r);

	/* a new job shows, the others do not */
	fx_submit(f, "c", "batch", 1, NULL, NULL);
	json_decref(fx_wait_running(f, "c", 1));
	fx_idle(f);
	r = jobs_since(f, idx, &idx2);
	assert_string_equal(ids_of(r, buf, sizeof(buf)), "c");
	json_decref(r);

	/* a job whose only change is its allocation's status shows, with the
	 * status derived from all its allocations */
	a = fx_the_alloc(f, "a");
	fx_alloc_status(f, a, "complete");
	json_decref(a);
	fx_idle(f);
	r = jobs_since(f, idx2, &idx3);
	assert_string_equal(ids_of(r, buf, sizeof(buf)), "a");
	assert_string_equal(fx_s(json_array_get(r, 0), "status"), "dead");
	json_decref(r);
	assert_true(idx3 > idx2);

	/* the full list still has all three */
	r = fx_ok(f, "GET", "/v1/jobs", NULL);
	assert_string_equal(ids_of(r, buf, sizeof(buf)), "a,b,c");
	json_decref(r);
	r = jobs_since(f, 0, NULL);
	assert_int_equal(json_array_size(r), 3);
	json_decref(r);

	assert_int_equal(fx_status(f, "GET", "/v1/jobs?since=x", NULL), 400);
	assert_int_equal(fx_status(f, "GET", "/v1/jobs?since=-1", NULL), 400);
	fx_free(f);
}

fx_main(cmocka_unit_test(test_since_lists_what_changed));
