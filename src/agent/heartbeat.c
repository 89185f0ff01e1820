/* heartbeat: registration and heartbeats (client.h).  A heartbeat goes out
 * every TTL/2; a 404 means the server does not know the node (its state
 * was lost, or it marked us gone and collected us): register again.  While
 * no server answers, retry with a backoff capped at 2 s, so that agents are
 * back within a moment of a server restart. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "common/units.h"
#include "common/xalloc.h"

int64_t now_unix_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

bool client_sleep(struct client *c, int64_t ns)
{
	struct timespec until = deadline_after(CLOCK_REALTIME, ns);
	bool stop;

	pthread_mutex_lock(&c->lock);
	while (!c->shutting_down)
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT)
			break;
	stop = c->shutting_down;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

void client_server_reachable(struct client *c, bool ok, const char *why)
{
	pthread_mutex_lock(&c->lock);
	if (!ok && !c->server_down_logged) {
		c->server_down_logged = true;
		pthread_mutex_unlock(&c->lock);
		log_warn("client: server %s unreachable (%s); tasks keep running, retrying",
			 c->server_addr, why);
		return;
	}
	if (ok && c->server_down_logged) {
		c->server_down_logged = false;
		pthread_mutex_unlock(&c->lock);
		log_info("client: server %s reachable again", c->server_addr);
		return;
	}
	pthread_mutex_unlock(&c->lock);
}

static bool is_transport_error(int rc, const struct httpc_response *r)
{
	return r->status == 0 || rc == -ECONNREFUSED || rc == -ETIMEDOUT;
}

void client_httpc_init(struct client *c, struct httpc *h)
{
	const char *token = c->cfg->client.token;

	/* TLS from the agent's tls block, never the environment */
	httpc_init_tls(h, c->server_addr, &c->cfg->tls.client);
	h->local = c->local_transport;
	if (token && *token) {
		free(h->token);
		h->token = xstrdup(token);
	}
}

void *client_heartbeat_main(void *arg)
{
	struct client *c = arg;
	struct httpc h;
	int64_t backoff = 100 * 1000000LL;
	bool was_registered = false;

	client_httpc_init(c, &h);
	h.timeout_ms = 5000;
	for (;;) {
		struct herd_err err = { 0, "" };
		struct httpc_response r = { 0 };
		int64_t ttl;
		bool registered;
		int rc;

		pthread_mutex_lock(&c->lock);
		registered = c->registered;
		ttl = c->heartbeat_ttl_ns;
		pthread_mutex_unlock(&c->lock);

		if (!registered) {
			rc = client_register(c, &h, &err);
			if (rc < 0) {
				client_server_reachable(c, false, err.msg);
				if (client_sleep(c, backoff))
					break;
				backoff = backoff * 2 > 2000000000LL ? 2000000000LL : backoff * 2;
				continue;
			}
			client_server_reachable(c, true, NULL);
			backoff = 100 * 1000000LL;
			log_info("client: node registered%s (id %s, heartbeat ttl %llds)",
				 was_registered ? " again" : "", c->node_id,
				 (long long)(c->heartbeat_ttl_ns / 1000000000LL));
			was_registered = true;
			if (client_sleep(c, c->heartbeat_ttl_ns / 2))
				break;
			continue;
		}

		json_t *body = json_object();
		char path[128];
		json_object_set_new(body, "devices", client_devices_heartbeat(c));
		snprintf(path, sizeof(path), "/v1/node/%s/heartbeat", c->node_id);
		rc = httpc_request(&h, "PUT", path, body, &r, &err);
		json_decref(body);
		if (rc == 0) {
			int64_t t = json_integer_value(json_object_get(r.body, "heartbeat_ttl"));
			client_server_reachable(c, true, NULL);
			backoff = 100 * 1000000LL;
			if (t > 0) {
				pthread_mutex_lock(&c->lock);
				c->heartbeat_ttl_ns = ttl = t;
				pthread_mutex_unlock(&c->lock);
			}
			httpc_response_release(&r);
			if (client_sleep(c, ttl / 2))
				break;
			continue;
		}
		if (r.status == 404) {
			log_info("client: the server does not know this node: registering again");
			pthread_mutex_lock(&c->lock);
			c->registered = false;
			pthread_mutex_unlock(&c->lock);
			httpc_response_release(&r);
			continue;
		}
		if (is_transport_error(rc, &r))
			client_server_reachable(c, false, err.msg);
		else
			log_warn("client: heartbeat: %s", err.msg);
		httpc_response_release(&r);
		if (client_sleep(c, backoff))
			break;
		backoff = backoff * 2 > 2000000000LL ? 2000000000LL : backoff * 2;
	}
	httpc_release(&h);
	return NULL;
}
