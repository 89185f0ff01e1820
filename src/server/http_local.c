/* http_local.c: requests from this process's own client, served without a
 * socket (http.h, http_server_local; httpc.h, struct httpc_local).
 *
 * An agent that runs the server and a client in one process (`herd agent
 * -dev`, a single-machine farm) would otherwise send every watch, status
 * report and heartbeat through curl, the loopback, libmicrohttpd and a
 * hand-off to an MHD or writer thread and back: a third of the requests a
 * batch job causes, each with four thread switches.  Here the request goes
 * through the same core as one read from the wire (http-int.h: route,
 * query, headers, blocking-query limits, ACL token), and its handler runs
 * on the caller's thread.  What differs: the body is handed over as JSON,
 * not text (copied each way, so that neither side shares an object or array
 * with the other: the server's answers hold records of the store's cache,
 * read only, and the client changes what it is given), no body-size
 * limit applies (the client's own bodies are small), and a text answer
 * (http_reply_text: GET /v1/metrics) reaches the caller as its status and
 * a NULL body, since httpc's callers read JSON only. */
#include "server/http-int.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "common/httpc.h"
#include "common/units.h"
#include "common/xalloc.h"

/* How often a waiting request asks its caller whether to stop. */
#define LOCAL_POLL_NS (NS_PER_SEC / 4)

struct http_local {
	struct httpc_local transport;
	const struct http_router *router;
	struct index_watch *watch;
	struct http_limits limits;

	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t idle;  /* ncalls reached 0 */
	unsigned ncalls;      /* calls running */
	int stopping;
};

/* A copy of v with new objects and arrays and v's own strings, numbers,
 * booleans and nulls (a reference each).  Sharing those is safe: herd
 * changes no string or number in place except in a deep copy of its own
 * (task_prepare.c), and jansson counts references atomically.  Most of a
 * record's values are strings, so this allocates far less than
 * json_deep_copy.  NULL for NULL. */
static json_t *copy_containers(json_t *v)
{
	json_t *out, *x;
	const char *key;
	size_t i, klen;

	if (!v)
		return NULL;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		out = json_object();
		json_object_keylen_foreach(v, key, klen, x)
			json_object_setn_new_nocheck(out, key, klen, copy_containers(x));
		return out;
	case JSON_ARRAY:
		out = json_array();
		json_array_foreach(v, i, x)
			json_array_append_new(out, copy_containers(x));
		return out;
	default:
		return json_incref(v);
	}
}

/* Adds the arguments of query ("a=1&b=x%20y") to st, decoded. */
static void add_query(struct http_request_state *st, const char *query)
{
	while (*query) {
		size_t len = strcspn(query, "&");
		const char *eq = memchr(query, '=', len);
		if (len) {
			size_t klen = eq ? (size_t)(eq - query) : len;
			char *key, *value = NULL;
			httpc_unescape(query, klen, false, &key);
			if (eq)
				httpc_unescape(eq + 1, len - klen - 1, false, &value);
			http_request_add_query(st, key, value);
			free(key);
			free(value);
		}
		query += len;
		if (*query == '&')
			query++;
	}
}

/* Waits until the watched index passes after, the watch is poked (when
 * st's route wakes on pokes: pokes, read before the state was looked at),
 * deadline_ns (CLOCK_MONOTONIC) comes, the caller gives up or the server
 * stops.  Returns 0, 1 when the server stops (the request is then answered
 * at once, as the server's held requests are), or -ECANCELED when the
 * caller gave up. */
static int wait_index(struct http_local *l, const struct http_request_state *st, uint64_t after,
		      uint64_t pokes, int64_t deadline_ns, int (*abort_cb)(void *), void *abort_arg)
{
	bool poked = http_request_wakes_on_poke(st);

	for (;;) {
		int64_t left = deadline_ns - mono_ns();
		int stopping;
		if (left <= 0)
			return 0;
		if (left > LOCAL_POLL_NS)
			left = LOCAL_POLL_NS;
		if ((poked ? index_watch_wait_poked(l->watch, after, pokes, left, NULL)
			   : index_watch_wait(l->watch, after, left, NULL)) == 0)
			return 0;
		if (abort_cb && abort_cb(abort_arg))
			return -ECANCELED;
		pthread_mutex_lock(&l->lock);
		stopping = l->stopping;
		pthread_mutex_unlock(&l->lock);
		if (stopping)
			return 1;
	}
}

