/* alloc_env: the environment a task starts with.  Nothing of the agent's
 * own environment leaks in except PATH (and LANG), as in Nomad's raw_exec.
 *
 *   HERD_ALLOC_ID, HERD_ALLOC_NAME, HERD_ALLOC_INDEX, HERD_ALLOC_DIR,
 *   HERD_TASK_DIR, HERD_SECRETS_DIR, HERD_TASK_NAME, HERD_GROUP_NAME,
 *   HERD_JOB_ID, HERD_JOB_NAME, HERD_NAMESPACE, HERD_DC, HERD_NODE_ID,
 *   HERD_NODE_NAME, HERD_CPU_LIMIT, HERD_MEMORY_LIMIT, HERD_PORT_<label>,
 *   HERD_HOST_PORT_<label>, HERD_IP_<label>, HERD_ADDR_<label>
 *   and the same with NOMAD_ in place of HERD_ (job files written for Nomad);
 *   CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES: the assigned device
 *   UUIDs (MIG UUIDs for slices), "void" for NVIDIA_ when none;
 *   then the task's env block, whose values may use ${NAME} of the above. */
#include <stdlib.h>
#include <string.h>

#include "agent/client-int.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

struct envb {
	char **v;
	size_t n, alloc;
};

static void env_set(struct envb *e, const char *k, const char *v)
{
	size_t klen = strlen(k);
	char *kv = xasprintf("%s=%s", k, v ? v : "");

	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], k, klen) && e->v[i][klen] == '=') {
			free(e->v[i]);
			e->v[i] = kv;
			return;
		}
	ALLOC_GROW(e->v, e->n + 2, e->alloc);
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
}

/* HERD_<name> and NOMAD_<name>. */
static void env_both(struct envb *e, const char *name, const char *v)
{
	char *k = xasprintf("HERD_%s", name);
	env_set(e, k, v);
	free(k);
	k = xasprintf("NOMAD_%s", name);
	env_set(e, k, v);
	free(k);
}

static const char *env_get(const struct envb *e, const char *k, size_t klen)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], k, klen) && e->v[i][klen] == '=')
			return e->v[i] + klen + 1;
	return NULL;
}

/* ${NAME} and ${env.NAME} from what is set so far; unknown names stay. */
static char *interpolate(const struct envb *e, const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	while (*s) {
		const char *end;
		if (s[0] == '$' && s[1] == '{' && (end = strchr(s + 2, '}'))) {
			const char *name = s + 2;
			size_t len = (size_t)(end - name);
			const char *v;
			if (len > 4 && !strncmp(name, "env.", 4)) {
				name += 4;
				len -= 4;
			}
			v = env_get(e, name, len);
			if (v) {
				strbuf_adds(&sb, v);
				s = end + 1;
				continue;
			}
		}
		strbuf_addch(&sb, *s++);
	}
	return strbuf_detach(&sb, NULL);
}

char **alloc_task_env(struct alloc_runner *ar, struct task_runner *tr)
{
	struct envb e = { NULL, 0, 0 };
	const json_t *a = ar->alloc, *res = json_object_get(a, "resources"), *d;
	const char *path = getenv("PATH"), *lang = getenv("LANG");
	struct strbuf devs = STRBUF_INIT;
	char *s;
	size_t i;

	ALLOC_GROW(e.v, 1, e.alloc);
	e.v[0] = NULL;
	env_set(&e, "PATH", path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (lang)
		env_set(&e, "LANG", lang);
	env_both(&e, "ALLOC_ID", ar->id);
	env_both(&e, "ALLOC_NAME", json_string_value(json_object_get(a, "name")));
	s = xasprintf("%lld", (long long)json_integer_value(json_object_get(a, "index")));
	env_both(&e, "ALLOC_INDEX", s);
	free(s);
	s = xasprintf("%s/alloc", ar->dir);
	env_both(&e, "ALLOC_DIR", s);
	free(s);
	s = xasprintf("%s/local", tr->dir);
	env_both(&e, "TASK_DIR", s);
	free(s);
	s = xasprintf("%s/secrets", tr->dir);
	env_both(&e, "SECRETS_DIR", s);
	free(s);
	env_both(&e, "TASK_NAME", tr->task->name);
	env_both(&e, "GROUP_NAME", ar->group->name);
	env_both(&e, "JOB_ID", ar->job->id);
	env_both(&e, "JOB_NAME", ar->job->name ? ar->job->name : ar->job->id);
	env_both(&e, "NAMESPACE", ar->job->namespace);
	env_both(&e, "DC", ar->c->cfg->datacenter ? ar->c->cfg->datacenter : "dc1");
	env_both(&e, "REGION", ar->c->cfg->region ? ar->c->cfg->region : "global");
	env_both(&e, "NODE_ID", ar->c->node_id);
	env_both(&e, "NODE_NAME", json_string_value(json_object_get(a, "node_name")));
	s = xasprintf("%lld", (long long)tr->task->resources.cpu);
	env_both(&e, "CPU_LIMIT", s);
	free(s);
	s = xasprintf("%lld", (long long)tr->task->resources.memory);
	env_both(&e, "MEMORY_LIMIT", s);
	free(s);
	json_array_foreach(json_object_get(res, "ports"), i, d) {
		const char *label = json_string_value(json_object_get(d, "label"));
		long long v = json_integer_value(json_object_get(d, "value"));
		long long to = json_integer_value(json_object_get(d, "to"));
		char *k, *val;
		if (!label)
			continue;
		val = xasprintf("%lld", to > 0 ? to : v);
		k = xasprintf("PORT_%s", label);
		env_both(&e, k, val);
		free(k);
		free(val);
		val = xasprintf("%lld", v);
		k = xasprintf("HOST_PORT_%s", label);
		env_both(&e, k, val);
		free(k);
		free(val);
		k = xasprintf("IP_%s", label);
		env_both(&e, k, "127.0.0.1");
		free(k);
		val = xasprintf("127.0.0.1:%lld", v);
		k = xasprintf("ADDR_%s", label);
		env_both(&e, k, val);
		free(k);
		free(val);
	}
	/* The allocation's devices are the group's; every task of it sees
	 * them (a task's own device request is part of the same placement). */
	json_array_foreach(json_object_get(res, "devices"), i, d) {
		const char *id = json_string_value(json_object_get(d, "id"));
		if (id)
			strbuf_addf(&devs, "%s%s", devs.len ? "," : "", id);
	}
	if (devs.len) {
		env_set(&e, "CUDA_VISIBLE_DEVICES", devs.buf);
		env_set(&e, "NVIDIA_VISIBLE_DEVICES", devs.buf);
	} else {
		/* Without GPUs a task sees none, rather than all of them. */
		env_set(&e, "CUDA_VISIBLE_DEVICES", "");
		env_set(&e, "NVIDIA_VISIBLE_DEVICES", "void");
	}
	strbuf_release(&devs);
	/* Ports by label in both naming schemes done; now the task's env. */
	for (size_t k = 0; k < tr->task->env.n; k++) {
		char *v = interpolate(&e, tr->task->env.v[k].value);
		env_set(&e, tr->task->env.v[k].key, v);
		free(v);
	}
	return e.v;
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}
