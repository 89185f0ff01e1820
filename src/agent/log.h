/* log: the agent's log lines on stderr, one line per event, lower case:
 *
 *     2026-11-21T08:30:00.123Z [info] client: node "gpu-1" registered (id 3f2a...)
 *
 * The agent (not library code) logs.  Thread-safe (one write per line). */
#ifndef HERD_AGENT_LOG_H
#define HERD_AGENT_LOG_H

#include "agent/config.h"

/* Lines below level are dropped.  Default info. */
void agent_log_set_level(enum agent_log_level level);
enum agent_log_level agent_log_get_level(void);

void agent_log(enum agent_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_trace(...) agent_log(AGENT_LOG_TRACE, __VA_ARGS__)
#define log_debug(...) agent_log(AGENT_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) agent_log(AGENT_LOG_INFO, __VA_ARGS__)
#define log_warn(...) agent_log(AGENT_LOG_WARN, __VA_ARGS__)
#define log_error(...) agent_log(AGENT_LOG_ERROR, __VA_ARGS__)

#endif
