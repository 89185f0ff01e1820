/* herd deployment list | status | fail | promote: the rolling updates of
 * service jobs (GET /v1/deployments, GET /v1/deployment/:id, POST
 * /v1/deployment/:id/fail and /promote; docs/api.md, "Deployments"), and
 * herd job promote (the job's latest deployment, promoted as herd
 * deployment promote does).  Also what herd job status shows as "Latest Deployment" and how herd job run follows a
 * rolling update (deployment_print, deployment_follow). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/xalloc.h"

/* A deadline as how long from now: "in 9m58s", "passed"; "-" for 0. */
static void add_deadline_cell(struct table *t, int64_t at)
{
	struct timespec now;
	int64_t d;

	if (!at) {
		table_add(t, "-");
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	d = at / 1000000000LL - (int64_t)now.tv_sec;
	if (d < 0)
		table_add(t, "passed");
	else if (d < 3600)
		table_addf(t, "in %lldm%llds", (long long)(d / 60), (long long)(d % 60));
	else
		table_addf(t, "in %lldh%lldm", (long long)(d / 3600), (long long)(d % 3600 / 60));
}

/* Whether a group of deployment d has canaries. */
static bool has_canaries(const json_t *d)
{
	const char *g;
	json_t *x;
	json_object_foreach(json_object_get(d, "groups"), g, x)
		if (ji(x, "desired_canaries") > 0)
			return true;
	return false;
}

/* Whether d runs and some group's canaries wait for a promotion that
 * auto_promote will not give; *healthy: and they are all healthy. */
static bool needs_promotion(const json_t *d, bool *healthy)
{
	bool needs = false;
	const char *g;
	json_t *x;

	*healthy = true;
	if (strcmp(js(d, "status"), "running"))
		return false;
	json_object_foreach(json_object_get(d, "groups"), g, x) {
		if (ji(x, "desired_canaries") <= 0 || jb(x, "promoted"))
			continue;
		needs = needs || !jb(x, "auto_promote");
		*healthy = *healthy && ji(x, "healthy_canaries") >= ji(x, "desired_canaries");
	}
	return needs;
}

void deployment_print(const json_t *d, const char *title)
{
	static const char *const heads[] = { "GROUP", "AUTO REVERT", "DESIRED", "PLACED",
					     "HEALTHY", "UNHEALTHY", "PROGRESS DEADLINE" };
	static const char *const heads_canary[] = { "GROUP", "AUTO REVERT", "PROMOTED", "DESIRED",
						    "CANARIES", "PLACED", "HEALTHY", "UNHEALTHY",
						    "PROGRESS DEADLINE" };
	bool canaries = has_canaries(d);
	const char *g;
	json_t *x;
	struct table t;

	printf("\n%s\n", title);
	printf("%-12s %s\n%-12s %lld\n%-12s %s\n%-12s %s\n", "ID", js(d, "id"), "Job Version",
	       (long long)ji(d, "job_version"), "Status", js(d, "status"), "Description",
	       js(d, "status_description"));
	printf("\nDeployed\n");
	if (canaries)
		table_init(&t, 9, heads_canary);
	else
		table_init(&t, 7, heads);
	json_object_foreach(json_object_get(d, "groups"), g, x) {
		table_add(&t, g);
		table_add(&t, jb(x, "auto_revert") ? "true" : "false");
		if (canaries && ji(x, "desired_canaries") > 0)
			table_add(&t, jb(x, "promoted") ? "true" : jb(x, "auto_promote") ? "false (auto)"
										: "false");
		else if (canaries)
			table_add(&t, "-");
		table_addf(&t, "%lld", (long long)ji(x, "desired_total"));
		if (canaries) /* placed of desired: "1/2" */
			table_addf(&t, "%lld/%lld", (long long)ji(x, "placed_canaries"),
				   (long long)ji(x, "desired_canaries"));
		table_addf(&t, "%lld", (long long)ji(x, "placed_allocs"));
		table_addf(&t, "%lld", (long long)ji(x, "healthy_allocs"));
		table_addf(&t, "%lld", (long long)ji(x, "unhealthy_allocs"));
		add_deadline_cell(&t, !strcmp(js(d, "status"), "running") ? ji(x, "require_progress_by")
									  : 0);
	}
	table_print(&t, stdout, "");
	table_release(&t);
}

/* One line of progress: "healthy 1/3" per group. */
static void print_progress(const json_t *d)
{
	const char *g;
	json_t *x;
	char sid[16];

	fputs("    deployment ", stdout);
	fputs(short_id(js(d, "id"), sid), stdout);
	fputs(": ", stdout);
	fputs(js(d, "status"), stdout);
	json_object_foreach(json_object_get(d, "groups"), g, x) {
		printf("; %s: %lld/%lld healthy, %lld placed, %lld unhealthy", g,
		       (long long)ji(x, "healthy_allocs"), (long long)ji(x, "desired_total"),
		       (long long)ji(x, "placed_allocs"), (long long)ji(x, "unhealthy_allocs"));
		if (ji(x, "desired_canaries") > 0)
			printf(", canaries %lld/%lld healthy%s", (long long)ji(x, "healthy_canaries"),
			       (long long)ji(x, "desired_canaries"),
			       jb(x, "promoted") ? ", promoted" : "");
	}
	fputc('\n', stdout);
}

int deployment_follow(const char *cmd, const char *job_id, const char *ns, int64_t version)
{
	char *path = api_job_path(job_id, "/deployment", ns);
	uint64_t index = 0;
	char *last = NULL;
	int rc = 1;

	for (;;) {
		struct httpc_response r;
		char *now;
		json_t *cmpv;
		if (api_get_blocking(cmd, path, index, 30000, &r) < 0)
			break;
		index = r.index;
		if (!json_is_object(r.body) || ji(r.body, "job_version") < version) {
			/* the evaluation made none (nothing to roll out): its
			 * final record and the deployment commit together */
			httpc_response_release(&r);
			rc = 2;
			break;
		}
		/* printed again when anything but its modify_time changed */
		cmpv = json_deep_copy(r.body);
		json_object_del(cmpv, "modify_time");
		now = json_dumps(cmpv, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(cmpv);
		if (!last)
			printf("==> evaluation complete\n==> deployment %s of version %lld: following it "
			       "(Ctrl-C leaves it rolling)\n", js(r.body, "id"), (long long)version);
		if (!last || strcmp(last, now))
			print_progress(r.body);
		free(last);
		last = now;
		if (ji(r.body, "job_version") > version) {
			printf("==> job \"%s\": a newer version (%lld) is deploying\n", job_id,
			       (long long)ji(r.body, "job_version"));
			httpc_response_release(&r);
			break;
		}
		if (strcmp(js(r.body, "status"), "running")) {
			printf("==> deployment %s: %s\n", js(r.body, "status"),
			       js(r.body, "status_description"));
			rc = strcmp(js(r.body, "status"), "successful") ? 1 : 0;
			httpc_response_release(&r);
			break;
		}
		bool healthy;
		if (needs_promotion(r.body, &healthy) && healthy) {
			/* a person decides now: following would wait for ever */
			printf("==> deployment %s: its canaries are healthy and it waits for promotion;\n"
			       "    promote it with: herd deployment promote %s\n"
			       "    (or fail it with: herd deployment fail %s)\n",
			       js(r.body, "id"), js(r.body, "id"), js(r.body, "id"));
			rc = 0;
			httpc_response_release(&r);
			break;
		}
		fflush(stdout);
		httpc_response_release(&r);
	}
	fflush(stdout);
	free(last);
	free(path);
	return rc;
}

static int deployment_list_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd deployment list [options]",
		"Lists the deployments (rolling updates of service jobs), newest first.",
		flags,
	};
	static const char *const heads[] = { "ID", "NAMESPACE", "JOB", "VERSION", "STATUS",
					     "DESCRIPTION" };
	struct httpc_response r;
	struct table t;
	const json_t *x;
	size_t i;
	char *path, sid[16];
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	path = api_ns_path("/v1/deployments", cli_namespace(ns_flag));
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else if (!json_array_size(r.body)) {
		printf("No deployments\n");
	} else {
		table_init(&t, 6, heads);
		json_array_foreach(r.body, i, x) {
			table_add(&t, short_id(js(x, "id"), sid));
			table_add(&t, js(x, "namespace"));
			table_add(&t, js(x, "job_id"));
			table_addf(&t, "%lld", (long long)ji(x, "job_version"));
			table_add(&t, js(x, "status"));
			table_add(&t, js(x, "status_description"));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}

/* The full id of deployment prefix (among the namespace's), or NULL after
 * saying why. */
static char *resolve(const char *cmd, const char *ns_flag, const char *prefix)
{
	char *list = api_ns_path("/v1/deployments", cli_namespace(ns_flag));
	char *id = api_resolve_prefix(cmd, list, "deployment", prefix);
	free(list);
	return id;
}

/* What status and fail share: their flags (as_json: NULL for a command
 * without -json), the deployment id (a unique prefix) resolved, and one
 * call to /v1/deployment/<id><suffix>.  Returns 0 with *id and *r the
 * caller's, or the command's exit status (having said why). */
static int deployment_call(int argc, char **argv, const char *usage, const char *about,
			   bool *as_json, const char *method, const char *suffix, char **id,
			   struct httpc_response *r)
{
	const char *ns_flag = NULL;
	struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ "json", FLAG_BOOL, as_json, "print JSON" },
		{ NULL, 0, NULL, NULL },
	};
	if (!as_json) /* no -json: the list ends before it */
		flags[1].name = NULL;
	const struct command_help help = { usage, about, flags };
	char *pos[1], *path;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing deployment id");
	*id = resolve(argv[0], ns_flag, pos[0]);
	if (!*id)
		return 1;
	path = xasprintf("/v1/deployment/%s%s", *id, suffix);
	rc = api_call(argv[0], method, path, NULL, r);
	free(path);
	if (rc < 0) {
		free(*id);
		*id = NULL;
		return 1;
	}
	return 0;
}

