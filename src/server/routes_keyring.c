/* routes_keyring: the variables' keys (docs/api.md, "Variables: keyring";
 * docs/operations.md, "Variables: the encryption key").  Management only.
 *
 *   GET    /v1/operator/keyring/keys       the ring, with the variables
 *                                          sealed with each key
 *   POST   /v1/operator/keyring/rotate     a new active key, then every
 *                                          variable re-sealed with it
 *   POST   /v1/operator/keyring/reseal     the re-sealing alone (after a
 *                                          rotation a crash cut short)
 *   DELETE /v1/operator/keyring/key/:id    a retired key no variable uses
 *
 * Each key has a token signing key derived from it (jwt_keys.h): the new
 * key's signs from the rotation on, a removed key's is forgotten with it.
 *
 * Re-sealing writes each variable again, items unchanged (times kept), on
 * condition that it did not change since it was read: a put meanwhile was
 * sealed with the active key already.  Its modify_index moves, like any
 * write (a check-and-set that read it before gets 409). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "server/acl.h"
#include "server/server-int.h"
#include "server/vars_keyring.h"

/* Each variable's key_id counted: {"<id>": n}. */
static json_t *count_by_key(const json_t *vars)
{
	json_t *counts = json_object(), *v;
	size_t i;
	json_array_foreach(vars, i, v) {
		const char *kid = jstr(json_object_get(v, "items_sealed"), "key_id", "");
		json_object_set_new(counts, kid, json_integer(jint(counts, kid, 0) + 1));
	}
	return counts;
}

/* One variable sealed again with the active key: 1 written, 0 nothing to
 * do (already so, or gone), -ESTALE when it kept changing, -EBADMSG with
 * err when it does not open, another -errno. */
static int reseal_one(struct server *srv, const json_t *var, const char *active,
		      struct herd_err *err)
{
	struct store_key k = { jstr(var, "namespace", ""), jstr(var, "path", ""), 0 };
	json_t *cur = json_incref((json_t *)var);
	int rc = -ESTALE;

	for (int attempt = 0; attempt < 4 && rc == -ESTALE; attempt++) {
		struct store_batch b = STORE_BATCH_INIT;
		json_t *items, *sealed, *rec;
		if (attempt > 0) {
			json_decref(cur);
			cur = NULL;
			rc = store_get(srv->store, STORE_VAR, &k, &cur, err);
			if (rc == -ENOENT)
				return 0;
			if (rc < 0)
				return rc;
		}
		if (!strcmp(jstr(json_object_get(cur, "items_sealed"), "key_id", ""), active)) {
			rc = 0;
			break;
		}
		items = vars_keyring_unseal(&srv->vars_ring, k.ns, k.id,
					    json_object_get(cur, "items_sealed"), err);
		if (!items) {
			rc = -EBADMSG;
			break;
		}
		sealed = vars_keyring_seal(&srv->vars_ring, k.ns, k.id, items, err);
		json_decref(items);
		if (!sealed) {
			rc = -EIO;
			break;
		}
		rec = json_copy(cur);
		json_object_del(rec, "create_index");
		json_object_del(rec, "modify_index");
		json_object_set_new(rec, "items_sealed", sealed);
		store_batch_require_index(&b, STORE_VAR, &k, (uint64_t)jint(cur, "modify_index", 0));
		store_batch_put(&b, STORE_VAR, rec);
		rc = store_commit(srv->store, &b, NULL, err);
		store_batch_release(&b);
		json_decref(rec);
		if (rc == 0)
			rc = 1;
	}
	json_decref(cur);
	return rc;
}

/* Every variable not under the active key re-sealed; the answer's counts
 * into out: resealed, and unreadable [{namespace, path, error}]. */
static int reseal_all(struct server *srv, json_t *out)
{
	char active[VARS_KEY_ID_LEN + 1];
	json_t *vars = NULL, *bad = json_array(), *v;
	int64_t done = 0;
	size_t i;
	int rc;

	vars_keyring_active(&srv->vars_ring, active);
	if ((rc = store_list_shared(srv->store, STORE_VAR, NULL, &vars, NULL)) < 0) {
		json_decref(bad);
		return rc;
	}
	json_array_foreach(vars, i, v) {
		struct herd_err err = { 0, "" };
		int r = reseal_one(srv, v, active, &err);
		if (r == 1)
			done++;
		else if (r == -EBADMSG || r == -ESTALE || r == -EIO)
			json_array_append_new(bad, json_pack("{s:s, s:s, s:s}", "namespace",
							     jstr(v, "namespace", ""), "path",
							     jstr(v, "path", ""), "error",
							     r == -ESTALE ? "it kept changing; run "
									    "the reseal again"
									  : err.msg));
		else if (r < 0) {
			rc = r;
			break;
		}
	}
	json_decref(vars);
	json_object_set_new(out, "key_id", json_string(active));
	json_object_set_new(out, "resealed", json_integer(done));
	json_object_set_new(out, "unreadable", bad);
	return rc;
}

