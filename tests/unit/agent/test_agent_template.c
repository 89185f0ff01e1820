/* template: the language (helpers, pipelines, trimming, comments, errors,
 * blocks: range / with / if / else over service data, fields, limits
 * with lines, unsupported functions) and confined atomic writes (perms,
 * parents, '..', absolute paths, symlinks out of the task dir). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/template.h"
#include "common/strbuf.h"

static char root[] = "/tmp/herd-template-XXXXXX";
static char task_dir[128], outside[128];
static struct taskenv *te;
static struct template_ctx ctx;

static char *render_ok(const char *text)
{
	static char buf[4096];
	char *out = NULL;
	struct herd_err err = { 0 };
	int rc = template_render(text, &ctx, &out, &err);
	if (rc != 0)
		fail_msg("render '%s': %s", text, err.msg);
	snprintf(buf, sizeof(buf), "%s", out);
	free(out);
	return buf;
}

static const char *render_err(const char *text, int want)
{
	static struct herd_err err;
	char *out = (char *)"untouched";
	memset(&err, 0, sizeof(err));
	assert_int_equal(template_render(text, &ctx, &out, &err), want);
	assert_string_equal(out, "untouched");
	return err.msg;
}

static void test_helpers(void **state)
{
	assert_string_equal(render_ok("plain text\n"), "plain text\n");
	assert_string_equal(render_ok("port={{ env \"GREETING\" }}!"), "port=hello world!");
	assert_string_equal(render_ok("{{env \"HERD_TASK_NAME\"}}"), "web");
	assert_string_equal(render_ok("[{{ env \"NOPE\" }}]"), "[]");
	assert_string_equal(render_ok("{{ attr \"kernel.name\" }}/{{ attr \"nope\" }}"), "linux/");
	assert_string_equal(render_ok("{{ meta \"rack\" }}"), "r12");
	assert_string_equal(render_ok("{{ env \"NOPE\" | default \"8080\" }}"), "8080");
	assert_string_equal(render_ok("{{ env \"GREETING\" | default \"x\" | toUpper }}"),
			    "HELLO WORLD");
	assert_string_equal(render_ok("{{ \"  MiXed \" | trimSpace | toLower }}"), "mixed");
	assert_string_equal(render_ok("{{ `raw \\n \"q\"` }}"), "raw \\n \"q\"");
	assert_string_equal(render_ok("{{ \"a\\tb\\n\\\"c\\\\\" }}"), "a\tb\n\"c\\");
	assert_string_equal(render_ok("a {{/* note */}}b"), "a b");
	assert_string_equal(render_ok("a\n  {{- \"x\" -}}  \n b"), "axb");
	assert_string_equal(render_ok("{{\"-\"}}"), "-");
	assert_string_equal(render_ok("x {{ \"}}\" }} y"), "x }} y");
}

static void test_errors(void **state)
{
	const char *m = render_err("line1\nline2 {{ key \"service/port\" }}", -EINVAL);
	assert_non_null(strstr(m, "template line 2"));
	assert_non_null(strstr(m, "key: not supported"));
	m = render_err("{{ secret \"x\" }}", -EINVAL);
	assert_non_null(strstr(m, "Vault"));
	m = render_err("{{ file \"/etc/shadow\" }}", -EINVAL);
	assert_non_null(strstr(m, "not allowed"));
	m = render_err("{{ nosuch }}", -EINVAL);
	assert_non_null(strstr(m, "unknown function nosuch"));
	m = render_err("{{ env \"A\" \"B\" }}", -EINVAL);
	assert_non_null(strstr(m, "env takes 1 argument"));
	m = render_err("{{ env \"A\" ", -EINVAL);
	assert_non_null(strstr(m, "unterminated"));
	m = render_err("{{ env \"A }}", -EINVAL);
	assert_non_null(strstr(m, "unterminated string"));
	m = render_err("{{ env HOME }}", -EINVAL);
	assert_non_null(strstr(m, "string literals"));
	m = render_err("{{ \"a\" | \"b\" }}", -EINVAL);
	assert_non_null(strstr(m, "piped"));
	m = render_err("{{/* open", -EINVAL);
	assert_non_null(strstr(m, "comment"));
	render_err("{{ }}", -EINVAL);
}

