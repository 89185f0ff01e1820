/* gpu_events: XID and double-bit ECC events make GPUs unhealthy
 * (client-int.h; docs/gpus.md "Health").
 *
 * One thread of the client, only where the driver reports events (not
 * WSL2, not without NVML: gpu_host_watch says -ENOTSUP and no thread
 * starts).  It waits for events a second at a time (so that it sees the
 * client stopping), and marks the devices a critical event concerns
 * unhealthy under gpu_lock, the lock every reader of a device's health
 * takes.  A device that turned unhealthy asks for a heartbeat at once
 * (client_heartbeat_soon): the server then places nothing more on it and
 * evaluates the node's system jobs, without waiting up to half a TTL.
 * Health is never given back: an XID that makes a GPU unhealthy (79,
 * fallen off the bus; 48, double-bit ECC; ...) needs a reset or a reboot,
 * after which the agent fingerprints a healthy GPU again. */
#include <errno.h>
#include <stdlib.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "common/xalloc.h"

/* How long one wait for an event lasts: the longest the thread takes to
 * see the client stopping. */
#define WAIT_MS 1000
/* After the driver failed a wait: the next try. */
#define RETRY_NS (5 * 1000000000LL)

struct gpu_events {
	struct client *c;
	pthread_t thread;
};

static bool stopping(struct client *c)
{
	bool stop;

	pthread_mutex_lock(&c->lock);
	stop = c->shutting_down;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

/* One event: the devices it makes unhealthy, logged once each event. */
static void apply(struct client *c, const struct gpu_event *ev)
{
	size_t n;

	if (!ev->critical) {
		log_info("client: gpu %zu: %s (not one that makes a GPU unhealthy)", ev->gpu,
			 ev->reason);
		return;
	}
	pthread_mutex_lock(&c->gpu_lock);
	n = gpu_host_apply_event(c->gpus, ev);
	pthread_mutex_unlock(&c->gpu_lock);
	if (!n)
		return;   /* its devices were unhealthy already */
	log_warn("client: gpu %zu: %s: %zu device%s marked unhealthy", ev->gpu, ev->reason, n,
		 n == 1 ? "" : "s");
	client_heartbeat_soon(c);
}

static void *events_main(void *arg)
{
	struct gpu_events *e = arg;
	struct client *c = e->c;
	bool failing = false;

	while (!stopping(c)) {
		struct herd_err err = { 0, "" };
		struct gpu_event ev;
		int rc = gpu_host_wait_event(c->gpus, WAIT_MS, &ev, &err);

		if (rc < 0) {
			if (!failing)
				log_warn("client: GPU events: %s; trying again every 5s", err.msg);
			failing = true;
			if (client_sleep(c, RETRY_NS))
				break;
			continue;
		}
		if (failing)
			log_info("client: GPU events: waiting again");
		failing = false;
		if (rc == 1)
			apply(c, &ev);
	}
	return NULL;
}

struct gpu_events *gpu_events_start(struct client *c)
{
	struct herd_err err = { 0, "" };
	struct gpu_events *e;
	int rc;

	if (!c->gpus || !c->gpus->nr_devs)
		return NULL;
	rc = gpu_host_watch(c->gpus, &err);
	if (rc == -ENOTSUP) {
		log_info("client: no GPU health events (%s): only a GPU that stops answering "
			 "turns unhealthy", err.msg);
		return NULL;
	}
	if (rc < 0) {
		log_warn("client: cannot watch GPU health events: %s", err.msg);
		return NULL;
	}
	e = xcalloc(1, sizeof(*e));
	e->c = c;
	if (pthread_create(&e->thread, NULL, events_main, e)) {
		log_warn("client: cannot start the GPU events thread: XIDs do not mark GPUs "
			 "unhealthy");
		free(e);
		return NULL;
	}
	return e;
}

void gpu_events_stop(struct gpu_events *e)
{
	if (!e)
		return;
	pthread_join(e->thread, NULL);
	free(e);
}
