/* gpu_watch: who uses how much GPU memory, and the memory limit of
 * timeslice shares (client-int.h; docs/gpu-sharing.md "GPU memory per
 * task").
 *
 * One thread of the client, only where there are GPUs, wakes every
 * gpu { stats_period }.  A pass samples every device (the compute
 * processes NVML lists, with their memory), takes the running tasks that
 * hold GPUs (the allocation's devices and the driver state of each task,
 * under the runner's lock, nothing written), and gives each GPU process to
 * the task whose driver owns it (driver_ops.owns over driver_proc_read:
 * the process's lineage, session and cgroups); the rest is foreign.  The
 * result is kept for the heartbeat (each device's task_memory and
 * foreign_memory_mib) and the client's stats route.  Then, for each task
 * with a memory share of a timeslice GPU, gpu_share_step says whether to
 * act: a task event (warn), or a kill that the task's runner carries out
 * in its wait loop (gpu_watch_kill_poll), which counts as a failure for
 * the restart policy.
 *
 * Locks: gpu_lock while sampling, runners_lock then each runner's lock
 * while collecting tasks, the watch's own lock around the result; never
 * two of these groups at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client-int.h"
#include "agent/gpu_share.h"
#include "agent/log.h"
#include "common/xalloc.h"

#define TASK_NAME_MAX 128
#define ALLOC_ID_MAX 64

/* A process owner found in this pass (-1: foreign). */
struct gw_seen {
	pid_t pid;
	int owner;
};

/* One task's use of one device. */
struct gw_use {
	char alloc_id[ALLOC_ID_MAX];
	char task[TASK_NAME_MAX];
	size_t dev;                   /* index into c->gpus->devs */
	int64_t used_mib;
	int64_t share_mib;            /* its memory ask of the device; 0: none (or whole) */
	struct gpu_share_track track;
};

/* A running task that holds GPUs, as one pass saw it. */
struct gw_task {
	char alloc_id[ALLOC_ID_MAX];
	char task[TASK_NAME_MAX];
	const struct driver_ops *ops;
	struct driver_state state;
};

/* What one pass decided to do to a task. */
struct gw_action {
	char alloc_id[ALLOC_ID_MAX];
	char task[TASK_NAME_MAX];
	char why[192];                /* "GPU-... 2.9 GiB of 2 GiB" */
};

struct gpu_watch {
	struct client *c;
	pthread_t thread;
	struct gpu_stats *stats;      /* per device: the thread's own samples */
	bool *checked;                /* per device: a timeslice whole GPU */
	bool *sampled;
	pthread_mutex_t lock;         /* what follows */
	struct gw_use *uses;
	size_t nr_uses, alloc_uses;
	int64_t *foreign_mib;         /* per device; -1: not sampled */
};

/* The index of the device with uuid id, or (size_t)-1. */
static size_t device_index(const struct client *c, const char *id)
{
	for (size_t i = 0; i < c->gpus->nr_devs; i++)
		if (!strcmp(c->gpus->devs[i].uuid, id))
			return i;
	return (size_t)-1;
}

static struct gw_use *use_of(struct gw_use *v, size_t n, const char *alloc_id, const char *task,
			     size_t dev)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].dev == dev && !strcmp(v[i].alloc_id, alloc_id) && !strcmp(v[i].task, task))
			return &v[i];
	return NULL;
}

static struct gw_use *add_use(struct gw_use **v, size_t *n, size_t *alloc, const char *alloc_id,
			      const char *task, size_t dev, int64_t share_mib)
{
	struct gw_use *u;
	ALLOC_GROW(*v, *n + 1, *alloc);
	u = &(*v)[(*n)++];
	memset(u, 0, sizeof(*u));
	snprintf(u->alloc_id, sizeof(u->alloc_id), "%s", alloc_id);
	snprintf(u->task, sizeof(u->task), "%s", task);
	u->dev = dev;
	u->share_mib = share_mib;
	return u;
}

/* The running tasks that hold GPUs, each with a use (at 0) per device it
 * holds.  Reads the allocations (never replaced) without a lock, the
 * tasks' states under their runner's. */
