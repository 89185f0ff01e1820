/* herd job periodic force, and what job run and job status say of a
 * periodic job (docs/api.md, "Periodic jobs"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "spec/cron.h"
#include "spec/job.h"

/* "2026-11-22 03:00:00 UTC (in 8h45m)" for unix seconds t. */
static const char *format_launch(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	int64_t d = t - (int64_t)time(NULL);
	struct tm tm;
	char when[40];

	gmtime_r(&tt, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (d < 0)
		d = 0;
	if (d < 3600)
		snprintf(buf, size, "%s (in %lldm%llds)", when, (long long)(d / 60),
			 (long long)(d % 60));
	else if (d < 86400)
		snprintf(buf, size, "%s (in %lldh%lldm)", when, (long long)(d / 3600),
			 (long long)(d % 3600 / 60));
	else
		snprintf(buf, size, "%s (in %lldd%lldh)", when, (long long)(d / 86400),
			 (long long)(d % 86400 / 3600));
	return buf;
}

void job_run_periodic_note(const struct job *job)
{
	const struct job_periodic *p = job->periodic;
	int64_t first = -1, now = (int64_t)time(NULL);
	char buf[96];

	/* the expressions passed validation: each parses */
	for (size_t i = 0; i < p->crons.n; i++) {
		struct cron c;
		char err[256];
		int64_t n;
		if (cron_parse(p->crons.v[i], &c, err, sizeof(err)) < 0)
			continue;
		n = cron_next(&c, now, !strcmp(p->time_zone, "Local"));
		if (n >= 0 && (first < 0 || n < first))
			first = n;
	}
	printf("==> periodic job \"%s\" registered in namespace %s\n", job->id, job->namespace);
	if (!p->enabled)
		printf("    not enabled: it launches only when forced (herd job periodic force %s)\n",
		       job->id);
	else if (first < 0)
		printf("    its expressions never fire: it launches only when forced\n");
	else
		printf("    first launch: %s\n", format_launch(first, buf, sizeof(buf)));
}

/* Newest first. */
static int cmp_submit_desc(const void *x, const void *y)
{
	int64_t a = ji(*(json_t *const *)x, "submit_time"), b = ji(*(json_t *const *)y, "submit_time");
	return (a < b) - (a > b);
}

#define CHILDREN_SHOWN 5

void job_print_children(const char *cmd, const char *parent, const char *ns)
{
	static const char *const heads[] = { "ID", "STATUS", "SUBMITTED" };
	char *path = api_ns_path("/v1/jobs", ns), buf[64];
	struct httpc_response r;
	json_t **kids;
	size_t i, n = 0;
	json_t *j;
	struct table t;

	if (api_call(cmd, "GET", path, NULL, &r) < 0) {
		free(path);
		return;
	}
	free(path);
	kids = xcalloc(json_array_size(r.body) + 1, sizeof(*kids));
	json_array_foreach(r.body, i, j)
		if (!strcmp(js(j, "parent_id"), parent))
			kids[n++] = j;
	qsort(kids, n, sizeof(*kids), cmp_submit_desc);
	printf("\nChildren (%zu", n);
	if (n > CHILDREN_SHOWN)
		printf(", latest %d shown", CHILDREN_SHOWN);
	printf(")\n");
	if (!n) {
		printf("none\n");
	} else {
		table_init(&t, 3, heads);
		for (i = 0; i < n && i < CHILDREN_SHOWN; i++) {
			table_add(&t, js(kids[i], "id"));
			table_add(&t, js(kids[i], "status"));
			table_add(&t, format_ago(ji(kids[i], "submit_time"), buf, sizeof(buf)));
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	free(kids);
	httpc_response_release(&r);
}

void job_status_periodic(const char *cmd, const json_t *job)
{
	const json_t *p = json_object_get(job, "periodic"), *c;
	const json_t *next = json_object_get(p, "next_launch");
	struct strbuf sb = STRBUF_INIT;
	char buf[96];
	size_t i;

	json_array_foreach(json_object_get(p, "crons"), i, c)
		strbuf_addf(&sb, "%s\"%s\"", i ? ", " : "", json_string_value(c));
	printf("%-12s %s (%s)%s%s\n", "Periodic", sb.buf, js(p, "time_zone"),
	       jb(p, "prohibit_overlap") ? ", prohibit overlap" : "",
	       jb(p, "enabled") ? "" : ", not enabled");
	strbuf_release(&sb);
	printf("%-12s %s\n", "Next Launch",
	       json_is_integer(next) ? format_launch(json_integer_value(next), buf, sizeof(buf))
				     : "none");
	if (ji(p, "last_skipped") > 0) {
		time_t tt = (time_t)ji(p, "last_skipped");
		struct tm tm;
		gmtime_r(&tt, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
		printf("%-12s %s (a child was still running)\n", "Last Skipped", buf);
	}
	job_print_children(cmd, js(job, "id"), js(job, "namespace"));
}

static int job_periodic_force_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL, *ns;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print the server's answer as JSON" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job periodic force [options] ID",
		"Launches a child of periodic job ID now, whatever its schedule says (and\n"
		"even when it is not enabled).  A job with prohibit_overlap refuses while\n"
		"an earlier child is not dead.  Prints the child's id and evaluation;\n"
		"herd job status CHILD follows it.",
		flags,
	};
	char *pos[1], *path;
	struct httpc_response r;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing job id");
	if ((rc = api_write_namespace(argv[0], ns_flag, &ns)) != 0)
		return rc;
	path = api_job_path(pos[0], "/periodic/force", ns);
	rc = api_call(argv[0], "POST", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (as_json)
		api_print_json(r.body);
	else if (!*js(r.body, "eval_id"))
		printf("==> job \"%s\" was already launched this second: nothing to do\n",
		       js(r.body, "job_id"));
	else
		printf("==> launched job \"%s\", evaluation %s\n", js(r.body, "job_id"),
		       js(r.body, "eval_id"));
	httpc_response_release(&r);
	return 0;
}

int job_periodic_cmd(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "force", job_periodic_force_cmd, "launch a child of a periodic job now" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
