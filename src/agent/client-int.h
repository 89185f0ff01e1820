/* client-int: the client's internals, shared by client.c, node_register.c,
 * heartbeat.c, alloc_runner.c, task_runner.c, task_control.c, alloc_dir.c,
 * state.c, status_sync.c. */
#ifndef HERD_AGENT_CLIENT_INT_H
#define HERD_AGENT_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "agent/client.h"
#include "agent/config.h"
#include "agent/fingerprint.h"
#include "agent/runner_thread.h"
#include "agent/state.h"
#include "agent/taskenv.h"
#include "common/httpc.h"
#include "drivers/driver.h"
#include "gpu/gpu.h"
#include "spec/job.h"

struct alloc_gc;
struct alloc_runner;
struct mps;
struct server_list;
struct status_sync;
struct tmpl_watch;

struct client {
	const struct agent_config *cfg;
	char node_id[64];
	/* client { servers }, else the server in this process: one of them
	 * current, the others tried in turn when it fails (server_list.h). */
	struct server_list *servers;
	/* The server in this process ("host:port"; NULL: none): while it is
	 * the current one, every connection goes through local_transport
	 * without a socket. */
	char *local_server;
	const struct httpc_local *local_transport;
	struct driver_env driver_env;
	struct gpu_host *gpus;        /* NULL until fingerprinted */
	struct mps *mps;              /* MPS daemons of mps GPUs (mps.h); may be NULL */
	struct gpu_watch *gw;         /* GPU memory per task (gpu_watch.c); NULL: no GPUs */
	struct gpu_events *gev;       /* XID/ECC events (gpu_events.c); NULL: none reported */
	pthread_mutex_t gpu_lock;     /* sampling from the heartbeat thread */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool shutting_down;
	bool registered;
	bool heartbeat_soon;          /* client_heartbeat_soon asked: the next one now */
	int64_t heartbeat_ttl_ns;
	bool server_down_logged;      /* one log line per refusal (client_server_refused) */
	/* CLOCK_BOOTTIME ns of the last answer of any server (0: none yet):
	 * disconnect { stop_on_client_after } counts from it (disconnect_stop.c) */
	_Atomic int64_t last_contact_ns;
	/* runners, nr_runners, runner_pos: changed by the watch (new work)
	 * and by client_collect_runners (finished work), under runners_lock;
	 * taken before any runner's lock and before the status sync's. */
	pthread_mutex_t runners_lock;
	struct alloc_runner **runners;
	size_t nr_runners, alloc_runners;
	json_t *runner_pos;           /* {"<alloc id>": index into runners} (client.c) */
	/* runners whose allocation holds cores (changed under runners_lock,
	 * read without it): while 0, a task without cores needs no core plan
	 * and takes no lock for one */
	_Atomic size_t nr_core_runners;
	/* The runners whose thread has ended (alloc_runner_finished), the
	 * only ones client_collect_runners looks at: its work is
	 * proportional to what finished, not to every allocation the node
	 * runs.  Under finished_lock, which a runner's thread takes alone
	 * (client_stop holds runners_lock while it joins them). */
	pthread_mutex_t finished_lock;
	struct alloc_runner **finished;
	size_t nr_finished, alloc_finished;

	pthread_t heartbeat_thread, watch_thread;
	bool threads_started;
	pthread_t docker_sweep_thread;  /* docker_sweep.c */
	bool docker_sweep_started;

	/* What the allocation runners share instead of making their own
	 * (client_shared.c, job_cache.c, state.c). */
	struct state_store *state;    /* <state_dir>/state.db (state.h) */
	pthread_mutex_t shared_lock;  /* fp, idle, jobs */
	struct client_fp *fp;         /* the latest node fingerprint; NULL until taken */
	struct httpc *idle;           /* connections to the server not in use */
	size_t nr_idle, alloc_idle;
	json_t *jobs;                 /* job cache: {"<ns>\x1f<id>\x1f<version>": job} */
	json_t *jobs_order;           /* its keys, oldest first */
	struct status_sync *sync;     /* status reports to the server (status_sync.h) */
	struct alloc_gc *gc;          /* terminal allocations' dirs (alloc_gc.h); may be NULL */
};

