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

#include "agent/config.h"
#include "agent/config-int.h"
#include "common/units.h"

static int parse(struct agent_config *cfg, const char *text, struct diag_list *dl)
{
	return agent_config_parse(cfg, text, strlen(text), dl);
}

/* True when some diagnostic at line:col contains needle. */
static int has_diag(const struct diag_list *dl, int line, int col, const char *needle)
{
	for (size_t i = 0; i < dl->n; i++)
		if (dl->v[i].line == line && (col == 0 || dl->v[i].col == col) &&
		    strstr(dl->v[i].msg, needle))
			return 1;
	return 0;
}

static void test_defaults(void **state)
{
	struct agent_config cfg;
	agent_config_init(&cfg);
	assert_string_equal(cfg.bind_addr, "0.0.0.0");
	assert_int_equal(cfg.http_port, 4646);
	assert_int_equal(cfg.log_level, AGENT_LOG_INFO);
	assert_false(cfg.server.enabled);
	assert_false(cfg.client.enabled);
	assert_false(cfg.client.raw_exec_enabled);
	assert_null(cfg.data_dir);
	assert_string_equal(cfg.datacenter, "dc1");
	assert_string_equal(cfg.client.node_pool, "default");
	assert_int_equal(cfg.server.heartbeat_ttl_ns, 10 * NS_PER_SEC);
	assert_int_equal(cfg.gpu.sharing, SCHED_EXCLUSIVE);
	assert_int_equal(cfg.gpu.nvml.nr_ignored_xids, 6);
	/* Nothing enabled: finish says so. */
	struct herd_err err = { 0 };
	assert_int_equal(agent_config_finish(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "neither server nor client"));
	agent_config_release(&cfg);
	agent_config_release(NULL);
}

static const char full_file[] =
	"name = \"gpu-7\"\n"
	"data_dir = \"/var/lib/herd\"\n"
	"bind_addr = \"10.0.0.5\"\n"
	"log_level = \"WARN\"\n"
	"ports { http = 5656 }\n"
	"advertise { http = \"192.168.1.10\" }\n"
	"server {\n  enabled = true\n  heartbeat_ttl = \"30s\"\n"
	"  postgres_url = \"postgresql://herd@db.example/herd\"\n}\n"
	"client {\n"
	"  enabled = true\n"
	"  servers = [\"10.0.0.1:4646\", \"[fd00::1]:4646\"]\n"
	"  datacenter = \"eu-west\"\n"
	"  node_class = \"h100\"\n"
	"  meta { rack = \"r12\"\n  tier = 2 }\n"
	"  options = { \"driver.raw_exec.enable\" = \"1\" }\n"
	"  reserved { memory = 1024 }\n"
	"}\n"
	"gpu {\n"
	"  nvml_library = \"/opt/nvml.so\"\n"
	"  stats_period = \"2s\"\n"
	"  ignored_xids = [13, 48]\n"
	"  sharing = \"mps\"\n"
	"  device \"GPU-abc\" { sharing = \"timeslice\" }\n"
	"}\n";

/* agent_config_gpu_share for a device named by these fields. */
static struct agent_gpu_share share_of(const struct agent_config *cfg, const char *uuid,
				       const char *parent, unsigned index, const char *model)
{
	struct gpu_device d;
	memset(&d, 0, sizeof(d));
	snprintf(d.uuid, sizeof(d.uuid), "%s", uuid);
	snprintf(d.parent_uuid, sizeof(d.parent_uuid), "%s", parent);
	snprintf(d.model, sizeof(d.model), "%s", model);
	d.nvml_index = index;
	d.mig_index = *parent ? 0 : -1;
	return agent_config_gpu_share(cfg, &d);
}

/* postgres_url: absent means SQLite; "" is refused, not taken for libpq's
 * defaults; a copy owns its own */
static void test_postgres_url(void **state)
{
	struct agent_config cfg, copy;
	struct diag_list dl;

	agent_config_init(&cfg);
	assert_null(cfg.server.postgres_url);
	diag_list_init(&dl);
	assert_true(parse(&cfg, "server {\n  postgres_url = \"\"\n}\n", &dl) < 0);
	assert_true(has_diag(&dl, 2, 0, "postgres_url: expected a PostgreSQL URL"));
	assert_null(cfg.server.postgres_url);
	diag_list_release(&dl);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "server {\n  postgres_url = \"host=/tmp/pg dbname=herd\"\n}\n",
			       &dl), 0);
	assert_string_equal(cfg.server.postgres_url, "host=/tmp/pg dbname=herd");
	agent_config_copy(&copy, &cfg);
	assert_ptr_not_equal(copy.server.postgres_url, cfg.server.postgres_url);
	assert_string_equal(copy.server.postgres_url, "host=/tmp/pg dbname=herd");
	agent_config_release(&copy);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* server { reserve_after }: 5m by default, a duration (0s: at once) or
 * "off" (-1); anything else is an error that names the key */
