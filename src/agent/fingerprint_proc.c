/* Readers and parsers of /proc, /sys and /etc files for the fingerprint;
 * see fingerprint-int.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/fingerprint-int.h"
#include "common/xalloc.h"

#define FP_MAX_FILE (1u << 20)

int fp_read_file(const char *root, const char *rel, struct strbuf *sb)
{
	char *path = xasprintf("%s/%s", root, rel);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -errno;
	strbuf_reset(sb);
	int rc = 0;
	for (;;) {
		strbuf_grow(sb, 8192);
		ssize_t n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		strbuf_setlen(sb, sb->len + (size_t)n);
		if (sb->len > FP_MAX_FILE) {
			rc = -EFBIG;
			break;
		}
	}
	close(fd);
	return rc;
}

static char *trimmed(const char *s, size_t len)
{
	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	return xstrndup(s, len);
}

char *fp_read_line(const char *root, const char *rel)
{
	struct strbuf sb = STRBUF_INIT;
	char *line = NULL;
	if (fp_read_file(root, rel, &sb) == 0) {
		line = trimmed(sb.buf, strcspn(sb.buf, "\n"));
		if (!*line) {
			free(line);
			line = NULL;
		}
	}
	strbuf_release(&sb);
	return line;
}

/* os-release(5): KEY=value lines, values optionally in single or double
 * quotes with backslash escapes inside double quotes. */
char *fp_os_release_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	for (const char *p = text; *p; ) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			const char *v = p + klen + 1;
			size_t vlen = len - klen - 1;
			struct strbuf sb = STRBUF_INIT;
			char quote = 0;
			if (vlen && (*v == '"' || *v == '\'')) {
				quote = *v++;
				vlen--;
			}
			for (size_t i = 0; i < vlen; i++) {
				if (quote && v[i] == quote)
					break;
				if (quote == '"' && v[i] == '\\' && i + 1 < vlen)
					i++;
				strbuf_addch(&sb, v[i]);
			}
			char *out = trimmed(sb.buf, sb.len);
			strbuf_release(&sb);
			if (!*out) {
				free(out);
				return NULL;
			}
			return out;
		}
		p += len + (eol ? 1 : 0);
	}
	return NULL;
}

int fp_count_cpu_list(const char *list)
{
	int count = 0;
	const char *p = list;
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b;
		if (end == p || a < 0)
			return 0;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				return 0;
			p = end;
		} else {
			b = a;
		}
		if (b - a + 1 > 1 << 20)
			return 0;
		count += (int)(b - a + 1);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return 0;
	}
	return count;
}

/* The value after "key<spaces>:" on a cpuinfo line, or NULL. */
static const char *cpuinfo_value(const char *line, size_t len, const char *key)
{
	size_t klen = strlen(key);
	if (len < klen || strncmp(line, key, klen))
		return NULL;
	const char *p = line + klen;
	while (p < line + len && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= line + len || *p != ':')
		return NULL;
	p++;
	while (p < line + len && *p == ' ')
		p++;
	return p;
}

void fp_parse_cpuinfo(const char *text, int *processors, int64_t *mhz, char **model)
{
	int n = 0;
	double best = 0;
	char *name = NULL;
	for (const char *p = text; *p; ) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		const char *v;
		if (cpuinfo_value(p, len, "processor"))
			n++;
		else if ((v = cpuinfo_value(p, len, "cpu MHz"))) {
			double f = strtod(v, NULL);
			if (f > best)
				best = f;
		} else if (!name && (v = cpuinfo_value(p, len, "model name"))) {
			name = trimmed(v, len - (size_t)(v - p));
		}
		p += len + (eol ? 1 : 0);
	}
	/* Without "cpu MHz" (some arm64 and virtual machines), the model
	 * name often says it: "... CPU @ 2.20GHz". */
	if (best <= 0 && name) {
		const char *at = strstr(name, "@ ");
		if (at) {
			char *end;
			double ghz = strtod(at + 2, &end);
			if (end != at + 2 && !strncmp(end, "GHz", 3))
				best = ghz * 1000;
		}
	}
	*processors = n;
	*mhz = (int64_t)(best + 0.5);
	*model = name;
}

int64_t fp_parse_meminfo(const char *text)
{
	const char *p = strstr(text, "MemTotal:");
	if (!p || (p != text && p[-1] != '\n'))
		return 0;
	p += strlen("MemTotal:");
	char *end;
	long long kb = strtoll(p, &end, 10);
	if (end == p || kb <= 0)
		return 0;
	while (*end == ' ')
		end++;
	if (strncmp(end, "kB", 2))
		return 0;
	return (int64_t)kb * 1024;
}

int fp_parse_cgroup_mounts(const char *text, char **mountpoint)
{
	int version = 0;
	char *where = NULL;
	for (const char *p = text; *p; ) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *line = xstrndup(p, len);
		char *save = NULL;
		char *dev = strtok_r(line, " ", &save);
		char *dir = dev ? strtok_r(NULL, " ", &save) : NULL;
		char *type = dir ? strtok_r(NULL, " ", &save) : NULL;
		if (type && !strcmp(type, "cgroup2") && !strcmp(dir, "/sys/fs/cgroup")) {
			/* Unified hierarchy at the usual place: v2 whatever else. */
			free(where);
			where = xstrdup(dir);
			version = 2;
			free(line);
			break;
		}
		if (type && !strcmp(type, "cgroup") && version == 0) {
			/* v1 hierarchies live under a tmpfs at /sys/fs/cgroup. */
			char *slash = strrchr(dir, '/');
			free(where);
			where = slash && slash != dir ? xstrndup(dir, (size_t)(slash - dir)) : xstrdup(dir);
			version = 1;
		}
		free(line);
		p += len + (eol ? 1 : 0);
	}
	*mountpoint = where;
	return version;
}
