/* decode: checks the bodies agents send (node registration, allocation
 * status) before anything is stored.  Kept apart from the routes so that
 * the fuzz targets drive exactly this code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched.h"
#include "server/server-int.h"
#include "spec/spec.h"

#define MAX_TEXT 4096

static bool short_string(const json_t *v, size_t max)
{
	return json_is_string(v) && json_string_length(v) <= max &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

/* An optional string field: absent/null -> dflt, else it must be a string. */
static int opt_string(json_t *o, const char *key, const char *dflt, size_t max, const char *what,
		      struct herd_err *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		json_object_set_new(o, key, json_string(dflt));
		return 0;
	}
	if (!short_string(v, max))
		return herd_errf(err, -EINVAL, "%s.%s must be a string of at most %zu bytes", what, key, max);
	return 0;
}

static int string_map(json_t *o, const char *key, const char *what, struct herd_err *err)
{
	json_t *m = json_object_get(o, key), *v;
	const char *k;
	if (!m || json_is_null(m)) {
		json_object_set_new(o, key, json_object());
		return 0;
	}
	if (!json_is_object(m))
		return herd_errf(err, -EINVAL, "%s.%s must be an object", what, key);
	json_object_foreach(m, k, v)
		if (!short_string(v, MAX_TEXT) && !json_is_number(v) && !json_is_boolean(v))
			return herd_errf(err, -EINVAL, "%s.%s.%s must be a string, number or boolean", what, key, k);
	return 0;
}

static int nonneg_int(json_t *o, const char *key, int64_t dflt, const char *what, struct herd_err *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		json_object_set_new(o, key, json_integer(dflt));
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (INT64_C(1) << 50))
		return herd_errf(err, -EINVAL, "%s.%s must be a non-negative integer", what, key);
	return 0;
}

/* node.resources.cores: [{"id": >= 0, "numa": >= -1}], ids unique, at most
 * SCHED_MAX_CORES_PER_NODE (the cores the agent offers for `cores`);
 * absent or null: none. */
static int decode_cores(json_t *res, struct herd_err *err)
{
	json_t *cores = json_object_get(res, "cores"), *c, *seen;
	size_t i;
	int rc = 0;

	if (!cores || json_is_null(cores)) {
		json_object_del(res, "cores");
		return 0;
	}
	if (!json_is_array(cores) || json_array_size(cores) > SCHED_MAX_CORES_PER_NODE)
		return herd_errf(err, -EINVAL, "node.resources.cores must be an array of at most %d "
				 "cores", SCHED_MAX_CORES_PER_NODE);
	seen = json_object();
	json_array_foreach(cores, i, c) {
		json_t *id = json_object_get(c, "id"), *numa = json_object_get(c, "numa");
		char key[24];
		if (!json_is_object(c) || !json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) > INT32_MAX || (numa && !json_is_integer(numa)) ||
		    (numa && (json_integer_value(numa) < -1 || json_integer_value(numa) > INT32_MAX))) {
			rc = herd_errf(err, -EINVAL, "node.resources.cores[%zu] must be {\"id\": a core "
				       "number >= 0, \"numa\": its NUMA node >= 0, or -1 unknown}", i);
			break;
		}
		snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(id));
		if (json_object_get(seen, key)) {
			rc = herd_errf(err, -EINVAL, "node.resources.cores: core %s listed twice", key);
			break;
		}
		json_object_set_new(seen, key, json_true());
	}
	json_decref(seen);
	return rc;
}

