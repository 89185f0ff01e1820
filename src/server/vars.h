/* vars: variables, a namespace's store of key/value items for job
 * configuration and secrets (docs/api.md, "Variables").  Pure: no I/O, no
 * store; the routes (routes_vars.c) and the CLI check with these.
 *
 * A variable as stored (STORE_VAR, keyed by namespace and path):
 *   {"namespace", "path", "items_sealed": {"key_id", "data"},
 *    "create_time", "modify_time" (unix ns), and the store's
 *    "create_index", "modify_index"}
 * where items_sealed holds the items {"key": "value", ...} encrypted
 * (vars_crypt.h); the API answers with them opened, as "items".
 *
 * Limits, so that one variable is a small record of the store:
 *   path   1..VARS_MAX_PATH bytes of A-Z a-z 0-9 _ . - ~ /, segments
 *          separated by single '/', none empty, "." or ".." (no leading or
 *          trailing '/');
 *   items  1..VARS_MAX_ITEMS keys of 1..VARS_MAX_KEY bytes of
 *          A-Z a-z 0-9 _ . -; values strings without NUL; the keys and
 *          values together at most VARS_MAX_SIZE bytes. */
#ifndef HERD_SERVER_VARS_H
#define HERD_SERVER_VARS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define VARS_MAX_PATH 128
#define VARS_MAX_KEY 128
#define VARS_MAX_ITEMS 256
#define VARS_MAX_SIZE (64 * 1024)

/* 0 when path is a valid variable path, else -EINVAL with the reason. */
int vars_check_path(const char *path, struct herd_err *err);
/* 0 when items (a JSON object) is a valid set of items, else -EINVAL with
 * the reason (which key, which limit). */
int vars_check_items(const json_t *items, struct herd_err *err);
/* Whether a prefix given to a list is well formed: empty, or what a path
 * may begin with (the same characters, at most VARS_MAX_PATH bytes). */
bool vars_prefix_valid(const char *prefix);

/* The stored record of a put of items at (ns, path) at time now (unix ns):
 * create_time from old (the variable it replaces, may be NULL) or now.  A
 * new reference; items is copied. */
json_t *vars_record(const char *ns, const char *path, const json_t *items, const json_t *old,
		    int64_t now);
/* A variable's metadata: the record without its items, sealed or not (a
 * new reference). */
json_t *vars_metadata(const json_t *var);

/* Whether glob (a policy's variables path rule: a path, optionally ending
 * in '*', or "*") covers path; *len gets the length of the glob's literal
 * part (longer: more specific). */
bool vars_glob_match(const char *glob, const char *path, size_t *len);

#endif
