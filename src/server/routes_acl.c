/* routes_acl: bootstrap, policies and tokens (docs/teams.md, "ACL").
 *
 * A token's secret is 32 random bytes (getrandom) in hex, shown once, in
 * the answer that creates it; the store keeps only its SHA-256 (the record's
 * key) and a public accessor id that names the token in lists and deletes. */
#include <errno.h>
#include <string.h>

#include "server/acl.h"
#include "server/server-int.h"
#include "server/teams.h"

#define BOOTSTRAP_MARKER "bootstrap" /* never a hash: those are 64 hex digits */

/* The token as readers see it: no hash, no secret. */
static json_t *token_public(const json_t *rec)
{
	json_t *o = json_copy((json_t *)rec);
	json_object_del(o, "id");
	return o;
}

/* Answers a token just stored, with its secret (the only time it is shown). */
static void reply_secret(struct http_response *resp, uint64_t idx, const json_t *tok,
			 const char *secret)
{
	json_t *out = token_public(tok);
	json_object_set_new(out, "secret_id", json_string(secret));
	reply_written(resp, idx, out);
}

/* Makes a token record and its secret; the caller commits it. */
static json_t *token_new(const char *name, const char *type, json_t *policies, char secret[65],
			 struct herd_err *err)
{
	char hash[65], accessor[ID_LEN];
	int rc = acl_new_secret(secret);
	if (rc < 0) {
		herd_errf(err, rc, "cannot read random bytes: %s", strerror(-rc));
		return NULL;
	}
	acl_secret_hash(secret, hash);
	new_id(accessor);
	return json_pack("{s:s, s:s, s:s, s:s, s:O, s:I}", "id", hash, "accessor_id", accessor, "name", name,
			 "type", type, "policies", policies, "create_time", (json_int_t)now_ns());
}

static int post_bootstrap(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct store_key mk = { NULL, BOOTSTRAP_MARKER, 0 };
	struct store_batch b = STORE_BATCH_INIT;
	struct herd_err err = { 0 };
	char secret[65];
	json_t *tok, *marker, *pol = json_array();
	uint64_t idx = 0;
	int rc;

	(void)req;
	if (!srv->acl_enabled) {
		json_decref(pol);
		return http_error(resp, 400, "acl_disabled", "ACL is not enabled on this server (acl { enabled = true })");
	}
	tok = token_new("bootstrap", "management", pol, secret, &err);
	json_decref(pol);
	if (!tok)
		return -EIO;
	marker = json_pack("{s:s, s:s, s:I}", "id", BOOTSTRAP_MARKER, "type", "marker", "create_time",
			   (json_int_t)now_ns());
	store_batch_init(&b);
	store_batch_require_index(&b, STORE_ACL_TOKEN, &mk, 0); /* only once, ever */
	store_batch_put(&b, STORE_ACL_TOKEN, marker);
	store_batch_put(&b, STORE_ACL_TOKEN, tok);
	rc = store_commit(srv->store, &b, &idx, &err);
	store_batch_release(&b);
	json_decref(marker);
	if (rc == -ESTALE) {
		rc = http_error(resp, 409, "already_bootstrapped", "ACL was bootstrapped already");
	} else if (rc == 0) {
		reply_secret(resp, idx, tok, secret);
	}
	explicit_bzero(secret, sizeof(secret));
	json_decref(tok);
	return rc;
}

/* ---- policies ------------------------------------------------------------- */

static int post_policy(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *name = http_param(req, "name");
	const json_t *in = json_object_get(req->body, "policy");
	struct herd_err err = { 0 };
	json_t *rules, *rec;
	int rc;
	if (!json_is_object(in))
		in = req->body;
	if (!teams_valid_name(name))
		return http_error(resp, 400, "invalid_argument", "policy name must be 1..%d characters of A-Z a-z 0-9 _ . -",
				  TEAMS_MAX_NAME);
	if (strlen(jstr(in, "description", "")) > TEAMS_MAX_DESCRIPTION)
		return http_error(resp, 400, "invalid_argument", "description is too long");
	rules = acl_rules_check(json_object_get(in, "rules"), &err);
	if (!rules)
		return http_error(resp, 400, "invalid_policy", "%s", err.msg);
	rec = json_pack("{s:s, s:s, s:o}", "name", name, "description", jstr(in, "description", ""), "rules", rules);
	rc = named_put(srv, STORE_ACL_POLICY, "policy", rec, resp);
	json_decref(rec);
	return rc;
}

static int get_policies(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_reply_list(ctx, STORE_ACL_POLICY, req, resp, NULL);
}

static int get_policy(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_reply_get(ctx, STORE_ACL_POLICY, "policy", http_param(req, "name"), resp);
}

static int delete_policy(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_delete(ctx, STORE_ACL_POLICY, "policy", http_param(req, "name"), resp);
}

/* ---- tokens --------------------------------------------------------------- */

