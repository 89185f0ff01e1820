/* base64: RFC 4648's test vectors both ways, and what decoding refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

static void test_rfc4648_vectors(void **state)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					   "Zm9vYmFy" };
	(void)state;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char *e = base64_encode(plain[i], strlen(plain[i]));
		size_t n = 99;
		unsigned char *d = base64_decode(enc[i], &n);
		assert_string_equal(e, enc[i]);
		assert_non_null(d);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(d, plain[i], n);
		assert_int_equal(base64_decoded_len(enc[i]), n);
		free(e);
		free(d);
	}
}

static void test_binary_round_trip(void **state)
{
	unsigned char bytes[256], *d;
	char *e;
	size_t n;
	(void)state;
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)(255 - i);
	e = base64_encode(bytes, sizeof(bytes));
	d = base64_decode(e, &n);
	assert_int_equal(n, sizeof(bytes));
	assert_memory_equal(d, bytes, n);
	free(e);
	free(d);
}

static void test_decode_refuses(void **state)
{
	static const char *const bad[] = { "Zg=", "Zg", "Z===", "=Zg=", "Zm9v\n", "Zm 9",
					   "Zg==Zg==", "Zm9-", "Zm=v" };
	size_t n;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(base64_decode(bad[i], &n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_binary_round_trip),
		cmocka_unit_test(test_decode_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
