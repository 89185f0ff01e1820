/* postgres_rw.c: the PostgreSQL backend's reads, writes and group commit
 * (postgres-int.h; postgres.c says how the backend works). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/postgres-int.h"

/* --- statements ------------------------------------------------------- */

/* The types of the kind statements' parameters (postgres-int.h's KP_*). */
static const Oid kind_param_types[KP_COUNT] = { TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID,
						INT8OID, INT8OID, INT8OID, TEXTOID, BOOLOID };

/* The key's WHERE clause with the kind statements' parameters ($1 id,
 * $2 namespace, $3 version). */
static void add_key_where(struct strbuf *sb, const struct store_kind_desc *kd)
{
	strbuf_adds(sb, " WHERE ");
	if (kd->key_cols & STORE_COL_NS)
		strbuf_adds(sb, "namespace=$2 AND ");
	if (kd->key_cols & STORE_COL_VERSION)
		strbuf_adds(sb, "version=$3 AND ");
	strbuf_adds(sb, "id=$1");
}

/* INSERT INTO table (columns) VALUES (parameters) of a row of kd. */
static void insert_sql(struct strbuf *sql, const struct store_kind_desc *kd)
{
	bool ns = kd->cols & STORE_COL_NS, ver = kd->cols & STORE_COL_VERSION,
	     job = kd->cols & STORE_COL_JOB, node = kd->cols & STORE_COL_NODE;
	strbuf_addf(sql, "INSERT INTO %s (id, %s%s%s%s%screate_index, modify_index, body)"
		    " VALUES ($1, %s%s%s%s%s$6, $7, $9)",
		    kd->table, ns ? "namespace, " : "", ver ? "version, " : "",
		    job ? "job_id, " : "", node ? "node_id, " : "",
		    node ? "alloc_modify_index, " : "", ns ? "$2, " : "", ver ? "$3, " : "",
		    job ? "$4, " : "", node ? "$5, " : "", node ? "$8, " : "");
}

static void kind_sql(struct strbuf *sql, const struct store_kind_desc *kd, enum pg_slot slot)
{
	bool ns = kd->cols & STORE_COL_NS, job = kd->cols & STORE_COL_JOB,
	     node = kd->cols & STORE_COL_NODE;
	switch (slot) {
	case PG_GET:
		strbuf_addf(sql, "SELECT create_index, modify_index, body FROM %s", kd->table);
		add_key_where(sql, kd);
		break;
	case PG_PUT:
		/* Insert, or update keeping create_index; answers the record's
		 * create_index.  An allocation also keeps alloc_modify_index
		 * on a report ($10), and answers the namespace, job and node
		 * it had before, whose groups a move changes too: every part
		 * of a WITH query sees the state before it, so old is the row
		 * as it was. */
		if (!node) {
			insert_sql(sql, kd);
			strbuf_addf(sql, " ON CONFLICT (%sid%s) DO UPDATE SET %s%s"
				    "modify_index=excluded.modify_index, body=excluded.body"
				    " RETURNING create_index",
				    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
				    kd->key_cols & STORE_COL_VERSION ? ", version" : "",
				    ns && !(kd->key_cols & STORE_COL_NS)
					    ? "namespace=excluded.namespace, " : "",
				    job ? "job_id=excluded.job_id, " : "");
			break;
		}
		strbuf_addf(sql, "WITH old AS (SELECT namespace, job_id, node_id FROM %s",
			    kd->table);
		add_key_where(sql, kd);
		strbuf_adds(sql, "), up AS (");
		insert_sql(sql, kd);
		strbuf_addf(sql, " ON CONFLICT (id) DO UPDATE SET namespace=excluded.namespace,"
			    " job_id=excluded.job_id, node_id=excluded.node_id,"
			    " alloc_modify_index = CASE WHEN $10 THEN %s.alloc_modify_index"
			    " ELSE excluded.alloc_modify_index END,"
			    " modify_index=excluded.modify_index, body=excluded.body"
			    " RETURNING create_index) SELECT up.create_index, old.namespace,"
			    " old.job_id, old.node_id FROM up LEFT JOIN old ON true",
			    kd->table);
		break;
	case PG_DELETE:
		strbuf_addf(sql, "DELETE FROM %s", kd->table);
		add_key_where(sql, kd);
		strbuf_addf(sql, " RETURNING create_index, %s, %s, %s",
			    ns ? "namespace" : "NULL::text", job ? "job_id" : "NULL::text",
			    node ? "node_id" : "NULL::text");
		break;
	case PG_MODIFY_INDEX:
		strbuf_addf(sql, "SELECT modify_index FROM %s", kd->table);
		add_key_where(sql, kd);
		break;
	case PG_INSERT_RAW:
		insert_sql(sql, kd);
		break;
	case PG_SLOTS_PER_KIND:
		break;
	}
}

