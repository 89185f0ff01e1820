/* Fuzz target: the allocation status body decoders, of one allocation
 * (alloc_status_from_request) and of an agent's batch
 * (alloc_status_batch_from_request: every entry answered, each with an id,
 * a status or a reason), and the usage accounting applied to the body as
 * if it were an allocation: adding then removing it must leave nothing
 * taken. */
#include <stdint.h>
#include <stdlib.h>

#include "server/server-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	struct herd_err err = { 0 };
	struct alloc_status st;
	struct node_usage u = { 0 };
	struct alloc_status_entry *v = NULL;
	size_t n = 0;

	if (!body)
		return 0;
	if (alloc_status_from_request(body, &st, &err) == 0) {
		if (!st.client_status || !st.client_description)
			abort();
	} else if (!err.msg[0]) {
		abort();
	}
	err.msg[0] = '\0';
	if (alloc_status_batch_from_request(body, &v, &n, &err) == 0) {
		if (n > ALLOC_STATUS_BATCH_MAX ||
		    n != json_array_size(json_object_get(body, "allocations")))
			abort();
		for (size_t i = 0; i < n; i++) {
			if (!v[i].id)
				abort();
			if (v[i].err.code == 0 && (!v[i].st.client_status || !v[i].st.client_description))
				abort();
			if (v[i].err.code && !v[i].err.msg[0])
				abort();
		}
		free(v);
	} else if (!err.msg[0] || v || n) {
		abort();
	}
	node_usage_add_alloc(&u, body, 1);
	node_usage_add_alloc(&u, body, -1);
	if (u.cpu || u.memory || u.nports)
		abort();
	for (size_t i = 0; i < u.ndevs; i++)
		if (u.devs[i].tenants || u.devs[i].compute || u.devs[i].memory)
			abort();
	node_usage_release(&u);
	json_decref(body);
	return 0;
}
