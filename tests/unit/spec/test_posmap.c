/* Unit tests of posmap and hcl_expr_to_json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_test_helpers.h"
#include "spec/posmap.h"

static void test_map_many(void **state)
{
	struct posmap *pm = posmap_new();
	enum { N = 5000 };
	json_t **v = calloc(N, sizeof(*v));

	for (int i = 0; i < N; i++) {
		v[i] = json_integer(i);
		posmap_set(pm, v[i], (struct hcl_pos){ i + 1, i % 80 + 1 });
	}
	posmap_set(pm, v[7], (struct hcl_pos){ 99, 9 }); /* overwrite */
	for (int i = 0; i < N; i++) {
		struct hcl_pos p = posmap_get(pm, v[i]);
		if (i == 7) {
			assert_int_equal(p.line, 99);
			continue;
		}
		assert_int_equal(p.line, i + 1);
		assert_int_equal(p.col, i % 80 + 1);
	}
	{
		json_t *other = json_string("x");
		assert_int_equal(posmap_get(pm, other).line, 0);
		json_decref(other);
	}
	assert_int_equal(posmap_get(NULL, v[0]).line, 0);
	for (int i = 0; i < N; i++)
		json_decref(v[i]);
	free(v);
	posmap_free(pm);
	posmap_free(NULL);
	/* an empty map */
	pm = posmap_new();
	assert_int_equal(posmap_get(pm, json_null()).col, 0);
	posmap_free(pm);
}

static void test_expr_to_json(void **state)
{
	const char *text = "{\"a\": [1, 2.5, \"s\\u0000t\"],\n \"b\": {\"c\": true, \"d\": null},\n"
			   " \"big\": 12345678901234567890}";
	struct diag_list dl;
	struct posmap *pm = posmap_new();
	struct hcl_expr *e;
	json_t *j, *a, *b;
	char *dump;

	diag_list_init(&dl);
	e = hcl_parse_json(text, strlen(text), &dl);
	assert_non_null(e);
	j = hcl_expr_to_json(e, pm);
	dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(dump, "{\"a\":[1,2.5,\"s\\u0000t\"],\"b\":{\"c\":true,\"d\":null},"
				  "\"big\":1.2345678901234567e19}");
	free(dump);
	a = json_object_get(j, "a");
	assert_true(json_is_integer(json_array_get(a, 0)));
	assert_true(json_is_real(json_array_get(a, 1)));
	assert_int_equal(json_string_length(json_array_get(a, 2)), 3);
	assert_int_equal(posmap_get(pm, j).line, 1);
	assert_int_equal(posmap_get(pm, j).col, 1);
	assert_int_equal(posmap_get(pm, a).col, 7);
	assert_int_equal(posmap_get(pm, json_array_get(a, 1)).col, 11);
	b = json_object_get(j, "b");
	assert_int_equal(posmap_get(pm, b).line, 2);
	assert_int_equal(posmap_get(pm, b).col, 7);
	json_decref(j);
	/* without a map */
	j = hcl_expr_to_json(e, NULL);
	assert_int_equal(json_object_size(j), 3);
	json_decref(j);
	hcl_expr_free(e);
	posmap_free(pm);
	diag_list_release(&dl);
}

static void test_hcl_to_json(void **state)
{
	char *errs;
	struct hcl_body *b = parse_hcl("env = {\n  PATH = \"/bin\"\n  \"X\": \"${NOMAD_ALLOC_DIR}\"\n}\n", &errs);
	struct posmap *pm = posmap_new();
	json_t *j;
	char *dump;

	assert_non_null(b);
	j = hcl_expr_to_json(attr_value(b, "env"), pm);
	dump = json_dumps(j, JSON_COMPACT);
	assert_string_equal(dump, "{\"PATH\":\"/bin\",\"X\":\"${NOMAD_ALLOC_DIR}\"}");
	free(dump);
	assert_int_equal(posmap_get(pm, json_object_get(j, "X")).line, 3);
	assert_int_equal(posmap_get(pm, json_object_get(j, "X")).col, 8);
	json_decref(j);
	posmap_free(pm);
	hcl_body_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_many),
		cmocka_unit_test(test_expr_to_json),
		cmocka_unit_test(test_hcl_to_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
