/* task_control: a user's request to the running tasks of one allocation on
 * this node (client.h, client_alloc_task_op): posted to each task's runner
 * (tr->req), which carries it out on its own thread, the only one that
 * uses the task's driver handle (task_runner.c), and answered from there.
 * The caller waits for the answers with the runner held, so that the
 * client does not free it meanwhile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client-int.h"
#include "common/units.h"
#include "common/xalloc.h"

/* How long the caller waits for the runners' answers: they answer within
 * a wait slice (100 ms) or two, unless a runner is stuck in its driver. */
#define ANSWER_WAIT_NS (10 * NS_PER_SEC)

/* Whether task tr can take a request now: it runs (its runner waits on it
 * with a handle).  Under ar->lock. */
static bool task_takes_requests(const struct task_runner *tr)
{
	return !strcmp(tr->state, "running") && tr->handle;
}

/* Marks in pick the tasks op reaches; 0, or -errno with err.  Under
 * ar->lock. */
static int pick_tasks(struct alloc_runner *ar, const struct client_task_op *op, bool *pick,
		      struct herd_err *err)
{
	size_t n = 0;

	if (!ar->tasks || ar->done || ar->stop_requested)
		return herd_errf(err, -ESRCH, "allocation %s is not running on this node (%s)", ar->id,
				 !ar->tasks ? "its tasks are not set up yet"
				 : ar->done ? "it has ended" : "it is being stopped");
	for (size_t i = 0; i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		if (op->task && strcmp(op->task, tr->task->name))
			continue;
		if (op->task && !task_takes_requests(tr))
			return herd_errf(err, -ESRCH, "task %s is not running (%s)", tr->task->name,
					 tr->state);
		if (!task_takes_requests(tr))
			continue;
		if (tr->req.kind != TASK_REQ_NONE)
			return herd_errf(err, -EBUSY, "task %s: another request is being carried out; "
					 "try again", tr->task->name);
		pick[i] = true;
		n++;
	}
	if (op->task && !n)
		return herd_errf(err, -ENOENT, "allocation %s has no task \"%s\"", ar->id, op->task);
	if (!n)
		return herd_errf(err, -ESRCH, "no task of allocation %s is running", ar->id);
	return 0;
}

/* Waits until every picked task answered or the deadline passed; then
 * takes the answers: 0 with the task names in out, or the first failure
 * (-ETIMEDOUT for a runner that did not answer).  Every picked request is
 * cleared (one not taken yet is withdrawn).  Under ar->lock. */
static int collect_answers(struct alloc_runner *ar, const bool *pick, json_t *out,
			   struct herd_err *err)
{
	struct timespec until = deadline_after(CLOCK_REALTIME, ANSWER_WAIT_NS);
	bool timed_out = false;
	int rc = 0;

	for (;;) {
		bool all = true;
		for (size_t i = 0; i < ar->ntasks; i++)
			if (pick[i] && !ar->tasks[i].req.done)
				all = false;
		if (all || timed_out)
			break;
		timed_out = pthread_cond_timedwait(&ar->cond, &ar->lock, &until) == ETIMEDOUT;
	}
	for (size_t i = 0; i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		if (!pick[i])
			continue;
		if (!tr->req.done && !rc)
			rc = herd_errf(err, -ETIMEDOUT, "task %s: its runner did not take the request "
				       "(busy in its driver?)", tr->task->name);
		else if (tr->req.done && tr->req.rc < 0 && !rc)
			rc = herd_errf(err, tr->req.rc, "task %s: %s", tr->task->name, tr->req.msg);
		else if (tr->req.done && tr->req.rc == 0)
			json_array_append_new(out, json_string(tr->task->name));
		memset(&tr->req, 0, sizeof(tr->req));
	}
	return rc;
}

int client_alloc_task_op(struct client *c, const char *alloc_id, const struct client_task_op *op,
			 json_t **tasks, struct herd_err *err)
{
	struct alloc_runner *ar = client_runner_hold(c, alloc_id);
	json_t *out;
	bool *pick;
	int rc;

	if (!ar)
		return herd_errf(err, -ENOENT, "allocation %s does not run on this node", alloc_id);
	out = json_array();
	pthread_mutex_lock(&ar->lock);
	pick = xcalloc(ar->ntasks + 1, sizeof(*pick));
	rc = pick_tasks(ar, op, pick, err);
	if (rc == 0) {
		for (size_t i = 0; i < ar->ntasks; i++) {
			if (!pick[i])
				continue;
			ar->tasks[i].req.kind = op->restart ? TASK_REQ_RESTART : TASK_REQ_SIGNAL;
			ar->tasks[i].req.sig = op->signal;
		}
		rc = collect_answers(ar, pick, out, err);
	}
	pthread_mutex_unlock(&ar->lock);
	free(pick);
	client_runner_release(ar);
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*tasks = out;
	return 0;
}
