/* gpu-json: see gpu-json.h. */
#include "gpu/gpu-json.h"

static void set_int(json_t *o, const char *key, int64_t v)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
}

json_t *gpu_device_to_json(const struct gpu_device *d, size_t index)
{
	json_t *o = json_object(), *attrs = json_object();
	json_object_set_new(o, "index", json_integer((json_int_t)index));
	json_object_set_new(o, "uuid", json_string(d->uuid));
	json_object_set_new(o, "name", json_string(d->name));
	json_object_set_new(o, "model", json_string(d->model));
	json_object_set_new(o, "vendor", json_string("nvidia"));
	json_object_set_new(o, "type", json_string("gpu"));
	json_object_set_new(o, "nvml_index", json_integer(d->nvml_index));
	set_int(o, "memory_mib", d->memory_mib);
	if (d->mig_index >= 0) {
		json_object_set_new(o, "mig_profile", json_string(d->mig_profile));
		json_object_set_new(o, "parent_uuid", json_string(d->parent_uuid));
	}
	json_object_set_new(o, "health", json_string(d->health == GPU_HEALTHY ? "healthy" : "unhealthy"));
	if (d->health_reason[0])
		json_object_set_new(o, "health_reason", json_string(d->health_reason));
	json_object_set_new(o, "simulated", json_boolean(d->simulated));
	json_object_set_new(o, "wsl", json_boolean(d->wsl));
	for (size_t i = 0; i < d->nr_attrs; i++)
		json_object_set_new(attrs, d->attrs[i].name, json_string(d->attrs[i].value));
	json_object_set_new(o, "attributes", attrs);
	return o;
}

json_t *gpu_stats_to_json(const struct gpu_stats *s)
{
	json_t *o = json_object(), *procs = json_array();
	set_int(o, "gpu_util", s->gpu_util);
	set_int(o, "memory_util", s->memory_util);
	set_int(o, "memory_used_mib", s->memory_used_mib);
	set_int(o, "memory_total_mib", s->memory_total_mib);
	set_int(o, "temperature_c", s->temperature_c);
	set_int(o, "power_mw", s->power_mw);
	set_int(o, "ecc_corrected", s->ecc_corrected);
	set_int(o, "ecc_uncorrected", s->ecc_uncorrected);
	for (size_t i = 0; i < s->nr_procs; i++) {
		json_t *p = json_object();
		json_object_set_new(p, "pid", json_integer(s->procs[i].pid));
		set_int(p, "memory_mib", s->procs[i].memory_mib);
		json_array_append_new(procs, p);
	}
	json_object_set_new(o, "processes", procs);
	if (s->procs_truncated)
		json_object_set_new(o, "processes_truncated", json_true());
	return o;
}

json_t *gpu_host_to_json(const struct gpu_host *h, const struct gpu_stats *stats, bool topology)
{
	json_t *o = json_object(), *nvml = json_object(), *devs = json_array(),
	       *warn = json_array();
	json_object_set_new(nvml, "loaded", json_boolean(h->nvml_loaded));
	if (h->nvml_loaded)
		json_object_set_new(nvml, "library", json_string(h->library));
	else
		json_object_set_new(nvml, "reason", json_string(h->reason));
	json_object_set_new(nvml, "simulated", json_boolean(h->simulated));
	json_object_set_new(nvml, "wsl", json_boolean(h->wsl));
	if (h->driver_version[0])
		json_object_set_new(nvml, "driver_version", json_string(h->driver_version));
	if (h->cuda_version[0])
		json_object_set_new(nvml, "cuda_version", json_string(h->cuda_version));
	json_object_set_new(o, "nvml", nvml);
	for (size_t i = 0; i < h->nr_devs; i++) {
		json_t *d = gpu_device_to_json(&h->devs[i], i);
		if (stats && stats[i].memory_total_mib >= 0)
			json_object_set_new(d, "stats", gpu_stats_to_json(&stats[i]));
		json_array_append_new(devs, d);
	}
	json_object_set_new(o, "devices", devs);
	for (size_t i = 0; i < h->nr_warnings; i++)
		json_array_append_new(warn, json_string(h->warnings[i]));
	json_object_set_new(o, "warnings", warn);
	if (topology) {
		json_t *t = json_object(), *labels = json_array(), *rows = json_array();
		for (size_t i = 0; i < h->nr_devs; i++) {
			json_t *row = json_array();
			json_array_append_new(labels, json_string(h->devs[i].uuid));
			for (size_t j = 0; j < h->nr_devs; j++) {
				char buf[16];
				unsigned n;
				enum gpu_link l = gpu_host_link(h, i, j, &n);
				json_array_append_new(row, json_string(gpu_link_label(l, n, buf, sizeof(buf))));
			}
			json_array_append_new(rows, row);
		}
		json_object_set_new(t, "devices", labels);
		json_object_set_new(t, "links", rows);
		json_object_set_new(o, "topology", t);
	}
	return o;
}