static void test_reserve_after(void **state)
{
	struct agent_config cfg;
	struct diag_list dl;
	(void)state;
	agent_config_init(&cfg);
	assert_int_equal(cfg.server.reserve_after_ns, 5 * 60 * NS_PER_SEC);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "server {\n  reserve_after = \"90s\"\n}\n", &dl), 0);
	assert_int_equal(cfg.server.reserve_after_ns, 90 * NS_PER_SEC);
	assert_int_equal(parse(&cfg, "server {\n  reserve_after = \"0s\"\n}\n", &dl), 0);
	assert_int_equal(cfg.server.reserve_after_ns, 0);
	assert_int_equal(parse(&cfg, "server {\n  reserve_after = \"off\"\n}\n", &dl), 0);
	assert_int_equal(cfg.server.reserve_after_ns, -1);
	assert_true(parse(&cfg, "server {\n  reserve_after = \"soon\"\n}\n", &dl) < 0);
	assert_true(has_diag(&dl, 2, 0, "reserve_after"));
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* server { oidc_issuer }: an http(s) URL, kept as written; anything else
 * is an error at its value that says what is expected; a diff names it */
static void test_oidc_issuer(void **state)
{
	static const char *const bad[] = { "herd.example", "https://", "ftp://x", "https://a?b=1",
					   "https://a#f", "https://a b" };
	struct agent_config cfg, copy;
	struct diag_list dl;
	char text[128];
	(void)state;
	agent_config_init(&cfg);
	assert_null(cfg.server.oidc_issuer);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "server {\n  oidc_issuer = \"https://herd.example/x\"\n}\n",
			       &dl), 0);
	assert_string_equal(cfg.server.oidc_issuer, "https://herd.example/x");
	agent_config_copy(&copy, &cfg);
	assert_string_equal(copy.server.oidc_issuer, "https://herd.example/x");
	agent_config_release(&copy);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "server {\n  oidc_issuer = \"%s\"\n}\n", bad[i]);
		diag_list_release(&dl);
		diag_list_init(&dl);
		assert_true(parse(&cfg, text, &dl) < 0);
		assert_true(has_diag(&dl, 2, 0, "oidc_issuer: expected an https://"));
	}
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* client { reserved { cores } reservable_cores }: core lists kept in
 * canonical form; a bad list is an error at its line that says why; a
 * copy and a diff carry them */
