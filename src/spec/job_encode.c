/* The canonical JSON form of a job, written by the schema tables so that it
 * has exactly the keys the decoder reads, in table order.  Unset strings are
 * written as null, which the decoder reads back as "not set". */
#include <math.h>

#include "spec/job-int.h"
#include "spec/spec.h"

static json_t *encode_object(const struct schema *schema, const void *obj);

static json_t *encode_string(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *encode_field(const struct field *f, const void *obj)
{
	const void *p = (const char *)obj + f->off;

	switch (f->kind) {
	case F_STRING:
	case F_ENUM:
	case F_SCALAR:
		return encode_string(*(char *const *)p);
	case F_INT:
	case F_DURATION:
	case F_SIZE_MIB:
		return json_integer(*(const int64_t *)p);
	case F_BOOL:
		return json_boolean(*(const bool *)p);
	case F_COMPUTE: {
		int t = *(const int *)p;
		/* a percentage: whole numbers stay integers */
		return t % 10 ? json_real(t / 10.0) : json_integer(t / 10);
	}
	case F_STRV: {
		const struct job_strv *sv = p;
		json_t *a = json_array();
		for (size_t i = 0; i < sv->n; i++)
			json_array_append_new(a, json_string(sv->v[i]));
		return a;
	}
	case F_MAP: {
		const struct job_map *m = p;
		json_t *o = json_object();
		for (size_t i = 0; i < m->n; i++)
			json_object_set_new(o, m->v[i].key, json_string(m->v[i].value));
		return o;
	}
	case F_CONFIG:
		return *(json_t *const *)p ? json_deep_copy(*(json_t *const *)p) : json_object();
	case F_OBJECT:
		return encode_object(f->schema, p);
	case F_OBJECT_PTR:
		return *(void *const *)p ? encode_object(f->schema, *(void *const *)p) : json_null();
	case F_ARRAY: {
		const char *v = *(char *const *)p;
		size_t n = *(const size_t *)((const char *)obj + f->count_off);
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, encode_object(f->schema, v + i * f->schema->size));
		return a;
	}
	case F_SHORTHAND:
		break;
	}
	return NULL;
}

static json_t *encode_object(const struct schema *schema, const void *obj)
{
	json_t *o = json_object();

	for (const struct field *f = schema->fields; f->key; f++) {
		json_t *v = encode_field(f, obj);
		if (v)
			json_object_set_new(o, f->key, v);
	}
	return o;
}

json_t *job_to_json(const struct job *job)
{
	return encode_object(&job_schema, job);
}
