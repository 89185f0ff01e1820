/* herd job history | revert | scale: a job's versions on a server.
 *
 * history reads GET /v1/job/:id/versions and shows them newest first; -p
 * adds what changed from the version before, a diff of the canonical job
 * JSON by path.  revert and scale ask the server for a new version
 * (POST /v1/job/:id/revert, /scale) and then follow it as `job run` does. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "spec/job_system.h"

/* ---- diff of two canonical jobs --------------------------------------- */

/* The server's fields of a stored job: they differ between any two
 * versions and say nothing about the spec. */
static bool server_field(const char *key)
{
	static const char *const fields[] = { "version", "stop", "status", "submit_time",
					      "create_index", "modify_index", "job_modify_index",
					      "parent_id", "payload", "deployment", "stable", NULL };
	for (int i = 0; fields[i]; i++)
		if (!strcmp(fields[i], key))
			return true;
	return false;
}

/* Appends one change {"path", "change": added|removed|changed, "old"?,
 * "new"?} to out. */
static void add_change(json_t *out, const char *path, const json_t *a, const json_t *b)
{
	json_t *c = json_pack("{s:s, s:s}", "path", path, "change",
			      !a ? "added" : !b ? "removed" : "changed");
	if (a)
		json_object_set(c, "old", (json_t *)a);
	if (b)
		json_object_set(c, "new", (json_t *)b);
	json_array_append_new(out, c);
}

static void diff_value(const json_t *a, const json_t *b, struct strbuf *path, json_t *out,
		       bool top);

/* path.key (or key at the top) for the length of one call. */
static void diff_member(const json_t *a, const json_t *b, const char *key, struct strbuf *path,
			json_t *out)
{
	size_t len = path->len;
	strbuf_addf(path, "%s%s", len ? "." : "", key);
	diff_value(a, b, path, out, false);
	strbuf_setlen(path, len);
}

/* The changes from a to b (either may be NULL: absent) under path, into
 * out.  Objects are compared key by key (a's keys in their order, then
 * those only b has), arrays element by element; anything else, or values
 * of different types, as one change.  top skips the server's fields. */
static void diff_value(const json_t *a, const json_t *b, struct strbuf *path, json_t *out,
		       bool top)
{
	const char *k;
	json_t *v;

	if (a && b && json_is_object(a) && json_is_object(b)) {
		json_object_foreach((json_t *)a, k, v)
			if (!top || !server_field(k))
				diff_member(v, json_object_get(b, k), k, path, out);
		json_object_foreach((json_t *)b, k, v)
			if ((!top || !server_field(k)) && !json_object_get(a, k))
				diff_member(NULL, v, k, path, out);
	} else if (a && b && json_is_array(a) && json_is_array(b)) {
		size_t na = json_array_size(a), nb = json_array_size(b);
		for (size_t i = 0; i < na || i < nb; i++) {
			size_t len = path->len;
			strbuf_addf(path, "[%zu]", i);
			diff_value(json_array_get(a, i), json_array_get(b, i), path, out, false);
			strbuf_setlen(path, len);
		}
	} else if (!a || !b || !json_equal((json_t *)a, (json_t *)b)) {
		if (a || b)
			add_change(out, path->buf ? path->buf : "", a, b);
	}
}

/* The changes from version a to version b (a new array). */
static json_t *job_diff(const json_t *a, const json_t *b)
{
	struct strbuf path = STRBUF_INIT;
	json_t *out = json_array();
	diff_value(a, b, &path, out, true);
	strbuf_release(&path);
	return out;
}

static void print_value(const char *label, const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	printf("%s%s", label, s ? s : "?");
	free(s);
}

/* "  ~ groups[0].count: 1 -> 3", "  + meta.team: \"a\"", "  - ...". */
static void print_diff(const json_t *diff)
{
	size_t i;
	json_t *c;

	if (!json_array_size(diff)) {
		printf("  (no change)\n");
		return;
	}
	json_array_foreach(diff, i, c) {
		const char *ch = js(c, "change");
		printf("  %c %s: ", !strcmp(ch, "added") ? '+' : !strcmp(ch, "removed") ? '-' : '~',
		       js(c, "path"));
		if (json_object_get(c, "old"))
			print_value("", json_object_get(c, "old"));
		if (json_object_get(c, "old") && json_object_get(c, "new"))
			printf(" -> ");
		if (json_object_get(c, "new"))
			print_value("", json_object_get(c, "new"));
		putchar('\n');
	}
}

