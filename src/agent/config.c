/* Agent configuration: defaults, -dev, flags, cross-field checks; see
 * config.h.  The file syntax is in config_file.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/config-int.h"
#include "common/units.h"
#include "common/xalloc.h"

static const char *const level_names[] = { "trace", "debug", "info", "warn", "error" };

int agent_log_level_parse(const char *s, enum agent_log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcasecmp(s, level_names[i])) {
			*out = (enum agent_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *agent_log_level_name(enum agent_log_level level)
{
	if ((size_t)level >= sizeof(level_names) / sizeof(level_names[0]))
		return "info";
	return level_names[level];
}

void agent_config_init(struct agent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->region = xstrdup("global");
	cfg->datacenter = xstrdup("dc1");
	cfg->bind_addr = xstrdup(AGENT_DEFAULT_BIND);
	cfg->log_level = AGENT_LOG_INFO;
	cfg->http_port = AGENT_DEFAULT_HTTP_PORT;
	cfg->server.heartbeat_ttl_ns = 10 * NS_PER_SEC;
	cfg->server.heartbeat_grace_ns = 2 * NS_PER_SEC;
	cfg->server.job_gc_threshold_ns = 4 * 3600 * NS_PER_SEC;
	cfg->server.eval_gc_threshold_ns = 3600 * NS_PER_SEC;
	cfg->server.gc_interval_ns = 5 * 60 * NS_PER_SEC;
	cfg->server.preempt_batch = true;
	cfg->server.preempt_system = true; /* Nomad's default for system jobs */
	cfg->server.reserve_after_ns = 5 * 60 * NS_PER_SEC;
	cfg->client.node_pool = xstrdup("default");
	cfg->client.max_kill_timeout_ns = 30 * NS_PER_SEC;
	cfg->client.gc_interval_ns = 60 * NS_PER_SEC;
	cfg->client.gc_max_allocs = 50;
	cfg->client.gc_disk_usage_threshold = 80;
	cfg->client.gc_inode_usage_threshold = 70;
	gpu_config_init(&cfg->gpu.nvml);
	cfg->gpu.sharing = SCHED_EXCLUSIVE;
	cfg->gpu.mps_control = xstrdup(AGENT_DEFAULT_MPS_CONTROL);
	cfg->gpu.timeslice_memory_limit = AGENT_GPU_MEMORY_WARN;
	cfg->gpu.timeslice_memory_grace = AGENT_DEFAULT_MEMORY_GRACE;
	cfg->docker.gc_container = true;
	cfg->docker.gc_image = true;
	cfg->docker.gc_dangling = true;
	cfg->docker.gc_period_ns = 5 * 60 * NS_PER_SEC;
	cfg->server.policy = SCHED_HERD;
	cfg->tls.verify_server_hostname = true;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void agent_config_release(struct agent_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->name);
	free(cfg->region);
	free(cfg->datacenter);
	free(cfg->data_dir);
	free(cfg->bind_addr);
	free(cfg->advertise_http);
	free(cfg->server.data_dir);
	free(cfg->server.postgres_url);
	free(cfg->server.oidc_issuer);
	free_strings(cfg->client.servers, cfg->client.nr_servers);
	free(cfg->client.node_class);
	free(cfg->client.node_pool);
	free(cfg->client.state_dir);
	free(cfg->client.alloc_dir);
	free(cfg->client.token);
	free(cfg->client.reserved_cores);
	free(cfg->client.reservable_cores);
	for (size_t i = 0; i < cfg->client.nr_meta; i++) {
		free(cfg->client.meta[i].key);
		free(cfg->client.meta[i].value);
	}
	free(cfg->client.meta);
	free(cfg->gpu.nvml_library);
	free(cfg->gpu.sim_file);
	free(cfg->gpu.mps_control);
	free(cfg->docker.socket);
	free_strings(cfg->docker.allow_caps, cfg->docker.nr_allow_caps);
	free_strings(cfg->exec.chroot_env, cfg->exec.nr_chroot_env);
	free(cfg->exec.cgroup_parent);
	free(cfg->exec.default_user);
	for (size_t i = 0; i < cfg->gpu.nr_overrides; i++)
		free(cfg->gpu.overrides[i].device);
	free(cfg->gpu.overrides);
	cfg_host_volumes_release(cfg);
	cfg_tls_release(cfg);
	memset(cfg, 0, sizeof(*cfg));
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void agent_config_copy(struct agent_config *dst, const struct agent_config *src)
{
	*dst = *src;
	dst->name = dup_or_null(src->name);
	dst->region = dup_or_null(src->region);
	dst->datacenter = dup_or_null(src->datacenter);
	dst->data_dir = dup_or_null(src->data_dir);
	dst->bind_addr = dup_or_null(src->bind_addr);
	dst->advertise_http = dup_or_null(src->advertise_http);
	dst->server.data_dir = dup_or_null(src->server.data_dir);
	dst->server.postgres_url = dup_or_null(src->server.postgres_url);
	dst->server.oidc_issuer = dup_or_null(src->server.oidc_issuer);
	dst->client.servers = NULL;
	if (src->client.nr_servers) {
		dst->client.servers = xcalloc(src->client.nr_servers, sizeof(char *));
		for (size_t i = 0; i < src->client.nr_servers; i++)
			dst->client.servers[i] = xstrdup(src->client.servers[i]);
	}
	dst->client.node_class = dup_or_null(src->client.node_class);
	dst->client.node_pool = dup_or_null(src->client.node_pool);
	dst->client.state_dir = dup_or_null(src->client.state_dir);
	dst->client.alloc_dir = dup_or_null(src->client.alloc_dir);
	dst->client.token = dup_or_null(src->client.token);
	dst->client.reserved_cores = dup_or_null(src->client.reserved_cores);
	dst->client.reservable_cores = dup_or_null(src->client.reservable_cores);
	dst->client.meta = NULL;
	if (src->client.nr_meta) {
		dst->client.meta = xcalloc(src->client.nr_meta, sizeof(struct agent_kv));
		for (size_t i = 0; i < src->client.nr_meta; i++) {
			dst->client.meta[i].key = xstrdup(src->client.meta[i].key);
			dst->client.meta[i].value = xstrdup(src->client.meta[i].value);
		}
	}
	dst->gpu.nvml_library = dup_or_null(src->gpu.nvml_library);
	dst->gpu.nvml.library_path = dst->gpu.nvml_library;
	dst->gpu.sim_file = dup_or_null(src->gpu.sim_file);
	dst->gpu.mps_control = dup_or_null(src->gpu.mps_control);
	dst->docker.socket = dup_or_null(src->docker.socket);
	dst->docker.allow_caps = NULL;
	if (src->docker.allow_caps) {
		dst->docker.allow_caps = xcalloc(src->docker.nr_allow_caps + 1, sizeof(char *));
		for (size_t i = 0; i < src->docker.nr_allow_caps; i++)
			dst->docker.allow_caps[i] = xstrdup(src->docker.allow_caps[i]);
	}
	dst->exec.chroot_env = NULL;
	if (src->exec.chroot_env) {
		dst->exec.chroot_env = xcalloc(src->exec.nr_chroot_env + 1, sizeof(char *));
		for (size_t i = 0; i < src->exec.nr_chroot_env; i++)
			dst->exec.chroot_env[i] = xstrdup(src->exec.chroot_env[i]);
	}
	dst->exec.cgroup_parent = dup_or_null(src->exec.cgroup_parent);
	dst->exec.default_user = dup_or_null(src->exec.default_user);
	dst->gpu.overrides = NULL;
	if (src->gpu.nr_overrides) {
		dst->gpu.overrides = xcalloc(src->gpu.nr_overrides, sizeof(struct agent_gpu_override));
		for (size_t i = 0; i < src->gpu.nr_overrides; i++) {
			dst->gpu.overrides[i].device = xstrdup(src->gpu.overrides[i].device);
			dst->gpu.overrides[i].sharing = src->gpu.overrides[i].sharing;
			dst->gpu.overrides[i].replicas = src->gpu.overrides[i].replicas;
		}
	}
	cfg_host_volumes_copy(dst, src);
	cfg_tls_copy(dst, src);
}

