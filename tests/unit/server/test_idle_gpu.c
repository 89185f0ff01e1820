/* test_idle_gpu: the pure half of idle GPUs (server/idle_gpu.h): the
 * idle_gpu block in quota specifications (HCL and JSON), what a round of
 * samples says about an allocation, its clock, the stricter-wins merge and
 * the tracker of clocks.  Samples in, decisions out: no server, no I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/diag.h"
#include "server/idle_gpu.h"
#include "server/teams.h"

#define S 1000000000LL

/* ---- the block ---------------------------------------------------------- */

static json_t *check(const char *text, struct herd_err *err)
{
	json_error_t je;
	json_t *in = json_loads(text, 0, &je), *out;
	assert_non_null(in);
	memset(err, 0, sizeof(*err));
	out = idle_policy_check(in, "idle_gpu", err);
	json_decref(in);
	return out;
}

static void assert_refused(const char *text, const char *msg)
{
	struct herd_err err;
	json_t *out = check(text, &err);
	if (out)
		fail_msg("accepted %s", text);
	if (!strstr(err.msg, msg))
		fail_msg("%s: error \"%s\" does not say \"%s\"", text, err.msg, msg);
}

static void test_policy_check(void **state)
{
	struct herd_err err;
	struct idle_policy p;
	json_t *o;
	(void)state;

	/* defaults: 5%, warn; the duration written back in one form */
	o = check("{\"after\": \"90m\"}", &err);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "utilization_below")), 5);
	assert_string_equal(json_string_value(json_object_get(o, "after")), "1h30m");
	assert_string_equal(json_string_value(json_object_get(o, "action")), "warn");
	assert_true(idle_policy_from_json(o, &p));
	assert_int_equal(p.below, 5);
	assert_int_equal(p.after_ns, 90 * 60 * S);
	assert_int_equal(p.action, IDLE_ACTION_WARN);
	json_decref(o);

	o = check("{\"utilization_below\": 100, \"after\": \"2s\", \"action\": \"stop\"}", &err);
	assert_non_null(o);
	assert_true(idle_policy_from_json(o, &p));
	assert_int_equal(p.below, 100);
	assert_int_equal(p.after_ns, 2 * S);
	assert_int_equal(p.action, IDLE_ACTION_STOP);
	json_decref(o);
	/* a hand-written 5.0 is 5 */
	o = check("{\"utilization_below\": 5.0, \"after\": \"1h\"}", &err);
	assert_non_null(o);
	assert_true(json_is_integer(json_object_get(o, "utilization_below")));
	json_decref(o);

	assert_refused("{}", "idle_gpu needs after");
	assert_refused("{\"after\": 7200}", "idle_gpu.after must be a duration");
	assert_refused("{\"after\": \"soon\"}", "idle_gpu.after must be a duration");
	assert_refused("{\"after\": \"500ms\"}", "idle_gpu.after must be from 1s");
	assert_refused("{\"after\": \"-1h\"}", "idle_gpu.after must be from 1s");
	assert_refused("{\"after\": \"9000h\"}", "idle_gpu.after must be from 1s");
	assert_refused("{\"after\": \"1h\", \"utilization_below\": 0}", "idle_gpu.utilization_below");
	assert_refused("{\"after\": \"1h\", \"utilization_below\": 101}", "idle_gpu.utilization_below");
	assert_refused("{\"after\": \"1h\", \"utilization_below\": 2.5}", "idle_gpu.utilization_below");
	assert_refused("{\"after\": \"1h\", \"utilization_below\": \"5\"}", "idle_gpu.utilization_below");
	assert_refused("{\"after\": \"1h\", \"action\": \"kill\"}", "idle_gpu.action must be \"warn\" or \"stop\"");
	assert_refused("{\"after\": \"1h\", \"action\": true}", "idle_gpu.action");
	assert_refused("{\"after\": \"1h\", \"after_all\": 1}", "unknown field \"after_all\" in idle_gpu");
	assert_refused("[1]", "idle_gpu must be an object");

	assert_false(idle_policy_from_json(NULL, &p));
	assert_int_equal(p.below, 0);
}

static const char QUOTA[] =
	"name = \"team-a\"\n"
	"limit {\n"
	"  region = \"global\"\n"
	"  region_limit {\n"
	"    device \"nvidia/gpu\" { count = 4 }\n"
	"  }\n"
	"}\n";

static json_t *quota_hcl(const char *extra, struct diag_list *dl)
{
	size_t n = strlen(QUOTA) + strlen(extra) + 1;
	char *text = malloc(n);
	json_t *q;
	snprintf(text, n, "%s%s", QUOTA, extra);
	diag_list_init(dl);
	q = quota_spec_from_hcl(text, strlen(text), dl);
	free(text);
	return q;
}

