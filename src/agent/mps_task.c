/* mps_task: the GPU shares of a task (taskenv's gpu_shares) from its
 * allocation, this node's sharing configuration and the MPS daemons. */
#include <errno.h>
#include <string.h>

#include "agent/client-int.h"
#include "agent/mps.h"
#include "common/xalloc.h"

/* The sharing of device id on this node; exclusive when not found (a GPU
 * that went away: the task then gets visibility only). */
static struct agent_gpu_share device_share(struct client *c, const char *id)
{
	struct agent_gpu_share sh = { SCHED_EXCLUSIVE, 1 };
	pthread_mutex_lock(&c->gpu_lock);
	for (size_t i = 0; c->gpus && i < c->gpus->nr_devs; i++)
		if (!strcmp(c->gpus->devs[i].uuid, id))
			sh = agent_config_gpu_share(c->cfg, &c->gpus->devs[i]);
	pthread_mutex_unlock(&c->gpu_lock);
	return sh;
}

int client_gpu_shares(struct client *c, const json_t *alloc, const char *task,
		      struct taskenv_gpu_share **out, size_t *n, struct herd_err *err)
{
	const json_t *devs = json_object_get(json_object_get(alloc, "resources"), "devices");
	struct taskenv_gpu_share *v = xcalloc(json_array_size(devs) + 1, sizeof(*v));
	size_t i, k = 0;
	json_t *d;

	/* Same order and filter as task_gpu_ids. */
	json_array_foreach(devs, i, d) {
		const char *id = json_string_value(json_object_get(d, "id"));
		struct taskenv_gpu_share *sh = &v[k];
		if (!id || !alloc_device_of_task(d, task))
			continue;
		k++;
		sh->sharing = device_share(c, id).sharing;
		sh->whole = json_is_true(json_object_get(d, "whole"));
		sh->compute_milli = (int32_t)json_integer_value(json_object_get(d, "compute_milli"));
		sh->memory_mib = json_integer_value(json_object_get(d, "memory_mib"));
		if (sh->sharing != SCHED_MPS || sh->whole)
			continue;
		int rc = mps_dirs(c->mps, id, &sh->mps_pipe_dir, &sh->mps_log_dir);
		if (rc < 0) {
			free(v);
			return herd_errf(err, rc == -EAGAIN ? -EAGAIN : -EINVAL,
					 rc == -EAGAIN ? "GPU %s: its MPS control daemon is not running "
							 "(restarting); a task started now would escape "
							 "its share"
						       : "GPU %s is in mps mode but has no MPS control "
							 "daemon", id);
		}
	}
	*out = v;
	*n = k;
	return 0;
}
