/* Unit tests of the HTTP layer: a real server on 127.0.0.1, an ephemeral
 * port, talked to with libcurl.  Routes, parameters, errors, limits,
 * X-Herd-Index, blocking queries.  The tests that do not depend on the
 * wire run a second time through the server's in-process transport
 * (http_server_local, with httpc as the agent's client uses it): the same
 * answers either way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/httpc.h"
#include "common/strbuf.h"
#include "server/http.h"

#define MS 1000000LL

struct fixture {
	struct index_watch watch;
	int news_runs; /* how often news_from_8 ran */
	struct http_router *router;
	struct http_server *srv;
	uint16_t port;
	int errors_logged;
};

/* --- handlers under test ------------------------------------------------ */

static int echo(struct http_request *req, struct http_response *resp, void *ctx)
{
	json_t *params = json_object(), *query = json_object();
	for (int i = 0; i < req->nparams; i++)
		json_object_set_new(params, req->params[i].key, json_string(req->params[i].value));
	for (size_t i = 0; i < req->nquery; i++)
		json_object_set_new(query, req->query[i].key, json_string(req->query[i].value));
	http_reply(resp, 200, json_pack("{s:s, s:o, s:o, s:s?, s:O?, s:s?}", "route", (char *)ctx,
					"params", params, "query", query, "token", req->token,
					"body", req->body, "agent",
					http_header(req, "user-agent")));
	return 0;
}

static int failing(struct http_request *req, struct http_response *resp, void *ctx)
{
	return -EIO; /* the reason must not reach the client */
}

static int answer_nothing(struct http_request *req, struct http_response *resp, void *ctx)
{
	return 0;
}

static int write_at(struct http_request *req, struct http_response *resp, void *ctx)
{
	resp->has_index = 1;
	resp->index = 4242;
	http_reply(resp, 201, json_pack("{s:I}", "index", (json_int_t)4242));
	return 0;
}

/* A blocking route with something new for its client only from index 8:
 * before, it says so (nothing_new), and the layer should keep waiting. */
static int news_from_8(struct http_request *req, struct http_response *resp, void *ctx)
{
	struct fixture *f = ctx;
	__atomic_add_fetch(&f->news_runs, 1, __ATOMIC_SEQ_CST);
	resp->nothing_new = req->index < 8;
	http_reply(resp, 200, json_pack("{s:I}", "index", (json_int_t)req->index));
	return 0;
}

#define TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_BODY "# TYPE a gauge\na 1\nb{x=\"y\\\"z\"} 2\n"

/* A text answer with a content type of its own, as GET /v1/metrics gives. */
static int text_answer(struct http_request *req, struct http_response *resp, void *ctx)
{
	http_reply_text(resp, 200, TEXT_TYPE, strdup(TEXT_BODY));
	return 0;
}

/* A text answer, then a failure: the client gets the JSON 500, not the
 * text (nor a leak). */
static int text_then_fail(struct http_request *req, struct http_response *resp, void *ctx)
{
	http_reply_text(resp, 200, TEXT_TYPE, strdup("half"));
	return -EIO;
}

/* A JSON body replaced by a text: only the text goes. */
static int json_then_text(struct http_request *req, struct http_response *resp, void *ctx)
{
	http_reply(resp, 200, json_pack("{s:b}", "json", 1));
	http_reply_text(resp, 202, "text/csv", strdup("a,b\n"));
	return 0;
}

static void count_error(const char *method, const char *path, int rc, void *arg)
{
	struct fixture *f = arg;
	__atomic_add_fetch(&f->errors_logged, 1, __ATOMIC_SEQ_CST);
}

/* The server of the test running, and whether requests go to it through
 * its in-process transport (the second group) rather than over HTTP. */
static struct http_server *local_srv;
static int via_local;