/* Frees the runners whose work is over and whose last status the server
 * took, and hands their dirs to the GC.  Called by the watch after each
 * answer and by the status sync after the server took some states (a
 * finished allocation is collected then, not at the next change the watch
 * hears of, which may be a long poll away).  Does nothing once the client
 * is shutting down.  Call with no status-sync lock held. */
void client_collect_runners(struct client *c);
/* A runner's thread, as it ends: ar is one for client_collect_runners to
 * look at from now on. */
void alloc_runner_finished(struct client *c, struct alloc_runner *ar);

/* client_shared.c: what allocation runners share.
 *
 * The node fingerprint (for ${attr.*}): taken at each registration and
 * kept; a runner holds a reference to the one current when it started, so
 * a new fingerprint replaces it for later runners without freeing it
 * under earlier ones. */
struct client_fp {
	struct node_fingerprint *fp;
	unsigned refs;                /* under c->shared_lock */
};
/* Makes fp (owned from now on) the client's current fingerprint. */
void client_fp_set(struct client *c, struct node_fingerprint *fp);
/* A reference to the current fingerprint, taking one first when the client
 * has none yet (a recovered allocation before the first registration);
 * NULL when the machine cannot be read.  Release with client_fp_put. */
struct client_fp *client_fp_get(struct client *c);
void client_fp_put(struct client *c, struct client_fp *f);   /* accepts NULL */
/* Connections to the server, kept alive between allocations: take one
 * into *h (an idle one, else a new one as client_httpc_init makes it) and
 * give it back when done (kept for the next taker, up to a few). */
/* task_identity.c: fresh workload tokens for the task's next run, one per
 * identity block with env or file (kept on tr for the environment; file:
 * secrets/herd_token[_<name>], secrets/nomad_token[_<name>]); 0, or
 * -errno with err.  _token: the i-th token the environment gets and its
 * identity's name (NULL: the default identity), or NULL when that one is
 * file-only or there is none.  _poll (the task's wait loop): renews the
 * tokens due (a ttl's half life) and carries out their change_mode; true
 * when the task is to restart.  _recovered: for a task this agent did not
 * start (recovered running after an agent restart), the tokens with a ttl
 * and a file renewed at the next _poll, their change_mode carried out but
 * a restart.  _release forgets them. */
struct task_runner;
struct driver_ops;
int task_identity_refresh(struct task_runner *tr, struct herd_err *err);
void task_identity_recovered(struct task_runner *tr);
const char *task_identity_token(const struct task_runner *tr, size_t i, const char **name);
bool task_identity_poll(struct task_runner *tr, const struct driver_ops *d);
void task_identity_release(struct task_runner *tr);
void client_httpc_take(struct client *c, struct httpc *h);
void client_httpc_give(struct client *c, struct httpc *h);
/* Frees what client_shared.c and job_cache.c keep (client_stop). */
void client_shared_release(struct client *c);

/* job_cache.c: the job version an allocation runs, from the cache of the
 * versions this client fetched lately, else from the server (GET
 * /v1/job/:id/version/:version; from a server without that route, the
 * versions list, else the current job).  A new reference, or NULL with
 * err.  Cached versions are shared between runners: read only. */
json_t *client_job_version(struct client *c, const char *ns, const char *job_id,
			   int64_t version, struct herd_err *err);

/* Builds the node JSON of POST /v1/node/register (node_register.c). */
json_t *client_node_json(struct client *c);
/* The device health/stats list of a heartbeat. */
json_t *client_devices_heartbeat(struct client *c);
/* Registers (blocking, one try).  0 or -errno with err; *status gets the
 * answer's HTTP status (0: none came). */
int client_register(struct client *c, struct httpc *h, long *status, struct herd_err *err);

/* mps_task.c: taskenv's gpu_shares for the devices of alloc that task
 * owns, in the order of task_gpu_ids.  Returns 0 with *out (*n entries;
 * the caller frees the array, whose strings live as long as c), -EAGAIN
 * with err when an mps GPU's daemon is being restarted, -EINVAL when it
 * has none. */
int client_gpu_shares(struct client *c, const json_t *alloc, const char *task,
		      struct taskenv_gpu_share **out, size_t *n, struct herd_err *err);

/* docker_sweep.c: the thread that removes containers of allocations this
 * client no longer runs, after recovery and every docker.gc_period_ns;
 * started only when cfg->docker.gc_dangling; ends at shutdown. */
