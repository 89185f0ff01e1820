/* constraint: Nomad's constraint operators over node and device attributes.
 *
 * Comparisons (<, <=, >, >=) are numeric when both sides are numbers, by
 * size when both carry a size unit ("16 GiB" vs "8192 MiB"), lexical
 * otherwise.  Sets are comma-separated lists. */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "sched/sched-int.h"

static const char *const op_names[] = {
	[SCHED_OP_EQ] = "=", [SCHED_OP_NE] = "!=", [SCHED_OP_LT] = "<", [SCHED_OP_LE] = "<=",
	[SCHED_OP_GT] = ">", [SCHED_OP_GE] = ">=", [SCHED_OP_REGEXP] = "regexp",
	[SCHED_OP_SET_CONTAINS] = "set_contains", [SCHED_OP_SET_CONTAINS_ANY] = "set_contains_any",
	[SCHED_OP_VERSION] = "version", [SCHED_OP_SEMVER] = "semver",
	[SCHED_OP_IS_SET] = "is_set", [SCHED_OP_IS_NOT_SET] = "is_not_set",
};

int sched_op_parse(const char *s, enum sched_op *out)
{
	static const struct {
		const char *name;
		enum sched_op op;
	} alias[] = {
		{ "==", SCHED_OP_EQ }, { "is", SCHED_OP_EQ }, { "not", SCHED_OP_NE },
		{ "set_contains_all", SCHED_OP_SET_CONTAINS },
	};
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(s, op_names[i])) {
			*out = (enum sched_op)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(s, alias[i].name)) {
			*out = alias[i].op;
			return 0;
		}
	return -EINVAL;
}

const char *sched_op_name(enum sched_op op)
{
	return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

static const char *kv_get(const struct kvlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->key[i], key))
			return l->value[i];
	return NULL;
}

const char *resolve_target(const struct sched_snapshot *s, const struct sched_node *n,
			   const struct dev_profile *p, const struct sched_dev *d,
			   const char *t, char *buf, size_t bufsize)
{
	size_t len;
	char key[256];

	if (!t)
		return NULL;
	len = strlen(t);
	if (len < 3 || t[0] != '$' || t[1] != '{' || t[len - 1] != '}')
		return t; /* a literal */
	if (len - 3 >= sizeof(key))
		return NULL;
	memcpy(key, t + 2, len - 3);
	key[len - 3] = 0;
	if (!strcmp(key, "node.unique.id"))
		return n->id;
	if (!strcmp(key, "node.unique.name"))
		return n->name;
	if (!strcmp(key, "node.class"))
		return n->node_class;
	if (!strcmp(key, "node.datacenter"))
		return n->datacenter;
	if (!strncmp(key, "attr.", 5))
		return kv_get(&n->attrs, key + 5);
	if (!strncmp(key, "meta.", 5))
		return kv_get(&n->meta, key + 5);
	if (!p)
		return NULL;
	if (!strcmp(key, "device.model"))
		return p->model;
	if (!strcmp(key, "device.vendor"))
		return p->vendor;
	if (!strcmp(key, "device.type"))
		return p->type;
	if (!strcmp(key, "device.ids")) {
		if (!d)
			return NULL;
		snprintf(buf, bufsize, "%s", d->id);
		return buf;
	}
	if (!strncmp(key, "device.attr.", 12))
		return kv_get(&p->attrs, key + 12);
	(void)s;
	return NULL;
}

static bool parse_number(const char *s, double *out)
{
	char *end;
	if (!*s)
		return false;
	*out = strtod(s, &end);
	while (isspace((unsigned char)*end))
		end++;
	return !*end;
}

static bool has_unit(const char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return n && isalpha((unsigned char)s[n - 1]);
}

/* <0, 0, >0 like strcmp. */
static int compare_values(const char *l, const char *r)
{
	double a, b;
	int64_t x, y;

	if (parse_number(l, &a) && parse_number(r, &b))
		return (a > b) - (a < b);
	if (has_unit(l) && has_unit(r) && !parse_size(l, &x, NULL) && !parse_size(r, &y, NULL))
		return (x > y) - (x < y);
	return strcmp(l, r);
}