static int start(struct fixture *f, size_t max_body, int64_t max_wait_ns)
{
	struct http_server_config cfg = { 0 };
	struct herd_err err = { 0 };
	cfg.bind_addr = "127.0.0.1";
	cfg.port = 0;
	cfg.max_body = max_body;
	cfg.max_wait_ns = max_wait_ns;
	cfg.router = f->router;
	cfg.watch = &f->watch;
	if (http_server_start(&cfg, &f->srv, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	f->port = http_server_port(f->srv);
	local_srv = f->srv;
	return 0;
}

static int setup_with(void **state, size_t max_body, int64_t max_wait_ns)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct herd_err err = { 0 };
	index_watch_init(&f->watch, 5);
	f->router = http_router_new();
	http_router_on_error(f->router, count_error, f);
	if (http_routes_base(f->router, &err) ||
	    http_router_add(f->router, "GET", "/v1/echo/:a/x/:b", echo, 0, "echo", &err) ||
	    http_router_add(f->router, "GET", "/v1/jobs/:id", echo, 0, "job", &err) ||
	    http_router_add(f->router, "GET", "/v1/rest/:a/*tail", echo, 0, "rest", &err) ||
	    http_router_add(f->router, "DELETE", "/v1/jobs/:id", echo, 0, "job-delete", &err) ||
	    http_router_add(f->router, "GET", "/v1/jobs/parse", echo, 0, "parse-get", &err) ||
	    http_router_add(f->router, "POST", "/v1/jobs/parse", echo, HTTP_ROUTE_BODY, "parse",
			    &err) ||
	    http_router_add(f->router, "POST", "/v1/things", echo, 0, "things", &err) ||
	    http_router_add(f->router, "GET", "/v1/fail", failing, 0, NULL, &err) ||
	    http_router_add(f->router, "GET", "/v1/nothing", answer_nothing, 0, NULL, &err) ||
	    http_router_add(f->router, "PUT", "/v1/write", write_at, 0, NULL, &err) ||
	    http_router_add(f->router, "GET", "/v1/text", text_answer, 0, NULL, &err) ||
	    http_router_add(f->router, "GET", "/v1/text-fail", text_then_fail, 0, NULL, &err) ||
	    http_router_add(f->router, "GET", "/v1/json-text", json_then_text, 0, NULL, &err) ||
	    http_router_add(f->router, "GET", "/v1/news", news_from_8, HTTP_ROUTE_BLOCKING, f,
			    &err) ||
	    http_router_add(f->router, "GET", "/v1/memory", echo,
			    HTTP_ROUTE_BLOCKING | HTTP_ROUTE_MEMORY, "memory", &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = f;
	return start(f, max_body, max_wait_ns);
}

static int setup(void **state)
{
	return setup_with(state, 0, 0);
}

static int setup_small(void **state)
{
	return setup_with(state, 1024, 500 * MS);
}

static int setup_local(void **state)
{
	via_local = 1;
	return setup(state);
}

static int setup_small_local(void **state)
{
	via_local = 1;
	return setup_small(state);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	via_local = 0;
	http_server_stop(f->srv);
	http_router_free(f->router);
	index_watch_release(&f->watch);
	free(f);
	return 0;
}

/* --- a small curl client ------------------------------------------------ */

struct reply {
	long status;
	struct strbuf body;
	char index[32];
	char allow[64];
	char type[128]; /* Content-Type (over HTTP only) */
	json_t *json;
	double seconds;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(&((struct reply *)arg)->body, p, size * n);
	return size * n;
}

static void header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	if (len <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	line += nl + 1;
	len -= nl + 1;
	while (len && (*line == ' '))
		line++, len--;
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	snprintf(out, cap, "%.*s", (int)len, line);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	header_value(p, size * n, "X-Herd-Index", r->index, sizeof(r->index));
	header_value(p, size * n, "Allow", r->allow, sizeof(r->allow));
	header_value(p, size * n, "Content-Type", r->type, sizeof(r->type));
	return size * n;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* request() through the in-process transport: the body must be JSON (it
 * is handed over as such) and the only header it can send is the token. */
static void request_local(const char *method, const char *path, const char *body, size_t len,
			  const char *header, struct reply *r)
{
	struct httpc c;
	struct httpc_response resp;
	struct herd_err err = { 0 };
	json_t *jb = NULL;
	struct timespec t0;

	httpc_init(&c, "127.0.0.1:9"); /* never dialled */
	c.local = http_server_local(local_srv);
	if (header && !strncmp(header, "X-Herd-Token: ", 14)) {
		free(c.token);
		c.token = strdup(header + 14);
	} else if (header) {
		fail_msg("header \"%s\" cannot go in-process", header);
	}
	if (body && len)
		assert_non_null(jb = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = httpc_request(&c, method, path, jb, &resp, &err);
	r->seconds = seconds_since(&t0);
	if (rc < 0 && !resp.status)
		fail_msg("%s %s: %s", method, path, err.msg);
	/* the httpc result agrees with the status */
	assert_true((rc == 0) == (resp.status >= 200 && resp.status < 300));
	r->status = resp.status;
	snprintf(r->index, sizeof(r->index), "%llu", (unsigned long long)resp.index);
	if (resp.body) {
		char *text = json_dumps(resp.body, JSON_COMPACT | JSON_ENCODE_ANY);
		strbuf_adds(&r->body, text);
		free(text);
		r->json = json_incref(resp.body);
	}
	httpc_response_release(&resp);
	json_decref(jb);
	httpc_release(&c);
}

/* Sends a request; body may be NULL; chunked sends it without a length. */
static void request(uint16_t port, const char *method, const char *path, const char *body,
		    size_t len, const char *header, int chunked, struct reply *r)
{
	CURL *c;
	struct curl_slist *hdrs = NULL;
	char url[4096];
	struct timespec t0;

	memset(r, 0, sizeof(*r));
	strbuf_init(&r->body, 0);
	if (via_local) {
		assert_false(chunked);
		request_local(method, path, body, len, header, r);
		return;
	}
	c = curl_easy_init();
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (header)
		hdrs = curl_slist_append(hdrs, header);
	if (chunked)
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CURLcode rc = curl_easy_perform(c);
	r->seconds = seconds_since(&t0);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	r->json = json_loads(r->body.buf, 0, NULL);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
}

static void get(struct fixture *f, const char *path, struct reply *r)
{
	request(f->port, "GET", path, NULL, 0, NULL, 0, r);
}

static void reply_release(struct reply *r)
{
	strbuf_release(&r->body);
	json_decref(r->json);
}

static const char *error_code(struct reply *r)
{
	return json_string_value(json_object_get(json_object_get(r->json, "error"), "code"));
}

/* --- tests -------------------------------------------------------------- */

static void test_health_and_index(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	assert_true(f->port != 0);
	get(f, "/v1/agent/health", &r);
	assert_int_equal(r.status, 200);
	assert_true(json_is_true(json_object_get(r.json, "ok")));
	assert_string_equal(r.index, "5");
	reply_release(&r);
	index_watch_publish(&f->watch, 17);
	get(f, "/v1/status/index", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "index")), 17);
	assert_string_equal(r.index, "17");
	reply_release(&r);
}

static void test_params_query_token(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	request(f->port, "GET", "/v1/echo/one/x/t%20wo?pretty=1&q=a%26b&q=second", NULL, 0,
		"X-Herd-Token: s3cret", 0, &r);
	assert_int_equal(r.status, 200);
	json_t *p = json_object_get(r.json, "params");
	assert_string_equal(json_string_value(json_object_get(p, "a")), "one");
	assert_string_equal(json_string_value(json_object_get(p, "b")), "t wo");
	json_t *q = json_object_get(r.json, "query");
	assert_string_equal(json_string_value(json_object_get(q, "pretty")), "1");
	/* decoded; the first of a repeated argument wins in http_query, the
	 * echo handler keeps the last */
	assert_string_equal(json_string_value(json_object_get(q, "q")), "second");
	assert_string_equal(json_string_value(json_object_get(r.json, "token")), "s3cret");
	reply_release(&r);

	if (via_local)
		return; /* the agent's client sends its token as X-Herd-Token */
	request(f->port, "GET", "/v1/jobs/web", NULL, 0, "Authorization: Bearer tok-1", 0, &r);
	assert_string_equal(json_string_value(json_object_get(r.json, "token")), "tok-1");
	assert_string_equal(json_string_value(json_object_get(r.json, "route")), "job");
	reply_release(&r);
	request(f->port, "GET", "/v1/jobs/web", NULL, 0, "Authorization: Basic abc", 0, &r);
	assert_null(json_string_value(json_object_get(r.json, "token")));
	reply_release(&r);
}

static void test_literal_beats_param(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	get(f, "/v1/jobs/parse", &r);
	assert_string_equal(json_string_value(json_object_get(r.json, "route")), "parse-get");
	reply_release(&r);
	request(f->port, "DELETE", "/v1/jobs/parse", NULL, 0, NULL, 0, &r);
	assert_string_equal(json_string_value(json_object_get(r.json, "route")), "job-delete");
	reply_release(&r);
}

/* A last "*name" segment takes the rest of the path, one segment or more;
 * only last. */
static void test_rest_param(void **state)
{
	struct fixture *f = *state;
	struct herd_err err = { 0 };
	struct reply r;
	get(f, "/v1/rest/one/x/y.z/~w", &r);
	assert_int_equal(r.status, 200);
	json_t *p = json_object_get(r.json, "params");
	assert_string_equal(json_string_value(json_object_get(p, "a")), "one");
	assert_string_equal(json_string_value(json_object_get(p, "tail")), "x/y.z/~w");
	reply_release(&r);
	get(f, "/v1/rest/one/x", &r);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "params"),
							      "tail")), "x");
	reply_release(&r);
	get(f, "/v1/rest/one", &r);
	assert_int_equal(r.status, 404);
	reply_release(&r);
	get(f, "/v1/rest/one/x//y", &r); /* an empty segment, as anywhere */
	assert_int_equal(r.status, 404);
	reply_release(&r);
	assert_int_equal(http_router_add(f->router, "GET", "/v1/bad/*t/x", echo, 0, NULL, &err),
			 -EINVAL);
	assert_int_equal(http_router_add(f->router, "GET", "/v1/bad/*", echo, 0, NULL, &err),
			 -EINVAL);
}

