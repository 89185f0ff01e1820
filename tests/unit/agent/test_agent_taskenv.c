#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/taskenv.h"

static const struct node_attr attrs[] = {
	{ "cpu.arch", "amd64" }, { "kernel.name", "linux" },
};
static const struct agent_kv node_meta[] = { { "rack", "r12" } };
static const struct taskenv_node node = { "node-uuid-1", "gpu-7", "dc1", "h100", "global", "default" };

static struct taskenv_input base(void)
{
	struct taskenv_input in = {
		.alloc_id = "0123456789abcdef", .alloc_name = "train.workers[2]", .alloc_index = 2,
		.job_id = "train", .group = "workers", .task = "main",
		.alloc_dir = "/data/alloc/0123/alloc", .task_dir = "/data/alloc/0123/main",
		.node = &node, .attrs = attrs, .nr_attrs = 2, .node_meta = node_meta,
		.nr_node_meta = 1, .cpu_mhz = 500, .memory_mib = 256,
	};
	return in;
}

/* resources { cores }: the reserved cores in list syntax, both names */
static void test_cpu_cores(void **state)
{
	struct taskenv_input in = base();
	struct taskenv *te = NULL;
	in.cpu_cores = "4-7,12";
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "HERD_CPU_CORES"), "4-7,12");
	assert_string_equal(taskenv_get(te, "NOMAD_CPU_CORES"), "4-7,12");
	taskenv_free(te);
}

/* workload identities' tokens: the default one as HERD_TOKEN/NOMAD_TOKEN,
 * named ones with their name, the server's address with any of them */
static void test_workload_tokens(void **state)
{
	struct taskenv_input in = base();
	struct taskenv *te = NULL;
	static const struct agent_kv named[] = { { "vault", "eyJ.v.s" }, { "s3_x", "eyJ.s.s" } };
	(void)state;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_null(taskenv_get(te, "HERD_TOKEN"));
	assert_null(taskenv_get(te, "HERD_ADDR"));
	taskenv_free(te);
	in.named_tokens = named;
	in.nr_named_tokens = 2;
	in.server_addr = "http://10.0.0.1:4646";
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_null(taskenv_get(te, "HERD_TOKEN"));
	assert_string_equal(taskenv_get(te, "HERD_TOKEN_vault"), "eyJ.v.s");
	assert_string_equal(taskenv_get(te, "NOMAD_TOKEN_vault"), "eyJ.v.s");
	assert_string_equal(taskenv_get(te, "NOMAD_TOKEN_s3_x"), "eyJ.s.s");
	assert_string_equal(taskenv_get(te, "HERD_ADDR"), "http://10.0.0.1:4646");
	taskenv_free(te);
	in.workload_token = "eyJ.d.s";
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "HERD_TOKEN"), "eyJ.d.s");
	assert_string_equal(taskenv_get(te, "NOMAD_TOKEN"), "eyJ.d.s");
	assert_string_equal(taskenv_get(te, "HERD_TOKEN_vault"), "eyJ.v.s");
	taskenv_free(te);
}

