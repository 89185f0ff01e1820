/* trace: a strict reader of the openb CSV files.  Fields hold no quotes or
 * commas in these files; a quote is rejected rather than half-understood. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "sched/trace.h"

#define MAX_COLS 32
#define MAX_FIELD 256

struct row {
	int n;
	const char *f[MAX_COLS];
	size_t len[MAX_COLS];
};

/* Splits the line [p, end) into fields. */
static int split(const char *p, const char *end, struct row *r)
{
	r->n = 0;
	for (;;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *e = c ? c : end;
		if (r->n == MAX_COLS)
			return -1;
		if (e > p && e[-1] == '\r' && !c)
			e--;
		if (memchr(p, '"', (size_t)(e - p)) || (size_t)(e - p) >= MAX_FIELD)
			return -1;
		r->f[r->n] = p;
		r->len[r->n++] = (size_t)(e - p);
		if (!c)
			return 0;
		p = c + 1;
	}
}

static int col(const struct row *h, const char *name)
{
	for (int i = 0; i < h->n; i++)
		if (h->len[i] == strlen(name) && !memcmp(h->f[i], name, h->len[i]))
			return i;
	return -1;
}

static int field_int(const struct row *r, int c, int64_t min, int64_t max, int64_t *out,
		     const char *name, size_t line, struct herd_err *err)
{
	char buf[MAX_FIELD];
	if (c >= r->n)
		return herd_errf(err, -EINVAL, "line %zu: missing column %s", line, name);
	memcpy(buf, r->f[c], r->len[c]);
	buf[r->len[c]] = 0;
	if (parse_int64(buf, min, max, out, NULL))
		return herd_errf(err, -EINVAL, "line %zu: %s: expected an integer %lld..%lld, got \"%s\"",
				 line, name, (long long)min, (long long)max, buf);
	return 0;
}

static char *field_str(const struct row *r, int c)
{
	return c < r->n ? xstrndup(r->f[c], r->len[c]) : xstrdup("");
}

typedef int (*row_fn)(struct trace *t, const struct row *r, const int *cols, size_t line,
		      struct herd_err *err);

/* names[0..nrequired) must be columns of the header; later ones may be
 * absent (their index is then -1). */
static int parse(struct trace *t, const char *buf, size_t len, const char *const *names,
		 int ncols, int nrequired, row_fn fn, struct herd_err *err)
{
	const char *p = buf, *end = buf + len;
	struct row h;
	int cols[MAX_COLS];
	size_t line = 0;
	bool header = false; /* the first non-blank line is the header, not line 1 */

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		struct row r;
		int rc;

		line++;
		if (e == p || (e == p + 1 && *p == '\r')) {
			p = nl ? nl + 1 : end;
			continue;
		}
		if (memchr(p, 0, (size_t)(e - p)) || split(p, e, header ? &r : &h))
			return herd_errf(err, -EINVAL, "line %zu: malformed CSV row", line);
		if (!header) {
			for (int i = 0; i < ncols; i++)
				if ((cols[i] = col(&h, names[i])) < 0 && i < nrequired)
					return herd_errf(err, -EINVAL, "line %zu: no column %s", line,
							 names[i]);
			header = true;
		} else {
			if (line > TRACE_MAX_ROWS)
				return herd_errf(err, -E2BIG, "more than %d rows", TRACE_MAX_ROWS);
			if ((rc = fn(t, &r, cols, line, err)))
				return rc;
		}
		p = nl ? nl + 1 : end;
	}
	if (!header)
		return herd_errf(err, -EINVAL, "empty file: expected a header line");
	return 0;
}

static int node_row(struct trace *t, const struct row *r, const int *c, size_t line,
		    struct herd_err *err)
{
	struct trace_node n;
	int64_t g;
	int rc;

	if ((rc = field_int(r, c[1], 0, INT64_C(1) << 40, &n.cpu_milli, "cpu_milli", line, err)) ||
	    (rc = field_int(r, c[2], 0, INT64_C(1) << 40, &n.memory_mib, "memory_mib", line, err)) ||
	    (rc = field_int(r, c[3], 0, TRACE_MAX_GPUS, &g, "gpu", line, err)))
		return rc;
	if (c[0] >= r->n || !r->len[c[0]])
		return herd_errf(err, -EINVAL, "line %zu: empty sn", line);
	n.gpus = (int)g;
	n.name = field_str(r, c[0]);
	n.model = field_str(r, c[4]);
	t->nodes = xreallocarray(t->nodes, t->nnodes + 1, sizeof(*t->nodes));
	t->nodes[t->nnodes++] = n;
	return 0;
}

static int pod_row(struct trace *t, const struct row *r, const int *c, size_t line,
		   struct herd_err *err)
{
	struct trace_pod p;
	int64_t g, m;
	int rc;

	if ((rc = field_int(r, c[1], 0, INT64_C(1) << 40, &p.cpu_milli, "cpu_milli", line, err)) ||
	    (rc = field_int(r, c[2], 0, INT64_C(1) << 40, &p.memory_mib, "memory_mib", line, err)) ||
	    (rc = field_int(r, c[3], 0, TRACE_MAX_GPUS, &g, "num_gpu", line, err)) ||
	    (rc = field_int(r, c[4], 0, 1000, &m, "gpu_milli", line, err)))
		return rc;
	if (g > 1 && m < 1000 && m > 0)
		return herd_errf(err, -EINVAL, "line %zu: gpu_milli below 1000 with num_gpu %lld",
				 line, (long long)g);
	if (g > 0 && m == 0)
		return herd_errf(err, -EINVAL, "line %zu: num_gpu %lld with gpu_milli 0", line,
				 (long long)g);
	p.num_gpu = (int)g;
	p.gpu_milli = g ? (int32_t)m : 0;
	p.name = field_str(r, c[0]);
	/* gpu_spec is optional: the multigpu files have no such column */
	p.gpu_spec = c[5] >= 0 && c[5] < r->n && r->len[c[5]] ? field_str(r, c[5]) : NULL;
	t->pods = xreallocarray(t->pods, t->npods + 1, sizeof(*t->pods));
	t->pods[t->npods++] = p;
	return 0;
}

int trace_parse_nodes(struct trace *t, const char *buf, size_t len, struct herd_err *err)
{
	static const char *const names[] = { "sn", "cpu_milli", "memory_mib", "gpu", "model" };
	size_t n0 = t->nnodes;
	int rc = parse(t, buf, len, names, 5, 5, node_row, err);
	if (rc) {
		for (size_t i = n0; i < t->nnodes; i++) {
			free(t->nodes[i].name);
			free(t->nodes[i].model);
		}
		t->nnodes = n0;
	}
	return rc;
}

int trace_parse_pods(struct trace *t, const char *buf, size_t len, struct herd_err *err)
{
	static const char *const names[] = { "name", "cpu_milli", "memory_mib", "num_gpu",
					     "gpu_milli", "gpu_spec" };
	size_t n0 = t->npods;
	int rc = parse(t, buf, len, names, 6, 5, pod_row, err);
	if (rc) {
		for (size_t i = n0; i < t->npods; i++) {
			free(t->pods[i].name);
			free(t->pods[i].gpu_spec);
		}
		t->npods = n0;
	}
	return rc;
}

void trace_release(struct trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nnodes; i++) {
		free(t->nodes[i].name);
		free(t->nodes[i].model);
	}
	for (size_t i = 0; i < t->npods; i++) {
		free(t->pods[i].name);
		free(t->pods[i].gpu_spec);
	}
	free(t->nodes);
	free(t->pods);
	memset(t, 0, sizeof(*t));
}
