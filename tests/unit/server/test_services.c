/* The service registry's checks of what agents report (services.c):
 * the shapes refused with their message, and a service's health. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "server/server-int.h"

/* The message services_report_check gives text (JSON), "" when it takes it. */
static void expect_report(const char *text, const char *want)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);
	struct herd_err err = { 0, "" };
	int rc;

	assert_non_null(v);
	rc = services_report_check(v, &err);
	assert_string_equal(rc < 0 ? err.msg : "", want);
	assert_int_equal(rc, *want ? -EINVAL : 0);
	json_decref(v);
}

#define SVC(extra) "{\"name\":\"web\",\"address\":\"10.0.0.1\",\"port\":8080" extra "}"

static void test_report_shapes(void **state)
{
	(void)state;
	expect_report("[]", "");
	expect_report("[" SVC("") "]", "");
	expect_report("[" SVC(",\"tags\":[\"a\"],\"checks\":[{\"name\":\"c\",\"status\":\"warning\","
			      "\"output\":\"slow\"}]") "]", "");
	expect_report("{}", "services must be an array of at most 64 services");
	expect_report("[{\"name\":\"web\",\"port\":1}]",
		      "services[0] must be an object with a name, an address and a port (0..65535)");
	expect_report("[" SVC("") "," "{\"name\":\"\",\"address\":\"a\",\"port\":1}]",
		      "services[1] must be an object with a name, an address and a port (0..65535)");
	expect_report("[{\"name\":\"w\",\"address\":\"a\",\"port\":70000}]",
		      "services[0] must be an object with a name, an address and a port (0..65535)");
	expect_report("[" SVC(",\"tags\":\"a\"") "]",
		      "services[0].tags must be an array of at most 64 strings");
	expect_report("[" SVC(",\"checks\":{}") "]",
		      "services[0].checks must be an array of at most 32 checks");
	expect_report("[" SVC(",\"checks\":[{\"name\":\"c\",\"status\":\"ok\"}]") "]",
		      "services[0].checks[0] must be an object with a name and a status (passing, "
		      "warning or critical)");
	expect_report("[" SVC(",\"checks\":[{\"name\":\"c\",\"status\":\"passing\",\"output\":7}]") "]",
		      "services[0].checks[0].output must be a string of at most 4096 bytes");
}

static void test_health(void **state)
{
	static const struct { const char *svc, *want; } cases[] = {
		{ SVC(""), "passing" },
		{ SVC(",\"checks\":[]"), "passing" },
		{ SVC(",\"checks\":[{\"status\":\"passing\"},{\"status\":\"passing\"}]"), "passing" },
		{ SVC(",\"checks\":[{\"status\":\"passing\"},{\"status\":\"warning\"}]"), "warning" },
		{ SVC(",\"checks\":[{\"status\":\"critical\"},{\"status\":\"warning\"}]"), "critical" },
		{ SVC(",\"checks\":[{\"status\":\"warning\"},{\"status\":\"critical\"}]"), "critical" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = json_loads(cases[i].svc, 0, NULL);
		assert_non_null(v);
		assert_string_equal(services_health(v), cases[i].want);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_shapes),
		cmocka_unit_test(test_health),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
