/* store.c: the part of the store every backend shares (see store-int.h). */
#include "store/store-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "store/canon.h"

const struct store_kind_desc store_kinds[STORE_KIND_COUNT] = {
	[STORE_NAMESPACE] = { STORE_NAMESPACE, "namespace", "namespaces", "name", 0, 0 },
	[STORE_NODE] = { STORE_NODE, "node", "nodes", "id", 0, 0 },
	[STORE_JOB] = { STORE_JOB, "job", "jobs", "id", STORE_COL_NS, STORE_COL_NS },
	[STORE_JOB_VERSION] = { STORE_JOB_VERSION, "job version", "job_versions", "id",
				STORE_COL_NS | STORE_COL_VERSION,
				STORE_COL_NS | STORE_COL_VERSION },
	[STORE_EVAL] = { STORE_EVAL, "evaluation", "evaluations", "id", 0,
			 STORE_COL_NS | STORE_COL_JOB },
	[STORE_ALLOC] = { STORE_ALLOC, "allocation", "allocations", "id", 0,
			  STORE_COL_NS | STORE_COL_JOB | STORE_COL_NODE },
	[STORE_QUOTA] = { STORE_QUOTA, "quota", "quotas", "name", 0, 0 },
	[STORE_ACL_POLICY] = { STORE_ACL_POLICY, "acl policy", "acl_policies", "name", 0, 0 },
	[STORE_ACL_TOKEN] = { STORE_ACL_TOKEN, "acl token", "acl_tokens", "id", 0, 0 },
	/* keyed like a job version: the job's id is the id, the hour the version */
	[STORE_USAGE] = { STORE_USAGE, "usage record", "usage_ledger", "job_id",
			  STORE_COL_NS | STORE_COL_VERSION, STORE_COL_NS | STORE_COL_VERSION },
	[STORE_VAR] = { STORE_VAR, "variable", "variables", "path", STORE_COL_NS, STORE_COL_NS },
};

const char *store_kind_name(enum store_kind kind)
{
	return (unsigned)kind < STORE_KIND_COUNT ? store_kinds[kind].name : "unknown kind";
}

static const struct store_kind_desc *kind_desc(enum store_kind kind, struct herd_err *err)
{
	if ((unsigned)kind >= STORE_KIND_COUNT) {
		herd_errf(err, -EINVAL, "store: unknown record kind %d", (int)kind);
		return NULL;
	}
	return &store_kinds[kind];
}

void store_group_kind(struct strbuf *sb, const struct store_kind_desc *kd)
{
	strbuf_reset(sb);
	strbuf_addf(sb, "kind\n%s", kd->table);
}

void store_group_node_allocs(struct strbuf *sb, const char *node_id)
{
	strbuf_reset(sb);
	strbuf_addf(sb, "node_allocs\n%s", node_id);
}

void store_group_job_allocs(struct strbuf *sb, const char *ns, const char *job_id)
{
	strbuf_reset(sb);
	strbuf_addf(sb, "job_allocs\n%s\n%s", ns, job_id);
}

/* A key string: 1..STORE_MAX_KEY bytes, no control characters (so that
 * group names can use '\n' as a separator and messages stay one line). */
static int check_key_string(const char *what, const char *v, size_t len, struct herd_err *err)
{
	if (!v || len == 0)
		return herd_errf(err, -EINVAL, "store: %s is missing or empty", what);
	if (len > STORE_MAX_KEY)
		return herd_errf(err, -EINVAL, "store: %s is %zu bytes long; at most %d allowed",
				 what, len, STORE_MAX_KEY);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return herd_errf(err, -EINVAL,
					 "store: %s holds a control character at byte %zu", what, i);
	return 0;
}

static int check_key(const struct store_kind_desc *kd, const struct store_key *key,
		     struct herd_err *err)
{
	int rc;
	if (!key)
		return herd_errf(err, -EINVAL, "store: no key given for %s", kd->name);
	if ((kd->key_cols & STORE_COL_NS) &&
	    (rc = check_key_string("namespace", key->ns, key->ns ? strlen(key->ns) : 0, err)))
		return rc;
	if ((rc = check_key_string(kd->id_field, key->id, key->id ? strlen(key->id) : 0, err)))
		return rc;
	if ((kd->key_cols & STORE_COL_VERSION) && key->version < 0)
		return herd_errf(err, -EINVAL, "store: version %lld is negative",
				 (long long)key->version);
	return 0;
}

