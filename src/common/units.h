/* units: numbers as people write them in job files and flags.
 *
 * Durations: "30s", "5m", "1h30m", "250ms", "1.5h" (units ns us ms s m h;
 * Go's time.ParseDuration syntax, which Nomad users know).  Sizes: "512MB",
 * "2 GiB", "100" (bytes); decimal units kB MB GB TB are powers of 1000,
 * binary KiB MiB GiB TiB powers of 1024, as IEC says; case of the unit
 * letters is accepted loosely ("512mb", "2gib").  Integers: strict base-10
 * with range checks.  On failure each returns -EINVAL or -ERANGE, fills err,
 * and leaves the output untouched. */
#ifndef HERD_UNITS_H
#define HERD_UNITS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/err.h"

#define NS_PER_SEC 1000000000LL

int parse_duration(const char *s, int64_t *out_ns, struct herd_err *err);
int parse_size(const char *s, int64_t *out_bytes, struct herd_err *err);
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out, struct herd_err *err);

/* The value of the hex digit c (0-9, a-f, A-F), or -1 for anything else. */
int hex_digit(int c);

/* Writes a duration the way parse_duration reads it ("1h30m", "250ms", "0s")
 * into buf; returns buf. */
char *format_duration(int64_t ns, char *buf, size_t size);

/* CLOCK_MONOTONIC now, in nanoseconds. */
int64_t mono_ns(void);

/* The instant ns (>= 0) from now on clock: the absolute deadline that
 * pthread_cond_timedwait takes (with a condition variable on that clock). */
struct timespec deadline_after(clockid_t clock, int64_t ns);

#endif
