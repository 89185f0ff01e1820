/* Fuzz target for the HCL and JSON readers: every input is parsed both as
 * HCL and as JSON; what parses is converted to JSON with positions and
 * freed.  Invariants checked: a result exists exactly when no error was
 * reported, every converted value has a position, and the JSON written
 * for a tree is valid JSON that jansson reads back, and the JSON reader
 * accepts what jansson accepts (see compare_with_jansson). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/hcl.h"
#include "spec/posmap.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void to_json(const struct hcl_expr *e)
{
	struct posmap *pm = posmap_new();
	json_t *j = hcl_expr_to_json(e, pm), *back;
	char *dump;
	struct hcl_pos pos = posmap_get(pm, j);

	check(j != NULL);
	check(e->kind == HCL_BOOL || e->kind == HCL_NULL ||
	      (pos.line == e->pos.line && pos.col == e->pos.col));
	dump = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
	check(dump != NULL);
	back = json_loads(dump, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	check(back != NULL);
	json_decref(back);
	free(dump);
	json_decref(j);
	posmap_free(pm);
}

static void walk_body(const struct hcl_body *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct hcl_item *it = &b->items[i];
		if (it->kind == HCL_ITEM_ATTRIBUTE) {
			check(hcl_body_attr(b, it->u.attr.name) == &it->u.attr);
			to_json(it->u.attr.value);
		} else {
			check(it->u.block.nlabels >= 0 && it->u.block.nlabels <= 2);
			walk_body(it->u.block.body);
		}
	}
}

static int json_depth(const json_t *j)
{
	int d = 0, sub;
	size_t i;
	const char *k;
	json_t *v;
	if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			if ((sub = json_depth(v)) > d)
				d = sub;
		return d + 1;
	}
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v)
			if ((sub = json_depth(v)) > d)
				d = sub;
		return d + 1;
	}
	return 0;
}

/* Differential check against jansson, a strict RFC 8259 reader: both must
 * agree on what is JSON, except where our limits or number rules differ
 * (depth past HCL_MAX_DEPTH; integers beyond int64, which we read as
 * reals and jansson refuses; numbers longer than HCL_MAX_NUMBER_LEN, a
 * limit of ours; NUL bytes). */
static bool has_message(const struct diag_list *dl, const char *start)
{
	for (size_t i = 0; i < dl->n; i++)
		if (strncmp(dl->v[i].msg, start, strlen(start)) == 0)
			return true;
	return false;
}

static void compare_with_jansson(const uint8_t *data, size_t size, bool ours,
				 const struct diag_list *dl)
{
	json_error_t jerr;
	json_t *j;

	/* jansson takes a raw NUL byte for the end of input; RFC 8259 and we
	 * do not */
	if (memchr(data, 0, size))
		return;
	/* a leading byte order mark: RFC 8259 lets a reader ignore it, we do */
	if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
		return;
	j = json_loadb((const char *)data, size,
		       JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (j) {
		check(ours || json_depth(j) > HCL_MAX_DEPTH ||
		      has_message(dl, "number is longer than"));
		json_decref(j);
	} else if (ours) {
		check(strstr(jerr.text, "too big") != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list dl;
	struct hcl_body *body;
	struct hcl_expr *e;

	diag_list_init(&dl);
	body = hcl_parse((const char *)data, size, &dl);
	check((body != NULL) == (dl.errors == 0));
	if (body)
		walk_body(body);
	hcl_body_free(body);
	diag_list_release(&dl);

	diag_list_init(&dl);
	e = hcl_parse_json((const char *)data, size, &dl);
	check((e != NULL) == (dl.errors == 0));
	compare_with_jansson(data, size, e != NULL, &dl);
	if (e)
		to_json(e);
	hcl_expr_free(e);
	diag_list_release(&dl);
	return 0;
}
