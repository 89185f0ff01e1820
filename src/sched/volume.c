/* Host volumes in placement: a node is a candidate only when it has every
 * volume the request asks for, writable where the request needs to write.
 * Only requests with volumes reach this file, so the engine's hot path
 * (requests without) pays one test of nvolumes per node. */
#include <errno.h>
#include <string.h>

#include "sched/sched-int.h"

/* The node's volume called name, or NULL; nodes have a handful at most. */
static const struct node_volume *node_volume(const struct sched_node *n, const char *name)
{
	for (int i = 0; i < n->nvol; i++)
		if (!strcmp(n->vol[i].name, name))
			return &n->vol[i];
	return NULL;
}

bool volumes_fit(const struct sched_node *n, const struct sched_request *req,
		 struct sched_explain *why)
{
	for (size_t i = 0; i < req->nvolumes; i++) {
		const struct sched_volume *want = &req->volumes[i];
		const struct node_volume *have = node_volume(n, want->name);
		if (have && (want->read_only || !have->read_only))
			continue;
		if (why && i < SCHED_EXPLAIN_VOLUMES) {
			if (have)
				why->filtered_volume_read_only[i]++;
			else
				why->filtered_volume_missing[i]++;
		}
		return false;
	}
	return true;
}

int volumes_validate(const struct sched_request *req, struct herd_err *err)
{
	if (req->nvolumes > SCHED_MAX_VOLUMES)
		return herd_errf(err, -EINVAL, "request: more than %d host volumes",
				 SCHED_MAX_VOLUMES);
	for (size_t i = 0; i < req->nvolumes; i++)
		if (!req->volumes[i].name || !*req->volumes[i].name)
			return herd_errf(err, -EINVAL, "request: a host volume without a name");
	return 0;
}

void volumes_explain_format(const struct sched_explain *why, const struct sched_request *req,
			    struct strbuf *sb)
{
	for (size_t i = 0; i < req->nvolumes && i < SCHED_EXPLAIN_VOLUMES; i++) {
		int m = why->filtered_volume_missing[i], r = why->filtered_volume_read_only[i];
		if (m)
			strbuf_addf(sb, "  missing host volume \"%s\": %d node%s\n",
				    req->volumes[i].name, m, m == 1 ? "" : "s");
		if (r)
			strbuf_addf(sb, "  host volume \"%s\" is read-only (a writable one is "
				    "asked): %d node%s\n", req->volumes[i].name, r, r == 1 ? "" : "s");
	}
}