static void collect_tasks(struct gpu_watch *w, struct gw_task **tasks, size_t *ntasks,
			  struct gw_use **uses, size_t *nuses, size_t *auses)
{
	struct client *c = w->c;
	size_t atasks = 0;

	pthread_mutex_lock(&c->runners_lock);
	for (size_t i = 0; i < c->nr_runners; i++) {
		struct alloc_runner *ar = c->runners[i];
		const json_t *devs = json_object_get(json_object_get(ar->alloc, "resources"),
						     "devices");
		if (!json_array_size(devs))
			continue;
		pthread_mutex_lock(&ar->lock);
		for (size_t t = 0; t < ar->ntasks; t++) {
			struct task_runner *tr = &ar->tasks[t];
			const struct driver_ops *ops = driver_find(tr->task->driver);
			const json_t *d;
			size_t k;
			if (!tr->handle || strcmp(tr->state, "running") || !ops || !ops->owns)
				continue;
			ALLOC_GROW(*tasks, *ntasks + 1, atasks);
			struct gw_task *gt = &(*tasks)[(*ntasks)++];
			snprintf(gt->alloc_id, sizeof(gt->alloc_id), "%s", ar->id);
			snprintf(gt->task, sizeof(gt->task), "%s", tr->task->name);
			gt->ops = ops;
			gt->state = *driver_handle_state(tr->handle);
			json_array_foreach(devs, k, d) {
				const char *id = json_string_value(json_object_get(d, "id"));
				size_t dev = id ? device_index(c, id) : (size_t)-1;
				bool whole = json_is_true(json_object_get(d, "whole"));
				if (dev == (size_t)-1 || !alloc_device_of_task(d, tr->task->name))
					continue;
				add_use(uses, nuses, auses, ar->id, tr->task->name, dev,
					whole ? 0 : json_integer_value(json_object_get(d, "memory_mib")));
			}
		}
		pthread_mutex_unlock(&ar->lock);
	}
	pthread_mutex_unlock(&c->runners_lock);
}

/* The task of tasks that owns process pid, or -1 (foreign, or gone). */
static int owner_of(const struct gw_task *tasks, size_t n, pid_t pid)
{
	struct driver_proc p;
	if (!n || driver_proc_read(NULL, pid, &p) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (tasks[i].ops->owns(&tasks[i].state, &p))
			return (int)i;
	return -1;
}

/* The owner of every process of every device sampled, at most once per
 * pid (a process may use several GPUs). */
static void attribute(struct gpu_watch *w, const struct gw_task *tasks, size_t ntasks,
		      struct gw_use **uses, size_t *nuses, size_t *auses, int64_t *foreign)
{
	struct gw_seen seen[4 * GPU_STATS_MAX_PROCS];
	size_t nseen = 0;

	for (size_t d = 0; d < w->c->gpus->nr_devs; d++) {
		const struct gpu_stats *s = &w->stats[d];
		foreign[d] = w->sampled[d] ? 0 : -1;
		if (!w->sampled[d])
			continue;
		for (size_t i = 0; i < s->nr_procs; i++) {
			int64_t mib = s->procs[i].memory_mib > 0 ? s->procs[i].memory_mib : 0;
			pid_t pid = (pid_t)s->procs[i].pid;
			int owner = -2;
			for (size_t k = 0; k < nseen && owner == -2; k++)
				if (seen[k].pid == pid)
					owner = seen[k].owner;
			if (owner == -2) {
				owner = owner_of(tasks, ntasks, pid);
				if (nseen < sizeof(seen) / sizeof(seen[0]))
					seen[nseen++] = (struct gw_seen){ pid, owner };
			}
			if (owner < 0) {
				foreign[d] += mib;
				continue;
			}
			struct gw_use *u = use_of(*uses, *nuses, tasks[owner].alloc_id,
						  tasks[owner].task, d);
			/* a process on a device its task does not hold: shown,
			 * with no share to check */
			if (!u)
				u = add_use(uses, nuses, auses, tasks[owner].alloc_id,
					    tasks[owner].task, d, 0);
			u->used_mib += mib;
		}
	}
}

/* Makes uses the current result, carrying each task's track over from
 * the last pass, and steps the over-share rule; the actions due go into
 * *acts (*nacts of them). */
static void publish(struct gpu_watch *w, struct gw_use *uses, size_t nuses, size_t auses,
		    const int64_t *foreign, struct gw_action **acts, size_t *nacts)
{
	const struct agent_config *cfg = w->c->cfg;
	size_t aacts = 0;

	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < nuses; i++) {
		struct gw_use *u = &uses[i];
		const struct gw_use *old = use_of(w->uses, w->nr_uses, u->alloc_id, u->task, u->dev);
		char used[32], share[32];
		if (old)
			u->track = old->track;
		if (cfg->gpu.timeslice_memory_limit == AGENT_GPU_MEMORY_OFF || !w->checked[u->dev])
			continue;
		if (gpu_share_step(&u->track, u->used_mib, u->share_mib,
				   cfg->gpu.timeslice_memory_grace) != GPU_SHARE_ACT)
			continue;
		ALLOC_GROW(*acts, *nacts + 1, aacts);
		struct gw_action *a = &(*acts)[(*nacts)++];
		snprintf(a->alloc_id, sizeof(a->alloc_id), "%s", u->alloc_id);
		snprintf(a->task, sizeof(a->task), "%s", u->task);
		snprintf(a->why, sizeof(a->why), "%s %s of %s", w->c->gpus->devs[u->dev].uuid,
			 gpu_share_mib_text(u->used_mib, used, sizeof(used)),
			 gpu_share_mib_text(u->share_mib, share, sizeof(share)));
	}
	free(w->uses);
	w->uses = uses;
	w->nr_uses = nuses;
	w->alloc_uses = auses;
	memcpy(w->foreign_mib, foreign, w->c->gpus->nr_devs * sizeof(*foreign));
	pthread_mutex_unlock(&w->lock);
}

