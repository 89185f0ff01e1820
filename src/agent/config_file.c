/* The agent configuration file: HCL blocks to struct agent_config.
 *
 * Each block has a walker that goes through its items once, reads the keys
 * it knows, and reports every key it does not know, so that one run shows
 * every mistake.  A handful of Nomad keys that mean nothing to herd (ports
 * { rpc serf }) are warnings, so that a Nomad agent file needs few edits. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/config-int.h"
#include "common/cpulist.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

struct walk {
	struct agent_config *cfg;
	struct diag_list *dl;
};

/* A singleton block met twice is an error naming where the first was. */
struct seen {
	const char *type;
	struct hcl_pos pos;
};

static int once(struct seen *seen, size_t n, const struct hcl_block *b, struct diag_list *dl)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(seen[i].type, b->type))
			continue;
		if (seen[i].pos.line) {
			diag_error(dl, b->pos.line, b->pos.col,
				   "block '%s' given twice (first at line %d)", b->type,
				   seen[i].pos.line);
			return 0;
		}
		seen[i].pos = b->pos;
		return 1;
	}
	return 1;
}

static int no_labels(const struct hcl_block *b, struct diag_list *dl)
{
	if (b->nlabels == 0)
		return 1;
	diag_error(dl, b->label_pos[0].line, b->label_pos[0].col,
		   "block '%s' takes no label", b->type);
	return 0;
}

static void ignored(struct walk *w, struct hcl_pos pos, const char *key, const char *where)
{
	diag_warn(w->dl, pos.line, pos.col, "%s in %s is ignored: herd has no use for it",
		  key, where);
}

static void unknown_item(struct walk *w, const struct hcl_item *it, const char *where,
			 const char *const *known)
{
	struct hcl_pos pos = it->kind == HCL_ITEM_BLOCK ? it->u.block.pos : it->u.attr.pos;
	cfg_unknown_key(w->dl, pos, it->kind == HCL_ITEM_BLOCK ? "block" : "key",
			it->kind == HCL_ITEM_BLOCK ? it->u.block.type : it->u.attr.name, where, known);
}

/* ---- key/value maps: `meta { k = "v" }` or `meta = { k = "v" }` ------- */

struct kv_src {
	const char *key;
	struct hcl_pos pos;
	const struct hcl_expr *value;
};

/* Collects the pairs of a block body or an object expression. */
static int kv_collect(const struct hcl_body *body, const struct hcl_expr *obj,
		      const char *what, struct kv_src **out, size_t *nr, struct diag_list *dl)
{
	size_t n = 0, alloc = 0;
	struct kv_src *v = NULL;
	int bad = 0;

	if (body) {
		for (size_t i = 0; i < body->n; i++) {
			const struct hcl_item *it = &body->items[i];
			if (it->kind == HCL_ITEM_BLOCK) {
				diag_error(dl, it->u.block.pos.line, it->u.block.pos.col,
					   "%s: expected key = value, not a block '%s'",
					   what, it->u.block.type);
				bad = 1;
				continue;
			}
			ALLOC_GROW(v, n + 1, alloc);
			v[n++] = (struct kv_src){ it->u.attr.name, it->u.attr.pos, it->u.attr.value };
		}
	} else if (obj->kind != HCL_OBJECT) {
		diag_error(dl, obj->pos.line, obj->pos.col, "%s: expected an object, not a %s",
			   what, hcl_kind_name(obj->kind));
		bad = 1;
	} else {
		for (size_t i = 0; i < obj->u.object.n; i++) {
			const struct hcl_object_item *it = &obj->u.object.v[i];
			ALLOC_GROW(v, n + 1, alloc);
			v[n++] = (struct kv_src){ it->key, it->key_pos, it->value };
		}
	}
	/* Values: strings, or numbers and bools written bare (Nomad's HCL
	 * turns them into strings as well). */
	for (size_t i = 0; i < n; i++) {
		enum hcl_expr_kind k = v[i].value->kind;
		if (k != HCL_STRING && k != HCL_BOOL && !(k == HCL_NUMBER && v[i].value->u.num.is_int)) {
			diag_error(dl, v[i].value->pos.line, v[i].value->pos.col,
				   "%s.%s: expected a string, not a %s", what, v[i].key,
				   hcl_kind_name(k));
			bad = 1;
		} else if (k == HCL_STRING && strlen(v[i].value->u.str.s) != v[i].value->u.str.len) {
			diag_error(dl, v[i].value->pos.line, v[i].value->pos.col,
				   "%s.%s: a NUL character is not allowed", what, v[i].key);
			bad = 1;
		}
		if (!*v[i].key) {
			diag_error(dl, v[i].pos.line, v[i].pos.col, "%s: empty key", what);
			bad = 1;
		}
	}
	if (bad) {
		free(v);
		return -EINVAL;
	}
	*out = v;
	*nr = n;
	return 0;
}

static char *kv_value_string(const struct hcl_expr *e)
{
	if (e->kind == HCL_STRING)
		return xstrdup(e->u.str.s);
	if (e->kind == HCL_BOOL)
		return xstrdup(e->u.boolean ? "true" : "false");
	return xasprintf("%lld", (long long)e->u.num.i);
}

static void read_meta(struct walk *w, const struct hcl_body *body, const struct hcl_expr *obj)
{
	struct agent_config *cfg = w->cfg;
	struct kv_src *src;
	size_t n;

	if (kv_collect(body, obj, "meta", &src, &n, w->dl) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct agent_kv *kv = NULL;
		for (size_t j = 0; j < cfg->client.nr_meta; j++)
			if (!strcmp(cfg->client.meta[j].key, src[i].key))
				kv = &cfg->client.meta[j];
		if (!kv) {
			if (cfg->client.nr_meta == AGENT_MAX_META) {
				diag_error(w->dl, src[i].pos.line, src[i].pos.col,
					   "meta: at most %d keys", AGENT_MAX_META);
				break;
			}
			cfg->client.meta = xreallocarray(cfg->client.meta, cfg->client.nr_meta + 1,
							 sizeof(*kv));
			kv = &cfg->client.meta[cfg->client.nr_meta++];
			kv->key = xstrdup(src[i].key);
			kv->value = NULL;
		}
		free(kv->value);
		kv->value = kv_value_string(src[i].value);
	}
	free(src);
}

