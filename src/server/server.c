/* server: assembles the control plane: store, HTTP routes, evaluation
 * broker, scheduler workers, heartbeat timer; and takes it apart again. */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "server/acl.h"
#include "server/autoscale.h"
#include "server/depends.h"
#include "server/drain.h"
#include "server/idle_gpu.h"
#include "server/server-int.h"
#include "server/standby.h"
#include "store/store.h"

void server_log(struct server *srv, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	if (!srv->cfg.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	srv->cfg.log(level, msg, srv->cfg.log_arg);
}

void server_queue_evals(struct server *srv, const json_t *evals)
{
	size_t i;
	json_t *e;
	json_array_foreach(evals, i, e)
		broker_enqueue(&srv->broker, jstr(e, "id", ""), jstr(e, "namespace", "default"),
			       jstr(e, "job_id", ""), jint(e, "wait_until", 0));
}

static void log_http_error(const char *method, const char *path, int rc, void *arg)
{
	server_log(arg, "error", "%s %s: internal error (%s)", method, path, strerror(-rc));
}

/* Queues again what the store holds unfinished: pending evaluations as
 * they were, blocked ones once (capacity may have changed meanwhile). */
static int requeue_evals(struct server *srv, struct herd_err *err)
{
	json_t *evals = NULL, *e;
	size_t i;
	int rc = store_list(srv->store, STORE_EVAL, NULL, &evals, err);
	if (rc < 0)
		return rc;
	json_array_foreach(evals, i, e) {
		const char *st = jstr(e, "status", "");
		if (!strcmp(st, "pending") || !strcmp(st, "blocked") || !strcmp(st, "queued"))
			broker_enqueue(&srv->broker, jstr(e, "id", ""), jstr(e, "namespace", "default"),
				       jstr(e, "job_id", ""),
				       !strcmp(st, "pending") ? jint(e, "wait_until", 0) : 0);
	}
	json_decref(evals);
	return 0;
}

static int make_dir(const char *path, struct herd_err *err)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return herd_errf(err, -errno, "cannot create data directory %s: %s", path, strerror(errno));
	return 0;
}

/* store_pg_options.leader: who leads, for the standby's answers; each
 * change after the first (which the caller's waiting callback says) is
 * logged once, so an operator sees a third server take over. */
static void standby_leader(const char *holder, void *arg)
{
	struct server *srv = arg;
	char was[256];

	if (!standby_set_leader(srv->standby, holder, was, sizeof(was)))
		return;
	if (leader_addr_usable(holder))
		server_log(srv, "info", "standby: the leader is now %s (was %s)", holder,
			   *was ? was : "none known");
	else
		server_log(srv, "info", "standby: no server leads the PostgreSQL store now "
			   "(was %s); waiting", *was ? was : "none known");
}

/* With a shared store: bind the API's port and serve it as a standby
 * (standby.h) until the lock is ours, the leader recording the address
 * with the real port for the others; then the socket for the API.
 * Returns the socket, or -errno with err. */
static int open_shared_store(struct server *srv, const struct server_config *cfg,
			     const char *adv, struct herd_err *err)
{
	struct standby_config sc = { srv->bind_addr, cfg->http_port, cfg->tls, cfg->max_body };
	struct store_pg_options opts = { .lock_wait_ns = -1 };
	int rc;

	if ((rc = standby_start(&sc, &srv->standby, err)) < 0)
		return rc;
	free(srv->advertise);
	srv->advertise = advertise_with_port(adv, srv->bind_addr, standby_port(srv->standby));
	if (cfg->listening)
		cfg->listening(standby_port(srv->standby), cfg->log_arg);
	if (cfg->postgres_options)
		opts = *cfg->postgres_options;
	opts.holder = srv->advertise;
	opts.leader = standby_leader;
	opts.leader_arg = srv;
	rc = store_open_postgres(cfg->postgres_url, &opts, &srv->store, err);
	if (rc < 0)
		return rc;
	rc = standby_handoff(srv->standby);
	srv->standby = NULL;
	if (rc < 0)
		return herd_errf(err, rc, "http: the standby's socket cannot be taken over");
	return rc;
}

