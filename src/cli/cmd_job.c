/* herd job validate|inspect: reading job files locally (docs/jobspec.md);
 * run, plan, status, stop and inspect ID talk to a server (cmd_job_remote.c).
 * Both load the file through spec_load, print every diagnostic as
 * "file:line:col: message" (sorted) on stderr, and exit 1 when the file has
 * any error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "spec/spec.h"

int cli_read_file(const char *path, size_t limit, struct strbuf *out)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;

	if (fd < 0)
		return -errno;
	while (out->len <= limit) {
		size_t want = limit + 1 - out->len < 65536 ? limit + 1 - out->len : 65536;
		ssize_t n;
		strbuf_grow(out, want);
		n = read(fd, out->buf + out->len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;
			if (fd != STDIN_FILENO)
				close(fd);
			return e;
		}
		if (n == 0)
			break;
		strbuf_setlen(out, out->len + (size_t)n);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	return 0;
}

/* Loads a job file; prints its diagnostics.  NULL when it has errors
 * (cli-api.h). */
struct job *job_load_file(const char *cmd, const char *path)
{
	struct strbuf text = STRBUF_INIT;
	struct diag_list diags;
	const char *shown = strcmp(path, "-") ? path : "<stdin>";
	struct job *job;
	/* one byte past the parser's limit: it reports an oversized file in
	 * its own words */
	int rc = cli_read_file(path, HCL_MAX_INPUT, &text);

	if (rc < 0) {
		fprintf(stderr, "%s: cannot read %s: %s\n", cmd, shown, strerror(-rc));
		strbuf_release(&text);
		return NULL;
	}
	diag_list_init(&diags);
	job = spec_load(text.buf, text.len, &diags);
	diag_sort(&diags);
	diag_print(&diags, shown, stderr);
	if (!job && diags.errors)
		fprintf(stderr, "%s: %zu error%s\n", shown, diags.errors, diags.errors == 1 ? "" : "s");
	diag_list_release(&diags);
	strbuf_release(&text);
	return job;
}

/* Flags may follow the file too ("herd job inspect job.hcl -json"). */
static int parse_args(const struct command_help *help, int argc, char **argv, const char **file)
{
	int i = flags_parse(help, argc, argv);

	if (i < 0)
		return i == -1 ? 0 : EXIT_USAGE;
	if (i >= argc)
		return usage_error(argv[0], "missing job file (a path, or - for stdin)");
	*file = argv[i];
	if (i + 1 < argc) {
		char *rest[argc];
		int n = 0;
		rest[n++] = argv[0];
		for (int j = i + 1; j < argc; j++)
			rest[n++] = argv[j];
		int k = flags_parse(help, n, rest);
		if (k < 0)
			return k == -1 ? 0 : EXIT_USAGE;
		if (k < n)
			return usage_error(argv[0], "unexpected argument '%s'", rest[k]);
	}
	return -1;
}

static int job_validate_cmd(int argc, char **argv)
{
	static const struct command_help help = {
		"herd job validate [options] FILE",
		"Checks a job file (HCL or JSON; - reads stdin) and reports every error as\n"
		"file:line:col: message.  Exits 0 when the job is valid, 1 when not.",
		NULL,
	};
	const char *file = NULL;
	struct job *job;
	size_t tasks = 0;
	int rc = parse_args(&help, argc, argv, &file);

	if (rc >= 0)
		return rc;
	job = job_load_file(argv[0], file);
	if (!job)
		return 1;
	for (size_t i = 0; i < job->ngroups; i++)
		tasks += job->groups[i].ntasks;
	printf("job \"%s\" is valid: %zu group%s, %zu task%s\n", job->id, job->ngroups,
	       job->ngroups == 1 ? "" : "s", tasks, tasks == 1 ? "" : "s");
	job_free(job);
	return 0;
}

static void print_rules(const char *indent, const char *what, const struct job_rules *r)
{
	for (size_t i = 0; i < r->n; i++)
		printf("%s%s %s %s %s\n", indent, what, r->v[i].attribute ? r->v[i].attribute : "",
		       r->v[i].operator, r->v[i].value ? r->v[i].value : "");
}