/* Truth as Nomad's client options write it: "1", "true", "0", "false". */
static int option_bool(const struct kv_src *s, bool *out, struct diag_list *dl)
{
	const struct hcl_expr *e = s->value;
	if (e->kind == HCL_BOOL) {
		*out = e->u.boolean;
		return 0;
	}
	if (e->kind == HCL_STRING) {
		const char *v = e->u.str.s;
		if (!strcmp(v, "1") || !strcasecmp(v, "true")) {
			*out = true;
			return 0;
		}
		if (!strcmp(v, "0") || !strcasecmp(v, "false")) {
			*out = false;
			return 0;
		}
	}
	diag_error(dl, e->pos.line, e->pos.col,
		   "options.%s: expected \"1\", \"true\", \"0\" or \"false\"", s->key);
	return -EINVAL;
}

static void read_options(struct walk *w, const struct hcl_body *body, const struct hcl_expr *obj)
{
	static const char *const known[] = { "driver.raw_exec.enable", NULL };
	struct kv_src *src;
	size_t n;

	if (kv_collect(body, obj, "options", &src, &n, w->dl) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(src[i].key, "driver.raw_exec.enable"))
			option_bool(&src[i], &w->cfg->client.raw_exec_enabled, w->dl);
		else
			cfg_unknown_key(w->dl, src[i].pos, "option", src[i].key, "client.options", known);
	}
	free(src);
}

/* ---- blocks ------------------------------------------------------------ */

static void walk_ports(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "http", NULL };
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			cfg_unknown_key(w->dl, it->u.block.pos, "block", it->u.block.type, "ports", known);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		int64_t v;
		if (!strcmp(a->name, "http")) {
			if (cfg_read_int(a, 0, 65535, &v, w->dl) == 0)
				w->cfg->http_port = (int)v;
		} else if (!strcmp(a->name, "rpc") || !strcmp(a->name, "serf")) {
			ignored(w, a->pos, a->name, "ports");
		} else {
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "ports", known);
		}
	}
}

/* "host" or "host:port" or "[v6]:port"; an empty host is not an address. */
static int valid_host_port(const char *s, bool port_required)
{
	const char *colon = strrchr(s, ':');
	if (!*s || *s == ':')
		return 0;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close == s + 1)
			return 0;
		colon = close[1] == ':' ? close + 1 : NULL;
		if (close[1] && !colon)
			return 0;
	} else if (colon && strchr(s, ':') != colon) {
		return 0; /* a bare IPv6 address must be bracketed */
	}
	if (!colon)
		return !port_required;
	if (!colon[1] || strlen(colon + 1) > 5)
		return 0;
	long port = 0;
	for (const char *p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		port = port * 10 + (*p - '0');
	}
	return port >= 1 && port <= 65535;
}

/* An IPv4 or IPv6 address, or a host name: never a port. */
static int valid_bind_addr(const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1)
		return 1;
	if (!*s || strlen(s) > 253)
		return 0;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
			return 0;
	return 1;
}

static void walk_advertise(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "http", NULL };
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			cfg_unknown_key(w->dl, it->u.block.pos, "block", it->u.block.type,
					"advertise", known);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "http")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			if (!valid_host_port(v, false)) {
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "advertise.http: expected \"host\" or \"host:port\", not \"%s\"", v);
				free(v);
				continue;
			}
			free(w->cfg->advertise_http);
			w->cfg->advertise_http = v;
		} else if (!strcmp(a->name, "rpc") || !strcmp(a->name, "serf")) {
			ignored(w, a->pos, a->name, "advertise");
		} else {
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "advertise", known);
		}
	}
}

/* server { scheduler { policy = "herd" } }: the placement policy
 * (sched_policy_parse's names). */
static void walk_scheduler(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "policy", NULL };
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK || strcmp(it->u.attr.name, "policy")) {
			unknown_item(w, it, "server scheduler", known);
			continue;
		}
		char *v = NULL;
		enum sched_policy p;
		if (cfg_read_string(&it->u.attr, &v, w->dl) < 0)
			continue;
		if (sched_policy_parse(v, &p) < 0) {
			struct strbuf names = STRBUF_INIT;
			for (int k = 0; k < SCHED_NPOLICIES; k++)
				strbuf_addf(&names, "%s\"%s\"", k ? ", " : "",
					    sched_policy_name((enum sched_policy)k));
			diag_error(w->dl, it->u.attr.value->pos.line, it->u.attr.value->pos.col,
				   "policy: unknown scheduling policy \"%s\"; expected one of %s",
				   v, names.buf);
			strbuf_release(&names);
		} else {
			w->cfg->server.policy = p;
		}
		free(v);
	}
}

/* server { preemption { batch_enabled = true service_enabled = false
 * system_enabled = false } }: which job types may preempt lower
 * priorities (server_config.preempt_types). */
static void walk_preemption(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "batch_enabled", "service_enabled",
		"system_enabled", NULL };
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		const char *name = it->kind == HCL_ITEM_ATTRIBUTE ? it->u.attr.name : "";
		bool *out = !strcmp(name, "batch_enabled") ? &w->cfg->server.preempt_batch
			  : !strcmp(name, "service_enabled") ? &w->cfg->server.preempt_service
			  : !strcmp(name, "system_enabled") ? &w->cfg->server.preempt_system : NULL;
		if (!out) {
			unknown_item(w, it, "server preemption", known);
			continue;
		}
		cfg_read_bool(&it->u.attr, out, w->dl);
	}
}

/* acl { enabled = true } */
static void walk_acl(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "enabled", NULL };
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_ATTRIBUTE && !strcmp(it->u.attr.name, "enabled"))
			cfg_read_bool(&it->u.attr, &w->cfg->acl.enabled, w->dl);
		else if (it->kind == HCL_ITEM_ATTRIBUTE && (!strcmp(it->u.attr.name, "token_ttl") ||
						       !strcmp(it->u.attr.name, "policy_ttl")))
			ignored(w, it->u.attr.pos, it->u.attr.name, "acl");
		else
			unknown_item(w, it, "acl", known);
	}
}

/* server { postgres_url }: any libpq connection string; the database
 * checks it when the server starts.  "" would silently mean libpq's
 * defaults: refused. */
