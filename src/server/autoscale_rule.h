/* autoscale_rule: the pure half of herd's GPU-utilization autoscaler (a
 * group's scaling { policy { gpu_utilization window cooldown tolerance } },
 * docs/jobspec.md "scaling"): a device's utilization samples and the
 * target-value rule.  No I/O, no locks, no clock: unit-tested with samples
 * in, counts out.  The server's half (the samples from heartbeats, the
 * round, the scale) is autoscale.c. */
#ifndef HERD_SERVER_AUTOSCALE_RULE_H
#define HERD_SERVER_AUTOSCALE_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One device's utilization samples (percent), oldest first.  Zeroed is
 * empty; the arrays are owned. */
struct util_series {
	int64_t *at;  /* unix ns of each sample */
	double *util; /* 0..100 */
	size_t n, cap;
};

/* Appends a sample taken at `at` and drops those older than at - keep_ns. */
void util_series_add(struct util_series *s, int64_t at, double util, int64_t keep_ns);
/* The mean of the samples taken at or after from into *mean; false when
 * there is none. */
bool util_series_mean(const struct util_series *s, int64_t from, double *mean);
/* When the oldest sample kept was taken (0: none). */
int64_t util_series_first(const struct util_series *s);
void util_series_release(struct util_series *s);

/* What the rule reads: the group's count and bounds, the policy's target
 * and tolerance (percent), and the mean utilization of the group's GPUs
 * over the window. */
struct autoscale_input {
	int64_t count, min, max;
	int target;    /* 1..100 */
	int tolerance; /* 0..90: |mean / target - 1| at most this percent moves nothing */
	double mean;   /* 0..100 */
};

/* The count the group should have: count x mean / target rounded up (the
 * count that would bring the mean to the target if the load spread evenly),
 * within min..max; count itself when the mean is within the tolerance of
 * the target. */
int64_t autoscale_desired(const struct autoscale_input *in);

#endif
