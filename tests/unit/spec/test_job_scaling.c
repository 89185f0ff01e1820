/* A group's scaling block (docs/jobspec.md, "scaling"): none leaves no
 * trace in the canonical text, defaults (min from the count, the policy's
 * window, cooldown and tolerance), the errors (max required, min above
 * max, a count outside the bounds, a gpu_utilization policy on a batch
 * job), Nomad autoscaler policy fields accepted with a warning, HCL with a
 * nested policy block, and a canonical round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "job_helpers.h"

#define SEC 1000000000LL

static void test_none_and_defaults(void **state)
{
	const struct job_scaling *sc;
	struct job *job;
	char *canon;
	(void)state;
	job = decode_expect("{\"id\":\"s\",\"groups\":[" MIN_GROUP "]}", "");
	assert_null(job->groups[0].scaling);
	canon = canonical_round_trip(job);
	assert_null(strstr(canon, "scaling"));
	free(canon);
	job_free(job);
	/* bounds only: min is the count, enabled, no policy */
	job = decode_expect(GROUP_WITH("\"count\":3,\"scaling\":{\"max\":8}"), "");
	sc = job->groups[0].scaling;
	assert_non_null(sc);
	assert_int_equal(sc->min, 3);
	assert_int_equal(sc->max, 8);
	assert_true(sc->enabled);
	assert_null(sc->policy);
	canon = canonical_round_trip(job);
	assert_non_null(strstr(canon, "\"scaling\""));
	free(canon);
	job_free(job);
	/* a herd policy: its defaults */
	job = decode_expect(GROUP_WITH("\"scaling\":{\"min\":1,\"max\":4,\"enabled\":false,"
				       "\"policy\":{\"gpu_utilization\":70}}"), "");
	sc = job->groups[0].scaling;
	assert_false(sc->enabled);
	assert_int_equal(sc->policy->gpu_utilization, 70);
	assert_int_equal(sc->policy->window, 60 * SEC);
	assert_int_equal(sc->policy->cooldown, 300 * SEC);
	assert_int_equal(sc->policy->tolerance, 10);
	canon = canonical_round_trip(job);
	free(canon);
	job_free(job);
	/* a policy for Nomad's autoscaler: its fields are warned about, and
	 * herd's autoscaler stays off (gpu_utilization 0) */
	job = decode_expect(GROUP_WITH("\"scaling\":{\"max\":4,\"policy\":{\"cooldown\":\"1m\","
				       "\"evaluation_interval\":\"10s\",\"check\":{}}}"),
			    "W 0:0 groups[0].scaling.policy.evaluation_interval: not supported by "
			    "herd; ignored\n"
			    "W 0:0 groups[0].scaling.policy.check: not supported by herd; ignored\n");
	assert_int_equal(job->groups[0].scaling->policy->gpu_utilization, 0);
	assert_int_equal(job->groups[0].scaling->policy->cooldown, 60 * SEC);
	/* its canonical form decodes again as it is (the server decodes what
	 * the CLI sends) */
	free(canonical_round_trip(job));
	job_free(job);
	/* a batch job may have bounds, and a policy without a target */
	job = decode_expect("{\"id\":\"s\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\","
			    "\"scaling\":{\"max\":4,\"policy\":{\"cooldown\":\"1m\"}},\"tasks\":["
			    MIN_TASK "]}]}", "");
	job_free(job);
}

static void test_errors(void **state)
{
	(void)state;
	decode_expect(GROUP_WITH("\"scaling\":{\"min\":1}"),
		      "E 0:0 groups[0].scaling: scaling needs max, the largest count the group may "
		      "have (max = 10)\n");
	decode_expect(GROUP_WITH("\"scaling\":{\"min\":5,\"max\":4}"),
		      "E 0:0 groups[0].scaling: scaling min (5) is above max (4)\n");
	decode_expect(GROUP_WITH("\"count\":6,\"scaling\":{\"min\":1,\"max\":4}"),
		      "E 0:0 groups[0].scaling: count 6 is outside scaling's bounds, min 1 and max "
		      "4\n");
	decode_expect(GROUP_WITH("\"count\":0,\"scaling\":{\"min\":1,\"max\":4}"),
		      "E 0:0 groups[0].scaling: count 0 is outside scaling's bounds, min 1 and max "
		      "4\n");
	decode_expect(GROUP_WITH("\"scaling\":{\"max\":4,\"policy\":{\"gpu_utilization\":101}}"),
		      "E 0:0 groups[0].scaling.policy.gpu_utilization: must be between 0 and 100, "
		      "got 101\n");
	decode_expect(GROUP_WITH("\"scaling\":{\"max\":4,\"policy\":{\"gpu_utilization\":50,"
				 "\"window\":\"1s\"}}"),
		      "E 0:0 groups[0].scaling.policy.window: must be between 5s and 1h, got "
		      "\"1s\"\n");
	decode_expect(GROUP_WITH("\"scaling\":{\"max\":4,\"size\":3}"),
		      "E 0:0 groups[0].scaling: unknown scaling field \"size\"\n");
	decode_expect("{\"id\":\"s\",\"type\":\"batch\",\"groups\":[{\"name\":\"g\",\"scaling\":"
		      "{\"max\":4,\"policy\":{\"gpu_utilization\":50}},\"tasks\":[" MIN_TASK "]}]}",
		      "E 0:0 groups[0].scaling.policy: a scaling policy's gpu_utilization follows "
		      "the load of a service; a batch job's count is not autoscaled\n");
}

static void test_hcl(void **state)
{
	static const char text[] =
		"job \"j\" {\n"
		"  group \"api\" {\n"
		"    count = 2\n"
		"    scaling {\n"
		"      min = 1\n"
		"      max = 6\n"
		"      policy {\n"
		"        gpu_utilization = 70\n"
		"        window          = \"30s\"\n"
		"        cooldown        = \"2m\"\n"
		"        tolerance       = 5\n"
		"      }\n"
		"    }\n"
		"    task \"t\" {\n"
		"      driver = \"raw_exec\"\n"
		"      config { command = \"/bin/true\" }\n"
		"    }\n"
		"  }\n"
		"}\n";
	struct job *job;
	char *diags;
	(void)state;
	job = load_hcl(text, &diags);
	assert_string_equal(diags, "");
	assert_non_null(job);
	assert_int_equal(job->groups[0].scaling->min, 1);
	assert_int_equal(job->groups[0].scaling->max, 6);
	assert_int_equal(job->groups[0].scaling->policy->gpu_utilization, 70);
	assert_int_equal(job->groups[0].scaling->policy->window, 30 * SEC);
	assert_int_equal(job->groups[0].scaling->policy->cooldown, 120 * SEC);
	assert_int_equal(job->groups[0].scaling->policy->tolerance, 5);
	assert_int_equal(job->groups[0].scaling->pos.line, 4);
	free(diags);
	job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_and_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_hcl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
