/* Validation and defaults of a task's identity blocks (docs/jobspec.md,
 * "identity"; job.h, struct job_identity): the unnamed one, the identity
 * "default", and the named ones, whose names become environment variables
 * (HERD_TOKEN_<name>) and file names (secrets/herd_token_<name>). */
#include <stdarg.h>
#include <string.h>

#include "common/xalloc.h"
#include "spec/job-int.h"

struct id_validator {
	struct diag_list *diags;
	struct job_path *path;
	const struct job_failed *failed;
	int errors;
};

__attribute__((format(printf, 3, 4)))
static void id_fail(struct id_validator *v, struct hcl_pos pos, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	job_path_verror(v->diags, v->path, pos, fmt, ap);
	va_end(ap);
	v->errors++;
}

/* Letters, digits and '_': a name that is a valid part of an environment
 * variable's name and of a file name as it is. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JOB_IDENTITY_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static void check_one(struct id_validator *v, struct job_identity *id, bool named)
{
	if (!id->change_mode)
		id->change_mode = xstrdup("noop");
	if (id->ttl == JOB_UNSET)
		id->ttl = 0;
	if (named && !job_failed_has(v->failed, &id->name)) {
		if (!id->name)
			id_fail(v, id->pos, "a named identity needs its name");
		else if (!name_ok(id->name))
			id_fail(v, id->pos, "identity name \"%s\" must be 1 to %d letters, digits or "
				"'_' (it becomes HERD_TOKEN_<name>)", id->name, JOB_IDENTITY_MAX_NAME);
		else if (!strcmp(id->name, "default"))
			id_fail(v, id->pos, "the identity \"default\" is the unnamed identity block: "
				"write it without a name");
	}
	if (!named && id->name && strcmp(id->name, "default"))
		id_fail(v, id->pos, "the unnamed identity is \"default\", not \"%s\": a named one "
			"goes under identities", id->name);
	for (size_t i = 0; i < id->aud.n; i++)
		if (!*id->aud.v[i] || strlen(id->aud.v[i]) > 256)
			id_fail(v, id->pos, "aud[%zu] must be 1 to 256 characters", i);
	if (id->ttl != 0 && id->ttl < JOB_IDENTITY_MIN_TTL && !job_failed_has(v->failed, &id->ttl))
		id_fail(v, id->pos, "ttl must be 0 (no expiry) or at least %llds",
			JOB_IDENTITY_MIN_TTL / 1000000000LL);
	if (!strcmp(id->change_mode, "signal") && !id->change_signal)
		id_fail(v, id->pos, "change_mode \"signal\" needs change_signal");
	if (id->change_signal && !job_signal_name_ok(id->change_signal))
		id_fail(v, id->pos, "change_signal must be a signal name such as \"SIGHUP\", got "
			"\"%s\"", id->change_signal);
	if (strcmp(id->change_mode, "noop") && id->ttl == 0)
		id_fail(v, id->pos, "change_mode \"%s\" needs a ttl: a token without one is never "
			"renewed", id->change_mode);
}

int job_identities_validate(struct job_task *t, struct job_path *path,
			    const struct job_failed *failed, struct diag_list *diags)
{
	struct id_validator v = { diags, path, failed, 0 };
	size_t depth;

	if (t->identity && !job_failed_has(failed, t->identity)) {
		depth = job_path_push_key(path, "identity");
		check_one(&v, t->identity, false);
		job_path_pop(path, depth);
	}
	for (size_t i = 0; i < t->nidentities; i++) {
		struct job_identity *id = &t->identities[i];
		if (job_failed_has(failed, id))
			continue;
		depth = job_path_push_key(path, "identities");
		job_path_push_index(path, i);
		check_one(&v, id, true);
		for (size_t j = 0; j < i && id->name; j++)
			if (t->identities[j].name && !strcmp(t->identities[j].name, id->name))
				id_fail(&v, id->pos, "identity \"%s\" is defined twice", id->name);
		job_path_pop(path, depth);
	}
	return v.errors;
}