/* Reads string field `field` of obj into *out, checked as a key string. */
static int object_string(const struct store_kind_desc *kd, json_t *obj, const char *field,
			 const char **out, struct herd_err *err)
{
	json_t *v = json_object_get(obj, field);
	if (!json_is_string(v))
		return herd_errf(err, -EINVAL, "store: %s has no string field \"%s\"", kd->name,
				 field);
	*out = json_string_value(v);
	/* json strings may hold NUL; a key must not */
	if (strlen(*out) != json_string_length(v))
		return herd_errf(err, -EINVAL, "store: %s field \"%s\" holds a NUL byte", kd->name,
				 field);
	return check_key_string(field, *out, json_string_length(v), err);
}

/* Fills row from a put of obj: key, lookup columns, canonical object and
 * body (same: the row of the batch just before, a put of the same object,
 * whose encoding row shares, or NULL; owned: obj may be kept as the
 * canonical object when it is one, see store_batch_put_owned). */
static int prepare_put(const struct store_kind_desc *kd, json_t *obj,
		       const struct store_row *same, bool owned, struct store_row *row,
		       struct herd_err *err)
{
	json_t *copy;
	int rc;

	if (!json_is_object(obj))
		return herd_errf(err, -EINVAL, "store: a %s must be a JSON object", kd->name);
	memset(row, 0, sizeof(*row));
	row->op = STORE_OP_PUT;
	row->kd = kd;
	if ((rc = object_string(kd, obj, kd->id_field, &row->key.id, err)))
		return rc;
	if ((kd->cols & STORE_COL_NS) &&
	    (rc = object_string(kd, obj, "namespace", &row->key.ns, err)))
		return rc;
	if ((kd->cols & STORE_COL_JOB) && (rc = object_string(kd, obj, "job_id", &row->job_id, err)))
		return rc;
	if ((kd->cols & STORE_COL_NODE) &&
	    (rc = object_string(kd, obj, "node_id", &row->node_id, err)))
		return rc;
	if (kd->cols & STORE_COL_VERSION) {
		json_t *v = json_object_get(obj, "version");
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return herd_errf(err, -EINVAL,
					 "store: %s needs an integer field \"version\" >= 0",
					 kd->name);
		row->key.version = json_integer_value(v);
	}
	if (same) {
		row->body = same->body;
		row->body_len = same->body_len;
		/* its own top level, for its own indexes in the cache */
		row->canon = same->canon ? json_copy(same->canon) : NULL;
		return 0;
	}
	/* An owned object already in canonical form is its own canonical
	 * object: its text, checked in the same walk, and no copy. */
	if (owned && (row->body = canon_encode_canonical(obj, &row->body_len))) {
		row->canon = json_incref(obj);
		return 0;
	}
	/* The canonical object (sorted, without the indexes, which are the
	 * store's to say), then its text; the commit caches the object. */
	if ((row->canon = canon_copy(obj, true)) &&
	    !(row->body = canon_encode(row->canon, &row->body_len))) {
		json_decref(row->canon);
		row->canon = NULL;
	}
	if (!row->canon) {
		/* what canon_copy declines (a string holding NUL): jansson's
		 * encoder, and nothing cached */
		copy = json_copy(obj);
		json_object_del(copy, "create_index");
		json_object_del(copy, "modify_index");
		row->body = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(copy);
		row->body_len = row->body ? strlen(row->body) : 0;
	}
	if (!row->body) /* only when an element is not encodable (a NaN real) */
		return herd_errf(err, -EINVAL, "store: %s %s cannot be encoded as JSON", kd->name,
				 row->key.id);
	return 0;
}

static int prepare_delete(const struct store_kind_desc *kd, const struct store_write *w,
			  struct store_row *row, struct herd_err *err)
{
	struct store_key key = { w->ns, w->id, w->version };
	int rc = check_key(kd, &key, err);
	if (rc)
		return rc;
	memset(row, 0, sizeof(*row));
	row->op = STORE_OP_DELETE;
	row->kd = kd;
	row->key = key;
	return 0;
}

