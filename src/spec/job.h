/* job: the one internal model of a job (docs/jobspec.md).
 *
 * A job file (HCL or JSON) and an API request decode into these structs
 * (spec.h: spec_load, job_from_json); job_to_json writes the canonical JSON
 * form back.  Units are fixed here so that nothing downstream converts:
 * durations in nanoseconds, memory sizes in MiB, CPU in MHz, a GPU's compute
 * share in thousandths of a GPU (compute = 25 percent -> 250).
 *
 * Every struct below owns its strings and arrays (freed by job_free).  A
 * string field is NULL when the file did not set it and it has no default.
 * Numeric fields hold JOB_UNSET between decoding and validation; a job
 * returned by spec_load or job_from_json has passed job_validate, so every
 * default is filled and no JOB_UNSET remains.
 *
 * Each struct starts with `pos`, where the thing was written (0:0 when the
 * tree had no position map, e.g. an HTTP request). */
#ifndef HERD_SPEC_JOB_H
#define HERD_SPEC_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/diag.h"
#include "spec/hcl.h"

#define JOB_UNSET (-1)
/* An affinity weight is -100..100 and may be negative: its own marker. */
#define JOB_WEIGHT_UNSET INT64_MIN

/* Limits on what a job file may hold; exceeding one is an error. */
#define JOB_MAX_ID 128            /* bytes of a job id, group or task name */
#define JOB_MAX_STRING 65536      /* bytes of an ordinary string value */
#define JOB_MAX_TEXT (1u << 20)   /* bytes of template data */
#define JOB_MAX_GROUPS 1000
#define JOB_MAX_TASKS 1000        /* per group */
#define JOB_MAX_RULES 64          /* constraints or affinities in one list */
#define JOB_MAX_DEVICES 32        /* per task */
#define JOB_MAX_PORTS 128         /* per group */
#define JOB_MAX_FILES 128         /* templates or artifacts per task */
#define JOB_MAX_MAP 1024          /* entries of meta, env, options */
#define JOB_MAX_LIST 1024         /* strings in datacenters */
#define JOB_MAX_SERVICES 32       /* service blocks per group or task */
#define JOB_MAX_CHECKS 32         /* check blocks per service */
#define JOB_MAX_CHECK_RUNS 100    /* a check's success_before_passing and the like */
#define JOB_MAX_SHUTDOWN_DELAY (24 * 3600 * 1000000000LL) /* ns, a group's or task's */
#define JOB_MAX_DEPENDS 64        /* depends_on blocks per job */
#define JOB_MAX_VOLUMES 64        /* volumes per group, volume mounts per task */
#define JOB_MAX_SPREADS 8         /* spread blocks of a job or of a group */
#define JOB_MAX_SPREAD_TARGETS 64 /* target blocks of one spread */
#define JOB_MAX_ACTIONS 32        /* action blocks per task */
#define JOB_MAX_ACTION_ARGS 256   /* args of an action or a change_script */
#define JOB_MAX_COMMAND 4096      /* bytes of an action's or change_script's command */
#define JOB_MAX_CHANGE_SCRIPT_TIMEOUT (3600 * 1000000000LL) /* ns */

/* A list of strings (datacenters, an identity's aud), in source order. */
struct job_strv {
	char **v;
	size_t n;
};

/* A string -> string map (meta, env, artifact options), in source order. */
struct job_kv {
	char *key;
	char *value;
};

struct job_map {
	struct job_kv *v;
	size_t n;
};

/* constraint { attribute operator value } and affinity { ... weight }.
 * operator is one of the names of docs/jobspec.md ("=" by default);
 * value is NULL for operators that take none (is_set, distinct_hosts). */
struct job_constraint {
	struct hcl_pos pos;
	char *attribute;
	char *operator;
	char *value;
	int64_t weight;   /* affinities only: -100..100, not 0; default 50 */
};

struct job_rules {
	struct job_constraint *v;
	size_t n;
};

/* spread { attribute weight target "<value>" { percent } } at job or group
 * level (docs/jobspec.md, "spread"): prefer nodes whose value of attribute
 * holds fewer of the group's allocations than its share. */
