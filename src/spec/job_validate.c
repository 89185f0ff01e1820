/* Validation of a decoded job: the rules that span fields, and defaults
 * (Nomad's, where Nomad has one; docs/jobspec.md lists them).  Per-field
 * checks (types, ranges, enumerations) were done by the decoder, which knew
 * each value's position; here each message carries the position of the
 * block it is about. */
#include <ctype.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "spec/cron.h"
#include "spec/job-int.h"
#include "spec/template_parse.h"

struct validator {
	struct diag_list *diags;
	struct job_path path;
	int errors;
	bool batch;
	const char *job_id;            /* for services' default names */
	const struct job_group *group; /* the group being checked */
	/* Regular expressions that compiled, borrowed from the job: files repeat
	 * the same few (one affinity per task), and regcomp is costly. */
	const char *regex_ok[4];
	unsigned regex_next;
	/* what failed to decode (reported then): not reported as missing */
	const struct job_failed *failed;
	/* the job's reschedule block, filled: under every group's; NULL: none */
	const struct job_reschedule *job_reschedule;
	int64_t job_time_limit;        /* every group's default */
};

static bool failed(const struct validator *v, const void *p)
{
	return job_failed_has(v->failed, p);
}

static bool regex_known_good(const struct validator *v, const char *re)
{
	for (size_t i = 0; i < sizeof(v->regex_ok) / sizeof(v->regex_ok[0]); i++)
		if (v->regex_ok[i] && !strcmp(v->regex_ok[i], re))
			return true;
	return false;
}

__attribute__((format(printf, 3, 4)))
static void fail(struct validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(v->diags, pos.line, pos.col, "%s: %s", job_path_text(&v->path), sb.buf);
	strbuf_release(&sb);
	v->errors++;
}

static size_t push(struct validator *v, const char *key, ssize_t index)
{
	size_t old = v->path.n;
	if (key)
		job_path_push_key(&v->path, key);
	if (index >= 0)
		job_path_push_index(&v->path, (size_t)index);
	return old;
}

static void pop(struct validator *v, size_t old)
{
	job_path_pop(&v->path, old);
}

static void default_str(char **field, const char *value)
{
	if (!*field)
		*field = xstrdup(value);
}

static void default_int(int64_t *field, int64_t value)
{
	if (*field == JOB_UNSET)
		*field = value;
}

/* Ids and names become directory names, URL path segments and environment
 * values, so they keep to a plain charset. */
static bool is_plain_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JOB_MAX_ID || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

static void check_name(struct validator *v, struct hcl_pos pos, const char *what,
		       char *const *field)
{
	const char *name = *field;

	if (!name && failed(v, field))
		return;
	if (!name)
		fail(v, pos, "%s is required", what);
	else if (!is_plain_name(name))
		fail(v, pos, "%s \"%s\" must be 1 to %d letters, digits, '-', '_' or '.', "
			     "not starting with '-' or '.'", what, name, JOB_MAX_ID);
}

static bool needs_attribute(const char *op)
{
	return strcmp(op, "distinct_hosts") != 0;
}

static bool takes_no_value(const char *op)
{
	return !strcmp(op, "is_set") || !strcmp(op, "is_not_set");
}

static bool value_optional(const char *op)
{
	return !strcmp(op, "distinct_hosts") || !strcmp(op, "distinct_property");
}

static void check_rule(struct validator *v, struct job_constraint *c, bool affinity)
{
	const char *op;

	default_str(&c->operator, "=");
	op = c->operator;
	if (affinity) {
		if (!strcmp(op, "distinct_hosts") || !strcmp(op, "distinct_property"))
			fail(v, c->pos, "operator \"%s\" is only for constraints", op);
		if (c->weight == JOB_WEIGHT_UNSET)
			c->weight = 50;
		else if (c->weight == 0)
			fail(v, c->pos, "weight must be between -100 and 100 and not 0");
	}
	if (needs_attribute(op) && (!c->attribute || !*c->attribute) && !failed(v, &c->attribute))
		fail(v, c->pos, "attribute is required with operator \"%s\"", op);
	if (!needs_attribute(op) && c->attribute)
		fail(v, c->pos, "operator \"%s\" takes no attribute", op);
	if (takes_no_value(op)) {
		if (c->value)
			fail(v, c->pos, "operator \"%s\" takes no value", op);
		return;
	}
	if (!c->value) {
		if (!value_optional(op) && !failed(v, &c->value))
			fail(v, c->pos, "value is required with operator \"%s\"", op);
		return;
	}
	if (!strcmp(op, "regexp")) {
		regex_t re;
		int rc;
		if (regex_known_good(v, c->value))
			return;
		rc = regcomp(&re, c->value, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			char msg[128];
			regerror(rc, &re, msg, sizeof(msg));
			fail(v, c->pos, "value \"%s\" is not a valid regular expression: %s",
			     c->value, msg);
		} else {
			regfree(&re);
			v->regex_ok[v->regex_next++ % 4] = c->value;
		}
	} else if (!strcmp(op, "distinct_hosts")) {
		if (strcmp(c->value, "true") && strcmp(c->value, "false"))
			fail(v, c->pos, "operator \"distinct_hosts\" takes value \"true\" or nothing");
	} else if (!strcmp(op, "distinct_property")) {
		int64_t n;
		if (parse_int64(c->value, 1, INT32_MAX, &n, NULL) < 0)
			fail(v, c->pos, "operator \"distinct_property\" takes as value a count of 1 "
					"or more, got \"%s\"", c->value);
	} else if (!*c->value && strcmp(op, "=") && strcmp(op, "==") && strcmp(op, "!=")) {
		fail(v, c->pos, "value must not be empty with operator \"%s\"", op);
	}
}

