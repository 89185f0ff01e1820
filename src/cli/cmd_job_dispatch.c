/* herd job dispatch: a parameterized job's child, with a payload and meta
 * (docs/api.md, "Parameterized jobs"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/base64.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "spec/job_system.h"

/* The server refuses more (16 KiB decoded); cli_read_file reads one byte
 * past it, so that the server's answer, not a truncation here, says so. */
#define PAYLOAD_MAX (16 * 1024)

/* Takes every "-meta k=v" (also --meta, -meta=k=v) out of argv into meta;
 * the flags parser knows no repeatable flag.  Returns the new argc, or -1
 * after a usage error (printed). */
static int take_meta(int argc, char **argv, json_t *meta)
{
	int out = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *kv = NULL, *eq;
		if (!strcmp(a, "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-meta") || !strcmp(a, "--meta")) {
			if (i + 1 >= argc)
				return usage_error(argv[0], "-meta needs KEY=VALUE"), -1;
			kv = argv[++i];
		} else if (!strncmp(a, "-meta=", 6) || !strncmp(a, "--meta=", 7)) {
			kv = strchr(a, '=') + 1;
		} else {
			argv[out++] = argv[i];
			continue;
		}
		eq = strchr(kv, '=');
		if (!eq || eq == kv)
			return usage_error(argv[0], "-meta \"%s\" is not KEY=VALUE", kv), -1;
		char *key = xstrndup(kv, (size_t)(eq - kv));
		json_object_set_new(meta, key, json_string(eq + 1));
		free(key);
	}
	return out;
}

/* The sum of the counts of a stored job's groups (what job_follow waits
 * for). */
static int64_t job_total_count(const json_t *job)
{
	size_t i;
	json_t *g;
	int64_t n = 0;
	json_array_foreach(json_object_get(job, "groups"), i, g)
		n += json_is_integer(json_object_get(g, "count")) ? ji(g, "count") : 1;
	return n;
}

int job_dispatch_cmd(int argc, char **argv)
{
	bool detach = false, as_json = false;
	const char *ns_flag = NULL, *ns, *meta_shown = NULL;
	const struct flag flags[] = {
		{ "detach", FLAG_BOOL, &detach, "print the child's id and evaluation; do not follow it" },
		{ "json", FLAG_BOOL, &as_json, "print the server's answer as JSON (implies -detach)" },
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP },
		{ "meta", FLAG_STRING, &meta_shown, "KEY=VALUE: a meta value of the child (repeatable)" },
		{ 0 },
	};
	const struct command_help help = {
		"herd job dispatch [options] [-meta KEY=VALUE ...] ID [PAYLOAD_FILE | -]",
		"Dispatches parameterized job ID: registers a child job with the payload\n"
		"read from PAYLOAD_FILE (- reads stdin; at most 16 KiB) and the -meta values\n"
		"merged into its meta, then follows the child as herd job run does (until it\n"
		"completes) unless -detach.  Exits 1 when the server refuses the dispatch\n"
		"(a payload or meta key the job requires is missing, one it forbids is\n"
		"given) or the child fails.",
		flags,
	};
	json_t *meta = json_object(), *body, *child;
	char *pos[2], *path;
	struct httpc_response r, rj;
	struct strbuf payload = STRBUF_INIT;
	int n, rc = 1;
	char *child_id = NULL, *eval_id = NULL;

	if ((argc = take_meta(argc, argv, meta)) < 0) {
		json_decref(meta);
		return EXIT_USAGE;
	}
	n = flags_parse_anywhere(&help, argc, argv, pos, 2);
	if (n < 0 || n < 1) {
		json_decref(meta);
		if (n < 0)
			return n == -1 ? 0 : EXIT_USAGE;
		return usage_error(argv[0], "missing job id");
	}
	if ((rc = api_write_namespace(argv[0], ns_flag, &ns)) != 0) {
		json_decref(meta);
		return rc;
	}
	body = json_pack("{s:o}", "meta", meta);
	if (n > 1) {
		int e = cli_read_file(pos[1], PAYLOAD_MAX, &payload);
		if (e < 0) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], strcmp(pos[1], "-") ? pos[1] : "<stdin>",
				strerror(-e));
			json_decref(body);
			strbuf_release(&payload);
			return 1;
		}
		char *b64 = base64_encode(payload.buf, payload.len);
		json_object_set_new(body, "payload", json_string(b64));
		free(b64);
		strbuf_release(&payload);
	}
	path = api_job_path(pos[0], "/dispatch", ns);
	n = api_call(argv[0], "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (n < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
		httpc_response_release(&r);
		return 0;
	}
	child_id = xstrdup(js(r.body, "dispatched_job_id"));
	eval_id = xstrdup(js(r.body, "eval_id"));
	httpc_response_release(&r);
	printf("==> dispatched job \"%s\" in namespace %s, evaluation %s\n", child_id, ns, eval_id);
	rc = 0;
	if (!detach) {
		fflush(stdout);
		/* the child's groups say how many allocations to wait for */
		path = api_job_path(child_id, "", ns);
		rc = api_call(argv[0], "GET", path, NULL, &rj) < 0 ? 1 : 0;
		free(path);
		if (rc == 0) {
			child = rj.body;
			rc = job_follow(argv[0], eval_id, child_id, ns, true,
					job_type_is_system(js(child, "type")) ? JOB_FOLLOW_PER_NODE
									      : job_total_count(child));
			httpc_response_release(&rj);
		}
	}
	free(child_id);
	free(eval_id);
	return rc;
}

/* A string array of p as "a, b", or "none". */
static void print_keys(const char *head, const json_t *list)
{
	size_t i;
	json_t *x;

	printf("%-12s", head);
	if (!json_array_size(list))
		printf(" none");
	json_array_foreach(list, i, x)
		printf("%s%s", i ? ", " : " ", json_string_value(x));
	printf("\n");
}

void job_status_parameterized(const char *cmd, const json_t *job)
{
	const json_t *p = json_object_get(job, "parameterized");

	printf("%-12s %s\n", "Payload", js(p, "payload"));
	print_keys("Meta (req.)", json_object_get(p, "meta_required"));
	print_keys("Meta (opt.)", json_object_get(p, "meta_optional"));
	job_print_children(cmd, js(job, "id"), js(job, "namespace"));
}
