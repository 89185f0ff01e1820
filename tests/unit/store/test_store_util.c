#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_store_util.h"

void pg_sql(const char *conninfo, const char *sql, char *out, size_t size)
{
	PGconn *c = PQconnectdb(conninfo);
	PGresult *res;
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", conninfo, PQerrorMessage(c));
	res = PQexec(c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	if (out)
		snprintf(out, size, "%s",
			 PQntuples(res) > 0 && PQnfields(res) > 0 ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
	PQfinish(c);
}

int tmpstore_open(struct tmpstore *t, const struct store_pg_options *opts, struct store **out,
		  struct herd_err *err)
{
	if (t->pg)
		return store_open_postgres(t->conninfo, opts, out, err);
	return store_open_sqlite(t->path, out, err);
}

int tmpstore_setup(void **state)
{
	struct tmpstore *t = calloc(1, sizeof(*t));
	struct herd_err err = { 0 };
	const char *tmp = getenv("TMPDIR");
	const char *pg = getenv("HERD_TEST_PG");

	snprintf(t->dir, sizeof(t->dir), "%s/herd-store-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/state.db", t->dir);
	if (pg && *pg) {
		t->pg = true;
		t->conninfo = pg;
		/* every test on an empty database */
		pg_sql(pg, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public", NULL, 0);
	}
	if (tmpstore_open(t, NULL, &t->s, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = t;
	return 0;
}

int tmpstore_teardown(void **state)
{
	struct tmpstore *t = *state;
	DIR *d;
	struct dirent *e;

	store_close(t->s);
	d = opendir(t->dir);
	while (d && (e = readdir(d))) {
		char p[8192];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", t->dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(t->dir);
	free(t);
	return 0;
}

void tmpstore_reopen(struct tmpstore *t)
{
	struct herd_err err = { 0 };
	store_close(t->s);
	t->s = NULL;
	if (tmpstore_open(t, NULL, &t->s, &err))
		fail_msg("reopen: %s", err.msg);
}

void put_ok(struct store *s, enum store_kind kind, json_t *obj)
{
	struct herd_err err = { 0 };
	assert_non_null(obj);
	if (store_put(s, kind, obj, NULL, &err))
		fail_msg("put: %s", err.msg);
	json_decref(obj);
}