static void test_output_limit(void **state)
{
	/* A 1 MiB value used 5 times: over the 4 MiB output limit. */
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	struct node_attr attrs[] = { { (char *)"big", big } };
	struct template_ctx c = { .attrs = attrs, .nr_attrs = 1 };
	const char *t = "{{attr \"big\"}}{{attr \"big\"}}{{attr \"big\"}}{{attr \"big\"}}{{attr \"big\"}}";
	char *out = NULL;
	struct herd_err err = { 0 };
	assert_int_equal(template_render(t, &c, &out, &err), -E2BIG);
	assert_null(out);
	free(big);
}

/* The services callback of the tests: instances of "web" (two passing, one
 * critical), "db" (none), and the list of services; "down" fails. */
static int calls;
static json_t *svc_data;

static int fake_services(void *arg, const char *name, const json_t **out, struct herd_err *err)
{
	calls++;
	if (name && !strcmp(name, "down"))
		return herd_errf(err, -ECONNREFUSED, "server unreachable");
	*out = json_object_get(svc_data, name ? name : "");
	if (!*out)
		*out = json_object_get(svc_data, "db");
	return 0;
}

static void services_setup(void)
{
	svc_data = json_pack(
		"{s:[{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:[s,s],s:s},"
		"    {s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:[],s:s},"
		"    {s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:[],s:s}],"
		" s:[], s:[{s:s,s:[s]},{s:s,s:[]}]}",
		"web",
		"name", "web", "alloc_id", "a1", "job_id", "j", "node_id", "n1", "task", "t",
		"address", "10.0.0.1", "port", 8080, "tags", "blue", "v2", "health", "passing",
		"name", "web", "alloc_id", "a2", "job_id", "j", "node_id", "n2", "task", "",
		"address", "10.0.0.2", "port", 8081, "tags", "health", "passing",
		"name", "web", "alloc_id", "a3", "job_id", "j", "node_id", "n3", "task", "t",
		"address", "10.0.0.3", "port", 8082, "tags", "health", "critical",
		"db", "",
		"name", "web", "tags", "blue", "name", "mlflow", "tags");
	ctx.services = fake_services;
}

static void test_services(void **state)
{
	services_setup();
	assert_string_equal(render_ok("{{ range nomadService \"web\" }}{{ .Address }}:{{ .Port }}\n{{ end }}"),
			    "10.0.0.1:8080\n10.0.0.2:8081\n");
	/* service is the same; a filter lists the critical one too */
	assert_string_equal(render_ok("{{ range service \"web|any\" }}{{ .Port }},{{ end }}"),
			    "8080,8081,8082,");
	assert_string_equal(render_ok("{{ range service \"web|critical\" }}{{ .AllocID }}{{ end }}"),
			    "a3");
	assert_string_equal(render_ok("{{ range nomadService \"web\" }}{{ .Name }} {{ .ID }} {{ .JobID }} "
				      "{{ .NodeID }} {{ .Tags }}|{{ end }}"),
			    "web _herd-a1-t-web-8080 j n1 [blue v2]|web _herd-a2-group-web-8081 j n2 []|");
	/* nested range over tags, join, else of an empty range */
	assert_string_equal(render_ok("{{ range nomadService \"web\" }}{{ range .Tags }}<{{ . }}>{{ else }}none{{ end }};{{ end }}"),
			    "<blue><v2>;none;");
	assert_string_equal(render_ok("{{ range nomadService \"web\" }}{{ join \",\" .Tags }}/{{ end }}"),
			    "blue,v2//");
	assert_string_equal(render_ok("{{ range nomadService \"db\" }}x{{ else }}no db{{ end }}"), "no db");
	/* with / else, if / else if / else */
	assert_string_equal(render_ok("{{ with nomadService \"web\" }}some{{ else }}none{{ end }}"), "some");
	assert_string_equal(render_ok("{{ with nomadService \"db\" }}some{{ else }}none{{ end }}"), "none");
	assert_string_equal(render_ok("{{ if nomadService \"db\" }}a{{ else if env \"GREETING\" }}b{{ else }}c{{ end }}"),
			    "b");
	assert_string_equal(render_ok("{{ if env \"NOPE\" }}a{{ else if env \"NOPE\" }}b{{ else }}c{{ end }}"),
			    "c");
	assert_string_equal(render_ok("{{ if \"x\" }}{{ env \"HERD_TASK_NAME\" }}{{ end }}"), "web");
	/* the list of services */
	assert_string_equal(render_ok("{{ range nomadServices }}{{ .Name }}={{ .Tags }} {{ end }}"),
			    "web=[blue] mlflow=[] ");
	assert_string_equal(render_ok("{{ range services }}{{ .Name | toUpper }} {{ end }}"),
			    "WEB MLFLOW ");
	/* trimming around blocks, as Go does */
	assert_string_equal(render_ok("upstream {\n{{- range nomadService \"web\" }}\n  server {{ .Address }}:{{ .Port }};\n{{- end }}\n}\n"),
			    "upstream {\n  server 10.0.0.1:8080;\n  server 10.0.0.2:8081;\n}\n");
	/* else parts trimmed, a list as default's fallback, fields in if */
	assert_string_equal(render_ok("[{{- range nomadService \"db\" }}x{{- else -}}\n  none\n{{- end -}}]"),
			    "[none]");
	assert_string_equal(render_ok("{{ nomadService \"db\" | default \"fallback\" }}"), "fallback");
	assert_string_equal(render_ok("{{ range nomadService \"web\" }}{{ if .Tags }}{{ .Port }}{{ else }}-{{ end }}{{ end }}"),
			    "8080-");
	assert_string_equal(render_ok("{{ with nomadService \"web\" }}{{ range . }}{{ .Status }} {{ end }}{{ end }}"),
			    "passing passing ");
	/* a piped name */
	assert_string_equal(render_ok("{{ range \"web\" | nomadService }}{{ .Port }}{{ end }}"), "80808081");
	/* a branch not taken calls nothing */
	calls = 0;
	render_ok("{{ if \"\" }}{{ range nomadService \"web\" }}{{ end }}{{ end }}");
	assert_int_equal(calls, 0);
	ctx.services = NULL;
	json_decref(svc_data);
}

