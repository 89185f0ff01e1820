/* heartbeat: registration and heartbeats (client.h).  A heartbeat goes out
 * every TTL/2; a 404 means the server does not know the node (its state
 * was lost, or it marked us gone and collected us): register again.  A
 * server that does not answer (or answers 5xx) hands the client on to the
 * next of client { servers } at once (client_server_failed); only once
 * every server failed does it retry with a backoff capped at 2 s, so that
 * agents are back within a moment of a server restart or a failover. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client-int.h"
#include "agent/log.h"
#include "agent/server_list.h"
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

void client_heartbeat_soon(struct client *c)
{
	pthread_mutex_lock(&c->lock);
	c->heartbeat_soon = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* client_sleep between heartbeats, cut short by client_heartbeat_soon.
 * Returns true when the client is stopping. */
static bool heartbeat_sleep(struct client *c, int64_t ns)
{
	struct timespec until = deadline_after(CLOCK_REALTIME, ns);
	bool stop;

	pthread_mutex_lock(&c->lock);
	while (!c->shutting_down && !c->heartbeat_soon)
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT)
			break;
	c->heartbeat_soon = false;
	stop = c->shutting_down;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

uint64_t client_httpc_point(struct client *c, struct httpc *h)
{
	char addr[SERVER_ADDR_MAX];
	uint64_t gen = server_list_current(c->servers, addr, sizeof(addr));

	/* curl keeps a connection per host: the same address reuses it */
	httpc_set_addr(h, addr);
	h->local = c->local_server && !strcmp(addr, c->local_server) ? c->local_transport : NULL;
	return gen;
}

bool client_server_failed(struct client *c, uint64_t gen, const char *why)
{
	struct server_move mv;

	server_list_failed(c->servers, gen, &mv);
	/* During an outage of every server the moves go on quietly: one
	 * line said it. */
	if (mv.moved && !mv.in_outage)
		log_warn("client: server %s unreachable (%s); using %s", mv.from, why, mv.to);
	if (mv.first_all_failed) {
		if (server_list_size(c->servers) == 1)
			log_warn("client: server %s unreachable (%s); tasks keep running, retrying",
				 mv.from, why);
		else
			log_warn("client: no server reachable (%s); tasks keep running, retrying",
				 why);
	}
	return mv.all_failed;
}

void client_server_answered(struct client *c, uint64_t gen)
{
	char addr[SERVER_ADDR_MAX];
	bool refused;

	client_contact_note(c);
	pthread_mutex_lock(&c->lock);
	refused = c->server_down_logged;
	c->server_down_logged = false;
	pthread_mutex_unlock(&c->lock);
	if (server_list_answered(c->servers, gen) || refused) {
		server_list_current(c->servers, addr, sizeof(addr));
		log_info("client: server %s reachable again", addr);
	}
}

void client_server_refused(struct client *c, const char *why)
{
	bool logged;

	pthread_mutex_lock(&c->lock);
	logged = c->server_down_logged;
	c->server_down_logged = true;
	pthread_mutex_unlock(&c->lock);
	if (!logged)
		log_warn("client: the server refused this node (%s); retrying", why);
}

void client_httpc_init(struct client *c, struct httpc *h)
{
	const char *token = c->cfg->client.token;
	char addr[SERVER_ADDR_MAX];

	server_list_current(c->servers, addr, sizeof(addr));
	/* TLS from the agent's tls block, never the environment */
	httpc_init_tls(h, addr, &c->cfg->tls.client);
	client_httpc_point(c, h);
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
	/* A server that vanished (no refusal, packets dropped) costs this
	 * much before the next one is tried: well under the TTL. */
	h.connect_timeout_ms = 2000;
	for (;;) {
		struct herd_err err = { 0, "" };
		struct httpc_response r = { 0 };
		uint64_t gen = client_httpc_point(c, &h);
		int64_t ttl;
		bool registered;
		long status = 0;
		int rc;

		pthread_mutex_lock(&c->lock);
		registered = c->registered;
		ttl = c->heartbeat_ttl_ns;
		pthread_mutex_unlock(&c->lock);

		if (!registered) {
			rc = client_register(c, &h, &status, &err);
			if (rc < 0) {
				r.status = status;
				if (!client_server_failure(&r))
					client_server_refused(c, err.msg);
				else if (!client_server_failed(c, gen, err.msg))
					continue;   /* the next server, at once */
				if (client_sleep(c, backoff))
					break;
				backoff = backoff * 2 > 2000000000LL ? 2000000000LL : backoff * 2;
				continue;
			}
			client_server_answered(c, gen);
			backoff = 100 * 1000000LL;
			log_info("client: node registered%s (id %s, heartbeat ttl %llds)",
				 was_registered ? " again" : "", c->node_id,
				 (long long)(c->heartbeat_ttl_ns / 1000000000LL));
			was_registered = true;
			if (heartbeat_sleep(c, c->heartbeat_ttl_ns / 2))
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
			client_server_answered(c, gen);
			backoff = 100 * 1000000LL;
			if (t > 0) {
				pthread_mutex_lock(&c->lock);
				c->heartbeat_ttl_ns = ttl = t;
				pthread_mutex_unlock(&c->lock);
			}
			httpc_response_release(&r);
			if (heartbeat_sleep(c, ttl / 2))
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
		if (client_server_failure(&r)) {
			/* a heartbeat must not wait out a backoff while another
			 * server may take it: the TTL runs */
			bool all = client_server_failed(c, gen, err.msg);
			httpc_response_release(&r);
			if (!all)
				continue;
		} else {
			log_warn("client: heartbeat: %s", err.msg);
			httpc_response_release(&r);
		}
		if (client_sleep(c, backoff))
			break;
		backoff = backoff * 2 > 2000000000LL ? 2000000000LL : backoff * 2;
	}
	httpc_release(&h);
	return NULL;
}
