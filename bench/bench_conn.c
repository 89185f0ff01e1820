/* bench_conn: a benchmark client's keep-alive connection (bench_conn.h). */
#include "bench_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static size_t body_sink(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(arg, p, size * n);
	return size * n;
}

static size_t header_sink(char *p, size_t size, size_t n, void *arg)
{
	static const char name[] = "x-herd-index:";
	struct bench_conn *c = arg;
	size_t len = size * n;

	if (len > sizeof(name) && strncasecmp(p, name, sizeof(name) - 1) == 0)
		c->index = strtoull(p + sizeof(name) - 1, NULL, 10);
	return len;
}

void bench_conn_open(struct bench_conn *c, const char *base)
{
	c->curl = curl_easy_init();
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	strbuf_init(&c->body, 4096);
	snprintf(c->base, sizeof(c->base), "%s", base);
	c->index = 0;
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, body_sink);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->body);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, header_sink);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
}

void bench_conn_close(struct bench_conn *c)
{
	curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	strbuf_release(&c->body);
}

long bench_conn_req(struct bench_conn *c, const char *method, const char *path,
		    const char *body)
{
	char url[512];
	long st = 0;

	snprintf(url, sizeof(url), "%s%s", c->base, path);
	strbuf_reset(&c->body);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c->curl) != CURLE_OK)
		return -1;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &st);
	return st;
}
