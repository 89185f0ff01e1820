/* task_identity: a task's workload identities (its identity blocks,
 * docs/jobspec.md "identity"): before each run the agent asks the server
 * for a fresh signed token of each identity with env or file (POST
 * /v1/allocation/:id/identity; the server's side is
 * src/server/workload_identity.c) and keeps them on the task runner for
 * the task's environment (task_prepare.c: HERD_TOKEN, NOMAD_TOKEN and the
 * server's address as HERD_ADDR, NOMAD_ADDR for the default identity;
 * HERD_TOKEN_<name>, NOMAD_TOKEN_<name> for a named one) and, with `file`,
 * writes them to secrets/herd_token and secrets/nomad_token
 * (secrets/herd_token_<name>, secrets/nomad_token_<name>), 0600, replaced
 * whole (a temporary file renamed over it).
 *
 * Renewal.  A token with a ttl is renewed at half its life (the server's
 * issued_at and expires_at, measured on the agent's clock from the
 * answer): task_identity_poll, called from the task's wait loop, asks for
 * a new one, rewrites the files and carries out the identity's change_mode
 * (noop; signal: change_signal to the task; restart: the task restarts,
 * as `herd alloc restart`).  A failed renewal is tried again after 5 s,
 * doubling to 60 s, while the old token lasts and after.  The environment
 * of a running task cannot change: an env-only token with a ttl expires
 * unless change_mode is restart (the docs say so).
 *
 * A task the agent recovered running after a restart of its own has no
 * tokens on this agent: its tokens with a ttl and a file are renewed at
 * once (task_identity_recovered), so that they do not run out; their
 * change_mode is carried out, but for a restart (the task's token from
 * before is still valid: restarting a task for an agent's restart would
 * be worse).
 *
 * Everything here runs on the task runner's thread (its prepare, its wait
 * loop, the environment built for it), so tr->wi needs no lock.
 *
 * A template re-rendered meanwhile reuses the run's tokens. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "common/httpc.h"
#include "common/xalloc.h"

#define RETRY_MIN_NS (5 * 1000000000LL)
#define RETRY_MAX_NS (60 * 1000000000LL)

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void forget_token(struct task_wi *w)
{
	if (w->token) {
		explicit_bzero(w->token, strlen(w->token));
		free(w->token);
	}
	w->token = NULL;
}

static void forget(struct task_runner *tr)
{
	for (size_t i = 0; i < tr->nwi; i++)
		forget_token(&tr->wi[i]);
	free(tr->wi);
	free(tr->wi_addr);
	tr->wi = NULL;
	tr->nwi = 0;
	tr->wi_addr = NULL;
}

/* Writes token to the task's secrets/<prefix>[_<name>], 0600, replaced
 * whole. */
static int write_one(struct task_runner *tr, const char *prefix, const char *name,
		     const char *token, struct herd_err *err)
{
	char *path = name ? xasprintf("%s/secrets/%s_%s", tr->dir, prefix, name)
			  : xasprintf("%s/secrets/%s", tr->dir, prefix);
	char *tmp = xasprintf("%s.tmp", path);
	size_t n = strlen(token);
	int rc = 0, fd;

	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, token, n) != (ssize_t)n || rename(tmp, path) < 0)
		rc = herd_errf(err, -errno, "workload identity: writing %s: %s", path,
			       strerror(errno));
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	free(path);
	return rc;
}

static int write_files(struct task_runner *tr, const struct task_wi *w, struct herd_err *err)
{
	int rc;
	if (!w->id->file)
		return 0;
	if ((rc = write_one(tr, "herd_token", w->id->name, w->token, err)) < 0)
		return rc;
	return write_one(tr, "nomad_token", w->id->name, w->token, err);
}

/* A new token for w from the server: w->token and its renewal time on
 * success (w unchanged on failure). */
static int fetch(struct task_runner *tr, struct task_wi *w, int timeout_ms, struct herd_err *err)
{
	struct herd_err why = { 0, "" };
	struct client *c = tr->ar->c;
	struct httpc h;
	struct httpc_response r = { 0 };
	char *path = xasprintf("/v1/allocation/%s/identity", tr->ar->id);
	json_t *body = json_pack("{s:s}", "task", tr->task->name), *tok;
	int64_t asked = wall_ns();
	int rc;

	if (w->id->name)
		json_object_set_new(body, "identity", json_string(w->id->name));
	client_httpc_take(c, &h);
	h.timeout_ms = timeout_ms;
	rc = httpc_request(&h, "POST", path, body, &r, &why);
	tok = json_object_get(r.body, "token");
	if (rc == 0 && !json_is_string(tok))
		rc = herd_errf(&why, -EPROTO, "the server's answer has no token");
	if (rc == 0) {
		int64_t iat = json_integer_value(json_object_get(r.body, "issued_at"));
		json_t *exp = json_object_get(r.body, "expires_at");
		forget_token(w);
		w->token = xstrdup(json_string_value(tok));
		/* half its life, on this clock: the two clocks may differ */
		w->renew_at = json_is_integer(exp) && json_integer_value(exp) > iat
				      ? asked + (json_integer_value(exp) - iat) * 500000000LL
				      : 0;
		w->retry_ns = 0;
		if (!tr->wi_addr)
			tr->wi_addr = xstrdup(h.base);
	}
	httpc_response_release(&r);
	client_httpc_give(c, &h);
	json_decref(body);
	free(path);
	if (rc < 0)
		return herd_errf(err, rc, "workload identity %s: %s",
				 w->id->name ? w->id->name : "default", why.msg);
	return 0;
}

