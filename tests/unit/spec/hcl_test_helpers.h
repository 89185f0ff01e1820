/* Helpers shared by the hcl unit tests: parse text and render the
 * diagnostics as one string ("line:col: message\n" each), so that tests
 * compare exact messages and positions. */
#ifndef HERD_TEST_HCL_HELPERS_H
#define HERD_TEST_HCL_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/strbuf.h"
#include "spec/hcl.h"

/* Returns the diagnostics of dl as a heap string; "" when there are none. */
static inline char *diags_text(const struct diag_list *dl)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < dl->n; i++)
		strbuf_addf(&sb, "%d:%d: %s\n", dl->v[i].line, dl->v[i].col, dl->v[i].msg);
	return strbuf_detach(&sb, NULL);
}

/* Parses HCL text; on success returns the body and sets *errs to NULL; on
 * failure returns NULL and sets *errs to the rendered diagnostics. */
static inline struct hcl_body *parse_hcl(const char *text, char **errs)
{
	struct diag_list dl;
	struct hcl_body *b;
	diag_list_init(&dl);
	b = hcl_parse(text, strlen(text), &dl);
	*errs = dl.n ? diags_text(&dl) : NULL;
	if (!b && !*errs)
		*errs = strdup("(no diagnostics)");
	diag_list_release(&dl);
	return b;
}

/* The diagnostics of a text that must fail; NULL if it parsed. */
static inline char *hcl_errors(const char *text)
{
	char *errs;
	struct hcl_body *b = parse_hcl(text, &errs);
	if (b) {
		hcl_body_free(b);
		free(errs);
		return NULL;
	}
	return errs;
}

static inline char *json_errors(const char *text)
{
	struct diag_list dl;
	struct hcl_expr *e;
	char *errs;
	diag_list_init(&dl);
	e = hcl_parse_json(text, strlen(text), &dl);
	errs = e ? NULL : diags_text(&dl);
	hcl_expr_free(e);
	diag_list_release(&dl);
	return errs;
}

/* Asserts that text fails with exactly the diagnostics `want`. */
#define assert_hcl_errors(text, want)                   \
	do {                                            \
		char *got_ = hcl_errors(text);          \
		assert_non_null(got_);                  \
		assert_string_equal(got_, want);        \
		free(got_);                             \
	} while (0)

#define assert_json_errors(text, want)                  \
	do {                                            \
		char *got_ = json_errors(text);         \
		assert_non_null(got_);                  \
		assert_string_equal(got_, want);        \
		free(got_);                             \
	} while (0)

/* The value of attribute name in body (asserts it is there). */
static inline const struct hcl_expr *attr_value(const struct hcl_body *b, const char *name)
{
	const struct hcl_attribute *a = hcl_body_attr(b, name);
	if (!a) {
		fprintf(stderr, "attribute %s missing\n", name);
		abort();
	}
	return a->value;
}

#endif
