/* The task template language and writing its files; see template.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/confined.h"
#include "agent/template.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define MAX_ARGS 4

struct render {
	const char *text;
	const char *p;             /* current position */
	const struct template_ctx *ctx;
	struct herd_err *err;
};

static int line_of(const struct render *r, const char *at)
{
	int line = 1;
	for (const char *s = r->text; s < at; s++)
		line += *s == '\n';
	return line;
}

static int fail(const struct render *r, const char *at, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(const struct render *r, const char *at, int code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return herd_errf(r->err, code, "template line %d: %s", line_of(r, at), msg);
}

static const char *lookup_attr(const struct template_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nr_attrs; i++)
		if (!strcmp(c->attrs[i].name, name))
			return c->attrs[i].value;
	return "";
}

static const char *lookup_meta(const struct template_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->nr_meta; i++)
		if (!strcmp(c->meta[i].key, name))
			return c->meta[i].value;
	return "";
}

/* consul-template functions that need Consul, Vault, the agent's files or
 * commands: named in the error so a Nomad user knows why. */
static const char *unsupported_reason(const char *fn)
{
	static const char *const consul[] = { "key", "keyOrDefault", "keyExists", "ls", "safeLs",
		"tree", "safeTree", "service", "services", "connect", "caRoots", "caLeaf",
		"node", "nodes", "nomadService", "nomadServices", "nomadVar", "nomadVarList",
		"nomadVarExists", NULL };
	static const char *const vault[] = { "secret", "secrets", "pkiCert", NULL };
	static const char *const host[] = { "file", "plugin", "executeTemplate", "writeToFile",
		"sockaddr", NULL };
	for (size_t i = 0; consul[i]; i++)
		if (!strcmp(fn, consul[i]))
			return "not supported by herd (no Consul or Nomad variables)";
	for (size_t i = 0; vault[i]; i++)
		if (!strcmp(fn, vault[i]))
			return "not supported by herd (no Vault)";
	for (size_t i = 0; host[i]; i++)
		if (!strcmp(fn, host[i]))
			return "not allowed: it would reach outside the task";
	return NULL;
}

static void skip_space(struct render *r)
{
	while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')
		r->p++;
}

/* A string literal at r->p into sb.  Returns 0 or -EINVAL. */
static int parse_string(struct render *r, struct strbuf *sb)
{
	const char *start = r->p;
	char q = *r->p++;
	for (;;) {
		char c = *r->p;
		if (!c || (q == '"' && c == '\n'))
			return fail(r, start, -EINVAL, "unterminated string");
		r->p++;
		if (c == q)
			return 0;
		if (q == '"' && c == '\\') {
			char e = *r->p++;
			switch (e) {
			case '"': case '\\': strbuf_addch(sb, e); break;
			case 'n': strbuf_addch(sb, '\n'); break;
			case 't': strbuf_addch(sb, '\t'); break;
			default:
				return fail(r, r->p - 2, -EINVAL, "unknown escape \\%c", e ? e : '0');
			}
			continue;
		}
		strbuf_addch(sb, c);
	}
}

static bool at_action_end(const struct render *r)
{
	return !strncmp(r->p, "}}", 2) || !strncmp(r->p, "-}}", 3);
}

/* One command of a pipeline; the piped value (NULL for the first) is its
 * last argument.  Leaves its value in out. */
