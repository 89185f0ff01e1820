/* CPU core sets and their list syntax; see cpulist.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpulist.h"
#include "common/xalloc.h"

/* A decimal id at *p (advanced past it), or -1 with err. */
static long parse_id(const char **p, struct herd_err *err)
{
	const char *s = *p;
	long v = 0;
	if (!isdigit((unsigned char)*s)) {
		if (*s)
			herd_errf(err, -EINVAL, "unexpected '%c': expected a core id", *s);
		else
			herd_errf(err, -EINVAL, "a core id is missing at the end");
		return -1;
	}
	for (; isdigit((unsigned char)*s); s++) {
		v = v * 10 + (*s - '0');
		if (v >= CPULIST_MAX) {
			size_t n = strspn(*p, "0123456789");
			herd_errf(err, -EINVAL, "core %.*s is above %d", n > 20 ? 20 : (int)n, *p,
				  CPULIST_MAX - 1);
			return -1;
		}
	}
	*p = s;
	return v;
}

int cpulist_parse(const char *s, struct cpulist *out, struct herd_err *err)
{
	struct cpulist set = CPULIST_INIT;
	const char *p = s ? s : "";
	size_t len;

	while (*p == ' ' || *p == '\t')
		p++;
	len = strlen(p);
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n'))
		len--;
	char *text = xstrndup(p, len);
	int rc = 0;
	for (const char *q = text; *q; ) {
		long a = parse_id(&q, err), b;
		if (a < 0) {
			rc = -EINVAL;
			break;
		}
		b = a;
		if (*q == '-') {
			q++;
			if ((b = parse_id(&q, err)) < 0) {
				rc = -EINVAL;
				break;
			}
			if (b < a) {
				rc = herd_errf(err, -EINVAL, "reversed range %ld-%ld", a, b);
				break;
			}
		}
		for (long i = a; i <= b; i++)
			cpulist_add(&set, (int)i);
		if (*q == ',') {
			q++;
			if (!*q) {
				rc = herd_errf(err, -EINVAL, "a core id is missing after ','");
				break;
			}
		} else if (*q) {
			rc = herd_errf(err, -EINVAL, "unexpected '%c': expected ',' or '-'", *q);
			break;
		}
	}
	free(text);
	if (rc == 0)
		*out = set;
	return rc;
}

int cpulist_next(const struct cpulist *s, int from)
{
	if (from < 0)
		from = 0;
	for (int w = from / 64; w < CPULIST_WORDS; w++) {
		uint64_t bits = s->w[w];
		if (w == from / 64)
			bits &= ~(uint64_t)0 << (from % 64);
		if (bits)
			return w * 64 + __builtin_ctzll(bits);
	}
	return -1;
}

size_t cpulist_format(const struct cpulist *s, char *buf, size_t len)
{
	size_t need = 0;
	if (len)
		buf[0] = '\0';
	for (int a = cpulist_next(s, 0); a >= 0; ) {
		int b = a;
		while (b + 1 < CPULIST_MAX && cpulist_has(s, b + 1))
			b++;
		char item[32];
		int n = b > a ? snprintf(item, sizeof(item), "%s%d-%d", need ? "," : "", a, b)
			      : snprintf(item, sizeof(item), "%s%d", need ? "," : "", a);
		if (need + (size_t)n < len)
			memcpy(buf + need, item, (size_t)n + 1);
		else if (len && need < len)
			buf[need] = '\0';   /* truncated at a whole item */
		need += (size_t)n;
		a = cpulist_next(s, b + 1);
	}
	return need;
}

char *cpulist_str(const struct cpulist *s)
{
	size_t n = cpulist_format(s, NULL, 0);
	char *buf = xmalloc(n + 1);
	cpulist_format(s, buf, n + 1);
	return buf;
}

int cpulist_count(const struct cpulist *s)
{
	int n = 0;
	for (int w = 0; w < CPULIST_WORDS; w++)
		n += __builtin_popcountll(s->w[w]);
	return n;
}

bool cpulist_empty(const struct cpulist *s)
{
	for (int w = 0; w < CPULIST_WORDS; w++)
		if (s->w[w])
			return false;
	return true;
}

bool cpulist_equal(const struct cpulist *a, const struct cpulist *b)
{
	return !memcmp(a->w, b->w, sizeof(a->w));
}

void cpulist_and(struct cpulist *dst, const struct cpulist *src)
{
	for (int w = 0; w < CPULIST_WORDS; w++)
		dst->w[w] &= src->w[w];
}

void cpulist_andnot(struct cpulist *dst, const struct cpulist *src)
{
	for (int w = 0; w < CPULIST_WORDS; w++)
		dst->w[w] &= ~src->w[w];
}

void cpulist_or(struct cpulist *dst, const struct cpulist *src)
{
	for (int w = 0; w < CPULIST_WORDS; w++)
		dst->w[w] |= src->w[w];
}

size_t cpulist_bytes(const struct cpulist *s)
{
	int w = CPULIST_WORDS;
	while (w > 1 && !s->w[w - 1])
		w--;
	return (size_t)w * sizeof(uint64_t);
}
