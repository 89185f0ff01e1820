/* Decoding a JSON tree into struct job, driven by the schema tables of
 * job_schema.c.  Every problem is reported (the walk goes on after an
 * error), each message starting with the JSON path of the value. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "spec/job-int.h"
#include "spec/spec.h"

struct decoder {
	const struct posmap *pm;
	struct diag_list *diags;
	struct job_path path;
	size_t errors;
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
static void fail(struct decoder *d, const json_t *at, const char *fmt, ...)
{
	struct hcl_pos pos = posmap_get(d->pm, at);
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	diag_error(d->diags, pos.line, pos.col, "%s: %s", path_of(d), sb.buf);
	strbuf_release(&sb);
	d->errors++;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a value";
}

/* The text of a scalar (string, number, boolean) for fields that keep text;
 * NULL for other kinds.  The caller frees the result. */
static char *scalar_text(const json_t *v, size_t *len)
{
	char *s;
	if (json_is_string(v)) {
		*len = json_string_length(v);
		return xstrndup(json_string_value(v), *len);
	}
	if (json_is_integer(v))
		s = xasprintf("%" PRId64, (int64_t)json_integer_value(v));
	else if (json_is_real(v))
		s = xasprintf("%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		s = xstrdup(json_is_true(v) ? "true" : "false");
	else
		return NULL;
	*len = strlen(s);
	return s;
}

static int check_string(struct decoder *d, const json_t *v, int64_t max)
{
	if (!json_is_string(v)) {
		fail(d, v, "expected a string, got %s", json_kind(v));
		return -1;
	}
	if (max > 0 && json_string_length(v) > (size_t)max) {
		fail(d, v, "longer than %" PRId64 " bytes", max);
		return -1;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		fail(d, v, "contains a NUL byte");
		return -1;
	}
	return 0;
}

static void set_string(struct decoder *d, const json_t *v, char **out, const char *key)
{
	if (*out) {
		/* only a constraint's shorthand (regexp = ...) can set one twice */
		fail(d, v, "conflicts with another way of setting %s", key);
		return;
	}
	*out = xstrndup(json_string_value(v), json_string_length(v));
}

static void decode_enum(struct decoder *d, const struct field *f, const json_t *v, char **out)
{
	struct strbuf sb = STRBUF_INIT;

	if (check_string(d, v, 64) < 0)
		return;
	for (const char *const *c = f->choices; *c; c++) {
		if (!strcmp(*c, json_string_value(v))) {
			set_string(d, v, out, f->key);
			return;
		}
	}
	for (const char *const *c = f->choices; *c; c++)
		strbuf_addf(&sb, "%s\"%s\"", c == f->choices ? "" : ", ", *c);
	fail(d, v, "expected one of %s, got \"%s\"", sb.buf, json_string_value(v));
	strbuf_release(&sb);
	/* keep the bad word: the job is rejected anyway, and the validator
	 * then does not also report the field as missing */
	set_string(d, v, out, f->key);
}

static void decode_int(struct decoder *d, const struct field *f, const json_t *v, int64_t *out)
{
	int64_t x;

	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
		   fabs(json_real_value(v)) < 9e15) {
		x = (int64_t)json_real_value(v);
	} else {
		fail(d, v, "expected a whole number, got %s", json_kind(v));
		return;
	}
	if (x < f->min || x > f->max) {
		fail(d, v, "must be between %" PRId64 " and %" PRId64 ", got %" PRId64,
		     f->min, f->max, x);
		return;
	}
	*out = x;
}

static void decode_units(struct decoder *d, const struct field *f, const json_t *v, int64_t *out)
{
	struct herd_err err;
	char buf[64];
	int64_t x;

	if (!json_is_string(v)) {
		decode_int(d, f, v, out);
		return;
	}
	if (f->kind == F_DURATION) {
		if (parse_duration(json_string_value(v), &x, &err) < 0) {
			fail(d, v, "%s", err.msg);
			return;
		}
		if (x < f->min || x > f->max) {
			fail(d, v, "must be between %s and %s, got \"%s\"",
			     format_duration(f->min, buf, sizeof(buf)),
			     format_duration(f->max, buf + 32, 32), json_string_value(v));
			return;
		}
	} else {
		if (parse_size(json_string_value(v), &x, &err) < 0) {
			fail(d, v, "%s", err.msg);
			return;
		}
		/* a request for part of a MiB still needs that MiB */
		x = x / (1 << 20) + (x % (1 << 20) != 0);
		if (x < f->min || x > f->max) {
			fail(d, v, "must be between %" PRId64 " MiB and %" PRId64 " MiB, got \"%s\"",
			     f->min, f->max, json_string_value(v));
			return;
		}
	}
	*out = x;
}

