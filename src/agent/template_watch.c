/* template_watch: a task's templates on the agent (client-int.h): their
 * rendering with the node's data and the server's services, and the watch
 * that renders them again when those services change.
 *
 * Variables (nomadVar, nomadVarList) are data of the same kind, under keys
 * "@var:PATH" and "@vars:PREFIX" (template.h), read from GET /v1/var/PATH
 * and GET /v1/vars of the job's own namespace (a variable that does not
 * exist is null, watched until it does): what follows of services holds
 * for them.
 *
 * A template that names no service renders as before and costs nothing
 * more: an allocation gets a struct tmpl_watch only when one of its tasks
 * has a template, and a watch thread only once a rendering asked the
 * server for a service.
 *
 * The data.  A rendering that calls nomadService "x" (or nomadServices)
 * asks the allocation's watch for the answer of GET /v1/service/x (GET
 * /v1/services) in the job's namespace, with the client's token, through
 * the client's server list and its failover.  The first time, the server
 * is asked at once; while it cannot be reached (no answer, a 5xx) the
 * question is asked again with backoff (0.1 s doubling to 2 s) for up to
 * TMPL_FIRST_WAIT, then the rendering fails (the task fails to start with
 * a "Setup Failure" event that says the server could not be reached).  A
 * refusal (a 4xx: an ACL token without read access to the namespace) fails
 * it at once.
 *
 * The watch.  One thread per allocation: a blocking query
 * (?index=&wait=) on the first service it knows of, then plain reads of
 * the others (the server's index covers every change, so one blocking
 * query wakes for all of them).  After an answer whose data differs from
 * what it had, it renders again every template of a running task that
 * used service data; a template whose output changed is written again
 * (atomically, as at start) and its change_mode is carried out by the
 * task's runner within its next wait slice (task_runner.c): restart (as
 * `herd alloc restart`, not counted against the restart policy), signal
 * (change_signal; each distinct signal once), noop, script (the
 * template's change_script runs inside the task, change_script.h, and an
 * event gives its outcome; with fail_on_error a failure kills the task,
 * which its restart policy then restarts or not).  The watch waits
 * at least TMPL_MIN_GAP between two rounds, so a busy cluster, whose
 * index moves all the time, costs at most a round a second.  A failed
 * round (server away) keeps the files as they are and tries again with
 * backoff.  The thread ends with the allocation (tmpl_watch_stop).
 *
 * Options (docs/jobspec.md "template: options").  A template with
 * wait { min max } is not rendered at the round that saw the change: it
 * renders once the data stayed the same for min, at most max after the
 * first change (template_wait_due); the round's blocking query ends when
 * the first such wait is over.  A change's action waits a random delay in
 * [0, splay) (tt->due, checked by tmpl_task_poll).  A task's restart
 * renders its templates again only with restart { render_templates }:
 * otherwise the files stay as they are and env templates give their last
 * output (reuse_renders).
 *
 * Locks: w->lock guards the data and the thread's state; w->render_lock
 * guards the per-task state (last outputs, pending changes, live) and is
 * held across a rendering (renderings of one allocation do not run at
 * once: the watch's and a task's start write the same files).  Order:
 * render_lock, then lock; ar->lock may be taken inside either (a task's
 * events, whether it is to stop), never the reverse. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "agent/change_script.h"
#include "agent/client-int.h"
#include "agent/log.h"
#include "agent/template.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/docker.h"

#define TMPL_FIRST_WAIT (60 * NS_PER_SEC)    /* server unreachable at first render */
#define TMPL_MIN_GAP (1 * NS_PER_SEC)        /* between two watch rounds */
#define TMPL_WATCH_WAIT_MS (5 * 60 * 1000)   /* a blocking query's wait */
#define TMPL_SOURCE_MAX (1 << 20)

struct tmpl_task {
	char **last;          /* each template's last output (NULL: none yet) */
	bool *dynamic;        /* its last rendering used service data */
	int64_t *wait_first;  /* wait { }: when the data first / last changed
			       * since its last rendering (0: no change waits) */
	int64_t *wait_last;
	bool rendered;        /* its templates were rendered by a start of this
			       * client (restart's render_templates) */
	int64_t due;          /* the pending change_mode's time (splay; unix ns) */
	bool live;            /* the task runs: the watch may render it */
	bool recovered;       /* to render again and compare: started by an earlier
			       * client */
	bool stale;           /* its templates that use service data, to render
			       * again: started from data older than the watch's */
	uint64_t gen;         /* the data generation its files were rendered from
			       * at a start */
	bool restart;         /* pending: restart the task */
	uint64_t signals;     /* pending: these signals (bit n: signal n) */
	bool *script;         /* pending: template j's change_script */
	bool scripts;         /* pending: some script[j] (no scan per poll) */
};