static int check_cond(const struct store_cond *c, struct herd_err *err)
{
	switch (c->type) {
	case STORE_COND_MODIFY_INDEX: {
		const struct store_kind_desc *kd = kind_desc(c->kind, err);
		struct store_key key = { c->ns, c->id, c->version };
		return kd ? check_key(kd, &key, err) : -EINVAL;
	}
	case STORE_COND_NODE_ALLOCS:
		return check_key_string("node id", c->id, c->id ? strlen(c->id) : 0, err);
	case STORE_COND_JOB_ALLOCS: {
		int rc = check_key_string("namespace", c->ns, c->ns ? strlen(c->ns) : 0, err);
		return rc ? rc : check_key_string("job id", c->id, c->id ? strlen(c->id) : 0, err);
	}
	}
	return herd_errf(err, -EINVAL, "store: unknown condition type %d", (int)c->type);
}

int store_base_init(struct store *s, const struct store_ops *ops, struct herd_err *err)
{
	const char *check = getenv("HERD_STORE_CACHE_CHECK");
	uint64_t idx;
	int rc;
	s->ops = ops;
	if ((rc = ops->index(s, &idx, err)))
		return rc;
	index_watch_init(&s->watch, idx);
	record_cache_init(&s->cache, STORE_CACHE_ENTRIES, STORE_CACHE_BYTES);
	s->cache_check = check && *check && strcmp(check, "0") != 0;
	return 0;
}

void store_base_release(struct store *s)
{
	record_cache_release(&s->cache);
	index_watch_release(&s->watch);
}

void store_cache_limit(struct store *s, size_t max_entries, size_t max_bytes)
{
	record_cache_limit(&s->cache, max_entries, max_bytes);
}

void store_cache_stats(struct store *s, struct store_cache_stats *out)
{
	record_cache_stats(&s->cache, out);
}

uint64_t store_group_writes(struct store *s)
{
	return __atomic_load_n(&s->group_writes, __ATOMIC_RELAXED);
}

void store_close(struct store *s)
{
	if (s)
		s->ops->close(s);
}

const char *store_backend(const struct store *s)
{
	return s->ops->name;
}

uint64_t store_index(struct store *s)
{
	return index_watch_current(&s->watch);
}

int store_read_index(struct store *s, uint64_t *out, struct herd_err *err)
{
	return s->ops->index(s, out, err);
}

struct index_watch *store_watch(struct store *s)
{
	return &s->watch;
}

/* Parses stored text and adds the indexes; the object is new. */
static int decode_row(const char *body, uint64_t ci, uint64_t mi, json_t **out,
		      struct herd_err *err)
{
	json_error_t jerr;
	json_t *obj = json_loads(body, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return herd_errf(err, -EIO, "store: a stored record is not a JSON object: %s",
				 jerr.text);
	}
	json_object_set_new(obj, "create_index", json_integer((json_int_t)ci));
	json_object_set_new(obj, "modify_index", json_integer((json_int_t)mi));
	*out = obj;
	return 0;
}

/* A record's identity as the cache keys it: the key fields its kind keys
 * on, '\n'-separated (keys hold no control characters).  buf has room for
 * KEY_TEXT_MAX bytes; returns the length. */
#define KEY_TEXT_MAX (2 * STORE_MAX_KEY + 24)
static size_t key_text(const struct store_kind_desc *kd, const struct store_key *key, char *buf)
{
	size_t n = 0, l;
	if (kd->key_cols & STORE_COL_NS) {
		l = strlen(key->ns);
		memcpy(buf, key->ns, l);
		n = l;
		buf[n++] = '\n';
	}
	l = strlen(key->id);
	memcpy(buf + n, key->id, l);
	n += l;
	if (kd->key_cols & STORE_COL_VERSION)
		n += (size_t)snprintf(buf + n, KEY_TEXT_MAX - n, "\n%lld", (long long)key->version);
	return n;
}

/* HERD_STORE_CACHE_CHECK: that the cached obj still is what row's text
 * decodes to, in the same order of keys (so that answers encode alike
 * whether a record came from the cache or not): that no reader changed a
 * shared record, and that a commit cached what it wrote. */
