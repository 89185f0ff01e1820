/* herd job restart: restarts a job's running allocations a batch at a time
 * (docs/operations.md, "Restarting a job"), so that a service picks up a
 * new model or configuration file without a new job version and without
 * going down as a whole.
 *
 * Each batch is restarted in place (POST /v1/client/allocation/:id/restart
 * on the allocation's node, as `herd alloc restart`), or with -reschedule
 * stopped and replaced (POST /v1/allocation/:id/stop, as `herd alloc
 * stop`); the next batch starts once every allocation of this one runs
 * again, and -batch-wait after.  Everything is done from the CLI with the
 * calls above: nothing new is stored on the server, and an interrupted
 * restart leaves each allocation either restarted or as it was. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/units.h"
#include "common/xalloc.h"

#define RESTART_WAIT_MS 5000

struct restart_opts {
	const char *cmd, *ns, *group, *task;
	bool reschedule, keep_going;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(js(*(json_t *const *)a, "name"), js(*(json_t *const *)b, "name"));
}

/* The job's running allocations (of group, when set), by name: a new
 * array, or NULL after saying why. */
static json_t *running_allocs(const struct restart_opts *o, const char *job_id)
{
	char *path = api_job_path(job_id, "/allocations", o->ns);
	struct httpc_response r;
	json_t *out, *a, **v;
	size_t i, n = 0;

	if (api_call(o->cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return NULL;
	}
	free(path);
	v = xcalloc(json_array_size(r.body) + 1, sizeof(*v));
	json_array_foreach(r.body, i, a)
		if (!strcmp(js(a, "desired_status"), "run") &&
		    !strcmp(js(a, "client_status"), "running") &&
		    (!o->group || !strcmp(js(a, "task_group"), o->group)))
			v[n++] = a;
	qsort(v, n, sizeof(*v), by_name);
	out = json_array();
	for (i = 0; i < n; i++)
		json_array_append(out, v[i]);
	free(v);
	httpc_response_release(&r);
	return out;
}

/* The time of task's newest "restarted by user" event (0: none), and
 * whether a Started event follows it. */
static int64_t user_restart(const json_t *task_state, bool *started_after)
{
	const json_t *e;
	int64_t at = 0;
	size_t i;
	*started_after = false;
	json_array_foreach(json_object_get(task_state, "events"), i, e) {
		if (!strcmp(js(e, "type"), "Restart Signaled") &&
		    !strcmp(js(e, "message"), "restarted by user")) {
			at = ji(e, "time");
			*started_after = false;
		} else if (!strcmp(js(e, "type"), "Started") && at) {
			*started_after = true;
		}
	}
	return at;
}

/* Restarts alloc's tasks in place; *before gets, per task the node
 * restarts, the time of its previous user restart ({"<task>": ns}).  0, or 1
 * after saying why. */
static int restart_in_place(const struct restart_opts *o, const json_t *alloc, json_t **before)
{
	json_t *body = o->task ? json_pack("{s:s}", "task", o->task) : json_object(), *t;
	struct httpc_response r;
	char *id = NULL;
	size_t i;
	int rc = alloc_client_post(o->cmd, o->ns, js(alloc, "id"), "/restart", body, &id, &r);

	json_decref(body);
	free(id);
	if (rc)
		return 1;
	*before = json_object();
	json_array_foreach(json_object_get(r.body, "tasks"), i, t) {
		bool started;
		const json_t *st = json_object_get(json_object_get(alloc, "task_states"),
						   json_string_value(t));
		json_object_set_new(*before, json_string_value(t),
				    json_integer(user_restart(st, &started)));
	}
	httpc_response_release(&r);
	return 0;
}

/* Waits until every task in before was restarted (a newer user restart,
 * then Started) and runs; 0, or 1 when the allocation ended first. */
static int wait_restarted(const struct restart_opts *o, const char *alloc_id, const json_t *before)
{
	char *path = xasprintf("/v1/allocation/%s", alloc_id);
	uint64_t index = 0;
	int rc = 1;

	for (;;) {
		struct httpc_response r;
		const json_t *states, *prev;
		const char *task;
		bool done = true;
		if (api_get_blocking(o->cmd, path, index, RESTART_WAIT_MS, &r) < 0)
			break;
		index = r.index;
		states = json_object_get(r.body, "task_states");
		json_object_foreach((json_t *)before, task, prev) {
			const json_t *st = json_object_get(states, task);
			bool started;
			int64_t at = user_restart(st, &started);
			done = done && at > json_integer_value(prev) && started &&
			       !strcmp(js(st, "state"), "running");
		}
		if (strcmp(js(r.body, "client_status"), "running") && strcmp(js(r.body, "client_status"), "pending")) {
			fprintf(stderr, "%s: allocation %s is %s\n", o->cmd, alloc_id,
				js(r.body, "client_status"));
			httpc_response_release(&r);
			break;
		}
		httpc_response_release(&r);
		if (done) {
			rc = 0;
			break;
		}
	}
	free(path);
	return rc;
}

/* Stops alloc to have it replaced; 0, or 1 after saying why. */
static int stop_for_replacement(const struct restart_opts *o, const json_t *alloc)
{
	char *path = xasprintf("/v1/allocation/%s/stop", js(alloc, "id"));
	struct httpc_response r;
	int rc = api_call(o->cmd, "POST", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	httpc_response_release(&r);
	return 0;
}

/* One batch: every allocation restarted (or stopped), then each waited
 * for.  The number of allocations that failed. */
static int run_batch(const struct restart_opts *o, const json_t *batch)
{
	size_t n = json_array_size(batch), i;
	json_t **before = xcalloc(n + 1, sizeof(*before));
	int *failed = xcalloc(n + 1, sizeof(*failed)), bad = 0;
	char sid[16];

	for (i = 0; i < n; i++) {
		const json_t *a = json_array_get(batch, i);
		printf("    allocation %s (%s): %s\n", short_id(js(a, "id"), sid), js(a, "name"),
		       o->reschedule ? "stopping, to be replaced" : "restarting in place");
		fflush(stdout);
		failed[i] = o->reschedule ? stop_for_replacement(o, a) : restart_in_place(o, a, &before[i]);
	}
	for (i = 0; i < n; i++) {
		const json_t *a = json_array_get(batch, i);
		if (!failed[i])
			failed[i] = o->reschedule ? alloc_follow_replacement(o->cmd, js(a, "id"), a)
						  : wait_restarted(o, js(a, "id"), before[i]);
		if (!failed[i] && !o->reschedule)
			printf("    allocation %s running again\n", short_id(js(a, "id"), sid));
		bad += failed[i];
		json_decref(before[i]);
	}
	fflush(stdout);
	free(before);
	free(failed);
	return bad;
}

/* -batch-size: "N" or "N%" of total, at least 1; 0 after a usage error. */
static size_t batch_size(const char *cmd, const char *arg, size_t total)
{
	size_t len = strlen(arg);
	bool pct = len > 0 && arg[len - 1] == '%';
	char *num = xstrndup(arg, pct ? len - 1 : len);
	int64_t v;
	int rc = parse_int64(num, 1, pct ? 100 : 100000, &v, NULL);
	free(num);
	if (rc < 0) {
		usage_error(cmd, "-batch-size \"%s\": a count of at least 1, or a percentage "
			    "1%%..100%%", arg);
		return 0;
	}
	if (!pct)
		return (size_t)v;
	v = ((int64_t)total * v + 99) / 100;
	return v > 0 ? (size_t)v : 1;
}

int job_restart_cmd(int argc, char **argv)
{
	const char *ns_flag = NULL, *size_arg = "1", *wait_arg = "0s", *on_error = "fail";
	struct restart_opts o = { argv[0], NULL, NULL, NULL, false, false };
	const struct flag flags[] = {
		{ "batch-size", FLAG_STRING, &size_arg, "allocations restarted at a time: N or N% "
		  "(default 1)" },
		{ "batch-wait", FLAG_STRING, &wait_arg, "a pause between batches (default 0s)" },
		{ "group", FLAG_STRING, &o.group, "only this group's allocations" },
		{ "task", FLAG_STRING, &o.task, "only this task (in place; default: every running "
		  "task)" },
		{ "reschedule", FLAG_BOOL, &o.reschedule, "stop each allocation and have it replaced "
		  "(placed anew) instead of restarting its tasks in place" },
		{ "on-error", FLAG_STRING, &on_error, "fail (default: stop at the first batch with a "
		  "failure) or continue" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job restart [options] ID",
		"Restarts the running allocations of a job a batch at a time: each batch's\n"
		"tasks are restarted in place (as herd alloc restart), or with -reschedule\n"
		"stopped and replaced (as herd alloc stop); the next batch starts when every\n"
		"allocation of this one runs again, after -batch-wait.  No new job version is\n"
		"made.  Exits 1 when an allocation does not come back (with -on-error continue,\n"
		"after the last batch).",
		flags,
	};
	char *pos[1];
	int64_t wait_ns;
	json_t *allocs;
	size_t size, total, done = 0;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc, bad = 0;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing job id");
	if (parse_duration(wait_arg, &wait_ns, NULL) < 0 || wait_ns < 0)
		return usage_error(argv[0], "-batch-wait \"%s\": a duration such as 30s", wait_arg);
	if (strcmp(on_error, "fail") && strcmp(on_error, "continue"))
		return usage_error(argv[0], "-on-error \"%s\": fail or continue", on_error);
	if (o.task && o.reschedule)
		return usage_error(argv[0], "-task restarts one task in place; -reschedule replaces "
				   "whole allocations: not both");
	o.keep_going = !strcmp(on_error, "continue");
	if ((rc = api_write_namespace(argv[0], ns_flag, &o.ns)) != 0)
		return rc;
	if (!(allocs = running_allocs(&o, pos[0])))
		return 1;
	total = json_array_size(allocs);
	if (!(size = batch_size(argv[0], size_arg, total))) {
		json_decref(allocs);
		return EXIT_USAGE;
	}
	printf("==> job \"%s\": %zu running allocation%s%s%s, %zu at a time\n", pos[0], total,
	       total == 1 ? "" : "s", o.group ? " of group " : "", o.group ? o.group : "",
	       size < total ? size : total);
	while (done < total) {
		json_t *batch = json_array();
		for (size_t i = done; i < total && i < done + size; i++)
			json_array_append(batch, json_array_get(allocs, i));
		printf("==> batch %zu of %zu\n", done / size + 1, (total + size - 1) / size);
		bad += run_batch(&o, batch);
		done += json_array_size(batch);
		json_decref(batch);
		if (bad && !o.keep_going)
			break;
		if (done < total && wait_ns > 0) {
			char d[64];
			printf("    waiting %s before the next batch\n",
			       format_duration(wait_ns, d, sizeof(d)));
			fflush(stdout);
			nanosleep(&(struct timespec){ wait_ns / 1000000000, wait_ns % 1000000000 }, NULL);
		}
	}
	json_decref(allocs);
	if (bad) {
		fprintf(stderr, "%s: %d allocation%s did not come back%s\n", argv[0], bad,
			bad == 1 ? "" : "s", done < total ? "; the remaining batches were not started" : "");
		return 1;
	}
	printf("==> job \"%s\": %zu allocation%s restarted\n", pos[0], total, total == 1 ? "" : "s");
	return 0;
}