static void assert_hcl_refused(const char *extra, int line, const char *msg)
{
	struct diag_list dl;
	json_t *q = quota_hcl(extra, &dl);
	if (q)
		fail_msg("accepted %s", extra);
	assert_true(dl.errors >= 1);
	if (!strstr(dl.v[0].msg, msg))
		fail_msg("%s: error \"%s\" does not say \"%s\"", extra, dl.v[0].msg, msg);
	assert_int_equal(dl.v[0].line, line);
	diag_list_release(&dl);
}

static void test_quota_block(void **state)
{
	struct diag_list dl;
	struct herd_err err = { 0 };
	json_t *q, *again, *idle, *old;
	(void)state;

	q = quota_hcl("idle_gpu {\n  utilization_below = 10\n  after = \"2h\"\n  action = \"stop\"\n}\n",
		      &dl);
	assert_non_null(q);
	idle = json_object_get(q, "idle_gpu");
	assert_int_equal(json_integer_value(json_object_get(idle, "utilization_below")), 10);
	assert_string_equal(json_string_value(json_object_get(idle, "after")), "2h");
	assert_string_equal(json_string_value(json_object_get(idle, "action")), "stop");
	/* what the CLI sends, the server's check takes unchanged */
	again = quota_spec_check(q, &err);
	assert_non_null(again);
	assert_true(json_equal(again, q));
	json_decref(again);
	diag_list_release(&dl);

	/* a quota stored before the block existed: still read, still without it */
	old = json_object_get(q, "idle_gpu");
	json_incref(old);
	json_object_del(q, "idle_gpu");
	again = quota_spec_check(q, &err);
	assert_non_null(again);
	assert_null(json_object_get(again, "idle_gpu"));
	json_decref(again);
	/* a bad block in a JSON body: refused, naming the field */
	json_object_set_new(q, "idle_gpu", json_pack("{s:s, s:s}", "after", "1h", "action", "halt"));
	assert_null(quota_spec_check(q, &err));
	assert_non_null(strstr(err.msg, "idle_gpu.action"));
	json_decref(old);
	json_decref(q);

	assert_hcl_refused("idle_gpu {\n  action = \"stop\"\n}\n", 8, "idle_gpu needs after");
	assert_hcl_refused("idle_gpu {\n  after = \"1h\"\n  action = \"kill\"\n}\n", 8,
			   "idle_gpu.action must be");
	assert_hcl_refused("idle_gpu {\n  after = \"1h\"\n  utilization_below = 0\n}\n", 8,
			   "idle_gpu.utilization_below");
	assert_hcl_refused("idle_gpu {\n  after = \"1h\"\n  threshold = 3\n}\n", 10,
			   "unexpected attribute \"threshold\" in idle_gpu");
	assert_hcl_refused("idle_gpu \"x\" {\n  after = \"1h\"\n}\n", 8, "idle_gpu takes no label");
	assert_hcl_refused("idle_gpu {\n  after = \"1h\"\n}\nidle_gpu {\n  after = \"2h\"\n}\n", 11,
			   "idle_gpu given twice");
	assert_hcl_refused("idle_gpu {\n  after = \"1h\"\n  nested { }\n}\n", 10,
			   "unexpected block \"nested\" in idle_gpu");
}

/* ---- a round of samples --------------------------------------------------- */

static struct idle_window win(int n, double max, bool unknown, int64_t first)
{
	return (struct idle_window){ n, unknown, max, first };
}