static int check_cached(const struct store_kind_desc *kd, const struct store_found *row,
			json_t *obj, struct herd_err *err)
{
	json_t *fresh = NULL;
	char *a = NULL, *b = NULL;
	int rc = decode_row(row->body, row->create_index, row->modify_index, &fresh, err);
	if (rc == 0) {
		a = json_dumps(fresh, JSON_COMPACT);
		b = json_dumps(obj, JSON_COMPACT);
	}
	if (rc == 0 && (!a || !b || strcmp(a, b)))
		rc = herd_errf(err, -EIO,
			       "store: the shared %s \"%s\" at index %llu was changed by a reader "
			       "(shared records are read-only: json_deep_copy to change one)",
			       kd->name, row->key.id, (unsigned long long)row->modify_index);
	free(a);
	free(b);
	json_decref(fresh);
	return rc;
}

/* A read's record for row: the cached object at the row's modify_index, or
 * the row's text decoded (and, for a shared read of committed state, kept
 * in the cache).  shared: *out may be the cache's object itself; else it
 * is the caller's own. */
static int row_object(struct store *s, const struct store_kind_desc *kd,
		      const struct store_found *row, bool shared, json_t **out,
		      struct herd_err *err)
{
	char kt[KEY_TEXT_MAX];
	size_t kl = key_text(kd, &row->key, kt);
	json_t *obj = record_cache_get(&s->cache, kd->kind, kt, kl, row->modify_index);
	int rc;

	if (obj) {
		if (s->cache_check && (rc = check_cached(kd, row, obj, err))) {
			json_decref(obj);
			return rc;
		}
		if (!shared) {
			/* a copy is a quarter of a parse, and the caller's to change */
			json_t *own = json_deep_copy(obj);
			json_decref(obj);
			if (!own)
				return herd_errf(err, -ENOMEM, "store: out of memory copying a %s",
						 kd->name);
			obj = own;
		}
		*out = obj;
		return 0;
	}
	if ((rc = decode_row(row->body, row->create_index, row->modify_index, &obj, err)))
		return rc;
	/* Only shared reads fill the cache: a plain read would pay a copy on
	 * top of the parse, and whole-kind scans (the garbage collector's)
	 * would push out what the hot paths read again and again. */
	if (shared && row->committed)
		record_cache_put(&s->cache, kd->kind, kt, kl, row->modify_index, obj,
				 row->body_len);
	*out = obj;
	return 0;
}

struct read_arg {
	struct store *s;
	const struct store_kind_desc *kd;
	bool shared;
	json_t *out; /* get: the record; list: the array */
};

static int get_row(const struct store_found *row, void *arg, struct herd_err *err)
{
	struct read_arg *a = arg;
	return row_object(a->s, a->kd, row, a->shared, &a->out, err);
}

static int get(struct store *s, enum store_kind kind, const struct store_key *key, bool shared,
	       json_t **out, struct herd_err *err)
{
	const struct store_kind_desc *kd = kind_desc(kind, err);
	struct read_arg a = { s, kd, shared, NULL };
	int rc;

	if (!kd)
		return -EINVAL;
	if ((rc = check_key(kd, key, err)))
		return rc;
	if ((rc = s->ops->get(s, kd, key, get_row, &a, err)))
		return rc;
	*out = a.out;
	return 0;
}

int store_get(struct store *s, enum store_kind kind, const struct store_key *key, json_t **out,
	      struct herd_err *err)
{
	return get(s, kind, key, false, out, err);
}

int store_get_shared(struct store *s, enum store_kind kind, const struct store_key *key,
		     json_t **out, struct herd_err *err)
{
	return get(s, kind, key, true, out, err);
}

int store_get_index(struct store *s, enum store_kind kind, const struct store_key *key,
		    uint64_t *out, struct herd_err *err)
{
	const struct store_kind_desc *kd = kind_desc(kind, err);
	uint64_t mi;
	int rc;

	if (!kd)
		return -EINVAL;
	if ((rc = check_key(kd, key, err)))
		return rc;
	if ((rc = s->ops->get_index(s, kd, key, &mi, err)))
		return rc;
	*out = mi;
	return 0;
}

static int list_add(const struct store_found *row, void *arg, struct herd_err *err)
{
	struct read_arg *a = arg;
	json_t *obj;
	int rc = row_object(a->s, a->kd, row, a->shared, &obj, err);
	if (rc)
		return rc;
	json_array_append_new(a->out, obj);
	return 0;
}

static int list_changed(struct store *s, enum store_kind kind, const struct store_filter *filter,
			uint64_t after, bool server_changes, bool shared, json_t **out,
			struct herd_err *err)
{
	const struct store_kind_desc *kd = kind_desc(kind, err);
	struct store_filter none = { NULL, NULL, NULL };
	struct read_arg a = { s, kd, shared, NULL };
	int rc;