int job_compute_from_percent(double pct)
{
	double tenths = pct * 10;
	double r = nearbyint(tenths);
	if (!(pct >= 0.1 - 1e-9 && pct <= 100 + 1e-9) || fabs(tenths - r) > 1e-6)
		return -1;
	return (int)r;
}

static void decode_compute(struct decoder *d, const json_t *v, int *out)
{
	int t;

	if (!json_is_number(v)) {
		fail(d, v, "expected a percentage of one GPU, got %s", json_kind(v));
		return;
	}
	if (json_number_value(v) == 0) {
		*out = 0; /* the canonical form writes 0 for "not asked" */
		return;
	}
	t = job_compute_from_percent(json_number_value(v));
	if (t < 0) {
		fail(d, v, "must be a percentage of one GPU from 0.1 to 100 in steps of 0.1, got %g",
		     json_number_value(v));
		return;
	}
	*out = t;
}

static void decode_strv(struct decoder *d, const struct field *f, const json_t *v,
			struct job_strv *out)
{
	size_t i;
	const json_t *e;

	if (!json_is_array(v)) {
		fail(d, v, "expected a list of strings, got %s", json_kind(v));
		return;
	}
	if (json_array_size(v) > (size_t)f->max) {
		fail(d, v, "more than %" PRId64 " entries", f->max);
		return;
	}
	out->v = xcalloc(json_array_size(v), sizeof(char *));
	json_array_foreach(v, i, e) {
		size_t old = path_push_index(d, i);
		if (check_string(d, e, JOB_MAX_STRING) == 0)
			out->v[out->n++] = xstrdup(json_string_value(e));
		job_path_pop(&d->path, old);
	}
}

static void decode_map(struct decoder *d, const struct field *f, const json_t *v,
		       struct job_map *out)
{
	const char *key;
	json_t *e;

	if (!json_is_object(v)) {
		fail(d, v, "expected an object of strings, got %s", json_kind(v));
		return;
	}
	if (json_object_size(v) > (size_t)f->max) {
		fail(d, v, "more than %" PRId64 " entries", f->max);
		return;
	}
	out->v = xcalloc(json_object_size(v), sizeof(struct job_kv));
	json_object_foreach((json_t *)v, key, e) {
		size_t old = path_push_key(d, key), len;
		char *s = scalar_text(e, &len);
		if (!s)
			fail(d, e, "expected a string, got %s", json_kind(e));
		else if (len > JOB_MAX_STRING || strlen(s) != len)
			fail(d, e, "longer than %d bytes or contains a NUL byte", JOB_MAX_STRING);
		else
			out->v[out->n++] = (struct job_kv){ xstrdup(key), s }, s = NULL;
		free(s);
		job_path_pop(&d->path, old);
	}
}

static void decode_object(struct decoder *d, const struct schema *schema, const json_t *v,
			  void *out);

static void decode_array(struct decoder *d, const struct field *f, const json_t *v, void *obj)
{
	char **out = (char **)((char *)obj + f->off);
	size_t *count = (size_t *)((char *)obj + f->count_off);
	size_t i, n;
	const json_t *e;

	if (!json_is_array(v)) {
		fail(d, v, "expected a list of %s objects, got %s", f->schema->what, json_kind(v));
		return;
	}
	n = json_array_size(v);
	if (n > (size_t)f->max) {
		fail(d, v, "more than %" PRId64 " %s entries", f->max, f->schema->what);
		return;
	}
	*out = xcalloc(n ? n : 1, f->schema->size);
	*count = n;
	json_array_foreach(v, i, e) {
		size_t old = path_push_index(d, i);
		decode_object(d, f->schema, e, *out + i * f->schema->size);
		job_path_pop(&d->path, old);
	}
}

