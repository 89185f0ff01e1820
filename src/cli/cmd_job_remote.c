/* herd job run|plan|status|stop, and inspect ID: jobs on a server.
 *
 * `run` parses the file locally (so errors come with file:line:col before
 * anything is sent), submits the canonical JSON, then follows the
 * evaluation and the job's allocations with blocking queries: no polling,
 * each answer arrives when the state changed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "spec/job_system.h"
#include "spec/spec.h"

/* How long `job run` waits for a batch job that is running to complete
 * before it says "running" and leaves it be. */
#define RUN_BATCH_GRACE_MS 3000
#define FOLLOW_WAIT_MS 5000

void print_failed_placements(FILE *f, const json_t *failed)
{
	const char *group;
	json_t *fp;

	json_object_foreach((json_t *)failed, group, fp) {
		const char *expl = js(fp, "explanation");
		fprintf(f, "group \"%s\": %lld placement%s failed (%lld node%s evaluated)\n", group,
			(long long)ji(fp, "missing"), ji(fp, "missing") == 1 ? "" : "s",
			(long long)ji(fp, "nodes_evaluated"),
			ji(fp, "nodes_evaluated") == 1 ? "" : "s");
		/* Indent every line of the engine's explanation. */
		while (*expl) {
			const char *nl = strchr(expl, '\n');
			size_t len = nl ? (size_t)(nl - expl) : strlen(expl);
			if (len)
				fprintf(f, "  %.*s\n", (int)len, expl);
			expl += len + (nl ? 1 : 0);
		}
	}
}

static json_t *wrap_job(const struct job *job)
{
	json_t *body = json_object();
	json_object_set_new(body, "job", job_to_json(job));
	return body;
}

static int64_t total_count(const struct job *job)
{
	int64_t n = 0;
	if (job_type_is_system(job->type))
		return JOB_FOLLOW_PER_NODE;
	for (size_t g = 0; g < job->ngroups; g++)
		n += job->groups[g].count;
	return n;
}

char *api_job_path(const char *id, const char *suffix, const char *ns)
{
	char *e = httpc_escape(id);
	char *p = xasprintf("/v1/job/%s%s", e, suffix);
	char *full = api_ns_path(p, ns);
	free(e);
	free(p);
	return full;
}

int api_write_namespace(const char *cmd, const char *ns_flag, const char **ns)
{
	*ns = cli_namespace(ns_flag);
	if (!strcmp(*ns, "*"))
		return usage_error(cmd, "-namespace *: name one namespace (\"*\" is for lists)");
	return 0;
}

/* The namespace a submitted job goes to: the one its file names (as in
 * Nomad: the file wins), else -namespace / $HERD_NAMESPACE.  A file that
 * says nothing gets "default" from the parser, so "default" in the job
 * means "not named". */
static int place_job(const char *cmd, struct job *job, const char *ns_flag)
{
	const char *ns;
	int rc = api_write_namespace(cmd, ns_flag, &ns);

	if (rc)
		return rc;
	if (strcmp(job->namespace, "default")) {
		if (ns_flag && *ns_flag && strcmp(ns_flag, job->namespace))
			fprintf(stderr, "%s: the job file names namespace \"%s\": -namespace %s "
				"is ignored\n", cmd, job->namespace, ns_flag);
		return 0;
	}
	free(job->namespace);
	job->namespace = xstrdup(ns);
	return 0;
}

json_t *api_follow_eval(const char *cmd, const char *eval_id)
{
	char *e = httpc_escape(eval_id);
	char *path = xasprintf("/v1/evaluation/%s", e);
	uint64_t index = 0;
	json_t *ev = NULL;

	free(e);
	for (;;) {
		struct httpc_response r;
		if (api_get_blocking(cmd, path, index, FOLLOW_WAIT_MS, &r) < 0)
			break;
		index = r.index;
		if (strcmp(js(r.body, "status"), "pending")) {
			ev = json_incref(r.body);
			httpc_response_release(&r);
			break;
		}
		httpc_response_release(&r);
	}
	free(path);
	return ev;
}