static void server_free(struct server *srv)
{
	http_server_stop(srv->http);
	/* the launcher registers jobs: before the broker goes */
	periodic_stop(srv);
	broker_stop(&srv->broker);
	for (unsigned i = 0; i < srv->nworkers; i++)
		pthread_join(srv->workers[i], NULL);
	heartbeat_stop(srv);
	idle_gpu_stop(srv);
	autoscale_stop(srv);
	drain_stop(srv);
	gc_stop(srv);
	broker_release(&srv->broker);
	depends_stop(srv);
	fair_queue_release(&srv->fq);
	view_cache_release(&srv->view_cache);
	pthread_mutex_destroy(&srv->plan_lock);
	store_close(srv->store);
	if (srv->lock_fd >= 0)
		close(srv->lock_fd); /* after the store: nothing writes it now */
	http_router_free(srv->router);
	server_routes_release(srv);
	routes_metrics_release(srv);
	for (size_t i = 0; i < srv->nlive; i++) {
		free(srv->live[i].id);
		json_decref(srv->live[i].stats);
	}
	free(srv->live);
	free(srv->workers);
	free(srv->data_dir);
	free(srv->bind_addr);
	free(srv->self_node_id);
	free(srv->advertise);
	standby_stop(srv->standby);
	if (srv->jwt_keys.ring)
		jwt_keys_close(&srv->jwt_keys);
	if (srv->vars_ring.dir)
		vars_keyring_close(&srv->vars_ring);
	free(srv->oidc_issuer);
	free(srv->region);
	json_decref(srv->self_config);
	pthread_mutex_destroy(&srv->lock);
	pthread_mutex_destroy(&srv->hb_lock);
	pthread_cond_destroy(&srv->hb_cond);
	free(srv);
}

