/* Validation and defaults of a group's disconnect block and of Nomad's
 * older group fields for the same thing (docs/jobspec.md, "disconnect");
 * called by job_validate.c.  The older fields are moved into the block,
 * so that the server and the agent read one place, and the canonical JSON
 * holds only the block (the older fields are left out once 0). */
#include <stdarg.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/job-int.h"

struct disconnect_validator {
	struct diag_list *diags;
	struct job_path *path;
	int errors;
};

__attribute__((format(printf, 3, 4)))
static void disconnect_fail(struct disconnect_validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(v->diags, v->path, pos, fmt, ap);
	va_end(ap);
	v->errors++;
}

/* The older fields of g: never both, and never beside a disconnect block
 * (Nomad refuses either pair). */
static void check_legacy(struct disconnect_validator *v, const struct job_group *g)
{
	bool mcd = g->max_client_disconnect != JOB_UNSET;
	bool sacd = g->stop_after_client_disconnect != JOB_UNSET;

	if (mcd && sacd)
		disconnect_fail(v, g->pos, "using both max_client_disconnect and "
				"stop_after_client_disconnect is not allowed");
	if (!g->disconnect)
		return;
	if (mcd)
		disconnect_fail(v, g->pos, "using both max_client_disconnect and a disconnect block "
				"is not allowed: max_client_disconnect is the older spelling of "
				"disconnect { lost_after }");
	if (sacd)
		disconnect_fail(v, g->pos, "using both stop_after_client_disconnect and a disconnect "
				"block is not allowed: stop_after_client_disconnect is the older "
				"spelling of disconnect { stop_on_client_after }");
}

/* Moves the older fields of g into its block (made when there is none). */
static void move_legacy(struct job_group *g)
{
	if (!g->disconnect && (g->max_client_disconnect != JOB_UNSET ||
			       g->stop_after_client_disconnect != JOB_UNSET)) {
		g->disconnect = xcalloc(1, sizeof(*g->disconnect));
		job_disconnect_init(g->disconnect);
		g->disconnect->pos = g->pos;
		g->disconnect->lost_after = g->max_client_disconnect;
		g->disconnect->stop_on_client_after = g->stop_after_client_disconnect;
	}
	g->max_client_disconnect = g->stop_after_client_disconnect = 0;
}

static void check_block(struct disconnect_validator *v, struct job_disconnect *d)
{
	if (d->lost_after == JOB_UNSET)
		d->lost_after = 0;
	if (d->stop_on_client_after == JOB_UNSET)
		d->stop_on_client_after = 0;
	if (!d->reconcile)
		d->reconcile = xstrdup("best_score");
	/* the server keeps a silent node's allocations for lost_after while
	 * the node stops them itself after stop_on_client_after: Nomad
	 * refuses the pair */
	if (d->lost_after > 0 && d->stop_on_client_after > 0)
		disconnect_fail(v, d->pos, "using both lost_after and stop_on_client_after is not "
				"allowed");
}

int job_disconnect_validate(struct job *job, struct job_path *path,
			    const struct job_failed *failed, struct diag_list *diags)
{
	struct disconnect_validator v = { diags, path, 0 };

	for (size_t i = 0; i < job->ngroups; i++) {
		struct job_group *g = &job->groups[i];
		size_t old;
		int before;
		if (job_failed_has(failed, g) || (g->disconnect && job_failed_has(failed, g->disconnect)))
			continue;
		old = job_path_push_key(path, "groups");
		job_path_push_index(path, i);
		before = v.errors;
		check_legacy(&v, g);
		move_legacy(g);
		if (g->disconnect && v.errors == before) { /* one message per conflict */
			job_path_push_key(path, "disconnect");
			check_block(&v, g->disconnect);
		}
		job_path_pop(path, old);
	}
	return v.errors;
}
