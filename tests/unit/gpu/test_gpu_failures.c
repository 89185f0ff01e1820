/* Failure injection: no library, init failing, one call failing, a GPU
 * fallen off the bus.  None of them may fail gpu_host_open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <errno.h>

#include "sim-helper.h"

static void test_library_missing(void **state)
{
	struct gpu_config cfg;
	gpu_config_init(&cfg);
	cfg.library_path = "/nonexistent/libnvidia-ml.so.1";
	struct gpu_host *h = gpu_host_open(&cfg);
	assert_false(h->nvml_loaded);
	assert_int_equal(h->nr_devs, 0);
	assert_non_null(strstr(h->reason, "/nonexistent/libnvidia-ml.so.1"));
	gpu_host_free(h);
}

static void test_default_search_without_driver(void **state)
{
	void *dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (dl) {
		dlclose(dl);
		skip(); /* this machine has a driver */
	}
	struct gpu_host *h = gpu_host_open(NULL);
	assert_false(h->nvml_loaded);
	assert_int_equal(h->nr_devs, 0);
	assert_non_null(strstr(h->reason, "no NVIDIA driver"));
	gpu_host_free(h);
}

static void test_not_nvml(void **state)
{
	struct gpu_config cfg;
	gpu_config_init(&cfg);
	cfg.library_path = "libm.so.6";
	struct gpu_host *h = gpu_host_open(&cfg);
	assert_false(h->nvml_loaded);
	assert_non_null(strstr(h->reason, "lacks nvmlInit_v2"));
	gpu_host_free(h);
}

static void test_init_failing(void **state)
{
	sim_write("{\"fail\": {\"nvmlInit_v2\": \"DRIVER_NOT_LOADED\"}, \"gpus\": [{}]}");
	struct gpu_host *h = sim_open();
	assert_false(h->nvml_loaded);
	assert_int_equal(h->nr_devs, 0);
	assert_non_null(strstr(h->reason, "Driver Not Loaded"));
	gpu_host_free(h);

	unsetenv("HERD_NVML_SIM"); /* the simulator with nothing to simulate */
	h = sim_open();
	assert_false(h->nvml_loaded);
	assert_non_null(strstr(h->reason, "failed to initialise"));
	gpu_host_free(h);
}

static void test_one_call_failing(void **state)
{
	sim_write("{\"fail\": {\"nvmlDeviceGetNumaNodeId\": \"UNKNOWN\"},"
		  " \"gpus\": [{\"power_limit_w\": 300, \"numa_node\": 1,"
		  "   \"fail\": {\"nvmlDeviceGetPowerManagementLimit\": \"NOT_SUPPORTED\"}},"
		  "  {\"power_limit_w\": 250, \"numa_node\": 1}]}");
	struct gpu_host *h = sim_open();
	assert_int_equal(h->nr_devs, 2);
	assert_int_equal(h->devs[0].power_limit_mw, -1);
	assert_null(gpu_device_attr(&h->devs[0], "power_limit"));
	assert_int_equal(h->devs[1].power_limit_mw, 250000);
	assert_int_equal(h->devs[0].numa_node, -1); /* an error is an absent value too */
	assert_int_equal(h->devs[1].numa_node, -1);
	assert_int_equal(h->devs[0].cc_major, 8); /* the rest is intact */
	gpu_host_free(h);

	/* Without a UUID a GPU cannot be scheduled: left out, with a warning. */
	sim_write("{\"gpus\": [{\"fail\": {\"nvmlDeviceGetUUID\": \"UNKNOWN\"}}, {}]}");
	h = sim_open();
	assert_int_equal(h->nr_devs, 1);
	assert_int_equal(h->devs[0].nvml_index, 1);
	assert_int_equal(h->nr_warnings, 1);
	assert_non_null(strstr(h->warnings[0], "gpu 0 left out"));
	gpu_host_free(h);

	/* Counting failing: no GPUs, but NVML is there. */
	sim_write("{\"fail\": {\"nvmlDeviceGetCount_v2\": \"UNKNOWN\"}, \"gpus\": [{}]}");
	h = sim_open();
	assert_true(h->nvml_loaded);
	assert_int_equal(h->nr_devs, 0);
	assert_int_equal(h->nr_warnings, 1);
	gpu_host_free(h);
}

static void test_gpu_lost_at_start(void **state)
{
	sim_write("{\"gpus\": [{\"uuid\": \"GPU-a\"}, {\"uuid\": \"GPU-b\", \"lost\": true},"
		  " {\"uuid\": \"GPU-c\"}]}");
	struct gpu_host *h = sim_open();
	assert_int_equal(h->nr_devs, 2);
	assert_string_equal(h->devs[0].uuid, "GPU-a");
	assert_string_equal(h->devs[1].uuid, "GPU-c");
	assert_int_equal(h->devs[1].gpu, 1);
	assert_int_equal(h->nr_warnings, 1);
	assert_non_null(strstr(h->warnings[0], "fallen off the bus"));
	gpu_host_free(h);
}

static void test_gpu_lost_while_running(void **state)
{
	sim_write("{\"gpus\": [{\"uuid\": \"GPU-a\"}, {\"uuid\": \"GPU-b\"}]}");
	struct gpu_host *h = sim_open();
	struct gpu_stats s;
	struct herd_err err = { 0 };
	assert_int_equal(gpu_host_sample(h, 1, &s, &err), 0);
	sim_write("{\"gpus\": [{\"uuid\": \"GPU-a\"}, {\"uuid\": \"GPU-b\", \"lost\": true}]}");
	memset(&s, 0x55, sizeof(s));
	assert_int_equal(gpu_host_sample(h, 1, &s, &err), -ENODEV);
	assert_int_equal(s.gpu_util, 0x5555555555555555LL); /* untouched on failure */
	assert_non_null(strstr(err.msg, "GPU-b"));
	assert_int_equal(h->devs[1].health, GPU_UNHEALTHY);
	assert_non_null(strstr(h->devs[1].health_reason, "fallen off the bus"));
	assert_int_equal(h->devs[0].health, GPU_HEALTHY);
	assert_int_equal(gpu_host_sample(h, 0, &s, &err), 0);
	gpu_host_free(h);
}

static void test_bad_description(void **state)
{
	sim_write("{\"gpus\": [{\"compute_capability\": \"nine\"}]}");
	struct gpu_host *h = sim_open();
	assert_false(h->nvml_loaded);
	gpu_host_free(h);
	sim_write("{\"gpus\": [");
	h = sim_open();
	assert_false(h->nvml_loaded);
	gpu_host_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_library_missing),
		cmocka_unit_test(test_default_search_without_driver),
		cmocka_unit_test(test_not_nvml),
		cmocka_unit_test(test_init_failing),
		cmocka_unit_test(test_one_call_failing),
		cmocka_unit_test(test_gpu_lost_at_start),
		cmocka_unit_test(test_gpu_lost_while_running),
		cmocka_unit_test(test_bad_description),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sim_cleanup();
	return rc;
}