struct tmpl_watch {
	struct alloc_runner *ar;
	char *ns;             /* the job's namespace, escaped for a query */
	pthread_mutex_t render_lock;
	struct tmpl_task *tasks;   /* one per ar->tasks */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	json_t *data;         /* {"<name>" or "" (the list): the answer's body} */
	uint64_t index;       /* the highest X-Herd-Index of an answer */
	size_t nkeys;         /* keys the last round read */
	uint64_t gen;         /* counts changes of data */
	bool stop, thread_started;
	pthread_t thread;
};

/* One rendering's use of the data: what it read stays referenced until
 * the rendering returns, whatever the watch replaces meanwhile. */
struct tmpl_call {
	struct task_runner *tr;
	bool first;           /* a task's start: wait for an unreachable server */
	bool used;            /* the rendering asked for service data */
	json_t *held;
};

static int task_index(const struct task_runner *tr)
{
	return (int)(tr - tr->ar->tasks);
}

struct tmpl_watch *tmpl_watch_new(struct alloc_runner *ar)
{
	struct tmpl_watch *w;
	size_t i;

	for (i = 0; i < ar->ntasks; i++)
		if (ar->tasks[i].task->ntemplates)
			break;
	if (i == ar->ntasks)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->ar = ar;
	w->ns = httpc_escape(ar->job->namespace ? ar->job->namespace : "default");
	w->tasks = xcalloc(ar->ntasks, sizeof(*w->tasks));
	for (i = 0; i < ar->ntasks; i++) {
		size_t n = ar->tasks[i].task->ntemplates + 1;
		w->tasks[i].last = xcalloc(n, sizeof(char *));
		w->tasks[i].dynamic = xcalloc(n, sizeof(bool));
		w->tasks[i].wait_first = xcalloc(n, sizeof(int64_t));
		w->tasks[i].wait_last = xcalloc(n, sizeof(int64_t));
		w->tasks[i].script = xcalloc(n, sizeof(bool));
	}
	w->data = json_object();
	pthread_mutex_init(&w->render_lock, NULL);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	return w;
}

void tmpl_watch_stop(struct tmpl_watch *w)
{
	bool started;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	started = w->thread_started;
	w->thread_started = false;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (started)
		pthread_join(w->thread, NULL);
}

void tmpl_watch_free(struct tmpl_watch *w)
{
	if (!w)
		return;
	tmpl_watch_stop(w);
	for (size_t i = 0; i < w->ar->ntasks; i++) {
		for (size_t j = 0; j < w->ar->tasks[i].task->ntemplates; j++)
			free(w->tasks[i].last[j]);
		free(w->tasks[i].last);
		free(w->tasks[i].dynamic);
		free(w->tasks[i].wait_first);
		free(w->tasks[i].wait_last);
		free(w->tasks[i].script);
	}
	free(w->tasks);
	free(w->ns);
	json_decref(w->data);
	pthread_mutex_destroy(&w->render_lock);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
}

static bool watch_stopping(struct tmpl_watch *w)
{
	bool s;
	pthread_mutex_lock(&w->lock);
	s = w->stop;
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_lock(&w->ar->c->lock);
	s = s || w->ar->c->shutting_down;
	pthread_mutex_unlock(&w->ar->c->lock);
	return s;
}

static int abort_cb(void *arg)
{
	return watch_stopping(arg);
}

/* --- the server --- */

static char *query_path(struct tmpl_watch *w, const char *key)
{
	char *e, *p;
	if (!*key)
		return xasprintf("/v1/services?namespace=%s", w->ns);
	/* variables (template_lang.c checked the path's characters: none
	 * needs escaping), always of the job's own namespace */
	if (!strncmp(key, "@var:", 5))
		return xasprintf("/v1/var/%s?namespace=%s", key + 5, w->ns);
	if (!strncmp(key, "@vars:", 6))
		return xasprintf("/v1/vars?prefix=%s&namespace=%s", key + 6, w->ns);
	e = httpc_escape(key);
	p = xasprintf("/v1/service/%s?namespace=%s", e, w->ns);
	free(e);
	return p;
}

/* One read of key (index 0: at once; else blocking).  0 with *body (a new
 * reference) and *index; -EAGAIN when the server failed (the client moved
 * on to the next, *all: every server failed in a row); other -errno with
 * err for a refusal. */
