/* From the HCL body of a job file to a JSON tree of the canonical shape.
 *
 * HCL writes a list of constraints as repeated `constraint { }` blocks and
 * names groups with labels; the canonical JSON has "constraints": [...] and
 * "name" fields.  The table below says, for each block herd knows, under
 * which key it goes, whether it repeats and what its label means.  Blocks
 * not in the table (a driver's config, meta, unknown names) are converted
 * generically, and unknown names are left for job_from_json to report, so
 * that HCL and JSON files get the same messages. */
#include <string.h>

#include "spec/spec.h"

struct block_rule {
	const char *type;     /* the HCL block type */
	const char *key;      /* its key in the JSON object */
	bool repeat;          /* many blocks -> a list under key */
	const char *label;    /* the field its one label fills; NULL: no label */
	const struct block_rule *children; /* NULL: generic body */
};

#define RULE_END { NULL, NULL, false, NULL, NULL }
#define CONSTRAINT_RULES \
	{ "constraint", "constraints", true, NULL, rules_none }, \
	{ "affinity", "affinities", true, NULL, rules_none }

/* A body whose blocks are all unknown: converted generically. */
static const struct block_rule rules_none[] = { RULE_END };

static const struct block_rule rules_device[] = { CONSTRAINT_RULES, RULE_END };

static const struct block_rule rules_resources[] = {
	{ "device", "devices", true, "name", rules_device }, RULE_END,
};

static const struct block_rule rules_network[] = {
	{ "port", "ports", true, "label", rules_none }, RULE_END,
};

static const struct block_rule rules_task[] = {
	CONSTRAINT_RULES,
	{ "template", "templates", true, NULL, rules_none },
	{ "artifact", "artifacts", true, NULL, rules_none },
	{ "lifecycle", "lifecycle", false, NULL, rules_none },
	{ "resources", "resources", false, NULL, rules_resources },
	{ "logs", "logs", false, NULL, rules_none },
	RULE_END,
};

static const struct block_rule rules_group[] = {
	CONSTRAINT_RULES,
	{ "restart", "restart", false, NULL, rules_none },
	{ "reschedule", "reschedule", false, NULL, rules_none },
	{ "network", "network", false, NULL, rules_network },
	{ "task", "tasks", true, "name", rules_task },
	RULE_END,
};

static const struct block_rule rules_job[] = {
	CONSTRAINT_RULES,
	{ "group", "groups", true, "name", rules_group },
	RULE_END,
};

struct converter {
	struct posmap *pm;
	struct diag_list *diags;
	int errors;
};

static json_t *convert_body(struct converter *c, const struct hcl_body *body,
			    const struct block_rule *rules);

static json_t *with_pos(struct converter *c, json_t *v, struct hcl_pos pos)
{
	posmap_set(c->pm, v, pos);
	return v;
}

static const struct block_rule *find_rule(const struct block_rule *rules, const char *type)
{
	for (; rules && rules->type; rules++)
		if (!strcmp(rules->type, type))
			return rules;
	return NULL;
}

static void set_key(struct converter *c, json_t *obj, const char *key, json_t *v,
		    struct hcl_pos pos)
{
	if (json_object_get(obj, key)) {
		diag_error(c->diags, pos.line, pos.col, "\"%s\" is set more than once", key);
		c->errors++;
		json_decref(v);
		return;
	}
	json_object_set_new(obj, key, v);
}

/* A block not in the table: its body, nested under its labels the way
 * HCL's JSON form does (`mount "a" { }` -> {"a": {...}}). */
static json_t *convert_generic_block(struct converter *c, const struct hcl_block *b)
{
	json_t *v = convert_body(c, b->body, rules_none);
	for (int i = b->nlabels - 1; i >= 0 && v; i--) {
		json_t *o = with_pos(c, json_object(), b->label_pos[i]);
		json_object_set_new(o, b->labels[i], v);
		v = o;
	}
	return v;
}

static json_t *convert_known_block(struct converter *c, const struct hcl_block *b,
				   const struct block_rule *rule)
{
	int want = rule->label ? 1 : 0;
	json_t *v;

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
	if (v && rule->label)
		set_key(c, v, rule->label, with_pos(c, json_string(b->labels[0]), b->label_pos[0]),
			b->label_pos[0]);
	return v;
}

/* Adds a converted block under key: a list for repeatable blocks, and for
 * blocks of unknown meaning a list only once the type repeats. */
static void add_block(struct converter *c, json_t *obj, const char *key, json_t *v,
		      const struct hcl_block *b, const struct block_rule *rule)
{
	json_t *have = json_object_get(obj, key);

	if (rule && rule->repeat) {
		if (!have) {
			have = with_pos(c, json_array(), b->pos);
			json_object_set_new(obj, key, have);
		} else if (!json_is_array(have)) {
			diag_error(c->diags, b->pos.line, b->pos.col,
				   "\"%s\" is set both as an attribute and as a block", key);
			c->errors++;
			json_decref(v);
			return;
		}
		json_array_append_new(have, v);
		return;
	}
	if (!have) {
		json_object_set_new(obj, key, v);
	} else if (rule) {
		diag_error(c->diags, b->pos.line, b->pos.col,
			   "block \"%s\" is repeated; only one is allowed here", b->type);
		c->errors++;
		json_decref(v);
	} else if (json_is_array(have)) {
		json_array_append_new(have, v);
	} else {
		json_t *a = with_pos(c, json_array(), posmap_get(c->pm, have));
		json_array_append(a, have);
		json_array_append_new(a, v);
		json_object_set_new(obj, key, a);
	}
}

static json_t *convert_body(struct converter *c, const struct hcl_body *body,
			    const struct block_rule *rules)
{
	json_t *obj = with_pos(c, json_object(), body->open_pos);

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		if (it->kind == HCL_ITEM_ATTRIBUTE) {
			const struct hcl_attribute *a = &it->u.attr;
			set_key(c, obj, a->name, hcl_expr_to_json(a->value, c->pm), a->pos);
		} else {
			const struct hcl_block *b = &it->u.block;
			const struct block_rule *rule = find_rule(rules, b->type);
			json_t *v = rule ? convert_known_block(c, b, rule) : convert_generic_block(c, b);
			if (!v)
				continue;
			/* a block's object sits where its type word is */
			posmap_set(c->pm, v, b->pos);
			add_block(c, obj, rule ? rule->key : b->type, v, b, rule);
		}
	}
	return obj;
}

json_t *job_hcl_to_json(const struct hcl_body *body, struct posmap *pm, struct diag_list *diags)
{
	static const struct block_rule job_rule = { "job", "job", false, "id", rules_job };
	struct converter c = { pm, diags, 0 };
	json_t *job = NULL;

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
			job = convert_known_block(&c, &it->u.block, &job_rule);
			if (job)
				posmap_set(pm, job, pos);
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
