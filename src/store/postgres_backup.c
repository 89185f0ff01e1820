/* postgres_backup.c: the PostgreSQL backend's snapshot (an SQLite store
 * file, the backup format of both backends) and restore (postgres-int.h;
 * sqlite.c's import and export of raw rows). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "store/postgres-int.h"

/* --- snapshot --------------------------------------------------------- */

/* Runs sql (no parameters) on c in single-row mode, so that a big table
 * is never held in memory whole, calling fn for each row. */
static int each_row(struct pg_store *ps, struct pg_conn *c, const char *sql,
		    int (*fn)(const PGresult *res, void *arg, struct herd_err *err), void *arg,
		    struct herd_err *err)
{
	PGresult *res;
	int rc = 0;

	if (!PQsendQuery(c->db, sql) || !PQsetSingleRowMode(c->db))
		return pg_err(ps, c, NULL, sql, err);
	while ((res = PQgetResult(c->db))) {
		ExecStatusType st = PQresultStatus(res);
		if (rc == 0 && st == PGRES_SINGLE_TUPLE)
			rc = fn(res, arg, err);
		else if (rc == 0 && st != PGRES_TUPLES_OK)
			rc = pg_err(ps, c, res, sql, err);
		PQclear(res); /* every result is read, even after a failure */
	}
	return rc;
}

struct snap_arg {
	struct sqlite_import *im;
	const struct store_kind_desc *kd;
};

static int snap_row(const PGresult *res, void *arg, struct herd_err *err)
{
	struct snap_arg *a = arg;
	struct store_raw_row r = {
		PQgetvalue(res, 0, 0),
		PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1),
		(int64_t)strtoll(PQgetvalue(res, 0, 2), NULL, 10),
		PQgetisnull(res, 0, 3) ? NULL : PQgetvalue(res, 0, 3),
		PQgetisnull(res, 0, 4) ? NULL : PQgetvalue(res, 0, 4),
		pg_value_u64(res, 0, 6),
		pg_value_u64(res, 0, 7),
		pg_value_u64(res, 0, 5),
		PQgetvalue(res, 0, 8),
	};
	return sqlite_import_row(a->im, a->kd, &r, err);
}

static int snap_group(const PGresult *res, void *arg, struct herd_err *err)
{
	struct snap_arg *a = arg;
	return sqlite_import_group(a->im, PQgetvalue(res, 0, 0), pg_value_u64(res, 0, 1), err);
}

/* store_snapshot: one REPEATABLE READ transaction on a reader, so the copy
 * is the store at one index while commits go on, written as an SQLite
 * store file (the backup format of both backends). */