struct job_spread_target {
	struct hcl_pos pos;
	char *value;      /* required, unique within the spread */
	int64_t percent;  /* 0..100, default 0; a spread's sum at most 100 */
};

struct job_spread {
	struct hcl_pos pos;
	char *attribute;  /* required: a node reference, "${node.datacenter}" */
	int64_t weight;   /* -100..100, not 0; default 50 */
	struct job_spread_target *targets;
	size_t ntargets;
};

/* device "<vendor/type[/model]>" or "<type>" in resources.  compute and
 * memory ask for a fraction of one GPU (shared through MPS or
 * time-slicing); both 0 mean whole devices. */
struct job_device {
	struct hcl_pos pos;
	char *name;
	int64_t count;          /* default 1 */
	int compute;            /* thousandths of a GPU, 0 or 1..1000 */
	int64_t memory;         /* MiB of GPU memory, 0 = not asked */
	struct job_rules constraints;
	struct job_rules affinities;
};

struct job_resources {
	struct hcl_pos pos;
	int64_t cpu;            /* MHz; default 100 (0 when cores is set) */
	int64_t memory;         /* MiB; default 300 */
	int64_t memory_max;     /* MiB; 0 = no oversubscription */
	int64_t cores;          /* whole cores; 0 = share by cpu */
	struct job_device *devices;
	size_t ndevices;
	struct job_numa *numa;  /* NULL: none */
};

/* template { change_script { } }: what change_mode "script" runs inside
 * the task when the template's output changed (the agent's
 * change_script.c). */
struct job_change_script {
	struct hcl_pos pos;
	char *command;          /* required */
	struct job_strv args;
	int64_t timeout;        /* ns, default 5s */
	bool fail_on_error;     /* a failure (exit != 0, timeout) kills the task */
};

struct job_template {
	struct hcl_pos pos;
	char *data;             /* exactly one of data and source */
	char *source;
	char *destination;      /* required, relative to the task dir */
	char *perms;            /* octal, default "0644" */
	char *change_mode;      /* noop | restart | signal | script; default restart */
	char *change_signal;    /* required when change_mode is signal */
	bool env;               /* render as environment variables */
	int64_t splay;          /* ns; change_mode waits a random [0, splay); default 5s */
	struct job_template_wait *wait; /* NULL: a change renders at once */
	char *left_delimiter;   /* default "{{" */
	char *right_delimiter;  /* default "}}" */
	bool error_on_missing_key; /* an unknown meta / attr key fails the rendering */
	int64_t uid, gid;       /* owner of the file; -1 (default): the agent's */
	/* required with change_mode "script", refused with any other; NULL:
	 * none */
	struct job_change_script *change_script;
};

/* action "<name>" { command args }: a command the job's author names,
 * which an operator runs in a running allocation of the task (`herd job
 * action`) without choosing the command. */
struct job_action {
	struct hcl_pos pos;
	char *name;             /* required: a plain name, unique in its task */
	char *command;          /* required */
	struct job_strv args;
};

/* template { wait { min max } }: after the data changes, a rendering waits
 * until it stopped changing for min, but no longer than max after the
 * first change (filled: min 0, max 4 x min when unset). */
struct job_template_wait {
	struct hcl_pos pos;
	int64_t min, max;       /* ns */
};

struct job_artifact {
	struct hcl_pos pos;
	char *source;           /* required: a URL (go-getter style) */
	char *destination;      /* default "local/" */
	char *mode;             /* any | file | dir; default any */
	struct job_map options;
	struct job_map headers;
};

/* dispatch_payload { file }: where a dispatched job's payload is written,
 * relative to the task's local/ directory (validation keeps it there). */
struct job_dispatch_payload {
	struct hcl_pos pos;
	char *file;             /* required */
};

struct job_lifecycle {
	struct hcl_pos pos;
	char *hook;             /* prestart | poststart | poststop */
	bool sidecar;           /* only with prestart and poststart */
};

struct job_logs {
	struct hcl_pos pos;
	int64_t max_files;      /* default 10 */
	int64_t max_file_size;  /* MiB, default 10 */
	bool disabled;          /* no log files: stdout and stderr go to /dev/null */
};

