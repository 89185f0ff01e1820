/* store_snapshot_inspect (store.h): what a backup file holds, read without
 * changing it, and whether this herd can use it.  The file is opened read
 * only; SQLite's quick_check walks every page, so a truncated or damaged
 * copy is found here, before a restore puts it in place. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "store/store-int.h"

/* The single integer the query answers; -EINVAL with what when it fails. */
static int query_int(sqlite3 *db, const char *sql, int64_t *out, const char *path,
		     struct herd_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = 0;
	} else {
		rc = herd_errf(err, -EINVAL, "%s: not a readable herd store (%s)", path,
			       rc == SQLITE_DONE ? "no answer" : sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return rc;
}

static int check_integrity(sqlite3 *db, const char *path, struct herd_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *verdict = (const char *)sqlite3_column_text(st, 0);
		rc = verdict && !strcmp(verdict, "ok")
			     ? 0
			     : herd_errf(err, -EINVAL, "%s: damaged: %s", path,
					 verdict ? verdict : "(no verdict)");
	} else {
		rc = herd_errf(err, -EINVAL, "%s: damaged or not SQLite: %s", path,
			       sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return rc;
}

static int count_records(sqlite3 *db, struct store_snapshot_info *info, const char *path,
			 struct herd_err *err)
{
	struct strbuf sql = STRBUF_INIT;
	int rc = 0;

	for (int k = 0; k < STORE_KIND_COUNT && rc == 0; k++) {
		int64_t present = 0, n = 0;
		strbuf_reset(&sql);
		strbuf_addf(&sql, "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='%s'",
			    store_kinds[k].table);
		rc = query_int(db, sql.buf, &present, path, err);
		if (rc || !present)
			continue; /* a kind newer than the file's schema */
		strbuf_reset(&sql);
		strbuf_addf(&sql, "SELECT count(*) FROM %s", store_kinds[k].table);
		rc = query_int(db, sql.buf, &n, path, err);
		info->records[k] = (uint64_t)n;
	}
	strbuf_release(&sql);
	return rc;
}

int store_snapshot_inspect(const char *path, struct store_snapshot_info *info,
			   struct herd_err *err)
{
	sqlite3 *db = NULL;
	int64_t app = 0, version = 0, index = 0;
	int rc;

	memset(info, 0, sizeof(*info));
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, NULL);
	if (rc != SQLITE_OK) {
		rc = herd_errf(err, rc == SQLITE_CANTOPEN ? -ENOENT : -EIO, "%s: cannot open: %s",
			       path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto out;
	}
	sqlite3_busy_timeout(db, 5000);
	if ((rc = check_integrity(db, path, err)) ||
	    (rc = query_int(db, "PRAGMA application_id", &app, path, err)))
		goto out;
	if (app != HERD_APPLICATION_ID) {
		rc = herd_errf(err, -EINVAL, "%s: an SQLite file, but not a herd store", path);
		goto out;
	}
	if ((rc = query_int(db, "SELECT value FROM meta WHERE key='schema_version'", &version,
			    path, err)) ||
	    (rc = query_int(db, "SELECT value FROM meta WHERE key='index'", &index, path, err)))
		goto out;
	if (version < 1 || version > STORE_SCHEMA_VERSION) {
		rc = herd_errf(err, version < 1 ? -EINVAL : -EPROTONOSUPPORT,
			       "%s: schema version %lld; this herd reads 1 to %d%s", path,
			       (long long)version, STORE_SCHEMA_VERSION,
			       version > STORE_SCHEMA_VERSION ? " (use a newer herd)" : "");
		goto out;
	}
	info->schema_version = (int)version;
	info->index = (uint64_t)index;
	rc = count_records(db, info, path, err);
out:
	sqlite3_close(db);
	return rc;
}