static int read_key(struct tmpl_watch *w, const char *key, uint64_t index, long wait_ms,
		    json_t **body, uint64_t *out_index, bool *all, struct herd_err *err)
{
	struct client *c = w->ar->c;
	struct httpc_response r = { 0 };
	struct httpc h;
	char *path = query_path(w, key);
	uint64_t gen;
	int rc;

	*all = false;
	client_httpc_take(c, &h);
	h.abort_cb = abort_cb;
	h.abort_arg = w;
	gen = client_httpc_point(c, &h);
	if (index)
		rc = httpc_get_blocking(&h, path, index, wait_ms, &r, err);
	else
		rc = httpc_request(&h, "GET", path, NULL, &r, err);
	client_httpc_give(c, &h);
	free(path);
	if (rc == -ECANCELED) {
		httpc_response_release(&r);
		return rc;
	}
	if (rc < 0 && client_server_failure(&r)) {
		*all = client_server_failed(c, gen, err->msg);
		httpc_response_release(&r);
		return -EAGAIN;
	}
	client_server_answered(c, gen);
	/* a variable that does not exist (yet): null, watched like any answer */
	if (rc < 0 && r.status == 404 && !strncmp(key, "@var:", 5)) {
		rc = 0;
		json_decref(r.body);
		r.body = json_null();
	}
	if (rc == 0 && !strncmp(key, "@var:", 5) && !json_is_object(r.body) &&
	    !json_is_null(r.body))
		rc = herd_errf(err, -EPROTO, "the server's answer is not a variable");
	else if (rc == 0 && strncmp(key, "@var:", 5) && !json_is_array(r.body))
		rc = herd_errf(err, -EPROTO, "the server's answer is not a list");
	if (rc == 0) {
		*body = json_incref(r.body);
		*out_index = r.index;
	}
	httpc_response_release(&r);
	return rc;
}

/* Stores an answer; true when it differs from what was there. */
static bool store_answer(struct tmpl_watch *w, const char *key, json_t *body, uint64_t index)
{
	json_t *old;
	bool changed;
	pthread_mutex_lock(&w->lock);
	/* a key's first answer changes nothing: whoever asked renders it */
	old = json_object_get(w->data, key);
	changed = old && !json_equal(old, body);
	w->gen += changed;
	json_object_set_new(w->data, key, body);
	if (index > w->index)
		w->index = index;
	pthread_mutex_unlock(&w->lock);
	return changed;
}

static void *watch_main(void *arg);

