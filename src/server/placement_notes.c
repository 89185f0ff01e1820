/* placement_notes: what an evaluation says when the engine had no node to
 * evaluate at all.  "no node fits (0 nodes evaluated)" tells a newcomer
 * nothing; the usual reason is that no agent has registered yet, or that
 * every node is down, draining or ineligible. */
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

char *no_candidates_reason(const struct sched_view *v)
{
	size_t down = 0, off = 0, other = 0;

	if (v->nnodes == 0)
		return xstrdup("no nodes registered yet: start a client agent (herd agent -config FILE "
			       "with client { enabled = true }, or herd agent -dev); the job is placed "
			       "as soon as a node that fits joins");
	for (size_t i = 0; i < v->nnodes; i++) {
		const json_t *n = v->nodes[i].node;
		if (strcmp(jstr(n, "status", ""), "ready"))
			down++;
		else if (!v->nodes[i].schedulable)
			off++;
		else
			other++;
	}
	return xasprintf("none of the %zu registered node%s can take the job: %zu down, %zu draining "
			 "or ineligible, %zu outside its datacenters or node pool, without its static "
			 "ports, or excluded by distinct_hosts/distinct_property",
			 v->nnodes, v->nnodes == 1 ? "" : "s", down, off, other);
}