/* Variables through the same callback: "@var:PATH" (the variable, null
 * when absent) and "@vars:PREFIX" (metadata). */
static const char *var_keys[8];
static int nvar_keys;

static int fake_vars(void *arg, const char *name, const json_t **out, struct herd_err *err)
{
	if (nvar_keys < 8)
		var_keys[nvar_keys++] = strdup(name);
	*out = json_object_get(svc_data, name);
	if (!*out)
		*out = json_null();
	return 0;
}

static void test_variables(void **state)
{
	svc_data = json_pack("{s:[], s:{s:s, s:{s:s, s:s}}, s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}]}",
			     "@vars:",
			     "@var:db/creds", "path", "db/creds", "items", "password", "s3cret",
			     "user", "app", "@vars:db",
			     "path", "db/creds", "namespace", "default", "modify_index", 7,
			     "path", "db/other", "namespace", "default", "modify_index", 9);
	ctx.services = fake_vars;
	nvar_keys = 0;
	assert_string_equal(render_ok("{{ with nomadVar \"db/creds\" }}{{ .user }}:{{ .password }}{{ end }}"),
			    "app:s3cret");
	/* absent: empty, the else part */
	assert_string_equal(render_ok("{{ with nomadVar \"db/none\" }}x{{ else }}absent{{ end }}"), "absent");
	assert_string_equal(render_ok("{{ range nomadVarList \"db\" }}{{ .Path }}@{{ .ModifyIndex }} {{ end }}"),
			    "db/creds@7 db/other@9 ");
	assert_string_equal(render_ok("{{ range nomadVarList }}{{ .Path }}{{ end }}"), "");
	assert_int_equal(nvar_keys, 4);
	assert_string_equal(var_keys[0], "@var:db/creds");
	assert_string_equal(var_keys[1], "@var:db/none");
	assert_string_equal(var_keys[2], "@vars:db");
	assert_string_equal(var_keys[3], "@vars:");
	/* a path the server could never take: refused before any call */
	assert_non_null(strstr(render_err("{{ nomadVar \"a b\" }}", -EINVAL), "A-Z a-z 0-9"));
	assert_non_null(strstr(render_err("{{ nomadVar \"\" }}", -EINVAL), "path is needed"));
	assert_non_null(strstr(render_err("{{ nomadVarExists \"x\" }}", -EINVAL), "not supported"));
	assert_int_equal(nvar_keys, 4);
	for (int i = 0; i < nvar_keys; i++)
		free((char *)var_keys[i]);
	ctx.services = NULL;
	json_decref(svc_data);
}

