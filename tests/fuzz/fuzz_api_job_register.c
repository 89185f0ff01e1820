/* Fuzz target: the job register/plan body decoder of the API
 * (job_from_request), then the server's round trip: the canonical job it
 * would store must decode again to the same canonical job, and an error
 * answer must carry diagnostics. */
#include <stdint.h>
#include <stdlib.h>

#include "server/server-int.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *eb = NULL;
	struct diag_list dl;
	struct job *job;

	if (!body)
		return 0;
	diag_list_init(&dl);
	job = job_from_request(body, &dl, &eb);
	if (job) {
		json_t *canon = job_to_json(job), *stored = json_deep_copy(canon), *again;
		struct job *back;
		json_object_set_new(stored, "version", json_integer(3));
		json_object_set_new(stored, "stop", json_false());
		back = job_from_stored(stored);
		if (!back)
			abort(); /* what the server stores must decode */
		again = job_to_json(back);
		if (!json_equal(again, canon))
			abort();
		json_decref(again);
		json_decref(canon);
		json_decref(stored);
		job_free(back);
		json_decref(job_warnings(&dl));
	} else if (!json_is_object(json_object_get(eb, "error"))) {
		abort();
	}
	json_decref(eb);
	job_free(job);
	diag_list_release(&dl);
	json_decref(body);
	return 0;
}
