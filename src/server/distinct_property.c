/* distinct_property: Nomad's constraint that at most `value` (default 1)
 * allocations of a job share one value of a node property ("at most two
 * instances per rack": attribute "${meta.rack}", value "2").  A job-level
 * constraint counts the job's allocations of every group, a group's (or a
 * task's) those of the group.
 *
 * The snapshot builder leaves out the nodes whose value is taken up; the
 * counts come from the job's live allocations, which the planner extends
 * with each placement it makes, so that the instances of one evaluation
 * spread as well.  A node without the property cannot take the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/server-int.h"

void group_ask_add_distinct_property(struct group_ask *a, const struct job_constraint *c,
				     bool job_level)
{
	struct group_distinct_prop *d;
	int64_t limit = c->value ? strtoll(c->value, NULL, 10) : 1; /* validated: 1.. */
	a->dprops = xreallocarray(a->dprops, a->ndprops + 1, sizeof(*a->dprops));
	d = &a->dprops[a->ndprops++];
	d->attribute = c->attribute;
	d->limit = limit > 0 ? limit : 1;
	d->job_level = job_level;
}

/* The text of a JSON scalar (numbers and booleans as written); a new
 * string or NULL. */
static char *scalar_text(const json_t *v)
{
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	if (json_is_integer(v))
		return xasprintf("%lld", (long long)json_integer_value(v));
	if (json_is_real(v))
		return xasprintf("%g", json_real_value(v));
	if (json_is_boolean(v))
		return xstrdup(json_is_true(v) ? "true" : "false");
	return NULL;
}

/* The value of attribute (a ${...} reference or a literal) on node; a new
 * string, or NULL when the node does not have it. */
char *node_property(const json_t *node, const char *attribute)
{
	size_t n = strlen(attribute);
	char *key, *out = NULL;

	if (n < 3 || strncmp(attribute, "${", 2) || attribute[n - 1] != '}')
		return xstrdup(attribute); /* a literal: one value everywhere */
	key = xstrndup(attribute + 2, n - 3);
	if (!strcmp(key, "node.unique.id"))
		out = scalar_text(json_object_get(node, "id"));
	else if (!strcmp(key, "node.unique.name"))
		out = scalar_text(json_object_get(node, "name"));
	else if (!strcmp(key, "node.datacenter"))
		out = xstrdup(jstr(node, "datacenter", "dc1"));
	else if (!strcmp(key, "node.class"))
		out = scalar_text(json_object_get(node, "node_class"));
	else if (!strcmp(key, "node.pool"))
		out = xstrdup(*jstr(node, "node_pool", "") ? jstr(node, "node_pool", "") : "default");
	else if (!strncmp(key, "meta.", 5))
		out = scalar_text(json_object_get(json_object_get(node, "meta"), key + 5));
	else if (!strncmp(key, "attr.", 5))
		out = scalar_text(json_object_get(json_object_get(node, "attributes"), key + 5));
	free(key);
	return out;
}

static char *count_key(const char *attribute, const char *value)
{
	return xasprintf("%s\x1f%s", attribute, value);
}

json_t *distinct_property_counts(struct sched_view *v, const struct group_ask *a,
				 const json_t *live)
{
	json_t *counts, *al;
	size_t i;

	if (!a->ndprops)
		return NULL;
	counts = json_object();
	json_array_foreach(live, i, al) {
		struct view_node *vn = sched_view_node(v, jstr(al, "node_id", ""));
		bool same_group = !strcmp(jstr(al, "task_group", ""), a->group->name);
		if (!vn)
			continue;
		for (size_t k = 0; k < a->ndprops; k++) {
			const struct group_distinct_prop *d = &a->dprops[k];
			char *value, *key;
			if (!d->job_level && !same_group)
				continue;
			value = node_property(vn->node, d->attribute);
			if (!value)
				continue;
			key = count_key(d->attribute, value);
			json_object_set_new(counts, key, json_integer(jint(counts, key, 0) + 1));
			free(key);
			free(value);
		}
	}
	return counts;
}

bool distinct_property_allows(const json_t *counts, const struct group_ask *a,
			      const struct view_node *vn)
{
	if (!counts)
		return true;
	for (size_t k = 0; k < a->ndprops; k++) {
		const struct group_distinct_prop *d = &a->dprops[k];
		char *value = node_property(vn->node, d->attribute), *key;
		bool full;
		if (!value)
			return false;
		key = count_key(d->attribute, value);
		full = jint(counts, key, 0) >= d->limit;
		free(key);
		free(value);
		if (full)
			return false;
	}
	return true;
}