int server_start(const struct server_config *cfg, struct server **out, struct herd_err *err)
{
	struct server *srv;
	struct http_server_config hc = { 0 };
	char *db;
	int rc, listen_fd = -1;
	char *adv;

	if (!cfg->data_dir || !*cfg->data_dir)
		return herd_errf(err, -EINVAL, "server data_dir is required");
	/* Every request builds and frees JSON trees and SQLite buffers on
	 * several threads; with glibc's default trim threshold (128 KiB,
	 * adjusted as it goes) each thread's arena handed its top back to the
	 * kernel (madvise) and took it again many times a second: 2-3% of the
	 * server's CPU under load.  Keep up to 16 MiB free per arena.  (The
	 * herd program links jemalloc where it is built with it, which this
	 * does not touch: src/cli/meson.build.) */
	mallopt(M_TRIM_THRESHOLD, 16 << 20);
	/* a copy: the listening callback may change what cfg points to */
	adv = cfg->advertise_http ? xstrdup(cfg->advertise_http) : NULL;
	srv = xcalloc(1, sizeof(*srv));
	srv->lock_fd = -1;
	srv->cfg = *cfg;
	srv->data_dir = xstrdup(cfg->data_dir);
	srv->bind_addr = xstrdup(cfg->bind_addr ? cfg->bind_addr : "127.0.0.1");
	srv->cfg.data_dir = srv->data_dir;
	srv->cfg.bind_addr = srv->bind_addr;
	srv->cfg.self_config = NULL;
	srv->cfg.postgres_url = NULL;       /* used during start only */
	srv->cfg.postgres_options = NULL;
	srv->self_config = cfg->self_config ? json_deep_copy(cfg->self_config) : json_object();
	srv->self_node_id = xstrdup(cfg->self_node_id ? cfg->self_node_id : "");
	srv->cfg.advertise_http = NULL;      /* copied: srv->advertise */
	srv->advertise = advertise_with_port(cfg->advertise_http, srv->bind_addr, cfg->http_port);
	srv->cfg.oidc_issuer = NULL;         /* copied: srv->oidc_issuer */
	srv->oidc_issuer = cfg->oidc_issuer ? xstrdup(cfg->oidc_issuer) : NULL;
	srv->region = xstrdup(cfg->region && *cfg->region ? cfg->region : "global");
	srv->cfg.region = NULL;              /* copied: srv->region */
	srv->ttl_ns = cfg->heartbeat_ttl_ns > 0 ? cfg->heartbeat_ttl_ns : SERVER_DEFAULT_HEARTBEAT_TTL_NS;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_mutex_init(&srv->hb_lock, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->hb_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	broker_init(&srv->broker);
	fair_queue_init(&srv->fq);
	srv->broker.on_unblock = fair_queue_wake;
	srv->broker.on_unblock_arg = srv;
	srv->acl_enabled = cfg->acl_enabled != 0;
	view_cache_init(&srv->view_cache);
	pthread_mutex_init(&srv->plan_lock, NULL);
	srv->router = http_router_new();

	rc = sched_policy_parse(cfg->policy ? cfg->policy : "herd", &srv->policy);
	if (rc < 0) {
		rc = herd_errf(err, -EINVAL, "unknown scheduler policy \"%s\"", cfg->policy);
		goto fail;
	}
	rc = make_dir(srv->data_dir, err);
	if (rc < 0)
		goto fail;
	rc = store_dir_lock(srv->data_dir, &srv->lock_fd, err);
	if (rc < 0)
		goto fail;
	if (cfg->postgres_url) {
		/* A standby waits here: the leadership lock comes with the
		 * store (store.h).  What follows is what a restart does, so a
		 * new leader takes over as a restarted server would: the
		 * evaluations queued again, and every node a full heartbeat
		 * TTL from now (heartbeat.c), whatever its silence before. */
		rc = listen_fd = open_shared_store(srv, cfg, adv, err);
	} else {
		db = xasprintf("%s/state.db", srv->data_dir);
		rc = store_open_sqlite(db, &srv->store, err);
		free(db);
	}
	if (rc < 0)
		goto fail;
	http_router_on_error(srv->router, log_http_error, srv);
	rc = http_routes_base(srv->router, err);
	if (!rc)
		rc = routes_jobs(srv, err);
	if (!rc)
		rc = routes_nodes(srv, err);
	if (!rc)
		rc = routes_allocs(srv, err);
	if (!rc)
		rc = routes_services(srv, err);
	if (!rc)
		rc = routes_deployments(srv, err);
	if (!rc)
		rc = routes_namespaces(srv, err);
	if (!rc)
		rc = routes_quotas(srv, err);
	if (!rc)
		rc = routes_acl(srv, err);
	if (!rc)
		rc = routes_usage(srv, err);
	if (!rc)
		rc = routes_vars(srv, err);
	if (!rc)
		rc = routes_keyring(srv, err);
	if (!rc)
		rc = routes_oidc(srv, err);
	if (!rc)
		rc = routes_identity(srv, err);
	if (!rc)
		rc = routes_system(srv, err);
	if (!rc)
		rc = routes_metrics(srv, err);
	if (!rc)
		rc = routes_status_leader(srv, err);
	if (!rc)
		rc = routes_operator(srv, err);
	if (!rc)
		rc = namespace_default_ensure(srv, err);
	/* before the evaluations: those that wait for a dependency park */
	if (!rc)
		rc = depends_start(srv, err);
	if (!rc)
		rc = requeue_evals(srv, err);
	if (!rc)
		rc = heartbeat_start(srv, err);
	if (!rc)
		rc = gc_start(srv, err);
	if (!rc)
		rc = idle_gpu_start(srv, err);
	if (!rc)
		rc = autoscale_start(srv, err);
	if (!rc)
		rc = drain_start(srv, err);
	if (!rc)
		rc = periodic_start(srv, err);
	if (rc < 0)
		goto fail;
	srv->nworkers = cfg->workers ? cfg->workers : SERVER_DEFAULT_WORKERS;
	/* before the workers, which make reservations */
	srv->fq.watch = store_watch(srv->store);
	srv->workers = xcalloc(srv->nworkers, sizeof(pthread_t));
	for (unsigned i = 0; i < srv->nworkers; i++) {
		rc = -pthread_create(&srv->workers[i], NULL, worker_main, srv);
		if (rc < 0) {
			srv->nworkers = i;
			herd_errf(err, rc, "cannot start scheduler worker: %s", strerror(-rc));
			goto fail;
		}
	}
	hc.bind_addr = srv->bind_addr;
	hc.port = cfg->http_port;
	hc.threads = cfg->http_threads;
	hc.max_body = cfg->max_body;
	hc.router = srv->router;
	hc.watch = store_watch(srv->store);
	hc.tls = cfg->tls;
	hc.use_listen_fd = listen_fd >= 0;
	hc.listen_fd = listen_fd;
	listen_fd = -1;   /* http's now, whatever happens */
	rc = http_server_start(&hc, &srv->http, err);
	if (rc < 0)
		goto fail;
	if (!hc.use_listen_fd) {
		char *real = advertise_with_port(adv, srv->bind_addr, server_port(srv));
		pthread_mutex_lock(&srv->lock);
		free(srv->advertise);
		srv->advertise = real;
		pthread_mutex_unlock(&srv->lock);
		if (cfg->listening)
			cfg->listening(server_port(srv), cfg->log_arg);
	}
	free(adv);
	*out = srv;
	return 0;
fail:
	if (listen_fd >= 0)
		close(listen_fd);
	free(adv);
	server_free(srv);
	return rc;
}

uint16_t server_port(const struct server *srv)
{
	return http_server_port(srv->http);
}

const struct httpc_local *server_local_transport(struct server *srv)
{
	return http_server_local(srv->http);
}

void server_set_self_node_id(struct server *srv, const char *id)
{
	char *copy = xstrdup(id ? id : "");
	pthread_mutex_lock(&srv->lock);
	free(srv->self_node_id);
	srv->self_node_id = copy;
	pthread_mutex_unlock(&srv->lock);
}

int server_wait_idle(struct server *srv, int64_t timeout_ns)
{
	return broker_wait_idle(&srv->broker, timeout_ns);
}

void server_stop(struct server *srv)
{
	if (srv)
		server_free(srv);
}
