/* bench_http: what the server benchmarks share: an in-process server
 * (SQLite in a temporary dir) on 127.0.0.1 and one keep-alive curl
 * connection to it. */
#ifndef HERD_BENCH_HTTP_H
#define HERD_BENCH_HTTP_H

#include "bench_conn.h"
#include "common/strbuf.h"
#include "server/server.h"

struct bench_srv {
	struct server *srv;
	struct bench_conn conn; /* conn.base: the server's address */
	char dir[512];
};

/* Starts a server with cfg (its data_dir set to a new DIR/bench-NAME-XXXXXX)
 * and opens the connection.  0, or -1 with the reason printed. */
int bench_srv_start(struct bench_srv *b, const char *dir, const char *name,
		    struct server_config *cfg);
/* One request; out gets the answer's body.  The HTTP status, or -1 when
 * the request failed. */
long bench_req(struct bench_srv *b, const char *method, const char *path, const char *body,
	       struct strbuf *out);
/* Closes the connection, stops the server and removes its data dir. */
void bench_srv_stop(struct bench_srv *b);
/* Monotonic clock in seconds. */
double bench_now_s(void);

#endif
