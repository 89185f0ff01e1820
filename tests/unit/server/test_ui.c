/* Unit tests of the web UI's serving (http_ui.h): a real HTTP server on
 * 127.0.0.1 with an ephemeral port, talked to with libcurl.  GET /ui,
 * /ui/app.js and /ui/style.css answer the files of src/server/ui/ byte for
 * byte, with their content types and the UI's security headers; / and /ui/
 * send the browser to /ui; other paths under /ui/ are 404, other methods
 * 405; the API's routes are untouched.  http_ui_answer is also checked on
 * its own, without a socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "server/http.h"
#include "server/http_ui.h"

struct fixture {
	struct index_watch watch;
	struct http_router *router;
	struct http_server *srv;
	uint16_t port;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct http_server_config cfg = { 0 };
	struct herd_err err = { 0 };

	index_watch_init(&f->watch, 5);
	f->router = http_router_new();
	if (http_routes_base(f->router, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	cfg.bind_addr = "127.0.0.1";
	cfg.router = f->router;
	cfg.watch = &f->watch;
	if (http_server_start(&cfg, &f->srv, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	f->port = http_server_port(f->srv);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	http_server_stop(f->srv);
	http_router_free(f->router);
	index_watch_release(&f->watch);
	free(f);
	return 0;
}

/* --- a small curl client that keeps every header ----------------------- */

struct reply {
	long status;
	struct strbuf body;
	struct strbuf headers; /* "name: value\n" lines as received */
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(&((struct reply *)arg)->body, p, size * n);
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	strbuf_add(&((struct reply *)arg)->headers, p, size * n);
	return size * n;
}

static void request(struct fixture *f, const char *method, const char *path, struct reply *r)
{
	CURL *c = curl_easy_init();
	char url[512];

	memset(r, 0, sizeof(*r));
	strbuf_init(&r->body, 0);
	strbuf_init(&r->headers, 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", f->port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* the path as written: /ui/../v1 must reach the server as it is */
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(c);
}

static void reply_release(struct reply *r)
{
	strbuf_release(&r->body);
	strbuf_release(&r->headers);
}

/* The value of header name in r (case-insensitive name), copied to out;
 * "" when absent.  Fails the test when it came twice. */
static const char *header(const struct reply *r, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	int seen = 0;
	out[0] = '\0';
	for (const char *line = r->headers.buf; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
			const char *v = line + nl + 1;
			size_t vl = len - nl - 1;
			while (vl && *v == ' ')
				v++, vl--;
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
				vl--;
			snprintf(out, cap, "%.*s", (int)vl, v);
			if (seen++)
				fail_msg("header %s came twice", name);
		}
		line = end ? end + 1 : line + len;
	}
	return out;
}

/* The file src/server/ui/NAME of the source tree, read whole. */
static void read_source(const char *name, struct strbuf *out)
{
	const char *root = getenv("HERD_SOURCE_ROOT");
	char path[1024];
	FILE *fp;
	char buf[4096];
	size_t n;

	assert_non_null(root);
	snprintf(path, sizeof(path), "%s/src/server/ui/%s", root, name);
	assert_non_null(fp = fopen(path, "rb"));
	strbuf_init(out, 0);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		strbuf_add(out, buf, n);
	fclose(fp);
}

/* An answer of the UI: status 200, the type, the security headers, and
 * the bytes of the source file. */
