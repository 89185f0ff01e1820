#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/fingerprint-int.h"
#include "agent/fingerprint.h"
#include "common/xalloc.h"

static char *fixture(const char *name)
{
	const char *src = getenv("HERD_SOURCE_ROOT");
	return xasprintf("%s/tests/unit/agent/fixtures/%s", src ? src : "../..", name);
}

static void test_debian_cgroup_v1(void **state)
{
	char *root = fixture("node-v1");
	struct fingerprint_opts opts = FINGERPRINT_OPTS_INIT;
	struct node_fingerprint *fp = NULL;
	opts.root = root;
	opts.arch = "x86_64";
	opts.data_dir = "/";
	assert_int_equal(node_fingerprint(&opts, &fp, NULL), 0);
	assert_string_equal(fp->os_name, "debian");
	assert_string_equal(fp->os_version, "12");
	assert_string_equal(fp->os_pretty, "Debian GNU/Linux 12 (bookworm)");
	assert_string_equal(fp->kernel_name, "linux");
	assert_string_equal(fp->kernel_version, "6.1.0-18-amd64");
	assert_string_equal(fp->hostname, "gpu-node-1");
	/* online "0-5,8-9" wins over the 10 processors of cpuinfo */
	assert_int_equal(fp->cpu_cores, 8);
	/* cpufreq max 3500000 kHz wins over cpuinfo's current MHz */
	assert_int_equal(fp->cpu_mhz, 3500);
	assert_int_equal(fp->cpu_total_compute, 28000);
	assert_int_equal(fp->memory_bytes, 131891340LL * 1024);
	assert_false(fp->wsl);
	assert_int_equal(fp->cgroup_version, 1);
	assert_string_equal(fp->cgroup_mountpoint, "/sys/fs/cgroup");
	assert_true(fp->disk_total_bytes > 0);
	assert_true(fp->disk_free_bytes <= fp->disk_total_bytes);

	assert_string_equal(node_fingerprint_attr(fp, "kernel.name"), "linux");
	assert_string_equal(node_fingerprint_attr(fp, "cpu.arch"), "amd64");
	assert_string_equal(node_fingerprint_attr(fp, "kernel.arch"), "x86_64");
	assert_string_equal(node_fingerprint_attr(fp, "cpu.numcores"), "8");
	assert_string_equal(node_fingerprint_attr(fp, "cpu.frequency"), "3500");
	assert_string_equal(node_fingerprint_attr(fp, "memory.totalbytes"), "135056732160");
	assert_string_equal(node_fingerprint_attr(fp, "unique.hostname"), "gpu-node-1");
	assert_string_equal(node_fingerprint_attr(fp, "unique.cgroup.version"), "v1");
	assert_string_equal(node_fingerprint_attr(fp, "os.wsl"), "false");
	assert_string_equal(node_fingerprint_attr(fp, "cpu.modelname"),
			    "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	assert_non_null(node_fingerprint_attr(fp, "unique.storage.bytesfree"));
	/* topology: online 0-5,8-9; node0 0-3, node1 4-5,8-9, node2 memory only */
	assert_int_equal(fp->nr_cores, 8);
	static const struct node_core want[] = { { 0, 0 }, { 1, 0 }, { 2, 0 }, { 3, 0 },
		{ 4, 1 }, { 5, 1 }, { 8, 1 }, { 9, 1 } };
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(fp->cores[i].id, want[i].id);
		assert_int_equal(fp->cores[i].numa, want[i].numa);
	}
	assert_int_equal(node_fingerprint_core_numa(fp, 8), 1);
	assert_int_equal(node_fingerprint_core_numa(fp, 6), -1);
	assert_int_equal(fp->numa_nodes, 2);
	assert_false(fp->cores_simulated);
	assert_string_equal(node_fingerprint_attr(fp, "cpu.numa_nodes"), "2");
	assert_string_equal(node_fingerprint_attr(fp, "numa.node.count"), "2");
	assert_string_equal(node_fingerprint_attr(fp, "numa.node0.cores"), "0-3");
	assert_string_equal(node_fingerprint_attr(fp, "numa.node1.cores"), "4-5,8-9");
	assert_null(node_fingerprint_attr(fp, "numa.node2.cores"));
	/* sorted, unique */
	for (size_t i = 1; i < fp->nr_attrs; i++)
		assert_true(strcmp(fp->attrs[i - 1].name, fp->attrs[i].name) < 0);
	node_fingerprint_free(fp);
	free(root);
}