static void test_reserved_cores(void **state)
{
	struct agent_config cfg, copy;
	struct diag_list dl;
	(void)state;
	agent_config_init(&cfg);
	assert_null(cfg.client.reserved_cores);
	assert_null(cfg.client.reservable_cores);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "client {\n  reserved { cores = \"1,0\" }\n"
			       "  reservable_cores = \"2-7,9,8\"\n}\n", &dl), 0);
	assert_string_equal(cfg.client.reserved_cores, "0-1");
	assert_string_equal(cfg.client.reservable_cores, "2-9");
	agent_config_copy(&copy, &cfg);
	assert_string_equal(copy.client.reservable_cores, "2-9");
	struct agent_config_diff d;
	agent_config_diff(&cfg, &copy, &d);
	assert_null(d.restart);
	agent_config_diff_release(&d);
	free(copy.client.reservable_cores);
	copy.client.reservable_cores = strdup("2-3");
	agent_config_diff(&cfg, &copy, &d);
	assert_non_null(d.restart);
	assert_non_null(strstr(d.restart, "client.reservable_cores"));
	agent_config_diff_release(&d);
	agent_config_release(&copy);

	assert_true(parse(&cfg, "client {\n  reserved {\n    cores = \"3-1\"\n  }\n"
			  "  reservable_cores = \"0-x\"\n}\n", &dl) < 0);
	assert_true(has_diag(&dl, 3, 0, "client.reserved.cores: \"3-1\": reversed range 3-1"));
	assert_true(has_diag(&dl, 5, 0, "client.reservable_cores: \"0-x\": unexpected 'x'"));
	assert_true(parse(&cfg, "client {\n  reservable_cores = 4\n}\n", &dl) < 0);
	assert_true(has_diag(&dl, 2, 0, "reservable_cores"));
	/* the lists given before stay */
	assert_string_equal(cfg.client.reserved_cores, "0-1");
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_full_file(void **state)
{
	struct agent_config cfg;
	struct diag_list dl;
	struct herd_err err = { 0 };
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, full_file, &dl), 0);
	assert_int_equal(dl.errors, 0);
	assert_string_equal(cfg.name, "gpu-7");
	assert_string_equal(cfg.data_dir, "/var/lib/herd");
	assert_string_equal(cfg.bind_addr, "10.0.0.5");
	assert_int_equal(cfg.log_level, AGENT_LOG_WARN);
	assert_int_equal(cfg.http_port, 5656);
	assert_true(cfg.server.enabled);
	assert_int_equal(cfg.server.heartbeat_ttl_ns, 30 * NS_PER_SEC);
	assert_string_equal(cfg.server.postgres_url, "postgresql://herd@db.example/herd");
	assert_true(cfg.client.enabled);
	assert_int_equal(cfg.client.nr_servers, 2);
	assert_string_equal(cfg.client.servers[1], "[fd00::1]:4646");
	assert_string_equal(cfg.datacenter, "eu-west");
	assert_string_equal(cfg.client.node_class, "h100");
	assert_string_equal(agent_config_meta(&cfg, "rack"), "r12");
	assert_string_equal(agent_config_meta(&cfg, "tier"), "2");
	assert_null(agent_config_meta(&cfg, "nope"));
	assert_true(cfg.client.raw_exec_enabled);
	assert_int_equal(cfg.client.reserved_memory_mib, 1024);
	assert_string_equal(cfg.gpu.nvml.library_path, "/opt/nvml.so");
	assert_int_equal(cfg.gpu.nvml.stats_period_ns, 2 * NS_PER_SEC);
	assert_int_equal(cfg.gpu.nvml.nr_ignored_xids, 2);
	assert_int_equal(cfg.gpu.nvml.ignored_xids[1], 48);
	assert_int_equal(share_of(&cfg, "GPU-abc", "", 0, "T4").sharing, SCHED_TIMESLICE);
	/* MIG instances are exclusive whatever their GPU is */
	assert_int_equal(share_of(&cfg, "MIG-1", "GPU-abc", 0, "T4").sharing, SCHED_EXCLUSIVE);
	assert_int_equal(share_of(&cfg, "GPU-def", "", 1, "T4").sharing, SCHED_MPS);
	assert_int_equal(share_of(&cfg, "GPU-def", "", 1, "T4").replicas, AGENT_MPS_MAX_CLIENTS);
	assert_string_equal(cfg.gpu.mps_control, AGENT_DEFAULT_MPS_CONTROL);

	assert_int_equal(agent_config_finish(&cfg, &err), 0);
	assert_string_equal(cfg.server.data_dir, "/var/lib/herd/server");
	assert_string_equal(cfg.client.state_dir, "/var/lib/herd/client");
	assert_string_equal(cfg.client.alloc_dir, "/var/lib/herd/alloc");
	/* advertise without port takes the http port */
	assert_string_equal(cfg.advertise_http, "192.168.1.10:5656");
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* Every error of a file in one run, each at its position; cfg unchanged. */
static void test_every_error_reported(void **state)
{
	static const char text[] =
		"data_dir = \"/d\"\n"                     /* 1: fine, but must not be applied */
		"colour = \"blue\"\n"                     /* 2: unknown key */
		"ports { http = 70000 }\n"                /* 3: range */
		"server { enabled = \"yes\" }\n"          /* 4: wrong kind */
		"client {\n"                              /* 5 */
		"  servers = [\"nohost\", \"ok:1\"]\n"    /* 6: no port */
		"  frobnicate = true\n"                   /* 7: unknown in client */
		"  options = { \"driver.docker.x\" = \"1\" }\n" /* 8: unknown option */
		"}\n"
		"gpu { sharing = \"shared\"\n"            /* 10: bad sharing */
		"  stats_period = \"1ms\" }\n"            /* 11: too short */
		"plugin \"podman\" { }\n"                 /* 12: unknown plugin */
		"log_level = \"loud\"\n"                  /* 13 */
		"server { }\n";                           /* 14: twice */
	struct agent_config cfg;
	struct diag_list dl;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, text, &dl), -EINVAL);
	assert_true(has_diag(&dl, 2, 1, "unknown key 'colour' in the agent configuration"));
	assert_true(has_diag(&dl, 3, 16, "http: expected 0 to 65535"));
	assert_true(has_diag(&dl, 4, 20, "enabled: expected true or false"));
	assert_true(has_diag(&dl, 6, 0, "expected \"host:port\", not \"nohost\""));
	assert_true(has_diag(&dl, 7, 3, "unknown key 'frobnicate' in client"));
	assert_true(has_diag(&dl, 8, 0, "unknown option 'driver.docker.x'"));
	assert_true(has_diag(&dl, 10, 0, "sharing: expected \"exclusive\", \"mps\""));
	assert_true(has_diag(&dl, 11, 0, "stats_period: expected at least 100ms"));
	assert_true(has_diag(&dl, 12, 0, "unknown plugin 'podman'"));
	assert_true(has_diag(&dl, 13, 0, "log_level: expected trace"));
	assert_true(has_diag(&dl, 14, 1, "block 'server' given twice (first at line 4)"));
	assert_int_equal(dl.errors, 11);
	/* nothing applied */
	assert_null(cfg.data_dir);
	assert_false(cfg.client.enabled);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_syntax_error(void **state)
{
	struct agent_config cfg;
	struct diag_list dl;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "client {\n  enabled = \n", &dl), -EINVAL);
	assert_true(dl.errors > 0);
	assert_true(dl.v[0].line >= 2);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_plugin_and_warnings(void **state)
{
	static const char text[] =
		"plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"
		"ports { http = 4000\n rpc = 4647 }\n"
		"client { enabled = true }\n";
	struct agent_config cfg;
	struct diag_list dl;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, text, &dl), 0);
	assert_true(cfg.client.raw_exec_enabled);
	assert_int_equal(dl.errors, 0);
	assert_int_equal(dl.warnings, 1);
	assert_true(has_diag(&dl, 7, 2, "rpc in ports is ignored"));
	/* a second file overrides the first, key by key */
	assert_int_equal(parse(&cfg, "plugin \"raw_exec\" { config { enabled = false } }", &dl), 0);
	assert_false(cfg.client.raw_exec_enabled);
	assert_int_equal(cfg.http_port, 4000);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_docker_plugin(void **state)
{
	static const char text[] =
		"plugin \"docker\" {\n  config {\n    endpoint = \"unix:///run/d.sock\"\n"
		"    allow_privileged = true\n    allow_caps = [\"chown\", \"net_raw\"]\n"
		"    pull_timeout = \"2m\"\n    volumes { enabled = true }\n"
		"    gc {\n      container = false\n    }\n  }\n}\n";
	struct agent_config cfg;
	struct diag_list dl;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_true(cfg.docker.gc_container && cfg.docker.gc_image);
	assert_int_equal(parse(&cfg, text, &dl), 0);
	assert_string_equal(cfg.docker.socket, "/run/d.sock");
	assert_true(cfg.docker.allow_privileged && cfg.docker.volumes_enabled);
	assert_int_equal(cfg.docker.nr_allow_caps, 2);
	assert_string_equal(cfg.docker.allow_caps[1], "net_raw");
	assert_int_equal(cfg.docker.pull_timeout_ns, 120LL * 1000000000LL);
	assert_false(cfg.docker.gc_container);
	assert_true(cfg.docker.gc_image);
	/* Only a unix socket; unknown keys are named. */
	assert_int_equal(parse(&cfg, "plugin \"docker\" { config { endpoint = \"tcp://h:2375\" } }",
			       &dl), -EINVAL);
	assert_int_equal(parse(&cfg, "plugin \"docker\" { config { gc { bogus = 1 } } }", &dl),
			 -EINVAL);
	assert_string_equal(cfg.docker.socket, "/run/d.sock");
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* plugin "exec", Nomad's client chroot_env, server scheduler policy, docker
 * dangling container sweep. */
static void test_exec_plugin_scheduler_and_gc(void **state)
{
	(void)state;
	struct agent_config cfg, copy;
	struct diag_list dl;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(cfg.server.policy, SCHED_HERD);
	assert_null(cfg.exec.chroot_env);
	assert_true(cfg.docker.gc_dangling);
	assert_int_equal(cfg.docker.gc_period_ns, 300LL * 1000000000LL);
	static const char text[] =
		"server {\n  scheduler {\n    policy = \"binpack\"\n  }\n}\n"
		"plugin \"exec\" {\n  config {\n    chroot_env = [\"/bin\", \"/usr\"]\n"
		"    cgroup_parent = \"jobs.slice\"\n    default_user = \"daemon\"\n  }\n}\n"
		"plugin \"docker\" { config { gc { dangling_containers {\n"
		"  enabled = false\n  period = \"1m\"\n} } } }\n";
	assert_int_equal(parse(&cfg, text, &dl), 0);
	assert_int_equal(cfg.server.policy, SCHED_BINPACK);
	assert_int_equal(cfg.exec.nr_chroot_env, 2);
	assert_string_equal(cfg.exec.chroot_env[1], "/usr");
	assert_null(cfg.exec.chroot_env[2]);   /* NULL-terminated for the driver */
	assert_string_equal(cfg.exec.cgroup_parent, "jobs.slice");
	assert_string_equal(cfg.exec.default_user, "daemon");
	assert_false(cfg.docker.gc_dangling);
	assert_int_equal(cfg.docker.gc_period_ns, 60LL * 1000000000LL);
	agent_config_copy(&copy, &cfg);
	assert_string_equal(copy.exec.chroot_env[0], "/bin");
	assert_null(copy.exec.chroot_env[2]);
	agent_config_release(&copy);

	/* Nomad's client map form (as an HCL2 object); the sides must match */
	assert_int_equal(parse(&cfg, "client {\n  chroot_env = {\n    \"/etc\" = \"/etc\"\n  }\n}\n",
			       &dl), 0);
	assert_int_equal(cfg.exec.nr_chroot_env, 1);
	assert_string_equal(cfg.exec.chroot_env[0], "/etc");
	diag_list_release(&dl);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "client {\n  chroot_env = {\n    \"/lib\" = \"/x/lib\"\n  }\n}\n"
			       "plugin \"exec\" { config { chroot_env = [\"bin\"] } }\n"
			       "server { scheduler { policy = \"best\" } }\n", &dl), -EINVAL);
	assert_true(has_diag(&dl, 3, 0, "herd binds a host directory at the same path"));
	assert_true(has_diag(&dl, 6, 0, "expected an absolute directory"));
	assert_true(has_diag(&dl, 7, 0, "unknown scheduling policy \"best\"; expected one of"));
	assert_true(has_diag(&dl, 7, 0, "\"binpack\""));
	/* all or nothing: the earlier values stay */
	assert_string_equal(cfg.exec.chroot_env[0], "/etc");
	assert_int_equal(cfg.server.policy, SCHED_BINPACK);
	diag_list_release(&dl);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "plugin \"exec\" { config { cgroup_parent = \"../x\" } }",
			       &dl), -EINVAL);
	assert_int_equal(parse(&cfg, "plugin \"exec\" { config { bogus = 1 } }", &dl), -EINVAL);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* acl { enabled }, server GC thresholds and preemption, client token;
 * -dev collects sooner but a file still decides. */
