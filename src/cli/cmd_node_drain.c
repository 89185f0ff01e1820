/* herd node drain: starts, changes, cancels or follows a node's drain
 * (docs/operations.md, "Draining and eligibility").  Without -detach the
 * command follows the drain until it ends, as `herd job run` follows a
 * job: blocking reads of the node, and each allocation the server tells to
 * migrate printed once. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/units.h"
#include "common/xalloc.h"

#define DRAIN_FOLLOW_WAIT_MS 30000
#define DRAIN_DEFAULT_DEADLINE_NS (3600 * NS_PER_SEC) /* Nomad's */

char *node_resolve(const char *cmd, const char *arg); /* cmd_node.c */
int node_drain_cmd(int argc, char **argv);           /* cmd_node.c's table calls it */

/* Prints what changed on the node's allocations since the last look:
 * each told to migrate, and each of those once it stopped.  told and
 * stopped are the ids printed already.  Only allocations modified since
 * the drain started (since, unix ns): one an earlier drain of the node
 * told to migrate keeps its mark once stopped. */
static void print_moves(const json_t *allocs, json_t *told, json_t *stopped, int64_t since)
{
	char sid[16];
	size_t i;
	json_t *a;

	json_array_foreach(allocs, i, a) {
		const char *id = js(a, "id"), *cs = js(a, "client_status");
		bool ended = !strcmp(cs, "complete") || !strcmp(cs, "failed") || !strcmp(cs, "lost");
		if (jb(json_object_get(a, "desired_transition"), "migrate") &&
		    ji(a, "modify_time") >= since && !json_object_get(told, id)) {
			printf("    allocation %s (job %s, group %s) told to migrate\n",
			       short_id(id, sid), js(a, "job_id"), js(a, "task_group"));
			json_object_set_new(told, id, json_true());
		}
		if (json_object_get(told, id) && ended && !json_object_get(stopped, id)) {
			printf("    allocation %s stopped (%s)\n", short_id(id, sid), cs);
			json_object_set_new(stopped, id, json_true());
		}
	}
	fflush(stdout);
}

static int64_t now_unix_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* The deadline of a drain strategy, for people. */
static void print_deadline(const char *id, const json_t *st)
{
	int64_t dl = ji(st, "deadline"), at = ji(st, "force_deadline");
	char sid[16], buf[64];

	if (dl < 0 || !at)
		printf("==> node %s draining, no deadline\n", short_id(id, sid));
	else if (dl == 0)
		printf("==> node %s draining, forced: everything stops now\n", short_id(id, sid));
	else
		printf("==> node %s draining, deadline in %s\n", short_id(id, sid),
		       format_duration((at - now_unix_ns()) / NS_PER_SEC * NS_PER_SEC, buf,
				       sizeof(buf)));
	fflush(stdout);
}

/* Follows the drain of node id until it ends: 0 once complete, 1 when it
 * was canceled or the server could not be read. */
static int drain_follow(const char *cmd, const char *id)
{
	char *npath = xasprintf("/v1/node/%s", id), *apath = xasprintf("/v1/node/%s/allocations", id);
	json_t *told = json_object(), *stopped = json_object();
	uint64_t index = 0;
	bool said = false;
	int rc = 1;

	for (;;) {
		struct httpc_response r, ra;
		const json_t *last;
		if (api_get_blocking(cmd, npath, index, DRAIN_FOLLOW_WAIT_MS, &r) < 0)
			break;
		index = r.index;
		if (api_call(cmd, "GET", apath, NULL, &ra) < 0) {
			httpc_response_release(&r);
			break;
		}
		if (!said && jb(r.body, "drain")) {
			print_deadline(id, json_object_get(r.body, "drain_strategy"));
			said = true;
		}
		print_moves(ra.body, told, stopped,
			    ji(json_object_get(r.body, "last_drain"), "started_at"));
		httpc_response_release(&ra);
		if (jb(r.body, "drain")) {
			httpc_response_release(&r);
			continue;
		}
		last = json_object_get(r.body, "last_drain");
		if (!strcmp(js(last, "status"), "complete")) {
			printf("==> drain complete\n");
			rc = 0;
		} else if (!strcmp(js(last, "status"), "canceled")) {
			printf("==> drain canceled\n");
		} else {
			printf("==> node is not draining\n");
			rc = 0;
		}
		httpc_response_release(&r);
		break;
	}
	json_decref(told);
	json_decref(stopped);
	free(npath);
	free(apath);
	return rc;
}

