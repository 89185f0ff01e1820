/* workload_identity: a task's own token (a task's identity { env file },
 * docs/jobspec.md "identity"; docs/teams.md, "Workload identity").
 *
 * The agent asks for one before each run of a task that has the block
 * (POST /v1/allocation/:id/identity {"task": NAME}, with its node token).
 * The server makes a random secret, keeps only its SHA-256 in the
 * allocation's record ("identities": {"<task>": hash}; a later run's token
 * replaces an earlier one) and answers "wi.<alloc id>.<task>.<secret>".
 * Presented as a token, it resolves (acl.c) while the allocation has not
 * ended into the rights of Nomad's workload identities: read and list of
 * the variables nomad/jobs, nomad/jobs/<job>, nomad/jobs/<job>/<group> and
 * nomad/jobs/<job>/<group>/<task> of the job's namespace, nothing else.
 * Nothing is stored apart from the allocation: the token goes with it
 * (garbage collection included), and every server of a PostgreSQL store
 * reads the same record. */
#include <errno.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"
#include "server/vars.h"

#define WI_PREFIX "wi."
#define WI_ATTEMPTS 5

static bool task_name_ok(const char *t)
{
	size_t n = t ? strlen(t) : 0;
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
		      (t[i] >= '0' && t[i] <= '9') || t[i] == '_' || t[i] == '-' || t[i] == '.'))
			return false;
	return true;
}

/* One try: 0 after answering, -ESTALE when the allocation changed
 * between the read and the commit, another -errno. */
static int mint_once(struct server *srv, const char *id, const char *task,
		     struct http_response *resp)
{
	struct store_key key = { NULL, id, 0 };
	struct store_batch b = STORE_BATCH_INIT;
	json_t *al = NULL, *ids;
	char secret[65], hash[65];
	int rc = store_get(srv->store, STORE_ALLOC, &key, &al, NULL);

	if (rc == -ENOENT)
		return http_error(resp, 404, "allocation_not_found", "no allocation %s", id);
	if (rc < 0)
		return rc;
	if (alloc_client_terminal(al) || strcmp(jstr(al, "desired_status", ""), "run")) {
		json_decref(al);
		return http_error(resp, 409, "allocation_ended",
				  "allocation %s has ended or is being stopped: no identity for it",
				  id);
	}
	if (!json_object_get(json_object_get(json_object_get(al, "resources"), "tasks"), task)) {
		json_decref(al);
		return http_error(resp, 404, "task_not_found", "allocation %s has no task %s", id,
				  task);
	}
	if ((rc = acl_new_secret(secret)) < 0) {
		json_decref(al);
		return rc;
	}
	acl_secret_hash(secret, hash);
	ids = json_object_get(al, "identities");
	ids = json_is_object(ids) ? json_copy(ids) : json_object();
	json_object_set_new(ids, task, json_string(hash));
	json_object_set_new(al, "identities", ids);
	store_batch_require_index(&b, STORE_ALLOC, &key, (uint64_t)jint(al, "modify_index", 0));
	/* the agent asked: put like a report, so that its watch is not sent
	 * the allocation again for it */
	store_batch_put_report(&b, STORE_ALLOC, al);
	rc = store_commit(srv->store, &b, NULL, NULL);
	store_batch_release(&b);
	if (rc == 0) {
		char *token = xasprintf(WI_PREFIX "%s.%s.%s", id, task, secret);
		http_reply(resp, 200, json_pack("{s:s}", "token", token));
		explicit_bzero(token, strlen(token));
		free(token);
	}
	explicit_bzero(secret, sizeof(secret));
	json_decref(al);
	return rc;
}

static int post_identity(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *id = http_param(req, "id");
	const char *task = json_string_value(json_object_get(req->body, "task"));
	int rc = -ESTALE;

	if (!json_is_object(req->body) || json_object_size(req->body) != 1 || !task_name_ok(task))
		return http_error(resp, 400, "invalid_argument",
				  "body must be {\"task\": \"<task name>\"}");
	if (!valid_id(id))
		return http_error(resp, 404, "allocation_not_found", "no allocation %s", id);
	for (int i = 0; i < WI_ATTEMPTS && rc == -ESTALE; i++)
		rc = mint_once(srv, id, task, resp);
	if (rc == -ESTALE)
		return http_error(resp, 409, "conflict", "allocation %s kept changing; try again", id);
	return rc;
}

/* Splits "wi.<alloc>.<task>.<secret>"; false when token is not one. */
static bool split_token(const char *token, char *alloc, size_t alen, char *task, size_t tlen,
			const char **secret)
{
	const char *a = token + strlen(WI_PREFIX), *dot = strchr(a, '.'), *last;
	if (strncmp(token, WI_PREFIX, strlen(WI_PREFIX)) || !dot ||
	    !(last = strrchr(dot + 1, '.')) || last == dot + 1 || strlen(last + 1) != 64 ||
	    (size_t)(dot - a) >= alen || (size_t)(last - dot - 1) >= tlen)
		return false;
	memcpy(alloc, a, (size_t)(dot - a));
	alloc[dot - a] = '\0';
	memcpy(task, dot + 1, (size_t)(last - dot - 1));
	task[last - dot - 1] = '\0';
	*secret = last + 1;
	return true;
}

json_t *workload_identity_vars(struct server *srv, const char *token)
{
	char alloc_id[64], task[130], hash[65], *base;
	const char *secret, *want, *ns, *job, *group;
	struct store_key key = { NULL, alloc_id, 0 };
	json_t *al = NULL, *paths, *out;
	unsigned rl = ACL_VAR_READ | ACL_VAR_LIST;

	if (!split_token(token, alloc_id, sizeof(alloc_id), task, sizeof(task), &secret) ||
	    !valid_id(alloc_id) || store_get(srv->store, STORE_ALLOC, &key, &al, NULL) < 0)
		return NULL;
	acl_secret_hash(secret, hash);
	want = jstr(json_object_get(al, "identities"), task, "");
	/* equal lengths (64 hex digits both): a constant-time compare */
	unsigned diff = strlen(want) != 64;
	for (size_t i = 0; i < 64 && !diff; i++)
		diff |= (unsigned)(want[i] ^ hash[i]);
	if (diff || alloc_client_terminal(al)) {
		json_decref(al);
		return NULL;
	}
	ns = jstr(al, "namespace", "default");
	job = jstr(al, "job_id", "");
	group = jstr(al, "task_group", "");
	paths = json_object();
	json_object_set_new(paths, "nomad/jobs", json_integer(rl));
	base = xasprintf("nomad/jobs/%s", job);
	json_object_set_new(paths, base, json_integer(rl));
	free(base);
	base = xasprintf("nomad/jobs/%s/%s", job, group);
	json_object_set_new(paths, base, json_integer(rl));
	free(base);
	base = xasprintf("nomad/jobs/%s/%s/%s", job, group, task);
	json_object_set_new(paths, base, json_integer(rl));
	free(base);
	out = json_object();
	json_object_set_new(out, ns, paths);
	json_decref(al);
	return out;
}

int routes_identity(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "POST", "/v1/allocation/:id/identity", post_identity, HTTP_ROUTE_BODY,
		  ACL_NEED_NODE_WRITE },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
