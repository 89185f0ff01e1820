/* disconnect: a group's disconnect block on the server (disconnect.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "server/disconnect.h"
#include "server/server-int.h"

enum disconnect_down disconnect_on_down(const struct job_disconnect *d, bool gang)
{
	/* a gang's peers hang without the member: it is lost and the gang
	 * placed again at once, whatever the block says */
	if (!d || d->lost_after <= 0 || gang)
		return DISCONNECT_DOWN_LOST;
	return DISCONNECT_DOWN_UNKNOWN;
}

int64_t disconnect_lost_at(const struct job_disconnect *d, const json_t *alloc, int64_t now)
{
	int64_t since = jint(alloc, "unknown_since", 0);

	if (!d || d->lost_after <= 0 || since <= 0)
		return now;
	return since > INT64_MAX - d->lost_after ? INT64_MAX : since + d->lost_after;
}

enum disconnect_step disconnect_unknown_step(const struct job_disconnect *d, const json_t *alloc,
					     bool replaced, int64_t now, int64_t *wake_at)
{
	int64_t at = disconnect_lost_at(d, alloc, now);

	*wake_at = 0;
	if (at <= now)
		return DISCONNECT_LOST;
	*wake_at = at;
	return d->replace && !replaced ? DISCONNECT_REPLACE : DISCONNECT_WAIT;
}

int64_t disconnect_replace_at(const struct job_disconnect *d, const json_t *alloc, int64_t now)
{
	int64_t lost = jint(alloc, "end_time", 0);

	if (!d || d->stop_on_client_after <= 0 || lost <= 0 ||
	    lost > INT64_MAX - d->stop_on_client_after)
		return now;
	return lost + d->stop_on_client_after;
}

int64_t disconnect_running_since(const json_t *alloc)
{
	int64_t since = 0;
	const char *name;
	json_t *t;

	if (strcmp(jstr(alloc, "client_status", ""), "running"))
		return INT64_MAX;
	json_object_foreach(json_object_get(alloc, "task_states"), name, t) {
		int64_t at = jint(t, "started_at", 0);
		if (!strcmp(jstr(t, "state", ""), "running") && at > since)
			since = at;
	}
	return since ? since : INT64_MAX;
}

static bool is_live(const json_t *alloc)
{
	const char *c = jstr(alloc, "client_status", "pending");
	return !strcmp(c, "pending") || !strcmp(c, "running");
}

static double score_of(const json_t *alloc)
{
	json_t *s = json_object_get(alloc, "score");
	return json_is_number(s) ? json_number_value(s) : 0;
}

bool disconnect_keep_original(const char *reconcile, const json_t *original,
			      const json_t *replacement)
{
	if (!is_live(original))
		return false;
	if (!is_live(replacement) || !reconcile || !strcmp(reconcile, "keep_original"))
		return true;
	if (!strcmp(reconcile, "keep_replacement"))
		return false;
	if (!strcmp(reconcile, "longest_running"))
		return disconnect_running_since(original) <= disconnect_running_since(replacement);
	/* best_score: each placement's score, stored with the allocation
	 * of a group with a disconnect block (plan.c) */
	return score_of(original) >= score_of(replacement);
}

bool disconnect_of_stored(const json_t *job, const char *group, struct job_disconnect *d,
			  bool *gang)
{
	static const char *const reconciles[] = {
		"keep_original", "keep_replacement", "best_score", "longest_running",
	};
	json_t *g, *blk;
	size_t i;

	memset(d, 0, sizeof(*d));
	*gang = false;
	json_array_foreach(json_object_get(job, "groups"), i, g) {
		const char *r;
		if (strcmp(jstr(g, "name", ""), group))
			continue;
		*gang = jbool(g, "gang", false);
		blk = json_object_get(g, "disconnect");
		if (!json_is_object(blk))
			return false;
		d->lost_after = jint(blk, "lost_after", 0);
		d->stop_on_client_after = jint(blk, "stop_on_client_after", 0);
		d->replace = jbool(blk, "replace", true);
		r = jstr(blk, "reconcile", "best_score");
		d->reconcile = (char *)reconciles[2];
		for (size_t k = 0; k < sizeof(reconciles) / sizeof(reconciles[0]); k++)
			if (!strcmp(r, reconciles[k]))
				d->reconcile = (char *)reconciles[k];
		return true;
	}
	return false;
}

bool disconnect_mark_down(struct store *s, json_t *jobs, json_t *alloc, int64_t now)
{
	const char *ns = jstr(alloc, "namespace", "default"), *id = jstr(alloc, "job_id", "");
	char *k = xasprintf("%s\x1f%s", ns, id), desc[128], buf[32];
	struct job_disconnect d;
	json_t *job = json_object_get(jobs, k);
	bool gang;

	if (!job) {
		struct store_key key = { ns, id, 0 };
		if (store_get(s, STORE_JOB, &key, &job, NULL) < 0)
			job = json_null(); /* gone: lost, as before */
		json_object_set_new(jobs, k, job);
	}
	free(k);
	if (!disconnect_of_stored(job, jstr(alloc, "task_group", ""), &d, &gang) ||
	    jbool(job, "stop", false) || disconnect_on_down(&d, gang) != DISCONNECT_DOWN_UNKNOWN)
		return false;
	snprintf(desc, sizeof(desc), "node down: missed heartbeats; lost after %s unless it "
		 "reconnects", format_duration(d.lost_after, buf, sizeof(buf)));
	/* what it turns back into if the node comes back in time */
	json_object_set_new(alloc, "unknown_from", json_string(jstr(alloc, "client_status", "pending")));
	json_object_set_new(alloc, "client_status", json_string("unknown"));
	json_object_set_new(alloc, "client_description", json_string(desc));
	json_object_set_new(alloc, "unknown_since", json_integer(now));
	json_object_set_new(alloc, "modify_time", json_integer(now));
	return true;
}

int disconnect_node_up(struct store *s, const char *node_id, struct store_batch *b,
		       json_t *evals, int64_t now)
{
	struct store_filter f = { NULL, NULL, node_id };
	uint64_t idx = store_index(s);
	json_t *allocs = NULL, *jobs, *al;
	size_t i;
	int rc = store_list(s, STORE_ALLOC, &f, &allocs, NULL);

	if (rc < 0)
		return rc;
	jobs = json_object();
	store_batch_require_node_allocs(b, node_id, idx);
	json_array_foreach(allocs, i, al) {
		char *k;
		if (!json_object_get(al, "unknown_since") ||
		    strcmp(jstr(al, "desired_status", "run"), "run"))
			continue;
		/* unknown_since stays: reconcile sees that it came back and,
		 * when a replacement runs, which of the two to keep.  One its
		 * agent reported on already is not unknown any more, but is
		 * still to be decided. */
		if (!strcmp(jstr(al, "client_status", ""), "unknown")) {
			json_object_set_new(al, "client_status",
					    json_string(jstr(al, "unknown_from", "running")));
			json_object_del(al, "unknown_from");
			json_object_set_new(al, "client_description", json_string("node reconnected"));
			json_object_set_new(al, "modify_time", json_integer(now));
			store_batch_put(b, STORE_ALLOC, al);
		}
		k = xasprintf("%s\x1f%s", jstr(al, "namespace", "default"), jstr(al, "job_id", ""));
		if (!json_object_get(jobs, k)) {
			json_t *e = eval_new(jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
					     "node-update", node_id);
			json_object_set_new(jobs, k, json_true());
			store_batch_put(b, STORE_EVAL, e);
			json_array_append_new(evals, e);
		}
		free(k);
	}
	json_decref(jobs);
	json_decref(allocs);
	return 0;
}
