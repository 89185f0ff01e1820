/* client: start, stop, node id, and the allocation watcher (client.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "agent/alloc_gc.h"
#include "agent/client-int.h"
#include "agent/cores.h"
#include "agent/log.h"
#include "agent/mps.h"
#include "agent/server_list.h"
#include "agent/status_sync.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define WATCH_WAIT_MS 60000

const char *client_node_id(const struct client *c)
{
	return c->node_id;
}

/* Reads <state_dir>/node-id, or makes one and keeps it (the node keeps its
 * id, and so its allocations, across restarts). */
static int load_node_id(struct client *c, struct herd_err *err)
{
	char *path = xasprintf("%s/node-id", c->cfg->client.state_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd >= 0) {
		char buf[64] = "";
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
			n--;
		if (n == 36) {
			buf[n] = '\0';
			uuid_t u;
			if (uuid_parse(buf, u) == 0) {
				memcpy(c->node_id, buf, 37);
				goto out;
			}
		}
		log_warn("client: %s does not hold a node id: making a new one", path);
	}
	{
		uuid_t u;
		char text[48];
		uuid_generate_random(u);
		uuid_unparse_lower(u, c->node_id);
		snprintf(text, sizeof(text), "%s\n", c->node_id);
		rc = state_write_file(path, text, strlen(text), err);
	}
out:
	free(path);
	return rc;
}

/* Runners are found by allocation id through c->runner_pos ({"<id>":
 * index into c->runners}, a hash table): a node that ran thousands of
 * allocations pays no linear search per change. */
static struct alloc_runner *find_runner(struct client *c, const char *id)
{
	json_t *pos = json_object_get(c->runner_pos, id);
	return pos ? c->runners[json_integer_value(pos)] : NULL;
}

static void add_runner(struct client *c, struct alloc_runner *ar)
{
	if (!c->runner_pos)
		c->runner_pos = json_object();
	ALLOC_GROW(c->runners, c->nr_runners + 1, c->alloc_runners);
	json_object_set_new(c->runner_pos, ar->id, json_integer((json_int_t)c->nr_runners));
	c->runners[c->nr_runners++] = ar;
	struct cpulist held = CPULIST_INIT;
	cores_of_alloc(ar->alloc, &held);
	ar->holds_cores = !cpulist_empty(&held);
	c->nr_core_runners += ar->holds_cores;
}

/* Removes runner i (swapping the last one into its place). */
static void remove_runner(struct client *c, size_t i)
{
	json_object_del(c->runner_pos, c->runners[i]->id);
	c->nr_core_runners -= c->runners[i]->holds_cores;
	c->runners[i] = c->runners[--c->nr_runners];
	if (i < c->nr_runners)
		json_object_set_new(c->runner_pos, c->runners[i]->id, json_integer((json_int_t)i));
}

/* Tells the server about an allocation this client will never run (it was
 * stopped before it started), with the other status reports. */
static void report_terminal(struct client *c, const char *id, const char *status,
			    const char *desc)
{
	status_sync_put(c->sync, id,
			json_pack("{s:s,s:s,s:{}}", "client_status", status, "client_description",
				  desc, "task_states"),
			NULL);
}

static void reconcile(struct client *c, json_t *allocs)
{
	size_t i;
	json_t *a;

	json_array_foreach(allocs, i, a) {
		const char *id = json_string_value(json_object_get(a, "id"));
		const char *desired = json_string_value(json_object_get(a, "desired_status"));
		const char *cs = json_string_value(json_object_get(a, "client_status"));
		struct alloc_runner *ar;
		bool live_status;

		if (!id || !desired || !cs)
			continue;
		live_status = !strcmp(cs, "pending") || !strcmp(cs, "running");
		ar = find_runner(c, id);
		if (ar) {
			if (strcmp(desired, "run")) {
				/* before the stop: its runner reads it when it stops */
				if (json_is_true(json_object_get(json_object_get(a, "desired_transition"),
								 "no_shutdown_delay")))
					shutdown_delay_skip(ar);
				alloc_runner_stop(ar);
			}
			continue;
		}
		if (!strcmp(desired, "run") && live_status) {
			ar = alloc_runner_new(c, json_incref(a));
			if (alloc_runner_start(ar) < 0) {
				alloc_runner_free(ar, false);
				continue;
			}
			add_runner(c, ar);
		} else if (live_status) {
			/* Stopped before this client ran it (or it ran on an
			 * earlier life of this node without state): done. */
			report_terminal(c, id, "complete", "stopped before it started");
		}
	}
}