/* Warns, or has the runner kill, the task of a. */
static void act(struct gpu_watch *w, const struct gw_action *a)
{
	bool kill = w->c->cfg->gpu.timeslice_memory_limit == AGENT_GPU_MEMORY_KILL;
	struct alloc_runner *ar = client_runner_hold(w->c, a->alloc_id);

	if (!ar)
		return;
	for (size_t i = 0; i < ar->ntasks; i++) {
		struct task_runner *tr = &ar->tasks[i];
		if (strcmp(tr->task->name, a->task))
			continue;
		log_warn("client: alloc %.8s: task %s: GPU memory over its share: %s%s", ar->id,
			 a->task, a->why, kill ? ": killing it" : "");
		task_event(tr, "GPU Memory Exceeded", "GPU memory over its share: %s%s", a->why,
			   kill ? "; killing the task" : "");
		if (kill) {
			pthread_mutex_lock(&ar->lock);
			snprintf(tr->gpu_kill_why, sizeof(tr->gpu_kill_why), "%s", a->why);
			atomic_store(&tr->gpu_kill, true);
			pthread_mutex_unlock(&ar->lock);
		}
	}
	client_runner_release(ar);
}

static void pass(struct gpu_watch *w)
{
	struct client *c = w->c;
	size_t nd = c->gpus->nr_devs, ntasks = 0, nuses = 0, auses = 0, nacts = 0;
	struct gw_task *tasks = NULL;
	struct gw_use *uses = NULL;
	struct gw_action *acts = NULL;
	int64_t *foreign = xcalloc(nd, sizeof(*foreign));

	pthread_mutex_lock(&c->gpu_lock);
	for (size_t d = 0; d < nd; d++) {
		const struct gpu_device *dev = &c->gpus->devs[d];
		w->sampled[d] = gpu_host_sample(c->gpus, d, &w->stats[d], NULL) == 0;
		/* whole GPUs are the task's alone, MIG slices and MPS shares
		 * have limits of their own: only timeslice shares are checked */
		w->checked[d] = dev->mig_index < 0 &&
				agent_config_gpu_share(c->cfg, dev).sharing == SCHED_TIMESLICE;
	}
	pthread_mutex_unlock(&c->gpu_lock);
	collect_tasks(w, &tasks, &ntasks, &uses, &nuses, &auses);
	attribute(w, tasks, ntasks, &uses, &nuses, &auses, foreign);
	publish(w, uses, nuses, auses, foreign, &acts, &nacts);
	for (size_t i = 0; i < nacts; i++)
		act(w, &acts[i]);
	free(acts);
	free(tasks);
	free(foreign);
}

