/* quota_spec: quota specifications (HCL and JSON) and the arithmetic of GPU
 * shares.  See teams.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/idle_gpu.h"
#include "server/teams.h"
#include "spec/hcl.h"

bool teams_valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > TEAMS_MAX_NAME || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

/* ---- HCL ------------------------------------------------------------------ */

static json_t *hcl_scalar(const struct hcl_expr *e)
{
	switch (e->kind) {
	case HCL_STRING: return json_stringn(e->u.str.s, e->u.str.len);
	case HCL_NUMBER: return e->u.num.is_int ? json_integer(e->u.num.i) : json_real(e->u.num.value);
	case HCL_BOOL: return json_boolean(e->u.boolean);
	default: return NULL;
	}
}

/* Copies the attributes of body named in `keys` into o; anything else is an
 * error, except the blocks named in `blocks` (left to the caller). */
static void attrs_into(const struct hcl_body *body, json_t *o, const char *const *keys,
		       const char *const *blocks, const char *where, struct diag_list *dl)
{
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		bool known = false;
		if (it->kind == HCL_ITEM_BLOCK) {
			for (size_t k = 0; blocks && blocks[k]; k++)
				known = known || !strcmp(blocks[k], it->u.block.type);
			if (!known)
				diag_error(dl, it->u.block.pos.line, it->u.block.pos.col,
					   "unexpected block \"%s\" in %s", it->u.block.type, where);
			continue;
		}
		for (size_t k = 0; keys[k]; k++)
			known = known || !strcmp(keys[k], it->u.attr.name);
		json_t *v = known ? hcl_scalar(it->u.attr.value) : NULL;
		if (!known)
			diag_error(dl, it->u.attr.pos.line, it->u.attr.pos.col,
				   "unexpected attribute \"%s\" in %s", it->u.attr.name, where);
		else if (!v)
			diag_error(dl, it->u.attr.value->pos.line, it->u.attr.value->pos.col,
				   "%s must be a string, number or bool, not %s", it->u.attr.name,
				   hcl_kind_name(it->u.attr.value->kind));
		else
			json_object_set_new(o, it->u.attr.name, v);
	}
}

static json_t *region_limit_from_hcl(const struct hcl_block *blk, struct diag_list *dl)
{
	static const char *const keys[] = { "cpu", "memory", NULL };
	static const char *const blocks[] = { "device", NULL };
	json_t *o = json_object(), *devs = json_array();
	attrs_into(blk->body, o, keys, blocks, "region_limit", dl);
	for (size_t i = 0; i < blk->body->n; i++) {
		const struct hcl_item *it = &blk->body->items[i];
		static const char *const dkeys[] = { "count", NULL };
		json_t *d;
		if (it->kind != HCL_ITEM_BLOCK || strcmp(it->u.block.type, "device"))
			continue;
		if (it->u.block.nlabels != 1) {
			diag_error(dl, it->u.block.pos.line, it->u.block.pos.col,
				   "device needs one label, its name: device \"nvidia/gpu\" { count = 4 }");
			continue;
		}
		d = json_pack("{s:s}", "name", it->u.block.labels[0]);
		attrs_into(it->u.block.body, d, dkeys, NULL, "device", dl);
		if (!json_object_get(d, "count"))
			diag_error(dl, it->u.block.pos.line, it->u.block.pos.col,
				   "device \"%s\" needs count", it->u.block.labels[0]);
		json_array_append_new(devs, d);
	}
	json_object_set_new(o, "devices", devs);
	return o;
}

/* The idle_gpu block (docs/teams.md, "Idle GPUs") into o["idle_gpu"],
 * checked here so that an error names its line. */
static void idle_gpu_from_hcl(const struct hcl_block *blk, json_t *o, struct diag_list *dl)
{
	static const char *const keys[] = { "utilization_below", "after", "action", NULL };
	struct herd_err err = { 0 };
	size_t errors = dl->errors;
	json_t *b, *checked;

	if (json_object_get(o, "idle_gpu")) {
		diag_error(dl, blk->pos.line, blk->pos.col, "idle_gpu given twice");
		return;
	}
	if (blk->nlabels) {
		diag_error(dl, blk->pos.line, blk->pos.col, "idle_gpu takes no label: idle_gpu { ... }");
		return;
	}
	b = json_object();
	attrs_into(blk->body, b, keys, NULL, "idle_gpu", dl);
	checked = dl->errors == errors ? idle_policy_check(b, "idle_gpu", &err) : NULL;
	if (dl->errors == errors && !checked)
		diag_error(dl, blk->pos.line, blk->pos.col, "%s", err.msg);
	if (checked)
		json_object_set_new(o, "idle_gpu", checked);
	json_decref(b);
}

