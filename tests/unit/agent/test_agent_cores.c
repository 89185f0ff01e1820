/* cores: the cores a node offers (reserved, reservable_cores), the cores of
 * an allocation's tasks, and where reserved and shared tasks are pinned,
 * with a simulated topology's cores missing from the machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cores.h"
#include "common/xalloc.h"

static struct cpulist L(const char *s)
{
	struct cpulist c;
	assert_int_equal(cpulist_parse(s, &c, NULL), 0);
	return c;
}

/* A fingerprint with cores 0-7: 0-3 on node 0, 4-7 on node 1. */
static struct node_fingerprint *two_nodes(void)
{
	struct node_fingerprint *fp = xcalloc(1, sizeof(*fp));
	fp->nr_cores = 8;
	fp->cores = xcalloc(8, sizeof(*fp->cores));
	for (int i = 0; i < 8; i++)
		fp->cores[i] = (struct node_core){ i, i < 4 ? 0 : 1 };
	return fp;
}

static void test_offered(void **state)
{
	struct node_fingerprint *fp = two_nodes();
	struct cpulist out;
	struct herd_err err = { 0, "" };
	char buf[64];

	assert_int_equal(cores_offered(fp, NULL, NULL, &out, &err), 0);
	cpulist_format(&out, buf, sizeof(buf));
	assert_string_equal(buf, "0-7");
	assert_int_equal(cores_offered(fp, "0-1", NULL, &out, &err), 0);
	cpulist_format(&out, buf, sizeof(buf));
	assert_string_equal(buf, "2-7");
	/* reservable beyond the machine's cores offers only what exists */
	assert_int_equal(cores_offered(fp, "0-1", "1-5,30", &out, &err), 0);
	cpulist_format(&out, buf, sizeof(buf));
	assert_string_equal(buf, "2-5");
	assert_int_equal(cores_offered(fp, "x", NULL, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "reserved cores"));

	assert_int_equal(cores_offered(fp, "0-2", "0-4", &out, &err), 0);
	json_t *j = cores_offered_json(fp, &out);
	char *s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s, "[{\"id\":3,\"numa\":0},{\"id\":4,\"numa\":1}]");
	free(s);
	json_decref(j);
	node_fingerprint_free(fp);
}

static void test_alloc_cores(void **state)
{
	json_t *alloc = json_loads("{\"resources\": {\"tasks\": {"
		"\"train\": {\"cores\": [4, 5, 7]}, \"loader\": {\"cores\": [12]},"
		"\"web\": {\"cpu\": 500}, \"odd\": {\"cores\": [\"1\", -1, 99999, 2]}}}}", 0, NULL);
	assert_non_null(alloc);
	struct cpulist c, held = CPULIST_INIT;
	char buf[64];
	assert_true(cores_of_task(alloc, "train", &c));
	cpulist_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "4-5,7");
	assert_false(cores_of_task(alloc, "web", &c));
	assert_false(cores_of_task(alloc, "missing", &c));
	assert_true(cores_of_task(alloc, "odd", &c));   /* the good id only */
	cpulist_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "2");
	cores_of_alloc(alloc, &held);
	cpulist_format(&held, buf, sizeof(buf));
	assert_string_equal(buf, "2,4-5,7,12");
	json_decref(alloc);
	/* an allocation of an older server: no tasks */
	json_t *old = json_loads("{\"resources\": {\"cpu\": 100}}", 0, NULL);
	assert_false(cores_of_task(old, "train", &c));
	cores_of_alloc(old, &held);
	json_decref(old);
}

static const struct node_core real[] = { { 0, 0 }, { 1, 0 }, { 2, 1 }, { 3, 1 } };

static void test_plan_reserved(void **state)
{
	struct cpulist usable = L("0-3"), held = L("1-2"), want = L("1-2");
	struct cores_plan p;
	cores_plan(&want, &usable, &held, real, 4, &p);
	assert_string_equal(p.cpus, "1-2");
	assert_string_equal(p.mems, "0-1");
	assert_string_equal(p.env, "1-2");
	assert_null(p.event);
	cores_plan_release(&p);

	/* a simulated topology's cores, partly on this machine */
	want = L("3,56-57");
	cores_plan(&want, &usable, &held, real, 4, &p);
	assert_string_equal(p.cpus, "3");
	assert_string_equal(p.mems, "1");
	assert_string_equal(p.env, "3,56-57");
	assert_non_null(strstr(p.event, "pinned to cores 3 only: cores 56-57"));
	cores_plan_release(&p);

	/* none of them: unpinned, never a failure, and said so */
	want = L("100-103");
	cores_plan(&want, &usable, &held, real, 4, &p);
	assert_null(p.cpus);
	assert_null(p.mems);
	assert_string_equal(p.env, "100-103");
	assert_non_null(strstr(p.event, "cores 100-103 of the allocation are not on this machine"));
	cores_plan_release(&p);

	/* NUMA unknown for a core: no memory nodes */
	static const struct node_core flat[] = { { 0, -1 }, { 1, -1 } };
	want = L("1");
	cores_plan(&want, &usable, &held, flat, 2, &p);
	assert_string_equal(p.cpus, "1");
	assert_null(p.mems);
	cores_plan_release(&p);
}

static void test_plan_shared(void **state)
{
	struct cpulist usable = L("0-3"), held = L("1-2"), none = CPULIST_INIT;
	struct cores_plan p;
	/* kept off the held cores */
	cores_plan(NULL, &usable, &held, real, 4, &p);
	assert_string_equal(p.cpus, "0,3");
	assert_null(p.env);
	assert_null(p.event);
	cores_plan_release(&p);
	cores_plan(&none, &usable, &held, real, 4, &p);
	assert_string_equal(p.cpus, "0,3");
	cores_plan_release(&p);
	/* nothing held: the agent's mask, untouched */
	cores_plan(NULL, &usable, &none, real, 4, &p);
	assert_null(p.cpus);
	assert_null(p.event);
	cores_plan_release(&p);
	/* held cores not on this machine (simulated): untouched */
	held = L("100-110");
	cores_plan(NULL, &usable, &held, real, 4, &p);
	assert_null(p.cpus);
	cores_plan_release(&p);
	/* everything held: unpinned, with an event */
	held = L("0-3");
	cores_plan(NULL, &usable, &held, real, 4, &p);
	assert_null(p.cpus);
	assert_non_null(strstr(p.event, "every core of this machine is reserved (0-3)"));
	cores_plan_release(&p);
	cores_plan_release(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offered),
		cmocka_unit_test(test_alloc_cores),
		cmocka_unit_test(test_plan_reserved),
		cmocka_unit_test(test_plan_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