	if (!kd)
		return -EINVAL;
	if (!filter)
		filter = &none;
	if (filter->ns && !(kd->cols & STORE_COL_NS))
		return herd_errf(err, -EINVAL, "store: %s records have no namespace", kd->name);
	if (filter->job_id && !(kd->cols & STORE_COL_JOB) && !(kd->key_cols & STORE_COL_VERSION))
		return herd_errf(err, -EINVAL, "store: %s records cannot be listed by job",
				 kd->name);
	if (filter->job_id && (kd->key_cols & STORE_COL_VERSION) && !filter->ns)
		return herd_errf(err, -EINVAL, "store: listing %ss by job needs a namespace",
				 kd->name);
	if (filter->node_id && !(kd->cols & STORE_COL_NODE))
		return herd_errf(err, -EINVAL, "store: %s records cannot be listed by node",
				 kd->name);
	a.out = json_array();
	rc = s->ops->list(s, kd, filter, after, server_changes, list_add, &a, err);
	if (rc) {
		json_decref(a.out);
		return rc;
	}
	*out = a.out;
	return 0;
}

int store_list(struct store *s, enum store_kind kind, const struct store_filter *filter,
	       json_t **out, struct herd_err *err)
{
	return list_changed(s, kind, filter, 0, false, false, out, err);
}

int store_list_shared(struct store *s, enum store_kind kind, const struct store_filter *filter,
		      json_t **out, struct herd_err *err)
{
	return list_changed(s, kind, filter, 0, false, true, out, err);
}

int store_list_changed(struct store *s, enum store_kind kind, const struct store_filter *filter,
		       uint64_t after, json_t **out, struct herd_err *err)
{
	return list_changed(s, kind, filter, after, false, false, out, err);
}

int store_list_changed_shared(struct store *s, enum store_kind kind,
			      const struct store_filter *filter, uint64_t after, json_t **out,
			      struct herd_err *err)
{
	return list_changed(s, kind, filter, after, false, true, out, err);
}

int store_list_allocs_server_changed(struct store *s, const struct store_filter *filter,
				     uint64_t after, json_t **out, struct herd_err *err)
{
	return list_changed(s, STORE_ALLOC, filter, after, true, false, out, err);
}

int store_list_allocs_server_changed_shared(struct store *s, const struct store_filter *filter,
					    uint64_t after, json_t **out, struct herd_err *err)
{
	return list_changed(s, STORE_ALLOC, filter, after, true, true, out, err);
}

static int group_index(struct store *s, struct strbuf *group, uint64_t *out, struct herd_err *err)
{
	uint64_t v;
	int rc = s->ops->group_index(s, group->buf, &v, err);
	strbuf_release(group);
	if (rc == 0)
		*out = v;
	return rc;
}

int store_kind_index(struct store *s, enum store_kind kind, uint64_t *out, struct herd_err *err)
{
	const struct store_kind_desc *kd = kind_desc(kind, err);
	struct strbuf g = STRBUF_INIT;
	if (!kd)
		return -EINVAL;
	store_group_kind(&g, kd);
	return group_index(s, &g, out, err);
}

int store_node_allocs_index(struct store *s, const char *node_id, uint64_t *out,
			    struct herd_err *err)
{
	struct strbuf g = STRBUF_INIT;
	int rc = check_key_string("node id", node_id, node_id ? strlen(node_id) : 0, err);
	if (rc)
		return rc;
	store_group_node_allocs(&g, node_id);
	return group_index(s, &g, out, err);
}

int store_job_allocs_index(struct store *s, const char *ns, const char *job_id, uint64_t *out,
			   struct herd_err *err)
{
	struct strbuf g = STRBUF_INIT;
	int rc = check_key_string("namespace", ns, ns ? strlen(ns) : 0, err);
	if (rc || (rc = check_key_string("job id", job_id, job_id ? strlen(job_id) : 0, err)))
		return rc;
	store_group_job_allocs(&g, ns, job_id);
	return group_index(s, &g, out, err);
}

