/* client_shared: what the allocation runners share instead of making per
 * allocation (client-int.h): the node fingerprint and idle connections
 * to the server.  Before, each allocation read /proc and /sys again for
 * ${attr.*} and opened a TCP connection of its own. */
#include <stdlib.h>
#include <string.h>

#include "agent/client-int.h"
#include "common/xalloc.h"

/* Idle connections kept: about the allocations that start at once. */
#define IDLE_MAX 16

/* Called with c->shared_lock held. */
static void fp_unref_locked(struct client_fp *f)
{
	if (f && --f->refs == 0) {
		node_fingerprint_free(f->fp);
		free(f);
	}
}

void client_fp_set(struct client *c, struct node_fingerprint *fp)
{
	struct client_fp *f = xcalloc(1, sizeof(*f)), *old;

	f->fp = fp;
	f->refs = 1;   /* the client's */
	pthread_mutex_lock(&c->shared_lock);
	old = c->fp;
	c->fp = f;
	fp_unref_locked(old);
	pthread_mutex_unlock(&c->shared_lock);
}

struct client_fp *client_fp_get(struct client *c)
{
	struct client_fp *f;

	pthread_mutex_lock(&c->shared_lock);
	f = c->fp;
	if (f)
		f->refs++;
	pthread_mutex_unlock(&c->shared_lock);
	if (!f) {
		/* Before the first registration: what registration would
		 * read (less the driver.* attributes it adds). */
		struct fingerprint_opts fo = FINGERPRINT_OPTS_INIT;
		struct node_fingerprint *fp = NULL;
		struct herd_err err = { 0, "" };
		fo.data_dir = c->cfg->data_dir;
		if (node_fingerprint(&fo, &fp, &err) < 0)
			return NULL;
		pthread_mutex_lock(&c->shared_lock);
		if (!c->fp) {
			c->fp = xcalloc(1, sizeof(*c->fp));
			c->fp->fp = fp;
			c->fp->refs = 1;
			fp = NULL;
		}
		f = c->fp;
		f->refs++;
		pthread_mutex_unlock(&c->shared_lock);
		node_fingerprint_free(fp);   /* another thread was first */
	}
	return f;
}

void client_fp_put(struct client *c, struct client_fp *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&c->shared_lock);
	fp_unref_locked(f);
	pthread_mutex_unlock(&c->shared_lock);
}

void client_httpc_take(struct client *c, struct httpc *h)
{
	pthread_mutex_lock(&c->shared_lock);
	if (c->nr_idle) {
		*h = c->idle[--c->nr_idle];
		pthread_mutex_unlock(&c->shared_lock);
		/* made for the server current then, which may have failed
		 * since */
		client_httpc_point(c, h);
		return;
	}
	pthread_mutex_unlock(&c->shared_lock);
	client_httpc_init(c, h);
}

void client_httpc_give(struct client *c, struct httpc *h)
{
	bool kept = false;

	/* Back to the client's settings: a taker may have changed them. */
	h->timeout_ms = HTTPC_DEFAULT_TIMEOUT_MS;
	h->abort_cb = NULL;
	h->abort_arg = NULL;
	pthread_mutex_lock(&c->shared_lock);
	/* Its address may be of a server that failed since: the next taker
	 * points it at the current one. */
	if (c->nr_idle < IDLE_MAX) {
		ALLOC_GROW(c->idle, c->nr_idle + 1, c->alloc_idle);
		c->idle[c->nr_idle++] = *h;
		kept = true;
	}
	pthread_mutex_unlock(&c->shared_lock);
	if (!kept)
		httpc_release(h);
	memset(h, 0, sizeof(*h));
}

void client_shared_release(struct client *c)
{
	for (size_t i = 0; i < c->nr_idle; i++)
		httpc_release(&c->idle[i]);
	free(c->idle);
	c->idle = NULL;
	c->nr_idle = c->alloc_idle = 0;
	if (c->fp) {
		fp_unref_locked(c->fp);
		c->fp = NULL;
	}
	json_decref(c->jobs);
	json_decref(c->jobs_order);
	c->jobs = c->jobs_order = NULL;
}
