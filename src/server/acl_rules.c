/* acl_rules: ACL policy rules in HCL and JSON (see teams.h). */
#include <errno.h>
#include <string.h>

#include "server/teams.h"
#include "spec/hcl.h"

int acl_level_parse(const char *s, bool namespace_rule)
{
	if (!s)
		return -1;
	if (!strcmp(s, "deny"))
		return ACL_DENY;
	if (!strcmp(s, "read"))
		return ACL_READ;
	if (!strcmp(s, "write") || (namespace_rule && !strcmp(s, "submit")))
		return ACL_WRITE;
	if (namespace_rule && !strcmp(s, "admin"))
		return ACL_ADMIN;
	return -1;
}

static const char *const scopes[] = { "node", "quota", "agent", NULL };

json_t *acl_rules_from_hcl(const char *text, size_t len, struct diag_list *dl)
{
	size_t errors = dl->errors;
	struct hcl_body *body = hcl_parse(text, len, dl);
	json_t *rules, *ns;
	if (!body)
		return NULL;
	rules = json_object();
	ns = json_object();
	json_t *vars = json_object();
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		const struct hcl_block *b = &it->u.block;
		const struct hcl_attribute *pol;
		bool is_ns, known = false;
		if (it->kind != HCL_ITEM_BLOCK) {
			diag_error(dl, it->u.attr.pos.line, it->u.attr.pos.col,
				   "unexpected attribute \"%s\": a policy holds namespace, node, quota and agent blocks",
				   it->u.attr.name);
			continue;
		}
		is_ns = !strcmp(b->type, "namespace");
		for (size_t k = 0; scopes[k]; k++)
			known = known || !strcmp(scopes[k], b->type);
		if (!is_ns && !known) {
			diag_error(dl, b->pos.line, b->pos.col, "unknown block \"%s\" (namespace, node, quota, agent)",
				   b->type);
			continue;
		}
		if (b->nlabels != (is_ns ? 1 : 0)) {
			diag_error(dl, b->pos.line, b->pos.col, is_ns ? "namespace needs one label: namespace \"team-a\" { ... }"
							       : "%s takes no label", b->type);
			continue;
		}
		pol = hcl_body_attr(b->body, "policy");
		/* a namespace's variables blocks (acl_vars.c); policy may go */
		size_t nvars = 0;
		for (size_t j = 0; is_ns && j < b->body->n; j++) {
			const struct hcl_item *vi = &b->body->items[j];
			if (vi->kind == HCL_ITEM_BLOCK && !strcmp(vi->u.block.type, "variables")) {
				acl_vars_from_hcl(&vi->u.block, b->labels[0], vars, dl);
				nvars++;
			}
		}
		if (nvars && !pol) {
			if (b->body->n != nvars)
				diag_error(dl, b->pos.line, b->pos.col,
					   "namespace holds policy = \"...\" and variables { }");
			continue;
		}
		if (!pol || pol->value->kind != HCL_STRING ||
		    acl_level_parse(pol->value->u.str.s, is_ns) < 0) {
			diag_error(dl, pol ? pol->pos.line : b->pos.line, pol ? pol->pos.col : b->pos.col,
				   is_ns ? "policy must be \"deny\", \"read\", \"submit\" or \"admin\""
					 : "policy must be \"deny\", \"read\" or \"write\"");
			continue;
		}
		if (b->body->n != 1 + nvars)
			diag_error(dl, b->pos.line, b->pos.col, is_ns ? "namespace holds policy = \"...\" and variables { }"
								     : "%s holds only policy = \"...\"", b->type);
		if (is_ns)
			json_object_set_new(ns, b->labels[0], json_string(pol->value->u.str.s));
		else
			json_object_set_new(rules, b->type, json_string(pol->value->u.str.s));
	}
	json_object_set_new(rules, "namespace", ns);
	if (json_object_size(vars))
		json_object_set(rules, "variables", vars);
	json_decref(vars);
	hcl_body_free(body);
	if (dl->errors == errors) {
		/* what the server will check (names of namespaces, levels) */
		struct herd_err err = { 0 };
		json_t *checked = acl_rules_check(rules, &err);
		if (!checked)
			diag_error(dl, 1, 1, "%s", err.msg);
		json_decref(rules);
		rules = checked;
	}
	if (dl->errors != errors) {
		json_decref(rules);
		return NULL;
	}
	return rules;
}

/* "team-*": a valid name prefix and one final '*'. */
static bool glob_valid(const char *n)
{
	size_t len = strlen(n);
	char prefix[TEAMS_MAX_NAME + 1];
	if (len < 2 || len > TEAMS_MAX_NAME || n[len - 1] != '*')
		return false;
	memcpy(prefix, n, len - 1);
	prefix[len - 1] = '\0';
	return teams_valid_name(prefix);
}

json_t *acl_rules_check(const json_t *rules, struct herd_err *err)
{
	json_t *out = json_object(), *ns = json_object(), *v;
	const char *k;
	if (!json_is_object(rules)) {
		herd_errf(err, -EINVAL, "rules must be an object");
		goto fail;
	}
	json_object_foreach((json_t *)rules, k, v) {
		bool known = false;
		if (!strcmp(k, "namespace")) {
			const char *n;
			json_t *lv;
			if (!json_is_object(v) || json_object_size(v) > TEAMS_MAX_RULES) {
				herd_errf(err, -EINVAL, "rules.namespace must be an object of at most %d entries", TEAMS_MAX_RULES);
				goto fail;
			}
			json_object_foreach(v, n, lv) {
				bool glob_ok = !strcmp(n, "*") || teams_valid_name(n) || glob_valid(n);
				if (!glob_ok) {
					herd_errf(err, -EINVAL, "rules.namespace: a namespace name or a glob ending in * "
						  "(A-Z a-z 0-9 _ . -) is needed, not \"%.64s\"", n);
					goto fail;
				}
				if (acl_level_parse(json_string_value(lv), true) < 0) {
					herd_errf(err, -EINVAL, "rules.namespace: \"%s\" needs deny, read, submit or admin", n);
					goto fail;
				}
				json_object_set(ns, n, lv);
			}
			continue;
		}
		if (!strcmp(k, "variables")) {
			json_t *vars = acl_vars_check(v, err);
			if (!vars)
				goto fail;
			json_object_set_new(out, k, vars);
			continue;
		}
		for (size_t i = 0; scopes[i]; i++)
			known = known || !strcmp(scopes[i], k);
		if (!known) {
			herd_errf(err, -EINVAL, "unknown rule \"%s\" (namespace, variables, node, quota, agent)", k);
			goto fail;
		}
		if (acl_level_parse(json_string_value(v), false) < 0) {
			herd_errf(err, -EINVAL, "rules.%s must be deny, read or write", k);
			goto fail;
		}
		json_object_set(out, k, v);
	}
	json_object_set_new(out, "namespace", ns);
	return out;
fail:
	json_decref(ns);
	json_decref(out);
	return NULL;
}
