/* err: the one error convention of herd.
 *
 * Functions that can fail return int: 0 (or a count) on success, -errno on
 * failure.  Where a person needs to know why, the last parameter is a
 * `struct herd_err *err` (may be NULL) that receives one message: lower case,
 * naming the thing that failed and what was expected.  Outputs are written
 * only on success. */
#ifndef HERD_ERR_H
#define HERD_ERR_H

struct herd_err {
	int code;       /* the -errno returned with the message */
	char msg[512];
};

/* Fills err (when not NULL) and returns code, so that callers can write
 * `return herd_errf(err, -EINVAL, "bad %s", x);`.  code must be negative. */
int herd_errf(struct herd_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the message already in err with "prefix: "; returns err->code. */
int herd_err_prefix(struct herd_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
