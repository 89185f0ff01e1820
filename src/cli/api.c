/* cli-api: see cli-api.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-api.h"
#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

static void report(const char *cmd, int rc, const struct herd_err *err)
{
	fprintf(stderr, "%s: %s\n", cmd, err->msg[0] ? err->msg : strerror(-rc));
	if (rc == -ECONNREFUSED)
		fprintf(stderr, "%s: is an agent running there? (HERD_ADDR, default %s)\n", cmd,
			HTTPC_DEFAULT_ADDR);
	else if (rc == -EKEYREJECTED)
		fprintf(stderr, "%s: HERD_CACERT names the CA file that signed the server's "
			"certificate\n", cmd);
}

int api_call(const char *cmd, const char *method, const char *path, const json_t *body,
	     struct httpc_response *resp)
{
	struct httpc c;
	struct herd_err err = { 0, "" };
	int rc;

	httpc_init(&c, NULL);
	rc = httpc_request(&c, method, path, body, resp, &err);
	httpc_release(&c);
	if (rc < 0) {
		report(cmd, rc, &err);
		httpc_response_release(resp);
	}
	return rc;
}

int api_get_blocking(const char *cmd, const char *path, uint64_t index, long wait_ms,
		     struct httpc_response *resp)
{
	struct httpc c;
	struct herd_err err = { 0, "" };
	int rc;

	httpc_init(&c, NULL);
	rc = httpc_get_blocking(&c, path, index, wait_ms, resp, &err);
	httpc_release(&c);
	if (rc < 0) {
		report(cmd, rc, &err);
		httpc_response_release(resp);
	}
	return rc;
}

void api_print_json(const json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
}

const char *js(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

int64_t ji(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return 0;
}

bool jb(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

const char *short_id(const char *id, char buf[16])
{
	snprintf(buf, 16, "%.8s", id ? id : "");
	return buf;
}

const char *format_ago(int64_t unix_ns, char *buf, size_t size)
{
	struct timespec now;
	int64_t d;

	if (unix_ns <= 0) {
		snprintf(buf, size, "-");
		return buf;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	d = (int64_t)now.tv_sec - unix_ns / 1000000000LL;
	if (d < 0)
		d = 0;
	if (d < 60)
		snprintf(buf, size, "%llds ago", (long long)d);
	else if (d < 3600)
		snprintf(buf, size, "%lldm%llds ago", (long long)(d / 60), (long long)(d % 60));
	else if (d < 86400)
		snprintf(buf, size, "%lldh%lldm ago", (long long)(d / 3600),
			 (long long)(d % 3600 / 60));
	else {
		time_t t = (time_t)(unix_ns / 1000000000LL);
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
	}
	return buf;
}

char *api_resolve_prefix(const char *cmd, const char *list_path, const char *what,
			 const char *prefix)
{
	struct httpc_response r;
	size_t i, n = 0, len = strlen(prefix);
	json_t *v;
	char *found = NULL;

	if (api_call(cmd, "GET", list_path, NULL, &r) < 0)
		return NULL;
	json_array_foreach(r.body, i, v) {
		const char *id = js(v, "id");
		if (!strcmp(id, prefix) || (len && !strncmp(id, prefix, len))) {
			if (!found)
				found = xstrdup(id);
			n++;
			if (!strcmp(id, prefix)) {
				n = 1;
				free(found);
				found = xstrdup(id);
				break;
			}
		}
	}
	httpc_response_release(&r);
	if (n == 1)
		return found;
	free(found);
	if (n == 0)
		fprintf(stderr, "%s: no %s with id \"%s\"\n", cmd, what, prefix);
	else
		fprintf(stderr, "%s: %zu %ss have ids that start with \"%s\": give more of it\n",
			cmd, n, what, prefix);
	return NULL;
}

const char *cli_namespace(const char *ns_flag)
{
	const char *env = getenv("HERD_NAMESPACE");

	if (ns_flag && *ns_flag)
		return ns_flag;
	return env && *env ? env : "default";
}

char *api_ns_path(const char *path, const char *ns)
{
	char *e = httpc_escape(ns);
	char *p = xasprintf("%s%cnamespace=%s", path, strchr(path, '?') ? '&' : '?', e);
	free(e);
	return p;
}

char *api_job_namespace(const char *cmd, const char *id, const char *ns)
{
	struct httpc_response r;
	struct strbuf where = STRBUF_INIT;
	char *found = NULL;
	size_t i, n = 0;
	json_t *j;

	if (strcmp(ns, "*"))
		return xstrdup(ns);
	if (api_call(cmd, "GET", "/v1/jobs?namespace=*", NULL, &r) < 0)
		return NULL;
	json_array_foreach(r.body, i, j) {
		if (strcmp(js(j, "id"), id))
			continue;
		strbuf_addf(&where, "%s%s", n ? ", " : "", js(j, "namespace"));
		if (!n++)
			found = xstrdup(js(j, "namespace"));
	}
	httpc_response_release(&r);
	if (n == 0)
		fprintf(stderr, "%s: no job \"%s\" in any namespace\n", cmd, id);
	else if (n > 1)
		fprintf(stderr, "%s: job \"%s\" is in %zu namespaces (%s): name one with -namespace\n",
			cmd, id, n, where.buf);
	strbuf_release(&where);
	if (n == 1)
		return found;
	free(found);
	return NULL;
}

void table_init(struct table *t, size_t ncols, const char *const *headings)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (size_t i = 0; i < ncols; i++)
		table_add(t, headings[i]);
}

void table_add(struct table *t, const char *cell)
{
	ALLOC_GROW(t->cells, t->ncells + 1, t->alloc);
	t->cells[t->ncells++] = xstrdup(cell ? cell : "");
}

void table_addf(struct table *t, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	ALLOC_GROW(t->cells, t->ncells + 1, t->alloc);
	t->cells[t->ncells++] = strbuf_detach(&sb, NULL);
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

void table_print(const struct table *t, FILE *f, const char *indent)
{
	size_t *w = xcalloc(t->ncols, sizeof(*w));

	for (size_t i = 0; i < t->ncells; i++) {
		size_t cw = width(t->cells[i]);
		if (cw > w[i % t->ncols])
			w[i % t->ncols] = cw;
	}
	for (size_t i = 0; i < t->ncells; i++) {
		size_t col = i % t->ncols;
		if (col == 0)
			fputs(indent ? indent : "", f);
		fputs(t->cells[i], f);
		if (col + 1 == t->ncols) {
			fputc('\n', f);
		} else {
			for (size_t k = width(t->cells[i]); k < w[col] + 2; k++)
				fputc(' ', f);
		}
	}
	free(w);
}

void table_release(struct table *t)
{
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

int flags_parse_anywhere(const struct command_help *help, int argc, char **argv, char **pos,
			 int maxpos)
{
	char **rest = xcalloc((size_t)argc + 1, sizeof(*rest));
	int n = argc, np = 0, rc;

	memcpy(rest, argv, (size_t)argc * sizeof(*rest));
	for (;;) {
		int k = flags_parse(help, n, rest);
		if (k < 0) {
			rc = k;
			goto out;
		}
		if (k >= n)
			break;
		if (np == maxpos) {
			usage_error(argv[0], "unexpected argument '%s'", rest[k]);
			rc = -2;
			goto out;
		}
		pos[np++] = rest[k];
		/* Keep argv[0], drop what was read, go on after the positional. */
		memmove(rest + 1, rest + k + 1, (size_t)(n - k - 1) * sizeof(*rest));
		n -= k;
	}
	rc = np;