static void check_rules(struct validator *v, struct job_rules *rules, const char *key, bool affinity)
{
	for (size_t i = 0; i < rules->n; i++) {
		size_t old;
		if (failed(v, &rules->v[i]))
			continue;
		old = push(v, key, (ssize_t)i);
		check_rule(v, &rules->v[i], affinity);
		pop(v, old);
	}
}

/* "gpu", "nvidia/gpu" or "nvidia/gpu/Tesla T4": vendor and type are plain
 * words, the model any non-empty text. */
static bool is_device_name(const char *s)
{
	const char *p = s;
	int part = 0;

	for (;;) {
		const char *start = p;
		if (part < 2) {
			while (isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.')
				p++;
		} else {
			while (*p && *p != '/' && (unsigned char)*p >= 0x20)
				p++;
		}
		if (p == start)
			return false;
		part++;
		if (!*p)
			return true;
		if (*p != '/' || part == 3)
			return false;
		p++;
	}
}

static void check_device(struct validator *v, struct job_device *dev)
{
	default_int(&dev->count, 1);
	if (!dev->name) {
		if (!failed(v, &dev->name))
			fail(v, dev->pos, "name is required");
	} else if (!is_device_name(dev->name)) {
		fail(v, dev->pos, "device name \"%s\" must be \"<type>\", \"<vendor>/<type>\" or "
				  "\"<vendor>/<type>/<model>\", e.g. \"nvidia/gpu\"", dev->name);
	}
	if ((dev->compute || dev->memory) && dev->count != 1)
		fail(v, dev->pos, "a fraction of one GPU is shared; count must be 1, got %" PRId64,
		     dev->count);
	check_rules(v, &dev->constraints, "constraints", false);
	check_rules(v, &dev->affinities, "affinities", true);
}

/* numa { affinity devices }: needs cores; devices are the task's own
 * device asks, by the name they are asked with. */
static void check_numa(struct validator *v, struct job_resources *r)
{
	struct job_numa *nm = r->numa;
	size_t old = push(v, "numa", -1);

	default_str(&nm->affinity, "none");
	if (r->cores <= 0)
		fail(v, nm->pos, "numa needs cores: it places the task's reserved cores "
				 "(resources { cores = N })");
	for (size_t i = 0; i < nm->devices.n; i++) {
		bool asked = false;
		for (size_t d = 0; d < r->ndevices && !asked; d++)
			asked = r->devices[d].name && !strcmp(r->devices[d].name, nm->devices.v[i]);
		if (!asked)
			fail(v, nm->pos, "devices: \"%s\" is not a device this task asks for "
					 "(resources { device \"%s\" { } })", nm->devices.v[i],
			     nm->devices.v[i]);
	}
	pop(v, old);
}

static void check_resources(struct validator *v, struct job_resources *r)
{
	default_int(&r->cores, 0);
	default_int(&r->cpu, r->cores > 0 ? 0 : 100);
	default_int(&r->memory, 300);
	default_int(&r->memory_max, 0);
	if (r->cores > 0 && r->cpu > 0)
		fail(v, r->pos, "cpu and cores cannot both be set");
	if (r->cores == 0 && r->cpu == 0)
		fail(v, r->pos, "cpu must be at least 1 MHz when cores is not set");
	if (r->memory_max && r->memory_max < r->memory)
		fail(v, r->pos, "memory_max (%" PRId64 " MiB) must be at least memory (%" PRId64 " MiB)",
		     r->memory_max, r->memory);
	for (size_t i = 0; i < r->ndevices; i++) {
		size_t old;
		if (failed(v, &r->devices[i]))
			continue;
		old = push(v, "devices", (ssize_t)i);
		check_device(v, &r->devices[i]);
		pop(v, old);
	}
	if (r->numa && !failed(v, r->numa))
		check_numa(v, r);
}

static bool is_octal_perms(const char *s)
{
	size_t n = strlen(s);
	if (n < 3 || n > 4)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '7')
			return false;
	return true;
}