static void test_standard_vars(void **state)
{
	struct taskenv_input in = base();
	static const struct taskenv_port ports[] = { { "http-api", "10.0.0.5", 8080, 0 } };
	static const struct agent_kv meta[] = { { "owner", "ml" } };
	in.ports = ports;
	in.nr_ports = 1;
	in.task_meta = meta;
	in.nr_task_meta = 1;
	struct taskenv *te = NULL;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "HERD_ALLOC_ID"), "0123456789abcdef");
	assert_string_equal(taskenv_get(te, "NOMAD_ALLOC_ID"), "0123456789abcdef");
	assert_string_equal(taskenv_get(te, "HERD_SHORT_ALLOC_ID"), "01234567");
	assert_string_equal(taskenv_get(te, "HERD_ALLOC_INDEX"), "2");
	assert_string_equal(taskenv_get(te, "NOMAD_ALLOC_DIR"), "/data/alloc/0123/alloc");
	assert_string_equal(taskenv_get(te, "HERD_TASK_DIR"), "/data/alloc/0123/main");
	assert_string_equal(taskenv_get(te, "HERD_SECRETS_DIR"), "/data/alloc/0123/main/secrets");
	assert_string_equal(taskenv_get(te, "HERD_JOB_ID"), "train");
	assert_string_equal(taskenv_get(te, "NOMAD_JOB_NAME"), "train");
	assert_string_equal(taskenv_get(te, "HERD_GROUP_NAME"), "workers");
	assert_string_equal(taskenv_get(te, "NOMAD_TASK_NAME"), "main");
	assert_string_equal(taskenv_get(te, "HERD_NAMESPACE"), "default");
	assert_string_equal(taskenv_get(te, "NOMAD_DC"), "dc1");
	assert_string_equal(taskenv_get(te, "HERD_CPU_LIMIT"), "500");
	assert_string_equal(taskenv_get(te, "NOMAD_MEMORY_LIMIT"), "256");
	/* no reserved cores: no core variables */
	assert_null(taskenv_get(te, "HERD_CPU_CORES"));
	assert_null(taskenv_get(te, "NOMAD_CPU_CORES"));
	assert_string_equal(taskenv_get(te, "HERD_PORT_http_api"), "8080");
	assert_string_equal(taskenv_get(te, "NOMAD_HOST_PORT_http_api"), "8080");
	assert_string_equal(taskenv_get(te, "HERD_ADDR_http_api"), "10.0.0.5:8080");
	assert_string_equal(taskenv_get(te, "NOMAD_IP_http_api"), "10.0.0.5");
	assert_string_equal(taskenv_get(te, "NOMAD_META_owner"), "ml");
	assert_non_null(taskenv_get(te, "PATH"));
	assert_null(taskenv_get(te, "HOME"));  /* nothing of the agent's env */
	/* envp: sorted, NAME=value, NULL-terminated, count agrees */
	const char *const *envp = taskenv_envp(te);
	size_t n = 0;
	for (; envp[n]; n++) {
		assert_non_null(strchr(envp[n], '='));
		if (n)
			assert_true(strcmp(envp[n - 1], envp[n]) < 0);
	}
	assert_int_equal(n, taskenv_count(te));
	taskenv_free(te);
	taskenv_free(NULL);
}

static void test_gpu_visibility(void **state)
{
	struct taskenv_input in = base();
	struct taskenv *te = NULL;
	/* no GPU asked: every GPU hidden, never "unset" */
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_non_null(taskenv_get(te, "CUDA_VISIBLE_DEVICES"));
	assert_string_equal(taskenv_get(te, "CUDA_VISIBLE_DEVICES"), "");
	assert_string_equal(taskenv_get(te, "NVIDIA_VISIBLE_DEVICES"), "void");
	taskenv_free(te);

	static const char *const uuids[] = { "GPU-aaaa-1111", "MIG-bbbb-2222" };
	in.gpu_uuids = uuids;
	in.nr_gpus = 2;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "CUDA_VISIBLE_DEVICES"), "GPU-aaaa-1111,MIG-bbbb-2222");
	assert_string_equal(taskenv_get(te, "NVIDIA_VISIBLE_DEVICES"), "GPU-aaaa-1111,MIG-bbbb-2222");
	assert_string_equal(taskenv_get(te, "HERD_GPU_IDS"), "GPU-aaaa-1111,MIG-bbbb-2222");
	taskenv_free(te);

	/* the job cannot widen its GPUs through env */
	static const struct agent_kv env[] = { { "CUDA_VISIBLE_DEVICES", "0,1,2,3" } };
	struct herd_err err = { 0 };
	in.env = env;
	in.nr_env = 1;
	te = (void *)0x1;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	assert_ptr_equal(te, (void *)0x1);
	assert_non_null(strstr(err.msg, "env CUDA_VISIBLE_DEVICES"));
}

static void test_job_env_interpolated(void **state)
{
	struct taskenv_input in = base();
	static const struct agent_kv env[] = {
		{ "DATA", "${NOMAD_ALLOC_DIR}/data" },
		{ "WHERE", "${attr.kernel.name}-${node.unique.name}-${meta.rack}" },
		{ "LITERAL", "$${HOME} and ${unknown.thing}" },
		{ "PATH", "/opt/bin:/usr/bin" },
	};
	in.env = env;
	in.nr_env = 4;
	struct taskenv *te = NULL;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "DATA"), "/data/alloc/0123/alloc/data");
	assert_string_equal(taskenv_get(te, "WHERE"), "linux-gpu-7-r12");
	assert_string_equal(taskenv_get(te, "LITERAL"), "${HOME} and ${unknown.thing}");
	assert_string_equal(taskenv_get(te, "PATH"), "/opt/bin:/usr/bin");
	taskenv_free(te);
}

