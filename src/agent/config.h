/* agent config: what `herd agent -config FILE [-dev] [flags]` runs with.
 *
 * The file is HCL in the style of Nomad's agent configuration (docs/agent-
 * config.md lists every key).  The order in which a configuration is built,
 * each step overriding the one before:
 *
 *     agent_config_init(&cfg);                 documented defaults
 *     agent_config_apply_dev(&cfg);            only with -dev
 *     agent_config_load_file(&cfg, path, &dl); each -config FILE, in order
 *     agent_config_apply_flags(&cfg, &flags);  -bind -http-port -data-dir -gpu-sim
 *     agent_config_finish(&cfg, &err);         cross-field checks, derived paths
 *     ...
 *     agent_config_release(&cfg);
 *
 * Library code: nothing here prints.  File errors go into a diag_list as
 * positioned diagnostics (print them with diag_print(dl, path, stderr) for
 * the conventional "file:line:col: message"); every error of a file is
 * reported in one run, and unknown keys are errors that name the key.
 * A file with errors leaves cfg unchanged. */
#ifndef HERD_AGENT_CONFIG_H
#define HERD_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/err.h"
#include "common/tls.h"
#include "gpu/gpu.h"
#include "sched/sched.h"

#define AGENT_DEFAULT_HTTP_PORT 4646
#define AGENT_DEFAULT_BIND "0.0.0.0"
#define AGENT_DEV_BIND "127.0.0.1"
#define AGENT_MAX_SERVERS 64
#define AGENT_MAX_META 256
#define AGENT_MAX_GPU_OVERRIDES 256
#define AGENT_MAX_CHROOT_ENV 64   /* the exec driver binds at most this many */
#define AGENT_MAX_HOST_VOLUMES 64 /* client { host_volume "<name>" { } } blocks */
/* Most clients one MPS server takes per GPU (Volta and later), per NVIDIA's
 * MPS documentation ("Limitations": 48 client CUDA contexts per device,
 * https://docs.nvidia.com/deploy/mps/): the default and the cap of
 * replicas for sharing = "mps". */
#define AGENT_MPS_MAX_CLIENTS 48
#define AGENT_MAX_REPLICAS 1000
#define AGENT_DEFAULT_MPS_CONTROL "/usr/bin/nvidia-cuda-mps-control"
/* gpu { timeslice_memory_grace }: consecutive GPU samples over a share
 * before it counts (default, most). */
#define AGENT_DEFAULT_MEMORY_GRACE 3
#define AGENT_MAX_MEMORY_GRACE 1000

/* gpu { timeslice_memory_limit }: what the client does with a task whose
 * processes use more GPU memory than its share of a timeslice GPU
 * (docs/gpu-sharing.md, "GPU memory per task"). */
enum agent_gpu_memory_limit {
	AGENT_GPU_MEMORY_OFF,    /* measure and report only */
	AGENT_GPU_MEMORY_WARN,   /* a task event per exceedance (the default) */
	AGENT_GPU_MEMORY_KILL,   /* kill the task, a failure for its restart policy */
};

enum agent_log_level { AGENT_LOG_TRACE, AGENT_LOG_DEBUG, AGENT_LOG_INFO,
		       AGENT_LOG_WARN, AGENT_LOG_ERROR };

/* Parses "trace", "debug", "info", "warn", "error" (any case); -EINVAL
 * otherwise. */
int agent_log_level_parse(const char *s, enum agent_log_level *out);
const char *agent_log_level_name(enum agent_log_level level);

struct agent_kv {
	char *key;
	char *value;
};

/* A `device "ID" { sharing = "mps" replicas = 4 }` block of `gpu`: the
 * sharing mode of one GPU, named by UUID ("GPU-..."), NVML index ("0") or
 * model ("Tesla T4", any case: every GPU of that model). */
struct agent_gpu_override {
	char *device;
	enum sched_sharing sharing;
	int replicas;            /* most tenants at once; 0: the mode's default */
};

/* client { host_volume "<name>" { path read_only } }: a directory of this
 * node that groups ask for by name (job volume { source = "<name>" }); the
 * node reports it at registration and drivers mount it (docs/drivers.md). */
struct agent_host_volume {
	char *name;              /* the block's label: id charset */
	char *path;              /* absolute; must be a directory at start (finish) */
	bool read_only;          /* false: tasks may write unless they ask read-only */
};

/* What a device is shared as: its mode and the most allocations it holds
 * at once (0: no limit besides compute and memory). */
