/* job-int.h: the schema tables that drive decoding, encoding and freeing of
 * the job model (private to src/spec).
 *
 * Each struct of job.h has one table: for every JSON key, the kind of value,
 * where it lives in the struct and its limits.  The decoder (job_decode.c),
 * the encoder (job_encode.c) and job_free walk the same tables, so a field
 * added here is read, written and freed everywhere at once, in this order. */
#ifndef HERD_SPEC_JOB_INT_H
#define HERD_SPEC_JOB_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "spec/job.h"

enum field_kind {
	F_STRING,     /* char *; max = byte limit */
	F_ENUM,       /* char *, one of choices */
	F_SCALAR,     /* char *; a string, number or boolean, kept as text */
	F_INT,        /* int64_t in [min, max] */
	F_BOOL,       /* bool */
	F_DURATION,   /* int64_t ns: integer ns or "30s"; in [min, max] */
	F_SIZE_MIB,   /* int64_t MiB: integer MiB or "2 GiB"; in [min, max] */
	F_COMPUTE,    /* int thousandths from a percentage (0 = not asked) */
	F_STRV,       /* struct job_strv */
	F_MAP,        /* struct job_map; values strings, numbers or booleans */
	F_CONFIG,     /* json_t * object, copied verbatim */
	F_OBJECT,     /* an embedded struct described by schema */
	F_OBJECT_PTR, /* a pointer to a struct described by schema; NULL absent */
	F_ARRAY,      /* a pointer at off, a size_t count at count_off */
	F_SHORTHAND,  /* constraint { regexp = "..." }: sets operator and value */
};

struct schema;

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;
	int64_t min, max;
	const char *const *choices;
	const struct schema *schema;
	size_t count_off;
	/* F_OBJECT_PTR: min = 1 leaves a NULL block out of the JSON instead
	 * of null: a block added after jobs were stored (update), so that a
	 * job without it keeps the canonical text it had */
	/* F_BOOL: where to note that the file set it (an int), or (size_t)-1 */
	size_t set_off;
	/* A field added after jobs were stored: left out of the JSON while it
	 * holds its default (F_INT, F_DURATION: dflt; F_BOOL: false;
	 * F_STRING, F_ENUM: dflt_str, or NULL without one; F_STRV, F_MAP,
	 * F_ARRAY: empty), so that a job
	 * that does not use it keeps the canonical text it had and
	 * re-submitting it after an upgrade makes no new version.  Decoding fills the default again (validation). */
	bool omit_default;
	int64_t dflt;
	const char *dflt_str;
};

struct schema {
	const char *what;             /* "group", for messages */
	size_t size;
	void (*init)(void *obj);      /* marks numeric fields JOB_UNSET */
	const struct field *fields;   /* ends with key == NULL */
	const char *const *ignored;   /* accepted with a warning; NULL-ended */
};

extern const struct schema job_schema;
extern const struct schema constraint_schema;

/* Frees what obj owns according to schema (not obj itself). */
void schema_release(const struct schema *schema, void *obj);

#define NO_SET_OFF ((size_t)-1)

/* job_path (job_path.c): where the decoder or validator is, for messages.
 * Keys are borrowed: each must live while its segment is on the stack. */
struct job_path_seg {
	const char *key; /* NULL: an index into a list */
	size_t index;
};

struct job_path {
	struct job_path_seg *v;
	size_t n, alloc;
	struct strbuf text; /* the last job_path_text */
};

#define JOB_PATH_INIT { NULL, 0, 0, STRBUF_INIT }

/* Push a segment; return the depth to give back to job_path_pop. */
size_t job_path_push_key(struct job_path *p, const char *key);
size_t job_path_push_index(struct job_path *p, size_t index);
static inline void job_path_pop(struct job_path *p, size_t depth)
{
	p->n = depth;
}
/* The path as text, "job" when empty; valid until the next call. */
const char *job_path_text(struct job_path *p);
void job_path_release(struct job_path *p);
/* Adds the error "<path>: <fmt ...>" at pos to diags: the message of every
 * block validator (services, spreads, update blocks). */
