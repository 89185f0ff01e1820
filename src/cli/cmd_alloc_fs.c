/* herd alloc fs [-stat] [-json] [-f] ALLOC [PATH]
 *
 * Reads an allocation's directory through the client API of the node
 * that runs it (found as `herd alloc logs` finds it):
 * GET /v1/client/fs/stat/:alloc?path=P first; a directory is listed
 * (/fs/ls: mode, size, mtime, name, like `ls -l`), a file's bytes go to
 * stdout unchanged (/fs/cat, streamed as they arrive); -stat shows the
 * entry only; -json prints the API's JSON (stat, or a directory's
 * listing); -f, after a file's end, follows it as it grows (/fs/readat
 * from where the output stopped, polled), like tail -f. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/httpc.h"
#include "common/tls.h"
#include "common/xalloc.h"

/* How often -f asks whether the file grew. */
#define FOLLOW_POLL_NS (500 * 1000000L)

/* GET /v1/client/fs/<op>/<id>?path=<path> (JSON) from the node at addr.
 * Returns 0 with *out (a new reference), or 1 after printing why. */
static int node_get_json(const char *cmd, const char *addr, const char *op, const char *id,
			 const char *path, json_t **out)
{
	struct httpc c;
	struct httpc_response r = { 0 };
	struct herd_err err = { 0, "" };
	char *epath = httpc_escape(path);
	char *url = xasprintf("/v1/client/fs/%s/%s?path=%s", op, id, epath);
	int rc;

	httpc_init(&c, addr);   /* HERD_TOKEN goes along: the node asks the server */
	c.timeout_ms = 60000;
	rc = httpc_request(&c, "GET", url, NULL, &r, &err);
	if (rc < 0) {
		const char *msg = js(json_object_get(r.body, "error"), "message");
		if (r.status && *msg)
			fprintf(stderr, "%s: %s\n", cmd, msg);
		else
			fprintf(stderr, "%s: node at %s: %s\n", cmd, addr, err.msg);
	} else {
		*out = json_incref(r.body);
	}
	httpc_response_release(&r);
	httpc_release(&c);
	free(url);
	free(epath);
	return rc < 0;
}

/* Where file bytes go: stdout as they come, counted. */
static size_t to_stdout(const char *p, size_t len, void *arg)
{
	long long *written = arg;

	if (fwrite(p, 1, len, stdout) != len)
		return 0;   /* stdout closed (a pipe to head): stop */
	fflush(stdout);
	*written += (long long)len;
	return len;
}

/* Streams op ("cat", or "readat" from offset) of path to stdout; 0, 1
 * (printed why) or 2 (stdout closed). */
static int node_stream(const char *cmd, const char *addr, const char *op, const char *id,
		       const char *path, long long offset, long long *written)
{
	struct tls_client tls;
	struct herd_err terr = { 0, "" };
	char *epath, *url, *where;
	int rc;

	/* the node's address has no scheme: it takes HERD_ADDR's */
	if (tls_client_from_env(&tls, &terr) < 0) {
		fprintf(stderr, "%s: %s\n", cmd, terr.msg);
		return 1;
	}
	epath = httpc_escape(path);
	url = xasprintf("%s://%s/v1/client/fs/%s/%s?path=%s", tls.https ? "https" : "http", addr,
			op, id, epath);
	if (!strcmp(op, "readat")) {
		char *u = xasprintf("%s&offset=%lld", url, offset);
		free(url);
		url = u;
	}
	where = xasprintf("node at %s", addr);
	rc = cli_get_stream(cmd, where, url, &tls, to_stdout, written);
	free(epath);
	tls_client_release(&tls);
	free(where);
	free(url);
	return rc;
}

/* One entry as a row: mode, size, modification time (UTC), name ("/"
 * after a directory's). */
static void print_row(const json_t *e)
{
	int64_t ns = ji(e, "mod_time");
	time_t t = (time_t)(ns / 1000000000);
	const char *name = js(e, "name");
	bool slash = json_is_true(json_object_get(e, "is_dir")) && strcmp(name, "/");
	struct tm tm;
	char when[32] = "-";

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("%-11s %12lld  %-20s  %s%s\n", js(e, "file_mode"), (long long)ji(e, "size"), when,
	       name, slash ? "/" : "");
}

static void print_header(void)
{
	printf("%-11s %12s  %-20s  %s\n", "Mode", "Size", "Modified Time", "Name");
}

/* -f: after the first cat, the bytes appended since, polled. */
static int follow(const char *cmd, const char *addr, const char *id, const char *path,
		  long long written)
{
	for (;;) {
		struct timespec ts = { 0, FOLLOW_POLL_NS };
		json_t *st;
		long long size;
		int rc;

		nanosleep(&ts, NULL);
		if (node_get_json(cmd, addr, "stat", id, path, &st))
			return 1;
		size = (long long)ji(st, "size");
		json_decref(st);
		if (size < written) {
			fprintf(stderr, "%s: %s: file truncated\n", cmd, path);
			written = 0;
		}
		if (size == written)
			continue;
		rc = node_stream(cmd, addr, "readat", id, path, written, &written);
		if (rc)
			return rc == 2 ? 0 : rc;
	}
}

int alloc_fs_cmd(int argc, char **argv)
{
	bool stat_only = false, as_json = false, follow_f = false;
	const char *ns_flag = NULL;
	const struct flag flags[] = {
		{ "namespace", FLAG_STRING, &ns_flag, CLI_NAMESPACE_HELP "; * for all" },
		{ "stat", FLAG_BOOL, &stat_only, "show the file's or directory's entry only" },
		{ "json", FLAG_BOOL, &as_json, "print the API's JSON (an entry or a listing)" },
		{ "f", FLAG_BOOL, &follow_f, "follow a file as it grows (like tail -f)" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd alloc fs [options] ALLOC [PATH]",
		"Lists a directory of an allocation, or prints a file of it (binary safe), from\n"
		"the node that runs it.  ALLOC: an id or a unique prefix of it.  PATH is\n"
		"relative to the allocation's directory (default /): alloc/data, alloc/logs,\n"
		"<task>/local, <task>/tmp; a task's secrets/ is not served, nor anything a\n"
		"symlink points to outside the allocation's directory.",
		flags,
	};
	char *pos[2], *id = NULL, *addr = NULL;
	const char *path;
	json_t *alloc = NULL, *entry = NULL, *list = NULL;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 2), rc = 1;
	long long written = 0;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing allocation id");
	path = n > 1 ? pos[1] : "/";
	if (alloc_locate(argv[0], ns_flag, pos[0], &id, &alloc, &addr))
		return 1;
	json_decref(alloc);
	if (node_get_json(argv[0], addr, "stat", id, path, &entry))
		goto out;
	if (json_is_true(json_object_get(entry, "is_dir")) && !stat_only) {
		if (node_get_json(argv[0], addr, "ls", id, path, &list))
			goto out;
		if (as_json) {
			api_print_json(list);
		} else {
			size_t i;
			json_t *e;
			print_header();
			json_array_foreach(list, i, e)
				print_row(e);
		}
		rc = 0;
	} else if (stat_only || as_json) {
		if (as_json) {
			api_print_json(entry);
		} else {
			print_header();
			print_row(entry);
		}
		rc = 0;
	} else {
		rc = node_stream(argv[0], addr, "cat", id, path, 0, &written);
		if (rc == 0 && follow_f)
			rc = follow(argv[0], addr, id, path, written);
		rc = rc == 2 ? 0 : rc;   /* stdout closed: done, not failed */
	}
out:
	json_decref(list);
	json_decref(entry);
	free(addr);
	free(id);
	return rc;
}
