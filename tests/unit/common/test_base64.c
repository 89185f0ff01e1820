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

/* base64url: RFC 4648's vectors without padding, the alphabet's two
 * characters of its own, and what decoding refuses. */
static void test_url_vectors(void **state)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const enc[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE",
					   "Zm9vYmFy" };
	static const unsigned char high[] = { 0xfb, 0xff, 0xbf };
	unsigned char *d;
	char *e;
	size_t n;
	(void)state;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		e = base64url_encode(plain[i], strlen(plain[i]));
		d = base64url_decode(enc[i], strlen(enc[i]), &n);
		assert_string_equal(e, enc[i]);
		assert_non_null(d);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(d, plain[i], n);
		free(e);
		free(d);
	}
	e = base64url_encode(high, sizeof(high));
	assert_string_equal(e, "-_-_");
	d = base64url_decode(e, 4, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(d, high, 3);
	free(e);
	free(d);
	/* only the first len characters */
	d = base64url_decode("Zm9v.rest", 4, &n);
	assert_non_null(d);
	assert_int_equal(n, 3);
	free(d);
	assert_null(base64url_decode("Zg==", 4, &n));   /* padding */
	assert_null(base64url_decode("Zm9v+g", 6, &n)); /* the standard alphabet's */
	assert_null(base64url_decode("Zm9vY", 5, &n));  /* a lone character */
	assert_null(base64url_decode("Zh", 2, &n));     /* bits past the last byte */
	assert_null(base64url_decode("Zm 9v", 5, &n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_binary_round_trip),
		cmocka_unit_test(test_decode_refuses),
		cmocka_unit_test(test_url_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
