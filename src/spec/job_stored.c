/* What a job stored by an earlier build needs before it decodes as this
 * build validates (spec.h, job_stored_upgrade).
 *
 * Earlier builds accepted change_mode = "script" and ignored its
 * change_script (not kept): such a job did nothing when its template
 * changed but write the file.  This build requires the change_script, so
 * a stored job of that kind becomes change_mode "noop", what it did, and
 * still runs; submitting its file again is refused until it has a
 * change_script. */
#include <stdbool.h>
#include <string.h>

#include "spec/spec.h"

/* Whether template tmpl is one of those. */
static bool script_without_script(const json_t *tmpl)
{
	const char *mode = json_string_value(json_object_get(tmpl, "change_mode"));
	return mode && !strcmp(mode, "script") && !json_object_get(tmpl, "change_script");
}

static bool any_to_upgrade(const json_t *job)
{
	const json_t *g, *t, *tmpl;
	size_t i, j, k;

	json_array_foreach(json_object_get(job, "groups"), i, g)
		json_array_foreach(json_object_get(g, "tasks"), j, t)
			json_array_foreach(json_object_get(t, "templates"), k, tmpl)
				if (script_without_script(tmpl))
					return true;
	return false;
}

int job_stored_upgrade(json_t *job)
{
	json_t *g, *t, *tmpl;
	size_t i, j, k;
	int n = 0;

	if (!any_to_upgrade(job))
		return 0;
	/* the caller's copy may share its members with a stored record (a
	 * shallow copy): the groups change in a copy of their own */
	json_object_set_new(job, "groups", json_deep_copy(json_object_get(job, "groups")));
	json_array_foreach(json_object_get(job, "groups"), i, g)
		json_array_foreach(json_object_get(g, "tasks"), j, t)
			json_array_foreach(json_object_get(t, "templates"), k, tmpl) {
				if (script_without_script(tmpl)) {
					json_object_set_new(tmpl, "change_mode", json_string("noop"));
					n++;
				}
			}
	return n;
}