static void test_observe(void **state)
{
	struct idle_window idle1 = win(2, 3, false, 100), idle2 = win(1, 0, false, 140);
	struct idle_window busy = win(3, 40, false, 100), at = win(1, 5, false, 100);
	struct idle_window unknown = win(1, 0, true, 100), none = win(0, 0, false, 0);
	int64_t first = -1;
	(void)state;

	/* one whole GPU, idle */
	struct idle_dev one[] = { { &idle1, false } };
	assert_int_equal(idle_observe(one, 1, 5, &first), IDLE_OBS_IDLE);
	assert_int_equal(first, 100);
	/* two GPUs, both idle: since the later of their first samples */
	struct idle_dev two[] = { { &idle1, false }, { &idle2, false } };
	assert_int_equal(idle_observe(two, 2, 5, &first), IDLE_OBS_IDLE);
	assert_int_equal(first, 140);
	/* one of two busy: busy */
	struct idle_dev mixed[] = { { &idle1, false }, { &busy, false } };
	assert_int_equal(idle_observe(mixed, 2, 5, &first), IDLE_OBS_BUSY);
	/* at the threshold is not below it */
	struct idle_dev edge[] = { { &at, false } };
	assert_int_equal(idle_observe(edge, 1, 5, &first), IDLE_OBS_BUSY);
	assert_int_equal(idle_observe(edge, 1, 6, &first), IDLE_OBS_IDLE);
	/* a sample without a value: never idle on missing data */
	struct idle_dev unk[] = { { &idle1, false }, { &unknown, false } };
	assert_int_equal(idle_observe(unk, 2, 5, &first), IDLE_OBS_BUSY);
	/* a MIG instance: never idle, whatever its parent says */
	struct idle_dev mig[] = { { &idle1, true } };
	assert_int_equal(idle_observe(mig, 1, 5, &first), IDLE_OBS_BUSY);
	struct idle_dev mig2[] = { { &idle1, false }, { NULL, true } };
	assert_int_equal(idle_observe(mig2, 2, 5, &first), IDLE_OBS_BUSY);
	/* no sample this round: nothing new */
	struct idle_dev silent[] = { { NULL, false } };
	assert_int_equal(idle_observe(silent, 1, 5, &first), IDLE_OBS_NONE);
	struct idle_dev empty[] = { { &none, false } };
	assert_int_equal(idle_observe(empty, 1, 5, &first), IDLE_OBS_NONE);
	/* one device sampled idle, the other silent: not idle yet */
	struct idle_dev half[] = { { &idle1, false }, { NULL, false } };
	assert_int_equal(idle_observe(half, 2, 5, &first), IDLE_OBS_NONE);
	/* ...but a busy one decides */
	struct idle_dev halfbusy[] = { { &busy, false }, { NULL, false } };
	assert_int_equal(idle_observe(halfbusy, 2, 5, &first), IDLE_OBS_BUSY);
	/* no device at all, or no policy: never idle */
	assert_int_equal(idle_observe(one, 0, 5, &first), IDLE_OBS_BUSY);
	assert_int_equal(idle_observe(one, 1, 0, &first), IDLE_OBS_BUSY);
}

/* Two fractions of one shared GPU see the same GPU: both idle, or neither. */
static void test_observe_fractions(void **state)
{
	struct idle_window gpu = win(1, 2, false, 50);
	struct idle_dev a[] = { { &gpu, false } }, b[] = { { &gpu, false } };
	int64_t fa = 0, fb = 0;
	(void)state;
	assert_int_equal(idle_observe(a, 1, 5, &fa), IDLE_OBS_IDLE);
	assert_int_equal(idle_observe(b, 1, 5, &fb), IDLE_OBS_IDLE);
	assert_int_equal(fa, fb);
	gpu.max_util = 30; /* the other tenant works: the GPU is busy for both */
	assert_int_equal(idle_observe(a, 1, 5, &fa), IDLE_OBS_BUSY);
	assert_int_equal(idle_observe(b, 1, 5, &fb), IDLE_OBS_BUSY);
}

/* ---- the clock ------------------------------------------------------------ */

static void test_step_warn_once_per_period(void **state)
{
	struct idle_policy p = { 5, 10 * S, IDLE_ACTION_WARN };
	struct idle_state st = { 0 };
	(void)state;

	assert_int_equal(idle_step(&st, IDLE_OBS_BUSY, 0, &p, 1 * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 0);
	/* idle since its first idle sample, not since the round */
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 2 * S, &p, 3 * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 2 * S);
	/* later idle samples keep the start */
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 8 * S, &p, 9 * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 2 * S);
	/* nothing new: the clock runs on */
	assert_int_equal(idle_step(&st, IDLE_OBS_NONE, 0, &p, 11 * S), IDLE_NOTHING);
	assert_int_equal(idle_step(&st, IDLE_OBS_NONE, 0, &p, 12 * S), IDLE_DO_WARN);
	/* once per idle period */
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 13 * S, &p, 13 * S), IDLE_NOTHING);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 60 * S, &p, 60 * S), IDLE_NOTHING);
	/* a busy sample ends the period */
	assert_int_equal(idle_step(&st, IDLE_OBS_BUSY, 0, &p, 61 * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 0);
	assert_false(st.acted);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 62 * S, &p, 62 * S), IDLE_NOTHING);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 71 * S, &p, 71 * S), IDLE_NOTHING);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 72 * S, &p, 72 * S), IDLE_DO_WARN);
}

static void test_step_stop_and_reset(void **state)
{
	struct idle_policy p = { 5, 3 * S, IDLE_ACTION_STOP };
	struct idle_state st = { 0 };
	(void)state;

	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 10 * S, &p, 10 * S), IDLE_NOTHING);
	/* busy just before it is due: the clock starts again */
	assert_int_equal(idle_step(&st, IDLE_OBS_BUSY, 0, &p, 12 * S), IDLE_NOTHING);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 13 * S, &p, 13 * S), IDLE_NOTHING);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 14 * S, &p, 15 * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 13 * S);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 16 * S, &p, 16 * S), IDLE_DO_STOP);
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 17 * S, &p, 17 * S), IDLE_NOTHING);
	/* a sample stamped in the future (or unstamped) counts from now */
	st = (struct idle_state){ 0 };
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 99 * S, &p, 20 * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 20 * S);
	/* missing data never starts a clock */
	st = (struct idle_state){ 0 };
	for (int64_t t = 0; t < 100; t++)
		assert_int_equal(idle_step(&st, IDLE_OBS_NONE, 0, &p, t * S), IDLE_NOTHING);
	assert_int_equal(st.idle_since, 0);
	/* no policy: nothing, ever */
	struct idle_policy none = { 0 };
	st = (struct idle_state){ 0 };
	assert_int_equal(idle_step(&st, IDLE_OBS_IDLE, 1, &none, 1000 * S), IDLE_NOTHING);
}

