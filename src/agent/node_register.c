/* node_register: the node as the agent reports it (POST /v1/node/register)
 * and the device part of heartbeats.  Field names: /tmp/contract.md, Node. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client-int.h"
#include "agent/cores.h"
#include "agent/fingerprint.h"
#include "agent/log.h"
#include "common/xalloc.h"
#include "drivers/docker.h"
#include "gpu/gpu-json.h"

#ifndef HERD_VERSION
#define HERD_VERSION "0.1.0"
#endif

static const char *sharing_name(enum sched_sharing s)
{
	switch (s) {
	case SCHED_MPS: return "mps";
	case SCHED_TIMESLICE: return "timeslice";
	default: return "exclusive";
	}
}

/* NVLink islands: physical GPUs joined by NVLink (directly or through
 * NVSwitch) get the same group number, the smallest GPU index of their
 * island; GPUs without NVLink get -1. */
static void nvlink_groups(const struct gpu_host *h, int *group_of_dev)
{
	for (size_t i = 0; i < h->nr_devs; i++)
		group_of_dev[i] = -1;
	for (size_t i = 0; i < h->nr_devs; i++) {
		for (size_t j = 0; j < h->nr_devs; j++) {
			unsigned n = 0;
			if (i == j || h->devs[i].gpu == h->devs[j].gpu)
				continue;
			if (gpu_host_link(h, i, j, &n) != GPU_LINK_NVLINK)
				continue;
			int gi = group_of_dev[i] >= 0 ? group_of_dev[i] : (int)h->devs[i].gpu;
			int gj = group_of_dev[j] >= 0 ? group_of_dev[j] : (int)h->devs[j].gpu;
			int g = gi < gj ? gi : gj;
			/* Merge: everything in either island takes the smaller number. */
			for (size_t k = 0; k < h->nr_devs; k++)
				if (group_of_dev[k] == gi || group_of_dev[k] == gj)
					group_of_dev[k] = g;
			group_of_dev[i] = group_of_dev[j] = g;
		}
	}
}

/* Sets key to v when NVML gave it (v >= 0).  What NVML could not tell (a
 * MIG instance has no utilization of its own) is left out, not sent as 0:
 * readers (GET /v1/metrics) must not take it for an idle GPU. */
static void set_known(json_t *o, const char *key, int64_t v)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
}

static json_t *stats_json(struct gpu_host *h, size_t i)
{
	struct gpu_stats st;
	json_t *o = json_object();

	memset(&st, 0, sizeof(st));
	st.memory_total_mib = st.gpu_util = -1;
	if (gpu_host_sample(h, i, &st, NULL) == 0) {
		set_known(o, "utilization_gpu", st.gpu_util);
		set_known(o, "utilization_memory", st.memory_util);
		set_known(o, "memory_used_mib", st.memory_used_mib);
		set_known(o, "temperature_c", st.temperature_c);
		set_known(o, "power_w", st.power_mw < 0 ? -1 : st.power_mw / 1000);
	}
	json_object_set_new(o, "sampled_at", json_integer(now_unix_ns()));
	return o;
}

static json_t *device_json(struct client *c, size_t i, int nvgroup)
{
	const struct gpu_device *d = &c->gpus->devs[i];
	struct agent_gpu_share sh = agent_config_gpu_share(c->cfg, d);
	json_t *o = json_object(), *attrs = json_object();
	char buf[32];

	json_object_set_new(o, "id", json_string(d->uuid));
	json_object_set_new(o, "vendor", json_string("nvidia"));
	json_object_set_new(o, "type", json_string("gpu"));
	json_object_set_new(o, "model", json_string(d->model));
	json_object_set_new(o, "group", json_sprintf("nvidia/gpu/%s", d->model));
	json_object_set_new(o, "memory_mib", json_integer(d->memory_mib));
	json_object_set_new(o, "numa_node", json_integer(d->numa_node));
	json_object_set_new(o, "nvlink_group", json_integer(nvgroup));
	json_object_set_new(o, "healthy", json_boolean(d->health == GPU_HEALTHY));
	json_object_set_new(o, "health_reason", json_string(d->health_reason));
	json_object_set_new(o, "sharing", json_string(sharing_name(sh.sharing)));
	/* Most tenants at once (0: no limit but compute and memory); the
	 * server's snapshot enforces it. */
	json_object_set_new(o, "replicas", json_integer(sh.replicas));
	json_object_set_new(o, "mig_profile", json_string(d->mig_profile));
	json_object_set_new(o, "parent_id", json_string(d->parent_uuid));
	json_object_set_new(o, "simulated", json_boolean(d->simulated));
	json_object_set_new(o, "wsl", json_boolean(d->wsl));
	for (size_t k = 0; k < d->nr_attrs; k++)
		json_object_set_new(attrs, d->attrs[k].name, json_string(d->attrs[k].value));
	snprintf(buf, sizeof(buf), "%lld", (long long)d->memory_mib);
	if (!json_object_get(attrs, "memory"))
		json_object_set_new(attrs, "memory", json_string(buf));
	json_object_set_new(o, "attributes", attrs);
	json_object_set_new(o, "stats", stats_json(c->gpus, i));
	return o;
}