static void test_wsl_cgroup_v2(void **state)
{
	char *root = fixture("node-wsl");
	struct fingerprint_opts opts = FINGERPRINT_OPTS_INIT;
	struct node_fingerprint *fp = NULL;
	opts.root = root;
	opts.arch = "aarch64";
	assert_int_equal(node_fingerprint(&opts, &fp, NULL), 0);
	/* os-release found in usr/lib; single-quoted value */
	assert_string_equal(fp->os_name, "ubuntu");
	assert_string_equal(fp->os_pretty, "Ubuntu 22.04.4 LTS");
	assert_true(fp->wsl);
	assert_string_equal(node_fingerprint_attr(fp, "os.wsl"), "true");
	assert_int_equal(fp->cgroup_version, 2);
	assert_string_equal(node_fingerprint_attr(fp, "unique.cgroup.version"), "v2");
	/* no sysfs online list: processors of cpuinfo; no MHz anywhere */
	assert_int_equal(fp->cpu_cores, 2);
	assert_int_equal(fp->cpu_mhz, 0);
	assert_null(node_fingerprint_attr(fp, "cpu.frequency"));
	assert_string_equal(node_fingerprint_attr(fp, "cpu.arch"), "arm64");
	/* no sysfs: cores 0..processors-1, NUMA unknown, no NUMA attributes */
	assert_int_equal(fp->nr_cores, 2);
	assert_int_equal(fp->cores[1].id, 1);
	assert_int_equal(fp->cores[1].numa, -1);
	assert_int_equal(fp->numa_nodes, 0);
	assert_null(node_fingerprint_attr(fp, "cpu.numa_nodes"));
	assert_null(node_fingerprint_attr(fp, "numa.node.count"));
	/* no data dir: no storage attributes */
	assert_null(node_fingerprint_attr(fp, "unique.storage.bytestotal"));
	/* forcing wsl off */
	node_fingerprint_free(fp);
	opts.wsl = 0;
	assert_int_equal(node_fingerprint(&opts, &fp, NULL), 0);
	assert_false(fp->wsl);
	node_fingerprint_free(fp);
	free(root);
}

static void test_this_machine(void **state)
{
	struct node_fingerprint *fp = NULL;
	struct fingerprint_opts opts = FINGERPRINT_OPTS_INIT;
	opts.data_dir = ".";
	assert_int_equal(node_fingerprint(&opts, &fp, NULL), 0);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	assert_int_equal(fp->cpu_cores, online);
	assert_true(fp->memory_bytes > 0);
	assert_non_null(fp->kernel_version);
	assert_string_equal(fp->kernel_name, "linux");
	assert_non_null(fp->hostname);
	assert_non_null(fp->arch);
	node_fingerprint_free(fp);
}