static void test_not_found_and_method(void **state)
{
	struct fixture *f = *state;
	/* ("/" is the web UI's: test_ui.c) */
	const char *missing[] = { "/v1/nope", "/v2/agent/health", "/v1/jobs", "/v1/jobs/a/b",
				  "/v1//agent/health", "/v1/agent/health/", "/v1" };
	struct reply r;
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		get(f, missing[i], &r);
		assert_int_equal(r.status, 404);
		assert_string_equal(error_code(&r), "not_found");
		assert_string_equal(r.index, "5");
		reply_release(&r);
	}
	request(f->port, "PUT", "/v1/jobs/web", "{}", 2, NULL, 0, &r);
	assert_int_equal(r.status, 405);
	assert_string_equal(error_code(&r), "method_not_allowed");
	if (!via_local) /* (httpc reports no headers) */
		assert_string_equal(r.allow, "GET, DELETE");
	reply_release(&r);
}

static void test_json_bodies(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	const char *good = "{\"job\": {\"id\": \"web\", \"count\": 3}}";
	request(f->port, "POST", "/v1/jobs/parse", good, strlen(good), NULL, 0, &r);
	assert_int_equal(r.status, 200);
	json_t *b = json_object_get(json_object_get(r.json, "body"), "job");
	assert_int_equal(json_integer_value(json_object_get(b, "count")), 3);
	reply_release(&r);

	const char *bad[] = { "{\"a\": 1, \"a\": 2}", "{\"a\": ", "[1, 2,]", "\"just a string\"",
			      "{} {}" };
	/* (in-process bodies are JSON already: no text to be bad) */
	for (size_t i = 0; !via_local && i < sizeof(bad) / sizeof(bad[0]); i++) {
		request(f->port, "POST", "/v1/things", bad[i], strlen(bad[i]), NULL, 0, &r);
		assert_int_equal(r.status, 400);
		assert_string_equal(error_code(&r), "invalid_json");
		reply_release(&r);
	}
	/* a route that needs a body */
	request(f->port, "POST", "/v1/jobs/parse", "", 0, NULL, 0, &r);
	assert_int_equal(r.status, 400);
	assert_string_equal(error_code(&r), "missing_body");
	reply_release(&r);
	/* one that does not */
	request(f->port, "POST", "/v1/things", "", 0, NULL, 0, &r);
	assert_int_equal(r.status, 200);
	reply_release(&r);
}

