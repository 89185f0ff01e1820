/* Stats samples against the simulator, including changes while running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>

#include "sim-helper.h"

static void test_whole_gpu(void **state)
{
	sim_example("h100-sxm-8x-nvlink.json");
	struct gpu_host *h = sim_open();
	struct gpu_stats s;
	assert_int_equal(gpu_host_sample(h, 1, &s, NULL), 0);
	assert_int_equal(s.gpu_util, 97);
	assert_int_equal(s.memory_util, 61);
	assert_int_equal(s.memory_used_mib, 70312);
	assert_int_equal(s.memory_total_mib, 81559);
	assert_int_equal(s.temperature_c, 67);
	assert_int_equal(s.power_mw, 655000);
	assert_int_equal(s.ecc_corrected, 0);
	assert_int_equal(s.ecc_uncorrected, 0);
	assert_int_equal(s.nr_procs, 1);
	assert_false(s.procs_truncated);
	assert_int_equal(s.procs[0].pid, 41001);
	assert_int_equal(s.procs[0].memory_mib, 70312);

	assert_int_equal(gpu_host_sample(h, 0, &s, NULL), 0);
	assert_int_equal(s.gpu_util, 0);
	assert_int_equal(s.nr_procs, 0);

	struct herd_err err = { 0 };
	assert_int_equal(gpu_host_sample(h, 8, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no gpu device 8"));
	gpu_host_free(h);
}

static void test_mig_instance(void **state)
{
	sim_example("a100-80gb-mig-7x1g.json");
	struct gpu_host *h = sim_open();
	struct gpu_stats s;
	assert_int_equal(gpu_host_sample(h, 3, &s, NULL), 0);
	assert_int_equal(s.gpu_util, -1); /* NVML has none per MIG instance */
	assert_int_equal(s.memory_used_mib, 9000);
	assert_int_equal(s.memory_total_mib, 9728);
	assert_int_equal(s.temperature_c, 48); /* the parent's */
	assert_int_equal(s.power_mw, 210000);
	assert_int_equal(s.ecc_corrected, 2);
	assert_int_equal(s.nr_procs, 1);
	assert_int_equal(s.procs[0].pid, 52003);
	gpu_host_free(h);
}

static void test_wsl_absent_values(void **state)
{
	sim_example("wsl2-rtx3060-laptop.json");
	struct gpu_host *h = sim_open();
	struct gpu_stats s;
	assert_int_equal(gpu_host_sample(h, 0, &s, NULL), 0);
	assert_int_equal(s.gpu_util, 3);
	assert_int_equal(s.memory_used_mib, 410);
	assert_int_equal(s.ecc_corrected, -1);
	assert_int_equal(s.ecc_uncorrected, -1);
	assert_int_equal(s.nr_procs, 0);
	gpu_host_free(h);
}

static void test_changes_while_running(void **state)
{
	sim_write("{\"gpus\": [{\"utilization_gpu\": 10, \"memory_used_mib\": 100}]}");
	struct gpu_host *h = sim_open();
	struct gpu_stats s;
	assert_int_equal(gpu_host_sample(h, 0, &s, NULL), 0);
	assert_int_equal(s.gpu_util, 10);
	assert_int_equal(s.memory_used_mib, 100);
	sim_write("{\"gpus\": [{\"utilization_gpu\": 90, \"memory_used_mib\": 5000,"
		  " \"processes\": [{\"pid\": 7, \"memory_mib\": 5000}]}]}");
	assert_int_equal(gpu_host_sample(h, 0, &s, NULL), 0);
	assert_int_equal(s.gpu_util, 90);
	assert_int_equal(s.memory_used_mib, 5000);
	assert_int_equal(s.nr_procs, 1);
	assert_int_equal(s.procs[0].pid, 7);
	/* A description that does not parse leaves the last good one. */
	sim_write("{\"gpus\": [");
	assert_int_equal(gpu_host_sample(h, 0, &s, NULL), 0);
	assert_int_equal(s.gpu_util, 90);
	gpu_host_free(h);
}

static void test_many_processes(void **state)
{
	char json[8192];
	size_t len = (size_t)snprintf(json, sizeof(json), "{\"gpus\": [{\"processes\": [");
	for (int i = 0; i < 64; i++)
		len += (size_t)snprintf(json + len, sizeof(json) - len, "%s{\"pid\": %d, \"memory_mib\": 1}",
					i ? "," : "", 100 + i);
	snprintf(json + len, sizeof(json) - len, "]}]}");
	sim_write(json);
	struct gpu_host *h = sim_open();
	struct gpu_stats s;
	assert_int_equal(gpu_host_sample(h, 0, &s, NULL), 0);
	assert_int_equal(s.nr_procs, 64);
	assert_false(s.procs_truncated);
	assert_int_equal(s.procs[63].pid, 163);
	gpu_host_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_gpu),
		cmocka_unit_test(test_mig_instance),
		cmocka_unit_test(test_wsl_absent_values),
		cmocka_unit_test(test_changes_while_running),
		cmocka_unit_test(test_many_processes),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sim_cleanup();
	return rc;
}