/* After a commit at idx: the records it wrote go into the cache as the
 * objects a read of them would decode (their canonical objects, which the
 * put made to encode them: nearly every record written is read again, a
 * job by its evaluation, an allocation by its agent and the planners'
 * usage), and those it deleted leave it.  Last row first: when a batch
 * writes one key twice, the last write is the record, and the cache keeps
 * the first entry it gets at an index. */
static void cache_written(struct store *s, const struct store_row *rows, size_t n, uint64_t idx)
{
	char kt[KEY_TEXT_MAX];
	for (size_t i = n; i-- > 0;) {
		const struct store_row *row = &rows[i];
		size_t kl = key_text(row->kd, &row->key, kt);
		if (row->op == STORE_OP_DELETE || !row->canon) {
			record_cache_drop(&s->cache, row->kd->kind, kt, kl, idx);
			continue;
		}
		json_object_set_new(row->canon, "create_index",
				    json_integer((json_int_t)row->create_index));
		json_object_set_new(row->canon, "modify_index", json_integer((json_int_t)idx));
		record_cache_put(&s->cache, row->kd->kind, kt, kl, idx, row->canon, row->body_len);
	}
}

int store_commit(struct store *s, const struct store_batch *b, uint64_t *out_index,
		 struct herd_err *err)
{
	struct store_row *rows;
	uint64_t idx;
	size_t i;
	int rc = 0;

	if (b->nw == 0)
		return herd_errf(err, -EINVAL, "store: nothing to commit");
	for (i = 0; i < b->nc; i++)
		if ((rc = check_cond(&b->c[i], err)))
			return rc;
	rows = xcalloc(b->nw, sizeof(*rows));
	for (i = 0; i < b->nw; i++) {
		const struct store_write *w = &b->w[i];
		const struct store_kind_desc *kd = kind_desc(w->kind, err);
		if (!kd) {
			rc = -EINVAL;
			goto out;
		}
		const struct store_row *same = NULL;
		bool owned = w->op == STORE_OP_PUT && w->owned;
		/* one object put as two kinds one after the other (a job and
		 * its version): one encoding, shared */
		if (i > 0 && w->op == STORE_OP_PUT && b->w[i - 1].op == STORE_OP_PUT &&
		    b->w[i - 1].obj == w->obj)
			same = &rows[i - 1];
		/* an owned object put again further on is copied: each row's
		 * canonical object gets its own indexes */
		for (size_t j = 0; owned && !same && j < i; j++)
			if (b->w[j].obj == w->obj)
				owned = false;
		rc = w->op == STORE_OP_PUT ? prepare_put(kd, w->obj, same, owned, &rows[i], err)
					   : prepare_delete(kd, w, &rows[i], err);
		if (rc)
			goto out;
		rows[i].report = w->op == STORE_OP_PUT && w->report;
	}
	rc = s->ops->commit(s, rows, b->nw, b->c, b->nc, b->check, b->check_arg, &idx, err);
	if (rc)
		goto out;
	cache_written(s, rows, b->nw, idx);
	/* Published only now, when the change is durable: a waiter woken by
	 * this index reads state that survives a crash. */
	index_watch_publish(&s->watch, idx);
	if (out_index)
		*out_index = idx;
out:
	for (i = 0; i < b->nw; i++) {
		if (i == 0 || rows[i].body != rows[i - 1].body)
			free(rows[i].body);
		json_decref(rows[i].canon);
	}
	free(rows);
	return rc;
}

int store_put(struct store *s, enum store_kind kind, json_t *obj, uint64_t *out_index,
	      struct herd_err *err)
{
	struct store_batch b = STORE_BATCH_INIT;
	int rc;
	store_batch_put(&b, kind, obj);
	rc = store_commit(s, &b, out_index, err);
	store_batch_release(&b);
	return rc;
}

int store_delete(struct store *s, enum store_kind kind, const struct store_key *key,
		 uint64_t *out_index, struct herd_err *err)
{
	struct store_batch b = STORE_BATCH_INIT;
	int rc;
	if (!key)
		return herd_errf(err, -EINVAL, "store: no key given for delete");
	store_batch_delete(&b, kind, key);
	rc = store_commit(s, &b, out_index, err);
	store_batch_release(&b);
	return rc;
}

int store_view(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err)
{
	return s->ops->view(s, fn, arg, err);
}

int store_snapshot(struct store *s, const char *dest, struct herd_err *err)
{
	return s->ops->snapshot(s, dest, err);
}
