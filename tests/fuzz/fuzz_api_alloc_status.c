/* Fuzz target: the allocation status body decoder
 * (alloc_status_from_request), and the usage accounting applied to the
 * body as if it were an allocation: adding then removing it must leave
 * nothing taken. */
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

	if (!body)
		return 0;
	if (alloc_status_from_request(body, &st, &err) == 0) {
		if (!st.client_status || !st.client_description)
			abort();
	} else if (!err.msg[0]) {
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
