/* autoscale_rule: utilization samples and the target-value rule (see
 * autoscale_rule.h). */
#include "server/autoscale_rule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

void util_series_add(struct util_series *s, int64_t at, double util, int64_t keep_ns)
{
	size_t drop = 0;
	while (drop < s->n && s->at[drop] < at - keep_ns)
		drop++;
	if (drop) {
		memmove(s->at, s->at + drop, (s->n - drop) * sizeof(*s->at));
		memmove(s->util, s->util + drop, (s->n - drop) * sizeof(*s->util));
		s->n -= drop;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->at = xrealloc(s->at, s->cap * sizeof(*s->at));
		s->util = xrealloc(s->util, s->cap * sizeof(*s->util));
	}
	s->at[s->n] = at;
	s->util[s->n++] = util;
}

bool util_series_mean(const struct util_series *s, int64_t from, double *mean)
{
	double sum = 0;
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->at[i] >= from) {
			sum += s->util[i];
			k++;
		}
	if (!k)
		return false;
	*mean = sum / (double)k;
	return true;
}

int64_t util_series_first(const struct util_series *s)
{
	return s->n ? s->at[0] : 0;
}

void util_series_release(struct util_series *s)
{
	free(s->at);
	free(s->util);
	memset(s, 0, sizeof(*s));
}

int64_t autoscale_desired(const struct autoscale_input *in)
{
	double ratio = in->mean / (double)in->target;
	int64_t want;

	if (fabs(ratio - 1.0) * 100.0 <= (double)in->tolerance)
		return in->count;
	/* a hair under a whole number (floating error) does not add one */
	want = (int64_t)ceil((double)in->count * ratio - 1e-9);
	if (want < in->min)
		want = in->min;
	if (want > in->max)
		want = in->max;
	return want;
}
