/* Helpers shared by the store tests: a store in a fresh temporary dir, on
 * SQLite, or on PostgreSQL when HERD_TEST_PG holds a libpq conninfo (the
 * *_pg tests, run by with-pg around a private cluster): then every test
 * starts on an empty database. */
#ifndef HERD_TEST_STORE_UTIL_H
#define HERD_TEST_STORE_UTIL_H

#include <jansson.h>
#include <stdbool.h>

#include "store/store.h"

struct tmpstore {
	char dir[4096];
	char path[4200];
	bool pg;               /* on PostgreSQL: conninfo from HERD_TEST_PG */
	const char *conninfo;
	struct store *s;
};

/* cmocka setup/teardown: *state becomes a struct tmpstore with an open
 * store (SQLite: at <tmpdir>/state.db; PostgreSQL: the emptied database of
 * HERD_TEST_PG); teardown closes it and removes the dir. */
int tmpstore_setup(void **state);
int tmpstore_teardown(void **state);
/* Closes and opens the store again. */
void tmpstore_reopen(struct tmpstore *t);
/* Opens another store on t's (PostgreSQL: with opts). */
int tmpstore_open(struct tmpstore *t, const struct store_pg_options *opts, struct store **out,
		  struct herd_err *err);
/* PostgreSQL: runs sql (no parameters) on a connection of its own;
 * asserts success.  out (may be NULL) gets the first value, truncated to
 * size. */
void pg_sql(const char *conninfo, const char *sql, char *out, size_t size);
/* Puts obj (taking the caller's reference) and asserts success. */
void put_ok(struct store *s, enum store_kind kind, json_t *obj);

#endif
