#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/strbuf.h"

static void test_empty_is_valid_string(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	assert_string_equal(sb.buf, "");
	assert_int_equal(sb.len, 0);
	strbuf_release(&sb);
	strbuf_release(NULL);
}

static void test_add_and_format(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "gpu");
	strbuf_addch(&sb, '-');
	strbuf_addf(&sb, "%d/%s", 7, "mig");
	assert_string_equal(sb.buf, "gpu-7/mig");
	assert_int_equal(sb.len, 9);
	strbuf_setlen(&sb, 3);
	assert_string_equal(sb.buf, "gpu");
	strbuf_release(&sb);
}

static void test_long_format_grows(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	strbuf_addf(&sb, "<%s>", big);
	assert_int_equal(sb.len, sizeof(big) + 1);
	assert_int_equal(sb.buf[0], '<');
	assert_int_equal(sb.buf[sb.len - 1], '>');
	strbuf_release(&sb);
}

static void test_detach_leaves_empty(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len;
	char *s;
	strbuf_adds(&sb, "abc");
	s = strbuf_detach(&sb, &len);
	assert_string_equal(s, "abc");
	assert_int_equal(len, 3);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sb.buf, "");
	free(s);
	s = strbuf_detach(&sb, NULL); /* detaching an empty buffer gives a heap "" */
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_valid_string),
		cmocka_unit_test(test_add_and_format),
		cmocka_unit_test(test_long_format_grows),
		cmocka_unit_test(test_detach_leaves_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