static void read_postgres_url(struct walk *w, const struct hcl_attribute *a)
{
	char *v = NULL;

	if (cfg_read_string(a, &v, w->dl) < 0)
		return;
	if (!*v) {
		diag_error(w->dl, a->value->pos.line, a->value->pos.col,
			   "postgres_url: expected a PostgreSQL URL (postgresql://...) or "
			   "connection string, not \"\"");
		free(v);
		return;
	}
	free(w->cfg->server.postgres_url);
	w->cfg->server.postgres_url = v;
}

/* server { oidc_issuer }: the iss of workload identities' tokens, an
 * http(s) URL without query or fragment (OIDC discovery appends
 * /.well-known/openid-configuration to it). */
static void read_oidc_issuer(struct walk *w, const struct hcl_attribute *a)
{
	char *v = NULL;
	size_t n;

	if (cfg_read_string(a, &v, w->dl) < 0)
		return;
	n = strlen(v);
	if ((strncmp(v, "https://", 8) && strncmp(v, "http://", 7)) || n > 1024 ||
	    n == strlen(strncmp(v, "https://", 8) ? "http://" : "https://") ||
	    strpbrk(v, "?# \t\r\n")) {
		diag_error(w->dl, a->value->pos.line, a->value->pos.col,
			   "oidc_issuer: expected an https:// (or http://) URL of at most 1024 "
			   "characters, without query or fragment, got \"%s\"", v);
		free(v);
		return;
	}
	free(w->cfg->server.oidc_issuer);
	w->cfg->server.oidc_issuer = v;
}

/* server { reserve_after = "5m" }: a duration (0: at once) or "off". */
static void read_reserve_after(const struct hcl_attribute *a, int64_t *out, struct diag_list *dl)
{
	if (a->value->kind == HCL_STRING && !strcmp(a->value->u.str.s, "off"))
		*out = -1;
	else
		cfg_read_duration(a, 0, out, dl);
}

static void walk_server(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "enabled", "data_dir", "postgres_url", "heartbeat_ttl",
		"heartbeat_grace", "job_gc_threshold", "eval_gc_threshold", "job_gc_interval",
		"scheduler", "preemption", "reserve_after", "oidc_issuer", NULL };
	struct agent_config *cfg = w->cfg;
	struct seen seen[] = { { "scheduler", { 0, 0 } }, { "preemption", { 0, 0 } } };
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			const struct hcl_block *b = &it->u.block;
			if (!strcmp(b->type, "scheduler") || !strcmp(b->type, "preemption")) {
				if (once(seen, 2, b, w->dl) && no_labels(b, w->dl))
					(b->type[0] == 's' ? walk_scheduler : walk_preemption)(w, b->body);
				continue;
			}
			cfg_unknown_key(w->dl, b->pos, "block", b->type, "server", known);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "enabled"))
			cfg_read_bool(a, &cfg->server.enabled, w->dl);
		else if (!strcmp(a->name, "data_dir"))
			cfg_read_string(a, &cfg->server.data_dir, w->dl);
		else if (!strcmp(a->name, "postgres_url"))
			read_postgres_url(w, a);
		else if (!strcmp(a->name, "heartbeat_ttl"))
			cfg_read_duration(a, NS_PER_SEC, &cfg->server.heartbeat_ttl_ns, w->dl);
		else if (!strcmp(a->name, "heartbeat_grace"))
			cfg_read_duration(a, 0, &cfg->server.heartbeat_grace_ns, w->dl);
		else if (!strcmp(a->name, "job_gc_threshold"))
			cfg_read_duration(a, NS_PER_SEC, &cfg->server.job_gc_threshold_ns, w->dl);
		else if (!strcmp(a->name, "eval_gc_threshold"))
			cfg_read_duration(a, NS_PER_SEC, &cfg->server.eval_gc_threshold_ns, w->dl);
		else if (!strcmp(a->name, "job_gc_interval"))
			cfg_read_duration(a, NS_PER_SEC, &cfg->server.gc_interval_ns, w->dl);
		else if (!strcmp(a->name, "reserve_after"))
			read_reserve_after(a, &cfg->server.reserve_after_ns, w->dl);
		else if (!strcmp(a->name, "oidc_issuer"))
			read_oidc_issuer(w, a);
		else if (!strcmp(a->name, "bootstrap_expect") || !strcmp(a->name, "num_schedulers"))
			ignored(w, a->pos, a->name, "server");
		else
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "server", known);
	}
}

/* A core list ("0-1,8": cpulist.h) into *out, canonical; an error at the
 * value otherwise. */
static void read_cores(struct walk *w, const struct hcl_attribute *a, const char *where,
		       char **out)
{
	char *s = NULL;
	struct cpulist set;
	struct herd_err err = { 0, "" };
	if (cfg_read_string(a, &s, w->dl) < 0)
		return;
	if (cpulist_parse(s, &set, &err) < 0) {
		diag_error(w->dl, a->value->pos.line, a->value->pos.col,
			   "%s: \"%s\": %s (expected a core list such as \"0-3,8\")", where, s,
			   err.msg);
	} else {
		free(*out);
		*out = cpulist_str(&set);
	}
	free(s);
}

static void walk_reserved(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "cpu", "memory", "disk", "cores", NULL };
	struct agent_config *cfg = w->cfg;
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			cfg_unknown_key(w->dl, it->u.block.pos, "block", it->u.block.type,
					"client.reserved", known);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "cpu"))
			cfg_read_int(a, 0, INT32_MAX, &cfg->client.reserved_cpu_mhz, w->dl);
		else if (!strcmp(a->name, "memory"))
			cfg_read_int(a, 0, INT32_MAX, &cfg->client.reserved_memory_mib, w->dl);
		else if (!strcmp(a->name, "disk"))
			cfg_read_int(a, 0, INT32_MAX, &cfg->client.reserved_disk_mib, w->dl);
		else if (!strcmp(a->name, "cores"))
			read_cores(w, a, "client.reserved.cores", &cfg->client.reserved_cores);
		else
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "client.reserved", known);
	}
}

static bool valid_chroot_dir(const char *p)
{
	return p[0] == '/' && !strstr(p, "/..") && !strchr(p, '\n');
}

