/* task_prepare: what happens to a task between "received" and "started":
 * its environment (taskenv.h), its templates (template.h), its artifacts
 * (artifact.h) and the ${...} interpolation of its config and args.
 *
 * Order (Nomad's): environment, artifacts, templates (a template may read
 * an artifact as its source), then the driver's config is interpolated.
 * Templates with `env = true` are rendered before the environment is
 * final: their KEY=VALUE lines join the job's env, and the environment is
 * built again with them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/artifact.h"
#include "agent/client-int.h"
#include "agent/cores.h"
#include "agent/taskenv.h"
#include "agent/template.h"
#include "common/base64.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define ENV_TEMPLATE_MAX_VARS 256

/* job, group and task meta, later ones overriding earlier ones. */
static void add_meta(struct agent_kv **v, size_t *n, size_t *alloc, const struct job_map *m)
{
	for (size_t i = 0; i < m->n; i++) {
		size_t k;
		for (k = 0; k < *n; k++)
			if (!strcmp((*v)[k].key, m->v[i].key))
				break;
		if (k == *n) {
			ALLOC_GROW(*v, *n + 1, *alloc);
			(*n)++;
		}
		/* Borrowed strings: the job outlives the environment build. */
		(*v)[k].key = m->v[i].key;
		(*v)[k].value = m->v[i].value;
	}
}

bool alloc_device_of_task(const json_t *dev, const char *task)
{
	const char *owner = json_string_value(json_object_get(dev, "task"));
	/* no owner recorded (a server before per-task devices): every task of
	 * the allocation sees the device, as it did then */
	return !owner || !task || !strcmp(owner, task);
}

/* The task's assigned device ids (GPU-/MIG- UUIDs), in the allocation's
 * order; borrowed from the allocation JSON.  NULL-terminated. */
const char **task_gpu_ids(const struct alloc_runner *ar, const char *task, size_t *n)
{
	const json_t *devs = json_object_get(json_object_get(ar->alloc, "resources"), "devices");
	const char **v = xcalloc(json_array_size(devs) + 1, sizeof(*v));
	size_t i, k = 0;
	json_t *d;

	json_array_foreach(devs, i, d) {
		const char *id = json_string_value(json_object_get(d, "id"));
		if (id && alloc_device_of_task(d, task))
			v[k++] = id;
	}
	*n = k;
	return v;
}

/* The ports of a gang member's record as taskenv ports (host ports);
 * *n of them in a new array. */
static struct taskenv_port *gang_ports(const json_t *member, size_t *n)
{
	const json_t *ports = json_object_get(member, "ports"), *p;
	struct taskenv_port *out = xcalloc(json_array_size(ports) + 1, sizeof(*out));
	size_t i;

	json_array_foreach(ports, i, p) {
		out[i].label = json_string_value(json_object_get(p, "label"));
		out[i].value = (int)json_integer_value(json_object_get(p, "value"));
		out[i].host_value = out[i].value;
	}
	*n = json_array_size(ports);
	return out;
}

/* The allocation's gang record (written by the server when it placed the
 * members together) as taskenv's input; false when the allocation is no
 * gang member.  The strings point into alloc; free g->leader_ports and
 * g->hosts. */
static bool gang_input(const json_t *alloc, struct taskenv_gang *g)
{
	const json_t *gang = json_object_get(alloc, "gang"), *members, *m;
	const char **hosts;
	size_t i;

	memset(g, 0, sizeof(*g));
	members = json_object_get(gang, "members");
	g->size = (int)json_integer_value(json_object_get(gang, "size"));
	g->rank = (int)json_integer_value(json_object_get(gang, "rank"));
	if (!json_is_array(members) || g->size <= 0 || (size_t)g->size != json_array_size(members))
		return false;
	hosts = xcalloc((size_t)g->size, sizeof(*hosts));
	json_array_foreach(members, i, m) {
		hosts[i] = json_string_value(json_object_get(m, "address"));
		if (json_integer_value(json_object_get(m, "rank")) == 0 && !g->leader_ports) {
			g->leader_ip = hosts[i];
			g->leader_ports = gang_ports(m, &g->nr_leader_ports);
		}
	}
	g->hosts = hosts;
	return true;
}