/* identity ["<name>"] { aud env file ttl change_mode change_signal } of a
 * task (docs/jobspec.md, "identity"): a workload identity, a token signed
 * by the server (a JWT) that the agent gets for each run of the task.  The
 * unnamed block is the identity "default", the one that reads its job's
 * variables (nomad/jobs/<job>[/<group>[/<task>]]): env puts it in
 * HERD_TOKEN and NOMAD_TOKEN (with HERD_ADDR, NOMAD_ADDR), file in
 * secrets/herd_token and secrets/nomad_token.  A named one is for services
 * outside herd: HERD_TOKEN_<name>, NOMAD_TOKEN_<name>,
 * secrets/herd_token_<name>, secrets/nomad_token_<name>.  Neither env nor
 * file: no token.  With ttl the token expires and the agent renews it
 * (change_mode says what the task is told). */
#define JOB_MAX_IDENTITIES 8          /* named identity blocks per task */
#define JOB_IDENTITY_MAX_NAME 64
#define JOB_IDENTITY_MAX_AUD 16       /* audiences of one identity */
#define JOB_IDENTITY_MIN_TTL (10 * 1000000000LL)            /* ns */
#define JOB_IDENTITY_MAX_TTL (90 * 24 * 3600 * 1000000000LL) /* ns */
struct job_identity {
	struct hcl_pos pos;
	char *name;             /* named blocks'; NULL for the unnamed one */
	struct job_strv aud;    /* the token's aud; empty: none */
	bool env, file;
	int64_t ttl;            /* ns; 0: the token does not expire */
	char *change_mode;      /* noop (default) | signal | restart, at a renewal */
	char *change_signal;    /* required when change_mode is signal */
};

/* volume_mount { volume destination read_only } of a task: one of the
 * group's volumes, seen by the task at destination (docs/jobspec.md,
 * docs/drivers.md says what each driver does with it). */
struct job_volume_mount {
	struct hcl_pos pos;
	char *volume;           /* required: the name of a group volume */
	char *destination;      /* required; absolute for exec and docker */
	bool read_only;         /* true: read-only even where the volume is writable */
};

struct job_task {
	struct hcl_pos pos;
	char *name;
	char *driver;           /* required */
	char *user;
	json_t *config;         /* driver-specific, kept verbatim (an object) */
	struct job_map env;
	struct job_rules constraints;
	struct job_rules affinities;
	struct job_template *templates;
	size_t ntemplates;
	struct job_artifact *artifacts;
	size_t nartifacts;
	struct job_lifecycle *lifecycle; /* NULL: a main task */
	/* restart { } of the task: NULL, the group's; else the group's with
	 * the fields the task set replaced (Nomad's merge), filled by
	 * job_validate */
	struct job_restart *restart;
	bool leader;            /* its end (for good) stops the group's other tasks */
	struct job_volume_mount *volume_mounts;
	size_t nvolume_mounts;
	struct job_resources resources;
	int64_t kill_timeout;   /* ns, default 5s */
	char *kill_signal;      /* default "SIGINT" */
	/* ns between the removal of the task's services and its kill_signal
	 * when its allocation is stopped (after the group's); default 0 */
	int64_t shutdown_delay;
	struct job_logs logs;
	struct job_map meta;
	struct job_dispatch_payload *dispatch_payload; /* NULL: the payload is not written */
	struct job_identity *identity; /* NULL: none (see struct job_identity) */
	struct job_identity *identities; /* the named ones */
	size_t nidentities;
	struct job_service *services;
	size_t nservices;
	struct job_action *actions;  /* at most JOB_MAX_ACTIONS */
	size_t nactions;
};

struct job_restart {
	struct hcl_pos pos;
	int64_t attempts;
	int64_t interval;       /* ns */
	int64_t delay;          /* ns */
	char *mode;             /* fail | delay */
	bool render_templates;  /* a restart renders the templates again */
	int render_templates_set; /* the file set it (a task's merges over its group's) */
};

struct job_reschedule {
	struct hcl_pos pos;
	int64_t attempts;
	int64_t interval;       /* ns */
	int64_t delay;          /* ns */
	char *delay_function;   /* constant | exponential | fibonacci */
	int64_t max_delay;      /* ns */
	bool unlimited;
	int unlimited_set;      /* decoder bookkeeping: 1 when the file set it */
};

