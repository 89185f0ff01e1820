/* change_script: a template's change_script (docs/jobspec.md, "template:
 * change_script"), run once inside a running task when the template's
 * output changed (template_watch.c's tmpl_task_poll, on the task's runner
 * thread).
 *
 * It starts the command as `herd alloc exec` starts one
 * (drivers/task_exec.h): the task's environment, directory and user, for
 * exec inside its namespaces and cgroup, for docker an exec instance in
 * its container; stdin is empty, stdout and stderr go together into a
 * small tail kept for the task event.  It waits up to the timeout, then
 * kills the command's process group (docker: the exec's process); it also
 * kills it when the task ends or cancel says so (the task is being
 * stopped).  Nothing here logs: the caller turns the result into an
 * event. */
#ifndef HERD_AGENT_CHANGE_SCRIPT_H
#define HERD_AGENT_CHANGE_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>

#include "drivers/driver.h"

/* The last bytes of output kept for the event. */
#define CHANGE_SCRIPT_TAIL 256

struct change_script_result {
	bool started;         /* false: *why says why it did not start */
	bool timed_out;       /* killed at the timeout */
	bool cancelled;       /* killed because the task ended or is stopping */
	int exit_code;        /* when it exited (not killed); -1 otherwise */
	int signal;           /* the signal that ended it, 0 when none */
	char why[256];
	char tail[CHANGE_SCRIPT_TAIL + 1]; /* its output's end, NUL-terminated */
};

/* Whether the result is a failure: not started, timed out, cancelled, a
 * signal or an exit code other than 0. */
bool change_script_failed(const struct change_script_result *r);

/* Runs argv (NULL-terminated; a name without '/' is found in the task's
 * PATH) inside the running task st with env's driver settings, in
 * task_dir, for at most timeout_ns; cancel (may be NULL) is asked about
 * every 100 ms.  Blocks until the command ended or was killed and reaped.
 * Fills *out in every case. */
void change_script_run(const struct driver_env *env, const struct driver_state *st,
		       const char *task_dir, const char *const *argv, int64_t timeout_ns,
		       bool (*cancel)(void *arg), void *arg, struct change_script_result *out);

#endif