static int build_env(struct task_runner *tr, const struct agent_kv *extra, size_t nextra,
		     struct taskenv **out, struct herd_err *err)
{
	struct alloc_runner *ar = tr->ar;
	const struct agent_config *cfg = ar->c->cfg;
	const json_t *ports = json_object_get(json_object_get(ar->alloc, "resources"), "ports");
	struct taskenv_input in;
	struct taskenv_node node;
	struct taskenv_gang gang;
	struct taskenv_port *tp = xcalloc(json_array_size(ports) + 1, sizeof(*tp));
	struct agent_kv *meta = NULL, *env = NULL;
	size_t nmeta = 0, ameta = 0, nenv = 0, i, ngpus;
	const char **gpus = task_gpu_ids(ar, tr->task->name, &ngpus);
	char *alloc_dir = xasprintf("%s/alloc", ar->dir);
	json_t *p;
	int rc;

	memset(&in, 0, sizeof(in));
	memset(&node, 0, sizeof(node));
	json_array_foreach(ports, i, p) {
		int value = (int)json_integer_value(json_object_get(p, "value"));
		int to = (int)json_integer_value(json_object_get(p, "to"));
		tp[i].label = json_string_value(json_object_get(p, "label"));
		tp[i].ip = "127.0.0.1";
		/* raw_exec and exec share the host's network: the task listens
		 * on the host port; docker maps to `to`. */
		tp[i].value = strcmp(tr->task->driver, "docker") ? value : (to > 0 ? to : value);
		tp[i].host_value = value;
		if (!tp[i].label)
			tp[i].label = "";
	}
	add_meta(&meta, &nmeta, &ameta, &ar->job->meta);
	add_meta(&meta, &nmeta, &ameta, &ar->group->meta);
	add_meta(&meta, &nmeta, &ameta, &tr->task->meta);
	env = xcalloc(tr->task->env.n + nextra + 1, sizeof(*env));
	for (i = 0; i < tr->task->env.n; i++) {
		env[nenv].key = tr->task->env.v[i].key;
		env[nenv++].value = tr->task->env.v[i].value;
	}
	for (i = 0; i < nextra; i++)
		env[nenv++] = extra[i];

	node.id = ar->c->node_id;
	node.name = json_string_value(json_object_get(ar->alloc, "node_name"));
	node.datacenter = cfg->datacenter ? cfg->datacenter : "dc1";
	node.node_class = cfg->client.node_class ? cfg->client.node_class : "";
	node.region = cfg->region ? cfg->region : "global";
	node.pool = cfg->client.node_pool ? cfg->client.node_pool : "default";

