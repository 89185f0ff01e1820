/* svc_task: a task runner's services for the checker (checker.h): the
 * task's own `service` blocks and, for the group's first main task, the
 * group's, each with the address and port it is reached at and its checks
 * made concrete (URL, argv, the task's environment).  Called when the task
 * starts running and stops running; a task of a job without services
 * never gets here (ar->svc is NULL). */
#include <stdlib.h>
#include <string.h>

#include "agent/checker.h"
#include "agent/client-int.h"
#include "agent/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

/* The node's address for services: the host of the agent's advertised
 * HTTP address, else the loopback (a dev agent). */
static char *node_address(const struct client *c)
{
	const char *a = c->cfg->advertise_http;
	const char *end;

	if (!a || !*a)
		return xstrdup("127.0.0.1");
	if (a[0] == '[') {
		end = strchr(a, ']');
		return end ? xstrndup(a + 1, (size_t)(end - a - 1)) : xstrdup(a);
	}
	end = strrchr(a, ':');
	return end ? xstrndup(a, (size_t)(end - a)) : xstrdup(a);
}

/* The host port of label in the allocation's assignment, or 0. */
static int alloc_port(const json_t *alloc, const char *label)
{
	const json_t *ports = json_object_get(json_object_get(alloc, "resources"), "ports"), *p;
	size_t i;

	json_array_foreach(ports, i, p)
		if (!strcmp(json_string_value(json_object_get(p, "label")) ?: "", label))
			return (int)json_integer_value(json_object_get(p, "value"));
	return 0;
}

/* A port written in a job (a label or a number) as a number; 0: none. */
static int resolve_port(const json_t *alloc, const char *port)
{
	int64_t n;
	if (!port)
		return 0;
	if (job_port_is_number(port, &n))
		return (int)n;
	return alloc_port(alloc, port);
}

/* s with ${...} replaced from the task's environment; s itself when it
 * does not interpolate (the job was checked; a bad reference stays). */
static char *interpolated(const struct task_runner *tr, const char *s)
{
	struct herd_err err = { 0, "" };
	char *out = NULL;
	if (!tr->te || !strstr(s, "${") || taskenv_interpolate(tr->te, s, &out, &err) < 0)
		return xstrdup(s);
	return out;
}

/* What the checker keeps of one check while it builds it: strings the
 * spec points at, freed once registered (the checker copies). */
struct built_check {
	struct svc_check_spec spec;
	char *url, *host, *connect_to;
	char **headers;
	const char **argv;
};

static void build_check(struct task_runner *tr, const struct job_service *svc,
			const struct job_check *jc, const char *address, int svc_port,
			struct built_check *b)
{
	const struct job_check_restart *cr = jc->check_restart ? jc->check_restart
							       : svc->check_restart;
	int port = jc->port ? resolve_port(tr->ar->alloc, jc->port) : svc_port;
	struct svc_check_spec *s = &b->spec;

	memset(b, 0, sizeof(*b));
	s->name = jc->name;
	s->interval_ns = jc->interval;
	s->timeout_ns = jc->timeout;
	s->initial = svc_status_parse(jc->initial_status);
	s->on_update = job_check_on_update(svc, jc);
	/* a stored job from before the thresholds decodes them unset */
	s->before_passing = jc->success_before_passing > 0 ? jc->success_before_passing : 0;
	s->before_critical = jc->failures_before_critical > 0 ? jc->failures_before_critical : 0;
	s->before_warning = jc->failures_before_warning > 0 ? jc->failures_before_warning : 0;
	if (cr) {
		s->restart_limit = cr->limit;
		s->restart_grace_ns = cr->grace;
		s->ignore_warnings = cr->ignore_warnings;
	}
	if (!strcmp(jc->type, "script")) {
		s->type = SVC_CHECK_SCRIPT;
		b->argv = xcalloc(jc->args.n + 2, sizeof(*b->argv));
		b->argv[0] = jc->command;
		for (size_t i = 0; i < jc->args.n; i++)
			b->argv[i + 1] = jc->args.v[i];
		s->argv = b->argv;
		s->envp = tr->te ? taskenv_envp(tr->te) : NULL;   /* NULL: an empty one */
		s->dir = tr->dir;
		return;
	}
	if (!strcmp(jc->type, "tcp")) {
		s->type = SVC_CHECK_TCP;
		b->host = xstrdup(address);
		s->host = b->host;
		s->port = port;
		return;
	}
	s->type = SVC_CHECK_HTTP;
	b->url = strchr(address, ':') ? xasprintf("%s://[%s]:%d%s", jc->protocol, address, port,
						   jc->path)
				      : xasprintf("%s://%s:%d%s", jc->protocol, address, port, jc->path);
	if (jc->tls_server_name && *jc->tls_server_name) {
		/* the URL names the server (SNI, the name verified, Host);
		 * the connection still goes to the address */
		b->connect_to = xasprintf(strchr(address, ':') ? "%s:%d:[%s]:%d" : "%s:%d:%s:%d",
					  jc->tls_server_name, port, address, port);
		free(b->url);
		b->url = xasprintf("%s://%s:%d%s", jc->protocol, jc->tls_server_name, port, jc->path);
	}
	s->url = b->url;
	s->connect_to = b->connect_to;
	s->tls_skip_verify = jc->tls_skip_verify;
	s->body = jc->body;
	s->method = jc->method;
	b->headers = xcalloc(jc->header.n + 1, sizeof(*b->headers));
	for (size_t i = 0; i < jc->header.n; i++)
		b->headers[i] = xasprintf("%s: %s", jc->header.v[i].key, jc->header.v[i].value);
	s->headers = (const char *const *)b->headers;
}