static int kind_stmt_number(const struct store_kind_desc *kd, enum pg_slot slot)
{
	return PG_GLOBALS + (int)kd->kind * PG_SLOTS_PER_KIND + (int)slot;
}

static int kind_prepare(struct pg_store *ps, struct pg_conn *c, const struct store_kind_desc *kd,
			enum pg_slot slot, struct herd_err *err)
{
	struct strbuf sql = STRBUF_INIT;
	int n = kind_stmt_number(kd, slot);
	int rc;
	if (c->prepared[n])
		return 0;
	kind_sql(&sql, kd, slot);
	rc = pg_prepare(ps, c, n, kd->table, sql.buf, KP_COUNT, kind_param_types, err);
	strbuf_release(&sql);
	return rc;
}

int pg_kind_run(struct pg_store *ps, struct pg_conn *c, const struct store_kind_desc *kd,
		    enum pg_slot slot, const struct kparams *p, PGresult **out,
		    struct herd_err *err)
{
	int rc = kind_prepare(ps, c, kd, slot, err);
	/* prepared now: pg_run needs no SQL */
	return rc ? rc : pg_run(ps, c, kind_stmt_number(kd, slot), kd->table, "", KP_COUNT,
				  kind_param_types, p->v, out, err);
}

#define CONN_GET(ps, c, err)                                                 \
	do {                                                                 \
		if (!((c) = pg_conn_get((ps), (err))))                          \
			return (err) && (err)->code ? (err)->code : -ENOTCONN; \
	} while (0)

/* --- reads ------------------------------------------------------------ */

static int read_group_on(struct pg_store *ps, struct pg_conn *c, const char *group,
			 uint64_t *out, struct herd_err *err)
{
	static const Oid types[] = { TEXTOID };
	const char *v[] = { group };
	PGresult *res;
	int rc = pg_run(ps, c, PG_READ_GROUP, "read group index", "SELECT idx FROM group_index WHERE name=$1", 1,
			  types, v, &res, err);
	if (rc)
		return rc;
	*out = PQntuples(res) > 0 ? pg_value_u64(res, 0, 0) : 0;
	PQclear(res);
	return 0;
}

int pg_group_index(struct store *s, const char *group, uint64_t *out,
			  struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);
	struct pg_conn *c;
	int rc;
	CONN_GET(ps, c, err);
	rc = read_group_on(ps, c, group, out, err);
	pg_conn_put(ps, c);
	return rc;
}

int pg_index(struct store *s, uint64_t *out, struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);
	struct pg_conn *c;
	PGresult *res;
	int rc;
	CONN_GET(ps, c, err);
	rc = pg_run(ps, c, PG_READ_INDEX, "read index", "SELECT value FROM meta WHERE key='index'", 0, NULL,
		      NULL, &res, err);
	if (rc == 0) {
		if (PQntuples(res) == 1)
			*out = pg_value_u64(res, 0, 0);
		else
			rc = herd_errf(err, -EIO, "store: meta table has no index");
		PQclear(res);
	}
	pg_conn_put(ps, c);
	return rc;
}

/* Row r of res (columns 0-2: create_index, modify_index, body). */
static void found_fill(struct store_found *row, const PGresult *res, int r, bool committed)
{
	row->create_index = pg_value_u64(res, r, 0);
	row->modify_index = pg_value_u64(res, r, 1);
	row->body = PQgetvalue(res, r, 2);
	row->body_len = (size_t)PQgetlength(res, r, 2);
	row->committed = committed;
}

