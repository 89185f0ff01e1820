/* The task environment and ${...} interpolation; see taskenv.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/taskenv.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct taskenv {
	char **vars;            /* "NAME=value", sorted by name, NULL-terminated */
	size_t n, alloc;
	/* for ${attr.*}, ${node.*}, ${meta.*}: copies */
	struct agent_kv *attrs;
	size_t nr_attrs;
	struct agent_kv *meta;
	size_t nr_meta;
	struct agent_kv node[6];
};

static size_t name_len(const char *var)
{
	return strcspn(var, "=");
}

/* Index of name in the sorted vars, or where it would go. */
static size_t find_var(const struct taskenv *te, const char *name, size_t len, int *found)
{
	size_t lo = 0, hi = te->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *v = te->vars[mid];
		size_t vl = name_len(v);
		int c = memcmp(v, name, vl < len ? vl : len);
		if (c == 0)
			c = vl < len ? -1 : vl > len ? 1 : 0;
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

static void set_var(struct taskenv *te, const char *name, const char *value)
{
	int found;
	size_t len = strlen(name);
	size_t i = find_var(te, name, len, &found);
	char *v = xasprintf("%s=%s", name, value);
	if (found) {
		free(te->vars[i]);
		te->vars[i] = v;
		return;
	}
	ALLOC_GROW(te->vars, te->n + 2, te->alloc);
	memmove(&te->vars[i + 1], &te->vars[i], (te->n - i) * sizeof(char *));
	te->vars[i] = v;
	te->n++;
	te->vars[te->n] = NULL;
}

static const char *get_var(const struct taskenv *te, const char *name, size_t len)
{
	int found;
	size_t i = find_var(te, name, len, &found);
	return found ? te->vars[i] + len + 1 : NULL;
}

const char *taskenv_get(const struct taskenv *te, const char *name)
{
	return get_var(te, name, strlen(name));
}

const char *const *taskenv_envp(const struct taskenv *te)
{
	return (const char *const *)te->vars;
}

size_t taskenv_count(const struct taskenv *te)
{
	return te->n;
}

/* HERD_<x> and NOMAD_<x> with one value. */
static void set_both(struct taskenv *te, const char *suffix, const char *value)
{
	char *name = xasprintf("HERD_%s", suffix);
	set_var(te, name, value);
	free(name);
	name = xasprintf("NOMAD_%s", suffix);
	set_var(te, name, value);
	free(name);
}

static void set_both_int(struct taskenv *te, const char *suffix, long long v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", v);
	set_both(te, suffix, buf);
}

/* A label or meta key as a variable name part: [A-Za-z0-9_]. */
static char *sanitize(const char *prefix, const char *s)
{
	char *out = xasprintf("%s%s", prefix, s);
	for (char *p = out + strlen(prefix); *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '_')
			*p = '_';
	return out;
}

static int valid_env_name(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '.')
			return 0;
	return 1;
}

/* Variables herd sets for GPU shares: a job that set them itself could
 * step out of its share. */
static const char *const mps_vars[] = { "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
	"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" };

static int reserved_env_name(const char *s)
{
	for (size_t i = 0; i < sizeof(mps_vars) / sizeof(mps_vars[0]); i++)
		if (!strcmp(s, mps_vars[i]))
			return 1;
	return !strncmp(s, "HERD_", 5) || !strncmp(s, "NOMAD_", 6) ||
	       !strcmp(s, "CUDA_VISIBLE_DEVICES") || !strcmp(s, "NVIDIA_VISIBLE_DEVICES");
}

/* A fraction of an mps GPU: the task is an MPS client. */
static bool mps_client(const struct taskenv_gpu_share *sh)
{
	return sh->sharing == SCHED_MPS && !sh->whole &&
	       ((sh->compute_milli > 0 && sh->compute_milli < 1000) || sh->memory_mib > 0);
}

/* Checks the shares before anything is built (no side effects on failure). */
static int check_shares(const struct taskenv_input *in, struct herd_err *err)
{
	const struct taskenv_gpu_share *first = NULL;
	for (size_t i = 0; in->gpu_shares && i < in->nr_gpus; i++) {
		const struct taskenv_gpu_share *sh = &in->gpu_shares[i];
		if (!mps_client(sh))
			continue;
		if (!sh->mps_pipe_dir || !*sh->mps_pipe_dir || !sh->mps_log_dir ||
		    !*sh->mps_log_dir)
			return herd_errf(err, -EINVAL, "task environment: GPU %s is shared "
					 "through MPS but has no MPS control daemon", in->gpu_uuids[i]);
		if (first && strcmp(first->mps_pipe_dir, sh->mps_pipe_dir))
			return herd_errf(err, -EINVAL, "task environment: fractions of two MPS "
					 "GPUs (%s and another): a task talks to one MPS daemon",
					 in->gpu_uuids[i]);
		first = sh;
	}
	return 0;
}

