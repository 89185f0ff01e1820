/* Defaults of a group's ephemeral_disk block and the one rule that ties
 * prevent_reschedule_on_lost to the disconnect block (docs/jobspec.md,
 * "ephemeral_disk", "prevent_reschedule_on_lost"); called by
 * job_validate.c.  The schema checked each field's range already. */
#include "spec/job-int.h"

#define EPHEMERAL_DISK_DEFAULT_MB 300 /* Nomad's default size */

void job_ephemeral_disk_fill(struct job *job, const struct job_failed *failed)
{
	for (size_t i = 0; i < job->ngroups; i++) {
		struct job_group *g = &job->groups[i];
		struct job_ephemeral_disk *d = g->ephemeral_disk;
		if (job_failed_has(failed, g))
			continue;
		/* Nomad: a group that prevents rescheduling on loss has its
		 * unknown allocations shown as unknown, not replaced */
		if (g->prevent_reschedule_on_lost && g->disconnect &&
		    !job_failed_has(failed, g->disconnect))
			g->disconnect->replace = false;
		if (!d || job_failed_has(failed, d))
			continue;
		if (d->size == JOB_UNSET)
			d->size = EPHEMERAL_DISK_DEFAULT_MB;
		if (d->migrate) /* migrate implies sticky */
			d->sticky = true;
	}
}
