/* Fuzz target: HCL job files through spec_load (parser, block table,
 * decoder, validator); accepted jobs must survive the canonical round trip. */
#include <stdint.h>
#include <stdlib.h>

#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list dl;
	struct job *job;

	diag_list_init(&dl);
	job = spec_load((const char *)data, size, &dl);
	if (job) {
		json_t *a = job_to_json(job), *b;
		struct diag_list dl2;
		struct job *again;

		diag_list_init(&dl2);
		again = job_from_json(a, NULL, &dl2);
		if (!again)
			abort();
		b = job_to_json(again);
		if (!json_equal(a, b))
			abort();
		json_decref(a);
		json_decref(b);
		job_free(again);
		diag_list_release(&dl2);
	}
	job_free(job);
	diag_list_release(&dl);
	return 0;
}