int pg_snapshot(struct store *s, const char *dest, struct herd_err *err)
{
	struct pg_store *ps = pg_of(s);
	struct strbuf sql = STRBUF_INIT;
	struct snap_arg a = { NULL, NULL };
	struct pg_conn *c;
	PGresult *res = NULL;
	uint64_t index = 0;
	int rc;

	if ((rc = sqlite_import_begin(dest, &a.im, err)))
		return rc;
	if (!(c = pg_conn_get(ps, err))) {
		sqlite_import_end(a.im, 0, false, NULL);
		return err && err->code ? err->code : -ENOTCONN;
	}
	if ((rc = pg_exec(ps, c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		goto out;
	res = PQexec(c->db, "SELECT value FROM meta WHERE key = 'index'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		rc = pg_err(ps, c, res, "snapshot: read index", err);
	else
		index = pg_value_u64(res, 0, 0);
	PQclear(res);
	for (int k = 0; k < STORE_KIND_COUNT && rc == 0; k++) {
		const struct store_kind_desc *kd = &store_kinds[k];
		a.kd = kd;
		strbuf_reset(&sql);
		strbuf_addf(&sql, "SELECT id, %s, %s, %s, %s, %s, create_index, modify_index, body"
			    " FROM %s ORDER BY %sid%s",
			    kd->cols & STORE_COL_NS ? "namespace" : "NULL::text",
			    kd->cols & STORE_COL_VERSION ? "version" : "0",
			    kd->cols & STORE_COL_JOB ? "job_id" : "NULL::text",
			    kd->cols & STORE_COL_NODE ? "node_id" : "NULL::text",
			    kd->cols & STORE_COL_NODE ? "alloc_modify_index" : "0", kd->table,
			    kd->key_cols & STORE_COL_NS ? "namespace, " : "",
			    kd->key_cols & STORE_COL_VERSION ? ", version" : "");
		rc = each_row(ps, c, sql.buf, snap_row, &a, err);
	}
	if (rc == 0)
		rc = each_row(ps, c, "SELECT name, idx FROM group_index ORDER BY name", snap_group,
			      &a, err);
	if (pg_exec(ps, c, "COMMIT", NULL))
		(void)pg_exec(ps, c, "ROLLBACK", NULL);
out:
	pg_conn_put(ps, c);
	strbuf_release(&sql);
	if (rc) {
		sqlite_import_end(a.im, 0, false, NULL);
		return rc;
	}
	return sqlite_import_end(a.im, index, true, err);
}

/* --- restore ---------------------------------------------------------- */

static int restore_row(const struct store_kind_desc *kd, const struct store_raw_row *r,
		       void *arg, struct herd_err *err)
{
	struct pg_store *ps = arg;
	struct store_key key = { r->ns, r->id, r->version };
	struct kparams p;
	PGresult *res;
	int rc;

	pg_kparams_key(&p, &key);
	p.v[KP_JOB] = r->job_id;
	p.v[KP_NODE] = r->node_id;
	pg_kparams_int(&p, KP_CI, p.ci, sizeof(p.ci), r->create_index);
	pg_kparams_int(&p, KP_MI, p.mi, sizeof(p.mi), r->modify_index);
	pg_kparams_int(&p, KP_AMI, p.ami, sizeof(p.ami), r->alloc_modify_index);
	p.v[KP_BODY] = r->body;
	p.v[KP_REPORT] = "f";
	if ((rc = pg_kind_run(ps, &ps->w, kd, PG_INSERT_RAW, &p, &res, err)))
		return rc;
	PQclear(res);
	return 0;
}

static int restore_group(const char *name, uint64_t idx, void *arg, struct herd_err *err)
{
	return pg_bump_group(arg, name, idx, err);
}

/* Everything of the file in place of what the tables hold: one
 * transaction on w, which holds the lock. */
static int restore_rows(struct pg_store *ps, const char *file, uint64_t *index,
			struct herd_err *err)
{
	static const Oid types[] = { INT8OID };
	struct strbuf sql = STRBUF_INIT;
	char idx_s[24];
	const char *v[] = { idx_s };
	PGresult *res;
	int rc;

	strbuf_adds(&sql, "TRUNCATE group_index");
	for (int k = 0; k < STORE_KIND_COUNT; k++)
		strbuf_addf(&sql, ", %s", store_kinds[k].table);
	pthread_mutex_lock(&ps->lock);
	if ((rc = pg_exec(ps, &ps->w, "BEGIN", err)))
		goto out;
	if ((rc = pg_exec(ps, &ps->w, sql.buf, err)) ||
	    (rc = sqlite_export(file, restore_row, restore_group, ps, index, err)))
		goto rollback;
	snprintf(idx_s, sizeof(idx_s), "%llu", (unsigned long long)*index);
	res = PQexecParams(ps->w.db, "UPDATE meta SET value = $1 WHERE key = 'index'", 1, types, v,
			   NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = pg_err(ps, &ps->w, res, "restore: set the index", err);
	PQclear(res);
	if (rc == 0 && (rc = pg_exec(ps, &ps->w, "COMMIT", err)) == 0)
		goto out;
rollback:
	(void)pg_exec(ps, &ps->w, "ROLLBACK", NULL);
out:
	pthread_mutex_unlock(&ps->lock);
	strbuf_release(&sql);
	return rc;
}

int store_restore_postgres(const char *conninfo, const char *file, const char *keep,
			   uint64_t *index, struct herd_err *err)
{
	struct store_pg_options opts = { .holder = "herd operator snapshot restore",
					 .lock_wait_ns = 0 };
	struct store_snapshot_info info;
	struct store *s = NULL;
	uint64_t idx = 0;
	char *upgraded = NULL;
	int rc;

	/* checked, and of a newer herd refused, here */
	if ((rc = store_snapshot_inspect(file, &info, err)))
		return rc;
	/* an older schema: a copy upgraded as a server would on opening it */
	if (info.schema_version < STORE_SCHEMA_VERSION &&
	    (rc = sqlite_upgraded_copy(file, &upgraded, err)))
		return rc;
	if ((rc = store_open_postgres(conninfo, &opts, &s, err)))
		goto out;
	if (keep && (rc = pg_snapshot(s, keep, err)))
		herd_err_prefix(err, "saving the state it would replace");
	if (rc == 0)
		rc = restore_rows(pg_of(s), upgraded ? upgraded : file, &idx, err);
	store_close(s);
out:
	sqlite_remove_copy(upgraded);
	if (rc == 0 && index)
		*index = idx;
	return rc;
}
