/* http_ui.c: which embedded file answers which UI path (see http_ui.h). */
#include "server/http_ui.h"

#include <string.h>

#include "server/ui_files.h"

/* The UI's paths and the files behind them.  A fixed table, not a lookup
 * of the path in ui_files: only what is listed here is served, whatever
 * else the build embeds. */
static const struct {
	const char *path;
	const char *file;
	const char *content_type;
} ui_routes[] = {
	{ "/ui", "index.html", "text/html; charset=utf-8" },
	{ "/ui/app.js", "app.js", "text/javascript; charset=utf-8" },
	{ "/ui/style.css", "style.css", "text/css; charset=utf-8" },
	/* without an icon of its own, a browser asks for /favicon.ico: a 404 */
	{ "/ui/favicon.svg", "favicon.svg", "image/svg+xml" },
};

bool http_ui_path(const char *path)
{
	return !strcmp(path, "/") || !strcmp(path, "/ui") || !strncmp(path, "/ui/", 4);
}

static const struct ui_file *find_file(const char *name)
{
	for (const struct ui_file *f = ui_files; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

void http_ui_answer(const char *method, const char *path, struct http_ui_answer *out)
{
	memset(out, 0, sizeof(*out));
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		out->status = 405;
		return;
	}
	/* "/" is where a browser goes first; "/ui/" would resolve the page's
	 * relative links one level too deep */
	if (!strcmp(path, "/") || !strcmp(path, "/ui/")) {
		out->status = 302;
		out->location = "/ui";
		return;
	}
	for (size_t i = 0; i < sizeof(ui_routes) / sizeof(ui_routes[0]); i++) {
		const struct ui_file *f;
		if (strcmp(path, ui_routes[i].path) || !(f = find_file(ui_routes[i].file)))
			continue;
		out->status = 200;
		out->content_type = ui_routes[i].content_type;
		out->data = f->data;
		out->len = f->len;
		return;
	}
	out->status = 404;
}
