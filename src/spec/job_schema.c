/* The schema tables of the job model: which keys each block has, of what
 * kind, with which limits, in canonical order (job-int.h).  The names
 * accepted and ignored with a warning are listed in docs/jobspec.md; keep
 * the two in step. */
#include <stdlib.h>
#include <string.h>

#include "spec/job-int.h"
#include "spec/template_parse.h"   /* TEMPLATE_MAX_DELIM */

#define FIELD(k, kind_, type, member) \
	{ .key = k, .kind = kind_, .off = offsetof(type, member), .set_off = NO_SET_OFF }
#define STR(k, type, member, maxlen) \
	{ .key = k, .kind = F_STRING, .off = offsetof(type, member), .max = maxlen, .set_off = NO_SET_OFF }
#define ENUM(k, type, member, list) \
	{ .key = k, .kind = F_ENUM, .off = offsetof(type, member), .choices = list, .set_off = NO_SET_OFF }
#define INT(k, kind_, type, member, lo, hi) \
	{ .key = k, .kind = kind_, .off = offsetof(type, member), .min = lo, .max = hi, .set_off = NO_SET_OFF }
#define OBJ(k, kind_, type, member, sch) \
	{ .key = k, .kind = kind_, .off = offsetof(type, member), .schema = &sch, .set_off = NO_SET_OFF }
/* a block left out of the JSON when absent (job-int.h, struct field) */
#define OPTIONAL_OBJ(k, type, member, sch) \
	{ .key = k, .kind = F_OBJECT_PTR, .off = offsetof(type, member), .schema = &sch, .min = 1, \
	  .set_off = NO_SET_OFF }
#define ARR(k, type, member, count, sch, maxn) \
	{ .key = k, .kind = F_ARRAY, .off = offsetof(type, member), .count_off = offsetof(type, count), \
	  .schema = &sch, .max = maxn, .set_off = NO_SET_OFF }
#define MAP(k, kind_, type, member, maxn) \
	{ .key = k, .kind = kind_, .off = offsetof(type, member), .max = maxn, .set_off = NO_SET_OFF }
/* fields added after jobs were stored, left out of the JSON at their
 * default (job-int.h, struct field) */
#define NEW_INT(k, kind_, type, member, lo, hi, d) \
	{ .key = k, .kind = kind_, .off = offsetof(type, member), .min = lo, .max = hi, \
	  .set_off = NO_SET_OFF, .omit_default = true, .dflt = d }
#define NEW_STR(k, type, member, maxlen, d) \
	{ .key = k, .kind = F_STRING, .off = offsetof(type, member), .max = maxlen, \
	  .set_off = NO_SET_OFF, .omit_default = true, .dflt_str = d }
#define NEW_BOOL(k, type, member) \
	{ .key = k, .kind = F_BOOL, .off = offsetof(type, member), .set_off = NO_SET_OFF, \
	  .omit_default = true }
/* an enum, a list or a map added after jobs were stored: left out at
 * its default (d, or NULL when d is NULL; an empty list or map) */
#define NEW_ENUM(k, type, member, list, d) \
	{ .key = k, .kind = F_ENUM, .off = offsetof(type, member), .choices = list, \
	  .set_off = NO_SET_OFF, .omit_default = true, .dflt_str = d }
#define NEW_MAP(k, kind_, type, member, maxn) \
	{ .key = k, .kind = kind_, .off = offsetof(type, member), .max = maxn, \
	  .set_off = NO_SET_OFF, .omit_default = true }
/* a list of blocks added after jobs were stored: left out when empty */
#define NEW_ARR(k, type, member, count, sch, maxn) \
	{ .key = k, .kind = F_ARRAY, .off = offsetof(type, member), .count_off = offsetof(type, count), \
	  .schema = &sch, .max = maxn, .set_off = NO_SET_OFF, .omit_default = true }
#define END { .key = NULL }

#define SECOND 1000000000LL
#define HOUR (3600 * SECOND)
#define YEAR (8760 * HOUR)

static const char *const operators[] = {
	"=", "==", "!=", "<", "<=", ">", ">=", "regexp", "set_contains", "set_contains_all",
	"set_contains_any", "version", "semver", "is_set", "is_not_set", "distinct_hosts",
	"distinct_property", NULL,
};
static const char *const job_types[] = { "service", "batch", "system", "sysbatch", NULL };
static const char *const restart_modes[] = { "fail", "delay", NULL };
static const char *const delay_functions[] = { "constant", "exponential", "fibonacci", NULL };
static const char *const hooks[] = { "prestart", "poststart", "poststop", NULL };
static const char *const change_modes[] = { "noop", "restart", "signal", "script", NULL };
static const char *const artifact_modes[] = { "any", "file", "dir", NULL };
static const char *const payload_modes[] = { "optional", "required", "forbidden", NULL };
static const char *const check_types[] = { "http", "tcp", "script", NULL };
static const char *const check_statuses[] = { "passing", "warning", "critical", NULL };
static const char *const check_protocols[] = { "http", "https", NULL };
static const char *const health_checks[] = { "checks", "task_states", "manual", NULL };
static const char *const address_modes[] = { "auto", "host", "driver", "alloc", NULL };
static const char *const on_updates[] = { "require_healthy", "ignore_warnings", "ignore", NULL };
static const char *const gang_restarts[] = { "unfinished", "all", NULL };
static const char *const disconnect_reconciles[] = {
	"keep_original", "keep_replacement", "best_score", "longest_running", NULL,
};

/* --- constraint / affinity --- */