static void test_block_errors(void **state)
{
	services_setup();
	const char *m = render_err("a\n{{ range nomadService \"web\" }}\nx", -EINVAL);
	assert_non_null(strstr(m, "template line 2: range without {{ end }}"));
	m = render_err("a\nb\n{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "template line 3: {{ end }} with no block"));
	m = render_err("{{ else }}", -EINVAL);
	assert_non_null(strstr(m, "{{ else }} with no block"));
	m = render_err("{{ if \"a\" }}{{ else }}{{ else }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "a second else"));
	m = render_err("{{ range nomadService \"web\" }}\n{{ .Nope }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "template line 2: .Nope: no field Nope"));
	m = render_err("{{ .Address }}", -EINVAL);
	assert_non_null(strstr(m, "has no fields"));
	m = render_err("{{ nomadService \"web\" }}", -EINVAL);
	assert_non_null(strstr(m, "cannot write a list of objects; use range"));
	m = render_err("{{ range env \"GREETING\" }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "range takes a list"));
	m = render_err("{{ range nomadService \"web\" }}{{ . }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "cannot write an object"));
	m = render_err("{{ range nomadService \"web\" }}{{ .Tags | toUpper }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "toUpper: expected a string, got a list"));
	m = render_err("\n\n{{ nomadService \"web\" \"x\" }}", -EINVAL);
	assert_non_null(strstr(m, "template line 3: nomadService takes 1 argument, got 2"));
	m = render_err("{{ range nomadService \"web|healthy\" }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "a filter is any"));
	m = render_err("{{ range nomadService \"web@dc2\" }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "datacenters"));
	m = render_err("{{ range nomadService \"\" }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "a service name"));
	m = render_err("x\n{{ range nomadService \"down\" }}{{ end }}", -ECONNREFUSED);
	assert_non_null(strstr(m, "template line 2: nomadService \"down\": server unreachable"));
	m = render_err("{{ range $i, $s := nomadService \"web\" }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "variables"));
	/* errors in branches never taken are still errors */
	m = render_err("{{ if \"\" }}\n{{ key \"x\" }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "template line 2: key: not supported"));
	m = render_err("{{ if }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "empty action"));
	m = render_err("{{ end x }}", -EINVAL);
	assert_non_null(strstr(m, "expected '}}'"));
	/* nesting limit */
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < TEMPLATE_MAX_DEPTH + 1; i++)
		strbuf_adds(&sb, "{{ if \"a\" }}");
	for (int i = 0; i < TEMPLATE_MAX_DEPTH + 1; i++)
		strbuf_adds(&sb, "{{ end }}");
	m = render_err(sb.buf, -EINVAL);
	assert_non_null(strstr(m, "nested deeper than"));
	strbuf_reset(&sb);
	for (int i = 0; i < TEMPLATE_MAX_DEPTH; i++)
		strbuf_adds(&sb, "{{ if \"a\" }}");
	strbuf_adds(&sb, "deep");
	for (int i = 0; i < TEMPLATE_MAX_DEPTH; i++)
		strbuf_adds(&sb, "{{ end }}");
	assert_string_equal(render_ok(sb.buf), "deep");
	strbuf_release(&sb);
	/* without a services source (no agent), a clear error */
	ctx.services = NULL;
	m = render_err("{{ range nomadServices }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, "not available"));
	json_decref(svc_data);
}

static void test_services_output_limit(void **state)
{
	/* a range multiplies its body's output: 3 x 1 MiB passes, 3 x 3 x
	 * 1 MiB is cut at the limit */
	services_setup();
	size_t n = 1 << 20;
	struct strbuf sb = STRBUF_INIT;
	char *out = NULL;
	struct herd_err err = { 0 };
	struct strbuf big = STRBUF_INIT;
	strbuf_adds(&sb, "{{ range nomadService \"web|any\" }}");
	for (size_t i = 0; i < n; i++)
		strbuf_addch(&sb, 'x');
	strbuf_adds(&sb, "{{ end }}");
	assert_int_equal(template_render(sb.buf, &ctx, &out, &err), 0);
	assert_int_equal(strlen(out), 3 * n);
	free(out);
	out = NULL;
	strbuf_adds(&big, "{{ range nomadService \"web|any\" }}");
	strbuf_add(&big, sb.buf, sb.len);
	strbuf_adds(&big, "{{ end }}");
	assert_int_equal(template_render(big.buf, &ctx, &out, &err), -E2BIG);
	assert_null(out);
	assert_non_null(strstr(err.msg, "output larger"));
	strbuf_release(&sb);
	strbuf_release(&big);
	ctx.services = NULL;
	json_decref(svc_data);
}

static char *slurp(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_write_files(void **state)
{
	struct herd_err err = { 0 };
	char path[256];
	assert_int_equal(template_write_file(task_dir, "local/conf/app.ini", "a=1\n", 4, 0640,
					     &err), 0);
	snprintf(path, sizeof(path), "%s/local/conf/app.ini", task_dir);
	assert_string_equal(slurp(path), "a=1\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	/* replaced atomically, new perms, no temporary left */
	assert_int_equal(template_write_file(task_dir, "local/conf/app.ini", "b=2\n", 4, 0600,
					     &err), 0);
	assert_string_equal(slurp(path), "b=2\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "test $(ls -A %s/local/conf | wc -l) -eq 1", task_dir);
	assert_int_equal(system(cmd), 0);
	/* absolute inside the task dir is fine */
	snprintf(path, sizeof(path), "%s/secrets/token", task_dir);
	assert_int_equal(template_write_file(task_dir, path, "t", 1, 0400, &err), 0);
	assert_string_equal(slurp(path), "t");

	unsigned perms;
	assert_int_equal(template_parse_perms("0644", &perms), 0);
	assert_int_equal(perms, 0644);
	assert_int_equal(template_parse_perms("755", &perms), 0);
	assert_int_equal(perms, 0755);
	assert_int_equal(template_parse_perms("0999", &perms), -EINVAL);
	assert_int_equal(template_parse_perms("", &perms), -EINVAL);
	assert_int_equal(template_parse_perms("-644", &perms), -EINVAL);
}

/* left_delimiter / right_delimiter: a file full of "{{" (a Helm chart, a
 * Jinja file) renders it as text, and only the other delimiters act. */
static void test_delimiters(void **state)
{
	struct template_ctx saved = ctx;
	const char *m;

	(void)state;
	ctx.left_delim = "[[";
	ctx.right_delim = "]]";
	assert_string_equal(render_ok("image: {{ .Values.image | quote }}\n"
				      "rack: [[ meta \"rack\" ]]{{- end }}\n"),
			    "image: {{ .Values.image | quote }}\nrack: r12{{- end }}\n");
	assert_string_equal(render_ok("a [[- \"x\" -]] b [[/* c */]]!"), "axb !");
	assert_string_equal(render_ok("[[ if env \"NOPE\" ]]yes[[ else ]]none[[ end ]]"), "none");
	assert_string_equal(render_ok("x [[ \"]]\" ]] y"), "x ]] y");
	m = render_err("ok\n[[ env \"A\" ", -EINVAL);
	assert_string_equal(m, "template line 2: unterminated action (no ']]')");
	m = render_err("[[ if env \"A\" ]]", -EINVAL);
	assert_string_equal(m, "template line 1: if without [[ end ]]");
	m = render_err("[[ end ]]", -EINVAL);
	assert_string_equal(m, "template line 1: [[ end ]] with no block to close");
	/* the same delimiter both ways, and a right one that starts with '-' */
	ctx.left_delim = ctx.right_delim = "%%";
	assert_string_equal(render_ok("{{ x }} %% meta \"rack\" %%"), "{{ x }} r12");
	ctx.left_delim = "<";
	ctx.right_delim = "->";
	assert_string_equal(render_ok("<\"a\"-> <\"b\" -->"), "a b");
	m = render_err("<\"a\"-", -EINVAL);
	assert_non_null(strstr(m, "expected '|' or '->'"));
	/* empty: the default ones (Go's rule) */
	ctx.left_delim = ctx.right_delim = "";
	assert_string_equal(render_ok("{{ meta \"rack\" }}"), "r12");
	ctx.left_delim = "01234567890123456";
	m = render_err("x", -EINVAL);
	assert_non_null(strstr(m, "delimiter longer than 16 bytes"));
	ctx = saved;
	/* the default delimiters refuse what they cannot parse */
	m = render_err("image: {{ .Values.image | quote }}", -EINVAL);
	assert_non_null(strstr(m, "unknown function quote"));
}

/* error_on_missing_key: attr and meta of a key the node lacks. */
static void test_missing_key(void **state)
{
	const char *m;

	(void)state;
	ctx.left_delim = ctx.right_delim = NULL;
	/* off (the default): "" as before */
	assert_string_equal(render_ok("[{{ meta \"nope\" }}][{{ attr \"nope\" }}]"), "[][]");
	ctx.missing_key_error = true;
	assert_string_equal(render_ok("{{ meta \"rack\" }} {{ attr \"kernel.name\" }} "
				      "[{{ env \"NOPE\" }}]"), "r12 linux []");
	m = render_err("ok\n{{ meta \"nope\" }}", -EINVAL);
	assert_string_equal(m, "template line 2: meta \"nope\": the node has no such meta key "
			    "(error_on_missing_key)");
	m = render_err("{{ if attr \"gpu.count\" }}x{{ end }}", -EINVAL);
	assert_string_equal(m, "template line 1: attr \"gpu.count\": the node has no such attribute "
			    "(error_on_missing_key)");
	/* a branch not taken looks nothing up */
	assert_string_equal(render_ok("{{ if env \"NOPE\" }}{{ meta \"nope\" }}{{ end }}."), ".");
	/* a missing field is an error either way (Nomad's structs) */
	ctx.missing_key_error = false;
	m = render_err("{{ with env \"GREETING\" }}{{ .Nope }}{{ end }}", -EINVAL);
	assert_non_null(strstr(m, ".Nope: a string has no fields"));
}

/* wait { min max }: quiescence of min after the last change, bounded by
 * max after the first; splay: a delay in [0, splay). */
static void test_wait_and_splay(void **state)
{
	const int64_t s = 1000000000LL;

	(void)state;
	/* one change at 10s, min 2s: renders at 12s */
	assert_int_equal(template_wait_due(10 * s, 10 * s, 2 * s, 8 * s), 12 * s);
	/* a second change at 11s pushes it to 13s: the two render once */
	assert_int_equal(template_wait_due(10 * s, 11 * s, 2 * s, 8 * s), 13 * s);
	/* changes that never stop: at most max after the first */
	assert_int_equal(template_wait_due(10 * s, 17 * s, 2 * s, 8 * s), 18 * s);
	assert_int_equal(template_wait_due(10 * s, 30 * s, 2 * s, 8 * s), 18 * s);
	/* min 0: at once */
	assert_int_equal(template_wait_due(10 * s, 10 * s, 0, 0), 10 * s);

	assert_int_equal(template_splay_delay(0, 12345), 0);
	assert_int_equal(template_splay_delay(5 * s, 0), 0);
	assert_int_equal(template_splay_delay(5 * s, 5 * s), 0);
	assert_int_equal(template_splay_delay(5 * s, 5 * s + 7), 7);
	for (uint64_t r = UINT64_MAX - 100; r != 0; r++) {
		int64_t d = template_splay_delay(5 * s, r);
		assert_true(d >= 0 && d < 5 * s);
	}
}

/* uid / gid: the owner of a written file (root only; the tests run as
 * whoever builds: as root the file changes hands, else the refusal). */
static void test_write_owner(void **state)
{
	struct herd_err err = { 0 };
	char path[256];
	struct stat st;
	int rc;

	(void)state;
	snprintf(path, sizeof(path), "%s/local/owned.txt", task_dir);
	rc = template_write_owned(task_dir, "local/owned.txt", "o\n", 2, 0640, 4242, 4343, &err);
	if (geteuid() == 0) {
		assert_int_equal(rc, 0);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_uid, 4242);
		assert_int_equal(st.st_gid, 4343);
		assert_int_equal(st.st_mode & 07777, 0640);
	} else {
		assert_int_equal(rc, -EPERM);
		assert_non_null(strstr(err.msg, "only an agent that runs as root may set uid or gid"));
		assert_int_equal(stat(path, &st), -1);
	}
	/* -1: the writer's own, whoever it is; the gid alone */
	assert_int_equal(template_write_owned(task_dir, "local/mine.txt", "m", 1, 0644, -1,
					      (long)getegid(), &err), 0);
	snprintf(path, sizeof(path), "%s/local/mine.txt", task_dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_gid, getegid());
}

static void test_write_escapes_rejected(void **state)
{
	struct herd_err err = { 0 };
	char path[256], link[256];
	assert_int_equal(template_write_file(task_dir, "../escape", "x", 1, 0644, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'..'"));
	assert_int_equal(template_write_file(task_dir, "local/../../escape", "x", 1, 0644, &err),
			 -EINVAL);
	assert_int_equal(template_write_file(task_dir, "/etc/herd-escape", "x", 1, 0644, &err),
			 -EXDEV);
	assert_non_null(strstr(err.msg, "outside the task directory"));
	assert_int_equal(template_write_file(task_dir, "", "x", 1, 0644, &err), -EINVAL);
	assert_int_equal(template_write_file(task_dir, "local/", "x", 1, 0644, &err), -EINVAL);
	/* a prefix of the task dir's name is not inside it */
	snprintf(path, sizeof(path), "%sx/f", task_dir);
	assert_int_equal(template_write_file(task_dir, path, "x", 1, 0644, &err), -EXDEV);

	/* a symlinked directory pointing outside */
	snprintf(link, sizeof(link), "%s/local/out", task_dir);
	assert_int_equal(symlink(outside, link), 0);
	assert_int_equal(template_write_file(task_dir, "local/out/f", "x", 1, 0644, &err), -EXDEV);
	assert_int_equal(template_write_file(task_dir, "local/out/sub/f", "x", 1, 0644, &err),
			 -EXDEV);
	snprintf(path, sizeof(path), "%s/f", outside);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/sub", outside);
	assert_int_equal(access(path, F_OK), -1);

	/* a symlink at the destination itself is replaced, not followed */
	snprintf(path, sizeof(path), "%s/victim", outside);
	FILE *f = fopen(path, "we");
	fputs("keep", f);
	fclose(f);
	snprintf(link, sizeof(link), "%s/local/dest", task_dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(template_write_file(task_dir, "local/dest", "new", 3, 0644, &err), 0);
	assert_string_equal(slurp(path), "keep");
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void test_read_source(void **state)
{
	struct herd_err err = { 0 };
	char *text = NULL;
	assert_int_equal(template_write_file(task_dir, "local/t.tpl", "{{ env \"GREETING\" }}", 20,
					     0644, &err), 0);
	assert_int_equal(template_read_source(task_dir, "local/t.tpl", 1024, &text, &err), 0);
	assert_string_equal(text, "{{ env \"GREETING\" }}");
	free(text);
	text = NULL;
	assert_int_equal(template_read_source(task_dir, "local/t.tpl", 5, &text, &err), -EFBIG);
	assert_int_equal(template_read_source(task_dir, "/etc/passwd", 1024, &text, &err), -EXDEV);
	assert_int_equal(template_read_source(task_dir, "local/out/x", 1024, &text, &err), -EXDEV);
	assert_null(text);
}

static int setup(void **state)
{
	if (!mkdtemp(root))
		return -1;
	snprintf(task_dir, sizeof(task_dir), "%s/task", root);
	snprintf(outside, sizeof(outside), "%s/outside", root);
	mkdir(task_dir, 0755);
	mkdir(outside, 0755);
	char p[256];
	snprintf(p, sizeof(p), "%s/local", task_dir);
	mkdir(p, 0755);
	static const struct agent_kv env[] = { { "GREETING", "hello world" } };
	static struct node_attr attrs[] = { { "kernel.name", "linux" } };
	static const struct agent_kv meta[] = { { "rack", "r12" } };
	struct taskenv_input in = {
		.alloc_id = "a1b2c3d4-0000-0000-0000-000000000000", .alloc_index = -1,
		.job_id = "j", .group = "g", .task = "web", .alloc_dir = "/a",
		.task_dir = task_dir, .env = env, .nr_env = 1,
	};
	if (taskenv_build(&in, &te, NULL) < 0)
		return -1;
	ctx = (struct template_ctx){ .env = te, .attrs = attrs, .nr_attrs = 1,
				     .meta = meta, .nr_meta = 1 };
	return 0;
}

static int teardown(void **state)
{
	taskenv_free(te);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_output_limit),
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_variables),
		cmocka_unit_test(test_block_errors),
		cmocka_unit_test(test_services_output_limit),
		cmocka_unit_test(test_write_files),
		cmocka_unit_test(test_delimiters),
		cmocka_unit_test(test_missing_key),
		cmocka_unit_test(test_wait_and_splay),
		cmocka_unit_test(test_write_owner),
		cmocka_unit_test(test_write_escapes_rejected),
		cmocka_unit_test(test_read_source),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