/* client { host_volume } blocks as the server keeps them: by name, with
 * the path (for operators: `herd node status -verbose`) and read_only
 * (what the scheduler matches a read-write volume against). */
static json_t *host_volumes_json(const struct agent_config *cfg)
{
	json_t *o = json_object();
	for (size_t i = 0; i < cfg->client.nr_host_volumes; i++) {
		const struct agent_host_volume *v = &cfg->client.host_volumes[i];
		json_object_set_new(o, v->name, json_pack("{s:s, s:b}", "path", v->path,
							  "read_only", v->read_only));
	}
	return o;
}

json_t *client_node_json(struct client *c)
{
	const struct agent_config *cfg = c->cfg;
	struct fingerprint_opts opts = FINGERPRINT_OPTS_INIT;
	struct node_fingerprint *fp = NULL;
	struct herd_err err = { 0, "" };
	struct driver_fingerprint dfp[8];
	struct driver_env denv;
	struct docker_config dc;
	const char *caps[TASK_MAX_CAPS];
	size_t nd = 0;
	json_t *node = json_object(), *attrs = json_object(), *meta = json_object();
	json_t *res = json_object(), *drivers = json_object(), *devs = json_array();
	int64_t cpu = 0, mem = 0, disk = 0;
	struct cpulist offered = CPULIST_INIT;

	opts.data_dir = cfg->data_dir;
	if (node_fingerprint(&opts, &fp, &err) < 0)
		log_warn("client: fingerprint: %s", err.msg);
	/* Every driver, with the env its tasks get (docker: the configured
	 * socket): driver.<name> = 1 where it can run tasks, and the reason
	 * under drivers where it cannot. */
	memset(dfp, 0, sizeof(dfp));
	task_driver_env(c, &denv, &dc, caps);
	for (; driver_all[nd] && nd < sizeof(dfp) / sizeof(dfp[0]); nd++)
		driver_all[nd]->fingerprint(&denv, &dfp[nd]);
	if (fp) {
		/* the machine the GPU simulation describes, cores included */
		if (cfg->gpu.sim_file &&
		    node_fingerprint_sim_cores(fp, cfg->gpu.sim_file, &err) < 0)
			log_warn("client: simulated CPU topology: %s", err.msg);
		if (cores_offered(fp, cfg->client.reserved_cores, cfg->client.reservable_cores,
				  &offered, &err) < 0)
			log_warn("client: %s", err.msg);
		/* Nomad's attribute: how many cores tasks may reserve */
		char n[16];
		snprintf(n, sizeof(n), "%d", cpulist_count(&offered));
		node_fingerprint_set_attr(fp, "cpu.reservablecores", n);
		for (size_t k = 0; k < nd; k++)
			node_fingerprint_set_driver(fp, driver_all[k]->name, dfp[k].detected);
		node_fingerprint_set_attr(fp, "herd.version", HERD_VERSION);
		for (size_t i = 0; i < fp->nr_attrs; i++)
			json_object_set_new(attrs, fp->attrs[i].name, json_string(fp->attrs[i].value));
		/* The server compares this with the tasks' `cpu` (MHz), so
		 * the node offers what Nomad offers: cores x MHz. */
		cpu = fp->cpu_total_compute > 0 ? fp->cpu_total_compute : fp->cpu_cores * 1000LL;
		mem = fp->memory_bytes / (1024 * 1024);
		disk = fp->disk_free_bytes / (1024 * 1024);
	}
	json_object_set_new(node, "id", json_string(c->node_id));
	json_object_set_new(node, "name",
			    json_string(cfg->name ? cfg->name
						  : fp && fp->hostname ? fp->hostname : "node"));
	json_object_set_new(node, "datacenter", json_string(cfg->datacenter ? cfg->datacenter : "dc1"));
	json_object_set_new(node, "node_class",
			    json_string(cfg->client.node_class ? cfg->client.node_class : ""));
	json_object_set_new(node, "node_pool",
			    json_string(cfg->client.node_pool ? cfg->client.node_pool : "default"));
	json_object_set_new(node, "http_addr",
			    json_string(cfg->advertise_http ? cfg->advertise_http : ""));
	for (size_t i = 0; i < cfg->client.nr_meta; i++)
		json_object_set_new(meta, cfg->client.meta[i].key,
				    json_string(cfg->client.meta[i].value));
	if (cfg->client.memory_total_mib > 0)
		mem = cfg->client.memory_total_mib;
	mem -= cfg->client.reserved_memory_mib;
	disk -= cfg->client.reserved_disk_mib;
	if (cfg->client.cpu_total_compute > 0)
		cpu = cfg->client.cpu_total_compute;
	json_object_set_new(res, "cpu_milli", json_integer(cpu));
	json_object_set_new(res, "memory_mib", json_integer(mem > 0 ? mem : 0));
	json_object_set_new(res, "disk_mib", json_integer(disk > 0 ? disk : 0));
	/* the cores tasks may reserve, each with its NUMA node (sorted) */
	if (fp)
		json_object_set_new(res, "cores", cores_offered_json(fp, &offered));
	for (size_t k = 0; k < nd; k++)
		json_object_set_new(drivers, driver_all[k]->name,
				    json_pack("{s:b,s:b,s:s}", "detected", dfp[k].detected, "healthy",
					      dfp[k].healthy, "description", dfp[k].reason));

	pthread_mutex_lock(&c->gpu_lock);
	if (c->gpus && c->gpus->nr_devs) {
		int *groups = xcalloc(c->gpus->nr_devs, sizeof(*groups));
		nvlink_groups(c->gpus, groups);
		for (size_t i = 0; i < c->gpus->nr_devs; i++)
			json_array_append_new(devs, device_json(c, i, groups[i]));
		free(groups);
		json_object_set_new(attrs, "nvidia.driver_version",
				    json_string(c->gpus->driver_version));
		json_object_set_new(attrs, "nvidia.cuda_version", json_string(c->gpus->cuda_version));
	}
	pthread_mutex_unlock(&c->gpu_lock);

	json_object_set_new(node, "attributes", attrs);
	json_object_set_new(node, "meta", meta);
	json_object_set_new(node, "resources", res);
	json_object_set_new(node, "drivers", drivers);
	json_object_set_new(node, "devices", devs);
	json_object_set_new(node, "host_volumes", host_volumes_json(cfg));
	/* Kept for the tasks' ${attr.*} (client_shared.c): what the node
	 * advertised is what its tasks see, refreshed at each registration. */
	if (fp)
		client_fp_set(c, fp);
	return node;
}