static void print_alloc_events(const json_t *alloc)
{
	const char *task;
	json_t *ts;

	json_object_foreach(json_object_get(alloc, "task_states"), task, ts) {
		size_t i;
		json_t *ev;
		json_array_foreach(json_object_get(ts, "events"), i, ev)
			fprintf(stderr, "    task %s: %s%s%s\n", task, js(ev, "type"),
				*js(ev, "message") ? ": " : "", js(ev, "message"));
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The version of job (ns, job_id) as stored now, or -1 after printing why. */
static int64_t job_version_now(const char *cmd, const char *job_id, const char *ns)
{
	char *path = api_job_path(job_id, "", ns);
	struct httpc_response r;
	int64_t v = -1;
	if (api_call(cmd, "GET", path, NULL, &r) == 0) {
		v = ji(r.body, "version");
		httpc_response_release(&r);
	}
	free(path);
	return v;
}

/* Whether a system job's allocation a (desired run) holds a node to wait
 * for: of the job's version, or still live (an older one its node's new
 * one replaces); one more in *want.  An older one that ended (lost with
 * its node) does not. */
static bool per_node_counts(const json_t *a, int64_t version, int64_t *want)
{
	const char *st = js(a, "client_status");
	bool live = !strcmp(st, "pending") || !strcmp(st, "running");
	if (ji(a, "job_version") != version && !live)
		return false;
	(*want)++;
	return true;
}

/* Follows the job's allocations until `want` of them run (or completed, for
 * batch); JOB_FOLLOW_PER_NODE: until each of the job's version does.
 * Prints each allocation's change of client status once. */
static int follow_allocs(const char *cmd, const char *job_id, const char *ns, bool batch,
			 int64_t want)
{
	char *path = api_job_path(job_id, "/allocations", ns);
	uint64_t index = 0;
	json_t *seen = json_object();   /* alloc id -> last printed status */
	int64_t running_since = -1, version = -1;
	bool per_node = want == JOB_FOLLOW_PER_NODE;
	int rc = 1;

	if (per_node && (version = job_version_now(cmd, job_id, ns)) < 0) {
		json_decref(seen);
		free(path);
		return 1;
	}

	for (;;) {
		struct httpc_response r;
		size_t i;
		json_t *a;
		int64_t running = 0, complete = 0, failed = 0, wait = FOLLOW_WAIT_MS;

		if (running_since >= 0) {
			wait = RUN_BATCH_GRACE_MS - (now_ms() - running_since);
			if (wait <= 0) {
				printf("==> job \"%s\": %lld allocation%s running\n", job_id,
				       (long long)running, running == 1 ? "" : "s");
				rc = 0;
				break;
			}
		}
		if (api_get_blocking(cmd, path, index, wait, &r) < 0)
			break;
		index = r.index;
		if (per_node)
			want = 0; /* counted below: the job's allocations of its version */
		json_array_foreach(r.body, i, a) {
			const char *id = js(a, "id"), *st = js(a, "client_status");
			char sid[16];
			if (strcmp(js(a, "desired_status"), "run"))
				continue;
			if (per_node && !per_node_counts(a, version, &want))
				continue;
			if (strcmp(js(json_object_get(seen, id), "s") , st)) {
				json_t *rec = json_pack("{s:s}", "s", st);
				const char *desc = js(a, "client_description");
				/* Piecewise: gcc with sanitizers misreads a
				 * longer format here (-Wformat-overflow). */
				fputs("    alloc ", stdout);
				fputs(short_id(id, sid), stdout);
				fputs(" on node ", stdout);
				fputs(js(a, "node_name"), stdout);
				fputs(": ", stdout);
				fputs(st, stdout);
				if (desc[0]) {
					fputs(": ", stdout);
					fputs(desc, stdout);
				}
				fputc('\n', stdout);
				if (!strcmp(st, "failed"))
					print_alloc_events(a);
				json_object_set_new(seen, id, rec);
			}
			if (per_node && ji(a, "job_version") != version)
				continue; /* an older one, still to be replaced */
			running += !strcmp(st, "running");
			complete += !strcmp(st, "complete");
			failed += !strcmp(st, "failed") || !strcmp(st, "lost");
		}
		httpc_response_release(&r);
		fflush(stdout);
		if (failed) {
			fprintf(stderr, "%s: %lld allocation%s of job \"%s\" failed (herd alloc status ID)\n",
				cmd, (long long)failed, failed == 1 ? "" : "s", job_id);
			break;
		}
		if (per_node && want == 0) {
			/* the evaluation placed what it could and failed nothing:
			 * no node is the job's now; one that joins will be */
			printf("==> job \"%s\": no eligible node (ready, eligible, matching the "
			       "job) right now\n", job_id);
			rc = 0;
			break;
		}
		if (complete + running < want)
			continue;
		if (batch && complete >= want) {
			printf("==> job \"%s\": complete\n", job_id);
			rc = 0;
			break;
		}
		if (!batch) {
			printf("==> job \"%s\": %lld allocation%s running\n", job_id,
			       (long long)running, running == 1 ? "" : "s");
			rc = 0;
			break;
		}
		if (running_since < 0)
			running_since = now_ms();
	}
	json_decref(seen);
	free(path);
	return rc;
}

/* Whether a group of job rolls out new versions (update { max_parallel > 0 }). */
static bool job_rolls(const struct job *job)
{
	for (size_t g = 0; g < job->ngroups; g++)
		if (job->groups[g].update && job->groups[g].update->max_parallel > 0 &&
		    !job->groups[g].gang)
			return true;
	return false;
}

/* Follows the evaluation, then the deployment of the job's version as it
 * is now: as deployment_follow (2: no deployment came, follow the
 * allocations instead). */
static int follow_rollout(const char *cmd, const char *eval_id, const struct job *job)
{
	json_t *ev = api_follow_eval(cmd, eval_id);
	char *path;
	struct httpc_response r;
	int64_t version;

	if (!ev)
		return 1;
	if (strcmp(js(ev, "status"), "complete") ||
	    json_object_size(json_object_get(ev, "failed_placements"))) {
		json_decref(ev);
		return 2; /* waiting or not placed: job_follow says why */
	}
	json_decref(ev);
	path = api_job_path(job->id, "", job->namespace);
	if (api_call(cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return 1;
	}
	free(path);
	version = ji(r.body, "version");
	httpc_response_release(&r);
	return deployment_follow(cmd, job->id, job->namespace, version);
}

int job_run_cmd(int argc, char **argv)
{
	bool detach = false, as_json = false, preserve_counts = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "detach", FLAG_BOOL, &detach, "return once the job is submitted" },
		{ "preserve-counts", FLAG_BOOL, &preserve_counts, "keep the counts the running job's "
		  "groups have now (herd job scale, the autoscaler) instead of the file's" },
		{ "json", FLAG_BOOL, &as_json, "print the server's answer as JSON (implies -detach)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; a namespace the file "
		  "names wins" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job run [options] FILE",
		"Submits a job file (HCL or JSON; - reads stdin) to $HERD_ADDR and follows it\n"
		"until every allocation runs (a batch job: until it completes, when it does\n"
		"so within a few seconds).  When the job cannot be placed, prints why per\n"
		"group and exits 1: the job stays pending and is placed when capacity\n"
		"appears.  A job held by its namespace's quota or waiting its turn in the\n"
		"fair queue is followed until it starts (the reason is printed; Ctrl-C\n"
		"leaves it queued).  Exits 1 when an allocation fails.  A service or system\n"
		"job with an update block rolls out a few allocations at a time: its\n"
		"deployment is followed until it ends (exits 1 when it failed); one with canaries\n"
		"(update { canary }) and no auto_promote is followed until its canaries\n"
		"are healthy, then waits for herd deployment promote.",
		flags,
	};
	char *pos[1], *path;
	struct job *job;
	json_t *body;
	struct httpc_response r;
	const char *eval_id;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc = 1;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing job file (a path, or - for stdin)");
	job = job_load_file(argv[0], pos[0]);
	if (!job)
		return 1;
	if ((rc = place_job(argv[0], job, ns_flag)) != 0) {
		job_free(job);
		return rc;
	}
	rc = 1;
	body = wrap_job(job);
	if (preserve_counts)
		json_object_set_new(body, "preserve_counts", json_true());
	path = api_ns_path("/v1/jobs", job->namespace);
	n = api_call(argv[0], "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (n < 0) {
		job_free(job);
		return 1;
	}
	if (as_json) {
		api_print_json(r.body);
		httpc_response_release(&r);
		job_free(job);
		return 0;
	}
	eval_id = js(r.body, "eval_id");
	if (!*eval_id) {
		printf("job \"%s\" unchanged: nothing to do\n", job->id);
		httpc_response_release(&r);
		job_free(job);
		return 0;
	}
	/* a parameterized job is not placed either: it waits for dispatches */
	if (job->parameterized) {
		printf("==> parameterized job \"%s\" registered in namespace %s\n"
		       "    it runs once per dispatch: herd job dispatch %s [PAYLOAD_FILE]\n",
		       job->id, job->namespace, job->id);
		httpc_response_release(&r);
		job_free(job);
		return 0;
	}
	/* a periodic job is not placed: there is nothing to follow */
	if (job->periodic) {
		job_run_periodic_note(job);
		httpc_response_release(&r);
		job_free(job);
		return 0;
	}
	printf("==> job \"%s\" submitted to namespace %s, evaluation %s\n", job->id,
	       job->namespace, eval_id);
	if (detach) {
		httpc_response_release(&r);
		job_free(job);
		return 0;
	}
	fflush(stdout);
	if (job_rolls(job) && strcmp(job->type, "sysbatch")) {
		/* a rolling update (a service or system job's): followed until
		 * its deployment ends */
		rc = follow_rollout(argv[0], eval_id, job);
		if (rc != 2) {
			httpc_response_release(&r);
			job_free(job);
			return rc;
		}
	}
	rc = job_follow(argv[0], eval_id, job->id, job->namespace,
			!strcmp(job->type, "batch") || !strcmp(job->type, "sysbatch"), total_count(job));
	httpc_response_release(&r);
	job_free(job);
	return rc;
}

int job_follow(const char *cmd, const char *eval_id, const char *job_id, const char *ns,
	       bool batch, int64_t want)
{
	json_t *ev = api_follow_eval(cmd, eval_id), *failed;

	if (!ev)
		return 1;
	printf("==> evaluation %s\n", js(ev, "status"));
	failed = json_object_get(ev, "failed_placements");
	if (json_array_size(json_object_get(ev, "waiting_for"))) {
		/* Waits for other jobs to end: that may take hours; not a
		 * failure, and nothing to follow yet. */
		printf("==> job \"%s\" waits: %s\n", job_id, js(ev, "status_description"));
		printf("==> it is placed once its dependencies hold (herd job status %s)\n", job_id);
		json_decref(ev);
		return 0;
	}
	if (!strcmp(js(ev, "status"), "complete") && *js(ev, "status_description")) {
		/* a dependency that can never hold stopped the job */
		printf("==> job \"%s\": %s\n", job_id, js(ev, "status_description"));
		json_decref(ev);
		return 1;
	}
	if (!strcmp(js(ev, "status"), "queued")) {
		/* Held by the quota or waiting its turn in the fair queue: not
		 * a failure, it starts by itself. */
		printf("==> job \"%s\" waits: %s\n", job_id, js(ev, "status_description"));
		printf("==> it starts by itself when that frees; following (Ctrl-C leaves it "
		       "queued)\n");
		fflush(stdout);
	} else if (json_object_size(failed)) {
		print_failed_placements(stdout, failed);
		printf("==> job \"%s\" stays pending: it is placed when capacity appears\n", job_id);
		json_decref(ev);
		return 1;
	}
	if (!strcmp(js(ev, "status"), "failed")) {
		fprintf(stderr, "%s: evaluation failed: %s\n", cmd, js(ev, "status_description"));
		json_decref(ev);
		return 1;
	}
	json_decref(ev);
	return follow_allocs(cmd, job_id, ns, batch, want);
}

int job_plan_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print the plan as JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; a namespace the file "
		  "names wins" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job plan [options] FILE",
		"Shows what submitting the job file would do, without changing anything:\n"
		"allocations created, replaced or stopped, where each would land, and why\n"
		"what cannot be placed is not.  Exits 0 when everything fits, 1 when not.",
		flags,
	};
	char *pos[1];
	struct job *job;
	json_t *body, *changes, *failed, *pl;
	struct httpc_response r;
	char *path;
	size_t i;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing job file (a path, or - for stdin)");
	job = job_load_file(argv[0], pos[0]);
	if (!job)
		return 1;
	if ((rc = place_job(argv[0], job, ns_flag)) != 0) {
		job_free(job);
		return rc;
	}
	body = wrap_job(job);
	path = api_job_path(job->id, "/plan", job->namespace);
	rc = api_call(argv[0], "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc < 0) {
		job_free(job);
		return 1;
	}
	failed = json_object_get(r.body, "failed_placements");
	if (as_json) {
		api_print_json(r.body);
	} else {
		struct table t;
		static const char *const heads[] = { "GROUP", "NODE", "DEVICES", "SPREAD" };
		/* the score's spread part, when the job spreads */
		bool spread = false;
		json_array_foreach(json_object_get(r.body, "placements"), i, pl)
			spread = spread || json_object_get(pl, "spread_score");
		changes = json_object_get(r.body, "changes");
		printf("job \"%s\": %lld to create, %lld to update, %lld to destroy, %lld unchanged\n",
		       job->id, (long long)ji(changes, "create"), (long long)ji(changes, "update"),
		       (long long)ji(changes, "destroy"), (long long)ji(changes, "ignore"));
		table_init(&t, spread ? 4 : 3, heads);
		json_array_foreach(json_object_get(r.body, "placements"), i, pl) {
			struct strbuf d = STRBUF_INIT;
			size_t k;
			json_t *dv;
			json_array_foreach(json_object_get(pl, "devices"), k, dv) {
				const char *id = json_is_string(dv) ? json_string_value(dv) : js(dv, "id");
				strbuf_addf(&d, "%s%s", k ? "," : "", id);
			}
			table_add(&t, js(pl, "task_group"));
			table_add(&t, *js(pl, "node_name") ? js(pl, "node_name") : js(pl, "node_id"));
			table_add(&t, d.len ? d.buf : "-");
			if (spread) {
				char sc[32];
				snprintf(sc, sizeof(sc), "%+.1f",
					 json_number_value(json_object_get(pl, "spread_score")));
				table_add(&t, sc);
			}
			strbuf_release(&d);
		}
		if (json_array_size(json_object_get(r.body, "placements")))
			table_print(&t, stdout, "  ");
		table_release(&t);
		if (json_object_size(failed))
			print_failed_placements(stdout, failed);
	}
	rc = json_object_size(failed) ? 1 : 0;
	httpc_response_release(&r);
	job_free(job);
	return rc;
}

