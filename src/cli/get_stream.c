/* cli_get_stream (cli-api.h): a GET whose answer is not JSON — a task's
 * log stream from a node, a snapshot of the server's state — written to
 * a sink as it arrives, with the same token, TLS and error reporting as
 * every other call of the CLI. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli-api.h"
#include "common/strbuf.h"
#include "common/tls.h"
#include "common/xalloc.h"

struct stream {
	cli_sink_fn *sink;
	void *arg;
	CURL *curl;
	long status;
	struct strbuf err; /* body of an error answer (its message) */
	bool stopped;      /* the sink took less than it was given */
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct stream *s = arg;
	size_t len = size * n, took;

	if (!s->status)
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200) {
		if (s->err.len < 4096)
			strbuf_add(&s->err, p, len);
		return len;
	}
	took = s->sink(p, len, s->arg);
	s->stopped = took != len;
	return took;
}

static void print_http_error(const char *cmd, const char *where, const struct stream *s)
{
	json_t *j = json_loadb(s->err.buf ? s->err.buf : "", s->err.len, 0, NULL);
	const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

	fprintf(stderr, "%s: %s: HTTP %ld: %s\n", cmd, where, s->status, m ? m : "(no message)");
	json_decref(j);
}

int cli_get_stream(const char *cmd, const char *where, const char *url,
		   const struct tls_client *tls, cli_sink_fn *sink, void *arg)
{
	struct stream s = { sink, arg, curl_easy_init(), 0, STRBUF_INIT, false };
	struct curl_slist *hdrs = NULL;
	const char *token = getenv("HERD_TOKEN");
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode cc;
	int rc = 0;

	tls_client_apply(tls, s.curl);
	if (token && *token) {
		char *h = xasprintf("X-Herd-Token: %s", token);
		hdrs = curl_slist_append(hdrs, h);
		free(h);
	}
	curl_easy_setopt(s.curl, CURLOPT_URL, url);
	curl_easy_setopt(s.curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(s.curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(s.curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(s.curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(s.curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(s.curl, CURLOPT_NOSIGNAL, 1L);
	cc = curl_easy_perform(s.curl);
	if (!s.status)
		curl_easy_getinfo(s.curl, CURLINFO_RESPONSE_CODE, &s.status);
	if (cc == CURLE_WRITE_ERROR && s.stopped) {
		rc = 2; /* the sink's choice: it says why, if anything */
	} else if (cc != CURLE_OK) {
		fprintf(stderr, "%s: %s: %s\n", cmd, where,
			errbuf[0] ? errbuf : curl_easy_strerror(cc));
		rc = 1;
	} else if (s.status != 200) {
		print_http_error(cmd, where, &s);
		rc = 1;
	}
	strbuf_release(&s.err);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(s.curl);
	return rc;
}
