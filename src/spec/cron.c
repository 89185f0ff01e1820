/* Cron expressions (cron.h): a parser into bit sets and "next time after t". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "spec/cron.h"

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
};
static const char *const day_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };

struct field_def {
	const char *name;
	int lo, hi;
	const char *const *names; /* names[i] is lo + i */
	int nnames;
};

static const struct field_def fields[5] = {
	{ "minute", 0, 59, NULL, 0 },
	{ "hour", 0, 23, NULL, 0 },
	{ "day of month", 1, 31, NULL, 0 },
	{ "month", 1, 12, month_names, 12 },
	/* 7 is Sunday as well; folded into bit 0 once parsed */
	{ "day of week", 0, 7, day_names, 7 },
};

static const struct {
	const char *name;
	const char *expr;
} descriptors[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },   { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

struct parser {
	const char *expr;   /* the whole expression, for columns */
	const char *p;      /* where we are */
	const struct field_def *f;
	char *err;
	size_t errsize;
};

__attribute__((format(printf, 3, 4)))
static int perr(struct parser *ps, const char *at, const char *fmt, ...)
{
	char msg[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->f)
		snprintf(ps->err, ps->errsize, "column %d (%s): %s", (int)(at - ps->expr) + 1,
			 ps->f->name, msg);
	else
		snprintf(ps->err, ps->errsize, "column %d: %s", (int)(at - ps->expr) + 1, msg);
	return -1;
}

static bool field_end(char c)
{
	return c == '\0' || c == ' ' || c == '\t';
}

/* A number or (where the field has them) a three-letter name. */
static int parse_value(struct parser *ps, int *out)
{
	const char *start = ps->p;
	long v = 0;

	if (*ps->p >= '0' && *ps->p <= '9') {
		while (*ps->p >= '0' && *ps->p <= '9') {
			v = v * 10 + (*ps->p++ - '0');
			if (v > 1000)
				return perr(ps, start, "number out of range %d-%d", ps->f->lo, ps->f->hi);
		}
		if (v < ps->f->lo || v > ps->f->hi)
			return perr(ps, start, "%ld is out of range %d-%d", v, ps->f->lo, ps->f->hi);
		*out = (int)v;
		return 0;
	}
	for (int i = 0; i < ps->f->nnames; i++) {
		if (!strncasecmp(ps->p, ps->f->names[i], 3)) {
			ps->p += 3;
			*out = ps->f->lo + i;
			return 0;
		}
	}
	if (field_end(*ps->p))
		return perr(ps, start, "a value is missing");
	return perr(ps, start, "unexpected \"%c\"", *ps->p);
}

/* One item of a list: `*`, a, a-b, each optionally /step. */
static int parse_item(struct parser *ps, uint64_t *bits, bool *star)
{
	int lo = ps->f->lo, hi = ps->f->hi, step = 1;
	bool single = false;

	if (*ps->p == '*') {
		ps->p++;
		*star = true;
	} else {
		if (parse_value(ps, &lo))
			return -1;
		hi = lo;
		single = *ps->p != '-';
		if (*ps->p == '-') {
			const char *at = ++ps->p;
			if (parse_value(ps, &hi))
				return -1;
			if (hi < lo)
				return perr(ps, at, "range ends before it starts");
		}
	}
	if (*ps->p == '/') {
		const char *at = ++ps->p;
		long s = 0;
		if (*ps->p < '0' || *ps->p > '9')
			return perr(ps, at, "a step is a number");
		while (*ps->p >= '0' && *ps->p <= '9' && s <= 1000)
			s = s * 10 + (*ps->p++ - '0');
		if (s < 1 || s > ps->f->hi)
			return perr(ps, at, "step out of range 1-%d", ps->f->hi);
		step = (int)s;
		/* "a/n" means a through the end by n */
		if (single)
			hi = ps->f->hi;
	}
	for (int v = lo; v <= hi; v += step)
		*bits |= 1ull << v;
	return 0;
}

static int parse_field(struct parser *ps, uint64_t *bits, bool *star)
{
	bool first_star = false;

	*bits = 0;
	*star = *ps->p == '*';
	for (;;) {
		if (parse_item(ps, bits, &first_star))
			return -1;
		if (*ps->p != ',')
			break;
		ps->p++;
	}
	if (!field_end(*ps->p))
		return perr(ps, ps->p, "unexpected \"%c\"", *ps->p);
	return 0;
}

static int parse_fields(struct parser *ps, struct cron *out)
{
	uint64_t bits[5];
	bool star[5];

	for (int i = 0; i < 5; i++) {
		while (*ps->p == ' ' || *ps->p == '\t')
			ps->p++;
		ps->f = NULL;
		if (*ps->p == '\0')
			return perr(ps, ps->p, "%s field is missing: an expression has 5 fields "
				    "(minute hour day-of-month month day-of-week)", fields[i].name);
		ps->f = &fields[i];
		if (parse_field(ps, &bits[i], &star[i]))
			return -1;
	}
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
	ps->f = NULL;
	if (*ps->p)
		return perr(ps, ps->p, "more than 5 fields");
	*out = (struct cron){
		.minutes = bits[0], .hours = (uint32_t)bits[1], .mdays = (uint32_t)bits[2],
		.months = (uint16_t)bits[3],
		.wdays = (uint8_t)((bits[4] | (bits[4] >> 7)) & 0x7f),
		.mday_star = star[2], .wday_star = star[4],
	};
	return 0;
}

int cron_parse(const char *expr, struct cron *out, char *err, size_t errsize)
{
	struct parser ps = { expr, expr, NULL, err, errsize };
	const char *s = expr;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '@') {
		size_t n = strcspn(s, " \t");
		for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]); i++) {
			if (strlen(descriptors[i].name) == n && !strncasecmp(s, descriptors[i].name, n)) {
				if (s[n + strspn(s + n, " \t")])
					return perr(&ps, s + n + strspn(s + n, " \t"),
						    "nothing may follow %s", descriptors[i].name);
				return cron_parse(descriptors[i].expr, out, err, errsize);
			}
		}
		return perr(&ps, s, "unknown descriptor \"%.*s\" (@yearly @annually @monthly "
			    "@weekly @daily @midnight @hourly)", (int)(n > 32 ? 32 : n), s);
	}
	return parse_fields(&ps, out);
}

