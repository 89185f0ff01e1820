/* Validation and defaults of migrate blocks (job and group level); called
 * by job_validate.c.  The job's block is every group's default, field by
 * field (Nomad's merge, as for update); a group with no block at either
 * level keeps none and the server uses Nomad's defaults
 * (job_group_migrate), so that a job without the block keeps the
 * canonical text it had (docs/jobspec.md, "migrate"). */
#include <stdarg.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "spec/job-int.h"

#define MIGRATE_MAX_PARALLEL 1
#define MIGRATE_MIN_HEALTHY (10 * NS_PER_SEC)
#define MIGRATE_HEALTHY_DEADLINE (300 * NS_PER_SEC)

const struct job_migrate *job_group_migrate(const struct job_group *g)
{
	static const struct job_migrate defaults = {
		.max_parallel = MIGRATE_MAX_PARALLEL,
		.health_check = (char *)"checks",
		.min_healthy_time = MIGRATE_MIN_HEALTHY,
		.healthy_deadline = MIGRATE_HEALTHY_DEADLINE,
	};
	return g && g->migrate ? g->migrate : &defaults;
}

static void def_int(int64_t *f, int64_t value)
{
	if (*f == JOB_UNSET)
		*f = value;
}

/* m's unset fields from over (the job's block, filled), or Nomad's
 * defaults when over is NULL. */
static void migrate_fill(struct job_migrate *m, const struct job_migrate *over)
{
	def_int(&m->max_parallel, over ? over->max_parallel : MIGRATE_MAX_PARALLEL);
	if (!m->health_check)
		m->health_check = xstrdup(over ? over->health_check : "checks");
	def_int(&m->min_healthy_time, over ? over->min_healthy_time : MIGRATE_MIN_HEALTHY);
	def_int(&m->healthy_deadline, over ? over->healthy_deadline : MIGRATE_HEALTHY_DEADLINE);
}

__attribute__((format(printf, 4, 5)))
static int migrate_fail(struct diag_list *diags, struct job_path *path, struct hcl_pos pos,
			const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(diags, path, pos, fmt, ap);
	va_end(ap);
	return 1;
}

/* The rules between fields of a filled block. */
static int migrate_check(const struct job_migrate *m, struct job_path *path,
			 struct diag_list *diags)
{
	if (m->min_healthy_time >= m->healthy_deadline)
		return migrate_fail(diags, path, m->pos,
				    "min_healthy_time (%gs) must be less than healthy_deadline (%gs)",
				    (double)m->min_healthy_time / 1e9,
				    (double)m->healthy_deadline / 1e9);
	return 0;
}

/* A batch job's blocks: dropped with a warning (Nomad ignores them: a
 * batch allocation runs until it ends or the drain's deadline). */
static void drop_batch(struct job *job, struct diag_list *diags)
{
	const struct job_migrate *m = job->migrate;

	for (size_t i = 0; !m && i < job->ngroups; i++)
		m = job->groups[i].migrate;
	diag_warn(diags, m->pos.line, m->pos.col,
		  "migrate is ignored for batch jobs: their allocations run on a draining node "
		  "until they end or the drain's deadline");
	for (size_t i = 0; i < job->ngroups; i++) {
		job_migrate_free(job->groups[i].migrate);
		job->groups[i].migrate = NULL;
	}
	job_migrate_free(job->migrate);
	job->migrate = NULL;
}

int job_migrate_validate(struct job *job, bool batch, struct job_path *path,
			 const struct job_failed *failed, struct diag_list *diags)
{
	bool any = job->migrate != NULL;
	int errors = 0;
	size_t old;

	for (size_t i = 0; i < job->ngroups; i++)
		any = any || job->groups[i].migrate;
	if (!any)
		return 0;
	if (batch) {
		drop_batch(job, diags);
		return 0;
	}
	if (job->migrate && !job_failed_has(failed, job->migrate)) {
		old = job_path_push_key(path, "migrate");
		migrate_fill(job->migrate, NULL);
		errors += migrate_check(job->migrate, path, diags);
		job_path_pop(path, old);
	}
	for (size_t i = 0; i < job->ngroups; i++) {
		struct job_group *g = &job->groups[i];
		bool own = g->migrate != NULL;
		if (job_failed_has(failed, g) || (!own && !job->migrate) ||
		    (own && job_failed_has(failed, g->migrate)) ||
		    (job->migrate && job_failed_has(failed, job->migrate)))
			continue;
		if (!own) {
			g->migrate = xcalloc(1, sizeof(*g->migrate));
			job_migrate_init(g->migrate);
			g->migrate->pos = job->migrate->pos;
		}
		old = job_path_push_key(path, "groups");
		job_path_push_index(path, i);
		job_path_push_key(path, "migrate");
		migrate_fill(g->migrate, job->migrate);
		if (own) /* a copy of the job's was checked there */
			errors += migrate_check(g->migrate, path, diags);
		job_path_pop(path, old);
	}
	return errors;
}
