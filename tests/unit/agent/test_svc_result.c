/* What a health check's result means (src/agent/svc_result.h): HTTP codes,
 * script exits, the first line of an output, check_restart's count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "agent/svc_result.h"

#define SEC 1000000000LL

/* A wait status as waitpid reports it. */
static int exited(int code)
{
	return (code & 0xff) << 8;
}

static void test_http_status(void **state)
{
	(void)state;
	assert_int_equal(svc_http_status(200), SVC_PASSING);
	assert_int_equal(svc_http_status(204), SVC_PASSING);
	assert_int_equal(svc_http_status(299), SVC_PASSING);
	assert_int_equal(svc_http_status(429), SVC_WARNING);
	assert_int_equal(svc_http_status(199), SVC_CRITICAL);
	assert_int_equal(svc_http_status(301), SVC_CRITICAL);
	assert_int_equal(svc_http_status(404), SVC_CRITICAL);
	assert_int_equal(svc_http_status(500), SVC_CRITICAL);
	assert_int_equal(svc_http_status(0), SVC_CRITICAL);   /* no answer */
}

static void test_script_status(void **state)
{
	(void)state;
	assert_true(WIFEXITED(exited(0)) && WEXITSTATUS(exited(1)) == 1);
	assert_int_equal(svc_script_status(exited(0)), SVC_PASSING);
	assert_int_equal(svc_script_status(exited(1)), SVC_WARNING);
	assert_int_equal(svc_script_status(exited(2)), SVC_CRITICAL);
	assert_int_equal(svc_script_status(exited(255)), SVC_CRITICAL);
	assert_int_equal(svc_script_status(SIGKILL), SVC_CRITICAL);   /* killed */
}

static void test_status_names(void **state)
{
	(void)state;
	assert_string_equal(svc_status_name(SVC_PASSING), "passing");
	assert_string_equal(svc_status_name(SVC_WARNING), "warning");
	assert_string_equal(svc_status_name(SVC_CRITICAL), "critical");
	assert_int_equal(svc_status_parse("passing"), SVC_PASSING);
	assert_int_equal(svc_status_parse("warning"), SVC_WARNING);
	assert_int_equal(svc_status_parse("critical"), SVC_CRITICAL);
	assert_int_equal(svc_status_parse("ok"), SVC_CRITICAL);
	assert_int_equal(svc_status_parse(NULL), SVC_CRITICAL);
}

static void test_first_line(void **state)
{
	char out[16];
	(void)state;
	assert_string_equal(svc_first_line("ok\nmore\n", 8, out, sizeof(out)), "ok");
	assert_string_equal(svc_first_line("dos line\r\nx", 11, out, sizeof(out)), "dos line");
	assert_string_equal(svc_first_line("trailing  \t\n", 12, out, sizeof(out)), "trailing");
	assert_string_equal(svc_first_line("", 0, out, sizeof(out)), "");
	assert_string_equal(svc_first_line("\nsecond", 7, out, sizeof(out)), "");
	/* cut at n, and at the buffer's size */
	assert_string_equal(svc_first_line("abcdef", 3, out, sizeof(out)), "abc");
	assert_string_equal(svc_first_line("a very long first line", 22, out, sizeof(out)),
			    "a very long fir");
}

