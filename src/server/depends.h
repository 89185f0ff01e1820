/* depends: job dependencies (a job's depends_on blocks, docs/jobspec.md,
 * "Dependencies"): the gate that keeps a job from being placed until the
 * jobs it names have ended as it asks, and the in-memory index of
 * dependents that evaluates a job again when one of its dependencies ends.
 *
 * The index maps "<ns>\x1f<job>" to the jobs that name it.  It is built
 * from the store at server start (depends_start), grows at each
 * registration (depends_note_job) and loses a job's edges when the job is
 * purged (depends_forget_job: by its user or the garbage collector).  A
 * job registered again without a dependency it named keeps that edge
 * until it is purged or the server restarts: a stale edge costs a
 * needless evaluation, never a missed one, because an evaluation reads
 * the job's current depends_on (and two registrations of one job may note
 * their edges in either order, so a registration only adds).  A job with no dependents
 * costs one atomic read when its allocations end (depends_job_changed).
 *
 * Only a job that has no allocation yet is gated: once placed, its
 * replacements and reschedules are not held back by a dependency that is
 * running again. */
#ifndef HERD_SERVER_DEPENDS_H
#define HERD_SERVER_DEPENDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "server/http.h"
#include "store/store.h"

struct server;
struct depends;

/* Allocates srv->deps and fills it from every stored job.  0 or the
 * store's error with err. */
int depends_start(struct server *srv, struct herd_err *err);
/* Frees srv->deps; accepts a server without one. */
void depends_stop(struct server *srv);

/* Records that job (ns, id) names the jobs of deps (a stored job's
 * depends_on array; NULL or empty: nothing to record). */
void depends_note_job(struct server *srv, const char *ns, const char *id, const json_t *deps);

/* Job (ns, id) was purged: the edges it added go from the index, unless
 * a job (ns, id) is stored again by now. */
void depends_forget_job(struct server *srv, const char *ns, const char *id);
/* How many edges (a job naming a dependency) the index holds. */
size_t depends_edges(struct server *srv);

/* Whether a job that names job (ns, id) has an evaluation parked,
 * waiting (the garbage collector keeps such a job: gone, it would be
 * purged, and a dependency on it could never complete). */
bool depends_awaited(struct server *srv, const char *ns, const char *id);

/* Job (ns, id) may have ended (an allocation of it ended, it was stopped
 * or purged): the evaluations of the jobs that name it run again. */
void depends_job_changed(struct server *srv, const char *ns, const char *id);

/* The dependency generation: read before an evaluation reads its view
 * and handed to depends_park, so that an end that happened meanwhile is
 * not missed. */
uint64_t depends_gen(struct server *srv);
/* Keeps the blocked evaluation eval_id of job (ns, id), which waits for its
 * dependencies: queued again whenever one of them changes (at once when
 * one changed since gen_seen), kept until it ends without waiting
 * (depends_unpark).  An evaluation it kept before for the job, superseded
 * by this one, is marked canceled in the store. */
void depends_park(struct server *srv, const char *ns, const char *id, const char *eval_id,
		  uint64_t gen_seen);

/* An evaluation eval_id of job (ns, id) ended without waiting for
 * dependencies (placed, stopped, registered again without them): an
 * evaluation parked for the job before is marked canceled and forgotten,
 * so that it holds nothing back (depends_awaited). */
void depends_unpark(struct server *srv, const char *ns, const char *id, const char *eval_id);

/* For a registration of canon (the job to store) in namespace ns: that
 * every job it names exists there and none of them leads back to it
 * through the stored jobs' depends_on.  Returns 0 and in *required (NULL
 * when the job names none; the caller releases it) {"<job>":
 * modify_index} of what it names, for depends_require; 1 after answering
 * resp 400 dependency_not_found or dependency_cycle; or the store's error
 * with err. */
int depends_check_register(struct server *srv, const char *ns, const json_t *canon,
			   json_t **required, struct http_response *resp, struct herd_err *err);
/* Puts on b a condition per job of required (depends_check_register's)
 * that it is as read: a dependency purged before the commit fails it. */
void depends_require(struct store_batch *b, const char *ns, const json_t *required);

/* What the gate says of a stored job's dependencies. */
enum depends_verdict {
	DEPENDS_HOLD,  /* every dependency holds (or there is none): place it */
	DEPENDS_WAIT,  /* some does not hold yet */
	DEPENDS_NEVER, /* some can never hold: the job is stopped */
};

/* Checks job's dependencies against their jobs' current state.  On
 * DEPENDS_WAIT, *why is "waiting for job a (running) to be complete" (all
 * of those that wait, "; "-joined) and *waiting an array of their ids; on
 * DEPENDS_NEVER, *why is "dependency a failed: will never be complete".
 * Both new (NULL on DEPENDS_HOLD).  Returns the verdict, or the store's
 * error with err. */
int depends_gate(struct server *srv, const json_t *job, char **why, json_t **waiting,
		 struct herd_err *err);

/* Stops job (a stored record, only read) because a dependency can never
 * hold: stop = true and stop_reason = why, on condition that it did not
 * change since read (a job registered again meanwhile is left to its own
 * evaluation); then its own dependents are evaluated again.  0, or the
 * store's error with err (-ESTALE when it changed). */
int depends_stop_job(struct server *srv, const json_t *job, const char *why,
		     struct herd_err *err);

/* For readers (GET /v1/job/:id): each dependency of job with its state now,
 * [{"job", "condition", "job_status", "state": "met" | "waiting" |
 * "never"}], or NULL when the job names none.  A new reference. */
json_t *depends_describe(struct server *srv, const json_t *job, struct herd_err *err);

#endif
