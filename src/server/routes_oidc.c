/* routes_oidc: what a service outside herd needs to check a workload
 * identity's token (docs/api.md, "Workload identity keys"; docs/teams.md,
 * "Workload identity"), open to anyone, ACL or not (public keys only):
 *
 *   GET /.well-known/jwks.json             the JWK Set of the signing keys
 *   GET /v1/.well-known/jwks.json          the same, under the API's prefix
 *   GET /.well-known/openid-configuration  OIDC discovery: the issuer and
 *                                          where its keys are
 *
 * The keys are jwt_keys.h's, opened here at start (after the variables
 * keyring, routes_vars.c; each is derived at its first use). */
#include <string.h>

#include "common/jwt.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"

char *oidc_issuer(struct server *srv)
{
	char *iss;
	if (srv->oidc_issuer)
		return xstrdup(srv->oidc_issuer);
	/* the advertised address gets its real port once the API is bound */
	pthread_mutex_lock(&srv->lock);
	iss = xasprintf("%s://%s", srv->cfg.tls && srv->cfg.tls->cert_pem ? "https" : "http",
			srv->advertise);
	pthread_mutex_unlock(&srv->lock);
	return iss;
}

static int get_jwks(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct server *srv = ctx;
	struct herd_err err = { 0, "" };
	json_t *jwks = jwt_keys_jwks(&srv->jwt_keys, &err);
	(void)req;
	if (!jwks)
		return http_error(resp, 500, "signing_key_failed", "%s", err.msg);
	http_reply(resp, 200, jwks);
	return 0;
}

static int get_openid_configuration(struct http_request *req, struct http_response *resp,
				    void *ctx)
{
	char *iss = oidc_issuer(ctx);
	size_t n = strlen(iss);
	/* the issuer without a trailing slash: jwks_uri has one slash */
	char *jwks = xasprintf("%.*s/.well-known/jwks.json",
			       (int)(n && iss[n - 1] == '/' ? n - 1 : n), iss);
	(void)req;
	http_reply(resp, 200,
		   json_pack("{s:s, s:s, s:[s], s:[s], s:[s], s:[s]}", "issuer", iss,
			     "jwks_uri", jwks, "id_token_signing_alg_values_supported", JWT_ALG,
			     "subject_types_supported", "public", "response_types_supported",
			     "id_token", "claims_supported", "sub"));
	free(jwks);
	free(iss);
	return 0;
}

int routes_oidc(struct server *srv, struct herd_err *err)
{
	static const struct server_route routes[] = {
		{ "GET", "/.well-known/jwks.json", get_jwks, 0, ACL_NEED_NOTHING },
		{ "GET", "/v1/.well-known/jwks.json", get_jwks, 0, ACL_NEED_NOTHING },
		{ "GET", "/.well-known/openid-configuration", get_openid_configuration, 0,
		  ACL_NEED_NOTHING },
	};
	jwt_keys_open(&srv->jwt_keys, &srv->vars_ring);
	return server_routes_add(srv, routes, sizeof(routes) / sizeof(routes[0]), err);
}