json_t *quota_spec_from_hcl(const char *text, size_t len, struct diag_list *dl)
{
	static const char *const keys[] = { "name", "description", "borrow", "borrow_limit", NULL };
	static const char *const blocks[] = { "limit", "idle_gpu", NULL };
	size_t errors = dl->errors;
	struct hcl_body *body = hcl_parse(text, len, dl);
	json_t *o, *limits;
	if (!body)
		return NULL;
	o = json_object();
	limits = json_array();
	attrs_into(body, o, keys, blocks, "the quota", dl);
	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		static const char *const lkeys[] = { "region", NULL };
		static const char *const lblocks[] = { "region_limit", NULL };
		json_t *l;
		if (it->kind == HCL_ITEM_BLOCK && !strcmp(it->u.block.type, "idle_gpu")) {
			idle_gpu_from_hcl(&it->u.block, o, dl);
			continue;
		}
		if (it->kind != HCL_ITEM_BLOCK || strcmp(it->u.block.type, "limit"))
			continue;
		l = json_object();
		attrs_into(it->u.block.body, l, lkeys, lblocks, "limit", dl);
		for (size_t k = 0; k < it->u.block.body->n; k++) {
			const struct hcl_item *r = &it->u.block.body->items[k];
			if (r->kind == HCL_ITEM_BLOCK && !strcmp(r->u.block.type, "region_limit")) {
				if (json_object_get(l, "region_limit"))
					diag_error(dl, r->u.block.pos.line, r->u.block.pos.col,
						   "region_limit given twice");
				else
					json_object_set_new(l, "region_limit", region_limit_from_hcl(&r->u.block, dl));
			}
		}
		if (!json_object_get(l, "region_limit"))
			diag_error(dl, it->u.block.pos.line, it->u.block.pos.col, "limit needs a region_limit block");
		json_array_append_new(limits, l);
	}
	json_object_set_new(o, "limits", limits);
	if (!json_object_get(o, "name"))
		diag_error(dl, 1, 1, "the quota needs a name (name = \"team-a\")");
	if (dl->errors == errors) {
		struct herd_err err = { 0 };
		json_t *checked = quota_spec_check(o, &err);
		if (!checked)
			diag_error(dl, 1, 1, "%s", err.msg);
		json_decref(o);
		o = checked;
	}
	hcl_body_free(body);
	if (dl->errors != errors) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- JSON ----------------------------------------------------------------- */

static int check_amount(const json_t *v, const char *what, bool fraction, double *out,
			struct herd_err *err)
{
	double d;
	if (!v || json_is_null(v)) {
		*out = 0;
		return 0;
	}
	if (!json_is_number(v) || (!fraction && !json_is_integer(v)))
		return herd_errf(err, -EINVAL, "%s must be a%s number", what, fraction ? "" : "n integer");
	d = json_number_value(v);
	if (!(d >= 0) || d > 1e12)
		return herd_errf(err, -EINVAL, "%s must be between 0 and 10^12", what);
	*out = d;
	return 0;
}

static int check_keys(const json_t *o, const char *const *keys, const char *what,
		      struct herd_err *err)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return herd_errf(err, -EINVAL, "%s must be an object", what);
	json_object_foreach((json_t *)o, k, v) {
		bool known = false;
		(void)v;
		for (size_t i = 0; keys[i]; i++)
			known = known || !strcmp(keys[i], k);
		if (!known)
			return herd_errf(err, -EINVAL, "unknown field \"%s\" in %s", k, what);
	}
	return 0;
}

