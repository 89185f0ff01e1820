#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int herd_errf(struct herd_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int herd_err_prefix(struct herd_err *err, const char *fmt, ...)
{
	char prefix[256], old[sizeof(err->msg)];
	va_list ap;
	if (!err)
		return 0;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	return err->code;
}