bool job_signal_name_ok(const char *s)
{
	if (strncmp(s, "SIG", 3) || !s[3])
		return false;
	for (s += 3; *s; s++)
		if (!isupper((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '+' && *s != '-')
			return false;
	return true;
}

/* An inline template is parsed now, by the parser the agent renders with,
 * so that a syntax error or a refused function fails the submission rather
 * than the task on its node.  A `source` file lives on the node: it is
 * checked when the task starts. */
static void check_template_data(struct validator *v, const struct job_task *task,
				const struct job_template *t)
{
	struct herd_err err = { 0, "" };
	struct tmpl_list tree;

	if (template_parse_delims(t->data, t->left_delimiter, t->right_delimiter, &tree, &err) < 0)
		fail(v, t->pos, "group \"%s\", task \"%s\", template \"%s\": %s",
		     v->group && v->group->name ? v->group->name : "?",
		     task->name ? task->name : "?", t->destination ? t->destination : "",
		     err.msg);
	template_tree_release(&tree);
}

/* wait { min max }: max defaults to 4 x min (consul-template's rule);
 * a quiescence longer than its bound could never be waited for. */
static void check_template_wait(struct validator *v, struct job_template_wait *w)
{
	size_t old;

	default_int(&w->min, 0);
	if (w->max == JOB_UNSET)
		w->max = w->min > 24 * 3600 * NS_PER_SEC / 4 ? 24 * 3600 * NS_PER_SEC : 4 * w->min;
	if (w->min > w->max) {
		old = push(v, "wait", -1);
		fail(v, w->pos, "min (%gs) must not be more than max (%gs)",
		     (double)w->min / (double)NS_PER_SEC, (double)w->max / (double)NS_PER_SEC);
		pop(v, old);
	}
}

static void check_template(struct validator *v, const struct job_task *task,
			   struct job_template *t)
{
	default_str(&t->perms, "0644");
	default_str(&t->change_mode, "restart");
	default_int(&t->splay, 5 * NS_PER_SEC);   /* Nomad's */
	default_str(&t->left_delimiter, "{{");
	default_str(&t->right_delimiter, "}}");
	if (!*t->left_delimiter || !*t->right_delimiter)
		fail(v, t->pos, "left_delimiter and right_delimiter must not be empty");
	if (t->wait && !failed(v, t->wait))
		check_template_wait(v, t->wait);
	if (!t->data == !t->source && !failed(v, &t->data) && !failed(v, &t->source))
		fail(v, t->pos, "exactly one of data and source is required");
	if ((!t->destination || !*t->destination) && !failed(v, &t->destination))
		fail(v, t->pos, "destination is required");
	if (!is_octal_perms(t->perms))
		fail(v, t->pos, "perms must be octal such as \"0644\", got \"%s\"", t->perms);
	if (!strcmp(t->change_mode, "signal") && !t->change_signal)
		fail(v, t->pos, "change_mode \"signal\" needs change_signal");
	if (!strcmp(t->change_mode, "script") && !t->change_script &&
	    !failed(v, &t->change_script))
		fail(v, t->pos, "change_mode \"script\" needs a change_script block");
	if (t->change_script && strcmp(t->change_mode, "script"))
		fail(v, t->change_script->pos, "change_script is only run with change_mode "
		     "\"script\" (change_mode is \"%s\")", t->change_mode);
	if (t->change_script && !failed(v, t->change_script)) {
		size_t old = push(v, "change_script", -1);
		default_int(&t->change_script->timeout, 5 * NS_PER_SEC);   /* Nomad's */
		if (!t->change_script->command || !*t->change_script->command) {
			if (!failed(v, &t->change_script->command))
				fail(v, t->change_script->pos, "command is required");
		}
		pop(v, old);
	}
	if (t->change_signal && !job_signal_name_ok(t->change_signal))
		fail(v, t->pos, "change_signal must be a signal name such as \"SIGHUP\", got \"%s\"",
		     t->change_signal);
	if (t->data && *t->left_delimiter && *t->right_delimiter &&
	    !failed(v, &t->left_delimiter) && !failed(v, &t->right_delimiter))
		check_template_data(v, task, t);
}

static void check_artifact(struct validator *v, struct job_artifact *a)
{
	default_str(&a->destination, "local/");
	default_str(&a->mode, "any");
	if ((!a->source || !*a->source) && !failed(v, &a->source))
		fail(v, a->pos, "source is required");
}

/* The config keys a driver cannot start without; drivers not listed here
 * are checked by the agent that runs them. */
static void check_config(struct validator *v, struct job_task *t)
{
	static const struct { const char *driver, *key; } required[] = {
		{ "raw_exec", "command" }, { "exec", "command" }, { "docker", "image" },
		{ "podman", "image" },
	};
	if (!t->config)
		t->config = json_object();
	if (!t->driver || failed(v, &t->config))
		return;
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		json_t *val;
		if (strcmp(t->driver, required[i].driver))
			continue;
		val = json_object_get(t->config, required[i].key);
		if (!json_is_string(val) || !*json_string_value(val))
			fail(v, t->pos, "driver \"%s\" needs config.%s (a string)", t->driver,
			     required[i].key);
	}
}

/* Whether path, relative, stays below its directory: no component is
 * "..", it is not absolute and not empty. */
static bool path_stays_inside(const char *path)
{
	const char *p = path;

	if (!*path || *path == '/')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n;
		p += strspn(p, "/");
	}
	return true;
}