static void start_thread(struct tmpl_watch *w)
{
	pthread_mutex_lock(&w->lock);
	if (!w->thread_started && !w->stop &&
	    pthread_create(&w->thread, NULL, watch_main, w) == 0)
		w->thread_started = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Whether the task whose start waits for the server is to stop meanwhile
 * (a stop of the allocation does not wait out the retries). */
static bool task_stopping(struct task_runner *tr)
{
	bool s;
	pthread_mutex_lock(&tr->ar->lock);
	s = tr->kill || (tr->ar->stop_requested && tr->phase != PHASE_POSTSTOP);
	pthread_mutex_unlock(&tr->ar->lock);
	return s;
}

/* The first answer for key, asked at once; while the server cannot be
 * reached, again with backoff until TMPL_FIRST_WAIT passed (a task's
 * start: first) or not at all (the watch's renderings). */
static int fetch_first(struct tmpl_watch *w, struct task_runner *tr, const char *key, bool first,
		       struct herd_err *err)
{
	int64_t deadline = now_unix_ns() + TMPL_FIRST_WAIT, backoff = 100 * 1000000LL;
	uint64_t index = 0;
	json_t *body = NULL;
	bool all;
	int rc;

	for (;;) {
		rc = read_key(w, key, 0, 0, &body, &index, &all, err);
		if (rc != -EAGAIN)
			break;
		if (!first || now_unix_ns() >= deadline) {
			if (first)
				herd_err_prefix(err, "the server could not be reached for %llds",
						(long long)(TMPL_FIRST_WAIT / NS_PER_SEC));
			else
				herd_err_prefix(err, "the server could not be reached");
			return -EHOSTUNREACH;
		}
		if (all) {
			if (client_sleep(w->ar->c, backoff) || watch_stopping(w) ||
			    task_stopping(tr))
				return herd_errf(err, -ECANCELED, "the task is being stopped");
			backoff = backoff * 2 > 2 * NS_PER_SEC ? 2 * NS_PER_SEC : backoff * 2;
		}
	}
	if (rc < 0)
		return rc;
	store_answer(w, key, body, index);
	start_thread(w);
	return 0;
}

/* template_services_fn: the answer the watch has, else the server's. */
static int services_cb(void *arg, const char *name, const json_t **out, struct herd_err *err)
{
	struct tmpl_call *call = arg;
	struct tmpl_watch *w = call->tr->ar->tmpl;
	const char *key = name ? name : "";
	json_t *v;
	int rc;

	call->used = true;
	for (int tries = 0; tries < 2; tries++) {
		pthread_mutex_lock(&w->lock);
		v = json_incref(json_object_get(w->data, key));
		pthread_mutex_unlock(&w->lock);
		if (v) {
			json_array_append_new(call->held, v);
			*out = v;
			return 0;
		}
		if ((rc = fetch_first(w, call->tr, key, call->first, err)) < 0)
			return rc;
	}
	return herd_errf(err, -EIO, "no answer kept");
}

/* --- rendering --- */

/* Renders template j of tr with environment te into *out. */
static int render(struct task_runner *tr, size_t j, const struct taskenv *te, bool first,
		  char **out, bool *used, struct herd_err *err)
{
	const struct job_template *t = &tr->task->templates[j];
	struct tmpl_call call = { .tr = tr, .first = first, .held = json_array() };
	struct template_ctx ctx;
	char *text = NULL;
	int rc = 0;

	memset(&ctx, 0, sizeof(ctx));
	ctx.env = te;
	if (tr->ar->fp) {
		ctx.attrs = tr->ar->fp->fp->attrs;
		ctx.nr_attrs = tr->ar->fp->fp->nr_attrs;
	}
	ctx.meta = tr->ar->c->cfg->client.meta;
	ctx.nr_meta = tr->ar->c->cfg->client.nr_meta;
	ctx.left_delim = t->left_delimiter;
	ctx.right_delim = t->right_delimiter;
	ctx.missing_key_error = t->error_on_missing_key;
	if (tr->ar->tmpl) {
		ctx.services = services_cb;
		ctx.services_arg = &call;
	}
	if (t->source)
		rc = template_read_source(tr->dir, t->source, TMPL_SOURCE_MAX, &text, err);
	if (rc == 0)
		rc = template_render(text ? text : t->data ? t->data : "", &ctx, out, err);
	free(text);
	json_decref(call.held);
	*used = call.used;
	return rc;
}

/* Whether a start of tr keeps what its last start rendered: a restart
 * whose policy has render_templates false (Nomad's default).  Its files
 * stay as they are (the watch keeps those that use service data current)
 * and env templates give their last output.  With w->render_lock held. */
static bool reuse_renders(struct tmpl_watch *w, struct task_runner *tr)
{
	const struct job_restart *rp = tr->task->restart ? tr->task->restart
							 : &tr->ar->group->restart;
	return w && w->tasks[task_index(tr)].rendered && !rp->render_templates;
}

/* Renders template t of tr into *out and keeps the output as its last;
 * with w->render_lock held when the allocation has a watch. */
static int render_record(struct task_runner *tr, const struct job_template *t,
			 const struct taskenv *te, char **out, struct herd_err *err)
{
	struct tmpl_watch *w = tr->ar->tmpl;
	size_t j = (size_t)(t - tr->task->templates);
	bool used = false;
	int rc;

	if (reuse_renders(w, tr) && w->tasks[task_index(tr)].last[j]) {
		*out = xstrdup(w->tasks[task_index(tr)].last[j]);
		return 0;
	}
	rc = render(tr, j, te, true, out, &used, err);

	if (w && rc == 0) {
		struct tmpl_task *tt = &w->tasks[task_index(tr)];
		free(tt->last[j]);
		tt->last[j] = xstrdup(*out);
		tt->dynamic[j] = used;
	}
	return rc;
}

int task_template_render(struct task_runner *tr, const struct job_template *t,
			 const struct taskenv *te, char **out, struct herd_err *err)
{
	struct tmpl_watch *w = tr->ar->tmpl;
	int rc;

	if (w)
		pthread_mutex_lock(&w->render_lock);
	rc = render_record(tr, t, te, out, err);
	if (w)
		pthread_mutex_unlock(&w->render_lock);
	return rc;
}

static size_t tr_ntemplates(const struct tmpl_watch *w, const struct tmpl_task *tt)
{
	return w->ar->tasks[tt - w->tasks].task->ntemplates;
}

static void clear_pending(struct tmpl_watch *w, struct tmpl_task *tt)
{
	pthread_mutex_lock(&w->lock);
	tt->restart = false;
	tt->signals = 0;
	memset(tt->script, 0, tr_ntemplates(w, tt) * sizeof(bool));
	tt->scripts = false;
	tt->due = 0;
	pthread_mutex_unlock(&w->lock);
}

int task_render_templates(struct task_runner *tr, struct herd_err *err)
{
	struct tmpl_watch *w = tr->ar->tmpl;
	bool reuse = false;
	int rc = 0;

	if (w) {
		pthread_mutex_lock(&w->render_lock);
		/* kept files: the data they saw is older than now (the
		 * task's start renders again what changed meanwhile) */
		reuse = reuse_renders(w, tr);
		pthread_mutex_lock(&w->lock);
		if (!reuse)
			w->tasks[task_index(tr)].gen = w->gen;
		pthread_mutex_unlock(&w->lock);
	}
	for (size_t i = 0; i < tr->task->ntemplates && rc == 0 && !reuse; i++) {
		const struct job_template *t = &tr->task->templates[i];
		unsigned perms = 0644;
		char *out = NULL;

		if (t->env)
			continue;
		if (t->perms && template_parse_perms(t->perms, &perms) < 0) {
			rc = herd_errf(err, -EINVAL, "template %s: perms \"%s\" is not octal",
				       t->destination, t->perms);
			break;
		}
		rc = render_record(tr, t, tr->te, &out, err);
		if (rc == 0)
			rc = template_write_owned(tr->dir, t->destination, out, strlen(out), perms,
						  (long)t->uid, (long)t->gid, err);
		free(out);
	}
	/* the start to come reads these files: changes the watch saw
	 * before are in them */
	if (w) {
		w->tasks[task_index(tr)].rendered |= rc == 0;
		clear_pending(w, &w->tasks[task_index(tr)]);
		pthread_mutex_unlock(&w->render_lock);
	}
	return rc;
}

static int64_t rerender(struct tmpl_watch *w, bool changed);

/* --- the task's side --- */

void tmpl_task_started(struct task_runner *tr, bool recovered)
{
	struct tmpl_watch *w = tr->ar->tmpl;
	struct tmpl_task *tt;
	bool again = false, stale;

	if (!w)
		return;
	tt = &w->tasks[task_index(tr)];
	if (recovered && !tr->te) {
		/* the environment its templates saw (env "X") */
		struct herd_err err = { 0, "" };
		if (task_prepare_env(tr, &err) < 0)
			log_warn("client: alloc %.8s: task %s: templates: %s", tr->ar->id,
				 tr->task->name, err.msg);
	}
	pthread_mutex_lock(&w->render_lock);
	tt->live = true;
	/* recovered by a new client: its files were rendered by the last
	 * one (all of them again); or the data changed between its
	 * rendering (a restart that kept its files: an earlier start's) and
	 * now, while the watch, which renders only live tasks, left it: those
	 * that use the data again.  Either at once, and compared. */
	pthread_mutex_lock(&w->lock);
	stale = tt->gen != w->gen;
	if (!recovered && stale)
		tt->gen = w->gen;
	pthread_mutex_unlock(&w->lock);
	if (recovered && tr->te) {
		tt->recovered = true;
		again = true;
	} else if (!recovered && stale) {
		tt->stale = true;
		again = true;
	}
	pthread_mutex_unlock(&w->render_lock);
	if (again)
		rerender(w, false);
}

void tmpl_task_stopped(struct task_runner *tr)
{
	struct tmpl_watch *w = tr->ar->tmpl;
	if (!w)
		return;
	pthread_mutex_lock(&w->render_lock);
	w->tasks[task_index(tr)].live = false;
	pthread_mutex_unlock(&w->render_lock);
}

/* A change_script ends early when its task is to stop, or the client
 * shuts down (the runner detaches: the script, our child, must not outlive
 * it). */
static bool script_cancel(void *arg)
{
	struct task_runner *tr = arg;
	bool detach;

	if (task_runner_should_stop(tr))
		return true;
	pthread_mutex_lock(&tr->ar->lock);
	detach = tr->ar->detach;
	pthread_mutex_unlock(&tr->ar->lock);
	return detach;
}

/* Runs template j's change_script inside tr and says how it went in an
 * event; true when it failed and fail_on_error asks for the task's end. */
static bool run_change_script(struct task_runner *tr, size_t j)
{
	const struct job_template *t = &tr->task->templates[j];
	const struct job_change_script *cs = t->change_script;
	const char *caps[TASK_MAX_CAPS];
	struct change_script_result r;
	struct docker_config dc;
	struct driver_env env;
	const char **argv;
	const char *what = t->env ? "(env)" : t->destination;

	if (!cs)
		return false;   /* validation requires one: never here */
	if (!tr->handle) {
		task_event(tr, "Template Script", "template %s: change_script not run: the task "
			   "is not running", what);
		return false;
	}
	argv = xcalloc(cs->args.n + 2, sizeof(*argv));
	argv[0] = cs->command;
	for (size_t i = 0; i < cs->args.n; i++)
		argv[i + 1] = cs->args.v[i];
	task_driver_env(tr->ar->c, &env, &dc, caps);
	change_script_run(&env, driver_handle_state(tr->handle), tr->dir, argv, cs->timeout,
			  script_cancel, tr, &r);
	free(argv);
	if (!r.started)
		task_event(tr, "Template Script", "template %s: change_script %s did not start: %s",
			   what, cs->command, r.why);
	else if (r.timed_out)
		task_event(tr, "Template Script", "template %s: change_script %s timed out after "
			   "%gs and was killed", what, cs->command,
			   (double)cs->timeout / (double)NS_PER_SEC);
	else if (r.cancelled)
		task_event(tr, "Template Script", "template %s: change_script %s killed: the task "
			   "ended or is stopping", what, cs->command);
	else if (r.signal)
		task_event(tr, "Template Script", "template %s: change_script %s killed by signal "
			   "%d%s%s", what, cs->command, r.signal, r.tail[0] ? ": " : "", r.tail);
	else if (r.exit_code)
		task_event(tr, "Template Script", "template %s: change_script %s failed with exit "
			   "code %d%s%s", what, cs->command, r.exit_code, r.tail[0] ? ": " : "",
			   r.tail);
	else
		task_event(tr, "Template Script", "template %s: change_script %s ran (exit code 0)",
			   what, cs->command);
	if (r.cancelled || !change_script_failed(&r) || !cs->fail_on_error)
		return false;
	task_event(tr, "Killing", "template %s: change_script failed and fail_on_error is set",
		   what);
	return true;
}

enum tmpl_poll tmpl_task_poll(struct task_runner *tr, const struct driver_ops *d)
{
	struct tmpl_watch *w = tr->ar->tmpl;
	struct tmpl_task *tt;
	uint64_t signals;
	size_t n;
	bool restart, *scripts = NULL;

	if (!w)
		return TMPL_POLL_NONE;
	tt = &w->tasks[task_index(tr)];
	n = tr->task->ntemplates;
	pthread_mutex_lock(&w->lock);
	/* splay: not before its time */
	if (tt->due > now_unix_ns()) {
		pthread_mutex_unlock(&w->lock);
		return TMPL_POLL_NONE;
	}
	tt->due = 0;
	restart = tt->restart;
	signals = tt->signals;
	if (tt->scripts) {
		scripts = xmalloc(n * sizeof(bool));
		memcpy(scripts, tt->script, n * sizeof(bool));
		memset(tt->script, 0, n * sizeof(bool));
		tt->scripts = false;
	}
	tt->restart = false;
	tt->signals = 0;
	pthread_mutex_unlock(&w->lock);
	if (restart) {
		free(scripts);
		task_event(tr, "Restart Signaled", "template with change_mode restart re-rendered");
		return TMPL_POLL_RESTART;
	}
	for (int sig = 1; sig < 64; sig++) {
		char name[DRIVER_SIGNAL_NAME_MAX];
		int rc;
		if (!(signals & (1ULL << sig)))
			continue;
		driver_signal_name(sig, name);
		rc = tr->handle ? d->signal(tr->handle, sig) : -ESRCH;
		if (rc == 0)
			task_event(tr, "Signaling", "template re-rendered: sent %s", name);
		else
			task_event(tr, "Signaling", "template re-rendered: %s could not be sent: %s",
				   name, strerror(-rc));
	}
	/* one after the other, in the templates' order, on this thread: the
	 * task's runner waits for them (each for its timeout at most) */
	for (size_t j = 0; scripts && j < n; j++)
		if (scripts[j] && run_change_script(tr, j)) {
			free(scripts);
			return TMPL_POLL_FAIL;
		}
	free(scripts);
	return TMPL_POLL_NONE;
}

/* --- the watch --- */

/* Sleeps ns unless the watch stops; true when it does. */
static bool watch_sleep(struct tmpl_watch *w, int64_t ns)
{
	struct timespec until = deadline_after(CLOCK_REALTIME, ns);
	pthread_mutex_lock(&w->lock);
	while (!w->stop)
		if (pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&w->lock);
	return watch_stopping(w);
}

static uint64_t random_u64(void)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint64_t)now_unix_ns() * 0x9e3779b97f4a7c15ULL;
	return r;
}

