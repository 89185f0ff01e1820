/* spec: the entry points from a job file, or a JSON tree, to a validated job.
 *
 *   HCL text  --hcl_parse--> hcl_body --job_hcl_to_expr--> hcl_expr --.
 *   JSON text --hcl_parse_json--> hcl_expr --------------------------+--> decode,
 *   HTTP API: json_t --(viewed as an hcl_expr: job_from_json)--------'    validate
 *
 * One tree type (hcl.h) carries a position in every node, so a job file's
 * messages get line:col without a separate map, and the decoder reads the
 * readers' tree directly: no copy into jansson on the way (that copy, its
 * position map and its freeing were half the cost of loading a job file).
 *
 * Every function here reports all the problems it finds into a diag_list
 * (errors and warnings, each with line:col when known and a message that
 * starts with the JSON path of the thing) and never prints.  A job is
 * returned only when no error was found: nothing is half-accepted. */
#ifndef HERD_SPEC_SPEC_H
#define HERD_SPEC_SPEC_H

#include <stddef.h>

#include <jansson.h>

#include "common/diag.h"
#include "spec/job.h"
#include "spec/posmap.h"

/* Loads a job file: JSON when the first non-blank byte is '{', HCL
 * otherwise.  text need not be NUL-terminated.  Returns a validated job the
 * caller frees with job_free, or NULL when errors were added to diags
 * (warnings may be added either way). */
struct job *spec_load(const char *text, size_t len, struct diag_list *diags);

/* Decodes the canonical JSON form (docs/jobspec.md, "JSON"), optionally
 * wrapped as {"job": {...}}, and validates it.  Durations may also be
 * strings ("30s") and memory sizes strings ("2 GiB").  pm gives source
 * positions for the values of root (NULL when there are none).  root is only
 * read; the job copies what it keeps.  Returns a job to free with job_free,
 * or NULL when errors were added to diags. */
struct job *job_from_json(const json_t *root, const struct posmap *pm, struct diag_list *diags);

/* A stored job (its JSON, changed in place) made what this build decodes,
 * for the readers of jobs an earlier build stored (the server's, the
 * agent's), before job_from_json: a template with change_mode "script" but
 * no change_script (accepted and ignored before) becomes change_mode
 * "noop", what it did.  job may be a shallow copy of a stored record: a
 * change replaces its "groups" with a deep copy first, leaving the record
 * as it was.  Returns how many templates changed.  Submissions do not
 * pass through it: they get the error. */
int job_stored_upgrade(json_t *job);

/* The canonical JSON form of a validated job, every default written out.
 * Returns a new reference (never NULL). */
json_t *job_to_json(const struct job *job);
/* The same, every object's keys in sorted order (bytewise, a prefix first:
 * the order the store keeps records in, so that it can keep this one
 * without copying it; see store_batch_put_owned). */
json_t *job_to_json_sorted(const struct job *job);

/* Converts the body of an HCL job file (one `job "<id>" { ... }` block) to
 * a JSON tree of the canonical shape: repeated blocks become arrays under
 * plural names (group -> groups), block labels become fields (id, name,
 * label).  Positions of every value go to pm.  Structural errors (no job
 * block, a block where an attribute belongs, a repeated single block) go to
 * diags, and the rest is converted all the same (so that one run reports
 * every problem): the caller must treat the tree as invalid when diags
 * gained errors.  Unknown names are left in the tree for job_from_json to
 * report.  Returns a new reference, or NULL when there is no job block. */
json_t *job_hcl_to_json(const struct hcl_body *body, struct posmap *pm, struct diag_list *diags);

/* The same as a tree (hcl.h) that shares the attribute values of body and
 * lives in its memory (freed with it); body must be a root from hcl_parse.
 * Members written as blocks have from_block set.  Returns NULL when there is
 * no job block. */
struct hcl_expr *job_hcl_to_expr(const struct hcl_body *body, struct diag_list *diags);

#endif
