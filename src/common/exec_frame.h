/* exec_frame: the framing of `herd alloc exec`'s stream (docs/api.md,
 * "POST /v1/client/allocation/:id/exec"), shared by the agent and the CLI
 * on the two ends of the upgraded connection.
 *
 * A frame is 1 byte of type, 4 bytes of payload length (big-endian), then
 * the payload.  Payloads are at most EXEC_FRAME_MAX bytes; the fixed ones
 * have exactly their size (resize 4, exit 8, stdin-close 0).  Pure
 * functions: no I/O, no allocation except into the caller's strbuf. */
#ifndef HERD_COMMON_EXEC_FRAME_H
#define HERD_COMMON_EXEC_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"

#define EXEC_FRAME_HEADER 5
#define EXEC_FRAME_MAX 65536

enum exec_frame_type {
	EXEC_FRAME_STDIN = 1,       /* client -> agent: bytes for the command's stdin */
	EXEC_FRAME_STDOUT = 2,      /* agent -> client: the command's stdout (the pty with -t) */
	EXEC_FRAME_STDERR = 3,      /* agent -> client: the command's stderr (none with -t) */
	EXEC_FRAME_RESIZE = 4,      /* client -> agent: rows u16, cols u16 */
	EXEC_FRAME_STDIN_CLOSE = 5, /* client -> agent: stdin ended (EOF) */
	EXEC_FRAME_EXIT = 6,        /* agent -> client, last: exit code i32 (-1 when
				     * killed), signal i32 (0 when exited) */
	EXEC_FRAME_ERROR = 7,       /* agent -> client: a message (UTF-8), then an exit */
};

struct exec_frame {
	uint8_t type;
	uint32_t len;
	const unsigned char *data;  /* len bytes, inside the parsed buffer */
};

/* Appends one frame of type with len bytes of data to out.  len must be
 * at most EXEC_FRAME_MAX (larger is a caller's bug: split first). */
void exec_frame_put(struct strbuf *out, enum exec_frame_type type, const void *data,
		    size_t len);
/* Appends a resize frame / an exit frame. */
void exec_frame_put_resize(struct strbuf *out, uint16_t rows, uint16_t cols);
void exec_frame_put_exit(struct strbuf *out, int32_t code, int32_t signal);

/* Decodes the frame at the start of buf (len bytes available).  Returns
 * the bytes it takes (> 0) with *f pointing into buf; 0 when buf holds
 * only part of a frame (read more and call again); -EPROTO for an unknown
 * type or a fixed-size frame of the wrong size; -EMSGSIZE for a payload
 * over EXEC_FRAME_MAX.  *f is written only on success. */
ssize_t exec_frame_parse(const void *buf, size_t len, struct exec_frame *f);

/* The fields of a parsed resize / exit frame (the parser checked the
 * sizes). */
void exec_frame_resize(const struct exec_frame *f, uint16_t *rows, uint16_t *cols);
void exec_frame_exit(const struct exec_frame *f, int32_t *code, int32_t *signal);

#endif