static int run_command(struct render *r, const struct strbuf *piped, struct strbuf *out)
{
	struct strbuf args[MAX_ARGS] = { STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, STRBUF_INIT };
	char name[64];
	size_t nargs = 0, nl = 0;
	const char *at = r->p;
	int rc = 0;

	skip_space(r);
	at = r->p;
	if (*r->p == '"' || *r->p == '`') {
		if (piped)
			return fail(r, at, -EINVAL, "a string cannot take a piped value");
		rc = parse_string(r, out);
		return rc;
	}
	while (isalnum((unsigned char)*r->p) || *r->p == '_' || *r->p == '.') {
		if (nl + 1 >= sizeof(name))
			return fail(r, at, -EINVAL, "function name too long");
		name[nl++] = *r->p++;
	}
	name[nl] = '\0';
	if (!nl)
		return fail(r, at, -EINVAL, "expected a function or a string, found '%.10s'", r->p);
	const char *why = unsupported_reason(name);
	if (why)
		return fail(r, at, -EINVAL, "%s: %s", name, why);
	for (;;) {
		skip_space(r);
		if (*r->p != '"' && *r->p != '`')
			break;
		if (nargs == MAX_ARGS - 1) {
			rc = fail(r, r->p, -EINVAL, "%s: too many arguments", name);
			goto out;
		}
		if ((rc = parse_string(r, &args[nargs++])) < 0)
			goto out;
	}
	if (*r->p && *r->p != '|' && !at_action_end(r)) {
		rc = fail(r, r->p, -EINVAL, "%s: arguments must be string literals", name);
		goto out;
	}
	if (piped)
		strbuf_add(&args[nargs++], piped->buf, piped->len);

	struct { const char *name; size_t nargs; } sig[] = {
		{ "env", 1 }, { "attr", 1 }, { "meta", 1 }, { "default", 2 },
		{ "toUpper", 1 }, { "toLower", 1 }, { "trimSpace", 1 },
	};
	size_t i;
	for (i = 0; i < sizeof(sig) / sizeof(sig[0]); i++)
		if (!strcmp(name, sig[i].name))
			break;
	if (i == sizeof(sig) / sizeof(sig[0])) {
		rc = fail(r, at, -EINVAL, "unknown function %s (herd knows env, attr, meta, default, "
			  "toUpper, toLower, trimSpace)", name);
		goto out;
	}
	if (nargs != sig[i].nargs) {
		rc = fail(r, at, -EINVAL, "%s takes %zu argument%s, got %zu", name, sig[i].nargs,
			  sig[i].nargs == 1 ? "" : "s", nargs);
		goto out;
	}
	if (!strcmp(name, "env")) {
		const char *v = r->ctx->env ? taskenv_get(r->ctx->env, args[0].buf) : NULL;
		strbuf_adds(out, v ? v : "");
	} else if (!strcmp(name, "attr")) {
		strbuf_adds(out, lookup_attr(r->ctx, args[0].buf));
	} else if (!strcmp(name, "meta")) {
		strbuf_adds(out, lookup_meta(r->ctx, args[0].buf));
	} else if (!strcmp(name, "default")) {
		const struct strbuf *v = args[1].len ? &args[1] : &args[0];
		strbuf_add(out, v->buf, v->len);
	} else if (!strcmp(name, "toUpper") || !strcmp(name, "toLower")) {
		for (size_t k = 0; k < args[0].len; k++) {
			unsigned char c = (unsigned char)args[0].buf[k];
			strbuf_addch(out, name[2] == 'U' ? toupper(c) : tolower(c));
		}
	} else {
		const char *s = args[0].buf, *e = s + args[0].len;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		strbuf_add(out, s, (size_t)(e - s));
	}
out:
	for (size_t k = 0; k < MAX_ARGS; k++)
		strbuf_release(&args[k]);
	return rc;
}

/* The action after "{{" (and its optional "-"), through "}}". */
static int run_action(struct render *r, struct strbuf *out, bool *trim_after)
{
	const char *open = r->p;
	skip_space(r);
	if (!strncmp(r->p, "/*", 2)) {
		const char *end = strstr(r->p + 2, "*/");
		if (!end)
			return fail(r, open, -EINVAL, "unterminated comment");
		r->p = end + 2;
		skip_space(r);
		if (!at_action_end(r))
			return fail(r, open, -EINVAL, "a comment must end the action");
	} else {
		struct strbuf val = STRBUF_INIT, next = STRBUF_INIT;
		bool first = true;
		int rc = 0;
		for (;;) {
			strbuf_reset(&next);
			if ((rc = run_command(r, first ? NULL : &val, &next)) < 0)
				break;
			struct strbuf t = val;
			val = next;
			next = t;
			first = false;
			skip_space(r);
			if (*r->p == '|') {
				r->p++;
				continue;
			}
			if (!at_action_end(r))
				rc = fail(r, r->p, -EINVAL, *r->p ? "expected '|' or '}}'"
							   : "unterminated action (no '}}')");
			break;
		}
		if (rc == 0)
			strbuf_add(out, val.buf, val.len);
		strbuf_release(&val);
		strbuf_release(&next);
		if (rc < 0)
			return rc;
	}
	*trim_after = *r->p == '-';
	r->p += *trim_after ? 3 : 2;
	return 0;
}