/* dispatch_payload: a file in the task's local/ directory (the client
 * writes the payload there: it must not reach out of it). */
static void check_dispatch_payload(struct validator *v, struct job_dispatch_payload *d)
{
	size_t old = push(v, "dispatch_payload", -1);

	if (!d->file) {
		if (!failed(v, &d->file))
			fail(v, d->pos, "file is required: where in local/ the payload is written");
	} else if (!path_stays_inside(d->file) || d->file[strlen(d->file) - 1] == '/') {
		fail(v, d->pos, "file \"%s\" must be a relative file path inside local/ "
		     "(not absolute, no \"..\")", d->file);
	}
	pop(v, old);
}

/* A volume name as HERD_VOLUME_<NAME> writes it: upper case, characters
 * other than [A-Z0-9_] as '_' (the agent's taskenv does the same). */
static void volume_env_name(const char *name, char *out, size_t size)
{
	size_t i = 0;
	for (; name[i] && i + 1 < size; i++) {
		unsigned char c = (unsigned char)name[i];
		out[i] = isalnum(c) ? (char)toupper(c) : '_';
	}
	out[i] = '\0';
}

/* volume "<name>" { type source read_only }: host volumes only; each name
 * once, and once as an environment name (HERD_VOLUME_<NAME>). */
static void check_volume(struct validator *v, struct job_group *g, size_t i)
{
	struct job_volume *vol = &g->volumes[i];
	size_t old = push(v, "volumes", (ssize_t)i);

	check_name(v, vol->pos, "volume name", &vol->name);
	default_str(&vol->type, "host");
	if (!strcmp(vol->type, "csi"))
		fail(v, vol->pos, "type \"csi\": CSI volumes are not supported; herd mounts host "
		     "volumes (type = \"host\", a client's host_volume)");
	else if (strcmp(vol->type, "host"))
		fail(v, vol->pos, "type must be \"host\", got \"%s\"", vol->type);
	if ((!vol->source || !*vol->source) && !failed(v, &vol->source))
		fail(v, vol->pos, "source is required: the name of a client's host_volume");
	for (size_t j = 0; vol->name && j < i; j++) {
		char a[JOB_MAX_ID + 1], b[JOB_MAX_ID + 1];
		if (!g->volumes[j].name)
			continue;
		volume_env_name(vol->name, a, sizeof(a));
		volume_env_name(g->volumes[j].name, b, sizeof(b));
		if (!strcmp(vol->name, g->volumes[j].name))
			fail(v, vol->pos, "volume name \"%s\" is used twice", vol->name);
		else if (!strcmp(a, b))
			fail(v, vol->pos, "volumes \"%s\" and \"%s\" would both be HERD_VOLUME_%s",
			     g->volumes[j].name, vol->name, a);
	}
	pop(v, old);
}

/* Drivers that mount a volume inside the task's own root. */
static bool driver_mounts(const char *driver)
{
	return driver && (!strcmp(driver, "exec") || !strcmp(driver, "docker") ||
			  !strcmp(driver, "podman"));
}

/* No ".." component anywhere: a destination never climbs out of the task's
 * root (exec, docker) or directory (raw_exec). */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += n;
		p += strspn(p, "/");
	}
	return false;
}

/* volume_mount { volume destination read_only }: a volume of the group,
 * mounted once per task at a destination the driver can take. */
static void check_volume_mount(struct validator *v, const struct job_group *g,
			       const struct job_task *t, size_t i)
{
	struct job_volume_mount *m = &t->volume_mounts[i];
	size_t old = push(v, "volume_mounts", (ssize_t)i);
	bool found = false;

	if (!m->volume) {
		if (!failed(v, &m->volume))
			fail(v, m->pos, "volume is required: the name of a group volume");
	} else {
		for (size_t j = 0; j < g->nvolumes && !found; j++)
			found = g->volumes[j].name && !strcmp(g->volumes[j].name, m->volume);
		if (!found)
			fail(v, m->pos, "volume \"%s\" is not a volume of the group", m->volume);
		for (size_t j = 0; j < i; j++)
			if (t->volume_mounts[j].volume && !strcmp(t->volume_mounts[j].volume, m->volume))
				fail(v, m->pos, "volume \"%s\" is mounted twice", m->volume);
	}
	if (!m->destination || !*m->destination) {
		if (!failed(v, &m->destination))
			fail(v, m->pos, "destination is required: where the task sees the volume");
	} else if (has_dotdot(m->destination)) {
		fail(v, m->pos, "destination \"%s\" must not have a \"..\" component",
		     m->destination);
	} else if (driver_mounts(t->driver) && m->destination[0] != '/') {
		fail(v, m->pos, "destination \"%s\" must be an absolute path inside the task "
		     "(driver \"%s\")", m->destination, t->driver);
	} else if (m->destination[strspn(m->destination, "/")] == '\0') {
		fail(v, m->pos, "destination \"%s\" cannot be the task's root", m->destination);
	}
	pop(v, old);
}

