/* Every fingerprinted field against the simulator's example machines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim-helper.h"

static void test_h100_every_field(void **state)
{
	sim_example("h100-sxm-8x-nvlink.json");
	struct gpu_host *h = sim_open();
	assert_true(h->nvml_loaded);
	assert_true(h->simulated);
	assert_false(h->wsl);
	assert_string_equal(h->driver_version, "550.54.15");
	assert_string_equal(h->cuda_version, "12.4");
	assert_int_equal(h->nr_gpus, 8);
	assert_int_equal(h->nr_devs, 8);
	assert_int_equal(h->nr_warnings, 0);

	const struct gpu_device *d = &h->devs[0];
	assert_string_equal(d->uuid, "GPU-5e7b3c1a-0d2f-4a61-9c1e-00000000a100");
	assert_string_equal(d->name, "NVIDIA H100 80GB HBM3");
	assert_string_equal(d->model, "NVIDIA H100 80GB HBM3");
	assert_int_equal(d->nvml_index, 0);
	assert_int_equal(d->mig_index, -1);
	assert_string_equal(d->parent_uuid, "");
	assert_string_equal(d->mig_profile, "");
	assert_int_equal(d->memory_mib, 81559);
	assert_string_equal(d->pci_bus_id, "00000000:18:00.0");
	assert_int_equal(d->pci_device_id, 0x233010de);
	assert_int_equal(d->cc_major, 9);
	assert_int_equal(d->cc_minor, 0);
	assert_string_equal(d->architecture, "hopper");
	assert_int_equal(d->numa_node, 0);
	assert_string_equal(d->cpu_affinity, "0-55,112-167");
	assert_int_equal(d->power_limit_mw, 700000);
	assert_int_equal(d->max_sm_clock_mhz, 1980);
	assert_int_equal(d->max_mem_clock_mhz, 2619);
	assert_int_equal(d->persistence_mode, 1);
	assert_int_equal(d->display_mode, 0);
	assert_int_equal(d->sm_count, 132);
	assert_true(d->simulated);
	assert_false(d->wsl);
	assert_int_equal(d->health, GPU_HEALTHY);

	d = &h->devs[7];
	assert_int_equal(d->nvml_index, 7);
	assert_int_equal(d->gpu, 7);
	assert_int_equal(d->numa_node, 1);
	assert_string_equal(d->cpu_affinity, "56-111,168-223");
	assert_string_equal(d->pci_bus_id, "00000000:DB:00.0");

	/* The name/value view matches the typed fields. */
	d = &h->devs[0];
	assert_string_equal(gpu_device_attr(d, "memory"), "81559 MiB");
	assert_string_equal(gpu_device_attr(d, "compute_capability"), "9.0");
	assert_string_equal(gpu_device_attr(d, "power_limit"), "700 W");
	assert_string_equal(gpu_device_attr(d, "numa_node"), "0");
	assert_string_equal(gpu_device_attr(d, "simulated"), "true");
	assert_string_equal(gpu_device_attr(d, "driver_version"), "550.54.15");
	assert_string_equal(gpu_device_attr(d, "persistence_mode"), "enabled");
	assert_null(gpu_device_attr(d, "mig_profile"));
	assert_null(gpu_device_attr(d, "wsl"));
	for (size_t i = 1; i < d->nr_attrs; i++)
		assert_true(strcmp(d->attrs[i - 1].name, d->attrs[i].name) < 0);

	/* HGX: every pair over 18 NVLinks through the NVSwitches. */
	char buf[16];
	for (size_t i = 0; i < 8; i++)
		for (size_t j = 0; j < 8; j++) {
			unsigned n;
			enum gpu_link l = gpu_host_link(h, i, j, &n);
			assert_int_equal(l, i == j ? GPU_LINK_SELF : GPU_LINK_NVLINK);
			assert_int_equal(n, i == j ? 0 : 18);
		}
	unsigned n;
	enum gpu_link l = gpu_host_link(h, 2, 5, &n);
	assert_string_equal(gpu_link_label(l, n, buf, sizeof(buf)), "NV18");
	assert_string_equal(gpu_link_label(GPU_LINK_CROSS_SOCKET, 0, buf, sizeof(buf)), "SYS");
	gpu_host_free(h);
}