static void test_internal_errors_do_not_leak(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	get(f, "/v1/fail", &r);
	assert_int_equal(r.status, 500);
	assert_string_equal(error_code(&r), "internal");
	assert_null(strstr(r.body.buf, "EIO"));
	assert_null(strstr(r.body.buf, "Input/output"));
	reply_release(&r);
	get(f, "/v1/nothing", &r);
	assert_int_equal(r.status, 500);
	reply_release(&r);
	assert_int_equal(f->errors_logged, 2);
}

static void test_write_sets_index(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	request(f->port, "PUT", "/v1/write", NULL, 0, NULL, 0, &r);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.index, "4242");
	reply_release(&r);
}

static void test_body_limit_default(void **state)
{
	struct fixture *f = *state;
	size_t len = HTTP_DEFAULT_MAX_BODY + 1;
	char *big = malloc(len);
	struct reply r;
	memset(big, ' ', len);
	big[0] = '{';
	big[len - 1] = '}';
	request(f->port, "POST", "/v1/things", big, len, NULL, 0, &r);
	assert_int_equal(r.status, 413);
	assert_string_equal(error_code(&r), "body_too_large");
	reply_release(&r);
	/* exactly at the limit is fine */
	request(f->port, "POST", "/v1/things", big, len - 1, NULL, 0, &r);
	assert_int_equal(r.status, 400); /* cut JSON, but read whole */
	assert_string_equal(error_code(&r), "invalid_json");
	reply_release(&r);
	free(big);
}

static void test_body_limit_chunked(void **state)
{
	struct fixture *f = *state; /* max_body 1024 */
	char big[4096];
	struct reply r;
	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[sizeof(big) - 1] = '}';
	request(f->port, "POST", "/v1/things", big, sizeof(big), NULL, 1, &r);
	assert_int_equal(r.status, 413);
	reply_release(&r);
	request(f->port, "POST", "/v1/things", big + sizeof(big) - 1000, 1000, NULL, 1, &r);
	assert_int_equal(r.status, 400); /* under the limit: parsed (and bad) */
	reply_release(&r);
}

