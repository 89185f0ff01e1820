/* cron: five-field cron expressions and the next time one fires
 * (docs/jobspec.md, "Periodic jobs").
 *
 * "minute hour day-of-month month day-of-week", each field `*`, a number, a
 * name (jan..dec, sun..sat), a range a-b, a step (*\/n, a-b/n, a/n) or a
 * comma list of those; or one of @yearly @annually @monthly @weekly @daily
 * @midnight @hourly.  Day of week 0 and 7 are Sunday.  As cron defines it,
 * when both day fields are restricted (neither starts with `*`) a day
 * matches when either matches; otherwise both must.
 *
 * Pure: no allocation, no global state; safe from any thread. */
#ifndef HERD_SPEC_CRON_H
#define HERD_SPEC_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cron {
	uint64_t minutes;   /* bit m: minute m (0..59) */
	uint32_t hours;     /* bit h: 0..23 */
	uint32_t mdays;     /* bit d: day of month 1..31 */
	uint16_t months;    /* bit m: month 1..12 */
	uint8_t wdays;      /* bit w: 0 (Sunday)..6 */
	bool mday_star;     /* the field started with `*` */
	bool wday_star;
};

/* Parses expr into *out.  Returns 0, or -1 with a message naming the
 * column (1-based) and field of the problem written to err. */
int cron_parse(const char *expr, struct cron *out, char *err, size_t errsize);

/* The first time the expression fires strictly after t (unix seconds), in
 * UTC (local = false) or in the process's local time zone (local = true);
 * -1 when it never fires within the next 8 years (e.g. "0 0 30 2 *"). */
int64_t cron_next(const struct cron *c, int64_t t, bool local);

#endif
