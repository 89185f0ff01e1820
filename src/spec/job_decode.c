/* Decoding a document tree (struct hcl_expr, hcl.h) into struct job, driven
 * by the schema tables of job_schema.c.  Every problem is reported (the walk
 * goes on after an error), each message starting with the JSON path of the
 * value and placed where the value, or for unknown names the key, was
 * written.
 *
 * The tree is the one the readers build (positions in every node, so no
 * map is needed); a jansson tree from the HTTP API is first viewed as one
 * (hcl_expr_from_json), which borrows its strings. */
#include <inttypes.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "spec/hcl-int.h"
#include "spec/job-int.h"
#include "spec/spec.h"

struct decoder {
	struct diag_list *diags;
	struct job_path path;
	size_t errors;
	struct job_failed *failed;
};

static const char *path_of(struct decoder *d)
{
	return job_path_text(&d->path);
}

static size_t path_push_key(struct decoder *d, const char *key)
{
	return job_path_push_key(&d->path, key);
}

static size_t path_push_index(struct decoder *d, size_t i)
{
	return job_path_push_index(&d->path, i);
}

__attribute__((format(printf, 3, 4)))
static void fail_at(struct decoder *d, struct hcl_pos pos, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(d->diags, pos.line, pos.col, "%s: %s", path_of(d), sb.buf);
	strbuf_release(&sb);
	d->errors++;
}

#define fail(d, at, ...) fail_at((d), (at)->pos, __VA_ARGS__)

/* Notes that the field at p (or the object at p) could not be decoded, so
 * that the validator does not report it again as missing. */
static void mark_failed(struct decoder *d, const void *p)
{
	struct job_failed *f = d->failed;
	ALLOC_GROW(f->v, f->n + 1, f->alloc);
	f->v[f->n++] = p;
}

static bool is_string(const struct hcl_expr *v)
{
	return v->kind == HCL_STRING;
}

static bool is_int(const struct hcl_expr *v)
{
	return v->kind == HCL_NUMBER && v->u.num.is_int;
}

static const char *kind_name(const struct hcl_expr *v)
{
	switch (v->kind) {
	case HCL_OBJECT: return "an object";
	case HCL_LIST: return "a list";
	case HCL_STRING: return "a string";
	case HCL_NUMBER: return "a number";
	case HCL_BOOL: return "a boolean";
	case HCL_NULL: return "null";
	}
	return "a value";
}

/* The text of a scalar (string, number, boolean) for fields that keep text;
 * NULL for other kinds.  The caller frees the result. */
static char *scalar_text(const struct hcl_expr *v, size_t *len)
{
	char *s;

	switch (v->kind) {
	case HCL_STRING:
		*len = v->u.str.len;
		return xstrndup(v->u.str.s, *len);
	case HCL_NUMBER:
		if (v->u.num.is_int)
			s = xasprintf("%" PRId64, v->u.num.i);
		else
			s = xasprintf("%.17g", v->u.num.value);
		break;
	case HCL_BOOL:
		s = xstrdup(v->u.boolean ? "true" : "false");
		break;
	default:
		return NULL;
	}
	*len = strlen(s);
	return s;
}

static int check_string(struct decoder *d, const struct hcl_expr *v, int64_t max)
{
	if (!is_string(v)) {
		fail(d, v, "expected a string, got %s", kind_name(v));
		return -1;
	}
	if (max > 0 && v->u.str.len > (size_t)max) {
		fail(d, v, "longer than %" PRId64 " bytes", max);
		return -1;
	}
	if (strlen(v->u.str.s) != v->u.str.len) {
		fail(d, v, "contains a NUL byte");
		return -1;
	}
	return 0;
}

static void set_string(struct decoder *d, const struct hcl_expr *v, char **out, const char *key)
{
	if (*out) {
		/* only a constraint's shorthand (regexp = ...) can set one twice */
		fail(d, v, "conflicts with another way of setting %s", key);
		return;
	}
	*out = xstrndup(v->u.str.s, v->u.str.len);
}