static void test_a100_mig(void **state)
{
	sim_example("a100-80gb-mig-7x1g.json");
	struct gpu_host *h = sim_open();
	assert_true(h->nvml_loaded);
	assert_int_equal(h->nr_gpus, 1);
	assert_int_equal(h->nr_devs, 7); /* the parent is not schedulable */
	for (size_t j = 0; j < 7; j++) {
		const struct gpu_device *d = &h->devs[j];
		char uuid[64];
		snprintf(uuid, sizeof(uuid), "MIG-2b1e4f7c-6a3d-5e80-b9c2-%012zx", 0x700 + j);
		assert_string_equal(d->uuid, uuid);
		assert_string_equal(d->parent_uuid, "GPU-9f0a8e2d-1c3b-4d5e-8f7a-6b5c4d3e2f10");
		assert_string_equal(d->mig_profile, "1g.10gb");
		assert_string_equal(d->name, "NVIDIA A100-SXM4-80GB MIG 1g.10gb");
		assert_string_equal(d->model, "NVIDIA A100-SXM4-80GB");
		assert_int_equal(d->memory_mib, 9728);
		assert_int_equal(d->sm_count, 14);
		assert_int_equal(d->mig_index, (int)j);
		assert_int_equal(d->mig_gpu_instance_id, 7 + (int)j);
		assert_int_equal(d->mig_compute_instance_id, 0);
		/* Shared with the parent. */
		assert_string_equal(d->pci_bus_id, "00000000:07:00.0");
		assert_int_equal(d->cc_major, 8);
		assert_string_equal(d->architecture, "ampere");
		assert_int_equal(d->power_limit_mw, 400000);
		assert_string_equal(gpu_device_attr(d, "mig_profile"), "1g.10gb");
		assert_string_equal(gpu_device_attr(d, "parent_uuid"), d->parent_uuid);
	}
	unsigned n;
	assert_int_equal(gpu_host_link(h, 0, 6, &n), GPU_LINK_SAME_GPU);
	gpu_host_free(h);
}

static void test_t4_and_pcie_levels(void **state)
{
	sim_example("t4-2x.json");
	struct gpu_host *h = sim_open();
	assert_int_equal(h->nr_devs, 2);
	assert_string_equal(h->devs[1].name, "Tesla T4");
	assert_string_equal(h->devs[1].architecture, "turing");
	assert_int_equal(h->devs[1].memory_mib, 15360);
	assert_int_equal(gpu_host_link(h, 0, 1, NULL), GPU_LINK_CROSS_SOCKET);
	gpu_host_free(h);

	/* Direct NVLink peers (two links 0-1, one 1-2), a PCIe switch, a host
	 * bridge, one NUMA node, and the far socket. */
	sim_write("{\"gpus\": ["
		  "{\"nvlink_peers\": [1, 1], \"numa_node\": 0},"
		  "{\"nvlink_peers\": [0, 0, 2], \"numa_node\": 0},"
		  "{\"nvlink_peers\": [1], \"numa_node\": 0, \"pcie_switch\": 4},"
		  "{\"numa_node\": 0, \"pcie_switch\": 4, \"host_bridge\": 1},"
		  "{\"numa_node\": 0, \"host_bridge\": 1},"
		  "{\"numa_node\": 1}]}");
	h = sim_open();
	assert_int_equal(h->nr_devs, 6);
	unsigned n;
	assert_int_equal(gpu_host_link(h, 0, 1, &n), GPU_LINK_NVLINK);
	assert_int_equal(n, 2);
	assert_int_equal(gpu_host_link(h, 2, 1, &n), GPU_LINK_NVLINK);
	assert_int_equal(n, 1);
	assert_int_equal(gpu_host_link(h, 0, 2, &n), GPU_LINK_SAME_CPU);
	assert_int_equal(n, 0);
	assert_int_equal(gpu_host_link(h, 2, 3, NULL), GPU_LINK_PCIE_SWITCH);
	assert_int_equal(gpu_host_link(h, 3, 4, NULL), GPU_LINK_HOST_BRIDGE);
	assert_int_equal(gpu_host_link(h, 0, 5, NULL), GPU_LINK_CROSS_SOCKET);
	assert_int_equal(gpu_host_link(h, 5, 0, NULL), GPU_LINK_CROSS_SOCKET);
	assert_int_equal(gpu_host_link(h, 0, 99, NULL), GPU_LINK_UNKNOWN);
	/* Defaults of the simulator show through as what NVML answered. */
	assert_int_equal(h->devs[0].power_limit_mw, -1);
	assert_null(gpu_device_attr(&h->devs[0], "power_limit"));
	gpu_host_free(h);
}

