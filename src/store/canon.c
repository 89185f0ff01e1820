/* canon.c: a record's canonical object and text (canon.h). */
#include "store/canon.h"

#include <stdlib.h>
#include <string.h>

#include "common/json_sorted.h"
#include "common/strbuf.h"

/* Deeper than any record herd writes; a deeper object is stored the old
 * way (json_dumps) and not cached. */
#define CANON_MAX_DEPTH 256

/* The store's indexes: its own to say, added back on read. */
static const char *const store_indexes[] = { "create_index", "modify_index", NULL };

json_t *canon_copy(json_t *v, bool top)
{
	const struct json_sorted_rules rules = {
		.drop_top = top ? store_indexes : NULL,
		.max_depth = CANON_MAX_DEPTH,
		/* json_loads refuses \u0000: the text would not load back */
		.refuse_nul = true,
	};
	return json_sorted_copy(v, &rules);
}

/* What jansson writes for v (a real, or a string beyond ASCII): its own
 * encoder, so that the text stays the very one json_dumps wrote (real
 * formatting, UTF-8 checks).  Rare in records, so its cost does not
 * matter. */
static bool add_by_jansson(struct strbuf *sb, const json_t *v)
{
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!t)
		return false;
	strbuf_adds(sb, t);
	free(t);
	return true;
}

/* A string as json_dumps writes it without JSON_ENSURE_ASCII and
 * JSON_ESCAPE_SLASH: '"', '\\' and control characters escaped (the short
 * forms where JSON has them, else \u00XX in capitals), the rest as is.
 * Returns false for text beyond ASCII that is not UTF-8 (left to jansson,
 * which checks it). */
static bool add_string(struct strbuf *sb, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t run = 0;

	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80) {
			json_t *tmp = json_stringn(s, len);
			bool ok = tmp && add_by_jansson(sb, tmp);
			json_decref(tmp);
			return ok;
		}
	strbuf_addch(sb, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', 0, '0', '0', 0, 0 };
		size_t n = 2;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		strbuf_add(sb, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			esc[1] = 'u';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		}
		strbuf_add(sb, esc, n);
	}
	strbuf_add(sb, s + run, len - run);
	strbuf_addch(sb, '"');
	return true;
}

static void add_integer(struct strbuf *sb, json_int_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	/* through unsigned, so that the most negative value negates */
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	strbuf_add(sb, p, (size_t)(buf + sizeof(buf) - p));
}

/* Whether key (klen bytes) may follow prev (plen bytes) in a canonical
 * object: strictly after it in JSON_SORT_KEYS's order. */
static bool key_follows(const char *prev, size_t plen, const char *key, size_t klen)
{
	return json_sorted_keycmp(prev, plen, key, klen) < 0;
}

/* Writes v to sb.  strict: v must already be canonical (canon_encode_canonical),
 * else false. */
static bool add_value(struct strbuf *sb, const json_t *v, int depth, bool strict)
{
	const char *k, *prev = NULL;
	size_t klen, plen = 0, i;
	json_t *x;
	bool first = true;

	if (depth > CANON_MAX_DEPTH)
		return false;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		strbuf_addch(sb, '{');
		json_object_keylen_foreach((json_t *)v, k, klen, x) {
			/* in order, and without the store's indexes at the top */
			if (strict && ((prev && !key_follows(prev, plen, k, klen)) ||
				       (depth == 0 && (!strcmp(k, "create_index") ||
						       !strcmp(k, "modify_index")))))
				return false;
			prev = k;
			plen = klen;
			if (!first)
				strbuf_addch(sb, ',');
			first = false;
			if (!add_string(sb, k, klen))
				return false;
			strbuf_addch(sb, ':');
			if (!add_value(sb, x, depth + 1, strict))
				return false;
		}
		strbuf_addch(sb, '}');
		return true;
	case JSON_ARRAY:
		strbuf_addch(sb, '[');
		json_array_foreach(v, i, x) {
			if (i)
				strbuf_addch(sb, ',');
			if (!add_value(sb, x, depth + 1, strict))
				return false;
		}
		strbuf_addch(sb, ']');
		return true;
	case JSON_STRING:
		if (strict && memchr(json_string_value(v), 0, json_string_length(v)))
			return false; /* canon_copy declines it too */
		return add_string(sb, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		add_integer(sb, json_integer_value(v));
		return true;
	case JSON_REAL:
		return add_by_jansson(sb, v);
	case JSON_TRUE:
		strbuf_adds(sb, "true");
		return true;
	case JSON_FALSE:
		strbuf_adds(sb, "false");
		return true;
	case JSON_NULL:
		strbuf_adds(sb, "null");
		return true;
	}
	return false;
}

static char *encode(const json_t *v, size_t *len, bool strict)
{
	struct strbuf sb;
	size_t n;
	char *out;

	strbuf_init(&sb, 1024);
	if (!v || !add_value(&sb, v, 0, strict)) {
		strbuf_release(&sb);
		return NULL;
	}
	out = strbuf_detach(&sb, &n);
	if (len)
		*len = n;
	return out;
}

char *canon_encode(const json_t *v, size_t *len)
{
	return encode(v, len, false);
}

char *canon_encode_canonical(const json_t *v, size_t *len)
{
	return json_is_object(v) ? encode(v, len, true) : NULL;
}
