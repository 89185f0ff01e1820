/* Fuzz target: the node register body decoder (node_from_request), then
 * what the scheduler does with an accepted node: its usage accounting and
 * the placement snapshot built from it, with one placement attempt. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/server-int.h"
#include "spec/spec.h"

static struct job *the_job(void)
{
	static const char text[] =
		"{\"id\": \"f\", \"groups\": [{\"name\": \"g\", \"network\": {\"ports\": [{\"label\": \"http\"}]},"
		" \"tasks\": [{\"name\": \"t\", \"driver\": \"raw_exec\", \"config\": {\"command\": \"x\"},"
		" \"resources\": {\"devices\": [{\"name\": \"nvidia/gpu\", \"count\": 1, \"compute\": 25,"
		" \"constraints\": [{\"attribute\": \"${device.attr.memory}\", \"operator\": \">=\", \"value\": \"1\"}]}]}}]}]}";
	static struct job *job;
	if (!job) {
		struct diag_list dl;
		diag_list_init(&dl);
		job = spec_load(text, strlen(text), &dl);
		diag_list_release(&dl);
		if (!job)
			abort();
	}
	return job;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	struct herd_err err = { 0 };
	json_t *node = NULL, *live;
	struct sched_view v;
	struct group_ask ask;
	int map[2];

	if (!body)
		return 0;
	if (node_from_request(body, &node, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a refusal says why */
		json_decref(body);
		return 0;
	}
	memset(&v, 0, sizeof(v));
	v.nodes = calloc(1, sizeof(*v.nodes));
	v.nnodes = 1;
	json_object_set_new(node, "status", json_string("ready"));
	v.nodes[0].node = node;
	v.nodes[0].id = json_string_value(json_object_get(node, "id"));
	v.nodes[0].schedulable = true;
	v.job_allocs = json_array();
	live = json_array();
	if (group_ask_init(&ask, the_job(), &the_job()->groups[0], &err) == 0) {
		struct sched_snapshot *snap = snapshot_build(&v, &ask, live, map, &err);
		struct sched_options opt = { .policy = SCHED_HERD, .seed = 1 };
		struct sched_placement pl;
		struct sched_explain why;
		if (sched_place(snap, &ask.req, &opt, &pl, &why, &err) == 0 && map[pl.node] != 0)
			abort();
		sched_snapshot_free(snap);
		group_ask_release(&ask);
	}
	json_decref(live);
	sched_view_release(&v);
	json_decref(body);
	return 0;
}