/* tr->wi: the task's identities that want(id); none fetched yet. */
static void list_identities(struct task_runner *tr, bool (*want)(const struct job_identity *))
{
	const struct job_task *t = tr->task;
	size_t n = 0;

	forget(tr);
	tr->wi = xcalloc(t->nidentities + 1, sizeof(*tr->wi));
	if (t->identity && want(t->identity))
		tr->wi[n++].id = t->identity;
	for (size_t i = 0; i < t->nidentities; i++)
		if (want(&t->identities[i]))
			tr->wi[n++].id = &t->identities[i];
	tr->nwi = n;
}

static bool has_token(const struct job_identity *id)
{
	return id->env || id->file;
}

static bool renewed_in_file(const struct job_identity *id)
{
	return id->file && id->ttl > 0;
}

void task_identity_recovered(struct task_runner *tr)
{
	list_identities(tr, renewed_in_file);
	for (size_t i = 0; i < tr->nwi; i++) {
		tr->wi[i].renew_at = 1; /* at the next poll */
		tr->wi[i].recovered = true;
	}
}

int task_identity_refresh(struct task_runner *tr, struct herd_err *err)
{
	size_t n;
	int rc;

	list_identities(tr, has_token);
	n = tr->nwi;
	for (size_t i = 0; i < n; i++)
		if ((rc = fetch(tr, &tr->wi[i], 10000, err)) < 0 ||
		    (rc = write_files(tr, &tr->wi[i], err)) < 0) {
			forget(tr);
			return rc;
		}
	return 0;
}

const char *task_identity_token(const struct task_runner *tr, size_t i, const char **name)
{
	if (i >= tr->nwi || !tr->wi[i].id->env || !tr->wi[i].token)
		return NULL;
	*name = tr->wi[i].id->name;
	return tr->wi[i].token;
}

/* One renewal of w: its change_mode carried out; true when the task is
 * to restart. */
static bool renew(struct task_runner *tr, struct task_wi *w, const struct driver_ops *d)
{
	const char *name = w->id->name ? w->id->name : "default";
	const char *mode = w->id->change_mode ? w->id->change_mode : "noop";
	struct herd_err err = { 0, "" };
	int rc;

	/* a short wait: the task's loop is waiting on this */
	if ((rc = fetch(tr, w, 5000, &err)) == 0)
		rc = write_files(tr, w, &err);
	if (rc < 0) {
		w->retry_ns = w->retry_ns ? w->retry_ns * 2 : RETRY_MIN_NS;
		if (w->retry_ns > RETRY_MAX_NS)
			w->retry_ns = RETRY_MAX_NS;
		w->renew_at = wall_ns() + w->retry_ns;
		task_event(tr, "Identity Renewal Failed", "%s (trying again in %llds)", err.msg,
			   (long long)(w->retry_ns / 1000000000LL));
		return false;
	}
	if (w->recovered) { /* renewed for a task recovered running: no restart for it */
		w->recovered = false;
		if (!strcmp(mode, "restart"))
			return false;
	}
	if (!strcmp(mode, "restart")) {
		task_event(tr, "Restart Signaled", "workload identity %s renewed", name);
		return true;
	}
	if (!strcmp(mode, "signal") && w->id->change_signal) {
		int sig = driver_signal_parse(w->id->change_signal);
		rc = sig > 0 && tr->handle ? d->signal(tr->handle, sig) : -ESRCH;
		if (rc == 0)
			task_event(tr, "Signaling", "workload identity %s renewed: sent %s", name,
				   w->id->change_signal);
		else
			task_event(tr, "Signaling", "workload identity %s renewed: %s could not be "
				   "sent: %s", name, w->id->change_signal, strerror(-rc));
	}
	return false;
}

bool task_identity_poll(struct task_runner *tr, const struct driver_ops *d)
{
	int64_t now;
	bool restart = false;

	if (!tr->nwi)
		return false;
	now = wall_ns();
	for (size_t i = 0; i < tr->nwi && !restart; i++)
		if (tr->wi[i].renew_at && now >= tr->wi[i].renew_at)
			restart = renew(tr, &tr->wi[i], d);
	return restart;
}

void task_identity_release(struct task_runner *tr)
{
	forget(tr);
}