/* action i of t: a plain name that no earlier action of t has, and a
 * command (`herd job action` runs it by that name). */
static void check_action(struct validator *v, const struct job_task *t, size_t i)
{
	const struct job_action *a = &t->actions[i];

	check_name(v, a->pos, "action name", &a->name);
	for (size_t j = 0; a->name && j < i; j++)
		if (t->actions[j].name && !strcmp(t->actions[j].name, a->name)) {
			fail(v, a->pos, "action \"%s\" is defined twice in task \"%s\"", a->name,
			     t->name ? t->name : "");
			break;
		}
	if ((!a->command || !*a->command) && !failed(v, &a->command))
		fail(v, a->pos, "command is required");
}

static void check_task(struct validator *v, struct job_task *t)
{
	check_name(v, t->pos, "task name", &t->name);
	if ((!t->driver || !*t->driver) && !failed(v, &t->driver))
		fail(v, t->pos, "driver is required");
	check_config(v, t);
	check_rules(v, &t->constraints, "constraints", false);
	check_rules(v, &t->affinities, "affinities", true);
	for (size_t i = 0; i < t->ntemplates; i++) {
		size_t old;
		if (failed(v, &t->templates[i]))
			continue;
		old = push(v, "templates", (ssize_t)i);
		check_template(v, t, &t->templates[i]);
		pop(v, old);
	}
	for (size_t i = 0; i < t->nartifacts; i++) {
		size_t old;
		if (failed(v, &t->artifacts[i]))
			continue;
		old = push(v, "artifacts", (ssize_t)i);
		check_artifact(v, &t->artifacts[i]);
		pop(v, old);
	}
	if (t->lifecycle && !failed(v, t->lifecycle)) {
		size_t old = push(v, "lifecycle", -1);
		if (!t->lifecycle->hook) {
			if (!failed(v, &t->lifecycle->hook))
				fail(v, t->lifecycle->pos,
				     "hook is required (prestart, poststart or poststop)");
		} else if (t->lifecycle->sidecar && !strcmp(t->lifecycle->hook, "poststop"))
			fail(v, t->lifecycle->pos, "sidecar is only allowed with hook prestart or poststart");
		pop(v, old);
	}
	if (t->dispatch_payload && !failed(v, t->dispatch_payload))
		check_dispatch_payload(v, t->dispatch_payload);
	for (size_t i = 0; i < t->nactions; i++) {
		size_t old;
		if (failed(v, &t->actions[i]))
			continue;
		old = push(v, "actions", (ssize_t)i);
		check_action(v, t, i);
		pop(v, old);
	}
	size_t old = push(v, "resources", -1);
	if (!failed(v, &t->resources))
		check_resources(v, &t->resources);
	pop(v, old);
	default_int(&t->kill_timeout, 5 * NS_PER_SEC);
	default_int(&t->shutdown_delay, 0);
	default_str(&t->kill_signal, "SIGINT");
	if (!job_signal_name_ok(t->kill_signal))
		fail(v, t->pos, "kill_signal must be a signal name such as \"SIGTERM\", got \"%s\"",
		     t->kill_signal);
	default_int(&t->logs.max_files, 10);
	default_int(&t->logs.max_file_size, 10);
	if (t->nservices)
		v->errors += job_services_validate(t->services, t->nservices, v->job_id, v->group, t,
						   &v->path, v->failed, v->diags);
	v->errors += job_identities_validate(t, &v->path, v->failed, v->diags);
}

/* Nomad's defaults for restart depend on the job type. */
static void default_restart(struct validator *v, struct job_restart *r)
{
	const int64_t sec = NS_PER_SEC;

	default_int(&r->attempts, v->batch ? 3 : 2);
	default_int(&r->interval, v->batch ? 24 * 3600 * sec : 30 * 60 * sec);
	default_int(&r->delay, 15 * sec);
	default_str(&r->mode, "fail");
}

/* Nomad refuses a policy whose restarts cannot fit in their window
 * (attempts * delay > interval): the window would close before the last
 * attempt, so the count would never be reached.  Compared by division:
 * attempts * delay may overflow. */