/* The change_mode of template t, now that its output changed: carried
 * out after a random delay in [0, splay), so that the allocations that
 * saw one change do not all restart at once; a change already pending
 * keeps its earlier time. */
static void note_change(struct tmpl_watch *w, struct task_runner *tr, struct tmpl_task *tt,
			const struct job_template *t)
{
	const char *mode = t->change_mode ? t->change_mode : "restart";
	int64_t due = now_unix_ns() + template_splay_delay(t->splay, random_u64());
	int sig;

	log_info("client: alloc %.8s: task %s: template %s rendered again (change_mode %s)",
		 tr->ar->id, tr->task->name, t->env ? "(env)" : t->destination, mode);
	pthread_mutex_lock(&w->lock);
	if (strcmp(mode, "noop") && (!tt->due || due < tt->due))
		tt->due = due;
	if (!strcmp(mode, "restart")) {
		tt->restart = true;
	} else if (!strcmp(mode, "signal")) {
		sig = driver_signal_parse(t->change_signal ? t->change_signal : "");
		if (sig > 0 && sig < 64)
			tt->signals |= 1ULL << sig;
	} else if (!strcmp(mode, "script")) {
		tt->script[t - tr->task->templates] = true;
		tt->scripts = true;
	}
	pthread_mutex_unlock(&w->lock);
}