void agent_config_apply_dev(struct agent_config *cfg)
{
	cfg->dev = true;
	cfg->server.enabled = true;
	cfg->client.enabled = true;
	cfg->client.raw_exec_enabled = true;
	free(cfg->bind_addr);
	cfg->bind_addr = xstrdup(AGENT_DEV_BIND);
	cfg->http_port = AGENT_DEFAULT_HTTP_PORT;
	cfg->log_level = AGENT_LOG_DEBUG;
	/* A dev agent's history is short-lived: collect it sooner (a file
	 * may set other values). */
	cfg->server.job_gc_threshold_ns = 5 * 60 * NS_PER_SEC;
	cfg->server.eval_gc_threshold_ns = 60 * NS_PER_SEC;
	cfg->server.gc_interval_ns = 60 * NS_PER_SEC;
}

int agent_config_apply_flags(struct agent_config *cfg, const struct agent_flags *flags,
			     struct herd_err *err)
{
	if (flags->http_port < -1 || flags->http_port > 65535)
		return herd_errf(err, -EINVAL, "-http-port: expected 0 to 65535, not %d",
				 flags->http_port);
	if (flags->bind && !*flags->bind)
		return herd_errf(err, -EINVAL, "-bind: expected an address, not \"\"");
	if (flags->data_dir && !*flags->data_dir)
		return herd_errf(err, -EINVAL, "-data-dir: expected a directory, not \"\"");
	if (flags->dev && !cfg->dev)
		agent_config_apply_dev(cfg);
	if (flags->bind) {
		free(cfg->bind_addr);
		cfg->bind_addr = xstrdup(flags->bind);
	}
	if (flags->http_port >= 0)
		cfg->http_port = flags->http_port;
	if (flags->data_dir) {
		free(cfg->data_dir);
		cfg->data_dir = xstrdup(flags->data_dir);
		cfg->data_dir_is_temp = false;
	}
	if (flags->gpu_sim) {
		free(cfg->gpu.sim_file);
		cfg->gpu.sim_file = xstrdup(flags->gpu_sim);
	}
	return 0;
}

