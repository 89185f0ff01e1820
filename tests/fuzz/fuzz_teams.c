/* fuzz_teams: the team documents' readers (server/teams.h): quota
 * specifications and ACL policy rules, as HCL and as JSON.  The first byte
 * picks the reader.  Whatever a reader accepts, the JSON checker must
 * accept again unchanged (the CLI sends what the HCL reader returns, the
 * server checks it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/diag.h"
#include "server/teams.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list dl;
	struct herd_err err = { 0 };
	const char *text = (const char *)data + 1;
	json_t *doc = NULL, *again;
	if (size < 1 || size > 65536)
		return 0;
	diag_list_init(&dl);
	switch (data[0] % 4) {
	case 0:
		doc = quota_spec_from_hcl(text, size - 1, &dl);
		if (doc) {
			again = quota_spec_check(doc, &err);
			if (!again || !json_equal(again, doc))
				abort();
			json_decref(again);
			(void)quota_gpu_limit(doc);
		}
		break;
	case 1:
		doc = acl_rules_from_hcl(text, size - 1, &dl);
		if (doc) {
			again = acl_rules_check(doc, &err);
			if (!again || !json_equal(again, doc))
				abort();
			json_decref(again);
		}
		break;
	default: {
		json_t *in = json_loadb(text, size - 1, JSON_REJECT_DUPLICATES, NULL);
		if (in) {
			doc = data[0] % 4 == 2 ? quota_spec_check(in, &err) : acl_rules_check(in, &err);
			json_decref(in);
		}
		break;
	}
	}
	json_decref(doc);
	diag_list_release(&dl);
	return 0;
}