static int decode_device(json_t *d, size_t i, json_t *seen, struct herd_err *err)
{
	char what[64];
	enum sched_sharing sh;
	json_t *h;
	int rc;

	snprintf(what, sizeof(what), "node.devices[%zu]", i);
	if (!json_is_object(d))
		return herd_errf(err, -EINVAL, "%s must be an object", what);
	if (!valid_id(jstr(d, "id", NULL)))
		return herd_errf(err, -EINVAL, "%s.id must be a printable id of 1..%d bytes", what, STORE_MAX_KEY);
	if (json_object_get(seen, jstr(d, "id", "")))
		return herd_errf(err, -EINVAL, "%s.id \"%s\" appears twice", what, jstr(d, "id", ""));
	json_object_set_new(seen, jstr(d, "id", ""), json_true());
	if ((rc = opt_string(d, "vendor", "nvidia", 64, what, err)) ||
	    (rc = opt_string(d, "type", "gpu", 64, what, err)) ||
	    (rc = opt_string(d, "model", "", 256, what, err)) ||
	    (rc = opt_string(d, "sharing", "exclusive", 16, what, err)) ||
	    (rc = opt_string(d, "health_reason", "", MAX_TEXT, what, err)) ||
	    (rc = opt_string(d, "mig_profile", "", 64, what, err)) ||
	    (rc = opt_string(d, "parent_id", "", STORE_MAX_KEY, what, err)) ||
	    (rc = nonneg_int(d, "memory_mib", 0, what, err)) ||
	    /* absent: no tenant limit but compute and memory (the agent always
	     * sends its configured replicas; 1 would make a sharing GPU
	     * exclusive for every other client of the API) */
	    (rc = nonneg_int(d, "replicas", 0, what, err)) ||
	    (rc = string_map(d, "attributes", what, err)))
		return rc;
	if (sched_sharing_parse(jstr(d, "sharing", ""), &sh) < 0)
		return herd_errf(err, -EINVAL, "%s.sharing must be exclusive, mps or timeslice", what);
	if (!json_object_get(d, "group")) {
		char *g = xasprintf("%s/%s/%s", jstr(d, "vendor", ""), jstr(d, "type", ""), jstr(d, "model", ""));
		json_object_set_new(d, "group", json_string(g));
		free(g);
	} else if ((rc = opt_string(d, "group", "", 512, what, err))) {
		return rc;
	}
	for (int k = 0; k < 2; k++) {
		const char *key = k ? "numa_node" : "nvlink_group";
		json_t *v = json_object_get(d, key);
		if (!v || json_is_null(v))
			json_object_set_new(d, key, json_integer(-1));
		else if (!json_is_integer(v) || json_integer_value(v) < -1 || json_integer_value(v) > 1000000)
			return herd_errf(err, -EINVAL, "%s.%s must be an integer >= -1", what, key);
	}
	h = json_object_get(d, "healthy");
	if (!h || json_is_null(h))
		json_object_set_new(d, "healthy", json_true());
	else if (!json_is_boolean(h))
		return herd_errf(err, -EINVAL, "%s.healthy must be a boolean", what);
	json_object_del(d, "stats"); /* kept in memory, not in the store */
	return 0;
}

/* node.host_volumes: {"<name>": {"path": "/abs", "read_only": bool}}, at
 * most 64 (the agent's client { host_volume } blocks); absent is {}.  The
 * scheduler matches job volumes' sources against the names. */
static int decode_host_volumes(json_t *n, struct herd_err *err)
{
	json_t *hv = json_object_get(n, "host_volumes"), *v;
	const char *name;

	if (!hv || json_is_null(hv))
		json_object_set_new(n, "host_volumes", hv = json_object());
	if (!json_is_object(hv) || json_object_size(hv) > 64)
		return herd_errf(err, -EINVAL, "node.host_volumes must be an object of at most 64 "
				 "volumes");
	json_object_foreach(hv, name, v) {
		json_t *ro;
		char what[160];
		int rc;
		snprintf(what, sizeof(what), "node.host_volumes.%.128s", name);
		if (!valid_id(name))
			return herd_errf(err, -EINVAL, "%s: a volume name is a printable id", what);
		if (!json_is_object(v))
			return herd_errf(err, -EINVAL, "%s must be an object", what);
		if ((rc = opt_string(v, "path", "", 4096, what, err)))
			return rc;
		ro = json_object_get(v, "read_only");
		if (!ro || json_is_null(ro))
			json_object_set_new(v, "read_only", json_false());
		else if (!json_is_boolean(ro))
			return herd_errf(err, -EINVAL, "%s.read_only must be a boolean", what);
	}
	return 0;
}