int pg_get(struct store *s, const struct store_kind_desc *kd, const struct store_key *key,
		  store_row_fn *fn, void *arg, struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);
	struct pg_conn *c;
	struct kparams p;
	PGresult *res;
	int rc;

	CONN_GET(ps, c, err);
	pg_kparams_key(&p, key);
	if ((rc = pg_kind_run(ps, c, kd, PG_GET, &p, &res, err)))
		goto out;
	if (PQntuples(res) > 0) {
		struct store_found row;
		row.key = *key;
		found_fill(&row, res, 0, c != &ps->w);
		rc = fn(&row, arg, err);
	} else {
		rc = herd_errf(err, -ENOENT, "store: no %s \"%s\"", kd->name, key->id);
	}
	PQclear(res);
out:
	pg_conn_put(ps, c);
	return rc;
}

int pg_get_index(struct store *s, const struct store_kind_desc *kd,
			const struct store_key *key, uint64_t *mi, struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);
	struct pg_conn *c;
	struct kparams p;
	PGresult *res;
	int rc;

	CONN_GET(ps, c, err);
	pg_kparams_key(&p, key);
	if ((rc = pg_kind_run(ps, c, kd, PG_MODIFY_INDEX, &p, &res, err)))
		goto out;
	if (PQntuples(res) > 0)
		*mi = pg_value_u64(res, 0, 0);
	else
		rc = herd_errf(err, -ENOENT, "store: no %s \"%s\"", kd->name, key->id);
	PQclear(res);
out:
	pg_conn_put(ps, c);
	return rc;
}

int pg_list(struct store *s, const struct store_kind_desc *kd, const struct store_filter *f,
		   uint64_t after, bool server_changes, store_row_fn *fn, void *arg,
		   struct herd_err *err)
{
	static const Oid types[] = { TEXTOID, TEXTOID, TEXTOID, INT8OID };
	struct pg_store *ps = pg_of(s);
	struct strbuf sql = STRBUF_INIT;
	const char *sep = " WHERE ";
	bool by_ami = server_changes && (kd->cols & STORE_COL_NODE);
	unsigned shape = (f->ns ? 1u : 0) | (f->job_id ? 2u : 0) | (f->node_id ? 4u : 0) |
			 (after ? 8u : 0) | (after && by_ami ? 16u : 0);
	int n = PG_GLOBALS + STORE_KIND_COUNT * PG_SLOTS_PER_KIND +
		(int)kd->kind * PG_LIST_SHAPES + (int)shape;
	char after_s[24];
	const char *v[4] = { f->ns, f->job_id, f->node_id, after_s };
	struct pg_conn *c;
	PGresult *res;
	int rc;

	CONN_GET(ps, c, err);
	snprintf(after_s, sizeof(after_s), "%llu", (unsigned long long)after);
	if (!c->prepared[n]) {
		/* the key columns too: the store caches decoded records by key */
		strbuf_addf(&sql, "SELECT create_index, modify_index, body, id, %s, %s FROM %s",
			    kd->key_cols & STORE_COL_NS ? "namespace" : "NULL::text",
			    kd->key_cols & STORE_COL_VERSION ? "version" : "0", kd->table);
		if (f->ns) {
			strbuf_addf(&sql, "%snamespace=$1", sep);
			sep = " AND ";
		}
		if (f->job_id) {
			/* a job version's or usage record's id is its job's id */
			strbuf_addf(&sql, "%s%s=$2", sep,
				    kd->key_cols & STORE_COL_VERSION ? "id" : "job_id");
			sep = " AND ";
		}
		if (f->node_id) {
			strbuf_addf(&sql, "%snode_id=$3", sep);
			sep = " AND ";
		}
		if (after)
			strbuf_addf(&sql, "%s%smodify_index>$4", sep, by_ami ? "alloc_" : "");
		strbuf_addf(&sql, " ORDER BY %sid%s",
			    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
			    kd->key_cols & STORE_COL_VERSION ? ", version" : "");
	}
	rc = pg_run(ps, c, n, "list", sql.buf ? sql.buf : "", 4, types, v, &res, err);
	strbuf_release(&sql);
	if (rc)
		goto out;
	for (int r = 0; r < PQntuples(res) && rc == 0; r++) {
		struct store_found row;
		row.key.id = PQgetvalue(res, r, 3);
		row.key.ns = PQgetisnull(res, r, 4) ? NULL : PQgetvalue(res, r, 4);
		row.key.version = (int64_t)strtoll(PQgetvalue(res, r, 5), NULL, 10);
		found_fill(&row, res, r, c != &ps->w);
		rc = fn(&row, arg, err);
	}
	PQclear(res);
out:
	pg_conn_put(ps, c);
	return rc;
}