static int deployment_status_cmd(int argc, char **argv)
{
	bool as_json = false;
	struct httpc_response r;
	char *id = NULL;
	int rc = deployment_call(argc, argv, "herd deployment status [options] ID",
				 "Shows one deployment (ID or a unique prefix): its status and, per group,\n"
				 "how many allocations are desired, placed, healthy and unhealthy; with\n"
				 "canaries, how many are placed of those desired and whether the group is\n"
				 "promoted.",
				 &as_json, "GET", "", &id, &r);

	if (!id)
		return rc;
	if (as_json) {
		api_print_json(r.body);
	} else {
		printf("%-12s %s\n%-12s %s\n", "Job", js(r.body, "job_id"), "Namespace",
		       js(r.body, "namespace"));
		deployment_print(r.body, "Deployment");
	}
	httpc_response_release(&r);
	free(id);
	return 0;
}

static int deployment_fail_cmd(int argc, char **argv)
{
	struct httpc_response r;
	char *id = NULL;
	int rc = deployment_call(argc, argv, "herd deployment fail [options] ID",
				 "Fails a running deployment: no more allocations are replaced, its canaries\n"
				 "stop, and with auto_revert the job's latest stable version is registered\n"
				 "again.",
				 NULL, "POST", "/fail", &id, &r);

	if (!id)
		return rc;
	printf("deployment %s failed", id);
	if (json_is_integer(json_object_get(r.body, "revert_to")))
		printf("; job reverted to version %lld", (long long)ji(r.body, "revert_to"));
	printf("\n");
	httpc_response_release(&r);
	free(id);
	return 0;
}

