/* task_identity: a task's workload identity (its identity { env file },
 * docs/jobspec.md "identity"): before each run the agent asks the server
 * for a fresh token (POST /v1/allocation/:id/identity; the server's side is
 * src/server/workload_identity.c), keeps it on the task runner for the
 * task's environment (HERD_TOKEN, NOMAD_TOKEN and the server's address as
 * HERD_ADDR, NOMAD_ADDR: task_prepare.c) and with `file` writes it to
 * secrets/herd_token (0600).  A template re-rendered meanwhile reuses the
 * run's token: a new one would make the running task's invalid. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agent/client-int.h"
#include "common/httpc.h"
#include "common/xalloc.h"

#define IDENTITY_FILE "secrets/herd_token"

static void forget(struct task_runner *tr)
{
	if (tr->wi_token) {
		explicit_bzero(tr->wi_token, strlen(tr->wi_token));
		free(tr->wi_token);
	}
	free(tr->wi_addr);
	tr->wi_token = tr->wi_addr = NULL;
}

/* Writes token to the task's secrets/herd_token, 0600, replaced whole. */
static int write_token_file(struct task_runner *tr, const char *token, struct herd_err *err)
{
	char *path = xasprintf("%s/" IDENTITY_FILE, tr->dir);
	char *tmp = xasprintf("%s.tmp", path);
	size_t n = strlen(token);
	int rc = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

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

int task_identity_refresh(struct task_runner *tr, struct herd_err *err)
{
	const struct job_identity *id = tr->task->identity;
	struct client *c = tr->ar->c;
	struct httpc h;
	struct httpc_response r = { 0 };
	char *path;
	json_t *body;
	int rc;

	forget(tr);
	if (!id || (!id->env && !id->file))
		return 0;
	path = xasprintf("/v1/allocation/%s/identity", tr->ar->id);
	body = json_pack("{s:s}", "task", tr->task->name);
	client_httpc_take(c, &h);
	h.timeout_ms = 10000;
	rc = httpc_request(&h, "POST", path, body, &r, err);
	if (rc == 0 && !json_is_string(json_object_get(r.body, "token")))
		rc = herd_errf(err, -EPROTO, "workload identity: the server's answer has no token");
	if (rc == 0) {
		tr->wi_token = xstrdup(json_string_value(json_object_get(r.body, "token")));
		tr->wi_addr = xstrdup(h.base);
	}
	httpc_response_release(&r);
	client_httpc_give(c, &h);
	json_decref(body);
	free(path);
	if (rc < 0)
		return herd_errf(err, rc, "workload identity: %s", err->msg);
	if (id->file && (rc = write_token_file(tr, tr->wi_token, err)) < 0)
		return rc;
	if (!id->env) /* only in the file: not in the environment */
		forget(tr);
	return 0;
}

void task_identity_release(struct task_runner *tr)
{
	forget(tr);
}