/* --- writes ----------------------------------------------------------- */

/* The groups one change touches, each once: bumped together at the end
 * of the change, in one statement (a plan of 64 allocations on 64 nodes
 * touches 66 groups). */
struct groups {
	char **v;
	size_t n, a;
};

static void groups_add(struct groups *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->v[i], name))
			return;
	if (g->n == g->a) {
		g->a = g->a ? 2 * g->a : 8;
		g->v = xreallocarray(g->v, g->a, sizeof(*g->v));
	}
	g->v[g->n++] = xstrdup(name);
}

static void groups_add_alloc(struct groups *g, const char *ns, const char *job_id,
			     const char *node_id)
{
	struct strbuf sb = STRBUF_INIT;
	store_group_node_allocs(&sb, node_id);
	groups_add(g, sb.buf);
	store_group_job_allocs(&sb, ns, job_id);
	groups_add(g, sb.buf);
	strbuf_release(&sb);
}

static void groups_release(struct groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i]);
	free(g->v);
	memset(g, 0, sizeof(*g));
}

/* Sets every group of g to idx: one parameter, a text[] in PostgreSQL's
 * array syntax (each element quoted, '"' and '\' escaped). */
static int groups_bump(struct pg_store *ps, const struct groups *g, uint64_t idx,
		       struct herd_err *err)
{
	static const Oid types[] = { TEXTARRAYOID, INT8OID };
	struct strbuf arr = STRBUF_INIT;
	char idx_s[24];
	const char *v[] = { NULL, idx_s };
	PGresult *res;
	int rc;