/* constraint { regexp = "^a" } is Nomad's short form of operator "regexp"
 * with that value; distinct_hosts = true takes no value. */
static void decode_shorthand(struct decoder *d, const struct field *f, const json_t *v,
			     struct job_constraint *c)
{
	size_t len;
	char *s;

	if (!strcmp(f->key, "distinct_hosts")) {
		if (!json_is_boolean(v)) {
			fail(d, v, "expected a boolean, got %s", json_kind(v));
			return;
		}
		if (json_is_false(v))
			return;
	} else {
		s = scalar_text(v, &len);
		if (!s) {
			fail(d, v, "expected a string, got %s", json_kind(v));
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

static void decode_field(struct decoder *d, const struct field *f, const json_t *v, void *obj)
{
	void *p = (char *)obj + f->off;
	size_t len;
	char *s;

	switch (f->kind) {
	case F_STRING:
		if (check_string(d, v, f->max) == 0)
			set_string(d, v, p, f->key);
		break;
	case F_ENUM:
		decode_enum(d, f, v, p);
		break;
	case F_SCALAR:
		s = scalar_text(v, &len);
		if (!s)
			fail(d, v, "expected a string, got %s", json_kind(v));
		else if (len > (size_t)f->max || strlen(s) != len)
			fail(d, v, "longer than %" PRId64 " bytes or contains a NUL byte", f->max);
		else if (*(char **)p)
			fail(d, v, "conflicts with another way of setting %s", f->key);
		else
			*(char **)p = s, s = NULL;
		free(s);
		break;
	case F_INT:
		decode_int(d, f, v, p);
		break;
	case F_BOOL:
		if (!json_is_boolean(v)) {
			fail(d, v, "expected a boolean, got %s", json_kind(v));
			break;
		}
		*(bool *)p = json_is_true(v);
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
		if (!json_is_object(v))
			fail(d, v, "expected an object, got %s", json_kind(v));
		else
			*(json_t **)p = json_deep_copy(v);
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

static void decode_object(struct decoder *d, const struct schema *schema, const json_t *v,
			  void *out)
{
	const char *key;
	json_t *e;

	if (schema->init)
		schema->init(out);
	*(struct hcl_pos *)out = posmap_get(d->pm, v);
	if (!json_is_object(v)) {
		fail(d, v, "expected %s %s object, got %s",
		     schema->what[0] == 'a' ? "an" : "a", schema->what, json_kind(v));
		return;
	}
	json_object_foreach((json_t *)v, key, e) {
		const struct field *f;
		size_t old = path_push_key(d, key);

		for (f = schema->fields; f->key; f++)
			if (!strcmp(f->key, key))
				break;
		if (json_is_null(e) && f->key) {
			/* null is how the canonical form writes "not set" */
		} else if (f->key) {
			decode_field(d, f, e, out);
		} else if (in_list(schema->ignored, key)) {
			struct hcl_pos pos = posmap_get(d->pm, e);
			diag_warn(d->diags, pos.line, pos.col,
				  "%s: not supported by herd; ignored", path_of(d));
		} else {
			job_path_pop(&d->path, old);
			fail(d, e, "unknown %s field \"%s\"", schema->what, key);
		}
		job_path_pop(&d->path, old);
	}
}

struct job *job_from_json(const json_t *root, const struct posmap *pm, struct diag_list *diags)
{
	struct decoder d = { pm, diags, JOB_PATH_INIT, 0 };
	struct job *job = xcalloc(1, sizeof(*job));

	/* a job file may wrap the job as {"job": {...}} */
	if (json_is_object(root) && json_object_size(root) == 1 && json_object_get(root, "job"))
		root = json_object_get(root, "job");
	decode_object(&d, &job_schema, root, job);
	job_path_release(&d.path);
	/* validate even after decoding errors, so that one run reports every
	 * problem (a field that failed to decode may then also be reported
	 * as missing) */
	if (json_is_object(root) && job_validate(job, diags) == 0 && d.errors == 0)
		return job;
	job_free(job);
	return NULL;
}
