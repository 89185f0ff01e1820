/* agent_config_diff: what a reload (SIGHUP) may apply and what waits for a
 * restart; see config.h.  Every field of struct agent_config is named here
 * once, as what it is called in the file, so that the line an operator
 * reads names the keys they changed. */
#include <string.h>

#include "agent/config.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

static bool str_differ(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

static bool strv_differ(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return true;
	for (size_t i = 0; i < na; i++)
		if (str_differ(a[i], b[i]))
			return true;
	return false;
}

static void add(struct strbuf *sb, const char *name)
{
	strbuf_addf(sb, "%s%s", sb->len ? ", " : "", name);
}

#define DIFF_STR(f, name) do { if (str_differ(o->f, n->f)) add(sb, name); } while (0)
#define DIFF_VAL(f, name) do { if (o->f != n->f) add(sb, name); } while (0)

static bool meta_differ(const struct agent_config *o, const struct agent_config *n)
{
	if (o->client.nr_meta != n->client.nr_meta)
		return true;
	for (size_t i = 0; i < o->client.nr_meta; i++)
		if (str_differ(o->client.meta[i].key, n->client.meta[i].key) ||
		    str_differ(o->client.meta[i].value, n->client.meta[i].value))
			return true;
	return false;
}

static bool volumes_differ(const struct agent_config *o, const struct agent_config *n)
{
	if (o->client.nr_host_volumes != n->client.nr_host_volumes)
		return true;
	for (size_t i = 0; i < o->client.nr_host_volumes; i++) {
		const struct agent_host_volume *a = &o->client.host_volumes[i];
		const struct agent_host_volume *b = &n->client.host_volumes[i];
		if (str_differ(a->name, b->name) || str_differ(a->path, b->path) ||
		    a->read_only != b->read_only)
			return true;
	}
	return false;
}

static bool overrides_differ(const struct agent_config *o, const struct agent_config *n)
{
	if (o->gpu.nr_overrides != n->gpu.nr_overrides)
		return true;
	for (size_t i = 0; i < o->gpu.nr_overrides; i++) {
		const struct agent_gpu_override *a = &o->gpu.overrides[i];
		const struct agent_gpu_override *b = &n->gpu.overrides[i];
		if (str_differ(a->device, b->device) || a->sharing != b->sharing ||
		    a->replicas != b->replicas)
			return true;
	}
	return false;
}

static void diff_top(const struct agent_config *o, const struct agent_config *n,
		     struct strbuf *sb)
{
	DIFF_STR(name, "name");
	DIFF_STR(region, "region");
	DIFF_STR(datacenter, "datacenter");
	DIFF_STR(data_dir, "data_dir");
	DIFF_STR(bind_addr, "bind_addr");
	DIFF_VAL(http_port, "ports.http");
	DIFF_STR(advertise_http, "advertise.http");
	DIFF_VAL(acl.enabled, "acl.enabled");
}

static void diff_server(const struct agent_config *o, const struct agent_config *n,
			struct strbuf *sb)
{
	DIFF_VAL(server.enabled, "server.enabled");
	DIFF_STR(server.data_dir, "server.data_dir");
	DIFF_STR(server.postgres_url, "server.postgres_url");
	DIFF_STR(server.oidc_issuer, "server.oidc_issuer");
	DIFF_VAL(server.heartbeat_ttl_ns, "server.heartbeat_ttl");
	DIFF_VAL(server.heartbeat_grace_ns, "server.heartbeat_grace");
	DIFF_VAL(server.job_gc_threshold_ns, "server.job_gc_threshold");
	DIFF_VAL(server.eval_gc_threshold_ns, "server.eval_gc_threshold");
	DIFF_VAL(server.gc_interval_ns, "server.job_gc_interval");
	DIFF_VAL(server.policy, "server.scheduler.policy");
	DIFF_VAL(server.reserve_after_ns, "server.reserve_after");
	if (o->server.preempt_batch != n->server.preempt_batch ||
	    o->server.preempt_service != n->server.preempt_service ||
	    o->server.preempt_system != n->server.preempt_system)
		add(sb, "server.preemption");
}

static void diff_client(const struct agent_config *o, const struct agent_config *n,
			struct strbuf *sb)
{
	DIFF_VAL(client.enabled, "client.enabled");
	if (strv_differ(o->client.servers, o->client.nr_servers, n->client.servers,
			n->client.nr_servers))
		add(sb, "client.servers");
	DIFF_STR(client.node_class, "client.node_class");
	DIFF_STR(client.node_pool, "client.node_pool");
	DIFF_STR(client.state_dir, "client.state_dir");
	DIFF_STR(client.alloc_dir, "client.alloc_dir");
	/* the node registers its meta once; changing it means registering
	 * again, which a restart does */
	if (meta_differ(o, n))
		add(sb, "client.meta");
	DIFF_VAL(client.raw_exec_enabled, "raw_exec.enabled");
	DIFF_VAL(client.max_kill_timeout_ns, "client.max_kill_timeout");
	if (o->client.reserved_cpu_mhz != n->client.reserved_cpu_mhz ||
	    o->client.reserved_memory_mib != n->client.reserved_memory_mib ||
	    o->client.reserved_disk_mib != n->client.reserved_disk_mib ||
	    str_differ(o->client.reserved_cores, n->client.reserved_cores))
		add(sb, "client.reserved");
	DIFF_STR(client.reservable_cores, "client.reservable_cores");
	DIFF_VAL(client.cpu_total_compute, "client.cpu_total_compute");
	DIFF_VAL(client.memory_total_mib, "client.memory_total_mb");
	DIFF_STR(client.token, "client.token");
	DIFF_VAL(client.gc_interval_ns, "client.gc_interval");
	DIFF_VAL(client.gc_max_allocs, "client.gc_max_allocs");
	DIFF_VAL(client.gc_disk_usage_threshold, "client.gc_disk_usage_threshold");
	DIFF_VAL(client.gc_inode_usage_threshold, "client.gc_inode_usage_threshold");
	if (volumes_differ(o, n))
		add(sb, "client.host_volume");
}

static void diff_gpu_drivers(const struct agent_config *o, const struct agent_config *n,
			     struct strbuf *sb)
{
	DIFF_STR(gpu.nvml_library, "gpu.nvml_library");
	DIFF_STR(gpu.sim_file, "gpu.sim_file");
	if (o->gpu.nvml.nr_ignored_xids != n->gpu.nvml.nr_ignored_xids ||
	    memcmp(o->gpu.nvml.ignored_xids, n->gpu.nvml.ignored_xids,
		   o->gpu.nvml.nr_ignored_xids * sizeof(o->gpu.nvml.ignored_xids[0])) ||
	    o->gpu.nvml.wsl != n->gpu.nvml.wsl ||
	    o->gpu.nvml.stats_period_ns != n->gpu.nvml.stats_period_ns)
		add(sb, "gpu (nvml settings)");
	DIFF_VAL(gpu.sharing, "gpu.sharing");
	DIFF_VAL(gpu.replicas, "gpu.replicas");
	DIFF_STR(gpu.mps_control, "gpu.mps_control");
	DIFF_VAL(gpu.timeslice_memory_limit, "gpu.timeslice_memory_limit");
	DIFF_VAL(gpu.timeslice_memory_grace, "gpu.timeslice_memory_grace");
	if (overrides_differ(o, n))
		add(sb, "gpu.device");
	DIFF_STR(docker.socket, "docker.endpoint");
	DIFF_VAL(docker.allow_privileged, "docker.allow_privileged");
	DIFF_VAL(docker.volumes_enabled, "docker.volumes.enabled");
	if (strv_differ(o->docker.allow_caps, o->docker.nr_allow_caps, n->docker.allow_caps,
			n->docker.nr_allow_caps) || !o->docker.allow_caps != !n->docker.allow_caps)
		add(sb, "docker.allow_caps");
	DIFF_VAL(docker.pull_timeout_ns, "docker.pull_timeout");
	if (o->docker.gc_container != n->docker.gc_container ||
	    o->docker.gc_image != n->docker.gc_image ||
	    o->docker.gc_dangling != n->docker.gc_dangling ||
	    o->docker.gc_period_ns != n->docker.gc_period_ns)
		add(sb, "docker.gc");
	if (strv_differ(o->exec.chroot_env, o->exec.nr_chroot_env, n->exec.chroot_env,
			n->exec.nr_chroot_env) || !o->exec.chroot_env != !n->exec.chroot_env)
		add(sb, "exec.chroot_env");
	DIFF_STR(exec.cgroup_parent, "exec.cgroup_parent");
	DIFF_STR(exec.default_user, "exec.default_user");
}

/* tls { }: the listeners' certificate and key, and with
 * verify_https_client the CA they check callers against, are applied (new
 * connections); the rest is fixed at start.  libcurl reads the client's
 * CA, certificate and key files at each new connection, so new contents
 * under the same paths reach the client's connections to servers without
 * a reload; new paths do not (each connection copies them at start). */
static void diff_tls(const struct agent_config *o, const struct agent_config *n,
		     struct agent_config_diff *d, struct strbuf *sb)
{
	bool paths = str_differ(o->tls.cert_file, n->tls.cert_file) ||
		     str_differ(o->tls.key_file, n->tls.key_file) ||
		     str_differ(o->tls.ca_file, n->tls.ca_file);

	DIFF_VAL(tls.http, "tls.http");
	DIFF_VAL(tls.verify_https_client, "tls.verify_https_client");
	DIFF_VAL(tls.verify_server_hostname, "tls.verify_server_hostname");
	if (!o->tls.http || !n->tls.http) {
		/* off in either: nothing is served or loaded; the paths
		 * matter only at the restart that turns it on */
		if (o->tls.http == n->tls.http && (paths ||
		    str_differ(o->tls.ca_file, n->tls.ca_file)))
			add(sb, "tls.ca_file/cert_file/key_file");
		return;
	}
	/* the keys carry the CA only when both check callers (with a change
	 * of verify_https_client, named above, the CA stays as it was) */
	d->tls_keys = paths || str_differ(o->tls.server.cert_pem, n->tls.server.cert_pem) ||
		      str_differ(o->tls.server.key_pem, n->tls.server.key_pem) ||
		      (o->tls.verify_https_client && n->tls.verify_https_client &&
		       str_differ(o->tls.server.ca_pem, n->tls.server.ca_pem));
	if (paths && o->client.enabled)
		add(sb, "tls.ca_file/cert_file/key_file (another path: the client's "
			"connections to servers)");
}

void agent_config_diff(const struct agent_config *o, const struct agent_config *n,
		       struct agent_config_diff *d)
{
	struct strbuf sb = STRBUF_INIT;

	memset(d, 0, sizeof(*d));
	d->log_level = o->log_level != n->log_level;
	diff_top(o, n, &sb);
	diff_server(o, n, &sb);
	diff_client(o, n, &sb);
	diff_gpu_drivers(o, n, &sb);
	diff_tls(o, n, d, &sb);
	d->restart = sb.len ? strbuf_detach(&sb, NULL) : NULL;
	strbuf_release(&sb);
}

void agent_config_diff_release(struct agent_config_diff *d)
{
	if (!d)
		return;
	free(d->restart);
	memset(d, 0, sizeof(*d));
}