	if (g->n == 0)
		return 0;
	strbuf_addch(&arr, '{');
	for (size_t i = 0; i < g->n; i++) {
		if (i)
			strbuf_addch(&arr, ',');
		strbuf_addch(&arr, '"');
		for (const char *p = g->v[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				strbuf_addch(&arr, '\\');
			strbuf_addch(&arr, *p);
		}
		strbuf_addch(&arr, '"');
	}
	strbuf_addch(&arr, '}');
	v[0] = arr.buf;
	snprintf(idx_s, sizeof(idx_s), "%llu", (unsigned long long)idx);
	rc = pg_run(ps, &ps->w, PG_BUMP_GROUPS, "bump group indexes",
		      "INSERT INTO group_index (name, idx) SELECT unnest($1::text[]), $2"
		      " ON CONFLICT (name) DO UPDATE SET idx = excluded.idx",
		      2, types, v, &res, err);
	if (rc == 0)
		PQclear(res);
	strbuf_release(&arr);
	return rc;
}

/* One group set to idx (a restore's). */
int pg_bump_group(struct pg_store *ps, const char *group, uint64_t idx, struct herd_err *err)
{
	static const Oid types[] = { TEXTOID, INT8OID };
	char idx_s[24];
	const char *v[] = { group, idx_s };
	PGresult *res;
	int rc;
	snprintf(idx_s, sizeof(idx_s), "%llu", (unsigned long long)idx);
	rc = pg_run(ps, &ps->w, PG_BUMP_GROUP, "bump group index",
		      "INSERT INTO group_index (name, idx) VALUES ($1, $2)"
		      " ON CONFLICT (name) DO UPDATE SET idx = excluded.idx",
		      2, types, v, &res, err);
	if (rc == 0)
		PQclear(res);
	return rc;
}

/* The parameters of a row's statement (PG_PUT or PG_DELETE) at idx. */
static void row_params(struct kparams *p, const struct store_row *row, uint64_t idx)
{
	pg_kparams_key(p, &row->key);
	p->v[KP_JOB] = row->job_id;
	p->v[KP_NODE] = row->node_id;
	pg_kparams_int(p, KP_CI, p->ci, sizeof(p->ci), idx);
	pg_kparams_int(p, KP_MI, p->mi, sizeof(p->mi), idx);
	pg_kparams_int(p, KP_AMI, p->ami, sizeof(p->ami), idx);
	p->v[KP_BODY] = row->op == STORE_OP_PUT ? row->body : NULL;
	p->v[KP_REPORT] = row->report ? "t" : "f";
}

static enum pg_slot row_slot(const struct store_row *row)
{
	return row->op == STORE_OP_PUT ? PG_PUT : PG_DELETE;
}

/* What a row's statement answered: the record's create_index, and the
 * groups the row touches into g (as sqlite.c's apply_row bumps them: its
 * kind; an allocation's node and job, and those it had before when it
 * moved or went away). */
static int row_result(struct pg_store *ps, struct store_row *row, const PGresult *res,
		      struct groups *g, struct herd_err *err)
{
	const struct store_kind_desc *kd = row->kd;
	struct strbuf sb = STRBUF_INIT;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		return pg_err(ps, &ps->w, res, kd->table, err);
	if (PQntuples(res) == 0) /* only a delete finds nothing */
		return herd_errf(err, -ENOENT, "store: no %s \"%s\" to delete", kd->name,
				 row->key.id);
	row->create_index = pg_value_u64(res, 0, 0);
	if ((kd->cols & STORE_COL_NODE) && !PQgetisnull(res, 0, 3))
		groups_add_alloc(g, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2),
				 PQgetvalue(res, 0, 3));
	store_group_kind(&sb, kd);
	groups_add(g, sb.buf);
	strbuf_release(&sb);
	if (row->op == STORE_OP_PUT && row->node_id)
		groups_add_alloc(g, row->key.ns, row->job_id, row->node_id);
	return 0;
}

/* One row: one statement, one round trip. */
static int apply_row(struct pg_store *ps, struct store_row *row, uint64_t idx, struct groups *g,
		     struct herd_err *err)
{
	struct kparams p;
	PGresult *res = NULL;
	int rc;

	row_params(&p, row, idx);
	if ((rc = pg_kind_run(ps, &ps->w, row->kd, row_slot(row), &p, &res, err)))
		return rc;
	rc = row_result(ps, row, res, g, err);
	PQclear(res);
	return rc;
}

/* Several rows in one round trip (libpq's pipeline mode): no row's
 * statement depends on another's answer.  The first error is the change's;
 * PostgreSQL skips the statements after it (the change is rolled back to
 * its savepoint anyway). */
static int apply_rows(struct pg_store *ps, struct store_row *rows, size_t n, uint64_t idx,
		      struct groups *g, struct herd_err *err)
{
	PGconn *db = ps->w.db;
	struct kparams *p;
	PGresult *res;
	size_t sent = 0;
	int rc = 0;

