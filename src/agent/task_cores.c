/* task_cores: where a task starting now runs (cores.h), from its
 * allocation, the cores the node's other allocations hold, the cores this
 * agent may use and the machine's real NUMA layout. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client-int.h"
#include "agent/cores.h"
#include "agent/fingerprint-int.h"
#include "agent/log.h"
#include "common/xalloc.h"
#include "drivers/docker.h"

/* The cores the tasks of the node's allocations hold: those of every
 * runner whose work is not over (a terminal allocation's runner is done
 * once its tasks have ended). */
static void held_cores(struct client *c, struct cpulist *held)
{
	*held = (struct cpulist)CPULIST_INIT;
	if (!atomic_load_explicit(&c->nr_core_runners, memory_order_relaxed))
		return;   /* the usual case: no lock taken at each task start */
	pthread_mutex_lock(&c->runners_lock);
	for (size_t i = 0; i < c->nr_runners; i++) {
		struct alloc_runner *ar = c->runners[i];
		bool done;
		if (!ar->holds_cores)
			continue;
		pthread_mutex_lock(&ar->lock);
		done = ar->done;
		pthread_mutex_unlock(&ar->lock);
		if (!done)
			cores_of_alloc(ar->alloc, held);
	}
	pthread_mutex_unlock(&c->runners_lock);
}

/* The cores this process may run on (and so pin its tasks to). */
static void usable_cores(struct cpulist *out)
{
	struct cpulist set = CPULIST_INIT;
	if (sched_getaffinity(0, sizeof(set.w), (cpu_set_t *)(void *)set.w) < 0) {
		/* cannot tell: every online core */
		struct node_core *real = NULL;
		size_t n = 0;
		fp_read_cores("", 0, &real, &n);
		for (size_t i = 0; i < n; i++)
			cpulist_add(&set, real[i].id);
		free(real);
	}
	*out = set;
}

void task_cores_plan(struct task_runner *tr, struct cores_plan *p)
{
	struct alloc_runner *ar = tr->ar;
	struct cpulist want, usable, held;
	struct node_core *real = NULL;
	size_t nreal = 0;
	bool reserved = cores_of_task(ar->alloc, tr->task->name, &want);

	if (reserved) {
		held = (struct cpulist)CPULIST_INIT;   /* not needed for its own cores */
	} else {
		held_cores(ar->c, &held);
		/* nothing held on the node (the usual case): the task keeps the
		 * agent's mask, with no syscall and no sysfs read per start */
		if (cpulist_empty(&held)) {
			memset(p, 0, sizeof(*p));
			return;
		}
	}
	usable_cores(&usable);
	/* the machine's own layout, also under a simulated one: memory nodes
	 * must exist */
	fp_read_cores("", 0, &real, &nreal);
	cores_plan(reserved ? &want : NULL, &usable, &held, real, nreal, p);
	free(real);
	if (p->event)
		task_event(tr, reserved ? "Cores Not Pinned" : "Shared Cores", "%s", p->event);
}

/* The driver states of the running tasks without cores of their own, into
 * *out (the caller frees), their count returned. */
static size_t shared_tasks(struct client *c, struct driver_state **out)
{
	struct driver_state *v = NULL;
	size_t n = 0, alloc = 0;
	pthread_mutex_lock(&c->runners_lock);
	for (size_t i = 0; i < c->nr_runners; i++) {
		struct alloc_runner *ar = c->runners[i];
		pthread_mutex_lock(&ar->lock);
		for (size_t k = 0; !ar->done && k < ar->ntasks; k++) {
			struct task_runner *tr = &ar->tasks[k];
			struct cpulist own;
			if (!tr->handle || strcmp(tr->state, "running") ||
			    cores_of_task(ar->alloc, tr->task->name, &own))
				continue;
			ALLOC_GROW(v, n + 1, alloc);
			v[n++] = *driver_handle_state(tr->handle);
		}
		pthread_mutex_unlock(&ar->lock);
	}
	pthread_mutex_unlock(&c->runners_lock);
	*out = v;
	return n;
}

void client_shared_cores_update(struct client *c)
{
	struct cpulist usable, held, taken;
	struct driver_env denv;
	struct docker_config dc;
	const char *caps[TASK_MAX_CAPS];
	struct driver_state *tasks = NULL;
	size_t n = shared_tasks(c, &tasks);
	char *cpus = NULL;

	if (!n)
		return;
	usable_cores(&usable);
	held_cores(c, &held);
	taken = held;
	cpulist_and(&taken, &usable);
	cpulist_andnot(&usable, &held);
	/* as cores_plan: nothing held, or nothing left, is every core */
	if (!cpulist_empty(&taken) && !cpulist_empty(&usable))
		cpus = cpulist_str(&usable);
	task_driver_env(c, &denv, &dc, caps);
	for (size_t i = 0; i < n; i++) {
		const struct driver_ops *d = driver_find(tasks[i].driver);
		struct herd_err err = { 0, "" };
		/* a task that ended meanwhile has nothing to move */
		if (d && d->set_cores) {
			int rc = d->set_cores(&denv, &tasks[i], cpus, &err);
			if (rc < 0 && rc != -ESRCH)
				log_warn("client: shared cores (%s) of task pid %d: %s",
					 cpus ? cpus : "all", (int)tasks[i].task_pid, err.msg);
		}
	}
	free(tasks);
	free(cpus);
}