/* The list; with_ns (-namespace *) adds the namespace of each job. */
static void print_jobs(const json_t *jobs, bool with_ns)
{
	static const char *const heads[] = { "NAMESPACE", "ID", "TYPE", "PRIORITY", "STATUS",
					     "SUBMITTED", "PARENT" };
	struct table t;
	size_t i;
	json_t *j;
	char buf[64];
	bool parents = false;

	if (!json_array_size(jobs)) {
		printf("no jobs\n");
		return;
	}
	/* a PARENT column only where a periodic job's children are listed */
	json_array_foreach(jobs, i, j)
		parents = parents || *js(j, "parent_id");
	table_init(&t, (with_ns ? 6 : 5) + parents, with_ns ? heads : heads + 1);
	json_array_foreach(jobs, i, j) {
		if (with_ns)
			table_add(&t, js(j, "namespace"));
		table_add(&t, js(j, "id"));
		table_add(&t, jb(j, "periodic")        ? "batch/periodic"
			      : jb(j, "parameterized") ? "batch/parameterized"
						       : js(j, "type"));
		table_addf(&t, "%lld", (long long)ji(j, "priority"));
		table_add(&t, jb(j, "stop") && strcmp(js(j, "status"), "dead") ? "stopping"
								     : js(j, "status"));
		table_add(&t, format_ago(ji(j, "submit_time"), buf, sizeof(buf)));
		if (parents)
			table_add(&t, *js(j, "parent_id") ? js(j, "parent_id") : "-");
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* The allocations table shared with node status. */
void print_allocs_table(const json_t *allocs, bool show_node);
void print_allocs_table(const json_t *allocs, bool show_node)
{
	static const char *const heads[] = { "ID", "NODE", "GROUP", "VERSION", "DESIRED",
					     "STATUS", "DEVICES", "CREATED" };
	static const char *const heads_nonode[] = { "ID", "JOB", "GROUP", "VERSION", "DESIRED",
						    "STATUS", "DEVICES", "CREATED" };
	struct table t;
	size_t i;
	json_t *a;

	table_init(&t, 8, show_node ? heads : heads_nonode);
	json_array_foreach(allocs, i, a) {
		char sid[16], buf[64];
		size_t ndev = json_array_size(json_object_get(json_object_get(a, "resources"),
							      "devices"));
		table_add(&t, short_id(js(a, "id"), sid));
		table_add(&t, show_node ? js(a, "node_name") : js(a, "job_id"));
		if (json_object_get(a, "gang")) /* a gang member: its rank of the size */
			table_addf(&t, "%s (gang %lld/%lld)", js(a, "task_group"),
				   (long long)ji(json_object_get(a, "gang"), "rank"),
				   (long long)ji(json_object_get(a, "gang"), "size"));
		else if (jb(json_object_get(a, "deployment_status"), "canary"))
			table_addf(&t, "%s (canary)", js(a, "task_group"));
		else
			table_add(&t, js(a, "task_group"));
		table_addf(&t, "%lld", (long long)ji(a, "job_version"));
		table_add(&t, js(a, "desired_status"));
		table_add(&t, js(a, "client_status"));
		table_addf(&t, "%zu", ndev);
		table_add(&t, format_ago(ji(a, "create_time"), buf, sizeof(buf)));
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* The job's latest evaluation (new reference), or NULL (none, or the
 * list could not be read: the caller shows the job without it). */
static json_t *latest_eval(const char *cmd, const char *id, const char *ns)
{
	char *epath = api_job_path(id, "/evaluations", ns);
	struct httpc_response re;
	json_t *best = NULL, *ev;
	size_t i;

	if (api_call(cmd, "GET", epath, NULL, &re) == 0) {
		json_array_foreach(re.body, i, ev)
			if (!best || ji(ev, "create_index") > ji(best, "create_index"))
				best = ev;
		json_incref(best);
		httpc_response_release(&re);
	}
	free(epath);
	return best;
}

/* The job's dependencies and where each stands (GET /v1/job/:id's
 * "dependencies"); nothing when it names none. */
static void print_dependencies(const json_t *deps)
{
	static const char *const heads[] = { "JOB", "CONDITION", "JOB STATUS", "STATE" };
	struct table t;
	size_t i;
	json_t *d;

	if (!json_array_size(deps))
		return;
	printf("\nDependencies\n");
	table_init(&t, 4, heads);
	json_array_foreach(deps, i, d) {
		table_add(&t, js(d, "job"));
		table_add(&t, js(d, "condition"));
		table_add(&t, js(d, "job_status"));
		table_add(&t, js(d, "state"));
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* The job's latest deployment (a rolling update), when it has one. */
static void print_latest_deployment(const char *cmd, const char *id, const char *ns)
{
	char *path = api_job_path(id, "/deployment", ns);
	struct httpc_response r;

	if (api_call(cmd, "GET", path, NULL, &r) == 0) {
		if (json_is_object(r.body))
			deployment_print(r.body, "Latest Deployment");
		httpc_response_release(&r);
	}
	free(path);
}

/* The actions the job's tasks define (herd job action runs them), when
 * there are any. */
static void print_actions(const json_t *job)
{
	static const char *const heads[] = { "GROUP", "TASK", "ACTION", "COMMAND" };
	const json_t *g, *t, *a, *arg;
	struct table tb;
	size_t i, j, k, l, n = 0;

	table_init(&tb, 4, heads);
	json_array_foreach(json_object_get(job, "groups"), i, g)
		json_array_foreach(json_object_get(g, "tasks"), j, t)
			json_array_foreach(json_object_get(t, "actions"), k, a) {
				struct strbuf line = STRBUF_INIT;
				strbuf_adds(&line, js(a, "command"));
				json_array_foreach(json_object_get(a, "args"), l, arg)
					strbuf_addf(&line, " %s", json_string_value(arg) ?: "");
				table_add(&tb, js(g, "name"));
				table_add(&tb, js(t, "name"));
				table_add(&tb, js(a, "name"));
				table_add(&tb, line.buf);
				strbuf_release(&line);
				n++;
			}
	if (n) {
		printf("\nActions\n");
		table_print(&tb, stdout, "");
	}
	table_release(&tb);
}

static int show_job(const char *cmd, const char *id, const char *ns_arg, bool as_json)
{
	char *ns = api_job_namespace(cmd, id, ns_arg);
	char *path = NULL, *apath = NULL;
	struct httpc_response r, ra;
	int rc = 1;
	const char *g;
	json_t *s, *ev = NULL;
	char buf[64];

	if (!ns)
		return 1;
	path = api_job_path(id, "", ns);
	apath = api_job_path(id, "/allocations", ns);
	if (api_call(cmd, "GET", path, NULL, &r) < 0)
		goto out;
	if (api_call(cmd, "GET", apath, NULL, &ra) < 0) {
		httpc_response_release(&r);
		goto out;
	}
	rc = 0;
	/* Why it waits: a latest evaluation that is queued (quota, fair
	 * queue) or blocked (no capacity) says so. */
	if (strcmp(js(r.body, "status"), "dead"))
		ev = latest_eval(cmd, id, ns);
	if (ev && strcmp(js(ev, "status"), "queued") && strcmp(js(ev, "status"), "blocked")) {
		json_decref(ev);
		ev = NULL;
	}
	if (as_json) {
		json_t *o = json_pack("{s:O,s:O}", "job", r.body, "allocations", ra.body);
		if (ev)
			json_object_set(o, "waiting", ev);
		api_print_json(o);
		json_decref(o);
	} else {
		struct table t;
		static const char *const heads[] = { "GROUP", "PENDING", "RUNNING", "COMPLETE",
						     "FAILED", "LOST", "UNKNOWN" };
		json_t *sum = json_object();
		size_t i;
		json_t *a, *grp;
		printf("%-12s %s\n%-12s %s\n%-12s %s\n%-12s %s\n%-12s %lld\n%-12s %lld\n"
		       "%-12s %s%s\n%-12s %s\n",
		       "ID", js(r.body, "id"), "Name", js(r.body, "name"), "Namespace",
		       js(r.body, "namespace"), "Type",
		       json_is_object(json_object_get(r.body, "parameterized")) ? "batch/parameterized"
		       : json_is_object(json_object_get(r.body, "periodic"))    ? "batch/periodic"
										: js(r.body, "type"),
		       "Priority", (long long)ji(r.body, "priority"), "Version",
		       (long long)ji(r.body, "version"), "Status", js(r.body, "status"),
		       jb(r.body, "stop") ? " (stopped)" : "", "Submitted",
		       format_ago(ji(r.body, "submit_time"), buf, sizeof(buf)));
		if (ev && (!strcmp(js(ev, "status"), "queued") ||
			   json_array_size(json_object_get(ev, "waiting_for"))))
			printf("%-12s %s\n", "Waiting", js(ev, "status_description"));
		if (*js(r.body, "stop_reason"))
			printf("%-12s %s\n", "Stopped", js(r.body, "stop_reason"));
		print_dependencies(json_object_get(r.body, "dependencies"));
		if (*js(r.body, "parent_id"))
			printf("%-12s %s\n", "Parent", js(r.body, "parent_id"));
		if (json_is_integer(json_object_get(r.body, "payload_size")))
			printf("%-12s %lld bytes\n", "Payload", (long long)ji(r.body, "payload_size"));
		/* a parent places nothing itself: its children are what runs */
		if (json_is_object(json_object_get(r.body, "periodic"))) {
			job_status_periodic(cmd, r.body);
			json_decref(sum);
			goto shown;
		}
		if (json_is_object(json_object_get(r.body, "parameterized"))) {
			job_status_parameterized(cmd, r.body);
			json_decref(sum);
			goto shown;
		}
		/* Summary per group, counted from the allocations. */
		json_array_foreach(json_object_get(r.body, "groups"), i, grp)
			json_object_set_new(sum, js(grp, "name"),
					    json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}", "pending", 0,
						      "running", 0, "complete", 0, "failed", 0,
						      "lost", 0, "unknown", 0));
		json_array_foreach(ra.body, i, a) {
			json_t *c = json_object_get(sum, js(a, "task_group"));
			const char *st = js(a, "client_status");
			if (c && json_object_get(c, st))
				json_object_set_new(c, st, json_integer(ji(c, st) + 1));
		}
		printf("\nSummary\n");
		table_init(&t, 7, heads);
		json_object_foreach(sum, g, s) {
			table_add(&t, g);
			table_addf(&t, "%lld", (long long)ji(s, "pending"));
			table_addf(&t, "%lld", (long long)ji(s, "running"));
			table_addf(&t, "%lld", (long long)ji(s, "complete"));
			table_addf(&t, "%lld", (long long)ji(s, "failed"));
			table_addf(&t, "%lld", (long long)ji(s, "lost"));
			table_addf(&t, "%lld", (long long)ji(s, "unknown"));
		}
		table_print(&t, stdout, "");
		table_release(&t);
		json_decref(sum);
		job_status_scaling(cmd, r.body, js(r.body, "namespace"));
		print_actions(r.body);
		print_latest_deployment(cmd, id, ns);
		printf("\nAllocations\n");
		if (json_array_size(ra.body))
			print_allocs_table(ra.body, true);
		else
			printf("none\n");
		if (ev && !strcmp(js(ev, "status"), "blocked") &&
		    !json_array_size(json_object_get(ev, "waiting_for")) &&
		    json_object_size(json_object_get(ev, "failed_placements"))) {
			/* Why not placed: the engine's explanation per group. */
			printf("\nPlacement failures\n");
			print_failed_placements(stdout, json_object_get(ev, "failed_placements"));
		}
	}
shown:
	httpc_response_release(&r);
	httpc_response_release(&ra);
out:
	json_decref(ev);
	free(path);
	free(apath);
	free(ns);
	return rc;
}

int job_status_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL, *ns;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job status [options] [ID]",
		"Without ID lists the jobs of the namespace (-namespace *: of every namespace\n"
		"the token may read); with ID shows the job, a summary per group, its\n"
		"allocations and, while it waits, why: the quota or fair-queue turn that\n"
		"holds it (\"Waiting\"), or why it is not placed.",
		flags,
	};
	char *pos[1], *path;
	struct httpc_response r;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	ns = cli_namespace(ns_flag);
	if (n == 1)
		return show_job(argv[0], pos[0], ns, as_json);
	path = api_ns_path("/v1/jobs", ns);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (as_json)
		api_print_json(r.body);
	else
		print_jobs(r.body, !strcmp(ns, "*"));
	httpc_response_release(&r);
	return 0;
}

int job_stop_cmd(int argc, char **argv)
{
	bool purge = false, no_delay = false;
	const char *ns_flag = NULL, *ns;
	const struct flag flags[] = {
		{ "purge", FLAG_BOOL, &purge, "also remove the job and its history" },
		{ "no-shutdown-delay", FLAG_BOOL, &no_delay,
		  "skip the group and task shutdown_delay: kill at once after the services go" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job stop [options] ID",
		"Stops every allocation of the job (the tasks get their kill_signal, then\n"
		"SIGKILL after kill_timeout; first each shutdown_delay, unless\n"
		"-no-shutdown-delay).  With -purge the job is removed as well.",
		flags,
	};
	char *pos[1];
	struct httpc_response r;
	char *path, *p;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing job id");
	if ((rc = api_write_namespace(argv[0], ns_flag, &ns)) != 0)
		return rc;
	p = api_job_path(pos[0],
			 purge ? (no_delay ? "?purge=true&no_shutdown_delay=true" : "?purge=true")
			       : (no_delay ? "?no_shutdown_delay=true" : ""),
			 ns);
	path = p;
	rc = api_call(argv[0], "DELETE", path, NULL, &r);
	free(p);
	if (rc < 0)
		return 1;
	printf("job \"%s\" %s%s%s\n", pos[0], purge ? "stopped and purged" : "stopped",
	       *js(r.body, "eval_id") ? ", evaluation " : "", js(r.body, "eval_id"));
	httpc_response_release(&r);
	return 0;
}

int job_inspect_remote(const char *cmd, const char *id, const char *ns_arg)
{
	char *ns = api_job_namespace(cmd, id, ns_arg);
	char *path;
	struct httpc_response r;
	int rc;

	if (!ns)
		return 1;
	path = api_job_path(id, "", ns);
	rc = api_call(cmd, "GET", path, NULL, &r);
	free(path);
	free(ns);
	if (rc < 0)
		return 1;
	api_print_json(r.body);
	httpc_response_release(&r);
	return 0;
}
