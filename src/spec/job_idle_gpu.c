/* Validation and defaults of a group's idle_gpu block (docs/jobspec.md,
 * "idle_gpu"); called by job_validate.c.  The schema checks each field's
 * range and choices; here: `after` is required, and the others get their
 * defaults, so that the server reads a complete block. */
#include <stdarg.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/job-int.h"

__attribute__((format(printf, 4, 5)))
static void idle_fail(struct diag_list *diags, struct job_path *path, struct hcl_pos pos,
		      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(diags, path, pos, fmt, ap);
	va_end(ap);
}

int job_idle_gpu_validate(struct job *job, struct job_path *path, const struct job_failed *failed,
			  struct diag_list *diags)
{
	int errors = 0;

	for (size_t i = 0; i < job->ngroups; i++) {
		struct job_idle_gpu *d = job->groups[i].idle_gpu;
		size_t old;
		if (!d || job_failed_has(failed, &job->groups[i]) || job_failed_has(failed, d))
			continue;
		if (d->utilization_below == JOB_UNSET)
			d->utilization_below = 5;
		if (!d->action)
			d->action = xstrdup("warn");
		/* a bad after is left unset by the decoder, which said why:
		 * this says it is needed as well */
		if (d->after != JOB_UNSET)
			continue;
		old = job_path_push_key(path, "groups");
		job_path_push_index(path, i);
		job_path_push_key(path, "idle_gpu");
		idle_fail(diags, path, d->pos, "%s",
			  "idle_gpu needs after, how long the GPUs must stay idle (after = \"1h\")");
		job_path_pop(path, old);
		errors++;
	}
	return errors;
}
