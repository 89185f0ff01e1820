/* exec_frame: round trips, frames split at every byte (short reads),
 * several frames in one buffer, and what the parser refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "common/exec_frame.h"

static void test_round_trip(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct exec_frame f;
	(void)state;
	exec_frame_put(&sb, EXEC_FRAME_STDOUT, "hello", 5);
	assert_int_equal(sb.len, EXEC_FRAME_HEADER + 5);
	assert_memory_equal(sb.buf, "\x02\x00\x00\x00\x05hello", 10);
	assert_int_equal(exec_frame_parse(sb.buf, sb.len, &f), 10);
	assert_int_equal(f.type, EXEC_FRAME_STDOUT);
	assert_int_equal(f.len, 5);
	assert_memory_equal(f.data, "hello", 5);
	strbuf_release(&sb);
}

static void test_fixed_frames(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct exec_frame f;
	uint16_t rows, cols;
	int32_t code, sig;
	ssize_t n;
	(void)state;
	exec_frame_put_resize(&sb, 50, 300);
	exec_frame_put_exit(&sb, -1, 9);
	exec_frame_put(&sb, EXEC_FRAME_STDIN_CLOSE, NULL, 0);
	n = exec_frame_parse(sb.buf, sb.len, &f);
	assert_int_equal(n, EXEC_FRAME_HEADER + 4);
	assert_int_equal(f.type, EXEC_FRAME_RESIZE);
	exec_frame_resize(&f, &rows, &cols);
	assert_int_equal(rows, 50);
	assert_int_equal(cols, 300);
	size_t off = (size_t)n;
	n = exec_frame_parse(sb.buf + off, sb.len - off, &f);
	assert_int_equal(n, EXEC_FRAME_HEADER + 8);
	assert_int_equal(f.type, EXEC_FRAME_EXIT);
	exec_frame_exit(&f, &code, &sig);
	assert_int_equal(code, -1);
	assert_int_equal(sig, 9);
	off += (size_t)n;
	n = exec_frame_parse(sb.buf + off, sb.len - off, &f);
	assert_int_equal(n, EXEC_FRAME_HEADER);
	assert_int_equal(f.type, EXEC_FRAME_STDIN_CLOSE);
	assert_int_equal(f.len, 0);
	assert_int_equal(off + (size_t)n, sb.len);
	strbuf_release(&sb);
}

/* Every prefix shorter than the frame asks for more and leaves *f alone. */
static void test_short_reads(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct exec_frame f = { 0xee, 0xeeee, NULL };
	(void)state;
	exec_frame_put(&sb, EXEC_FRAME_STDERR, "split me", 8);
	for (size_t i = 0; i < sb.len; i++) {
		assert_int_equal(exec_frame_parse(sb.buf, i, &f), 0);
		assert_int_equal(f.type, 0xee);
		assert_null(f.data);
	}
	assert_int_equal(exec_frame_parse(sb.buf, sb.len, &f), (ssize_t)sb.len);
	assert_memory_equal(f.data, "split me", 8);
	strbuf_release(&sb);
}

static void test_max_size_accepted(void **state)
{
	static char big[EXEC_FRAME_MAX];
	struct strbuf sb = STRBUF_INIT;
	struct exec_frame f;
	(void)state;
	memset(big, 'x', sizeof(big));
	exec_frame_put(&sb, EXEC_FRAME_STDIN, big, sizeof(big));
	assert_int_equal(exec_frame_parse(sb.buf, sb.len, &f), EXEC_FRAME_HEADER + EXEC_FRAME_MAX);
	assert_int_equal(f.len, EXEC_FRAME_MAX);
	strbuf_release(&sb);
}

/* A length over the limit is refused from the header alone: the reader
 * never waits for (or buffers) the oversize payload. */
static void test_oversize_rejected(void **state)
{
	const unsigned char h[] = { EXEC_FRAME_STDIN, 0x00, 0x01, 0x00, 0x01 };
	const unsigned char huge[] = { EXEC_FRAME_STDOUT, 0xff, 0xff, 0xff, 0xff };
	struct exec_frame f = { 0 };
	(void)state;
	assert_int_equal(exec_frame_parse(h, sizeof(h), &f), -EMSGSIZE);
	assert_int_equal(exec_frame_parse(huge, sizeof(huge), &f), -EMSGSIZE);
	assert_int_equal(f.type, 0);
}

static void test_bad_types(void **state)
{
	const unsigned char zero[] = { 0, 0, 0, 0, 0 };
	const unsigned char eight[] = { 8 };
	const unsigned char ff[] = { 0xff, 0, 0, 0, 0 };
	struct exec_frame f;
	(void)state;
	assert_int_equal(exec_frame_parse(zero, sizeof(zero), &f), -EPROTO);
	/* refused on the type byte alone */
	assert_int_equal(exec_frame_parse(eight, sizeof(eight), &f), -EPROTO);
	assert_int_equal(exec_frame_parse(ff, sizeof(ff), &f), -EPROTO);
	assert_int_equal(exec_frame_parse(NULL, 0, &f), 0);
}

static void test_fixed_sizes_enforced(void **state)
{
	const unsigned char resize3[] = { EXEC_FRAME_RESIZE, 0, 0, 0, 3, 1, 2, 3 };
	const unsigned char exit4[] = { EXEC_FRAME_EXIT, 0, 0, 0, 4, 0, 0, 0, 0 };
	const unsigned char close1[] = { EXEC_FRAME_STDIN_CLOSE, 0, 0, 0, 1, 'x' };
	struct exec_frame f;
	(void)state;
	assert_int_equal(exec_frame_parse(resize3, sizeof(resize3), &f), -EPROTO);
	assert_int_equal(exec_frame_parse(exit4, sizeof(exit4), &f), -EPROTO);
	assert_int_equal(exec_frame_parse(close1, sizeof(close1), &f), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_fixed_frames),
		cmocka_unit_test(test_short_reads),
		cmocka_unit_test(test_max_size_accepted),
		cmocka_unit_test(test_oversize_rejected),
		cmocka_unit_test(test_bad_types),
		cmocka_unit_test(test_fixed_sizes_enforced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