int agent_config_make_temp_data_dir(struct agent_config *cfg, struct herd_err *err)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	char *path = xasprintf("%s/herd-dev-XXXXXX", tmp);
	if (!mkdtemp(path)) {
		int rc = -errno;
		herd_errf(err, rc, "cannot make a temporary data dir %s: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	free(cfg->data_dir);
	cfg->data_dir = path;
	cfg->data_dir_is_temp = true;
	return 0;
}

/* Removes everything under the directory open at dfd, not following links. */
static int remove_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(parent, name, 0) < 0 ? -errno : 0;
		return -errno;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		int r = remove_tree_at(dirfd(d), de->d_name);
		if (r < 0 && !rc)
			rc = r;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && !rc)
		rc = -errno;
	return rc;
}

int agent_config_remove_temp_data_dir(struct agent_config *cfg)
{
	if (!cfg->data_dir_is_temp || !cfg->data_dir)
		return 0;
	int rc = remove_tree_at(AT_FDCWD, cfg->data_dir);
	if (rc == 0)
		cfg->data_dir_is_temp = false;
	return rc;
}

static void derive(char **field, const char *data_dir, const char *sub)
{
	if (!*field)
		*field = xasprintf("%s/%s", data_dir, sub);
}

int agent_config_finish(struct agent_config *cfg, struct herd_err *err)
{
	if (!cfg->server.enabled && !cfg->client.enabled)
		return herd_errf(err, -EINVAL, "neither server nor client is enabled: set "
				 "server { enabled = true } or client { enabled = true }, or use -dev");
	if (cfg->client.enabled && !cfg->server.enabled && cfg->client.nr_servers == 0)
		return herd_errf(err, -EINVAL, "client.servers is empty: a client without a "
				 "server in the same agent needs servers = [\"host:port\"]");
	if (!cfg->data_dir) {
		if (!cfg->dev)
			return herd_errf(err, -EINVAL, "data_dir is not set: give data_dir in the "
					 "configuration or -data-dir (or use -dev)");
		int rc = agent_config_make_temp_data_dir(cfg, err);
		if (rc < 0)
			return rc;
	}
	derive(&cfg->server.data_dir, cfg->data_dir, "server");
	derive(&cfg->client.state_dir, cfg->data_dir, "client");
	derive(&cfg->client.alloc_dir, cfg->data_dir, "alloc");
	if (!cfg->advertise_http) {
		const char *host = cfg->bind_addr;
		/* 0.0.0.0 and :: are not addresses anybody can reach; the
		 * integrator replaces this with a fingerprinted address. */
		if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
			host = "127.0.0.1";
		if (strchr(host, ':'))
			cfg->advertise_http = xasprintf("[%s]:%d", host, cfg->http_port);
		else
			cfg->advertise_http = xasprintf("%s:%d", host, cfg->http_port);
	} else if (!strchr(cfg->advertise_http, ':') ||
		   (cfg->advertise_http[0] == '[' && !strstr(cfg->advertise_http, "]:"))) {
		char *full = xasprintf("%s:%d", cfg->advertise_http, cfg->http_port);
		free(cfg->advertise_http);
		cfg->advertise_http = full;
	}
	if (cfg->client.max_kill_timeout_ns <= 0)
		cfg->client.max_kill_timeout_ns = 30 * NS_PER_SEC;
	if (cfg->client.enabled) {
		int rc = cfg_host_volumes_check(cfg, err);
		if (rc < 0)
			return rc;
	}
	cfg->gpu.nvml.library_path = cfg->gpu.nvml_library;
	return cfg_tls_finish(cfg, err);
}

