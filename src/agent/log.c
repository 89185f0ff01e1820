/* log: see log.h. */
#include "agent/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"

/* atomic: a reload (SIGHUP) changes it while other threads log */
static atomic_int min_level = AGENT_LOG_INFO;

void agent_log_set_level(enum agent_log_level level)
{
	atomic_store_explicit(&min_level, (int)level, memory_order_relaxed);
}

enum agent_log_level agent_log_get_level(void)
{
	return (enum agent_log_level)atomic_load_explicit(&min_level, memory_order_relaxed);
}

void agent_log(enum agent_log_level level, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	struct timespec ts;
	struct tm tm;
	char when[32];
	va_list ap;

	if ((int)level < atomic_load_explicit(&min_level, memory_order_relaxed))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	strbuf_addf(&sb, "%s.%03ldZ [%s] ", when, ts.tv_nsec / 1000000,
		    agent_log_level_name(level));
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strbuf_addch(&sb, '\n');
	/* One write(2) per line so that threads do not interleave. */
	if (write(STDERR_FILENO, sb.buf, sb.len) < 0) {
		/* nowhere left to say it */
	}
	strbuf_release(&sb);
}
