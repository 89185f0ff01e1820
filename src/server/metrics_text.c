/* metrics_text: metric families and their text and JSON forms (see
 * metrics_text.h). */
#include "server/metrics_text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* The most labels of one sample (the widest series, a GPU's holder, has
 * seven). */
#define METRICS_MAX_LABELS 16

struct sample {
	char *key;        /* the labels as written, "{a=\"x\",b=\"y\"}" or "": sort and identity */
	char **labels;    /* 2 * nlabels strings: name, value, ... */
	size_t nlabels;
	double value;
};

struct metrics_family {
	char *name, *help;
	enum metrics_type type;
	struct sample *v;
	size_t n, a;
	bool sorted;      /* v is in key order with no key twice */
};

struct metrics {
	struct metrics_family **v;
	size_t n, a;
};

struct metrics *metrics_new(void)
{
	return xcalloc(1, sizeof(struct metrics));
}

static void sample_release(struct sample *s)
{
	for (size_t i = 0; i < 2 * s->nlabels; i++)
		free(s->labels[i]);
	free(s->labels);
	free(s->key);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		struct metrics_family *f = m->v[i];
		for (size_t j = 0; j < f->n; j++)
			sample_release(&f->v[j]);
		free(f->v);
		free(f->name);
		free(f->help);
		free(f);
	}
	free(m->v);
	free(m);
}

static bool name_char(char c, bool first, bool label)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (c == ':')
		return !label;
	return !first && c >= '0' && c <= '9';
}

bool metrics_name_valid(const char *s, bool label)
{
	if (!s || !*s || (label && !strncmp(s, "__", 2)))
		return false;
	for (const char *p = s; *p; p++)
		if (!name_char(*p, p == s, label))
			return false;
	return true;
}

struct metrics_family *metrics_family(struct metrics *m, const char *name,
				      enum metrics_type type, const char *help)
{
	struct metrics_family *f;

	if (!metrics_name_valid(name, false))
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i]->name, name))
			return m->v[i]->type == type ? m->v[i] : NULL;
	f = xcalloc(1, sizeof(*f));
	f->name = xstrdup(name);
	f->help = xstrdup(help ? help : "");
	f->type = type;
	ALLOC_GROW(m->v, m->n + 1, m->a);
	m->v[m->n++] = f;
	return f;
}

/* Appends s to sb with '\\' and newline escaped, and '"' too when quote
 * (a label value; HELP text keeps its quotes, as the format says). */
static void add_escaped(struct strbuf *sb, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			strbuf_adds(sb, "\\\\");
		else if (*s == '\n')
			strbuf_adds(sb, "\\n");
		else if (*s == '"' && quote)
			strbuf_adds(sb, "\\\"");
		else
			strbuf_addch(sb, *s);
	}
}

int metrics_addv(struct metrics_family *f, double value, const char *const *labels,
		 size_t nlabels)
{
	struct strbuf key;
	struct sample *s;

	if (!f || nlabels > METRICS_MAX_LABELS)
		return -EINVAL;
	for (size_t i = 0; i < nlabels; i++) {
		if (!metrics_name_valid(labels[2 * i], true))
			return -EINVAL;
		for (size_t j = 0; j < i; j++) /* a label twice is no series */
			if (!strcmp(labels[2 * i], labels[2 * j]))
				return -EINVAL;
	}
	strbuf_init(&key, 64);
	for (size_t i = 0; i < nlabels; i++) {
		strbuf_adds(&key, i ? "," : "{");
		strbuf_adds(&key, labels[2 * i]);
		strbuf_adds(&key, "=\"");
		add_escaped(&key, labels[2 * i + 1] ? labels[2 * i + 1] : "", true);
		strbuf_addch(&key, '"');
	}
	if (nlabels)
		strbuf_addch(&key, '}');
	ALLOC_GROW(f->v, f->n + 1, f->a);
	s = &f->v[f->n++];
	s->key = strbuf_detach(&key, NULL);
	s->labels = xcalloc(2 * nlabels + 1, sizeof(char *));
	s->nlabels = nlabels;
	for (size_t i = 0; i < 2 * nlabels; i++)
		s->labels[i] = xstrdup(labels[i] ? labels[i] : "");
	s->value = value;
	f->sorted = false;
	return 0;
}

