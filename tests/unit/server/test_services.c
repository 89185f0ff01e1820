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
	expect_report("[" SVC(",\"canary_tags\":[\"c\"],\"canary_meta\":{\"v\":\"2\"},"
			      "\"checks\":[{\"name\":\"c\",\"status\":\"warning\","
			      "\"on_update\":\"ignore_warnings\"}]") "]", "");
	expect_report("[" SVC(",\"canary_tags\":{}") "]",
		      "services[0].canary_tags must be an array of at most 64 strings");
	expect_report("[" SVC(",\"canary_meta\":[]") "]", "services[0].canary_meta must be an object");
	expect_report("[" SVC(",\"checks\":[{\"name\":\"c\",\"status\":\"passing\","
			      "\"on_update\":\"often\"}]") "]",
		      "services[0].checks[0].on_update must be require_healthy, ignore_warnings or "
		      "ignore");
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

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);
	assert_non_null(v);
	return v;
}

/* The tags (as compact JSON) an instance of svc lists for alloc. */
static void expect_labels(const char *alloc, const char *svc, const char *tags,
			  const char *meta)
{
	json_t *a = parse(alloc), *s = parse(svc);
	const json_t *t, *m;
	char *tt, *mt;

	services_current_labels(a, s, &t, &m);
	tt = t ? json_dumps(t, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
	mt = m ? json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
	assert_string_equal(tt, tags);
	assert_string_equal(mt, meta);
	free(tt);
	free(mt);
	json_decref(a);
	json_decref(s);
}

/* canary_tags / canary_meta stand for tags / meta while the allocation is
 * an unpromoted canary, each only when not empty (Nomad's rule: canary_meta
 * replaces meta, it is not merged over it). */
static void test_canary_labels(void **state)
{
	static const char svc[] = "{\"tags\":[\"live\"],\"meta\":{\"v\":\"1\",\"k\":\"x\"},"
				  "\"canary_tags\":[\"canary\"],\"canary_meta\":{\"v\":\"2\"}}";
	(void)state;
	expect_labels("{\"deployment_status\":{\"canary\":true}}", svc, "[\"canary\"]",
		      "{\"v\":\"2\"}");
	expect_labels("{\"deployment_status\":{\"canary\":true,\"ready_since\":5}}", svc,
		      "[\"canary\"]", "{\"v\":\"2\"}");
	expect_labels("{\"deployment_status\":{\"canary\":true,\"promoted\":true}}", svc,
		      "[\"live\"]", "{\"v\":\"1\",\"k\":\"x\"}");
	expect_labels("{\"deployment_status\":{\"healthy\":true}}", svc, "[\"live\"]",
		      "{\"v\":\"1\",\"k\":\"x\"}");
	expect_labels("{}", svc, "[\"live\"]", "{\"v\":\"1\",\"k\":\"x\"}");
	/* a canary whose service has none (or empty ones): tags and meta */
	expect_labels("{\"deployment_status\":{\"canary\":true}}",
		      "{\"tags\":[\"live\"],\"canary_tags\":[],\"canary_meta\":{}}", "[\"live\"]",
		      "null");
	expect_labels("{\"deployment_status\":{\"canary\":true}}",
		      "{\"tags\":[\"live\"],\"meta\":{\"v\":\"1\"},\"canary_meta\":{\"v\":\"2\"}}",
		      "[\"live\"]", "{\"v\":\"2\"}");
	expect_labels("{\"deployment_status\":{\"canary\":true}}",
		      "{\"tags\":[\"live\"],\"meta\":{\"v\":\"1\"},\"canary_tags\":[\"c\"]}",
		      "[\"c\"]", "{\"v\":\"1\"}");
}

/* Deployment health of one check by its on_update. */
static void test_check_ready(void **state)
{
	(void)state;
	assert_true(deploy_check_ready("passing", NULL));
	assert_false(deploy_check_ready("warning", NULL));
	assert_false(deploy_check_ready("critical", NULL));
	assert_true(deploy_check_ready("passing", "require_healthy"));
	assert_false(deploy_check_ready("warning", "require_healthy"));
	assert_false(deploy_check_ready("critical", "require_healthy"));
	assert_true(deploy_check_ready("passing", "ignore_warnings"));
	assert_true(deploy_check_ready("warning", "ignore_warnings"));
	assert_false(deploy_check_ready("critical", "ignore_warnings"));
	assert_true(deploy_check_ready("passing", "ignore"));
	assert_true(deploy_check_ready("warning", "ignore"));
	assert_true(deploy_check_ready("critical", "ignore"));
	assert_false(deploy_check_ready("", "ignore_warnings"));
	/* an unknown word counts as the default */
	assert_false(deploy_check_ready("warning", "sometimes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_shapes),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_canary_labels),
		cmocka_unit_test(test_check_ready),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