static void test_acl_gc_preemption_token(void **state)
{
	(void)state;
	struct agent_config cfg, copy;
	struct diag_list dl;
	const int64_t s = 1000000000LL;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_false(cfg.acl.enabled);
	assert_int_equal(cfg.server.job_gc_threshold_ns, 4 * 3600 * s);
	assert_int_equal(cfg.server.eval_gc_threshold_ns, 3600 * s);
	assert_true(cfg.server.preempt_batch);
	assert_true(cfg.server.preempt_system); /* Nomad's default for system jobs */
	assert_false(cfg.server.preempt_service);
	assert_null(cfg.client.token);
	agent_config_apply_dev(&cfg);
	assert_false(cfg.acl.enabled);
	assert_int_equal(cfg.server.job_gc_threshold_ns, 5 * 60 * s);
	assert_int_equal(cfg.server.eval_gc_threshold_ns, 60 * s);
	static const char text[] =
		"acl {\n  enabled = true\n}\n"
		"server {\n  job_gc_threshold = \"2h\"\n  eval_gc_threshold = \"30m\"\n"
		"  job_gc_interval = \"10s\"\n  heartbeat_ttl = \"7s\"\n"
		"  preemption {\n    batch_enabled = false\n    service_enabled = true\n"
		"    system_enabled = false\n  }\n}\n"
		"client {\n  token = \"abc123\"\n}\n";
	assert_int_equal(parse(&cfg, text, &dl), 0);
	assert_true(cfg.acl.enabled);
	assert_int_equal(cfg.server.job_gc_threshold_ns, 2 * 3600 * s);
	assert_int_equal(cfg.server.eval_gc_threshold_ns, 30 * 60 * s);
	assert_int_equal(cfg.server.gc_interval_ns, 10 * s);
	assert_int_equal(cfg.server.heartbeat_ttl_ns, 7 * s);
	assert_false(cfg.server.preempt_batch);
	assert_true(cfg.server.preempt_service);
	assert_false(cfg.server.preempt_system);
	assert_string_equal(cfg.client.token, "abc123");
	agent_config_copy(&copy, &cfg);
	assert_string_equal(copy.client.token, "abc123");
	assert_ptr_not_equal(copy.client.token, cfg.client.token);
	agent_config_release(&copy);
	/* errors name the key; the file changes nothing */
	assert_int_equal(parse(&cfg, "acl {\n  enabled = \"yes\"\n  bogus = 1\n}\n"
			       "server {\n  preemption {\n    sysbatch = true\n  }\n"
			       "  eval_gc_threshold = \"0s\"\n}\n"
			       "acl { enabled = false }\n", &dl), -EINVAL);
	assert_true(has_diag(&dl, 2, 0, "enabled: expected true or false"));
	assert_true(has_diag(&dl, 3, 0, "unknown key 'bogus' in acl"));
	assert_true(has_diag(&dl, 7, 0, "unknown key 'sysbatch' in server preemption"));
	assert_true(has_diag(&dl, 9, 0, "eval_gc_threshold: expected at least"));
	assert_true(has_diag(&dl, 11, 0, "block 'acl' given twice"));
	assert_true(cfg.acl.enabled);
	assert_true(cfg.server.preempt_service);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

/* client { gc_* }: Nomad's defaults, a file's values, ranges. */
static void test_client_gc(void **state)
{
	(void)state;
	struct agent_config cfg;
	struct diag_list dl;
	const int64_t s = 1000000000LL;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(cfg.client.gc_interval_ns, 60 * s);
	assert_int_equal(cfg.client.gc_max_allocs, 50);
	assert_int_equal(cfg.client.gc_disk_usage_threshold, 80);
	assert_int_equal(cfg.client.gc_inode_usage_threshold, 70);
	assert_int_equal(parse(&cfg, "client {\n  gc_interval = \"30s\"\n  gc_max_allocs = 7\n"
			       "  gc_disk_usage_threshold = 90\n  gc_inode_usage_threshold = 100\n}\n",
			       &dl), 0);
	assert_int_equal(cfg.client.gc_interval_ns, 30 * s);
	assert_int_equal(cfg.client.gc_max_allocs, 7);
	assert_int_equal(cfg.client.gc_disk_usage_threshold, 90);
	assert_int_equal(cfg.client.gc_inode_usage_threshold, 100);
	assert_int_equal(parse(&cfg, "client {\n  gc_max_allocs = 0\n"
			       "  gc_disk_usage_threshold = 101\n  gc_interval = \"0s\"\n}\n", &dl),
			 -EINVAL);
	assert_true(has_diag(&dl, 2, 0, "gc_max_allocs: expected 1 to"));
	assert_true(has_diag(&dl, 3, 0, "gc_disk_usage_threshold: expected 1 to 100"));
	assert_true(has_diag(&dl, 4, 0, "gc_interval: expected at least"));
	assert_int_equal(cfg.client.gc_max_allocs, 7);
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_dev_and_flags(void **state)
{
	struct agent_config cfg;
	struct herd_err err = { 0 };
	struct agent_flags flags = AGENT_FLAGS_INIT;
	char tmpl[] = "/tmp/herd-cfg-test-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	setenv("TMPDIR", tmpl, 1);

	agent_config_init(&cfg);
	flags.dev = true;
	flags.http_port = 5000;
	flags.gpu_sim = "machines/8xh100.json";
	assert_int_equal(agent_config_apply_flags(&cfg, &flags, &err), 0);
	assert_true(cfg.dev && cfg.server.enabled && cfg.client.enabled);
	assert_true(cfg.client.raw_exec_enabled);
	assert_string_equal(cfg.bind_addr, "127.0.0.1");
	assert_int_equal(cfg.http_port, 5000);
	assert_string_equal(cfg.gpu.sim_file, "machines/8xh100.json");
	assert_int_equal(agent_config_finish(&cfg, &err), 0);
	assert_true(cfg.data_dir_is_temp);
	assert_int_equal(strncmp(cfg.data_dir, tmpl, strlen(tmpl)), 0);
	assert_string_equal(cfg.advertise_http, "127.0.0.1:5000");
	struct stat st;
	assert_int_equal(stat(cfg.data_dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* something inside, as the agent would leave it */
	char *sub = NULL;
	assert_true(asprintf(&sub, "%s/server", cfg.data_dir) > 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	char *dir = strdup(cfg.data_dir);
	assert_int_equal(agent_config_remove_temp_data_dir(&cfg), 0);
	assert_int_equal(stat(dir, &st), -1);
	free(dir);
	free(sub);
	agent_config_release(&cfg);
	rmdir(tmpl);
	unsetenv("TMPDIR");

	/* bad flag values change nothing */
	agent_config_init(&cfg);
	flags = (struct agent_flags)AGENT_FLAGS_INIT;
	flags.http_port = 70000;
	flags.dev = true;
	assert_int_equal(agent_config_apply_flags(&cfg, &flags, &err), -EINVAL);
	assert_false(cfg.dev);
	assert_non_null(strstr(err.msg, "-http-port"));
	agent_config_release(&cfg);
}

static void test_finish_rules(void **state)
{
	struct agent_config cfg;
	struct diag_list dl;
	struct herd_err err = { 0 };
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "client { enabled = true }\ndata_dir = \"/d\"", &dl), 0);
	assert_int_equal(agent_config_finish(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "client.servers is empty"));
	agent_config_release(&cfg);

	agent_config_init(&cfg);
	assert_int_equal(parse(&cfg, "server { enabled = true }", &dl), 0);
	assert_int_equal(agent_config_finish(&cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "data_dir is not set"));
	/* -data-dir satisfies it */
	struct agent_flags flags = AGENT_FLAGS_INIT;
	flags.data_dir = "/srv/herd";
	assert_int_equal(agent_config_apply_flags(&cfg, &flags, &err), 0);
	assert_int_equal(agent_config_finish(&cfg, &err), 0);
	assert_string_equal(cfg.server.data_dir, "/srv/herd/server");
	assert_string_equal(cfg.advertise_http, "127.0.0.1:4646");
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/herd-cfg-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char text[] = "data_dir = \"/x\"\nclient {\n  enabled = 1\n}\n";
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	struct agent_config cfg;
	struct diag_list dl;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(agent_config_load_file(&cfg, path, &dl), -EINVAL);
	assert_true(has_diag(&dl, 3, 13, "enabled: expected true or false, not a number"));
	unlink(path);
	assert_int_equal(agent_config_load_file(&cfg, path, &dl), -ENOENT);
	assert_true(has_diag(&dl, 0, 0, "cannot open the agent configuration"));
	diag_list_release(&dl);
	agent_config_release(&cfg);
}

static void test_bad_addresses(void **state)
{
	static const char *bad[] = {
		"bind_addr = \"1.2.3.4:80\"", "bind_addr = \"\"",
		"advertise { http = \":80\" }", "advertise { http = \"h:99999\" }",
		"client { servers = [\"fd00::1:4646\"] }", "client { servers = [\"h:\"] }", "client { servers = [\"a:1\", 3] }",
		"data_dir = \"\"", "client { meta { a = [1] } }", "gpu { ignored_xids = [-1] }",
		"gpu { device \"0\" { } }", "plugin { }", "ports \"x\" { }",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct agent_config cfg;
		struct diag_list dl;
		agent_config_init(&cfg);
		diag_list_init(&dl);
		if (parse(&cfg, bad[i], &dl) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_true(dl.errors >= 1);
		diag_list_release(&dl);
		agent_config_release(&cfg);
	}
	static const char *good[] = {
		"bind_addr = \"::\"", "bind_addr = \"node-1.example\"",
		"advertise { http = \"[fd00::2]:80\" }", "gpu { ignored_xids = \"none\" }",
		"gpu { wsl = true }",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct agent_config cfg;
		struct diag_list dl;
		agent_config_init(&cfg);
		diag_list_init(&dl);
		if (parse(&cfg, good[i], &dl) != 0)
			fail_msg("rejected: %s: %s", good[i], dl.n ? dl.v[0].msg : "");
		diag_list_release(&dl);
		agent_config_release(&cfg);
	}
}

/* gpu { } sharing: per GPU by UUID, index or model, or for all; replicas. */
/* gpu { timeslice_memory_limit timeslice_memory_grace }: defaults, each
 * value, and bad ones refused at their place with the config unchanged. */
static void test_gpu_memory_limit(void **state)
{
	struct agent_config cfg;
	struct diag_list dl;
	(void)state;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(cfg.gpu.timeslice_memory_limit, AGENT_GPU_MEMORY_WARN);
	assert_int_equal(cfg.gpu.timeslice_memory_grace, 3);
	assert_int_equal(parse(&cfg, "gpu {\n  timeslice_memory_limit = \"kill\"\n"
			       "  timeslice_memory_grace = 5\n}\n", &dl), 0);
	assert_int_equal(cfg.gpu.timeslice_memory_limit, AGENT_GPU_MEMORY_KILL);
	assert_int_equal(cfg.gpu.timeslice_memory_grace, 5);
	assert_int_equal(parse(&cfg, "gpu { timeslice_memory_limit = \"off\" }\n", &dl), 0);
	assert_int_equal(cfg.gpu.timeslice_memory_limit, AGENT_GPU_MEMORY_OFF);
	agent_config_release(&cfg);
	diag_list_release(&dl);

	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "gpu {\n  timeslice_memory_limit = \"evict\"\n"
			       "  timeslice_memory_grace = 0\n}\n", &dl), -EINVAL);
	assert_true(has_diag(&dl, 2, 28, "expected \"off\", \"warn\" or \"kill\", not \"evict\""));
	assert_true(has_diag(&dl, 3, 0, "timeslice_memory_grace"));
	assert_int_equal(cfg.gpu.timeslice_memory_limit, AGENT_GPU_MEMORY_WARN);
	assert_int_equal(cfg.gpu.timeslice_memory_grace, 3);
	agent_config_release(&cfg);
	diag_list_release(&dl);
}

static void test_gpu_sharing(void **state)
{
	static const char text[] =
		"gpu {\n"
		"  sharing = \"mps\"\n"
		"  replicas = 10\n"
		"  mps_control = \"/opt/mps-control\"\n"
		"  device \"Tesla T4\" { sharing = \"timeslice\" }\n"
		"  device \"1\" { sharing = \"exclusive\" }\n"
		"  device \"GPU-b\" {\n    sharing = \"mps\"\n    replicas = 4\n  }\n"
		"}\n";
	struct agent_config cfg;
	struct diag_list dl;
	(void)state;
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, text, &dl), 0);
	assert_string_equal(cfg.gpu.mps_control, "/opt/mps-control");
	/* for all: mps with the file's replicas */
	struct agent_gpu_share sh = share_of(&cfg, "GPU-a", "", 0, "A100");
	assert_int_equal(sh.sharing, SCHED_MPS);
	assert_int_equal(sh.replicas, 10);
	/* by model (any case), inheriting replicas */
	sh = share_of(&cfg, "GPU-a", "", 0, "tesla t4");
	assert_int_equal(sh.sharing, SCHED_TIMESLICE);
	assert_int_equal(sh.replicas, 10);
	/* index beats model; exclusive means one tenant */
	sh = share_of(&cfg, "GPU-a", "", 1, "Tesla T4");
	assert_int_equal(sh.sharing, SCHED_EXCLUSIVE);
	assert_int_equal(sh.replicas, 1);
	/* UUID beats index */
	sh = share_of(&cfg, "GPU-b", "", 1, "Tesla T4");
	assert_int_equal(sh.sharing, SCHED_MPS);
	assert_int_equal(sh.replicas, 4);
	/* a MIG instance of a shared GPU stays exclusive */
	sh = share_of(&cfg, "MIG-x", "GPU-b", 1, "A100");
	assert_int_equal(sh.sharing, SCHED_EXCLUSIVE);
	diag_list_release(&dl);
	agent_config_release(&cfg);

	/* timeslice without replicas: no tenant limit */
	agent_config_init(&cfg);
	diag_list_init(&dl);
	assert_int_equal(parse(&cfg, "gpu { sharing = \"timeslice\" }", &dl), 0);
	assert_int_equal(share_of(&cfg, "GPU-a", "", 0, "T4").replicas, 0);
	diag_list_release(&dl);
	agent_config_release(&cfg);

	static const struct { const char *text; const char *msg; } bad[] = {
		{ "gpu { replicas = 4 }", "replicas needs sharing" },
		{ "gpu {\n sharing = \"mps\"\n replicas = 49 }", "at most 48 clients" },
		{ "gpu { device \"0\" {\n sharing = \"exclusive\"\n replicas = 2 } }",
		  "replicas needs sharing" },
		{ "gpu { device \"MIG-1\" { sharing = \"mps\" } }", "always exclusive" },
		{ "gpu { replicas = 0 }", "expected 1 to 1000" },
		{ "gpu { mps_control = \"\" }", "mps_control" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		agent_config_init(&cfg);
		diag_list_init(&dl);
		if (parse(&cfg, bad[i].text, &dl) != -EINVAL)
			fail_msg("accepted: %s", bad[i].text);
		int found = 0;
		for (size_t k = 0; k < dl.n; k++)
			found |= strstr(dl.v[k].msg, bad[i].msg) != NULL;
		if (!found)
			fail_msg("%s: no error with '%s' (first: %s)", bad[i].text, bad[i].msg,
				 dl.n ? dl.v[0].msg : "none");
		diag_list_release(&dl);
		agent_config_release(&cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_gpu_memory_limit),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_postgres_url),
		cmocka_unit_test(test_reserve_after),
		cmocka_unit_test(test_oidc_issuer),
		cmocka_unit_test(test_reserved_cores),
		cmocka_unit_test(test_gpu_sharing),
		cmocka_unit_test(test_every_error_reported),
		cmocka_unit_test(test_syntax_error),
		cmocka_unit_test(test_plugin_and_warnings),
		cmocka_unit_test(test_docker_plugin),
		cmocka_unit_test(test_exec_plugin_scheduler_and_gc),
		cmocka_unit_test(test_acl_gc_preemption_token),
		cmocka_unit_test(test_dev_and_flags),
		cmocka_unit_test(test_finish_rules),
		cmocka_unit_test(test_client_gc),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_bad_addresses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
