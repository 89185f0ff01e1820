/* quota: what a namespace takes (CPU, memory, GPUs counted by share) and
 * whether a new allocation stays within the quota attached to it.
 *
 * Usage counts every allocation that holds capacity (client pending or
 * running, even when told to stop: its GPU is not free until its task
 * ends), so that a quota can never be exceeded by allocations that overlap
 * while one stops and the next starts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "server/server-int.h"
#include "server/teams.h"

void quota_state_release(struct quota_state *q)
{
	if (!q)
		return;
	free(q->ns);
	json_decref(q->spec);
	json_decref(q->by_group);
	memset(q, 0, sizeof(*q));
}

void quota_state_none(struct quota_state *q, const char *ns)
{
	memset(q, 0, sizeof(*q));
	q->ns = xstrdup(ns);
	q->by_group = json_object();
}

void quota_state_add(struct quota_state *q, const json_t *alloc, int sign)
{
	const json_t *res = json_object_get(alloc, "resources");
	json_t *d;
	size_t i;
	int64_t g = 0;
	q->cpu += sign * jint(res, "cpu_milli", 0);
	q->mem += sign * jint(res, "memory_mib", 0);
	json_array_foreach(json_object_get(res, "devices"), i, d) {
		const char *group = jstr(d, "group", "");
		int64_t m = alloc_device_gpu_milli(d);
		g += m;
		json_object_set_new(q->by_group, group, json_integer(jint(q->by_group, group, 0) + sign * m));
	}
	q->gpu_milli += sign * g;
	if (jbool(alloc, "borrowed", false))
		q->borrowed_milli += sign * g;
}

int quota_state_read(struct store *s, const char *ns, struct quota_state *q, struct herd_err *err)
{
	struct store_key nk = { NULL, ns, 0 };
	struct store_filter f = { .ns = ns };
	json_t *nsrec = NULL, *allocs = NULL, *al;
	size_t i;
	int rc;

	quota_state_none(q, ns);
	rc = store_get_shared(s, STORE_NAMESPACE, &nk, &nsrec, err);
	if (rc == 0 && *jstr(nsrec, "quota", "")) {
		struct store_key qk = { NULL, jstr(nsrec, "quota", ""), 0 };
		rc = store_get(s, STORE_QUOTA, &qk, &q->spec, err);
		if (rc == -ENOENT) /* a namespace may name a quota deleted since: no limit */
			q->spec = NULL;
		else if (rc < 0)
			goto out;
		if (q->spec)
			quota_cpu_mem_limit(q->spec, &q->cpu_limit, &q->mem_limit);
	} else if (rc < 0 && rc != -ENOENT) {
		goto out;
	}
	/* Usage matters only against a quota (every reader of it checks
	 * q->spec first); without one, skip the parse of every allocation of the
	 * namespace, which would cost each evaluation O(allocations). */
	rc = q->spec ? store_list(s, STORE_ALLOC, &f, &allocs, err) : 0;
	if (rc < 0)
		goto out;
	/* an unknown allocation (its node down, disconnect { }) holds its
	 * devices there but not its namespace's quota: its replacement does */
	json_array_foreach(allocs, i, al)
		if (alloc_takes_capacity(al) && strcmp(jstr(al, "client_status", ""), "unknown"))
			quota_state_add(q, al, 1);
	q->base_cpu = q->cpu;
	q->base_mem = q->mem;
	q->base_gpu = q->gpu_milli;
	rc = 0;
out:
	json_decref(nsrec);
	json_decref(allocs);
	if (rc < 0)
		quota_state_release(q);
	return rc;
}

static int64_t group_use(const struct quota_state *q, const char *name)
{
	const char *g;
	json_t *v;
	int64_t sum = 0;
	json_object_foreach(q->by_group, g, v)
		if (quota_name_matches(name, g))
			sum += json_integer_value(v);
	return sum;
}

