/* The canonical JSON form of a job, written by the schema tables so that it
 * has exactly the keys the decoder reads, in table order (or, for
 * job_to_json_sorted, in sorted order).  Unset strings are written as null,
 * which the decoder reads back as "not set". */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_sorted.h"
#include "common/xalloc.h"
#include "spec/job-int.h"
#include "spec/spec.h"

static json_t *encode_object(const struct schema *schema, const void *obj, bool sorted);

/* Each schema's fields in sorted key order, found once for every schema
 * the job's reaches (the tables are constant). */
#define MAX_SCHEMAS 48
#define MAX_FIELDS 32

struct sorted_schema {
	const struct schema *schema;
	const struct field *fields[MAX_FIELDS + 1]; /* NULL-ended */
};

static struct sorted_schema sorted_schemas[MAX_SCHEMAS];
static size_t nsorted;
static pthread_once_t sorted_once = PTHREAD_ONCE_INIT;

static int field_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct field *const *)a)->key, (*(const struct field *const *)b)->key);
}

static void sort_schema(const struct schema *schema)
{
	struct sorted_schema *ss;
	size_t n = 0;

	for (size_t i = 0; i < nsorted; i++)
		if (sorted_schemas[i].schema == schema)
			return;
	if (nsorted == MAX_SCHEMAS)
		abort(); /* a table grew past the bound: raise it */
	ss = &sorted_schemas[nsorted++];
	ss->schema = schema;
	for (const struct field *f = schema->fields; f->key; f++) {
		if (n == MAX_FIELDS)
			abort();
		ss->fields[n++] = f;
	}
	qsort(ss->fields, n, sizeof(ss->fields[0]), field_cmp);
	for (const struct field *f = schema->fields; f->key; f++)
		if (f->schema)
			sort_schema(f->schema);
}

static void sort_schemas(void)
{
	sort_schema(&job_schema);
}

static const struct field *const *sorted_fields(const struct schema *schema)
{
	for (size_t i = 0; i < nsorted; i++)
		if (sorted_schemas[i].schema == schema)
			return sorted_schemas[i].fields;
	abort(); /* every schema is reached from job_schema */
}

struct sorted_kv {
	const char *key;
	size_t len;
	const char *value;
};

/* A job_map's keys in the order of the task configs' sorted copies and of
 * the store's canonical form (json_sorted.h). */
static int kv_cmp(const void *a, const void *b)
{
	const struct sorted_kv *x = a, *y = b;
	return json_sorted_keycmp(x->key, x->len, y->key, y->len);
}

/* A job_map as an object, its keys sorted. */
static json_t *sorted_map(const struct job_map *m)
{
	struct sorted_kv stack[16], *kv = m->n <= 16 ? stack : xcalloc(m->n, sizeof(*kv));
	json_t *o = json_object();

	for (size_t i = 0; i < m->n; i++)
		kv[i] = (struct sorted_kv){ m->v[i].key, strlen(m->v[i].key), m->v[i].value };
	qsort(kv, m->n, sizeof(*kv), kv_cmp);
	for (size_t i = 0; i < m->n; i++)
		json_object_set_new(o, kv[i].key, json_string(kv[i].value));
	if (kv != stack)
		free(kv);
	return o;
}

static json_t *encode_string(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *encode_field(const struct field *f, const void *obj, bool sorted)
{
	const void *p = (const char *)obj + f->off;

	switch (f->kind) {
	case F_STRING:
	case F_ENUM:
	case F_SCALAR: {
		const char *s = *(char *const *)p;
		if (f->omit_default && s && f->dflt_str && !strcmp(s, f->dflt_str))
			return NULL;
		if (f->omit_default && !s && !f->dflt_str)   /* no default: NULL left out */
			return NULL;
		return encode_string(s);
	}
	case F_INT:
	case F_DURATION:
	case F_SIZE_MIB:
		if (f->omit_default && *(const int64_t *)p == f->dflt)
			return NULL;
		return json_integer(*(const int64_t *)p);
	case F_BOOL:
		/* false as the file set it stays: a task's own false must not
		 * inherit its group's true when the job is decoded again */
		if (f->omit_default && !*(const bool *)p &&
		    (f->set_off == NO_SET_OFF || !*(const int *)((const char *)obj + f->set_off)))
			return NULL;
		return json_boolean(*(const bool *)p);
	case F_COMPUTE: {
		int t = *(const int *)p;
		/* a percentage: whole numbers stay integers */
		return t % 10 ? json_real(t / 10.0) : json_integer(t / 10);
	}
	case F_STRV: {
		const struct job_strv *sv = p;
		json_t *a;
		if (f->omit_default && !sv->n)
			return NULL;
		a = json_array();
		for (size_t i = 0; i < sv->n; i++)
			json_array_append_new(a, json_string(sv->v[i]));
		return a;
	}
	case F_MAP: {
		const struct job_map *m = p;
		json_t *o;
		if (f->omit_default && !m->n)
			return NULL;
		if (sorted)
			return sorted_map(m);
		o = json_object();
		for (size_t i = 0; i < m->n; i++)
			json_object_set_new(o, m->v[i].key, json_string(m->v[i].value));
		return o;
	}
	case F_CONFIG:
		if (!*(json_t *const *)p)
			return json_object();
		return sorted ? json_sorted_copy(*(json_t *const *)p, NULL)
			      : json_deep_copy(*(json_t *const *)p);
	case F_OBJECT:
		return encode_object(f->schema, p, sorted);
	case F_OBJECT_PTR:
		if (!*(void *const *)p) /* min 1: left out (job-int.h) */
			return f->min == 1 ? NULL : json_null();
		return encode_object(f->schema, *(void *const *)p, sorted);
	case F_ARRAY: {
		const char *v = *(char *const *)p;
		size_t n = *(const size_t *)((const char *)obj + f->count_off);
		json_t *a;
		if (f->omit_default && !n)   /* a list added later: left out empty */
			return NULL;
		a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, encode_object(f->schema, v + i * f->schema->size,
							       sorted));
		return a;
	}
	case F_SHORTHAND:
		break;
	}
	return NULL;
}

static json_t *encode_object(const struct schema *schema, const void *obj, bool sorted)
{
	json_t *o = json_object();

	if (sorted) {
		for (const struct field *const *f = sorted_fields(schema); *f; f++) {
			json_t *v = encode_field(*f, obj, true);
			if (v)
				json_object_set_new_nocheck(o, (*f)->key, v);
		}
		return o;
	}
	for (const struct field *f = schema->fields; f->key; f++) {
		json_t *v = encode_field(f, obj, false);
		if (v)
			json_object_set_new(o, f->key, v);
	}
	return o;
}

json_t *job_to_json(const struct job *job)
{
	return encode_object(&job_schema, job, false);
}

json_t *job_to_json_sorted(const struct job *job)
{
	pthread_once(&sorted_once, sort_schemas);
	return encode_object(&job_schema, job, true);
}