void *client_docker_sweep_main(void *arg);

/* gpu_watch.c: who uses how much GPU memory, and the memory limit of
 * timeslice shares (docs/gpu-sharing.md, "GPU memory per task").
 *   gpu_watch_start      its thread, sampling every gpu { stats_period };
 *                        NULL where the node has no GPUs
 *   gpu_watch_join       waits for the thread (after shutting_down is set,
 *                        before the runners are freed); NULL ok
 *   gpu_watch_free       frees it (after the heartbeat thread ended); NULL ok
 *   gpu_watch_decorate   adds the last pass's task_memory [{alloc_id, task,
 *                        memory_mib}] and foreign_memory_mib to the
 *                        heartbeat stats of device dev (nothing before the
 *                        first sample of it); NULL ok
 *   gpu_watch_kill_poll  in tr's wait loop: whether the watch asked for
 *                        tr's kill (then why: "GPU-... 2.9 GiB of 2 GiB");
 *                        a lock-free load when it did not */
struct gpu_watch;
struct gpu_watch *gpu_watch_start(struct client *c);
void gpu_watch_join(struct gpu_watch *w);
void gpu_watch_free(struct gpu_watch *w);
void gpu_watch_decorate(struct gpu_watch *w, size_t dev, json_t *stats);
bool gpu_watch_kill_poll(struct task_runner *tr, char *why, size_t size);

/* heartbeat.c: the heartbeat thread. */
void *client_heartbeat_main(void *arg);
/* Asks the heartbeat thread for a heartbeat now rather than at its next
 * period (a device's health changed); a no-op while it is not registered. */
void client_heartbeat_soon(struct client *c);

/* gpu_events.c: XID and double-bit ECC events mark the devices they
 * concern unhealthy, and ask for a heartbeat at once.
 *   gpu_events_start  its thread, where the driver reports events (NULL:
 *                     none: no GPUs, WSL2, no NVML, or no thread)
 *   gpu_events_stop   joins it (after shutting_down is set) and frees it;
 *                     NULL ok */
struct gpu_events;
struct gpu_events *gpu_events_start(struct client *c);
void gpu_events_stop(struct gpu_events *e);
/* Sleeps up to ns or until shutdown; returns true when shutting down. */
bool client_sleep(struct client *c, int64_t ns);
/* Failover between servers (server_list.h).  Before each request a
 * thread points its connection at the current server
 * (client_httpc_point, which returns that server's generation); after it,
 * it says how that server did:
 *   client_server_failed    no answer, or a 5xx (client_server_failure):
 *                           the client moves on to the next server (the
 *                           move logged once: "server A unreachable (why);
 *                           using B").  Returns true when every server
 *                           failed since the last answer: back off before
 *                           the next try; false: try again at once.
 *   client_server_answered  any other answer: a run of failures is over.
 *   client_server_refused   an answer that refused the request for a
 *                           reason of the client's (a 4xx where none was
 *                           expected): logged once until the next answer. */
uint64_t client_httpc_point(struct client *c, struct httpc *h);
bool client_server_failed(struct client *c, uint64_t gen, const char *why);
void client_server_answered(struct client *c, uint64_t gen);
void client_server_refused(struct client *c, const char *why);
/* Whether an answer (or its absence) is the server's failure rather than
 * the request's: nothing came back, a 5xx, or a standby's redirect to the
 * leader that httpc did not follow (too many, or one that would carry the
 * node's token elsewhere over plain http: httpc_redirect_check); the
 * client then tries the next of its servers. */
static inline bool client_server_failure(const struct httpc_response *r)
{
	return r->status == 0 || r->status >= 500 || r->status == 307 || r->status == 308;
}
/* Sets up h to talk to the client's current server: its address and the
 * node token (client { token }, else $HERD_TOKEN as httpc_init reads it).
 * The one place every client thread's connection is made; release h with
 * httpc_release. */
void client_httpc_init(struct client *c, struct httpc *h);

/* --- allocations --- */

enum task_phase { PHASE_PRESTART, PHASE_MAIN, PHASE_POSTSTART, PHASE_POSTSTOP };

/* A user's request to a running task (client_alloc_task_op, through the
 * client API).  Only the task's runner uses its driver handle, so the
 * request is handed to it: posted by the caller, carried out by the runner
 * in its wait loop, answered (done, rc, msg), then cleared by the caller.
 * Under ar->lock; answers are broadcast on ar->cond. */
