/* checker: the agent's service registrations and health checks.
 *
 * Each allocation whose group or tasks have `service` blocks owns one
 * svc_set (alloc_runner.c makes it; a job without services has none and
 * costs nothing).  When a task starts running, its runner registers the
 * task's services (and, for the group's first main task, the group's) in
 * the set (svc_task.c builds them); when it stops running, they are
 * removed.  The allocation's status report carries the set's services,
 * each with its checks' latest status (svc_set_json), which is how they
 * reach the server's registry.
 *
 * Checks run on one thread of the process (started with the first check):
 * http through a libcurl multi handle, tcp as a non-blocking connect, script
 * as a child process (posix_spawn) read through a pipe; all waited on in one
 * poll with each run's deadline (its timeout).  No thread per check, and
 * no run holds the lock.
 *
 * The checker never touches a runner: it raises flags the task's runner
 * reads in its wait loop (every 100 ms): svc_set_take_changed (a check's
 * status changed: report) and svc_set_take_restart (check_restart's limit
 * was reached: restart the task).  Everything here is under one mutex,
 * taken after an allocation runner's lock, never before. */
#ifndef HERD_AGENT_CHECKER_H
#define HERD_AGENT_CHECKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/svc_result.h"

enum svc_check_type { SVC_CHECK_HTTP, SVC_CHECK_TCP, SVC_CHECK_SCRIPT };

/* One check to run, as svc_set_register takes it (everything copied). */
struct svc_check_spec {
	const char *name;
	enum svc_check_type type;
	const char *url;            /* http: http[s]://addr:port/path */
	const char *method;         /* http */
	const char *const *headers; /* http: "Name: value", NULL-terminated; may be NULL */
	const char *host;           /* tcp */
	int port;                   /* tcp */
	const char *const *argv;    /* script: command and args, NULL-terminated */
	const char *const *envp;    /* script: the task's environment */
	const char *dir;            /* script: the task's directory */
	int64_t interval_ns, timeout_ns;
	enum svc_status initial;
	/* check_restart; limit 0: never */
	int64_t restart_limit, restart_grace_ns;
	bool ignore_warnings;
	/* success_before_passing, failures_before_critical,
	 * failures_before_warning (svc_result.h svc_threshold_step); 0: at once */
	int64_t before_passing, before_critical, before_warning;
	/* on_update for deployment health, reported with the check's status
	 * (the server decides health); NULL or require_healthy: left out */
	const char *on_update;
	/* http: tls_skip_verify: the certificate is not checked; connect_to
	 * (NULL: none): libcurl's CURLOPT_CONNECT_TO, where url names
	 * tls_server_name instead of the address; body (NULL: none): sent with
	 * method */
	bool tls_skip_verify;
	const char *connect_to;
	const char *body;
};

/* One service to register: its entry as the server lists it (name, task,
 * address, port, tags, meta; taken) and its checks. */
struct svc_service_spec {
	json_t *entry;
	bool group;                 /* a service block of the group, not of the task */
	const struct svc_check_spec *checks;
	size_t nchecks;
};

struct svc_set;

/* A new empty set for allocation alloc_id. */
struct svc_set *svc_set_new(const char *alloc_id);
/* Removes every registration and frees the set (its running checks are
 * stopped by the checker thread).  Accepts NULL. */
void svc_set_free(struct svc_set *set);

/* Registers the services of task number task (its index in the
 * allocation), which started running at started_ns (unix ns, for
 * check_restart's grace), replacing any it had. */
void svc_set_register(struct svc_set *set, int task, int64_t started_ns,
		      const struct svc_service_spec *svcs, size_t n);
/* Removes the services of task number task (it stopped running). */
void svc_set_deregister(struct svc_set *set, int task);
/* Removes the group's services, whichever task carries them (the group's
 * shutdown_delay begins): those registered with group set. */
void svc_set_deregister_group(struct svc_set *set);

/* The services registered now, each entry with "checks": [{name, type,
 * status, output, time[, on_update]}]: a new array. */
json_t *svc_set_json(struct svc_set *set);
/* Whether anything the server should hear of changed since the last call
 * (a registration, a removal, a check's status). */
bool svc_set_take_changed(struct svc_set *set);
/* Whether check_restart asks task number task to restart; why (size
 * bytes) says which check.  Clears the request. */
bool svc_set_take_restart(struct svc_set *set, int task, char *why, size_t size);

#endif