static void test_wsl_laptop(void **state)
{
	sim_example("wsl2-rtx3060-laptop.json");
	struct gpu_host *h = sim_open();
	assert_true(h->nvml_loaded);
	assert_true(h->wsl);
	assert_int_equal(h->nr_devs, 1);
	const struct gpu_device *d = &h->devs[0];
	assert_true(d->wsl);
	assert_string_equal(d->name, "NVIDIA GeForce RTX 3060 Laptop GPU");
	assert_int_equal(d->memory_mib, 6144);
	assert_int_equal(d->cc_major, 8);
	assert_int_equal(d->cc_minor, 6);
	assert_string_equal(d->architecture, "ampere");
	assert_int_equal(d->display_mode, 1);
	/* What WSL2 answers NOT_SUPPORTED is absent, not an error. */
	assert_int_equal(d->numa_node, -1);
	assert_string_equal(d->cpu_affinity, "");
	assert_int_equal(d->persistence_mode, -1);
	assert_null(gpu_device_attr(d, "numa_node"));
	assert_string_equal(gpu_device_attr(d, "wsl"), "true");
	assert_int_equal(h->nr_warnings, 0);
	gpu_host_free(h);

	/* The configuration can override detection. */
	struct gpu_config cfg;
	gpu_config_init(&cfg);
	cfg.wsl = 0;
	h = sim_open_cfg(&cfg);
	assert_false(h->wsl);
	assert_false(h->devs[0].wsl);
	gpu_host_free(h);
}

static void test_mig_profile_from_attributes(void **state)
{
	/* A MIG instance with a compute instance smaller than its GPU
	 * instance: profile "1c.2g.20gb" as NVIDIA names it. */
	sim_write("{\"gpus\": [{\"name\": \"NVIDIA H100 80GB HBM3\", \"sm_count\": 132,"
		  " \"mig\": {\"enabled\": true, \"instances\": ["
		  "  {\"profile\": \"1c.2g.20gb\", \"memory_mib\": 19968},"
		  "  {\"profile\": \"3g.40gb\", \"memory_mib\": 40192, \"sm_count\": 60}]}}]}");
	struct gpu_host *h = sim_open();
	assert_int_equal(h->nr_devs, 2);
	assert_string_equal(h->devs[0].mig_profile, "1c.2g.20gb");
	assert_int_equal(h->devs[0].memory_mib, 19968);
	assert_int_equal(h->devs[0].sm_count, 132 * 2 / 7);
	assert_string_equal(h->devs[1].mig_profile, "3g.40gb");
	assert_int_equal(h->devs[1].sm_count, 60);
	assert_int_equal(h->devs[1].mig_gpu_instance_id, 2);
	gpu_host_free(h);

	/* MIG capable but disabled: the whole GPU is the device. */
	sim_write("{\"gpus\": [{\"mig\": {\"enabled\": false, \"instances\": [{}]}}]}");
	h = sim_open();
	assert_int_equal(h->nr_devs, 1);
	assert_int_equal(h->devs[0].mig_index, -1);
	gpu_host_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h100_every_field),
		cmocka_unit_test(test_a100_mig),
		cmocka_unit_test(test_t4_and_pcie_levels),
		cmocka_unit_test(test_wsl_laptop),
		cmocka_unit_test(test_mig_profile_from_attributes),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	sim_cleanup();
	return rc;
}