struct later {
	struct index_watch *w;
	uint64_t index;
	long delay_ms;
};

static void *publish_later(void *arg)
{
	struct later *l = arg;
	struct timespec ts = { l->delay_ms / 1000, (l->delay_ms % 1000) * MS };
	nanosleep(&ts, NULL);
	index_watch_publish(l->w, l->index);
	return NULL;
}

static void test_blocking_wakes_on_change(void **state)
{
	struct fixture *f = *state;
	struct later l = { &f->watch, 6, 300 };
	pthread_t th;
	struct reply r;
	pthread_create(&th, NULL, publish_later, &l);
	get(f, "/v1/status/index?index=5&wait=20s", &r);
	pthread_join(th, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "index")), 6);
	assert_string_equal(r.index, "6");
	assert_true(r.seconds >= 0.25);
	assert_true(r.seconds < 10);
	reply_release(&r);
}

static void *poke_later(void *arg)
{
	struct later *l = arg;
	struct timespec ts = { l->delay_ms / 1000, (l->delay_ms % 1000) * MS };
	nanosleep(&ts, NULL);
	index_watch_poke(l->w);
	return NULL;
}

/* A poke (state in memory changed, nothing stored) answers a route marked
 * HTTP_ROUTE_MEMORY with the index as it was; other blocking routes keep
 * waiting. */
static void test_blocking_memory_wakes_on_poke(void **state)
{
	struct fixture *f = *state;
	struct later l = { &f->watch, 0, 300 };
	pthread_t th;
	struct reply r;

	pthread_create(&th, NULL, poke_later, &l);
	get(f, "/v1/memory?index=5&wait=30s", &r);
	pthread_join(th, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "route")), "memory");
	assert_string_equal(r.index, "5");
	assert_true(r.seconds >= 0.25);
	assert_true(r.seconds < 20); /* well before the wait's 30 s */
	reply_release(&r);

	pthread_create(&th, NULL, poke_later, &l);
	get(f, "/v1/status/index?index=5&wait=1s", &r);
	pthread_join(th, NULL);
	assert_int_equal(json_integer_value(json_object_get(r.json, "index")), 5);
	assert_true(r.seconds >= 0.95); /* the poke did not end it */
	reply_release(&r);
}

static void test_blocking_times_out(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	get(f, "/v1/status/index?index=5&wait=400ms", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "index")), 5);
	assert_true(r.seconds >= 0.39);
	assert_true(r.seconds < 5);
	reply_release(&r);
	/* an index already passed answers at once */
	get(f, "/v1/status/index?index=4&wait=10s", &r);
	assert_true(r.seconds < 2);
	assert_string_equal(r.index, "5");
	reply_release(&r);
	/* a route that does not block ignores index */
	get(f, "/v1/agent/health?index=5&wait=10s", &r);
	assert_true(r.seconds < 2);
	reply_release(&r);
}

/* Changes with nothing new for the client (index 6, 7) do not answer it;
 * the one with news (8) does. */
static void test_blocking_nothing_new_keeps_waiting(void **state)
{
	struct fixture *f = *state;
	struct later l6 = { &f->watch, 6, 100 }, l7 = { &f->watch, 7, 200 },
		     l8 = { &f->watch, 8, 300 };
	pthread_t t6, t7, t8;
	struct reply r;
	pthread_create(&t6, NULL, publish_later, &l6);
	pthread_create(&t7, NULL, publish_later, &l7);
	pthread_create(&t8, NULL, publish_later, &l8);
	get(f, "/v1/news?index=5&wait=20s", &r);
	pthread_join(t6, NULL);
	pthread_join(t7, NULL);
	pthread_join(t8, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "index")), 8);
	assert_string_equal(r.index, "8");
	/* woken at 6 (or 7) and sent back to wait at least once */
	assert_true(__atomic_load_n(&f->news_runs, __ATOMIC_SEQ_CST) >= 2);
	reply_release(&r);
}

/* Nothing new until the wait ends: the answer comes at the end, as it is. */
static void test_blocking_nothing_new_until_timeout(void **state)
{
	struct fixture *f = *state;
	struct later l6 = { &f->watch, 6, 100 };
	pthread_t t6;
	struct reply r;
	pthread_create(&t6, NULL, publish_later, &l6);
	get(f, "/v1/news?index=5&wait=600ms", &r);
	pthread_join(t6, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(r.json, "index")), 6);
	assert_true(r.seconds >= 0.55);
	assert_true(__atomic_load_n(&f->news_runs, __ATOMIC_SEQ_CST) >= 2);
	reply_release(&r);
	/* without ?index the route answers at once, nothing new or not */
	get(f, "/v1/news", &r);
	assert_int_equal(r.status, 200);
	assert_true(r.seconds < 5);
	reply_release(&r);
}

