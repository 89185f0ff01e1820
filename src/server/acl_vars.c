/* acl_vars: the variables block of an ACL policy's namespace rule (see
 * teams.h): HCL, the JSON check, and capability names to bits. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/acl.h"
#include "server/teams.h"
#include "server/vars.h"
#include "spec/hcl.h"

static const char *const cap_names[] = { "read", "write", "list", "destroy", "deny", NULL };

static unsigned cap_bit(const char *s)
{
	for (unsigned i = 0; s && cap_names[i]; i++)
		if (!strcmp(cap_names[i], s))
			return 1u << i; /* read 1, write 2, list 4, destroy 8, deny 16 */
	return 0;
}

unsigned acl_vars_caps(const json_t *caps)
{
	unsigned bits = 0;
	size_t i;
	json_t *c;
	json_array_foreach((json_t *)caps, i, c)
		bits |= cap_bit(json_string_value(c));
	return bits;
}

/* A path rule: a path, a path prefix ending in '*', or "*". */
static bool path_glob_valid(const char *g)
{
	size_t n = strlen(g);
	char buf[VARS_MAX_PATH + 1];
	if (n == 0 || n > VARS_MAX_PATH)
		return false;
	if (g[n - 1] != '*')
		return vars_check_path(g, NULL) == 0;
	memcpy(buf, g, n - 1);
	buf[n - 1] = '\0';
	return vars_prefix_valid(buf);
}

void acl_vars_from_hcl(const struct hcl_block *b, const char *ns, json_t *vars,
		       struct diag_list *dl)
{
	json_t *paths = json_object_get(vars, ns);
	if (b->nlabels != 0) {
		diag_error(dl, b->pos.line, b->pos.col, "variables takes no label");
		return;
	}
	if (!paths)
		json_object_set_new(vars, ns, paths = json_object());
	for (size_t i = 0; i < b->body->n; i++) {
		const struct hcl_item *it = &b->body->items[i];
		const struct hcl_block *p = &it->u.block;
		const struct hcl_attribute *caps;
		json_t *list;
		if (it->kind != HCL_ITEM_BLOCK || strcmp(p->type, "path") || p->nlabels != 1) {
			diag_error(dl, it->kind == HCL_ITEM_BLOCK ? p->pos.line : it->u.attr.pos.line,
				   it->kind == HCL_ITEM_BLOCK ? p->pos.col : it->u.attr.pos.col,
				   "variables holds path \"PATH\" { capabilities = [...] } blocks");
			continue;
		}
		caps = hcl_body_attr(p->body, "capabilities");
		if (!caps || caps->value->kind != HCL_LIST || p->body->n != 1) {
			diag_error(dl, p->pos.line, p->pos.col,
				   "path \"%s\" holds only capabilities = [\"read\", ...]", p->labels[0]);
			continue;
		}
		list = json_array();
		for (size_t j = 0; j < caps->value->u.list.n; j++) {
			const struct hcl_expr *e = caps->value->u.list.v[j];
			if (e->kind != HCL_STRING || !cap_bit(e->u.str.s))
				diag_error(dl, e->pos.line, e->pos.col,
					   "a capability is read, write, list, destroy or deny");
			else
				json_array_append_new(list, json_string(e->u.str.s));
		}
		json_object_set_new(paths, p->labels[0], list);
	}
}

json_t *acl_vars_check(const json_t *vars, struct herd_err *err)
{
	json_t *out = json_object(), *paths, *caps, *c;
	const char *ns, *path;
	size_t i;
	if (!json_is_object(vars) || json_object_size(vars) > TEAMS_MAX_RULES) {
		herd_errf(err, -EINVAL, "rules.variables must be an object of at most %d namespaces",
			  TEAMS_MAX_RULES);
		goto fail;
	}
	json_object_foreach((json_t *)vars, ns, paths) {
		json_t *np = json_object();
		size_t nl = strlen(ns);
		char prefix[TEAMS_MAX_NAME + 1];
		if (nl > 1 && nl <= TEAMS_MAX_NAME && ns[nl - 1] == '*') {
			memcpy(prefix, ns, nl - 1);
			prefix[nl - 1] = '\0';
		} else {
			snprintf(prefix, sizeof(prefix), "%s", nl <= TEAMS_MAX_NAME ? ns : "");
		}
		if (strcmp(ns, "*") && !teams_valid_name(prefix)) {
			json_decref(np);
			herd_errf(err, -EINVAL, "rules.variables: a namespace name or a glob ending "
				  "in * is needed, not \"%.64s\"", ns);
			goto fail;
		}
		json_object_set_new(out, ns, np);
		if (!json_is_object(paths) || json_object_size(paths) > TEAMS_MAX_RULES) {
			herd_errf(err, -EINVAL, "rules.variables.%.64s must be an object of at most "
				  "%d paths", ns, TEAMS_MAX_RULES);
			goto fail;
		}
		json_object_foreach(paths, path, caps) {
			if (!path_glob_valid(path)) {
				herd_errf(err, -EINVAL, "rules.variables.%.64s: \"%.128s\" is not a "
					  "variable path or a prefix ending in *", ns, path);
				goto fail;
			}
			if (!json_is_array(caps)) {
				herd_errf(err, -EINVAL, "rules.variables.%.64s.%.128s: a list of "
					  "capabilities is needed", ns, path);
				goto fail;
			}
			json_array_foreach(caps, i, c)
				if (!cap_bit(json_string_value(c))) {
					herd_errf(err, -EINVAL, "rules.variables.%.64s.%.128s: a "
						  "capability is read, write, list, destroy or deny",
						  ns, path);
					goto fail;
				}
			json_object_set(np, path, caps);
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}
