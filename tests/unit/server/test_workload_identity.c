/* workload_identity: the tokens POST /v1/allocation/:id/identity signs, what
 * they read while their allocation runs and after it ended, what the
 * endpoint refuses, and the upgrade: the previous build's opaque token
 * ("wi.<alloc>.<task>.<secret>", its hash kept in the allocation) of a task
 * still running keeps its access. */
#include "server_fx.h"

#include <errno.h>

#include "common/base64.h"
#include "server/acl.h"
#include "server/server-int.h"

#define JOB "{\"job\": {\"id\": \"train\", \"groups\": [{\"name\": \"g\", \"count\": 1," \
	" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": " \
	"\"/bin/true\"}, \"resources\": {\"cpu\": 100, \"memory\": 64}, \"identity\": {" \
	"\"env\": true}, \"identities\": [{\"name\": \"vault\", \"aud\": [\"vault.io\"], " \
	"\"file\": true, \"ttl\": \"1h\"}]}]}]}}"

/* What the previous build did for a token: the secret's hash in the
 * allocation's record, under "identities". */
static void store_legacy_hash(struct fx *f, const char *alloc_id, const char *secret)
{
	struct store_key k = { NULL, alloc_id, 0 };
	struct store_batch b = STORE_BATCH_INIT;
	json_t *al = NULL;
	char hash[65];

	assert_int_equal(store_get(f->srv->store, STORE_ALLOC, &k, &al, NULL), 0);
	acl_secret_hash(secret, hash);
	json_object_set_new(al, "identities", json_pack("{s:s}", "t", hash));
	store_batch_require_index(&b, STORE_ALLOC, &k, (uint64_t)json_integer_value(
								 json_object_get(al, "modify_index")));
	store_batch_put_report(&b, STORE_ALLOC, al);
	assert_int_equal(store_commit(f->srv->store, &b, NULL, NULL), 0);
	store_batch_release(&b);
	json_decref(al);
}

/* The claims of a token (not verified: the e2e tests verify them as a
 * service outside herd does). */
static json_t *claims_of(const char *token)
{
	const char *a = strchr(token, '.') + 1, *b = strchr(a, '.');
	size_t n;
	unsigned char *raw = base64url_decode(a, (size_t)(b - a), &n);
	json_t *c;
	assert_non_null(raw);
	c = json_loadb((const char *)raw, n, 0, NULL);
	free(raw);
	assert_non_null(c);
	return c;
}

static long read_var(struct fx *f, const char *token)
{
	const char *keep = f->token;
	long st;
	f->token = token;
	st = fx_status(f, "GET", "/v1/var/nomad/jobs/train", NULL);
	f->token = keep;
	return st;
}