int node_from_request(const json_t *body, json_t **out, struct herd_err *err)
{
	json_t *n = json_object_get(body, "node"), *devs, *seen, *d;
	size_t i;
	int rc;

	if (!json_is_object(n))
		return herd_errf(err, -EINVAL, "body must be {\"node\": {...}}");
	n = json_deep_copy(n);
	if (!valid_id(jstr(n, "id", NULL))) {
		rc = herd_errf(err, -EINVAL, "node.id must be a printable id of 1..%d bytes", STORE_MAX_KEY);
		goto fail;
	}
	if ((rc = opt_string(n, "name", jstr(n, "id", ""), 256, "node", err)) ||
	    (rc = opt_string(n, "datacenter", "dc1", 256, "node", err)) ||
	    (rc = opt_string(n, "node_class", "", 256, "node", err)) ||
	    (rc = opt_string(n, "node_pool", "default", 256, "node", err)) ||
	    (rc = opt_string(n, "http_addr", "", 256, "node", err)) ||
	    (rc = string_map(n, "attributes", "node", err)) ||
	    (rc = string_map(n, "meta", "node", err)) ||
	    (rc = decode_host_volumes(n, err)))
		goto fail;
	d = json_object_get(n, "resources");
	if (!d || json_is_null(d))
		json_object_set_new(n, "resources", d = json_object());
	if (!json_is_object(d)) {
		rc = herd_errf(err, -EINVAL, "node.resources must be an object");
		goto fail;
	}
	if ((rc = nonneg_int(d, "cpu_milli", 0, "node.resources", err)) ||
	    (rc = nonneg_int(d, "memory_mib", 0, "node.resources", err)) ||
	    (rc = nonneg_int(d, "disk_mib", 0, "node.resources", err)) ||
	    (rc = decode_cores(d, err)))
		goto fail;
	d = json_object_get(n, "drivers");
	if (d && !json_is_object(d) && !json_is_null(d)) {
		rc = herd_errf(err, -EINVAL, "node.drivers must be an object");
		goto fail;
	}
	devs = json_object_get(n, "devices");
	if (!devs || json_is_null(devs))
		json_object_set_new(n, "devices", devs = json_array());
	if (!json_is_array(devs) || json_array_size(devs) > SCHED_MAX_DEVS_PER_NODE) {
		rc = herd_errf(err, -EINVAL, "node.devices must be an array of at most %d devices",
			       SCHED_MAX_DEVS_PER_NODE);
		goto fail;
	}
	seen = json_object();
	json_array_foreach(devs, i, d)
		if ((rc = decode_device(d, i, seen, err)))
			break;
	json_decref(seen);
	if (rc)
		goto fail;
	/* the server's fields are the server's */
	static const char *const server_fields[] = { "status", "eligibility", "drain",
		"drain_strategy", "last_drain",
		"status_description", "last_heartbeat", "heartbeat_ttl", "create_index",
		"modify_index", NULL };
	for (i = 0; server_fields[i]; i++)
		json_object_del(n, server_fields[i]);
	*out = n;
	return 0;
fail:
	json_decref(n);
	return rc;
}

/* A status report's time_limit: {"limit": ns > 0, "started_at": unix ns
 * (0 before the first start), "reached": bool}, every field there. */
static int time_limit_check(const json_t *tl, struct herd_err *err)
{
	const json_t *limit = json_object_get(tl, "limit"), *since = json_object_get(tl, "started_at");

	if (!json_is_object(tl) || json_object_size(tl) != 3 || !json_is_integer(limit) ||
	    json_integer_value(limit) <= 0 || !json_is_integer(since) ||
	    json_integer_value(since) < 0 || !json_is_boolean(json_object_get(tl, "reached")))
		return herd_errf(err, -EINVAL, "time_limit must be an object of limit (ns, > 0), "
				 "started_at (unix ns) and reached (a boolean)");
	return 0;
}

int alloc_status_from_request(const json_t *body, struct alloc_status *out, struct herd_err *err)
{
	const char *st = jstr(body, "client_status", NULL);
	json_t *desc = json_object_get(body, "client_description");
	json_t *ts = json_object_get(body, "task_states"), *v;
	json_t *svcs = json_object_get(body, "services"); /* services.c */
	json_t *tl = json_object_get(body, "time_limit");
	const char *k;

	if (!json_is_object(body))
		return herd_errf(err, -EINVAL, "body must be an object");
	if (!st || (strcmp(st, "pending") && strcmp(st, "running") && strcmp(st, "complete") &&
		    strcmp(st, "failed")))
		return herd_errf(err, -EINVAL, "client_status must be pending, running, complete or failed");
	if (desc && !json_is_null(desc) && !short_string(desc, MAX_TEXT))
		return herd_errf(err, -EINVAL, "client_description must be a string of at most %d bytes", MAX_TEXT);
	if (ts && !json_is_null(ts)) {
		if (!json_is_object(ts) || json_object_size(ts) > 1000)
			return herd_errf(err, -EINVAL, "task_states must be an object of at most 1000 tasks");
		json_object_foreach(ts, k, v)
			if (!json_is_object(v))
				return herd_errf(err, -EINVAL, "task_states.%s must be an object", k);
	}
	if (svcs && services_report_check(svcs, err) < 0)
		return -EINVAL;
	if (tl && !json_is_null(tl) && time_limit_check(tl, err) < 0)
		return -EINVAL;
	out->client_status = st;
	out->client_description = json_is_string(desc) ? json_string_value(desc) : "";
	out->task_states = json_is_object(ts) ? ts : NULL;
	out->services = svcs;
	out->time_limit = json_is_object(tl) ? tl : NULL;
	return 0;
}

