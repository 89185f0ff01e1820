/* svc_result: see svc_result.h. */
#include <string.h>
#include <sys/wait.h>

#include "agent/svc_result.h"

const char *svc_status_name(enum svc_status st)
{
	return st == SVC_PASSING ? "passing" : st == SVC_WARNING ? "warning" : "critical";
}

enum svc_status svc_status_parse(const char *s)
{
	if (s && !strcmp(s, "passing"))
		return SVC_PASSING;
	if (s && !strcmp(s, "warning"))
		return SVC_WARNING;
	return SVC_CRITICAL;
}

enum svc_status svc_http_status(long code)
{
	if (code >= 200 && code <= 299)
		return SVC_PASSING;
	return code == 429 ? SVC_WARNING : SVC_CRITICAL;
}

enum svc_status svc_script_status(int wait_status)
{
	if (!WIFEXITED(wait_status))
		return SVC_CRITICAL;
	switch (WEXITSTATUS(wait_status)) {
	case 0:
		return SVC_PASSING;
	case 1:
		return SVC_WARNING;
	default:
		return SVC_CRITICAL;
	}
}

char *svc_first_line(const char *text, size_t n, char *out, size_t size)
{
	size_t len = 0;

	if (!size)
		return out;
	while (len < n && text[len] && text[len] != '\n')
		len++;
	while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (len >= size)
		len = size - 1;
	memcpy(out, text, len);
	out[len] = '\0';
	return out;
}

bool svc_restart_due(int *fails, enum svc_status st, int64_t limit, int64_t grace_ns,
		     bool ignore_warnings, int64_t started_ns, int64_t now_ns)
{
	if (limit <= 0 || now_ns - started_ns < grace_ns)
		return false;
	if (st == SVC_PASSING || (st == SVC_WARNING && ignore_warnings)) {
		*fails = 0;
		return false;
	}
	if (++*fails < limit)
		return false;
	*fails = 0;
	return true;
}

enum svc_status svc_threshold_step(struct svc_threshold *t, enum svc_status shown,
				   enum svc_status st)
{
	if (st != SVC_CRITICAL) {
		t->failures = 0;
		if (t->successes < INT64_MAX)
			t->successes++;
		return t->successes >= t->before_passing ? st : shown;
	}
	t->successes = 0;
	if (t->failures < INT64_MAX)
		t->failures++;
	if (t->failures >= t->before_critical)
		return SVC_CRITICAL;
	if (t->before_warning > 0 && t->failures >= t->before_warning && shown != SVC_CRITICAL)
		return SVC_WARNING;
	return shown;
}