/* chroot_env: a list of host directories ["/bin", "/usr"], or Nomad's map
 * { "/bin" = "/bin" } (from a block body or an object), whose two sides
 * must be equal: herd binds a host directory at its own path. */
static void read_chroot_env(struct walk *w, const struct hcl_attribute *a,
			    const struct hcl_body *body)
{
	struct agent_config *cfg = w->cfg;
	char **list = NULL;
	size_t n = 0;
	int bad = 0;

	if (a && a->value->kind == HCL_LIST) {
		if (cfg_read_string_list(a, AGENT_MAX_CHROOT_ENV, &list, &n, w->dl) < 0)
			return;
		for (size_t i = 0; i < n; i++) {
			if (valid_chroot_dir(list[i]))
				continue;
			const struct hcl_expr *e = a->value->u.list.v[i];
			diag_error(w->dl, e->pos.line, e->pos.col, "chroot_env: expected an absolute "
				   "directory without \"..\", not \"%s\"", list[i]);
			bad = 1;
		}
	} else {
		struct kv_src *src;
		if (kv_collect(body, a ? a->value : NULL, "chroot_env", &src, &n, w->dl) < 0)
			return;
		if (n > AGENT_MAX_CHROOT_ENV) {
			diag_error(w->dl, src[0].pos.line, src[0].pos.col,
				   "chroot_env: at most %d directories, not %zu", AGENT_MAX_CHROOT_ENV, n);
			free(src);
			return;
		}
		list = xcalloc(n + 1, sizeof(char *));
		for (size_t i = 0; i < n; i++) {
			char *v = kv_value_string(src[i].value);
			list[i] = xstrdup(src[i].key);
			if (!valid_chroot_dir(list[i])) {
				diag_error(w->dl, src[i].pos.line, src[i].pos.col,
					   "chroot_env: expected an absolute directory without "
					   "\"..\", not \"%s\"", list[i]);
				bad = 1;
			} else if (strcmp(v, list[i])) {
				diag_error(w->dl, src[i].value->pos.line, src[i].value->pos.col,
					   "chroot_env: \"%s\" = \"%s\": herd binds a host directory "
					   "at the same path inside the task; write \"%s\" = \"%s\"",
					   list[i], v, list[i], list[i]);
				bad = 1;
			}
			free(v);
		}
		free(src);
	}
	if (bad) {
		for (size_t i = 0; i < n; i++)
			free(list[i]);
		free(list);
		return;
	}
	for (size_t i = 0; i < cfg->exec.nr_chroot_env; i++)
		free(cfg->exec.chroot_env[i]);
	free(cfg->exec.chroot_env);
	/* NULL-terminated for the driver; an empty list binds nothing. */
	cfg->exec.chroot_env = xreallocarray(list, n + 1, sizeof(char *));
	cfg->exec.chroot_env[n] = NULL;
	cfg->exec.nr_chroot_env = n;
}

static void walk_client(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "enabled", "servers", "datacenter", "node_class",
		"node_pool", "state_dir", "alloc_dir", "max_kill_timeout", "cpu_total_compute",
		"memory_total_mb", "meta", "options", "reserved", "chroot_env", "cgroup_parent",
		"token", "gc_interval", "gc_max_allocs", "gc_disk_usage_threshold",
		"gc_inode_usage_threshold", "host_volume", "reservable_cores", NULL };
	struct agent_config *cfg = w->cfg;
	struct seen seen[] = { { "meta", { 0, 0 } }, { "options", { 0, 0 } },
			       { "reserved", { 0, 0 } } };

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			const struct hcl_block *b = &it->u.block;
			if (!strcmp(b->type, "chroot_env")) {
				if (no_labels(b, w->dl))
					read_chroot_env(w, NULL, b->body);
				continue;
			}
			if (!strcmp(b->type, "host_volume")) {
				cfg_read_host_volume(cfg, b, w->dl);
				continue;
			}
			if (!strcmp(b->type, "meta") || !strcmp(b->type, "options") ||
			    !strcmp(b->type, "reserved")) {
				if (!once(seen, 3, b, w->dl) || !no_labels(b, w->dl))
					continue;
				if (b->type[0] == 'm')
					read_meta(w, b->body, NULL);
				else if (b->type[0] == 'o')
					read_options(w, b->body, NULL);
				else
					walk_reserved(w, b->body);
			} else {
				cfg_unknown_key(w->dl, b->pos, "block", b->type, "client", known);
			}
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		int64_t v;
		if (!strcmp(a->name, "enabled")) {
			cfg_read_bool(a, &cfg->client.enabled, w->dl);
		} else if (!strcmp(a->name, "servers")) {
			char **list = NULL;
			size_t n = 0;
			if (cfg_read_string_list(a, AGENT_MAX_SERVERS, &list, &n, w->dl) < 0)
				continue;
			int bad = 0;
			for (size_t j = 0; j < n; j++) {
				if (valid_host_port(list[j], true))
					continue;
				const struct hcl_expr *e = a->value->u.list.v[j];
				diag_error(w->dl, e->pos.line, e->pos.col,
					   "servers: expected \"host:port\", not \"%s\"", list[j]);
				bad = 1;
			}
			if (bad) {
				for (size_t j = 0; j < n; j++)
					free(list[j]);
				free(list);
				continue;
			}
			for (size_t j = 0; j < cfg->client.nr_servers; j++)
				free(cfg->client.servers[j]);
			free(cfg->client.servers);
			cfg->client.servers = list;
			cfg->client.nr_servers = n;
		} else if (!strcmp(a->name, "datacenter")) {
			cfg_read_string(a, &cfg->datacenter, w->dl);
		} else if (!strcmp(a->name, "node_class")) {
			cfg_read_string(a, &cfg->client.node_class, w->dl);
		} else if (!strcmp(a->name, "node_pool")) {
			cfg_read_string(a, &cfg->client.node_pool, w->dl);
		} else if (!strcmp(a->name, "state_dir")) {
			cfg_read_string(a, &cfg->client.state_dir, w->dl);
		} else if (!strcmp(a->name, "alloc_dir")) {
			cfg_read_string(a, &cfg->client.alloc_dir, w->dl);
		} else if (!strcmp(a->name, "max_kill_timeout")) {
			cfg_read_duration(a, 0, &cfg->client.max_kill_timeout_ns, w->dl);
		} else if (!strcmp(a->name, "cpu_total_compute")) {
			if (cfg_read_int(a, 0, INT32_MAX, &v, w->dl) == 0)
				cfg->client.cpu_total_compute = v;
		} else if (!strcmp(a->name, "memory_total_mb")) {
			if (cfg_read_int(a, 0, INT32_MAX, &v, w->dl) == 0)
				cfg->client.memory_total_mib = v;
		} else if (!strcmp(a->name, "meta")) {
			read_meta(w, NULL, a->value);
		} else if (!strcmp(a->name, "options")) {
			read_options(w, NULL, a->value);
		} else if (!strcmp(a->name, "chroot_env")) {
			read_chroot_env(w, a, NULL);
		} else if (!strcmp(a->name, "cgroup_parent")) {
			cfg_read_string(a, &cfg->exec.cgroup_parent, w->dl);
		} else if (!strcmp(a->name, "token")) {
			cfg_read_string(a, &cfg->client.token, w->dl);
		} else if (!strcmp(a->name, "gc_interval")) {
			cfg_read_duration(a, NS_PER_SEC, &cfg->client.gc_interval_ns, w->dl);
		} else if (!strcmp(a->name, "gc_max_allocs")) {
			cfg_read_int(a, 1, 1000000, &cfg->client.gc_max_allocs, w->dl);
		} else if (!strcmp(a->name, "gc_disk_usage_threshold")) {
			/* percent used; 100: never for lack of room */
			cfg_read_int(a, 1, 100, &cfg->client.gc_disk_usage_threshold, w->dl);
		} else if (!strcmp(a->name, "gc_inode_usage_threshold")) {
			cfg_read_int(a, 1, 100, &cfg->client.gc_inode_usage_threshold, w->dl);
		} else if (!strcmp(a->name, "reservable_cores")) {
			read_cores(w, a, "client.reservable_cores", &cfg->client.reservable_cores);
		} else if (!strcmp(a->name, "network_interface")) {
			ignored(w, a->pos, a->name, "client");
		} else {
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "client", known);
		}
	}
}