static void init_rule(void *obj)
{
	((struct job_constraint *)obj)->weight = JOB_WEIGHT_UNSET;
}

#define SHORT(k) \
	{ .key = k, .kind = F_SHORTHAND, .off = offsetof(struct job_constraint, operator), \
	  .set_off = NO_SET_OFF }

static const struct field constraint_fields[] = {
	STR("attribute", struct job_constraint, attribute, JOB_MAX_STRING),
	ENUM("operator", struct job_constraint, operator, operators),
	{ .key = "value", .kind = F_SCALAR, .off = offsetof(struct job_constraint, value),
	  .max = JOB_MAX_STRING, .set_off = NO_SET_OFF },
	SHORT("regexp"), SHORT("set_contains"), SHORT("set_contains_all"),
	SHORT("set_contains_any"), SHORT("version"), SHORT("semver"),
	SHORT("distinct_hosts"), SHORT("distinct_property"),
	END,
};
const struct schema constraint_schema = {
	"constraint", sizeof(struct job_constraint), init_rule, constraint_fields, NULL,
};

static const struct field affinity_fields[] = {
	STR("attribute", struct job_constraint, attribute, JOB_MAX_STRING),
	ENUM("operator", struct job_constraint, operator, operators),
	{ .key = "value", .kind = F_SCALAR, .off = offsetof(struct job_constraint, value),
	  .max = JOB_MAX_STRING, .set_off = NO_SET_OFF },
	INT("weight", F_INT, struct job_constraint, weight, -100, 100),
	SHORT("regexp"), SHORT("set_contains"), SHORT("set_contains_all"),
	SHORT("set_contains_any"), SHORT("version"), SHORT("semver"),
	END,
};
static const struct schema affinity_schema = {
	"affinity", sizeof(struct job_constraint), init_rule, affinity_fields, NULL,
};