/* update { } at job or group level (docs/jobspec.md, "Rolling updates"):
 * how a service group's allocations move to a new job version.  A group's
 * fields not set are the job's (Nomad's merge); no block at either level:
 * NULL, every changed allocation is replaced at once.  Batch jobs: NULL
 * (the block is ignored with a warning, as Nomad ignores it). */
struct job_update {
	struct hcl_pos pos;
	int64_t max_parallel;      /* allocations replaced at a time; 0: all at once; default 1 */
	char *health_check;        /* checks (default) | task_states */
	int64_t min_healthy_time;  /* ns, default 10s */
	int64_t healthy_deadline;  /* ns, default 5m */
	int64_t progress_deadline; /* ns, default 10m; 0: none */
	bool auto_revert;          /* a failed deployment re-registers the last stable version */
	int auto_revert_set;       /* decoder bookkeeping: 1 when the file set it */
	int64_t stagger;           /* ns, default 30s (accepted; batches wait for health instead) */
	int64_t canary;            /* new-version allocations placed beside the old ones
				    * before the rest rolls; 0: none (default) */
	bool auto_promote;         /* promote once every group's canaries are healthy */
	int auto_promote_set;
};

/* migrate { } at job or group level (docs/jobspec.md, "migrate"): how a
 * service group's allocations leave a draining node.  At most max_parallel
 * of a group's allocations are migrating at a time: the next is stopped
 * once the replacements of the previous ones are healthy (running, checks
 * passing as health_check says, for min_healthy_time).  A group's fields
 * not set are the job's; no block at either level: NULL, Nomad's defaults
 * (job_group_migrate).  Batch jobs: NULL (ignored with a warning: their
 * allocations run until the drain's deadline). */
struct job_migrate {
	struct hcl_pos pos;
	int64_t max_parallel;      /* default 1; 0: none before the deadline */
	char *health_check;        /* checks (default) | task_states */
	int64_t min_healthy_time;  /* ns, default 10s */
	int64_t healthy_deadline;  /* ns, default 5m */
};

/* g's migrate block, or one with Nomad's defaults when it has none. */
struct job_group;
const struct job_migrate *job_group_migrate(const struct job_group *g);

struct job_port {
	struct hcl_pos pos;
	char *label;
	int64_t static_port;    /* 0 = dynamic */
	int64_t to;             /* port inside the task; 0 = same, -1 = host's */
};

struct job_network {
	struct hcl_pos pos;
	struct job_port *ports;
	size_t nports;
};

/* volume "<name>" { type source read_only } of a group: a host volume the
 * node must have (client { host_volume "<source>" { } }); the scheduler
 * places the group only on such nodes. */
struct job_volume {
	struct hcl_pos pos;
	char *name;             /* the label: what a task's volume_mount names */
	char *type;             /* "host" (default); "csi" is refused */
	char *source;           /* required: the node's host volume name */
	bool read_only;         /* true: a read-only host volume will do */
};

/* disconnect { lost_after replace reconcile stop_on_client_after } of a
 * group (docs/jobspec.md, "disconnect"): what the server does with the
 * allocations of a node that missed its heartbeats, and what the node's
 * agent does while it reaches no server.  Validation moves Nomad's older
 * group fields max_client_disconnect and stop_after_client_disconnect in
 * here (a block made for them when there is none).  lost_after and
 * stop_on_client_after are never both set. */
struct job_disconnect {
	struct hcl_pos pos;
	int64_t lost_after;           /* ns the allocations are "unknown" before
				       * they are lost; 0 (default): lost at once */
	bool replace;                 /* place a replacement while unknown; default true */
	char *reconcile;              /* keep_original | keep_replacement | best_score
				       * (default) | longest_running */
	int64_t stop_on_client_after; /* ns without any server before the agent
				       * stops the tasks; 0 (default): never */
};

/* idle_gpu { utilization_below after action } of a group (docs/jobspec.md,
 * "idle_gpu"): what the server does with the group's allocations once
 * every GPU they hold stayed below utilization_below percent for `after`.
 * A namespace's quota may have one too; the stricter wins, field by field
 * (docs/teams.md, "Idle GPUs"). */
