/* time_limit: a batch group's time_limit (docs/jobspec.md), on the agent.
 *
 * The limit counts from the first start of the allocation's first main
 * task (a task restarted in place keeps counting from there) and is
 * checked by the allocation's own task runners, in the wait slices they
 * run anyway (task_runner.c's should_stop, every 100 ms while a task runs
 * or waits for its restart): no timer and no thread per allocation, and a
 * group without a limit never gets here.  Once reached, every task is
 * stopped as a stop does (kill_signal, kill_timeout; poststop hooks still
 * run) and the allocation ends failed, with time_limit.reached in its
 * status report: the server keeps that and never reschedules it
 * (reconcile.c), and the restart policy is not asked (a stopped task is
 * not restarted).
 *
 * The first start and the verdict are in each task's persisted state
 * (state.c), so a restarted agent still stops a recovered task past its
 * limit (at its first wait slice) and still reports a time-limit end. */
#include <string.h>

#include "agent/client-int.h"
#include "common/units.h"

static bool is_main(const struct task_runner *tr)
{
	return tr->phase == PHASE_MAIN && !tr->sidecar;
}

/* Counts from the earliest first start of a main task. */
static void note_since(struct task_runner *tr)
{
	struct alloc_runner *ar = tr->ar;

	if (is_main(tr) && tr->first_started_at &&
	    (!ar->limit_since || tr->first_started_at < ar->limit_since))
		ar->limit_since = tr->first_started_at;
}

void time_limit_started(struct task_runner *tr, int64_t now)
{
	if (!tr->first_started_at)
		tr->first_started_at = now;
	note_since(tr);
}

bool time_limit_check(struct alloc_runner *ar, int64_t now)
{
	/* a stop asked for first ends the allocation as a stop */
	if (!ar->time_limited && !ar->stop_requested && ar->limit_since &&
	    now - ar->limit_since >= ar->group->time_limit) {
		ar->time_limited = true;
		pthread_cond_broadcast(&ar->cond);
	}
	return ar->time_limited;
}

void time_limit_recover(struct task_runner *tr, const json_t *saved)
{
	tr->first_started_at = json_integer_value(json_object_get(saved, "first_started_at"));
	note_since(tr);
	if (json_is_true(json_object_get(saved, "time_limit_reached")))
		tr->ar->time_limited = true;
}

void time_limit_save(const struct task_runner *tr, json_t *t)
{
	json_object_set_new(t, "first_started_at", json_integer(tr->first_started_at));
	if (tr->ar->time_limited)
		json_object_set_new(t, "time_limit_reached", json_true());
}

json_t *time_limit_json(const struct alloc_runner *ar)
{
	return json_pack("{s:I,s:I,s:b}", "limit", (json_int_t)ar->group->time_limit, "started_at",
			 (json_int_t)ar->limit_since, "reached", ar->time_limited);
}

const char *time_limit_text(const struct alloc_runner *ar, char *buf, size_t size)
{
	char d[32];

	snprintf(buf, size, "time limit %s reached", format_duration(ar->group->time_limit, d, sizeof(d)));
	return buf;
}
