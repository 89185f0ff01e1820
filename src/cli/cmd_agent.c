/* herd agent: the long-running process (docs/operations.md).  A server
 * (server.h) when server { enabled }, a client (agent/client.h) when
 * client { enabled }; -dev runs both with a temporary data dir.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP are blocked in every thread and
 * taken by sigwait here (no handler runs at all), so shutdown runs in one
 * known place: the client stops (its tasks keep running, except in -dev),
 * then the server.  SIGHUP is blocked first of all, so that one sent while
 * the agent starts waits for it instead of killing it; it reloads the
 * configuration on this thread (reload below; docs/agent-config.md,
 * "Reloading"). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/client.h"
#include "agent/config.h"
#include "agent/log.h"
#include "cli/cli.h"
#include "common/tls.h"
#include "common/xalloc.h"
#include "drivers/shim.h"
#include "agent/client_http.h"
#include "server/server.h"
#include "store/store.h"

#ifndef HERD_SOURCE_ROOT
#define HERD_SOURCE_ROOT "."
#endif
#ifndef HERD_NVML_SIM_LIB
#define HERD_NVML_SIM_LIB ""
#endif

#define DEV_GPU_EXAMPLE "examples/gpus/h100-sxm-8x-nvlink.json"

int cmd_task_shim(int argc, char **argv)
{
	return task_shim_main(argc, argv);
}

static bool nvidia_driver_present(void)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
	dlclose(h);
	return true;
}

/* The simulated NVML next to this binary's build, or as built. */
static char *find_sim_library(void)
{
	const char *env = getenv("HERD_NVML_LIBRARY");
	char self[4096];
	ssize_t n;

	if (env && *env)
		return xstrdup(env);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash, *p;
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			p = xasprintf("%s/../gpu/sim/libherd-nvml-sim.so", self);
			if (access(p, R_OK) == 0)
				return p;
			free(p);
		}
	}
	if (*HERD_NVML_SIM_LIB && access(HERD_NVML_SIM_LIB, R_OK) == 0)
		return xstrdup(HERD_NVML_SIM_LIB);
	return NULL;
}

/* -gpu-sim FILE (or the -dev default): point the GPU layer at the
 * simulated NVML. */
static int setup_gpu_sim(struct agent_config *cfg, const char *cmd)
{
	char *abs, *lib;

	if (!cfg->gpu.sim_file)
		return 0;
	abs = realpath(cfg->gpu.sim_file, NULL);
	if (!abs) {
		fprintf(stderr, "%s: -gpu-sim %s: %s\n", cmd, cfg->gpu.sim_file, strerror(errno));
		return -1;
	}
	setenv("HERD_NVML_SIM", abs, 1);
	free(abs);
	if (!cfg->gpu.nvml_library) {
		lib = find_sim_library();
		if (!lib) {
			fprintf(stderr, "%s: the simulated NVML library (libherd-nvml-sim.so) was not "
				"found: set HERD_NVML_LIBRARY\n", cmd);
			return -1;
		}
		cfg->gpu.nvml_library = lib;
		cfg->gpu.nvml.library_path = lib;
	}
	return 0;
}

/* mkdir -p: the data dir and its parents may not exist yet. */
static int make_dirs(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	free(p);
	return rc;
}

static void server_log(const char *level, const char *msg, void *arg)
{
	agent_log(!strcmp(level, "error") ? AGENT_LOG_ERROR
		  : !strcmp(level, "info") ? AGENT_LOG_INFO : AGENT_LOG_WARN, "server: %s", msg);
}

/* server { postgres_url }: the store's callbacks (store.h, struct
 * store_pg_options).  A standby says once who leads and waits; SIGINT or
 * SIGTERM (blocked, so pending) end the wait; a leader that loses the lock
 * stops with a non-zero status, to be started again (systemd's
 * Restart=on-failure) as a standby. */
static atomic_bool pg_lost;

static void pg_waiting(const char *holder, void *arg)
{
	(void)arg;
	log_info("server: standby; the leader is %s (holds the PostgreSQL lock); waiting",
		 holder && *holder ? holder : "a server that did not say its address");
}

static bool pg_cancelled(void *arg)
{
	sigset_t pending;

	(void)arg;
	return sigpending(&pending) == 0 &&
	       (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1);
}

