/* The HTTP core prepares a request again without leaking or overflowing:
 * the server refuses an oversize body at the headers and libmicrohttpd may
 * call its handler again for the same request.  ASan's leak check fails
 * this test on a leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "server/http-int.h"

static int echo(struct http_request *req, struct http_response *resp, void *ctx)
{
	(void)ctx;
	http_reply(resp, 200, json_pack("{s:s}", "id", http_param(req, "id")));
	return 0;
}

static void test_prepare_twice(void **state)
{
	struct http_router *r = http_router_new();
	struct http_limits limits = { 0 };
	struct http_request_state st;
	struct http_response resp = { 0 };
	(void)state;
	assert_int_equal(http_router_add(r, "POST", "/v1/thing/:id", echo, HTTP_ROUTE_BODY, NULL, NULL), 0);
	http_request_state_init(&st, "POST", "/v1/thing/abc");
	http_request_add_body(&st, "{\"a\": 1}", 8, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(http_request_prepare(&st, r, &limits, &resp), 0);
		assert_int_equal(st.req.nparams, 1);
		assert_string_equal(http_param(&st.req, "id"), "abc");
		assert_non_null(st.req.body);
	}
	http_request_run(&st, 1, &resp);
	assert_int_equal(resp.status, 200);
	assert_string_equal(json_string_value(json_object_get(resp.body, "id")), "abc");
	http_response_release(&resp);
	http_request_state_release(&st);
	/* a path no route takes, twice */
	http_request_state_init(&st, "GET", "/v1//x");
	assert_int_equal(http_request_prepare(&st, r, &limits, &resp), 1);
	assert_int_equal(http_request_prepare(&st, r, &limits, &resp), 1);
	assert_int_equal(resp.status, 404);
	http_response_release(&resp);
	http_request_state_release(&st);
	http_router_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_prepare_twice) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