struct job_idle_gpu {
	struct hcl_pos pos;
	int64_t utilization_below; /* percent, 1..100; default 5 */
	int64_t after;             /* ns, at least 1s; required */
	char *action;              /* warn (default) | stop */
};

/* scaling { min max enabled policy { gpu_utilization window cooldown
 * tolerance } } of a group (docs/jobspec.md, "scaling"): the bounds of the
 * group's count (the scale API keeps to them) and, with a policy's
 * gpu_utilization, herd's own autoscaler of a service group on the GPU
 * utilization of its allocations (src/server/autoscale.c).  Validation
 * fills every default. */
struct job_scaling_policy {
	struct hcl_pos pos;
	int64_t gpu_utilization; /* target percent, 1..100; 0 (the default): no herd
				  * policy (one for Nomad's external autoscaler) */
	int64_t window;          /* ns the utilization is averaged over; 5s..1h, default 1m */
	int64_t cooldown;        /* ns after a change of the count; 0..1d, default 5m */
	int64_t tolerance;       /* percent of the target inside which nothing moves;
				  * 0..90, default 10 */
};
struct job_scaling {
	struct hcl_pos pos;
	int64_t min;  /* default: the group's count */
	int64_t max;  /* required */
	bool enabled; /* default true: false stops the autoscaler, not the bounds */
	struct job_scaling_policy *policy; /* NULL: none */
};

/* ephemeral_disk { size sticky migrate } of a group (docs/jobspec.md,
 * "ephemeral_disk"): the allocation directory's data (alloc/data and each
 * task's local/) follows a replacement of the allocation.  Validation
 * fills size (300) and makes migrate imply sticky. */
struct job_ephemeral_disk {
	struct hcl_pos pos;
	int64_t size;  /* MB; recorded, not counted against a node's disk */
	bool sticky;   /* the replacement prefers the node of the one it replaces,
			* whose agent moves the data into it */
	bool migrate;  /* also across nodes: validated, not carried out yet */
};

struct job_group {
	struct hcl_pos pos;
	char *name;
	int64_t count;          /* default 1 */
	/* all `count` instances are placed together or none, and restarted
	 * together (docs/jobspec.md, "Gangs"); needs count >= 1 */
	bool gang;
	/* which members a gang's restart places again: "unfinished" (the
	 * default for a gang: a batch member that completed keeps its
	 * result) or "all" (every member, completed ones too: ranks that
	 * must all start over together); NULL when not a gang */
	char *gang_restart;
	struct job_rules constraints;
	struct job_rules affinities;
	struct job_spread *spreads; /* the job's apply to every group as well */
	size_t nspreads;
	struct job_restart restart;
	struct job_reschedule reschedule;
	struct job_update *update; /* NULL: no rolling update (see struct job_update) */
	/* batch only: ns an allocation may run, from its first main task's
	 * start, before the agent stops it and it fails for good; 0: no
	 * limit.  Default: the job's. */
	int64_t time_limit;
	/* ns between the removal of the group's services and the stop of its
	 * tasks when the allocation is stopped (once per allocation); 0 */
	int64_t shutdown_delay;
	struct job_network network;
	struct job_volume *volumes;
	size_t nvolumes;
	struct job_task *tasks;
	size_t ntasks;
	struct job_map meta;
	struct job_service *services; /* registered while the first main task runs */
	size_t nservices;
	struct job_disconnect *disconnect; /* NULL: none (see struct job_disconnect) */
	struct job_idle_gpu *idle_gpu;     /* NULL: none (see struct job_idle_gpu) */
	struct job_scaling *scaling;       /* NULL: none (see struct job_scaling) */
	struct job_ephemeral_disk *ephemeral_disk; /* NULL: none */
	struct job_migrate *migrate;       /* NULL: the defaults (see struct job_migrate) */
	/* an allocation lost with its node is not replaced (it stays lost) */
	bool prevent_reschedule_on_lost;
	/* Nomad's older spellings of disconnect's lost_after and
	 * stop_on_client_after, as decoded; validation moves them into
	 * disconnect and leaves 0 (left out of the JSON) */
	int64_t max_client_disconnect;
	int64_t stop_after_client_disconnect;
};


