/* heartbeat: node liveness.
 *
 * Heartbeats are kept in memory, not in the store: writing one record per
 * heartbeat would bump the global index every few seconds per node and wake
 * every blocking query for nothing.  The store learns only of changes of
 * state (ready -> down -> ready).  After a restart every node known as
 * ready gets a full TTL from the moment the server started, and so from
 * the moment a standby became the leader of a shared store (a new
 * process: server_start runs once it holds the store): a node is never
 * marked down for a silence that happened before this server led, while
 * the agents were failing over to it.
 *
 * A timer thread looks every quarter TTL (at most every 250 ms) for nodes
 * whose last heartbeat is older than the TTL and marks them down: their
 * unfinished allocations become "lost" (or "unknown", for groups with
 * disconnect { lost_after }: disconnect.h) and a node-update evaluation
 * per job replaces them elsewhere. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "server/autoscale.h"
#include "server/disconnect.h"
#include "server/idle_gpu.h"
#include "server/server-int.h"

/* Under hb_lock. */
static struct node_live *live_of(struct server *srv, const char *id, bool create)
{
	for (size_t i = 0; i < srv->nlive; i++)
		if (!strcmp(srv->live[i].id, id))
			return &srv->live[i];
	if (!create)
		return NULL;
	ALLOC_GROW(srv->live, srv->nlive + 1, srv->alive);
	memset(&srv->live[srv->nlive], 0, sizeof(srv->live[0]));
	srv->live[srv->nlive].id = xstrdup(id);
	srv->live[srv->nlive].last_mono = mono_ns();
	srv->live[srv->nlive].last_wall = now_ns();
	srv->live[srv->nlive].stats = json_object();
	return &srv->live[srv->nlive++];
}

void heartbeat_touch(struct server *srv, const char *id, const json_t *devices)
{
	struct node_live *l;
	size_t i;
	json_t *d;

	pthread_mutex_lock(&srv->hb_lock);
	l = live_of(srv, id, true);
	l->last_mono = mono_ns();
	l->last_wall = now_ns();
	json_array_foreach(devices, i, d) {
		json_t *st = json_object_get(d, "stats");
		const char *did = jstr(d, "id", NULL);
		if (did && json_is_object(st))
			json_object_set(l->stats, did, st);
	}
	pthread_mutex_unlock(&srv->hb_lock);
	idle_gpu_observe(srv, id, devices);
	autoscale_observe(srv, id, devices);
}

void heartbeat_decorate(struct server *srv, json_t *node)
{
	struct node_live *l;
	size_t i;
	json_t *d;

	json_object_set_new(node, "heartbeat_ttl", json_integer(srv->ttl_ns));
	pthread_mutex_lock(&srv->hb_lock);
	l = live_of(srv, jstr(node, "id", ""), false);
	if (l) {
		json_object_set_new(node, "last_heartbeat", json_integer(l->last_wall));
		json_array_foreach(json_object_get(node, "devices"), i, d) {
			json_t *st = json_object_get(l->stats, jstr(d, "id", ""));
			if (st)
				json_object_set_new(d, "stats", json_deep_copy(st));
		}
	}
	pthread_mutex_unlock(&srv->hb_lock);
}

