/* herd quota apply|list|status|inspect|delete: GPU quotas (docs/teams.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "cli/teams_cli.h"
#include "common/diag.h"
#include "common/httpc.h"
#include "common/xalloc.h"
#include "server/teams.h"

#define TEAMS_MAX_FILE (8u << 20)

static char *read_file(const char *cmd, const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t got = 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "%s: %s: %s\n", cmd, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (st.st_size > (off_t)TEAMS_MAX_FILE) {
		fprintf(stderr, "%s: %s: larger than %u bytes\n", cmd, path, TEAMS_MAX_FILE);
		close(fd);
		return NULL;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

static bool is_json_file(const char *path, const char *text)
{
	size_t n = strlen(path);
	while (*text == ' ' || *text == '\n' || *text == '\t' || *text == '\r')
		text++;
	return (n > 5 && !strcmp(path + n - 5, ".json")) || *text == '{';
}

json_t *teams_load_file(const char *cmd, const char *path,
			json_t *(*from_hcl)(const char *text, size_t len, struct diag_list *dl))
{
	struct diag_list dl;
	size_t len = 0;
	char *text = read_file(cmd, path, &len);
	json_t *doc;

	if (!text)
		return NULL;
	diag_list_init(&dl);
	if (is_json_file(path, text)) {
		json_error_t je;
		doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
		if (!doc)
			diag_error(&dl, je.line, je.column, "%s", je.text);
	} else {
		doc = from_hcl(text, len, &dl);
	}
	free(text);
	if (!doc)
		diag_print(&dl, path, stderr);
	diag_list_release(&dl);
	return doc;
}

static int quota_apply(int argc, char **argv)
{
	const struct command_help help = {
		"herd quota apply FILE",
		"Creates or updates the quota specification in FILE (HCL, or JSON).  Attach it to a "
		"namespace with herd namespace apply NAME -quota QUOTA.", NULL,
	};
	char *pos[1], *name;
	json_t *spec;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one quota file");
	spec = teams_load_file(argv[0], pos[0], quota_spec_from_hcl);
	if (!spec)
		return 1;
	/* a JSON file may wrap the spec as {"quota": {...}} */
	if (json_is_object(json_object_get(spec, "quota")))
		json_object_update(spec, json_object_get(spec, "quota")), json_object_del(spec, "quota");
	name = xstrdup(js(spec, "name"));
	rc = api_apply(argv[0], "/v1/quotas", json_pack("{s:o}", "quota", spec), "quota", name);
	free(name);
	return rc;
}

/* "4" or "cpu 2500 MHz, memory 1000 MiB, nvidia/gpu 4" for a spec. */
static void limits_text(const json_t *q, struct table *t)
{
	int64_t cpu, mem, m;
	char buf[512] = "", num[32];
	size_t off = 0;
	quota_cpu_mem_limit(q, &cpu, &mem);
	if (cpu)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "cpu %lld, ", (long long)cpu);
	if (mem && off < sizeof(buf))
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "memory %lld MiB, ", (long long)mem);
	for (size_t i = 0; i < quota_device_limits(q) && off < sizeof(buf); i++) {
		const char *name = quota_device_limit(q, i, &m);
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s %s, ", name,
					gpu_milli_format(m, num, sizeof(num)));
	}
	if (off >= 2 && off < sizeof(buf))
		buf[off - 2] = '\0';
	table_add(t, *buf ? buf : "-");
}

static void quota_row(struct table *t, const json_t *x)
{
	double bl = json_number_value(json_object_get(x, "borrow_limit"));
	table_add(t, js(x, "name"));
	limits_text(x, t);
	if (!jb(x, "borrow"))
		table_add(t, "no");
	else if (bl > 0)
		table_addf(t, "up to %g GPUs", bl);
	else
		table_add(t, "yes");
	table_add(t, js(x, "description"));
}

static int quota_list(int argc, char **argv)
{
	static const char *const heads[] = { "NAME", "LIMITS", "BORROW", "DESCRIPTION" };
	return api_list_cmd(argc, argv, "herd quota list [-json]", "Lists the quota specifications.",
			    "/v1/quotas", 4, heads, quota_row);
}

/* One quota by name: GET (suffix "" or "/status"). */
static int quota_one(int argc, char **argv, const char *suffix, const char *usage, const char *summary)
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { 0 } };
	const struct command_help help = { usage, summary, flags };
	struct httpc_response r;
	char *pos[1], *name, *path;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;
	json_t *x, *d;
	size_t i;
	const char *k;
	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one quota name");
	name = api_name_path("/v1/quota", pos[0]);
	path = xasprintf("%s%s", name, suffix);
	rc = api_call(argv[0], "GET", path, NULL, &r);
	free(name);
	free(path);
	if (rc < 0)
		return 1;
	if (as_json || !*suffix) {
		api_print_json(r.body);
	} else {
		static const char *const heads[] = { "NAMESPACE", "RESOURCE", "USED", "LIMIT" };
		struct table t;
		const json_t *q = json_object_get(r.body, "quota");
		printf("quota %s%s%s\n", js(q, "name"), *js(q, "description") ? ": " : "", js(q, "description"));
		if (json_object_get(q, "idle_gpu")) /* docs/teams.md, "Idle GPUs" */
			printf("idle GPUs: %s after %s below %lld%% utilization\n",
			       js(json_object_get(q, "idle_gpu"), "action"),
			       js(json_object_get(q, "idle_gpu"), "after"),
			       (long long)ji(json_object_get(q, "idle_gpu"), "utilization_below"));
		if (!json_array_size(json_object_get(r.body, "namespaces")))
			printf("no namespace uses this quota (herd namespace apply NAME -quota %s)\n", js(q, "name"));
		table_init(&t, 4, heads);
		json_array_foreach(json_object_get(r.body, "namespaces"), i, x) {
			const char *res[] = { "cpu", "memory" };
			for (int k2 = 0; k2 < 2; k2++) {
				const json_t *u = json_object_get(x, res[k2]);
				if (!ji(u, "limit"))
					continue;
				table_add(&t, js(x, "namespace"));
				table_add(&t, res[k2]);
				table_addf(&t, "%lld", (long long)ji(u, "used"));
				table_addf(&t, "%lld", (long long)ji(u, "limit"));
			}
			json_object_foreach(json_object_get(x, "devices"), k, d) {
				table_add(&t, js(x, "namespace"));
				table_add(&t, k);
				table_add(&t, js(d, "used"));
				table_add(&t, js(d, "limit"));
			}
		}
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}

static int quota_status(int argc, char **argv)
{
	return quota_one(argc, argv, "/status", "herd quota status [-json] NAME",
			 "Shows what each namespace with the quota uses, against its limits.");
}

static int quota_inspect(int argc, char **argv)
{
	return quota_one(argc, argv, "", "herd quota inspect NAME", "Prints the quota specification as JSON.");
}

static int quota_delete(int argc, char **argv)
{
	static const struct command_help help = {
		"herd quota delete NAME", "Deletes a quota specification no namespace uses.", NULL,
	};
	return api_delete_cmd(argc, argv, &help, "/v1/quota", "quota", "quota name");
}

int cmd_quota(int argc, char **argv)
{
	static const struct subcommand cmds[] = {
		{ "apply", quota_apply, "create or update a quota from an HCL file" },
		{ "list", quota_list, "list quota specifications" },
		{ "status", quota_status, "used and limit per resource" },
		{ "inspect", quota_inspect, "print a quota specification" },
		{ "delete", quota_delete, "delete a quota specification" },
		{ NULL, NULL, NULL },
	};
	return dispatch("herd quota", cmds, argc, argv);
}
