/* The rules of system and sysbatch jobs (docs/jobspec.md, "System jobs"):
 * one instance of each group on every eligible node, so what counts
 * instances or moves them between nodes has no meaning there.  Called by
 * job_validate.c once the groups are checked and filled. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "spec/job-int.h"
#include "spec/job_system.h"

struct system_validator {
	struct diag_list *diags;
	struct job_path *path;
	const struct job_failed *failed;
	const char *type;
	int errors;
};

__attribute__((format(printf, 3, 4)))
static void system_fail(struct system_validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(v->diags, v->path, pos, fmt, ap);
	va_end(ap);
	v->errors++;
}

bool job_type_is_system(const char *type)
{
	return type && (!strcmp(type, "system") || !strcmp(type, "sysbatch"));
}

/* count, gang and canaries of group g (path: groups[i]). */
static void system_group(struct system_validator *v, const struct job_group *g)
{
	size_t old;

	if (g->count > 1) {
		old = job_path_push_key(v->path, "count");
		system_fail(v, g->pos, "a %s job runs one instance of each group on every eligible "
			    "node: count must be 0 or 1, got %" PRId64, v->type, g->count);
		job_path_pop(v->path, old);
	}
	if (g->gang) {
		old = job_path_push_key(v->path, "gang");
		system_fail(v, g->pos, "a gang needs a service or batch job (a %s job's instances "
			    "are one per node, not a set placed together)", v->type);
		job_path_pop(v->path, old);
	}
	if (g->update && g->update->canary > 0) {
		old = job_path_push_key(v->path, "update");
		system_fail(v, g->update->pos, "canary = %" PRId64 " needs a service job: a system "
			    "job rolls node by node (max_parallel, stagger)", g->update->canary);
		job_path_pop(v->path, old);
	}
}

int job_system_validate(struct job *job, struct job_path *path, const struct job_failed *failed,
			struct diag_list *diags)
{
	struct system_validator v = { diags, path, failed, job->type, 0 };
	const struct hcl_pos *resched = NULL;

	if (!job_type_is_system(job->type))
		return 0;
	for (size_t i = 0; i < job->ngroups; i++) {
		size_t old;
		if (job_failed_has(failed, &job->groups[i]))
			continue;
		old = job_path_push_key(path, "groups");
		job_path_push_index(path, i);
		system_group(&v, &job->groups[i]);
		job_path_pop(path, old);
		/* a block the file wrote has a position; the canonical JSON
		 * the server decodes carries the defaults, without one */
		if (!resched && job->groups[i].reschedule.pos.line > 0)
			resched = &job->groups[i].reschedule.pos;
	}
	if (job->reschedule && job->reschedule->pos.line > 0)
		resched = &job->reschedule->pos;
	/* Nomad accepts and ignores it for these types: a file written for
	 * Nomad still runs, and the warning says nothing moves */
	if (resched)
		diag_warn(diags, resched->line, resched->col,
			  "reschedule is ignored for %s jobs: an allocation belongs to its node; a "
			  "failed one is placed again on that node (system) or stays failed "
			  "(sysbatch), and one lost with its node is not moved elsewhere",
			  job->type);
	return v.errors;
}
