/* bench_http: see bench_http.h. */
#include "bench_http.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(arg, p, size * n);
	return size * n;
}

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
	snprintf(b->base, sizeof(b->base), "http://127.0.0.1:%u", server_port(b->srv));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	b->curl = curl_easy_init();
	b->headers = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(b->curl, CURLOPT_HTTPHEADER, b->headers);
	curl_easy_setopt(b->curl, CURLOPT_WRITEFUNCTION, sink);
	return 0;
}

long bench_req(struct bench_srv *b, const char *method, const char *path, const char *body,
	       struct strbuf *out)
{
	char url[256];
	long st = 0;

	snprintf(url, sizeof(url), "%s%s", b->base, path);
	strbuf_reset(out);
	curl_easy_setopt(b->curl, CURLOPT_URL, url);
	curl_easy_setopt(b->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(b->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(b->curl, CURLOPT_WRITEDATA, out);
	if (curl_easy_perform(b->curl) != CURLE_OK)
		return -1;
	curl_easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &st);
	return st;
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st; (void)f; (void)w;
	return remove(p);
}

void bench_srv_stop(struct bench_srv *b)
{
	curl_slist_free_all(b->headers);
	curl_easy_cleanup(b->curl);
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