/* The body of a promotion of groups ("a,b"; NULL: all). */
static json_t *promote_body(const char *groups)
{
	json_t *list;
	const char *p = groups;

	if (!groups)
		return json_pack("{s:b}", "all", 1);
	list = json_array();
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n)
			json_array_append_new(list, json_stringn(p, n));
		p += n + (p[n] == ',');
	}
	return json_pack("{s:o}", "groups", list);
}

/* The flags both promote commands take: -group into *groups, -namespace
 * into *ns_flag (ns_help: what it means there). */
#define PROMOTE_FLAGS(groups, ns_flag, ns_help)                                               \
	{ "group", FLAG_STRING, groups, "promote only these groups (G or G1,G2); default: all" }, \
	{ "namespace", FLAG_STRING, ns_flag, ns_help }

/* What herd deployment promote and herd job promote say of the rules. */
#define PROMOTE_RULES                                                                  \
	"Once every canary of the groups promoted is healthy, the rest of their\n"     \
	"allocations are replaced max_parallel at a time, the canaries counting as\n" \
	"replaced ones.  Refused while a canary is not healthy (the answer says how\n" \
	"many), and for a deployment with no canaries or not running."

/* The positional argument of a promote command (what names the deployment
 * or job), after checking -group (*groups, which help's flags set); NULL
 * after a usage error or -h (*rc: the exit status). */