static void pg_lost_cb(const char *why, void *arg)
{
	(void)arg;
	log_error("server: lost the PostgreSQL leadership lock (%s); stopping", why);
	atomic_store(&pg_lost, true);
	/* the main thread waits in sigwait: wake it as a SIGTERM would */
	kill(getpid(), SIGTERM);
}

/* server_config.listening: the API's port is bound (with postgres_url
 * before the wait for the lock: a standby answers there, redirecting to
 * the leader).  A caller that asked for any port is told which one it
 * got, and the advertised address (what the leader records for standbys)
 * takes it. */
static void server_listening(uint16_t port, void *arg)
{
	struct agent_config *cfg = arg;
	char *adv = cfg->advertise_http, *colon = adv ? strrchr(adv, ':') : NULL;

	if (cfg->http_port == 0) {
		printf("http port %u\n", port);
		fflush(stdout);
		if (colon && !strcmp(colon + 1, "0")) {
			cfg->advertise_http = xasprintf("%.*s:%u", (int)(colon - adv), adv, port);
			free(adv);
		}
	}
	if (cfg->server.postgres_url)
		log_info("server: PostgreSQL store; taking the leadership lock as %s "
			 "(until then a standby on %s://%s:%u, redirecting to the leader)",
			 cfg->advertise_http, cfg->tls.http ? "https" : "http", cfg->bind_addr, port);
}