/* ---- history ------------------------------------------------------------ */

static int cmp_version_desc(const void *x, const void *y)
{
	int64_t a = ji(*(json_t *const *)x, "version"), b = ji(*(json_t *const *)y, "version");
	return a < b ? 1 : a > b ? -1 : 0;
}

/* The versions newest first (a new array); with diffs, each gets "diff":
 * its changes from the version before it (none for the first). */
static json_t *newest_first(const json_t *versions, bool diffs)
{
	size_t n = json_array_size(versions);
	json_t **v = xcalloc(n ? n : 1, sizeof(*v)), *out = json_array();

	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(versions, i);
	qsort(v, n, sizeof(*v), cmp_version_desc);
	for (size_t i = 0; i < n; i++) {
		json_t *x = json_copy(v[i]);
		if (diffs && i + 1 < n)
			json_object_set_new(x, "diff", job_diff(v[i + 1], v[i]));
		json_array_append_new(out, x);
	}
	free(v);
	return out;
}

static void print_history(const json_t *versions, bool diffs)
{
	size_t i;
	json_t *x;
	char buf[64];

	json_array_foreach(versions, i, x) {
		if (i)
			putchar('\n');
		printf("%-12s %lld%s\n", "Version", (long long)ji(x, "version"),
		       i == 0 ? " (current)" : "");
		printf("%-12s %s\n", "Submitted", format_ago(ji(x, "submit_time"), buf, sizeof(buf)));
		if (diffs && json_object_get(x, "diff")) {
			printf("Diff\n");
			print_diff(json_object_get(x, "diff"));
		}
	}
}

int job_history_cmd(int argc, char **argv)
{
	bool as_json = false, diffs = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "json", FLAG_BOOL, &as_json, "print the versions as JSON (newest first)" },
		{ "p", FLAG_BOOL, &diffs, "show what changed from the version before each" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP " (* finds the job)" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job history [options] ID",
		"Lists every stored version of a job, newest first, with when it was\n"
		"submitted.  With -p each version shows what changed from the one before it:\n"
		"fields of the canonical job by path, ~ changed, + added, - removed.\n"
		"herd job revert ID VERSION registers one of them again.",
		flags,
	};
	char *pos[1], *ns, *path;
	struct httpc_response r;
	json_t *list;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing job id");
	ns = api_job_namespace(argv[0], pos[0], cli_namespace(ns_flag));
	if (!ns)
		return 1;
	path = api_job_path(pos[0], "/versions", ns);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(path);
	free(ns);
	if (rc < 0)
		return 1;
	list = newest_first(r.body, diffs);
	httpc_response_release(&r);
	if (as_json)
		api_print_json(list);
	else
		print_history(list, diffs);
	json_decref(list);
	return 0;
}

/* ---- revert and scale --------------------------------------------------- */

static int64_t total_count(const json_t *job)
{
	int64_t n = 0;
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		n += ji(g, "count");
	return n;
}

/* The job as stored now (new reference), or NULL after printing why. */
static json_t *get_job(const char *cmd, const char *id, const char *ns)
{
	char *path = api_job_path(id, "", ns);
	struct httpc_response r;
	json_t *job = NULL;
	if (api_call(cmd, "GET", path, NULL, &r) == 0) {
		job = json_incref(r.body);
		httpc_response_release(&r);
	}
	free(path);
	return job;
}

/* What revert and scale do once the server answered a new version: say
 * so, and follow its evaluation and allocations unless detach.  what is
 * the line's middle ("reverted to version 0", "group g scaled to 3"). */
static int follow_change(const char *cmd, const json_t *answer, const char *id, const char *ns,
			 const char *what, bool detach)
{
	const char *eval_id = js(answer, "eval_id");
	json_t *job = get_job(cmd, id, ns);
	int rc;

	if (!job)
		return 1;
	printf("==> job \"%s\" %s: version %lld, evaluation %s\n", id, what,
	       (long long)ji(job, "version"), eval_id);
	if (detach) {
		json_decref(job);
		return 0;
	}
	fflush(stdout);
	rc = job_follow(cmd, eval_id, id, ns,
			!strcmp(js(job, "type"), "batch") || !strcmp(js(job, "type"), "sysbatch"),
			job_type_is_system(js(job, "type")) ? JOB_FOLLOW_PER_NODE : total_count(job));
	json_decref(job);
	return rc;
}