static void decode_enum(struct decoder *d, const struct field *f, const struct hcl_expr *v,
			char **out)
{
	struct strbuf sb = STRBUF_INIT;

	if (check_string(d, v, 64) < 0) {
		mark_failed(d, out);
		return;
	}
	for (const char *const *c = f->choices; *c; c++) {
		if (!strcmp(*c, v->u.str.s)) {
			set_string(d, v, out, f->key);
			return;
		}
	}
	for (const char *const *c = f->choices; *c; c++)
		strbuf_addf(&sb, "%s\"%s\"", c == f->choices ? "" : ", ", *c);
	fail(d, v, "expected one of %s, got \"%s\"", sb.buf, v->u.str.s);
	strbuf_release(&sb);
	/* keep the bad word: the job is rejected anyway, and the validator
	 * then does not also report the field as missing */
	set_string(d, v, out, f->key);
}

static int decode_int(struct decoder *d, const struct field *f, const struct hcl_expr *v,
		      int64_t *out)
{
	int64_t x;

	if (is_int(v)) {
		x = v->u.num.i;
	} else if (v->kind == HCL_NUMBER && v->u.num.value == floor(v->u.num.value) &&
		   fabs(v->u.num.value) < 9e15) {
		x = (int64_t)v->u.num.value;
	} else {
		fail(d, v, "expected a whole number, got %s", kind_name(v));
		return -1;
	}
	if (x < f->min || x > f->max) {
		fail(d, v, "must be between %" PRId64 " and %" PRId64 ", got %" PRId64,
		     f->min, f->max, x);
		return -1;
	}
	*out = x;
	return 0;
}

static int decode_units(struct decoder *d, const struct field *f, const struct hcl_expr *v,
			int64_t *out)
{
	struct herd_err err;
	char buf[64];
	int64_t x;

	if (!is_string(v))
		return decode_int(d, f, v, out);
	if (f->kind == F_DURATION) {
		if (parse_duration(v->u.str.s, &x, &err) < 0) {
			fail(d, v, "%s", err.msg);
			return -1;
		}
		if (x < f->min || x > f->max) {
			fail(d, v, "must be between %s and %s, got \"%s\"",
			     format_duration(f->min, buf, sizeof(buf)),
			     format_duration(f->max, buf + 32, 32), v->u.str.s);
			return -1;
		}
	} else {
		if (parse_size(v->u.str.s, &x, &err) < 0) {
			fail(d, v, "%s", err.msg);
			return -1;
		}
		/* a request for part of a MiB still needs that MiB */
		x = x / (1 << 20) + (x % (1 << 20) != 0);
		if (x < f->min || x > f->max) {
			fail(d, v, "must be between %" PRId64 " MiB and %" PRId64 " MiB, got \"%s\"",
			     f->min, f->max, v->u.str.s);
			return -1;
		}
	}
	*out = x;
	return 0;
}

int job_compute_from_percent(double pct)
{
	double tenths = pct * 10;
	double r = nearbyint(tenths);
	if (!(pct >= 0.1 - 1e-9 && pct <= 100 + 1e-9) || fabs(tenths - r) > 1e-6)
		return -1;
	return (int)r;
}

static void decode_compute(struct decoder *d, const struct hcl_expr *v, int *out)
{
	int t;

	if (v->kind != HCL_NUMBER) {
		fail(d, v, "expected a percentage of one GPU, got %s", kind_name(v));
		return;
	}
	if (v->u.num.value == 0) {
		*out = 0; /* the canonical form writes 0 for "not asked" */
		return;
	}
	t = job_compute_from_percent(v->u.num.value);
	if (t < 0) {
		fail(d, v, "must be a percentage of one GPU from 0.1 to 100 in steps of 0.1, got %g",
		     v->u.num.value);
		return;
	}
	*out = t;
}

