/* XID and ECC events through the simulator's nvmlEventSetWait_v2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>

#include "sim-helper.h"

static void test_critical_xid(void **state)
{
	sim_write("{\"gpus\": [{}, {}], \"xid_events\": [{\"gpu\": 1, \"xid\": 79}]}");
	struct gpu_host *h = sim_open();
	struct gpu_event ev;
	assert_int_equal(gpu_host_watch(h, NULL), 0);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(ev.gpu, 1);
	assert_int_equal(ev.xid, 79);
	assert_int_equal(ev.gpu_instance_id, -1);
	assert_true(ev.critical);
	assert_non_null(strstr(ev.reason, "XID 79"));
	assert_non_null(strstr(ev.reason, "fallen off the bus"));
	assert_int_equal(gpu_host_apply_event(h, &ev), 1);
	assert_int_equal(gpu_host_apply_event(h, &ev), 0); /* already unhealthy */
	assert_int_equal(h->devs[1].health, GPU_UNHEALTHY);
	assert_string_equal(h->devs[1].health_reason, ev.reason);
	assert_int_equal(h->devs[0].health, GPU_HEALTHY);
	/* Delivered once. */
	assert_int_equal(gpu_host_wait_event(h, 30, &ev, NULL), 0);
	gpu_host_free(h);
}

static void test_ignored_xids(void **state)
{
	sim_write("{\"gpus\": [{}], \"xid_events\": [{\"gpu\": 0, \"xid\": 13},"
		  " {\"gpu\": 0, \"xid\": 43}, {\"gpu\": 0, \"xid\": 48}]}");
	struct gpu_host *h = sim_open();
	struct gpu_event ev;
	assert_int_equal(gpu_host_watch(h, NULL), 0);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(ev.xid, 13);
	assert_false(ev.critical);
	assert_int_equal(gpu_host_apply_event(h, &ev), 0);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(ev.xid, 43);
	assert_false(ev.critical);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(ev.xid, 48);
	assert_true(ev.critical);
	assert_int_equal(h->devs[0].health, GPU_HEALTHY);
	gpu_host_free(h);

	/* A configured list replaces the default. */
	struct gpu_config cfg;
	gpu_config_init(&cfg);
	assert_int_equal(gpu_config_set_ignored_xids(&cfg, "48", NULL), 0);
	h = sim_open_cfg(&cfg);
	assert_int_equal(gpu_host_watch(h, NULL), 0);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_true(ev.critical); /* 13 no longer ignored */
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(ev.xid, 48);
	assert_false(ev.critical);
	gpu_host_free(h);
}

static void test_xid_injected_while_running(void **state)
{
	sim_write("{\"gpus\": [{}]}");
	struct gpu_host *h = sim_open();
	struct gpu_event ev;
	assert_int_equal(gpu_host_watch(h, NULL), 0);
	assert_int_equal(gpu_host_wait_event(h, 30, &ev, NULL), 0);
	sim_write("{\"gpus\": [{}], \"xid_events\": [{\"gpu\": 0, \"type\": \"double_bit_ecc\"}]}");
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_true(ev.double_bit_ecc);
	assert_true(ev.critical);
	assert_int_equal(gpu_host_apply_event(h, &ev), 1);
	assert_string_equal(h->devs[0].health_reason, "double-bit ECC error");
	gpu_host_free(h);
}

static void test_mig_instance_event(void **state)
{
	sim_example("a100-80gb-mig-7x1g.json");
	struct gpu_host *h = sim_open();
	assert_int_equal(gpu_host_watch(h, NULL), 0);
	struct gpu_event ev = { .gpu = 0, .gpu_instance_id = 9, .xid = 94, .critical = true };
	snprintf(ev.reason, sizeof(ev.reason), "XID 94");
	assert_int_equal(gpu_host_apply_event(h, &ev), 1);
	for (size_t i = 0; i < h->nr_devs; i++)
		assert_int_equal(h->devs[i].health,
				 h->devs[i].mig_gpu_instance_id == 9 ? GPU_UNHEALTHY : GPU_HEALTHY);
	/* Without an instance id, every instance of the GPU. */
	ev.gpu_instance_id = -1;
	assert_int_equal(gpu_host_apply_event(h, &ev), 6);
	gpu_host_free(h);

	/* Through the simulator, with the instance id NVML reports. */
	sim_write("{\"gpus\": [{\"mig\": {\"enabled\": true, \"instances\": [{}, {}]}}],"
		  " \"xid_events\": [{\"gpu\": 0, \"xid\": 95, \"gpu_instance_id\": 2}]}");
	h = sim_open();
	assert_int_equal(gpu_host_watch(h, NULL), 0);
	assert_int_equal(gpu_host_wait_event(h, 1000, &ev, NULL), 1);
	assert_int_equal(ev.gpu_instance_id, 2);
	assert_int_equal(gpu_host_apply_event(h, &ev), 1);
	assert_int_equal(h->devs[0].health, GPU_HEALTHY);
	assert_int_equal(h->devs[1].health, GPU_UNHEALTHY);
	gpu_host_free(h);
}

static void test_no_events(void **state)
{
	sim_example("wsl2-rtx3060-laptop.json");
	struct gpu_host *h = sim_open();
	struct herd_err err = { 0 };
	struct gpu_event ev;
	assert_int_equal(gpu_host_watch(h, &err), -ENOTSUP);
	assert_int_equal(gpu_host_wait_event(h, 10, &ev, NULL), -EINVAL);
	gpu_host_free(h);

	struct gpu_config cfg;
	gpu_config_init(&cfg);
	cfg.library_path = "/nonexistent.so";
	h = gpu_host_open(&cfg);
	assert_int_equal(gpu_host_watch(h, NULL), -ENOTSUP);
	gpu_host_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_critical_xid),
		cmocka_unit_test(test_ignored_xids),
		cmocka_unit_test(test_xid_injected_while_running),
		cmocka_unit_test(test_mig_instance_event),
		cmocka_unit_test(test_no_events),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sim_cleanup();
	return rc;
}