/* numa { } in resources (needs cores): where the task's reserved cores
 * sit.  affinity "none" (default), "prefer" or "require" one NUMA node;
 * devices: names of the task's device asks whose GPUs must be on that
 * NUMA node too. */
struct job_numa {
	struct hcl_pos pos;
	char *affinity;
	struct job_strv devices;
};

/* check_restart { limit grace ignore_warnings }: restart the task after
 * `limit` consecutive results that are not passing (0: never), ignoring
 * the results of the first `grace` after each start. */
struct job_check_restart {
	struct hcl_pos pos;
	int64_t limit;          /* default 0: checks never restart the task */
	int64_t grace;          /* ns, default 1s */
	bool ignore_warnings;   /* warning counts as passing */
};

/* check { ... } of a service: run by the agent every `interval`
 * (docs/jobspec.md, "service").  type http: GET (method) path on the
 * service's address and port, 2xx passing, 429 warning, else critical;
 * tcp: a connection; script: command + args in the task's environment,
 * exit 0 passing, 1 warning, else critical. */
struct job_check {
	struct hcl_pos pos;
	char *name;             /* default "service: \"<service>\" check" */
	char *type;             /* http | tcp | script; required */
	char *port;             /* a port label or number; default the service's */
	char *path;             /* http: required, starts with '/' */
	char *method;           /* http: default GET */
	char *protocol;         /* http: http (default) | https */
	int64_t interval;       /* ns, required, > 0 */
	int64_t timeout;        /* ns, required, > 0 and <= interval */
	char *command;          /* script: required */
	struct job_strv args;
	struct job_map header;  /* http: request headers */
	char *initial_status;   /* passing | warning | critical; default critical */
	/* results in a row before the status shown changes (default 0, as 1:
	 * at once): passing (or warning) to turn passing from another status,
	 * critical to turn critical, to turn warning from passing (0: never) */
	int64_t success_before_passing, failures_before_critical, failures_before_warning;
	struct job_check_restart *check_restart; /* NULL: the service's */
	/* deployment health (update { health_check = "checks" }):
	 * require_healthy (passing only) | ignore_warnings (warning counts as
	 * passing) | ignore (never counts against it); NULL: the service's */
	char *on_update;
	/* http over https: tls_skip_verify leaves the certificate unchecked
	 * (default false: verified against the system's CAs, for the address
	 * or tls_server_name); tls_server_name (NULL: none) is the name sent
	 * (SNI, Host) and verified; body (NULL: none) is sent with method */
	bool tls_skip_verify;
	char *tls_server_name;
	char *body;
};

/* service { ... } at group or task level: registered with the server's
 * service registry while the task (a group's: its first main task) runs. */
struct job_service {
	struct hcl_pos pos;
	char *name;             /* default <job>-<group>[-<task>]; ${...} allowed */
	char *port;             /* a port label of the group's network, or a number */
	struct job_strv tags;
	struct job_map meta;
	char *provider;         /* herd (default) | nomad: the same registry */
	char *address_mode;     /* auto (default) | host | driver | alloc */
	char *address;          /* default: the node's advertised address */
	struct job_check *checks;
	size_t nchecks;
	struct job_check_restart *check_restart; /* NULL: checks never restart */
	/* registered instead of tags / meta while the allocation is an
	 * unpromoted canary (empty: tags / meta); the server chooses */
	struct job_strv canary_tags;
	struct job_map canary_meta;
	char *on_update;        /* require_healthy (default) | ignore_warnings | ignore */
};

/* periodic { crons prohibit_overlap time_zone enabled }: a batch job that
 * is not placed itself; the server launches a child job on each cron time
 * (docs/jobspec.md, "Periodic jobs").  Validation moves Nomad's single
 * `cron` into crons and checks every expression (spec/cron.h). */
struct job_periodic {
	struct hcl_pos pos;
	struct job_strv crons;  /* at least one; 5-field expressions or @descriptors */
	char *cron;             /* Nomad's one-expression form; NULL once validated */
	bool prohibit_overlap;  /* skip a launch while an earlier child is not dead */
	char *time_zone;        /* "UTC" (default) or "Local" (the server's) */
	bool enabled;           /* default true */
	int enabled_set;        /* decoder bookkeeping: 1 when the file set it */
};