static struct agent_gpu_share share_of(enum sched_sharing sharing, int replicas)
{
	struct agent_gpu_share sh = { sharing, replicas };
	if (sharing == SCHED_EXCLUSIVE)
		sh.replicas = 1;
	else if (sharing == SCHED_MPS && (!replicas || replicas > AGENT_MPS_MAX_CLIENTS))
		sh.replicas = AGENT_MPS_MAX_CLIENTS;  /* more would not connect */
	return sh;
}

struct agent_gpu_share agent_config_gpu_share(const struct agent_config *cfg,
					      const struct gpu_device *d)
{
	char idx[16];

	if (d->mig_index >= 0 || d->parent_uuid[0])
		return share_of(SCHED_EXCLUSIVE, 1);
	snprintf(idx, sizeof(idx), "%u", d->nvml_index);
	/* The most specific name wins: UUID, index, then model. */
	const char *names[] = { d->uuid, idx, d->model };
	for (size_t n = 0; n < 3; n++) {
		if (!names[n][0])
			continue;
		for (size_t i = 0; i < cfg->gpu.nr_overrides; i++) {
			const struct agent_gpu_override *o = &cfg->gpu.overrides[i];
			if (n < 2 ? !strcmp(o->device, names[n]) : !strcasecmp(o->device, names[n]))
				return share_of(o->sharing, o->replicas ? o->replicas : cfg->gpu.replicas);
		}
	}
	return share_of(cfg->gpu.sharing, cfg->gpu.replicas);
}

const char *agent_config_meta(const struct agent_config *cfg, const char *key)
{
	for (size_t i = 0; i < cfg->client.nr_meta; i++)
		if (!strcmp(cfg->client.meta[i].key, key))
			return cfg->client.meta[i].value;
	return NULL;
}
