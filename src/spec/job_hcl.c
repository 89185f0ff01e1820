/* From the HCL body of a job file to a document tree of the canonical
 * shape (the shape of the JSON form), built in the body's arena and sharing
 * the attribute values with it: nothing is copied.
 *
 * HCL writes a list of constraints as repeated `constraint { }` blocks and
 * names groups with labels; the canonical JSON has "constraints": [...] and
 * "name" fields.  The table below says, for each block herd knows, under
 * which key it goes, whether it repeats and what its label means.  Blocks
 * not in the table (a driver's config, meta, unknown names) are converted
 * generically, and unknown names are left for job_from_json to report, so
 * that HCL and JSON files get the same messages. */
#include <string.h>

#include "spec/hcl-int.h"
#include "spec/job-int.h"
#include "spec/spec.h"

struct block_rule {
	const char *type;     /* the HCL block type */
	const char *key;      /* its key in the JSON object */
	bool repeat;          /* many blocks -> a list under key */
	const char *label;    /* the field its one label fills; NULL: no label */
	const struct block_rule *children; /* NULL: generic body */
};

static const struct block_rule rules_none[];

/* The rule of block b when its labels or body make it another block than
 * its type's rule says; NULL: that rule.  identity: the unnamed block is
 * the default workload identity, a labelled one (identity "vault" {}) a
 * named identity under "identities" with its label as name; so is an
 * unlabelled one with a name other than "default" (Nomad's way of writing
 * it, identity { name = "vault" }). */
static const struct block_rule named_identity_rule = {
	"identity", "identities", true, "name", rules_none,
};
static const struct block_rule named_identity_attr_rule = {
	"identity", "identities", true, NULL, rules_none,
};
static const struct block_rule *block_rule_instead(const struct hcl_block *b)
{
	if (strcmp(b->type, "identity"))
		return NULL;
	if (b->nlabels > 0)
		return &named_identity_rule;
	for (size_t i = 0; b->body && i < b->body->n; i++) {
		const struct hcl_item *it = &b->body->items[i];
		if (it->kind == HCL_ITEM_ATTRIBUTE && !strcmp(it->u.attr.name, "name") &&
		    it->u.attr.value->kind == HCL_STRING &&
		    strcmp(it->u.attr.value->u.str.s, "default"))
			return &named_identity_attr_rule;
	}
	return NULL;
}

#define RULE_END { NULL, NULL, false, NULL, NULL }
#define CONSTRAINT_RULES \
	{ "constraint", "constraints", true, NULL, rules_none }, \
	{ "affinity", "affinities", true, NULL, rules_none }

/* A body whose blocks are all unknown: converted generically. */
static const struct block_rule rules_none[] = { RULE_END };

static const struct block_rule rules_device[] = { CONSTRAINT_RULES, RULE_END };

/* spread { target "<value>" { percent } } */
static const struct block_rule rules_spread[] = {
	{ "target", "targets", true, "value", rules_none }, RULE_END,
};
#define SPREAD_RULE { "spread", "spreads", true, NULL, rules_spread }

static const struct block_rule rules_resources[] = {
	{ "device", "devices", true, "name", rules_device },
	{ "numa", "numa", false, NULL, rules_none },
	RULE_END,
};

static const struct block_rule rules_network[] = {
	{ "port", "ports", true, "label", rules_none }, RULE_END,
};

static const struct block_rule rules_check[] = {
	{ "check_restart", "check_restart", false, NULL, rules_none }, RULE_END,
};

static const struct block_rule rules_service[] = {
	{ "check", "checks", true, NULL, rules_check },
	{ "check_restart", "check_restart", false, NULL, rules_none },
	RULE_END,
};

static const struct block_rule rules_template[] = {
	{ "change_script", "change_script", false, NULL, rules_none }, RULE_END,
};

