/* acl: who may call what (docs/teams.md, "ACL").  Private to src/server.
 *
 * Every route of the control plane is registered through
 * server_routes_add with what it needs.  A guard runs before the handler:
 * with ACL off (the default, and -dev) every request may do everything;
 * with ACL on it resolves the request's token (X-Herd-Token or
 * Authorization: Bearer; stored as its SHA-256 only) into rights, refuses
 * with 403 what the route's need does not allow, and leaves the rights on
 * the request for the handler's finer checks (the namespace of a job in a
 * body, of an allocation read by id, the lists it may show).
 *
 * Refusals say "permission denied" and nothing more: never whether the
 * object asked for exists. */
#ifndef HERD_SERVER_ACL_H
#define HERD_SERVER_ACL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "server/http.h"
#include "server/teams.h"

struct server;

enum acl_need {
	ACL_NEED_TOKEN,        /* any valid token (ACL on); the handler checks the rest */
	ACL_NEED_NS_READ,      /* read on ?namespace= ("*": some namespace) */
	ACL_NEED_NS_SUBMIT,    /* submit on ?namespace= */
	ACL_NEED_NS_READ_OR_NODE_WRITE, /* read on ?namespace=, or an agent's node
				 * token: a client reads the jobs it must run */
	ACL_NEED_NODE_READ,
	ACL_NEED_NODE_WRITE,
	ACL_NEED_QUOTA_READ,
	ACL_NEED_QUOTA_WRITE,
	ACL_NEED_AGENT_READ,
	ACL_NEED_MANAGEMENT,
	ACL_NEED_NOTHING,      /* open: bootstrap, which checks for itself */
};

struct server_route {
	const char *method, *pattern;
	http_handler_fn *fn;   /* called with the server as ctx */
	unsigned flags;        /* HTTP_ROUTE_* */
	enum acl_need need;
};

/* Registers n routes behind the ACL guard.  -errno as http_router_add. */
int server_routes_add(struct server *srv, const struct server_route *r, size_t n,
		      struct herd_err *err);
/* Frees what server_routes_add allocated (at server stop). */
void server_routes_release(struct server *srv);

/* The rights of the request's token as the guard resolved them.  With ACL
 * off every answer is true.  A request that did not pass the guard has
 * none. */
bool acl_allows_ns(const struct http_request *req, const char *ns, enum acl_level level);
bool acl_allows(const struct http_request *req, const char *scope, enum acl_level level);
bool acl_is_management(const struct http_request *req);
/* Variables (docs/teams.md, "ACL"): the capabilities of a namespace
 * rule's variables block.  A management token (or ACL off) has all; a
 * namespace at admin level has all in it; an agent's node write token
 * reads and lists every variable (templates, which the agent confines to
 * their job's namespace); else the token's variables path rules of the
 * namespace's rule (exact name, longest glob, "*") decide: the most
 * specific matching path, a "deny" there denying all. */
enum acl_var_cap { ACL_VAR_READ = 1, ACL_VAR_WRITE = 2, ACL_VAR_LIST = 4, ACL_VAR_DESTROY = 8 };
bool acl_allows_var(const struct http_request *req, const char *ns, const char *path,
		    unsigned cap);

/* Keeps in the array list only the objects whose "namespace" the token may
 * read. */
void acl_filter_list(const struct http_request *req, json_t *list);
/* 403 {"error": {"code": "permission_denied", ...}}; returns 0. */
int acl_deny(struct http_response *resp);

/* A new token secret (64 hex characters of 32 random bytes, getrandom)
 * into secret; 0 or -errno. */
int acl_new_secret(char secret[65]);
/* The SHA-256 of secret in hex, the key under which a token is stored. */
void acl_secret_hash(const char *secret, char hex[65]);

#endif