static void test_blocking_wait_capped(void **state)
{
	struct fixture *f = *state; /* max_wait 500ms */
	struct reply r;
	get(f, "/v1/status/index?index=5&wait=1h", &r);
	assert_int_equal(r.status, 200);
	assert_true(r.seconds >= 0.45);
	assert_true(r.seconds < 5);
	reply_release(&r);
	get(f, "/v1/status/index?index=5", &r); /* no wait: the cap */
	assert_true(r.seconds >= 0.45);
	reply_release(&r);
}

static void test_blocking_bad_arguments(void **state)
{
	struct fixture *f = *state;
	const char *bad[] = { "/v1/status/index?index=abc", "/v1/status/index?index=-1",
			      "/v1/status/index?index=5&wait=soon",
			      "/v1/status/index?index=5&wait=-3s",
			      "/v1/status/index?index=99999999999999999999" };
	struct reply r;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		get(f, bad[i], &r);
		assert_int_equal(r.status, 400);
		assert_string_equal(error_code(&r), "invalid_argument");
		reply_release(&r);
	}
}

struct waiter_arg {
	struct fixture *f;
	struct reply r;
};

static void *blocking_get(void *arg)
{
	struct waiter_arg *a = arg;
	get(a->f, "/v1/status/index?index=5&wait=30s", &a->r);
	return NULL;
}

/* More waiters than server threads (2): held without a thread each, all
 * answered by one change. */
static void test_many_waiters_one_change(void **state)
{
	struct fixture *f = *state;
	enum { N = 12 };
	struct waiter_arg args[N];
	pthread_t th[N];
	struct reply r;

	for (int i = 0; i < N; i++) {
		args[i].f = f;
		pthread_create(&th[i], NULL, blocking_get, &args[i]);
	}
	struct timespec ts = { 0, 400 * MS };
	nanosleep(&ts, NULL);
	/* the server still answers other requests while N are held */
	get(f, "/v1/agent/health", &r);
	assert_int_equal(r.status, 200);
	assert_true(r.seconds < 2);
	reply_release(&r);
	index_watch_publish(&f->watch, 9);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].r.status, 200);
		assert_int_equal(json_integer_value(json_object_get(args[i].r.json, "index")), 9);
		assert_true(args[i].r.seconds < 10);
		reply_release(&args[i].r);
	}
}

static void *stop_later(void *arg)
{
	struct fixture *f = arg;
	struct timespec ts = { 0, 300 * MS };
	nanosleep(&ts, NULL);
	http_server_stop(f->srv);
	f->srv = NULL;
	return NULL;
}

/* A held request with nothing new for its client is answered at stop too,
 * as it is (the in-process transport sent it back to wait until its
 * deadline, and the stop waited for it). */
static void *blocking_news(void *arg)
{
	struct waiter_arg *a = arg;
	get(a->f, "/v1/news?index=5&wait=60s", &a->r);
	return NULL;
}

static void test_stop_releases_nothing_new(void **state)
{
	struct fixture *f = *state;
	struct later l6 = { &f->watch, 6, 100 };
	struct waiter_arg a;
	pthread_t th, pub;
	memset(&a, 0, sizeof(a));
	a.f = f;
	pthread_create(&pub, NULL, publish_later, &l6);
	pthread_create(&th, NULL, stop_later, f);
	blocking_news(&a);
	pthread_join(th, NULL);
	pthread_join(pub, NULL);
	assert_true(a.r.seconds < 30);
	assert_int_equal(a.r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(a.r.json, "index")), 6);
	reply_release(&a.r);
}

static void test_stop_releases_waiters(void **state)
{
	struct fixture *f = *state;
	struct waiter_arg a;
	memset(&a, 0, sizeof(a));
	a.f = f;
	pthread_t th;
	pthread_create(&th, NULL, stop_later, f);
	blocking_get(&a);
	pthread_join(th, NULL);
	assert_true(a.r.seconds < 10);
	assert_int_equal(a.r.status, 200);
	reply_release(&a.r);
}

static void test_bad_bind_address(void **state)
{
	struct fixture *f = *state;
	struct http_server_config cfg = { .bind_addr = "localhost-ish", .router = f->router,
					  .watch = &f->watch };
	struct http_server *srv = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(http_server_start(&cfg, &srv, &err), -EINVAL);
	assert_null(srv);
	/* the port the fixture holds is taken */
	cfg.bind_addr = "127.0.0.1";
	cfg.port = f->port;
	assert_true(http_server_start(&cfg, &srv, &err) < 0);
	assert_null(srv);
	assert_non_null(strstr(err.msg, "cannot listen"));
}

