/* workload_identity: a task's own tokens (a task's identity blocks,
 * docs/jobspec.md "identity"; docs/teams.md, "Workload identity").
 *
 * The agent asks for one before each run of a task that has an identity
 * with env or file, and again to renew one with a ttl (POST
 * /v1/allocation/:id/identity {"task": NAME[, "identity": NAME]}, with its
 * node token).  The server answers a JWT signed with the active keyring
 * key's RSA key (jwt_keys.h): iss, sub "<region>:<ns>:<job>:<group>:<task>:
 * <identity>", aud (the identity's), iat, nbf, exp (with a ttl), jti, and
 * herd_* and nomad_* claims naming the allocation.  What the identity asks
 * (aud, ttl) is read from the allocation's job version, never from the
 * agent.  Nothing is stored: a token is checked by its signature.
 *
 * Presented to herd as a token, the "default" identity's resolves (acl.c),
 * while its allocation has not ended (a stopped allocation's token stops
 * working at once, signature or not), into the rights of Nomad's workload
 * identities: read and list of the variables nomad/jobs,
 * nomad/jobs/<job>, nomad/jobs/<job>/<group> and nomad/jobs/<job>/<group>/
 * <task> of the job's namespace, nothing else.  A named identity's token
 * is for services outside herd and reads nothing here.
 *
 * The previous build's opaque tokens ("wi.<alloc>.<task>.<secret>", whose
 * SHA-256 the allocation keeps under "identities") still resolve the same
 * way, so that tasks started before an upgrade keep their access; their
 * next run gets a JWT. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/jwt.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"
#include "server/vars.h"

#define WI_PREFIX "wi."

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

/* The identity block named name ("default": the unnamed one) of task in
 * group of a stored job version; NULL when the task has none such. */
static const json_t *find_identity(const json_t *job, const char *group, const char *task,
				   const char *name)
{
	const json_t *g, *t, *id;
	size_t gi, ti, ii;
	json_array_foreach(json_object_get(job, "groups"), gi, g) {
		if (strcmp(jstr(g, "name", ""), group))
			continue;
		json_array_foreach(json_object_get(g, "tasks"), ti, t) {
			if (strcmp(jstr(t, "name", ""), task))
				continue;
			if (!strcmp(name, "default"))
				return json_object_get(t, "identity");
			json_array_foreach(json_object_get(t, "identities"), ii, id)
				if (!strcmp(jstr(id, "name", ""), name))
					return id;
			return NULL;
		}
	}
	return NULL;
}

/* The claims of identity id (the job's block) of task in allocation al, at
 * now (unix s). */
static json_t *make_claims(struct server *srv, const json_t *al, const json_t *id,
			   const char *task, const char *name, int64_t now)
{
	const char *ns = jstr(al, "namespace", "default"), *job = jstr(al, "job_id", ""),
		   *group = jstr(al, "task_group", ""), *alloc = jstr(al, "id", "");
	char *iss = oidc_issuer(srv);
	char *sub = xasprintf("%s:%s:%s:%s:%s:%s", srv->region, ns, job, group, task, name);
	char jti[65];
	json_t *c, *aud = json_object_get(id, "aud");
	int64_t ttl_s = jint(id, "ttl", 0) / 1000000000;

	if (acl_new_secret(jti) < 0)   /* getrandom fails only without entropy */
		snprintf(jti, sizeof(jti), "%llx", (unsigned long long)now);
	jti[32] = '\0';
	c = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
		      "iss", iss, "sub", sub, "iat", (json_int_t)now, "nbf", (json_int_t)now, "jti",
		      jti, "herd_namespace", ns, "herd_job_id", job, "herd_group", group,
		      "herd_task", task, "herd_allocation_id", alloc, "herd_node_id",
		      jstr(al, "node_id", ""), "nomad_namespace", ns, "nomad_job_id", job,
		      "nomad_allocation_id", alloc, "nomad_task", task);
	if (json_array_size(aud) > 0)
		json_object_set(c, "aud", aud);
	if (ttl_s > 0)
		json_object_set_new(c, "exp", json_integer(now + ttl_s));
	free(sub);
	free(iss);
	return c;
}

static int post_identity(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct herd_err err = { 0, "" };
	const char *id = http_param(req, "id");
	const char *task = json_string_value(json_object_get(req->body, "task"));
	const char *name = json_string_value(json_object_get(req->body, "identity"));
	struct store_key key = { NULL, id, 0 };
	json_t *al = NULL, *job = NULL, *claims;
	const json_t *block;
	char *token = NULL;
	int64_t now = (int64_t)time(NULL);
	int rc;

	if (!json_is_object(req->body) ||
	    json_object_size(req->body) != 1 + (json_object_get(req->body, "identity") != NULL) ||
	    !task_name_ok(task) || (json_object_get(req->body, "identity") && !task_name_ok(name)))
		return http_error(resp, 400, "invalid_argument",
				  "body must be {\"task\": \"<task name>\"[, \"identity\": "
				  "\"<identity name>\"]}");
	if (!name)
		name = "default";
	if (!valid_id(id))
		return http_error(resp, 404, "allocation_not_found", "no allocation %s", id);
	rc = store_get(srv->store, STORE_ALLOC, &key, &al, NULL);
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
	struct store_key jk = { jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
				jint(al, "job_version", 0) };
	if ((rc = store_get_shared(srv->store, STORE_JOB_VERSION, &jk, &job, NULL)) < 0) {
		json_decref(al);
		return rc == -ENOENT ? http_error(resp, 404, "job_not_found",
						  "allocation %s's job version is gone", id)
				     : rc;
	}
	block = find_identity(job, jstr(al, "task_group", ""), task, name);
	if (!block) {
		json_decref(job);
		json_decref(al);
		return http_error(resp, 404, "identity_not_found",
				  "task %s of allocation %s has no identity %s", task, id, name);
	}
	claims = make_claims(srv, al, block, task, name, now);
	rc = jwt_keys_sign(&srv->jwt_keys, claims, &token, &err);
	if (rc == 0) {
		json_t *out = json_pack("{s:s, s:I}", "token", token, "issued_at", (json_int_t)now);
		if (json_object_get(claims, "exp"))
			json_object_set(out, "expires_at", json_object_get(claims, "exp"));
		http_reply(resp, 200, out);
		free(token);
	} else {
		server_log(srv, "error", "workload identity: %s", err.msg);
	}
	json_decref(claims);
	json_decref(job);
	json_decref(al);
	return rc;
}