	in.alloc_id = ar->id;
	in.alloc_name = json_string_value(json_object_get(ar->alloc, "name"));
	in.alloc_index = json_is_integer(json_object_get(ar->alloc, "index"))
				 ? (int)json_integer_value(json_object_get(ar->alloc, "index"))
				 : -1;
	in.namespace_ = ar->job->namespace;
	in.job_id = ar->job->id;
	in.job_name = ar->job->name;
	in.group = ar->group->name;
	in.task = tr->task->name;
	in.alloc_dir = alloc_dir;
	in.task_dir = tr->dir;
	in.cpu_mhz = tr->task->resources.cpu;
	in.memory_mib = tr->task->resources.memory;
	struct cpulist cores;
	char *cores_list = cores_of_task(ar->alloc, tr->task->name, &cores) ? cpulist_str(&cores) : NULL;
	in.cpu_cores = cores_list;
	in.gpu_uuids = gpus;
	in.nr_gpus = ngpus;
	in.ports = tp;
	in.nr_ports = json_array_size(ports);
	if (gang_input(ar->alloc, &gang))
		in.gang = &gang;
	in.node = &node;
	if (ar->fp) {
		in.attrs = ar->fp->fp->attrs;
		in.nr_attrs = ar->fp->fp->nr_attrs;
	}
	in.node_meta = cfg->client.meta;
	in.nr_node_meta = cfg->client.nr_meta;
	in.task_meta = meta;
	in.nr_task_meta = nmeta;
	in.env = env;
	in.nr_env = nenv;
	/* the workload tokens the environment gets (task_identity.c) */
	struct agent_kv *named = xcalloc(tr->nwi + 1, sizeof(*named));
	size_t nnamed = 0;
	for (i = 0; i < tr->nwi; i++) {
		const char *name, *tok = task_identity_token(tr, i, &name);
		if (tok && !name)
			in.workload_token = tok;
		else if (tok)
			named[nnamed++] = (struct agent_kv){ (char *)name, (char *)tok };
	}
	in.named_tokens = named;
	in.nr_named_tokens = nnamed;
	in.server_addr = tr->wi_addr;
	/* Host volumes: where the task reaches each (raw_exec: the host path,
	 * it has no mount namespace; exec and docker: the destination). */
	struct driver_volume *vols = NULL;
	size_t nvols = 0;
	struct agent_kv *venv = NULL;
	rc = task_volumes(tr, &vols, &nvols, err);
	if (rc < 0)
		goto out;
	venv = nvols ? xcalloc(nvols, sizeof(*venv)) : NULL;
	for (i = 0; i < nvols; i++) {
		bool raw = !strcmp(tr->task->driver, "raw_exec");
		venv[i].key = (char *)vols[i].name;
		venv[i].value = (char *)(raw ? vols[i].host_path : vols[i].destination);
	}
	in.volumes = venv;
	in.nr_volumes = nvols;
	/* Shares of sharing GPUs: MPS limits (mps_task.c, taskenv.h). */
	struct taskenv_gpu_share *shares = NULL;
	size_t nshares = 0;
	rc = client_gpu_shares(ar->c, ar->alloc, tr->task->name, &shares, &nshares, err);
	if (rc == 0 && nshares == ngpus)
		in.gpu_shares = shares;
	if (rc == 0)
		rc = taskenv_build(&in, out, err);
	free(shares);
out:
	free(named);
	free(vols);
	free(venv);
	free(tp);
	free((void *)gang.leader_ports);
	free((void *)gang.hosts);
	free(meta);
	free(env);
	free(gpus);
	free(cores_list);
	free(alloc_dir);
	return rc;
}

/* KEY=VALUE lines of an env template into *vars (strings owned by *buf). */
static int parse_env_lines(char *text, struct agent_kv *vars, size_t *n, struct herd_err *err)
{
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n'), *eq;
		if (nl)
			*nl = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line && *line != '#') {
			eq = strchr(line, '=');
			if (!eq || eq == line)
				return herd_errf(err, -EINVAL,
						 "env template: expected KEY=VALUE, got \"%.40s\"", line);
			if (*n >= ENV_TEMPLATE_MAX_VARS)
				return herd_errf(err, -E2BIG, "env template: more than %d variables",
						 ENV_TEMPLATE_MAX_VARS);
			*eq = '\0';
			vars[*n].key = line;
			vars[(*n)++].value = eq + 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

int task_prepare_env(struct task_runner *tr, struct herd_err *err)
{
	struct taskenv *te = NULL, *te2 = NULL;
	struct agent_kv vars[ENV_TEMPLATE_MAX_VARS];
	char **texts = NULL;
	size_t nvars = 0, ntexts = 0;
	int rc;

	if ((rc = build_env(tr, NULL, 0, &te, err)) < 0)
		return rc;
	texts = xcalloc(tr->task->ntemplates + 1, sizeof(*texts));
	for (size_t i = 0; i < tr->task->ntemplates; i++) {
		const struct job_template *t = &tr->task->templates[i];
		if (!t->env)
			continue;
		if ((rc = task_template_render(tr, t, te, &texts[ntexts], err)) < 0)
			goto out;
		if ((rc = parse_env_lines(texts[ntexts++], vars, &nvars, err)) < 0)
			goto out;
	}
	if (nvars) {
		if ((rc = build_env(tr, vars, nvars, &te2, err)) < 0)
			goto out;
		taskenv_free(te);
		te = te2;
	}
	taskenv_free(tr->te);
	tr->te = te;
	te = NULL;
	rc = 0;
out:
	for (size_t i = 0; i < ntexts; i++)
		free(texts[i]);
	free(texts);
	taskenv_free(te);
	return rc;
}

int task_write_payload(struct task_runner *tr, struct herd_err *err)
{
	const struct job_dispatch_payload *d = tr->task->dispatch_payload;
	const json_t *p = json_object_get(tr->ar->job_json, "payload");
	unsigned char *bytes;
	size_t n = 0;
	char *dest;
	int rc;

	/* a job that was not dispatched with a payload writes nothing */
	if (!d || !json_is_string(p))
		return 0;
	bytes = base64_decode(json_string_value(p), &n);
	if (!bytes)
		return herd_errf(err, -EINVAL, "the dispatched payload is not base64");
	/* validation kept file relative and without ".."; template_write_file
	 * refuses a path that leaves the task dir all the same */
	dest = xasprintf("local/%s", d->file);
	rc = template_write_file(tr->dir, dest, bytes, n, 0644, err);
	free(dest);
	free(bytes);
	return rc;
}

static const char *map_get(const struct job_map *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].key, key))
			return m->v[i].value;
	return NULL;
}

