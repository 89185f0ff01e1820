/* disconnect_stop: a group's disconnect { stop_on_client_after } on the
 * agent (docs/jobspec.md, "disconnect").
 *
 * The client notes the time of every answer of a server (heartbeats,
 * status reports, watches: client_server_answered).  An allocation of a
 * group with stop_on_client_after stops itself once no server answered for
 * that long: checked by its own task runners in the wait slices they run
 * anyway (task_runner_should_stop, every 100 ms), as time_limit.c does, so
 * no timer and no thread; a group without the block never gets here.  The
 * stop is a stop as the server's (kill_signal, kill_timeout, poststop
 * hooks); the allocation ends complete, its description says why, and the
 * report waits in the status sync until a server answers again (the
 * server, which marked the node down meanwhile, takes it over the lost it
 * recorded).  The clock is CLOCK_BOOTTIME: a machine that slept past the
 * limit stops its tasks when it wakes.  The time of the last answer lives
 * in memory only: a restarted agent counts from its own start. */
#include <stdatomic.h>
#include <time.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "common/units.h"

static int64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void client_contact_note(struct client *c)
{
	atomic_store(&c->last_contact_ns, boot_ns());
}

bool disconnect_stop_check(struct alloc_runner *ar)
{
	const struct job_disconnect *d = ar->group->disconnect;
	int64_t now, last;
	char buf[32];

	if (ar->disconnect_stopped)
		return true;
	if (!d || d->stop_on_client_after <= 0 || ar->stop_requested)
		return false;
	now = boot_ns();
	last = atomic_load(&ar->c->last_contact_ns);
	if (!last) { /* no server answered since the agent started: from now */
		int64_t none = 0;
		atomic_compare_exchange_strong(&ar->c->last_contact_ns, &none, now);
		return false;
	}
	if (now - last < d->stop_on_client_after)
		return false;
	ar->disconnect_stopped = true;
	ar->stop_requested = true;
	pthread_cond_broadcast(&ar->cond);
	log_warn("client: alloc %.8s: no server reached for %s: stopping its tasks "
		 "(disconnect { stop_on_client_after })", ar->id,
		 format_duration(d->stop_on_client_after, buf, sizeof(buf)));
	return true;
}

const char *disconnect_stop_text(struct alloc_runner *ar, char *buf, size_t size)
{
	char d[32];
	bool cut;

	pthread_mutex_lock(&ar->lock);
	cut = ar->disconnect_stopped;
	pthread_mutex_unlock(&ar->lock);
	if (!cut)
		return "stopped";
	snprintf(buf, size, "stopped: no server reached for %s",
		 format_duration(ar->group->disconnect->stop_on_client_after, d, sizeof(d)));
	return buf;
}
