#include "test_lifecycle_fx.h"
static void test_todo(void **state) { (void)state; }
fx_main(cmocka_unit_test(test_todo))