/* The variables under keys the ring does not hold (a restore without its
 * key file, a standby with another key): [{"key_id", "variables"}]. */
static json_t *missing_keys(const json_t *counts, const json_t *keys)
{
	json_t *missing = json_array(), *n, *x;
	const char *kid;
	json_object_foreach((json_t *)counts, kid, n) {
		bool held = false;
		size_t j;
		json_array_foreach(keys, j, x)
			held = held || !strcmp(jstr(x, "key_id", ""), kid);
		if (!held)
			json_array_append_new(missing,
					      json_pack("{s:s, s:O}", "key_id", kid, "variables", n));
	}
	return missing;
}

static int get_keys(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *vars = NULL, *keys, *counts, *k;
	size_t i;
	int rc;

	(void)req;
	if ((rc = store_list_shared(srv->store, STORE_VAR, NULL, &vars, NULL)) < 0)
		return rc;
	counts = count_by_key(vars);
	keys = vars_keyring_list(&srv->vars_ring);
	json_array_foreach(keys, i, k)
		json_object_set_new(k, "variables",
				    json_integer(jint(counts, jstr(k, "key_id", ""), 0)));
	http_reply(resp, 200, json_pack("{s:o, s:o}", "keys", keys, "missing",
					missing_keys(counts, keys)));
	json_decref(counts);
	json_decref(vars);
	return 0;
}

static int post_rotate(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct herd_err err = { 0, "" };
	char old_id[VARS_KEY_ID_LEN + 1], new_id[VARS_KEY_ID_LEN + 1];
	json_t *out;
	int rc;

	(void)req;
	if (vars_keyring_rotate(&srv->vars_ring, old_id, new_id, &err) < 0)
		return http_error(resp, 500, "keyring_failed", "%s", err.msg);
	out = json_pack("{s:s}", "previous_key_id", old_id);
	if ((rc = reseal_all(srv, out)) < 0) {
		json_decref(out);
		return rc;
	}
	http_reply(resp, 200, out);
	return 0;
}

static int post_reseal(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	json_t *out = json_object();
	int rc;

	(void)req;
	if ((rc = reseal_all(srv, out)) < 0) {
		json_decref(out);
		return rc;
	}
	http_reply(resp, 200, out);
	return 0;
}

static int delete_key(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct herd_err err = { 0, "" };
	const char *id = http_param(req, "id");
	json_t *vars = NULL, *counts;
	int64_t used;
	int rc;

	/* the ring's answer first (unknown, active), then the variables' */
	json_t *keys = vars_keyring_list(&srv->vars_ring), *k = NULL;
	size_t i;
	json_array_foreach(keys, i, k)
		if (!strcmp(jstr(k, "key_id", ""), id))
			break;
	bool known = i < json_array_size(keys), active = known && jbool(k, "active", false);
	json_decref(keys);
	if (!known)
		return http_error(resp, 404, "key_not_found", "the keyring holds no key %s", id);
	if (active)
		return http_error(resp, 409, "key_active",
				  "key %s is the active key; rotate first", id);
	if ((rc = store_list_shared(srv->store, STORE_VAR, NULL, &vars, NULL)) < 0)
		return rc;
	counts = count_by_key(vars);
	used = jint(counts, id, 0);
	json_decref(counts);
	json_decref(vars);
	if (used > 0)
		return http_error(resp, 409, "key_in_use",
				  "%lld variable%s still sealed with key %s: reseal first "
				  "(herd operator keyring reseal)", (long long)used,
				  used == 1 ? " is" : "s are", id);
	rc = vars_keyring_remove(&srv->vars_ring, id, &err);
	if (rc == -ENOENT)
		return http_error(resp, 404, "key_not_found", "%s", err.msg);
	if (rc == -EBUSY)
		return http_error(resp, 409, "key_active", "%s", err.msg);
	if (rc < 0)
		return http_error(resp, 500, "keyring_failed", "%s", err.msg);
	/* its token signing key goes with it: tokens it signed stop verifying */
	jwt_keys_forget(&srv->jwt_keys, id);
	http_reply(resp, 200, json_pack("{s:s}", "removed", id));
	return 0;
}

int routes_keyring(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/v1/operator/keyring/keys", get_keys, 0, ACL_NEED_MANAGEMENT },
		{ "POST", "/v1/operator/keyring/rotate", post_rotate, 0, ACL_NEED_MANAGEMENT },
		{ "POST", "/v1/operator/keyring/reseal", post_reseal, 0, ACL_NEED_MANAGEMENT },
		{ "DELETE", "/v1/operator/keyring/key/:id", delete_key, 0, ACL_NEED_MANAGEMENT },
	};
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