int alloc_status_batch_from_request(const json_t *body, struct alloc_status_entry **out,
				    size_t *n, struct herd_err *err)
{
	json_t *list = json_object_get(body, "allocations"), *e, *seen;
	struct alloc_status_entry *v;
	size_t i, count;

	if (!json_is_object(body))
		return herd_errf(err, -EINVAL, "body must be an object");
	if (!json_is_array(list) || json_array_size(list) > ALLOC_STATUS_BATCH_MAX)
		return herd_errf(err, -EINVAL, "allocations must be an array of at most %d entries",
				 ALLOC_STATUS_BATCH_MAX);
	json_array_foreach(list, i, e)
		if (!json_is_object(e) || !short_string(json_object_get(e, "id"), STORE_MAX_KEY))
			return herd_errf(err, -EINVAL,
					 "allocations[%zu] must be an object with an id (a string of at most %d bytes)",
					 i, STORE_MAX_KEY);
	count = json_array_size(list);
	v = count ? xcalloc(count, sizeof(*v)) : NULL;
	seen = json_object();
	json_array_foreach(list, i, e) {
		v[i].id = json_string_value(json_object_get(e, "id"));
		/* Two states of one allocation in one batch: which one wins
		 * would be a guess, so the later one is refused. */
		if (json_object_get(seen, v[i].id))
			herd_errf(&v[i].err, -EINVAL, "allocation %s appears twice in the batch", v[i].id);
		else if (alloc_status_from_request(e, &v[i].st, &v[i].err) < 0)
			herd_err_prefix(&v[i].err, "allocations[%zu]", i);
		json_object_set_new(seen, v[i].id, json_true());
	}
	json_decref(seen);
	*out = v;
	*n = count;
	return 0;
}

/* ---- job bodies ------------------------------------------------------------ */

/* The diagnostics as the API shows them; messages start with the JSON path
 * of the thing ("groups[0].count: ..."), which becomes "path". */
static json_t *diags_json(const struct diag_list *dl)
{
	json_t *a = json_array();
	for (size_t i = 0; i < dl->n; i++) {
		const struct diag *d = &dl->v[i];
		const char *colon = strstr(d->msg, ": ");
		char *path = NULL;
		if (colon && !memchr(d->msg, ' ', (size_t)(colon - d->msg)))
			path = xstrndup(d->msg, (size_t)(colon - d->msg));
		json_array_append_new(a, json_pack("{s:s, s:i, s:i, s:s, s:s}", "path", path ? path : "",
						   "line", d->line, "col", d->col, "level",
						   d->level == DIAG_ERROR ? "error" : "warning",
						   "message", d->msg));
		free(path);
	}
	return a;
}

json_t *job_warnings(const struct diag_list *dl)
{
	json_t *a = json_array();
	for (size_t i = 0; i < dl->n; i++)
		if (dl->v[i].level == DIAG_WARNING)
			json_array_append_new(a, json_string(dl->v[i].msg));
	return a;
}

json_t *job_error_body(const struct diag_list *dl, const char *fallback)
{
	const char *first = fallback;
	for (size_t i = 0; i < dl->n && !first; i++)
		if (dl->v[i].level == DIAG_ERROR)
			first = dl->v[i].msg;
	return json_pack("{s:{s:s, s:s, s:o}}", "error", "code", "invalid_job", "message",
			 first ? first : "invalid job", "diagnostics", diags_json(dl));
}

struct job *job_from_request(const json_t *body, struct diag_list *dl, json_t **error_body)
{
	json_t *j = json_object_get(body, "job");
	struct job *job;
	if (!json_is_object(j)) {
		*error_body = job_error_body(dl, "body must be {\"job\": {...}}");
		return NULL;
	}
	job = job_from_json(j, NULL, dl);
	if (!job)
		*error_body = job_error_body(dl, NULL);
	return job;
}