	if (n == 1)
		return apply_row(ps, &rows[0], idx, g, err);
	for (size_t i = 0; i < n; i++)
		if ((rc = kind_prepare(ps, &ps->w, rows[i].kd, row_slot(&rows[i]), err)))
			return rc;
	if (!PQenterPipelineMode(db))
		return pg_err(ps, &ps->w, NULL, "enter pipeline mode", err);
	p = xcalloc(n, sizeof(*p));
	for (; sent < n; sent++) {
		char name[16];
		snprintf(name, sizeof(name), "s%d", kind_stmt_number(rows[sent].kd,
								     row_slot(&rows[sent])));
		row_params(&p[sent], &rows[sent], idx);
		if (!PQsendQueryPrepared(db, name, KP_COUNT, p[sent].v, NULL, NULL, 0)) {
			rc = pg_err(ps, &ps->w, NULL, rows[sent].kd->table, err);
			break;
		}
	}
	if (!PQpipelineSync(db) && rc == 0)
		rc = pg_err(ps, &ps->w, NULL, "pipeline sync", err);
	/* each statement's results end with a NULL; then the sync's */
	for (size_t i = 0; i < sent; i++) {
		bool first = true;
		while ((res = PQgetResult(db))) {
			if (first && rc == 0)
				rc = row_result(ps, &rows[i], res, g, err);
			first = false;
			PQclear(res);
		}
		if (first && rc == 0) /* no result at all: the connection is gone */
			rc = pg_err(ps, &ps->w, NULL, rows[i].kd->table, err);
		if (PQstatus(db) != CONNECTION_OK)
			break;
	}
	while (PQstatus(db) == CONNECTION_OK && (res = PQgetResult(db))) {
		ExecStatusType st = PQresultStatus(res);
		PQclear(res);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	if (!PQexitPipelineMode(db) && rc == 0)
		rc = pg_err(ps, &ps->w, NULL, "leave pipeline mode", err);
	free(p);
	return rc;
}

static int check_cond(struct pg_store *ps, const struct store_cond *c, struct herd_err *err)
{
	struct strbuf g = STRBUF_INIT;
	uint64_t have = 0;
	int rc;

	if (c->type == STORE_COND_MODIFY_INDEX) {
		const struct store_kind_desc *kd = &store_kinds[c->kind];
		struct store_key key = { c->ns, c->id, c->version };
		struct kparams p;
		PGresult *res;
		pg_kparams_key(&p, &key);
		if ((rc = pg_kind_run(ps, &ps->w, kd, PG_MODIFY_INDEX, &p, &res, err)))
			return rc;
		if (PQntuples(res) > 0)
			have = pg_value_u64(res, 0, 0);
		PQclear(res);
		if (have != c->index)
			return herd_errf(err, -ESTALE,
					 "store: %s \"%s\" is at index %llu, expected %llu",
					 kd->name, c->id, (unsigned long long)have,
					 (unsigned long long)c->index);
		return 0;
	}
	if (c->type == STORE_COND_NODE_ALLOCS)
		store_group_node_allocs(&g, c->id);
	else
		store_group_job_allocs(&g, c->ns, c->id);
	rc = read_group_on(ps, &ps->w, g.buf, &have, err);
	strbuf_release(&g);
	if (rc)
		return rc;
	if (have > c->index)
		return herd_errf(err, -ESTALE,
				 "store: allocations of %s \"%s\" changed at index %llu, after %llu",
				 c->type == STORE_COND_NODE_ALLOCS ? "node" : "job", c->id,
				 (unsigned long long)have, (unsigned long long)c->index);
	return 0;
}

/* One change of a group in its own savepoint (see sqlite.c): bump the
 * index, check, write, bump the groups. */
static int apply_change(struct pg_store *ps, struct commit_req *r)
{
	struct herd_err *err = r->err;
	struct groups g = { 0 };
	PGresult *res;
	uint64_t idx = 0;
	int rc = 0;

	/* one round trip for both (no parameters: the simple protocol takes
	 * several statements and answers the last) */
	res = PQexec(ps->w.db, "SAVEPOINT change;"
			       " UPDATE meta SET value = value + 1 WHERE key = 'index' RETURNING value");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		rc = pg_err(ps, &ps->w, res, "bump index", err);
		PQclear(res);
		goto rollback;
	}
	idx = pg_value_u64(res, 0, 0);
	PQclear(res);
	for (size_t i = 0; i < r->nconds; i++)
		if ((rc = check_cond(ps, &r->conds[i], err)))
			goto rollback;
	if (r->check && (rc = r->check(&ps->base, r->check_arg, err)))
		goto rollback;
	if ((rc = apply_rows(ps, r->rows, r->nrows, idx, &g, err)) ||
	    (rc = groups_bump(ps, &g, idx, err)) ||
	    (rc = pg_exec(ps, &ps->w, "RELEASE SAVEPOINT change", err)))
		goto rollback;
	__atomic_fetch_add(&ps->base.group_writes, (uint64_t)g.n, __ATOMIC_RELAXED);
	groups_release(&g);
	r->index = idx;
	return 0;
rollback:
	groups_release(&g);
	/* short of a broken connection these cannot fail; then COMMIT fails
	 * too and answers everyone (a failed SAVEPOINT leaves nothing to
	 * roll back to: the group's ROLLBACK covers it) */
	(void)pg_exec(ps, &ps->w, "ROLLBACK TO SAVEPOINT change", NULL);
	(void)pg_exec(ps, &ps->w, "RELEASE SAVEPOINT change", NULL);
	return rc > 0 ? -EIO : rc;
}