static void set_shares(struct taskenv *te, const struct taskenv_input *in)
{
	struct strbuf mem = STRBUF_INIT;
	for (size_t i = 0; in->gpu_shares && i < in->nr_gpus; i++) {
		const struct taskenv_gpu_share *sh = &in->gpu_shares[i];
		if (!mps_client(sh))
			continue;
		set_var(te, "CUDA_MPS_PIPE_DIRECTORY", sh->mps_pipe_dir);
		set_var(te, "CUDA_MPS_LOG_DIRECTORY", sh->mps_log_dir);
		if (sh->compute_milli > 0 && sh->compute_milli < 1000) {
			char pct[16];
			/* Rounded up: a 0.5% share must not become 0 (no limit). */
			snprintf(pct, sizeof(pct), "%d", (sh->compute_milli + 9) / 10);
			set_var(te, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct);
		}
		if (sh->memory_mib > 0)
			strbuf_addf(&mem, "%s%zu=%lldM", mem.len ? "," : "", i,
				    (long long)sh->memory_mib);
	}
	if (mem.len)
		set_var(te, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", mem.buf);
	strbuf_release(&mem);
}

static void copy_kvs(struct agent_kv **dst, size_t *nr, const void *src, size_t n, int attr)
{
	*dst = n ? xcalloc(n, sizeof(**dst)) : NULL;
	for (size_t i = 0; i < n; i++) {
		const char *k, *v;
		if (attr) {
			k = ((const struct node_attr *)src)[i].name;
			v = ((const struct node_attr *)src)[i].value;
		} else {
			k = ((const struct agent_kv *)src)[i].key;
			v = ((const struct agent_kv *)src)[i].value;
		}
		(*dst)[i].key = xstrdup(k);
		(*dst)[i].value = xstrdup(v ? v : "");
	}
	*nr = n;
}

static void set_gpus(struct taskenv *te, const struct taskenv_input *in)
{
	struct strbuf ids = STRBUF_INIT;
	for (size_t i = 0; i < in->nr_gpus; i++)
		strbuf_addf(&ids, "%s%s", i ? "," : "", in->gpu_uuids[i]);
	set_var(te, "CUDA_VISIBLE_DEVICES", ids.buf);
	set_var(te, "NVIDIA_VISIBLE_DEVICES", in->nr_gpus ? ids.buf : "void");
	set_var(te, "HERD_GPU_IDS", ids.buf);
	strbuf_release(&ids);
}

/* HERD_VOLUME_<NAME>: herd's own (Nomad has no such variable), the name
 * upper case as job validation checked it (no two volumes share one). */
static void set_volumes(struct taskenv *te, const struct taskenv_input *in)
{
	for (size_t i = 0; i < in->nr_volumes; i++) {
		char *name = sanitize("HERD_VOLUME_", in->volumes[i].key);
		for (char *p = name; *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		set_var(te, name, in->volumes[i].value);
		free(name);
	}
}

static void set_ports(struct taskenv *te, const struct taskenv_input *in)
{
	for (size_t i = 0; i < in->nr_ports; i++) {
		const struct taskenv_port *p = &in->ports[i];
		const char *ip = p->ip && *p->ip ? p->ip : "127.0.0.1";
		char *name, buf[320];
		name = sanitize("PORT_", p->label);
		set_both_int(te, name, p->value);
		free(name);
		name = sanitize("HOST_PORT_", p->label);
		set_both_int(te, name, p->host_value ? p->host_value : p->value);
		free(name);
		name = sanitize("IP_", p->label);
		set_both(te, name, ip);
		free(name);
		if (strchr(ip, ':'))
			snprintf(buf, sizeof(buf), "[%s]:%d", ip, p->host_value ? p->host_value : p->value);
		else
			snprintf(buf, sizeof(buf), "%s:%d", ip, p->host_value ? p->host_value : p->value);
		name = sanitize("ADDR_", p->label);
		set_both(te, name, buf);
		free(name);
	}
}

/* HERD_GANG_*: what a member needs to find its peers (torchrun's
 * --nnodes, --node_rank, --master_addr, --master_port). */
static void set_gang(struct taskenv *te, const struct taskenv_gang *g)
{
	struct strbuf hosts = STRBUF_INIT;
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", g->size);
	set_var(te, "HERD_GANG_SIZE", buf);
	snprintf(buf, sizeof(buf), "%d", g->rank);
	set_var(te, "HERD_GANG_RANK", buf);
	set_var(te, "HERD_GANG_LEADER_IP", g->leader_ip && *g->leader_ip ? g->leader_ip : "127.0.0.1");
	for (size_t i = 0; i < g->nr_leader_ports; i++) {
		const struct taskenv_port *p = &g->leader_ports[i];
		char *name = sanitize("HERD_GANG_LEADER_PORT_", p->label ? p->label : "");
		snprintf(buf, sizeof(buf), "%d", p->host_value ? p->host_value : p->value);
		set_var(te, name, buf);
		free(name);
	}
	for (int i = 0; g->hosts && i < g->size; i++) {
		const char *h = g->hosts[i] && *g->hosts[i] ? g->hosts[i] : "127.0.0.1";
		strbuf_addf(&hosts, "%s%s", i ? "," : "", h);
	}
	set_var(te, "HERD_GANG_HOSTS", hosts.len ? hosts.buf : "");
	strbuf_release(&hosts);
}

int taskenv_build(const struct taskenv_input *in, struct taskenv **out, struct herd_err *err)
{
	if (!in->alloc_id || !in->job_id || !in->group || !in->task || !in->alloc_dir ||
	    !in->task_dir)
		return herd_errf(err, -EINVAL, "task environment: alloc_id, job_id, group, task, "
				 "alloc_dir and task_dir are required");
	for (size_t i = 0; i < in->nr_gpus; i++)
		if (!in->gpu_uuids[i] || !*in->gpu_uuids[i] || strchr(in->gpu_uuids[i], ','))
			return herd_errf(err, -EINVAL, "task environment: bad GPU id '%s'",
					 in->gpu_uuids[i] ? in->gpu_uuids[i] : "");
	int rc = check_shares(in, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < in->nr_env; i++) {
		const char *k = in->env[i].key;
		if (!valid_env_name(k))
			return herd_errf(err, -EINVAL, "env %s: expected a variable name "
					 "(letters, digits, '_', '.')", k);
		if (reserved_env_name(k))
			return herd_errf(err, -EINVAL, "env %s: herd sets this variable itself "
					 "(from the allocation and its assigned GPUs)", k);
	}

	struct taskenv *te = xcalloc(1, sizeof(*te));
	ALLOC_GROW(te->vars, 1, te->alloc);
	te->vars[0] = NULL;
	copy_kvs(&te->attrs, &te->nr_attrs, in->attrs, in->nr_attrs, 1);
	copy_kvs(&te->meta, &te->nr_meta, in->node_meta, in->nr_node_meta, 0);
	const struct taskenv_node nonode = { 0 };
	const struct taskenv_node *n = in->node ? in->node : &nonode;
	const char *node_keys[6] = { "unique.id", "unique.name", "datacenter", "class",
				     "region", "pool" };
	const char *node_vals[6] = { n->id, n->name, n->datacenter, n->node_class, n->region,
				     n->pool };
	for (size_t i = 0; i < 6; i++) {
		te->node[i].key = xstrdup(node_keys[i]);
		te->node[i].value = node_vals[i] ? xstrdup(node_vals[i]) : NULL;
	}

	set_var(te, "PATH", DEFAULT_PATH);
	set_both(te, "ALLOC_ID", in->alloc_id);
	char shortid[9];
	snprintf(shortid, sizeof(shortid), "%s", in->alloc_id);
	set_both(te, "SHORT_ALLOC_ID", shortid);
	if (in->alloc_name)
		set_both(te, "ALLOC_NAME", in->alloc_name);
	if (in->alloc_index >= 0)
		set_both_int(te, "ALLOC_INDEX", in->alloc_index);
	set_both(te, "ALLOC_DIR", in->alloc_dir);
	set_both(te, "TASK_DIR", in->task_dir);
	char *secrets = in->secrets_dir ? xstrdup(in->secrets_dir)
					: xasprintf("%s/secrets", in->task_dir);
	set_both(te, "SECRETS_DIR", secrets);
	free(secrets);
	set_both(te, "JOB_ID", in->job_id);
	set_both(te, "JOB_NAME", in->job_name ? in->job_name : in->job_id);
	set_both(te, "GROUP_NAME", in->group);
	set_both(te, "TASK_NAME", in->task);
	set_both(te, "NAMESPACE", in->namespace_ ? in->namespace_ : "default");
	if (n->datacenter)
		set_both(te, "DC", n->datacenter);
	if (n->region)
		set_both(te, "REGION", n->region);
	if (in->cpu_mhz > 0)
		set_both_int(te, "CPU_LIMIT", in->cpu_mhz);
	if (in->memory_mib > 0)
		set_both_int(te, "MEMORY_LIMIT", in->memory_mib);
	if (in->cpu_cores && *in->cpu_cores)
		set_both(te, "CPU_CORES", in->cpu_cores);
	/* the task's own token (task_identity.c) and where to use it */
	if (in->workload_token && *in->workload_token)
		set_both(te, "TOKEN", in->workload_token);
	for (size_t i = 0; i < in->nr_named_tokens; i++) {
		/* the name is [A-Za-z0-9_] (job_identity.c) */
		char *name = xasprintf("TOKEN_%s", in->named_tokens[i].key);
		set_both(te, name, in->named_tokens[i].value);
		free(name);
	}
	if (((in->workload_token && *in->workload_token) || in->nr_named_tokens) &&
	    in->server_addr && *in->server_addr)
		set_both(te, "ADDR", in->server_addr);
	for (size_t i = 0; i < in->nr_task_meta; i++) {
		char *name = sanitize("META_", in->task_meta[i].key);
		set_both(te, name, in->task_meta[i].value);
		free(name);
	}
	set_ports(te, in);
	set_volumes(te, in);
	if (in->gang)
		set_gang(te, in->gang);
	set_gpus(te, in);
	set_shares(te, in);

	/* The job's env last, interpolated against everything above (and not
	 * against each other: their order in a map is not defined). */
	char **vals = in->nr_env ? xcalloc(in->nr_env, sizeof(char *)) : NULL;
	for (size_t i = 0; i < in->nr_env && rc == 0; i++) {
		rc = taskenv_interpolate(te, in->env[i].value, &vals[i], err);
		if (rc < 0)
			herd_err_prefix(err, "env %s", in->env[i].key);
	}
	for (size_t i = 0; i < in->nr_env; i++) {
		if (rc == 0)
			set_var(te, in->env[i].key, vals[i]);
		free(vals[i]);
	}
	free(vals);
	if (rc < 0) {
		taskenv_free(te);
		return rc;
	}
	*out = te;
	return 0;
}

void taskenv_free(struct taskenv *te)
{
	if (!te)
		return;
	for (size_t i = 0; i < te->n; i++)
		free(te->vars[i]);
	free(te->vars);
	for (size_t i = 0; i < te->nr_attrs; i++) {
		free(te->attrs[i].key);
		free(te->attrs[i].value);
	}
	free(te->attrs);
	for (size_t i = 0; i < te->nr_meta; i++) {
		free(te->meta[i].key);
		free(te->meta[i].value);
	}
	free(te->meta);
	for (size_t i = 0; i < 6; i++) {
		free(te->node[i].key);
		free(te->node[i].value);
	}
	free(te);
}

static const char *kv_lookup(const struct agent_kv *kv, size_t n, const char *key, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(kv[i].key) == len && !memcmp(kv[i].key, key, len))
			return kv[i].value;
	return NULL;
}

/* The value of one reference (the text between "${" and "}"), or NULL. */
static const char *resolve(const struct taskenv *te, const char *ref, size_t len)
{
	while (len && *ref == ' ') {
		ref++;
		len--;
	}
	while (len && ref[len - 1] == ' ')
		len--;
	if (len > 5 && !memcmp(ref, "attr.", 5))
		return kv_lookup(te->attrs, te->nr_attrs, ref + 5, len - 5);
	if (len > 5 && !memcmp(ref, "meta.", 5))
		return kv_lookup(te->meta, te->nr_meta, ref + 5, len - 5);
	if (len > 5 && !memcmp(ref, "node.", 5))
		return kv_lookup(te->node, 6, ref + 5, len - 5);
	if (len > 4 && !memcmp(ref, "env.", 4))
		return get_var(te, ref + 4, len - 4);
	return get_var(te, ref, len);
}

int taskenv_interpolate(const struct taskenv *te, const char *s, char **out,
			struct herd_err *err)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = s;
	while (*p) {
		if (p[0] == '$' && p[1] == '$' && p[2] == '{') {
			strbuf_adds(&sb, "${");
			p += 3;
			continue;
		}
		if (p[0] == '$' && p[1] == '{') {
			const char *close = strchr(p + 2, '}');
			if (!close) {
				strbuf_release(&sb);
				return herd_errf(err, -EINVAL, "unterminated \"${\" at offset %zu of "
						 "\"%s\"", (size_t)(p - s), s);
			}
			const char *v = resolve(te, p + 2, (size_t)(close - p - 2));
			if (v)
				strbuf_adds(&sb, v);
			else
				strbuf_add(&sb, p, (size_t)(close - p + 1));
			p = close + 1;
			continue;
		}
		strbuf_addch(&sb, *p++);
	}
	*out = strbuf_detach(&sb, NULL);
	return 0;
}