static void *watch_main(void *arg)
{
	struct gpu_watch *w = arg;
	int64_t period = w->c->cfg->gpu.nvml.stats_period_ns;

	if (period <= 0)
		period = 10LL * 1000000000LL;
	do
		pass(w);
	while (!client_sleep(w->c, period));
	return NULL;
}

struct gpu_watch *gpu_watch_start(struct client *c)
{
	struct gpu_watch *w;
	size_t nd = c->gpus ? c->gpus->nr_devs : 0;

	if (!nd)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->c = c;
	w->stats = xcalloc(nd, sizeof(*w->stats));
	w->checked = xcalloc(nd, sizeof(*w->checked));
	w->sampled = xcalloc(nd, sizeof(*w->sampled));
	w->foreign_mib = xmalloc(nd * sizeof(*w->foreign_mib));
	for (size_t d = 0; d < nd; d++)
		w->foreign_mib[d] = -1;
	pthread_mutex_init(&w->lock, NULL);
	if (pthread_create(&w->thread, NULL, watch_main, w)) {
		log_warn("client: cannot start the GPU memory watch: GPU memory is not reported "
			 "per task nor limited");
		gpu_watch_free(w);
		return NULL;
	}
	return w;
}

void gpu_watch_free(struct gpu_watch *w)
{
	if (!w)
		return;
	pthread_mutex_destroy(&w->lock);
	free(w->uses);
	free(w->foreign_mib);
	free(w->sampled);
	free(w->checked);
	free(w->stats);
	free(w);
}

void gpu_watch_join(struct gpu_watch *w)
{
	if (w)
		pthread_join(w->thread, NULL);
}

void gpu_watch_decorate(struct gpu_watch *w, size_t dev, json_t *stats)
{
	json_t *tasks;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->foreign_mib[dev] >= 0) {
		tasks = json_array();
		for (size_t i = 0; i < w->nr_uses; i++)
			if (w->uses[i].dev == dev)
				json_array_append_new(tasks, json_pack("{s:s, s:s, s:I}",
					"alloc_id", w->uses[i].alloc_id, "task", w->uses[i].task,
					"memory_mib", (json_int_t)w->uses[i].used_mib));
		json_object_set_new(stats, "task_memory", tasks);
		json_object_set_new(stats, "foreign_memory_mib", json_integer(w->foreign_mib[dev]));
	}
	pthread_mutex_unlock(&w->lock);
}

json_t *client_task_gpu_memory(struct client *c, const char *alloc_id, const char *task)
{
	struct gpu_watch *w = c->gw;
	json_t *out = NULL;

	if (!w)
		return NULL;
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->nr_uses; i++) {
		const struct gw_use *u = &w->uses[i];
		json_t *o;
		if (strcmp(u->alloc_id, alloc_id) || strcmp(u->task, task))
			continue;
		o = json_pack("{s:s, s:I}", "device", c->gpus->devs[u->dev].uuid,
			      "memory_mib", (json_int_t)u->used_mib);
		if (u->share_mib > 0)
			json_object_set_new(o, "share_mib", json_integer(u->share_mib));
		if (!out)
			out = json_array();
		json_array_append_new(out, o);
	}
	pthread_mutex_unlock(&w->lock);
	return out;
}

bool gpu_watch_kill_poll(struct task_runner *tr, char *why, size_t size)
{
	if (!atomic_load_explicit(&tr->gpu_kill, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&tr->ar->lock);
	atomic_store(&tr->gpu_kill, false);
	snprintf(why, size, "%s", tr->gpu_kill_why);
	pthread_mutex_unlock(&tr->ar->lock);
	return true;
}