/* A periodic job's children are "<id>-periodic-<unix seconds>": its id
 * leaves room for the suffix within JOB_MAX_ID. */
#define JOB_PERIODIC_SUFFIX_MAX 21
#define JOB_PERIODIC_MAX_ID (JOB_MAX_ID - JOB_PERIODIC_SUFFIX_MAX)

/* parameterized { payload meta_required meta_optional }: a batch job that
 * is not placed itself; each POST /v1/job/:id/dispatch registers a child
 * job with a payload and meta (docs/jobspec.md, "Parameterized jobs"). */
struct job_parameterized {
	struct hcl_pos pos;
	char *payload;              /* optional (default) | required | forbidden */
	struct job_strv meta_required;
	struct job_strv meta_optional;
};

/* A dispatched job's children are "<id>-dispatch-<unix seconds>-<8 hex>". */
#define JOB_DISPATCH_SUFFIX_MAX 30
#define JOB_DISPATCH_MAX_ID (JOB_MAX_ID - JOB_DISPATCH_SUFFIX_MAX)

/* depends_on { job condition }: the job is placed only once the job it
 * names (same namespace) has ended as condition says (docs/jobspec.md,
 * "Dependencies"); the server's gate is src/server/depends.c. */
struct job_dependency {
	struct hcl_pos pos;
	char *job;              /* required: a job id of the same namespace */
	char *condition;        /* complete | failed | dead; default complete */
};

struct job {
	struct hcl_pos pos;
	char *id;               /* required */
	char *name;             /* default: id */
	char *type;             /* service | batch; default service */
	int64_t priority;       /* 1..100, default 50 */
	char *namespace;        /* default "default" */
	struct job_strv datacenters; /* default ["*"] */
	char *node_pool;        /* default "default" */
	struct job_map meta;
	struct job_rules constraints;
	struct job_rules affinities;
	struct job_spread *spreads;
	size_t nspreads;
	struct job_group *groups;
	size_t ngroups;
	struct job_periodic *periodic; /* NULL: not periodic */
	struct job_parameterized *parameterized; /* NULL: not parameterized */
	int64_t time_limit;     /* ns, 0: none; every group's default (batch only) */
	/* reschedule { }: the policy of every group, each group's own fields
	 * over it (Nomad's merge); NULL: the type's defaults */
	struct job_reschedule *reschedule;
	/* update { }: every group's, each group's own fields over it
	 * (validation fills it and merges it into each group's); NULL: none */
	struct job_update *update;
	/* migrate { }: every group's, each group's own fields over it; NULL: none */
	struct job_migrate *migrate;
	struct job_dependency *depends_on; /* at most JOB_MAX_DEPENDS */
	size_t ndepends_on;
};

/* Checks the rules that span fields (docs/jobspec.md, "Validation") and
 * fills every default.  Adds one diagnostic per problem to diags (messages
 * start with the JSON path of the thing, e.g. "groups[0].tasks[1]: ...").
 * Returns the number of errors added; the job is only fit for use when 0. */
int job_validate(struct job *job, struct diag_list *diags);

/* job_service.c: whether s is a port number (digits only; *out, may be
 * NULL, receives it), the port of group g labelled label (NULL: none), and
 * whether s is a valid service name once interpolated (1..JOB_MAX_ID of
 * letters, digits, '-', '_', '.', not starting with '-' or '.'). */
bool job_port_is_number(const char *s, int64_t *out);
const struct job_port *job_group_port(const struct job_group *g, const char *label);
bool job_service_name_ok(const char *s);
/* job_service.c: the on_update of check c of service s: its own, else
 * the service's, else require_healthy. */
const char *job_check_on_update(const struct job_service *s, const struct job_check *c);

/* Frees a job and everything it owns; accepts NULL. */
void job_free(struct job *job);

/* The thousandths of a GPU for a compute percentage written in a job file:
 * 25 -> 250, 12.5 -> 125.  Returns -1 when pct is not a multiple of 0.1 or
 * lies outside 0.1..100. */
int job_compute_from_percent(double pct);

#endif