static void split_servers(struct agent_config *cfg, const char *list)
{
	char *dup = xstrdup(list), *save = NULL;

	for (size_t i = 0; i < cfg->client.nr_servers; i++)
		free(cfg->client.servers[i]);
	free(cfg->client.servers);
	cfg->client.servers = NULL;
	cfg->client.nr_servers = 0;
	for (char *s = strtok_r(dup, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		if (!*s)
			continue;
		cfg->client.servers = xreallocarray(cfg->client.servers, cfg->client.nr_servers + 1,
						    sizeof(char *));
		cfg->client.servers[cfg->client.nr_servers++] = xstrdup(s);
	}
	free(dup);
}

/* What the command line says; the configuration is built from it at start
 * and again by each reload. */
struct agent_opts {
	const char *config_file, *bind, *data_dir, *gpu_sim;
	const char *servers, *node, *log_level, *postgres_url;
	bool dev;
	int64_t http_port;
	const char *cmd;      /* argv[0], for messages at start */
};

/* A failure while building the configuration: on stderr at start (the
 * agent has not started), as an error line of the log at a reload. */
static void build_error(const struct agent_config *running, const char *cmd, const char *fmt,
			...) __attribute__((format(printf, 3, 4)));
static void build_error(const struct agent_config *running, const char *cmd, const char *fmt,
			...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (running)
		log_error("agent: reload: %s", msg);
	else
		fprintf(stderr, "%s: %s\n", cmd, msg);
}

/* Builds cfg from the defaults, -dev, the -config file and the flags, as
 * config.h orders it.  At start (running NULL) it also picks -dev's
 * simulated GPUs and points the GPU layer at them; at a reload (running:
 * the configuration the agent started with) it changes nothing outside cfg
 * and takes from running what start-up derived (the temporary data dir,
 * the simulated NVML found).  Returns 0, or -1 after saying why; cfg is
 * released by the caller in both cases. */
static int build_config(struct agent_config *cfg, const struct agent_opts *o,
			const struct agent_config *running)
{
	struct agent_flags af = AGENT_FLAGS_INIT;
	struct herd_err err = { 0, "" };
	struct diag_list dl;

	agent_config_init(cfg);
	if (o->dev)
		agent_config_apply_dev(cfg);
	if (o->config_file) {
		diag_list_init(&dl);
		int lrc = agent_config_load_file(cfg, o->config_file, &dl);
		diag_sort(&dl);
		diag_print(&dl, o->config_file, stderr);
		diag_list_release(&dl);
		if (lrc < 0) {
			if (running)
				build_error(running, o->cmd, "%s has errors (above)", o->config_file);
			return -1;
		}
	}
	af.dev = o->dev;
	af.bind = o->bind;
	af.http_port = (int)o->http_port;
	af.data_dir = o->data_dir;
	af.gpu_sim = o->gpu_sim;
	if (agent_config_apply_flags(cfg, &af, &err) < 0) {
		build_error(running, o->cmd, "%s", err.msg);
		return -1;
	}
	if (o->servers)
		split_servers(cfg, o->servers);
	if (o->postgres_url) {
		if (!*o->postgres_url) {
			build_error(running, o->cmd, "-postgres-url: expected a PostgreSQL URL or "
				    "connection string, not \"\"");
			return -1;
		}
		free(cfg->server.postgres_url);
		cfg->server.postgres_url = xstrdup(o->postgres_url);
	}
	if (o->node) {
		free(cfg->name);
		cfg->name = xstrdup(o->node);
	}
	if (o->log_level && agent_log_level_parse(o->log_level, &cfg->log_level) < 0) {
		build_error(running, o->cmd, "-log-level: \"%s\" is not a level", o->log_level);
		return -1;
	}
	if (running) {
		/* what start-up derived stays: the GPUs it found, the
		 * temporary data dir of -dev */
		if (!cfg->gpu.sim_file && running->gpu.sim_file && cfg->dev &&
		    !cfg->gpu.nvml_library)
			cfg->gpu.sim_file = xstrdup(running->gpu.sim_file);
		if (cfg->gpu.sim_file && !cfg->gpu.nvml_library && running->gpu.nvml_library) {
			cfg->gpu.nvml_library = xstrdup(running->gpu.nvml_library);
			cfg->gpu.nvml.library_path = cfg->gpu.nvml_library;
		}
		if (!cfg->data_dir && running->data_dir_is_temp)
			cfg->data_dir = xstrdup(running->data_dir);
	} else {
		if (cfg->dev && !cfg->gpu.sim_file && !cfg->gpu.nvml_library &&
		    !getenv("HERD_NVML_LIBRARY") && !nvidia_driver_present()) {
			char *ex = xasprintf("%s/%s", HERD_SOURCE_ROOT, DEV_GPU_EXAMPLE);
			if (access(ex, R_OK) == 0) {
				printf("no NVIDIA driver: using simulated GPUs from %s\n", ex);
				fflush(stdout);
				cfg->gpu.sim_file = ex;
			} else {
				printf("no NVIDIA driver and no simulated GPU description: running "
				       "without GPUs (give -gpu-sim FILE)\n");
				free(ex);
			}
		}
		if (setup_gpu_sim(cfg, o->cmd) < 0)
			return -1;
	}
	if (agent_config_finish(cfg, &err) < 0) {
		build_error(running, o->cmd, "%s", err.msg);
		return -1;
	}
	return 0;
}

/* Whether cfg's listener keys carry the CA of callers' certificates. */
static bool tls_keys_verify_client_of(const struct agent_config *cfg)
{
	struct tls_keys *k = tls_creds_get(cfg->tls.server.creds);
	bool v = tls_keys_verify_client(k);

	tls_keys_unref(k);
	return v;
}

/* SIGHUP: the -config file read again and what may change applied (see
 * docs/agent-config.md, "Reloading"): log_level, and the listeners'
 * certificate and key, and the CA they check callers against (new
 * connections; open ones finish on the old).
 * Everything else that differs is named in one line and waits for a
 * restart.  A file that does not parse, or a certificate or key that does
 * not load, changes nothing.  start: the configuration as built at start,
 * which keeps what was applied (its tls creds are the listeners'). */
static void reload(const struct agent_opts *o, struct agent_config *start)
{
	struct agent_config next;
	struct agent_config_diff d;

	if (!o->config_file) {
		log_info("agent: SIGHUP: no -config file, nothing to reload");
		return;
	}
	log_info("agent: SIGHUP: reloading %s", o->config_file);
	if (build_config(&next, o, start) < 0) {
		log_error("agent: reload: nothing changed; still running with the configuration "
			  "read before");
		agent_config_release(&next);
		return;
	}
	agent_config_diff(start, &next, &d);
	if (d.log_level) {
		/* said under the more verbose of the two levels: before a
		 * change to fewer lines, after a change to more */
		enum agent_log_level was = start->log_level;
		if (next.log_level < was)
			agent_log_set_level(next.log_level);
		log_info("agent: reload: log_level %s (was %s)",
			 agent_log_level_name(next.log_level), agent_log_level_name(was));
		agent_log_set_level(next.log_level);
		start->log_level = next.log_level;
	}
	if (d.tls_keys) {
		/* next's files passed every check of tls_server_load */
		tls_creds_swap(start->tls.server.creds, next.tls.server.creds);
		free(start->tls.server.cert_pem);
		start->tls.server.cert_pem = xstrdup(next.tls.server.cert_pem);
		explicit_bzero(start->tls.server.key_pem, strlen(start->tls.server.key_pem));
		free(start->tls.server.key_pem);
		start->tls.server.key_pem = xstrdup(next.tls.server.key_pem);
		if (tls_keys_verify_client_of(&next)) {
			free(start->tls.server.ca_pem);
			start->tls.server.ca_pem = xstrdup(next.tls.server.ca_pem);
		}
		log_info("agent: reload: tls: new connections get the certificate of %s "
			 "(key %s)%s%s", next.tls.cert_file, next.tls.key_file,
			 tls_keys_verify_client_of(&next) ? "; callers' certificates are checked "
			 "against the CA of " : "",
			 tls_keys_verify_client_of(&next) ? next.tls.ca_file : "");
	}
	if (d.restart)
		log_warn("agent: reload: changed but applied only at a restart: %s", d.restart);
	if (!d.log_level && !d.tls_keys && !d.restart)
		log_info("agent: reload: nothing changed");
	agent_config_diff_release(&d);
	agent_config_release(&next);
}

int cmd_agent(int argc, char **argv)
{
	const char *config_file = NULL, *bind = NULL, *data_dir = NULL, *gpu_sim = NULL;
	const char *servers = NULL, *node = NULL, *log_level = NULL, *postgres_url = NULL;
	bool dev = false;
	int64_t http_port = -1;
	const struct flag flags[] = {
		{ "config", FLAG_STRING, &config_file, "agent configuration file (HCL)" },
		{ "dev", FLAG_BOOL, &dev, "server and client in one process, temporary data dir" },
		{ "bind", FLAG_STRING, &bind, "address to listen on" },
		{ "http-port", FLAG_INT, &http_port, "HTTP API port (0: any free port)" },
		{ "data-dir", FLAG_STRING, &data_dir, "where state is kept" },
		{ "gpu-sim", FLAG_STRING, &gpu_sim, "simulated GPUs from a description (examples/gpus)" },
		{ "servers", FLAG_STRING, &servers, "servers a client joins: host:port,..." },
		{ "postgres-url", FLAG_STRING, &postgres_url,
		  "the PostgreSQL store servers share (server { postgres_url })" },
		{ "node", FLAG_STRING, &node, "this node's name" },
		{ "log-level", FLAG_STRING, &log_level, "trace, debug, info, warn or error" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd agent [options]",
		"Runs a herd agent: a server, a client, or both (-dev).  Logs go to stderr.\n"
		"SIGINT or SIGTERM shut it down; a client's tasks keep running and are\n"
		"found again by the next client on this data dir (-dev stops them).\n"
		"SIGHUP reads the -config file again and applies log_level and the TLS\n"
		"certificate and key; other changes are logged and need a restart.",
		flags,
	};
	struct agent_opts opts = { 0 };
	struct agent_config cfg, start;
	struct herd_err err = { 0, "" };
	struct server *srv = NULL;
	struct client *cl = NULL;
	struct client_http *chttp = NULL;
	struct store_pg_options pg = { 0 };   /* the store's callbacks: lives as long as srv */
	char *local = NULL, *shim_exe = NULL;
	const char *shim_argv[3];
	sigset_t sigs;
	int i, rc = 1, sig;

	/* A SIGHUP from here on waits for the loop at the end (reload). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	memset(&cfg, 0, sizeof(cfg));
	memset(&start, 0, sizeof(start));

	i = flags_parse(&help, argc, argv);
	if (i < 0)
		return i == -1 ? 0 : EXIT_USAGE;
	if (i < argc)
		return usage_error(argv[0], "unexpected argument '%s'", argv[i]);
	if (http_port > 65535 || http_port < -1)
		return usage_error(argv[0], "-http-port: %lld is not a port", (long long)http_port);

	opts = (struct agent_opts){ config_file, bind, data_dir, gpu_sim, servers, node, log_level,
				    postgres_url, dev, http_port, argv[0] };
	if (build_config(&cfg, &opts, NULL) < 0)
		goto out;
	agent_config_copy(&start, &cfg);
	agent_log_set_level(cfg.log_level);
	if (make_dirs(cfg.data_dir) < 0) {
		fprintf(stderr, "%s: cannot make data dir %s: %s\n", argv[0], cfg.data_dir,
			strerror(errno));
		goto out;
	}

	/* Block the shutdown signals in every thread started from here
	 * (SIGHUP already is: sigwait takes all three below). */
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (cfg.server.enabled) {
		struct server_config sc;
		memset(&sc, 0, sizeof(sc));
		sc.data_dir = cfg.server.data_dir;
		sc.bind_addr = cfg.bind_addr;
		sc.http_port = (uint16_t)cfg.http_port;
		sc.heartbeat_ttl_ns = cfg.server.heartbeat_ttl_ns;
		sc.policy = sched_policy_name(cfg.server.policy);  /* server { scheduler { policy } } */
		sc.acl_enabled = cfg.acl.enabled;
		sc.tls = &cfg.tls.server;   /* loaded only with tls { http = true } */
		sc.job_gc_threshold_ns = cfg.server.job_gc_threshold_ns;
		sc.eval_gc_threshold_ns = cfg.server.eval_gc_threshold_ns;
		sc.gc_interval_ns = cfg.server.gc_interval_ns;
		sc.preempt_types = (cfg.server.preempt_batch ? SERVER_PREEMPT_BATCH : 0) |
				   (cfg.server.preempt_service ? SERVER_PREEMPT_SERVICE : 0) |
				   (cfg.server.preempt_system ? SERVER_PREEMPT_SYSTEM : 0);
		if (!sc.preempt_types)
			sc.preempt_types = SERVER_PREEMPT_NONE;
		sc.reserve_after_ns = cfg.server.reserve_after_ns < 0 ? SERVER_RESERVE_OFF
				      : cfg.server.reserve_after_ns ? cfg.server.reserve_after_ns
				      : SERVER_RESERVE_NOW;
		sc.client_enabled = cfg.client.enabled;
		sc.log = server_log;
		sc.log_arg = &cfg;
		sc.advertise_http = cfg.advertise_http;   /* what standbys name */
		sc.oidc_issuer = cfg.server.oidc_issuer;
		sc.region = cfg.region;
		sc.listening = server_listening;
		sc.postgres_url = cfg.server.postgres_url;
		pg.lock_wait_ns = -1;
		pg.waiting = pg_waiting;
		pg.cancelled = pg_cancelled;
		pg.lost = pg_lost_cb;
		sc.postgres_options = &pg;
		rc = server_start(&sc, &srv, &err);
		if (rc == -ECANCELED && cfg.server.postgres_url) {
			/* a standby told to stop: a clean end */
			log_info("server: stopped while a standby");
			rc = 0;
			goto out;
		}
		rc = 1;
		if (!srv) {
			log_error("server: %s", err.msg);
			goto out;
		}
		if (cfg.server.postgres_url)
			log_info("server: leader (holds the PostgreSQL lock as %s)", cfg.advertise_http);
		log_info("server: listening on %s://%s:%u (data dir %s)",
			 cfg.tls.http ? "https" : "http", cfg.bind_addr, server_port(srv),
			 cfg.server.data_dir);
		local = xasprintf("%s:%u",
				  strcmp(cfg.bind_addr, "0.0.0.0") ? cfg.bind_addr : "127.0.0.1",
				  server_port(srv));
		/* served by every server, no token needed to load it */
		log_info("server: web UI on %s://%s/ui", cfg.tls.http ? "https" : "http", local);
	}
	if (srv && (cfg.http_port == 0 || !cfg.advertise_http)) {
		/* The port was chosen at start: advertise the real one. */
		free(cfg.advertise_http);
		cfg.advertise_http = xstrdup(local);
	}
	if (cfg.client.enabled) {
		/* The client's own API (log streams) on the node's http_addr:
		 * the agent's port when no server shares the process, else a
		 * port of its own. */
		uint16_t cport = srv ? 0 : (uint16_t)cfg.http_port;
		if (client_http_start(cfg.bind_addr, cport, cfg.client.alloc_dir,
				      cfg.client.state_dir, &cfg.tls.server, &chttp, &err) < 0) {
			log_warn("%s: task logs cannot be read through the API", err.msg);
		} else {
			/* Log reads are authorized by a server (ACL on the
			 * allocation's namespace): the in-process one, else
			 * the configured ones, in turn when one fails. */
			if (local)
				client_http_set_auth_servers(chttp, (const char *const *)&local, 1,
							     &cfg.tls.client,
							     server_local_transport(srv));
			else
				client_http_set_auth_servers(chttp,
							     (const char *const *)cfg.client.servers,
							     cfg.client.nr_servers, &cfg.tls.client,
							     NULL);
			client_http_set_drivers(chttp, cfg.exec.cgroup_parent, cfg.docker.socket);
			char *host = xstrdup(cfg.advertise_http ? cfg.advertise_http : "127.0.0.1");
			char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
			/* "host:port" / "[v6]:port" lose the port; a bare v6 stays. */
			if (colon && host[0] == '[')
				colon[1] = '\0';
			else if (colon && !strchr(colon + 1, ':'))
				*colon = '\0';
			free(cfg.advertise_http);
			cfg.advertise_http = xasprintf("%s:%u", host, client_http_port(chttp));
			free(host);
			log_info("client: http api on %s%s", cfg.advertise_http,
				 cfg.tls.http ? " (https)" : "");
			if (!srv && cfg.http_port == 0) {
				printf("http port %u\n", client_http_port(chttp));
				fflush(stdout);
			}
		}
	}
	if (cfg.client.enabled) {
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = '\0';
		/* the small herd-task-shim when it is there (it starts ~20x
		 * faster), else this binary's hidden subcommand */
		shim_exe = task_shim_program(n > 0 ? self : NULL);
		shim_argv[0] = shim_exe;
		shim_argv[1] = NULL;
		if (!shim_exe) {
			shim_exe = xstrdup(n > 0 ? self : "/proc/self/exe");
			shim_argv[0] = shim_exe;
			shim_argv[1] = "task-shim";
			shim_argv[2] = NULL;
		}
		/* exec into exec-driver tasks runs the shim's enter mode;
		 * set before any task exists */
		if (chttp)
			client_http_set_shim(chttp, shim_argv);
		/* A client of the server in this process reaches it without a
		 * socket (http_local.c says what that saves). */
		if (client_start(&cfg, local, srv ? server_local_transport(srv) : NULL, shim_argv,
				 &cl, &err) < 0) {
			log_error("%s", err.msg);
			goto stop;
		}
		if (srv)
			server_set_self_node_id(srv, client_node_id(cl));
		/* restarts and signals of its tasks through the client API */
		if (chttp)
			client_http_set_client(chttp, cl);
	}
	if (cfg.dev)
		log_info("agent: dev mode: data in %s (removed on exit); try "
			 "HERD_ADDR=%s://%s herd job run examples/jobs/hello-gpu.hcl",
			 cfg.data_dir, cfg.tls.http ? "https" : "http",
			 local ? local : "127.0.0.1:4646");

	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig != SIGHUP)
			break;
		reload(&opts, &start);
	}
	if (atomic_load(&pg_lost)) {
		/* pg_lost_cb said why; the store is fenced: stop, and let
		 * the service manager start a standby */
		rc = 1;
	} else {
		log_info("agent: %s: shutting down", sig == SIGINT ? "interrupt" : "terminated");
		rc = 0;
	}
stop:
	/* The API first: a restart or signal in progress holds one of the
	 * client's runners, which client_stop frees. */
	client_http_stop(chttp);
	client_stop(cl, cfg.dev);
	server_stop(srv);
	if (cfg.data_dir_is_temp)
		agent_config_remove_temp_data_dir(&cfg);
	log_info("agent: stopped");
out:
	free(local);
	free(shim_exe);
	agent_config_release(&start);
	agent_config_release(&cfg);
	return rc;
}
