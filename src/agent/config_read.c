/* Typed readers of configuration values; see config-int.h. */
#include <errno.h>
#include <string.h>

#include "agent/config-int.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

static int wrong_kind(const struct hcl_attribute *a, const char *want, struct diag_list *dl)
{
	diag_error(dl, a->value->pos.line, a->value->pos.col,
		   "%s: expected %s, not a %s", a->name, want, hcl_kind_name(a->value->kind));
	return -EINVAL;
}

int cfg_read_string(const struct hcl_attribute *a, char **out, struct diag_list *dl)
{
	if (a->value->kind != HCL_STRING)
		return wrong_kind(a, "a string", dl);
	if (strlen(a->value->u.str.s) != a->value->u.str.len) {
		diag_error(dl, a->value->pos.line, a->value->pos.col,
			   "%s: a NUL character is not allowed", a->name);
		return -EINVAL;
	}
	free(*out);
	*out = xstrdup(a->value->u.str.s);
	return 0;
}

int cfg_read_bool(const struct hcl_attribute *a, bool *out, struct diag_list *dl)
{
	if (a->value->kind != HCL_BOOL)
		return wrong_kind(a, "true or false", dl);
	*out = a->value->u.boolean;
	return 0;
}

int cfg_read_int(const struct hcl_attribute *a, int64_t min, int64_t max, int64_t *out,
		 struct diag_list *dl)
{
	const struct hcl_expr *v = a->value;
	if (v->kind != HCL_NUMBER || !v->u.num.is_int)
		return wrong_kind(a, "an integer", dl);
	if (v->u.num.i < min || v->u.num.i > max) {
		diag_error(dl, v->pos.line, v->pos.col, "%s: expected %lld to %lld, not %lld",
			   a->name, (long long)min, (long long)max, (long long)v->u.num.i);
		return -EINVAL;
	}
	*out = v->u.num.i;
	return 0;
}

int cfg_read_duration(const struct hcl_attribute *a, int64_t min_ns, int64_t *out,
		      struct diag_list *dl)
{
	const struct hcl_expr *v = a->value;
	struct herd_err err = { 0 };
	int64_t ns;
	char buf[32];

	if (v->kind != HCL_STRING)
		return wrong_kind(a, "a duration string like \"10s\"", dl);
	if (parse_duration(v->u.str.s, &ns, &err) < 0) {
		diag_error(dl, v->pos.line, v->pos.col, "%s: %s", a->name, err.msg);
		return -EINVAL;
	}
	if (ns < min_ns) {
		diag_error(dl, v->pos.line, v->pos.col, "%s: expected at least %s, not \"%s\"",
			   a->name, format_duration(min_ns, buf, sizeof(buf)), v->u.str.s);
		return -EINVAL;
	}
	*out = ns;
	return 0;
}

int cfg_read_string_list(const struct hcl_attribute *a, size_t max, char ***out,
			 size_t *nr, struct diag_list *dl)
{
	const struct hcl_expr *v = a->value;
	if (v->kind != HCL_LIST)
		return wrong_kind(a, "a list of strings", dl);
	if (v->u.list.n > max) {
		diag_error(dl, v->pos.line, v->pos.col, "%s: at most %zu entries, not %zu",
			   a->name, max, v->u.list.n);
		return -EINVAL;
	}
	int bad = 0;
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct hcl_expr *e = v->u.list.v[i];
		if (e->kind != HCL_STRING || strlen(e->u.str.s) != e->u.str.len) {
			diag_error(dl, e->pos.line, e->pos.col,
				   "%s: entry %zu: expected a string, not a %s",
				   a->name, i + 1, hcl_kind_name(e->kind));
			bad = 1;
		}
	}
	if (bad)
		return -EINVAL;
	for (size_t i = 0; i < *nr; i++)
		free((*out)[i]);
	free(*out);
	*out = v->u.list.n ? xcalloc(v->u.list.n, sizeof(char *)) : NULL;
	for (size_t i = 0; i < v->u.list.n; i++)
		(*out)[i] = xstrdup(v->u.list.v[i]->u.str.s);
	*nr = v->u.list.n;
	return 0;
}

void cfg_unknown_key(struct diag_list *dl, struct hcl_pos pos, const char *what,
		     const char *key, const char *where, const char *const *known)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; known && known[i]; i++)
		strbuf_addf(&sb, "%s%s", i ? ", " : "", known[i]);
	diag_error(dl, pos.line, pos.col, "unknown %s '%s' in %s (expected one of: %s)",
		   what, key, where, sb.len ? sb.buf : "none");
	strbuf_release(&sb);
}