static const struct block_rule rules_task[] = {
	CONSTRAINT_RULES,
	{ "template", "templates", true, NULL, rules_template },
	{ "action", "actions", true, "name", rules_none },
	{ "artifact", "artifacts", true, NULL, rules_none },
	{ "lifecycle", "lifecycle", false, NULL, rules_none },
	{ "restart", "restart", false, NULL, rules_none },
	{ "volume_mount", "volume_mounts", true, NULL, rules_none },
	{ "resources", "resources", false, NULL, rules_resources },
	{ "logs", "logs", false, NULL, rules_none },
	{ "dispatch_payload", "dispatch_payload", false, NULL, rules_none },
	{ "identity", "identity", false, NULL, rules_none },
	{ "service", "services", true, NULL, rules_service },
	RULE_END,
};

static const struct block_rule rules_scaling[] = {
	{ "policy", "policy", false, NULL, rules_none },
	RULE_END,
};

static const struct block_rule rules_group[] = {
	CONSTRAINT_RULES,
	SPREAD_RULE,
	{ "restart", "restart", false, NULL, rules_none },
	{ "volume", "volumes", true, "name", rules_none },
	{ "reschedule", "reschedule", false, NULL, rules_none },
	{ "update", "update", false, NULL, rules_none },
	{ "network", "network", false, NULL, rules_network },
	{ "task", "tasks", true, "name", rules_task },
	{ "service", "services", true, NULL, rules_service },
	{ "disconnect", "disconnect", false, NULL, rules_none },
	{ "idle_gpu", "idle_gpu", false, NULL, rules_none },
	{ "scaling", "scaling", false, NULL, rules_scaling },
	{ "ephemeral_disk", "ephemeral_disk", false, NULL, rules_none },
	{ "migrate", "migrate", false, NULL, rules_none },
	RULE_END,
};

static const struct block_rule rules_job[] = {
	CONSTRAINT_RULES,
	SPREAD_RULE,
	{ "group", "groups", true, "name", rules_group },
	{ "periodic", "periodic", false, NULL, rules_none },
	{ "parameterized", "parameterized", false, NULL, rules_none },
	{ "reschedule", "reschedule", false, NULL, rules_none },
	{ "update", "update", false, NULL, rules_none },
	{ "migrate", "migrate", false, NULL, rules_none },
	{ "depends_on", "depends_on", true, NULL, rules_none },
	RULE_END,
};

struct converter {
	struct hcl_arena *arena;
	struct diag_list *diags;
	int errors;
};

static struct hcl_expr *convert_body(struct converter *c, const struct hcl_body *body,
				     const struct block_rule *rules);
static struct hcl_expr *convert_labelled(struct converter *c, const struct hcl_block *b,
					 const struct block_rule *rule);

static const struct block_rule *find_rule(const struct block_rule *rules, const char *type)
{
	for (; rules && rules->type; rules++)
		if (!strcmp(rules->type, type))
			return rules;
	return NULL;
}

/* An object under construction: its members, with room for at most cap,
 * and a key set that finds a key already set in O(1).  A body of attributes
 * only needs no key set: the parser let no attribute be set twice. */
struct object_builder {
	struct hcl_expr *obj;
	size_t cap;
	bool unique;
	struct hcl_keyset keys;
};

static void object_start(struct converter *c, struct object_builder *ob, struct hcl_pos pos,
			 size_t cap, bool unique)
{
	ob->obj = hcl_expr_new(c->arena, HCL_OBJECT, pos);
	ob->obj->u.object.v = hcl_arena_alloc(c->arena, cap * sizeof(struct hcl_object_item));
	ob->cap = cap;
	ob->unique = unique;
	ob->keys = (struct hcl_keyset){ 0 };
}

/* The member set under key, or NULL. */
static struct hcl_object_item *object_find(struct object_builder *ob, const char *key)
{
	const struct hcl_keyset_entry *e = ob->unique ? NULL : hcl_keyset_find(&ob->keys, key);
	return e ? &ob->obj->u.object.v[e->index] : NULL;
}

static struct hcl_object_item *object_add(struct object_builder *ob, const char *key,
					  struct hcl_pos key_pos, struct hcl_expr *v, bool block)
{
	size_t i = ob->obj->u.object.n++;
	struct hcl_object_item *m = &ob->obj->u.object.v[i];

	/* callers checked with object_find, and never add more than cap */
	if (!ob->unique)
		hcl_keyset_add(&ob->keys, key, key_pos, i);
	*m = (struct hcl_object_item){ (char *)key, key_pos, v, block };
	return m;
}