static void test_interpolate(void **state)
{
	struct taskenv_input in = base();
	struct taskenv *te = NULL;
	struct herd_err err = { 0 };
	char *s = NULL;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	static const struct { const char *in, *out; } cases[] = {
		{ "plain", "plain" },
		{ "${HERD_TASK_NAME}", "main" },
		{ "${ env.HERD_JOB_ID }", "train" },
		{ "${node.datacenter}/${node.class}/${node.unique.id}", "dc1/h100/node-uuid-1" },
		{ "${attr.cpu.arch}", "amd64" },
		{ "${attr.nope}", "${attr.nope}" },
		{ "$${x} $$ $", "${x} $$ $" },
		{ "a${NOMAD_GROUP_NAME}b${HERD_ALLOC_INDEX}", "aworkersb2" },
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(taskenv_interpolate(te, cases[i].in, &s, &err), 0);
		assert_string_equal(s, cases[i].out);
		free(s);
	}
	s = (char *)"untouched";
	assert_int_equal(taskenv_interpolate(te, "x ${HERD_JOB_ID", &s, &err), -EINVAL);
	assert_string_equal(s, "untouched");
	assert_non_null(strstr(err.msg, "unterminated"));
	taskenv_free(te);
}

static void test_bad_input(void **state)
{
	struct taskenv *te = NULL;
	struct herd_err err = { 0 };
	struct taskenv_input in = base();
	in.task = NULL;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	in = base();
	static const struct agent_kv bad_name[] = { { "1X", "v" } };
	in.env = bad_name;
	in.nr_env = 1;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	static const struct agent_kv reserved[] = { { "HERD_ALLOC_ID", "forged" } };
	in.env = reserved;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	static const struct agent_kv unterminated[] = { { "X", "${oops" } };
	in.env = unterminated;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "env X: unterminated"));
	in = base();
	static const char *const bad_gpu[] = { "GPU-1,GPU-2" };
	in.gpu_uuids = bad_gpu;
	in.nr_gpus = 1;
	assert_int_equal(taskenv_build(&in, &te, &err), -EINVAL);
}

/* A gang member sees its gang: size, rank, rank 0's address and ports,
 * every member's host in rank order; HERD_ only (Nomad has no gangs); a
 * task of no gang sees none of it. */
static void test_gang_vars(void **state)
{
	struct taskenv_input in = base();
	static const struct taskenv_port leader_ports[] = { { "rdzv", NULL, 0, 29500 },
							    { "metrics-http", NULL, 20001, 0 } };
	static const char *const hosts[] = { "10.0.0.1", "10.0.0.2", "" };
	struct taskenv_gang g = { .size = 3, .rank = 2, .leader_ip = "10.0.0.1",
				  .leader_ports = leader_ports, .nr_leader_ports = 2, .hosts = hosts };
	struct taskenv *te = NULL;
	(void)state;
	in.gang = &g;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "HERD_GANG_SIZE"), "3");
	assert_string_equal(taskenv_get(te, "HERD_GANG_RANK"), "2");
	assert_string_equal(taskenv_get(te, "HERD_GANG_RANK"), taskenv_get(te, "HERD_ALLOC_INDEX"));
	assert_string_equal(taskenv_get(te, "HERD_GANG_LEADER_IP"), "10.0.0.1");
	assert_string_equal(taskenv_get(te, "HERD_GANG_LEADER_PORT_rdzv"), "29500");
	assert_string_equal(taskenv_get(te, "HERD_GANG_LEADER_PORT_metrics_http"), "20001");
	/* a member whose node advertised no address is on the loopback */
	assert_string_equal(taskenv_get(te, "HERD_GANG_HOSTS"), "10.0.0.1,10.0.0.2,127.0.0.1");
	assert_null(taskenv_get(te, "NOMAD_GANG_SIZE"));
	/* the job's env may read them, not set them */
	taskenv_free(te);
	static const struct agent_kv env[] = { { "MASTER", "${HERD_GANG_LEADER_IP}:${HERD_GANG_LEADER_PORT_rdzv}" } };
	in.env = env;
	in.nr_env = 1;
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_string_equal(taskenv_get(te, "MASTER"), "10.0.0.1:29500");
	taskenv_free(te);
	static const struct agent_kv forged[] = { { "HERD_GANG_RANK", "0" } };
	in.env = forged;
	assert_int_equal(taskenv_build(&in, &te, NULL), -EINVAL);
	in = base();
	assert_int_equal(taskenv_build(&in, &te, NULL), 0);
	assert_null(taskenv_get(te, "HERD_GANG_SIZE"));
	assert_null(taskenv_get(te, "HERD_GANG_HOSTS"));
	taskenv_free(te);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standard_vars),
		cmocka_unit_test(test_cpu_cores),
		cmocka_unit_test(test_gpu_visibility),
		cmocka_unit_test(test_job_env_interpolated),
		cmocka_unit_test(test_interpolate),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_gang_vars),
		cmocka_unit_test(test_workload_tokens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