/* Template j of live task i again: written and its change noted when its
 * output changed. */
static void rerender_one(struct tmpl_watch *w, size_t i, size_t j)
{
	struct task_runner *tr = &w->ar->tasks[i];
	struct tmpl_task *tt = &w->tasks[i];
	const struct job_template *t = &tr->task->templates[j];
	struct herd_err err = { 0, "" };
	unsigned perms = 0644;
	char *out = NULL;
	bool used = false, had;
	int rc;

	if (render(tr, j, tr->te, false, &out, &used, &err) < 0) {
		log_warn("client: alloc %.8s: task %s: template %s: %s (the file is kept)", tr->ar->id,
			 tr->task->name, t->env ? "(env)" : t->destination, err.msg);
		return;
	}
	tt->dynamic[j] = used;
	if (tt->recovered && !tt->last[j] && !t->env)
		template_read_source(tr->dir, t->destination, TEMPLATE_MAX_OUTPUT, &tt->last[j], &err);
	if (tt->last[j] && !strcmp(tt->last[j], out)) {
		free(out);
		return;
	}
	had = tt->last[j] != NULL;
	if (!t->env) {
		if (t->perms)
			template_parse_perms(t->perms, &perms);
		rc = template_write_owned(tr->dir, t->destination, out, strlen(out), perms,
					  (long)t->uid, (long)t->gid, &err);
		if (rc < 0) {
			log_warn("client: alloc %.8s: task %s: %s", tr->ar->id, tr->task->name, err.msg);
			free(out);
			return;
		}
	}
	free(tt->last[j]);
	tt->last[j] = out;
	/* an env template of a recovered task: what it was is not known */
	if (had || !t->env)
		note_change(w, tr, tt, t);
}