struct agent_gpu_share {
	enum sched_sharing sharing;
	int replicas;
};

struct agent_config {
	/* Top level. */
	char *name;              /* node name; NULL: the hostname (fingerprint) */
	char *region;            /* "global" */
	char *datacenter;        /* "dc1"; client.datacenter overrides */
	char *data_dir;          /* NULL until set; required unless -dev */
	bool data_dir_is_temp;   /* made by agent_config_make_temp_data_dir */
	char *bind_addr;         /* "0.0.0.0"; -dev: "127.0.0.1" */
	enum agent_log_level log_level;  /* info */
	int http_port;           /* ports { http }: 4646; 0 asks the kernel */
	char *advertise_http;    /* advertise { http }: "host[:port]"; NULL: derived
				  * by agent_config_finish from bind_addr/port */

	struct {
		bool enabled;            /* false; -dev: true */
		char *data_dir;          /* NULL: <data_dir>/server (finish) */
		/* postgres_url: the PostgreSQL store several servers share
		 * (a libpq URI or conninfo; docs/operations.md, "High
		 * availability"); NULL: SQLite in data_dir */
		char *postgres_url;
		/* oidc_issuer: the iss of workload identities' tokens; NULL:
		 * http(s)://<advertise.http> (docs/agent-config.md) */
		char *oidc_issuer;
		int64_t heartbeat_ttl_ns;  /* 10s: a node silent this long is down */
		int64_t heartbeat_grace_ns; /* 2s: extra time before "down" */
		int64_t job_gc_threshold_ns; /* 4h (-dev 5m): dead jobs older than this are purged */
		int64_t eval_gc_threshold_ns; /* 1h (-dev 1m): ended evaluations and
					       * allocations older than this go */
		int64_t gc_interval_ns;    /* job_gc_interval: 5m (-dev 1m) */
		enum sched_policy policy;  /* scheduler { policy }: SCHED_HERD */
		/* preemption { batch_enabled service_enabled system_enabled }:
		 * which job types may preempt lower priorities (batch only). */
		bool preempt_batch, preempt_service, preempt_system;
		/* reserve_after: how long the job whose turn it is waits for
		 * GPUs before they are reserved for it (docs/teams.md,
		 * "Reservations"); 5m; 0: at once; -1 ("off"): never */
		int64_t reserve_after_ns;
	} server;

	/* acl { enabled }: every API call needs a token (docs/teams.md).  Off
	 * by default and in -dev unless a file turns it on.  A client-only
	 * agent sets it too, so that its log API asks for tokens. */
	struct {
		bool enabled;
	} acl;

	struct {
		bool enabled;            /* false; -dev: true */
		char **servers;          /* "host:port"; may be empty with server.enabled */
		size_t nr_servers;
		char *node_class;        /* NULL: none */
		char *node_pool;         /* "default" */
		char *state_dir;         /* NULL: <data_dir>/client (finish) */
		char *alloc_dir;         /* NULL: <data_dir>/alloc (finish) */
		struct agent_kv *meta;   /* ${meta.KEY}, in file order, keys unique */
		size_t nr_meta;
		bool raw_exec_enabled;   /* false; -dev: true.  options
					  * "driver.raw_exec.enable" or plugin "raw_exec" */
		int64_t max_kill_timeout_ns;  /* 30s: cap on a task's kill_timeout */
		int64_t reserved_cpu_mhz;     /* reserved { cpu }: 0 */
		int64_t reserved_memory_mib;  /* reserved { memory }: 0 */
		int64_t reserved_disk_mib;    /* reserved { disk }: 0 */
		/* CPU cores (list syntax, canonical: "0-1,8"; NULL unset):
		 * reserved { cores } are never offered to tasks;
		 * reservable_cores, when set, are the only cores offered
		 * (Nomad's names; docs/agent-config.md, "CPU cores") */
		char *reserved_cores;
		char *reservable_cores;
		int64_t cpu_total_compute;    /* 0: fingerprinted cores x MHz */
		int64_t memory_total_mib;     /* 0: fingerprinted */
		char *token;             /* token: the node token sent to servers;
					  * NULL: $HERD_TOKEN */
		/* Garbage collection of terminal allocations' directories
		 * (agent/alloc_gc.h, docs/agent-config.md; Nomad's names):
		 * the oldest go first once more than gc_max_allocs are kept,
		 * and every gc_interval while the alloc dir's filesystem is
		 * fuller than either threshold (percent used). */
		int64_t gc_interval_ns;           /* gc_interval: 1m */
		int64_t gc_max_allocs;            /* 50 */
		int64_t gc_disk_usage_threshold;  /* 80 (percent) */
		int64_t gc_inode_usage_threshold; /* 70 (percent) */
		/* host_volume blocks, in file order, names unique (a later block
		 * of a name replaces the earlier one) */
		struct agent_host_volume *host_volumes;
		size_t nr_host_volumes;
	} client;