char *quota_exceeds(const struct quota_state *q, int64_t cpu, int64_t mem, const json_t *devs,
		    int64_t gpu_lower, bool *gpu_only)
{
	char a[32], b[32];
	*gpu_only = false;
	if (!q->spec)
		return NULL;
	if (q->cpu_limit > 0 && q->cpu + cpu > q->cpu_limit)
		return xasprintf("quota %s: cpu %lld/%lld", jstr(q->spec, "name", ""), (long long)q->cpu,
				 (long long)q->cpu_limit);
	if (q->mem_limit > 0 && q->mem + mem > q->mem_limit)
		return xasprintf("quota %s: memory %lld/%lld MiB", jstr(q->spec, "name", ""),
				 (long long)q->mem, (long long)q->mem_limit);
	for (size_t i = 0; i < quota_device_limits(q->spec); i++) {
		int64_t limit, add = 0;
		const char *name = quota_device_limit(q->spec, i, &limit);
		if (devs) {
			json_t *d;
			size_t k;
			json_array_foreach(devs, k, d)
				if (quota_name_matches(name, jstr(d, "group", "")))
					add += alloc_device_gpu_milli(d);
		} else if (!strcmp(name, "gpu") || !strcmp(name, "nvidia/gpu") || !strcmp(name, "nvidia")) {
			add = gpu_lower;
		}
		if (add > 0 && group_use(q, name) + add > limit) {
			*gpu_only = true;
			return xasprintf("quota %s: %s %s/%s", jstr(q->spec, "name", ""), name,
					 gpu_milli_format(group_use(q, name), a, sizeof(a)),
					 gpu_milli_format(limit, b, sizeof(b)));
		}
	}
	return NULL;
}

bool quota_may_borrow(const struct quota_state *q, int64_t extra_milli)
{
	double limit;
	if (!q->spec || !jbool(q->spec, "borrow", false))
		return false;
	limit = json_number_value(json_object_get(q->spec, "borrow_limit"));
	return limit <= 0 || q->borrowed_milli + extra_milli <= (int64_t)(limit * 1000.0 + 0.5);
}

static json_t *used_limit(int64_t used, int64_t limit, bool gpu)
{
	char a[32], b[32];
	if (gpu)
		return json_pack("{s:s, s:s, s:f, s:f}", "used", gpu_milli_format(used, a, sizeof(a)), "limit",
				 limit >= 0 ? gpu_milli_format(limit, b, sizeof(b)) : "", "used_gpus",
				 used / 1000.0, "limit_gpus", limit / 1000.0);
	return json_pack("{s:I, s:I}", "used", (json_int_t)used, "limit", (json_int_t)limit);
}

json_t *quota_status_json(const struct quota_state *q)
{
	json_t *devs = json_object();
	char a[32];
	for (size_t i = 0; q->spec && i < quota_device_limits(q->spec); i++) {
		int64_t limit;
		const char *name = quota_device_limit(q->spec, i, &limit);
		json_object_set_new(devs, name, used_limit(group_use(q, name), limit, true));
	}
	return json_pack("{s:s, s:o, s:o, s:o, s:s, s:f}", "namespace", q->ns, "cpu",
			 used_limit(q->cpu, q->cpu_limit, false), "memory",
			 used_limit(q->mem, q->mem_limit, false), "devices", devs, "gpu_used",
			 gpu_milli_format(q->gpu_milli, a, sizeof(a)), "gpu_borrowed",
			 q->borrowed_milli / 1000.0);
}

int quota_commit_check(struct store *s, void *arg, struct herd_err *err)
{
	const struct plan *p = arg;
	struct quota_state now;
	int rc = quota_state_read(s, p->quota->ns, &now, err);
	if (rc < 0)
		return rc;
	/* The plan counted p->quota and added its own allocations, which are
	 * not in the store yet: usage must not have grown meanwhile. */
	if (now.cpu > p->quota->base_cpu || now.mem > p->quota->base_mem ||
	    now.gpu_milli > p->quota->base_gpu ||
	    !json_equal(now.spec, p->quota->spec))
		rc = herd_errf(err, -ESTALE, "namespace %s took more meanwhile", p->quota->ns);
	quota_state_release(&now);
	return rc;
}