/* plugin "docker" { config { gc { dangling_containers { enabled period } } } }
 * (Nomad's names): the sweep of containers of allocations gone. */
static void walk_docker_dangling(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "enabled", "period", NULL };
	const char *where = "plugin \"docker\" config gc dangling_containers";
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		const char *name = it->kind == HCL_ITEM_ATTRIBUTE ? it->u.attr.name : "";
		if (!strcmp(name, "enabled"))
			cfg_read_bool(&it->u.attr, &w->cfg->docker.gc_dangling, w->dl);
		else if (!strcmp(name, "period"))
			cfg_read_duration(&it->u.attr, NS_PER_SEC, &w->cfg->docker.gc_period_ns,
					  w->dl);
		else if (!strcmp(name, "creation_grace") || !strcmp(name, "dry_run"))
			ignored(w, it->u.attr.pos, name, where);
		else
			unknown_item(w, it, where, known);
	}
}

/* plugin "docker" { config { endpoint allow_privileged volumes { enabled }
 * allow_caps pull_timeout gc { container image } } }, Nomad's names. */
static void walk_docker_config(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "endpoint", "socket", "allow_privileged",
		"allow_caps", "pull_timeout", "volumes", "gc", NULL };
	static const char *const volume_keys[] = { "enabled", NULL };
	static const char *const gc_keys[] = { "container", "image", "dangling_containers",
		NULL };
	struct agent_config *cfg = w->cfg;

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			const struct hcl_block *b = &it->u.block;
			bool vol = !strcmp(b->type, "volumes");
			if (!vol && strcmp(b->type, "gc")) {
				unknown_item(w, it, "plugin \"docker\" config", known);
				continue;
			}
			for (size_t j = 0; j < b->body->n; j++) {
				const struct hcl_item *ci = &b->body->items[j];
				const char *name = ci->kind == HCL_ITEM_ATTRIBUTE ? ci->u.attr.name : "";
				if (!vol && ci->kind == HCL_ITEM_BLOCK &&
				    !strcmp(ci->u.block.type, "dangling_containers")) {
					walk_docker_dangling(w, ci->u.block.body);
					continue;
				}
				if (vol && !strcmp(name, "enabled"))
					cfg_read_bool(&ci->u.attr, &cfg->docker.volumes_enabled, w->dl);
				else if (!vol && !strcmp(name, "container"))
					cfg_read_bool(&ci->u.attr, &cfg->docker.gc_container, w->dl);
				else if (!vol && !strcmp(name, "image"))
					cfg_read_bool(&ci->u.attr, &cfg->docker.gc_image, w->dl);
				else if (!vol && !strcmp(name, "image_delay"))
					ignored(w, ci->u.attr.pos, name, "plugin \"docker\" config gc");
				else
					unknown_item(w, ci, vol ? "plugin \"docker\" config volumes"
								: "plugin \"docker\" config gc",
						     vol ? volume_keys : gc_keys);
			}
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "endpoint") || !strcmp(a->name, "socket")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			/* Only the unix socket: the driver speaks to no TCP engine. */
			const char *path = !strncmp(v, "unix://", 7) ? v + 7 : v;
			if (path[0] != '/') {
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "%s: expected \"unix:///path/docker.sock\" or an absolute "
					   "socket path, not \"%s\"", a->name, v);
				free(v);
				continue;
			}
			free(cfg->docker.socket);
			cfg->docker.socket = xstrdup(path);
			free(v);
		} else if (!strcmp(a->name, "allow_privileged")) {
			cfg_read_bool(a, &cfg->docker.allow_privileged, w->dl);
		} else if (!strcmp(a->name, "allow_caps")) {
			cfg_read_string_list(a, 64, &cfg->docker.allow_caps, &cfg->docker.nr_allow_caps,
					     w->dl);
		} else if (!strcmp(a->name, "pull_timeout")) {
			cfg_read_duration(a, NS_PER_SEC, &cfg->docker.pull_timeout_ns, w->dl);
		} else {
			unknown_item(w, it, "plugin \"docker\" config", known);
		}
	}
}

/* plugin "raw_exec" { config { enabled = true } } and plugin "docker" { config
 * { ... } }, as Nomad writes them. */