enum task_request_kind { TASK_REQ_NONE, TASK_REQ_SIGNAL, TASK_REQ_RESTART };
struct task_request {
	enum task_request_kind kind;  /* TASK_REQ_NONE: no request */
	int sig;                      /* TASK_REQ_SIGNAL */
	bool done;                    /* answered */
	int rc;                       /* 0, or -errno with msg */
	char msg[256];
};

/* One workload identity's token of a task's run (task_identity.c). */
struct task_wi {
	const struct job_identity *id; /* the task's block (the job's) */
	char *token;
	int64_t renew_at;              /* unix ns; 0: never (no ttl) */
	int64_t retry_ns;              /* the next failed renewal's wait; 0 after success */
	bool recovered;                /* renewed for a recovered task: no restart */
};

struct task_runner {
	struct alloc_runner *ar;
	const struct job_task *task;  /* in ar->job */
	enum task_phase phase;
	bool sidecar;                 /* lifecycle { sidecar = true }: runs for the
				       * main tasks' lifetime */
	char *dir;                    /* <alloc>/<task> */
	struct taskenv *te;           /* built before each start (task_prepare.c) */
	struct task_wi *wi;           /* this run's workload tokens (task_identity.c) */
	size_t nwi;
	char *wi_addr;                /* the server they came from, for the env */
	struct driver_handle *handle;
	/* Reported state (under ar->lock). */
	char state[16];               /* pending | running | dead */
	bool failed;
	int restarts;                 /* all restarts, as shown to users */
	/* The restart policy's window (persisted, so that an agent restart
	 * does not hand a crash-looping task a fresh set of attempts). */
	int64_t window_start;         /* 0: no failure counted yet */
	int window_restarts;          /* restarts counted in the window */
	int64_t started_at, finished_at;
	/* its first start, kept across restarts (persisted): the allocation's
	 * time limit counts from its main tasks' first; set only for a group
	 * with a time_limit (time_limit.c) */
	int64_t first_started_at;
	int exit_code;
	json_t *events;               /* [{"type","time","message"}] */
	bool kill;                    /* stop this task (sidecars after main) */
	struct runner_thread thread;
	bool thread_started;
	/* Runs on the allocation runner's thread (the group's only task):
	 * reports its own changes through alloc_runner_progress, as no
	 * runner thread waits for them. */
	bool on_runner_thread;
	struct task_request req;      /* a user's, under ar->lock */
	/* The GPU watch asks for a kill (timeslice_memory_limit = "kill"):
	 * set with gpu_kill_why under ar->lock, polled without it by the
	 * runner's wait loop (gpu_watch_kill_poll). */
	atomic_bool gpu_kill;
	char gpu_kill_why[192];
	/* its last run ended in that kill (under ar->lock): the allocation's
	 * description says so when it fails */
	bool gpu_killed;
};

struct alloc_runner {
	struct client *c;
	char id[64];
	bool holds_cores;             /* its allocation has tasks with cores (client.c) */
	json_t *alloc;                /* the allocation as first seen; never replaced
				       * (threads read it without the lock): what
				       * changes later, desired_status, comes
				       * through alloc_runner_stop */
	struct job *job;
	const struct job_group *group;
	char *dir;                    /* <alloc_dir>/<id> */
	struct task_runner *tasks;
	size_t ntasks;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop_requested;          /* desired stop or client shutdown with stop */
	bool detach;                  /* client shutdown: leave tasks running */
	bool done;                    /* thread has finished its work */
	bool dirty;                   /* state to persist and report */
	char client_status[16];
	char client_description[256];
	bool recovered;               /* from local state */
	json_t *saved;                /* task states loaded from disk */
	json_t *job_json;             /* the job version this allocation runs */
	struct client_fp *fp;         /* ${attr.*} of the tasks; may be NULL */
	bool state_saved;             /* its row exists (state.c); under lock */
	/* client_alloc_task_op calls that hold the runner (client_runner_hold;
	 * under lock): client_collect_runners does not free it meanwhile. */
	unsigned holds;
	struct runner_thread thread;
	struct svc_set *svc;          /* its services and checks (checker.h); NULL: none */
	struct tmpl_watch *tmpl;      /* its templates' data and watch (template_watch.c);
				       * NULL: no task has a template */
	/* The group's time_limit (time_limit.c), under lock: limit_since is
	 * the first start of a main task (0: none yet), time_limited says the
	 * limit was reached and every task is being stopped. */
	int64_t limit_since;
	bool time_limited;
	/* disconnect { stop_on_client_after } stopped it (disconnect_stop.c),
	 * under lock */
	bool disconnect_stopped;
	/* A stop's shutdown_delay (shutdown_delay.c), under lock: when the
	 * stop began (unix ns; 0: not yet; saved with the tasks' state), and
	 * stop_now: the client shuts down stopping its tasks, no delay;
	 * no_shutdown_delay: the server's stop says to skip the delays (job
	 * stop / alloc stop -no-shutdown-delay). */
	int64_t shutdown_since;
	bool stop_now;
	bool no_shutdown_delay;
};