static void test_router_patterns(void **state)
{
	struct http_router *r = http_router_new();
	struct herd_err err = { 0 };
	assert_int_equal(http_router_add(r, "GET", "/v2/x", echo, 0, NULL, &err), -EINVAL);
	assert_int_equal(http_router_add(r, "GET", "/v1//x", echo, 0, NULL, &err), -EINVAL);
	assert_int_equal(http_router_add(r, "GET", "/v1/x/", echo, 0, NULL, &err), -EINVAL);
	assert_int_equal(http_router_add(r, "GET", "/v1/x/:", echo, 0, NULL, &err), -EINVAL);
	assert_int_equal(http_router_add(r, "PATCH", "/v1/x", echo, 0, NULL, &err), -EINVAL);
	assert_int_equal(http_router_add(r, "GET", "/v1/:a/:b/:c/:d/:e/:f/:g/:h/:i", echo, 0,
					 NULL, &err), -EINVAL);
	assert_int_equal(http_router_add(r, "GET", "/v1/x/:id", echo, 0, NULL, &err), 0);
	assert_int_equal(http_router_add(r, "GET", "/v1/x/:id", echo, 0, NULL, &err), -EEXIST);
	http_router_free(r);
	http_router_free(NULL);
}

/* fds open before the tests ran (inherited from whoever started us): not
 * ours to check. */
static unsigned char inherited_fd[1024];

static void note_inherited_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		long fd = strtol(e->d_name, NULL, 10);
		if (fd >= 0 && fd < (long)sizeof(inherited_fd) && fd != dirfd(d))
			inherited_fd[fd] = 1;
	}
	if (d)
		closedir(d);
}

static void test_fds_close_on_exec(void **state)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int sockets = 0;
	assert_non_null(d);
	while ((e = readdir(d))) {
		char *end, link[64], target[256];
		long fd = strtol(e->d_name, &end, 10);
		if (e->d_name[0] == '.' || *end || fd <= 2 || fd == dirfd(d) ||
		    (fd < (long)sizeof(inherited_fd) && inherited_fd[fd]))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "socket:", 7) == 0)
			sockets++;
		if (!(fcntl((int)fd, F_GETFD) & FD_CLOEXEC))
			fail_msg("fd %ld (%s) lacks FD_CLOEXEC", fd, target);
	}
	closedir(d);
	assert_true(sockets >= 1); /* the listening socket at least */
}

/* Escapes decoded alike over HTTP and in-process; a '%' without two hex
 * digits after it stays as it is. */
static void test_escapes(void **state)
{
	struct fixture *f = *state;
	struct reply r;
	get(f, "/v1/echo/a%3Ab/x/%zz?k=%41%2&%6B2=%e2%82%ac", &r);
	assert_int_equal(r.status, 200);
	json_t *p = json_object_get(r.json, "params"), *q = json_object_get(r.json, "query");
	assert_string_equal(json_string_value(json_object_get(p, "a")), "a:b");
	assert_string_equal(json_string_value(json_object_get(p, "b")), "%zz");
	assert_string_equal(json_string_value(json_object_get(q, "k")), "A%2");
	assert_string_equal(json_string_value(json_object_get(q, "k2")), "\xe2\x82\xac");
	reply_release(&r);
}

/* A text answer goes as it is, with its content type and X-Herd-Index;
 * in-process it is its status and no body.  A failure after a text set is
 * the JSON 500; a text set after a JSON body replaces it. */
static void test_text_answers(void **state)
{
	struct fixture *f = *state;
	struct reply r;

	get(f, "/v1/text", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.index, "5");
	if (via_local) {
		assert_int_equal(r.body.len, 0);
		assert_null(r.json);
	} else {
		assert_string_equal(r.type, TEXT_TYPE);
		assert_int_equal(r.body.len, strlen(TEXT_BODY));
		assert_memory_equal(r.body.buf, TEXT_BODY, r.body.len);
	}
	reply_release(&r);
	get(f, "/v1/text-fail", &r);
	assert_int_equal(r.status, 500);
	assert_string_equal(error_code(&r), "internal");
	if (!via_local)
		assert_string_equal(r.type, "application/json");
	reply_release(&r);
	get(f, "/v1/json-text", &r);
	assert_int_equal(r.status, 202);
	assert_null(r.json);
	if (!via_local) {
		assert_string_equal(r.type, "text/csv");
		assert_string_equal(r.body.buf, "a,b\n");
	}
	reply_release(&r);
	assert_int_equal(f->errors_logged, 1);
}

