/* Validation and defaults of update blocks (job and group level); called
 * by job_validate.c.  The job's block is every group's default, field by
 * field (Nomad's merge, as for reschedule); a group with no block at
 * either level gets none: its changed allocations are replaced at once
 * (docs/jobspec.md, "Rolling updates"). */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "spec/job-int.h"

struct update_validator {
	struct diag_list *diags;
	struct job_path *path;
	const struct job_failed *failed;
	int errors;
};

__attribute__((format(printf, 3, 4)))
static void update_fail(struct update_validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(v->diags, v->path, pos, fmt, ap);
	va_end(ap);
	v->errors++;
}

static void def_int(int64_t *f, int64_t value)
{
	if (*f == JOB_UNSET)
		*f = value;
}

/* u's unset fields from over (the job's block, filled), or Nomad's
 * defaults when over is NULL. */
static void update_fill(struct job_update *u, const struct job_update *over)
{
	const int64_t sec = NS_PER_SEC;

	def_int(&u->max_parallel, over ? over->max_parallel : 1);
	if (!u->health_check)
		u->health_check = xstrdup(over ? over->health_check : "checks");
	def_int(&u->min_healthy_time, over ? over->min_healthy_time : 10 * sec);
	def_int(&u->healthy_deadline, over ? over->healthy_deadline : 300 * sec);
	def_int(&u->progress_deadline, over ? over->progress_deadline : 600 * sec);
	def_int(&u->stagger, over ? over->stagger : 30 * sec);
	def_int(&u->canary, over ? over->canary : 0);
	if (!u->auto_revert_set) {
		u->auto_revert = over ? over->auto_revert : false;
		u->auto_revert_set = 1;
	}
	if (!u->auto_promote_set) {
		u->auto_promote = over ? over->auto_promote : false;
		u->auto_promote_set = 1;
	}
}

/* The rules between fields of a filled block. */
static void update_check(struct update_validator *v, const struct job_update *u)
{
	if (!strcmp(u->health_check, "manual"))
		update_fail(v, u->pos, "health_check \"manual\" is not supported: use \"checks\" or "
			    "\"task_states\"");
	if (u->canary > 0 && u->max_parallel == 0)
		update_fail(v, u->pos, "canary = %" PRId64 " needs max_parallel > 0 (0 replaces "
			    "every allocation at once, with no deployment)", u->canary);
	if (u->min_healthy_time >= u->healthy_deadline)
		update_fail(v, u->pos, "min_healthy_time (%gs) must be less than healthy_deadline (%gs)",
			    (double)u->min_healthy_time / 1e9, (double)u->healthy_deadline / 1e9);
	if (u->progress_deadline && u->progress_deadline < u->healthy_deadline)
		update_fail(v, u->pos, "progress_deadline (%gs) must be 0 (none) or at least "
			    "healthy_deadline (%gs)", (double)u->progress_deadline / 1e9,
			    (double)u->healthy_deadline / 1e9);
}

/* Canaries are a service's: a batch job's update is ignored, but one that
 * asks canaries expects a deployment that would never come. */
static void batch_canary(struct update_validator *v, const struct job_update *u)
{
	if (u && !job_failed_has(v->failed, u) && u->canary > 0)
		update_fail(v, u->pos, "canary = %" PRId64 " needs a service job: batch jobs have "
			    "no deployments", u->canary);
}

/* auto_promote is accepted without canaries (a file written for Nomad
 * still runs) but does nothing then: say so. */
static void promote_warn(const struct job *job, struct diag_list *diags)
{
	const struct job_update *set = NULL;

	if (job->update && job->update->auto_promote)
		set = job->update;
	for (size_t i = 0; i < job->ngroups; i++) {
		const struct job_update *u = job->groups[i].update;
		if (u && u->canary > 0)
			return;
		if (!set && u && u->auto_promote)
			set = u;
	}
	if (set)
		diag_warn(diags, set->pos.line, set->pos.col,
			  "auto_promote has no effect: no group has canary > 0");
}

int job_update_validate(struct job *job, bool batch, struct job_path *path,
			const struct job_failed *failed, struct diag_list *diags)
{
	struct update_validator v = { diags, path, failed, 0 };
	bool any = job->update != NULL;
	size_t old;

	for (size_t i = 0; i < job->ngroups; i++)
		any = any || job->groups[i].update;
	if (!any)
		return 0;
	if (batch) {
		/* Nomad ignores it for batch jobs: a file written for Nomad
		 * still runs; the warning says nothing rolls */
		const struct job_update *u = job->update;
		for (size_t i = 0; !u && i < job->ngroups; i++)
			u = job->groups[i].update;
		old = job_path_push_key(path, "update");
		batch_canary(&v, job->update);
		job_path_pop(path, old);
		for (size_t i = 0; i < job->ngroups; i++) {
			old = job_path_push_key(path, "groups");
			job_path_push_index(path, i);
			job_path_push_key(path, "update");
			batch_canary(&v, job->groups[i].update);
			job_path_pop(path, old);
		}
		if (v.errors)
			return v.errors;
		diag_warn(diags, u->pos.line, u->pos.col,
			  "update is ignored for batch jobs: only services roll out new versions");
		for (size_t i = 0; i < job->ngroups; i++) {
			if (job->groups[i].update)
				job_update_free(job->groups[i].update);
			job->groups[i].update = NULL;
		}
		job_update_free(job->update);
		job->update = NULL;
		return 0;
	}
	if (job->update && !job_failed_has(failed, job->update)) {
		old = job_path_push_key(path, "update");
		update_fill(job->update, NULL);
		update_check(&v, job->update);
		job_path_pop(path, old);
	}
	for (size_t i = 0; i < job->ngroups; i++) {
		struct job_group *g = &job->groups[i];
		if (job_failed_has(failed, g) || (!g->update && !job->update) ||
		    (g->update && job_failed_has(failed, g->update)) ||
		    (job->update && job_failed_has(failed, job->update)))
			continue;
		bool own = g->update != NULL;
		if (!own) {
			g->update = xcalloc(1, sizeof(*g->update));
			job_update_init(g->update);
			g->update->pos = job->update->pos;
		}
		old = job_path_push_key(path, "groups");
		job_path_push_index(path, i);
		job_path_push_key(path, "update");
		update_fill(g->update, job->update);
		if (own) /* a copy of the job's was checked there */
			update_check(&v, g->update);
		job_path_pop(path, old);
	}
	if (!v.errors)
		promote_warn(job, diags);
	return v.errors;
}