/* The next item of the comma-separated list at *p, without the white space
 * around it, as [*a, *b); moves *p past it.  False at the end of the list. */
static bool next_item(const char **p, const char **a, const char **b)
{
	const char *e;

	if (!*p || !**p)
		return false;
	e = strchr(*p, ',');
	*a = *p;
	*b = e ? e : *p + strlen(*p);
	*p = e ? e + 1 : NULL;
	while (*a < *b && isspace((unsigned char)**a))
		(*a)++;
	while (*b > *a && isspace((unsigned char)(*b)[-1]))
		(*b)--;
	return true;
}

/* Is item (len bytes) among the comma-separated values of set? */
static bool set_has(const char *set, const char *item, size_t len)
{
	const char *a, *b;
	while (next_item(&set, &a, &b))
		if ((size_t)(b - a) == len && !memcmp(a, item, len))
			return true;
	return false;
}

/* all = true: every item of want in have; false: any. */
static bool set_check(const char *have, const char *want, bool all)
{
	const char *a, *b;
	bool any = false;
	while (next_item(&want, &a, &b)) {
		if (b > a) {
			bool in = set_has(have, a, (size_t)(b - a));
			if (all && !in)
				return false;
			any |= in;
		}
	}
	return all ? true : any;
}

/* Versions: up to 4 numeric components, an optional "-prerelease". */
struct version {
	long v[4];
	char pre[64];
};

static int parse_version(const char *s, struct version *out, bool strict)
{
	int i = 0;
	memset(out, 0, sizeof(*out));
	while (isspace((unsigned char)*s))
		s++;
	if (*s == 'v' && !strict)
		s++;
	for (;;) {
		char *end;
		if (!isdigit((unsigned char)*s) || i == 4)
			return -EINVAL;
		out->v[i++] = strtol(s, &end, 10);
		s = end;
		if (*s != '.')
			break;
		s++;
	}
	if (strict && i != 3)
		return -EINVAL;
	if (*s == '-') {
		snprintf(out->pre, sizeof(out->pre), "%.*s", (int)strcspn(s + 1, "+ "), s + 1);
		s += 1 + strcspn(s + 1, "+ ");
	}
	if (*s == '+')
		s += strcspn(s, " ");
	while (isspace((unsigned char)*s))
		s++;
	return *s ? -EINVAL : 0;
}

static int version_cmp(const struct version *a, const struct version *b)
{
	for (int i = 0; i < 4; i++)
		if (a->v[i] != b->v[i])
			return a->v[i] < b->v[i] ? -1 : 1;
	/* a prerelease sorts before its release */
	if (!*a->pre != !*b->pre)
		return *a->pre ? -1 : 1;
	return strcmp(a->pre, b->pre);
}

/* rtarget such as ">= 1.2, < 2.0" or "~> 1.2"; every term must hold.
 * Returns 1 (holds), 0 (does not) or -EINVAL. */
