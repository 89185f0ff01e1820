/* bench_conn: one keep-alive HTTP connection of a benchmark's client to a
 * herd server (libcurl easy handle), JSON bodies, the X-Herd-Index of the
 * last answer kept.  Owned by the thread that opened it. */
#ifndef HERD_BENCH_CONN_H
#define HERD_BENCH_CONN_H

#include <curl/curl.h>

#include "common/strbuf.h"

struct bench_conn {
	CURL *curl;
	struct curl_slist *headers;
	struct strbuf body;       /* the last answer's body */
	char base[64];            /* "http://127.0.0.1:PORT" */
	unsigned long long index; /* X-Herd-Index of the last answer */
};

/* Opens a connection to base (copied); close it with bench_conn_close. */
void bench_conn_open(struct bench_conn *c, const char *base);
void bench_conn_close(struct bench_conn *c);

/* One request (body may be NULL); the HTTP status, or -1 when the request
 * failed.  The answer's body is in c->body until the next request. */
long bench_conn_req(struct bench_conn *c, const char *method, const char *path,
		    const char *body);

#endif