static void print_summary(const struct job *job)
{
	char buf[64];

	printf("job %s (%s, priority %lld, namespace %s)\n", job->id, job->type,
	       (long long)job->priority, job->namespace);
	if (job->periodic) {
		const struct job_periodic *p = job->periodic;
		printf("  periodic");
		for (size_t i = 0; i < p->crons.n; i++)
			printf("%s\"%s\"", i ? ", " : " ", p->crons.v[i]);
		printf(" (%s)%s%s\n", p->time_zone, p->prohibit_overlap ? ", prohibit overlap" : "",
		       p->enabled ? "" : ", not enabled");
	}
	if (job->parameterized) {
		const struct job_parameterized *p = job->parameterized;
		printf("  parameterized: payload %s", p->payload);
		for (size_t i = 0; i < p->meta_required.n; i++)
			printf("%s%s", i ? ", " : "; meta required ", p->meta_required.v[i]);
		for (size_t i = 0; i < p->meta_optional.n; i++)
			printf("%s%s", i ? ", " : "; meta optional ", p->meta_optional.v[i]);
		printf("\n");
	}
	print_rules("  ", "constraint", &job->constraints);
	for (size_t g = 0; g < job->ngroups; g++) {
		const struct job_group *gr = &job->groups[g];
		printf("  group %s x%lld\n", gr->name, (long long)gr->count);
		for (size_t p = 0; p < gr->network.nports; p++)
			printf("    port %s static %lld to %lld\n", gr->network.ports[p].label,
			       (long long)gr->network.ports[p].static_port,
			       (long long)gr->network.ports[p].to);
		for (size_t t = 0; t < gr->ntasks; t++) {
			const struct job_task *tk = &gr->tasks[t];
			const struct job_resources *r = &tk->resources;
			printf("    task %s: driver %s%s%s, cpu %lld MHz, memory %lld MiB, "
			       "kill_timeout %s\n", tk->name, tk->driver,
			       tk->lifecycle ? ", hook " : "", tk->lifecycle ? tk->lifecycle->hook : "",
			       (long long)r->cpu, (long long)r->memory,
			       format_duration(tk->kill_timeout, buf, sizeof(buf)));
			for (size_t d = 0; d < r->ndevices; d++) {
				const struct job_device *dv = &r->devices[d];
				printf("      device %s x%lld", dv->name, (long long)dv->count);
				if (dv->compute)
					printf(", compute %d.%d%%", dv->compute / 10, dv->compute % 10);
				if (dv->memory)
					printf(", memory %lld MiB", (long long)dv->memory);
				printf("\n");
				print_rules("        ", "constraint", &dv->constraints);
				print_rules("        ", "affinity", &dv->affinities);
			}
		}
	}
}

static int job_inspect_cmd(int argc, char **argv)
{
	bool as_json = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print the canonical JSON form, every default filled" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP " (a job ID's; * finds it)" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job inspect [options] FILE|ID",
		"Loads a job file (HCL or JSON; - reads stdin) and prints the job with every\n"
		"default filled: a summary, or with -json the canonical JSON form that\n"
		"the API takes.  An argument that is not an existing file is a job id:\n"
		"the job as the server stores it is printed as JSON ($HERD_ADDR).",
		flags,
	};
	const char *file = NULL;
	struct job *job;
	int rc = parse_args(&help, argc, argv, &file);

	if (rc >= 0)
		return rc;
	if (strcmp(file, "-") && access(file, F_OK) != 0)
		return job_inspect_remote(argv[0], file, cli_namespace(ns_flag));
	job = job_load_file(argv[0], file);
	if (!job)
		return 1;
	if (as_json) {
		json_t *j = job_to_json(job);
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(j);
	} else {
		print_summary(job);
	}
	job_free(job);
	return 0;
}

int cmd_job(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "validate", job_validate_cmd, "check a job file and report every error" },
		{ "run", job_run_cmd, "submit a job and follow it until it runs" },
		{ "plan", job_plan_cmd, "show what submitting a job would do (dry run)" },
		{ "status", job_status_cmd, "list jobs, or show one job and its allocations" },
		{ "stop", job_stop_cmd, "stop a job (and purge it with -purge)" },
		{ "inspect", job_inspect_cmd, "print a job file with every default filled, or a job" },
		{ "history", job_history_cmd, "list a job's versions and what changed between them" },
		{ "revert", job_revert_cmd, "register an earlier version of a job again" },
		{ "promote", job_promote_cmd, "promote the canaries of a job's latest deployment" },
		{ "scale", job_scale_cmd, "change the count of a job's group" },
		{ "restart", job_restart_cmd, "restart a job's allocations a batch at a time" },
		{ "periodic", job_periodic_cmd, "launch a periodic job's child now (force)" },
		{ "dispatch", job_dispatch_cmd, "run a parameterized job with a payload and meta" },
		{ "action", job_action_cmd, "run an action the job defines in one of its allocations" },
		{ NULL, NULL, NULL },
	};
	return dispatch(argv[0], cmds, argc, argv);
}