static int version_check(const char *have, const char *want, bool strict)
{
	struct version h;
	char term[128];
	const char *p = want;

	if (parse_version(have, &h, strict))
		return 0; /* an attribute that is no version does not match */
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		const char *t = term, *vs;
		struct version w;
		int c;
		if (n >= sizeof(term))
			return -EINVAL;
		memcpy(term, p, n);
		term[n] = 0;
		while (isspace((unsigned char)*t))
			t++;
		vs = t + strspn(t, "<>=!~");
		if (parse_version(vs, &w, false))
			return -EINVAL;
		c = version_cmp(&h, &w);
		if (vs == t || !strncmp(t, "=", (size_t)(vs - t))) {
			if (c)
				return 0;
		} else if (!strncmp(t, "!=", 2)) {
			if (!c)
				return 0;
		} else if (!strncmp(t, ">=", 2)) {
			if (c < 0)
				return 0;
		} else if (!strncmp(t, "<=", 2)) {
			if (c > 0)
				return 0;
		} else if (!strncmp(t, "~>", 2)) {
			/* pessimistic: >= w and below the next release of the
			 * second-to-last given component */
			int k = 0;
			while (k < 3 && strchr(vs, '.') && (vs = strchr(vs, '.') + 1))
				k++;
			if (c < 0)
				return 0;
			for (int i = 0; i < k; i++)
				if (h.v[i] != w.v[i])
					return 0;
		} else if (*t == '>') {
			if (c <= 0)
				return 0;
		} else if (*t == '<') {
			if (c >= 0)
				return 0;
		} else {
			return -EINVAL;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return 1;
}

int constraint_validate(const struct sched_constraint *c, struct herd_err *err)
{
	if ((unsigned)c->op > SCHED_OP_IS_NOT_SET)
		return herd_errf(err, -EINVAL, "constraint on %s: unknown operator",
				 c->ltarget ? c->ltarget : "?");
	if (c->op == SCHED_OP_REGEXP) {
		regex_t re;
		if (!c->rtarget || regcomp(&re, c->rtarget, REG_EXTENDED | REG_NOSUB))
			return herd_errf(err, -EINVAL, "constraint on %s: bad regexp \"%s\"",
					 c->ltarget ? c->ltarget : "?", c->rtarget ? c->rtarget : "");
		regfree(&re);
	}
	if ((c->op == SCHED_OP_VERSION || c->op == SCHED_OP_SEMVER) &&
	    version_check("0.0.0", c->rtarget ? c->rtarget : "", false) < 0)
		return herd_errf(err, -EINVAL, "constraint on %s: bad version \"%s\"",
				 c->ltarget ? c->ltarget : "?", c->rtarget ? c->rtarget : "");
	return 0;
}

int constraint_check(const struct sched_snapshot *s, const struct sched_node *n,
		     const struct dev_profile *p, const struct sched_dev *d,
		     const struct sched_constraint *c, struct herd_err *err)
{
	char lb[128], rb[128];
	const char *l = resolve_target(s, n, p, d, c->ltarget, lb, sizeof(lb));
	const char *r = resolve_target(s, n, p, d, c->rtarget, rb, sizeof(rb));
	int rc;

	if (c->op == SCHED_OP_IS_SET)
		return l != NULL;
	if (c->op == SCHED_OP_IS_NOT_SET)
		return l == NULL;
	if (c->op == SCHED_OP_NE)
		return !l || !r || strcmp(l, r) != 0;
	if (!l || !r)
		return 0; /* an unset attribute matches nothing but != and is_not_set */
	switch (c->op) {
	case SCHED_OP_EQ:
		return !strcmp(l, r);
	case SCHED_OP_LT:
		return compare_values(l, r) < 0;
	case SCHED_OP_LE:
		return compare_values(l, r) <= 0;
	case SCHED_OP_GT:
		return compare_values(l, r) > 0;
	case SCHED_OP_GE:
		return compare_values(l, r) >= 0;
	case SCHED_OP_REGEXP: {
		regex_t re;
		if (regcomp(&re, r, REG_EXTENDED | REG_NOSUB))
			return herd_errf(err, -EINVAL, "bad regexp \"%s\"", r);
		rc = regexec(&re, l, 0, NULL, 0) == 0;
		regfree(&re);
		return rc;
	}
	case SCHED_OP_SET_CONTAINS:
		return set_check(l, r, true);
	case SCHED_OP_SET_CONTAINS_ANY:
		return set_check(l, r, false);
	case SCHED_OP_VERSION:
	case SCHED_OP_SEMVER:
		rc = version_check(l, r, c->op == SCHED_OP_SEMVER);
		return rc < 0 ? herd_errf(err, -EINVAL, "bad version constraint \"%s\"", r) : rc;
	default:
		return herd_errf(err, -EINVAL, "unknown operator");
	}
}