static int post_token(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const json_t *in = json_object_get(req->body, "token");
	const char *name, *type;
	json_t *pols, *p, *tok;
	struct herd_err err = { 0 };
	char secret[65];
	uint64_t idx = 0;
	size_t i;
	int rc;
	if (!json_is_object(in))
		in = req->body;
	name = jstr(in, "name", "");
	type = jstr(in, "type", "client");
	pols = json_object_get(in, "policies");
	if (strlen(name) > TEAMS_MAX_NAME)
		return http_error(resp, 400, "invalid_argument", "token name is longer than %d bytes", TEAMS_MAX_NAME);
	if (strcmp(type, "client") && strcmp(type, "management"))
		return http_error(resp, 400, "invalid_argument", "token type must be client or management");
	if (pols && (!json_is_array(pols) || json_array_size(pols) > TEAMS_MAX_POLICIES))
		return http_error(resp, 400, "invalid_argument", "policies must be an array of at most %d names",
				  TEAMS_MAX_POLICIES);
	if (!strcmp(type, "client") && json_array_size(pols) == 0)
		return http_error(resp, 400, "invalid_argument", "a client token needs at least one policy");
	json_array_foreach(pols, i, p) {
		struct store_key pk = { NULL, json_string_value(p), 0 };
		json_t *rec = NULL;
		if (!teams_valid_name(pk.id) || store_get(srv->store, STORE_ACL_POLICY, &pk, &rec, NULL) < 0)
			return http_error(resp, 400, "invalid_argument", "no policy %.128s",
					  pk.id ? pk.id : "(not a string)");
		json_decref(rec);
	}
	pols = pols ? json_incref(pols) : json_array();
	tok = token_new(name, type, pols, secret, &err);
	json_decref(pols);
	if (!tok)
		return -EIO;
	rc = store_put(srv->store, STORE_ACL_TOKEN, tok, &idx, &err);
	if (rc == 0)
		reply_secret(resp, idx, tok, secret);
	explicit_bzero(secret, sizeof(secret));
	json_decref(tok);
	return rc;
}

/* Tokens as lists show them: no marker, no hash. */
static json_t *token_listed(struct http_request *req, json_t *rec)
{
	(void)req;
	return strcmp(jstr(rec, "type", ""), "marker") ? token_public(rec) : NULL;
}

static int get_tokens(struct http_request *req, struct http_response *resp, void *ctx)
{
	return named_reply_list(ctx, STORE_ACL_TOKEN, req, resp, token_listed);
}

/* GET /v1/acl/token/self: the caller's own token. */
static int get_token_self(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	char hash[65];
	struct store_key k = { NULL, hash, 0 };
	json_t *rec = NULL;
	if (!srv->acl_enabled)
		return http_error(resp, 400, "acl_disabled", "ACL is not enabled on this server");
	acl_secret_hash(req->token ? req->token : "", hash);
	if (store_get(srv->store, STORE_ACL_TOKEN, &k, &rec, NULL) < 0)
		return acl_deny(resp);
	http_reply(resp, 200, token_public(rec));
	json_decref(rec);
	return 0;
}

static int delete_token(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	const char *accessor = http_param(req, "accessor");
	json_t *list = NULL, *x;
	uint64_t idx = 0;
	size_t i;
	int rc = store_list(srv->store, STORE_ACL_TOKEN, NULL, &list, NULL);
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	json_array_foreach(list, i, x) {
		if (strcmp(jstr(x, "type", ""), "marker") && !strcmp(jstr(x, "accessor_id", ""), accessor)) {
			struct store_key k = { NULL, jstr(x, "id", ""), 0 };
			rc = store_delete(srv->store, STORE_ACL_TOKEN, &k, &idx, NULL);
			break;
		}
	}
	json_decref(list);
	if (rc == -ENOENT)
		return http_error(resp, 404, "token_not_found", "no token with accessor id %.64s", accessor);
	if (rc < 0)
		return rc;
	return reply_written(resp, idx, NULL);
}

int routes_acl(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "POST", "/v1/acl/bootstrap", post_bootstrap, 0, ACL_NEED_NOTHING },
		{ "GET", "/v1/acl/policies", get_policies, 0, ACL_NEED_MANAGEMENT },
		{ "GET", "/v1/acl/policy/:name", get_policy, 0, ACL_NEED_MANAGEMENT },
		{ "POST", "/v1/acl/policy/:name", post_policy, HTTP_ROUTE_BODY, ACL_NEED_MANAGEMENT },
		{ "DELETE", "/v1/acl/policy/:name", delete_policy, 0, ACL_NEED_MANAGEMENT },
		{ "GET", "/v1/acl/tokens", get_tokens, 0, ACL_NEED_MANAGEMENT },
		{ "POST", "/v1/acl/tokens", post_token, HTTP_ROUTE_BODY, ACL_NEED_MANAGEMENT },
		{ "GET", "/v1/acl/token/self", get_token_self, 0, ACL_NEED_TOKEN },
		{ "DELETE", "/v1/acl/token/:accessor", delete_token, 0, ACL_NEED_MANAGEMENT },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