int job_revert_cmd(int argc, char **argv)
{
	bool detach = false;
	const char *ns_flag = NULL, *ns;
	const struct flag flags[] = {
		{ "detach", FLAG_BOOL, &detach, "return once the version is registered" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job revert [options] ID VERSION",
		"Registers version VERSION of a job again (herd job history lists them): the\n"
		"job's spec as it was, as a new version, whose allocations replace those of\n"
		"the current one.  Then follows the job as herd job run does, unless\n"
		"-detach.  Reverting to the spec that is current changes nothing.",
		flags,
	};
	char *pos[2], *path, what[64];
	struct httpc_response r;
	json_t *body;
	int64_t version;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 2), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 2)
		return usage_error(argv[0], n ? "missing version" : "missing job id and version");
	if (parse_int64(pos[1], 0, INT64_MAX, &version, NULL) < 0)
		return usage_error(argv[0], "version \"%s\" is not a version number (0, 1, ...)",
				   pos[1]);
	if ((rc = api_write_namespace(argv[0], ns_flag, &ns)) != 0)
		return rc;
	body = json_pack("{s:I}", "version", (json_int_t)version);
	path = api_job_path(pos[0], "/revert", ns);
	rc = api_call(argv[0], "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc < 0)
		return 1;
	if (!*js(r.body, "eval_id")) {
		printf("job \"%s\" already runs the spec of version %lld: nothing to do\n", pos[0],
		       (long long)version);
		httpc_response_release(&r);
		return 0;
	}
	snprintf(what, sizeof(what), "reverted to version %lld", (long long)version);
	rc = follow_change(argv[0], r.body, pos[0], ns, what, detach);
	httpc_response_release(&r);
	return rc;
}

int job_scale_cmd(int argc, char **argv)
{
	bool detach = false;
	const char *ns_flag = NULL, *ns, *group = NULL;
	const struct flag flags[] = {
		{ "detach", FLAG_BOOL, &detach, "return once the new count is registered" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd job scale [options] ID [GROUP] COUNT",
		"Sets the count of one group of a job (GROUP may be left out when the job\n"
		"has one group): a new version of the job with only that count changed.\n"
		"Then follows the job as herd job run does, unless -detach.  The count must\n"
		"be within what a job file may say (0 to 100000, and the group's scaling\n"
		"min..max).",
		flags,
	};
	char *pos[3], *path, *what;
	struct httpc_response r;
	json_t *body;
	int64_t count;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 3), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 2)
		return usage_error(argv[0], n ? "missing count" : "missing job id and count");
	if (n == 3)
		group = pos[1];
	/* the range is the server's (the job spec's) to check */
	if (parse_int64(pos[n - 1], INT64_MIN, INT64_MAX, &count, NULL) < 0)
		return usage_error(argv[0], "count \"%s\" is not a number", pos[n - 1]);
	if ((rc = api_write_namespace(argv[0], ns_flag, &ns)) != 0)
		return rc;
	body = json_pack("{s:I}", "count", (json_int_t)count);
	if (group)
		json_object_set_new(body, "group", json_string(group));
	path = api_job_path(pos[0], "/scale", ns);
	rc = api_call(argv[0], "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc < 0)
		return 1;
	if (!*js(r.body, "eval_id")) {
		printf("job \"%s\"%s%s%s already has count %lld: nothing to do\n", pos[0],
		       group ? " group \"" : "", group ? group : "", group ? "\"" : "",
		       (long long)count);
		httpc_response_release(&r);
		return 0;
	}
	what = group ? xasprintf("group \"%s\" scaled to %lld", group, (long long)count)
		     : xasprintf("scaled to %lld", (long long)count);
	rc = follow_change(argv[0], r.body, pos[0], ns, what, detach);
	free(what);
	httpc_response_release(&r);
	return rc;
}