/* plugin "exec" { config { chroot_env cgroup_parent default_user } }. */
static void walk_exec_config(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "chroot_env", "cgroup_parent", "default_user",
		NULL };
	struct agent_config *cfg = w->cfg;
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			if (!strcmp(it->u.block.type, "chroot_env") && no_labels(&it->u.block, w->dl))
				read_chroot_env(w, NULL, it->u.block.body);
			else if (strcmp(it->u.block.type, "chroot_env"))
				unknown_item(w, it, "plugin \"exec\" config", known);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "chroot_env")) {
			read_chroot_env(w, a, NULL);
		} else if (!strcmp(a->name, "cgroup_parent")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			if (!*v || strstr(v, "..") || v[0] == '/') {
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "cgroup_parent: expected a cgroup name relative to the "
					   "cgroup root (\"herd.slice\"), not \"%s\"", v);
				free(v);
				continue;
			}
			free(cfg->exec.cgroup_parent);
			cfg->exec.cgroup_parent = v;
		} else if (!strcmp(a->name, "default_user")) {
			cfg_read_string(a, &cfg->exec.default_user, w->dl);
		} else if (!strcmp(a->name, "default_pid_mode") || !strcmp(a->name, "default_ipc_mode") ||
			   !strcmp(a->name, "no_pivot_root") || !strcmp(a->name, "allow_caps")) {
			ignored(w, a->pos, a->name, "plugin \"exec\" config");
		} else {
			unknown_item(w, it, "plugin \"exec\" config", known);
		}
	}
}

static void walk_plugin(struct walk *w, const struct hcl_block *b)
{
	static const char *const plugins[] = { "raw_exec", "docker", "exec", NULL };
	static const char *const known[] = { "config", NULL };
	static const char *const raw_exec_keys[] = { "enabled", NULL };
	bool docker;

	if (b->nlabels != 1) {
		diag_error(w->dl, b->pos.line, b->pos.col,
			   "block 'plugin' takes one label, the driver name: plugin \"raw_exec\" { ... }");
		return;
	}
	docker = !strcmp(b->labels[0], "docker");
	bool exec = !strcmp(b->labels[0], "exec");
	if (strcmp(b->labels[0], "raw_exec") && !docker && !exec) {
		cfg_unknown_key(w->dl, b->label_pos[0], "plugin", b->labels[0],
				"the agent configuration", plugins);
		return;
	}
	for (size_t i = 0; i < b->body->n; i++) {
		const struct hcl_item *it = &b->body->items[i];
		if (it->kind != HCL_ITEM_BLOCK || strcmp(it->u.block.type, "config")) {
			unknown_item(w, it, docker ? "plugin \"docker\"" : exec ? "plugin \"exec\""
				     : "plugin \"raw_exec\"", known);
			continue;
		}
		const struct hcl_body *cb = it->u.block.body;
		if (docker) {
			walk_docker_config(w, cb);
			continue;
		}
		if (exec) {
			walk_exec_config(w, cb);
			continue;
		}
		for (size_t j = 0; j < cb->n; j++) {
			const struct hcl_item *ci = &cb->items[j];
			if (ci->kind == HCL_ITEM_ATTRIBUTE && !strcmp(ci->u.attr.name, "enabled")) {
				cfg_read_bool(&ci->u.attr, &w->cfg->client.raw_exec_enabled, w->dl);
				continue;
			}
			unknown_item(w, ci, "plugin \"raw_exec\" config", raw_exec_keys);
		}
	}
}

static void read_sharing(struct walk *w, const struct hcl_attribute *a, enum sched_sharing *out)
{
	char *s = NULL;
	if (cfg_read_string(a, &s, w->dl) < 0)
		return;
	if (sched_sharing_parse(s, out) < 0)
		diag_error(w->dl, a->value->pos.line, a->value->pos.col,
			   "%s: expected \"exclusive\", \"mps\" or \"timeslice\", not \"%s\"",
			   a->name, s);
	free(s);
}

/* timeslice_memory_limit: "off", "warn" or "kill". */
static void read_memory_limit(struct walk *w, const struct hcl_attribute *a,
			      enum agent_gpu_memory_limit *out)
{
	static const char *const names[] = { "off", "warn", "kill" };
	char *s = NULL;
	if (cfg_read_string(a, &s, w->dl) < 0)
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum agent_gpu_memory_limit)i;
			free(s);
			return;
		}
	diag_error(w->dl, a->value->pos.line, a->value->pos.col,
		   "%s: expected \"off\", \"warn\" or \"kill\", not \"%s\"", a->name, s);
	free(s);
}

/* replicas: 1..AGENT_MAX_REPLICAS; with mps at most AGENT_MPS_MAX_CLIENTS
 * (checked by the caller, which knows the mode). */