	struct {
		/* Passed to gpu_host_open.  library_path points into nvml_library. */
		struct gpu_config nvml;
		char *nvml_library;      /* NULL: search (or HERD_NVML_LIBRARY) */
		char *sim_file;          /* -gpu-sim FILE: a simulated GPU description */
		enum sched_sharing sharing;  /* default mode of every GPU: exclusive */
		int replicas;            /* default replicas of sharing GPUs; 0: per mode */
		char *mps_control;       /* nvidia-cuda-mps-control (AGENT_DEFAULT_MPS_CONTROL) */
		struct agent_gpu_override *overrides;
		size_t nr_overrides;
		enum agent_gpu_memory_limit timeslice_memory_limit; /* warn */
		int timeslice_memory_grace;  /* samples (stats_period apart); 3 */
	} gpu;

	/* plugin "docker" { config { ... } } (drivers/docker.h, docs/agent-config.md). */
	struct {
		char *socket;            /* endpoint "unix:///path" or socket path; NULL: default */
		bool allow_privileged;   /* false */
		bool volumes_enabled;    /* volumes { enabled }: false */
		char **allow_caps;       /* NULL: docker's default set */
		size_t nr_allow_caps;
		int64_t pull_timeout_ns; /* 0: the driver's default (5 min) */
		bool gc_container;       /* gc { container }: true, remove ended containers */
		bool gc_image;           /* gc { image }: true, prune dangling images */
		/* gc { dangling_containers { enabled period } }: herd containers of
		 * allocations this client no longer runs are removed after
		 * recovery and every period (true, 5 min). */
		bool gc_dangling;
		int64_t gc_period_ns;
	} docker;

	/* plugin "exec" { config { ... } } (or Nomad's client { chroot_env {
	 * } cgroup_parent }): the exec driver's settings. */
	struct {
		char **chroot_env;       /* host dirs bound read-only into the task's
					  * root, NULL-terminated; NULL: the driver's
					  * default (/bin /etc /lib /lib32 /lib64 /sbin /usr) */
		size_t nr_chroot_env;
		char *cgroup_parent;     /* NULL: "herd.slice" (v2) / "herd" (v1) */
		char *default_user;      /* a task without `user`; NULL: "nobody" */
	} exec;
	/* tls { } (Nomad's names; docs/agent-config.md, config_tls.c): https
	 * on both listeners (the server's API and the client's) and on the
	 * client's connections to servers.  The paths are as written; finish
	 * reads the files into server and fills client. */
	struct {
		bool http;                   /* false, also in -dev */
		char *ca_file, *cert_file, *key_file;
		bool verify_https_client;    /* false: callers need no certificate */
		bool verify_server_hostname; /* true: a server's certificate names its address */
		struct tls_server server;    /* the listeners' material (finish) */
		struct tls_client client;    /* outgoing connections (finish) */
	} tls;
	bool dev;                /* -dev was given */
};

/* Command-line flags that override the file.  NULL / -1: not given. */
struct agent_flags {
	bool dev;
	const char *bind;        /* -bind ADDR */
	int http_port;           /* -http-port N, -1: not given */
	const char *data_dir;    /* -data-dir DIR */
	const char *gpu_sim;     /* -gpu-sim FILE */
};
#define AGENT_FLAGS_INIT { false, NULL, -1, NULL, NULL }

/* Fills cfg with the defaults documented above (and in docs/agent-config.md).
 * cfg owns its strings; release with agent_config_release. */
void agent_config_init(struct agent_config *cfg);

/* Frees everything cfg owns (not the temporary data dir on disk: see
 * agent_config_remove_temp_data_dir) and leaves it zeroed.  Accepts NULL. */
void agent_config_release(struct agent_config *cfg);

/* -dev: server and client enabled, raw_exec enabled, bind 127.0.0.1, http
 * port 4646, log level debug, garbage collection sooner (jobs 5m,
 * evaluations 1m, every 1m).  The data dir stays unset: finish makes a
 * temporary one unless a file or -data-dir gives one. */
