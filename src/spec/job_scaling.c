/* Validation and defaults of a group's scaling block (docs/jobspec.md,
 * "scaling"); called by job_validate.c once every group's count has its
 * default.  The schema checks each field's range; here: max is required,
 * min defaults to the count, the count lies within min..max, and a
 * gpu_utilization policy is for services only (a batch group's count is how
 * many instances run to completion, not a capacity to follow a load). */
#include <stdarg.h>
#include <string.h>

#include "spec/job-int.h"

#define NS_PER_SEC 1000000000LL

__attribute__((format(printf, 4, 5)))
static void scaling_fail(struct diag_list *diags, struct job_path *path, struct hcl_pos pos,
			 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(diags, path, pos, fmt, ap);
	va_end(ap);
}

static void fill(int64_t *v, int64_t dflt)
{
	if (*v == JOB_UNSET)
		*v = dflt;
}

/* One group's block; the number of errors. */
static int check_scaling(const struct job_group *g, struct job_scaling *sc, bool batch,
			 const struct job_failed *failed, struct job_path *path,
			 struct diag_list *diags)
{
	struct job_scaling_policy *p = sc->policy;
	int errors = 0;

	if (sc->max == JOB_UNSET) {
		scaling_fail(diags, path, sc->pos, "%s",
			     "scaling needs max, the largest count the group may have (max = 10)");
		return 1;
	}
	fill(&sc->min, g->count);
	if (sc->min > sc->max) {
		scaling_fail(diags, path, sc->pos, "scaling min (%lld) is above max (%lld)",
			     (long long)sc->min, (long long)sc->max);
		errors++;
	} else if (g->count < sc->min || g->count > sc->max) {
		scaling_fail(diags, path, sc->pos,
			     "count %lld is outside scaling's bounds, min %lld and max %lld",
			     (long long)g->count, (long long)sc->min, (long long)sc->max);
		errors++;
	}
	if (!p || job_failed_has(failed, p))
		return errors;
	if (p->gpu_utilization > 0 && batch) {
		size_t old = job_path_push_key(path, "policy");
		scaling_fail(diags, path, p->pos, "%s",
			     "a scaling policy's gpu_utilization follows the load of a service; "
			     "a batch job's count is not autoscaled");
		job_path_pop(path, old);
		errors++;
	}
	fill(&p->gpu_utilization, 0);
	fill(&p->window, 60 * NS_PER_SEC);
	fill(&p->cooldown, 300 * NS_PER_SEC);
	fill(&p->tolerance, 10);
	return errors;
}

int job_scaling_validate(struct job *job, bool batch, struct job_path *path,
			 const struct job_failed *failed, struct diag_list *diags)
{
	int errors = 0;

	for (size_t i = 0; i < job->ngroups; i++) {
		const struct job_group *g = &job->groups[i];
		size_t old;
		if (!g->scaling || job_failed_has(failed, g) || job_failed_has(failed, g->scaling))
			continue;
		old = job_path_push_key(path, "groups");
		job_path_push_index(path, i);
		job_path_push_key(path, "scaling");
		errors += check_scaling(g, g->scaling, batch, failed, path, diags);
		job_path_pop(path, old);
	}
	return errors;
}