static bool day_matches(const struct cron *c, const struct tm *tm)
{
	bool md = c->mdays >> tm->tm_mday & 1, wd = c->wdays >> tm->tm_wday & 1;

	/* cron's rule: both restricted -> either; otherwise both */
	if (!c->mday_star && !c->wday_star)
		return md || wd;
	return md && wd;
}

static int64_t make_time(struct tm *tm, bool local)
{
	if (local) {
		tm->tm_isdst = -1;
		return (int64_t)mktime(tm);
	}
	return (int64_t)timegm(tm);
}

int64_t cron_next(const struct cron *c, int64_t t, bool local)
{
	int64_t cur = (t >= 0 ? t / 60 : (t - 59) / 60) * 60 + 60;
	int64_t limit = t + 8 * 366 * 86400LL;

	while (cur <= limit) {
		time_t tt = (time_t)cur;
		struct tm tm;
		int64_t next;

		if (!(local ? localtime_r(&tt, &tm) : gmtime_r(&tt, &tm)))
			return -1;
		/* skip the largest unit that does not match, to its start */
		if (!(c->months >> (tm.tm_mon + 1) & 1)) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!day_matches(c, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!(c->hours >> tm.tm_hour & 1)) {
			tm.tm_hour++;
			tm.tm_min = 0;
		} else if (!(c->minutes >> tm.tm_min & 1)) {
			tm.tm_min++;
		} else {
			return cur;
		}
		tm.tm_sec = 0;
		next = make_time(&tm, local);
		/* a local clock change may map the start of a unit back in time:
		 * always move forward */
		cur = next > cur ? next : cur + 60;
	}
	return -1;
}
