/* client: the agent's client part (docs/operations.md).
 *
 * client_start fingerprints the node (machine facts from fingerprint.h,
 * GPUs from gpu.h), keeps its node id in <state_dir>/node-id, registers
 * with a server and then runs three kinds of threads:
 *
 *   heartbeat   PUT /v1/node/:id/heartbeat every TTL/2 with device health;
 *               re-registers on 404 (a server that lost or restarted the node)
 *   watcher     long-polls GET /v1/node/:id/allocations?index=N and starts
 *               an alloc runner for every allocation it should run, tells
 *               runners to stop what the server wants stopped
 *   runners     one per allocation (alloc_runner.c): alloc dir, tasks in
 *               lifecycle order through the driver, restarts, status reports
 *
 * Allocations and task handles are persisted under <state_dir>/allocs, so a
 * restarted client finds its running tasks again (driver recover) instead
 * of killing them.  When no server answers, the client keeps its tasks
 * running and retries with backoff (logged once per outage). */
#ifndef HERD_AGENT_CLIENT_H
#define HERD_AGENT_CLIENT_H

#include <stdbool.h>

#include "agent/config.h"
#include "common/err.h"

struct client;

/* Starts the client for cfg (finished by agent_config_finish; borrowed and
 * must outlive the client).  local_server, when not NULL, is the address
 * ("127.0.0.1:4646") of a server in the same process, used when
 * cfg->client.servers is empty; local_transport (may be NULL) reaches that
 * server without a socket (server_local_transport) and is used whenever
 * the client's server is local_server; it must outlive the client.
 * shim_argv is the command that runs the task shim (driver.h), borrowed.
 * Returns 0 with *out, or -errno with err (state dir not writable, no
 * server address); registration failures are not fatal (retried in the
 * background). */
struct httpc_local;
int client_start(const struct agent_config *cfg, const char *local_server,
		 const struct httpc_local *local_transport, const char *const *shim_argv,
		 struct client **out, struct herd_err *err);

/* The node id (valid while the client lives). */
const char *client_node_id(const struct client *c);

/* What a user may ask of a running allocation's tasks on this node (herd
 * alloc restart | signal, through the client API, client_http.h), in
 * place: nothing is rescheduled. */
struct client_task_op {
	bool restart;          /* restart the task(s); else send signal */
	int signal;            /* a valid signal number (driver_signal_parse) */
	const char *task;      /* the task; NULL: every task that runs */
};

/* Carries out op on allocation alloc_id's tasks and waits for them to
 * take it (a signal sent, a restart begun: the task's runner stops and
 * starts it again after the answer; about 100 ms).  Returns 0 with *tasks
 * (a new array of the names of the tasks reached), or -errno with err:
 * -ENOENT (this client does not run the allocation, or it has no such
 * task), -ESRCH (the task, or every task, is not running; the allocation
 * is stopping or has ended), -EBUSY (another request to the task is being
 * carried out), -ENOTSUP (the driver cannot deliver that signal),
 * -ETIMEDOUT (a runner did not take it within 10 s), another -errno from
 * the driver.  Every task is checked before any is asked; a failure of
 * one of several tasks afterwards leaves the others done.  Thread-safe;
 * not to be called once client_stop has begun. */
struct json_t;
int client_alloc_task_op(struct client *c, const char *alloc_id, const struct client_task_op *op,
			 struct json_t **tasks, struct herd_err *err);

/* The GPU memory task of allocation alloc_id uses, as the client's GPU
 * watch last sampled it: a new array [{"device", "memory_mib",
 * "share_mib" (its memory ask of a shared device; absent when none)}], or
 * NULL when it holds no GPU here or nothing was sampled yet.  Thread-safe. */
struct json_t *client_task_gpu_memory(struct client *c, const char *alloc_id, const char *task);

/* Stops the client's threads.  stop_tasks: stop every running task first
 * (-dev shutdown); otherwise tasks keep running for the next client to
 * recover.  Frees c; accepts NULL. */
void client_stop(struct client *c, bool stop_tasks);

#endif
