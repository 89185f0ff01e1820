#include "common/units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out, struct herd_err *err)
{
	char *end;
	long long v;

	if (!*s || isspace((unsigned char)*s))
		return herd_errf(err, -EINVAL, "expected a whole number, got \"%s\"", s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return herd_errf(err, -EINVAL, "expected a whole number, got \"%s\"", s);
	if (errno == ERANGE || v < min || v > max)
		return herd_errf(err, -ERANGE, "%s is out of range (%" PRId64 "..%" PRId64 ")",
				 s, min, max);
	*out = v;
	return 0;
}

struct unit {
	const char *name;
	double factor;
};

static const struct unit duration_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "\xc2\xb5s", 1e3 }, { "ms", 1e6 },
	{ "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 }, { NULL, 0 },
};

int parse_duration(const char *s, int64_t *out_ns, struct herd_err *err)
{
	const char *p = s;
	double total = 0;
	int neg = 0;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (!strcmp(p, "0")) {
		*out_ns = 0;
		return 0;
	}
	if (!*p)
		goto bad;
	while (*p) {
		char *end;
		double v;
		size_t ulen = 0;
		const struct unit *u, *best = NULL;

		if (!isdigit((unsigned char)*p) && *p != '.')
			goto bad;
		v = strtod(p, &end);
		if (end == p)
			goto bad;
		p = end;
		for (u = duration_units; u->name; u++) {
			size_t l = strlen(u->name);
			if (!strncmp(p, u->name, l) && l > ulen) {
				best = u;
				ulen = l;
			}
		}
		if (!best)
			goto bad;
		p += ulen;
		total += v * best->factor;
	}
	if (neg)
		total = -total;
	if (!(total >= (double)INT64_MIN && total <= (double)INT64_MAX))
		return herd_errf(err, -ERANGE, "duration \"%s\" is too long", s);
	*out_ns = (int64_t)llround(total);
	return 0;
bad:
	return herd_errf(err, -EINVAL,
			 "expected a duration such as \"30s\", \"5m\" or \"1h30m\", got \"%s\"", s);
}

static const struct unit size_units[] = {
	{ "b", 1 }, { "k", 1e3 }, { "kb", 1e3 }, { "m", 1e6 }, { "mb", 1e6 },
	{ "g", 1e9 }, { "gb", 1e9 }, { "t", 1e12 }, { "tb", 1e12 },
	{ "kib", 1024.0 }, { "mib", 1048576.0 }, { "gib", 1073741824.0 },
	{ "tib", 1099511627776.0 }, { NULL, 0 },
};

int parse_size(const char *s, int64_t *out_bytes, struct herd_err *err)
{
	const char *p = s;
	const struct unit *u;
	char *end;
	double v, bytes;

	if (!isdigit((unsigned char)*p) && *p != '.')
		goto bad;
	v = strtod(p, &end);
	if (end == p)
		goto bad;
	p = end;
	while (*p == ' ')
		p++;
	if (!*p) {
		bytes = v;
	} else {
		for (u = size_units; u->name; u++)
			if (!strcasecmp(p, u->name))
				break;
		if (!u->name)
			goto bad;
		bytes = v * u->factor;
	}
	if (!(bytes >= 0 && bytes <= 9.2e18))
		return herd_errf(err, -ERANGE, "size \"%s\" is too large", s);
	*out_bytes = (int64_t)llround(bytes);
	return 0;
bad:
	return herd_errf(err, -EINVAL,
			 "expected a size such as \"512MB\" or \"2 GiB\", got \"%s\"", s);
}

int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *format_duration(int64_t ns, char *buf, size_t size)
{
	static const struct { const char *name; int64_t ns; } parts[] = {
		{ "h", 3600 * NS_PER_SEC }, { "m", 60 * NS_PER_SEC }, { "s", NS_PER_SEC },
		{ "ms", 1000000 }, { "us", 1000 }, { "ns", 1 },
	};
	size_t off = 0;
	uint64_t rest;

	if (ns == 0) {
		snprintf(buf, size, "0s");
		return buf;
	}
	if (ns < 0)
		off += (size_t)snprintf(buf, size, "-");
	rest = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && rest && off < size; i++) {
		uint64_t n = rest / (uint64_t)parts[i].ns;
		if (!n)
			continue;
		off += (size_t)snprintf(buf + off, size - off, "%" PRIu64 "%s", n, parts[i].name);
		rest -= n * (uint64_t)parts[i].ns;
	}
	return buf;
}

struct timespec deadline_after(clockid_t clock, int64_t ns)
{
	struct timespec t;

	clock_gettime(clock, &t);
	if (ns < 0)
		ns = 0;
	t.tv_sec += ns / NS_PER_SEC;
	t.tv_nsec += ns % NS_PER_SEC;
	if (t.tv_nsec >= NS_PER_SEC) {
		t.tv_sec++;
		t.tv_nsec -= NS_PER_SEC;
	}
	return t;
}