int node_mark_down(struct server *srv, const char *id, struct herd_err *err)
{
	for (int attempt = 0; attempt < 20; attempt++) {
		struct store_key key = { NULL, id, 0 };
		struct store_filter f = { NULL, NULL, id };
		struct store_batch b = STORE_BATCH_INIT;
		json_t *node = NULL, *allocs = NULL, *evals = json_array(), *jobs = json_object(), *al;
		json_t *jobs_read;
		uint64_t idx = store_index(srv->store);
		size_t i;
		int rc;

		rc = store_get(srv->store, STORE_NODE, &key, &node, err);
		if (!rc)
			rc = store_list(srv->store, STORE_ALLOC, &f, &allocs, err);
		if (rc < 0 || !strcmp(jstr(node, "status", ""), "down")) {
			json_decref(node);
			json_decref(allocs);
			json_decref(evals);
			json_decref(jobs);
			return rc == -ENOENT ? 0 : rc;
		}
		store_batch_init(&b);
		jobs_read = json_object(); /* stored jobs, each read once (disconnect.c) */
		json_object_set_new(node, "status", json_string("down"));
		json_object_set_new(node, "status_description", json_string("missed heartbeats"));
		store_batch_put(&b, STORE_NODE, node);
		store_batch_require_index(&b, STORE_NODE, &key, (uint64_t)jint(node, "modify_index", 0));
		store_batch_require_node_allocs(&b, id, idx);
		json_array_foreach(allocs, i, al) {
			char *jk;
			if (!alloc_takes_capacity(al))
				continue;
			/* a group with disconnect { lost_after }: unknown, not lost */
			if (!disconnect_mark_down(srv->store, jobs_read, al, now_ns())) {
				json_object_set_new(al, "client_status", json_string("lost"));
				json_object_set_new(al, "client_description",
						    json_string("node down: missed heartbeats"));
				json_object_set_new(al, "modify_time", json_integer(now_ns()));
				json_object_set_new(al, "end_time", json_integer(now_ns())); /* GPU-hours stop here */
			}
			store_batch_put(&b, STORE_ALLOC, al);
			jk = xasprintf("%s\x1f%s", jstr(al, "namespace", "default"), jstr(al, "job_id", ""));
			if (!json_object_get(jobs, jk)) {
				json_t *e = eval_new(jstr(al, "namespace", "default"), jstr(al, "job_id", ""),
						     "node-update", id);
				json_object_set_new(jobs, jk, json_true());
				store_batch_put(&b, STORE_EVAL, e);
				json_array_append_new(evals, e);
			}
			free(jk);
		}
		rc = store_commit(srv->store, &b, NULL, err);
		store_batch_release(&b);
		json_decref(jobs_read);
		if (rc == 0)
			server_queue_evals(srv, evals);
		json_decref(node);
		json_decref(allocs);
		json_decref(evals);
		json_decref(jobs);
		if (rc != -ESTALE)
			return rc;
	}
	return herd_errf(err, -EAGAIN, "node %s kept changing while being marked down", id);
}

void heartbeat_check(struct server *srv)
{
	json_t *nodes = NULL, *n;
	struct herd_err err = { 0 };
	size_t i;

	if (store_list(srv->store, STORE_NODE, NULL, &nodes, &err) < 0) {
		server_log(srv, "error", "heartbeat: %s", err.msg);
		return;
	}
	json_array_foreach(nodes, i, n) {
		const char *id = jstr(n, "id", "");
		const char *st = jstr(n, "status", "");
		struct node_live *l;
		bool expired;
		if (!strcmp(st, "down"))
			continue;
		pthread_mutex_lock(&srv->hb_lock);
		l = live_of(srv, id, true); /* unknown since start: a full TTL from now */
		expired = mono_ns() - l->last_mono > srv->ttl_ns;
		pthread_mutex_unlock(&srv->hb_lock);
		if (expired && node_mark_down(srv, id, &err) < 0)
			server_log(srv, "error", "marking node %s down: %s", id, err.msg);
	}
	json_decref(nodes);
}

static void *heartbeat_main(void *arg)
{
	struct server *srv = arg;
	int64_t period = srv->ttl_ns / 4;
	if (period > 250000000)
		period = 250000000;
	if (period < 1000000)
		period = 1000000;
	pthread_mutex_lock(&srv->hb_lock);
	while (!srv->hb_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += period;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&srv->hb_cond, &srv->hb_lock, &ts);
		if (srv->hb_stop)
			break;
		pthread_mutex_unlock(&srv->hb_lock);
		heartbeat_check(srv);
		pthread_mutex_lock(&srv->hb_lock);
	}
	pthread_mutex_unlock(&srv->hb_lock);
	return NULL;
}

int heartbeat_start(struct server *srv, struct herd_err *err)
{
	int rc = -pthread_create(&srv->hb_thread, NULL, heartbeat_main, srv);
	if (rc < 0)
		return herd_errf(err, rc, "cannot start heartbeat timer: %s", strerror(-rc));
	srv->hb_running = true;
	return 0;
}

void heartbeat_stop(struct server *srv)
{
	if (!srv->hb_running)
		return;
	pthread_mutex_lock(&srv->hb_lock);
	srv->hb_stop = true;
	pthread_cond_broadcast(&srv->hb_cond);
	pthread_mutex_unlock(&srv->hb_lock);
	pthread_join(srv->hb_thread, NULL);
	srv->hb_running = false;
}
