/* svc_result: what a health check's result means (pure functions, no I/O):
 * the status of an HTTP answer or a script's exit, the first line of an
 * output, and check_restart's count of results in a row.  The checker
 * (checker.c) applies them; tests/unit/agent checks them. */
#ifndef HERD_AGENT_SVC_RESULT_H
#define HERD_AGENT_SVC_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum svc_status { SVC_PASSING, SVC_WARNING, SVC_CRITICAL };

/* "passing", "warning", "critical". */
const char *svc_status_name(enum svc_status st);
/* The status named s; critical for anything else. */
enum svc_status svc_status_parse(const char *s);

/* An HTTP check's answer: 2xx passing, 429 (too many requests) warning,
 * anything else, 0 (no answer) included, critical (Consul's and Nomad's
 * rule). */
enum svc_status svc_http_status(long code);

/* A script check's wait status (waitpid's): exit 0 passing, exit 1
 * warning, any other exit or a signal critical. */
enum svc_status svc_script_status(int wait_status);

/* The first line of text (up to n bytes; without its newline, carriage
 * return or trailing blanks) copied into out (size bytes, always
 * terminated).  Returns out. */
char *svc_first_line(const char *text, size_t n, char *out, size_t size);

/* check_restart's counter: one more result of a check whose task started
 * at started_ns, at now_ns.  Results in the grace period are ignored;
 * passing (and warning with ignore_warnings) resets *fails.  Returns true
 * when this result makes limit non-passing results in a row (then *fails
 * is reset: the task restarts).  limit 0: never. */
bool svc_restart_due(int *fails, enum svc_status st, int64_t limit, int64_t grace_ns,
		     bool ignore_warnings, int64_t started_ns, int64_t now_ns);

/* A check's thresholds (success_before_passing, failures_before_critical,
 * failures_before_warning; Consul's rule, which Nomad passes on): the
 * status shown changes only after enough results in a row.  A passing or
 * warning result counts as a success, a critical one as a failure; each
 * resets the other count.  0 and 1 both mean "at once". */
struct svc_threshold {
	int64_t before_passing, before_critical, before_warning;
	int64_t successes, failures;   /* results in a row so far */
};

/* The status shown after one more result st of a check showing shown:
 *   a success: st once successes reach before_passing, else shown;
 *   a failure: critical once failures reach before_critical; else
 *     warning once they reach before_warning (> 0) and shown is not
 *     critical (a threshold never makes a check look better); else shown.
 * Updates t's counts. */
enum svc_status svc_threshold_step(struct svc_threshold *t, enum svc_status shown,
				   enum svc_status st);

#endif
