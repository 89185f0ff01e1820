/* Fuzz target: the frames of `herd alloc exec`'s stream (common/exec_frame.h),
 * which the agent reads from the network.
 *
 * The input is read as a stream, frame after frame, as the agent's pump
 * does, and also fed to the parser in every prefix length (a frame arriving
 * in pieces).  Whatever the parser accepts must re-encode to the very bytes
 * it took, and a prefix of a frame must never be taken as a frame. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/exec_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes exec_frame_put writes for f must be the ones it was parsed
 * from. */
static void check_roundtrip(const struct exec_frame *f, const uint8_t *from, size_t took)
{
	struct strbuf out = STRBUF_INIT;

	if (f->len > EXEC_FRAME_MAX || took != EXEC_FRAME_HEADER + (size_t)f->len ||
	    f->data != from + EXEC_FRAME_HEADER)
		abort();
	exec_frame_put(&out, (enum exec_frame_type)f->type, f->data, f->len);
	if (out.len != took || memcmp(out.buf, from, took))
		abort();
	if (f->type == EXEC_FRAME_RESIZE) {
		uint16_t rows, cols;
		exec_frame_resize(f, &rows, &cols);
		strbuf_reset(&out);
		exec_frame_put_resize(&out, rows, cols);
		if (out.len != took || memcmp(out.buf, from, took))
			abort();
	} else if (f->type == EXEC_FRAME_EXIT) {
		int32_t code, sig;
		exec_frame_exit(f, &code, &sig);
		strbuf_reset(&out);
		exec_frame_put_exit(&out, code, sig);
		if (out.len != took || memcmp(out.buf, from, took))
			abort();
	}
	strbuf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct exec_frame f;
		ssize_t took = exec_frame_parse(data + off, size - off, &f);
		if (took == 0)
			break; /* a partial frame at the end */
		if (took < 0) {
			/* an error is final, and comes as soon as the header says it */
			struct exec_frame g;
			if (size - off >= EXEC_FRAME_HEADER &&
			    exec_frame_parse(data + off, EXEC_FRAME_HEADER, &g) != took)
				abort();
			break;
		}
		if ((size_t)took > size - off)
			abort();
		check_roundtrip(&f, data + off, (size_t)took);
		/* every shorter prefix of this frame is "read more" */
		for (size_t cut = 0; cut < (size_t)took; cut += 1 + cut / 8)
			if (exec_frame_parse(data + off, cut, &f) != 0)
				abort();
		off += (size_t)took;
	}
	return 0;
}
