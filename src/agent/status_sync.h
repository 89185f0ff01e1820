/* status_sync: how a client's allocation statuses reach the server.
 *
 * One sender thread per client owns one keep-alive connection and sends the
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
 * A state comes with its allocation's row of the state store (state.h).
 * The rows are written before their states are queued for the sender: a
 * state is on disk before the server hears of it, so what an agent
 * restart loses from the queue is sent again by the recovered runner.
 * One caller of status_sync_put at a time writes, every row handed over
 * since the last write in one transaction; the callers that come
 * meanwhile only add theirs, which the writing caller takes too before it
 * returns.  Under load the changes of many allocations thus share a
 * commit, with no thread hop; a hung server never holds rows back.  The
 * removals of finished allocations' rows join such a commit too. */
#ifndef HERD_AGENT_STATUS_SYNC_H
#define HERD_AGENT_STATUS_SYNC_H

#include <stdbool.h>

#include <jansson.h>

#include "agent/state.h"

struct client;
struct status_sync;

/* Starts the thread for client c (its node id and server address must be
 * known).  Never fails: without threads the process aborts. */
struct status_sync *status_sync_start(struct client *c);

/* Hands over allocation id's row to write (NULL: none) and state to send
 * once it is written ({"client_status", "client_description",
 * "task_states"}; NULL: none; "id" is added), both taken, as the latest
 * of the allocation: they replace ones of its not yet written or sent.
 * Writes the pending rows unless another caller is writing them (see
 * above); never waits on the network. */
void status_sync_put(struct status_sync *s, const char *id, json_t *state,
		     struct state_row *row);

/* Hands over the removal of the rows of the n allocations ids (their
 * work over, their last status taken): written in the transaction of the
 * next caller of status_sync_put, or by the sender thread once it has
 * nothing to send, whichever comes first.  A removal lost to a kill -9
 * leaves a done row: the next start reports its last status again. */
void status_sync_forget(struct status_sync *s, const char *const *ids, size_t n);

/* Whether every state and row handed over for id is settled (nothing to
 * write, queued or in flight): the allocation has nothing left to report
 * or persist. */
bool status_sync_settled(struct status_sync *s, const char *id);

/* Writes what was handed over, sends what is queued once more (a single
 * try when the server does not answer), stops the threads and frees s.
 * Call once no one hands anything over any more, before the state store
 * closes.  Accepts NULL. */
void status_sync_stop(struct status_sync *s);

#endif