json_t *client_devices_heartbeat(struct client *c)
{
	json_t *devs = json_array();

	pthread_mutex_lock(&c->gpu_lock);
	for (size_t i = 0; c->gpus && i < c->gpus->nr_devs; i++) {
		const struct gpu_device *d = &c->gpus->devs[i];
		json_t *o = json_object();
		json_t *st = stats_json(c->gpus, i);  /* sampling also refreshes health */
		gpu_watch_decorate(c->gw, i, st);
		json_object_set_new(o, "id", json_string(d->uuid));
		json_object_set_new(o, "healthy", json_boolean(d->health == GPU_HEALTHY));
		json_object_set_new(o, "health_reason", json_string(d->health_reason));
		json_object_set_new(o, "stats", st);
		json_array_append_new(devs, o);
	}
	pthread_mutex_unlock(&c->gpu_lock);
	return devs;
}

int client_register(struct client *c, struct httpc *h, long *status, struct herd_err *err)
{
	json_t *body = json_object();
	struct httpc_response r;
	int rc;

	json_object_set_new(body, "node", client_node_json(c));
	rc = httpc_request(h, "POST", "/v1/node/register", body, &r, err);
	json_decref(body);
	*status = r.status;
	if (rc == 0) {
		int64_t ttl = json_integer_value(json_object_get(r.body, "heartbeat_ttl"));
		pthread_mutex_lock(&c->lock);
		c->heartbeat_ttl_ns = ttl > 0 ? ttl : 10LL * 1000000000LL;
		c->registered = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
	}
	httpc_response_release(&r);
	return rc;
}