/* In-process: neither side shares objects with the other (the server's
 * answers hold records of its cache, read only). */
static void test_local_bodies_are_copies(void **state)
{
	struct fixture *f = *state;
	struct httpc c;
	struct httpc_response resp;
	struct herd_err err = { 0 };
	json_t *body = json_pack("{s:{s:s}}", "job", "id", "web");

	httpc_init(&c, NULL);
	c.local = http_server_local(f->srv);
	assert_int_equal(httpc_request(&c, "POST", "/v1/jobs/parse", body, &resp, &err), 0);
	json_t *echoed = json_object_get(resp.body, "body");
	assert_true(json_equal(echoed, body));
	assert_ptr_not_equal(echoed, body);
	assert_ptr_not_equal(json_object_get(echoed, "job"), json_object_get(body, "job"));
	assert_int_equal(body->refcount, 1);
	httpc_response_release(&resp);
	json_decref(body);
	httpc_release(&c);
}

static int abort_now(void *arg)
{
	return ++*(int *)arg >= 2;
}

/* A waiting in-process request asks its caller whether to go on, and ends
 * with -ECANCELED when told to stop: how an agent's threads stop. */
static void test_local_wait_abandoned(void **state)
{
	struct fixture *f = *state;
	struct httpc c;
	struct httpc_response resp;
	struct herd_err err = { 0 };
	struct timespec t0;
	int asked = 0;

	httpc_init(&c, NULL);
	c.local = http_server_local(f->srv);
	c.abort_cb = abort_now;
	c.abort_arg = &asked;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(httpc_get_blocking(&c, "/v1/status/index", 5, 30000, &resp, &err),
			 -ECANCELED);
	assert_int_equal(asked, 2);
	assert_true(seconds_since(&t0) < 5);
	assert_int_equal(resp.status, 0);
	httpc_response_release(&resp);
	/* a route the client gets wrong: the same error as over HTTP */
	c.abort_cb = NULL;
	assert_int_equal(httpc_request(&c, "GET", "/v1/nope", NULL, &resp, &err), -ENOENT);
	assert_string_equal(resp.error_code, "not_found");
	assert_non_null(strstr(err.msg, "not_found"));
	httpc_response_release(&resp);
	httpc_release(&c);
}

int main(void)
{
	note_inherited_fds();
	curl_global_init(CURL_GLOBAL_DEFAULT);
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define S(fn) cmocka_unit_test_setup_teardown(fn, setup_small, teardown)
#define L(fn) { "in-process " #fn, fn, setup_local, teardown, NULL }
#define LS(fn) { "in-process " #fn, fn, setup_small_local, teardown, NULL }
	const struct CMUnitTest tests[] = {
		T(test_health_and_index),
		T(test_params_query_token),
		T(test_escapes),
		T(test_literal_beats_param),
		T(test_rest_param),
		T(test_not_found_and_method),
		T(test_json_bodies),
		T(test_internal_errors_do_not_leak),
		T(test_write_sets_index),
		T(test_text_answers),
		T(test_body_limit_default),
		S(test_body_limit_chunked),
		T(test_blocking_wakes_on_change),
		T(test_blocking_times_out),
		T(test_blocking_memory_wakes_on_poke),
		T(test_blocking_nothing_new_keeps_waiting),
		T(test_blocking_nothing_new_until_timeout),
		S(test_blocking_wait_capped),
		T(test_blocking_bad_arguments),
		T(test_many_waiters_one_change),
		T(test_stop_releases_waiters),
		T(test_stop_releases_nothing_new),
		T(test_bad_bind_address),
		cmocka_unit_test(test_router_patterns),
		T(test_fds_close_on_exec),
		/* the same again through the in-process transport, less
		 * what only the wire has (body limits, chunks, sockets) */
		L(test_health_and_index),
		L(test_params_query_token),
		L(test_escapes),
		L(test_literal_beats_param),
		L(test_rest_param),
		L(test_not_found_and_method),
		L(test_json_bodies),
		L(test_internal_errors_do_not_leak),
		L(test_write_sets_index),
		L(test_text_answers),
		L(test_blocking_wakes_on_change),
		L(test_blocking_memory_wakes_on_poke),
		L(test_blocking_times_out),
		L(test_blocking_nothing_new_keeps_waiting),
		L(test_blocking_nothing_new_until_timeout),
		LS(test_blocking_wait_capped),
		L(test_blocking_bad_arguments),
		L(test_many_waiters_one_change),
		L(test_stop_releases_waiters),
		L(test_stop_releases_nothing_new),
		L(test_local_bodies_are_copies),
		L(test_local_wait_abandoned),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