void alloc_runner_finished(struct client *c, struct alloc_runner *ar)
{
	pthread_mutex_lock(&c->finished_lock);
	ALLOC_GROW(c->finished, c->nr_finished + 1, c->alloc_finished);
	c->finished[c->nr_finished++] = ar;
	pthread_mutex_unlock(&c->finished_lock);
}

/* Frees the runners whose work is over and whose last status report the
 * server took (done, nothing left to report: not dirty, and settled in the
 * status sync), so a long-lived client does not grow.  Only runners whose
 * thread ended are looked at (c->finished); the others wait there for a
 * later call.  Called with runners_lock held.  The server then lists the
 * allocation as complete or failed, which reconcile() never starts again.
 * (ar->lock is taken before the sync's lock, as report() does.) */
static void collect_runners_locked(struct client *c)
{
	const char **gone = NULL;
	struct alloc_runner **v;
	size_t n = 0, alloc = 0, nv, cap, keep = 0;

	pthread_mutex_lock(&c->finished_lock);
	v = c->finished;
	nv = c->nr_finished;
	cap = c->alloc_finished;
	c->finished = NULL;
	c->nr_finished = c->alloc_finished = 0;
	pthread_mutex_unlock(&c->finished_lock);
	for (size_t k = 0; k < nv; k++) {
		struct alloc_runner *ar = v[k];
		json_t *pos = json_object_get(c->runner_pos, ar->id);
		bool over;
		pthread_mutex_lock(&ar->lock);
		over = ar->done && !ar->dirty && !ar->detach && !ar->holds &&
		       status_sync_settled(c->sync, ar->id);
		pthread_mutex_unlock(&ar->lock);
		/* not yet among the runners (recovery adds them after they
		 * start): looked at again next time */
		if (!over || !pos || (size_t)json_integer_value(pos) >= c->nr_runners ||
		    c->runners[json_integer_value(pos)] != ar) {
			v[keep++] = ar;
			continue;
		}
		alloc_gc_client_note(c, ar);
		ALLOC_GROW(gone, n + 1, alloc);
		gone[n++] = xstrdup(ar->id);
		remove_runner(c, (size_t)json_integer_value(pos));
		alloc_runner_free(ar, false);
	}
	/* What is not over yet goes back, before the ones that finished
	 * meanwhile. */
	pthread_mutex_lock(&c->finished_lock);
	ALLOC_GROW(v, keep + c->nr_finished, cap);
	for (size_t k = 0; k < c->nr_finished; k++)
		v[keep + k] = c->finished[k];
	free(c->finished);
	c->finished = v;
	c->nr_finished += keep;
	c->alloc_finished = cap;
	pthread_mutex_unlock(&c->finished_lock);
	/* Their rows go with the status sync's next write. */
	status_sync_forget(c->sync, gone, n);
	for (size_t i = 0; i < n; i++)
		free((char *)gone[i]);
	free(gone);
}

void client_collect_runners(struct client *c)
{
	bool stopping;

	/* shutting_down is read under runners_lock: read before it, a
	 * client_stop between the read and the lock would free every
	 * runner under us */
	pthread_mutex_lock(&c->runners_lock);
	pthread_mutex_lock(&c->lock);
	stopping = c->shutting_down;
	pthread_mutex_unlock(&c->lock);
	if (!stopping)   /* else client_stop frees every runner itself */
		collect_runners_locked(c);
	pthread_mutex_unlock(&c->runners_lock);
}

struct alloc_runner *client_runner_hold(struct client *c, const char *alloc_id)
{
	struct alloc_runner *ar = NULL;
	bool stopping;

	pthread_mutex_lock(&c->runners_lock);
	pthread_mutex_lock(&c->lock);
	stopping = c->shutting_down;
	pthread_mutex_unlock(&c->lock);
	if (!stopping && (ar = find_runner(c, alloc_id))) {
		pthread_mutex_lock(&ar->lock);
		ar->holds++;
		pthread_mutex_unlock(&ar->lock);
	}
	pthread_mutex_unlock(&c->runners_lock);
	return ar;
}