static void check_restart_window(struct validator *v, const struct job_restart *r)
{
	const int64_t sec = NS_PER_SEC;

	if (r->attempts > 0 && r->delay > 0 && r->interval >= 0 &&
	    r->attempts > r->interval / r->delay) {
		size_t old = push(v, "restart", -1);
		fail(v, r->pos, "%" PRId64 " attempts with a delay of %gs need %gs, more than "
		     "the interval of %gs: raise interval or lower attempts or delay",
		     r->attempts, (double)r->delay / (double)sec,
		     (double)r->attempts * ((double)r->delay / (double)sec),
		     (double)r->interval / (double)sec);
		pop(v, old);
	}
}

/* A task's restart block over its group's (filled already): what the task
 * did not set is the group's, field by field, as Nomad merges them. */
static void merge_restart(struct job_restart *r, const struct job_restart *group)
{
	default_int(&r->attempts, group->attempts);
	default_int(&r->interval, group->interval);
	default_int(&r->delay, group->delay);
	default_str(&r->mode, group->mode);
	if (!r->render_templates_set)
		r->render_templates = group->render_templates;
}

/* A group's reschedule block over the job's (filled already), field by
 * field, as Nomad merges them. */
static void merge_reschedule(struct job_reschedule *s, const struct job_reschedule *job)
{
	default_int(&s->attempts, job->attempts);
	default_int(&s->interval, job->interval);
	default_int(&s->delay, job->delay);
	default_str(&s->delay_function, job->delay_function);
	default_int(&s->max_delay, job->max_delay);
	if (!s->unlimited_set) {
		s->unlimited = job->unlimited;
		s->unlimited_set = 1;
	}
}

/* Nomad's defaults for reschedule depend on the job type. */
static void default_reschedule(struct validator *v, struct job_reschedule *s)
{
	const int64_t sec = NS_PER_SEC;

	default_int(&s->attempts, v->batch ? 1 : 0);
	default_int(&s->interval, v->batch ? 24 * 3600 * sec : 0);
	default_int(&s->delay, v->batch ? 5 * sec : 30 * sec);
	default_str(&s->delay_function, v->batch ? "constant" : "exponential");
	default_int(&s->max_delay, v->batch ? 0 : 3600 * sec);
	if (!s->unlimited_set)
		s->unlimited = !v->batch;
	s->unlimited_set = 1;
	if (strcmp(s->delay_function, "constant") && s->max_delay && s->max_delay < s->delay) {
		size_t old = push(v, "reschedule", -1);
		fail(v, s->pos, "max_delay must be at least delay");
		pop(v, old);
	}
}

static void default_policies(struct validator *v, struct job_group *g)
{
	default_restart(v, &g->restart);
	check_restart_window(v, &g->restart);
	if (v->job_reschedule)
		merge_reschedule(&g->reschedule, v->job_reschedule);
	default_reschedule(v, &g->reschedule);
}

/* time_limit of the job or a group: for batch work only (a service runs
 * until it is stopped, so a limit would only kill it), at least 1s (the
 * decoder checked the year); 0 is no limit. */
static void check_time_limit(struct validator *v, struct hcl_pos pos, int64_t limit)
{
	char buf[32];
	size_t old;

	if (limit <= 0)
		return;
	old = push(v, "time_limit", -1);
	if (!v->batch)
		fail(v, pos, "only batch jobs can have a time limit: a service runs until it is "
		     "stopped");
	else if (limit < NS_PER_SEC)
		fail(v, pos, "must be at least 1s, got %s", format_duration(limit, buf, sizeof(buf)));
	pop(v, old);
}

