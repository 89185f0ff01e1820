/* acl: the route guard, token resolution and rights (see acl.h). */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/jwt.h"
#include "common/xalloc.h"
#include "server/acl.h"
#include "server/server-int.h"
#include "server/vars.h"

struct acl {
	bool all;           /* ACL off, or a management token */
	json_t *ns;         /* {"<name or glob>": level}, merged */
	json_t *vars;       /* {"<name or glob>": {"<path or glob>": ACL_VAR_* bits}}, merged */
	int node, quota, agent;
};

static const struct acl acl_everything = { true, NULL, NULL, ACL_WRITE, ACL_WRITE, ACL_WRITE };

struct guard {
	http_handler_fn *fn;
	struct server *srv;
	enum acl_need need;
};

int acl_new_secret(char secret[65])
{
	unsigned char raw[32];
	size_t got = 0;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		static const char hex[] = "0123456789abcdef";
		secret[2 * i] = hex[raw[i] >> 4];
		secret[2 * i + 1] = hex[raw[i] & 15];
	}
	secret[64] = '\0';
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

void acl_secret_hash(const char *secret, char hex[65])
{
	unsigned char d[32];
	static const char digits[] = "0123456789abcdef";
	gnutls_hash_fast(GNUTLS_DIG_SHA256, secret, strlen(secret), d);
	for (size_t i = 0; i < sizeof(d); i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

/* Merges one policy's rules: deny wins, else the highest level. */
static void merge_level(int *into, int level)
{
	if (*into == ACL_DENY - 1)
		*into = level;
	else if (*into != ACL_DENY && (level == ACL_DENY || level > *into))
		*into = level;
}

static void merge_rules(struct acl *a, const json_t *rules)
{
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(rules, "namespace"), k, v) {
		int cur = json_object_get(a->ns, k) ? (int)json_integer_value(json_object_get(a->ns, k))
						   : ACL_DENY - 1;
		merge_level(&cur, acl_level_parse(json_string_value(v), true));
		json_object_set_new(a->ns, k, json_integer(cur));
	}
	json_object_foreach(json_object_get(rules, "variables"), k, v) {
		const char *path;
		json_t *caps, *into = json_object_get(a->vars, k);
		if (!into)
			json_object_set_new(a->vars, k, into = json_object());
		json_object_foreach(v, path, caps) {
			json_int_t had = json_integer_value(json_object_get(into, path));
			json_object_set_new(into, path, json_integer(had | acl_vars_caps(caps)));
		}
	}
	if (json_object_get(rules, "node"))
		merge_level(&a->node, acl_level_parse(jstr(rules, "node", ""), false));
	if (json_object_get(rules, "quota"))
		merge_level(&a->quota, acl_level_parse(jstr(rules, "quota", ""), false));
	if (json_object_get(rules, "agent"))
		merge_level(&a->agent, acl_level_parse(jstr(rules, "agent", ""), false));
}

/* The rights of a token secret, or NULL when no such token exists. */
static struct acl *acl_resolve(struct server *srv, const char *secret)
{
	char hash[65];
	struct store_key k = { NULL, hash, 0 };
	json_t *tok = NULL, *pn;
	struct acl *a;
	size_t i;

	size_t len = secret ? strnlen(secret, JWT_MAX_LEN + 1) : 0;
	bool workload = len > 0 && (!strncmp(secret, "wi.", 3) || !strncmp(secret, "eyJ", 3));

	/* ACL tokens are 64 hex digits; a workload identity's JWT is longer */
	if (len == 0 || len > (workload ? JWT_MAX_LEN : 256))
		return NULL;
	/* a task's own token (workload_identity.c): its job's variables; a
	 * JWT's first characters are those of {" in base64url */
	if (workload) {
		json_t *vars = workload_identity_vars(srv, secret);
		if (!vars)
			return NULL;
		a = xcalloc(1, sizeof(*a));
		a->ns = json_object();
		a->vars = vars;
		a->node = a->quota = a->agent = ACL_DENY - 1;
		return a;
	}
	acl_secret_hash(secret, hash);
	if (store_get(srv->store, STORE_ACL_TOKEN, &k, &tok, NULL) < 0)
		return NULL;
	a = xcalloc(1, sizeof(*a));
	a->ns = json_object();
	a->vars = json_object();
	a->node = a->quota = a->agent = ACL_DENY - 1;
	a->all = !strcmp(jstr(tok, "type", ""), "management");
	json_array_foreach(json_object_get(tok, "policies"), i, pn) {
		struct store_key pk = { NULL, json_string_value(pn), 0 };
		json_t *pol = NULL;
		if (pk.id && store_get(srv->store, STORE_ACL_POLICY, &pk, &pol, NULL) == 0)
			merge_rules(a, json_object_get(pol, "rules"));
		json_decref(pol);
	}
	json_decref(tok);
	return a;
}

static void acl_free(struct acl *a)
{
	if (a && a != &acl_everything) {
		json_decref(a->ns);
		json_decref(a->vars);
		free(a);
	}
}

/* The level of namespace ns: an exact rule, else the longest matching glob
 * ("team-*"), else "*". */
static int ns_level(const struct acl *a, const char *ns)
{
	const char *k;
	json_t *v;
	size_t best = 0;
	int level = ACL_DENY;
	bool found = false;
	if (a->all)
		return ACL_ADMIN;
	if ((v = json_object_get(a->ns, ns)))
		return (int)json_integer_value(v);
	json_object_foreach(a->ns, k, v) {
		size_t n = strlen(k);
		if (n == 0 || k[n - 1] != '*' || strncmp(k, ns, n - 1))
			continue;
		if (!found || n > best) {
			best = n;
			level = (int)json_integer_value(v);
			found = true;
		}
	}
	return level < ACL_DENY ? ACL_DENY : level;
}

static bool any_ns(const struct acl *a, int level)
{
	const char *k;
	json_t *v;
	if (a->all)
		return true;
	json_object_foreach(a->ns, k, v)
		if (json_integer_value(v) >= level)
			return true;
	return false;
}

bool acl_allows_ns(const struct http_request *req, const char *ns, enum acl_level level)
{
	const struct acl *a = req->auth;
	if (!a || !ns)
		return false;
	if (!strcmp(ns, "*"))
		return any_ns(a, level);
	return ns_level(a, ns) >= (int)level;
}

bool acl_allows(const struct http_request *req, const char *scope, enum acl_level level)
{
	const struct acl *a = req->auth;
	int have;
	if (!a)
		return false;
	if (a->all)
		return true;
	have = !strcmp(scope, "node") ? a->node : !strcmp(scope, "quota") ? a->quota
		: !strcmp(scope, "agent") ? a->agent : ACL_DENY;
	return have >= (int)level;
}

bool acl_is_management(const struct http_request *req)
{
	const struct acl *a = req->auth;
	return a && a->all;
}

/* The entry of map for namespace ns: exact, else the longest glob. */
static json_t *ns_entry(json_t *map, const char *ns)
{
	const char *k;
	json_t *v, *best = json_object_get(map, ns);
	size_t best_len = 0;
	if (best)
		return best;
	json_object_foreach(map, k, v) {
		size_t n = strlen(k);
		if (n == 0 || k[n - 1] != '*' || strncmp(k, ns, n - 1) || (best && n <= best_len))
			continue;
		best = v;
		best_len = n;
	}
	return best;
}

bool acl_allows_var(const struct http_request *req, const char *ns, const char *path,
		    unsigned cap)
{
	const struct acl *a = req->auth;
	const char *g;
	json_t *rules, *v;
	unsigned have = 0;
	size_t best = 0;
	bool found = false;
	if (!a || !ns || !path)
		return false;
	if (a->all || ns_level(a, ns) >= ACL_ADMIN)
		return true;
	/* the agent's node token: templates read variables (client side,
	 * each template only in its own job's namespace) */
	if (!(cap & ~(unsigned)(ACL_VAR_READ | ACL_VAR_LIST)) && a->node >= ACL_WRITE)
		return true;
	rules = ns_entry(a->vars, ns);
	json_object_foreach(rules, g, v) {
		size_t len;
		if (!vars_glob_match(g, path, &len) || (found && len < best))
			continue;
		/* equally specific rules of several policies add up */
		have = found && len == best ? have | (unsigned)json_integer_value(v)
					   : (unsigned)json_integer_value(v);
		best = len;
		found = true;
	}
	return !(have & 16) && (have & cap) == cap;
}

void acl_filter_list(const struct http_request *req, json_t *list)
{
	const struct acl *a = req->auth;
	size_t i = 0;
	if (a && a->all)
		return;
	while (i < json_array_size(list)) {
		const char *ns = jstr(json_array_get(list, i), "namespace", "default");
		if (a && ns_level(a, ns) >= ACL_READ)
			i++;
		else
			json_array_remove(list, i);
	}
}

int acl_deny(struct http_response *resp)
{
	return http_error(resp, 403, "permission_denied", "permission denied");
}

static bool need_met(const struct http_request *req, enum acl_need need)
{
	switch (need) {
	case ACL_NEED_NOTHING:
	case ACL_NEED_TOKEN: return true;
	case ACL_NEED_NS_READ: return acl_allows_ns(req, req_namespace(req), ACL_READ);
	case ACL_NEED_NS_SUBMIT: return acl_allows_ns(req, req_namespace(req), ACL_SUBMIT);
	case ACL_NEED_NS_READ_OR_NODE_WRITE:
		return acl_allows_ns(req, req_namespace(req), ACL_READ) ||
		       acl_allows(req, "node", ACL_WRITE);
	case ACL_NEED_NODE_READ: return acl_allows(req, "node", ACL_READ);
	case ACL_NEED_NODE_WRITE: return acl_allows(req, "node", ACL_WRITE);
	case ACL_NEED_QUOTA_READ: return acl_allows(req, "quota", ACL_READ);
	case ACL_NEED_QUOTA_WRITE: return acl_allows(req, "quota", ACL_WRITE);
	case ACL_NEED_AGENT_READ: return acl_allows(req, "agent", ACL_READ);
	case ACL_NEED_MANAGEMENT: return acl_is_management(req);
	}
	return false;
}

static int guarded(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct guard *g = ctx;
	struct acl *a = NULL;
	int rc;

	if (!g->srv->acl_enabled) {
		req->auth = &acl_everything;
		return g->fn(req, resp, g->srv);
	}
	if (g->need != ACL_NEED_NOTHING) {
		a = acl_resolve(g->srv, req->token);
		if (!a)
			return http_error(resp, 403, "permission_denied",
					  req->token ? "permission denied: unknown token"
						     : "permission denied: this server needs a token (X-Herd-Token or HERD_TOKEN)");
	}
	req->auth = a;
	if (g->need != ACL_NEED_NOTHING && !need_met(req, g->need)) {
		acl_free(a);
		req->auth = NULL;
		return acl_deny(resp);
	}
	rc = g->fn(req, resp, g->srv);
	req->auth = NULL;
	acl_free(a);
	return rc;
}

int server_routes_add(struct server *srv, const struct server_route *r, size_t n,
		      struct herd_err *err)
{
	for (size_t i = 0; i < n; i++) {
		struct guard *g = xmalloc(sizeof(*g));
		int rc;
		g->fn = r[i].fn;
		g->srv = srv;
		g->need = r[i].need;
		ALLOC_GROW(srv->guards, srv->nguards + 1, srv->aguards);
		srv->guards[srv->nguards++] = g;
		rc = http_router_add(srv->router, r[i].method, r[i].pattern, guarded, r[i].flags, g, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void server_routes_release(struct server *srv)
{
	for (size_t i = 0; i < srv->nguards; i++)
		free(srv->guards[i]);
	free(srv->guards);
	srv->guards = NULL;
	srv->nguards = srv->aguards = 0;
}