/* alloc_runner.c */
struct alloc_runner *alloc_runner_new(struct client *c, json_t *alloc);
int alloc_runner_start(struct alloc_runner *ar);
void alloc_runner_stop(struct alloc_runner *ar);      /* desired stop */
/* Joins the thread and frees; detach leaves tasks running. */
void alloc_runner_free(struct alloc_runner *ar, bool detach);
void alloc_runner_mark_dirty(struct alloc_runner *ar);
/* Reports what changed now (the allocation is running once its main
 * tasks are): for a task on the runner's own thread (on_runner_thread),
 * at each change a waiting runner would have reported at once. */
void alloc_runner_progress(struct alloc_runner *ar);
void task_event(struct task_runner *tr, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Whether the task is to stop: killed, its allocation stopped, or the
 * allocation's time limit reached (checked by this very call).  Cheap: a
 * lock and a comparison; the steps before a start that may take long (an
 * artifact's download) ask it as they go. */
bool task_runner_should_stop(struct task_runner *tr);

/* svc_task.c: the services of a task (checker.h), for a runner whose
 * allocation has some (ar->svc).  svc_task_started registers the task's
 * (and the group's, for its first main task) once it runs;
 * svc_task_stopped removes them; svc_task_poll, in the runner's wait loop,
 * marks the allocation dirty when a check's status changed and returns
 * true (why: which check) when check_restart asks for a restart.
 * alloc_has_services: whether group g or one of its tasks has a service. */
void svc_task_started(struct task_runner *tr);
void svc_task_stopped(struct task_runner *tr);
bool svc_task_poll(struct task_runner *tr, char *why, size_t size);
bool alloc_has_services(const struct job_group *g);

/* template_watch.c: the templates of an allocation's tasks, their service
 * data and the watch that renders them again when it changes.
 *   tmpl_watch_new        NULL when no task of ar has a template (after
 *                         setup_tasks); tmpl_watch_stop ends its thread
 *                         (the allocation's work is over), tmpl_watch_free
 *                         frees it (accepts NULL)
 *   task_template_render  renders template t of tr with environment te
 *                         (env templates: task_prepare_env); 0 or -errno
 *                         with err
 *   tmpl_task_started     tr runs (recovered: started by an earlier
 *                         client): the watch may render its templates
 *   tmpl_task_stopped     tr no longer runs
 *   tmpl_task_poll        in the runner's wait loop: carries out the
 *                         change_mode of templates rendered again (signals
 *                         through d, change_scripts, events): whether the
 *                         task is to restart (not counted against its
 *                         restart policy) or to be killed as failed (a
 *                         change_script with fail_on_error failed) */
struct job_template;
struct tmpl_watch *tmpl_watch_new(struct alloc_runner *ar);
void tmpl_watch_stop(struct tmpl_watch *w);
void tmpl_watch_free(struct tmpl_watch *w);
int task_template_render(struct task_runner *tr, const struct job_template *t,
			 const struct taskenv *te, char **out, struct herd_err *err);
void tmpl_task_started(struct task_runner *tr, bool recovered);
void tmpl_task_stopped(struct task_runner *tr);
enum tmpl_poll { TMPL_POLL_NONE, TMPL_POLL_RESTART, TMPL_POLL_FAIL };
enum tmpl_poll tmpl_task_poll(struct task_runner *tr, const struct driver_ops *d);

/* time_limit.c: a batch group's time_limit, checked by the allocation's
 * own task runners in the wait slices they run anyway (no timer, no
 * thread); a group without one never calls these (group->time_limit == 0).
 * All with ar->lock held.
 *   time_limit_started   tr started (or was recovered with its saved first
 *                        start): its first start, the allocation's limit
 *                        counting from its main tasks' first
 *   time_limit_check     whether the limit is reached (sets time_limited
 *                        the first time; never once a stop was requested)
 *   time_limit_recover   what tr's saved state says of the limit
 *   time_limit_save      the same into tr's state (state.c's task_json)
 *   time_limit_json      {"limit","started_at","reached"}: the status
 *                        report's time_limit, which the server keeps and
 *                        reads (a reached limit is never rescheduled)
 *   time_limit_text      "time limit 4h reached" into buf; returns buf */
void time_limit_started(struct task_runner *tr, int64_t now);
bool time_limit_check(struct alloc_runner *ar, int64_t now);
void time_limit_recover(struct task_runner *tr, const json_t *saved);
void time_limit_save(const struct task_runner *tr, json_t *t);
json_t *time_limit_json(const struct alloc_runner *ar);
const char *time_limit_text(const struct alloc_runner *ar, char *buf, size_t size);

/* disconnect_stop.c: disconnect { stop_on_client_after }.
 *   client_contact_note     a server answered now
 *   disconnect_stop_check   whether ar stops because no server answered
 *                           for its group's stop_on_client_after (then it
 *                           requests ar's stop); under ar->lock
 *   disconnect_stop_text    the description of ar's stop, in buf */
void client_contact_note(struct client *c);
bool disconnect_stop_check(struct alloc_runner *ar);
const char *disconnect_stop_text(struct alloc_runner *ar, char *buf, size_t size);

/* shutdown_delay.c: a stop's group and task shutdown_delay.
 *   shutdown_delay_wait     before tr's runner kills its running task for
 *                           a stop: removes the group's services, waits
 *                           the group's delay (from the stop's start, once
 *                           per allocation), removes the task's, waits its
 *                           own, the task running meanwhile.  0: kill it
 *                           now (also when no delay applies); 1: it ended
 *                           meanwhile (ex filled as d->wait does); -1: the
 *                           client detaches (leave it running)
 *   shutdown_delay_begun    whether ar's stop began (no new registrations)
 *   shutdown_delay_save     into tr's saved state (ar->lock held)
 *   shutdown_delay_recover  from a task's saved state (ar->lock held)
 *   shutdown_delay_skip     the server's stop of ar skips the delays
 *                           (its desired_transition.no_shutdown_delay); one
 *                           already waiting ends its wait
 *   alloc_runner_stop_now   a stop with no delay (client_stop stopping
 *                           its tasks: the agent's own shutdown) */
int shutdown_delay_wait(struct task_runner *tr, const struct driver_ops *d,
			struct driver_exit *ex);
bool shutdown_delay_begun(struct alloc_runner *ar);
void shutdown_delay_save(const struct task_runner *tr, json_t *t);
void shutdown_delay_recover(struct alloc_runner *ar, const json_t *saved);
void shutdown_delay_skip(struct alloc_runner *ar);
void alloc_runner_stop_now(struct alloc_runner *ar);

/* task_runner.c: runs one task to its end (restarts included); returns
 * when it is dead or a stop was requested and carried out.  While the task
 * runs it carries out a user's request (tr->req) within a wait slice. */
void task_runner_run(struct task_runner *tr);

/* task_control.c / client.c: a user's request to a running allocation.
 * client_runner_hold finds the runner of alloc_id under runners_lock and
 * holds it (NULL when this client has none, or is shutting down);
 * client_runner_release lets it be collected again.  client_stop frees
 * runners whatever their holds: stop the client API first. */
struct alloc_runner *client_runner_hold(struct client *c, const char *alloc_id);
void client_runner_release(struct alloc_runner *ar);

/* alloc_dir.c: makes <dir>/alloc/{logs,tmp,data} and <dir>/<task>/{local,
 * secrets,tmp}.  0 or -errno with err. */
int alloc_dir_build(const char *dir, const struct job_group *g, struct herd_err *err);
/* Removes an alloc dir tree (best effort; never follows a link out of it
 * nor crosses into a mount: alloc_gc.h alloc_dir_remove). */
void alloc_dir_destroy(const char *dir);

/* task_prepare.c: the steps before a start.  Each returns 0 or -errno
 * with err saying why (for the task's event).
 *   task_prepare_env         builds tr->te (env templates included)
 *   task_fetch_artifacts     artifacts into the task dir; abandoned
 *                            (-ECANCELED) once task_runner_should_stop
 *   task_render_templates    templates (not env ones) into the task dir; a
 *                            restart keeps the files of the last start
 *                            unless restart { render_templates }
 *   task_write_payload       a dispatched job's payload into local/<file>
 *                            of a task with dispatch_payload (none: nothing)
 *   task_interpolate_config  a new copy of config with ${...} replaced
 * task_gpu_ids: the device ids of the allocation that task owns (each
 * device's "task", set by the server; a device without one belongs to
 * every task), NULL-terminated, borrowed strings in an array the caller
 * frees; *n their count.  A task that asked for no device gets none.
 * alloc_device_of_task: whether device entry dev belongs to task. */
int task_prepare_env(struct task_runner *tr, struct herd_err *err);
int task_fetch_artifacts(struct task_runner *tr, struct herd_err *err);
int task_render_templates(struct task_runner *tr, struct herd_err *err);
int task_write_payload(struct task_runner *tr, struct herd_err *err);
int task_interpolate_config(struct task_runner *tr, json_t **out, struct herd_err *err);
const char **task_gpu_ids(const struct alloc_runner *ar, const char *task, size_t *n);
bool alloc_device_of_task(const json_t *dev, const char *task);
/* task_cores.c: where task tr runs (cores.h): its allocation's cores, or
 * for a task without, the cores no task of the node holds; records a task
 * event when the plan has one.  Release *p with cores_plan_release. */
struct cores_plan;
void task_cores_plan(struct task_runner *tr, struct cores_plan *p);
/* Moves the running tasks without cores onto the cores no task of the
 * node holds now (all of them when none is held), through each driver's
 * set_cores; called when a task with cores starts, when an allocation
 * that had cores ends, and after recovery.  Takes runners_lock and each
 * runner's lock: call with neither held. */
void client_shared_cores_update(struct client *c);
/* task_devices.c: the existing host device nodes of the GPUs task owns in
 * its allocation (/dev/nvidia<minor>, nvidiactl, nvidia-uvm...), for the
 * exec driver; NULL-terminated, the caller frees each string and the
 * array. */
char **task_device_paths(struct alloc_runner *ar, const char *task);
/* The capability minor of a MIG instance in a mig-minors table (the
 * format of /proc/driver/nvidia-caps/mig-minors: "gpu0/gi1/ci0/access 22"
 * per line): of GPU instance gi of the GPU with driver minor gpu_minor,
 * or with ci >= 0 of its compute instance ci.  -1 when absent or gi < 0. */
int mig_cap_minor(FILE *table, unsigned gpu_minor, int64_t gi, int64_t ci);
/* task_volumes.c: the task's volume_mounts resolved against the client's
 * host_volume blocks: *out (*n entries, in the task's order; strings
 * borrowed from the job and the config; the caller frees the array), a
 * mount read-only when the group volume, the mount or the client says so.
 * -ENOENT with err when a volume's source is not configured on this node.
 * task_link_volumes (raw_exec): each relative destination becomes a link
 * in the task dir to the host path (a link there is replaced; anything
 * else is an error); absolute destinations get none. */
struct driver_volume;
int task_volumes(const struct task_runner *tr, struct driver_volume **out, size_t *n,
		 struct herd_err *err);
int task_link_volumes(struct task_runner *tr, struct herd_err *err);
/* task_runner.c: the driver env of a start or recover: the client's, with
 * the docker driver's config from the agent config (plugin "docker").
 * caps must have room for cfg's allow_caps plus a NULL. */
struct docker_config;
void task_driver_env(const struct client *c, struct driver_env *env, struct docker_config *dc,
		     const char **caps);
#define TASK_MAX_CAPS 65

/* state.c: see state.h.
 * alloc_dir.c: mkdir_p makes path and the parents it lacks (mode for
 * each); 0 or -errno. */
int mkdir_p(const char *path, unsigned mode);

int64_t now_unix_ns(void);

#endif