#define RULES(type, member, sch) \
	ARR(#member, type, member.v, member.n, sch, JOB_MAX_RULES)

/* --- spread (validated in job_spread.c) --- */

static const struct field spread_target_fields[] = {
	STR("value", struct job_spread_target, value, JOB_MAX_STRING),
	INT("percent", F_INT, struct job_spread_target, percent, 0, 100),
	END,
};
static void init_spread_target(void *obj)
{
	((struct job_spread_target *)obj)->percent = JOB_UNSET;
}
static const struct schema spread_target_schema = {
	"target", sizeof(struct job_spread_target), init_spread_target, spread_target_fields, NULL,
};

static const struct field spread_fields[] = {
	STR("attribute", struct job_spread, attribute, JOB_MAX_STRING),
	INT("weight", F_INT, struct job_spread, weight, -100, 100),
	ARR("targets", struct job_spread, targets, ntargets, spread_target_schema,
	    JOB_MAX_SPREAD_TARGETS),
	END,
};
static void init_spread(void *obj)
{
	((struct job_spread *)obj)->weight = JOB_WEIGHT_UNSET;
}
static const struct schema spread_schema = {
	"spread", sizeof(struct job_spread), init_spread, spread_fields, NULL,
};

/* --- resources and devices --- */

static void init_device(void *obj)
{
	struct job_device *d = obj;
	d->count = JOB_UNSET;
}

static const struct field device_fields[] = {
	STR("name", struct job_device, name, 256),
	INT("count", F_INT, struct job_device, count, 1, 1024),
	FIELD("compute", F_COMPUTE, struct job_device, compute),
	INT("memory", F_SIZE_MIB, struct job_device, memory, 0, 1 << 30),
	RULES(struct job_device, constraints, constraint_schema),
	RULES(struct job_device, affinities, affinity_schema),
	END,
};
static const struct schema device_schema = {
	"device", sizeof(struct job_device), init_device, device_fields, NULL,
};

static void init_resources(void *obj)
{
	struct job_resources *r = obj;
	r->cpu = r->memory = r->memory_max = r->cores = JOB_UNSET;
}

static const char *const numa_affinities[] = { "none", "prefer", "require", NULL };
static const struct field numa_fields[] = {
	ENUM("affinity", struct job_numa, affinity, numa_affinities),
	MAP("devices", F_STRV, struct job_numa, devices, JOB_MAX_DEVICES),
	END,
};
static const struct schema numa_schema = {
	"numa", sizeof(struct job_numa), NULL, numa_fields, NULL,
};

static const char *const resources_ignored[] = { "network", "iops", "secrets", NULL };
static const struct field resources_fields[] = {
	INT("cpu", F_INT, struct job_resources, cpu, 0, 1 << 30),
	INT("memory", F_SIZE_MIB, struct job_resources, memory, 10, 1 << 30),
	INT("memory_max", F_SIZE_MIB, struct job_resources, memory_max, 0, 1 << 30),
	INT("cores", F_INT, struct job_resources, cores, 0, 4096),
	ARR("devices", struct job_resources, devices, ndevices, device_schema, JOB_MAX_DEVICES),
	OPTIONAL_OBJ("numa", struct job_resources, numa, numa_schema),
	END,
};
static const struct schema resources_schema = {
	"resources", sizeof(struct job_resources), init_resources, resources_fields,
	resources_ignored,
};

/* --- task --- */

static const char *const template_ignored[] = { "vault_grace", NULL };
static void init_change_script(void *obj)
{
	((struct job_change_script *)obj)->timeout = JOB_UNSET;
}
static const struct field change_script_fields[] = {
	STR("command", struct job_change_script, command, JOB_MAX_COMMAND),
	MAP("args", F_STRV, struct job_change_script, args, JOB_MAX_ACTION_ARGS),
	/* at least one of the agent's 100 ms polls of the script */
	INT("timeout", F_DURATION, struct job_change_script, timeout, 100000000LL,
	    JOB_MAX_CHANGE_SCRIPT_TIMEOUT),
	FIELD("fail_on_error", F_BOOL, struct job_change_script, fail_on_error),
	END,
};
static const struct schema change_script_schema = {
	"change_script", sizeof(struct job_change_script), init_change_script,
	change_script_fields, NULL,
};
static void init_template_wait(void *obj)
{
	struct job_template_wait *w = obj;
	w->min = w->max = JOB_UNSET;
}
static const struct field template_wait_fields[] = {
	INT("min", F_DURATION, struct job_template_wait, min, 0, 24 * HOUR),
	INT("max", F_DURATION, struct job_template_wait, max, 0, 24 * HOUR),
	END,
};
static const struct schema template_wait_schema = {
	"wait", sizeof(struct job_template_wait), init_template_wait, template_wait_fields, NULL,
};
static void init_template(void *obj)
{
	struct job_template *t = obj;
	t->splay = t->uid = t->gid = JOB_UNSET;
}
static const struct field template_fields[] = {
	STR("data", struct job_template, data, JOB_MAX_TEXT),
	STR("source", struct job_template, source, 4096),
	STR("destination", struct job_template, destination, 4096),
	STR("perms", struct job_template, perms, 8),
	ENUM("change_mode", struct job_template, change_mode, change_modes),
	STR("change_signal", struct job_template, change_signal, 32),
	FIELD("env", F_BOOL, struct job_template, env),
	NEW_INT("splay", F_DURATION, struct job_template, splay, 0, 24 * HOUR, 5 * SECOND),
	OPTIONAL_OBJ("wait", struct job_template, wait, template_wait_schema),
	NEW_STR("left_delimiter", struct job_template, left_delimiter, TEMPLATE_MAX_DELIM, "{{"),
	NEW_STR("right_delimiter", struct job_template, right_delimiter, TEMPLATE_MAX_DELIM, "}}"),
	NEW_BOOL("error_on_missing_key", struct job_template, error_on_missing_key),
	NEW_INT("uid", F_INT, struct job_template, uid, -1, 2147483647, -1),
	NEW_INT("gid", F_INT, struct job_template, gid, -1, 2147483647, -1),
	OPTIONAL_OBJ("change_script", struct job_template, change_script, change_script_schema),
	END,
};
static const struct schema template_schema = {
	"template", sizeof(struct job_template), init_template, template_fields, template_ignored,
};

static const struct field artifact_fields[] = {
	STR("source", struct job_artifact, source, 4096),
	STR("destination", struct job_artifact, destination, 4096),
	ENUM("mode", struct job_artifact, mode, artifact_modes),
	MAP("options", F_MAP, struct job_artifact, options, JOB_MAX_MAP),
	MAP("headers", F_MAP, struct job_artifact, headers, JOB_MAX_MAP),
	END,
};
static const struct schema artifact_schema = {
	"artifact", sizeof(struct job_artifact), NULL, artifact_fields, NULL,
};

static const struct field action_fields[] = {
	STR("name", struct job_action, name, JOB_MAX_ID),
	STR("command", struct job_action, command, JOB_MAX_COMMAND),
	MAP("args", F_STRV, struct job_action, args, JOB_MAX_ACTION_ARGS),
	END,
};
static const struct schema action_schema = {
	"action", sizeof(struct job_action), NULL, action_fields, NULL,
};

static const struct field lifecycle_fields[] = {
	ENUM("hook", struct job_lifecycle, hook, hooks),
	FIELD("sidecar", F_BOOL, struct job_lifecycle, sidecar),
	END,
};
static const struct schema lifecycle_schema = {
	"lifecycle", sizeof(struct job_lifecycle), NULL, lifecycle_fields, NULL,
};

static const struct field dispatch_payload_fields[] = {
	STR("file", struct job_dispatch_payload, file, 1024),
	END,
};
static const struct schema dispatch_payload_schema = {
	"dispatch_payload", sizeof(struct job_dispatch_payload), NULL, dispatch_payload_fields, NULL,
};

static const char *const identity_change_modes[] = { "noop", "signal", "restart", NULL };
static void init_identity(void *obj)
{
	((struct job_identity *)obj)->ttl = JOB_UNSET;
}
static const struct field identity_fields[] = {
	FIELD("env", F_BOOL, struct job_identity, env),
	FIELD("file", F_BOOL, struct job_identity, file),
	/* added with signed tokens: a job without them keeps its text */
	NEW_STR("name", struct job_identity, name, JOB_IDENTITY_MAX_NAME, NULL),
	NEW_MAP("aud", F_STRV, struct job_identity, aud, JOB_IDENTITY_MAX_AUD),
	NEW_INT("ttl", F_DURATION, struct job_identity, ttl, 0, JOB_IDENTITY_MAX_TTL, 0),
	NEW_ENUM("change_mode", struct job_identity, change_mode, identity_change_modes, "noop"),
	NEW_STR("change_signal", struct job_identity, change_signal, 32, NULL),
	END,
};
/* what an identity for Vault or Consul also carries */
static const char *const identity_ignored[] = { "filepath", NULL };
static const struct schema identity_schema = {
	"identity", sizeof(struct job_identity), init_identity, identity_fields, identity_ignored,
};

static void init_logs(void *obj)
{
	struct job_logs *l = obj;
	l->max_files = l->max_file_size = JOB_UNSET;
}

/* enabled: Nomad's older spelling of !disabled */
static const char *const logs_ignored[] = { "enabled", NULL };
static const struct field logs_fields[] = {
	INT("max_files", F_INT, struct job_logs, max_files, 1, 1000),
	INT("max_file_size", F_SIZE_MIB, struct job_logs, max_file_size, 1, 1 << 20),
	NEW_BOOL("disabled", struct job_logs, disabled),
	END,
};
static const struct schema logs_schema = {
	"logs", sizeof(struct job_logs), init_logs, logs_fields, logs_ignored,
};

static const struct field volume_mount_fields[] = {
	STR("volume", struct job_volume_mount, volume, JOB_MAX_ID),
	STR("destination", struct job_volume_mount, destination, 4096),
	FIELD("read_only", F_BOOL, struct job_volume_mount, read_only),
	END,
};
static const char *const volume_mount_ignored[] = { "propagation_mode", "selinux_label", NULL };
static const struct schema volume_mount_schema = {
	"volume_mount", sizeof(struct job_volume_mount), NULL, volume_mount_fields,
	volume_mount_ignored,
};

/* --- service and check (group and task level) --- */

static void init_check_restart(void *obj)
{
	struct job_check_restart *r = obj;
	r->limit = r->grace = JOB_UNSET;
}

static const struct field check_restart_fields[] = {
	INT("limit", F_INT, struct job_check_restart, limit, 0, 1000000),
	INT("grace", F_DURATION, struct job_check_restart, grace, 0, YEAR),
	FIELD("ignore_warnings", F_BOOL, struct job_check_restart, ignore_warnings),
	END,
};
static const struct schema check_restart_schema = {
	"check_restart", sizeof(struct job_check_restart), init_check_restart,
	check_restart_fields, NULL,
};

/* Fields added after jobs were stored: 0 (their default) is left out of
 * the JSON, so that a job without them keeps the canonical text it had. */
#define CHECK_RUNS(k, member) \
	{ .key = k, .kind = F_INT, .off = offsetof(struct job_check, member), .min = 0, \
	  .max = JOB_MAX_CHECK_RUNS, .set_off = NO_SET_OFF, .omit_default = true }
#define SHUTDOWN_DELAY(type) \
	{ .key = "shutdown_delay", .kind = F_DURATION, .off = offsetof(type, shutdown_delay), \
	  .min = 0, .max = JOB_MAX_SHUTDOWN_DELAY, .set_off = NO_SET_OFF, .omit_default = true }

static void init_check(void *obj)
{
	struct job_check *c = obj;
	c->interval = c->timeout = JOB_UNSET;
	c->success_before_passing = c->failures_before_critical = JOB_UNSET;
	c->failures_before_warning = JOB_UNSET;
}

/* Consul-only and Connect fields: read, not acted on. */
static const char *const check_ignored[] = {
	"expose", "grpc_service", "grpc_use_tls", "task", "address_mode", "notes", NULL,
};
static const struct field check_fields[] = {
	STR("name", struct job_check, name, JOB_MAX_ID),
	ENUM("type", struct job_check, type, check_types),
	{ .key = "port", .kind = F_SCALAR, .off = offsetof(struct job_check, port), .max = 64,
	  .set_off = NO_SET_OFF },
	STR("path", struct job_check, path, 4096),
	STR("method", struct job_check, method, 16),
	ENUM("protocol", struct job_check, protocol, check_protocols),
	INT("interval", F_DURATION, struct job_check, interval, 0, YEAR),
	INT("timeout", F_DURATION, struct job_check, timeout, 0, YEAR),
	STR("command", struct job_check, command, 4096),
	MAP("args", F_STRV, struct job_check, args, JOB_MAX_LIST),
	MAP("header", F_MAP, struct job_check, header, JOB_MAX_MAP),
	ENUM("initial_status", struct job_check, initial_status, check_statuses),
	OBJ("check_restart", F_OBJECT_PTR, struct job_check, check_restart, check_restart_schema),
	CHECK_RUNS("success_before_passing", success_before_passing),
	CHECK_RUNS("failures_before_critical", failures_before_critical),
	CHECK_RUNS("failures_before_warning", failures_before_warning),
	/* NULL: the service's (job_service.c) */
	NEW_ENUM("on_update", struct job_check, on_update, on_updates, NULL),
	NEW_BOOL("tls_skip_verify", struct job_check, tls_skip_verify),
	NEW_STR("tls_server_name", struct job_check, tls_server_name, 253, NULL),
	NEW_STR("body", struct job_check, body, 65536, NULL),
	END,
};
static const struct schema check_schema = {
	"check", sizeof(struct job_check), init_check, check_fields, check_ignored,
};

static const char *const service_ignored[] = {
	"connect", "enable_tag_override", "tagged_addresses", "identity", "weights", "cluster",
	"task", NULL,
};
static const struct field service_fields[] = {
	STR("name", struct job_service, name, JOB_MAX_ID),
	{ .key = "port", .kind = F_SCALAR, .off = offsetof(struct job_service, port), .max = 64,
	  .set_off = NO_SET_OFF },
	MAP("tags", F_STRV, struct job_service, tags, JOB_MAX_RULES),
	MAP("meta", F_MAP, struct job_service, meta, JOB_MAX_MAP),
	STR("provider", struct job_service, provider, 32),
	ENUM("address_mode", struct job_service, address_mode, address_modes),
	STR("address", struct job_service, address, 256),
	ARR("checks", struct job_service, checks, nchecks, check_schema, JOB_MAX_CHECKS),
	OBJ("check_restart", F_OBJECT_PTR, struct job_service, check_restart,
	    check_restart_schema),
	NEW_MAP("canary_tags", F_STRV, struct job_service, canary_tags, JOB_MAX_RULES),
	NEW_MAP("canary_meta", F_MAP, struct job_service, canary_meta, JOB_MAX_MAP),
	NEW_ENUM("on_update", struct job_service, on_update, on_updates, "require_healthy"),
	END,
};
static const struct schema service_schema = {
	"service", sizeof(struct job_service), NULL, service_fields, service_ignored,
};

static void init_task(void *obj)
{
	struct job_task *t = obj;
	init_resources(&t->resources);
	init_logs(&t->logs);
	t->kill_timeout = JOB_UNSET;
	t->shutdown_delay = JOB_UNSET;
}

static const char *const task_ignored[] = {
	"vault", "consul", "kind", "scaling", "csi_plugin",
	"schedule", "secret", NULL,
};
/* defined with the group's (a task's restart merges over its group's) */
static const struct schema restart_schema;
static const struct field task_fields[] = {
	STR("name", struct job_task, name, JOB_MAX_ID),
	STR("driver", struct job_task, driver, 64),
	STR("user", struct job_task, user, 256),
	FIELD("config", F_CONFIG, struct job_task, config),
	MAP("env", F_MAP, struct job_task, env, JOB_MAX_MAP),
	RULES(struct job_task, constraints, constraint_schema),
	RULES(struct job_task, affinities, affinity_schema),
	ARR("templates", struct job_task, templates, ntemplates, template_schema, JOB_MAX_FILES),
	ARR("artifacts", struct job_task, artifacts, nartifacts, artifact_schema, JOB_MAX_FILES),
	OBJ("lifecycle", F_OBJECT_PTR, struct job_task, lifecycle, lifecycle_schema),
	FIELD("leader", F_BOOL, struct job_task, leader),
	OBJ("restart", F_OBJECT_PTR, struct job_task, restart, restart_schema),
	ARR("volume_mounts", struct job_task, volume_mounts, nvolume_mounts, volume_mount_schema,
	    JOB_MAX_VOLUMES),
	OBJ("resources", F_OBJECT, struct job_task, resources, resources_schema),
	INT("kill_timeout", F_DURATION, struct job_task, kill_timeout, 0, HOUR),
	STR("kill_signal", struct job_task, kill_signal, 32),
	SHUTDOWN_DELAY(struct job_task),
	OBJ("logs", F_OBJECT, struct job_task, logs, logs_schema),
	OPTIONAL_OBJ("identity", struct job_task, identity, identity_schema),
	NEW_ARR("identities", struct job_task, identities, nidentities, identity_schema,
		JOB_MAX_IDENTITIES),
	MAP("meta", F_MAP, struct job_task, meta, JOB_MAX_MAP),
	OBJ("dispatch_payload", F_OBJECT_PTR, struct job_task, dispatch_payload,
	    dispatch_payload_schema),
	ARR("services", struct job_task, services, nservices, service_schema, JOB_MAX_SERVICES),
	NEW_ARR("actions", struct job_task, actions, nactions, action_schema, JOB_MAX_ACTIONS),
	END,
};
static const struct schema task_schema = {
	"task", sizeof(struct job_task), init_task, task_fields, task_ignored,
};

/* --- group --- */

static void init_restart(void *obj)
{
	struct job_restart *r = obj;
	r->attempts = r->interval = r->delay = JOB_UNSET;
}

static const struct field restart_fields[] = {
	INT("attempts", F_INT, struct job_restart, attempts, 0, 1000000),
	INT("interval", F_DURATION, struct job_restart, interval, 0, YEAR),
	INT("delay", F_DURATION, struct job_restart, delay, 0, YEAR),
	ENUM("mode", struct job_restart, mode, restart_modes),
	{ .key = "render_templates", .kind = F_BOOL, .off = offsetof(struct job_restart, render_templates),
	  .set_off = offsetof(struct job_restart, render_templates_set), .omit_default = true },
	END,
};
static const struct schema restart_schema = {
	"restart", sizeof(struct job_restart), init_restart, restart_fields, NULL,
};

static void init_reschedule(void *obj)
{
	struct job_reschedule *r = obj;
	r->attempts = r->interval = r->delay = r->max_delay = JOB_UNSET;
}

static const struct field reschedule_fields[] = {
	INT("attempts", F_INT, struct job_reschedule, attempts, 0, 1000000),
	INT("interval", F_DURATION, struct job_reschedule, interval, 0, YEAR),
	INT("delay", F_DURATION, struct job_reschedule, delay, 0, YEAR),
	ENUM("delay_function", struct job_reschedule, delay_function, delay_functions),
	INT("max_delay", F_DURATION, struct job_reschedule, max_delay, 0, YEAR),
	{ .key = "unlimited", .kind = F_BOOL, .off = offsetof(struct job_reschedule, unlimited),
	  .set_off = offsetof(struct job_reschedule, unlimited_set) },
	END,
};
static const struct schema reschedule_schema = {
	"reschedule", sizeof(struct job_reschedule), init_reschedule, reschedule_fields, NULL,
};

static void init_update(void *obj)
{
	struct job_update *u = obj;
	u->max_parallel = u->min_healthy_time = u->healthy_deadline = JOB_UNSET;
	u->progress_deadline = u->stagger = u->canary = JOB_UNSET;
}

static const struct field update_fields[] = {
	INT("max_parallel", F_INT, struct job_update, max_parallel, 0, 100000),
	ENUM("health_check", struct job_update, health_check, health_checks),
	INT("min_healthy_time", F_DURATION, struct job_update, min_healthy_time, 0, YEAR),
	INT("healthy_deadline", F_DURATION, struct job_update, healthy_deadline, 0, YEAR),
	INT("progress_deadline", F_DURATION, struct job_update, progress_deadline, 0, YEAR),
	{ .key = "auto_revert", .kind = F_BOOL, .off = offsetof(struct job_update, auto_revert),
	  .set_off = offsetof(struct job_update, auto_revert_set) },
	INT("stagger", F_DURATION, struct job_update, stagger, 0, YEAR),
	INT("canary", F_INT, struct job_update, canary, 0, 100000),
	{ .key = "auto_promote", .kind = F_BOOL, .off = offsetof(struct job_update, auto_promote),
	  .set_off = offsetof(struct job_update, auto_promote_set) },
	END,
};
static const struct schema update_schema = {
	"update", sizeof(struct job_update), init_update, update_fields, NULL,
};

void job_update_init(struct job_update *u)
{
	memset(u, 0, sizeof(*u));
	init_update(u);
}

void job_update_free(struct job_update *u)
{
	if (!u)
		return;
	schema_release(&update_schema, u);
	free(u);
}

static void init_migrate(void *obj)
{
	struct job_migrate *m = obj;
	m->max_parallel = m->min_healthy_time = m->healthy_deadline = JOB_UNSET;
}

static const char *const migrate_health_checks[] = { "checks", "task_states", NULL };
static const struct field migrate_fields[] = {
	INT("max_parallel", F_INT, struct job_migrate, max_parallel, 0, 100000),
	ENUM("health_check", struct job_migrate, health_check, migrate_health_checks),
	INT("min_healthy_time", F_DURATION, struct job_migrate, min_healthy_time, 0, YEAR),
	INT("healthy_deadline", F_DURATION, struct job_migrate, healthy_deadline, 0, YEAR),
	END,
};
static const struct schema migrate_schema = {
	"migrate", sizeof(struct job_migrate), init_migrate, migrate_fields, NULL,
};

void job_migrate_init(struct job_migrate *m)
{
	memset(m, 0, sizeof(*m));
	init_migrate(m);
}

void job_migrate_free(struct job_migrate *m)
{
	if (!m)
		return;
	schema_release(&migrate_schema, m);
	free(m);
}

static void init_port(void *obj)
{
	struct job_port *p = obj;
	p->static_port = p->to = JOB_UNSET;
}

static const char *const port_ignored[] = { "host_network", NULL };
static const struct field port_fields[] = {
	STR("label", struct job_port, label, 64),
	INT("static", F_INT, struct job_port, static_port, 0, 65535),
	INT("to", F_INT, struct job_port, to, -1, 65535),
	END,
};
static const struct schema port_schema = {
	"port", sizeof(struct job_port), init_port, port_fields, port_ignored,
};

static const char *const network_ignored[] = { "mode", "dns", "hostname", "mbits", NULL };
static const struct field network_fields[] = {
	ARR("ports", struct job_network, ports, nports, port_schema, JOB_MAX_PORTS),
	END,
};
static const struct schema network_schema = {
	"network", sizeof(struct job_network), NULL, network_fields, network_ignored,
};

static const char *const volume_ignored[] = {
	"access_mode", "attachment_mode", "per_alloc", "mount_options", "sticky", NULL,
};
static const struct field volume_fields[] = {
	STR("name", struct job_volume, name, JOB_MAX_ID),
	STR("type", struct job_volume, type, 16),
	STR("source", struct job_volume, source, JOB_MAX_ID),
	FIELD("read_only", F_BOOL, struct job_volume, read_only),
	END,
};
static const struct schema volume_schema = {
	"volume", sizeof(struct job_volume), NULL, volume_fields, volume_ignored,
};

static void init_disconnect(void *obj)
{
	struct job_disconnect *d = obj;
	d->lost_after = d->stop_on_client_after = JOB_UNSET;
	d->replace = true;
}

static const struct field disconnect_fields[] = {
	INT("lost_after", F_DURATION, struct job_disconnect, lost_after, 0, YEAR),
	FIELD("replace", F_BOOL, struct job_disconnect, replace),
	ENUM("reconcile", struct job_disconnect, reconcile, disconnect_reconciles),
	INT("stop_on_client_after", F_DURATION, struct job_disconnect, stop_on_client_after, 0,
	    YEAR),
	END,
};
static const struct schema disconnect_schema = {
	"disconnect", sizeof(struct job_disconnect), init_disconnect, disconnect_fields, NULL,
};

void job_disconnect_init(struct job_disconnect *d)
{
	memset(d, 0, sizeof(*d));
	init_disconnect(d);
}

static void init_idle_gpu(void *obj)
{
	struct job_idle_gpu *d = obj;
	d->utilization_below = d->after = JOB_UNSET;
}

static const char *const idle_gpu_actions[] = { "warn", "stop", NULL };
static const struct field idle_gpu_fields[] = {
	INT("utilization_below", F_INT, struct job_idle_gpu, utilization_below, 1, 100),
	INT("after", F_DURATION, struct job_idle_gpu, after, 1000000000LL, YEAR),
	ENUM("action", struct job_idle_gpu, action, idle_gpu_actions),
	END,
};
static const struct schema idle_gpu_schema = {
	"idle_gpu", sizeof(struct job_idle_gpu), init_idle_gpu, idle_gpu_fields, NULL,
};

static void init_scaling_policy(void *obj)
{
	struct job_scaling_policy *p = obj;
	p->gpu_utilization = p->window = p->cooldown = p->tolerance = JOB_UNSET;
}

/* What Nomad's external autoscaler reads in a policy: accepted, not used */
static const char *const scaling_policy_ignored[] = {
	"check", "target", "evaluation_interval", "on_check_error", NULL,
};
static const struct field scaling_policy_fields[] = {
	/* 0 (what validation leaves when it is absent): no herd policy */
	INT("gpu_utilization", F_INT, struct job_scaling_policy, gpu_utilization, 0, 100),
	INT("window", F_DURATION, struct job_scaling_policy, window, 5000000000LL, 3600000000000LL),
	INT("cooldown", F_DURATION, struct job_scaling_policy, cooldown, 0, 86400000000000LL),
	INT("tolerance", F_INT, struct job_scaling_policy, tolerance, 0, 90),
	END,
};
static const struct schema scaling_policy_schema = {
	"policy", sizeof(struct job_scaling_policy), init_scaling_policy, scaling_policy_fields,
	scaling_policy_ignored,
};

static void init_scaling(void *obj)
{
	struct job_scaling *sc = obj;
	sc->min = sc->max = JOB_UNSET;
	sc->enabled = true;
}

static const struct field scaling_fields[] = {
	INT("min", F_INT, struct job_scaling, min, 0, 100000),
	INT("max", F_INT, struct job_scaling, max, 0, 100000),
	FIELD("enabled", F_BOOL, struct job_scaling, enabled),
	OPTIONAL_OBJ("policy", struct job_scaling, policy, scaling_policy_schema),
	END,
};
static const struct schema scaling_schema = {
	"scaling", sizeof(struct job_scaling), init_scaling, scaling_fields, NULL,
};

static void init_ephemeral_disk(void *obj)
{
	((struct job_ephemeral_disk *)obj)->size = JOB_UNSET;
}

static const struct field ephemeral_disk_fields[] = {
	INT("size", F_INT, struct job_ephemeral_disk, size, 1, 1LL << 30),
	FIELD("sticky", F_BOOL, struct job_ephemeral_disk, sticky),
	FIELD("migrate", F_BOOL, struct job_ephemeral_disk, migrate),
	END,
};
static const struct schema ephemeral_disk_schema = {
	"ephemeral_disk", sizeof(struct job_ephemeral_disk), init_ephemeral_disk,
	ephemeral_disk_fields, NULL,
};

static void init_group(void *obj)
{
	struct job_group *g = obj;
	g->count = JOB_UNSET;
	init_restart(&g->restart);
	init_reschedule(&g->reschedule);
	g->time_limit = JOB_UNSET;
	g->shutdown_delay = JOB_UNSET;
	g->max_client_disconnect = g->stop_after_client_disconnect = JOB_UNSET;
}

static const char *const group_ignored[] = {
	"consul", "vault", NULL,
};
/* Nomad's older spellings (validation moves them into disconnect) */
#define LEGACY_DURATION(k, member) \
	{ .key = k, .kind = F_DURATION, .off = offsetof(struct job_group, member), .min = 0, \
	  .max = YEAR, .set_off = NO_SET_OFF, .omit_default = true }
static const struct field group_fields[] = {
	STR("name", struct job_group, name, JOB_MAX_ID),
	INT("count", F_INT, struct job_group, count, 0, 100000),
	FIELD("gang", F_BOOL, struct job_group, gang),
	ENUM("gang_restart", struct job_group, gang_restart, gang_restarts),
	RULES(struct job_group, constraints, constraint_schema),
	RULES(struct job_group, affinities, affinity_schema),
	ARR("spreads", struct job_group, spreads, nspreads, spread_schema, JOB_MAX_SPREADS),
	OBJ("restart", F_OBJECT, struct job_group, restart, restart_schema),
	OBJ("reschedule", F_OBJECT, struct job_group, reschedule, reschedule_schema),
	OPTIONAL_OBJ("update", struct job_group, update, update_schema),
	INT("time_limit", F_DURATION, struct job_group, time_limit, 0, YEAR),
	SHUTDOWN_DELAY(struct job_group),
	OBJ("network", F_OBJECT, struct job_group, network, network_schema),
	ARR("volumes", struct job_group, volumes, nvolumes, volume_schema, JOB_MAX_VOLUMES),
	ARR("tasks", struct job_group, tasks, ntasks, task_schema, JOB_MAX_TASKS),
	MAP("meta", F_MAP, struct job_group, meta, JOB_MAX_MAP),
	ARR("services", struct job_group, services, nservices, service_schema, JOB_MAX_SERVICES),
	OPTIONAL_OBJ("disconnect", struct job_group, disconnect, disconnect_schema),
	OPTIONAL_OBJ("idle_gpu", struct job_group, idle_gpu, idle_gpu_schema),
	OPTIONAL_OBJ("scaling", struct job_group, scaling, scaling_schema),
	OPTIONAL_OBJ("ephemeral_disk", struct job_group, ephemeral_disk, ephemeral_disk_schema),
	NEW_BOOL("prevent_reschedule_on_lost", struct job_group, prevent_reschedule_on_lost),
	OPTIONAL_OBJ("migrate", struct job_group, migrate, migrate_schema),
	LEGACY_DURATION("max_client_disconnect", max_client_disconnect),
	LEGACY_DURATION("stop_after_client_disconnect", stop_after_client_disconnect),
	END,
};
static const struct schema group_schema = {
	"group", sizeof(struct job_group), init_group, group_fields, group_ignored,
};

/* --- periodic --- */

static void init_periodic(void *obj)
{
	((struct job_periodic *)obj)->enabled = true;
}

static const struct field periodic_fields[] = {
	MAP("crons", F_STRV, struct job_periodic, crons, 64),
	STR("cron", struct job_periodic, cron, 256),
	FIELD("prohibit_overlap", F_BOOL, struct job_periodic, prohibit_overlap),
	STR("time_zone", struct job_periodic, time_zone, 64),
	{ .key = "enabled", .kind = F_BOOL, .off = offsetof(struct job_periodic, enabled),
	  .set_off = offsetof(struct job_periodic, enabled_set) },
	END,
};
static const struct schema periodic_schema = {
	"periodic", sizeof(struct job_periodic), init_periodic, periodic_fields, NULL,
};

/* --- parameterized --- */

static const struct field parameterized_fields[] = {
	ENUM("payload", struct job_parameterized, payload, payload_modes),
	MAP("meta_required", F_STRV, struct job_parameterized, meta_required, JOB_MAX_MAP),
	MAP("meta_optional", F_STRV, struct job_parameterized, meta_optional, JOB_MAX_MAP),
	END,
};
static const struct schema parameterized_schema = {
	"parameterized", sizeof(struct job_parameterized), NULL, parameterized_fields, NULL,
};

/* --- depends_on --- */

static const char *const dependency_conditions[] = { "complete", "failed", "dead", NULL };
static const struct field dependency_fields[] = {
	STR("job", struct job_dependency, job, JOB_MAX_ID),
	ENUM("condition", struct job_dependency, condition, dependency_conditions),
	END,
};
static const struct schema dependency_schema = {
	"depends_on", sizeof(struct job_dependency), NULL, dependency_fields, NULL,
};

/* --- job --- */

static void init_job(void *obj)
{
	((struct job *)obj)->priority = JOB_UNSET;
	((struct job *)obj)->time_limit = JOB_UNSET;
}

static const char *const job_ignored[] = {
	"vault", "consul", "region", "all_at_once",
	"multiregion", "ui", "vault_token", "consul_token", NULL,
};
static const struct field job_fields[] = {
	STR("id", struct job, id, JOB_MAX_ID),
	STR("name", struct job, name, JOB_MAX_ID),
	ENUM("type", struct job, type, job_types),
	INT("priority", F_INT, struct job, priority, 1, 100),
	STR("namespace", struct job, namespace, JOB_MAX_ID),
	MAP("datacenters", F_STRV, struct job, datacenters, JOB_MAX_LIST),
	STR("node_pool", struct job, node_pool, JOB_MAX_ID),
	MAP("meta", F_MAP, struct job, meta, JOB_MAX_MAP),
	RULES(struct job, constraints, constraint_schema),
	RULES(struct job, affinities, affinity_schema),
	ARR("spreads", struct job, spreads, nspreads, spread_schema, JOB_MAX_SPREADS),
	ARR("groups", struct job, groups, ngroups, group_schema, JOB_MAX_GROUPS),
	OBJ("periodic", F_OBJECT_PTR, struct job, periodic, periodic_schema),
	OBJ("parameterized", F_OBJECT_PTR, struct job, parameterized, parameterized_schema),
	INT("time_limit", F_DURATION, struct job, time_limit, 0, YEAR),
	OBJ("reschedule", F_OBJECT_PTR, struct job, reschedule, reschedule_schema),
	OPTIONAL_OBJ("update", struct job, update, update_schema),
	OPTIONAL_OBJ("migrate", struct job, migrate, migrate_schema),
	ARR("depends_on", struct job, depends_on, ndepends_on, dependency_schema, JOB_MAX_DEPENDS),
	END,
};
const struct schema job_schema = {
	"job", sizeof(struct job), init_job, job_fields, job_ignored,
};

/* --- freeing, by the same tables --- */

static void map_release(struct job_map *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].key);
		free(m->v[i].value);
	}
	free(m->v);
}

