/* The frames of `herd alloc exec`'s stream; see exec_frame.h. */
#include <errno.h>
#include <string.h>

#include "common/exec_frame.h"

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void exec_frame_put(struct strbuf *out, enum exec_frame_type type, const void *data,
		    size_t len)
{
	unsigned char h[EXEC_FRAME_HEADER];

	h[0] = (unsigned char)type;
	put_u32(h + 1, (uint32_t)len);
	strbuf_add(out, h, sizeof(h));
	if (len)
		strbuf_add(out, data, len);
}

void exec_frame_put_resize(struct strbuf *out, uint16_t rows, uint16_t cols)
{
	unsigned char p[4] = { (unsigned char)(rows >> 8), (unsigned char)rows,
			       (unsigned char)(cols >> 8), (unsigned char)cols };
	exec_frame_put(out, EXEC_FRAME_RESIZE, p, sizeof(p));
}

void exec_frame_put_exit(struct strbuf *out, int32_t code, int32_t signal)
{
	unsigned char p[8];
	put_u32(p, (uint32_t)code);
	put_u32(p + 4, (uint32_t)signal);
	exec_frame_put(out, EXEC_FRAME_EXIT, p, sizeof(p));
}

/* The payload size a type must have, or -1 for any size up to the max;
 * -2 for a type that does not exist. */
static long fixed_size(uint8_t type)
{
	switch (type) {
	case EXEC_FRAME_STDIN:
	case EXEC_FRAME_STDOUT:
	case EXEC_FRAME_STDERR:
	case EXEC_FRAME_ERROR:
		return -1;
	case EXEC_FRAME_RESIZE:
		return 4;
	case EXEC_FRAME_STDIN_CLOSE:
		return 0;
	case EXEC_FRAME_EXIT:
		return 8;
	default:
		return -2;
	}
}

ssize_t exec_frame_parse(const void *buf, size_t len, struct exec_frame *f)
{
	const unsigned char *p = buf;
	uint32_t n;
	long want;

	/* The type is checked as soon as it arrives: a peer speaking
	 * something else is refused before it makes us wait for a length. */
	if (len < 1)
		return 0;
	if ((want = fixed_size(p[0])) == -2)
		return -EPROTO;
	if (len < EXEC_FRAME_HEADER)
		return 0;
	n = get_u32(p + 1);
	if (n > EXEC_FRAME_MAX)
		return -EMSGSIZE;
	if (want >= 0 && n != (uint32_t)want)
		return -EPROTO;
	if (len - EXEC_FRAME_HEADER < n)
		return 0;
	f->type = p[0];
	f->len = n;
	f->data = p + EXEC_FRAME_HEADER;
	return (ssize_t)(EXEC_FRAME_HEADER + n);
}

void exec_frame_resize(const struct exec_frame *f, uint16_t *rows, uint16_t *cols)
{
	*rows = (uint16_t)(f->data[0] << 8 | f->data[1]);
	*cols = (uint16_t)(f->data[2] << 8 | f->data[3]);
}

void exec_frame_exit(const struct exec_frame *f, int32_t *code, int32_t *signal)
{
	*code = (int32_t)get_u32(f->data);
	*signal = (int32_t)get_u32(f->data + 4);
}