/* Splits "wi.<alloc>.<task>.<secret>"; false when token is not one. */
static bool split_token(const char *token, char *alloc, size_t alen, char *task, size_t tlen,
			const char **secret)
{
	const char *a, *dot, *last;
	/* the prefix first: a shorter token has nothing past it to read */
	if (strncmp(token, WI_PREFIX, strlen(WI_PREFIX)))
		return false;
	a = token + strlen(WI_PREFIX);
	if (!(dot = strchr(a, '.')) || !(last = strrchr(dot + 1, '.')) || last == dot + 1 ||
	    strlen(last + 1) != 64 || (size_t)(dot - a) >= alen || (size_t)(last - dot - 1) >= tlen)
		return false;
	memcpy(alloc, a, (size_t)(dot - a));
	alloc[dot - a] = '\0';
	memcpy(task, dot + 1, (size_t)(last - dot - 1));
	task[last - dot - 1] = '\0';
	*secret = last + 1;
	return true;
}

/* What a workload identity of task in allocation al may read: its job's
 * variables (see the top of this file). */
static json_t *variables_rights(const json_t *al, const char *task)
{
	const char *ns = jstr(al, "namespace", "default"), *job = jstr(al, "job_id", ""),
		   *group = jstr(al, "task_group", "");
	unsigned rl = ACL_VAR_READ | ACL_VAR_LIST;
	json_t *paths = json_object(), *out = json_object();
	char *base;

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
	json_object_set_new(out, ns, paths);
	return out;
}

/* The previous build's opaque token: its allocation when the hash it
 * keeps for task is the token's (a new reference), else NULL. */
static json_t *legacy_token_alloc(struct server *srv, const char *token, char task[130])
{
	char alloc_id[64], hash[65];
	const char *secret, *want;
	struct store_key key = { NULL, alloc_id, 0 };
	json_t *al = NULL;

	if (!split_token(token, alloc_id, sizeof(alloc_id), task, 130, &secret) ||
	    !valid_id(alloc_id) || store_get(srv->store, STORE_ALLOC, &key, &al, NULL) < 0)
		return NULL;
	acl_secret_hash(secret, hash);
	want = jstr(json_object_get(al, "identities"), task, "");
	/* equal lengths (64 hex digits both): a constant-time compare */
	unsigned diff = strlen(want) != 64;
	for (size_t i = 0; i < 64 && !diff; i++)
		diff |= (unsigned)(want[i] ^ hash[i]);
	if (diff) {
		json_decref(al);
		return NULL;
	}
	return al;
}

/* A signed token's allocation when it verifies, is the "default" identity
 * and names its allocation consistently (a new reference), else NULL. */
static json_t *jwt_token_alloc(struct server *srv, const char *token, char task[130])
{
	json_t *claims = NULL, *al = NULL;
	const char *sub, *alloc_id, *t;
	size_t n;

	if (jwt_keys_verify(&srv->jwt_keys, token, (int64_t)time(NULL), &claims, NULL) < 0)
		return NULL;
	sub = jstr(claims, "sub", "");
	n = strlen(sub);
	alloc_id = jstr(claims, "herd_allocation_id", "");
	t = jstr(claims, "herd_task", "");
	/* only the default identity reads variables: sub ends ":default" */
	if (n > 8 && !strcmp(sub + n - 8, ":default") && valid_id(alloc_id) && task_name_ok(t)) {
		struct store_key key = { NULL, alloc_id, 0 };
		if (store_get(srv->store, STORE_ALLOC, &key, &al, NULL) == 0 &&
		    (strcmp(jstr(al, "namespace", "default"), jstr(claims, "herd_namespace", "")) ||
		     strcmp(jstr(al, "job_id", ""), jstr(claims, "herd_job_id", "")))) {
			json_decref(al);
			al = NULL;
		}
		snprintf(task, 130, "%s", t);
	}
	json_decref(claims);
	return al;
}

json_t *workload_identity_vars(struct server *srv, const char *token)
{
	char task[130] = "";
	json_t *al = !strncmp(token, WI_PREFIX, strlen(WI_PREFIX))
			     ? legacy_token_alloc(srv, token, task)
			     : jwt_token_alloc(srv, token, task);
	json_t *out = NULL;

	/* an allocation that ended takes its tokens with it, at once */
	if (al && !alloc_client_terminal(al))
		out = variables_rights(al, task);
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