/* ---- merge ---------------------------------------------------------------- */

static void test_merge_stricter_wins(void **state)
{
	struct idle_policy quota = { 5, 2 * 3600 * S, IDLE_ACTION_WARN };
	struct idle_policy job = { 3, 3600 * S, IDLE_ACTION_STOP };
	struct idle_policy none = { 0 }, m;
	(void)state;

	m = quota;
	idle_policy_merge(&m, &job);
	assert_int_equal(m.below, 5);           /* the higher threshold */
	assert_int_equal(m.after_ns, 3600 * S); /* the shorter wait */
	assert_int_equal(m.action, IDLE_ACTION_STOP);
	/* the same either way round */
	m = job;
	idle_policy_merge(&m, &quota);
	assert_int_equal(m.below, 5);
	assert_int_equal(m.after_ns, 3600 * S);
	assert_int_equal(m.action, IDLE_ACTION_STOP);
	/* warn never weakens stop */
	struct idle_policy w = { 50, 60 * S, IDLE_ACTION_WARN };
	m = job;
	idle_policy_merge(&m, &w);
	assert_int_equal(m.below, 50);
	assert_int_equal(m.after_ns, 60 * S);
	assert_int_equal(m.action, IDLE_ACTION_STOP);
	/* no policy on one side: the other's */
	m = none;
	idle_policy_merge(&m, &quota);
	assert_memory_equal(&m, &quota, sizeof(m));
	m = quota;
	idle_policy_merge(&m, &none);
	assert_memory_equal(&m, &quota, sizeof(m));
	assert_string_equal(idle_action_name(IDLE_ACTION_STOP), "stop");
	assert_string_equal(idle_action_name(IDLE_ACTION_WARN), "warn");
}

/* ---- the tracker ----------------------------------------------------------- */

static void test_tracker(void **state)
{
	struct idle_tracker t;
	struct idle_entry *e;
	char id[32];
	(void)state;

	idle_tracker_init(&t);
	idle_tracker_begin(&t);
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "alloc-%03d", (i * 37) % 100);
		e = idle_tracker_touch(&t, id, i % 2 ? "team-a" : "team-b");
		e->st.idle_since = 1 + (i * 37) % 100;
	}
	/* a second touch in the same round finds the same entry */
	e = idle_tracker_touch(&t, "alloc-005", "ignored");
	assert_int_equal(e->st.idle_since, 6);
	idle_tracker_end(&t);
	assert_int_equal(t.n, 100);
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "alloc-%03d", i);
		assert_non_null(idle_tracker_find(&t, id));
		assert_int_equal(idle_tracker_find(&t, id)->st.idle_since, 1 + i);
	}
	assert_null(idle_tracker_find(&t, "alloc-100"));
	/* next round: the clocks carry over; those not seen go */
	idle_tracker_begin(&t);
	for (int i = 0; i < 100; i += 2) {
		snprintf(id, sizeof(id), "alloc-%03d", i);
		e = idle_tracker_touch(&t, id, "team-a");
		assert_int_equal(e->st.idle_since, 1 + i);
	}
	e = idle_tracker_touch(&t, "new", "team-c");
	assert_int_equal(e->st.idle_since, 0);
	assert_string_equal(e->ns, "team-c");
	idle_tracker_end(&t);
	assert_int_equal(t.n, 51);
	assert_null(idle_tracker_find(&t, "alloc-001"));
	assert_non_null(idle_tracker_find(&t, "alloc-098"));
	assert_non_null(idle_tracker_find(&t, "new"));
	/* a round that sees nothing empties it */
	idle_tracker_begin(&t);
	idle_tracker_end(&t);
	assert_int_equal(t.n, 0);
	idle_tracker_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_check),
		cmocka_unit_test(test_quota_block),
		cmocka_unit_test(test_observe),
		cmocka_unit_test(test_observe_fractions),
		cmocka_unit_test(test_step_warn_once_per_period),
		cmocka_unit_test(test_step_stop_and_reset),
		cmocka_unit_test(test_merge_stricter_wins),
		cmocka_unit_test(test_tracker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
