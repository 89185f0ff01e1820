/* vars: variable paths, items and records (see vars.h). */
#include "server/vars.h"

#include <errno.h>
#include <string.h>

static bool path_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == '~' || c == '/';
}

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

int vars_check_path(const char *path, struct herd_err *err)
{
	size_t len = path ? strlen(path) : 0;
	if (len == 0)
		return herd_errf(err, -EINVAL, "variable path is empty");
	if (len > VARS_MAX_PATH)
		return herd_errf(err, -EINVAL, "variable path is %zu bytes long; at most %d allowed",
				 len, VARS_MAX_PATH);
	for (size_t i = 0; i < len; i++)
		if (!path_char(path[i]))
			return herd_errf(err, -EINVAL,
					 "variable path \"%.128s\": character %zu is not one of "
					 "A-Z a-z 0-9 _ . - ~ /", path, i + 1);
	/* segments: none empty (no leading, trailing or double '/'), and no
	 * "." or "..", so a path names one variable however it is written */
	for (const char *seg = path;;) {
		const char *slash = strchr(seg, '/');
		size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
		if (n == 0)
			return herd_errf(err, -EINVAL,
					 "variable path \"%s\" has an empty segment (a leading, "
					 "trailing or double '/')", path);
		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return herd_errf(err, -EINVAL,
					 "variable path \"%s\" has a \".\" or \"..\" segment", path);
		if (!slash)
			return 0;
		seg = slash + 1;
	}
}

bool vars_prefix_valid(const char *prefix)
{
	size_t len = strlen(prefix);
	if (len > VARS_MAX_PATH)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!path_char(prefix[i]))
			return false;
	return true;
}

int vars_check_items(const json_t *items, struct herd_err *err)
{
	const char *k;
	json_t *v;
	size_t total = 0;

	if (!json_is_object(items))
		return herd_errf(err, -EINVAL, "items must be an object of string values");
	if (json_object_size(items) == 0)
		return herd_errf(err, -EINVAL, "a variable needs at least one item");
	if (json_object_size(items) > VARS_MAX_ITEMS)
		return herd_errf(err, -EINVAL, "a variable has at most %d items, not %zu",
				 VARS_MAX_ITEMS, json_object_size(items));
	json_object_foreach((json_t *)items, k, v) {
		size_t kl = strlen(k);
		if (kl == 0 || kl > VARS_MAX_KEY)
			return herd_errf(err, -EINVAL, "item key \"%.64s\": 1 to %d bytes needed", k,
					 VARS_MAX_KEY);
		for (size_t i = 0; i < kl; i++)
			if (!key_char(k[i]))
				return herd_errf(err, -EINVAL,
						 "item key \"%.128s\": character %zu is not one of "
						 "A-Z a-z 0-9 _ . -", k, i + 1);
		if (!json_is_string(v))
			return herd_errf(err, -EINVAL, "item \"%s\": the value must be a string", k);
		if (strlen(json_string_value(v)) != json_string_length(v))
			return herd_errf(err, -EINVAL, "item \"%s\": the value holds a NUL byte", k);
		total += kl + json_string_length(v);
	}
	if (total > VARS_MAX_SIZE)
		return herd_errf(err, -EINVAL,
				 "the items are %zu bytes together (keys and values); at most %d "
				 "allowed", total, VARS_MAX_SIZE);
	return 0;
}

json_t *vars_record(const char *ns, const char *path, const json_t *items, const json_t *old,
		    int64_t now)
{
	json_t *ct = old ? json_object_get(old, "create_time") : NULL;
	return json_pack("{s:s, s:s, s:O, s:I, s:I}", "namespace", ns, "path", path, "items",
			 (json_t *)items, "create_time",
			 (json_int_t)(json_is_integer(ct) ? json_integer_value(ct) : now),
			 "modify_time", (json_int_t)now);
}

json_t *vars_metadata(const json_t *var)
{
	json_t *m = json_copy((json_t *)var);
	json_object_del(m, "items");
	json_object_del(m, "items_sealed");
	return m;
}

bool vars_glob_match(const char *glob, const char *path, size_t *len)
{
	size_t n = strlen(glob);
	if (n > 0 && glob[n - 1] == '*') {
		*len = n - 1;
		return strncmp(glob, path, n - 1) == 0;
	}
	*len = n;
	return strcmp(glob, path) == 0;
}