static bool artifact_cancelled(void *arg)
{
	return task_runner_should_stop(arg);
}

int task_fetch_artifacts(struct task_runner *tr, struct herd_err *err)
{
	for (size_t i = 0; i < tr->task->nartifacts; i++) {
		const struct job_artifact *a = &tr->task->artifacts[i];
		struct artifact_spec spec;
		struct artifact_opts opts;
		const char **headers = xcalloc(a->headers.n + 1, sizeof(*headers));
		char *source = NULL, *dest = NULL;
		int rc;

		memset(&spec, 0, sizeof(spec));
		memset(&opts, 0, sizeof(opts));
		if ((rc = taskenv_interpolate(tr->te, a->source, &source, err)) < 0 ||
		    (a->destination &&
		     (rc = taskenv_interpolate(tr->te, a->destination, &dest, err)) < 0)) {
			free(source);
			free(headers);
			return rc;
		}
		for (size_t k = 0; k < a->headers.n; k++)
			headers[k] = xasprintf("%s: %s", a->headers.v[k].key, a->headers.v[k].value);
		spec.source = source;
		spec.destination = dest;
		spec.mode = a->mode;
		spec.checksum = map_get(&a->options, "checksum");
		spec.archive = map_get(&a->options, "archive");
		spec.headers = headers;
		/* a download outlasts no stop nor the time limit */
		opts.cancelled = artifact_cancelled;
		opts.cancel_arg = tr;
		rc = artifact_fetch(tr->dir, &spec, &opts, err);
		for (size_t k = 0; k < a->headers.n; k++)
			free((char *)headers[k]);
		free(headers);
		free(source);
		free(dest);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Interpolates every string of a JSON value (keys stay as written). */
static int interpolate_json(const struct taskenv *te, json_t *v, struct herd_err *err)
{
	const char *key;
	json_t *x;
	size_t i;
	int rc;

	if (json_is_string(v)) {
		char *s = NULL;
		if ((rc = taskenv_interpolate(te, json_string_value(v), &s, err)) < 0)
			return rc;
		json_string_set(v, s);
		free(s);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			if ((rc = interpolate_json(te, x, err)) < 0)
				return rc;
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, x)
			if ((rc = interpolate_json(te, x, err)) < 0)
				return rc;
	}
	return 0;
}

int task_interpolate_config(struct task_runner *tr, json_t **out, struct herd_err *err)
{
	json_t *cfg = tr->task->config ? json_deep_copy(tr->task->config) : json_object();
	int rc = interpolate_json(tr->te, cfg, err);

	if (rc < 0) {
		json_decref(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}
