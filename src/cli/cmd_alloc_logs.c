/* herd alloc logs [-f] [-stderr] [-tail] [-n N] ALLOC [TASK]
 *
 * Finds the node that runs the allocation (allocation -> node ->
 * http_addr, through the server) and streams the task's log from that
 * node's client API (GET /v1/client/fs/logs/:alloc, chunked), straight to
 * stdout as it arrives.  -tail prints the last N lines (default 10) first;
 * with -f it then follows from the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/tls.h"
#include "common/xalloc.h"

#define TAIL_WINDOW (1 << 20)   /* bytes read back to find the last N lines */

/* Where a log's bytes go: into buf (to find the last lines), else to
 * stdout as they come. */
static size_t to_sink(const char *p, size_t len, void *arg)
{
	struct strbuf *buf = arg;

	if (buf) {
		strbuf_add(buf, p, len);
		return len;
	}
	if (fwrite(p, 1, len, stdout) != len)
		return 0;   /* stdout closed (a pipe to head): stop */
	fflush(stdout);
	return len;
}

/* One GET of the log stream; 0 or 1 (message printed). */
static int fetch(const char *cmd, const char *addr, const char *alloc, const char *task,
		 const char *type, bool follow, bool from_end, long long offset,
		 struct strbuf *buf)
{
	struct tls_client tls;
	struct herd_err terr = { 0, "" };
	char *etask, *url, *where;
	int rc;

	/* the node's address has no scheme: it takes HERD_ADDR's */
	if (tls_client_from_env(&tls, &terr) < 0) {
		fprintf(stderr, "%s: %s\n", cmd, terr.msg);
		return 1;
	}
	etask = httpc_escape(task);
	url = xasprintf("%s://%s/v1/client/fs/logs/%s?task=%s&type=%s&follow=%s"
			"&origin=%s&offset=%lld", tls.https ? "https" : "http",
			addr, alloc, etask, type, follow ? "true" : "false",
			from_end ? "end" : "start", offset);
	where = xasprintf("node at %s", addr);
	rc = cli_get_stream(cmd, where, url, &tls, to_sink, buf);
	free(etask);
	tls_client_release(&tls);
	free(where);
	free(url);
	return rc == 2 ? 0 : rc; /* stdout closed: done, not failed */
}

int alloc_node_addr(const char *cmd, const json_t *alloc, char **addr)
{
	struct httpc_response r;
	const char *node_id = js(alloc, "node_id");
	char *path;

	if (*js(alloc, "node_http_addr")) {
		/* the server says where: no node read needed (a team's token) */
		*addr = xstrdup(js(alloc, "node_http_addr"));
		return 0;
	}
	path = xasprintf("/v1/node/%s", node_id);
	int rc = api_call(cmd, "GET", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	if (!*js(r.body, "http_addr")) {
		fprintf(stderr, "%s: node %s has no http_addr: its client API is not reachable\n",
			cmd, node_id);
		httpc_response_release(&r);
		return 1;
	}
	*addr = xstrdup(js(r.body, "http_addr"));
	httpc_response_release(&r);
	return 0;
}

/* The node's http_addr and the task to read (the only task, when one). */
static int locate(const char *cmd, const char *id, const char *task_arg, char **addr,
		  char **task)
{
	struct httpc_response r;
	char *path = xasprintf("/v1/allocation/%s", id);
	const char *tname = NULL;
	json_t *states;
	int rc = api_call(cmd, "GET", path, NULL, &r);

	free(path);
	if (rc < 0)
		return 1;
	states = json_object_get(r.body, "task_states");
	if (task_arg) {
		tname = task_arg;
	} else if (json_object_size(states) == 1) {
		tname = json_object_iter_key(json_object_iter(states));
	} else {
		fprintf(stderr, "%s: the allocation has %zu tasks: name one of them\n", cmd,
			json_object_size(states));
		httpc_response_release(&r);
		return 1;
	}
	*task = xstrdup(tname);
	rc = alloc_node_addr(cmd, r.body, addr);
	httpc_response_release(&r);
	if (rc) {
		free(*task);
		*task = NULL;
	}
	return rc;
}

int alloc_logs_cmd(int argc, char **argv)
{
	bool follow = false, use_stderr = false, tail = false;
	int64_t lines = -1;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ "f", FLAG_BOOL, &follow, "follow the log as it grows (across rotations)" },
		{ "stderr", FLAG_BOOL, &use_stderr, "the task's stderr instead of stdout" },
		{ "tail", FLAG_BOOL, &tail, "start at the end: the last -n lines" },
		{ "n", FLAG_INT, &lines, "lines shown by -tail (default 10)" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc logs [options] ALLOC [TASK]",
		"Prints a task's stdout (or stderr) from the node that runs the allocation\n"
		"(ALLOC: an id or a unique prefix of it; TASK may be left out when the\n"
		"allocation has one task).",
		flags,
	};
	const char *type;
	char *pos[2], *id, *addr = NULL, *task = NULL, *list;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 2), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing allocation id");
	if (lines != -1 && lines < 0)
		return usage_error(argv[0], "-n: %lld is not a line count", (long long)lines);
	if (lines >= 0)
		tail = true;
	if (lines < 0)
		lines = 10;
	type = use_stderr ? "stderr" : "stdout";
	list = api_ns_path("/v1/allocations", cli_namespace(ns_flag));
	id = api_resolve_prefix(argv[0], list, "allocation", pos[0]);
	free(list);
	if (!id)
		return 1;
	if (locate(argv[0], id, n > 1 ? pos[1] : NULL, &addr, &task)) {
		free(id);
		return 1;
	}
	if (tail) {
		struct strbuf sb = STRBUF_INIT;
		rc = fetch(argv[0], addr, id, task, type, false, true, TAIL_WINDOW, &sb);
		if (!rc && sb.len) {
			/* The last `lines` lines (a final line without '\n' counts). */
			size_t start = sb.len, seen = 0;
			if (sb.buf[start - 1] == '\n')
				start--;
			while (start > 0 && seen < (size_t)lines) {
				start--;
				if (sb.buf[start] == '\n')
					seen++;
			}
			if (seen == (size_t)lines)
				start++;
			if (lines > 0)
				fwrite(sb.buf + start, 1, sb.len - start, stdout);
			fflush(stdout);
		}
		strbuf_release(&sb);
		if (!rc && follow)
			rc = fetch(argv[0], addr, id, task, type, true, true, 0, NULL);
	} else {
		rc = fetch(argv[0], addr, id, task, type, follow, false, 0, NULL);
	}
	free(addr);
	free(task);
	free(id);
	return rc;
}