static int fenced_err(struct pg_store *ps, struct herd_err *err)
{
	char why[256];
	pthread_mutex_lock(&ps->m_lock);
	memcpy(why, ps->why, sizeof(why));
	pthread_mutex_unlock(&ps->m_lock);
	return herd_errf(err, -ENOTCONN,
			 "store: this server lost its PostgreSQL connection, and the leadership "
			 "with it (%s): no more commits", why);
}

/* The leader's work: one transaction for the group, one COMMIT. */
void pg_commit_group(void *backend, struct commit_req *group)
{
	struct pg_store *ps = backend;
	struct herd_err berr = { 0 };
	struct commit_req *r;
	uint64_t top = 0;
	int rc, ok = 0;

	pthread_mutex_lock(&ps->lock);
	pg_thread_conn = &ps->w;
	pg_thread_store = ps;
	if (atomic_load(&ps->fenced))
		rc = fenced_err(ps, &berr);
	else
		/* READ COMMITTED whatever the role's default: the only writer
		 * needs no more, and a stricter level could only fail it */
		rc = pg_exec(ps, &ps->w, "BEGIN ISOLATION LEVEL READ COMMITTED", &berr);
	if (rc == 0) {
		for (r = group; r; r = r->next) {
			r->rc = apply_change(ps, r);
			ok += r->rc == 0;
		}
		rc = pg_exec(ps, &ps->w, ok ? "COMMIT" : "ROLLBACK", &berr);
		if (rc == -ENOTCONN)
			herd_errf(&berr, -ENOTCONN,
				  "store: the PostgreSQL connection broke at COMMIT, which may or "
				  "may not have happened; this server is no longer the leader (%s)",
				  berr.msg);
		else if (rc)
			(void)pg_exec(ps, &ps->w, "ROLLBACK", NULL);
	}
	pg_thread_conn = NULL;
	pg_thread_store = NULL;
	pthread_mutex_unlock(&ps->lock);
	for (r = group; r; r = r->next) {
		if (rc && r->rc == 0)
			r->rc = herd_errf(r->err, rc, "%s", berr.msg);
		else if (r->rc == 0 && r->index > top)
			top = r->index;
	}
	if (top)
		index_watch_publish(&ps->base.watch, top);
}

int pg_commit(struct store *s, struct store_row *rows, size_t nrows,
		     const struct store_cond *conds, size_t nconds, store_check_fn *check,
		     void *check_arg, uint64_t *out_index, struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);

	if (pg_thread_conn)
		return herd_errf(err, -EDEADLK, "store: a write inside a check or view");
	if (atomic_load(&ps->fenced))
		return fenced_err(ps, err);
	return commit_queue_submit(&ps->queue, rows, nrows, conds, nconds, check, check_arg,
				   out_index, err);
}

int pg_view(struct store *s, store_check_fn *fn, void *arg, struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);
	struct pg_conn *c;
	int rc;

	if (pg_thread_store == ps && pg_thread_conn)
		return fn(s, arg, err); /* nested in a check or view */
	CONN_GET(ps, c, err);
	/* one snapshot for every read of fn; committed state only */
	if ((rc = pg_exec(ps, c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		goto out;
	pg_thread_conn = c;
	pg_thread_store = ps;
	rc = fn(s, arg, err);
	pg_thread_conn = NULL;
	pg_thread_store = NULL;
	if (pg_exec(ps, c, "COMMIT", NULL))
		(void)pg_exec(ps, c, "ROLLBACK", NULL);
out:
	pg_conn_put(ps, c);
	return rc;
}

