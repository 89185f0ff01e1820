/* job_system: what system and sysbatch jobs are (docs/jobspec.md, "System
 * jobs").  A system job runs one instance of each group on every node that
 * is ready, eligible and matches the job; a sysbatch job runs one to
 * completion on each such node present when its version was submitted. */
#ifndef HERD_SPEC_JOB_SYSTEM_H
#define HERD_SPEC_JOB_SYSTEM_H

#include <stdbool.h>

/* Whether type (a job's "type"; NULL: none) is "system" or "sysbatch". */
bool job_type_is_system(const char *type);

#endif