static void decode_strv(struct decoder *d, const struct field *f, const struct hcl_expr *v,
			struct job_strv *out)
{
	if (v->kind != HCL_LIST) {
		fail(d, v, "expected a list of strings, got %s", kind_name(v));
		mark_failed(d, out);
		return;
	}
	if (v->u.list.n > (size_t)f->max) {
		fail(d, v, "more than %" PRId64 " entries", f->max);
		mark_failed(d, out);
		return;
	}
	out->v = xcalloc(v->u.list.n, sizeof(char *));
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct hcl_expr *e = v->u.list.v[i];
		size_t old = path_push_index(d, i);
		if (check_string(d, e, JOB_MAX_STRING) == 0)
			out->v[out->n++] = xstrndup(e->u.str.s, e->u.str.len);
		job_path_pop(&d->path, old);
	}
}

static void decode_map(struct decoder *d, const struct field *f, const struct hcl_expr *v,
		       struct job_map *out)
{
	if (v->kind != HCL_OBJECT) {
		fail(d, v, "expected an object of strings, got %s", kind_name(v));
		mark_failed(d, out);
		return;
	}
	if (v->u.object.n > (size_t)f->max) {
		fail(d, v, "more than %" PRId64 " entries", f->max);
		mark_failed(d, out);
		return;
	}
	out->v = xcalloc(v->u.object.n, sizeof(struct job_kv));
	for (size_t i = 0; i < v->u.object.n; i++) {
		const struct hcl_object_item *m = &v->u.object.v[i];
		size_t old = path_push_key(d, m->key), len;
		char *s = scalar_text(m->value, &len);
		if (!s)
			fail(d, m->value, "expected a string, got %s", kind_name(m->value));
		else if (len > JOB_MAX_STRING || strlen(s) != len)
			fail(d, m->value, "longer than %d bytes or contains a NUL byte", JOB_MAX_STRING);
		else
			out->v[out->n++] = (struct job_kv){ xstrdup(m->key), s }, s = NULL;
		free(s);
		job_path_pop(&d->path, old);
	}
}

static void decode_object(struct decoder *d, const struct schema *schema,
			  const struct hcl_expr *v, void *out);

static void decode_array(struct decoder *d, const struct field *f, const struct hcl_expr *v,
			 void *obj)
{
	char **out = (char **)((char *)obj + f->off);
	size_t *count = (size_t *)((char *)obj + f->count_off);
	size_t n;

	if (v->kind != HCL_LIST) {
		fail(d, v, "expected a list of %s objects, got %s", f->schema->what, kind_name(v));
		mark_failed(d, out);
		return;
	}
	n = v->u.list.n;
	if (n > (size_t)f->max) {
		fail(d, v, "more than %" PRId64 " %s entries", f->max, f->schema->what);
		mark_failed(d, out);
		return;
	}
	*out = xcalloc(n ? n : 1, f->schema->size);
	*count = n;
	for (size_t i = 0; i < n; i++) {
		size_t old = path_push_index(d, i);
		decode_object(d, f->schema, v->u.list.v[i], *out + i * f->schema->size);
		job_path_pop(&d->path, old);
	}
}

/* constraint { regexp = "^a" } is Nomad's short form of operator "regexp"
 * with that value; distinct_hosts = true takes no value. */
static void decode_shorthand(struct decoder *d, const struct field *f, const struct hcl_expr *v,
			     struct job_constraint *c)
{
	size_t len;
	char *s;

	if (!strcmp(f->key, "distinct_hosts")) {
		if (v->kind != HCL_BOOL) {
			fail(d, v, "expected a boolean, got %s", kind_name(v));
			mark_failed(d, &c->operator);
			return;
		}
		if (!v->u.boolean)
			return;
	} else {
		s = scalar_text(v, &len);
		if (!s) {
			fail(d, v, "expected a string, got %s", kind_name(v));
			mark_failed(d, &c->operator);
			mark_failed(d, &c->value);
			return;
		}
		if (c->value) {
			fail(d, v, "conflicts with value");
			free(s);
			return;
		}
		c->value = s;
	}
	if (c->operator) {
		fail(d, v, "conflicts with operator");
		return;
	}
	c->operator = xstrdup(f->key);
}