struct drain_flags {
	bool enable, disable, force, no_deadline, ignore_system, keep_ineligible, detach, monitor;
	const char *deadline;
};

/* The body POSTed for f, or NULL after a usage error (printed). */
static json_t *drain_body(const char *cmd, const struct drain_flags *f, int *rc)
{
	struct herd_err err = { 0 };
	int64_t dl = DRAIN_DEFAULT_DEADLINE_NS;

	*rc = EXIT_USAGE;
	if (f->enable && f->disable)
		return usage_error(cmd, "-enable and -disable exclude each other"), NULL;
	if (f->disable)
		return json_pack("{s:n, s:b}", "drain_spec", "mark_eligible", !f->keep_ineligible);
	if (f->force + f->no_deadline + (f->deadline != NULL) > 1)
		return usage_error(cmd, "give at most one of -deadline, -no-deadline and -force"), NULL;
	if (f->deadline && (parse_duration(f->deadline, &dl, &err) < 0 || dl <= 0))
		return usage_error(cmd, "-deadline: %s", err.msg[0] ? err.msg : "must be more than 0"),
		       NULL;
	if (f->force)
		dl = 0;
	if (f->no_deadline)
		dl = -1;
	return json_pack("{s:{s:I, s:b}}", "drain_spec", "deadline", (json_int_t)dl,
			 "ignore_system_jobs", f->ignore_system);
}

int node_drain_cmd(int argc, char **argv)
{
	struct drain_flags f = { 0 };
	const struct flag flags[] = {
		{ "enable", FLAG_BOOL, &f.enable, "start draining (the default)" },
		{ "disable", FLAG_BOOL, &f.disable, "cancel the drain (the node is eligible again "
						    "unless -keep-ineligible)" },
		{ "deadline", FLAG_STRING, &f.deadline, "how long allocations may stay before "
							"everything left is stopped (default 1h)" },
		{ "no-deadline", FLAG_BOOL, &f.no_deadline, "no deadline: batch allocations run "
							    "to completion" },
		{ "force", FLAG_BOOL, &f.force, "deadline 0: every allocation stops now" },
		{ "ignore-system", FLAG_BOOL, &f.ignore_system, "leave system jobs' allocations "
								"running" },
		{ "keep-ineligible", FLAG_BOOL, &f.keep_ineligible, "with -disable: the node stays "
								    "ineligible" },
		{ "detach", FLAG_BOOL, &f.detach, "return once the drain started" },
		{ "monitor", FLAG_BOOL, &f.monitor, "only follow the node's drain under way" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd node drain [options] ID",
		"Drains a node: it gets no new work, service allocations migrate a few at a\n"
		"time as their group's migrate block says, batch allocations run until they\n"
		"end, and at the deadline everything still there is stopped (and replaced).\n"
		"System jobs' allocations stop last.  Follows the drain until it is complete\n"
		"unless -detach.  -disable cancels it.",
		flags,
	};
	char *pos[1], *id, *path, sid[16];
	struct httpc_response r;
	json_t *body;
	int n = flags_parse_anywhere(&help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n < 1)
		return usage_error(argv[0], "missing node id");
	if (f.monitor && (f.enable || f.disable || f.deadline || f.force || f.no_deadline ||
			  f.detach || f.ignore_system))
		return usage_error(argv[0], "-monitor takes no other option");
	body = f.monitor ? NULL : drain_body(argv[0], &f, &rc);
	if (!f.monitor && !body)
		return rc;
	id = node_resolve(argv[0], pos[0]);
	if (!id) {
		json_decref(body);
		return 1;
	}
	if (f.monitor) {
		rc = drain_follow(argv[0], id);
		free(id);
		return rc;
	}
	path = xasprintf("/v1/node/%s/drain", id);
	rc = api_call(argv[0], "POST", path, body, &r);
	free(path);
	json_decref(body);
	if (rc < 0) {
		free(id);
		return 1;
	}
	httpc_response_release(&r);
	if (f.disable) {
		printf("node %s: drain canceled\n", short_id(id, sid));
		rc = 0;
	} else if (f.detach) {
		printf("node %s: drain started\n", short_id(id, sid));
		rc = 0;
	} else {
		rc = drain_follow(argv[0], id);
	}
	free(id);
	return rc;
}