static void test_tokens_and_the_upgrade(void **state)
{
	struct fx *f = fx_new_teams(0, 1);
	static const char secret[] =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char path[256], *mgmt, *legacy, *eval, *token, *vault;
	json_t *r, *al;
	long st;
	(void)state;

	r = fx_ok(f, "POST", "/v1/acl/bootstrap", NULL);
	mgmt = strdup(json_string_value(json_object_get(r, "secret_id")));
	json_decref(r);
	f->token = mgmt;
	node_add(f, "n1", 1, "T4");
	eval = fx_submit_text(f, JOB);
	free(eval);
	fx_idle(f);
	al = fx_the_alloc(f, "train");
	json_decref(fx_ok(f, "PUT", "/v1/var/nomad/jobs/train", "{\"items\": {\"lr\": \"0.1\"}}"));

	/* the endpoint: a JWT per identity the task has, none for others */
	snprintf(path, sizeof(path), "/v1/allocation/%s/identity", fx_s(al, "id"));
	r = fx_ok(f, "POST", path, "{\"task\": \"t\"}");
	token = strdup(fx_s(r, "token"));
	assert_true(!strncmp(token, "eyJ", 3));
	assert_null(json_object_get(r, "expires_at"));
	json_decref(r);
	r = fx_ok(f, "POST", path, "{\"task\": \"t\", \"identity\": \"vault\"}");
	vault = strdup(fx_s(r, "token"));
	assert_int_equal(fx_i(r, "expires_at") - fx_i(r, "issued_at"), 3600);
	json_decref(r);
	/* the claims: the allocation's, from the job's blocks */
	json_t *c = claims_of(token);
	assert_string_equal(fx_s(c, "sub"), "global:default:train:g:t:default");
	assert_string_equal(fx_s(c, "iss"), f->base);
	assert_string_equal(fx_s(c, "herd_allocation_id"), fx_s(al, "id"));
	assert_string_equal(fx_s(c, "nomad_allocation_id"), fx_s(al, "id"));
	assert_string_equal(fx_s(c, "herd_node_id"), fx_s(al, "node_id"));
	assert_string_equal(fx_s(c, "herd_job_id"), "train");
	assert_string_equal(fx_s(c, "nomad_job_id"), "train");
	assert_string_equal(fx_s(c, "herd_group"), "g");
	assert_string_equal(fx_s(c, "herd_task"), "t");
	assert_string_equal(fx_s(c, "nomad_task"), "t");
	assert_string_equal(fx_s(c, "herd_namespace"), "default");
	assert_string_equal(fx_s(c, "nomad_namespace"), "default");
	assert_null(json_object_get(c, "aud"));
	assert_null(json_object_get(c, "exp"));
	assert_int_equal(fx_i(c, "nbf"), fx_i(c, "iat"));
	assert_int_equal(strlen(fx_s(c, "jti")), 32);
	json_decref(c);
	c = claims_of(vault);
	assert_string_equal(fx_s(c, "sub"), "global:default:train:g:t:vault");
	assert_string_equal(json_string_value(json_array_get(json_object_get(c, "aud"), 0)),
			    "vault.io");
	assert_int_equal(fx_i(c, "exp") - fx_i(c, "iat"), 3600);
	json_decref(c);
	assert_int_equal(fx_status(f, "POST", path, "{\"task\": \"t\", \"identity\": \"nope\"}"),
			 404);
	assert_int_equal(fx_status(f, "POST", path, "{\"task\": \"x\"}"), 404);
	assert_int_equal(fx_status(f, "POST", path, "{\"task\": \"t\", \"extra\": 1}"), 400);
	assert_int_equal(fx_status(f, "POST", path, "{\"task\": \"t\", \"identity\": 5}"), 400);

	/* what each reads: the default identity its job's variable, the named
	 * one nothing; an opaque token of the previous build too */
	store_legacy_hash(f, fx_s(al, "id"), secret);
	legacy = NULL;
	assert_true(asprintf(&legacy, "wi.%s.t.%s", fx_s(al, "id"), secret) > 0);
	assert_int_equal(read_var(f, token), 200);
	assert_int_equal(read_var(f, vault), 403);
	assert_int_equal(read_var(f, legacy), 200);
	legacy[strlen(legacy) - 1] = 'e'; /* another secret */
	assert_int_equal(read_var(f, legacy), 403);
	legacy[strlen(legacy) - 1] = 'f';
	/* a token is not a management token */
	f->token = token;
	assert_int_equal(fx_status(f, "GET", "/v1/jobs", NULL), 403);
	f->token = mgmt;

	/* the allocation ended: every token of it stops at once */
	fx_alloc_status(f, al, "complete");
	assert_int_equal(read_var(f, token), 403);
	assert_int_equal(read_var(f, legacy), 403);
	st = fx_status(f, "POST", path, "{\"task\": \"t\"}");
	assert_int_equal(st, 409);

	free(legacy);
	free(token);
	free(vault);
	json_decref(al);
	f->token = NULL;
	free(mgmt);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokens_and_the_upgrade),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
