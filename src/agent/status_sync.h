/* status_sync: how a client's allocation statuses reach the server.
 *
 * One thread per client owns one keep-alive connection and sends the
 * latest state of every allocation that changed in one request,
 * PUT /v1/node/:id/allocations/status.  While a request is out, new
 * changes wait and go together in the next one, each allocation with its
 * latest state only: under load many changes share a request (and a
 * store commit on the server); when idle a change goes at once.
 *
 * A state is settled once the server took it or refused it for good (the
 * allocation is unknown, the state malformed, the transition refused).  No
 * answer, a 5xx or a conflict keep it: the whole set is sent again after a
 * backoff (100 ms doubling to 2 s), for as long as the client runs, so the
 * last status of an allocation arrives once the server is back.  A server
 * without the batch route (404 on the route itself) gets one
 * PUT /v1/allocation/:id/status per allocation instead.
 *
 * The callers persist a state before they hand it over (state.c), so what
 * an agent restart loses from the queue is sent again by the recovered
 * runner. */
#ifndef HERD_AGENT_STATUS_SYNC_H
#define HERD_AGENT_STATUS_SYNC_H

#include <stdbool.h>

#include <jansson.h>

struct client;
struct status_sync;

/* Starts the thread for client c (its node id and server address must be
 * known).  Never fails: without threads the process aborts. */
struct status_sync *status_sync_start(struct client *c);

/* Queues state ({"client_status", "client_description", "task_states"};
 * the queue takes the reference and may add "id") as the latest of
 * allocation id, replacing a queued one not yet sent, and wakes the
 * thread.  Never blocks on the network. */
void status_sync_put(struct status_sync *s, const char *id, json_t *state);

/* Whether every state queued for id is settled (nothing queued or in
 * flight): the allocation has nothing left to report. */
bool status_sync_settled(struct status_sync *s, const char *id);

/* Sends what is queued once more (a single try when the server does not
 * answer), stops the thread and frees s.  Call once no one queues any
 * more.  Accepts NULL. */
void status_sync_stop(struct status_sync *s);

#endif
