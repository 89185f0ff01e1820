/* Helpers shared by the store tests: a store in a fresh temporary dir. */
#ifndef HERD_TEST_STORE_UTIL_H
#define HERD_TEST_STORE_UTIL_H

#include <jansson.h>

#include "store/store.h"

struct tmpstore {
	char dir[4096];
	char path[4200];
	struct store *s;
};

/* cmocka setup/teardown: *state becomes a struct tmpstore with an open
 * store at <tmpdir>/state.db; teardown closes it and removes the dir. */
int tmpstore_setup(void **state);
int tmpstore_teardown(void **state);
/* Closes and opens the store again. */
void tmpstore_reopen(struct tmpstore *t);
/* Puts obj (taking the caller's reference) and asserts success. */
void put_ok(struct store *s, enum store_kind kind, json_t *obj);

#endif
