/* docker_sweep: removes the containers of allocations this client no
 * longer runs (drivers/docker.h docker_gc), once after recovery and then
 * every plugin "docker" config gc { dangling_containers { period } }.
 *
 * Why: the docker driver removes a container when its task's end has been
 * seen; a container whose allocation was forgotten (agent state lost, an
 * agent killed between create and persist, an allocation GC'd while the
 * agent was down) would otherwise run or linger for ever.  "Live" means an
 * allocation with a runner in this client; a runner exists before its task
 * creates a container, so a sweep cannot race a start.
 *
 * Assumes one herd agent per Docker engine (docs/agent-config.md): the
 * containers are labelled by allocation, not by node. */
#include <string.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "common/xalloc.h"
#include "drivers/docker.h"

/* One sweep; the number removed or -errno with err. */
static int sweep(struct client *c, struct herd_err *err)
{
	struct driver_env env;
	struct docker_config dc;
	const char *caps[TASK_MAX_CAPS];
	struct driver_fingerprint fp;
	char **ids;
	size_t n;
	int rc;

	task_driver_env(c, &env, &dc, caps);
	memset(&fp, 0, sizeof(fp));
	docker_ops.fingerprint(&env, &fp);
	if (!fp.detected)
		return 0;   /* no engine: nothing of ours can run there */
	pthread_mutex_lock(&c->runners_lock);
	n = c->nr_runners;
	ids = xcalloc(n + 1, sizeof(*ids));
	for (size_t i = 0; i < n; i++)
		ids[i] = xstrdup(c->runners[i]->id);
	pthread_mutex_unlock(&c->runners_lock);
	rc = docker_gc(&dc, (const char *const *)ids, n, err);
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return rc;
}

void *client_docker_sweep_main(void *arg)
{
	struct client *c = arg;
	bool failing = false;

	do {
		struct herd_err err = { 0 };
		int rc = sweep(c, &err);
		if (rc > 0)
			log_info("client: docker: removed %d container%s of allocations this "
				 "client no longer runs", rc, rc == 1 ? "" : "s");
		if (rc < 0 && !failing)
			log_warn("client: docker: garbage collection: %s", err.msg);
		failing = rc < 0;
	} while (!client_sleep(c, c->cfg->docker.gc_period_ns));
	return NULL;
}