/* Writes text to a new temporary file; returns its path (caller frees). */
static char *temp_file(const char *text)
{
	char *path = xasprintf("/tmp/herd-fp-sim-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* A GPU simulation file's "cpu" section replaces the real topology and
 * the NUMA attributes; a file without one changes nothing; a bad one is an
 * error naming the field, leaving fp as it was. */
static void test_sim_cores(void **state)
{
	char *root = fixture("node-v1");
	struct fingerprint_opts opts = FINGERPRINT_OPTS_INIT;
	struct node_fingerprint *fp = NULL;
	struct herd_err err = { 0, "" };
	opts.root = root;
	opts.arch = "x86_64";
	assert_int_equal(node_fingerprint(&opts, &fp, NULL), 0);

	char *none = temp_file("{\"gpus\": []}");
	assert_int_equal(node_fingerprint_sim_cores(fp, none, &err), 0);
	assert_int_equal(fp->nr_cores, 8);
	assert_false(fp->cores_simulated);

	static const char *const bad[][2] = {
		{ "{\"cpu\": {\"numa_nodes\": []}}", "cpu: expected" },
		{ "{\"cpu\": {\"numa_nodes\": [{\"cores\": \"0-3\"}]}}", "numa_nodes[0]: expected an \"id\"" },
		{ "{\"cpu\": {\"numa_nodes\": [{\"id\": 0, \"cores\": \"3-0\"}]}}",
		  "numa_nodes[0].cores: reversed range 3-0" },
		{ "{\"cpu\": {\"numa_nodes\": [{\"id\": 0, \"cores\": \"0-3\"}, "
		  "{\"id\": 1, \"cores\": \"3-7\"}]}}", "numa_nodes[1].cores: core 3 is in another node" },
		{ "{\"cpu\": ", "" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *p = temp_file(bad[i][0]);
		assert_int_equal(node_fingerprint_sim_cores(fp, p, &err), -EINVAL);
		if (!strstr(err.msg, bad[i][1]))
			fail_msg("%s: '%s' lacks '%s'", bad[i][0], err.msg, bad[i][1]);
		assert_int_equal(fp->nr_cores, 8);
		unlink(p);
		free(p);
	}

	char *two = temp_file("{\"cpu\": {\"numa_nodes\": [{\"id\": 0, \"cores\": \"0-55,112-167\"},"
			      " {\"id\": 1, \"cores\": \"56-111,168-223\"}]}}");
	assert_int_equal(node_fingerprint_sim_cores(fp, two, &err), 1);
	assert_true(fp->cores_simulated);
	assert_int_equal(fp->nr_cores, 224);
	assert_int_equal(node_fingerprint_core_numa(fp, 55), 0);
	assert_int_equal(node_fingerprint_core_numa(fp, 56), 1);
	assert_int_equal(node_fingerprint_core_numa(fp, 223), 1);
	assert_string_equal(node_fingerprint_attr(fp, "numa.node0.cores"), "0-55,112-167");
	assert_string_equal(node_fingerprint_attr(fp, "numa.node1.cores"), "56-111,168-223");
	assert_string_equal(node_fingerprint_attr(fp, "cpu.numa_nodes"), "2");
	/* the machine's own core count stays: it is what runs the tasks */
	assert_string_equal(node_fingerprint_attr(fp, "cpu.numcores"), "8");
	node_fingerprint_free(fp);

	/* one node: node1's attribute from the real topology goes */
	assert_int_equal(node_fingerprint(&opts, &fp, NULL), 0);
	char *one = temp_file("{\"cpu\": {\"numa_nodes\": [{\"id\": 0, \"cores\": \"0-1\"}]}}");
	assert_int_equal(node_fingerprint_sim_cores(fp, one, &err), 1);
	assert_null(node_fingerprint_attr(fp, "numa.node1.cores"));
	assert_string_equal(node_fingerprint_attr(fp, "numa.node.count"), "1");
	node_fingerprint_free(fp);
	for (char **p = (char *[]){ none, two, one, NULL }; *p; p++) {
		unlink(*p);
		free(*p);
	}
	free(root);
}

static void test_bad_root(void **state)
{
	struct fingerprint_opts opts = FINGERPRINT_OPTS_INIT;
	struct node_fingerprint *fp = (void *)0x1;
	struct herd_err err = { 0 };
	opts.root = "/nonexistent/herd";
	assert_true(node_fingerprint(&opts, &fp, &err) < 0);
	assert_ptr_equal(fp, (void *)0x1);
	assert_non_null(strstr(err.msg, "/nonexistent/herd/proc"));
}

static void test_attrs_and_drivers(void **state)
{
	struct node_fingerprint *fp = xcalloc(1, sizeof(*fp));
	node_fingerprint_set_attr(fp, "b", "2");
	node_fingerprint_set_attr(fp, "a", "1");
	node_fingerprint_set_driver(fp, "raw_exec", true);
	node_fingerprint_set_attr(fp, "b", "3");
	assert_int_equal(fp->nr_attrs, 3);
	assert_string_equal(fp->attrs[0].name, "a");
	assert_string_equal(node_fingerprint_attr(fp, "b"), "3");
	assert_string_equal(node_fingerprint_attr(fp, "driver.raw_exec"), "1");
	node_fingerprint_set_driver(fp, "raw_exec", false);
	assert_null(node_fingerprint_attr(fp, "driver.raw_exec"));
	assert_int_equal(fp->nr_attrs, 2);
	node_fingerprint_free(fp);
	node_fingerprint_free(NULL);
}

static void test_parsers(void **state)
{
	assert_int_equal(fp_count_cpu_list("0-7,16-23\n"), 16);
	assert_int_equal(fp_count_cpu_list("0"), 1);
	assert_int_equal(fp_count_cpu_list("3-1"), 0);
	assert_int_equal(fp_count_cpu_list("a"), 0);
	assert_int_equal(fp_count_cpu_list("0-"), 0);
	assert_int_equal(fp_parse_meminfo("MemFree: 5 kB\nMemTotal: 10 kB\n"), 10240);
	assert_int_equal(fp_parse_meminfo("XMemTotal: 10 kB\n"), 0);
	assert_int_equal(fp_parse_meminfo("MemTotal: 10 MB\n"), 0);
	char *s = fp_os_release_value("ID=\"a\\\"b\"\nX=1", "ID");
	assert_string_equal(s, "a\"b");
	free(s);
	assert_null(fp_os_release_value("IDX=1\n", "ID"));
	assert_null(fp_os_release_value("ID=\n", "ID"));
	int n;
	int64_t mhz;
	char *model;
	fp_parse_cpuinfo("processor : 0\nmodel name : Foo CPU @ 2.20GHz\n", &n, &mhz, &model);
	assert_int_equal(n, 1);
	assert_int_equal(mhz, 2200);
	assert_string_equal(model, "Foo CPU @ 2.20GHz");
	free(model);
	char *mp;
	assert_int_equal(fp_parse_cgroup_mounts("x /sys/fs/cgroup tmpfs rw 0 0\n", &mp), 0);
	assert_null(mp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debian_cgroup_v1),
		cmocka_unit_test(test_wsl_cgroup_v2),
		cmocka_unit_test(test_this_machine),
		cmocka_unit_test(test_bad_root),
		cmocka_unit_test(test_sim_cores),
		cmocka_unit_test(test_attrs_and_drivers),
		cmocka_unit_test(test_parsers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
