/* Fuzz target: JSON job files and API bodies into the job model.
 *
 * Each input goes both ways a job reaches job_from_json: as a file (our
 * JSON reader with positions) and as an HTTP body (jansson, no positions).
 * Whatever is accepted must survive the canonical round trip unchanged. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "spec/spec.h"

static void check_round_trip(const struct job *job)
{
	struct diag_list dl;
	json_t *a = job_to_json(job), *b;
	struct job *again;

	diag_list_init(&dl);
	again = job_from_json(a, NULL, &dl);
	if (!again)
		abort(); /* the canonical form of a valid job must be valid */
	b = job_to_json(again);
	if (!json_equal(a, b))
		abort();
	json_decref(a);
	json_decref(b);
	job_free(again);
	diag_list_release(&dl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list dl;
	struct job *job;
	json_t *root;

	diag_list_init(&dl);
	job = spec_load((const char *)data, size, &dl);
	if (job)
		check_round_trip(job);
	job_free(job);
	diag_list_release(&dl);

	root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (root) {
		diag_list_init(&dl);
		job = job_from_json(root, NULL, &dl);
		if (job)
			check_round_trip(job);
		job_free(job);
		diag_list_release(&dl);
		json_decref(root);
	}
	return 0;
}