static struct hcl_expr *object_finish(struct object_builder *ob)
{
	hcl_keyset_release(&ob->keys);
	return ob->obj;
}

static void set_key(struct converter *c, struct object_builder *ob, const char *key,
		    struct hcl_expr *v, struct hcl_pos pos, bool block)
{
	if (object_find(ob, key)) {
		diag_error(c->diags, pos.line, pos.col, "\"%s\" is set more than once", key);
		c->errors++;
		return;
	}
	object_add(ob, key, pos, v, block);
}

/* Appends v to a list this file built (growable: its room is the next
 * power of two of its length), or to a copy of a list the reader built. */
static struct hcl_expr *list_append(struct converter *c, struct hcl_expr *list, struct hcl_expr *v)
{
	size_t n = list->u.list.n;

	if (!list->u.list.growable || (n & (n - 1)) == 0) {
		size_t room = 1;
		struct hcl_expr **nv;
		while (room <= n)
			room *= 2;
		nv = hcl_arena_alloc(c->arena, room * sizeof(*nv));
		if (n)
			memcpy(nv, list->u.list.v, n * sizeof(*nv));
		if (!list->u.list.growable) {
			struct hcl_expr *copy = hcl_expr_new(c->arena, HCL_LIST, list->pos);
			copy->u.list.n = n;
			copy->u.list.growable = true;
			list = copy;
		}
		list->u.list.v = nv;
	}
	list->u.list.v[list->u.list.n++] = v;
	return list;
}

static struct hcl_expr *new_list(struct converter *c, struct hcl_pos pos)
{
	struct hcl_expr *l = hcl_expr_new(c->arena, HCL_LIST, pos);
	l->u.list.growable = true;
	return l;
}

static struct hcl_expr *new_string(struct converter *c, const char *s, struct hcl_pos pos)
{
	struct hcl_expr *e = hcl_expr_new(c->arena, HCL_STRING, pos);
	e->u.str.s = (char *)s;
	e->u.str.len = strlen(s);
	return e;
}

/* A block not in the table: its body, nested under its labels the way
 * HCL's JSON form does (`mount "a" { }` -> {"a": {...}}).  The block's
 * object sits where its type word is. */
static struct hcl_expr *convert_generic_block(struct converter *c, const struct hcl_block *b)
{
	struct hcl_expr *v = convert_body(c, b->body, rules_none);

	for (int i = b->nlabels - 1; i >= 0; i--) {
		struct object_builder ob;
		object_start(c, &ob, b->label_pos[i], 1, true);
		object_add(&ob, b->labels[i], b->label_pos[i], v, true);
		v = object_finish(&ob);
	}
	v->pos = b->pos;
	return v;
}

static struct hcl_expr *convert_known_block(struct converter *c, const struct hcl_block *b,
					    const struct block_rule *rule)
{
	int want = rule->label ? 1 : 0;
	struct hcl_expr *v;

	if (b->nlabels != want) {
		if (want)
			diag_error(c->diags, b->pos.line, b->pos.col,
				   "block \"%s\" needs one label (its %s)", b->type, rule->label);
		else
			diag_error(c->diags, b->pos.line, b->pos.col,
				   "block \"%s\" takes no label", b->type);
		c->errors++;
		return NULL;
	}
	v = convert_body(c, b->body, rule->children);
	v->pos = b->pos;
	return v;
}

/* Adds a converted block under key: a list for repeatable blocks, and for
 * blocks of unknown meaning a list only once the type repeats. */
static void add_block(struct converter *c, struct object_builder *ob, const char *key,
		      struct hcl_expr *v, const struct hcl_block *b, const struct block_rule *rule)
{
	struct hcl_object_item *have = object_find(ob, key);

