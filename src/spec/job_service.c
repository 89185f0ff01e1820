/* Validation and defaults of service blocks (group and task level) and
 * their checks; called by job_validate.c for each group and task.  Kept
 * apart from job_validate.c because the rules are many and concern only
 * services: providers, names, ports (a label of the group's network or a
 * number), check types and their timing. */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "spec/job-int.h"

struct svc_validator {
	struct diag_list *diags;
	struct job_path *path;
	const struct job_failed *failed;
	const struct job_group *group;
	int errors;
};

__attribute__((format(printf, 3, 4)))
static void svc_fail(struct svc_validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(v->diags, v->path, pos, fmt, ap);
	va_end(ap);
	v->errors++;
}

static bool svc_failed(const struct svc_validator *v, const void *p)
{
	return job_failed_has(v->failed, p);
}

const char *job_check_on_update(const struct job_service *s, const struct job_check *c)
{
	if (c->on_update)
		return c->on_update;
	return s->on_update ? s->on_update : "require_healthy";
}

bool job_service_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JOB_MAX_ID || s[0] == '-' || s[0] == '.')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

/* One with ${...} is checked by the agent once interpolated. */
static bool is_service_name(const char *s)
{
	return strstr(s, "${") ? true : job_service_name_ok(s);
}

bool job_port_is_number(const char *s, int64_t *out)
{
	int64_t n = 0;
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || n > 65535)
			return false;
		n = n * 10 + (*p - '0');
	}
	if (out)
		*out = n;
	return true;
}

const struct job_port *job_group_port(const struct job_group *g, const char *label)
{
	for (size_t i = 0; label && i < g->network.nports; i++)
		if (g->network.ports[i].label && !strcmp(g->network.ports[i].label, label))
			return &g->network.ports[i];
	return NULL;
}

/* port: a label of the group's network, or a number 1..65535. */
static void check_port(struct svc_validator *v, struct hcl_pos pos, const char *port)
{
	int64_t n;
	if (!port)
		return;
	if (job_port_is_number(port, &n)) {
		if (n < 1 || n > 65535)
			svc_fail(v, pos, "port %s must be 1..65535", port);
	} else if (!job_group_port(v->group, port)) {
		svc_fail(v, pos, "port \"%s\" is not a port label of the group's network "
			 "(network { port \"%s\" { } }) nor a number", port, port);
	}
}

static void check_restart_defaults(struct job_check_restart *r)
{
	if (r->limit == JOB_UNSET)
		r->limit = 0;
	if (r->grace == JOB_UNSET)
		r->grace = NS_PER_SEC;
}

/* success_before_passing, failures_before_critical, failures_before_warning
 * (0 when unset: at once).  A warning threshold past the critical one
 * would never be reached (critical comes first). */
static void check_thresholds(struct svc_validator *v, struct job_check *c)
{
	int64_t crit;

	if (c->success_before_passing == JOB_UNSET)
		c->success_before_passing = 0;
	if (c->failures_before_critical == JOB_UNSET)
		c->failures_before_critical = 0;
	if (c->failures_before_warning == JOB_UNSET)
		c->failures_before_warning = 0;
	crit = c->failures_before_critical > 1 ? c->failures_before_critical : 1;
	if (c->failures_before_warning > crit)
		svc_fail(v, c->pos, "failures_before_warning (%lld) must not be more than "
			 "failures_before_critical (%lld): critical would come first",
			 (long long)c->failures_before_warning, (long long)crit);
}

/* on_update: the service's when the check has none (Nomad's rule; left
 * NULL, so that the canonical JSON says only what the file said).  A
 * check that restarts its task must not be one the deployment looks past:
 * ignore with check_restart, or ignore_warnings while check_restart counts
 * warnings, would let a deployment succeed on a task about to restart
 * (Nomad refuses both). */
static void check_on_update(struct svc_validator *v, const struct job_service *s,
			    struct job_check *c)
{
	const struct job_check_restart *cr = c->check_restart ? c->check_restart
							      : s->check_restart;
	const char *on_update = job_check_on_update(s, c);

	if (!cr)
		return;
	if (!strcmp(on_update, "ignore"))
		svc_fail(v, c->pos, "on_update \"ignore\" is not compatible with check_restart");
	else if (!strcmp(on_update, "ignore_warnings") && !cr->ignore_warnings)
		svc_fail(v, c->pos, "on_update \"ignore_warnings\" needs check_restart's "
			 "ignore_warnings = true");
}