void schema_release(const struct schema *schema, void *obj)
{
	for (const struct field *f = schema->fields; f->key; f++) {
		void *p = (char *)obj + f->off;
		switch (f->kind) {
		case F_STRING:
		case F_ENUM:
		case F_SCALAR:
			free(*(char **)p);
			break;
		case F_STRV: {
			struct job_strv *sv = p;
			for (size_t i = 0; i < sv->n; i++)
				free(sv->v[i]);
			free(sv->v);
			break;
		}
		case F_MAP:
			map_release(p);
			break;
		case F_CONFIG:
			json_decref(*(json_t **)p);
			break;
		case F_OBJECT:
			schema_release(f->schema, p);
			break;
		case F_OBJECT_PTR:
			if (*(void **)p)
				schema_release(f->schema, *(void **)p);
			free(*(void **)p);
			break;
		case F_ARRAY: {
			char *v = *(char **)p;
			size_t n = *(size_t *)((char *)obj + f->count_off);
			for (size_t i = 0; i < n; i++)
				schema_release(f->schema, v + i * f->schema->size);
			free(v);
			break;
		}
		case F_INT: case F_BOOL: case F_DURATION: case F_SIZE_MIB:
		case F_COMPUTE: case F_SHORTHAND:
			break;
		}
	}
}

void job_free(struct job *job)
{
	if (!job)
		return;
	schema_release(&job_schema, job);
	free(job);
}