/* Template j of live task i, whose data changed now (changed) or not:
 * whether it renders now; else *next is lowered to when its wait { } is
 * over (0: it waits for nothing). */
static bool render_due(struct tmpl_task *tt, size_t j, const struct job_template *t, bool changed,
		       int64_t now, int64_t *next)
{
	int64_t due;

	if (!t->wait)
		return changed;
	if (changed) {
		if (!tt->wait_first[j])
			tt->wait_first[j] = now;
		tt->wait_last[j] = now;
	}
	if (!tt->wait_first[j])
		return false;
	due = template_wait_due(tt->wait_first[j], tt->wait_last[j], t->wait->min, t->wait->max);
	if (due > now) {
		if (!*next || due < *next)
			*next = due;
		return false;
	}
	tt->wait_first[j] = 0;
	return true;
}

/* Renders again, for each live task, the templates that used service data
 * when it changed (changed: this round found new data) or once their
 * wait { } is over, and at once every template of a task to compare
 * (recovered) or those that use the data of a task started from older data
 * (stale).
 * Returns the earliest time a template still waits for, 0 when none. */
static int64_t rerender(struct tmpl_watch *w, bool changed)
{
	int64_t now = now_unix_ns(), next = 0;

	pthread_mutex_lock(&w->render_lock);
	for (size_t i = 0; i < w->ar->ntasks; i++) {
		struct tmpl_task *tt = &w->tasks[i];
		const struct job_task *task = w->ar->tasks[i].task;
		if (!tt->live)
			continue;
		for (size_t j = 0; j < task->ntemplates; j++) {
			if (tt->recovered || (tt->stale && tt->dynamic[j])) {
				tt->wait_first[j] = 0;
				rerender_one(w, i, j);
			} else if (tt->dynamic[j] &&
				   render_due(tt, j, &task->templates[j], changed, now, &next)) {
				rerender_one(w, i, j);
			}
		}
		tt->recovered = tt->stale = false;
	}
	pthread_mutex_unlock(&w->render_lock);
	return next;
}