static void check_file(struct fixture *f, const char *path, const char *file, const char *type)
{
	struct reply r;
	struct strbuf src;
	char v[512];

	request(f, "GET", path, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(header(&r, "Content-Type", v, sizeof(v)), type);
	assert_string_equal(header(&r, "Content-Security-Policy", v, sizeof(v)), HTTP_UI_CSP);
	assert_string_equal(header(&r, "X-Content-Type-Options", v, sizeof(v)), "nosniff");
	assert_string_equal(header(&r, "Cache-Control", v, sizeof(v)), "no-cache");
	assert_string_equal(header(&r, "X-Frame-Options", v, sizeof(v)), "DENY");
	read_source(file, &src);
	assert_true(src.len > 100);
	assert_int_equal(r.body.len, src.len);
	assert_memory_equal(r.body.buf, src.buf, src.len);
	strbuf_release(&src);
	reply_release(&r);
}

/* --- tests -------------------------------------------------------------- */

static void test_page_script_and_style(void **state)
{
	struct fixture *f = *state;
	check_file(f, "/ui", "index.html", "text/html; charset=utf-8");
	check_file(f, "/ui/app.js", "app.js", "text/javascript; charset=utf-8");
	check_file(f, "/ui/style.css", "style.css", "text/css; charset=utf-8");
	check_file(f, "/ui/favicon.svg", "favicon.svg", "image/svg+xml");
}

/* The policy allows the page's own files only: nothing inline, no eval,
 * no other origin, no framing. */
static void test_policy_is_strict(void **state)
{
	const char *csp = HTTP_UI_CSP;
	assert_non_null(strstr(csp, "default-src 'self'"));
	assert_non_null(strstr(csp, "script-src 'self';"));
	assert_non_null(strstr(csp, "style-src 'self';"));
	assert_non_null(strstr(csp, "frame-ancestors 'none'"));
	assert_null(strstr(csp, "unsafe"));
	assert_null(strstr(csp, "*"));
	assert_null(strstr(csp, "http"));
	assert_null(strstr(csp, "data:"));
}

static void test_root_redirects(void **state)
{
	struct fixture *f = *state;
	const char *paths[] = { "/", "/ui/" };
	struct reply r;
	char v[256];

	for (size_t i = 0; i < 2; i++) {
		request(f, "GET", paths[i], &r);
		assert_int_equal(r.status, 302);
		assert_string_equal(header(&r, "Location", v, sizeof(v)), "/ui");
		assert_int_equal(r.body.len, 0);
		reply_release(&r);
	}
}

/* Only the three files: another path under /ui/ is the API's JSON 404,
 * the name of a file (index.html) included, and so are the look-alikes
 * outside /ui (they go to the router). */
static void test_unknown_paths(void **state)
{
	struct fixture *f = *state;
	const char *ui[] = { "/ui/nope", "/ui/index.html", "/ui/app.js/x", "/ui/app.js.map",
			     "/ui//app.js", "/ui/../v1/agent/health", "/ui/embed.py" };
	struct reply r;
	char v[256];

	for (size_t i = 0; i < sizeof(ui) / sizeof(ui[0]); i++) {
		request(f, "GET", ui[i], &r);
		assert_int_equal(r.status, 404);
		assert_string_equal(header(&r, "Content-Type", v, sizeof(v)), "application/json");
		assert_non_null(strstr(r.body.buf, "\"not_found\""));
		assert_non_null(strstr(r.body.buf, "no UI path"));
		reply_release(&r);
	}
	request(f, "GET", "/uix", &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(r.body.buf, "no API path /uix"));
	reply_release(&r);
	/* the API is as it was */
	request(f, "GET", "/v1/agent/health", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(header(&r, "Content-Type", v, sizeof(v)), "application/json");
	assert_string_equal(header(&r, "Content-Security-Policy", v, sizeof(v)), "");
	reply_release(&r);
}

/* HEAD answers the headers of GET and no body; writes are 405. */
static void test_methods(void **state)
{
	struct fixture *f = *state;
	const char *writes[] = { "POST", "PUT", "DELETE" };
	struct reply r;
	struct strbuf src;
	char v[256], len[32];

	read_source("index.html", &src);
	request(f, "HEAD", "/ui", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body.len, 0);
	snprintf(len, sizeof(len), "%zu", src.len);
	assert_string_equal(header(&r, "Content-Length", v, sizeof(v)), len);
	assert_string_equal(header(&r, "Content-Type", v, sizeof(v)), "text/html; charset=utf-8");
	reply_release(&r);
	strbuf_release(&src);
	for (size_t i = 0; i < 3; i++) {
		request(f, writes[i], "/ui", &r);
		assert_int_equal(r.status, 405);
		assert_string_equal(header(&r, "Allow", v, sizeof(v)), "GET, HEAD");
		assert_non_null(strstr(r.body.buf, "\"method_not_allowed\""));
		reply_release(&r);
	}
	request(f, "POST", "/", &r);
	assert_int_equal(r.status, 405);
	reply_release(&r);
}

/* The page loads its own script and style sheet and nothing else: no
 * inline script, no style attribute, no other origin. */
static void test_page_references_only_its_own_files(void **state)
{
	struct strbuf page;
	const char *p;
	int scripts = 0;

	read_source("index.html", &page);
	for (p = page.buf; (p = strstr(p, "<script")); p++) {
		scripts++;
		const char *tag = "<script src=\"/ui/app.js\" defer></script>";
		assert_true(!strncmp(p, tag, strlen(tag)));
	}
	assert_int_equal(scripts, 1);
	assert_non_null(strstr(page.buf, "<link rel=\"stylesheet\" href=\"/ui/style.css\">"));
	assert_non_null(strstr(page.buf, "<link rel=\"icon\" href=\"/ui/favicon.svg\""));
	assert_null(strstr(page.buf, "style="));
	assert_null(strstr(page.buf, "<style"));
	assert_null(strstr(page.buf, "http:"));
	assert_null(strstr(page.buf, "https:"));
	/* no event handler attributes (onclick= and such) */
	for (p = page.buf; (p = strstr(p, " on")); p++) {
		const char *q = p + 3;
		while (*q >= 'a' && *q <= 'z')
			q++;
		if (*q == '=')
			fail_msg("an event handler attribute: %.20s", p);
	}
	strbuf_release(&page);
}

/* http_ui_answer without a socket. */
static void test_answer_table(void **state)
{
	static const struct {
		const char *method, *path;
		int status;
		const char *type, *location;
	} cases[] = {
		{ "GET", "/ui", 200, "text/html; charset=utf-8", NULL },
		{ "HEAD", "/ui/app.js", 200, "text/javascript; charset=utf-8", NULL },
		{ "GET", "/ui/style.css", 200, "text/css; charset=utf-8", NULL },
		{ "GET", "/", 302, NULL, "/ui" },
		{ "HEAD", "/ui/", 302, NULL, "/ui" },
		{ "GET", "/ui/APP.JS", 404, NULL, NULL },
		{ "GET", "/ui/style.css/", 404, NULL, NULL },
		{ "PUT", "/ui/app.js", 405, NULL, NULL },
		{ "OPTIONS", "/", 405, NULL, NULL },
	};
	struct http_ui_answer a;

	assert_true(http_ui_path("/"));
	assert_true(http_ui_path("/ui"));
	assert_true(http_ui_path("/ui/x/y"));
	assert_false(http_ui_path("/uix"));
	assert_false(http_ui_path("/v1/ui"));
	assert_false(http_ui_path(""));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		http_ui_answer(cases[i].method, cases[i].path, &a);
		assert_int_equal(a.status, cases[i].status);
		if (cases[i].type) {
			assert_string_equal(a.content_type, cases[i].type);
			assert_non_null(a.data);
			assert_true(a.len > 0);
			assert_int_equal(a.data[a.len], '\0');
		} else {
			assert_null(a.content_type);
			assert_null(a.data);
		}
		if (cases[i].location)
			assert_string_equal(a.location, cases[i].location);
		else
			assert_null(a.location);
	}
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_page_script_and_style),
		cmocka_unit_test(test_policy_is_strict),
		T(test_root_redirects),
		T(test_unknown_paths),
		T(test_methods),
		cmocka_unit_test(test_page_references_only_its_own_files),
		cmocka_unit_test(test_answer_table),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