/* Prepares, waits when the request asks to, runs; fills resp and *index
 * (the X-Herd-Index of the answer).  Returns 0 or -ECANCELED. */
static int serve(struct http_local *l, struct http_request_state *st, int (*abort_cb)(void *),
		 void *abort_arg, struct http_response *resp, uint64_t *index)
{
	int64_t deadline_ns;
	int rc = 0;
	uint64_t pokes = index_watch_pokes(l->watch);

	*index = index_watch_current(l->watch);
	if (http_request_prepare(st, l->router, &l->limits, resp))
		return 0;
	deadline_ns = mono_ns() + st->req.wait_ns;
	if (http_request_should_wait(st, *index) &&
	    (rc = wait_index(l, st, st->req.wait_index, pokes, deadline_ns, abort_cb,
			     abort_arg)) < 0)
		return rc;
	for (;;) {
		pokes = index_watch_pokes(l->watch);
		*index = index_watch_current(l->watch);
		http_request_run(st, *index, resp);
		/* nothing new for this client: wait for the next change
		 * (http.h), unless the server stops (rc 1): then as it is */
		if (rc == 1 || !(resp->nothing_new && st->req.has_index && st->req.wait_ns > 0 &&
				 mono_ns() < deadline_ns))
			break;
		http_response_release(resp);
		if ((rc = wait_index(l, st, *index, pokes, deadline_ns, abort_cb, abort_arg)) < 0)
			return rc;
	}
	if (resp->has_index)
		*index = resp->index;
	return 0;
}

static int local_call(void *arg, const char *method, const char *path, const json_t *body,
		      const char *token, int (*abort_cb)(void *), void *abort_arg,
		      struct httpc_response *out, struct herd_err *err)
{
	struct http_local *l = arg;
	struct http_request_state st;
	struct http_response resp = { 0 };
	const char *q = strchr(path, '?');
	char *decoded;
	uint64_t index;
	int rc;

	pthread_mutex_lock(&l->lock);
	if (l->stopping) {
		pthread_mutex_unlock(&l->lock);
		return herd_errf(err, -ECONNREFUSED, "the server in this process is stopping");
	}
	l->ncalls++;
	pthread_mutex_unlock(&l->lock);

	/* escapes decoded as libmicrohttpd decodes them (never fails) */
	httpc_unescape(path, q ? (size_t)(q - path) : strlen(path), false, &decoded);
	http_request_state_init(&st, method, decoded);
	free(decoded);
	if (q)
		add_query(&st, q + 1);
	http_request_add_header(&st, "Accept", "application/json");
	if (token)
		http_request_add_header(&st, "X-Herd-Token", token);
	if (body) {
		http_request_add_header(&st, "Content-Type", "application/json");
		st.req.body = copy_containers((json_t *)body);
	}
	rc = serve(l, &st, abort_cb, abort_arg, &resp, &index);
	if (rc == 0) {
		out->status = resp.status;
		out->index = index;
		out->body = copy_containers(resp.body); /* NULL for a text answer */
	} else {
		herd_errf(err, rc, "request abandoned");
	}
	http_response_release(&resp);
	http_request_state_release(&st);

	pthread_mutex_lock(&l->lock);
	if (--l->ncalls == 0)
		pthread_cond_broadcast(&l->idle);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

struct http_local *http_local_new(const struct http_router *router, struct index_watch *watch,
				  const struct http_limits *limits)
{
	struct http_local *l = xcalloc(1, sizeof(*l));

	l->transport.call = local_call;
	l->transport.arg = l;
	l->router = router;
	l->watch = watch;
	l->limits = *limits;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->idle, NULL);
	return l;
}

const struct httpc_local *http_local_transport(struct http_local *l)
{
	return &l->transport;
}

void http_local_free(struct http_local *l)
{
	if (!l)
		return;
	/* Waiting calls answer at once (within LOCAL_POLL_NS); new ones are
	 * refused; the ones running finish before the router goes. */
	pthread_mutex_lock(&l->lock);
	l->stopping = 1;
	while (l->ncalls)
		pthread_cond_wait(&l->idle, &l->lock);
	pthread_mutex_unlock(&l->lock);
	pthread_cond_destroy(&l->idle);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
