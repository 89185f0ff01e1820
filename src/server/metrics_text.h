/* metrics_text: a set of metric families and its two forms, the
 * Prometheus text exposition format (version 0.0.4) and JSON
 * (docs/operations.md, "Metrics").  Pure: no I/O, no store, no clock.
 *
 * A caller declares families (metrics_family) and adds samples to them
 * (metrics_add); the writers then sort the families by name and the
 * samples of each by their labels as written, so that the same state gives
 * the same text byte for byte.  Samples of one family with the same labels
 * add up into one (a family must not name a series twice: an allocation
 * that holds two shares of one GPU is one holder with their sum).
 *
 * Ownership: struct metrics owns every family, sample and string in it
 * (names, help, labels and their values are copied); a family pointer is
 * valid until metrics_free.  Not thread-safe: one scrape builds one set. */
#ifndef HERD_SERVER_METRICS_TEXT_H
#define HERD_SERVER_METRICS_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* The content type of the text form. */
#define METRICS_TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum metrics_type { METRICS_GAUGE, METRICS_COUNTER };

struct metrics;
struct metrics_family;

/* A new, empty set; free with metrics_free (accepts NULL). */
struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* Whether s is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, with label,
 * a label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", which
 * Prometheus keeps for itself). */
bool metrics_name_valid(const char *s, bool label);

/* The family `name` (declared now, or the one declared before with that
 * name), or NULL when name is not a valid metric name or was declared
 * before with another type.  help is one line or more (escaped in the
 * text form). */
struct metrics_family *metrics_family(struct metrics *m, const char *name,
				      enum metrics_type type, const char *help);

/* Adds a sample of value to f, with labels given as name, value, name,
 * value, ..., NULL (values are UTF-8, as both forms require, and may hold
 * anything else: they are escaped in the text form).  A NULL value is
 * written as "".  Returns 0, or -EINVAL (the sample is left out) when f
 * is NULL, a label name is invalid or given twice, or there are more than
 * 16 labels. */
int metrics_add(struct metrics_family *f, double value, ...) __attribute__((sentinel));
/* The same with the labels in an array of 2 * nlabels strings. */
int metrics_addv(struct metrics_family *f, double value, const char *const *labels,
		 size_t nlabels);

/* Writes a value as the text form does: an integer without a fraction
 * ("3", "-2", "1073741824"), else the shortest decimal that reads back as
 * the same double ("0.25", "1e-05"), and "NaN", "+Inf", "-Inf".  buf must
 * hold 32 bytes. */
void metrics_format_value(double v, char buf[32]);

/* Appends the text form to sb: per family, in name order, "# HELP",
 * "# TYPE" and its samples ("name{label=\"value\",...} value"), each line
 * ending with '\n'.  A family without samples still has its HELP and TYPE
 * lines (it says what would be there). */
void metrics_write_text(struct metrics *m, struct strbuf *sb);

/* The JSON form, in the text form's order: {"metrics": [{"name", "type",
 * "help", "samples": [{"labels": {...}, "value": N}]}]}; a value is an
 * integer when it has no fraction and fits a double's exact integers,
 * else a real; NaN and the infinities, which JSON lacks, are the strings
 * "NaN", "+Inf" and "-Inf".  A new reference. */
json_t *metrics_to_json(struct metrics *m);

#endif