static void test_restart_count(void **state)
{
	int fails = 0;
	(void)state;
	/* limit 0: never */
	assert_false(svc_restart_due(&fails, SVC_CRITICAL, 0, 0, false, 0, 100 * SEC));
	assert_int_equal(fails, 0);
	/* in the grace period: not counted */
	assert_false(svc_restart_due(&fails, SVC_CRITICAL, 2, 10 * SEC, false, 0, 5 * SEC));
	assert_int_equal(fails, 0);
	/* two in a row after the grace: the second restarts, and resets */
	assert_false(svc_restart_due(&fails, SVC_CRITICAL, 2, 10 * SEC, false, 0, 11 * SEC));
	assert_true(svc_restart_due(&fails, SVC_CRITICAL, 2, 10 * SEC, false, 0, 12 * SEC));
	assert_int_equal(fails, 0);
	/* a passing result in between starts the count again */
	assert_false(svc_restart_due(&fails, SVC_CRITICAL, 2, 0, false, 0, SEC));
	assert_false(svc_restart_due(&fails, SVC_PASSING, 2, 0, false, 0, SEC));
	assert_false(svc_restart_due(&fails, SVC_CRITICAL, 2, 0, false, 0, SEC));
	assert_true(svc_restart_due(&fails, SVC_CRITICAL, 2, 0, false, 0, SEC));
	/* warning counts as failing, unless ignore_warnings */
	assert_false(svc_restart_due(&fails, SVC_WARNING, 2, 0, false, 0, SEC));
	assert_true(svc_restart_due(&fails, SVC_WARNING, 2, 0, false, 0, SEC));
	assert_false(svc_restart_due(&fails, SVC_WARNING, 1, 0, true, 0, SEC));
	assert_int_equal(fails, 0);
	assert_true(svc_restart_due(&fails, SVC_CRITICAL, 1, 0, true, 0, SEC));
}


/* Feeds results (p: passing, w: warning, c: critical) to a threshold,
 * starting from status shown, and returns the statuses shown after each
 * as letters. */
static const char *run_threshold(int64_t pass, int64_t crit, int64_t warn, char shown,
				 const char *results)
{
	static char out[64];
	struct svc_threshold t = { pass, crit, warn, 0, 0 };
	enum svc_status st = shown == 'p' ? SVC_PASSING : shown == 'w' ? SVC_WARNING
								    : SVC_CRITICAL;
	size_t i;

	for (i = 0; results[i] && i + 1 < sizeof(out); i++) {
		enum svc_status r = results[i] == 'p' ? SVC_PASSING : results[i] == 'w'
			? SVC_WARNING : SVC_CRITICAL;
		st = svc_threshold_step(&t, st, r);
		out[i] = st == SVC_PASSING ? 'p' : st == SVC_WARNING ? 'w' : 'c';
	}
	out[i] = '\0';
	return out;
}

static void test_thresholds(void **state)
{
	(void)state;
	/* none (0) and 1: every result shows at once */
	assert_string_equal(run_threshold(0, 0, 0, 'c', "pcpwcp"), "pcpwcp");
	assert_string_equal(run_threshold(1, 1, 0, 'c', "pcpwcp"), "pcpwcp");
	/* success_before_passing 3: critical for the first two successes */
	assert_string_equal(run_threshold(3, 0, 0, 'c', "pppp"), "ccpp");
	/* a failure in between starts the count again */
	assert_string_equal(run_threshold(3, 0, 0, 'c', "ppcppp"), "cccccp");
	/* failures_before_critical 2: passing after one failure, critical after two */
	assert_string_equal(run_threshold(0, 2, 0, 'p', "pcpccc"), "ppppcc");
	/* alternating results never reach either threshold: the status stays */
	assert_string_equal(run_threshold(2, 2, 0, 'p', "cpcpcp"), "pppppp");
	assert_string_equal(run_threshold(2, 2, 0, 'c', "pcpcpc"), "cccccc");
	/* a warning result counts as a success and shows as warning */
	assert_string_equal(run_threshold(2, 0, 0, 'c', "wwp"), "cwp");
	/* failures_before_warning 1 below failures_before_critical 3 */
	assert_string_equal(run_threshold(0, 3, 1, 'p', "cccp"), "wwcp");
	/* ... never makes a critical check look better */
	assert_string_equal(run_threshold(2, 3, 1, 'c', "pcc"), "ccc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_status),
		cmocka_unit_test(test_script_status),
		cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_first_line),
		cmocka_unit_test(test_restart_count),
		cmocka_unit_test(test_thresholds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