static void built_check_release(struct built_check *b)
{
	free(b->url);
	free(b->host);
	free(b->connect_to);
	for (size_t i = 0; b->headers && b->headers[i]; i++)
		free(b->headers[i]);
	free(b->headers);
	free(b->argv);
}

/* canary_tags and canary_meta, interpolated as tags and meta are, when
 * the service has them: the server lists them instead of tags and meta
 * while the allocation is an unpromoted canary (services.c). */
static void canary_fields(struct task_runner *tr, const struct job_service *svc, json_t *e)
{
	json_t *tags, *meta;

	if (svc->canary_tags.n) {
		tags = json_array();
		for (size_t i = 0; i < svc->canary_tags.n; i++) {
			char *t = interpolated(tr, svc->canary_tags.v[i]);
			json_array_append_new(tags, json_string(t));
			free(t);
		}
		json_object_set_new(e, "canary_tags", tags);
	}
	if (svc->canary_meta.n) {
		meta = json_object();
		for (size_t i = 0; i < svc->canary_meta.n; i++)
			json_object_set_new(meta, svc->canary_meta.v[i].key,
					    json_string(svc->canary_meta.v[i].value));
		json_object_set_new(e, "canary_meta", meta);
	}
}

/* The entry the server lists for one service (taken by the checker). */
static json_t *service_entry(struct task_runner *tr, const struct job_service *svc,
			     const char *address, int port)
{
	json_t *tags = json_array(), *meta = json_object();
	char *name = interpolated(tr, svc->name);
	json_t *e;

	for (size_t i = 0; i < svc->tags.n; i++) {
		char *t = interpolated(tr, svc->tags.v[i]);
		json_array_append_new(tags, json_string(t));
		free(t);
	}
	for (size_t i = 0; i < svc->meta.n; i++)
		json_object_set_new(meta, svc->meta.v[i].key, json_string(svc->meta.v[i].value));
	if (!job_service_name_ok(name))
		log_warn("client: alloc %.8s: task %s: service name \"%s\" is not a valid name once "
			 "interpolated; registered as written", tr->ar->id, tr->task->name, name);
	e = json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:s}", "name", name, "task", tr->task->name,
		      "address", address, "port", port, "tags", tags, "meta", meta, "provider",
		      svc->provider ? svc->provider : "herd");
	free(name);
	canary_fields(tr, svc, e);
	return e;
}

/* Whether tr is the task a group's services go with: the group's first
 * main task (no lifecycle). */
static bool carries_group_services(const struct task_runner *tr)
{
	const struct job_group *g = tr->ar->group;
	for (size_t i = 0; i < g->ntasks; i++)
		if (!g->tasks[i].lifecycle)
			return &g->tasks[i] == tr->task;
	return false;
}

void svc_task_started(struct task_runner *tr)
{
	const struct job_group *g = tr->ar->group;
	bool with_group = carries_group_services(tr);
	size_t n = tr->task->nservices + (with_group ? g->nservices : 0), k = 0;
	struct svc_service_spec *specs;
	struct built_check **built;
	char *address;

	/* none while its allocation stops (an agent restarted during its
	 * shutdown_delay: they were removed before) */
	if (!n || shutdown_delay_begun(tr->ar))
		return;
	/* A task recovered running after an agent restart was not prepared
	 * by this agent: its environment is built now, for ${...} in names
	 * and tags and for script checks. */
	if (!tr->te) {
		struct herd_err err = { 0, "" };
		if (task_prepare_env(tr, &err) < 0)
			log_warn("client: alloc %.8s: task %s: services: %s", tr->ar->id,
				 tr->task->name, err.msg);
	}
	address = node_address(tr->ar->c);
	specs = xcalloc(n, sizeof(*specs));
	built = xcalloc(n, sizeof(*built));
	for (size_t i = 0; i < n; i++) {
		const struct job_service *svc = i < tr->task->nservices
			? &tr->task->services[i] : &g->services[i - tr->task->nservices];
		const char *addr = svc->address ? svc->address : address;
		int port = resolve_port(tr->ar->alloc, svc->port);
		struct svc_check_spec *checks = xcalloc(svc->nchecks + 1, sizeof(*checks));

		built[i] = xcalloc(svc->nchecks + 1, sizeof(**built));
		for (size_t c = 0; c < svc->nchecks; c++) {
			build_check(tr, svc, &svc->checks[c], addr, port, &built[i][c]);
			checks[c] = built[i][c].spec;
		}
		specs[k].entry = service_entry(tr, svc, addr, port);
		specs[k].group = i >= tr->task->nservices;
		specs[k].checks = checks;
		specs[k].nchecks = svc->nchecks;
		k++;
	}
	svc_set_register(tr->ar->svc, (int)(tr - tr->ar->tasks), tr->started_at, specs, n);
	for (size_t i = 0; i < n; i++) {
		const struct job_service *svc = i < tr->task->nservices
			? &tr->task->services[i] : &g->services[i - tr->task->nservices];
		for (size_t c = 0; c < svc->nchecks; c++)
			built_check_release(&built[i][c]);
		free(built[i]);
		free((void *)specs[i].checks);
	}
	free(built);
	free(specs);
	free(address);
}

void svc_task_stopped(struct task_runner *tr)
{
	svc_set_deregister(tr->ar->svc, (int)(tr - tr->ar->tasks));
}

bool alloc_has_services(const struct job_group *g)
{
	if (g->nservices)
		return true;
	for (size_t i = 0; i < g->ntasks; i++)
		if (g->tasks[i].nservices)
			return true;
	return false;
}

bool svc_task_poll(struct task_runner *tr, char *why, size_t size)
{
	if (svc_set_take_changed(tr->ar->svc))
		alloc_runner_mark_dirty(tr->ar);
	return svc_set_take_restart(tr->ar->svc, (int)(tr - tr->ar->tasks), why, size);
}
