/* Configuration, environment, WSL2 detection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/units.h"
#include "gpu/gpu.h"

static void test_defaults(void **state)
{
	struct gpu_config cfg;
	gpu_config_init(&cfg);
	static const unsigned ignored[] = { 13, 31, 43, 45, 68, 109 };
	for (size_t i = 0; i < 6; i++)
		assert_false(gpu_config_xid_is_critical(&cfg, ignored[i]));
	assert_true(gpu_config_xid_is_critical(&cfg, 79));
	assert_true(gpu_config_xid_is_critical(&cfg, 48));
	assert_int_equal(cfg.wsl, -1);
	assert_int_equal(cfg.stats_period_ns, 10 * NS_PER_SEC);
	assert_null(cfg.library_path);
}

static void test_ignore_list(void **state)
{
	struct gpu_config cfg;
	struct herd_err err = { 0 };
	gpu_config_init(&cfg);
	assert_int_equal(gpu_config_set_ignored_xids(&cfg, "13, 31,79", NULL), 0);
	assert_int_equal(cfg.nr_ignored_xids, 3);
	assert_false(gpu_config_xid_is_critical(&cfg, 79));
	assert_true(gpu_config_xid_is_critical(&cfg, 43));
	assert_int_equal(gpu_config_set_ignored_xids(&cfg, "13,x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bad XID list"));
	assert_int_equal(cfg.nr_ignored_xids, 3); /* unchanged */
	assert_true(gpu_config_set_ignored_xids(&cfg, "-5", NULL) < 0);
	assert_int_equal(gpu_config_set_ignored_xids(&cfg, "none", NULL), 0);
	assert_true(gpu_config_xid_is_critical(&cfg, 13));
}

static void test_env(void **state)
{
	struct gpu_config cfg;
	struct herd_err err = { 0 };
	gpu_config_init(&cfg);
	setenv("HERD_NVML_LIBRARY", "/opt/x/libnvidia-ml.so.1", 1);
	setenv("HERD_GPU_IGNORE_XIDS", "43", 1);
	setenv("HERD_GPU_WSL", "1", 1);
	setenv("HERD_GPU_STATS_PERIOD", "2s", 1);
	assert_int_equal(gpu_config_from_env(&cfg, &err), 0);
	assert_string_equal(cfg.library_path, "/opt/x/libnvidia-ml.so.1");
	assert_int_equal(cfg.nr_ignored_xids, 1);
	assert_int_equal(cfg.wsl, 1);
	assert_int_equal(cfg.stats_period_ns, 2 * NS_PER_SEC);

	struct gpu_config before = cfg;
	setenv("HERD_GPU_STATS_PERIOD", "soon", 1);
	assert_int_equal(gpu_config_from_env(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "HERD_GPU_STATS_PERIOD"));
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	setenv("HERD_GPU_STATS_PERIOD", "1s", 1);
	setenv("HERD_GPU_WSL", "yes", 1);
	assert_int_equal(gpu_config_from_env(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "HERD_GPU_WSL"));
	unsetenv("HERD_NVML_LIBRARY");
	unsetenv("HERD_GPU_IGNORE_XIDS");
	unsetenv("HERD_GPU_WSL");
	unsetenv("HERD_GPU_STATS_PERIOD");
}

static void write_file(const char *root, const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_wsl_detection(void **state)
{
	char root[] = "/tmp/herd-wsl-XXXXXX", path[512];
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/proc", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/proc/sys", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/proc/sys/kernel", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/dev", root);
	mkdir(path, 0700);

	assert_false(gpu_detect_wsl(root));
	write_file(root, "proc/version", "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n");
	write_file(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
	assert_false(gpu_detect_wsl(root));
	write_file(root, "proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n");
	assert_true(gpu_detect_wsl(root));
	write_file(root, "proc/sys/kernel/osrelease", "6.1.0\n");
	write_file(root, "proc/version", "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com)\n");
	assert_true(gpu_detect_wsl(root));
	write_file(root, "proc/version", "Linux\n");
	assert_false(gpu_detect_wsl(root));
	write_file(root, "dev/dxg", "");
	assert_true(gpu_detect_wsl(root));

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_ignore_list),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_wsl_detection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
