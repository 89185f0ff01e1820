/* ui_files.h: the web UI's files, compiled into the binary; private to
 * src/server.  src/server/ui/embed.py generates the table at build time
 * from src/server/ui/ (index.html, app.js, style.css, favicon.svg); http_ui.c
 * serves it. */
#ifndef HERD_SERVER_UI_FILES_H
#define HERD_SERVER_UI_FILES_H

#include <stddef.h>

struct ui_file {
	const char *name;          /* the file's base name: "app.js"; NULL ends the table */
	const unsigned char *data; /* static; followed by a NUL that len does not count */
	size_t len;
};

/* Every file of the UI, ended by an entry with a NULL name. */
extern const struct ui_file ui_files[];

#endif
