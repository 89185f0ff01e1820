/* http_ui.h: the read-only web UI at GET /ui; private to src/server.
 *
 * The page (index.html), its script (app.js), its style sheet
 * (style.css) and its icon (favicon.svg) are compiled into the binary (ui_files.h) and answered by
 * the HTTP layer before routing (http_server.c): they hold no data, so
 * they need no token; the page reads the farm with ordinary API calls
 * (GET /v1/gpus, ...), each with the token the user typed.  GET / sends
 * the browser to /ui.  The in-process transport does not serve them.
 *
 * Everything here is socket-free, so that the unit tests and the server
 * share it. */
#ifndef HERD_SERVER_HTTP_UI_H
#define HERD_SERVER_HTTP_UI_H

#include <stdbool.h>
#include <stddef.h>

/* The UI's answer headers: the page runs only its own script and style
 * sheet (no inline script or style, no eval) and talks only to its own
 * origin; no plugins, no framing (clickjacking), no guessing of types
 * (X-Content-Type-Options: nosniff), revalidated on every load
 * (Cache-Control: no-cache: a new binary may serve a new page). */
#define HTTP_UI_CSP                                                                \
	"default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; " \
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* What the layer sends for a UI path. */
struct http_ui_answer {
	int status;               /* 200; 302 (redirect); 404; 405 */
	const char *content_type; /* 200: the file's type (a literal); else NULL */
	const unsigned char *data; /* 200: the file's bytes (static, never freed) */
	size_t len;
	const char *location;     /* 302: where to (a literal); else NULL */
};

/* Whether path belongs to the UI: "/", "/ui" and anything under "/ui/".
 * Other paths (/v1/...) go to the router. */
bool http_ui_path(const char *path);

/* The answer to method on path (a UI path): 200 with a file for GET or HEAD
 * of /ui (the page), /ui/app.js, /ui/style.css, /ui/favicon.svg; 302 to /ui for / and /ui/;
 * 404 for any other path under /ui/; 405 for another method (the Allow
 * header is then "GET, HEAD"). */
void http_ui_answer(const char *method, const char *path, struct http_ui_answer *out);

#endif