	if (rule && rule->repeat) {
		if (!have) {
			have = object_add(ob, key, b->pos, new_list(c, b->pos), true);
		} else if (have->value->kind != HCL_LIST || !have->from_block) {
			diag_error(c->diags, b->pos.line, b->pos.col,
				   "\"%s\" is set both as an attribute and as a block", key);
			c->errors++;
			return;
		}
		have->value = list_append(c, have->value, v);
		return;
	}
	if (!have) {
		object_add(ob, key, b->pos, v, true);
	} else if (rule) {
		diag_error(c->diags, b->pos.line, b->pos.col,
			   "block \"%s\" is repeated; only one is allowed here", b->type);
		c->errors++;
	} else if (have->value->kind == HCL_LIST) {
		have->value = list_append(c, have->value, v);
	} else {
		struct hcl_expr *l = new_list(c, have->value->pos);
		l = list_append(c, l, have->value);
		have->value = list_append(c, l, v);
	}
}

static struct hcl_expr *convert_body(struct converter *c, const struct hcl_body *body,
				     const struct block_rule *rules)
{
	struct object_builder ob;
	bool blocks = false;

	for (size_t i = 0; i < body->n && !blocks; i++)
		blocks = body->items[i].kind == HCL_ITEM_BLOCK;
	/* one member per item at most, and one for a block's label */
	object_start(c, &ob, body->open_pos, body->n + 1, !blocks);
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_ATTRIBUTE) {
			const struct hcl_attribute *a = &it->u.attr;
			set_key(c, &ob, a->name, a->value, a->pos, false);
		} else {
			const struct hcl_block *b = &it->u.block;
			const struct block_rule *rule = find_rule(rules, b->type);
			if (rule && !rule->label && block_rule_instead(b))
				rule = block_rule_instead(b);
			const char *key = rule ? rule->key : b->type;
			struct hcl_expr *v = rule ? convert_labelled(c, b, rule)
						  : convert_generic_block(c, b);
			if (v)
				add_block(c, &ob, key, v, b, rule);
		}
	}
	return object_finish(&ob);
}

/* A known block with a label: the label becomes a field of its object. */
static struct hcl_expr *convert_labelled(struct converter *c, const struct hcl_block *b,
					 const struct block_rule *rule)
{
	struct hcl_expr *v = convert_known_block(c, b, rule);
	struct hcl_object_item *m;

	if (!v || !rule->label)
		return v;
	for (size_t i = 0; i < v->u.object.n; i++) {
		m = &v->u.object.v[i];
		if (!strcmp(m->key, rule->label)) {
			diag_error(c->diags, b->label_pos[0].line, b->label_pos[0].col,
				   "\"%s\" is set more than once", rule->label);
			c->errors++;
			return v;
		}
	}
	/* convert_body left room for it */
	m = &v->u.object.v[v->u.object.n++];
	*m = (struct hcl_object_item){ (char *)rule->label, b->label_pos[0],
				       new_string(c, b->labels[0], b->label_pos[0]), false };
	return v;
}

struct hcl_expr *job_hcl_to_expr(const struct hcl_body *body, struct diag_list *diags)
{
	static const struct block_rule job_rule = { "job", "job", false, "id", rules_job };
	struct converter c = { ((const struct hcl_body_root *)body)->arena, diags, 0 };
	struct hcl_expr *job = NULL;

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		struct hcl_pos pos = it->kind == HCL_ITEM_BLOCK ? it->u.block.pos : it->u.attr.pos;
		const char *name = it->kind == HCL_ITEM_BLOCK ? it->u.block.type : it->u.attr.name;

		if (it->kind != HCL_ITEM_BLOCK || strcmp(name, "job")) {
			diag_error(diags, pos.line, pos.col,
				   "\"%s\" is not supported at the top level; a job file holds one "
				   "job block", name);
			c.errors++;
		} else if (job) {
			diag_error(diags, pos.line, pos.col, "a job file holds only one job block");
			c.errors++;
		} else {
			job = convert_labelled(&c, &it->u.block, &job_rule);
		}
	}
	if (!job && !c.errors) {
		diag_error(diags, 1, 1, "no job block: a job file holds one job \"<id>\" { ... } block");
		c.errors++;
	}
	/* with structural errors the rest is still returned, so that the
	 * decoder can report its problems in the same run */
	return job;
}

json_t *job_hcl_to_json(const struct hcl_body *body, struct posmap *pm, struct diag_list *diags)
{
	struct hcl_expr *e = job_hcl_to_expr(body, diags);
	return e ? hcl_expr_to_json(e, pm) : NULL;
}