out:
	free(rest);
	return rc;
}

char *api_name_path(const char *prefix, const char *name)
{
	char *e = httpc_escape(name);
	char *p = xasprintf("%s/%s", prefix, e);
	free(e);
	return p;
}

int api_apply(const char *cmd, const char *path, json_t *body, const char *what, const char *name)
{
	struct httpc_response r;
	int rc = api_call(cmd, "POST", path, body, &r);

	if (rc == 0) {
		printf("%s %s applied\n", what, name);
		httpc_response_release(&r);
	}
	json_decref(body);
	return rc < 0;
}

int api_list_cmd(int argc, char **argv, const char *usage, const char *summary, const char *path,
		 size_t ncols, const char *const *heads, void (*row)(struct table *t, const json_t *x))
{
	bool as_json = false;
	const struct flag flags[] = { { "json", FLAG_BOOL, &as_json, "print JSON" }, { 0 } };
	const struct command_help help = { usage, summary, flags };
	struct httpc_response r;
	struct table t;
	json_t *x;
	size_t i;
	int n = flags_parse_anywhere(&help, argc, argv, NULL, 0);

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (api_call(argv[0], "GET", path, NULL, &r) < 0)
		return 1;
	if (as_json) {
		api_print_json(r.body);
	} else {
		table_init(&t, ncols, heads);
		json_array_foreach(r.body, i, x)
			row(&t, x);
		table_print(&t, stdout, "");
		table_release(&t);
	}
	httpc_response_release(&r);
	return 0;
}

int api_delete_cmd(int argc, char **argv, const struct command_help *help, const char *prefix,
		   const char *what, const char *arg)
{
	struct httpc_response r;
	char *pos[1], *path;
	int n = flags_parse_anywhere(help, argc, argv, pos, 1), rc;

	if (n < 0)
		return n == -1 ? 0 : EXIT_USAGE;
	if (n != 1)
		return usage_error(argv[0], "expected one %s", arg);
	path = api_name_path(prefix, pos[0]);
	rc = api_call(argv[0], "DELETE", path, NULL, &r);
	free(path);
	if (rc < 0)
		return 1;
	printf("%s %s deleted\n", what, pos[0]);
	httpc_response_release(&r);
	return 0;
}