static int read_replicas(struct walk *w, const struct hcl_attribute *a, int *out)
{
	int64_t v;
	if (cfg_read_int(a, 1, AGENT_MAX_REPLICAS, &v, w->dl) < 0)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* replicas given with a mode that cannot honour it. */
static void check_replicas(struct walk *w, struct hcl_pos pos, const char *where,
			   enum sched_sharing sharing, int replicas)
{
	if (!replicas)
		return;
	if (sharing == SCHED_EXCLUSIVE)
		diag_error(w->dl, pos.line, pos.col,
			   "%s: replicas needs sharing = \"mps\" or \"timeslice\" (an exclusive "
			   "GPU has one tenant)", where);
	else if (sharing == SCHED_MPS && replicas > AGENT_MPS_MAX_CLIENTS)
		diag_error(w->dl, pos.line, pos.col,
			   "%s: replicas %d: an MPS server takes at most %d clients per GPU",
			   where, replicas, AGENT_MPS_MAX_CLIENTS);
}

static void walk_gpu_device(struct walk *w, const struct hcl_block *b)
{
	static const char *const known[] = { "sharing", "replicas", NULL };
	struct agent_config *cfg = w->cfg;
	struct hcl_pos replicas_pos = b->pos;

	if (b->nlabels != 1 || !*b->labels[0]) {
		diag_error(w->dl, b->pos.line, b->pos.col,
			   "block 'device' takes one label, a GPU UUID, NVML index or model: "
			   "device \"GPU-...\" { ... }");
		return;
	}
	if (!strncmp(b->labels[0], "MIG-", 4)) {
		diag_error(w->dl, b->label_pos[0].line, b->label_pos[0].col,
			   "gpu.device \"%s\": a MIG instance is always exclusive (the hardware "
			   "splits its GPU); name the GPU to share whole GPUs", b->labels[0]);
		return;
	}
	enum sched_sharing sharing = cfg->gpu.sharing;
	int replicas = 0;
	bool set = false;
	for (size_t i = 0; i < b->body->n; i++) {
		const struct hcl_item *it = &b->body->items[i];
		if (it->kind == HCL_ITEM_ATTRIBUTE && !strcmp(it->u.attr.name, "sharing")) {
			read_sharing(w, &it->u.attr, &sharing);
			set = true;
			continue;
		}
		if (it->kind == HCL_ITEM_ATTRIBUTE && !strcmp(it->u.attr.name, "replicas")) {
			read_replicas(w, &it->u.attr, &replicas);
			replicas_pos = it->u.attr.pos;
			continue;
		}
		struct hcl_pos pos = it->kind == HCL_ITEM_BLOCK ? it->u.block.pos : it->u.attr.pos;
		cfg_unknown_key(w->dl, pos, it->kind == HCL_ITEM_BLOCK ? "block" : "key",
				it->kind == HCL_ITEM_BLOCK ? it->u.block.type : it->u.attr.name,
				"gpu.device", known);
	}
	if (!set) {
		diag_error(w->dl, b->pos.line, b->pos.col, "gpu.device \"%s\": sharing is required",
			   b->labels[0]);
		return;
	}
	check_replicas(w, replicas_pos, "gpu.device", sharing, replicas);
	for (size_t i = 0; i < cfg->gpu.nr_overrides; i++) {
		if (!strcmp(cfg->gpu.overrides[i].device, b->labels[0])) {
			cfg->gpu.overrides[i].sharing = sharing;
			cfg->gpu.overrides[i].replicas = replicas;
			return;
		}
	}
	if (cfg->gpu.nr_overrides == AGENT_MAX_GPU_OVERRIDES) {
		diag_error(w->dl, b->pos.line, b->pos.col, "gpu: at most %d device blocks",
			   AGENT_MAX_GPU_OVERRIDES);
		return;
	}
	cfg->gpu.overrides = xreallocarray(cfg->gpu.overrides, cfg->gpu.nr_overrides + 1,
					   sizeof(*cfg->gpu.overrides));
	cfg->gpu.overrides[cfg->gpu.nr_overrides++] =
		(struct agent_gpu_override){ xstrdup(b->labels[0]), sharing, replicas };
}

static void read_xids(struct walk *w, const struct hcl_attribute *a)
{
	const struct hcl_expr *v = a->value;
	struct gpu_config *g = &w->cfg->gpu.nvml;
	unsigned xids[GPU_MAX_IGNORED_XIDS];
	size_t n = 0;
	int bad = 0;

	if (v->kind == HCL_STRING && !strcmp(v->u.str.s, "none")) {
		g->nr_ignored_xids = 0;
		return;
	}
	if (v->kind != HCL_LIST) {
		diag_error(w->dl, v->pos.line, v->pos.col,
			   "ignored_xids: expected a list of XID numbers or \"none\", not a %s",
			   hcl_kind_name(v->kind));
		return;
	}
	if (v->u.list.n > GPU_MAX_IGNORED_XIDS) {
		diag_error(w->dl, v->pos.line, v->pos.col, "ignored_xids: at most %d XIDs",
			   GPU_MAX_IGNORED_XIDS);
		return;
	}
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct hcl_expr *e = v->u.list.v[i];
		if (e->kind != HCL_NUMBER || !e->u.num.is_int || e->u.num.i < 0 ||
		    e->u.num.i > 0xffffffffLL) {
			diag_error(w->dl, e->pos.line, e->pos.col,
				   "ignored_xids: entry %zu: expected an XID number", i + 1);
			bad = 1;
			continue;
		}
		xids[n++] = (unsigned)e->u.num.i;
	}
	if (bad)
		return;
	memcpy(g->ignored_xids, xids, n * sizeof(xids[0]));
	g->nr_ignored_xids = n;
}

static void walk_gpu(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "nvml_library", "stats_period", "ignored_xids",
		"sharing", "replicas", "mps_control", "wsl", "sim_file", "device",
		"timeslice_memory_limit", "timeslice_memory_grace", NULL };
	struct agent_config *cfg = w->cfg;
	struct hcl_pos replicas_pos = { 0, 0 };
	int replicas = 0;

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			if (!strcmp(it->u.block.type, "device"))
				walk_gpu_device(w, &it->u.block);
			else
				cfg_unknown_key(w->dl, it->u.block.pos, "block", it->u.block.type,
						"gpu", known);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "nvml_library")) {
			cfg_read_string(a, &cfg->gpu.nvml_library, w->dl);
		} else if (!strcmp(a->name, "stats_period")) {
			cfg_read_duration(a, NS_PER_SEC / 10, &cfg->gpu.nvml.stats_period_ns, w->dl);
		} else if (!strcmp(a->name, "ignored_xids")) {
			read_xids(w, a);
		} else if (!strcmp(a->name, "sharing")) {
			read_sharing(w, a, &cfg->gpu.sharing);
		} else if (!strcmp(a->name, "replicas")) {
			if (read_replicas(w, a, &replicas) == 0)
				replicas_pos = a->pos;
		} else if (!strcmp(a->name, "mps_control")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			if (!*v) {
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "mps_control: expected the path of nvidia-cuda-mps-control, not \"\"");
				free(v);
				continue;
			}
			free(cfg->gpu.mps_control);
			cfg->gpu.mps_control = v;
		} else if (!strcmp(a->name, "wsl")) {
			bool b;
			if (cfg_read_bool(a, &b, w->dl) == 0)
				cfg->gpu.nvml.wsl = b;
		} else if (!strcmp(a->name, "sim_file")) {
			cfg_read_string(a, &cfg->gpu.sim_file, w->dl);
		} else if (!strcmp(a->name, "timeslice_memory_limit")) {
			read_memory_limit(w, a, &cfg->gpu.timeslice_memory_limit);
		} else if (!strcmp(a->name, "timeslice_memory_grace")) {
			int64_t v;
			if (cfg_read_int(a, 1, AGENT_MAX_MEMORY_GRACE, &v, w->dl) == 0)
				cfg->gpu.timeslice_memory_grace = (int)v;
		} else {
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "gpu", known);
		}
	}
	/* Checked after the loop: sharing may come after replicas. */
	if (replicas) {
		check_replicas(w, replicas_pos, "gpu", cfg->gpu.sharing, replicas);
		cfg->gpu.replicas = replicas;
	}
}

