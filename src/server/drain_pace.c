/* drain_pace: the pure decisions of a drain (drain.h): an allocation's
 * health for the pacing, and how many of a group's allocations to mark
 * for migration now.  No clock, no store. */
#include <string.h>

#include "server/drain.h"
#include "server/server-int.h"

bool drain_marked(const json_t *alloc)
{
	return jbool(json_object_get(alloc, "desired_transition"), "migrate", false);
}

enum drain_health drain_alloc_health(const json_t *alloc, const struct job_migrate *m,
				     int64_t now)
{
	const json_t *ds = json_object_get(alloc, "deployment_status"), *h;
	const char *client = jstr(alloc, "client_status", "pending");
	int64_t rs;

	if (strcmp(jstr(alloc, "desired_status", "run"), "run") || alloc_client_terminal(alloc))
		return DRAIN_HEALTH_UNHEALTHY;
	h = json_object_get(ds, "healthy");
	if (json_is_boolean(h)) /* its deployment decided */
		return json_is_true(h) ? DRAIN_HEALTH_HEALTHY : DRAIN_HEALTH_UNHEALTHY;
	if (!jbool(alloc, "drain_migration", false))
		/* here before the drain: healthy while it is ready */
		return deploy_alloc_ready(alloc) ? DRAIN_HEALTH_HEALTHY : DRAIN_HEALTH_PENDING;
	rs = jint(ds, "ready_since", 0);
	if (rs && now >= rs + m->min_healthy_time && !strcmp(client, "running"))
		return DRAIN_HEALTH_HEALTHY;
	if (now >= jint(alloc, "create_time", now) + m->healthy_deadline)
		return DRAIN_HEALTH_UNHEALTHY;
	return DRAIN_HEALTH_PENDING;
}

size_t drain_pace(int64_t count, int64_t max_parallel, const struct drain_pace_alloc *a, size_t n,
		  bool *take)
{
	int64_t healthy = 0, budget;
	size_t marked = 0;

	for (size_t i = 0; i < n; i++) {
		take[i] = false;
		if (a[i].live && !a[i].marked && a[i].health == DRAIN_HEALTH_HEALTHY)
			healthy++;
	}
	/* Nomad's rule: at least count - max_parallel stay healthy */
	budget = healthy - (count - max_parallel);
	for (size_t i = 0; i < n && budget > 0; i++) {
		if (!a[i].live || !a[i].draining || a[i].marked)
			continue;
		take[i] = true;
		marked++;
		budget--;
	}
	return marked;
}