static void decode_field(struct decoder *d, const struct field *f, const struct hcl_expr *v,
			 void *obj)
{
	void *p = (char *)obj + f->off;
	size_t len;
	char *s;

	switch (f->kind) {
	case F_STRING:
		if (check_string(d, v, f->max) == 0)
			set_string(d, v, p, f->key);
		else
			mark_failed(d, p);
		break;
	case F_ENUM:
		decode_enum(d, f, v, p);
		break;
	case F_SCALAR:
		s = scalar_text(v, &len);
		if (!s)
			fail(d, v, "expected a string, got %s", kind_name(v));
		else if (len > (size_t)f->max || strlen(s) != len)
			fail(d, v, "longer than %" PRId64 " bytes or contains a NUL byte", f->max);
		else if (*(char **)p)
			fail(d, v, "conflicts with another way of setting %s", f->key);
		else
			*(char **)p = s, s = NULL;
		if (s || !*(char **)p)
			mark_failed(d, p);
		free(s);
		break;
	case F_INT:
		decode_int(d, f, v, p);
		break;
	case F_BOOL:
		if (v->kind != HCL_BOOL) {
			fail(d, v, "expected a boolean, got %s", kind_name(v));
			break;
		}
		*(bool *)p = v->u.boolean;
		if (f->set_off != NO_SET_OFF)
			*(int *)((char *)obj + f->set_off) = 1;
		break;
	case F_DURATION:
	case F_SIZE_MIB:
		decode_units(d, f, v, p);
		break;
	case F_COMPUTE:
		decode_compute(d, v, p);
		break;
	case F_STRV:
		decode_strv(d, f, v, p);
		break;
	case F_MAP:
		decode_map(d, f, v, p);
		break;
	case F_CONFIG:
		if (v->kind != HCL_OBJECT) {
			fail(d, v, "expected an object, got %s", kind_name(v));
			mark_failed(d, p);
		} else {
			*(json_t **)p = hcl_expr_to_json(v, NULL);
		}
		break;
	case F_OBJECT:
		decode_object(d, f->schema, v, p);
		break;
	case F_OBJECT_PTR:
		*(void **)p = xcalloc(1, f->schema->size);
		decode_object(d, f->schema, v, *(void **)p);
		break;
	case F_ARRAY:
		decode_array(d, f, v, obj);
		break;
	case F_SHORTHAND:
		decode_shorthand(d, f, v, obj);
		break;
	}
}

static bool in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

/* The name an HCL file writes for field f as a block: lists of blocks are
 * written one block at a time under the singular ("constraints" ->
 * "constraint", "affinities" -> "affinity"). */
static const char *block_name(const struct field *f, char *buf, size_t size)
{
	size_t n = strlen(f->key);

	if (f->kind != F_ARRAY || n < 2 || n >= size || f->key[n - 1] != 's')
		return f->key;
	memcpy(buf, f->key, n + 1);
	if (n > 3 && !strcmp(buf + n - 3, "ies"))
		memcpy(buf + n - 3, "y", 2);
	else
		buf[n - 1] = '\0';
	return buf;
}

/* The field of schema whose name is within 2 edits of key (the closest,
 * the first of equals), written to buf as "; did you mean \"x\"?"; NULL
 * (and buf "") when there is none.  Short names need closer matches: at
 * most one edit per three letters, so that "bogus" does not suggest "logs". */
static const struct field *suggest(const struct schema *schema, const char *key, bool block,
				   char *buf, size_t size)
{
	const struct field *best = NULL;
	int best_d = 3;
	char name[64], best_name[64];

	buf[0] = '\0';
	for (const struct field *f = schema->fields; f->key; f++) {
		const char *cand = block ? block_name(f, name, sizeof(name)) : f->key;
		int dist = job_edit_distance(key, cand, best_d);
		if (dist < best_d) {
			best_d = dist;
			snprintf(best_name, sizeof(best_name), "%s", cand);
			best = f;
		}
	}
	if (!best || best_d == 0 || (size_t)best_d * 3 > strlen(key))
		return NULL;
	snprintf(buf, size, "; did you mean \"%s\"?", best_name);
	return best;
}