int metrics_add(struct metrics_family *f, double value, ...)
{
	const char *labels[2 * METRICS_MAX_LABELS];
	size_t n = 0;
	const char *name;
	va_list ap;

	va_start(ap, value);
	while ((name = va_arg(ap, const char *)) != NULL) {
		if (n == 2 * METRICS_MAX_LABELS) {
			va_end(ap);
			return -EINVAL;
		}
		labels[n++] = name;
		labels[n++] = va_arg(ap, const char *);
	}
	va_end(ap);
	return metrics_addv(f, value, labels, n / 2);
}

void metrics_format_value(double v, char buf[32])
{
	/* integers below 2^53 are exact in a double: no fraction to write */
	if (isnan(v))
		snprintf(buf, 32, "NaN");
	else if (isinf(v))
		snprintf(buf, 32, "%s", v > 0 ? "+Inf" : "-Inf");
	else if (v == 0)
		snprintf(buf, 32, "0"); /* -0 too */
	else if (fabs(v) < 9007199254740992.0 && v == trunc(v))
		snprintf(buf, 32, "%lld", (long long)v);
	else {
		/* 15 digits reads back exactly for most values; 17 always does */
		snprintf(buf, 32, "%.15g", v);
		if (strtod(buf, NULL) != v)
			snprintf(buf, 32, "%.17g", v);
	}
}

static int sample_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sample *)a)->key, ((const struct sample *)b)->key);
}

static int family_cmp(const void *a, const void *b)
{
	return strcmp((*(struct metrics_family *const *)a)->name,
		      (*(struct metrics_family *const *)b)->name);
}

/* Sorts f's samples by key and adds up those with the same key. */
static void family_sort(struct metrics_family *f)
{
	size_t j = 0;

	if (f->sorted)
		return;
	if (f->n > 1) /* (an empty family has no array: qsort must not see NULL) */
		qsort(f->v, f->n, sizeof(*f->v), sample_cmp);
	for (size_t i = 0; i < f->n; i++) {
		if (j && !strcmp(f->v[j - 1].key, f->v[i].key)) {
			f->v[j - 1].value += f->v[i].value;
			sample_release(&f->v[i]);
			continue;
		}
		f->v[j++] = f->v[i];
	}
	f->n = j;
	f->sorted = true;
}

static void metrics_sort(struct metrics *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), family_cmp);
	for (size_t i = 0; i < m->n; i++)
		family_sort(m->v[i]);
}

static const char *type_name(enum metrics_type t)
{
	return t == METRICS_COUNTER ? "counter" : "gauge";
}

void metrics_write_text(struct metrics *m, struct strbuf *sb)
{
	char num[32];

	metrics_sort(m);
	for (size_t i = 0; i < m->n; i++) {
		const struct metrics_family *f = m->v[i];
		strbuf_addf(sb, "# HELP %s ", f->name);
		add_escaped(sb, f->help, false);
		strbuf_addf(sb, "\n# TYPE %s %s\n", f->name, type_name(f->type));
		for (size_t j = 0; j < f->n; j++) {
			metrics_format_value(f->v[j].value, num);
			strbuf_adds(sb, f->name);
			strbuf_adds(sb, f->v[j].key);
			strbuf_addch(sb, ' ');
			strbuf_adds(sb, num);
			strbuf_addch(sb, '\n');
		}
	}
}

static json_t *value_json(double v)
{
	char num[32];
	if (!isfinite(v)) {
		metrics_format_value(v, num);
		return json_string(num);
	}
	if (fabs(v) < 9007199254740992.0 && v == trunc(v))
		return json_integer((json_int_t)v);
	return json_real(v);
}

json_t *metrics_to_json(struct metrics *m)
{
	json_t *list = json_array();

	metrics_sort(m);
	for (size_t i = 0; i < m->n; i++) {
		const struct metrics_family *f = m->v[i];
		json_t *samples = json_array();
		for (size_t j = 0; j < f->n; j++) {
			const struct sample *s = &f->v[j];
			json_t *labels = json_object();
			for (size_t k = 0; k < s->nlabels; k++)
				json_object_set_new(labels, s->labels[2 * k],
						    json_string(s->labels[2 * k + 1]));
			json_array_append_new(samples, json_pack("{s:o, s:o}", "labels", labels,
								 "value", value_json(s->value)));
		}
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o}", "name", f->name,
						      "type", type_name(f->type), "help", f->help,
						      "samples", samples));
	}
	return json_pack("{s:o}", "metrics", list);
}
