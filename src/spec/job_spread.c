/* Validation and defaults of spread blocks (job and group level); called
 * by job_validate.c.  A spread names a node attribute the way constraints
 * do; its targets share out the group's count by percent (docs/jobspec.md,
 * "spread"). */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "spec/job-int.h"

struct spread_validator {
	struct diag_list *diags;
	struct job_path *path;
	const struct job_failed *failed;
	int errors;
};

__attribute__((format(printf, 3, 4)))
static void spread_fail(struct spread_validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(v->diags, v->path, pos, fmt, ap);
	va_end(ap);
	v->errors++;
}

/* The node references a spread may name: those a constraint resolves on a
 * node (not a device's, which differ within one node). */
static bool is_node_reference(const char *s)
{
	static const char *const exact[] = {
		"${node.unique.id}", "${node.unique.name}", "${node.datacenter}",
		"${node.class}", NULL,
	};
	size_t n = strlen(s);

	for (size_t i = 0; exact[i]; i++)
		if (!strcmp(s, exact[i]))
			return true;
	if (n < 3 || s[n - 1] != '}' || memchr(s + 2, '}', n - 3))
		return false;
	return (!strncmp(s, "${attr.", 7) && n > 8) || (!strncmp(s, "${meta.", 7) && n > 8);
}

static void check_spread(struct spread_validator *v, struct job_spread *sp)
{
	int64_t sum = 0;

	if (sp->weight == JOB_WEIGHT_UNSET)
		sp->weight = 50;
	else if (sp->weight == 0)
		spread_fail(v, sp->pos, "weight must be between -100 and 100 and not 0");
	if (!sp->attribute) {
		if (!job_failed_has(v->failed, &sp->attribute))
			spread_fail(v, sp->pos, "attribute is required");
	} else if (!is_node_reference(sp->attribute)) {
		spread_fail(v, sp->pos, "attribute \"%s\" must be a node reference such as "
			    "\"${node.datacenter}\", \"${node.class}\", \"${attr.KEY}\" or "
			    "\"${meta.KEY}\"", sp->attribute);
	}
	for (size_t i = 0; i < sp->ntargets; i++) {
		struct job_spread_target *t = &sp->targets[i];
		size_t old = job_path_push_key(v->path, "targets");
		job_path_push_index(v->path, i);
		if (t->percent == JOB_UNSET)
			t->percent = 0;
		sum += t->percent;
		if (!t->value) {
			if (!job_failed_has(v->failed, &t->value) && !job_failed_has(v->failed, t))
				spread_fail(v, t->pos, "value is required (target \"<value>\" { ... })");
		} else {
			for (size_t j = 0; j < i; j++)
				if (sp->targets[j].value && !strcmp(sp->targets[j].value, t->value))
					spread_fail(v, t->pos, "target \"%s\" is given twice", t->value);
		}
		job_path_pop(v->path, old);
	}
	if (sum > 100)
		spread_fail(v, sp->pos, "the targets' percents sum to %" PRId64 ", more than 100", sum);
}

int job_spreads_validate(struct job_spread *spreads, size_t n, struct job_path *path,
			 const struct job_failed *failed, struct diag_list *diags)
{
	struct spread_validator v = { diags, path, failed, 0 };

	for (size_t i = 0; i < n; i++) {
		size_t old;
		if (job_failed_has(failed, &spreads[i]))
			continue;
		old = job_path_push_key(path, "spreads");
		job_path_push_index(path, i);
		check_spread(&v, &spreads[i]);
		job_path_pop(path, old);
	}
	return v.errors;
}