void job_path_verror(struct diag_list *diags, struct job_path *path, struct hcl_pos pos,
		     const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

/* The edit distance (insertions, deletions, substitutions and swaps of two
 * neighbours) between a and b, or limit when it is limit or more: a name
 * within 2 edits of a known one is worth a "did you mean". */
int job_edit_distance(const char *a, const char *b, int limit);

/* Decoding and validation (job_decode.c, job_validate.c). */

/* The addresses (in a job being decoded) of fields and objects that failed
 * to decode, sorted once decoding ends. */
struct job_failed {
	const void **v;
	size_t n, alloc;
};

bool job_failed_has(const struct job_failed *f, const void *p);

/* Decodes and validates a document tree (spec.h: job_from_json); root is
 * only read.  Returns a job, or NULL when errors were added to diags. */
struct job *job_from_expr(const struct hcl_expr *root, struct diag_list *diags);

/* job_validate, told which fields failed to decode (NULL: none), so that
 * it does not report them as missing. */
int job_validate_decoded(struct job *job, const struct job_failed *failed,
			 struct diag_list *diags);

/* job_update.c: checks the update blocks of job and its groups, fills
 * their defaults and merges the job's into each group's (a batch job's
 * are dropped with a warning); messages under path.  Returns the number
 * of errors added. */
int job_update_validate(struct job *job, bool batch, struct job_path *path,
			const struct job_failed *failed, struct diag_list *diags);
/* job_schema.c: an update block with every field unset; frees one (and
 * what it owns; accepts NULL). */
void job_update_init(struct job_update *u);
void job_update_free(struct job_update *u);
/* job_schema.c: a disconnect block with every field unset (replace true). */
void job_disconnect_init(struct job_disconnect *d);

/* job_disconnect.c: checks the disconnect block and Nomad's older group
 * fields of every group of job, moves the older ones into the block and
 * fills its defaults; messages under path.  Returns the number of errors
 * added. */
int job_disconnect_validate(struct job *job, struct job_path *path,
			    const struct job_failed *failed, struct diag_list *diags);

/* job_idle_gpu.c: checks every group's idle_gpu block (after required)
 * and fills its defaults; messages under path.  Returns the number of
 * errors added. */
int job_idle_gpu_validate(struct job *job, struct job_path *path,
			  const struct job_failed *failed, struct diag_list *diags);
/* job_scaling.c: checks every group's scaling block (max required, count
 * within min..max, a gpu_utilization policy only on a service) and fills
 * its defaults; messages under path.  Returns the number of errors
 * added. */
int job_scaling_validate(struct job *job, bool batch, struct job_path *path,
			 const struct job_failed *failed, struct diag_list *diags);

/* job_migrate.c: checks the migrate blocks of job and its groups, fills
 * their defaults and merges the job's into each group's (a batch job's
 * are dropped with a warning); messages under path.  Returns the number
 * of errors added. */
int job_migrate_validate(struct job *job, bool batch, struct job_path *path,
			 const struct job_failed *failed, struct diag_list *diags);
/* job_schema.c: a migrate block with every field unset; frees one (and
 * what it owns; accepts NULL). */
void job_migrate_init(struct job_migrate *m);
void job_migrate_free(struct job_migrate *m);

/* job_system.c: the rules of system and sysbatch jobs (job_system.h): count
 * at most 1, no gang, no canaries; a reschedule block the file wrote is
 * ignored with a warning.  Nothing for other types.  Returns the number of
 * errors added. */
int job_system_validate(struct job *job, struct job_path *path,
			const struct job_failed *failed, struct diag_list *diags);

/* job_ephemeral_disk.c: fills every group's ephemeral_disk defaults (size
 * 300 MB; migrate implies sticky, Nomad's rule) and, with
 * prevent_reschedule_on_lost, makes the disconnect block's replace false
 * (a lost or unknown allocation of the group is never replaced). */
void job_ephemeral_disk_fill(struct job *job, const struct job_failed *failed);

/* job_service.c: validates and fills the defaults of n services of group g
 * (task: the task they belong to, NULL for group services), with messages
 * under path; returns the number of errors added. */
int job_services_validate(struct job_service *svcs, size_t n, const char *job_id,
			  const struct job_group *g, const struct job_task *task,
			  struct job_path *path, const struct job_failed *failed,
			  struct diag_list *diags);

/* job_validate.c: whether s is a signal's name ("SIGHUP"). */
bool job_signal_name_ok(const char *s);

/* job_identity.c: validates and fills the defaults of task t's identity
 * blocks (the unnamed one and the named ones: names, aud, ttl bounds,
 * change_mode), with messages under path; returns the number of errors
 * added. */
int job_identities_validate(struct job_task *t, struct job_path *path,
			    const struct job_failed *failed, struct diag_list *diags);

/* job_spread.c: validates and fills the defaults of n spread blocks (a
 * job's or a group's), with messages under path; returns the number of
 * errors added. */
int job_spreads_validate(struct job_spread *spreads, size_t n, struct job_path *path,
			 const struct job_failed *failed, struct diag_list *diags);

#endif