int template_render(const char *text, const struct template_ctx *ctx, char **out,
		    struct herd_err *err)
{
	static const struct template_ctx none = { 0 };
	struct render r = { .text = text, .p = text, .ctx = ctx ? ctx : &none, .err = err };
	struct strbuf sb = STRBUF_INIT;
	bool trim = false;
	int rc = 0;

	while (*r.p) {
		const char *open = strstr(r.p, "{{");
		const char *end = open ? open : r.p + strlen(r.p);
		const char *s = r.p;
		if (trim)
			while (s < end && isspace((unsigned char)*s))
				s++;
		const char *e = end;
		if (open && open[2] == '-' && (open[3] == ' ' || open[3] == '\t' || open[3] == '\n'))
			while (e > s && isspace((unsigned char)e[-1]))
				e--;
		strbuf_add(&sb, s, (size_t)(e - s));
		if (!open)
			break;
		r.p = open + 2;
		if (*r.p == '-' && (r.p[1] == ' ' || r.p[1] == '\t' || r.p[1] == '\n'))
			r.p++;
		if ((rc = run_action(&r, &sb, &trim)) < 0)
			goto out;
		if (sb.len > TEMPLATE_MAX_OUTPUT) {
			rc = herd_errf(err, -E2BIG, "template: output larger than %d bytes",
				       TEMPLATE_MAX_OUTPUT);
			goto out;
		}
	}
	if (sb.len > TEMPLATE_MAX_OUTPUT) {
		rc = herd_errf(err, -E2BIG, "template: output larger than %d bytes",
			       TEMPLATE_MAX_OUTPUT);
		goto out;
	}
	*out = strbuf_detach(&sb, NULL);
out:
	strbuf_release(&sb);
	return rc;
}

int template_write_file(const char *task_dir, const char *destination, const void *data,
			size_t len, unsigned perms, struct herd_err *err)
{
	char *rel = NULL;
	int rc = confined_relpath(task_dir, destination, "template destination", &rel, err);
	if (rc < 0)
		return rc;
	int root = open(task_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		rc = herd_errf(err, -errno, "task dir %s: %s", task_dir, strerror(errno));
	} else {
		rc = confined_write_file(root, rel, data, len, perms, err);
		if (rc < 0)
			herd_err_prefix(err, "template destination %s", destination);
		close(root);
	}
	free(rel);
	return rc;
}

int template_read_source(const char *task_dir, const char *source, size_t max, char **out,
			 struct herd_err *err)
{
	char *rel = NULL;
	int rc = confined_relpath(task_dir, source, "template source", &rel, err);
	if (rc < 0)
		return rc;
	struct strbuf sb = STRBUF_INIT;
	int root = open(task_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = root < 0 ? -errno : confined_openat(root, rel, O_RDONLY, 0);
	if (root >= 0)
		close(root);
	if (fd < 0) {
		rc = herd_errf(err, fd, "template source %s: %s", source,
			       fd == -EXDEV ? "leaves the task directory" : strerror(-fd));
		goto out;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = herd_errf(err, -errno, "template source %s: %s", source, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (sb.len + (size_t)n > max) {
			rc = herd_errf(err, -EFBIG, "template source %s: larger than %zu bytes",
				       source, max);
			break;
		}
		strbuf_add(&sb, buf, (size_t)n);
	}
	close(fd);
	if (rc == 0)
		*out = strbuf_detach(&sb, NULL);
out:
	strbuf_release(&sb);
	free(rel);
	return rc;
}

int template_parse_perms(const char *s, unsigned *out)
{
	if (!s || !*s || strlen(s) > 5)
		return -EINVAL;
	unsigned v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '7')
			return -EINVAL;
		v = v * 8 + (unsigned)(*p - '0');
	}
	if (v > 07777)
		return -EINVAL;
	*out = v;
	return 0;
}
