/* job_status: what readers see of a job: its status and a summary per
 * group, derived from its allocations at read time (so they are never out
 * of step with them), and the evaluation records the routes create. */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/depends.h"
#include "server/server-int.h"

json_t *eval_new(const char *ns, const char *job_id, const char *trigger, const char *node_id)
{
	char id[ID_LEN];
	new_id(id);
	/* keys in the store's canonical order, so that a put of it as an
	 * owned object needs no sorted copy (store_batch_put_owned) */
	return json_pack("{s:I, s:{}, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:I}", "create_time",
			 (json_int_t)now_ns(), "failed_placements", "id", id, "job_id", job_id,
			 "modify_time", (json_int_t)now_ns(), "namespace", ns, "node_id",
			 node_id ? node_id : "", "status", "pending", "status_description", "",
			 "triggered_by", trigger, "wait_until", (json_int_t)0);
}

/* Whether a sysbatch job ran on its nodes: it has allocations to run and
 * none of them is pending or running. */
static bool job_sysbatch_done(const json_t *allocs)
{
	size_t i, n = 0;
	json_t *x;
	json_array_foreach(allocs, i, x) {
		if (strcmp(jstr(x, "desired_status", "run"), "run"))
			continue;
		if (alloc_takes_capacity(x))
			return false;
		n++;
	}
	return n > 0;
}

/* dead: stopped, or a batch job whose every instance completed;
 * running: some allocation runs; pending: otherwise. */
const char *job_status(const json_t *job, const json_t *allocs)
{
	int64_t want = 0, complete = 0, running = 0;
	bool batch = !strcmp(jstr(job, "type", "service"), "batch");
	size_t i;
	json_t *x;

	if (jbool(job, "stop", false))
		return "dead";
	/* a periodic or parameterized parent places nothing itself: it runs
	 * while it launches or can be dispatched */
	if (job_is_parent(job))
		return "running";
	json_array_foreach(json_object_get(job, "groups"), i, x)
		want += jint(x, "count", 1);
	json_array_foreach(allocs, i, x) {
		const char *c = jstr(x, "client_status", "");
		if (strcmp(jstr(x, "desired_status", "run"), "run"))
			continue;
		if (!strcmp(c, "running"))
			running++;
		else if (!strcmp(c, "complete"))
			complete++;
	}
	if (batch && want > 0 && complete >= want)
		return "dead";
	/* sysbatch: one per node, as many as nodes: dead once none is live */
	if (!strcmp(jstr(job, "type", ""), "sysbatch") && job_sysbatch_done(allocs))
		return "dead";
	return running ? "running" : "pending";
}

json_t *allocs_by_job(const json_t *allocs)
{
	json_t *byjob = json_object(), *x;
	size_t i;

	json_array_foreach(allocs, i, x) {
		char *k = xasprintf("%s\x1f%s", jstr(x, "namespace", ""), jstr(x, "job_id", ""));
		json_t *a = json_object_get(byjob, k);
		if (!a) {
			a = json_array();
			json_object_set_new(byjob, k, a);
		}
		json_array_append(a, x);
		free(k);
	}
	return byjob;
}

json_t *job_allocs_of(const json_t *byjob, const json_t *job)
{
	char *k = xasprintf("%s\x1f%s", jstr(job, "namespace", ""), jstr(job, "id", ""));
	json_t *a = json_object_get(byjob, k);
	free(k);
	return a;
}

json_t *job_summary(const json_t *job, const json_t *allocs)
{
	json_t *sum = json_object(), *x;
	size_t i;

	json_array_foreach(json_object_get(job, "groups"), i, x)
		json_object_set_new(sum, jstr(x, "name", ""),
				    json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "pending", 0, "running", 0,
					      "complete", 0, "failed", 0, "lost", 0, "unknown", 0));
	json_array_foreach(allocs, i, x) {
		json_t *g = json_object_get(sum, jstr(x, "task_group", ""));
		const char *c = jstr(x, "client_status", "pending");
		if (g && json_object_get(g, c))
			json_object_set_new(g, c, json_integer(jint(g, c, 0) + 1));
	}
	return sum;
}

json_t *job_for_reader(struct server *srv, const json_t *stored, struct herd_err *err)
{
	struct store_filter f = { jstr(stored, "namespace", "default"), jstr(stored, "id", ""), NULL };
	json_t *allocs = NULL, *out;
	int rc = store_list(srv->store, STORE_ALLOC, &f, &allocs, err);
	if (rc < 0)
		return NULL;
	out = json_deep_copy(stored);
	json_object_set_new(out, "status", json_string(job_status(stored, allocs)));
	json_object_set(out, "job_modify_index", json_object_get(stored, "modify_index"));
	if (json_array_size(json_object_get(stored, "depends_on"))) {
		json_t *deps = depends_describe(srv, stored, NULL);
		if (deps)
			json_object_set_new(out, "dependencies", deps);
	}
	json_decref(allocs);
	return out;
}