static bool is_port_label(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static void check_network(struct validator *v, struct job_network *n)
{
	for (size_t i = 0; i < n->nports; i++) {
		struct job_port *p = &n->ports[i];
		size_t old = push(v, "network.ports", (ssize_t)i);
		default_int(&p->static_port, 0);
		default_int(&p->to, 0);
		if (!p->label) {
			if (!failed(v, &p->label) && !failed(v, p))
				fail(v, p->pos, "label is required");
		} else if (!is_port_label(p->label)) {
			fail(v, p->pos, "port label \"%s\" must be letters, digits and '_'", p->label);
		}
		for (size_t j = 0; j < i; j++) {
			struct job_port *q = &n->ports[j];
			if (p->label && q->label && !strcmp(p->label, q->label))
				fail(v, p->pos, "port label \"%s\" is used twice", p->label);
			if (p->static_port && p->static_port == q->static_port)
				fail(v, p->pos, "static port %" PRId64 " is used twice", p->static_port);
		}
		pop(v, old);
	}
}

static void check_group(struct validator *v, struct job_group *g)
{
	size_t mains = 0, leaders = 0;

	check_name(v, g->pos, "group name", &g->name);
	default_int(&g->count, 1);
	if (g->gang && g->count < 1)
		fail(v, g->pos, "a gang needs count >= 1 (its members are placed together), got %" PRId64,
		     g->count);
	if (g->gang_restart && !g->gang)
		fail(v, g->pos, "gang_restart needs gang = true");
	if (g->gang)
		default_str(&g->gang_restart, "unfinished");
	check_rules(v, &g->constraints, "constraints", false);
	check_rules(v, &g->affinities, "affinities", true);
	v->errors += job_spreads_validate(g->spreads, g->nspreads, &v->path, v->failed, v->diags);
	default_policies(v, g);
	check_time_limit(v, g->pos, g->time_limit);
	default_int(&g->time_limit, v->job_time_limit);
	default_int(&g->shutdown_delay, 0);
	check_network(v, &g->network);
	v->group = g;
	if (g->nservices)
		v->errors += job_services_validate(g->services, g->nservices, v->job_id, g, NULL,
						   &v->path, v->failed, v->diags);
	for (size_t i = 0; i < g->nvolumes; i++)
		if (!failed(v, &g->volumes[i]))
			check_volume(v, g, i);
	if (g->ntasks == 0 && !failed(v, &g->tasks))
		fail(v, g->pos, "a group needs at least one task");
	for (size_t i = 0; i < g->ntasks; i++) {
		size_t old = push(v, "tasks", (ssize_t)i);
		if (!failed(v, &g->tasks[i]))
			check_task(v, &g->tasks[i]);
		if (g->tasks[i].restart && !failed(v, g->tasks[i].restart)) {
			merge_restart(g->tasks[i].restart, &g->restart);
			check_restart_window(v, g->tasks[i].restart);
		}
		for (size_t j = 0; j < i; j++)
			if (g->tasks[i].name && g->tasks[j].name &&
			    !strcmp(g->tasks[i].name, g->tasks[j].name))
				fail(v, g->tasks[i].pos, "task name \"%s\" is used twice in the group",
				     g->tasks[i].name);
		mains += !g->tasks[i].lifecycle;
		for (size_t m = 0; m < g->tasks[i].nvolume_mounts; m++)
			if (!failed(v, &g->tasks[i].volume_mounts[m]))
				check_volume_mount(v, g, &g->tasks[i], m);
		if (g->tasks[i].leader && g->tasks[i].lifecycle)
			fail(v, g->tasks[i].pos, "leader is for main tasks, not lifecycle hooks");
		else if (g->tasks[i].leader && leaders++)
			fail(v, g->tasks[i].pos, "a group has at most one leader task");
		pop(v, old);
	}
	if (g->ntasks && !mains)
		fail(v, g->pos, "a group needs a main task (one without lifecycle)");
}

int job_validate(struct job *job, struct diag_list *diags)
{
	return job_validate_decoded(job, NULL, diags);
}

/* periodic: batch only; one or more valid expressions (Nomad's `cron`
 * becomes crons[0]); a time zone herd can compute in. */
static void check_periodic(struct validator *v, struct job *job)
{
	struct job_periodic *p = job->periodic;
	size_t old = push(v, "periodic", -1);
	char err[256];

	if (!v->batch)
		fail(v, p->pos, "only batch jobs can be periodic (this job's type is \"%s\")",
		     job->type);
	if (job->id && strlen(job->id) > JOB_PERIODIC_MAX_ID)
		fail(v, p->pos, "a periodic job's id is at most %d bytes (its children are "
			"\"<id>-periodic-<unix seconds>\")", JOB_PERIODIC_MAX_ID);
	if (p->cron && p->crons.n)
		fail(v, p->pos, "set cron or crons, not both");
	else if (p->cron) {
		p->crons.v = xcalloc(1, sizeof(char *));
		p->crons.v[p->crons.n++] = p->cron;
		p->cron = NULL;
	}
	if (p->crons.n == 0 && !failed(v, &p->crons) && !failed(v, &p->cron))
		fail(v, p->pos, "crons (or cron) is required: when to launch the job");
	for (size_t i = 0; i < p->crons.n; i++) {
		struct cron c;
		if (cron_parse(p->crons.v[i], &c, err, sizeof(err)) < 0)
			fail(v, p->pos, "crons[%zu]: \"%s\": %s", i, p->crons.v[i], err);
	}
	default_str(&p->time_zone, "UTC");
	if (strcmp(p->time_zone, "UTC") && strcmp(p->time_zone, "Local"))
		fail(v, p->pos, "time_zone \"%s\" is not supported: herd computes launches in "
			"\"UTC\" or \"Local\" (the server's time zone)", p->time_zone);
	pop(v, old);
}

/* parameterized: batch only, not also periodic; meta keys named once. */
static void check_parameterized(struct validator *v, struct job *job)
{
	struct job_parameterized *p = job->parameterized;
	size_t old = push(v, "parameterized", -1);

	if (!v->batch)
		fail(v, p->pos, "only batch jobs can be parameterized (this job's type is \"%s\")",
		     job->type);
	if (job->periodic)
		fail(v, p->pos, "a job cannot be both periodic and parameterized");
	if (job->id && strlen(job->id) > JOB_DISPATCH_MAX_ID)
		fail(v, p->pos, "a parameterized job's id is at most %d bytes (its children are "
			"\"<id>-dispatch-<unix seconds>-<8 hex>\")", JOB_DISPATCH_MAX_ID);
	default_str(&p->payload, "optional");
	for (size_t i = 0; i < p->meta_required.n; i++)
		for (size_t j = 0; j < p->meta_optional.n; j++)
			if (!strcmp(p->meta_required.v[i], p->meta_optional.v[j]))
				fail(v, p->pos, "meta key \"%s\" is both required and optional",
				     p->meta_required.v[i]);
	pop(v, old);
}

/* depends_on: each names another job (a job waiting for itself would wait
 * forever) once, with condition complete by default. */
static void check_dependencies(struct validator *v, struct job *job)
{
	for (size_t i = 0; i < job->ndepends_on; i++) {
		struct job_dependency *d = &job->depends_on[i];
		size_t old = push(v, "depends_on", (ssize_t)i);
		if (!failed(v, d)) {
			check_name(v, d->pos, "job", &d->job);
			default_str(&d->condition, "complete");
			if (d->job && job->id && !strcmp(d->job, job->id))
				fail(v, d->pos, "a job cannot depend on itself");
			for (size_t j = 0; j < i && d->job; j++)
				if (job->depends_on[j].job && !strcmp(job->depends_on[j].job, d->job))
					fail(v, d->pos, "job \"%s\" is named twice", d->job);
		}
		pop(v, old);
	}
}

int job_validate_decoded(struct job *job, const struct job_failed *failed_fields,
			 struct diag_list *diags)
{
	struct validator v = { .diags = diags, .path = JOB_PATH_INIT, .failed = failed_fields };

	check_name(&v, job->pos, "id", &job->id);
	default_str(&job->name, job->id ? job->id : "");
	default_str(&job->type, "service");
	/* a sysbatch job's defaults (restart, reschedule, time limits) are a batch job's */
	v.batch = !strcmp(job->type, "batch") || !strcmp(job->type, "sysbatch");
	v.job_id = job->id;
	if (job->periodic && !failed(&v, job->periodic))
		check_periodic(&v, job);
	if (job->parameterized && !failed(&v, job->parameterized))
		check_parameterized(&v, job);
	default_int(&job->priority, 50);
	default_str(&job->namespace, "default");
	if (!is_plain_name(job->namespace))
		fail(&v, job->pos, "namespace \"%s\" must be 1 to %d letters, digits, '-', '_' or '.'",
		     job->namespace, JOB_MAX_ID);
	default_str(&job->node_pool, "default");
	if (job->datacenters.n == 0) {
		free(job->datacenters.v);
		job->datacenters.v = xcalloc(1, sizeof(char *));
		job->datacenters.v[0] = xstrdup("*");
		job->datacenters.n = 1;
	}
	for (size_t i = 0; i < job->datacenters.n; i++)
		if (!*job->datacenters.v[i])
			fail(&v, job->pos, "datacenters[%zu] must not be empty", i);
	check_rules(&v, &job->constraints, "constraints", false);
	check_rules(&v, &job->affinities, "affinities", true);
	v.errors += job_spreads_validate(job->spreads, job->nspreads, &v.path, v.failed, v.diags);
	check_time_limit(&v, job->pos, job->time_limit);
	default_int(&job->time_limit, 0);
	v.job_time_limit = job->time_limit;
	if (job->reschedule && !failed(&v, job->reschedule)) {
		default_reschedule(&v, job->reschedule);
		v.job_reschedule = job->reschedule;
	}
	check_dependencies(&v, job);
	if (job->ngroups == 0 && !failed(&v, &job->groups))
		fail(&v, job->pos, "a job needs at least one group");
	for (size_t i = 0; i < job->ngroups; i++) {
		size_t old = push(&v, "groups", (ssize_t)i);
		if (!failed(&v, &job->groups[i]))
			check_group(&v, &job->groups[i]);
		for (size_t j = 0; j < i; j++)
			if (job->groups[i].name && job->groups[j].name &&
			    !strcmp(job->groups[i].name, job->groups[j].name))
				fail(&v, job->groups[i].pos, "group name \"%s\" is used twice",
				     job->groups[i].name);
		pop(&v, old);
	}
	v.errors += job_update_validate(job, v.batch, &v.path, v.failed, diags);
	v.errors += job_migrate_validate(job, v.batch, &v.path, v.failed, diags);
	v.errors += job_disconnect_validate(job, &v.path, v.failed, diags);
	v.errors += job_system_validate(job, &v.path, v.failed, diags);
	v.errors += job_idle_gpu_validate(job, &v.path, v.failed, diags);
	v.errors += job_scaling_validate(job, v.batch, &v.path, v.failed, diags);
	job_ephemeral_disk_fill(job, v.failed);
	job_path_release(&v.path);
	return v.errors;
}
