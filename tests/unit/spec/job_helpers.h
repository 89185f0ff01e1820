/* Helpers shared by the job model tests: decode a JSON text with jansson
 * (no position map, as the HTTP API does) and render the diagnostics as one
 * string, so that each test states every message exactly. */
#ifndef HERD_TEST_JOB_HELPERS_H
#define HERD_TEST_JOB_HELPERS_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"
#include "spec/spec.h"

/* A job with the least a job needs; tests splice fields into it. */
#define MIN_TASK "{\"name\":\"t\",\"driver\":\"raw_exec\",\"config\":{\"command\":\"/bin/true\"}}"
#define MIN_GROUP "{\"name\":\"g\",\"tasks\":[" MIN_TASK "]}"

/* "E line:col msg\n" per diagnostic ("W" for warnings), in list order. */
static inline char *render_diags(const struct diag_list *dl)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < dl->n; i++)
		strbuf_addf(&sb, "%c %d:%d %s\n", dl->v[i].level == DIAG_ERROR ? 'E' : 'W',
			    dl->v[i].line, dl->v[i].col, dl->v[i].msg);
	return strbuf_detach(&sb, NULL);
}

/* Decodes text (JSON) through jansson and job_from_json; *out gets the
 * rendered diagnostics (caller frees). */
static inline struct job *decode_text(const char *text, char **out)
{
	struct diag_list dl;
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	struct job *job;

	if (!root) {
		fprintf(stderr, "test json does not parse: %s: %s\n", jerr.text, text);
		abort();
	}
	diag_list_init(&dl);
	job = job_from_json(root, NULL, &dl);
	*out = render_diags(&dl);
	diag_list_release(&dl);
	json_decref(root);
	return job;
}

/* Decodes text (JSON) and checks, with cmocka (included before this
 * header), that its diagnostics are exactly want: the job, NULL when want
 * holds an error (caller frees). */
static inline struct job *decode_expect(const char *text, const char *want)
{
	char *diags;
	struct job *job = decode_text(text, &diags);

	assert_string_equal(diags, want);
	if (strstr(want, "E "))
		assert_null(job);
	else
		assert_non_null(job);
	free(diags);
	return job;
}

/* Loads HCL text through spec_load (positions kept): the job, or NULL;
 * *out gets the rendered diagnostics (caller frees). */
static inline struct job *load_hcl(const char *text, char **out)
{
	struct diag_list dl;
	struct job *job;

	diag_list_init(&dl);
	job = spec_load(text, strlen(text), &dl);
	*out = render_diags(&dl);
	diag_list_release(&dl);
	return job;
}

/* A job of one group "g" with the given fields (a JSON object's members)
 * and the least task. */
#define GROUP_WITH(fields) \
	"{\"id\":\"s\",\"groups\":[{\"name\":\"g\"," fields ",\"tasks\":[" MIN_TASK "]}]}"

/* The job's canonical JSON text (caller frees), once it was checked that
 * the text decodes without a diagnostic to a job of the very same text:
 * what the store keeps reads back as it was written.  Aborts otherwise. */
static inline char *canonical_round_trip(const struct job *job)
{
	json_t *ja = job_to_json_sorted(job), *jb;
	char *a = json_dumps(ja, JSON_COMPACT | JSON_SORT_KEYS), *b, *diags;
	struct job *again = decode_text(a, &diags);

	if (!again || *diags) {
		fprintf(stderr, "canonical JSON does not decode cleanly:\n%s\n%s", a, diags);
		abort();
	}
	jb = job_to_json_sorted(again);
	b = json_dumps(jb, JSON_COMPACT | JSON_SORT_KEYS);
	if (strcmp(a, b)) {
		fprintf(stderr, "canonical JSON changed on a round trip:\n%s\n%s\n", a, b);
		abort();
	}
	free(b);
	free(diags);
	json_decref(ja);
	json_decref(jb);
	job_free(again);
	return a;
}

#endif