static void walk_top(struct walk *w, const struct hcl_body *body)
{
	static const char *const known[] = { "name", "region", "datacenter", "data_dir",
		"bind_addr", "log_level", "ports", "advertise", "server", "client", "plugin",
		"gpu", "acl", "tls", NULL };
	struct agent_config *cfg = w->cfg;
	struct seen seen[] = { { "ports", { 0, 0 } }, { "advertise", { 0, 0 } },
			       { "server", { 0, 0 } }, { "client", { 0, 0 } },
			       { "gpu", { 0, 0 } }, { "acl", { 0, 0 } }, { "tls", { 0, 0 } } };

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_BLOCK) {
			const struct hcl_block *b = &it->u.block;
			if (!strcmp(b->type, "plugin")) {
				walk_plugin(w, b);
				continue;
			}
			if (!strcmp(b->type, "tls")) {
				if (once(seen, sizeof(seen) / sizeof(seen[0]), b, w->dl) &&
				    no_labels(b, w->dl))
					cfg_read_tls(cfg, b->body, w->dl);
				continue;
			}
			void (*walker)(struct walk *, const struct hcl_body *) = NULL;
			if (!strcmp(b->type, "ports"))
				walker = walk_ports;
			else if (!strcmp(b->type, "advertise"))
				walker = walk_advertise;
			else if (!strcmp(b->type, "server"))
				walker = walk_server;
			else if (!strcmp(b->type, "client"))
				walker = walk_client;
			else if (!strcmp(b->type, "gpu"))
				walker = walk_gpu;
			else if (!strcmp(b->type, "acl"))
				walker = walk_acl;
			if (!walker) {
				if (!strcmp(b->type, "addresses") || !strcmp(b->type, "telemetry") ||
				    !strcmp(b->type, "consul") || !strcmp(b->type, "vault"))
					ignored(w, b->pos, b->type, "the agent configuration");
				else
					cfg_unknown_key(w->dl, b->pos, "block", b->type,
							"the agent configuration", known);
				continue;
			}
			if (once(seen, sizeof(seen) / sizeof(seen[0]), b, w->dl) && no_labels(b, w->dl))
				walker(w, b->body);
			continue;
		}
		const struct hcl_attribute *a = &it->u.attr;
		if (!strcmp(a->name, "name")) {
			cfg_read_string(a, &cfg->name, w->dl);
		} else if (!strcmp(a->name, "region")) {
			cfg_read_string(a, &cfg->region, w->dl);
		} else if (!strcmp(a->name, "datacenter")) {
			cfg_read_string(a, &cfg->datacenter, w->dl);
		} else if (!strcmp(a->name, "data_dir")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			if (!*v) {
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "data_dir: expected a directory, not \"\"");
				free(v);
				continue;
			}
			free(cfg->data_dir);
			cfg->data_dir = v;
			cfg->data_dir_is_temp = false;
		} else if (!strcmp(a->name, "bind_addr")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			if (!valid_bind_addr(v)) {
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "bind_addr: expected an address without port, not \"%s\"", v);
				free(v);
				continue;
			}
			free(cfg->bind_addr);
			cfg->bind_addr = v;
		} else if (!strcmp(a->name, "log_level")) {
			char *v = NULL;
			if (cfg_read_string(a, &v, w->dl) < 0)
				continue;
			if (agent_log_level_parse(v, &cfg->log_level) < 0)
				diag_error(w->dl, a->value->pos.line, a->value->pos.col,
					   "log_level: expected trace, debug, info, warn or error, not \"%s\"", v);
			free(v);
		} else if (!strcmp(a->name, "log_file") || !strcmp(a->name, "enable_debug")) {
			ignored(w, a->pos, a->name, "the agent configuration");
		} else {
			cfg_unknown_key(w->dl, a->pos, "key", a->name, "the agent configuration", known);
		}
	}
}

int agent_config_parse(struct agent_config *cfg, const char *text, size_t len,
		       struct diag_list *dl)
{
	size_t errors_before = dl->errors;
	struct hcl_body *body = hcl_parse(text, len, dl);
	if (!body)
		return -EINVAL;

	/* Walk a copy, so that a file with errors changes nothing. */
	struct agent_config next;
	agent_config_copy(&next, cfg);
	struct walk w = { &next, dl };
	walk_top(&w, body);
	hcl_body_free(body);
	if (dl->errors > errors_before) {
		agent_config_release(&next);
		return -EINVAL;
	}
	agent_config_release(cfg);
	*cfg = next;
	cfg->gpu.nvml.library_path = cfg->gpu.nvml_library;
	return 0;
}

#define CONFIG_MAX_FILE (1u << 20)

int agent_config_load_file(struct agent_config *cfg, const char *path, struct diag_list *dl)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	int rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		rc = -errno;
		diag_error(dl, 0, 0, "cannot open the agent configuration: %s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		diag_error(dl, 0, 0, "the agent configuration is not a regular file");
		rc = -EINVAL;
		goto out;
	}
	for (;;) {
		strbuf_grow(&sb, 65536);
		ssize_t n = read(fd, sb.buf + sb.len, sb.alloc - sb.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			diag_error(dl, 0, 0, "cannot read the agent configuration: %s", strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		strbuf_setlen(&sb, sb.len + (size_t)n);
		if (sb.len > CONFIG_MAX_FILE) {
			diag_error(dl, 0, 0, "the agent configuration is larger than %u bytes",
				   CONFIG_MAX_FILE);
			rc = -EFBIG;
			goto out;
		}
	}
	rc = agent_config_parse(cfg, sb.buf, sb.len, dl);
out:
	close(fd);
	strbuf_release(&sb);
	return rc;
}