void client_runner_release(struct alloc_runner *ar)
{
	/* collect_runners looks at a finished runner again at its next call
	 * (it stays on the finished list), so nothing to wake */
	pthread_mutex_lock(&ar->lock);
	ar->holds--;
	pthread_mutex_unlock(&ar->lock);
}

static int watch_should_abort(void *arg)
{
	struct client *c = arg;
	int stop;

	pthread_mutex_lock(&c->lock);
	stop = c->shutting_down;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

static void *watch_main(void *arg)
{
	struct client *c = arg;
	struct httpc h;
	uint64_t index = 0;
	char path[160];
	size_t since_at;
	int64_t backoff = 100 * 1000000LL;

	client_httpc_init(c, &h);
	h.abort_cb = watch_should_abort;
	h.abort_arg = c;
	/* ?since=<index>: only what the server changed since the last
	 * answer; include=job: new allocations come with their job version
	 * (alloc_runner_new takes it; an older server ignores the parameter
	 * and the runner fetches the job) */
	since_at = (size_t)snprintf(path, sizeof(path),
				    "/v1/node/%s/allocations?include=job&since=", c->node_id);
	for (;;) {
		struct httpc_response r = { 0 };
		struct herd_err err = { 0, "" };
		bool registered, stop;
		uint64_t gen;
		int rc;

		pthread_mutex_lock(&c->lock);
		while (!c->registered && !c->shutting_down)
			pthread_cond_wait(&c->cond, &c->lock);
		stop = c->shutting_down;
		registered = c->registered;
		pthread_mutex_unlock(&c->lock);
		if (stop)
			break;
		(void)registered;
		snprintf(path + since_at, sizeof(path) - since_at, "%llu", (unsigned long long)index);
		gen = client_httpc_point(c, &h);
		rc = httpc_get_blocking(&h, path, index, WATCH_WAIT_MS, &r, &err);
		pthread_mutex_lock(&c->lock);
		stop = c->shutting_down;
		pthread_mutex_unlock(&c->lock);
		if (stop) {
			httpc_response_release(&r);
			break;
		}
		if (rc < 0) {
			bool all = true;
			if (client_server_failure(&r))
				all = client_server_failed(c, gen, err.msg);
			else
				log_warn("client: allocations: %s", err.msg);
			/* A restarted server may count from a lower index. */
			index = 0;
			httpc_response_release(&r);
			if (!all)
				continue;   /* the next server, at once */
			if (client_sleep(c, backoff))
				break;
			backoff = backoff * 2 > 2000000000LL ? 2000000000LL : backoff * 2;
			continue;
		}
		client_server_answered(c, gen);
		backoff = 100 * 1000000LL;
		/* An index that went backwards means a new server state. */
		if (r.index < index)
			index = 0;
		else
			index = r.index;
		if (json_is_array(r.body)) {
			pthread_mutex_lock(&c->runners_lock);
			reconcile(c, r.body);
			collect_runners_locked(c);
			pthread_mutex_unlock(&c->runners_lock);
		}
		httpc_response_release(&r);
	}
	httpc_release(&h);
	return NULL;
}

/* Restarts runners for the allocations saved by an earlier client life:
 * their tasks are recovered through the driver, not started again.  One
 * that was done (every task dead) still has its state file because its
 * last status report was not known to have arrived: its runner starts no
 * task and reports that last status again. */
static void recover_allocs(struct client *c)
{
	json_t *saved = state_load_allocs(c->state);
	size_t i;
	json_t *s;

	json_array_foreach(saved, i, s) {
		json_t *alloc = json_object_get(s, "alloc");
		struct alloc_runner *ar = alloc_runner_new(c, json_incref(alloc));
		ar->recovered = true;
		ar->saved = json_incref(json_object_get(s, "tasks"));
		if (json_object_get(s, "job")) {
			json_decref(ar->job_json);
			ar->job_json = json_incref(json_object_get(s, "job"));
		}
		ar->state_saved = true;
		log_info("client: alloc %s: recovering from local state", ar->id);
		/* the status sync may collect meanwhile */
		pthread_mutex_lock(&c->runners_lock);
		if (alloc_runner_start(ar) < 0) {
			pthread_mutex_unlock(&c->runners_lock);
			alloc_runner_free(ar, true);
			continue;
		}
		add_runner(c, ar);
		pthread_mutex_unlock(&c->runners_lock);
	}
	json_decref(saved);
}

/* The collector of terminal allocations' dirs (alloc_gc.h): every dir
 * under alloc_dir but the recovered runners' is terminal.  Before the
 * watcher starts, so no new runner is missed. */
static void start_gc(struct client *c)
{
	const struct agent_config *cfg = c->cfg;
	struct alloc_gc_options o = { cfg->client.gc_interval_ns, cfg->client.gc_max_allocs,
				      cfg->client.gc_disk_usage_threshold,
				      cfg->client.gc_inode_usage_threshold };
	const char **keep = xcalloc(c->nr_runners + 1, sizeof(*keep));
	struct herd_err err = { 0, "" };
	for (size_t i = 0; i < c->nr_runners; i++)
		keep[i] = c->runners[i]->id;
	c->gc = alloc_gc_start(cfg->client.alloc_dir, &o, keep, c->nr_runners, &err);
	if (!c->gc)
		log_warn("%s: terminal allocations' dirs are kept", err.msg);
	free(keep);
}

/* One MPS control daemon per whole GPU in mps mode (mps.h), under
 * <data_dir>/mps.  Also run with no such GPU: daemons an earlier
 * configuration left are told to quit. */
static void start_mps(struct client *c)
{
	const struct agent_config *cfg = c->cfg;
	const char **uuids = xcalloc(c->gpus->nr_devs + 1, sizeof(*uuids));
	size_t n = 0;
	struct herd_err err = { 0, "" };

	for (size_t i = 0; i < c->gpus->nr_devs; i++)
		if (agent_config_gpu_share(cfg, &c->gpus->devs[i]).sharing == SCHED_MPS)
			uuids[n++] = c->gpus->devs[i].uuid;
	char *dir = xasprintf("%s/mps", cfg->data_dir);
	struct mps_options o = { .control = cfg->gpu.mps_control, .dir = dir };
	if (n || access(dir, F_OK) == 0) {
		if (mps_start(&o, uuids, n, &c->mps, &err) < 0)
			log_error("client: %s: fractions of mps GPUs cannot start", err.msg);
	}
	free(dir);
	free(uuids);
}

int client_start(const struct agent_config *cfg, const char *local_server,
		 const struct httpc_local *local_transport, const char *const *shim_argv,
		 struct client **out, struct herd_err *err)
{
	struct client *c = xcalloc(1, sizeof(*c));
	int rc;

	c->cfg = cfg;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->gpu_lock, NULL);
	pthread_mutex_init(&c->shared_lock, NULL);
	pthread_mutex_init(&c->runners_lock, NULL);
	pthread_mutex_init(&c->finished_lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->heartbeat_ttl_ns = 10LL * 1000000000LL;
	c->driver_env.shim_argv = shim_argv;
	c->driver_env.raw_exec_enabled = cfg->client.raw_exec_enabled;
	if (cfg->client.nr_servers)
		c->servers = server_list_new((const char *const *)cfg->client.servers,
					     cfg->client.nr_servers);
	else if (local_server)
		c->servers = server_list_new(&local_server, 1);
	else {
		rc = herd_errf(err, -EINVAL, "client: no server address (client { servers = [...] })");
		goto fail;
	}
	if (local_server) {
		c->local_server = xstrdup(local_server);
		c->local_transport = local_transport;
	}
	if ((rc = mkdir_p(cfg->client.state_dir, 0700)) < 0) {
		rc = herd_errf(err, rc, "client: cannot make %s: %s", cfg->client.state_dir,
			       strerror(-rc));
		goto fail;
	}
	if ((rc = mkdir_p(cfg->client.alloc_dir, 0711)) < 0) {
		rc = herd_errf(err, rc, "client: cannot make %s: %s", cfg->client.alloc_dir,
			       strerror(-rc));
		goto fail;
	}
	if ((rc = load_node_id(c, err)) < 0)
		goto fail;
	if ((rc = state_open(cfg->client.state_dir, &c->state, err)) < 0)
		goto fail;
	c->gpus = gpu_host_open(&cfg->gpu.nvml);
	if (!c->gpus->nvml_loaded)
		log_info("client: no GPUs: %s", c->gpus->reason);
	else
		log_info("client: %zu GPU device%s%s", c->gpus->nr_devs,
			 c->gpus->nr_devs == 1 ? "" : "s", c->gpus->simulated ? " (simulated)" : "");
	for (size_t i = 0; i < c->gpus->nr_warnings; i++)
		log_warn("client: gpu: %s", c->gpus->warnings[i]);
	start_mps(c);

	c->sync = status_sync_start(c);
	recover_allocs(c);
	start_gc(c);
	/* before the heartbeat, which reports what it measures */
	c->gw = gpu_watch_start(c);
	c->gev = gpu_events_start(c);
	if (pthread_create(&c->heartbeat_thread, NULL, client_heartbeat_main, c) ||
	    pthread_create(&c->watch_thread, NULL, watch_main, c)) {
		/* Thread creation only fails without resources: a broken
		 * machine; say so and give up. */
		rc = herd_errf(err, -EAGAIN, "client: cannot start threads");
		abort();
	}
	c->threads_started = true;
	/* After recover_allocs: every allocation still ours has its runner. */
	if (cfg->docker.gc_dangling &&
	    pthread_create(&c->docker_sweep_thread, NULL, client_docker_sweep_main, c) == 0)
		c->docker_sweep_started = true;
	{
		char first[SERVER_ADDR_MAX];
		size_t n = server_list_size(c->servers);
		server_list_current(c->servers, first, sizeof(first));
		log_info("client: started, node id %s, server %s%s%s", c->node_id, first,
			 n > 1 ? " (then the others of client { servers })" : "",
			 c->local_server && !strcmp(first, c->local_server)
				 ? " (in this process: no socket)" : "");
	}
	*out = c;
	return 0;
fail:
	server_list_free(c->servers);
	free(c->local_server);
	free(c);
	return rc;
}

void client_stop(struct client *c, bool stop_tasks)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->shutting_down = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (c->threads_started) {
		/* The watcher may sit in a long poll: its abort callback
		 * sees shutting_down within about a second. */
		pthread_join(c->watch_thread, NULL);
		pthread_join(c->heartbeat_thread, NULL);
	}
	/* before the runners are freed: a pass reads them */
	gpu_watch_join(c->gw);
	gpu_events_stop(c->gev);
	if (c->docker_sweep_started)
		pthread_join(c->docker_sweep_thread, NULL);
	/* The status sync may be collecting: it saw shutting_down unset
	 * just before; wait for it to finish.  Then the runners leave the
	 * list before any is stopped or joined, and without runners_lock
	 * held: a task that starts meanwhile (a poststop task of a stopping
	 * allocation) takes runners_lock for its core plan (task_cores.c), so
	 * joining under it would wait for ever.  That plan, and a late
	 * collector, find no runners. */
	pthread_mutex_lock(&c->runners_lock);
	struct alloc_runner **runners = c->runners;
	size_t nr_runners = c->nr_runners;
	c->runners = NULL;
	c->nr_runners = c->alloc_runners = 0;
	json_object_clear(c->runner_pos);
	pthread_mutex_lock(&c->finished_lock);
	c->nr_finished = 0;
	pthread_mutex_unlock(&c->finished_lock);
	pthread_mutex_unlock(&c->runners_lock);
	for (size_t i = 0; i < nr_runners; i++) {
		if (stop_tasks)   /* the agent's own shutdown: no shutdown_delay */
			alloc_runner_stop_now(runners[i]);
		alloc_runner_free(runners[i], !stop_tasks);
	}
	free(runners);
	/* After the runners: none claims a dir any more. */
	alloc_gc_stop(c->gc);
	/* After the runners: their last reports are queued by now. */
	status_sync_stop(c->sync);
	free(c->runners);
	free(c->finished);
	json_decref(c->runner_pos);
	/* After the tasks: an MPS daemon that quits takes its clients along. */
	mps_stop(c->mps);
	gpu_watch_free(c->gw);
	gpu_host_free(c->gpus);
	/* After the runners: a detached one saves its state when freed. */
	state_close(c->state);
	client_shared_release(c);
	pthread_mutex_destroy(&c->shared_lock);
	server_list_free(c->servers);
	free(c->local_server);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->runners_lock);
	pthread_mutex_destroy(&c->finished_lock);
	pthread_mutex_destroy(&c->gpu_lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}
