/* posmap: where each JSON value of a jansson tree was written, and the
 * conversions between jansson trees and the readers' trees (hcl.h).
 *
 * Job files no longer go through jansson (spec.h: the decoder reads the
 * readers' tree, which carries positions itself); the map serves callers
 * that hold a jansson tree made from a file (job_hcl_to_json, tests) and
 * want positions for it.  A tree from the HTTP API has no map (NULL): then
 * errors name the JSON path only.  The map does not own or reference-count
 * the json_t keys: keep the tree alive as long as the map is used. */
#ifndef HERD_SPEC_POSMAP_H
#define HERD_SPEC_POSMAP_H

#include <jansson.h>

#include "spec/hcl.h"

struct posmap;

struct posmap *posmap_new(void);
void posmap_free(struct posmap *pm); /* accepts NULL */
void posmap_set(struct posmap *pm, const json_t *value, struct hcl_pos pos);
/* Returns the position of value, or {0, 0} when unknown or pm is NULL. */
struct hcl_pos posmap_get(const struct posmap *pm, const json_t *value);

/* Converts an expression tree to JSON (numbers that is_int become integers,
 * others reals), recording every value's position in pm (may be NULL).
 * true, false and null are shared singletons in jansson, so they get no
 * position: report those through their parent object or array.
 * Returns a new reference; never NULL. */
json_t *hcl_expr_to_json(const struct hcl_expr *expr, struct posmap *pm);

struct hcl_arena;
/* The reverse: a view of a jansson tree as an expression tree, its nodes in
 * arena a (hcl-int.h), its strings and keys borrowed from j (keep j alive
 * and unchanged while the view is used).  Positions come from pm (may be
 * NULL: then all are 0:0); an object member's key has its value's. */
struct hcl_expr *hcl_expr_from_json(struct hcl_arena *a, const json_t *j, const struct posmap *pm);

#endif