static json_t *check_region_limit(const json_t *rl, struct herd_err *err)
{
	static const char *const keys[] = { "cpu", "memory", "devices", NULL };
	static const char *const dkeys[] = { "name", "count", NULL };
	double cpu, mem;
	json_t *out, *devs = json_array(), *d, *ds = json_object_get(rl, "devices");
	size_t i;
	if (check_keys(rl, keys, "region_limit", err) < 0 ||
	    check_amount(json_object_get(rl, "cpu"), "region_limit.cpu", false, &cpu, err) < 0 ||
	    check_amount(json_object_get(rl, "memory"), "region_limit.memory", false, &mem, err) < 0)
		goto fail;
	if (ds && !json_is_array(ds)) {
		herd_errf(err, -EINVAL, "region_limit.devices must be an array");
		goto fail;
	}
	if (json_array_size(ds) > TEAMS_MAX_DEVICE_LIMITS) {
		herd_errf(err, -EINVAL, "at most %d device limits", TEAMS_MAX_DEVICE_LIMITS);
		goto fail;
	}
	json_array_foreach(ds, i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		double count;
		if (check_keys(d, dkeys, "a device limit", err) < 0)
			goto fail;
		if (!name || !*name || strlen(name) > 256) {
			herd_errf(err, -EINVAL, "a device limit needs a name such as \"nvidia/gpu\"");
			goto fail;
		}
		if (!json_object_get(d, "count")) {
			herd_errf(err, -EINVAL, "device limit \"%s\" needs a count", name);
			goto fail;
		}
		if (check_amount(json_object_get(d, "count"), "device count", true, &count, err) < 0)
			goto fail;
		json_array_append_new(devs, json_pack("{s:s, s:f}", "name", name, "count", count));
	}
	out = json_pack("{s:I, s:I, s:o}", "cpu", (json_int_t)cpu, "memory", (json_int_t)mem, "devices", devs);
	return out;
fail:
	json_decref(devs);
	return NULL;
}

json_t *quota_spec_check(const json_t *spec, struct herd_err *err)
{
	static const char *const keys[] = { "name", "description", "borrow", "borrow_limit", "limits",
					    "idle_gpu", "create_index", "modify_index", NULL };
	static const char *const lkeys[] = { "region", "region_limit", NULL };
	const char *name = json_string_value(json_object_get(spec, "name"));
	const char *desc = json_string_value(json_object_get(spec, "description"));
	json_t *limits = json_object_get(spec, "limits"), *l, *out, *olimits;
	json_t *borrow = json_object_get(spec, "borrow");
	double blimit;
	size_t i;

	if (check_keys(spec, keys, "the quota", err) < 0)
		return NULL;
	if (!teams_valid_name(name)) {
		herd_errf(err, -EINVAL, "quota name must be 1..%d characters of A-Z a-z 0-9 _ . -",
			  TEAMS_MAX_NAME);
		return NULL;
	}
	if (json_object_get(spec, "description") && (!desc || strlen(desc) > TEAMS_MAX_DESCRIPTION)) {
		herd_errf(err, -EINVAL, "description must be a string of at most %d bytes", TEAMS_MAX_DESCRIPTION);
		return NULL;
	}
	if (borrow && !json_is_boolean(borrow)) {
		herd_errf(err, -EINVAL, "borrow must be true or false");
		return NULL;
	}
	if (check_amount(json_object_get(spec, "borrow_limit"), "borrow_limit", true, &blimit, err) < 0)
		return NULL;
	if (limits && !json_is_array(limits)) {
		herd_errf(err, -EINVAL, "limits must be an array");
		return NULL;
	}
	if (json_array_size(limits) > 8) {
		herd_errf(err, -EINVAL, "at most 8 limit blocks");
		return NULL;
	}
	olimits = json_array();
	json_array_foreach(limits, i, l) {
		const char *region = json_string_value(json_object_get(l, "region"));
		json_t *rl;
		if (check_keys(l, lkeys, "limit", err) < 0)
			goto fail;
		if (json_object_get(l, "region") && (!region || !*region)) {
			herd_errf(err, -EINVAL, "limit.region must be a region name");
			goto fail;
		}
		rl = check_region_limit(json_object_get(l, "region_limit"), err);
		if (!rl)
			goto fail;
		json_array_append_new(olimits, json_pack("{s:s, s:o}", "region", region ? region : "global",
							 "region_limit", rl));
	}
	out = json_pack("{s:s, s:s, s:b, s:f, s:o}", "name", name, "description", desc ? desc : "",
			"borrow", json_is_true(borrow) || blimit > 0, "borrow_limit", blimit, "limits", olimits);
	/* optional: quotas stored before it existed have none */
	if (json_object_get(spec, "idle_gpu")) {
		json_t *idle = idle_policy_check(json_object_get(spec, "idle_gpu"), "idle_gpu", err);
		if (!idle) {
			json_decref(out);
			return NULL;
		}
		json_object_set_new(out, "idle_gpu", idle);
	}
	return out;
fail:
	json_decref(olimits);
	return NULL;
}