/* The keys the watch follows (a new array) and the index to wait from. */
static json_t *watched_keys(struct tmpl_watch *w, uint64_t *index)
{
	json_t *keys = json_array(), *v;
	const char *k;
	pthread_mutex_lock(&w->lock);
	json_object_foreach(w->data, k, v)
		json_array_append_new(keys, json_string(k));
	*index = w->index;
	pthread_mutex_unlock(&w->lock);
	return keys;
}

/* One round: a blocking read of the first key, plain reads of the others.
 * 1 when something changed, 0 when nothing did, -EAGAIN (with *all) when
 * the server failed, -ECANCELED when stopping, other -errno with err. */
static int watch_round(struct tmpl_watch *w, long wait_ms, bool *all, struct herd_err *err)
{
	uint64_t index, got = 0;
	json_t *keys = watched_keys(w, &index), *body = NULL;
	bool changed = false;
	int rc = 0;

	*all = false;
	/* a key added since the last round: read at once, not after the
	 * next change (its own may be what the last round woke for) */
	pthread_mutex_lock(&w->lock);
	if (json_array_size(keys) != w->nkeys)
		index = 0;
	w->nkeys = json_array_size(keys);
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < json_array_size(keys); i++) {
		const char *key = json_string_value(json_array_get(keys, i));
		rc = read_key(w, key, i == 0 ? index : 0, wait_ms, &body, &got, all, err);
		if (rc < 0)
			break;
		if (i == 0 && got < index) {
			/* a new server state counts from a lower index */
			pthread_mutex_lock(&w->lock);
			w->index = 0;
			pthread_mutex_unlock(&w->lock);
		}
		changed |= store_answer(w, key, body, got);
	}
	json_decref(keys);
	return rc < 0 ? rc : changed;
}

/* How long a round's blocking query may wait: until the first wait { }
 * is over (due, 0: none), at most TMPL_WATCH_WAIT_MS. */
static long round_wait_ms(int64_t due)
{
	int64_t left;

	if (!due)
		return TMPL_WATCH_WAIT_MS;
	left = (due - now_unix_ns() + 999999) / 1000000;
	return left < 1 ? 1 : left > TMPL_WATCH_WAIT_MS ? TMPL_WATCH_WAIT_MS : (long)left;
}

static void *watch_main(void *arg)
{
	struct tmpl_watch *w = arg;
	int64_t backoff = 100 * 1000000LL, due = 0, gap;
	bool warned = false;

	while (!watch_stopping(w)) {
		struct herd_err err = { 0, "" };
		bool all;
		int rc = watch_round(w, round_wait_ms(due), &all, &err);

		if (rc == -ECANCELED)
			break;
		if (rc < 0) {
			if (rc != -EAGAIN && !warned)
				log_warn("client: alloc %.8s: templates: services: %s", w->ar->id,
					 err.msg);
			warned = true;
			/* a wait that is over renders with the data there is */
			if (due && due <= now_unix_ns())
				due = rerender(w, false);
			if ((rc != -EAGAIN || all) && watch_sleep(w, backoff))
				break;
			if (rc != -EAGAIN || all)
				backoff = backoff * 2 > 2 * NS_PER_SEC ? 2 * NS_PER_SEC : backoff * 2;
			continue;
		}
		warned = false;
		backoff = 100 * 1000000LL;
		due = rerender(w, rc > 0);
		/* the index moves with every change of the cluster: at most a
		 * round per TMPL_MIN_GAP (less when a wait is over sooner) */
		gap = TMPL_MIN_GAP;
		if (due && due - now_unix_ns() < gap)
			gap = due - now_unix_ns();
		if (gap > 0 && watch_sleep(w, gap))
			break;
	}
	return NULL;
}