void agent_config_apply_dev(struct agent_config *cfg);

/* Parses HCL text (need not be NUL-terminated) and applies it over cfg.
 * Returns 0, or -EINVAL when errors were added to dl (then cfg is
 * unchanged).  Warnings (keys herd accepts but ignores, like Nomad's
 * ports { rpc }) may be added on success. */
int agent_config_parse(struct agent_config *cfg, const char *text, size_t len,
		       struct diag_list *dl);

/* Reads path and applies it as agent_config_parse does.  A file that
 * cannot be read is one diagnostic at 0:0 and -errno.  Relative paths in
 * the file (data_dir, ...) are kept as written. */
int agent_config_load_file(struct agent_config *cfg, const char *path,
			   struct diag_list *dl);

/* Applies command-line flags over cfg (flags win over files).  Returns 0,
 * or -EINVAL with err for a bad value (port outside 0..65535). */
int agent_config_apply_flags(struct agent_config *cfg, const struct agent_flags *flags,
			     struct herd_err *err);

/* Checks what one key cannot say alone and fills derived values: at least
 * one of server and client enabled; a client needs servers unless the
 * server runs in the same process; data_dir required unless dev (then a
 * temporary one is made under $TMPDIR, data_dir_is_temp set); server
 * data_dir, client state_dir and alloc_dir under data_dir; advertise_http
 * "<bind_addr>:<http_port>" when not given (127.0.0.1 for a wildcard bind,
 * which nobody can dial: the integrator may replace it with a fingerprinted
 * address), and an advertise without port gets http_port; a client's host
 * volume paths must be directories that exist ("client.host_volume
 * \"datasets\": path /data/sets: No such file or directory"); with
 * tls { http = true } the certificate, key and CA files are read and
 * checked (tls_server_load's errors, naming the file).  Returns
 * 0 or -EINVAL/-errno with err; on failure cfg may have gained the derived
 * paths but nothing else. */
int agent_config_finish(struct agent_config *cfg, struct herd_err *err);

/* Makes a fresh mode-0700 directory $TMPDIR/herd-dev-XXXXXX (TMPDIR
 * default /tmp) and sets cfg->data_dir to it.  Returns 0 or -errno. */
int agent_config_make_temp_data_dir(struct agent_config *cfg, struct herd_err *err);

/* Removes the temporary data dir and everything under it when
 * data_dir_is_temp (an agent -dev on shutdown); else does nothing.
 * Returns 0 or -errno of the first failure. */
int agent_config_remove_temp_data_dir(struct agent_config *cfg);

/* A deep copy of src into dst (dst's old contents are not freed); the TLS
 * credentials are shared (tls_server_copy). */
void agent_config_copy(struct agent_config *dst, const struct agent_config *src);

/* What a reload (SIGHUP; docs/agent-config.md, "Reloading") finds between
 * the configuration an agent runs with (old) and the one its files say now
 * (new), both finished (agent_config_finish). */
struct agent_config_diff {
	bool log_level;          /* log_level differs: applied at once */
	/* tls { http } on in both and the certificate or key differ (their
	 * contents or paths): the listeners serve the new ones to new
	 * connections */
	bool tls_keys;
	/* The keys that differ but take effect only at a restart, as an
	 * operator writes them, ", "-separated ("ports.http, client.meta");
	 * NULL: none.  Owned by the diff. */
	char *restart;
};

/* Fills d (zeroed first) with what differs between old and new. */
void agent_config_diff(const struct agent_config *old, const struct agent_config *new,
		       struct agent_config_diff *d);

/* Frees what d owns and zeroes it; accepts NULL. */
void agent_config_diff_release(struct agent_config_diff *d);

/* How device d is shared.  A MIG instance is always exclusive (replicas 1):
 * the hardware already splits its GPU.  A whole GPU takes the most specific
 * `device` block that names it (UUID, then NVML index, then model), else
 * gpu { sharing replicas }.  replicas 0 in the file becomes the mode's
 * default: exclusive 1, mps AGENT_MPS_MAX_CLIENTS, timeslice 0 (no limit). */
struct agent_gpu_share agent_config_gpu_share(const struct agent_config *cfg,
					      const struct gpu_device *d);

/* The host volume called name, or NULL. */
const struct agent_host_volume *agent_config_host_volume(const struct agent_config *cfg,
							 const char *name);

/* The value of client meta key, or NULL. */
const char *agent_config_meta(const struct agent_config *cfg, const char *key);

#endif