static void decode_object(struct decoder *d, const struct schema *schema,
			  const struct hcl_expr *v, void *out)
{
	char hint[128];

	if (schema->init)
		schema->init(out);
	*(struct hcl_pos *)out = v->pos;
	if (v->kind != HCL_OBJECT) {
		fail(d, v, "expected %s %s object, got %s",
		     schema->what[0] == 'a' ? "an" : "a", schema->what, kind_name(v));
		mark_failed(d, out);
		return;
	}
	for (size_t i = 0; i < v->u.object.n; i++) {
		const struct hcl_object_item *m = &v->u.object.v[i];
		const struct hcl_expr *e = m->value;
		const struct field *f;
		size_t old = path_push_key(d, m->key);

		for (f = schema->fields; f->key; f++)
			if (f->key[0] == m->key[0] && !strcmp(f->key, m->key))
				break;
		if (e->kind == HCL_NULL && f->key) {
			/* null is how the canonical form writes "not set" */
		} else if (f->key) {
			decode_field(d, f, e, out);
		} else if (in_list(schema->ignored, m->key)) {
			diag_warn(d->diags, m->key_pos.line, m->key_pos.col,
				  "%s: not supported by herd; ignored", path_of(d));
		} else {
			const struct field *meant = suggest(schema, m->key, m->from_block, hint,
							    sizeof(hint));
			job_path_pop(&d->path, old);
			fail_at(d, m->key_pos, "unknown %s %s \"%s\"%s", schema->what,
				m->from_block ? "block" : "field", m->key, hint);
			/* the field it was meant for is not also missing */
			if (meant)
				mark_failed(d, (char *)out + meant->off);
		}
		job_path_pop(&d->path, old);
	}
}

static const struct hcl_expr *member(const struct hcl_expr *obj, const char *key)
{
	for (size_t i = 0; i < obj->u.object.n; i++)
		if (!strcmp(obj->u.object.v[i].key, key))
			return obj->u.object.v[i].value;
	return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
	return (x > y) - (x < y);
}

bool job_failed_has(const struct job_failed *f, const void *p)
{
	return f && f->n && bsearch(&p, f->v, f->n, sizeof(*f->v), cmp_ptr);
}

struct job *job_from_expr(const struct hcl_expr *root, struct diag_list *diags)
{
	struct job_failed failed = { 0 };
	struct decoder d = { diags, JOB_PATH_INIT, 0, &failed };
	struct job *job = xcalloc(1, sizeof(*job));
	int verrors;

	/* a job file may wrap the job as {"job": {...}} */
	if (root->kind == HCL_OBJECT && root->u.object.n == 1 && member(root, "job"))
		root = member(root, "job");
	decode_object(&d, &job_schema, root, job);
	job_path_release(&d.path);
	if (root->kind != HCL_OBJECT) {
		free(failed.v);
		job_free(job);
		return NULL;
	}
	/* validate even after decoding errors, so that one run reports every
	 * problem; what failed to decode is not reported again as missing */
	if (failed.n)
		qsort(failed.v, failed.n, sizeof(*failed.v), cmp_ptr);
	verrors = job_validate_decoded(job, &failed, diags);
	free(failed.v);
	if (verrors == 0 && d.errors == 0)
		return job;
	job_free(job);
	return NULL;
}

/* The view of a job's JSON lives only during the decode: its first chunk
 * is on the stack, big enough for a stored job of two groups of one task
 * (a stored job of one group of one task takes 4 KiB).  A heap chunk of
 * 1 KiB or more is a "large" request to glibc's malloc, which first
 * consolidates every freed small chunk: on the hot paths (each
 * registration, each job a planner or agent reads) that walk cost more
 * than building the view.  Not more: a profiler's copy of the stack
 * (perf's dwarf mode takes 8-16 KiB) must still reach the callers. */
#define JSON_VIEW_STACK (8u << 10)

struct job *job_from_json(const json_t *root, const struct posmap *pm, struct diag_list *diags)
{
	alignas(max_align_t) char first[JSON_VIEW_STACK];
	struct hcl_arena arena;
	struct job *job;

	hcl_arena_init_buf(&arena, first, sizeof(first));
	job = job_from_expr(hcl_expr_from_json(&arena, root, pm), diags);
	hcl_arena_release(&arena);
	return job;
}