/* The region_limit herd applies: the "global" region's, else the first. */
static const json_t *region_limit(const json_t *spec)
{
	json_t *limits = json_object_get(spec, "limits"), *l;
	size_t i;
	json_array_foreach(limits, i, l)
		if (!strcmp(json_string_value(json_object_get(l, "region")) ?: "", "global"))
			return json_object_get(l, "region_limit");
	return json_object_get(json_array_get(limits, 0), "region_limit");
}

void quota_cpu_mem_limit(const json_t *spec, int64_t *cpu, int64_t *memory)
{
	const json_t *rl = region_limit(spec);
	*cpu = json_integer_value(json_object_get(rl, "cpu"));
	*memory = json_integer_value(json_object_get(rl, "memory"));
}

size_t quota_device_limits(const json_t *spec)
{
	return json_array_size(json_object_get(region_limit(spec), "devices"));
}

const char *quota_device_limit(const json_t *spec, size_t i, int64_t *milli)
{
	json_t *d = json_array_get(json_object_get(region_limit(spec), "devices"), i);
	*milli = (int64_t)llround(json_number_value(json_object_get(d, "count")) * 1000.0);
	return json_string_value(json_object_get(d, "name")) ?: "";
}

static bool names_all_gpus(const char *name)
{
	return !strcmp(name, "gpu") || !strcmp(name, "nvidia/gpu") || !strcmp(name, "nvidia");
}

int64_t quota_gpu_limit(const json_t *spec)
{
	int64_t best = -1, m;
	for (size_t i = 0; i < quota_device_limits(spec); i++)
		if (names_all_gpus(quota_device_limit(spec, i, &m)) && (best < 0 || m < best))
			best = m;
	return best;
}

bool quota_name_matches(const char *name, const char *group)
{
	size_t n = strlen(name);
	if (!strcmp(name, "gpu"))
		return strstr(group, "/gpu") != NULL || !strncmp(group, "gpu", 3);
	return !strncmp(group, name, n) && (group[n] == '\0' || group[n] == '/');
}

/* ---- shares --------------------------------------------------------------- */

int64_t mig_gpu_milli(const char *p)
{
	long g;
	char *end;
	if (!p || !*p)
		return 1000;
	/* "3g.40gb", "1g.10gb+me": the compute slices come first; a GPU has 7 */
	g = strtol(p, &end, 10);
	if (end == p || *end != 'g' || g <= 0 || g > 7)
		return 1000;
	return (g * 1000 + 3) / 7;
}

int64_t alloc_device_gpu_milli(const json_t *dev)
{
	json_t *v = json_object_get(dev, "gpu_milli");
	const char *mig = json_string_value(json_object_get(dev, "mig_profile"));
	int64_t c;
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 1000)
		return json_integer_value(v);
	if (mig && *mig)
		return mig_gpu_milli(mig);
	if (json_is_true(json_object_get(dev, "whole")))
		return 1000;
	c = json_integer_value(json_object_get(dev, "compute_milli"));
	return c < 0 ? 0 : c > 1000 ? 1000 : c;
}

int64_t alloc_gpu_milli(const json_t *alloc)
{
	json_t *devs = json_object_get(json_object_get(alloc, "resources"), "devices"), *d;
	int64_t sum = 0;
	size_t i;
	json_array_foreach(devs, i, d)
		sum += alloc_device_gpu_milli(d);
	return sum;
}

const char *gpu_milli_format(int64_t milli, char *buf, size_t size)
{
	int64_t a = milli < 0 ? -milli : milli;
	if (a % 1000 == 0)
		snprintf(buf, size, "%s%lld", milli < 0 ? "-" : "", (long long)(a / 1000));
	else if (a % 10 == 0)
		snprintf(buf, size, "%s%lld.%02lld", milli < 0 ? "-" : "", (long long)(a / 1000),
			 (long long)(a % 1000 / 10));
	else
		snprintf(buf, size, "%s%lld.%03lld", milli < 0 ? "-" : "", (long long)(a / 1000),
			 (long long)(a % 1000));
	/* drop a trailing zero of "0.50" */
	size_t n = strlen(buf);
	if (strchr(buf, '.') && buf[n - 1] == '0')
		buf[n - 1] = '\0';
	return buf;
}
