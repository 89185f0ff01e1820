/* Fuzz target: the task template language (agent/template.h), which reads
 * a job's template text on the agent, and its parser
 * (spec/template_parse.h), which job validation runs at submission.
 *
 * The input is rendered with an environment, node attributes and meta, and
 * service data (instances of "web", one critical; none for other names; a
 * failing "down"), so that blocks, fields and filters run on real data.
 * Whatever the outcome: no crash, no leak, an error only with a message,
 * an output within TEMPLATE_MAX_OUTPUT and untouched on failure.  The
 * parser alone and the rendering agree: a text validation refuses fails
 * to render with the very same message.
 *
 * An input that starts with byte 0x01 also chooses the template's options:
 * the next byte's bits 0-2 and 3-5 are the lengths (0: the default) of the
 * left and right delimiters that follow it, bit 6 error_on_missing_key;
 * the rest is the text.  Other inputs (the corpus of plain texts) render
 * with "{{ }}" as before. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/template.h"
#include "spec/template_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *services;

static int fake_services(void *arg, const char *name, const json_t **out, struct herd_err *err)
{
	if (name && !strcmp(name, "down"))
		return herd_errf(err, -ECONNREFUSED, "server unreachable");
	*out = json_object_get(services, name ? name : "");
	if (!*out)
		*out = json_object_get(services, "none");
	return 0;
}

static void setup(void)
{
	services = json_pack(
		"{s:[{s:s,s:s,s:s,s:s,s:s,s:i,s:[s,s],s:s},"
		"    {s:s,s:s,s:s,s:s,s:s,s:i,s:[],s:s}],"
		" s:[], s:[{s:s,s:[s]},{s:s,s:[]}]}",
		"web",
		"name", "web", "alloc_id", "a1", "job_id", "j", "node_id", "n1", "address",
		"10.0.0.1", "port", 8080, "tags", "blue", "v2", "health", "passing",
		"name", "web", "alloc_id", "a2", "job_id", "j", "node_id", "n2", "address",
		"10.0.0.2", "port", 8081, "tags", "health", "critical",
		"none", "",
		"name", "web", "tags", "blue", "name", "db", "tags");
}

/* What validation says of text, against what the rendering said (rc, err). */
static void parse_agrees(const char *text, const struct template_ctx *ctx, int rc,
			 const struct herd_err *err)
{
	struct herd_err perr = { 0, "" };
	struct tmpl_list tree;
	int prc = template_parse_delims(text, ctx->left_delim, ctx->right_delim, &tree, &perr);

	template_tree_release(&tree);
	if (tree.n || tree.v)
		abort();
	if (prc < 0 && (rc != prc || strcmp(err->msg, perr.msg)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct node_attr attrs[] = { { (char *)"kernel.name", (char *)"linux" } };
	static const struct agent_kv meta[] = { { "rack", "r1" } };
	struct template_ctx ctx = { .attrs = attrs, .nr_attrs = 1, .meta = meta, .nr_meta = 1,
				    .services = fake_services };
	struct herd_err err = { 0, "" };
	char *text, *out = NULL, ld[8] = "", rd[8] = "";
	int rc;

	if (!services)
		setup();
	if (size >= 2 && data[0] == 0x01) {
		size_t ln = data[1] & 7, rn = (data[1] >> 3) & 7;
		ctx.missing_key_error = data[1] & 0x40;
		if (size < 2 + ln + rn)
			return 0;
		memcpy(ld, data + 2, ln);   /* a NUL inside ends it: shorter */
		memcpy(rd, data + 2 + ln, rn);
		ctx.left_delim = ld;
		ctx.right_delim = rd;
		data += 2 + ln + rn;
		size -= 2 + ln + rn;
	}
	/* template data is text: a NUL ends it */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	rc = template_render(text, &ctx, &out, &err);
	parse_agrees(text, &ctx, rc, &err);
	if (rc == 0) {
		if (!out || strlen(out) > TEMPLATE_MAX_OUTPUT)
			abort();
		free(out);
	} else if (out || !err.msg[0]) {
		abort();
	}
	free(text);
	return 0;
}