static const char *promote_args(int argc, char **argv, const struct command_help *help,
				const char *const *groups, const char *missing, int *rc)
{
	char *pos[1];
	int n = flags_parse_anywhere(help, argc, argv, pos, 1);

	*rc = 0;
	if (n < 0)
		*rc = n == -1 ? 0 : EXIT_USAGE;
	else if (n < 1)
		*rc = usage_error(argv[0], "%s", missing);
	else if (*groups && !**groups)
		*rc = usage_error(argv[0], "-group needs a group name");
	else
		return pos[0];
	return NULL;
}

/* Promotes groups ("a,b"; NULL: all) of deployment id (a full id) and
 * says which were: the command's exit status. */
static int promote(const char *cmd, const char *id, const char *groups)
{
	char *path = xasprintf("/v1/deployment/%s/promote", id);
	json_t *body = promote_body(groups), *x;
	struct httpc_response r;
	const char *g;
	int rc = api_call(cmd, "POST", path, body, &r);

	json_decref(body);
	free(path);
	if (rc < 0)
		return 1;
	printf("deployment %s promoted:", id);
	json_object_foreach(json_object_get(r.body, "promoted"), g, x)
		printf(" %s", g);
	printf("\n");
	httpc_response_release(&r);
	return 0;
}

static int deployment_promote_cmd(int argc, char **argv)
{
	const char *ns_flag = NULL, *groups = NULL, *arg;
	const struct flag flags[] = {
		PROMOTE_FLAGS(&groups, &ns_flag, CLI_NAMESPACE_HELP "; * for all"),
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd deployment promote [options] ID",
		"Promotes the canaries of a running deployment (ID or a unique prefix).\n"
		PROMOTE_RULES,
		flags,
	};
	char *id;
	int rc;

	arg = promote_args(argc, argv, &help, &groups, "missing deployment id", &rc);
	if (!arg)
		return rc;
	id = resolve(argv[0], ns_flag, arg);
	if (!id)
		return 1;
	rc = promote(argv[0], id, groups);
	free(id);
	return rc;
}

int job_promote_cmd(int argc, char **argv)
{
	const char *ns_flag = NULL, *groups = NULL, *ns, *job;
	const struct flag flags[] = {
		PROMOTE_FLAGS(&groups, &ns_flag, CLI_NAMESPACE_HELP),
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job promote [options] JOB",
		"Promotes the canaries of job JOB's latest deployment, as herd deployment\n"
		"promote does with the deployment's ID.\n" PROMOTE_RULES,
		flags,
	};
	struct httpc_response r;
	char *path, *id;
	int rc;

	job = promote_args(argc, argv, &help, &groups, "missing job id", &rc);
	if (!job)
		return rc;
	if ((rc = api_write_namespace(argv[0], ns_flag, &ns)) != 0)
		return rc;
	path = api_job_path(job, "/deployment", ns);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (!json_is_object(r.body)) {
		fprintf(stderr, "%s: job \"%s\" has no deployment to promote\n", argv[0], job);
		httpc_response_release(&r);
		return 1;
	}
	id = xstrdup(js(r.body, "id"));
	httpc_response_release(&r);
	rc = promote(argv[0], id, groups);
	free(id);
	return rc;
}

int cmd_deployment(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "list", deployment_list_cmd, "list deployments, newest first" },
		{ "status", deployment_status_cmd, "show one deployment's progress per group" },
		{ "fail", deployment_fail_cmd, "fail a running deployment (auto_revert reverts)" },
		{ "promote", deployment_promote_cmd, "promote a deployment's healthy canaries" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