static void check_check(struct svc_validator *v, struct job_service *s, struct job_check *c)
{
	if (!c->type) {
		if (!svc_failed(v, &c->type))
			svc_fail(v, c->pos, "type is required (http, tcp or script)");
		return;
	}
	/* a bad word is kept by the decoder, which reported it; the rest
	 * depends on the type */
	if (strcmp(c->type, "http") && strcmp(c->type, "tcp") && strcmp(c->type, "script"))
		return;
	if (!c->name)
		c->name = xasprintf("service: \"%s\" check", s->name ? s->name : "");
	if (!c->initial_status)
		c->initial_status = xstrdup("critical");
	if (c->interval == JOB_UNSET) {
		if (!svc_failed(v, &c->interval))
			svc_fail(v, c->pos, "interval is required (how often the check runs)");
	} else if (c->interval <= 0) {
		svc_fail(v, c->pos, "interval must be more than 0");
	}
	if (c->timeout == JOB_UNSET) {
		if (!svc_failed(v, &c->timeout))
			svc_fail(v, c->pos, "timeout is required (how long one run may take)");
	} else if (c->timeout <= 0) {
		svc_fail(v, c->pos, "timeout must be more than 0");
	} else if (c->interval > 0 && c->timeout > c->interval) {
		svc_fail(v, c->pos, "timeout (%gs) must not be longer than interval (%gs)",
			 (double)c->timeout / 1e9, (double)c->interval / 1e9);
	}
	if (c->check_restart)
		check_restart_defaults(c->check_restart);
	check_on_update(v, s, c);
	check_thresholds(v, c);
	if (!strcmp(c->type, "script")) {
		if ((!c->command || !*c->command) && !svc_failed(v, &c->command))
			svc_fail(v, c->pos, "a script check needs command");
		return;
	}
	if (c->command)
		svc_fail(v, c->pos, "command is for script checks only (this one is %s)", c->type);
	check_port(v, c->pos, c->port);
	if (!c->port && !s->port && !svc_failed(v, &c->port) && !svc_failed(v, &s->port))
		svc_fail(v, c->pos, "a %s check needs a port: the service's or its own", c->type);
	if (!strcmp(c->type, "http")) {
		if (!c->path) {
			if (!svc_failed(v, &c->path))
				svc_fail(v, c->pos, "an http check needs path (such as \"/health\")");
		} else if (c->path[0] != '/') {
			svc_fail(v, c->pos, "path \"%s\" must start with '/'", c->path);
		}
		if (!c->method)
			c->method = xstrdup("GET");
		for (const char *m = c->method; *m; m++)
			if (!isupper((unsigned char)*m)) {
				svc_fail(v, c->pos, "method \"%s\" must be an HTTP method in capitals "
					 "such as \"GET\"", c->method);
				break;
			}
		if (!c->protocol)
			c->protocol = xstrdup("http");
	} else if (c->path) {
		svc_fail(v, c->pos, "path is for http checks only (this one is %s)", c->type);
	}
}

static void check_service(struct svc_validator *v, struct job_service *s, const char *job_id,
			  const struct job_task *task)
{
	if (!s->provider)
		s->provider = xstrdup("herd");
	if (!strcmp(s->provider, "consul"))
		svc_fail(v, s->pos, "provider \"consul\" is not supported: herd keeps its own "
			 "service registry (provider = \"herd\", or \"nomad\", which is the same)");
	else if (strcmp(s->provider, "herd") && strcmp(s->provider, "nomad"))
		svc_fail(v, s->pos, "provider must be \"herd\" or \"nomad\", got \"%s\"", s->provider);
	if (!s->address_mode)
		s->address_mode = xstrdup("auto");
	if (!s->name && !svc_failed(v, &s->name)) {
		/* Nomad's default: <job>-<group>-<task>, or <job>-<group> */
		if (task)
			s->name = xasprintf("%s-%s-%s", job_id ? job_id : "", v->group->name ? v->group->name : "",
					    task->name ? task->name : "");
		else
			s->name = xasprintf("%s-%s", job_id ? job_id : "",
					    v->group->name ? v->group->name : "");
	}
	if (s->name && !is_service_name(s->name))
		svc_fail(v, s->pos, "service name \"%s\" must be 1 to %d letters, digits, '-', "
			 "'_' or '.', not starting with '-' or '.'", s->name, JOB_MAX_ID);
	check_port(v, s->pos, s->port);
	for (size_t i = 0; i < s->tags.n; i++)
		if (!*s->tags.v[i])
			svc_fail(v, s->pos, "tags[%zu] must not be empty", i);
	for (size_t i = 0; i < s->canary_tags.n; i++)
		if (!*s->canary_tags.v[i])
			svc_fail(v, s->pos, "canary_tags[%zu] must not be empty", i);
	if (!s->on_update && !svc_failed(v, &s->on_update))
		s->on_update = xstrdup("require_healthy");
	if (s->check_restart)
		check_restart_defaults(s->check_restart);
	for (size_t i = 0; i < s->nchecks; i++) {
		size_t old = v->path->n;
		if (svc_failed(v, &s->checks[i]))
			continue;
		job_path_push_key(v->path, "checks");
		job_path_push_index(v->path, i);
		check_check(v, s, &s->checks[i]);
		job_path_pop(v->path, old);
	}
}

int job_services_validate(struct job_service *svcs, size_t n, const char *job_id,
			  const struct job_group *g, const struct job_task *task,
			  struct job_path *path, const struct job_failed *failed,
			  struct diag_list *diags)
{
	struct svc_validator v = { diags, path, failed, g, 0 };

	for (size_t i = 0; i < n; i++) {
		size_t old = path->n;
		if (svc_failed(&v, &svcs[i]))
			continue;
		job_path_push_key(path, "services");
		job_path_push_index(path, i);
		check_service(&v, &svcs[i], job_id, task);
		for (size_t j = 0; j < i; j++)
			if (svcs[i].name && svcs[j].name && !strcmp(svcs[i].name, svcs[j].name) &&
			    svcs[i].port && svcs[j].port && !strcmp(svcs[i].port, svcs[j].port))
				svc_fail(&v, svcs[i].pos, "service \"%s\" on port %s is declared twice",
					 svcs[i].name, svcs[i].port);
		job_path_pop(path, old);
	}
	return v.errors;
}
