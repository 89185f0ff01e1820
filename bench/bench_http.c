/* bench_http: see bench_http.h. */
#include "bench_http.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int bench_srv_start(struct bench_srv *b, const char *dir, const char *name,
		    struct server_config *cfg)
{
	struct herd_err err = { 0 };

	snprintf(b->dir, sizeof(b->dir), "%s/bench-%s-XXXXXX", dir, name);
	if (!mkdtemp(b->dir)) {
		perror(b->dir);
		return -1;
	}
	cfg->data_dir = b->dir;
	if (server_start(cfg, &b->srv, &err) < 0) {
		fprintf(stderr, "bench_%s: server: %s\n", name, err.msg);
		return -1;
	}
	char base[64];
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", server_port(b->srv));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	bench_conn_open(&b->conn, base);
	return 0;
}

long bench_req(struct bench_srv *b, const char *method, const char *path, const char *body,
	       struct strbuf *out)
{
	long st = bench_conn_req(&b->conn, method, path, body);

	strbuf_reset(out);
	strbuf_add(out, b->conn.body.buf, b->conn.body.len);
	return st;
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st; (void)f; (void)w;
	return remove(p);
}

void bench_srv_stop(struct bench_srv *b)
{
	bench_conn_close(&b->conn);
	curl_global_cleanup();
	server_stop(b->srv);
	nftw(b->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

double bench_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
