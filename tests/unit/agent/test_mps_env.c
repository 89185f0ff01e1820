/* taskenv for shared GPUs: the MPS client variables of a fraction, and
 * visibility only for timeslice, whole GPUs and MIG instances. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/taskenv.h"

static struct taskenv_input base(const char *const *uuids, size_t n,
				 const struct taskenv_gpu_share *shares)
{
	struct taskenv_input in = {
		.alloc_id = "0123456789abcdef", .alloc_index = 0, .job_id = "infer",
		.group = "g", .task = "t", .alloc_dir = "/a/alloc", .task_dir = "/a/t",
		.gpu_uuids = uuids, .nr_gpus = n, .gpu_shares = shares,
	};
	return in;
}

static const char *const gpu0[] = { "GPU-aaaa" };

static void test_mps_fraction(void **state)
{
	(void)state;
	struct taskenv_gpu_share sh = { .sharing = SCHED_MPS, .compute_milli = 250,
		.memory_mib = 10240, .mps_pipe_dir = "/d/mps/GPU-aaaa/pipe",
		.mps_log_dir = "/d/mps/GPU-aaaa/log" };
	struct taskenv_input in = base(gpu0, 1, &sh);
	struct taskenv *te = NULL;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_PIPE_DIRECTORY"), "/d/mps/GPU-aaaa/pipe");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_LOG_DIRECTORY"), "/d/mps/GPU-aaaa/log");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=10240M");
	taskenv_free(te);

	/* rounded up, never 0; memory-only: no thread limit */
	sh.compute_milli = 5;
	sh.memory_mib = 0;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "1");
	assert_null(taskenv_get(te, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
	taskenv_free(te);
	sh.compute_milli = 0;
	sh.memory_mib = 512;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_null(taskenv_get(te, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
	assert_string_equal(taskenv_get(te, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=512M");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_PIPE_DIRECTORY"), "/d/mps/GPU-aaaa/pipe");
	taskenv_free(te);
}

/* The ordinal of the memory limit is the device's place in
 * CUDA_VISIBLE_DEVICES. */
static void test_ordinal(void **state)
{
	(void)state;
	static const char *const two[] = { "GPU-aaaa", "GPU-bbbb" };
	struct taskenv_gpu_share sh[2] = {
		{ .sharing = SCHED_EXCLUSIVE, .whole = true, .compute_milli = 1000 },
		{ .sharing = SCHED_MPS, .compute_milli = 500, .memory_mib = 2048,
		  .mps_pipe_dir = "/p", .mps_log_dir = "/l" },
	};
	struct taskenv_input in = base(two, 2, sh);
	struct taskenv *te = NULL;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa,GPU-bbbb");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "1=2048M");
	assert_string_equal(taskenv_get(te, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
	taskenv_free(te);
}

/* timeslice, a whole mps GPU, a MIG instance: visibility only. */
static void test_visibility_only(void **state)
{
	(void)state;
	static const char *const mig[] = { "MIG-cccc" };
	struct taskenv_gpu_share cases[] = {
		{ .sharing = SCHED_TIMESLICE, .compute_milli = 250, .memory_mib = 1024 },
		{ .sharing = SCHED_MPS, .whole = true, .compute_milli = 1000,
		  .mps_pipe_dir = "/p", .mps_log_dir = "/l" },
		{ .sharing = SCHED_EXCLUSIVE, .whole = true, .compute_milli = 1000 },
	};
	for (size_t i = 0; i < 3; i++) {
		struct taskenv_input in = base(i == 2 ? mig : gpu0, 1, &cases[i]);
		struct taskenv *te = NULL;
		assert_int_equal(taskenv_build(&in, &te, NULL), 0);
		assert_string_equal(taskenv_get(te, "CUDA_VISIBLE_DEVICES"), i == 2 ? "MIG-cccc" : "GPU-aaaa");
		assert_string_equal(taskenv_get(te, "NVIDIA_VISIBLE_DEVICES"), i == 2 ? "MIG-cccc" : "GPU-aaaa");
		for (size_t k = 0; k < taskenv_count(te); k++)
			if (!strncmp(taskenv_envp(te)[k], "CUDA_MPS_", 9))
				fail_msg("case %zu: %s set", i, taskenv_envp(te)[k]);
		taskenv_free(te);
	}
}

static void test_errors(void **state)
{
	(void)state;
	struct herd_err err = { 0 };
	struct taskenv *te = NULL;
	/* an mps fraction without its daemon */
	struct taskenv_gpu_share sh = { .sharing = SCHED_MPS, .compute_milli = 250 };
	struct taskenv_input in = base(gpu0, 1, &sh);
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	assert_null(te);
	assert_non_null(strstr(err.msg, "no MPS control daemon"));
	/* two daemons */
	static const char *const two[] = { "GPU-aaaa", "GPU-bbbb" };
	struct taskenv_gpu_share sh2[2] = {
		{ .sharing = SCHED_MPS, .compute_milli = 250, .mps_pipe_dir = "/p1", .mps_log_dir = "/l1" },
		{ .sharing = SCHED_MPS, .compute_milli = 250, .mps_pipe_dir = "/p2", .mps_log_dir = "/l2" },
	};
	in = base(two, 2, sh2);
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "one MPS daemon"));
	/* the job cannot set the MPS variables itself */
	static const struct agent_kv env[] = { { "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100" } };
	in = base(gpu0, 1, NULL);
	in.env = env;
	in.nr_env = 1;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "herd sets this variable"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mps_fraction),
		cmocka_unit_test(test_ordinal),
		cmocka_unit_test(test_visibility_only),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
